/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_liveness: R11's liveness rule, as the scripts of lua/ carry it out
 * in a real redis-server -- heartbeat.lua (P:consumers, P:clock) and
 * claim.lua (own and auto). No daemon: the test calls the scripts itself,
 * with the arguments the daemon sends, so every case is exact: an owner
 * Redis saw alive keeps its entries however long their PEL idle time; a
 * silent owner's are taken only once Redis has served without a gap for
 * the owner's own claim_idle_ms; a claim Redis runs late after a freeze
 * takes nothing.
 */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "core/store.h"

#define JOBS "lv:jobs"
#define CONSUMERS "lv:consumers"
#define CLOCK "lv:clock"
#define GROUP "workers"
#define DAY_MS 86400000LL

static struct h_redis R;
static redisContext *C;

static int
setup(void **state)
{
	(void)state;
	if (h_redis_start(&R, 0) != 0)
		return -1;
	C = h_redis_connect(&R);
	return C ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	redisFree(C);
	C = NULL;
	h_redis_stop(&R);
	return 0;
}

/* Redis' own clock, in ms. */
static long long
redis_now(redisContext *c)
{
	redisReply *r = redisCommand(c, "TIME");

	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	long long ms = strtoll(r->element[0]->str, NULL, 10) * 1000 +
	    strtoll(r->element[1]->str, NULL, 10) / 1000;
	freeReplyObject(r);
	return ms;
}

/* Sends the call a on c as EVAL and returns its reply (caller frees). */
static redisReply *
eval(redisContext *c, const struct store_args *a)
{
	struct store_vec v;
	char err[256];

	if (store_args_vec(a, &v, err, sizeof err) < 0)
		fail_msg("refused: %s", err);
	redisReply *r = redisCommandArgv(c, v.argc, v.argv, v.len);
	store_vec_free(&v);
	assert_non_null(r);
	if (r->type == REDIS_REPLY_ERROR)
		fail_msg("script error: %s", r->str);
	return r;
}

static void
beat_args(struct store_args *a, const char *consumer, long claim_idle_ms, long heartbeat_ms)
{
	store_args_init(a, STORE_HEARTBEAT);
	store_arg(a, STORE_HEARTBEAT_CONSUMERS, CONSUMERS);
	store_arg(a, STORE_HEARTBEAT_CLOCK, CLOCK);
	store_arg(a, STORE_HEARTBEAT_CONSUMER, consumer);
	store_arg_ll(a, STORE_HEARTBEAT_CLAIM_IDLE_MS, claim_idle_ms);
	store_arg_ll(a, STORE_HEARTBEAT_HEARTBEAT_MS, heartbeat_ms);
}

/* heartbeat.lua for consumer; returns P:clock's `since`. */
static long long
beat(const char *consumer, long claim_idle_ms, long heartbeat_ms)
{
	struct store_args a;

	beat_args(&a, consumer, claim_idle_ms, heartbeat_ms);
	redisReply *r = eval(C, &a);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_int_equal(r->elements, 2);
	long long since = strtoll(r->element[1]->str, NULL, 10);
	freeReplyObject(r);
	return since;
}

static void
claim_args(struct store_args *a, const char *me, const char *mode, long claim_idle_ms)
{
	store_args_init(a, STORE_CLAIM);
	store_arg(a, STORE_CLAIM_JOBS, JOBS);
	store_arg(a, STORE_CLAIM_CONSUMERS, CONSUMERS);
	store_arg(a, STORE_CLAIM_CLOCK, CLOCK);
	store_arg(a, STORE_CLAIM_GROUP, GROUP);
	store_arg(a, STORE_CLAIM_CONSUMER, me);
	store_arg(a, STORE_CLAIM_MODE, mode);
	store_arg_ll(a, STORE_CLAIM_CLAIM_IDLE_MS, claim_idle_ms);
	store_arg_ll(a, STORE_CLAIM_HEARTBEAT_MS, claim_idle_ms / 3 > 0 ? claim_idle_ms / 3 : 1);
	store_arg_ll(a, STORE_CLAIM_FORGOTTEN_MS, 2 * (claim_idle_ms / 3));
	store_arg(a, STORE_CLAIM_START, "0");
	store_arg(a, STORE_CLAIM_COUNT, "64");
	store_arg(a, STORE_CLAIM_CALLS, "1");
}

/* claim.lua for me in mode; returns how many entries it took, and the
 * number it reported deleted in *deleted (may be NULL). */
