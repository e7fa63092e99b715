/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_status: what `warrantctl status`, `warrantctl metrics` and the
 * worker's log tell an operator is true (issue 38 items 2 and 6), against a
 * real redis-server and a real worker.
 *
 * The lag after a restart: Redis 7.0 does not restore a group's
 * entries-read counter from the AOF (redis/redis#10569), so its own `lag`
 * names entries delivered long ago. warrantd counts from ids: a restart on
 * the same AOF leaves the lag 0, the metric 0 and the stall check quiet;
 * three entries queued while the queue is paused are 3, not 6.
 */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "harness.h"

#define RUN_MS	30000

static struct h_redis R;
static struct h_fake T;
static struct h_daemon D;
static redisContext *C;

static int
teardown(void **state)
{
	(void)state;
	h_world_down(&D, 1, &C, &R, &T, (struct h_fake *)NULL);
	return 0;
}

/* warrantctl -c the daemon's config ARGS...: its exit, its output in *out. */
static int
ctl(char **out, const char *a1, const char *a2, const char *a3)
{
	char *argv[] = {(char *)h_bin("warrantctl"), "-c", D.ini, (char *)a1, (char *)a2,
	    (char *)a3, NULL};
	int rc = h_run(argv, RUN_MS, out);

	printf("itest_status: warrantctl %s %s: exit %d\n%s", a1, a2 ? a2 : "", rc, *out);
	return rc;
}

static json_t *
status_json(void)
{
	char *out;
	json_error_t e;

	assert_int_equal(ctl(&out, "status", "--json", NULL), 0);
	json_t *st = json_loads(out, 0, &e);
	if (st == NULL)
		fail_msg("status --json is not JSON: %s\n%s", e.text, out);
	free(out);
	return st;
}

static long long
lag_of(const json_t *st)
{
	const json_t *v = json_object_get(st, "lag");

	if (!json_is_integer(v))
		fail_msg("status --json: lag is not a number");
	return json_integer_value(v);
}

static void
decide(const char *id)
{
	long long now = h_now_ms();
	char *json = h_record_json(id, "gate.open", "g-1", now, now + 3600000, 0, NULL);

	assert_non_null(json);
	assert_int_equal(h_decide(C, H_PREFIX, id, json, 1), 0);
	free(json);
}

struct state_wait {
	const char *id, *state;
};

static int
has_state(void *arg)
{
	const struct state_wait *w = arg;
	char *s = h_hget(C, h_key(H_PREFIX, "decision:%s", w->id), "state");
	int ok = s != NULL && strcmp(s, w->state) == 0;

	free(s);
	return ok;
}

static void
wait_state(const char *id, const char *state)
{
	struct state_wait w = {id, state};

	if (h_wait_until(has_state, &w, H_WAIT_MS) != 0)
		fail_msg("%s: never %s (log %s)", id, state, D.log);
}

/* How many times the daemon's log holds needle. */
static int
log_count(const char *needle)
{
	char *text = h_read_file(D.log);
	int n = 0;

	for (const char *p = text; p != NULL && (p = strstr(p, needle)) != NULL; p++)
		n++;
	free(text);
	return n;
}

struct count_wait {
	const char *needle;
	int above;
};

static int
log_grew(void *arg)
{
	const struct count_wait *w = arg;
	return log_count(w->needle) > w->above;
}

/* Waits for one more line with needle than the log held before. */
static void
wait_one_more(const char *needle, int before)
{
	struct count_wait w = {needle, before};

	if (h_wait_until(log_grew, &w, H_WAIT_MS) != 0)
		fail_msg("no new \"%s\" in %s", needle, D.log);
}

static void
test_lag_after_redis_restart(void **state)
{
	char *out;
	(void)state;

	assert_int_equal(h_redis_start(&R, 1), 0);
	assert_int_equal(h_fake_start(&T, "fake_target", NULL), 0);
	assert_non_null(C = h_redis_connect(&R));
	/* block_ms 100, heartbeat 300: the stall check looks after 600 ms */
	struct h_daemon_opts o = {.redis_sock = R.sock, .target_url = T.url, .block_ms = 100,
	    .heartbeat_ms = 300};
	char *ini = h_daemon_ini(&o);
	assert_non_null(ini);
	assert_int_equal(h_daemon_start(&D, ini), 0);
	free(ini);
	decide("lag-1");
	decide("lag-2");
	decide("lag-3");
	wait_state("lag-1", "done");
	wait_state("lag-2", "done");
	wait_state("lag-3", "done");
	json_t *st = status_json();
	assert_int_equal(lag_of(st), 0);
	json_decref(st);

	/* SIGTERM, then the same dir and AOF again */
	h_redis_stop(&R);
	redisFree(C);
	assert_int_equal(h_redis_restart(&R), 0);
	assert_non_null(C = h_redis_connect(&R));
	st = status_json();
	printf("itest_status: after the restart Redis says lag %lld, warrantd %lld\n",
	    json_integer_value(json_object_get(st, "redisLag")), lag_of(st));
	assert_int_equal(lag_of(st), 0);
	assert_null(json_object_get(st, "lagAtLeast"));
	json_decref(st);
	assert_int_equal(ctl(&out, "metrics", NULL, NULL), 0);
	assert_non_null(strstr(out, "\nwarrantd_queue_lag{stream=\"" H_JOBS "\",group=\""
	    H_GROUP "\"} 0\n"));
	free(out);

	/* A paused queue reads nothing: the stall check runs, and finds
	 * nothing undelivered. */
	int checks = log_count("event=consumer.stall_check");
	assert_int_equal(ctl(&out, "pause", NULL, NULL), 0);
	free(out);
	wait_one_more("event=consumer.stall_check", checks);
	assert_int_equal(log_count("event=consumer.stalled"), 0);

	/* three real unread entries are 3 */
	int stalls = log_count("event=consumer.stalled stream=" H_JOBS " lag=3 ");
	decide("lag-4");
	decide("lag-5");
	decide("lag-6");
	st = status_json();
	assert_int_equal(lag_of(st), 3);
	json_decref(st);
	assert_int_equal(ctl(&out, "metrics", NULL, NULL), 0);
	assert_non_null(strstr(out, "\nwarrantd_queue_lag{stream=\"" H_JOBS "\",group=\""
	    H_GROUP "\"} 3\n"));
	free(out);
	wait_one_more("event=consumer.stalled stream=" H_JOBS " lag=3 ", stalls);
	assert_int_equal(ctl(&out, "resume", NULL, NULL), 0);
	free(out);
	wait_state("lag-6", "done");
	assert_true(h_daemon_stop_clean(&D));
}

static long long
pending_count(void)
{
	return h_pending_count(C, H_JOBS, H_GROUP);
}

static int
pending_is_4(void *arg)
{
	(void)arg;
	return pending_count() == 4;
}

/* Issue 38 item 6: what a pause holds says so -- in `jobs` and `inspect`
 * (held=paused beside state=queued) and in the log (held_full, not
 * no-token); with every action auth = none the token state is none. */
static void
test_states_that_are_what_they_look_like(void **state)
{
	char *out, section[128];
	(void)state;

	int port = h_free_port();
	assert_true(port > 0);
	snprintf(section, sizeof section, "[metrics]\nlisten = 127.0.0.1:%d\n", port);
	assert_int_equal(h_redis_start(&R, 0), 0);
	assert_int_equal(h_fake_start(&T, "fake_target", NULL), 0);
	assert_non_null(C = h_redis_connect(&R));
	struct h_daemon_opts o = {.redis_sock = R.sock, .target_url = T.url, .block_ms = 100,
	    .heartbeat_ms = 300, .daemon_extra = "max_in_flight = 8\n", .sections = section};
	char *ini = h_daemon_ini(&o);
	assert_non_null(ini);
	assert_int_equal(h_daemon_start(&D, ini), 0);
	free(ini);
	assert_int_equal(ctl(&out, "pause", "gate.open", NULL), 0);
	free(out);
	assert_int_equal(h_daemon_wait_log(&D, "event=gate.pauses", H_WAIT_MS), 0);
	decide("held-1");
	decide("held-2");
	decide("held-3");
	decide("held-4");
	assert_int_equal(h_wait_until(pending_is_4, NULL, H_WAIT_MS), 0);

	assert_int_equal(ctl(&out, "jobs", "--json", NULL), 0);
	json_t *list = json_loads(out, 0, NULL);
	free(out);
	assert_int_equal(json_array_size(list), 4);
	for (size_t i = 0; i < 4; i++) {
		const json_t *j = json_array_get(list, i);
		assert_string_equal(json_string_value(json_object_get(j, "state")), "queued");
		assert_string_equal(json_string_value(json_object_get(j, "held")), "paused");
	}
	json_decref(list);
	assert_int_equal(ctl(&out, "inspect", "held-1", NULL), 0);
	assert_non_null(strstr(out, "\nheld:"));
	free(out);

	/* R6's share of max_in_flight held: the log says so, and why (issue
	 * 38 item 8: further entries of the paused action are parked) */
	assert_int_equal(h_daemon_wait_log(&D, "event=consumer.held_full held=4 share=4",
	    H_WAIT_MS), 0);
	assert_false(h_daemon_log_has(&D, "reason=no-token"));

	/* auth = none: no token, and it says none */
	json_t *st = status_json();
	json_t *w1 = json_object_get(json_object_get(st, "consumers"), "w1");
	assert_string_equal(json_string_value(json_object_get(w1, "tokenState")), "none");
	json_decref(st);
	char url[64];
	long code = 0;
	snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", port);
	char *text = h_http("GET", url, NULL, &code);
	assert_int_equal(code, 200);
	assert_non_null(strstr(text, "\nwarrantd_token_state{state=\"none\"} 1\n"));
	free(text);

	assert_int_equal(ctl(&out, "resume", "gate.open", NULL), 0);
	free(out);
	wait_state("held-4", "done");
	assert_true(h_daemon_stop_clean(&D));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_lag_after_redis_restart, teardown),
		cmocka_unit_test_teardown(test_states_that_are_what_they_look_like, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
