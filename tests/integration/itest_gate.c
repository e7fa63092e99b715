/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_gate: the operating controls of warrantd(7) §13 that hold calls back
 * (issue 25 items 2 and 3), against a real redis-server, the real warrantd
 * and warrantctl, and fake_target (which counts calls at once and their
 * arrival times):
 *   - pause: `warrantctl pause gate.open` -> nothing is called, nothing is
 *     dead, no attempt is spent, the entries stay pending, and a job whose
 *     deadline passes meanwhile is `expired` (R1); `resume` -> all done.
 *     The whole queue's pause leaves new entries unread.
 *   - breaker: a target answering 503 receives, once the circuit opened, one
 *     probe per breaker_open_ms; no job is dead and the jobs' attempts are
 *     the calls made; when it answers 200 again every job is done.
 *   - limits: the target never sees more than max_in_flight calls at once,
 *     nor more than rate_per_s in any second.
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

#define ACTION "gate.open"

static struct h_stack st;
static struct h_daemon d;

/* Each test's teardown, also after a failed assertion: nothing it started
 * is left running. */
static int
world_down(void **state)
{
	(void)state;
	if (d.pid > 0)
		h_daemon_kill(&d);
	memset(&d, 0, sizeof d);
	h_stack_stop(&st);
	memset(&st, 0, sizeof st);
	return 0;
}

static void
up(const char *prefix, const char *action_extra, int max_attempts)
{
	if (h_stack_start(&st) != 0)
		fail_msg("cannot start redis and fake_target");
	struct h_daemon_opts o = {.redis_sock = st.redis.sock, .target_url = st.target.url,
	    .prefix = prefix, .action_extra = action_extra, .max_attempts = max_attempts,
	    .base_ms = 50, .cap_ms = 200};
	h_daemon_up(&d, &o);
}

/* warrantctl -c <the daemon's ini> args...: its exit code. */
static int
ctl(const char *a1, const char *a2)
{
	char *argv[] = {(char *)h_bin("warrantctl"), "-c", d.ini, (char *)a1, (char *)a2, NULL};
	char *out = NULL;
	int rc = h_run(argv, 30000, &out);

	printf("itest_gate: warrantctl %s %s: %s", a1, a2 ? a2 : "", out ? out : "\n");
	free(out);
	return rc;
}

static void
enqueue(const char *prefix, const char *id, long long expires_ms)
{
	h_store_signed(st.c, prefix, id, ACTION, "canal/gate-1", expires_ms, 1);
}

static char *
field(const char *prefix, const char *id, const char *name)
{
	return h_record_field(st.c, prefix, id, name);
}

static long long
target_total(void)
{
	return h_fake_stat(&st.target, NULL, "total");
}

/* ---- pause ---- */

struct expired_wait {
	const char *prefix, *id;
};

static int
is_expired(void *arg)
{
	const struct expired_wait *w = arg;
	char *s = field(w->prefix, w->id, "state");
	int ok = s != NULL && strcmp(s, "expired") == 0;

	free(s);
	return ok;
}

static void
test_pause_action(void **state)
{
	const char *P = "gp";
	long long now = h_now_ms();
	char id[32];
	(void)state;

	up(P, NULL, 0);
	assert_int_equal(ctl("pause", ACTION), 0);
	assert_int_equal(h_daemon_wait_log(&d, "event=gate.pauses paused=" ACTION, H_WAIT_MS), 0);
	for (int i = 0; i < 5; i++) {
		snprintf(id, sizeof id, "gp-%d", i);
		enqueue(P, id, now + 600000);
	}
	/* read after the others: by the time it expires they had every chance */
	enqueue(P, "gp-soon", h_now_ms() + 3000);
	struct expired_wait w = {P, "gp-soon"};
	h_wait_for(is_expired, &w, H_WAIT_MS, "gp-soon expired while paused (R1)");
	/* nothing called, nothing dead, no attempt spent, all still pending */
	assert_int_equal(target_total(), 0);
	assert_int_equal(h_redis_int(st.c, "XLEN %s", h_key(P, "dead")), 0);
	for (int i = 0; i < 5; i++) {
		snprintf(id, sizeof id, "gp-%d", i);
		char *s = field(P, id, "state"), *a = field(P, id, "attempts");
		if (s == NULL || strcmp(s, "queued") != 0 || (a != NULL && strcmp(a, "0") != 0))
			fail_msg("%s while paused: state %s attempts %s (log %s)", id,
			    s ? s : "-", a ? a : "-", d.log);
		free(s);
		free(a);
	}
	assert_int_equal(h_pending_count(st.c, h_key(P, "jobs"), H_GROUP), 5);
	/* the pause shows in the heartbeat */
	char *hb = h_redis_str(st.c, "HGET %s paused", h_key(P, "consumer:w1"));
	assert_non_null(hb);
	assert_string_equal(hb, ACTION);
	free(hb);
	/* resume: every job runs, once */
	assert_int_equal(ctl("resume", ACTION), 0);
	for (int i = 0; i < 5; i++) {
		snprintf(id, sizeof id, "gp-%d", i);
		h_wait_hash_field(st.c, h_key(P, "decision:%s", id), "state", "done", H_WAIT_MS);
		assert_int_equal(h_count_calls(&st.target, id), 1);
	}
	assert_int_equal(h_count_calls(&st.target, "gp-soon"), 0);
	assert_int_equal(ctl("resume", ACTION), 0);	/* not paused: says so, exit 0 */
	assert_int_equal(ctl("pause", "no.such.action"), 1);	/* a typo is refused */
	h_daemon_down(&d);
}

