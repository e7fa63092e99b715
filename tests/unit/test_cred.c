/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for cred's Authorization line (cred.h): the one writer of it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "auth/cred.h"

/* Exactly "Authorization: Bearer <token>", its NUL, in the size the macro
 * says; a token of any length, none cut short. */
static void
test_auth_line(void **state)
{
	char buf[CRED_AUTH_LINE_SIZE(3) + 1];
	char big[CRED_AUTH_LINE_SIZE(2000)], tok[2001];

	(void)state;
	memset(buf, 'x', sizeof buf);
	assert_int_equal(cred_auth_line(buf, "abc", 3), 25);
	assert_string_equal(buf, "Authorization: Bearer abc");
	assert_int_equal(sizeof buf - 1, strlen(buf) + 1);	/* the size, NUL included */
	assert_int_equal(buf[sizeof buf - 1], 'x');		/* nothing past it */
	memset(tok, 'T', 2000);
	tok[2000] = '\0';
	assert_int_equal(cred_auth_line(big, tok, 2000), 22 + 2000);
	assert_memory_equal(big, CRED_AUTH_PREFIX, 22);
	assert_string_equal(big + 22, tok);
}

static void
test_auth_line_new(void **state)
{
	char *line;

	(void)state;
	assert_null(cred_auth_line_new(NULL));
	cred_auth_line_free(NULL);
	line = cred_auth_line_new("eyJ.a-b_c.d~+/=");
	assert_non_null(line);
	assert_string_equal(line, "Authorization: Bearer eyJ.a-b_c.d~+/=");
	cred_auth_line_free(line);
	line = cred_auth_line_new("");
	assert_non_null(line);
	assert_string_equal(line, "Authorization: Bearer ");
	cred_auth_line_free(line);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_auth_line),
		cmocka_unit_test(test_auth_line_new),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
