/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for rstate: the reload result's file, written and read back,
 * and the path from $RUNTIME_DIRECTORY. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "worker/rstate.h"

static void
test_format_parse(void **state)
{
	struct rstate a = {.pid = 4242, .generation = 7, .applied = 0}, b;
	char text[1024];
	(void)state;

	snprintf(a.reason, sizeof a.reason, "group changes only\nwith a restart");
	assert_int_equal(rstate_format(&a, text, sizeof text), 0);
	assert_string_equal(text, "4242 7 refused\ngroup changes only with a restart\n");
	assert_int_equal(rstate_parse(text, &b), 0);
	assert_int_equal(b.pid, 4242);
	assert_int_equal(b.generation, 7);
	assert_int_equal(b.applied, 0);
	assert_string_equal(b.reason, "group changes only with a restart");

	struct rstate ok = {.pid = 9, .generation = 0, .applied = 1};
	assert_int_equal(rstate_format(&ok, text, sizeof text), 0);
	assert_string_equal(text, "9 0 applied\n-\n");
	assert_int_equal(rstate_parse(text, &b), 0);
	assert_int_equal(b.applied, 1);
	assert_string_equal(b.reason, "");
	assert_int_equal(rstate_format(&ok, text, 8), -1);	/* does not fit */
}

/* Half a file (a reader never sees one: it is renamed into place) or any
 * other text is not a result. */
static void
test_parse_refuses(void **state)
{
	static const char *const bad[] = {"", "4242 7 refused", "4242 7 refused\n", "4242 7 maybe\n-\n",
	    "x 7 applied\n-\n", "0 7 applied\n-\n", "12 -1 applied\n-\n", "12 1 applied \n-\n",
	    "12 1 applied\n\n"};
	struct rstate st;
	(void)state;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (rstate_parse(bad[i], &st) != -1)
			fail_msg("accepted: '%s'", bad[i]);
}

static void
test_path_write_read(void **state)
{
	char dir[] = "/tmp/test-rstate-XXXXXX", path[512], both[1100];
	struct rstate a = {.pid = 77, .generation = 3, .applied = 1}, b;
	(void)state;

	unsetenv("RUNTIME_DIRECTORY");
	assert_int_equal(rstate_path(path, sizeof path), -1);
	setenv("RUNTIME_DIRECTORY", "relative", 1);
	assert_int_equal(rstate_path(path, sizeof path), -1);
	assert_non_null(mkdtemp(dir));
	snprintf(both, sizeof both, "%s:/run/other", dir);	/* two RuntimeDirectory= */
	setenv("RUNTIME_DIRECTORY", both, 1);
	assert_int_equal(rstate_path(path, sizeof path), 0);
	char want[600];
	snprintf(want, sizeof want, "%s/reload", dir);
	assert_string_equal(path, want);
	assert_int_equal(rstate_read(path, &b), -1);	/* none yet */
	assert_int_equal(rstate_write(path, &a), 0);
	assert_int_equal(rstate_read(path, &b), 0);
	assert_int_equal(b.pid, 77);
	assert_int_equal(b.generation, 3);
	assert_int_equal(b.applied, 1);
	a.generation = 4;
	a.applied = 0;
	snprintf(a.reason, sizeof a.reason, "x");
	assert_int_equal(rstate_write(path, &a), 0);	/* over the last one */
	assert_int_equal(rstate_read(path, &b), 0);
	assert_int_equal(b.generation, 4);
	assert_string_equal(b.reason, "x");
	unlink(path);
	rmdir(dir);
	unsetenv("RUNTIME_DIRECTORY");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_parse),
		cmocka_unit_test(test_parse_refuses),
		cmocka_unit_test(test_path_write_read),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
