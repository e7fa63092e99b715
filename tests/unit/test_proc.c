/* SPDX-License-Identifier: BSD-2-Clause */
/* proc: no core dumps, a descriptor limit that covers the configuration. */
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <cmocka.h>

#include <jansson.h>

#include "worker/proc.h"

static void
test_fds_needed(void **state)
{
	(void)state;
	/* a socket per call, curl's 1024 idle, two per shard, 128 spare */
	assert_int_equal(proc_fds_needed(256, 0), 256 + 1024 + 2 + 128);
	assert_int_equal(proc_fds_needed(256, 1), 256 + 1024 + 2 + 128);
	assert_int_equal(proc_fds_needed(4096, 8), 4096 + 1024 + 16 + 128);
}

static void
test_no_core(void **state)
{
	(void)state;
	struct rlimit core = {RLIM_INFINITY, RLIM_INFINITY};
	char msg[256] = "";

	(void)setrlimit(RLIMIT_CORE, &core);	/* may be refused: the hard limit */
	assert_int_equal(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), 0);
	assert_int_equal(proc_harden(0, msg, sizeof msg), 0);
	assert_int_equal(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);
	assert_int_equal(getrlimit(RLIMIT_CORE, &core), 0);
	assert_int_equal(core.rlim_cur, 0);
	assert_int_equal(core.rlim_max, 0);
}

/* The soft limit is raised as far as the hard one allows; short of what is
 * needed it says so (1) and the worker still runs. */
static void
test_descriptor_limit(void **state)
{
	(void)state;
	struct rlimit fds = {64, 512};
	char msg[256] = "";

	assert_int_equal(setrlimit(RLIMIT_NOFILE, &fds), 0);
	assert_int_equal(proc_harden(300, msg, sizeof msg), 0);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &fds), 0);
	assert_int_equal(fds.rlim_cur, 300);
	assert_int_equal(proc_harden(2000, msg, sizeof msg), 1);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &fds), 0);
	assert_int_equal(fds.rlim_cur, 512);
	assert_string_equal(msg, "the descriptor limit is 512, below the 2000 that max_in_flight "
	    "and the connection pools may need: raise LimitNOFILE");
}

/* jansson's blocks are zeroed on free: a token response does not stay in
 * freed memory. The check wipes a block of each size as free would. */
static void
test_json_wiped(void **state)
{
	(void)state;
	assert_true(proc_wipe_json_check(1, 0xAA));
	assert_true(proc_wipe_json_check(4096, 'e'));
	proc_wipe_json();
	json_t *o = json_loads("{\"access_token\": \"eyJhbGciOi.secret.sig\"}", 0, NULL);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "access_token")),
	    "eyJhbGciOi.secret.sig");
	char *dump = json_dumps(o, 0);	/* a caller's free() of jansson's block */
	assert_non_null(dump);
	free(dump);
	json_decref(o);
}

static void
test_usage(void **state)
{
	(void)state;
	struct proc_usage u;
	struct rlimit fds;

	proc_usage(&u);
	assert_true(u.cpu_s >= 0);
	assert_true(u.rss_bytes > 0);
	assert_true(u.open_fds >= 3);	/* stdin, stdout, stderr at least */
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &fds), 0);
	assert_int_equal(u.max_fds, (long long)fds.rlim_cur);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fds_needed),
		cmocka_unit_test(test_no_core),
		cmocka_unit_test(test_descriptor_limit),
		cmocka_unit_test(test_json_wiped),
		cmocka_unit_test(test_usage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