struct lag_wait {
	const char *prefix;
	long long beats;	/* heartbeats to wait for, counted in P:clock */
	char first[32];
};

/* The consumer's heartbeat went on twice since `first`. */
static int
beats_passed(void *arg)
{
	struct lag_wait *w = arg;
	char *now = h_redis_str(st.c, "HGET %s last", h_key(w->prefix, "clock"));
	int ok = 0;

	if (now != NULL && w->first[0] == '\0')
		snprintf(w->first, sizeof w->first, "%s", now);
	else if (now != NULL && strcmp(now, w->first) != 0) {
		snprintf(w->first, sizeof w->first, "%s", now);
		ok = --w->beats <= 0;
	}
	free(now);
	return ok;
}

/* The whole queue: new entries stay unread (the group's lag), none called. */
static void
test_pause_queue(void **state)
{
	const char *P = "gq";
	(void)state;

	up(P, NULL, 0);
	assert_int_equal(ctl("pause", NULL), 0);
	assert_int_equal(h_daemon_wait_log(&d, "event=gate.pauses paused=*", H_WAIT_MS), 0);
	/* three heartbeats: the read that was out when the pause came ended
	 * (block_ms 1000), and no other went out */
	struct lag_wait w = {P, 3, ""};
	h_wait_for(beats_passed, &w, H_WAIT_MS, "three heartbeats");
	enqueue(P, "gq-1", h_now_ms() + 600000);
	enqueue(P, "gq-2", h_now_ms() + 600000);
	w = (struct lag_wait){P, 3, ""};
	h_wait_for(beats_passed, &w, H_WAIT_MS, "three more heartbeats");
	assert_int_equal(target_total(), 0);
	assert_int_equal(h_pending_count(st.c, h_key(P, "jobs"), H_GROUP), 0);
	assert_int_equal(ctl("resume", NULL), 0);
	h_wait_hash_field(st.c, h_key(P, "decision:gq-1"), "state", "done", H_WAIT_MS);
	h_wait_hash_field(st.c, h_key(P, "decision:gq-2"), "state", "done", H_WAIT_MS);
	h_daemon_down(&d);
}

/* ---- breaker ---- */

#define BRK_JOBS	6
#define BRK_OPEN_MS	1000

struct calls_wait {
	long long want;
};

static int
calls_reached(void *arg)
{
	const struct calls_wait *w = arg;

	return target_total() >= w->want;
}

static void
test_breaker(void **state)
{
	const char *P = "gb";
	char id[32];
	(void)state;

	/* max_attempts 10: without the breaker the 50-200 ms backoff spends
	 * them all within a few seconds and every job is dead */
	up(P, "breaker_failures = 3\nbreaker_open_ms = 1000\n", 10);
	h_post_ok(&st.target, "/_default", "{\"status\":503}");
	for (int i = 0; i < BRK_JOBS; i++) {
		snprintf(id, sizeof id, "gb-%d", i);
		enqueue(P, id, h_now_ms() + 600000);
	}
	long long t_open = h_now_ms();
	assert_int_equal(h_daemon_wait_log(&d, "event=breaker.open", H_WAIT_MS), 0);
	/* the first wave (calls out before three had failed) and then one
	 * probe per open interval: wait for four probes */
	long long opened = target_total();
	struct calls_wait w = {opened + 4};
	h_wait_for(calls_reached, &w, H_WAIT_MS, "four probes");
	long long t_probes = h_now_ms();
	json_t *reqs = h_get_ok(&st.target, "/_requests");
	size_t n = json_array_size(reqs);
	assert_true(opened <= BRK_JOBS && opened >= 3);
	/* each probe at least an open interval after the one before */
	for (size_t i = (size_t)opened + 1; i < n; i++) {
		long long a = json_integer_value(json_object_get(json_array_get(reqs, i - 1),
		    "arrival_ms"));
		long long b = json_integer_value(json_object_get(json_array_get(reqs, i),
		    "arrival_ms"));
		if (b - a < BRK_OPEN_MS - 100)
			fail_msg("calls %zu and %zu %lld ms apart with the circuit open (log %s)",
			    i - 1, i, b - a, d.log);
	}
	json_decref(reqs);
	/* no job dead; the attempts spent are the calls made, nothing more */
	assert_int_equal(h_redis_int(st.c, "XLEN %s", h_key(P, "dead")), 0);
	long long attempts = 0, before = target_total();
	for (int i = 0; i < BRK_JOBS; i++) {
		snprintf(id, sizeof id, "gb-%d", i);
		char *a = field(P, id, "attempts");
		attempts += a ? atoll(a) : 0;
		free(a);
	}
	long long total = target_total();
	/* a probe may be under way: its attempt is written before it arrives */
	if (attempts < before || attempts > total + 1)
		fail_msg("%lld attempts spent for %lld..%lld calls (log %s)", attempts, before,
		    total, d.log);
	printf("itest_gate: breaker: %lld calls before it opened, %lld in all after %lld ms of "
	    "503s; %lld attempts spent by %d jobs, none dead\n", opened, total,
	    h_now_ms() - t_open, attempts, BRK_JOBS);
	/* at most one more probe per interval since the four were counted */
	assert_true(total <= opened + 4 + (h_now_ms() - t_probes) / BRK_OPEN_MS + 1);
	/* the target recovers: the next probe closes it, every job is done */
	h_post_ok(&st.target, "/_default", "{\"status\":200}");
	for (int i = 0; i < BRK_JOBS; i++) {
		snprintf(id, sizeof id, "gb-%d", i);
		h_wait_hash_field(st.c, h_key(P, "decision:%s", id), "state", "done", H_WAIT_MS);
	}
	assert_int_equal(h_daemon_wait_log(&d, "event=breaker.closed", H_WAIT_MS), 0);
	assert_int_equal(h_redis_int(st.c, "XLEN %s", h_key(P, "dead")), 0);
	h_daemon_down(&d);
}

