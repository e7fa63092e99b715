/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for src/core/resp.c: bulk strings, against snprintf and the RESP
 * framing Redis reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/resp.h"

static const size_t numbers[] = {
	0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 65535, 1000000, 4294967295u,
	10000000000ULL, SIZE_MAX,
};

#define NNUMBERS (sizeof numbers / sizeof numbers[0])

/* "$<n>\r\n<bytes>\r\n", exactly resp_bulk_len(n) bytes, never more than
 * n + RESP_BULK_OVER; the bytes are copied as they are (CR, LF, NUL). */
static void
test_bulk(void **state)
{
	static const char odd[] = "a\r\nb\0c$";
	const struct {
		const char *s;
		size_t n;
	} cases[] = {
		{"", 0}, {"x", 1}, {"EVALSHA", 7}, {odd, sizeof odd - 1},
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char want[64], got[64];
		int h = snprintf(want, sizeof want, "$%zu\r\n", cases[i].n);
		memcpy(want + h, cases[i].s, cases[i].n);
		memcpy(want + h + cases[i].n, "\r\n", 2);
		size_t wlen = (size_t)h + cases[i].n + 2;

		memset(got, '#', sizeof got);
		assert_int_equal(resp_bulk_len(cases[i].n), wlen);
		assert_true(wlen <= cases[i].n + RESP_BULK_OVER);
		char *end = resp_put_bulk(got, cases[i].s, cases[i].n);
		assert_ptr_equal(end, got + wlen);
		assert_memory_equal(got, want, wlen);
		assert_int_equal(got[wlen], '#');
	}
}

/* The bound holds for the longest length a size_t can write. */
static void
test_bulk_over(void **state)
{
	(void)state;
	for (size_t i = 0; i < NNUMBERS; i++) {
		size_t n = numbers[i];
		size_t over = 1 + dec_len(n) + 2 + 2;	/* resp_bulk_len(n) - n */
		assert_true(over <= RESP_BULK_OVER);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bulk),
		cmocka_unit_test(test_bulk_over),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
