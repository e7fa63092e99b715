/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for src/base/wtime.c: RFC 3339 (UTC only), IMF-fixdate, civil days. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "base/wtime.h"

struct good {
	const char *text;
	int64_t ms;
};

static void
test_rfc3339_accepted(void **state)
{
	static const struct good cases[] = {
		{"1970-01-01T00:00:00Z", 0},
		{"1970-01-01T00:00:00.001Z", 1},
		{"2026-11-30T04:00:00Z", 1796011200000LL},
		{"2026-11-30T04:00:00.123Z", 1796011200123LL},
		{"2026-11-30T04:00:00.1Z", 1796011200100LL},
		{"2026-11-30T04:00:00.12Z", 1796011200120LL},
		{"2026-11-30T04:00:00.000Z", 1796011200000LL},
		/* Digits past the millisecond are cut, not rounded. */
		{"2026-11-30T04:00:00.123456789Z", 1796011200123LL},
		{"2026-11-30T04:00:00.9999Z", 1796011200999LL},
		/* RFC 3339 §5.6 allows lower-case t and z. */
		{"2026-11-30t04:00:00z", 1796011200000LL},
		/* Leap days: every 4th year, not every 100th, but every 400th. */
		{"2000-02-29T00:00:00Z", 951782400000LL},
		{"2024-02-29T23:59:59Z", 1709251199000LL},
		{"2000-02-28T00:00:00Z", 951696000000LL},
		{"2100-03-01T00:00:00Z", 4107542400000LL},
		{"2026-12-31T23:59:59.999Z", 1798761599999LL},
		{"9999-12-31T23:59:59Z", 253402300799000LL},
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int64_t ms = -42;
		if (wtime_parse_rfc3339(cases[i].text, &ms) != 0)
			fail_msg("refused %s", cases[i].text);
		if (ms != cases[i].ms)
			fail_msg("%s -> %lld, want %lld", cases[i].text, (long long)ms,
			    (long long)cases[i].ms);
	}
}

static void
test_rfc3339_rejected(void **state)
{
	static const char *const bad[] = {
		"",
		"2026-11-30",
		"2026-11-30T04:00:00",			/* no zone */
		"2026-11-30T06:00:00+02:00",		/* offsets are refused: UTC only */
		"2026-11-30T04:00:00+00:00",
		"2026-11-30T04:00:00-00:00",
		"2026-11-30 04:00:00Z",			/* space for T */
		"2026-11-30T04:00Z",			/* no seconds */
		"2026-11-30T04:00:00.Z",		/* empty fraction */
		"2026-11-30T04:00:00,5Z",		/* comma fraction */
		"2026-11-30T04:00:00.12a3Z",
		"2026-11-30T04:00:00ZZ",
		"2026-11-30T04:00:00Z ",
		" 2026-11-30T04:00:00Z",
		"+2026-11-30T04:00:00Z",
		"26-11-30T04:00:00Z",
		"2026-1-30T04:00:00Z",
		"2026-11-3T04:00:00Z",
		"2026-11-30T4:00:00Z",
		"2026/11/30T04:00:00Z",
		"2026-13-01T00:00:00Z",
		"2026-00-01T00:00:00Z",
		"2026-11-00T00:00:00Z",
		"2026-11-31T00:00:00Z",			/* November has 30 days */
		"2026-04-31T00:00:00Z",
		"2026-01-32T00:00:00Z",
		"2023-02-29T00:00:00Z",			/* not a leap year */
		"1900-02-29T00:00:00Z",			/* century, not a leap year */
		"2100-02-29T00:00:00Z",
		"2026-11-30T24:00:00Z",
		"2026-11-30T23:60:00Z",
		"2026-11-30T23:59:60Z",			/* leap seconds are not accepted */
		"1969-12-31T23:59:59Z",			/* before the epoch */
		"2026-11-30T04:00:00Zjunk",
		"2026-11-30T04:00:00\nZ",
		"２０２６-11-30T04:00:00Z",
	};
	int64_t ms;

	(void)state;
	assert_int_equal(wtime_parse_rfc3339(NULL, &ms), -1);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (wtime_parse_rfc3339(bad[i], &ms) != -1)
			fail_msg("accepted \"%s\"", bad[i]);
}

static void
test_rfc3339_format(void **state)
{
	char buf[WTIME_RFC3339_LEN], small[5];

	(void)state;
	assert_string_equal(wtime_format_rfc3339(0, buf, sizeof buf), "1970-01-01T00:00:00.000Z");
	assert_string_equal(wtime_format_rfc3339(1796011200123LL, buf, sizeof buf),
	    "2026-11-30T04:00:00.123Z");
	assert_string_equal(wtime_format_rfc3339(951782400000LL, buf, sizeof buf),
	    "2000-02-29T00:00:00.000Z");
	assert_string_equal(wtime_format_rfc3339(1709251199999LL, buf, sizeof buf),
	    "2024-02-29T23:59:59.999Z");
	assert_string_equal(wtime_format_rfc3339(-1, buf, sizeof buf), "1969-12-31T23:59:59.999Z");
	assert_string_equal(wtime_format_rfc3339(253402300799999LL, buf, sizeof buf),
	    "9999-12-31T23:59:59.999Z");
	/* Truncated, but always terminated. */
	assert_string_equal(wtime_format_rfc3339(0, small, sizeof small), "1970");
}

