/* SPDX-License-Identifier: BSD-2-Clause */
/* test_vpool: records verified on worker threads (vpool.h) give what
 * record_load gives inline, and every ticket ends in exactly one callback
 * or one cancel: cancelled ones (queued, running, done, or in the batch
 * being handed out) are never delivered, and a pool freed with work queued
 * and running frees it all.
 * Run from the repository root: the test keys are read from tests/data/. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <ev.h>

#include "record.h"
#include "testlib.h"
#include "vpool.h"
#include "wtime.h"

#define N 200			/* submissions a test */
#define OWNER "owner@example"

static unsigned char *es_priv;
static size_t es_priv_len;
static struct record_key *es_pub;	/* the loop's key */
static char *raws[N];			/* ES256 records, some of them bad */
static int64_t now_ms;

/* What one submission got: callbacks, and the result's status and detail. */
struct sub {
	struct vpool *p;
	struct vpool_ticket *t;
	int calls, cancelled, index;
	enum record_status status;
	char detail[200];
	char *owner;
	struct sub *all;		/* cancel_rest: every submission */
};

/* Record i: valid, but every fifth has a broken signature, every seventh
 * a bad time window, every eleventh no [action] (checked on the loop). */
static char *
make_record(int i)
{
	char id[32];
	snprintf(id, sizeof id, "rec-%d", i);
	json_t *c = json_pack("{s:s, s:s, s:s, s:s, s:{}, s:s, s:s, s:s, s:s}",
	    "recordId", id, "onBehalfOf", "operator:1",
	    "action", i % 11 == 0 ? "gate.unknown" : "gate.open",
	    "resource", "sites/a/gates/3", "parameters", "basis", "role:x",
	    "decidedAt", "2026-11-30T03:59:00Z",
	    "expiresAt", i % 7 == 0 ? "2026-11-30T03:58:00Z" : "2026-11-30T12:00:00Z",
	    "notifyOnDenial", OWNER);
	char *tok = c ? record_sign(JWA_ES256, es_priv, es_priv_len, NULL, c) : NULL;

	json_decref(c);
	assert_non_null(tok);
	if (i % 5 == 0)
		tok[strlen(tok) - 2] = tok[strlen(tok) - 2] == 'A' ? 'B' : 'A';
	return tok;
}

static int
setup(void **state)
{
	size_t pub_len = 0;
	unsigned char *pub = read_whole("tests/data/test-es256.pub", &pub_len);
	char err[160];

	(void)state;
	es_priv = read_whole("tests/data/test-es256.key", &es_priv_len);
	es_pub = pub ? record_key_new(JWA_ES256, pub, pub_len, err, sizeof err) : NULL;
	free(pub);
	if (es_priv == NULL || es_pub == NULL)
		return -1;
	for (int i = 0; i < N; i++)
		raws[i] = make_record(i);
	assert_int_equal(wtime_parse_rfc3339("2026-11-30T04:00:00Z", &now_ms), 0);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	for (int i = 0; i < N; i++)
		free(raws[i]);
	free(es_priv);
	record_key_free(es_pub);
	return 0;
}

static int
gate_open_only(void *ctx, const char *action)
{
	(void)ctx;
	return strcmp(action, "gate.open") == 0;
}

static struct record_policy
es_policy(const struct record_key *key)
{
	struct record_policy pol = {
		.signature_required = 1, .algorithm = JWA_ES256, .parsed_key = key,
		.max_window_ms = 7 * 86400 * 1000LL, .clock_skew_ms = 60000, .max_bytes = 16384,
		.action_known = gate_open_only,
	};
	return pol;
}

static void
on_done(void *arg, struct vpool_result *res)
{
	struct sub *s = arg;
	struct record_policy pol = es_policy(es_pub);

	s->calls++;
	assert_false(s->cancelled);
	s->t = NULL;
	s->status = res->status;
	if (s->status == RECORD_OK)	/* as ejob does: the last rule on the loop */
		s->status = record_check_action(&pol, &res->rec, &res->owner, res->detail,
		    sizeof res->detail);
	memcpy(s->detail, res->detail, sizeof s->detail);
	assert_non_null(res->raw);
	assert_string_equal(res->raw, raws[s->index]);
	s->owner = res->owner;
	record_free(res->rec);
	free(res->raw);
}

