/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for warrantctl's pure pieces (warrantd(7) §11): command-line times,
 * generated ids, the record built from decide's options, the policy taken
 * from the config and the human output. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "conf/config.h"
#include "ctl/ctl.h"
#include "core/record.h"
#include "base/wtime.h"

/* 2026-11-30T04:00:00.000Z */
#define NOW 1796011200000LL

static const char base_ini[] =
    "[daemon]\nconsumer = t1\n"
    "[records]\nsignature = off\nmax_window_s = 3600\nclock_skew_s = 60\n%s"
    "[action gate.open]\nurl = http://127.0.0.1:1/g/{resource}\nauth = none\n";

static struct cfg *
load_cfg(const char *records_extra)
{
	const struct cfg_env env = {.host = "test-host", .dir = "."};
	struct cfg_errors errs = {0};
	char text[1024];
	struct cfg *cfg;

	snprintf(text, sizeof text, base_ini, records_extra);
	cfg = cfg_parse("test.ini", text, strlen(text), &env, &errs);
	for (size_t i = 0; i < errs.n; i++)
		fprintf(stderr, "%s\n", errs.msgs[i]);
	cfg_errors_clear(&errs);
	assert_non_null(cfg);
	return cfg;
}

/* ---- times ---- */

static void
test_time_rfc3339(void **state)
{
	int64_t t = 0;

	(void)state;
	assert_int_equal(ctl_parse_time("2026-11-30T05:00:00Z", NOW, &t), 0);
	assert_int_equal(t, NOW + 3600 * 1000);
	assert_int_equal(ctl_parse_time("2026-11-30T05:00:00.250Z", NOW, &t), 0);
	assert_int_equal(t, NOW + 3600 * 1000 + 250);
	/* The record format is UTC only. */
	assert_int_equal(ctl_parse_time("2026-11-30T05:00:00+01:00", NOW, &t), -1);
	assert_int_equal(ctl_parse_time("2026-11-30", NOW, &t), -1);
}

static void
test_time_relative_units(void **state)
{
	int64_t t = 0;

	(void)state;
	assert_int_equal(ctl_parse_time("+90", NOW, &t), 0);
	assert_int_equal(t, NOW + 90 * 1000);
	assert_int_equal(ctl_parse_time("+90s", NOW, &t), 0);
	assert_int_equal(t, NOW + 90 * 1000);
	assert_int_equal(ctl_parse_time("+15m", NOW, &t), 0);
	assert_int_equal(t, NOW + 15 * 60 * 1000);
	assert_int_equal(ctl_parse_time("+2h", NOW, &t), 0);
	assert_int_equal(t, NOW + 2 * 3600 * 1000);
	assert_int_equal(ctl_parse_time("+7d", NOW, &t), 0);
	assert_int_equal(t, NOW + 7LL * 86400 * 1000);
	assert_int_equal(ctl_parse_time("+0s", NOW, &t), 0);
	assert_int_equal(t, NOW);
}

static void
test_time_relative_refused(void **state)
{
	static const char *const bad[] = {"+", "+s", "+5x", "+5ss", "+-5", "+ 5", "+5 ", "5m",
	    "-5m", "", "now", "+99999999999999999999", "+9223372036854775807d", "+1.5h"};
	int64_t t = 42;

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		if (ctl_parse_time(bad[i], NOW, &t) != -1)
			fail_msg("'%s' was accepted", bad[i]);
	}
	assert_int_equal(t, 42);	/* untouched on failure */
	assert_int_equal(ctl_parse_time(NULL, NOW, &t), -1);
}

/* ---- ids ---- */

static void
test_id_syntax(void **state)
{
	unsigned char rnd[CTL_ID_LEN];
	char id[CTL_ID_LEN + 1];

	(void)state;
	for (int base = 0; base < 256; base += CTL_ID_LEN) {
		for (int i = 0; i < CTL_ID_LEN; i++)
			rnd[i] = (unsigned char)(base + i);
		ctl_make_id(rnd, id);
		assert_int_equal(strlen(id), CTL_ID_LEN);
		assert_true(record_id_valid(id));
		for (int i = 0; i < CTL_ID_LEN; i++)
			assert_non_null(strchr("abcdefghijklmnopqrstuvwxyz234567", id[i]));
	}
}

