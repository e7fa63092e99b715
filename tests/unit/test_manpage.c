/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The key list of warrantd.ini(5) and the parser's key table (src/conf/config.c,
 * cfg_key_at) in step: a key added to one and not the other fails, naming
 * it. In the page, each key is an ".It Ic KEY" line under the ".Ss [SECTION]"
 * (".Ss [action NAME]" for the action keys).
 *
 * And the contract's numbers: every processing rule ("R9") and section
 * ("\xc2\xa7" "3.1", a section sign and a number) that a comment in src/,
 * include/ or lua/ cites is in warrantd(7) -- a rule as an ".It Sy Rn" item,
 * a section as a ".Sh" or ".Ss" heading that starts with "\(scN". A
 * section sign after "RFC NNNN" is that RFC's and is not checked.
 *
 * Run from the source tree, or with $WARRANTD_MAN_DIR set to the man/
 * directory (the sources are then its ../src, ../include and ../lua).
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <dirent.h>
#include <sys/stat.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "conf/config.h"

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
			/* "[daemon\&]": the escape keeps mandoc from taking the
			 * bracket for a trailing delimiter. */
			size_t len = strcspn(line + 5, " ]\\");
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
			fprintf(stderr, "[%s] %s is in src/conf/config.c but not in man/warrantd.ini.5: "
			    "add an \".It Ic %s\" entry under \".Ss [%s]\"\n", parser[i].section,
			    parser[i].key, parser[i].key, parser[i].section);
			missing++;
		}
	for (size_t i = 0; i < npage; i++)
		if (!has(parser, nparser, page[i].section, page[i].key)) {
			fprintf(stderr, "[%s] %s is in man/warrantd.ini.5 but the parser "
			    "(src/conf/config.c) has no such key\n", page[i].section, page[i].key);
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

/* ---- warrantd(7): every cited rule and section exists ---- */

#define MAX_NUMS 512
#define SECT "\xc2\xa7"		/* the section sign in UTF-8 */

struct nums {
	char v[MAX_NUMS][16];
	size_t n;
};

static int
nums_has(const struct nums *ns, const char *v)
{
	for (size_t i = 0; i < ns->n; i++)
		if (strcmp(ns->v[i], v) == 0)
			return 1;
	return 0;
}

static void
nums_add(struct nums *ns, const char *v)
{
	if (nums_has(ns, v))
		return;
	assert_true(ns->n < MAX_NUMS);
	snprintf(ns->v[ns->n++], sizeof ns->v[0], "%s", v);
}

/* "3.1" from "3.1.", "3.1)" ...: digits and inner dots, at most 15 bytes. */
static size_t
number_at(const char *p, char *out, size_t max)
{
	size_t n = 0;

	while (n + 1 < max && (isdigit((unsigned char)p[n]) ||
	    (p[n] == '.' && isdigit((unsigned char)p[n + 1]))))
		n++;
	memcpy(out, p, n);
	out[n] = '\0';
	return n;
}

static void
page_numbers(const char *dir, struct nums *rules, struct nums *sections)
{
	char path[512], line[1024], num[16];

	snprintf(path, sizeof path, "%s/warrantd.7", dir);
	FILE *f = fopen(path, "r");
	if (!f)
		fail_msg("cannot read %s (run from the source tree or set WARRANTD_MAN_DIR)", path);
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, ".It Sy R", 8) == 0 && number_at(line + 8, num, sizeof num))
			nums_add(rules, num);
		else if ((strncmp(line, ".Sh \\(sc", 8) == 0 || strncmp(line, ".Ss \\(sc", 8) == 0) &&
		    number_at(line + 8, num, sizeof num))
			nums_add(sections, num);
	}
	fclose(f);
}

/* Is the section sign at line[at] an RFC's ("RFC 6749 §5.1, §5.2")? */
static int
rfc_section(const char *line, size_t at)
{
	const char *rfc = NULL;

	for (const char *p = strstr(line, "RFC "); p && (size_t)(p - line) < at;
	    p = strstr(p + 1, "RFC "))
		rfc = p;
	if (!rfc)
		return 0;
	for (const char *p = rfc + 4; (size_t)(p - line) < at; p++)
		if (!strchr("0123456789 ,.\xc2\xa7", *p))
			return 0;
	return 1;
}

static int
word_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

static size_t
cited_in_file(const char *path, const struct nums *rules, const struct nums *sections)
{
	char line[2048], num[16];
	size_t lineno = 0, missing = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		fail_msg("cannot read %s", path);
	while (fgets(line, sizeof line, f)) {
		lineno++;
		for (size_t i = 0; line[i]; i++) {
			if (line[i] == 'R' && (i == 0 || !word_char(line[i - 1])) &&
			    number_at(line + i + 1, num, sizeof num) && !strchr(num, '.') &&
			    !word_char(line[i + 1 + strlen(num)])) {
				if (!nums_has(rules, num)) {
					fprintf(stderr, "%s:%zu cites R%s, which warrantd(7) "
					    "does not have\n", path, lineno, num);
					missing++;
				}
			} else if (strncmp(line + i, SECT, 2) == 0 &&
			    number_at(line + i + 2, num, sizeof num) && !rfc_section(line, i) &&
			    !nums_has(sections, num)) {
				fprintf(stderr, "%s:%zu cites " SECT "%s, which warrantd(7) "
				    "does not have\n", path, lineno, num);
				missing++;
			}
		}
	}
	fclose(f);
	return missing;
}

