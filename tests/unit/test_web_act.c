/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * warrantd-web's actions, their pure parts (issue 39): what a form asks
 * (wact_parse), the confirmation's sentence (wact_describe), where it goes
 * back to (wact_back), and the buttons: there with [redis.operator],
 * absent (not disabled) without.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conf/config.h"
#include "wact.h"
#include "walert.h"
#include "wjob.h"
#include "wchart.h"
#include "whtml.h"
#include "wpage.h"

#define NOW 1796000000000LL

static struct cfg *
test_cfg(void)
{
	static const char text[] = "[daemon]\nconsumer = w1\n[redis]\nsocket = /tmp/r.sock\n"
	    "[records]\nsignature = off\n[action gate.open]\nurl = http://127.0.0.1:1/{resource}\n"
	    "auth = none\nallow_http = yes\n";
	const struct cfg_env env = {"host", "/tmp"};
	struct cfg_errors errs = {0};
	struct cfg *cfg = cfg_parse("t.ini", text, sizeof text - 1, &env, &errs);

	for (size_t i = 0; i < errs.n; i++)
		fprintf(stderr, "%s\n", errs.msgs[i]);
	cfg_errors_clear(&errs);
	assert_non_null(cfg);
	return cfg;
}

static void
test_parse(void **state)
{
	(void)state;
	struct cfg *cfg = test_cfg();
	struct wact_req r;
	char err[256];

	assert_int_equal(wact_parse(cfg, "retry", "web-fail-1", &r, err, sizeof err), 0);
	assert_int_equal(r.op, WACT_RETRY);
	assert_int_equal(r.nids, 1);
	assert_string_equal(r.ids[0], "web-fail-1");
	assert_int_equal(wact_parse(cfg, "requeue", "a-1 b-2  c-3", &r, err, sizeof err), 0);
	assert_int_equal(r.nids, 3);
	assert_string_equal(r.ids[2], "c-3");
	/* a recordId only, but drop clears a malformed one too */
	assert_int_equal(wact_parse(cfg, "retry", "a/b", &r, err, sizeof err), -1);
	assert_non_null(strstr(err, "not a recordId"));
	assert_int_equal(wact_parse(cfg, "drop", "a/b", &r, err, sizeof err), 0);
	assert_int_equal(wact_parse(cfg, "cancel", "", &r, err, sizeof err), -1);
	assert_int_equal(wact_parse(cfg, "cancel", "a\nb", &r, err, sizeof err), -1);
	assert_int_equal(wact_parse(cfg, "explode", "a", &r, err, sizeof err), -1);
	assert_int_equal(wact_parse(cfg, NULL, "a", &r, err, sizeof err), -1);
	assert_int_equal(wact_parse(cfg, "retry", NULL, &r, err, sizeof err), -1);
	/* a reason of reason.h */
	assert_int_equal(wact_parse(cfg, "requeue-reason", "max-attempts", &r, err, sizeof err), 0);
	assert_int_equal(wact_parse(cfg, "drop-reason", "no-such-reason", &r, err, sizeof err), -1);
	/* pause: the whole queue or an action the file names */
	assert_int_equal(wact_parse(cfg, "pause", "*", &r, err, sizeof err), 0);
	assert_int_equal(wact_parse(cfg, "resume", "gate.open", &r, err, sizeof err), 0);
	assert_int_equal(r.op, WACT_RESUME);
	assert_int_equal(wact_parse(cfg, "pause", "gate.opne", &r, err, sizeof err), -1);
	assert_non_null(strstr(err, "no [action gate.opne]"));
	/* at most WACT_IDS_MAX records at once */
	char many[WACT_ARG_MAX] = "";
	for (int i = 0; i <= WACT_IDS_MAX; i++)
		snprintf(many + strlen(many), sizeof many - strlen(many), "r-%d ", i);
	assert_int_equal(wact_parse(cfg, "requeue", many, &r, err, sizeof err), -1);
	cfg_free(cfg);
}