static void
test_id_uses_five_bits_per_byte(void **state)
{
	unsigned char rnd[CTL_ID_LEN];
	char id[CTL_ID_LEN + 1];

	(void)state;
	for (int i = 0; i < CTL_ID_LEN; i++)
		rnd[i] = (unsigned char)i;
	ctl_make_id(rnd, id);
	assert_string_equal(id, "abcdefghijklmnopqrstuvwxyz");
	memset(rnd, 0xff, sizeof rnd);
	ctl_make_id(rnd, id);
	assert_string_equal(id, "77777777777777777777777777");
	rnd[3] = 32 + 2;	/* high bits do not matter */
	ctl_make_id(rnd, id);
	assert_int_equal(id[3], 'c');
}

/* ---- the record ---- */

static struct ctl_decision
decision(void)
{
	struct ctl_decision d = {
		.id = "gate-14", .on_behalf_of = "operator:4417", .action = "gate.open",
		.resource = "canal/lateral-3/gate-14", .basis = "role:gatekeeper",
		.iss = "warrantctl", .decided_at_ms = NOW, .expires_at_ms = NOW + 1800 * 1000,
	};
	return d;
}

static json_t *
build_ok(const struct ctl_decision *d)
{
	char err[256] = "";
	json_t *rec = ctl_build_record(d, err, sizeof err);

	if (rec == NULL)
		fail_msg("build: %s", err);
	return rec;
}

static void
build_fails(const struct ctl_decision *d, const char *want_in_err)
{
	char err[256] = "";
	json_t *rec = ctl_build_record(d, err, sizeof err);

	if (rec != NULL) {
		json_decref(rec);
		fail_msg("build accepted what it should refuse (%s)", want_in_err);
	}
	if (strstr(err, want_in_err) == NULL)
		fail_msg("error '%s' does not mention '%s'", err, want_in_err);
}

static const char *
str(const json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));

	if (s == NULL)
		fail_msg("%s: not a string", key);
	return s;
}

static void
test_record_fields(void **state)
{
	struct ctl_decision d = decision();
	json_t *rec;

	(void)state;
	d.notify = "ops@example";
	d.not_before_ms = NOW + 600 * 1000;
	rec = build_ok(&d);
	assert_string_equal(str(rec, "recordId"), "gate-14");
	assert_string_equal(str(rec, "onBehalfOf"), "operator:4417");
	assert_string_equal(str(rec, "action"), "gate.open");
	assert_string_equal(str(rec, "resource"), "canal/lateral-3/gate-14");
	assert_string_equal(str(rec, "basis"), "role:gatekeeper");
	assert_string_equal(str(rec, "decidedAt"), "2026-11-30T04:00:00.000Z");
	assert_string_equal(str(rec, "notBefore"), "2026-11-30T04:10:00.000Z");
	assert_string_equal(str(rec, "expiresAt"), "2026-11-30T04:30:00.000Z");
	assert_string_equal(str(rec, "notifyOnDenial"), "ops@example");
	assert_string_equal(str(rec, "iss"), "warrantctl");
	assert_true(json_is_object(json_object_get(rec, "parameters")));
	assert_int_equal(json_object_size(json_object_get(rec, "parameters")), 0);
	assert_int_equal(json_object_size(rec), 11);
	json_decref(rec);
}

static void
test_record_optional_fields_absent(void **state)
{
	struct ctl_decision d = decision();
	json_t *rec;

	(void)state;
	rec = build_ok(&d);
	assert_null(json_object_get(rec, "notBefore"));
	assert_null(json_object_get(rec, "notifyOnDenial"));
	json_decref(rec);
}

static void
test_params_merge_pair_wins(void **state)
{
	const char *pairs[] = {"mode=full", "count=3", "empty=", "eq=a=b"};
	struct ctl_decision d = decision();
	json_t *rec, *p;

	(void)state;
	d.params_json = "{\"mode\": \"half\", \"n\": 7, \"nested\": {\"k\": true}}";
	d.params = pairs;
	d.nparams = 4;
	rec = build_ok(&d);
	p = json_object_get(rec, "parameters");
	assert_string_equal(str(p, "mode"), "full");	/* --param wins */
	assert_string_equal(str(p, "count"), "3");	/* a string, not 3 */
	assert_string_equal(str(p, "empty"), "");
	assert_string_equal(str(p, "eq"), "a=b");	/* split at the first '=' */
	assert_int_equal(json_integer_value(json_object_get(p, "n")), 7);
	assert_true(json_is_true(json_object_get(json_object_get(p, "nested"), "k")));
	json_decref(rec);
}