static size_t
claim(const char *me, const char *mode, long claim_idle_ms, size_t *deleted)
{
	struct store_args a;

	claim_args(&a, me, mode, claim_idle_ms);
	redisReply *r = eval(C, &a);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_int_equal(r->elements, 3);
	size_t n = r->element[1]->elements;
	if (deleted)
		*deleted = r->element[2]->elements;
	freeReplyObject(r);
	return n;
}

/* n entries, read by owner (pending under it), their PEL idle time then
 * set to idle_ms -- as if the owner had not touched them for that long. */
static void
owner_reads(const char *owner, int n, long long idle_ms)
{
	for (int i = 0; i < n; i++)
		free(h_redis_str(C, "XADD " JOBS " * id lv-%d", i));
	freeReplyObject(redisCommand(C, "XGROUP CREATE " JOBS " " GROUP " 0 MKSTREAM"));
	redisReply *r = redisCommand(C, "XREADGROUP GROUP " GROUP " %s COUNT %d STREAMS " JOBS
	    " >", owner, n);
	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	const redisReply *entries = r->element[0]->element[1];
	for (size_t i = 0; i < entries->elements; i++)
		freeReplyObject(redisCommand(C, "XCLAIM " JOBS " " GROUP " %s 0 %s IDLE %lld JUSTID",
		    owner, entries->element[i]->element[0]->str, idle_ms));
	freeReplyObject(r);
}

/* P:consumers' field for a consumer last seen at `at` (Redis ms). */
static void
publish(const char *consumer, long long at, long claim_idle_ms, long heartbeat_ms)
{
	char v[96];

	snprintf(v, sizeof v, "%lld %ld %ld", at, claim_idle_ms, heartbeat_ms);
	assert_true(h_redis_int(C, "HSET " CONSUMERS " %s %s", consumer, v) >= 0);
}

/* P:clock: Redis has served without a gap since `since`, last at `last`. */
static void
clock_set(long long since, long long last)
{
	assert_true(h_redis_int(C, "HSET " CLOCK " since %lld last %lld", since, last) >= 0);
}

static long long
pending_of(const char *consumer)
{
	return h_pending_of(C, JOBS, GROUP, consumer);
}

/* ------------------------------------------------------------------ */

/* The heartbeat: a run goes on while heartbeats come within twice the
 * widest heartbeat_ms; a gap or a clock that went back starts a new one. */
static void
test_heartbeat_marks_gaps(void **state)
{
	(void)state;
	long long t0 = redis_now(C);
	long long since = beat("w1", 3000, 1000);

	assert_true(since >= t0);		/* no P:clock yet: a run starts now */
	char *v = h_hget(C, CONSUMERS, "w1");
	assert_non_null(v);
	long long at;
	long idle, hb;
	assert_int_equal(sscanf(v, "%lld %ld %ld", &at, &idle, &hb), 3);
	assert_true(at >= t0);
	assert_int_equal(idle, 3000);
	assert_int_equal(hb, 1000);
	free(v);

	/* within 2 x 1000 ms of the last: the run goes on */
	long long now = redis_now(C);
	clock_set(now - 60000, now - 1900);
	assert_int_equal(beat("w1", 3000, 1000), now - 60000);
	/* a gap of more than 2 x 1000 ms: a new run */
	now = redis_now(C);
	clock_set(now - 60000, now - 2500);
	assert_true(beat("w1", 3000, 1000) >= now);
	/* the widest published heartbeat_ms sets the gap: 5000 from w2 */
	publish("w2", now, 15000, 5000);
	now = redis_now(C);
	clock_set(now - 60000, now - 2500);
	assert_int_equal(beat("w1", 3000, 1000), now - 60000);
	/* a clock that went back */
	now = redis_now(C);
	clock_set(now - 60000, now + 5000);
	assert_true(beat("w1", 3000, 1000) >= now);
}

/* An owner Redis has seen alive keeps its entries, however long their PEL
 * idle time (a Redis freeze or an episode of refused writes ages every
 * lease); XAUTOCLAIM, which judged by that idle time, took them. */
static void
test_live_owner_keeps_entries(void **state)
{
	(void)state;
	owner_reads("w1", 5, 3600 * 1000);
	long long now = redis_now(C);
	clock_set(now - 600000, now);
	publish("w1", now - 500, 3000, 1000);	/* beat 500 ms ago */

	assert_int_equal(claim("w2", "auto", 3000, NULL), 0);
	assert_int_equal(pending_of("w1"), 5);
	assert_int_equal(pending_of("w2"), 0);
}

/* A silent owner's entries are taken once it has been silent for its
 * claim_idle_ms while Redis served; each with its delivery count + 1. */