static void
test_describe(void **state)
{
	(void)state;
	struct cfg *cfg = test_cfg();
	struct wact_req r;
	char err[256], s[512], back[256];

	assert_int_equal(wact_parse(cfg, "requeue-reason", "max-attempts", &r, err, sizeof err), 0);
	wact_describe(&r, 12, s, sizeof s);
	assert_string_equal(s, "requeue 12 dead letters of reason max-attempts");
	wact_back(&r, back, sizeof back);
	assert_string_equal(back, "/dead");
	wact_describe(&r, 1, s, sizeof s);
	assert_string_equal(s, "requeue 1 dead letter of reason max-attempts");
	assert_int_equal(wact_parse(cfg, "drop-reason", "max-attempts", &r, err, sizeof err), 0);
	wact_describe(&r, 3, s, sizeof s);
	assert_string_equal(s, "drop 3 dead letters of reason max-attempts for good");
	assert_int_equal(wact_parse(cfg, "requeue", "a-1 b-2", &r, err, sizeof err), 0);
	wact_describe(&r, 0, s, sizeof s);
	assert_string_equal(s, "requeue the dead letters of 2 records (a-1, b-2) with a fresh budget");
	wact_back(&r, back, sizeof back);
	assert_string_equal(back, "/jobs?state=dead");
	assert_int_equal(wact_parse(cfg, "retry", "web-fail-1", &r, err, sizeof err), 0);
	wact_describe(&r, 0, s, sizeof s);
	assert_true(strncmp(s, "retry web-fail-1: ", 18) == 0);
	wact_back(&r, back, sizeof back);
	assert_string_equal(back, "/job/web-fail-1");
	assert_int_equal(wact_parse(cfg, "pause", "*", &r, err, sizeof err), 0);
	wact_describe(&r, 0, s, sizeof s);
	assert_true(strncmp(s, "pause the whole queue: ", 23) == 0);
	wact_back(&r, back, sizeof back);
	assert_string_equal(back, "/");
	cfg_free(cfg);
}

static char *
render(int operator, const char *which)
{
	struct wpage_who who = {"op", "c5rf", operator};
	struct whtml *b = whtml_new();
	json_t *v;

	if (strcmp(which, "job") == 0) {
		v = json_loads("{\"id\": \"r-1\", \"state\": {\"state\": \"failed\"}, \"audit\": [],"
		    " \"deadLetters\": [{\"entryId\": \"1-0\"}]}", 0, NULL);
		wpage_job(b, &who, v, NOW);
	} else if (strcmp(which, "dead") == 0) {
		v = json_loads("{\"reasons\": {\"max-attempts\": 2}, \"total\": 2}", 0, NULL);
		wpage_dead(b, &who, v);
	} else if (strcmp(which, "jobs") == 0) {
		struct wroute_jobq q = {.state = "dead"};
		v = json_loads("{\"jobs\": [{\"id\": \"r-1\", \"state\": \"dead\"}], \"more\": false}",
		    0, NULL);
		wpage_jobs(b, &who, &q, v);
	} else {
		v = json_loads("{\"streams\": [], \"paused\": {\"gate.open\": \"by=x at=y\"},"
		    " \"actions\": [\"gate.open\"]}", 0, NULL);
		wpage_overview(b, &who, v);
	}
	json_decref(v);
	char *s = whtml_take(b, NULL);
	whtml_free(b);
	return s;
}

/* With [redis.operator] the buttons are there; without, no trace of them. */
static void
test_buttons(void **state)
{
	(void)state;
	static const char *const pages[] = {"job", "dead", "jobs", "overview"};
	static const char *const want[] = {"data-op=\"retry\"", "data-op=\"requeue-reason\"",
	    "name=\"op\" value=\"requeue\"", "data-op=\"resume\""};

	for (size_t i = 0; i < 4; i++) {
		char *on = render(1, pages[i]), *off = render(0, pages[i]);
		assert_non_null(strstr(on, want[i]));
		assert_non_null(strstr(on, "action=\"/confirm\""));
		assert_null(strstr(off, "/confirm"));
		assert_null(strstr(off, "data-op="));
		free(on);
		free(off);
	}
	/* a failed job: retry, no cancel (it is terminal), its dead letters */
	char *job = render(1, "job");
	assert_null(strstr(job, "data-op=\"cancel\""));
	assert_non_null(strstr(job, "data-op=\"drop\""));
	free(job);
	char *ov = render(1, "overview");
	assert_non_null(strstr(ov, "<option value=\"gate.open\">gate.open</option>"));
	free(ov);
}