static void
timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop, (void)w, (void)revents;
	fail_msg("results did not arrive in 20 s");
}

/* Runs the loop until the pool holds no ticket. */
static void
drain(struct ev_loop *loop, struct vpool *p)
{
	ev_timer guard;

	ev_timer_init(&guard, timeout_cb, 20.0, 0.0);
	ev_timer_start(loop, &guard);
	while (vpool_pending(p) > 0)
		ev_run(loop, EVRUN_ONCE);
	ev_timer_stop(loop, &guard);
}

static void
submit_each(struct vpool *p, struct sub *subs, const struct record_key *key, vpool_done_cb *cb)
{
	struct record_policy pol = es_policy(key);

	for (int i = 0; i < N; i++) {
		char id[32];
		snprintf(id, sizeof id, "rec-%d", i);
		subs[i] = (struct sub){.p = p, .index = i, .all = subs};
		subs[i].t = vpool_submit(p, &pol, id, raws[i], now_ms, cb, &subs[i]);
		assert_non_null(subs[i].t);
	}
}

static void
submit_all(struct vpool *p, struct sub *subs, const struct record_key *key)
{
	submit_each(p, subs, key, on_done);
}

/* Each result is record_load's inline: status, detail and owner. */
static void
expect_inline(const struct sub *s)
{
	struct record_policy pol = es_policy(es_pub);
	struct record *rec = NULL;
	char id[32], detail[200], *owner = NULL;

	snprintf(id, sizeof id, "rec-%d", s->index);
	enum record_status st = record_load(&pol, id, raws[s->index], now_ms, &rec, &owner,
	    detail, sizeof detail);
	assert_int_equal(s->calls, 1);
	assert_int_equal(s->status, st);
	assert_string_equal(s->detail, detail);
	if (owner == NULL)
		assert_null(s->owner);
	else
		assert_string_equal(s->owner, owner);
	record_free(rec);
	free(owner);
}

/* Every record through a pool of `nthreads` with `key`, which is let go
 * right after the submissions when `let_go` (a reload): each result is
 * record_load's inline, and every kind of answer is among them. */
static void
expect_all_as_inline(unsigned nthreads, struct record_key *key, int let_go)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct vpool *p = vpool_new(loop, nthreads);
	static struct sub subs[N];
	int kinds[4] = {0};

	assert_non_null(p);
	submit_all(p, subs, key);
	if (let_go)
		record_key_free(key);
	drain(loop, p);
	for (int i = 0; i < N; i++) {
		expect_inline(&subs[i]);
		kinds[subs[i].status]++;
		free(subs[i].owner);
	}
	assert_true(kinds[RECORD_OK] > 0 && kinds[RECORD_BAD_SIGNATURE] > 0 &&
	    kinds[RECORD_INVALID] > 0 && kinds[RECORD_UNKNOWN_ACTION] > 0);
	vpool_free(p);
	ev_loop_destroy(loop);
}

static void
test_results_as_inline(void **state)
{
	(void)state;
	expect_all_as_inline(2, es_pub, 0);
}

/* The loop's key is let go (a reload) while the workers still use it. */
static void
test_key_outlives_its_owner(void **state)
{
	size_t pub_len = 0;
	unsigned char *pub = read_whole("tests/data/test-es256.pub", &pub_len);
	char err[160];
	struct record_key *k = record_key_new(JWA_ES256, pub, pub_len, err, sizeof err);

	(void)state;
	free(pub);
	assert_non_null(k);
	expect_all_as_inline(1, k, 1);
}

static void
cancel(struct sub *s)
{
	vpool_cancel(s->p, s->t);
	s->t = NULL;
	s->cancelled = 1;
}

