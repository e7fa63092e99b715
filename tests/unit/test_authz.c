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

#include "auth/authz.h"

static enum job_authz
answer(long status, const char *body)
{
	return authz_parse_answer(CFG_AUTHZ_OPA, status, body, body ? strlen(body) : 0);
}

static enum job_authz
answer_authzen(long status, const char *body)
{
	return authz_parse_answer(CFG_AUTHZ_AUTHZEN, status, body, body ? strlen(body) : 0);
}

static void
test_allow(void **state)
{
	(void)state;
	assert_int_equal(answer(200, "{\"result\": true}"), JOB_AUTHZ_ALLOW);
	assert_int_equal(answer(200, "{\"result\": {\"allow\": true}}"), JOB_AUTHZ_ALLOW);
	assert_int_equal(answer(204, "{\"result\":true,\"decision_id\":\"x\"}"), JOB_AUTHZ_ALLOW);
}

/* Any JSON but an explicit true is a denial: false, a missing result, a
 * truthy value that is not true, AuthZEN's answer. */
static void
test_deny(void **state)
{
	(void)state;
	const char *const bodies[] = {
		"{\"result\": false}", "{\"result\": {\"allow\": false}}", "{}",
		"{\"result\": {}}", "{\"result\": 1}", "{\"result\": \"true\"}",
		"{\"result\": {\"allow\": \"yes\"}}", "{\"result\": [true]}", "{\"allow\": true}",
		"true", "[]", "null", "\"allow\"", "{\"decision\": true}",
	};
	for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++)
		if (answer(200, bodies[i]) != JOB_AUTHZ_DENY)
			fail_msg("body %s did not deny", bodies[i] ? bodies[i] : "(none)");
}

/* A 2xx whose body is not JSON decides nothing (§7: "an unreadable body"
 * is R5's unreachable), in both shapes: a proxy's HTML page, a cut body. */
static void
test_unreadable_unavailable(void **state)
{
	(void)state;
	const char *const bodies[] = {
		"not json", "", "{\"result\": true", "{\"decision\": true", "<html>502</html>",
		"{\"result\": true} trailing", NULL,
	};
	for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
		if (answer(200, bodies[i]) != JOB_AUTHZ_UNAVAILABLE)
			fail_msg("opa: body %s decided", bodies[i] ? bodies[i] : "(none)");
		if (answer_authzen(200, bodies[i]) != JOB_AUTHZ_UNAVAILABLE)
			fail_msg("authzen: body %s decided", bodies[i] ? bodies[i] : "(none)");
	}
}

/* AuthZEN 1.0: {"decision": true} allows, with or without a context. */
static void
test_authzen_allow(void **state)
{
	(void)state;
	assert_int_equal(answer_authzen(200, "{\"decision\": true}"), JOB_AUTHZ_ALLOW);
	assert_int_equal(answer_authzen(200, "{\"decision\":true,\"context\":{\"outputs\":[]}}"),
	    JOB_AUTHZ_ALLOW);
	assert_int_equal(answer_authzen(201, "{\"context\":{},\"decision\":true}"), JOB_AUTHZ_ALLOW);
}

/* Anything else that is JSON denies: false, no decision, a truthy value
 * that is not true, the OPA shape. */
static void
test_authzen_deny(void **state)
{
	(void)state;
	const char *const bodies[] = {
		"{\"decision\": false}", "{}", "{\"decision\": \"true\"}", "{\"decision\": 1}",
		"{\"decision\": [true]}", "{\"decision\": {\"allow\": true}}", "{\"result\": true}",
		"{\"result\": {\"allow\": true}}", "{\"Decision\": true}", "true", "[true]", "null",
		"{\"context\": {\"decision\": true}}",
	};
	for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++)
		if (answer_authzen(200, bodies[i]) != JOB_AUTHZ_DENY)
			fail_msg("body %s did not deny", bodies[i]);
	/* only a 2xx decides, whatever the body says */
	assert_int_equal(answer_authzen(0, NULL), JOB_AUTHZ_UNAVAILABLE);
	assert_int_equal(answer_authzen(401, "{\"decision\": true}"), JOB_AUTHZ_UNAVAILABLE);
	assert_int_equal(answer_authzen(403, "{\"decision\": false}"), JOB_AUTHZ_UNAVAILABLE);
	assert_int_equal(answer_authzen(500, "{\"decision\": true}"), JOB_AUTHZ_UNAVAILABLE);
	assert_int_equal(answer_authzen(300, "{\"decision\": true}"), JOB_AUTHZ_UNAVAILABLE);
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

