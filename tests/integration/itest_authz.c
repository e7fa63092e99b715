/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_authz: R5 and warrantd(7) §7 with the real warrantd, fake_target and
 * fake_pdp. One redis, one target, one PDP and one daemon serve the whole
 * group; each test resets both fakes, uses its own record ids and resources,
 * and waits until its jobs are terminal, so no test sees another's traffic.
 *
 * What is checked: the PDP is asked before the call with exactly the record's
 * fields; a deny (a false result, {"allow": false}, or no result at all) ends
 * the job as `denied` with a notification and an XACK and never calls the
 * target; an unavailable PDP means `retrying` (not counted as a call) until
 * it answers or the deadline passes; the PDP is asked again before each retry.
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
#include <sys/wait.h>

#include "harness.h"
#include "base/wtime.h"

#define PDP_PATH	"/v1/data/warrant/allow"
#define SUBJECT		"operator:4417"		/* h_record_json's onBehalfOf */
#define BASIS		"role:canal-operator"	/* and its basis */


/* ---- the fakes ---- */

static void
pdp_policy(const char *json)
{
	h_post_ok(&h_pdp.pdp, "/_policy", json);
}

/* The PDP queries whose input.recordId is id, in arrival order; caller
 * json_decref's. */
static json_t *
pdp_queries(const char *id)
{
	return h_pdp_queries(&h_pdp.pdp, id);
}

/* Calls of the action that carried Idempotency-Key: key, in arrival order. */
static json_t *
target_calls(const char *key)
{
	return h_calls_with_key(&h_pdp.s.target, key);
}

static size_t
target_count(const char *key)
{
	return (size_t)h_count_calls(&h_pdp.s.target, key);
}

static long long
arrival(const json_t *a, size_t i)
{
	return (long long)json_integer_value(json_object_get(json_array_get(a, i), "arrival_ms"));
}

/* ---- records and their state ---- */

/* A record valid for the next minute, with onBehalfOf replaced when subject
 * is not NULL; caller frees. */
static char *
record(const char *id, const char *resource, const char *subject, const char *notify)
{
	long long now = h_now_ms();
	char *s = h_record_json(id, "gate.open", resource, now - 1000, now + 60000, 0, notify);

	assert_non_null(s);
	if (subject == NULL)
		return s;
	json_t *o = json_loads(s, 0, NULL);
	free(s);
	assert_non_null(o);
	json_object_set_new(o, "onBehalfOf", json_string(subject));
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	assert_non_null(s);
	return s;
}

static void
decide(const char *id, const char *json)
{
	assert_int_equal(h_decide(h_pdp.s.c, H_PREFIX, id, json, 1), 0);
}

static char *
field(const char *id, const char *name)
{
	char key[256];

	snprintf(key, sizeof key, H_PREFIX ":decision:%s", id);
	return h_hget(h_pdp.s.c, key, name);
}

struct state_wait {
	const char *id;
	const char *want;
};

static int
has_state(void *arg)
{
	const struct state_wait *w = arg;
	char *s = field(w->id, "state");
	int ok = s != NULL && strcmp(s, w->want) == 0;

	free(s);
	return ok;
}

static void
assert_field(const char *id, const char *name, const char *want)
{
	char *v = field(id, name);

	if (v == NULL || strcmp(v, want) != 0)
		fail_msg("%s %s: \"%s\", want \"%s\"", id, name, v ? v : "(nil)", want);
	free(v);
}

/* Waits for a terminal state and checks the outcome that came with it. */
static void
wait_final(const char *id, const char *state, const char *outcome)
{
	struct state_wait w = { id, state };

	if (h_wait_until(has_state, &w, H_WAIT_MS) != 0) {
		char *s = field(id, "state");
		fail_msg("%s: state \"%s\" after %d ms, want \"%s\" (log %s)", id,
		    s ? s : "(nil)", H_WAIT_MS, state, h_pdp.d.log);
	}
	assert_field(id, "outcome", outcome);
}

