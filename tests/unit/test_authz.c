/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for the current-authority wire format (warrantd(7) §7, R5): authz.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "authz.h"

static enum job_authz
answer(long status, const char *body)
{
	return authz_parse_answer(status, body, body ? strlen(body) : 0);
}

static void
test_allow(void **state)
{
	(void)state;
	assert_int_equal(answer(200, "{\"result\": true}"), JOB_AUTHZ_ALLOW);
	assert_int_equal(answer(200, "{\"result\": {\"allow\": true}}"), JOB_AUTHZ_ALLOW);
	assert_int_equal(answer(204, "{\"result\":true,\"decision_id\":\"x\"}"), JOB_AUTHZ_ALLOW);
}

/* Anything but an explicit true is a denial: false, a missing result, a
 * truthy value that is not true, a body that is not JSON. */
static void
test_deny(void **state)
{
	(void)state;
	const char *const bodies[] = {
		"{\"result\": false}", "{\"result\": {\"allow\": false}}", "{}",
		"{\"result\": {}}", "{\"result\": 1}", "{\"result\": \"true\"}",
		"{\"result\": {\"allow\": \"yes\"}}", "{\"result\": [true]}", "{\"allow\": true}",
		"true", "[]", "not json", "", "{\"result\": true", NULL,
	};
	for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++)
		if (answer(200, bodies[i]) != JOB_AUTHZ_DENY)
			fail_msg("body %s did not deny", bodies[i] ? bodies[i] : "(none)");
}

/* No answer, or not 2xx: the PDP is unavailable, whatever the body says. */
static void
test_unavailable(void **state)
{
	(void)state;
	assert_int_equal(answer(0, NULL), JOB_AUTHZ_UNAVAILABLE);
	assert_int_equal(answer(500, "{\"result\": true}"), JOB_AUTHZ_UNAVAILABLE);
	assert_int_equal(answer(503, NULL), JOB_AUTHZ_UNAVAILABLE);
	assert_int_equal(answer(404, "{\"result\": false}"), JOB_AUTHZ_UNAVAILABLE);
	assert_int_equal(answer(302, ""), JOB_AUTHZ_UNAVAILABLE);
	assert_string_equal(authz_name(JOB_AUTHZ_ALLOW), "allow");
	assert_string_equal(authz_name(JOB_AUTHZ_DENY), "deny");
	assert_string_equal(authz_name(JOB_AUTHZ_UNAVAILABLE), "unavailable");
}

/* The OPA input document: the record's fields, decidedAt as written. */
static void
test_request_body(void **state)
{
	(void)state;
	struct record r;

	memset(&r, 0, sizeof r);
	strcpy(r.id, "gate-14");
	r.on_behalf_of = "operator:4417";
	r.action = "gate.open";
	r.resource = "canal/lateral-3/gate-14";
	r.basis = "rule:duty-operator";
	/* Only what the input takes from the payload as written. */
	r.body = (char *)"{\"parameters\":{\"percent\":40},"
	    "\"decidedAt\":\"2026-11-30T16:00:00.5Z\"}";
	r.body_len = strlen(r.body);
	char *body = authz_request_body(&r);
	assert_non_null(body);
	json_t *doc = json_loads(body, 0, NULL), *in = json_object_get(doc, "input");
	assert_non_null(in);
	assert_int_equal(json_object_size(in), 7);
	assert_string_equal(json_string_value(json_object_get(in, "subject")), "operator:4417");
	assert_string_equal(json_string_value(json_object_get(in, "action")), "gate.open");
	assert_string_equal(json_string_value(json_object_get(in, "resource")),
	    "canal/lateral-3/gate-14");
	assert_string_equal(json_string_value(json_object_get(in, "basis")), "rule:duty-operator");
	assert_string_equal(json_string_value(json_object_get(in, "recordId")), "gate-14");
	assert_string_equal(json_string_value(json_object_get(in, "decidedAt")),
	    "2026-11-30T16:00:00.5Z");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(in, "parameters"),
	    "percent")), 40);
	assert_null(strchr(body, '\n'));	/* compact */
	json_decref(doc);
	free(body);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allow),
		cmocka_unit_test(test_deny),
		cmocka_unit_test(test_unavailable),
		cmocka_unit_test(test_request_body),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
