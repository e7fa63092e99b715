/* SPDX-License-Identifier: BSD-2-Clause */
/* test_cfgfile: the config file from disk -- read, its directory made
 * absolute, the host's name as the default consumer. */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <sys/stat.h>

#include "conf/cfgfile.h"
#include "tmpfiles.h"

#define MIN_FILE "[records]\nverify_key_file = k.pub\n" \
	"[action a]\nurl = http://127.0.0.1/x\nauth = none\n"

static void
test_load_file(void **state)
{
	(void)state;
	char *dir = make_tmpdir();
	char *path = path_join(dir, "w.ini");
	struct cfg_errors errs = {0};
	char host[256];

	WRITE(dir, "w.ini", MIN_FILE);
	struct cfg *cfg = cfgfile_load(path, &errs);
	assert_non_null(cfg);
	assert_int_equal(errs.n, 0);
	assert_string_equal(cfg->path, path);
	assert_string_equal(cfg->dir, dir);
	/* the shell asks the host, the parser takes its word */
	assert_int_equal(gethostname(host, sizeof host), 0);
	assert_string_equal(cfg->daemon.consumer, host);
	cfg_free(cfg);

	WRITE(dir, "w.ini", "[redis]\nport = x\n" MIN_FILE);
	assert_null(cfgfile_load(path, &errs));
	assert_int_equal(errs.n, 1);
	char want[PATH_MAX + 64];
	snprintf(want, sizeof want, "%s:2: port: 'x' is not an integer", path);
	assert_string_equal(errs.msgs[0], want);
	cfg_errors_clear(&errs);

	/* errors after reading (line 1: no [records]) sort before line 4; a NUL
	 * does not end the text */
	static const char nul[] = "[redis]\nport = 1\0\n"
	    "[action a]\nurl = http://127.0.0.1/x\nauth = none\n" "[x]\n";
	write_file(dir, "w.ini", nul, sizeof nul - 1);
	assert_null(cfgfile_load(path, &errs));
	assert_int_equal(errs.n, 3);
	snprintf(want, sizeof want, "%s:1: [records] verify_key_file is required", path);
	assert_memory_equal(errs.msgs[0], want, strlen(want));
	snprintf(want, sizeof want, "%s:2: NUL byte in line", path);
	assert_string_equal(errs.msgs[1], want);
	snprintf(want, sizeof want, "%s:6: unknown section [x]", path);
	assert_string_equal(errs.msgs[2], want);
	cfg_errors_clear(&errs);

	assert_int_equal(unlink(path), 0);
	assert_null(cfgfile_load(path, &errs));
	assert_int_equal(errs.n, 1);
	snprintf(want, sizeof want, "%s:0: cannot read: No such file or directory", path);
	assert_string_equal(errs.msgs[0], want);
	cfg_errors_clear(&errs);
	free(path);
	free_tmpdir(dir);
}

/* A relative path: the directory is made absolute, so that the daemon's
 * relative file names survive a change of directory. */
/* Issue 23: a file group or others may write is refused (it names the IdP
 * the secret goes to and the key records are checked with). */
static void
test_writable_config_refused(void **state)
{
	(void)state;
	char *dir = make_tmpdir();
	char *path = path_join(dir, "w.ini");
	struct cfg_errors errs = {0};
	char want[PATH_MAX + 128];

	WRITE(dir, "w.ini", MIN_FILE);
	static const mode_t bad[] = {0666, 0620, 0602, 0664};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(chmod(path, bad[i]), 0);
		assert_null(cfgfile_load(path, &errs));
		assert_int_equal(errs.n, 1);
		snprintf(want, sizeof want, "%s:0: refusing: group or others may write it", path);
		assert_memory_equal(errs.msgs[0], want, strlen(want));
		cfg_errors_clear(&errs);
	}
	static const mode_t good[] = {0644, 0640, 0600, 0400};
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		assert_int_equal(chmod(path, good[i]), 0);
		struct cfg *cfg = cfgfile_load(path, &errs);
		assert_non_null(cfg);
		cfg_free(cfg);
	}
	free(path);
	free_tmpdir(dir);
}

static void
test_relative_path(void **state)
{
	(void)state;
	char *dir = make_tmpdir(), old[PATH_MAX];
	struct cfg_errors errs = {0};

	char *sub = path_join(dir, "etc");
	assert_int_equal(mkdir(sub, 0700), 0);
	WRITE(sub, "w.ini", MIN_FILE);
	assert_non_null(getcwd(old, sizeof old));
	assert_int_equal(chdir(dir), 0);

	struct cfg *cfg = cfgfile_load("etc/w.ini", &errs);
	assert_non_null(cfg);
	assert_string_equal(cfg->path, "etc/w.ini");
	assert_string_equal(cfg->dir, sub);
	cfg_free(cfg);
	WRITE(dir, "w.ini", MIN_FILE);
	cfg = cfgfile_load("w.ini", &errs);
	assert_non_null(cfg);
	assert_string_equal(cfg->dir, dir);
	cfg_free(cfg);

	assert_int_equal(chdir(old), 0);
	free(sub);
	free_tmpdir(dir);
}

/* The example configuration parses as shipped. */
static void
test_example_conf(void **state)
{
	(void)state;
	struct cfg_errors errs = {0};
	struct cfg *cfg = cfgfile_load("conf/warrantd.ini", &errs);

	for (size_t i = 0; i < errs.n; i++)
		print_message("unexpected: %s\n", errs.msgs[i]);
	assert_non_null(cfg);
	const struct cfg_action *a = cfg_action_find(cfg, "gate.open");
	assert_non_null(a);
	assert_string_equal(a->url, "https://gates.example/gates/{resource}/open");
	/* the example teaches no clear text */
	char *text = NULL;
	FILE *f = fopen("conf/warrantd.ini", "r");
	assert_non_null(f);
	size_t cap = 0;
	assert_true(getdelim(&text, &cap, '\0', f) > 0);
	fclose(f);
	assert_null(strstr(text, "= http://"));	/* no URL value in clear text */
	free(text);
	assert_int_equal(cfg->oauth.present, 1);
	assert_string_equal(cfg->records.verify_key_file, "decider.pub");
	assert_string_equal(cfg->oauth.client_secret_file, "client-secret");
	cfg_free(cfg);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load_file),
		cmocka_unit_test(test_writable_config_refused),
		cmocka_unit_test(test_relative_path),
		cmocka_unit_test(test_example_conf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
