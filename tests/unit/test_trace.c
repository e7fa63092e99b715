/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for W3C Trace Context traceparent values (warrantd(7) §13): trace.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "core/trace.h"

#define GOOD "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

static int
parse(const char *s, char out[TRACE_LEN + 1])
{
	return trace_parse(s, strlen(s), out);
}

static void
test_valid(void **state)
{
	char out[TRACE_LEN + 1];

	(void)state;
	assert_int_equal(parse(GOOD, out), 0);
	assert_string_equal(out, GOOD);
	assert_int_equal(parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", out), 0);
	/* flags: bits not defined yet are kept */
	assert_int_equal(parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff", out), 0);
	/* a later version: its extra fields dropped, spoken as 00 */
	assert_int_equal(parse("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what", out), 0);
	assert_string_equal(out, GOOD);
	assert_int_equal(parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", out), 0);
	assert_string_equal(out, GOOD);
	/* only len bytes are read */
	assert_int_equal(trace_parse(GOOD "xyz", TRACE_LEN, out), 0);
	assert_string_equal(out, GOOD);
}

static void
test_invalid(void **state)
{
	static const char *const bad[] = {
		"", "00", GOOD "0", GOOD "-", GOOD "-x",	/* 00 is exactly 55 */
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",	/* upper case */
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",	/* zero trace id */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",	/* zero parent */
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",	/* version ff */
		"00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",	/* short id */
		"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
		"0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e473 -00f067aa0ba902b7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\n",
		"cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",	/* no '-' after */
		"cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
		" 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	};
	char out[TRACE_LEN + 1];

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memcpy(out, "junk", 5);
		if (parse(bad[i], out) != -1)
			fail_msg("accepted \"%s\"", bad[i]);
		assert_string_equal(out, "");
	}
	assert_int_equal(trace_parse(NULL, 0, out), -1);
	/* a NUL inside the length is not hex */
	assert_int_equal(trace_parse("00-4bf92f3577b34da6a3ce929d0e0e4736\0" "00f067aa0ba902b7-01",
	    TRACE_LEN, out), -1);
}

/* A new trace is itself valid, carries the words, and is never all zeros. */
static void
test_new(void **state)
{
	char out[TRACE_LEN + 1], back[TRACE_LEN + 1];

	(void)state;
	trace_new(0x4bf92f3577b34da6ULL, 0xa3ce929d0e0e4736ULL, 0x00f067aa0ba902b7ULL, out);
	assert_string_equal(out, GOOD);
	trace_new(0, 0, 0, out);
	assert_string_equal(out, "00-00000000000000000000000000000001-0000000000000001-01");
	assert_int_equal(parse(out, back), 0);
	trace_new(UINT64_MAX, 0, 7, out);
	assert_int_equal(strlen(out), TRACE_LEN);
	assert_int_equal(parse(out, back), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_new),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
