/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ctl/act.h's one way of saying who asked (issue 38 item 6), the same for
 * warrantctl and warrantd-web, and its result lines.
 */
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl/act.h"

static void
test_who_console(void **state)
{
	(void)state;
	char who[ACT_WHO_MAX];

	act_who_console("alice", "operator", who, sizeof who);
	assert_string_equal(who, "console user alice, redis user operator");
	act_who_console("bob", NULL, who, sizeof who);
	assert_string_equal(who, "console user bob, redis user default");
	/* one line in the audit, whatever a name holds */
	act_who_console("a\nb", "op\x7f", who, sizeof who);
	assert_string_equal(who, "console user a?b, redis user op?");
}

static void
test_who_unix(void **state)
{
	(void)state;
	char who[ACT_WHO_MAX];

	unsetenv("SUDO_USER");
	act_who_unix("operator", who, sizeof who);
	assert_true(strncmp(who, "unix user ", 10) == 0);
	assert_non_null(strstr(who, ", redis user operator"));
	assert_null(strstr(who, "sudo"));
	setenv("SUDO_USER", "carol", 1);
	act_who_unix(NULL, who, sizeof who);
	assert_non_null(strstr(who, " (sudo from carol), redis user default"));
	unsetenv("SUDO_USER");
}

static void
test_result(void **state)
{
	(void)state;
	struct act_result r;

	act_result_init(&r);
	assert_int_equal(json_array_size(r.lines), 0);
	assert_int_equal(r.done, 0);
	act_result_clear(&r);
	assert_null(r.lines);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_who_console),
		cmocka_unit_test(test_who_unix),
		cmocka_unit_test(test_result),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