/* The final write and the XACK are one script (R13): once a job is terminal,
 * its entry is no longer pending. Every test leaves the PEL empty. */
static void
assert_pel_empty(void)
{
	assert_int_equal(h_pending_count(h_pdp.s.c, H_JOBS, H_GROUP), 0);
}

static void
assert_notified(const char *id, const char *owner, const char *kind, const char *reason,
		const char *subject, const char *resource)
{
	static const char *const names[] = { "owner", "kind", "reason", "onBehalfOf", "action",
	    "resource" };
	const char *want[] = { owner, kind, reason, subject, "gate.open", resource };

	assert_int_equal(h_stream_count(h_pdp.s.c, H_NOTIFY, "id", id), 1);
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char *v = h_stream_field(h_pdp.s.c, H_NOTIFY, "id", id, names[i]);
		if (v == NULL || strcmp(v, want[i]) != 0)
			fail_msg("%s: notify %s \"%s\", want \"%s\"", id, names[i],
			    v ? v : "(nil)", want[i]);
		free(v);
	}
}

/* ---- group ---- */

static int
group_setup(void **state)
{
	(void)state;
	return h_pdp_world_start(&h_pdp, PDP_PATH, "timeout_ms = 2000\n");
}

/* ---- tests ---- */

/* §7: the input is the record's fields, under the names warrantd(7) gives, and
 * nothing else; it is POSTed as JSON before the call. */
static void
test_allowed_job_pdp_sees_exact_input(void **state)
{
	const char *id = "az-allow-1", *resource = "lock/7/east";
	char *json = record(id, resource, NULL, NULL);
	json_t *content = json_loads(json, 0, NULL);

	(void)state;
	decide(id, json);
	wait_final(id, "done", "ok");
	assert_pel_empty();

	json_t *q = pdp_queries(id), *calls = target_calls(id);
	assert_int_equal(json_array_size(q), 1);
	assert_int_equal(json_array_size(calls), 1);
	const json_t *query = json_array_get(q, 0);
	const json_t *input = json_object_get(query, "input");
	json_t *want = json_pack("{s:s, s:s, s:s, s:O, s:s, s:s, s:O}",
	    "subject", SUBJECT, "action", "gate.open", "resource", resource,
	    "parameters", json_object_get(content, "parameters"), "basis", BASIS,
	    "recordId", id, "decidedAt", json_object_get(content, "decidedAt"));
	assert_non_null(want);
	if (!json_equal(input, want)) {
		char *got = json_dumps(input, JSON_COMPACT);
		fail_msg("PDP input %s", got ? got : "(null)");
	}
	assert_string_equal(json_string_value(json_object_get(query, "path")), PDP_PATH);
	assert_string_equal(json_string_value(json_object_get(query, "content_type")),
	    "application/json");
	assert_true(arrival(q, 0) <= arrival(calls, 0));
	json_decref(want);
	json_decref(calls);
	json_decref(q);
	json_decref(content);
	free(json);
}

/* A decidedAt without a fraction of a second reaches the PDP as the same
 * instant (the worker may write it with milliseconds). */
static void
test_decided_at_same_instant(void **state)
{
	const char *id = "az-allow-2";
	long long now = h_now_ms();
	char *json = h_record_json(id, "gate.open", "lock/8", now, now + 60000, 0, NULL);
	char decided[WTIME_RFC3339_LEN];
	int64_t sent, got;

	(void)state;
	assert_non_null(json);
	json_t *o = json_loads(json, 0, NULL);
	free(json);
	assert_non_null(o);
	/* "YYYY-MM-DDTHH:MM:SSZ", a second ago */
	wtime_format_rfc3339((now / 1000 - 1) * 1000, decided, sizeof decided);
	strcpy(decided + 19, "Z");
	json_object_set_new(o, "decidedAt", json_string(decided));
	json = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	decide(id, json);
	wait_final(id, "done", "ok");

	json_t *q = pdp_queries(id);
	assert_int_equal(json_array_size(q), 1);
	const json_t *d = json_object_get(json_object_get(json_array_get(q, 0), "input"),
	    "decidedAt");
	assert_true(json_is_string(d));
	assert_int_equal(wtime_parse_rfc3339(decided, &sent), 0);
	assert_int_equal(wtime_parse_rfc3339(json_string_value(d), &got), 0);
	assert_true(sent == got);
	json_decref(q);
	free(json);
}

