/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_authzen: [authz] api = authzen (warrantd(7) §7) with the real warrantd,
 * fake_target and fake_pdp speaking the OpenID AuthZEN 1.0 Access Evaluation
 * API. One redis, one target, one PDP and one daemon serve the group; each
 * test resets both fakes and uses its own record ids.
 *
 * What is checked: the question is the AuthZEN request with the configured
 * subject and resource types and the record's fields, nothing else; a 2xx
 * {"decision": true} runs the job, {"decision": false} ends it `denied`
 * without a call; a 2xx whose body is not JSON decides nothing (the job
 * waits, `retrying`, and runs once the PDP answers).
 * tests/interop/cerbos.sh asks the same of a real Cerbos (make interop).
 */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define PDP_PATH	"/access/v1/evaluation"
#define SUBJECT		"operator:4417"		/* h_record_json's onBehalfOf */
#define BASIS		"role:canal-operator"	/* and its basis */


static int
group_setup(void **state)
{
	(void)state;
	return h_pdp_world_start(&h_pdp, PDP_PATH, "timeout_ms = 2000\napi = authzen\n"
	    "subject_type = operator\nresource_type = canal_gate\n");
}

/* A record valid for the next minute, queued. */
static json_t *
decide(const char *id, const char *resource)
{
	long long now = h_now_ms();
	char *s = h_record_json(id, "gate.open", resource, now - 1000, now + 60000, 0, NULL);

	assert_non_null(s);
	assert_int_equal(h_decide(h_pdp.s.c, H_PREFIX, id, s, 1), 0);
	json_t *o = json_loads(s, 0, NULL);
	free(s);
	assert_non_null(o);
	return o;
}

static void
wait_state(const char *id, const char *state, const char *outcome)
{
	char key[256];

	snprintf(key, sizeof key, H_PREFIX ":decision:%s", id);
	h_wait_hash_field(h_pdp.s.c, key, "state", state, H_WAIT_MS);
	if (outcome != NULL)
		h_assert_hash_field(h_pdp.s.c, key, "outcome", outcome);
}

/* §7: exactly the AuthZEN request, with the configured types. */
static void
test_allowed_exact_request(void **state)
{
	const char *id = "azn-allow", *resource = "canal/lateral-3/gate-14";
	json_t *content = decide(id, resource);

	(void)state;
	wait_state(id, "done", "ok");
	json_t *q = h_pdp_queries(&h_pdp.pdp, id);
	assert_int_equal(json_array_size(q), 1);
	assert_int_equal(h_count_calls(&h_pdp.s.target, id), 1);
	const json_t *query = json_array_get(q, 0);
	json_t *want = json_pack("{s:{s:s,s:s}, s:{s:s}, s:{s:s,s:s}, s:{s:s,s:s,s:O,s:O}}",
	    "subject", "type", "operator", "id", SUBJECT,
	    "action", "name", "gate.open",
	    "resource", "type", "canal_gate", "id", resource,
	    "context", "recordId", id, "basis", BASIS,
	    "decidedAt", json_object_get(content, "decidedAt"),
	    "parameters", json_object_get(content, "parameters"));
	assert_non_null(want);
	if (!json_equal(json_object_get(query, "authzen"), want)) {
		char *got = json_dumps(json_object_get(query, "authzen"), JSON_COMPACT);
		fail_msg("AuthZEN request %s", got ? got : "(not AuthZEN)");
	}
	assert_string_equal(json_string_value(json_object_get(query, "path")), PDP_PATH);
	assert_string_equal(json_string_value(json_object_get(query, "content_type")),
	    "application/json");
	json_decref(want);
	json_decref(q);
	json_decref(content);
}

/* {"decision": false}: denied, told, never called; another resource runs. */
static void
test_denied_never_called(void **state)
{
	const char *denied = "azn-deny", *other = "azn-deny-other";

	(void)state;
	h_post_ok(&h_pdp.pdp, "/_policy", "{\"deny_resources\": [\"canal/lateral-3/gate-9\"]}");
	json_decref(decide(denied, "canal/lateral-3/gate-9"));
	json_decref(decide(other, "canal/lateral-3/gate-8"));
	wait_state(denied, "denied", "authority-denied");
	wait_state(other, "done", "ok");
	assert_int_equal(h_count_calls(&h_pdp.s.target, denied), 0);
	assert_int_equal(h_count_calls(&h_pdp.s.target, other), 1);
	assert_int_equal(h_pdp_count(&h_pdp.pdp, denied), 1);
	assert_int_equal(h_stream_count(h_pdp.s.c, H_NOTIFY, "id", denied), 1);
	assert_int_equal(h_pending_count(h_pdp.s.c, H_JOBS, H_GROUP), 0);
}

struct hb_wait {
	const char *field;
	long long min;
};

static int
hb_at_least(void *arg)
{
	const struct hb_wait *w = arg;
	char *v = h_hget(h_pdp.s.c, H_PREFIX ":consumer:w1", w->field);
	int ok = v != NULL && atoll(v) >= w->min;

	free(v);
	return ok;
}

static void
wait_hb_min(const char *field, long long min)
{
	struct hb_wait w = { field, min };

	h_wait_for(hb_at_least, &w, H_WAIT_MS, field);
}

struct garbage_wait {
	const char *id;
};

static int
asked_thrice_retrying(void *arg)
{
	const struct garbage_wait *w = arg;
	char key[256];

	snprintf(key, sizeof key, H_PREFIX ":decision:%s", w->id);
	char *s = h_hget(h_pdp.s.c, key, "state");
	int ok = h_pdp_count(&h_pdp.pdp, w->id) >= 3 && s != NULL && strcmp(s, "retrying") == 0;
	free(s);
	return ok;
}

/* A 200 that is not JSON (a proxy's page) decides nothing: the job waits,
 * uncalled and not denied, and runs once the PDP answers. */
static void
test_unreadable_answer_waits(void **state)
{
	const char *id = "azn-garbage";
	struct garbage_wait w = { id };

	(void)state;
	h_post_ok(&h_pdp.pdp, "/_policy", "{\"mode\": \"garbage\"}");
	json_decref(decide(id, "canal/lateral-3/gate-7"));
	h_wait_for(asked_thrice_retrying, &w, H_WAIT_MS, "three unreadable answers");
	/* §13: each counted as a PDP failure (the heartbeat carries it) */
	wait_hb_min("pdpFailures", 3);
	assert_int_equal(h_count_calls(&h_pdp.s.target, id), 0);
	assert_int_equal(h_stream_count(h_pdp.s.c, H_NOTIFY, "id", id), 0);
	h_post_ok(&h_pdp.pdp, "/_policy", "{}");
	wait_state(id, "done", "ok");
	assert_int_equal(h_count_calls(&h_pdp.s.target, id), 1);
}

static void
test_daemon_stops_clean(void **state)
{
	(void)state;
	h_daemon_down(&h_pdp.d);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_allowed_exact_request, h_pdp_reset),
		cmocka_unit_test_setup(test_denied_never_called, h_pdp_reset),
		cmocka_unit_test_setup(test_unreadable_answer_waits, h_pdp_reset),
		cmocka_unit_test(test_daemon_stops_clean),
	};

	return cmocka_run_group_tests(tests, group_setup, h_pdp_group_teardown);
}
