/*
 * The key list of warrantd.ini(5) and the parser's key table (src/config.c,
 * cfg_key_at) in step: a key added to one and not the other fails, naming
 * it. In the page, each key is an ".It Ic KEY" line under the ".Ss [SECTION]"
 * (".Ss [action NAME]" for the action keys). Run from the source tree, or
 * with $WARRANTD_MAN_DIR set to the man/ directory.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "config.h"

#define MAX_KEYS 256

struct pair {
	char section[64], key[64];
};

static size_t
page_keys(struct pair *out, size_t max)
{
	const char *dir = getenv("WARRANTD_MAN_DIR");
	char path[512], line[512], section[64] = "";
	size_t n = 0;

	snprintf(path, sizeof path, "%s/warrantd.ini.5", dir ? dir : "man");
	FILE *f = fopen(path, "r");
	if (!f)
		fail_msg("cannot read %s (run from the source tree or set WARRANTD_MAN_DIR)", path);
	while (fgets(line, sizeof line, f)) {
		char name[64];
		if (strncmp(line, ".Ss [", 5) == 0) {
			size_t len = strcspn(line + 5, " ]");
			snprintf(section, sizeof section, "%.*s", (int)len, line + 5);
		} else if (strncmp(line, ".Sh ", 4) == 0) {
			section[0] = '\0';
		} else if (section[0] && sscanf(line, ".It Ic %63[A-Za-z0-9_]", name) == 1) {
			assert_true(n < max);
			snprintf(out[n].section, sizeof out[n].section, "%s", section);
			snprintf(out[n].key, sizeof out[n].key, "%s", name);
			n++;
		}
	}
	fclose(f);
	return n;
}

static int
has(const struct pair *p, size_t n, const char *section, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(p[i].section, section) == 0 && strcmp(p[i].key, key) == 0)
			return 1;
	return 0;
}

static void
test_page_lists_every_parser_key(void **state)
{
	static struct pair page[MAX_KEYS], parser[MAX_KEYS];
	size_t npage = page_keys(page, MAX_KEYS), nparser = 0, missing = 0;
	const char *section, *key;
	(void)state;

	for (size_t i = 0; (key = cfg_key_at(i, &section)) != NULL; i++) {
		assert_true(nparser < MAX_KEYS);
		snprintf(parser[nparser].section, sizeof parser[0].section, "%s", section);
		snprintf(parser[nparser].key, sizeof parser[0].key, "%s", key);
		nparser++;
	}
	assert_true(nparser > 40);
	for (size_t i = 0; i < nparser; i++)
		if (!has(page, npage, parser[i].section, parser[i].key)) {
			fprintf(stderr, "[%s] %s is in src/config.c but not in man/warrantd.ini.5: "
			    "add an \".It Ic %s\" entry under \".Ss [%s]\"\n", parser[i].section,
			    parser[i].key, parser[i].key, parser[i].section);
			missing++;
		}
	for (size_t i = 0; i < npage; i++)
		if (!has(parser, nparser, page[i].section, page[i].key)) {
			fprintf(stderr, "[%s] %s is in man/warrantd.ini.5 but the parser "
			    "(src/config.c) has no such key\n", page[i].section, page[i].key);
			missing++;
		}
	assert_int_equal(missing, 0);
	assert_int_equal(npage, nparser);	/* and none twice */
}

static void
test_key_table_ends(void **state)
{
	const char *section = NULL;
	size_t n = 0;
	(void)state;

	while (cfg_key_at(n, &section))
		n++;
	assert_null(cfg_key_at(n, &section));
	assert_null(cfg_key_at(n + 100, &section));
	assert_string_equal(cfg_key_at(0, &section), "consumer");
	assert_string_equal(section, "daemon");
	assert_non_null(cfg_key_at(n - 1, &section));
	assert_string_equal(section, "action");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_page_lists_every_parser_key),
		cmocka_unit_test(test_key_table_ends),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