static int
counter_at_least_one(void *arg)
{
	char *v = h_hget(h_pdp.s.c, H_PREFIX ":consumer:w1", arg);
	int ok = v != NULL && atoll(v) >= 1;

	free(v);
	return ok;
}

/* {"result": false} for one resource: that job is denied, told, acked and
 * never called; a job on another resource still runs (the target is there). */
static void
test_denied_resource_never_called(void **state)
{
	const char *denied = "az-deny-1", *other = "az-deny-1-other";
	char *jd = record(denied, "gate/forbidden", NULL, "gate-owner");
	char *jo = record(other, "gate/allowed", NULL, NULL);

	(void)state;
	pdp_policy("{\"deny_resources\": [\"gate/forbidden\"], \"mode\": \"bool\"}");
	decide(denied, jd);
	decide(other, jo);
	wait_final(denied, "denied", "authority-denied");
	wait_final(other, "done", "ok");
	assert_pel_empty();

	assert_int_equal(target_count(denied), 0);
	assert_int_equal(target_count(other), 1);
	json_t *q = pdp_queries(denied);
	assert_int_equal(json_array_size(q), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(q, 0), "decision")),
	    "deny");
	json_decref(q);
	assert_notified(denied, "gate-owner", "denied", "authority-denied", SUBJECT,
	    "gate/forbidden");
	assert_int_equal(h_stream_count(h_pdp.s.c, H_NOTIFY, "id", other), 0);
	assert_int_equal(h_wait_until(counter_at_least_one, (void *)"denied", H_WAIT_MS), 0);
	free(jd);
	free(jo);
}

/* {"result": {"allow": false}} denies, {"result": {"allow": true}} allows;
 * the subject the PDP judges is the record's onBehalfOf. */
static void
test_object_result_by_subject(void **state)
{
	const char *denied = "az-obj-deny", *allowed = "az-obj-allow";
	char *jd = record(denied, "gate/9", "operator:9999", NULL);
	char *ja = record(allowed, "gate/9", NULL, NULL);

	(void)state;
	pdp_policy("{\"deny_subjects\": [\"operator:9999\"], \"mode\": \"object\"}");
	decide(denied, jd);
	decide(allowed, ja);
	wait_final(denied, "denied", "authority-denied");
	wait_final(allowed, "done", "ok");
	assert_pel_empty();

	assert_int_equal(target_count(denied), 0);
	assert_int_equal(target_count(allowed), 1);
	assert_int_equal(h_pdp_count(&h_pdp.pdp, denied), 1);
	assert_int_equal(h_pdp_count(&h_pdp.pdp, allowed), 1);
	/* no notifyOnDenial: [notify] default_owner */
	assert_notified(denied, "ops", "denied", "authority-denied", "operator:9999", "gate/9");
	free(jd);
	free(ja);
}

/* A 200 without a `result` is a deny, not an allow and not an outage. */
static void
test_missing_result_denies(void **state)
{
	const char *id = "az-missing";
	char *json = record(id, "gate/10", NULL, NULL);

	(void)state;
	pdp_policy("{\"mode\": \"missing\"}");
	decide(id, json);
	wait_final(id, "denied", "authority-denied");
	assert_pel_empty();
	assert_int_equal(target_count(id), 0);
	assert_int_equal(h_pdp_count(&h_pdp.pdp, id), 1);
	assert_notified(id, "ops", "denied", "authority-denied", SUBJECT, "gate/10");
	free(json);
}

struct unavailable_wait {
	const char *id;
	size_t queries;
};