static void
test_confirm_page(void **state)
{
	(void)state;
	struct wpage_who who = {"op", "c5rf", 1};
	struct whtml *b = whtml_new();
	json_t *lines = json_loads("[[false, \"requeued r-1\"], [true, \"dead requeue: refused: "
	    "<r-2>\"]]", 0, NULL);

	wpage_confirm(b, &who, "requeue-reason", "max-attempts",
	    "requeue 12 dead letters of reason max-attempts", "/dead");
	const char *s = whtml_str(b, NULL);
	assert_non_null(strstr(s, "requeue 12 dead letters of reason max-attempts?"));
	assert_non_null(strstr(s, "method=\"post\" action=\"/act\""));
	assert_non_null(strstr(s, "name=\"csrf\" value=\"c5rf\""));
	assert_non_null(strstr(s, "name=\"op\" value=\"requeue-reason\""));
	assert_non_null(strstr(s, "name=\"arg\" value=\"max-attempts\""));
	whtml_free(b);
	b = whtml_new();
	wpage_acted(b, &who, "requeue ...", 1, lines, "/dead");
	s = whtml_str(b, NULL);
	assert_non_null(strstr(s, "<h1>Refused</h1>"));
	assert_non_null(strstr(s, "<li>requeued r-1</li>"));
	assert_non_null(strstr(s, "<li class=\"err\">dead requeue: refused: &lt;r-2&gt;</li>"));
	whtml_free(b);
	json_decref(lines);
}

/* Two workers' HINCRBYs land in one bucket; the charts add the buckets of
 * their window and no more: an hour is the last 60 of a day. */
static void
test_charts(void **state)
{
	(void)state;
	json_t *st = json_pack("{s:i, s:[]}", "first", 100, "buckets");
	json_t *all = json_object_get(st, "buckets");
	struct whtml *b = whtml_new();

	for (int m = 0; m < 1440; m++)
		json_array_append_new(all, json_object());
	/* 2 h ago: out of the hour, in the day */
	json_object_set_new(json_array_get(all, 1440 - 120), "o.done", json_integer(5));
	/* this minute: both workers' counts, summed by Redis */
	json_object_set_new(json_array_get(all, 1439), "o.done", json_integer(3 + 4));
	json_object_set_new(json_array_get(all, 1439), "o.dead", json_integer(1));
	json_object_set_new(json_array_get(all, 1439), "d.max-attempts", json_integer(1));
	json_object_set_new(json_array_get(all, 1438), "c.gate.open", json_integer(4));
	json_object_set_new(json_array_get(all, 1438), "ms.gate.open", json_integer(100));
	assert_int_equal(wchart_sum(st, 60, "o.done"), 7);
	assert_int_equal(wchart_sum(st, 1440, "o.done"), 12);
	wchart_outcomes(b, st, 60, 1);
	const char *s = whtml_str(b, NULL);
	assert_non_null(strstr(s, "data-total=\"o.done\">7<"));
	assert_non_null(strstr(s, "<title>7 done</title>"));
	assert_non_null(strstr(s, "<title>1 dead</title>"));
	assert_null(strstr(s, "style="));
	whtml_free(b);
	b = whtml_new();
	wchart_latency(b, st, 60, 1);
	assert_non_null(strstr(whtml_str(b, NULL), "4 calls, mean 25 ms"));
	whtml_free(b);
	b = whtml_new();
	wchart_dead(b, st, 1440);
	assert_non_null(strstr(whtml_str(b, NULL), "data-total=\"d.max-attempts\">1<"));
	whtml_free(b);
	json_decref(st);
}

/* An alert's texts, joined by '|'. */
static char *
alert_texts(const char *ov_json, const json_t *stats)
{
	json_t *ov = json_loads(ov_json, 0, NULL), *list, *a;
	static char out[2048];
	size_t i;

	assert_non_null(ov);
	list = walert_list(ov, stats);
	out[0] = '\0';
	json_array_foreach(list, i, a)
		snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s:%s", i ? "|" : "",
		    json_string_value(json_object_get(a, "level")),
		    json_string_value(json_object_get(a, "text")));
	json_decref(list);
	json_decref(ov);
	return out;
}