static void
test_params_refused(void **state)
{
	const char *no_eq[] = {"mode"}, *no_key[] = {"=v"}, *bad_utf8[] = {"k=\xff"};
	struct ctl_decision d = decision();

	(void)state;
	d.params_json = "[1, 2]";
	build_fails(&d, "not a JSON object");
	d.params_json = "{\"a\": 1, \"a\": 2}";
	build_fails(&d, "--params");
	d.params_json = "{nope";
	build_fails(&d, "not JSON");
	d.params_json = NULL;
	d.params = no_eq;
	d.nparams = 1;
	build_fails(&d, "KEY=VALUE");
	d.params = no_key;
	build_fails(&d, "KEY=VALUE");
	d.params = bad_utf8;
	build_fails(&d, "UTF-8");
}

static void
test_record_refused(void **state)
{
	struct ctl_decision d = decision();

	(void)state;
	d.not_before_ms = d.expires_at_ms;
	build_fails(&d, "--not-before");
	d = decision();
	d.basis = NULL;
	build_fails(&d, "--basis");
	d = decision();
	d.iss = NULL;
	build_fails(&d, "issuer");
	d = decision();
	d.on_behalf_of = "op\xc3";
	build_fails(&d, "onBehalfOf");
}

/* What decide writes passes the worker's own checks (§3.1). */
static void
test_record_passes_record_load(void **state)
{
	const char *pairs[] = {"speed=slow"};
	struct ctl_decision d = decision();
	struct cfg *cfg = load_cfg("");
	struct record_policy pol;
	struct record *out;
	char detail[256], *text;
	json_t *rec;

	(void)state;
	d.params = pairs;
	d.nparams = 1;
	d.notify = "ops";
	d.not_before_ms = NOW + 1000;
	rec = build_ok(&d);
	text = json_dumps(rec, JSON_COMPACT);
	ctl_policy_content(&pol, cfg);
	assert_int_equal(record_load(&pol, "gate-14", text, NOW, &out, NULL, detail,
	    sizeof detail), RECORD_OK);
	assert_string_equal(out->notify_on_denial, "ops");
	assert_int_equal(out->not_before_ms, NOW + 1000);
	json_t *got = record_content(out);
	assert_string_equal(json_string_value(json_object_get(json_object_get(got, "parameters"),
	    "speed")), "slow");
	json_decref(got);
	record_free(out);
	free(text);
	json_decref(rec);
	cfg_free(cfg);
}

/* ---- the policy ---- */

static enum record_status
load_with(const struct cfg *cfg, const struct ctl_decision *d)
{
	struct record_policy pol;
	struct record *out;
	char detail[256];
	json_t *rec = build_ok(d);
	char *text = json_dumps(rec, JSON_COMPACT);
	enum record_status st;

	ctl_policy_content(&pol, cfg);
	st = record_load(&pol, d->id, text, NOW, &out, NULL, detail, sizeof detail);
	record_free(out);
	free(text);
	json_decref(rec);
	return st;
}

static void
test_policy_from_config(void **state)
{
	struct cfg *cfg = load_cfg("issuer = decider-1\n");
	struct ctl_decision d = decision();

	(void)state;
	d.iss = "decider-1";
	assert_int_equal(load_with(cfg, &d), RECORD_OK);
	d.action = "gate.close";		/* no [action gate.close] */
	assert_int_equal(load_with(cfg, &d), RECORD_UNKNOWN_ACTION);
	d = decision();
	d.iss = "someone-else";			/* [records] issuer */
	assert_int_equal(load_with(cfg, &d), RECORD_INVALID);
	d = decision();
	d.iss = "decider-1";
	d.expires_at_ms = NOW + 3601 * 1000;	/* max_window_s = 3600 */
	assert_int_equal(load_with(cfg, &d), RECORD_INVALID);
	d.expires_at_ms = NOW + 3600 * 1000;
	assert_int_equal(load_with(cfg, &d), RECORD_OK);
	d.decided_at_ms = NOW + 61 * 1000;	/* clock_skew_s = 60 */
	assert_int_equal(load_with(cfg, &d), RECORD_INVALID);
	cfg_free(cfg);
}

