/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for the one WWW-Authenticate reader (wwwauth.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "base/wwwauth.h"

static void
test_param(void **state)
{
	char out[WWWAUTH_VALUE_MAX];

	(void)state;
	assert_int_equal(wwwauth_param("DPoP error=\"use_dpop_nonce\", error_description=\"x\"",
	    "DPoP", "error", out, sizeof out), 0);
	assert_string_equal(out, "use_dpop_nonce");
	/* the scheme's own challenge only, names without case, a token value */
	assert_int_equal(wwwauth_param("Bearer realm=\"x\", error=\"invalid_token\", "
	    "dpop algs=\"ES256\", ERROR=invalid_dpop_proof", "DPoP", "error", out, sizeof out), 0);
	assert_string_equal(out, "invalid_dpop_proof");
	/* the first of two */
	assert_int_equal(wwwauth_param("Bearer error=a, error=b", "Bearer", "error", out,
	    sizeof out), 0);
	assert_string_equal(out, "a");
	/* a quoted-string: escapes taken, text inside never a parameter */
	assert_int_equal(wwwauth_param("Bearer realm=\"a\\\"b, error=x\"", "Bearer", "realm",
	    out, sizeof out), 0);
	assert_string_equal(out, "a\"b, error=x");
	assert_int_equal(wwwauth_param("Bearer realm=\"error=x\"", "Bearer", "error", out,
	    sizeof out), -1);
	/* a token68 and its padding skipped; a value with '/' and '=' kept whole */
	assert_int_equal(wwwauth_param("Basic abc==, Bearer error=a/b=, x=1", "Bearer", "error",
	    out, sizeof out), 0);
	assert_string_equal(out, "a/b=");
	/* cut to the buffer */
	assert_int_equal(wwwauth_param("DPoP error=abcdef", "DPoP", "error", out, 4), 0);
	assert_string_equal(out, "abc");
	assert_int_equal(wwwauth_param("DPoP algs=\"ES256\"", "DPoP", "error", out, sizeof out), -1);
	assert_int_equal(wwwauth_param("DPoPx error=a", "DPoP", "error", out, sizeof out), -1);
	assert_int_equal(wwwauth_param(NULL, "DPoP", "error", out, sizeof out), -1);
	assert_int_equal(wwwauth_param("DPoP error=a", "DPoP", "error", out, 0), -1);
}

static void
test_has(void **state)
{
	(void)state;
	assert_int_equal(wwwauth_has("Bearer error=\"invalid_token\"", "Bearer", "error",
	    "invalid_token"), 1);
	/* any of the scheme's, not only the first */
	assert_int_equal(wwwauth_has("Bearer error=x, Bearer error=invalid_token", "bearer",
	    "error", "invalid_token"), 1);
	/* values match exactly */
	assert_int_equal(wwwauth_has("Bearer error=\"INVALID_TOKEN\"", "Bearer", "error",
	    "invalid_token"), 0);
	assert_int_equal(wwwauth_has("Bearer error=invalid_token_x", "Bearer", "error",
	    "invalid_token"), 0);
	assert_int_equal(wwwauth_has("DPoP error=invalid_token", "Bearer", "error",
	    "invalid_token"), 0);
	/* an unterminated quote holds the rest of the value */
	assert_int_equal(wwwauth_has("Bearer error=\"invalid_token", "Bearer", "error",
	    "invalid_token"), 1);
	assert_int_equal(wwwauth_has(NULL, "Bearer", "error", "invalid_token"), 0);
	assert_int_equal(wwwauth_has("", "Bearer", "error", "invalid_token"), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_param),
		cmocka_unit_test(test_has),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