/* ---- limits ---- */

struct done_wait {
	const char *prefix, *pre;
	int n;
};

static int
all_done(void *arg)
{
	const struct done_wait *w = arg;
	char id[32];

	for (int i = 0; i < w->n; i++) {
		snprintf(id, sizeof id, "%s-%d", w->pre, i);
		char *s = field(w->prefix, id, "state");
		int ok = s != NULL && strcmp(s, "done") == 0;
		free(s);
		if (!ok)
			return 0;
	}
	return 1;
}

static void
test_max_in_flight(void **state)
{
	const char *P = "gm";
	char id[32];
	(void)state;

	up(P, "max_in_flight = 2\n", 0);
	h_post_ok(&st.target, "/_default", "{\"status\":200,\"delay_ms\":300}");
	for (int i = 0; i < 8; i++) {
		snprintf(id, sizeof id, "gm-%d", i);
		enqueue(P, id, h_now_ms() + 600000);
	}
	struct done_wait w = {P, "gm", 8};
	h_wait_for(all_done, &w, H_WAIT_MS, "8 jobs done");
	long long most = h_fake_stat(&st.target, NULL, "max_concurrent");
	printf("itest_gate: max_in_flight 2: at most %lld calls at once at the target\n", most);
	assert_int_equal(most, 2);	/* the limit, and reached */
	assert_int_equal(target_total(), 8);
	h_daemon_down(&d);
}

#define RATE		5
#define RATE_JOBS	15

static void
test_rate(void **state)
{
	const char *P = "gr";
	char id[32];
	(void)state;

	up(P, "rate_per_s = 5\n", 0);
	for (int i = 0; i < RATE_JOBS; i++) {
		snprintf(id, sizeof id, "gr-%d", i);
		enqueue(P, id, h_now_ms() + 600000);
	}
	struct done_wait w = {P, "gr", RATE_JOBS};
	h_wait_for(all_done, &w, H_WAIT_MS, "15 jobs done");
	json_t *reqs = h_get_ok(&st.target, "/_requests");
	size_t n = json_array_size(reqs);
	assert_int_equal(n, RATE_JOBS);
	/* arrivals are in order; rate + 1 of them span a second at least (less
	 * 100 ms for the call-step write's and the network's jitter under
	 * ASan; without the limit they come within a few ms) */
	long long worst = INT64_MAX;
	for (size_t i = RATE; i < n; i++) {
		long long a = json_integer_value(json_object_get(json_array_get(reqs, i - RATE),
		    "arrival_ms"));
		long long b = json_integer_value(json_object_get(json_array_get(reqs, i),
		    "arrival_ms"));
		if (b - a < worst)
			worst = b - a;
	}
	json_decref(reqs);
	printf("itest_gate: rate_per_s 5: %d calls spanned at least %lld ms\n", RATE + 1, worst);
	assert_true(worst >= 900);
	h_daemon_down(&d);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_pause_action, world_down),
		cmocka_unit_test_teardown(test_pause_queue, world_down),
		cmocka_unit_test_teardown(test_breaker, world_down),
		cmocka_unit_test_teardown(test_max_in_flight, world_down),
		cmocka_unit_test_teardown(test_rate, world_down),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
