/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_park: R6's share of the hand and parked entries (issue 38 item 8),
 * against a real redis-server, the real warrantd and warrantctl, and
 * fake_target (which counts the calls):
 *   - with gate.open paused, 40 gate.open entries queued ahead of 10
 *     gate.set entries, max_in_flight = batch = 16: every gate.set job is
 *     done during the pause, no gate.open call is made, the worker keeps at
 *     most 8 of them in hand and parks the rest (P:parked:gate.open); after
 *     `resume` every gate.open job is done, each called exactly once.
 *   - a parked job whose deadline passes while the pause lasts ends
 *     `expired`, notified, never called.
 *   - the same with gate.open's target down and its breaker open: the
 *     gate.set jobs are done while it is, and once the probe closes it
 *     every gate.open job is done, each with exactly one 2xx.
 *   - the same with gate.open's scope down at fake_idp (503, no token for
 *     it) and gate.set on another scope: the gate.set jobs are done, each
 *     entry of gate.open parked at most once while there is no token (no
 *     read-park-unpark loop), a parked one whose deadline passes ends
 *     `expired` and notified; once the IdP answers again every gate.open
 *     job is done, each called exactly once.
 */
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"

#define OPEN "gate.open"
#define SET "gate.set"
#define N_OPEN 40
#define N_SET 10

static struct h_stack st;
static struct h_daemon d;
static struct h_fake idp;	/* test_token_lets_others_run's */
static char *secret_path;

/* Each test's teardown, also after a failed assertion: nothing it started
 * is left running. */
static int
world_down(void **state)
{
	(void)state;
	if (d.pid > 0)
		h_daemon_kill(&d);
	memset(&d, 0, sizeof d);
	h_fake_stop(&idp);
	memset(&idp, 0, sizeof idp);
	free(secret_path);
	secret_path = NULL;
	h_stack_stop(&st);
	memset(&st, 0, sizeof st);
	return 0;
}

/* A worker with max_in_flight = batch = 16 and the actions gate.open and
 * gate.set on fake_target. */
static void
up_with(const char *prefix, const char *action_extra, int max_attempts)
{
	char sections[512];

	if (h_stack_start(&st) != 0)
		fail_msg("cannot start redis and fake_target");
	snprintf(sections, sizeof sections, "[action " SET "]\nurl = %s/gates/{resource}/set\n"
	    "auth = none\ntimeout_ms = 2000\n", st.target.url);
	struct h_daemon_opts o = {.redis_sock = st.redis.sock, .target_url = st.target.url,
	    .prefix = prefix, .daemon_extra = "max_in_flight = 16\n",
	    .redis_extra = "batch = 16\n", .sections = sections, .action_extra = action_extra,
	    .max_attempts = max_attempts};
	h_daemon_up(&d, &o);
}

static void
up(const char *prefix)
{
	up_with(prefix, NULL, 0);
}

/* warrantctl -c <the daemon's ini> a1 a2: its exit code. */
static int
ctl(const char *a1, const char *a2)
{
	char *argv[] = {(char *)h_bin("warrantctl"), "-c", d.ini, (char *)a1, (char *)a2, NULL};
	char *out = NULL;
	int rc = h_run(argv, 30000, &out);

	printf("itest_park: warrantctl %s %s: %s", a1, a2, out ? out : "\n");
	free(out);
	return rc;
}

static void
pause_open(void)
{
	assert_int_equal(ctl("pause", OPEN), 0);
	assert_int_equal(h_daemon_wait_log(&d, "event=gate.pauses paused=" OPEN, H_WAIT_MS), 0);
}

static long long
target_total(void)
{
	return h_fake_stat(&st.target, NULL, "total");
}

struct state_wait {
	const char *prefix, *id, *state;
};

static int
has_state(void *arg)
{
	const struct state_wait *w = arg;
	char *s = h_record_field(st.c, w->prefix, w->id, "state");
	int ok = s != NULL && strcmp(s, w->state) == 0;

	free(s);
	return ok;
}