static int
source_file(const char *name)
{
	size_t n = strlen(name);

	return (n > 2 && (strcmp(name + n - 2, ".c") == 0 || strcmp(name + n - 2, ".h") == 0)) ||
	    (n > 4 && strcmp(name + n - 4, ".lua") == 0);
}

/* Calls fn(path, arg) for each file under dir and one level of folders
 * below it (src/ and include/ are grouped by layer). */
static void
walk_sources(const char *dir, void (*fn)(const char *, const char *, void *), void *arg)
{
	DIR *dp = opendir(dir);
	if (!dp)
		fail_msg("cannot open %s", dir);
	for (struct dirent *e; (e = readdir(dp)) != NULL;) {
		char path[1024];
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		struct stat st;
		if (stat(path, &st) != 0)
			fail_msg("cannot stat %s", path);
		if (S_ISDIR(st.st_mode)) {
			DIR *sub = opendir(path);
			if (!sub)
				fail_msg("cannot open %s", path);
			for (struct dirent *f; (f = readdir(sub)) != NULL;) {
				char file[1536];
				struct stat fst;
				snprintf(file, sizeof file, "%s/%s", path, f->d_name);
				if (stat(file, &fst) == 0 && S_ISREG(fst.st_mode))
					fn(file, f->d_name, arg);
			}
			closedir(sub);
		} else if (S_ISREG(st.st_mode)) {
			fn(path, e->d_name, arg);
		}
	}
	closedir(dp);
}

struct cite_walk {
	const struct nums *rules, *sections;
	size_t files, missing;
};

static void
cite_one(const char *path, const char *name, void *arg)
{
	struct cite_walk *w = arg;
	if (!source_file(name))
		return;
	w->missing += cited_in_file(path, w->rules, w->sections);
	w->files++;
}

static void
test_contract_numbers_resolve(void **state)
{
	static struct nums rules, sections;
	const char *dir = getenv("WARRANTD_MAN_DIR");
	const char *subdirs[] = {"src", "include", "lua"};
	char root[512], path[1024];
	size_t files = 0, missing = 0;
	(void)state;

	page_numbers(dir ? dir : "man", &rules, &sections);
	/* R1-R20 and sections 1-13, with 3.1-3.3: the page has them all. */
	for (int r = 1; r <= 20; r++) {
		snprintf(path, sizeof path, "%d", r);
		if (!nums_has(&rules, path))
			fail_msg("warrantd(7) has no \".It Sy R%d\" item", r);
	}
	for (int s = 1; s <= 13; s++) {
		snprintf(path, sizeof path, "%d", s);
		if (!nums_has(&sections, path))
			fail_msg("warrantd(7) has no heading \"\\(sc%d\"", s);
	}
	assert_true(nums_has(&sections, "3.1") && nums_has(&sections, "3.3"));

	snprintf(root, sizeof root, "%s", dir ? dir : "man");
	snprintf(root + strlen(root), sizeof root - strlen(root), "/..");
	for (size_t d = 0; d < sizeof subdirs / sizeof subdirs[0]; d++) {
		snprintf(path, sizeof path, "%s/%s", root, subdirs[d]);
		struct cite_walk w = {&rules, &sections, 0, 0};
		walk_sources(path, cite_one, &w);
		files += w.files;
		missing += w.missing;
	}
	printf("test_manpage: %zu files, %zu rules and %zu sections in warrantd(7)\n", files,
	    rules.n, sections.n);
	assert_true(files > 50);
	assert_int_equal(missing, 0);
}

/* The checker itself: an RFC's section is not ours, a rule is a whole word. */
static void
test_contract_scanner(void **state)
{
	(void)state;
	assert_true(rfc_section("RFC 6749 " SECT "5.1, " SECT "5.2", 10));
	assert_true(rfc_section("RFC 6749 " SECT "5.1, " SECT "5.2", 17));
	assert_false(rfc_section("RFC 6749 says " SECT "5.1", 14));
	assert_false(rfc_section("(warrantd(7) " SECT "9, RFC 6749)", 13));
	char num[16];
	assert_int_equal(number_at("3.1.", num, sizeof num), 3);
	assert_string_equal(num, "3.1");
	assert_int_equal(number_at("12)", num, sizeof num), 2);
	assert_int_equal(number_at("x", num, sizeof num), 0);
}

/* ---- warrantd(8) LOG EVENTS and the events the daemon logs ---- */

#define MAX_EVENTS 256

struct events {
	char name[MAX_EVENTS][48];
	size_t n;
};