/* Cancelled at once (mostly queued), after a while (running or done):
 * never delivered; the rest exactly once. */
static void
test_cancelled_never_delivered(void **state)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct vpool *p = vpool_new(loop, 2);
	static struct sub subs[N];

	(void)state;
	assert_non_null(p);
	submit_all(p, subs, es_pub);
	for (int i = 0; i < N; i += 3)
		cancel(&subs[i]);
	struct timespec ms5 = {0, 5 * 1000 * 1000};
	nanosleep(&ms5, NULL);	/* some of the next are running or done by now */
	for (int i = 1; i < N; i += 3)
		cancel(&subs[i]);
	drain(loop, p);
	for (int i = 0; i < N; i++) {
		assert_int_equal(subs[i].calls, subs[i].cancelled ? 0 : 1);
		free(subs[i].owner);
	}
	vpool_free(p);
	ev_loop_destroy(loop);
}

/* The first callback cancels every other ticket still out, most of them in
 * the batch being handed out: none of those is delivered. */
static void
cancel_rest(void *arg, struct vpool_result *res)
{
	struct sub *s = arg;

	on_done(arg, res);
	for (int i = 0; i < N; i++)
		if (s->all[i].t != NULL)
			cancel(&s->all[i]);
}

static void
test_cancel_from_a_callback(void **state)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct vpool *p = vpool_new(loop, 2);
	static struct sub subs[N];
	struct timespec ms50 = {0, 50 * 1000 * 1000};

	(void)state;
	assert_non_null(p);
	submit_each(p, subs, es_pub, cancel_rest);
	nanosleep(&ms50, NULL);	/* a batch of results is waiting */
	drain(loop, p);
	int delivered = 0;
	for (int i = 0; i < N; i++) {
		assert_int_equal(subs[i].calls, subs[i].cancelled ? 0 : 1);
		delivered += subs[i].calls;
		free(subs[i].owner);
	}
	assert_int_equal(delivered, 1);
	vpool_free(p);
	ev_loop_destroy(loop);
}

/* Freed with work queued, running and done: no callback, nothing leaks
 * (ASan), the threads are joined. */
static void
test_free_with_work(void **state)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	static struct sub subs[N];

	(void)state;
	for (int round = 0; round < 3; round++) {
		struct vpool *p = vpool_new(loop, (unsigned)round + 1);
		assert_non_null(p);
		submit_all(p, subs, es_pub);
		struct timespec wait = {0, round * 2 * 1000 * 1000};
		nanosleep(&wait, NULL);
		vpool_free(p);
		for (int i = 0; i < N; i++)
			assert_int_equal(subs[i].calls, 0);
	}
	vpool_free(NULL);
	ev_loop_destroy(loop);
}

/* HS256 and a policy without a parsed key stay inline; a bad thread count
 * makes no pool. */
static void
test_refused(void **state)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct vpool *p = vpool_new(loop, 1);
	struct record_policy pol = es_policy(es_pub);
	struct sub s = {0};

	(void)state;
	assert_null(vpool_new(loop, 0));
	assert_null(vpool_new(loop, VPOOL_THREADS_MAX + 1));
	assert_non_null(p);
	pol.parsed_key = NULL;
	assert_null(vpool_submit(p, &pol, "rec-1", raws[1], now_ms, on_done, &s));
	pol = es_policy(es_pub);
	pol.algorithm = JWA_HS256;
	assert_null(vpool_submit(p, &pol, "rec-1", raws[1], now_ms, on_done, &s));
	assert_int_equal(vpool_pending(p), 0);
	vpool_free(p);
	ev_loop_destroy(loop);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_results_as_inline),
		cmocka_unit_test(test_key_outlives_its_owner),
		cmocka_unit_test(test_cancelled_never_delivered),
		cmocka_unit_test(test_cancel_from_a_callback),
		cmocka_unit_test(test_free_with_work),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