static void
wait_state(const char *prefix, const char *id, const char *state)
{
	struct state_wait w = {prefix, id, state};
	char what[512];

	snprintf(what, sizeof what, "%s %s (log %s)", id, state, d.log);
	h_wait_for(has_state, &w, H_WAIT_MS, what);
}

/* Queues n records of action under prefix, "<stem>-0" to "<stem>-(n-1)", in order. */
static void
queue_n(const char *prefix, const char *stem, int n, const char *action, const char *resource, long long expires)
{
	char id[32];

	for (int i = 0; i < n; i++) {
		snprintf(id, sizeof id, "%s-%d", stem, i);
		h_store_signed(st.c, prefix, id, action, resource, expires, 1);
	}
}

/* Waits until each of queue_n's "<stem>-i" is done. */
static void
wait_each_done(const char *prefix, const char *stem, int n)
{
	char id[32];

	for (int i = 0; i < n; i++) {
		snprintf(id, sizeof id, "%s-%d", stem, i);
		wait_state(prefix, id, "done");
	}
}

static long long
any_calls(const char *key)
{
	return h_count_calls(&st.target, key);
}

/* Each "<stem>-i" was called once, as calls counts them. */
static void
each_called_once(const char *stem, int n, long long (*calls)(const char *key))
{
	char id[32];

	for (int i = 0; i < n; i++) {
		snprintf(id, sizeof id, "%s-%d", stem, i);
		assert_int_equal(calls(id), 1);
	}
}

/* The case: the entries behind the paused ones run during the
 * pause; the paused ones run once each after it. */
static void
test_pause_lets_others_run(void **state)
{
	const char *P = "pk";
	long long far = h_now_ms() + 600000;
	char id[32];
	(void)state;

	up(P);
	pause_open();
	queue_n(P, "po", N_OPEN, OPEN, "canal/park-1", far);
	queue_n(P, "ps", N_SET, SET, "canal/park-1", far);
	long long t0 = h_now_ms();
	wait_each_done(P, "ps", N_SET);
	each_called_once("ps", N_SET, any_calls);
	printf("itest_park: %d %s jobs done %lld ms into the pause\n", N_SET, SET,
	    h_now_ms() - t0);
	/* nothing of the paused action called, none dead, no attempt spent */
	assert_int_equal(target_total(), N_SET);
	assert_int_equal(h_redis_int(st.c, "XLEN %s", h_key(P, "dead")), 0);
	for (int i = 0; i < N_OPEN; i++) {
		snprintf(id, sizeof id, "po-%d", i);
		char *s = h_record_field(st.c, P, id, "state");
		char *a = h_record_field(st.c, P, id, "attempts");
		if (s == NULL || strcmp(s, "queued") != 0 || (a != NULL && strcmp(a, "0") != 0))
			fail_msg("%s while paused: state %s attempts %s (log %s)", id,
			    s ? s : "-", a ? a : "-", d.log);
		free(s);
		free(a);
	}
	/* R6: at most half of max_in_flight kept in hand, the rest parked */
	long long pending = h_pending_count(st.c, h_key(P, "jobs"), H_GROUP);
	long long parked = h_redis_int(st.c, "LLEN %s", h_key(P, "parked:" OPEN));
	printf("itest_park: paused: %lld in hand, %lld parked\n", pending, parked);
	assert_true(pending <= 8);
	assert_int_equal(pending + parked, N_OPEN);
	/* resume: every job of the paused action runs, once */
	assert_int_equal(ctl("resume", OPEN), 0);
	t0 = h_now_ms();
	wait_each_done(P, "po", N_OPEN);
	printf("itest_park: %d %s jobs done %lld ms after resume\n", N_OPEN, OPEN,
	    h_now_ms() - t0);
	each_called_once("po", N_OPEN, any_calls);
	assert_int_equal(target_total(), N_OPEN + N_SET);
	assert_int_equal(h_redis_int(st.c, "LLEN %s", h_key(P, "parked:" OPEN)), 0);
	assert_int_equal(h_redis_int(st.c, "EXISTS %s", h_key(P, "parked")), 0);
	assert_int_equal(h_redis_int(st.c, "XLEN %s", h_key(P, "dead")), 0);
	h_daemon_down(&d);
}