static void
test_silent_owner_taken(void **state)
{
	(void)state;
	owner_reads("w1", 5, 0);
	long long now = redis_now(C);
	clock_set(now - 600000, now);
	publish("w1", now - 3100, 3000, 1000);

	assert_int_equal(claim("w2", "auto", 3000, NULL), 5);
	assert_int_equal(pending_of("w1"), 0);
	assert_int_equal(pending_of("w2"), 5);
	redisReply *r = redisCommand(C, "XPENDING " JOBS " " GROUP " - + 1");
	assert_non_null(r);
	assert_int_equal(r->element[0]->element[3]->integer, 2);
	freeReplyObject(r);
}

/* Redis has not served long enough: a restart, a freeze or an episode of
 * refused writes less than the owner's claim_idle_ms ago takes nothing,
 * however long the owner has been silent (it may have been waiting for
 * Redis too). */
static void
test_no_claim_until_redis_served_claim_idle(void **state)
{
	(void)state;
	owner_reads("w1", 3, 3600 * 1000);
	long long now = redis_now(C);
	publish("w1", now - 600000, 3000, 1000);

	clock_set(now - 2000, now);		/* serving for 2 s of the 3 needed */
	assert_int_equal(claim("w2", "auto", 3000, NULL), 0);
	assert_int_equal(pending_of("w1"), 3);

	now = redis_now(C);
	clock_set(now - 3100, now);
	assert_int_equal(claim("w2", "auto", 3000, NULL), 3);
}

/* A claim that Redis runs late -- sent before a freeze, run after it,
 * before any heartbeat has marked the gap -- takes nothing. */
static void
test_late_claim_after_gap_takes_nothing(void **state)
{
	(void)state;
	owner_reads("w1", 3, 3600 * 1000);
	long long now = redis_now(C);
	publish("w1", now - 600000, 3000, 1000);
	clock_set(now - 600000, now - 9000);	/* the last heartbeat 9 s ago */

	assert_int_equal(claim("w2", "auto", 3000, NULL), 0);
	assert_int_equal(pending_of("w1"), 3);
}

/* The same with a real freeze: a client sends the claim to a stopped
 * Redis and gives up; when Redis resumes the claim runs, finds the gap the
 * freeze made and takes nothing from an owner that was alive before it. */
static void
test_claim_sent_into_freeze(void **state)
{
	(void)state;
	owner_reads("w1", 3, 3600 * 1000);
	beat("w1", 1500, 500);
	long long now = redis_now(C);
	clock_set(now - 600000, now);

	redisContext *late = h_redis_connect(&R);
	assert_non_null(late);
	assert_int_equal(kill(R.pid, SIGSTOP), 0);
	struct store_args a;
	struct store_vec v;
	char err[256];
	claim_args(&a, "w2", "auto", 1500);
	assert_int_equal(store_args_vec(&a, &v, err, sizeof err), 0);
	assert_int_equal(redisAppendCommandArgv(late, v.argc, v.argv, v.len), REDIS_OK);
	store_vec_free(&v);
	int done = 0;
	while (!done)
		assert_int_equal(redisBufferWrite(late, &done), REDIS_OK);
	/* frozen for longer than claim_idle_ms: every lease and heartbeat ages */
	struct timespec ts = {2, 500 * 1000 * 1000};
	nanosleep(&ts, NULL);
	redisFree(late);	/* the client gave up */
	assert_int_equal(kill(R.pid, SIGCONT), 0);

	assert_int_equal(pending_of("w1"), 3);	/* answered after the late claim */
	assert_int_equal(pending_of("w2"), 0);
}

/* Each owner is judged by its own published claim_idle_ms: a rolling
 * reload that lowers it on the claimer takes nothing early. */
static void
test_owner_claim_idle_decides(void **state)
{
	(void)state;
	owner_reads("w1", 2, 3600 * 1000);
	long long now = redis_now(C);
	clock_set(now - 600000, now);
	publish("w1", now - 5000, 30000, 1000);	/* w1 still runs with 30 s */

	assert_int_equal(claim("w2", "auto", 3000, NULL), 0);
	publish("w1", now - 31000, 30000, 1000);
	assert_int_equal(claim("w2", "auto", 3000, NULL), 2);
}

/* An owner that never published a heartbeat (a worker of an older version)
 * is judged by the group's idle time for it. */
