/* SPDX-License-Identifier: BSD-2-Clause */
/* test_secrets: the files of warrantd(7) §9 -- where they are looked up, what is
 * kept of them, which are refused, and the one white space rule. */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>

#include "conf/cfgfile.h"
#include "conf/secrets.h"
#include "tmpfiles.h"

#define MIN_FILE "[records]\nverify_key_file = k.pub\n" \
	"[action a]\nurl = http://127.0.0.1/x\nauth = none\n"
#define MIN_ACTION "[action a]\nurl = http://127.0.0.1/x\nauth = none\n"

/* "keep white space unless HS256", on both sides of a record key. */
static void
test_key_kind(void **state)
{
	(void)state;
	assert_int_equal(secrets_key_kind(JWA_HS256, 0), SECRETS_TRIMMED);
	assert_int_equal(secrets_key_kind(JWA_HS256, 1), SECRETS_TRIMMED);
	assert_int_equal(secrets_key_kind(JWA_ES256, 0), SECRETS_PUBLIC);
	assert_int_equal(secrets_key_kind(JWA_RS256, 0), SECRETS_PUBLIC);
	assert_int_equal(secrets_key_kind(JWA_ES256, 1), SECRETS_PRIVATE_PEM);
	assert_int_equal(secrets_key_kind(JWA_RS256, 1), SECRETS_PRIVATE_PEM);
}

/* The verification key is read by the rule: an HMAC secret trimmed, a PEM
 * kept whole. */
static void
test_read_verify_key(void **state)
{
	(void)state;
	char *dir = make_tmpdir(), *ini = path_join(dir, "w.ini");
	static const char pem[] = "-----BEGIN PUBLIC KEY-----\nx\n-----END PUBLIC KEY-----\n";
	struct cfg_errors errs = {0};
	char err[512], *buf;
	size_t len;

	unsetenv("CREDENTIALS_DIRECTORY");
	WRITE(dir, "k", "  0123456789abcdef0123456789abcdef\n");
	WRITE(dir, "w.ini", "[records]\nalgorithm = HS256\nverify_key_file = k\n" MIN_ACTION);
	struct cfg *cfg = cfgfile_load(ini, &errs);
	assert_non_null(cfg);
	assert_int_equal(secrets_read_verify_key(cfg, &buf, &len, err, sizeof err), 0);
	assert_string_equal(buf, "0123456789abcdef0123456789abcdef");
	assert_int_equal(len, 32);
	secrets_free(buf, len);
	cfg_free(cfg);

	WRITE(dir, "k", pem);
	char *k = path_join(dir, "k");
	assert_int_equal(chmod(k, 0644), 0);	/* a public key may be read by anyone */
	free(k);
	WRITE(dir, "w.ini", "[records]\nalgorithm = ES256\nverify_key_file = k\n" MIN_ACTION);
	cfg = cfgfile_load(ini, &errs);
	assert_non_null(cfg);
	assert_int_equal(secrets_read_verify_key(cfg, &buf, &len, err, sizeof err), 0);
	assert_string_equal(buf, pem);
	assert_int_equal(len, sizeof pem - 1);
	secrets_free(buf, len);
	cfg_free(cfg);
	free(ini);
	free_tmpdir(dir);
}

/* The shipped example's files are found next to it. */
static void
test_example_conf_files(void **state)
{
	(void)state;
	struct cfg_errors errs = {0};
	struct cfg *cfg = cfgfile_load("conf/warrantd.ini", &errs);
	char err[256], *buf;
	size_t len;

	assert_non_null(cfg);
	unsetenv("CREDENTIALS_DIRECTORY");
	assert_int_equal(secrets_check_cfg(cfg, &errs), 0);
	assert_int_equal(errs.n, 0);
	assert_int_equal(secrets_read_cfg(cfg, "client-secret", SECRETS_TRIMMED, &buf, &len, err,
	    sizeof err), 0);
	assert_string_equal(buf, "replace-me");
	secrets_free(buf, len);
	assert_int_equal(secrets_read_cfg(cfg, "decider.pub", SECRETS_PUBLIC, &buf, &len, err,
	    sizeof err), 0);
	assert_non_null(strstr(buf, "-----BEGIN PUBLIC KEY-----"));
	assert_null(strstr(buf, "PRIVATE"));
	secrets_free(buf, len);
	cfg_free(cfg);
}