/* P:notify holds an entry for record id of this kind. */
static int
notified(const char *prefix, const char *id, const char *kind)
{
	redisReply *r = redisCommand(st.c, "XRANGE %s - +", h_key(prefix, "notify"));
	int found = 0;

	for (size_t i = 0; r != NULL && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
		const redisReply *f = r->element[i]->element[1];
		int id_ok = 0, kind_ok = 0;
		for (size_t k = 0; k + 1 < f->elements; k += 2) {
			id_ok |= strcmp(f->element[k]->str, "id") == 0 &&
			    strcmp(f->element[k + 1]->str, id) == 0;
			kind_ok |= strcmp(f->element[k]->str, "kind") == 0 &&
			    strcmp(f->element[k + 1]->str, kind) == 0;
		}
		found |= id_ok && kind_ok;
	}
	freeReplyObject(r);
	return found;
}

/* R1: a deadline that passes while the entry is parked ends the job. */
static void
test_parked_deadline(void **state)
{
	const char *P = "pd";
	long long far = h_now_ms() + 600000;
	char id[32];
	(void)state;

	up(P);
	pause_open();
	/* these fill R6's share of the hand: the next one is parked */
	for (int i = 0; i < 12; i++) {
		snprintf(id, sizeof id, "pd-%d", i);
		h_store_signed(st.c, P, id, OPEN, "canal/park-2", far, 1);
	}
	h_store_signed(st.c, P, "pd-soon", OPEN, "canal/park-2", h_now_ms() + 4000, 1);
	/* it is parked before its deadline */
	assert_int_equal(h_daemon_wait_log(&d, "event=job.parked id=pd-soon", H_WAIT_MS), 0);
	wait_state(P, "pd-soon", "expired");
	assert_true(notified(P, "pd-soon", "expired"));
	assert_int_equal(h_count_calls(&st.target, "pd-soon"), 0);
	assert_int_equal(target_total(), 0);
	/* the others are still parked or held, none ended */
	long long pending = h_pending_count(st.c, h_key(P, "jobs"), H_GROUP);
	long long parked = h_redis_int(st.c, "LLEN %s", h_key(P, "parked:" OPEN));
	assert_int_equal(pending + parked, 12);
	assert_int_equal(ctl("resume", OPEN), 0);
	for (int i = 0; i < 12; i++) {
		snprintf(id, sizeof id, "pd-%d", i);
		wait_state(P, id, "done");
		assert_int_equal(h_count_calls(&st.target, id), 1);
	}
	assert_int_equal(h_count_calls(&st.target, "pd-soon"), 0);
	h_daemon_down(&d);
}

/* The calls fake_target answered 2xx for Idempotency-Key key. */
static long long
ok_calls(const char *key)
{
	json_t *a = h_calls_with_key(&st.target, key);
	long long n = 0;

	for (size_t i = 0; i < json_array_size(a); i++) {
		json_int_t status = json_integer_value(json_object_get(json_array_get(a, i),
		    "status"));
		n += status >= 200 && status < 300;
	}
	json_decref(a);
	return n;
}

/* R6 with an open breaker: its entries beyond the share are parked, the
 * other action's run; once the probe closes it they run, each done once. */
