/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_policy: the fake PDP and examples/policy/warrant.rego decide alike.
 * The table examples/policy/cases.json is what warrant_test.rego runs under
 * `opa test` (OPA is not in Debian, so not here); this test puts every case
 * to fake_pdp with the roster of examples/policy/data.json, through the same
 * OPA Data API path warrantd uses, in both answer shapes. Then warrantd
 * itself runs one allowed and one denied job against that fake.
 * Run from the source tree (or set $WARRANTD_POLICY_DIR).
 */
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "harness.h"

#define WAIT_MS		60000
#define PDP_PATH	"/v1/data/warrant/allow"

static struct h_fake pdp;

static int
group_setup(void **state)
{
	(void)state;
	return h_fake_start(&pdp, "fake_pdp", NULL);
}

static int
group_teardown(void **state)
{
	(void)state;
	h_fake_stop(&pdp);
	return 0;
}

static json_t *
policy_file(const char *name)
{
	const char *dir = getenv("WARRANTD_POLICY_DIR");
	char path[512];
	json_error_t e;

	snprintf(path, sizeof path, "%s/%s", dir ? dir : "examples/policy", name);
	json_t *j = json_load_file(path, 0, &e);
	if (!j)
		fail_msg("%s:%d: %s", path, e.line, e.text);
	return j;
}

/* The fake's policy: the roster of data.json, answers in `mode`. */
static void
set_roster(const char *mode)
{
	json_t *data = policy_file("data.json");
	json_t *duty = json_object_get(json_object_get(data, "canal"), "duty_operators");
	assert_true(json_is_object(duty));
	json_t *pol = json_pack("{s:O, s:s}", "canal_duty", duty, "mode", mode);
	char *body = json_dumps(pol, JSON_COMPACT);
	assert_int_equal(h_fake_post(&pdp, "/_policy", body), 200);
	free(body);
	json_decref(pol);
	json_decref(data);
}

/* 1 allow, 0 deny, as warrantd reads the answer (warrantd(7) §7). */
static int
ask(const json_t *input)
{
	char url[256];
	long status = 0;
	json_t *q = json_pack("{s:O}", "input", input);
	char *body = json_dumps(q, JSON_COMPACT);

	snprintf(url, sizeof url, "%s" PDP_PATH, pdp.url);
	char *resp = h_http("POST", url, body, &status);
	assert_int_equal(status, 200);
	json_t *r = json_loads(resp, 0, NULL);
	assert_non_null(r);
	json_t *res = json_object_get(r, "result");
	int allow = json_is_true(res) || json_is_true(json_object_get(res, "allow"));
	json_decref(r);
	free(resp);
	free(body);
	json_decref(q);
	return allow;
}

static void
run_cases(const char *mode)
{
	json_t *cases = policy_file("cases.json"), *c;
	json_t *list = json_object_get(cases, "cases");
	size_t i, wrong = 0;

	assert_true(json_array_size(list) >= 10);
	set_roster(mode);
	json_array_foreach(list, i, c) {
		int want = json_is_true(json_object_get(c, "allow"));
		int got = ask(json_object_get(c, "input"));
		if (got != want) {
			fprintf(stderr, "itest_policy: case '%s': fake PDP says %s, the policy %s\n",
			    json_string_value(json_object_get(c, "name")), got ? "allow" : "deny",
			    want ? "allow" : "deny");
			wrong++;
		}
	}
	printf("itest_policy: %zu cases (%s answers), %zu disagree\n", json_array_size(list),
	    mode, wrong);
	assert_int_equal(wrong, 0);
	json_decref(cases);
}

static void
test_cases_bool(void **state)
{
	(void)state;
	run_cases("bool");
}

static void
test_cases_object(void **state)
{
	(void)state;
	run_cases("object");
}

struct state_wait {
	redisContext *c;
	const char *key, *want;
};

static int
state_is(void *arg)
{
	const struct state_wait *w = arg;
	char *v = h_hget(w->c, w->key, "state");
	int ok = v && strcmp(v, w->want) == 0;
	free(v);
	return ok;
}

/* A record with parameters.percent, which h_record_json does not write. */
static char *
gate_record(const char *id, const char *subject, const char *resource, const char *percent)
{
	long long now = h_now_ms();
	char *base = h_record_json(id, "gate.open", resource, now - 1000, now + 60000, 0, NULL);
	json_t *j = json_loads(base, 0, NULL);
	json_object_set_new(j, "onBehalfOf", json_string(subject));
	json_object_set_new(j, "parameters", json_pack("{s:s}", "percent", percent));
	char *out = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	free(base);
	return out;
}

static void
test_daemon_follows_the_rule(void **state)
{
	struct h_stack st;
	struct h_daemon d = {0};
	char section[256];
	(void)state;

	assert_int_equal(h_stack_start(&st), 0);
	redisContext *c = st.c;
	set_roster("bool");
	snprintf(section, sizeof section, "[authz]\nurl = %s" PDP_PATH "\n", pdp.url);
	struct h_daemon_opts o = {.redis_sock = st.redis.sock, .target_url = st.target.url,
	    .prefix = "pol", .sections = section};
	char *ini = h_daemon_ini(&o);
	assert_int_equal(h_daemon_start(&d, ini), 0);
	free(ini);

	char *ok = gate_record("pol-ok", "operator:4417", "canal/lateral-3/gate-14", "40");
	char *no = gate_record("pol-no", "operator:4417", "canal/lateral-3/gate-14", "75");
	assert_int_equal(h_decide(c, "pol", "pol-ok", ok, 1), 0);
	assert_int_equal(h_decide(c, "pol", "pol-no", no, 1), 0);
	struct state_wait w1 = {c, "pol:decision:pol-ok", "done"};
	struct state_wait w2 = {c, "pol:decision:pol-no", "denied"};
	if (h_wait_until(state_is, &w1, WAIT_MS) != 0 || h_wait_until(state_is, &w2, WAIT_MS) != 0)
		fail_msg("the daemon did not follow the canal rule; log %s", d.log);
	assert_true(h_daemon_stop_clean(&d));
	free(ok);
	free(no);
	h_stack_stop(&st);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases_bool),
		cmocka_unit_test(test_cases_object),
		cmocka_unit_test(test_daemon_follows_the_rule),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
