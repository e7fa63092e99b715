/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for the verification key in src/worker/engine.c: it is parsed once per
 * config load, so a key that does not fit [records] algorithm fails
 * engine_new (start) and engine_reload (SIGHUP) instead of every record.
 * engine_new connects to nothing until engine_start, so no Redis is needed.
 * Run from the repository root: the test keys are read from tests/data/. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <ev.h>

#include "conf/cfgfile.h"
#include "conf/config.h"
#include "worker/engine.h"

static char dir[] = "/tmp/warrantd-test-engine-key.XXXXXX";
static struct ev_loop *loop;

static void
write_file(const char *name, const char *text, size_t len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, 0600), 0);	/* warrantd(7) §9: secrets are private */
}

/* Copies tests/data/`name` into the temp dir under the same name. */
static void
copy_data(const char *name)
{
	char path[256], buf[8192];
	FILE *f;
	size_t n;

	snprintf(path, sizeof path, "tests/data/%s", name);
	f = fopen(path, "rb");
	if (f == NULL)
		fail_msg("cannot open %s (run from the repository root)", path);
	n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	assert_true(n > 0 && n < sizeof buf);
	write_file(name, buf, n);
}

/* A config in the temp dir whose [records] says `records`; caller frees. */
static struct cfg *
config(const char *records)
{
	struct cfg_errors errs = {0};
	char text[1024], path[256];
	struct cfg *cfg;
	int n;

	n = snprintf(text, sizeof text,
	    "[daemon]\nconsumer = w1\n"
	    "[redis]\nsocket = %s/none.sock\n"
	    "[records]\n%s\n"
	    "[action gate.open]\nurl = http://127.0.0.1:9/gates/{resource}\nauth = none\n",
	    dir, records);
	assert_true(n > 0 && (size_t)n < sizeof text);
	write_file("w.ini", text, (size_t)n);
	snprintf(path, sizeof path, "%s/w.ini", dir);
	cfg = cfgfile_load(path, &errs);
	for (size_t i = 0; i < errs.n; i++)
		fprintf(stderr, "%s\n", errs.msgs[i]);
	cfg_errors_clear(&errs);
	assert_non_null(cfg);
	return cfg;
}

static int
setup(void **state)
{
	(void)state;
	if (mkdtemp(dir) == NULL || (loop = ev_loop_new(EVFLAG_AUTO)) == NULL)
		return -1;
	return 0;
}

static int
teardown(void **state)
{
	static const char *const names[] = {
		"w.ini", "test-es256.pub", "test-rs256.pub", "test-hs256.secret", "junk.pub",
		"short.secret",
	};
	char path[256];

	(void)state;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
	ev_loop_destroy(loop);
	return 0;
}

static void
expect_start_ok(const char *records)
{
	struct cfg *cfg = config(records);
	char err[512] = "";
	struct engine *eng = engine_new(loop, cfg, err, sizeof err);

	if (eng == NULL)
		fail_msg("engine_new refused [records] %s: %s", records, err);
	engine_free(eng);
}

static void
expect_start_refused(const char *records, const char *err_has)
{
	struct cfg *cfg = config(records);
	char err[512] = "";
	struct engine *eng = engine_new(loop, cfg, err, sizeof err);

	if (eng != NULL)
		fail_msg("engine_new accepted [records] %s", records);
	if (strstr(err, "verify_key_file") == NULL || strstr(err, err_has) == NULL)
		fail_msg("error \"%s\" lacks verify_key_file or \"%s\"", err, err_has);
	cfg_free(cfg);
}

static void
test_start(void **state)
{
	(void)state;
	copy_data("test-es256.pub");
	copy_data("test-rs256.pub");
	copy_data("test-hs256.secret");
	write_file("junk.pub", "not a key\n", 10);
	expect_start_ok("verify_key_file = test-es256.pub");
	expect_start_ok("algorithm = RS256\nverify_key_file = test-rs256.pub");
	expect_start_ok("algorithm = HS256\nverify_key_file = test-hs256.secret");
	expect_start_ok("signature = off");
	/* The key is parsed at start: one that does not fit is fatal there. */
	expect_start_refused("verify_key_file = test-rs256.pub", "not a usable ES256 key");
	expect_start_refused("algorithm = RS256\nverify_key_file = test-es256.pub",
	    "not a usable RS256 key");
	expect_start_refused("verify_key_file = junk.pub", "not a PEM public key");
	expect_start_refused("verify_key_file = test-hs256.secret", "not a PEM public key");
	/* warrantd(7) §3.2: an HS256 secret under 32 bytes, or the decider's public
	 * PEM used as one (anyone holding it could forge records). */
	write_file("short.secret", "0123456789abcdef0123456789abcde\n", 32);
	expect_start_refused("algorithm = HS256\nverify_key_file = short.secret",
	    "shorter than 32 bytes");
	expect_start_refused("algorithm = HS256\nverify_key_file = test-es256.pub",
	    "PEM document");
}

static void
test_reload(void **state)
{
	struct cfg *cfg = config("verify_key_file = test-es256.pub"), *next;
	char err[512] = "";
	struct engine *eng = engine_new(loop, cfg, err, sizeof err);

	(void)state;
	if (eng == NULL)
		fail_msg("engine_new: %s", err);
	/* A SIGHUP with a key that does not parse fails, keeping the old one. */
	next = config("verify_key_file = junk.pub");
	assert_int_equal(engine_reload(eng, next, err, sizeof err), -1);
	assert_non_null(strstr(err, "verify_key_file junk.pub: not a PEM public key"));
	cfg_free(next);
	next = config("algorithm = RS256\nverify_key_file = test-es256.pub");
	assert_int_equal(engine_reload(eng, next, err, sizeof err), -1);
	assert_non_null(strstr(err, "not a usable RS256 key"));
	cfg_free(next);
	next = config("algorithm = HS256\nverify_key_file = test-es256.pub");
	assert_int_equal(engine_reload(eng, next, err, sizeof err), -1);
	assert_non_null(strstr(err, "PEM document"));
	cfg_free(next);
	/* A good key replaces the parsed one (ASan sees the old one freed). */
	next = config("algorithm = HS256\nverify_key_file = test-hs256.secret");
	if (engine_reload(eng, next, err, sizeof err) != 0)
		fail_msg("engine_reload: %s", err);
	next = config("algorithm = RS256\nverify_key_file = test-rs256.pub");
	if (engine_reload(eng, next, err, sizeof err) != 0)
		fail_msg("engine_reload: %s", err);
	engine_free(eng);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_start),
		cmocka_unit_test(test_reload),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
