/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for the one backoff (backoff.h) and the one random source (rnd.h). */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "base/backoff.h"
#include "base/rnd.h"
#include "core/token.h"
#include "testlib.h"


/* Full jitter (floor 0): rnd % (ceiling + 1), the ceiling doubling to the cap. */
static void
test_full_jitter(void **state)
{
	(void)state;
	assert_int_equal(backoff_ms(0, 500, 60000, 1, 0), 0);
	assert_int_equal(backoff_ms(0, 500, 60000, 1, 500), 500);
	assert_int_equal(backoff_ms(0, 500, 60000, 1, 501), 0);
	assert_int_equal(backoff_ms(0, 500, 60000, 3, 2000), 2000);
	assert_int_equal(backoff_ms(0, 500, 60000, 3, 2001), 0);
	assert_int_equal(backoff_ms(0, 500, 60000, 20, 60000), 60000);
	assert_int_equal(backoff_ms(0, 500, 60000, 20, 60001), 0);
	/* n < 1 is the first retry */
	assert_int_equal(backoff_ms(0, 500, 60000, 0, 500), 500);
	assert_int_equal(backoff_ms(0, 500, 60000, -7, 500), 500);
	assert_int_equal(backoff_ms(0, 500, 60000, INT_MIN, 501), 0);
	/* base above cap: the cap */
	assert_int_equal(backoff_ms(0, 5000, 1000, 1, 1000), 1000);
	/* no overflow, however large n or the numbers */
	assert_int_equal(backoff_ms(0, 500, 60000, INT_MAX, 60000), 60000);
	assert_int_equal(backoff_ms(0, INT64_MAX / 3, INT64_MAX, INT_MAX, UINT64_MAX),
	    (int64_t)(UINT64_MAX % ((uint64_t)INT64_MAX + 1)));
	assert_int_equal(backoff_ms(0, 1, INT64_MAX, INT_MAX, (uint64_t)INT64_MAX), INT64_MAX);
	for (int n = 1; n <= 100; n++)
		for (uint64_t k = 0; k < 1000; k++) {
			int64_t d = backoff_ms(0, 500, 60000, n, mix(k + (uint64_t)n * 1000));
			int64_t c = 500 * (INT64_C(1) << (n - 1 < 20 ? n - 1 : 20));
			assert_true(d >= 0 && d <= (c < 60000 ? c : 60000));
		}
}

/* The token fetch after a failure: 500 ms doubling to 30 s (oauth.c). */
static void
test_token_fetch_delays(void **state)
{
	(void)state;
	assert_int_equal(backoff_ms(0, TOKEN_RETRY_BASE_MS, TOKEN_RETRY_CAP_MS, 1, 500), 500);
	assert_int_equal(backoff_ms(0, TOKEN_RETRY_BASE_MS, TOKEN_RETRY_CAP_MS, 2, 1000), 1000);
	assert_int_equal(backoff_ms(0, TOKEN_RETRY_BASE_MS, TOKEN_RETRY_CAP_MS, 6, 16000), 16000);
	assert_int_equal(backoff_ms(0, TOKEN_RETRY_BASE_MS, TOKEN_RETRY_CAP_MS, 7, 30000), 30000);
	assert_int_equal(backoff_ms(0, TOKEN_RETRY_BASE_MS, TOKEN_RETRY_CAP_MS, 7, 30001), 0);
	int64_t max = 0;
	for (uint64_t i = 0; i < 50000; i++) {
		int64_t d = backoff_ms(0, TOKEN_RETRY_BASE_MS, TOKEN_RETRY_CAP_MS, 1000, mix(i));
		max = d > max ? d : max;
	}
	assert_true(max <= 30000 && max > 27000);
}

/* With a floor (reconnects, error replies): uniform in [floor, ceiling]. */
static void
test_floor(void **state)
{
	(void)state;
	assert_int_equal(backoff_ms(100, 100, 1000, 1, 0), 100);
	assert_int_equal(backoff_ms(100, 100, 1000, 1, UINT64_MAX), 100);
	assert_int_equal(backoff_ms(100, 100, 1000, 2, 0), 100);
	assert_int_equal(backoff_ms(100, 100, 1000, 2, 100), 200);
	assert_int_equal(backoff_ms(100, 100, 1000, 2, 101), 100);
	assert_int_equal(backoff_ms(100, 100, 1000, 3, 300), 400);
	assert_int_equal(backoff_ms(100, 100, 1000, 10, 900), 1000);
	assert_int_equal(backoff_ms(100, 100, 1000, 10, 901), 100);
	for (uint64_t r = 0; r < 5000; r += 7) {
		int64_t d = backoff_ms(100, 100, 1000, INT_MAX, mix(r));
		assert_true(d >= 100 && d <= 1000);
	}
	int64_t big = INT64_MAX / 2 + 7;
	assert_true(backoff_ms(big, big, INT64_MAX, 60, UINT64_MAX) >= big);
	/* degenerate bounds: never above the cap, never below 1 without a floor */
	assert_int_equal(backoff_ms(0, 0, 0, 5, 12345), 1);	/* 12345 % 2 */
	assert_int_equal(backoff_ms(300, 300, 10, 5, 12345), 10);
	assert_int_equal(backoff_ms(-5, 100, 1000, 1, 100), 100);
	/* a floor at or above the ceiling gives the ceiling: no jitter */
	assert_int_equal(backoff_ms(INT64_MAX, 1000, 60000, 3, mix(1)), 4000);
}

static void
test_rnd(void **state)
{
	char a[33], b[33], small[9];
	uint64_t x = rnd_u64(), y = rnd_u64();

	(void)state;
	assert_true(x != y);
	assert_int_equal(rnd_hex(a, sizeof a, 16), 0);
	assert_int_equal(rnd_hex(b, sizeof b, 16), 0);
	assert_int_equal(strlen(a), 32);
	assert_int_equal(strspn(a, "0123456789abcdef"), 32);
	assert_string_not_equal(a, b);
	assert_int_equal(rnd_hex(small, sizeof small, 4), 0);
	assert_int_equal(strlen(small), 8);
	assert_int_equal(rnd_hex(small, sizeof small - 1, 4), -1);	/* no room for NUL */
	assert_string_equal(small, "");
	unsigned char buf[64] = {0}, zero[64] = {0};
	assert_int_equal(rnd_bytes(buf, sizeof buf), 0);
	assert_memory_not_equal(buf, zero, sizeof buf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_jitter),
		cmocka_unit_test(test_token_fetch_delays),
		cmocka_unit_test(test_floor),
		cmocka_unit_test(test_rnd),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