static void
test_secret_credentials_directory(void **state)
{
	(void)state;
	char *cred = make_tmpdir();
	char *abs = path_join(cred, "abs-secret");
	char err[512], *buf;
	size_t len;

	WRITE(cred, "test-config-secret", "  from-credentials \n");
	WRITE(cred, "abs-secret", "abs\n");
	assert_int_equal(setenv("CREDENTIALS_DIRECTORY", cred, 1), 0);
	assert_int_equal(secrets_read("test-config-secret", SECRETS_TRIMMED, &buf, &len, err,
	    sizeof err), 0);
	assert_string_equal(buf, "from-credentials");
	assert_int_equal(len, strlen("from-credentials"));
	secrets_free(buf, len);
	assert_int_equal(secrets_read(abs, SECRETS_TRIMMED, &buf, &len, err, sizeof err), 0);
	assert_string_equal(buf, "abs");
	secrets_free(buf, len);

	/* without the variable the relative name is looked up as given */
	assert_int_equal(unsetenv("CREDENTIALS_DIRECTORY"), 0);
	assert_int_equal(secrets_read("test-config-secret", SECRETS_TRIMMED, &buf, &len, err,
	    sizeof err), -1);
	assert_string_equal(err, "cannot read test-config-secret: No such file or directory");
	free(abs);
	free_tmpdir(cred);
}

static void
test_secret_whitespace(void **state)
{
	(void)state;
	char *dir = make_tmpdir();
	char *p = path_join(dir, "s");
	char err[512], *buf;
	size_t len;

	WRITE(dir, "s", "\n\t  pa ss+w%rd:x y \r\n\n");
	assert_int_equal(secrets_read(p, SECRETS_TRIMMED, &buf, &len, err, sizeof err), 0);
	assert_string_equal(buf, "pa ss+w%rd:x y");
	assert_int_equal(len, 14);
	secrets_free(buf, len);
	assert_int_equal(secrets_read(p, SECRETS_PUBLIC, &buf, &len, err, sizeof err), 0);
	assert_string_equal(buf, "\n\t  pa ss+w%rd:x y \r\n\n");
	secrets_free(buf, len);

	/* a secret with a NUL inside keeps its length */
	write_file(dir, "s", "a\0b\n", 4);
	assert_int_equal(secrets_read(p, SECRETS_TRIMMED, &buf, &len, err, sizeof err), 0);
	assert_int_equal(len, 3);
	assert_memory_equal(buf, "a\0b", 4);
	secrets_free(buf, len);
	secrets_free(NULL, 0);
	free(p);
	free_tmpdir(dir);
}

static void
test_secret_errors(void **state)
{
	(void)state;
	char *dir = make_tmpdir();
	char *p = path_join(dir, "s");
	char err[512], want[PATH_MAX + 64], *buf = NULL;
	size_t len = 0;

	WRITE(dir, "s", " \n\t\n");
	assert_int_equal(secrets_read(p, SECRETS_TRIMMED, &buf, &len, err, sizeof err), -1);
	snprintf(want, sizeof want, "cannot read %s: the file is empty", p);
	assert_string_equal(err, want);

	assert_int_equal(secrets_read(dir, SECRETS_TRIMMED, &buf, &len, err, sizeof err), -1);
	snprintf(want, sizeof want, "cannot read %s: Is a directory", dir);
	assert_string_equal(err, want);

	/* a read error never quotes the content */
	size_t big = SECRETS_MAX + 10;
	char *huge = malloc(big);
	assert_non_null(huge);
	memset(huge, 'S', big);
	write_file(dir, "s", huge, big);
	free(huge);
	assert_int_equal(secrets_read(p, SECRETS_TRIMMED, &buf, &len, err, sizeof err), -1);
	snprintf(want, sizeof want, "cannot read %s: larger than 1 MiB", p);
	assert_string_equal(err, want);
	assert_null(strstr(err, "SS"));
	assert_null(buf);
	free(p);
	free_tmpdir(dir);
}