/* Issue 8: a NULL key can no longer turn verification off: with
 * signature = required the policy requires it whatever the key, and a plain
 * JSON record is refused instead of passing as verified. */
static void
test_policy_signature_only_with_key(void **state)
{
	struct cfg *cfg = load_cfg("");
	struct record_policy pol;
	static const unsigned char key[] = "k";
	struct ctl_decision d = decision();
	json_t *rec = build_ok(&d);
	char *text = json_dumps(rec, JSON_COMPACT), detail[256];
	struct record *out;

	(void)state;
	cfg->records.signature_required = 1;
	cfg->records.algorithm = JWA_ES256;
	ctl_policy_init(&pol, cfg, NULL, 0);
	assert_int_equal(pol.signature_required, 1);
	assert_int_equal(record_load(&pol, d.id, text, NOW, &out, NULL, detail, sizeof detail),
	    RECORD_BAD_SIGNATURE);
	assert_null(out);
	assert_non_null(strstr(detail, "no verification key"));
	/* checking content before signing is its own, explicit policy */
	ctl_policy_content(&pol, cfg);
	assert_int_equal(pol.signature_required, 0);
	assert_int_equal(record_load(&pol, d.id, text, NOW, &out, NULL, detail, sizeof detail),
	    RECORD_OK);
	record_free(out);
	free(text);
	json_decref(rec);
	ctl_policy_init(&pol, cfg, key, 1);
	assert_int_equal(pol.signature_required, 1);
	assert_ptr_equal(pol.key, key);
	assert_int_equal(pol.algorithm, JWA_ES256);
	assert_int_equal(pol.max_window_ms, 3600 * 1000);
	assert_int_equal(pol.clock_skew_ms, 60 * 1000);
	cfg->records.signature_required = 0;
	ctl_policy_init(&pol, cfg, key, 1);
	assert_int_equal(pol.signature_required, 0);
	cfg_free(cfg);
}

/* ---- output ---- */

static void
assert_scalar_int(const char *s, long long want)
{
	json_t *v = ctl_scalar(s);

	if (!json_is_integer(v) || json_integer_value(v) != want)
		fail_msg("'%s' is not the integer %lld", s, want);
	json_decref(v);
}

static void
assert_scalar_str(const char *s)
{
	json_t *v = ctl_scalar(s);

	if (!json_is_string(v) || strcmp(json_string_value(v), s) != 0)
		fail_msg("'%s' did not stay a string", s);
	json_decref(v);
}

static void
test_scalar(void **state)
{
	(void)state;
	assert_scalar_int("0", 0);
	assert_scalar_int("17", 17);
	assert_scalar_int("-3", -3);
	assert_scalar_int("9223372036854775807", INT64_MAX);
	assert_scalar_str("007");
	assert_scalar_str("1700000000000-0");
	assert_scalar_str("99999999999999999999");
	assert_scalar_str("");
	assert_scalar_str("-");
	assert_scalar_str("1e3");
	assert_scalar_str(" 1");
	assert_scalar_str("0.1.0");
}

static char *
render(void (*fn)(FILE *, const json_t *, int), const char *json, int indent)
{
	json_t *v = json_loads(json, 0, NULL);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(v);
	assert_non_null(f);
	fn(f, v, indent);
	fclose(f);
	json_decref(v);
	return buf;
}

static void
test_human_aligned(void **state)
{
	char *out;

	(void)state;
	out = render(ctl_print_human,
	    "{\"lag\": 3, \"lastDeliveredId\": \"1-0\", \"ok\": true, \"idle\": null,"
	    " \"none\": [], \"empty\": {}, \"ids\": [1, 2]}", 0);
	assert_string_equal(out,
	    "lag:             3\n"
	    "lastDeliveredId: 1-0\n"
	    "ok:              true\n"
	    "idle:            -\n"
	    "none:            (none)\n"
	    "empty:           (none)\n"
	    "ids:             [1,2]\n");
	free(out);
}