/* Every value formats to text that parses back to it, across leap days,
 * month and year ends. */
static void
test_rfc3339_round_trip(void **state)
{
	char buf[WTIME_RFC3339_LEN];
	int64_t back;
	uint64_t x = 0x9e3779b97f4a7c15ULL;

	(void)state;
	for (int64_t ms = 951696000000LL; ms < 951955200000LL; ms += 3599999) {
		wtime_format_rfc3339(ms, buf, sizeof buf);
		assert_int_equal(wtime_parse_rfc3339(buf, &back), 0);
		assert_int_equal(back, ms);
	}
	for (int i = 0; i < 20000; i++) {
		int64_t ms;
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		ms = (int64_t)(x % 253402300800000ULL);
		wtime_format_rfc3339(ms, buf, sizeof buf);
		if (wtime_parse_rfc3339(buf, &back) != 0 || back != ms)
			fail_msg("%lld -> %s -> %lld", (long long)ms, buf, (long long)back);
	}
}

static void
test_http_date(void **state)
{
	static const char *const bad[] = {
		"",
		"Sunday, 06-Nov-94 08:49:37 GMT",	/* RFC 850: obsolete */
		"Sun Nov  6 08:49:37 1994",		/* asctime: obsolete */
		"Sun, 06 Nov 1994 08:49:37 UTC",
		"Sun, 06 Nov 1994 08:49:37 +0000",
		"Sun, 6 Nov 1994 08:49:37 GMT",
		"Sun, 06 nov 1994 08:49:37 GMT",
		"Sun, 06 Xyz 1994 08:49:37 GMT",
		"Sun 06 Nov 1994 08:49:37 GMT ",
		"Sun, 06 Nov 1994 08:49:37 GMT ",
		"Wed, 29 Feb 2023 00:00:00 GMT",
		"Wed, 31 Apr 2024 00:00:00 GMT",
		"Sun, 06 Nov 1994 24:00:00 GMT",
		"Sun, 06 Nov 1994 08:60:00 GMT",
		"Wed, 31 Dec 1969 23:59:59 GMT",
		"Sun, 06 Nov 1994 08:49:37 gmt",
		/* found by fuzz_httpdate: any three bytes passed as the day name */
		" \r\r, 06 Nov 1994 08:24:30 GMT",
		"Xyz, 06 Nov 1994 08:49:37 GMT",
		"un , 06 Nov 1994 08:49:37 GMT",
	};
	int64_t ms = 0;

	(void)state;
	assert_int_equal(wtime_parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT", &ms), 0);
	assert_int_equal(ms, 784111777000LL);
	assert_int_equal(wtime_parse_http_date("Thu, 29 Feb 2024 23:59:59 GMT", &ms), 0);
	assert_int_equal(ms, 1709251199000LL);
	assert_int_equal(wtime_parse_http_date("Mon, 30 Nov 2026 04:00:00 GMT", &ms), 0);
	assert_int_equal(ms, 1796011200000LL);
	assert_int_equal(wtime_parse_http_date(NULL, &ms), -1);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (wtime_parse_http_date(bad[i], &ms) != -1)
			fail_msg("accepted \"%s\"", bad[i]);
}

static void
test_days_from_civil(void **state)
{
	(void)state;
	assert_int_equal(wtime_days_from_civil(1970, 1, 1), 0);
	assert_int_equal(wtime_days_from_civil(1969, 12, 31), -1);
	assert_int_equal(wtime_days_from_civil(2000, 2, 29), 11016);
	assert_int_equal(wtime_days_from_civil(2000, 3, 1), 11017);
	assert_int_equal(wtime_days_from_civil(1600, 1, 1), -135140);
	/* Consecutive days are consecutive numbers across a leap February. */
	assert_int_equal(wtime_days_from_civil(2024, 3, 1) - wtime_days_from_civil(2024, 2, 28), 2);
	assert_int_equal(wtime_days_from_civil(2023, 3, 1) - wtime_days_from_civil(2023, 2, 28), 1);
}

static void
test_now(void **state)
{
	int64_t now = wtime_now_ms(), sys = (int64_t)time(NULL) * 1000;

	(void)state;
	assert_true(now > sys - 5000 && now < sys + 5000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc3339_accepted),
		cmocka_unit_test(test_rfc3339_rejected),
		cmocka_unit_test(test_rfc3339_format),
		cmocka_unit_test(test_rfc3339_round_trip),
		cmocka_unit_test(test_http_date),
		cmocka_unit_test(test_days_from_civil),
		cmocka_unit_test(test_now),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