static void
test_breaker_lets_others_run(void **state)
{
	const char *P = "pb";
	long long far = h_now_ms() + 600000;
	char script[1024];
	size_t at = 0;
	(void)state;

	/* max_attempts 50: the breaker, not the budget, holds them back */
	up_with(P, "breaker_failures = 1\nbreaker_open_ms = 1000\n", 50);
	at += (size_t)snprintf(script + at, sizeof script - at,
	    "{\"default\": {\"status\": 503}, \"per_key\": {");
	for (int i = 0; i < N_SET; i++)
		at += (size_t)snprintf(script + at, sizeof script - at,
		    "%s\"bs-%d\": [{\"status\": 200}]", i ? ", " : "", i);
	snprintf(script + at, sizeof script - at, "}}");
	assert_int_equal(h_fake_script(&st.target, script), 0);
	queue_n(P, "bo", N_OPEN, OPEN, "canal/park-3", far);
	queue_n(P, "bs", N_SET, SET, "canal/park-3", far);
	long long t0 = h_now_ms();
	wait_each_done(P, "bs", N_SET);
	each_called_once("bs", N_SET, any_calls);
	printf("itest_park: breaker: %d %s jobs done %lld ms after the enqueue, %lld parked\n",
	    N_SET, SET, h_now_ms() - t0,
	    h_redis_int(st.c, "LLEN %s", h_key(P, "parked:" OPEN)));
	assert_int_equal(h_daemon_wait_log(&d, "event=breaker.open", H_WAIT_MS), 0);
	assert_int_equal(h_daemon_wait_log(&d, "event=job.parked id=bo-", H_WAIT_MS), 0);
	assert_int_equal(h_redis_int(st.c, "XLEN %s", h_key(P, "dead")), 0);
	/* the target recovers: the probe closes the breaker, all are done */
	h_post_ok(&st.target, "/_default", "{\"status\":200}");
	t0 = h_now_ms();
	wait_each_done(P, "bo", N_OPEN);
	printf("itest_park: breaker: %d %s jobs done %lld ms after the target recovered\n",
	    N_OPEN, OPEN, h_now_ms() - t0);
	each_called_once("bo", N_OPEN, ok_calls);
	assert_int_equal(h_redis_int(st.c, "LLEN %s", h_key(P, "parked:" OPEN)), 0);
	assert_int_equal(h_redis_int(st.c, "XLEN %s", h_key(P, "dead")), 0);
	h_daemon_down(&d);
}

/* How many times needle is in the daemon's log. */
static long
log_count(const char *needle)
{
	char *text = h_read_file(d.log);
	long n = 0;

	for (const char *p = text; p != NULL && (p = strstr(p, needle)) != NULL; p++)
		n++;
	free(text);
	return n;
}

struct idp_wait {
	long long above;
};

/* fake_idp answered more than w->above token requests 503 (a scope down). */
static int
idp_refused_more(void *arg)
{
	const struct idp_wait *w = arg;

	return h_fake_stat(&idp, NULL, "unavailable") > w->above;
}

/* R6 with a scope that has no token: gate.open (scope gates.open, down at
 * the IdP) ahead of gate.set (scope gates.set): its entries beyond the
 * share are parked, once each, and queued again when the token comes. */