static void
test_human_nested(void **state)
{
	char *out;

	(void)state;
	out = render(ctl_print_human,
	    "{\"consumers\": {\"w1\": {\"pending\": 2, \"tokenState\": \"valid\"}},"
	    " \"audit\": [{\"entryId\": \"1-0\", \"to\": \"running\"}, {\"entryId\": \"2-0\","
	    " \"detail\": \"two words\"}], \"n\": 1}", 0);
	assert_string_equal(out,
	    "consumers:\n"
	    "  w1:\n"
	    "    pending:    2\n"
	    "    tokenState: valid\n"
	    "audit:\n"
	    "  entryId=1-0 to=running\n"
	    "  entryId=2-0 detail=\"two words\"\n"
	    "n:         1\n");
	free(out);
}

static void
test_human_one_line_per_value(void **state)
{
	char *out;

	(void)state;
	out = render(ctl_print_human, "{\"detail\": \"a\\nb\\tc\"}", 2);
	assert_string_equal(out, "  detail: a?b?c\n");
	free(out);
}

static void
test_human_ms(void **state)
{
	(void)state;
	char b[32];
	static const struct {
		long long ms;
		const char *want;
	} cases[] = {
		{0, "0 ms"}, {850, "850 ms"}, {999, "999 ms"}, {1000, "1 s"}, {5400, "5 s"},
		{119999, "119 s"}, {120000, "2 m"}, {720000, "12 m"}, {7199999, "119 m"},
		{7200000, "2 h"}, {172799999, "47 h"}, {172800000, "2 d"}, {-1, "-"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		assert_string_equal(ctl_human_ms(cases[i].ms, b, sizeof b), cases[i].want);
}

/* status for people: durations in human units, a count of the live
 * consumers, then a table of the columns that matter (issue 38 item 6: a
 * consumer line was 579 characters); a lag counted up to the cap as
 * "≥10000". */
static void
test_status_human(void **state)
{
	(void)state;
	json_error_t e;
	json_t *st = json_loads("{\"stream\": \"w:jobs\", \"lag\": 10000, \"lagAtLeast\": true,"
	    "\"oldestPendingIdleMs\": 5400,"
	    "\"consumers\": {\"w1\": {\"inGroup\": true, \"pending\": 1, \"idleMs\": 720000,"
	    "\"alive\": true, \"tokenState\": \"valid\", \"heartbeatAgeMs\": 1500,"
	    "\"inFlight\": 12, \"version\": \"0.1.0\", \"host\": \"h1\", \"received\": 7,"
	    "\"owner\": \"4f0c2a9b77aa\", \"collision\": true},"
	    "\"w2\": {\"alive\": false, \"idleMs\": 86400000}}}", 0, &e);
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(st);
	assert_non_null(f);
	ctl_print_status(f, st);
	fclose(f);
	assert_int_equal(ctl_status_alive(st), 1);
	assert_string_equal(out,
	    "stream:            w:jobs\n"
	    "lag:               \u226510000\n"
	    "oldestPendingIdle: 5 s\n"
	    "consumers: 1 alive of 2\n"
	    "  NAME  ALIVE   HEARTBEAT  PENDING  IN FLIGHT  TOKEN  VERSION  OWNER\n"
	    "  w1    alive   1 s        1        12         valid  0.1.0    4f0c2a9b COLLISION\n"
	    "  w2    silent  -          0        -          -      -        -\n");
	free(out);
	json_decref(st);
}

/* Issue 38 item 6: a pause of the action or of the queue holds a job still
 * to be called; a running or finished one is not held. */
static void
test_held(void **state)
{
	(void)state;
	json_t *none = json_object(), *one = json_pack("{s:s}", "gate.open", "by=ops"),
	    *all = json_pack("{s:s}", "*", "by=ops");

	assert_null(ctl_held(none, "gate.open", "queued"));
	assert_null(ctl_held(NULL, "gate.open", "queued"));
	assert_string_equal(ctl_held(one, "gate.open", "queued"), "paused");
	assert_string_equal(ctl_held(one, "gate.open", "retrying"), "paused");
	assert_null(ctl_held(one, "gate.close", "queued"));
	assert_null(ctl_held(one, "gate.open", "running"));
	assert_null(ctl_held(one, "gate.open", "done"));
	assert_null(ctl_held(one, "gate.open", NULL));
	assert_string_equal(ctl_held(all, "gate.close", "queued"), "paused");
	assert_string_equal(ctl_held(all, NULL, "queued"), "paused");
	json_decref(none);
	json_decref(one);
	json_decref(all);
}

static void
test_line_quoting(void **state)
{
	char *out;

	(void)state;
	out = render(ctl_print_line,
	    "{\"entryId\": \"5-0\", \"id\": \"bad id\", \"reason\": \"no-id\", \"detail\": \"\","
	    " \"gone\": null, \"deliveries\": 17, \"nl\": \"x\\ny\", \"q\": \"say \\\"hi\\\"\"}",
	    0);
	assert_string_equal(out,
	    "entryId=5-0 id=\"bad id\" reason=no-id detail=\"\" deliveries=17 nl=\"x\\ny\" "
	    "q=\"say \\\"hi\\\"\"\n");
	free(out);
}

/* `warrantctl metrics`: the status object as gauges, through render(). */
static void
queue_metrics_at_now(FILE *f, const json_t *st, int indent)
{
	(void)indent;
	assert_int_equal(ctl_queue_metrics(f, st, NOW), 0);
}

static char *
queue_metrics(const char *status_json)
{
	return render(queue_metrics_at_now, status_json, 0);
}

static void
assert_in(const char *text, const char *want)
{
	if (!strstr(text, want))
		fail_msg("missing: %s\n--- in:\n%s", want, text);
}

static void
test_queue_metrics(void **state)
{
	char status[1024];
	(void)state;

	snprintf(status, sizeof status, "{\"stream\": \"warrant:jobs\", \"group\": \"workers\","
	    "\"groupExists\": true, \"streamLength\": 12, \"lag\": 4, \"pending\": 2,"
	    "\"oldestPendingId\": \"%lld-0\", \"oldestPendingIdleMs\": 1500,"
	    "\"oldestUndelivered\": \"%lld-3\","
	    "\"scheduled\": 3, \"dead\": 1, \"notify\": 5, \"consumers\": {"
	    "\"w1\": {\"inGroup\": true, \"pending\": 2, \"alive\": true},"
	    "\"w\\\"2\": {\"inGroup\": true, \"pending\": 0, \"alive\": false},"
	    "\"w3\": {\"inGroup\": false, \"pending\": 0, \"alive\": true}}}",
	    NOW - 90000, NOW - 42500);
	char *t = queue_metrics(status);
	const char *l = "{stream=\"warrant:jobs\",group=\"workers\"}";
	char want[256];
	const char *const lines[][2] = {{"group_exists", "1"}, {"stream_length", "12"},
	    {"lag", "4"}, {"pending", "2"}, {"oldest_pending_idle_seconds", "1.5"},
	    {"scheduled", "3"}, {"dead", "1"}, {"notify", "5"},
	    {"oldest_pending_age_seconds", "90.000"}, {"consumers", "2"},
	    {"oldest_undelivered_age_seconds", "42.500"},	/* §13: the queue's latency */
	    {"consumers_alive", "2"}};
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
		snprintf(want, sizeof want, "\nwarrantd_queue_%s%s %s\n", lines[i][0], l,
		    lines[i][1]);
		assert_in(t, want);
	}
	assert_in(t, "# TYPE warrantd_queue_lag gauge\n");
	assert_in(t, "warrantd_queue_consumer_pending{stream=\"warrant:jobs\",group=\"workers\","
	    "consumer=\"w\\\"2\"} 0\n");
	assert_null(strstr(t, "consumer=\"w3\""));
	free(t);

	/* No group yet, nothing pending, lag unknown: lag left out, ages 0. */
	t = queue_metrics("{\"stream\": \"p:jobs\", \"group\": \"g\", \"groupExists\": false,"
	    "\"streamLength\": 0, \"lag\": null, \"pending\": 0, \"oldestPendingId\": null,"
	    "\"oldestPendingIdleMs\": null, \"scheduled\": 0, \"dead\": 0, \"notify\": 0,"
	    "\"consumers\": {}}");
	assert_null(strstr(t, "warrantd_queue_lag"));
	assert_in(t, "\nwarrantd_queue_group_exists{stream=\"p:jobs\",group=\"g\"} 0\n");
	assert_in(t, "\nwarrantd_queue_oldest_pending_idle_seconds{stream=\"p:jobs\",group=\"g\"} 0\n");
	assert_in(t, "\nwarrantd_queue_oldest_pending_age_seconds{stream=\"p:jobs\",group=\"g\"} 0.000\n");
	assert_in(t, "\nwarrantd_queue_oldest_undelivered_age_seconds{stream=\"p:jobs\",group=\"g\"} 0.000\n");
	free(t);
}

/* dead drop --older-than D */
static void
test_duration(void **state)
{
	int64_t d;

	(void)state;
	assert_int_equal(ctl_parse_duration("7d", &d), 0);
	assert_int_equal(d, INT64_C(7) * 86400000);
	assert_int_equal(ctl_parse_duration("+90m", &d), 0);
	assert_int_equal(d, INT64_C(90) * 60000);
	assert_int_equal(ctl_parse_duration("30", &d), 0);
	assert_int_equal(d, 30000);
	assert_int_equal(ctl_parse_duration("", &d), -1);
	assert_int_equal(ctl_parse_duration("7w", &d), -1);
	assert_int_equal(ctl_parse_duration("-1d", &d), -1);
	assert_int_equal(ctl_parse_duration("1dd", &d), -1);
	assert_int_equal(ctl_parse_duration("99999999999999999999d", &d), -1);
	assert_int_equal(ctl_parse_duration(NULL, &d), -1);
}

/* When Redis added an entry, from its id. */
static void
test_stream_id_ms(void **state)
{
	(void)state;
	assert_int_equal(ctl_stream_id_ms("1700000000123-0"), INT64_C(1700000000123));
	assert_int_equal(ctl_stream_id_ms("5-17"), 5);
	assert_int_equal(ctl_stream_id_ms("5"), -1);
	assert_int_equal(ctl_stream_id_ms("5-"), -1);
	assert_int_equal(ctl_stream_id_ms("-5-1"), -1);
	assert_int_equal(ctl_stream_id_ms("x-1"), -1);
	assert_int_equal(ctl_stream_id_ms(NULL), -1);
}

/* Which dead letters dead requeue/drop in bulk choose. */
static void
test_dead_match(void **state)
{
	(void)state;
	/* --all */
	assert_int_equal(ctl_dead_match("100-0", "max-attempts", NULL, 0), 1);
	assert_int_equal(ctl_dead_match("100-0", NULL, NULL, 0), 1);
	/* --reason */
	assert_int_equal(ctl_dead_match("100-0", "max-attempts", "max-attempts", 0), 1);
	assert_int_equal(ctl_dead_match("100-0", "bad-signature", "max-attempts", 0), 0);
	assert_int_equal(ctl_dead_match("100-0", NULL, "max-attempts", 0), 0);
	assert_int_equal(ctl_dead_match("100-0", "max-attempts-x", "max-attempts", 0), 0);
	/* --older-than: added strictly before the cutoff */
	assert_int_equal(ctl_dead_match("99-5", "x", NULL, 100), 1);
	assert_int_equal(ctl_dead_match("100-0", "x", NULL, 100), 0);
	assert_int_equal(ctl_dead_match("101-0", "x", NULL, 100), 0);
	assert_int_equal(ctl_dead_match("junk", "x", NULL, 100), 0);
	/* both */
	assert_int_equal(ctl_dead_match("99-0", "a", "a", 100), 1);
	assert_int_equal(ctl_dead_match("99-0", "b", "a", 100), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time_rfc3339),
		cmocka_unit_test(test_duration),
		cmocka_unit_test(test_stream_id_ms),
		cmocka_unit_test(test_dead_match),
		cmocka_unit_test(test_time_relative_units),
		cmocka_unit_test(test_time_relative_refused),
		cmocka_unit_test(test_id_syntax),
		cmocka_unit_test(test_id_uses_five_bits_per_byte),
		cmocka_unit_test(test_record_fields),
		cmocka_unit_test(test_record_optional_fields_absent),
		cmocka_unit_test(test_params_merge_pair_wins),
		cmocka_unit_test(test_params_refused),
		cmocka_unit_test(test_record_refused),
		cmocka_unit_test(test_record_passes_record_load),
		cmocka_unit_test(test_policy_from_config),
		cmocka_unit_test(test_policy_signature_only_with_key),
		cmocka_unit_test(test_scalar),
		cmocka_unit_test(test_human_aligned),
		cmocka_unit_test(test_human_nested),
		cmocka_unit_test(test_human_one_line_per_value),
		cmocka_unit_test(test_human_ms),
		cmocka_unit_test(test_status_human),
		cmocka_unit_test(test_held),
		cmocka_unit_test(test_line_quoting),
		cmocka_unit_test(test_queue_metrics),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