static void
test_unpublished_owner_by_group_idle(void **state)
{
	(void)state;
	owner_reads("ghost", 2, 0);
	long long now = redis_now(C);
	clock_set(now - 600000, now);
	publish("w2", now, 3000, 1000);		/* the claimer beats every second */

	assert_int_equal(claim("w2", "auto", 3000, NULL), 0);	/* it just read */
	struct timespec ts = {0, 20 * 1000 * 1000};	/* its group idle past 1 ms */
	nanosleep(&ts, NULL);
	assert_int_equal(claim("w2", "auto", 1, NULL), 2);
}

/* Own entries come back renewed (idle reset, R10), in order, and an entry
 * deleted from the stream while pending is acked and reported, in both
 * modes. */
static void
test_own_renewed_and_deleted(void **state)
{
	(void)state;
	size_t deleted = 0;

	owner_reads("w1", 4, 3600 * 1000);
	redisReply *r = redisCommand(C, "XPENDING " JOBS " " GROUP " - + 1");
	assert_non_null(r);
	char first[64];
	snprintf(first, sizeof first, "%s", r->element[0]->element[0]->str);
	freeReplyObject(r);
	assert_int_equal(h_redis_int(C, "XDEL " JOBS " %s", first), 1);

	assert_int_equal(claim("w1", "own", 3000, &deleted), 3);
	assert_int_equal(deleted, 1);
	assert_int_equal(pending_of("w1"), 3);
	r = redisCommand(C, "XPENDING " JOBS " " GROUP " IDLE 60000 - + 10");
	assert_non_null(r);
	assert_int_equal(r->elements, 0);	/* every one renewed */
	freeReplyObject(r);

	long long now = redis_now(C);
	clock_set(now - 600000, now);
	publish("w1", now - 600000, 3000, 1000);
	r = redisCommand(C, "XPENDING " JOBS " " GROUP " - + 1");
	snprintf(first, sizeof first, "%s", r->element[0]->element[0]->str);
	freeReplyObject(r);
	assert_int_equal(h_redis_int(C, "XDEL " JOBS " %s", first), 1);
	assert_int_equal(claim("w2", "auto", 3000, &deleted), 2);
	assert_int_equal(deleted, 1);
	assert_int_equal(h_pending_count(C, JOBS, GROUP), 2);
}

/* Entries pending under the claimer itself that it has not renewed for
 * twice its lease (it let them go without an XACK: a refused write, an
 * abandoned attempt) come back to it on a tick; those it renews do not. No
 * one else would take them from a live owner. */
static void
test_forgotten_own_taken_back(void **state)
{
	(void)state;
	owner_reads("w2", 3, 600000);
	long long now = redis_now(C);
	clock_set(now, now);		/* a gap just ended: no one else's entries */
	publish("w2", now, 3000, 1000);

	assert_int_equal(claim("w2", "auto", 3000, NULL), 3);
	assert_int_equal(claim("w2", "auto", 3000, NULL), 0);	/* renewed just now */
	assert_int_equal(pending_of("w2"), 3);
}

/* A consumer with nothing pending that has been silent for a day leaves
 * the group and P:consumers; one with entries pending never does. */
static void
test_silent_consumer_removed_after_a_day(void **state)
{
	(void)state;
	owner_reads("old-busy", 1, 0);
	freeReplyObject(redisCommand(C, "XGROUP CREATECONSUMER " JOBS " " GROUP " old-idle"));
	freeReplyObject(redisCommand(C, "XGROUP CREATECONSUMER " JOBS " " GROUP " recent"));
	long long now = redis_now(C);
	clock_set(now - 1000, now);		/* too short a run to claim */
	publish("old-busy", now - DAY_MS - 1000, 3000, 1000);
	publish("old-idle", now - DAY_MS - 1000, 3000, 1000);
	publish("recent", now - DAY_MS + 60000, 3000, 1000);

	assert_int_equal(claim("w2", "auto", 3000, NULL), 0);
	redisReply *r = redisCommand(C, "XINFO CONSUMERS " JOBS " " GROUP);
	assert_non_null(r);
	assert_int_equal(r->elements, 2);	/* old-busy and recent */
	freeReplyObject(r);
	char *v = h_hget(C, CONSUMERS, "old-idle");
	assert_null(v);
	v = h_hget(C, CONSUMERS, "old-busy");
	assert_non_null(v);
	free(v);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_heartbeat_marks_gaps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_live_owner_keeps_entries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_silent_owner_taken, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_claim_until_redis_served_claim_idle, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_late_claim_after_gap_takes_nothing, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_claim_sent_into_freeze, setup, teardown),
		cmocka_unit_test_setup_teardown(test_owner_claim_idle_decides, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unpublished_owner_by_group_idle, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_own_renewed_and_deleted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_forgotten_own_taken_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_silent_consumer_removed_after_a_day, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
