/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for src/core/lag.c: the group's lag from ids (issue 38 item 2). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "core/lag.h"

/* Nothing delivered yet: XLEN is the lag, whatever the count. */
static void
test_xlen_when_nothing_delivered(void **state)
{
	char start[LAG_START_MAX];
	(void)state;

	assert_int_equal(lag_query_for(NULL, start), LAG_XLEN);
	assert_string_equal(start, "");
	assert_int_equal(lag_query_for("0-0", start), LAG_XLEN);
	struct lag l = lag_from_count(LAG_XLEN, 25000);
	assert_int_equal(l.n, 25000);	/* exact: no cap */
	assert_int_equal(l.at_least, 0);
}

/* After a delivered id: the entries after it, exclusive. */
static void
test_xrange_after_last_delivered(void **state)
{
	char start[LAG_START_MAX];
	(void)state;

	assert_int_equal(lag_query_for("1700000000000-3", start), LAG_XRANGE);
	assert_string_equal(start, "(1700000000000-3");
	assert_int_equal(lag_query_for("18446744073709551615-18446744073709551615", start),
	    LAG_XRANGE);
	assert_string_equal(start, "(18446744073709551615-18446744073709551615");
	struct lag l = lag_from_count(LAG_XRANGE, 3);
	assert_int_equal(l.n, 3);
	assert_int_equal(l.at_least, 0);
	l = lag_from_count(LAG_XRANGE, 0);
	assert_int_equal(l.n, 0);
	l = lag_from_count(LAG_XRANGE, -1);	/* an error reply: nothing known */
	assert_int_equal(l.n, 0);
}

/* COUNT LAG_CAP returned all it may: there may be more. */
static void
test_cap(void **state)
{
	char buf[32];
	(void)state;

	struct lag l = lag_from_count(LAG_XRANGE, LAG_CAP);
	assert_int_equal(l.n, LAG_CAP);
	assert_int_equal(l.at_least, 1);
	assert_string_equal(lag_text(l, buf, sizeof buf), "\u2265" LAG_CAP_S);
	l = lag_from_count(LAG_XRANGE, LAG_CAP - 1);
	assert_int_equal(l.at_least, 0);
	assert_string_equal(lag_text(l, buf, sizeof buf), "9999");
	assert_int_equal(atoi(LAG_CAP_S), LAG_CAP);
}

/* Only "<ms>-<seq>" goes into a command. */
static void
test_bad_ids_refused(void **state)
{
	static const char *const bad[] = {"", "-", "1-", "-1", "1", "1-2-3", "a-1", "1-1 ",
	    "+", "$", "123456789012345678901-1"};
	char start[LAG_START_MAX];
	(void)state;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(lag_query_for(bad[i], start), -1);
		assert_string_equal(start, "");
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_xlen_when_nothing_delivered),
		cmocka_unit_test(test_xrange_after_last_delivered),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_bad_ids_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
