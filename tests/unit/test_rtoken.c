/* SPDX-License-Identifier: BSD-2-Clause */
/* test_rtoken: the token_command program is run only when no one but this
 * user or root can change it (warrantd(7) §9, issue 37 item 4): refused at
 * -t with file:line and at start with one line. */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ev.h>

#include "auth/rtoken.h"
#include "conf/cfgfile.h"
#include "http/http.h"
#include "tmpfiles.h"

#define MIN_FILE "[records]\nverify_key_file = k.pub\n" \
	"[action a]\nurl = http://127.0.0.1/x\nauth = none\n"
#define HELPER "#!/bin/sh\necho '{\"token\":\"t\",\"expires_in\":60}'\n"

/* A config in dir whose token_command is `program`; line 8 names it. */
static struct cfg *
command_cfg(const char *dir, const char *program)
{
	char text[1024];
	struct cfg_errors errs = {0};

	snprintf(text, sizeof text, MIN_FILE "[redis]\nauth = command\ntoken_command = %s --x\n",
	    program);
	WRITE(dir, "w.ini", text);
	char *ini = path_join(dir, "w.ini");
	struct cfg *cfg = cfgfile_load(ini, &errs);
	free(ini);
	assert_int_equal(errs.n, 0);
	assert_non_null(cfg);
	return cfg;
}

/* The -t verdict on `program`: NULL when accepted, else the one message
 * (static). */
static const char *
check(const char *dir, const char *program)
{
	static char msg[1024];
	struct cfg_errors errs = {0};
	struct cfg *cfg = command_cfg(dir, program);
	int rc = rtoken_check_cfg(cfg, &errs);

	cfg_free(cfg);
	assert_int_equal(rc == 0, errs.n == 0);
	if (rc == 0)
		return NULL;
	assert_int_equal(errs.n, 1);
	snprintf(msg, sizeof msg, "%s", errs.msgs[0]);
	cfg_errors_clear(&errs);
	return msg;
}

/* dir/name holding HELPER with `mode`; the path (caller frees). */
static char *
helper(const char *dir, const char *name, mode_t mode)
{
	char *p = path_join(dir, name);

	WRITE(dir, name, HELPER);
	assert_int_equal(chmod(p, mode), 0);
	return p;
}

static void
assert_has(const char *msg, const char *part)
{
	assert_non_null(msg);
	if (strstr(msg, part) == NULL)
		fail_msg("\"%s\" not in \"%s\"", part, msg);
}

static void
test_trusted_helper_accepted(void **state)
{
	(void)state;
	char *dir = make_tmpdir(), *p = helper(dir, "tok", 0700);

	assert_null(check(dir, p));
	assert_null(check(dir, "/bin/true"));	/* root's, in root's directory */
	free(p);
	free_tmpdir(dir);
}

static void
test_group_writable_helper_refused(void **state)
{
	(void)state;
	char *dir = make_tmpdir(), *p = helper(dir, "tok", 0770);
	char want[512];

	snprintf(want, sizeof want, "%s/w.ini:8: token_command: refusing the program %s: "
	    "permissions 0770 let group or others write it", dir, p);
	assert_has(check(dir, p), want);
	assert_int_equal(chmod(p, 0702), 0);	/* others */
	assert_has(check(dir, p), "permissions 0702");
	free(p);
	free_tmpdir(dir);
}

static void
test_world_writable_directory_refused(void **state)
{
	(void)state;
	char *dir = make_tmpdir(), *bin = path_join(dir, "bin");

	assert_int_equal(mkdir(bin, 0700), 0);
	char *p = helper(bin, "tok", 0700);
	assert_null(check(dir, p));
	assert_int_equal(chmod(bin, 01777), 0);	/* like /tmp: the sticky bit does not help */
	char want[512];
	snprintf(want, sizeof want, "token_command: refusing the directory of the program %s: "
	    "permissions 1777", bin);
	assert_has(check(dir, p), want);
	assert_int_equal(chmod(bin, 0770), 0);
	assert_has(check(dir, p), "permissions 0770");
	free(p);
	free(bin);
	free_tmpdir(dir);
}

/* A link from a safe place to a helper in an unsafe one is judged by where
 * the helper really is. */
static void
test_link_into_writable_directory_refused(void **state)
{
	(void)state;
	char *dir = make_tmpdir(), *open_dir = path_join(dir, "open");

	assert_int_equal(mkdir(open_dir, 0700), 0);
	char *p = helper(open_dir, "tok", 0700), *link = path_join(dir, "tok");
	assert_int_equal(symlink(p, link), 0);
	assert_null(check(dir, link));
	assert_int_equal(chmod(open_dir, 0777), 0);
	char want[512];
	snprintf(want, sizeof want, "refusing the directory of the program %s", open_dir);
	assert_has(check(dir, link), want);
	free(p);
	free(link);
	free(open_dir);
	free_tmpdir(dir);
}

static void
test_other_owner_refused(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();	/* only root can give a file away */
	char *dir = make_tmpdir(), *p = helper(dir, "tok", 0700);

	assert_int_equal(chown(p, 65534, 65534), 0);
	assert_has(check(dir, p), "owned by uid 65534, not by this user or root");
	assert_int_equal(chown(p, 0, 0), 0);
	assert_int_equal(chown(dir, 65534, 65534), 0);
	assert_has(check(dir, p), "refusing the directory of the program");
	assert_int_equal(chown(dir, 0, 0), 0);
	free(p);
	free_tmpdir(dir);
}

static void
test_missing_helper_refused(void **state)
{
	(void)state;
	char *dir = make_tmpdir(), *p = path_join(dir, "none");

	assert_has(check(dir, p), "cannot use the program");
	free(p);
	free_tmpdir(dir);
}

/* At start: rtoken_new refuses it with one line, and runs nothing. */
static void
test_start_refuses_untrusted_helper(void **state)
{
	(void)state;
	char *dir = make_tmpdir(), *p = helper(dir, "tok", 0775), err[512];
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct http_client *http = http_client_new(loop);
	struct cfg *cfg = command_cfg(dir, p);

	assert_non_null(http);
	assert_null(rtoken_new(loop, http, cfg, 0, err, sizeof err));
	assert_has(err, "token_command: refusing the program");
	assert_null(strchr(err, '\n'));
	assert_int_equal(chmod(p, 0755), 0);
	struct rtoken *rt = rtoken_new(loop, http, cfg, 0, err, sizeof err);
	assert_non_null(rt);
	rtoken_free(rt);
	cfg_free(cfg);
	http_client_free(http);
	ev_loop_destroy(loop);
	free(p);
	free_tmpdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trusted_helper_accepted),
		cmocka_unit_test(test_group_writable_helper_refused),
		cmocka_unit_test(test_world_writable_directory_refused),
		cmocka_unit_test(test_link_into_writable_directory_refused),
		cmocka_unit_test(test_other_owner_refused),
		cmocka_unit_test(test_missing_helper_refused),
		cmocka_unit_test(test_start_refuses_untrusted_helper),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
