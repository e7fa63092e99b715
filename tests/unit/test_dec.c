/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for src/base/dec.c: decimal numbers against snprintf. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/dec.h"

static const size_t numbers[] = {
	0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 65535, 1000000, 4294967295u,
	10000000000ULL, SIZE_MAX,
};

#define NNUMBERS (sizeof numbers / sizeof numbers[0])

/* dec_len and dec_put agree with printf("%zu"), and write
 * nothing past the digits. */
static void
test_decimal(void **state)
{
	(void)state;
	for (size_t i = 0; i < NNUMBERS; i++) {
		char want[32], got[32];
		int n = snprintf(want, sizeof want, "%zu", numbers[i]);

		memset(got, '#', sizeof got);
		assert_int_equal(dec_len(numbers[i]), (size_t)n);
		char *end = dec_put(got, numbers[i]);
		assert_ptr_equal(end, got + n);
		assert_memory_equal(got, want, (size_t)n);
		assert_int_equal(got[n], '#');
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decimal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