/* The record of the request-body tests; only what the questions take from
 * the payload as written is in its body. */
static void
fill_record(struct record *r)
{
	memset(r, 0, sizeof *r);
	strcpy(r->id, "gate-14");
	r->on_behalf_of = "operator:4417";
	r->action = "gate.open";
	r->resource = "canal/lateral-3/gate-14";
	r->basis = "rule:duty-operator";
	r->body = (char *)"{\"parameters\":{\"percent\":40},"
	    "\"decidedAt\":\"2026-11-30T16:00:00.5Z\"}";
	r->body_len = strlen(r->body);
}

static const char *
str_at(const json_t *doc, const char *obj, const char *key)
{
	return json_string_value(json_object_get(json_object_get(doc, obj), key));
}

/* The AuthZEN Access Evaluation request: subject, action, resource and
 * context, nothing else; the types as configured, user and resource by
 * default; decidedAt and parameters as written. */
static void
test_request_body_authzen(void **state)
{
	(void)state;
	struct record r;
	struct authz_shape shape = {.api = CFG_AUTHZ_AUTHZEN};

	fill_record(&r);
	for (int typed = 0; typed <= 1; typed++) {
		if (typed) {
			shape.subject_type = "operator";
			shape.resource_type = "canal_gate";
		}
		char *body = authz_request_body(&r, &shape);
		assert_non_null(body);
		json_t *doc = json_loads(body, 0, NULL);
		assert_non_null(doc);
		assert_int_equal(json_object_size(doc), 4);
		assert_int_equal(json_object_size(json_object_get(doc, "subject")), 2);
		assert_string_equal(str_at(doc, "subject", "type"), typed ? "operator" : "user");
		assert_string_equal(str_at(doc, "subject", "id"), "operator:4417");
		assert_int_equal(json_object_size(json_object_get(doc, "action")), 1);
		assert_string_equal(str_at(doc, "action", "name"), "gate.open");
		assert_int_equal(json_object_size(json_object_get(doc, "resource")), 2);
		assert_string_equal(str_at(doc, "resource", "type"),
		    typed ? "canal_gate" : "resource");
		assert_string_equal(str_at(doc, "resource", "id"), "canal/lateral-3/gate-14");
		json_t *ctx = json_object_get(doc, "context");
		assert_int_equal(json_object_size(ctx), 4);
		assert_string_equal(str_at(doc, "context", "recordId"), "gate-14");
		assert_string_equal(str_at(doc, "context", "basis"), "rule:duty-operator");
		assert_string_equal(str_at(doc, "context", "decidedAt"), "2026-11-30T16:00:00.5Z");
		assert_int_equal(json_integer_value(json_object_get(json_object_get(ctx,
		    "parameters"), "percent")), 40);
		assert_null(strchr(body, '\n'));	/* compact */
		json_decref(doc);
		free(body);
	}
}

/* The OPA input document: the record's fields, decidedAt as written. */
static void
test_request_body(void **state)
{
	(void)state;
	struct record r;
	const struct authz_shape opa = {.api = CFG_AUTHZ_OPA, .subject_type = "x",
	    .resource_type = "y"};

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
	char *body = authz_request_body(&r, &opa);
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
		cmocka_unit_test(test_unreadable_unavailable),
		cmocka_unit_test(test_authzen_allow),
		cmocka_unit_test(test_authzen_deny),
		cmocka_unit_test(test_request_body),
		cmocka_unit_test(test_request_body_authzen),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