static void
events_add(struct events *ev, const char *name, size_t len)
{
	for (size_t i = 0; i < ev->n; i++)
		if (strlen(ev->name[i]) == len && strncmp(ev->name[i], name, len) == 0)
			return;
	assert_true(ev->n < MAX_EVENTS && len < sizeof ev->name[0]);
	snprintf(ev->name[ev->n++], sizeof ev->name[0], "%.*s", (int)len, name);
}

static int
events_has(const struct events *ev, const char *name)
{
	for (size_t i = 0; i < ev->n; i++)
		if (strcmp(ev->name[i], name) == 0)
			return 1;
	return 0;
}

/* The events of one source: every literal "word.word" (not a "file.h"),
 * and the bare names given to log_info/warn/error/debug ("start"). */
static void
events_in_source(const char *path, struct events *ev)
{
	FILE *f = fopen(path, "r");
	char line[1024];

	assert_non_null(f);
	while (fgets(line, sizeof line, f)) {
		for (const char *q = strchr(line, '"'); q; q = strchr(q + 1, '"')) {
			size_t a = strspn(q + 1, "abcdefghijklmnopqrstuvwxyz");
			size_t b = a && q[1 + a] == '.' ?
			    strspn(q + 2 + a, "abcdefghijklmnopqrstuvwxyz_") : 0;
			if (b > 0 && q[2 + a + b] == '"' && !(b == 1 && q[2 + a] == 'h'))
				events_add(ev, q + 1, a + 1 + b);
		}
		static const char *const calls[] = {"log_info(\"", "log_warn(\"", "log_error(\"",
		    "log_debug(\""};
		for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
			for (const char *c = strstr(line, calls[i]); c; c = strstr(c + 1, calls[i])) {
				const char *name = c + strlen(calls[i]);
				size_t len = strspn(name, "abcdefghijklmnopqrstuvwxyz_.");
				if (name[len] == '"')
					events_add(ev, name, len);
			}
	}
	fclose(f);
}

/* The ".It Li a , b" items of warrantd(8)'s LOG EVENTS. */
static void
events_in_page(const char *path, struct events *ev)
{
	FILE *f = fopen(path, "r");
	char line[512];
	int in = 0;

	assert_non_null(f);
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, ".Sh ", 4) == 0)
			in = strncmp(line, ".Sh LOG EVENTS", 14) == 0;
		if (!in || strncmp(line, ".It Li ", 7) != 0)
			continue;
		for (char *w = line + 7; *w;) {
			size_t len = strspn(w, "abcdefghijklmnopqrstuvwxyz_.");
			if (len > 0)
				events_add(ev, w, len);
			w += len + (w[len] != '\0');
		}
	}
	fclose(f);
}

/* Which sources log into which page: the daemon's into warrantd(8), the
 * console's (src/web/) into warrantd-web(8). warrantctl (src/ctl/) prints;
 * it does not log. */
struct event_walk {
	struct events *ev;
	int web;	/* 1: src/web/ only; 0: everything else */
};

static void
event_one(const char *path, const char *name, void *arg)
{
	struct event_walk *w = arg;
	size_t len = strlen(name);
	if (len < 3 || strcmp(name + len - 2, ".c") != 0 || strstr(path, "/ctl/") ||
	    (strstr(path, "/web/") != NULL) != w->web)
		return;
	events_in_source(path, w->ev);
}

/* Every event a program logs is explained in its page, and the page explains
 * none it no longer logs. */
static void
events_match_page(const char *page_name, int web, size_t at_least)
{
	const char *dir = getenv("WARRANTD_MAN_DIR");
	char path[512];
	struct events *code = calloc(1, sizeof *code), *page = calloc(1, sizeof *page);
	size_t missing = 0;

	assert_non_null(code);
	assert_non_null(page);
	snprintf(path, sizeof path, "%s/%s", dir ? dir : "man", page_name);
	events_in_page(path, page);
	snprintf(path, sizeof path, "%s/../src", dir ? dir : "man");
	struct event_walk w = {code, web};
	walk_sources(path, event_one, &w);
	for (size_t i = 0; i < code->n; i++)
		if (!events_has(page, code->name[i])) {
			print_message("event %s is logged but not in %s LOG EVENTS\n",
			    code->name[i], page_name);
			missing++;
		}
	for (size_t i = 0; i < page->n; i++)
		if (!events_has(code, page->name[i])) {
			print_message("%s lists %s, which nothing logs\n", page_name, page->name[i]);
			missing++;
		}
	printf("test_manpage: %zu events logged, %zu in %s\n", code->n, page->n, page_name);
	assert_true(code->n >= at_least);
	assert_int_equal(missing, 0);
	free(code);
	free(page);
}

static void
test_log_events_listed(void **state)
{
	(void)state;
	events_match_page("warrantd.8", 0, 50);
	events_match_page("warrantd-web.8", 1, 5);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_page_lists_every_parser_key),
		cmocka_unit_test(test_key_table_ends),
		cmocka_unit_test(test_contract_numbers_resolve),
		cmocka_unit_test(test_contract_scanner),
		cmocka_unit_test(test_log_events_listed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