/* At least w->queries PDP answers of 503 for the job, and the job waiting. */
static int
retrying_after(void *arg)
{
	const struct unavailable_wait *w = arg;
	struct state_wait sw = { w->id, "retrying" };

	return h_pdp_count(&h_pdp.pdp, w->id) >= (long long)w->queries && has_state(&sw);
}

/* PDP 503: the job waits (`retrying`), more times than max_attempts (5)
 * allows calls, without a call; once the PDP allows, it runs exactly once. */
static void
test_pdp_unavailable_then_allowed(void **state)
{
	const char *id = "az-503";
	char *json = record(id, "gate/11", NULL, NULL);
	struct unavailable_wait w = { id, 7 };

	(void)state;
	pdp_policy("{\"mode\": \"status\", \"status\": 503}");
	decide(id, json);
	assert_int_equal(h_wait_until(retrying_after, &w, H_WAIT_MS), 0);
	assert_int_equal(target_count(id), 0);
	assert_int_equal(h_stream_count(h_pdp.s.c, H_NOTIFY, "id", id), 0);

	pdp_policy("{}");
	wait_final(id, "done", "ok");
	assert_pel_empty();
	assert_int_equal(target_count(id), 1);

	json_t *q = pdp_queries(id), *calls = target_calls(id);
	size_t n = json_array_size(q);
	assert_true(n >= 8);
	for (size_t i = 0; i + 1 < n; i++)
		assert_int_equal(json_integer_value(json_object_get(json_array_get(q, i),
		    "status")), 503);
	assert_string_equal(json_string_value(json_object_get(json_array_get(q, n - 1),
	    "decision")), "allow");
	assert_true(arrival(q, n - 1) <= arrival(calls, 0));
	json_decref(calls);
	json_decref(q);
	free(json);
}

struct trail {
	const char *id;
	char text[1024];
	size_t used;
	long long n;
};

static int
trail_add(const redisReply *fields, void *arg)
{
	struct trail *t = arg;
	const char *id = h_entry_str(fields, "id"), *to = h_entry_str(fields, "to");

	if (id == NULL || strcmp(id, t->id) != 0)
		return 0;
	t->n++;
	if (t->used < sizeof t->text)
		t->used += (size_t)snprintf(t->text + t->used, sizeof t->text - t->used, " %s",
		    to ? to : "?");
	return 0;
}

/* The P:audit entries of id: how many, and their `to` states in order. */
static long long
audit_of(const char *id, struct trail *t)
{
	memset(t, 0, sizeof *t);
	t->id = id;
	h_stream_each(h_pdp.s.c, H_AUDIT, trail_add, t);
	return t->n;
}

/*
 * warrantd(7) §6: a wait that repeats (a PDP that stays down) writes one
 * P:audit entry when it begins and one when it ends, not one per try. The
 * job's entries must not grow between its 3rd and its 12th refused query,
 * and at the end it has at most two more than a job the PDP allowed at
 * once (the same path plus the wait's begin and end).
 */
static void
test_pdp_outage_audit_coalesced(void **state)
{
	const char *ok = "az-aud-ok", *id = "az-aud-out";
	char *json_ok = record(ok, "gate/13", NULL, NULL), *json = record(id, "gate/14", NULL, NULL);
	struct unavailable_wait w3 = { id, 3 }, w12 = { id, 12 };
	struct trail t_ok, t1, t2, t3;

	(void)state;
	decide(ok, json_ok);
	wait_final(ok, "done", "ok");
	long long n_ok = audit_of(ok, &t_ok);

	pdp_policy("{\"mode\": \"status\", \"status\": 503}");
	decide(id, json);
	assert_int_equal(h_wait_until(retrying_after, &w3, H_WAIT_MS), 0);
	long long a1 = audit_of(id, &t1);
	assert_int_equal(h_wait_until(retrying_after, &w12, H_WAIT_MS), 0);
	long long a2 = audit_of(id, &t2), queries = h_pdp_count(&h_pdp.pdp, id);
	pdp_policy("{}");
	wait_final(id, "done", "ok");
	long long a3 = audit_of(id, &t3);
	printf("    allowed at once:%s (%lld); outage: after 3 queries%s (%lld), after %lld%s "
	    "(%lld), done%s (%lld)\n", t_ok.text, n_ok, t1.text, a1, queries, t2.text, a2,
	    t3.text, a3);
	assert_true(n_ok >= 1);
	if (a2 != a1)
		fail_msg("P:audit grew from %lld to %lld entries for %s during one PDP outage",
		    a1, a2, id);
	assert_true(a3 <= n_ok + 2);
	assert_int_equal(target_count(id), 1);
	free(json_ok);
	free(json);
}