static void
test_token_lets_others_run(void **state)
{
	const char *P = "pt";
	long long far = h_now_ms() + 600000;
	char sections[1024];
	(void)state;

	if (h_stack_start(&st) != 0)
		fail_msg("cannot start redis and fake_target");
	secret_path = h_write_file("client-secret", "park-secret\n");
	assert_non_null(secret_path);
	const char *idp_args[] = {"--jwt-secret-file", h_data("test-hs256.secret"),
	    "--client-id", "warrantd-park", "--client-secret-file", secret_path, NULL};
	assert_int_equal(h_fake_start(&idp, "fake_idp", idp_args), 0);
	h_post_ok(&idp, "/_down_scope", "gates.open");
	/* auth_wait_max_ms past the test: the entries in hand stay there */
	snprintf(sections, sizeof sections, "[oauth]\ntoken_url = %s/token\n"
	    "client_id = warrantd-park\nclient_secret_file = %s\nauth_wait_max_ms = 300000\n"
	    "min_refresh_interval_ms = 100\n"
	    "[action " SET "]\nurl = %s/gates/{resource}/set\nauth = oauth\nscope = gates.set\n"
	    "timeout_ms = 2000\n", idp.url, secret_path, st.target.url);
	struct h_daemon_opts o = {.redis_sock = st.redis.sock, .target_url = st.target.url,
	    .prefix = P, .daemon_extra = "max_in_flight = 16\n", .redis_extra = "batch = 16\n",
	    .sections = sections, .action_auth = "oauth", .action_extra = "scope = gates.open\n"};
	h_daemon_up(&d, &o);
	queue_n(P, "to", N_OPEN, OPEN, "canal/park-4", far);
	queue_n(P, "ts", N_SET, SET, "canal/park-4", far);
	long long t0 = h_now_ms();
	wait_each_done(P, "ts", N_SET);
	each_called_once("ts", N_SET, any_calls);
	printf("itest_park: token: %d %s jobs done %lld ms into the scope's outage\n", N_SET, SET,
	    h_now_ms() - t0);
	assert_int_equal(target_total(), N_SET);
	/* R1: one more, parked behind the share, whose deadline passes */
	h_store_signed(st.c, P, "tsoon", OPEN, "canal/park-4", h_now_ms() + 4000, 1);
	assert_int_equal(h_daemon_wait_log(&d, "event=job.parked id=tsoon", H_WAIT_MS), 0);
	wait_state(P, "tsoon", "expired");
	assert_true(notified(P, "tsoon", "expired"));
	/* claim ticks and the scope's fetches go by: nothing is queued again
	 * while the scope has no token, so each entry was parked once */
	struct idp_wait w = {h_fake_stat(&idp, NULL, "unavailable") + 1};
	h_wait_for(idp_refused_more, &w, H_WAIT_MS, "two more refused token requests");
	long long pending = h_pending_count(st.c, h_key(P, "jobs"), H_GROUP);
	long long parked = h_redis_int(st.c, "LLEN %s", h_key(P, "parked:" OPEN));
	long parks = log_count("event=job.parked id=to-");
	printf("itest_park: token: %lld in hand, %lld parked, %ld park operations\n", pending,
	    parked, parks);
	assert_true(pending <= 8);
	assert_int_equal(pending + parked, N_OPEN);
	assert_int_equal(parks, parked);
	assert_int_equal(target_total(), N_SET);
	assert_int_equal(h_count_calls(&st.target, "tsoon"), 0);
	/* the IdP answers again: every gate.open job is done, once */
	h_post_ok(&idp, "/_down_scope", "");
	t0 = h_now_ms();
	wait_each_done(P, "to", N_OPEN);
	printf("itest_park: token: %d %s jobs done %lld ms after the IdP answered again\n",
	    N_OPEN, OPEN, h_now_ms() - t0);
	each_called_once("to", N_OPEN, any_calls);
	assert_int_equal(target_total(), N_OPEN + N_SET);
	assert_int_equal(h_redis_int(st.c, "LLEN %s", h_key(P, "parked:" OPEN)), 0);
	assert_int_equal(h_redis_int(st.c, "EXISTS %s", h_key(P, "parked")), 0);
	assert_int_equal(h_redis_int(st.c, "XLEN %s", h_key(P, "dead")), 0);
	h_daemon_down(&d);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_pause_lets_others_run, world_down),
		cmocka_unit_test_teardown(test_parked_deadline, world_down),
		cmocka_unit_test_teardown(test_breaker_lets_others_run, world_down),
		cmocka_unit_test_teardown(test_token_lets_others_run, world_down),
	};
	if (getenv("ITEST_FILTER") != NULL)	/* e.g. ITEST_FILTER='test_parked*' */
		cmocka_set_test_filter(getenv("ITEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