static void
test_alerts(void **state)
{
	(void)state;
	json_t *st = json_pack("{s:i, s:[{}, {s:i}, {s:i, s:i}]}", "first", 1, "buckets",
	    "d.max-attempts", 2, "d.max-attempts", 1, "d.auth-failed", 1);

	/* all well: nothing to say */
	assert_string_equal(alert_texts("{\"streams\": [{\"stream\": \"w:jobs\", \"alive\": 1,"
	    " \"consumers\": {\"w1\": {\"alive\": true, \"tokenState\": \"valid\","
	    " \"tokenState.gate\": \"valid\"}}}]}", NULL), "");
	assert_string_equal(alert_texts("{\"streams\": [{\"stream\": \"w:jobs\", \"alive\": 0,"
	    " \"consumers\": {}}]}", NULL), "bad:no live consumer on w:jobs: nothing is being worked");
	/* a scope's token, the worker's, Redis'; a dead consumer's says nothing */
	assert_string_equal(alert_texts("{\"streams\": [{\"stream\": \"s\", \"alive\": 1,"
	    " \"consumers\": {\"w1\": {\"alive\": true, \"tokenState\": \"error\","
	    " \"tokenState.gate.write\": \"error\", \"redisTokenState\": \"valid\"},"
	    " \"w0\": {\"alive\": false, \"tokenState.x\": \"error\"}}}]}", NULL),
	    "bad:token error for the worker's token on w1|bad:token error for scope gate.write on w1");
	/* the dead letters of the last minutes, by reason */
	assert_string_equal(alert_texts("{\"streams\": []}", st),
	    "warn:dead letters rising: 4 in the last 15 minutes (max-attempts 3, auth-failed 1)");
	json_decref(st);
}

/* The job page's attempts from the audit trail; held states; the header. */
static void
test_job_extras(void **state)
{
	(void)state;
	json_t *audit = json_loads("[{\"from\": \"\", \"to\": \"queued\", \"at\": "
	    "\"2026-12-07T14:00:00.000Z\"}, {\"from\": \"queued\", \"to\": \"running\", \"attempt\": "
	    "\"1\", \"at\": \"2026-12-07T14:00:01.000Z\"}, {\"from\": \"running\", \"to\": "
	    "\"retrying\", \"at\": \"2026-12-07T14:00:01.250Z\", \"detail\": \"503 from target\"},"
	    " {\"from\": \"retrying\", \"to\": \"running\", \"attempt\": \"2\", \"at\": "
	    "\"2026-12-07T14:00:02.000Z\"}]", 0, NULL);
	json_t *a = wjob_attempts(audit), *paused = json_pack("{s:s}", "gate.open", "by=x");
	json_t *job = json_object();

	assert_int_equal(json_array_size(a), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "outcome")),
	    "retrying");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(a, 0), "durationMs")),
	    250);
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 0), "detail")),
	    "503 from target");
	/* the second still runs: no outcome, no duration */
	assert_string_equal(json_string_value(json_object_get(json_array_get(a, 1), "outcome")), "");
	assert_null(json_object_get(json_array_get(a, 1), "durationMs"));
	/* held: by a pause of its action or of the queue, or for a token */
	assert_string_equal(wjob_held("queued", "gate.open", paused), "paused");
	assert_null(wjob_held("queued", "gate.close", paused));
	assert_null(wjob_held("done", "gate.open", paused));
	assert_string_equal(wjob_held("auth_wait", "gate.close", NULL), "waiting for a token");
	json_object_set_new(paused, "*", json_string("by=y"));
	assert_string_equal(wjob_held("running", "gate.close", paused), "paused");
	/* {"alg":"ES256","kid":"k1"} . payload . sig */
	wjob_header(job, "eyJhbGciOiJFUzI1NiIsImtpZCI6ImsxIn0.e30.c2ln");
	assert_string_equal(json_string_value(json_object_get(job, "kid")), "k1");
	assert_string_equal(json_string_value(json_object_get(job, "alg")), "ES256");
	wjob_header(job, "not a jws");
	json_decref(job);
	json_decref(paused);
	json_decref(a);
	json_decref(audit);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_describe),
		cmocka_unit_test(test_buttons),
		cmocka_unit_test(test_confirm_page),
		cmocka_unit_test(test_charts),
		cmocka_unit_test(test_alerts),
		cmocka_unit_test(test_job_extras),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
