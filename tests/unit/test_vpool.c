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
#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "jose/b64url.h"
#include "core/record.h"
#include "testlib.h"
#include "worker/vpool.h"
#include "base/wtime.h"

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

/* ---- a key set (JWKS) on the workers: the record's kid picks the key ---- */

/* The JWK of the EC public key in tests/data/`pub` with `kid`. */
static json_t *
jwk_of(const char *pub, const char *kid)
{
	size_t len = 0;
	unsigned char *pem = read_whole(pub, &len), buf[32];
	BIO *bio = BIO_new_mem_buf(pem, (int)len);
	EVP_PKEY *pk = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
	const char *names[2] = {OSSL_PKEY_PARAM_EC_PUB_X, OSSL_PKEY_PARAM_EC_PUB_Y};
	char *xy[2];

	assert_non_null(pk);
	for (int i = 0; i < 2; i++) {
		BIGNUM *bn = NULL;
		assert_int_equal(EVP_PKEY_get_bn_param(pk, names[i], &bn), 1);
		assert_int_equal(BN_bn2binpad(bn, buf, 32), 32);
		BN_free(bn);
		xy[i] = b64url_encode(buf, 32);
		assert_non_null(xy[i]);
	}
	json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s}", "kty", "EC", "crv", "P-256", "x",
	    xy[0], "y", xy[1], "kid", kid);
	free(xy[0]);
	free(xy[1]);
	EVP_PKEY_free(pk);
	BIO_free(bio);
	free(pem);
	return j;
}

/* The set of the JWKs given (consumed; NULL ends them). */
static struct record_key *
set_of(json_t *first, ...)
{
	json_t *keys = json_array(), *k;
	va_list ap;
	char err[200];

	va_start(ap, first);
	for (k = first; k != NULL; k = va_arg(ap, json_t *))
		json_array_append_new(keys, k);
	va_end(ap);
	json_t *doc = json_pack("{s:o}", "keys", keys);
	char *text = json_dumps(doc, 0);
	struct record_key *set = record_key_new(JWA_ES256, (unsigned char *)text, strlen(text),
	    err, sizeof err);
	if (set == NULL)
		fail_msg("%s", err);
	free(text);
	json_decref(doc);
	return set;
}

/* Record i of a rotation: signed by test-es256 as kid "a" (i % 4 == 0),
 * by test-es256-other as "b" (1), by test-es256-other without a kid (2),
 * by test-es256 as "b" (3). */
static char *
rotation_record(int i, const unsigned char *other, size_t other_len)
{
	static const char *const kids[4] = {"a", "b", NULL, "b"};
	char id[32];

	snprintf(id, sizeof id, "rec-%d", i);
	json_t *c = json_pack("{s:s, s:s, s:s, s:s, s:{}, s:s, s:s, s:s}", "recordId", id,
	    "onBehalfOf", "operator:1", "action", "gate.open", "resource", "sites/a/gates/3",
	    "parameters", "basis", "role:x", "decidedAt", "2026-11-30T03:59:00Z",
	    "expiresAt", "2026-11-30T12:00:00Z");
	int by_other = i % 4 == 1 || i % 4 == 2;
	char *tok = record_sign(JWA_ES256, by_other ? other : es_priv,
	    by_other ? other_len : es_priv_len, kids[i % 4], c);

	json_decref(c);
	assert_non_null(tok);
	return tok;
}

struct set_sub {
	int index, calls;
	enum record_status status;
	char detail[200];
};

static void
on_set_done(void *arg, struct vpool_result *res)
{
	struct set_sub *s = arg;

	s->calls++;
	s->status = res->status;
	memcpy(s->detail, res->detail, sizeof s->detail);
	record_free(res->rec);
	free(res->owner);
	free(res->raw);
}

/* All records through two workers with `set` (let go right after the
 * submissions, as a reload does); each result is record_load's inline
 * with `same` (an equal set the test keeps). */
static void
expect_set_as_inline(char **recs, struct record_key *set, const struct record_key *same,
		     int want_ok)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct vpool *p = vpool_new(loop, 2);
	struct record_policy pol = es_policy(set), inline_pol = es_policy(same);
	static struct set_sub subs[N];
	int ok = 0;

	assert_non_null(p);
	pol.action_known = NULL;
	inline_pol.action_known = NULL;
	for (int i = 0; i < N; i++) {
		char id[32];
		snprintf(id, sizeof id, "rec-%d", i);
		subs[i] = (struct set_sub){.index = i};
		assert_non_null(vpool_submit(p, &pol, id, recs[i], now_ms, on_set_done, &subs[i]));
	}
	record_key_free(set);
	drain(loop, p);
	for (int i = 0; i < N; i++) {
		struct record *rec = NULL;
		char id[32], detail[200];
		snprintf(id, sizeof id, "rec-%d", i);
		enum record_status st = record_load(&inline_pol, id, recs[i], now_ms, &rec, NULL,
		    detail, sizeof detail);
		assert_int_equal(subs[i].calls, 1);
		assert_int_equal(subs[i].status, st);
		assert_string_equal(subs[i].detail, detail);
		ok += st == RECORD_OK;
		record_free(rec);
	}
	assert_int_equal(ok, want_ok);
	vpool_free(p);
	ev_loop_destroy(loop);
}

/* A rotation as the workers see it: with both keys, records of kid "a"
 * and kid "b" verify (each worker keeps a context per key) and the rest
 * are bad-signature; with "b" alone, the records of its key do, with kid
 * "b" or none, and kid "a" names no key. */
static void
test_key_set_rotation(void **state)
{
	size_t other_len = 0;
	unsigned char *other = read_whole("tests/data/test-es256-other.key", &other_len);
	char *recs[N];

	(void)state;
	assert_non_null(other);
	for (int i = 0; i < N; i++)
		recs[i] = rotation_record(i, other, other_len);
	struct record_key *both = set_of(jwk_of("tests/data/test-es256.pub", "a"),
	    jwk_of("tests/data/test-es256-other.pub", "b"), NULL);
	struct record_key *kept = record_key_ref(both);
	expect_set_as_inline(recs, both, kept, N / 2);	/* i % 4 == 0 and 1 */
	record_key_free(kept);
	struct record_key *only_b = set_of(jwk_of("tests/data/test-es256-other.pub", "b"), NULL);
	kept = record_key_ref(only_b);
	/* i % 4 == 1, and 2: one key serves a record without a kid */
	expect_set_as_inline(recs, only_b, kept, N / 2);
	record_key_free(kept);
	for (int i = 0; i < N; i++)
		free(recs[i]);
	free(other);
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
		cmocka_unit_test(test_key_set_rotation),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
