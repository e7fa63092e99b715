/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for src/jose/jwa.c: the algorithms' names as JWS headers spell them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "jose/jwa.h"

static void
test_names(void **state)
{
	(void)state;
	assert_string_equal(jwa_name(JWA_ES256), "ES256");
	assert_string_equal(jwa_name(JWA_RS256), "RS256");
	assert_string_equal(jwa_name(JWA_HS256), "HS256");
}

static void
test_none_and_out_of_range(void **state)
{
	(void)state;
	assert_string_equal(jwa_name(JWA_NONE), "");
	assert_string_equal(jwa_name(JWA_COUNT), "");
	assert_string_equal(jwa_name((enum jwa_alg)-1), "");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_none_and_out_of_range),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