/* $CREDENTIALS_DIRECTORY, then next to the config, then as given. */
static void
test_read_file_order(void **state)
{
	(void)state;
	char *cred = make_tmpdir(), *conf = make_tmpdir(), *cwd = make_tmpdir();
	char *ini = path_join(conf, "w.ini");
	char err[512], old[PATH_MAX], *buf;
	size_t len;
	struct cfg_errors errs = {0};

	WRITE(conf, "w.ini", MIN_FILE);
	struct cfg *cfg = cfgfile_load(ini, &errs);
	assert_non_null(cfg);
	WRITE(cred, "sec", "cred");
	WRITE(conf, "sec", "near");
	WRITE(cwd, "sec", "cwd");
	assert_non_null(getcwd(old, sizeof old));
	assert_int_equal(chdir(cwd), 0);

	assert_int_equal(setenv("CREDENTIALS_DIRECTORY", cred, 1), 0);
	assert_int_equal(secrets_read_cfg(cfg, "sec", SECRETS_TRIMMED, &buf, &len, err,
	    sizeof err), 0);
	assert_string_equal(buf, "cred");
	secrets_free(buf, len);
	assert_int_equal(unsetenv("CREDENTIALS_DIRECTORY"), 0);
	/* credentials/ beside the config (the packaged unit's LoadCredential=
	 * sources) comes before the config's own directory */
	char *credsub = path_join(conf, "credentials");
	assert_int_equal(mkdir(credsub, 0700), 0);
	WRITE(credsub, "sec", "packaged");
	assert_int_equal(secrets_read_cfg(cfg, "sec", SECRETS_TRIMMED, &buf, &len, err,
	    sizeof err), 0);
	assert_string_equal(buf, "packaged");
	secrets_free(buf, len);
	char *packaged = path_join(credsub, "sec");
	assert_int_equal(unlink(packaged), 0);
	free(packaged);
	assert_int_equal(secrets_read_cfg(cfg, "sec", SECRETS_TRIMMED, &buf, &len, err,
	    sizeof err), 0);
	assert_string_equal(buf, "near");
	secrets_free(buf, len);
	/* cfg_read_secret (a name typed on a command line) does not know the
	 * config's directory, and takes a relative name as given */
	assert_int_equal(secrets_read("sec", SECRETS_TRIMMED, &buf, &len, err, sizeof err), 0);
	assert_string_equal(buf, "cwd");
	secrets_free(buf, len);
	/* warrantd(7) §9: a name from the config is never looked up in the working
	 * directory, where anyone could plant a key */
	char *near = path_join(conf, "sec");
	assert_int_equal(unlink(near), 0);
	free(near);
	assert_int_equal(secrets_read_cfg(cfg, "sec", SECRETS_TRIMMED, &buf, &len, err,
	    sizeof err), -1);
	/* the message names every path tried, in order */
	char tried[3 * PATH_MAX];
	snprintf(tried, sizeof tried, "cannot read sec: No such file or directory (tried "
	    "%s/sec, %s/sec; the working directory is not searched)", credsub, conf);
	assert_string_equal(err, tried);
	free(credsub);
	assert_int_equal(secrets_read_cfg(cfg, "sec", SECRETS_PUBLIC, &buf, &len, err, sizeof err),
	    -1);

	/* a file that is there but unreadable stops the search */
	char *sub = path_join(cred, "sec2");
	assert_int_equal(mkdir(sub, 0700), 0);
	WRITE(cwd, "sec2", "cwd");
	assert_int_equal(setenv("CREDENTIALS_DIRECTORY", cred, 1), 0);
	assert_int_equal(secrets_read_cfg(cfg, "sec2", SECRETS_TRIMMED, &buf, &len, err,
	    sizeof err), -1);
	char want[PATH_MAX + 64];
	snprintf(want, sizeof want, "cannot read %s: Is a directory", sub);
	assert_string_equal(err, want);
	assert_int_equal(unsetenv("CREDENTIALS_DIRECTORY"), 0);
	free(sub);

	assert_int_equal(chdir(old), 0);
	cfg_free(cfg);
	free(ini);
	free_tmpdir(cred);
	free_tmpdir(conf);
	free_tmpdir(cwd);
}

/* warrantd(7) §9: a secret or private key that group or others may read is
 * refused, as sshd refuses such keys; a public key or certificate is not. */
static void
test_secret_permissions(void **state)
{
	(void)state;
	char *dir = make_tmpdir(), *ini = path_join(dir, "w.ini"), *p = path_join(dir, "s");
	char err[512], *buf;
	size_t len;
	struct cfg_errors errs = {0};
	static const mode_t open_modes[] = {0644, 0640, 0604, 0620, 0602, 0660};

	unsetenv("CREDENTIALS_DIRECTORY");
	WRITE(dir, "w.ini", MIN_FILE);
	struct cfg *cfg = cfgfile_load(ini, &errs);
	assert_non_null(cfg);
	WRITE(dir, "s", "-----BEGIN PUBLIC KEY-----\nx\n-----END PUBLIC KEY-----\n");
	for (size_t i = 0; i < sizeof open_modes / sizeof open_modes[0]; i++) {
		assert_int_equal(chmod(p, open_modes[i]), 0);
		assert_int_equal(secrets_read_cfg(cfg, "s", SECRETS_TRIMMED, &buf, &len, err,
		    sizeof err), -1);
		assert_non_null(strstr(err, "too open"));
		assert_non_null(strstr(err, "chmod 600"));
		assert_null(strstr(err, "BEGIN"));	/* never the content */
		assert_int_equal(secrets_read_cfg(cfg, "s", SECRETS_PRIVATE_PEM, &buf, &len, err,
		    sizeof err), -1);
		assert_int_equal(secrets_read(p, SECRETS_TRIMMED, &buf, &len, err, sizeof err),
		    -1);
		/* a public key may be read by anyone, written by us alone */
		int writable = (open_modes[i] & 022) != 0;
		assert_int_equal(secrets_read_cfg(cfg, "s", SECRETS_PUBLIC, &buf, &len, err,
		    sizeof err), writable ? -1 : 0);
		if (writable)
			assert_non_null(strstr(err, "let group or others write it"));
		else
			secrets_free(buf, len);
	}
	assert_int_equal(chmod(p, 0400), 0);
	assert_int_equal(secrets_read_cfg(cfg, "s", SECRETS_TRIMMED, &buf, &len, err, sizeof err),
	    0);
	secrets_free(buf, len);
	cfg_free(cfg);

	/* -t reports it at the key's line */
	WRITE(dir, "w.ini", "[records]\nalgorithm = HS256\nverify_key_file = s\n" MIN_ACTION);
	WRITE(dir, "s", "0123456789abcdef0123456789abcdef\n");
	assert_int_equal(chmod(p, 0644), 0);
	cfg = cfgfile_load(ini, &errs);
	assert_non_null(cfg);
	assert_int_equal(secrets_check_cfg(cfg, &errs), -1);
	assert_int_equal(errs.n, 1);
	char want[PATH_MAX + 64];
	snprintf(want, sizeof want, "%s:3: refusing %s: permissions 0644 are too open", ini, p);
	assert_true(strncmp(errs.msgs[0], want, strlen(want)) == 0);
	cfg_errors_clear(&errs);
	cfg_free(cfg);
	free(p);
	free(ini);
	free_tmpdir(dir);
}