/* PDP unavailable until the deadline: `expired`, told, acked, never called,
 * and no PDP query after the deadline. */
static void
test_pdp_unavailable_past_deadline(void **state)
{
	const char *id = "az-expire";
	long long now = h_now_ms(), expires = now + 8000;
	char *json = h_record_json(id, "gate.open", "gate/12", now - 1000, expires, 0, "late-owner");

	(void)state;
	assert_non_null(json);
	pdp_policy("{\"mode\": \"status\", \"status\": 503}");
	decide(id, json);
	wait_final(id, "expired", "deadline-passed");
	assert_pel_empty();
	assert_int_equal(target_count(id), 0);
	assert_notified(id, "late-owner", "expired", "deadline-passed", SUBJECT, "gate/12");

	json_t *q = pdp_queries(id);
	size_t n = json_array_size(q);
	assert_true(n >= 1);
	/* slack: the deadline check precedes the query it allows by a few ms,
	 * more on a loaded machine */
	assert_true(arrival(q, n - 1) < expires + 1500);
	json_decref(q);
	free(json);
}

/* A target 503 then 200: two calls, and before each its own PDP query. */
static void
test_pdp_asked_before_every_retry(void **state)
{
	const char *id = "az-retry";
	char *json = record(id, "gate/13", NULL, NULL);

	(void)state;
	assert_int_equal(h_fake_script(&h_pdp.s.target, "{\"per_key\": {\"az-retry\": "
	    "[{\"status\": 503}, {\"status\": 200}]}}"), 0);
	decide(id, json);
	wait_final(id, "done", "ok");
	assert_pel_empty();

	json_t *q = pdp_queries(id), *calls = target_calls(id);
	assert_int_equal(json_array_size(q), 2);
	assert_int_equal(json_array_size(calls), 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(calls, 0), "status")),
	    503);
	assert_true(arrival(q, 0) <= arrival(calls, 0));
	assert_true(arrival(calls, 0) <= arrival(q, 1));
	assert_true(arrival(q, 1) <= arrival(calls, 1));
	json_decref(calls);
	json_decref(q);
	free(json);
}

/* Last: the daemon exits 0 on SIGTERM with a clean (sanitizer) log. */
static void
test_daemon_stops_clean(void **state)
{
	(void)state;
	int status = h_daemon_stop(&h_pdp.d);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_true(h_daemon_log_clean(&h_pdp.d));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_allowed_job_pdp_sees_exact_input, h_pdp_reset),
		cmocka_unit_test_setup(test_decided_at_same_instant, h_pdp_reset),
		cmocka_unit_test_setup(test_denied_resource_never_called, h_pdp_reset),
		cmocka_unit_test_setup(test_object_result_by_subject, h_pdp_reset),
		cmocka_unit_test_setup(test_missing_result_denies, h_pdp_reset),
		cmocka_unit_test_setup(test_pdp_unavailable_then_allowed, h_pdp_reset),
		cmocka_unit_test_setup(test_pdp_unavailable_past_deadline, h_pdp_reset),
		cmocka_unit_test_setup(test_pdp_outage_audit_coalesced, h_pdp_reset),
		cmocka_unit_test_setup(test_pdp_asked_before_every_retry, h_pdp_reset),
		cmocka_unit_test(test_daemon_stops_clean),
	};

	return cmocka_run_group_tests(tests, group_setup, h_pdp_group_teardown);
}