static void
test_check_files(void **state)
{
	(void)state;
	char *dir = make_tmpdir();
	char *ini = path_join(dir, "w.ini");
	struct cfg_errors errs = {0};
	char want[PATH_MAX + 128];

	unsetenv("CREDENTIALS_DIRECTORY");
	WRITE(dir, "w.ini",
	    "[redis]\n"						/* 1 */
	    "password_file = redis-pw\n"			/* 2 */
	    "[records]\n"					/* 3 */
	    "verify_key_file = k.pub\n"				/* 4 */
	    "[oauth]\n"						/* 5 */
	    "token_url = https://h/t\n"				/* 6 */
	    "client_id = c\n"					/* 7 */
	    "auth_method = private_key_jwt\n"			/* 8 */
	    "client_secret_file = secret\n"			/* 9 */
	    "private_key_file = key.pem\n"			/* 10 */
	    "certificate_file = cert.pem\n"			/* 11 */
	    "[action a]\n"					/* 12 */
	    "url = https://h/\n"					/* 13 */
	    "auth = static\n"					/* 14 */
	    "bearer_file = token\n");				/* 15 */
	struct cfg *cfg = cfgfile_load(ini, &errs);
	assert_non_null(cfg);
	WRITE(dir, "k.pub", "k");
	WRITE(dir, "key.pem", "p");
	WRITE(dir, "token", "t\n");
	assert_int_equal(secrets_check_cfg(cfg, &errs), -1);
	assert_int_equal(errs.n, 3);
	snprintf(want, sizeof want, "%s:2: cannot read redis-pw: No such file or directory (tried",
	    ini);
	assert_true(strncmp(errs.msgs[0], want, strlen(want)) == 0);
	snprintf(want, sizeof want, "%s:9: cannot read secret: No such file or directory (tried", ini);
	assert_true(strncmp(errs.msgs[1], want, strlen(want)) == 0);
	snprintf(want, sizeof want, "%s:11: cannot read cert.pem: No such file or directory (tried",
	    ini);
	assert_true(strncmp(errs.msgs[2], want, strlen(want)) == 0);
	cfg_errors_clear(&errs);

	WRITE(dir, "redis-pw", "pw");
	WRITE(dir, "secret", "s");
	WRITE(dir, "cert.pem", "c");
	assert_int_equal(secrets_check_cfg(cfg, &errs), 0);
	assert_int_equal(errs.n, 0);
	char *tok = path_join(dir, "token");
	assert_int_equal(unlink(tok), 0);
	free(tok);
	assert_int_equal(secrets_check_cfg(cfg, &errs), -1);
	assert_int_equal(errs.n, 1);
	snprintf(want, sizeof want, "%s:15: cannot read token: No such file or directory (tried", ini);
	assert_true(strncmp(errs.msgs[0], want, strlen(want)) == 0);
	cfg_errors_clear(&errs);
	cfg_free(cfg);
	free(ini);
	free_tmpdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_kind),
		cmocka_unit_test(test_read_verify_key),
		cmocka_unit_test(test_example_conf_files),
		cmocka_unit_test(test_secret_credentials_directory),
		cmocka_unit_test(test_secret_whitespace),
		cmocka_unit_test(test_secret_errors),
		cmocka_unit_test(test_read_file_order),
		cmocka_unit_test(test_secret_permissions),
		cmocka_unit_test(test_check_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
