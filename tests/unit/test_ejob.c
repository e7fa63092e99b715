/* SPDX-License-Identifier: BSD-2-Clause */
/* test_ejob: the jobs in hand (src/worker/ejob.c) driven through fake operations
 * (ejob.h's struct ejob_ops): every load, verification, write, call, timer
 * and cancel a job asks for is written to a trace and held until the test
 * answers it, with the clock the test sets. Each test asserts the exact
 * sequence of operations (warrantd(7) R1, R4, R8, R9, R10, R13, R15, R17). */
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conf/config.h"
#include "base/counters.h"
#include "worker/ejob.h"
#include "core/gate.h"
#include "base/log.h"
#include "core/store.h"
#include "core/trace.h"

#define NOW	INT64_C(1800000000000)	/* 2027-01-15T08:00:00Z */
#define WINDOW	INT64_C(600000)		/* the records' deadline: 10 min after NOW */

/* ------------------------------------------------------------------ */
/* the fake world                                                       */

enum pkind { P_TIMER, P_LOAD, P_VERIFY, P_WRITE, P_CALL, P_EXCHANGE, P_MOVE };

/* One operation a job started and the test has not answered yet. */
struct pend {
	enum pkind kind;
	int live;
	void *arg;
	ejob_timer_cb *timer;
	ejob_load_cb *load;
	ejob_verify_cb *verify;
	ejob_write_cb *write;
	http_done_cb *call;
	ejob_moved_cb *moved;
	int64_t delay_ms;
};

#define NPEND 64

static struct {
	struct pend p[NPEND];
	int n;
	char trace[4096];
	int64_t now;
	int token_ok;		/* the OAuth action's token is there */
	int releases;
	struct store_transition last;	/* the last write's scalars */
	int last_has_hash;
	char outcomes[256];	/* "action:state:reason " for each outcome told */
	char call_traceparent[128];	/* the last call's traceparent header, "" none */
	char last_traceparent[128];	/* the last write's traceparent, "" none */
} w;

static void
trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
trace(const char *fmt, ...)
{
	size_t at = strlen(w.trace);
	va_list ap;

	if (at)
		w.trace[at++] = ' ';
	va_start(ap, fmt);
	vsnprintf(w.trace + at, sizeof w.trace - at, fmt, ap);
	va_end(ap);
}

static struct pend *
pend_new(enum pkind kind, void *arg)
{
	assert_true(w.n < NPEND);
	struct pend *p = &w.p[w.n++];
	memset(p, 0, sizeof *p);
	p->kind = kind;
	p->live = 1;
	p->arg = arg;
	return p;
}

/* The live operation of that kind started last (for `arg`, or any). */
static struct pend *
pending(enum pkind kind, void *arg)
{
	for (int i = w.n - 1; i >= 0; i--)
		if (w.p[i].live && w.p[i].kind == kind && (arg == NULL || w.p[i].arg == arg))
			return &w.p[i];
	fail_msg("no pending operation of kind %d; trace: %s", (int)kind, w.trace);
	return NULL;
}

static int
live_count(void)
{
	int n = 0;

	for (int i = 0; i < w.n; i++)
		n += w.p[i].live;
	return n;
}

static int64_t
f_now(void *ctx)
{
	(void)ctx;
	return w.now;
}

static void *
f_timer(void *ctx, int64_t delay_ms, ejob_timer_cb *cb, void *arg)
{
	(void)ctx;
	struct pend *p = pend_new(P_TIMER, arg);
	p->timer = cb;
	p->delay_ms = delay_ms;
	trace("timer");
	return p;
}

static int
f_load(void *ctx, const char *hash_key, const char *final_key, ejob_load_cb *cb, void *arg)
{
	(void)ctx;
	assert_string_equal(final_key, "P:final:gate-14");	/* R4's mark, read with it */
	struct pend *p = pend_new(P_LOAD, arg);
	p->load = cb;
	trace("load(%s)", hash_key);
	return 0;
}

static int
f_verify(void *ctx, const char *id, const char *raw, int64_t now_ms, struct ejob_verified *now,
	 ejob_verify_cb *cb, void *arg, void **h)
{
	(void)ctx, (void)raw, (void)now, (void)now_ms;
	struct pend *p = pend_new(P_VERIFY, arg);
	p->verify = cb;
	*h = p;
	trace("verify(%s)", id);
	return 1;
}

static int
f_write(void *ctx, const struct store_transition *t, int wait_replicas, ejob_write_cb *cb,
	void *arg)
{
	(void)ctx;
	struct pend *p = pend_new(P_WRITE, arg);
	char flags[128] = "";

	p->write = cb;
	w.last = *t;
	w.last_has_hash = t->hash_key != NULL;
	snprintf(w.last_traceparent, sizeof w.last_traceparent, "%s",
	    t->traceparent ? t->traceparent : "");
	snprintf(flags, sizeof flags, "%s%s%s%s%s%s%s", t->incr_attempts ? ",+1" : "",
	    t->require_owner ? ",own" : "", t->ack ? ",ack" : "",
	    t->keep_unpending ? ",keep" : "", t->skip_lease ? ",nolease" : "",
	    t->hash_key ? "" : ",nohash", t->dead_reason[0] ? ",dead" : "");
	if (wait_replicas > 0)	/* R19: the WAIT that follows it */
		snprintf(flags + strlen(flags), sizeof flags - strlen(flags), ",wait%d",
		    wait_replicas);
	trace("write(%s,f=%lld%s)", t->state[0] ? t->state : "-", t->fence_attempts, flags);
	return 0;
}

static int
f_call(void *ctx, const struct http_request *req, http_done_cb *cb, void *arg, void **h)
{
	(void)ctx;
	struct pend *p = pend_new(P_CALL, arg);
	w.call_traceparent[0] = '\0';
	for (const char *const *hd = req->headers; hd && *hd; hd++)
		if (strncmp(*hd, "traceparent: ", 13) == 0)
			snprintf(w.call_traceparent, sizeof w.call_traceparent, "%s", *hd + 13);
	p->call = cb;
	*h = p;
	trace("call");
	return 0;
}

static void *
f_exchange(void *ctx, const struct ejob_exchange_req *rq, uint64_t *gen, oauth_exchange_cb *cb,
	   void *arg)
{
	(void)ctx, (void)rq, (void)gen, (void)cb, (void)arg;
	trace("exchange");
	return NULL;
}

static int
f_redispatch(void *ctx, const char *stream_id, long long expected, ejob_moved_cb *cb, void *arg)
{
	(void)ctx, (void)stream_id;
	struct pend *p = pend_new(P_MOVE, arg);
	p->moved = cb;
	trace("redispatch(%lld)", expected);
	return 0;
}

static int
f_handback(void *ctx, const char *hash_key, const char *stream_id, const char *record_id,
	   ejob_moved_cb *cb, void *arg)
{
	(void)ctx, (void)hash_key, (void)stream_id, (void)record_id;
	struct pend *p = pend_new(P_MOVE, arg);
	p->moved = cb;
	trace("handback");
	return 0;
}

static int
f_reclaim(void *ctx, const char *stream_id, ejob_moved_cb *cb, void *arg)
{
	(void)ctx;
	struct pend *p = pend_new(P_MOVE, arg);
	p->moved = cb;
	trace("reclaim(%s)", stream_id);
	return 0;
}

static void
f_cancel(void *ctx, enum ejob_op kind, void *h)
{
	static const char *const names[] = {"timer", "verify", "call", "exchange"};
	struct pend *p = h;
	(void)ctx;

	assert_true(p->live);
	p->live = 0;
	trace("cancel:%s", names[kind]);
}

static unsigned
f_auth(void *ctx, const char *action)
{
	(void)ctx;
	return action != NULL && strcmp(action, "gate.oauth") == 0 ? EJOB_AUTH_TOKEN : 0;
}

static const char *
f_bearer(void *ctx, const char *action, long timeout_ms, uint64_t *gen)
{
	(void)ctx, (void)timeout_ms;
	*gen = 7;
	if (action == NULL || strcmp(action, "gate.oauth") != 0)
		return NULL;
	return w.token_ok ? "tok" : NULL;
}

static void
f_token_verdict(void *ctx, const char *action, uint64_t gen, int accepted)
{
	(void)ctx, (void)action;
	assert_int_equal(gen, 7);
	if (!accepted)
		w.token_ok = 0;	/* refused: dropped, a refresh under way */
	trace("token:%s", accepted ? "accepted" : "refused");
}

static void
f_notified(void *ctx, const char *id, const char *owner, const char *kind, const char *reason,
	   const char *on_behalf_of, const char *action, const char *resource, const char *at)
{
	(void)ctx, (void)id, (void)owner, (void)reason, (void)on_behalf_of, (void)action;
	(void)resource, (void)at;
	trace("notified(%s)", kind);
}

static void
f_call_done(void *ctx, const char *action, long status, long long duration_ms,
	    long long queue_delay_ms)
{
	(void)ctx, (void)action, (void)status, (void)duration_ms, (void)queue_delay_ms;
}

static void
f_outcome(void *ctx, const char *action, const char *state, const char *reason)
{
	size_t at = strlen(w.outcomes);

	(void)ctx;
	snprintf(w.outcomes + at, sizeof w.outcomes - at, "%s:%s:%s ", action, state, reason);
}

static void
f_released(void *ctx)
{
	(void)ctx;
	w.releases++;
	trace("released");
}

static const struct ejob_ops fake_ops = {
	.now_ms = f_now, .timer = f_timer, .load = f_load, .verify = f_verify,
	.write = f_write, .call = f_call, .exchange = f_exchange,
	.redispatch = f_redispatch, .handback = f_handback, .reclaim = f_reclaim,
	.cancel = f_cancel,
	.auth = f_auth, .bearer = f_bearer, .token_verdict = f_token_verdict, .notified = f_notified,
	.call_done = f_call_done, .outcome = f_outcome, .released = f_released,
};

/* ------------------------------------------------------------------ */
/* answering                                                            */

static void
answer_load(struct pend *p, const char *attempts)
{
	struct ejob_loaded r = {.ok = 1, .exists = 1, .state = "queued",
	    .attempts = attempts, .record = "raw bytes"};

	p->live = 0;
	p->load(p->arg, &r);
}

/* R4: the record's P:final mark is there (its hash says `queued`). */
static void
answer_load_final(struct pend *p, const char *final)
{
	struct ejob_loaded r = {.ok = 1, .exists = 1, .state = "queued", .record = "raw bytes",
	    .final = final};

	p->live = 0;
	p->load(p->arg, &r);
}

static void
answer_load_error(struct pend *p, const char *error)
{
	struct ejob_loaded r = {.ok = 0, .error = error};

	p->live = 0;
	p->load(p->arg, &r);
}

/* A record as record_load makes one: its strings in the block of its body. */
static struct record *
make_record(const char *id, const char *action)
{
	static const char body[] = "{\"id\":\"x\"}";
	size_t al = strlen(action) + 1, bl = sizeof body;
	struct record *r = calloc(1, sizeof *r);
	char *b = malloc(bl + al + sizeof "alice" + sizeof "door-1" + sizeof "basis");

	assert_non_null(r);
	assert_non_null(b);
	memcpy(b, body, bl);
	r->body = b;
	r->body_len = bl - 1;
	r->action = memcpy(b + bl, action, al);
	r->on_behalf_of = memcpy(r->action + al, "alice", sizeof "alice");
	r->resource = memcpy(r->on_behalf_of + sizeof "alice", "door-1", sizeof "door-1");
	r->basis = memcpy(r->resource + sizeof "door-1", "basis", sizeof "basis");
	snprintf(r->id, sizeof r->id, "%s", id);
	r->decided_at_ms = NOW - 1000;
	r->expires_at_ms = NOW + WINDOW;
	return r;
}

static void
answer_verify(struct pend *p, const char *action)
{
	struct ejob_verified v;

	memset(&v, 0, sizeof v);
	v.status = RECORD_OK;
	v.rec = make_record("gate-14", action);
	v.raw = strdup("raw bytes");
	p->live = 0;
	p->verify(p->arg, &v);
}

static void
answer_write(struct pend *p, const char *why, long long fence)
{
	struct ejob_written r = {.ok = 1, .written = 1, .why = why, .fence = fence};

	p->live = 0;
	p->write(p->arg, &r);
}

/* R19: a write sent with a WAIT, answered with `replicas` acknowledging. */
static void
answer_write_wait(struct pend *p, long long fence, long long replicas)
{
	struct ejob_written r = {.ok = 1, .written = 1, .why = "ok", .fence = fence,
	    .replicas = replicas};

	p->live = 0;
	p->write(p->arg, &r);
}

/* The reply was lost: the connection went before it came. */
static void
answer_write_lost(struct pend *p)
{
	struct ejob_written r = {.ok = 0, .fence = -1};

	p->live = 0;
	p->write(p->arg, &r);
}

/* Redis refused the write: an error reply. */
static void
answer_write_error(struct pend *p, const char *error)
{
	struct ejob_written r = {.ok = 0, .error = error, .fence = -1};

	p->live = 0;
	p->write(p->arg, &r);
}

/* The reclaim's answer: owner 1 ours, 0 another's, -1 nobody's. */
static void
answer_reclaim(struct pend *p, int owner)
{
	struct ejob_moved r = {.ok = 1, .owner = owner};

	p->live = 0;
	p->moved(p->arg, &r);
}

static void
answer_call(struct pend *p, long status)
{
	struct http_response r = {.status = status, .error = "", .body = "", .elapsed_ms = 5};

	p->live = 0;
	p->call(&r, p->arg);
}

static void
answer_moved(struct pend *p, long long deliveries)
{
	struct ejob_moved r = {.ok = 1, .deliveries = deliveries};

	p->live = 0;
	p->moved(p->arg, &r);
}

static void
fire(struct pend *p)
{
	assert_int_equal(p->kind, P_TIMER);
	p->live = 0;
	p->timer(p->arg);
}

/* ------------------------------------------------------------------ */
/* fixtures                                                             */

static const char ini[] =
	"[records]\nverify_key_file = k.pub\n"
	"[retry]\nbase_ms = 100\ncap_ms = 1000\nmax_attempts = 3\n"
	"[oauth]\ntoken_url = http://127.0.0.1/token\nclient_id = c\n"
	"client_secret_file = s\nallow_http = yes\n"
	"[action gate.open]\nurl = http://127.0.0.1/x\nauth = none\n"
	"[action gate.oauth]\nurl = http://127.0.0.1/y\nauth = oauth\n";

struct fixture {
	struct cfg *cfg;
	struct store_keys keys;
	struct engine_counters n;
	struct ejob_env env;
	struct ejobs *jobs;
};

static int
setup(void **state)
{
	static const struct cfg_env cenv = {.host = "test-host", .dir = "/etc/warrantd"};
	struct cfg_errors errs = {0};
	struct fixture *f = calloc(1, sizeof *f);

	assert_non_null(f);
	memset(&w, 0, sizeof w);
	w.now = NOW;
	w.token_ok = 1;
	f->cfg = cfg_parse("t.ini", ini, sizeof ini - 1, &cenv, &errs);
	for (size_t i = 0; i < errs.n; i++)
		print_message("config: %s\n", errs.msgs[i]);
	assert_non_null(f->cfg);
	assert_int_equal(store_keys_init(&f->keys, "P", "w1"), 0);
	f->env = (struct ejob_env){.ops = &fake_ops, .ctx = f, .cfg = f->cfg, .keys = &f->keys,
	    .n = &f->n};
	assert_non_null(f->jobs = ejobs_new(&f->env));
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	ejobs_abandon(f->jobs);
	ejobs_free(f->jobs);
	cfg_free(f->cfg);
	free(f);
	return 0;
}

#define EXPECT_TRACE(want) do { \
	if (strcmp(w.trace, (want)) != 0) \
		fail_msg("trace\n got: %s\nwant: %s", w.trace, (want)); \
	w.trace[0] = '\0'; \
} while (0)

/* Admitted, loaded (attempts as stored), verified for `action`: the call
 * step is being written. */
static void
to_call_step(struct fixture *f, const char *stream_id, const char *action, const char *attempts)
{
	ejobs_admit(f->jobs, stream_id, "gate-14", 1, NULL);
	struct pend *p = pending(P_LOAD, NULL);
	answer_load(p, attempts);
	answer_verify(pending(P_VERIFY, p->arg), action);
}

/* ------------------------------------------------------------------ */
/* the tests                                                            */

/* An entry from admission to release: one of each operation, in order;
 * the done write is fenced by the `attempts` the call step wrote. */
static void
test_done(void **state)
{
	struct fixture *f = *state;

	to_call_step(f, "1-1", "gate.open", NULL);
	EXPECT_TRACE("load(P:decision:gate-14) verify(gate-14) write(running,f=0,+1)");
	assert_int_equal(ejobs_count(f->jobs), 1);
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	EXPECT_TRACE("call");
	answer_call(pending(P_CALL, NULL), 204);
	EXPECT_TRACE("write(done,f=1,own,ack,keep)");
	assert_true(w.last_has_hash);
	/* §3.3: kept retain_s (7 days) past the deadline plus clock_skew_s */
	assert_int_equal(w.last.retain_ms, WINDOW + 60000 + 604800000LL);
	assert_int_equal(ejobs_count(f->jobs), 1);
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	EXPECT_TRACE("released");
	assert_int_equal(ejobs_count(f->jobs), 0);
	assert_int_equal(f->n.received, 1);
	assert_int_equal(f->n.done, 1);
	assert_string_equal(w.outcomes, "gate.open:done:ok ");	/* for metrics, once */
	assert_int_equal(live_count(), 0);
}

/* §13: the entry's traceparent goes to the target as the `traceparent`
 * header and into every write (for P:audit); one that is not W3C Trace
 * Context, or none, gives the call a new valid trace and the writes none. */
static void
test_traceparent(void **state)
{
	struct fixture *f = *state;
	static const char tp[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
	char first[128];
	char out[TRACE_LEN + 1];

	ejobs_admit(f->jobs, "1-1", "gate-14", 1, tp);
	struct pend *p = pending(P_LOAD, NULL);
	answer_load(p, NULL);
	answer_verify(pending(P_VERIFY, p->arg), "gate.open");
	assert_string_equal(w.last_traceparent, tp);
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	assert_string_equal(w.call_traceparent, tp);
	answer_call(pending(P_CALL, NULL), 204);
	assert_string_equal(w.last_traceparent, tp);
	answer_write(pending(P_WRITE, NULL), "ok", 1);

	for (int i = 0; i < 2; i++) {
		char sid[8];
		snprintf(sid, sizeof sid, "2-%d", i);
		ejobs_admit(f->jobs, sid, "gate-14", 1, i ? NULL : "00-not-a-trace");
		p = pending(P_LOAD, NULL);
		answer_load(p, NULL);
		answer_verify(pending(P_VERIFY, p->arg), "gate.open");
		assert_string_equal(w.last_traceparent, "");
		answer_write(pending(P_WRITE, NULL), "ok", 1);
		assert_int_equal(trace_parse(w.call_traceparent, strlen(w.call_traceparent), out),
		    0);
		assert_string_not_equal(w.call_traceparent, tp);
		if (i == 0)
			snprintf(first, sizeof first, "%s", w.call_traceparent);
		else	/* a new trace per job */
			assert_string_not_equal(w.call_traceparent, first);
		answer_call(pending(P_CALL, NULL), 204);
		answer_write(pending(P_WRITE, NULL), "ok", 1);
	}
	assert_int_equal(live_count(), 0);
}

/* R8: a 5xx is written as retrying with a timer; when it fires the next
 * call step increments `attempts` from the first call's. */
static void
test_5xx_then_retry(void **state)
{
	struct fixture *f = *state;

	to_call_step(f, "1-1", "gate.open", NULL);
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	answer_call(pending(P_CALL, NULL), 503);
	EXPECT_TRACE("load(P:decision:gate-14) verify(gate-14) write(running,f=0,+1) call "
	    "write(retrying,f=1,own)");
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	EXPECT_TRACE("timer");
	struct pend *t = pending(P_TIMER, NULL);
	assert_true(t->delay_ms >= 0 && t->delay_ms <= 1000);
	w.now += t->delay_ms;
	fire(t);
	EXPECT_TRACE("write(running,f=1,+1,own)");
	answer_write(pending(P_WRITE, NULL), "ok", 2);
	answer_call(pending(P_CALL, NULL), 200);
	answer_write(pending(P_WRITE, NULL), "ok", 2);
	EXPECT_TRACE("call write(done,f=2,own,ack,keep) released");
	assert_int_equal(f->n.retried, 1);
	assert_int_equal(f->n.done, 1);
	assert_int_equal(live_count(), 0);
}

/* §13: with max_in_flight 1 a second entry is held at the gate -- no
 * write, no call, a timer bounded by the poll -- until the first call's
 * answer gives its place back; a pause holds it until ejobs_gate_wake. */
static void
test_gate_holds_and_wakes(void **state)
{
	struct fixture *f = *state;
	struct gate *g = gate_new();
	const char *names[] = {"gate.open"}, *paused[] = {"gate.open"};
	struct gate_limits lim[] = {{1, 0, 0, 0}};

	assert_non_null(g);
	assert_int_equal(gate_configure(g, names, lim, 1), 0);
	f->env.gate = g;
	to_call_step(f, "1-1", "gate.open", NULL);
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	EXPECT_TRACE("load(P:decision:gate-14) verify(gate-14) write(running,f=0,+1) call");
	struct pend *first = pending(P_CALL, NULL);
	to_call_step(f, "2-1", "gate.open", NULL);
	EXPECT_TRACE("load(P:decision:gate-14) verify(gate-14) timer");	/* held */
	struct pend *held = pending(P_TIMER, NULL);
	assert_true(held->delay_ms > 0 && held->delay_ms <= 1000);
	assert_int_equal(ejobs_held(f->jobs), 1);
	/* its timer fires while the place is still taken: held again */
	fire(held);
	EXPECT_TRACE("timer");
	held = pending(P_TIMER, NULL);
	/* the first call's answer gives the place back: the held one goes on
	 * from the loop (a timer at once), and starts when it fires */
	answer_call(first, 204);
	EXPECT_TRACE("cancel:timer timer write(done,f=1,own,ack,keep)");
	assert_false(held->live);	/* replaced by the one at once */
	held = pending(P_TIMER, NULL);
	assert_int_equal(held->delay_ms, 0);
	fire(held);
	EXPECT_TRACE("write(running,f=0,+1)");
	assert_int_equal(ejobs_held(f->jobs), 0);
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	EXPECT_TRACE("call");
	/* a pause holds a third one; the pause's end wakes it */
	assert_int_equal(gate_set_paused(g, paused, 1), 1);
	to_call_step(f, "3-1", "gate.open", NULL);
	EXPECT_TRACE("load(P:decision:gate-14) verify(gate-14) timer");
	assert_int_equal(gate_set_paused(g, NULL, 0), 1);
	ejobs_gate_wake(f->jobs);
	EXPECT_TRACE("cancel:timer timer");
	assert_int_equal(pending(P_TIMER, NULL)->delay_ms, 0);
	ejobs_abandon(f->jobs);
	struct gate_view v;
	gate_view(g, 0, NOW, &v);
	assert_int_equal(v.in_flight, 0);	/* abandoned jobs gave theirs back */
	f->env.gate = NULL;
	gate_free(g);
}

/* R9: a 401 with an OAuth token: refused, written as auth_wait, a wait
 * for a token; when one comes the entry is re-dispatched (its delivery
 * count from before), then runs again. */
static void
test_401_redispatch(void **state)
{
	struct fixture *f = *state;

	to_call_step(f, "1-1", "gate.oauth", NULL);
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	answer_call(pending(P_CALL, NULL), 401);
	EXPECT_TRACE("load(P:decision:gate-14) verify(gate-14) write(running,f=0,+1) call "
	    "token:refused write(auth_wait,f=1,own)");
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	EXPECT_TRACE("timer");
	assert_true(pending(P_TIMER, NULL)->delay_ms > 0);	/* no token yet */
	ejobs_token_ready(f->jobs);	/* none yet: nothing happens */
	EXPECT_TRACE("");
	w.token_ok = 1;
	ejobs_token_ready(f->jobs);
	EXPECT_TRACE("cancel:timer redispatch(1)");
	answer_moved(pending(P_MOVE, NULL), 2);
	EXPECT_TRACE("write(running,f=1,+1,own)");
	assert_int_equal(w.last.deliveries, 2);
	answer_write(pending(P_WRITE, NULL), "ok", 2);
	answer_call(pending(P_CALL, NULL), 204);
	answer_write(pending(P_WRITE, NULL), "ok", 2);
	EXPECT_TRACE("call token:accepted write(done,f=2,own,ack,keep) released");
	assert_int_equal(f->n.redispatched, 1);
	assert_int_equal(f->n.auth_failures, 1);
	assert_int_equal(live_count(), 0);
}

/* R9: no token within auth_wait_max_ms: the entry is handed back (a new
 * stream entry, ours acked by the script) and leaves the hand. */
static void
test_token_wait_hands_back(void **state)
{
	struct fixture *f = *state;

	to_call_step(f, "1-1", "gate.oauth", NULL);
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	answer_call(pending(P_CALL, NULL), 401);
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	w.trace[0] = '\0';
	struct pend *t = pending(P_TIMER, NULL);
	assert_int_equal(t->delay_ms, f->cfg->oauth.auth_wait_max_ms);
	w.now += t->delay_ms;
	fire(t);
	EXPECT_TRACE("handback");
	struct pend *m = pending(P_MOVE, NULL);
	struct ejob_moved r = {.ok = 1, .handed = 1, .new_stream_id = "2-1"};
	m->live = 0;
	m->moved(m->arg, &r);
	EXPECT_TRACE("released");
	assert_int_equal(f->n.redispatched, 1);
	assert_int_equal(live_count(), 0);
}

/* R10: the lease is lost while the call is out: the call is cancelled, its
 * result never comes, nothing is written, the entry leaves the hand. */
static void
test_lease_lost_during_call(void **state)
{
	struct fixture *f = *state;

	to_call_step(f, "1-1", "gate.open", NULL);
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	w.trace[0] = '\0';
	const char *ids[4];
	assert_int_equal(ejobs_leased(f->jobs, ids, 4), 1);
	ejobs_lease_lost(f->jobs, "1-1");
	EXPECT_TRACE("cancel:call released");
	assert_int_equal(ejobs_count(f->jobs), 0);
	assert_int_equal(live_count(), 0);
	assert_int_equal(f->n.done + f->n.retried + f->n.dead, 0);
}

/* R15: at a stop, a job calling runs on and writes its result; a job
 * waiting on its retry timer is let go at once (it stays pending). */
static void
test_stop_calling_vs_waiting(void **state)
{
	struct fixture *f = *state;

	/* 1-1 waits to retry */
	to_call_step(f, "1-1", "gate.open", NULL);
	struct pend *wr = pending(P_WRITE, NULL);
	void *waiting = wr->arg;
	answer_write(wr, "ok", 1);
	answer_call(pending(P_CALL, waiting), 503);
	answer_write(pending(P_WRITE, waiting), "ok", 1);
	(void)pending(P_TIMER, waiting);
	/* 1-2 is calling */
	to_call_step(f, "1-2", "gate.open", NULL);
	wr = pending(P_WRITE, NULL);
	void *calling = wr->arg;
	assert_ptr_not_equal(calling, waiting);
	answer_write(wr, "ok", 1);
	w.trace[0] = '\0';
	assert_int_equal(ejobs_count(f->jobs), 2);

	ejobs_stop(f->jobs);
	EXPECT_TRACE("cancel:timer released");
	assert_int_equal(ejobs_count(f->jobs), 1);
	answer_call(pending(P_CALL, calling), 204);
	EXPECT_TRACE("write(done,f=1,own,ack,keep)");
	answer_write(pending(P_WRITE, calling), "ok", 1);
	EXPECT_TRACE("released");
	assert_int_equal(ejobs_count(f->jobs), 0);
	assert_int_equal(live_count(), 0);
}

/* R15: a 5xx answered while stopping is written, and no new wait begins. */
static void
test_stop_then_5xx(void **state)
{
	struct fixture *f = *state;

	to_call_step(f, "1-1", "gate.open", NULL);
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	w.trace[0] = '\0';
	ejobs_stop(f->jobs);
	EXPECT_TRACE("");
	answer_call(pending(P_CALL, NULL), 503);
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	EXPECT_TRACE("write(retrying,f=1,own) released");
	assert_int_equal(live_count(), 0);
}

/* R8, R13: the reply to the call step is lost; the same step is written
 * again after a backoff, from the same fence, and answered "again": one
 * call, `attempts` counted once. */
static void
test_lost_write_reply(void **state)
{
	struct fixture *f = *state;

	to_call_step(f, "1-1", "gate.open", "0");
	answer_write_lost(pending(P_WRITE, NULL));
	EXPECT_TRACE("load(P:decision:gate-14) verify(gate-14) write(running,f=0,+1) timer");
	fire(pending(P_TIMER, NULL));
	EXPECT_TRACE("write(running,f=0,+1)");
	answer_write(pending(P_WRITE, NULL), "again", 1);
	answer_call(pending(P_CALL, NULL), 204);
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	EXPECT_TRACE("call write(done,f=1,own,ack,keep) released");
	assert_int_equal(live_count(), 0);
}

/* R20: the done write meets an expired Redis credential: held (no timer,
 * no resend) while no token is there, reclaimed to us once one is, and
 * only then written again -- the same step, the same fence; one call. */
static void
test_redis_auth_held_then_reclaimed(void **state)
{
	struct fixture *f = *state;

	to_call_step(f, "1-1", "gate.open", NULL);
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	answer_call(pending(P_CALL, NULL), 204);
	w.trace[0] = '\0';
	ejobs_redis_auth_lost(f->jobs);
	answer_write_error(pending(P_WRITE, NULL), "NOAUTH Authentication required.");
	/* the connection closed as the token died: no reply either */
	EXPECT_TRACE("");
	assert_int_equal(live_count(), 0);
	ejobs_redis_up(f->jobs);	/* Redis answers, but the credential is not back */
	EXPECT_TRACE("");
	ejobs_redis_auth_ready(f->jobs);
	EXPECT_TRACE("reclaim(1-1)");
	answer_reclaim(pending(P_MOVE, NULL), 1);
	EXPECT_TRACE("write(done,f=1,own,ack,keep)");
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	EXPECT_TRACE("released");
	assert_int_equal(f->n.done, 1);
	assert_int_equal(f->n.redispatched, 1);
	assert_int_equal(live_count(), 0);
}

/* R20: a write left without a reply while the credential is lost is held
 * too; a reclaim refused again is held again; an entry another consumer
 * took meanwhile is abandoned, its write never sent (R10). */
static void
test_redis_auth_reclaim_lost(void **state)
{
	struct fixture *f = *state;

	to_call_step(f, "1-1", "gate.open", NULL);
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	answer_call(pending(P_CALL, NULL), 204);
	w.trace[0] = '\0';
	ejobs_redis_auth_lost(f->jobs);
	answer_write_lost(pending(P_WRITE, NULL));
	EXPECT_TRACE("");
	ejobs_redis_auth_ready(f->jobs);
	ejobs_redis_auth_lost(f->jobs);
	struct pend *p = pending(P_MOVE, NULL);
	struct ejob_moved refused = {.ok = 0, .error = "WRONGPASS invalid username-password pair"};
	p->live = 0;
	p->moved(p->arg, &refused);
	EXPECT_TRACE("reclaim(1-1)");
	ejobs_redis_auth_ready(f->jobs);
	answer_reclaim(pending(P_MOVE, NULL), 0);
	EXPECT_TRACE("reclaim(1-1) released");
	assert_int_equal(f->n.done, 0);
	assert_int_equal(live_count(), 0);
}

/* R20: a write that waits on R17's backoff when the credential is found
 * lost (its connection was closed early: a revocation) is held as well,
 * and reclaimed before it goes again. */
static void
test_redis_auth_retry_becomes_held(void **state)
{
	struct fixture *f = *state;

	to_call_step(f, "1-1", "gate.open", NULL);
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	answer_call(pending(P_CALL, NULL), 204);
	answer_write_lost(pending(P_WRITE, NULL));
	w.trace[0] = '\0';
	ejobs_redis_auth_lost(f->jobs);
	EXPECT_TRACE("cancel:timer");
	ejobs_redis_up(f->jobs);
	EXPECT_TRACE("");
	ejobs_redis_auth_ready(f->jobs);
	answer_reclaim(pending(P_MOVE, NULL), 1);
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	EXPECT_TRACE("reclaim(1-1) write(done,f=1,own,ack,keep) released");
	assert_int_equal(live_count(), 0);
}

/* R20: a refusal that met a token already replaced (the write left before
 * its connection's latest AUTH) is reclaimed at once, no wait; a stop in
 * between keeps the result to write (R15). */
static void
test_redis_auth_stale_reclaims_now(void **state)
{
	struct fixture *f = *state;

	to_call_step(f, "1-1", "gate.open", NULL);
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	answer_call(pending(P_CALL, NULL), 204);
	w.trace[0] = '\0';
	answer_write_error(pending(P_WRITE, NULL), "NOAUTH Authentication required.");
	EXPECT_TRACE("reclaim(1-1)");
	ejobs_stop(f->jobs);
	answer_reclaim(pending(P_MOVE, NULL), -1);
	EXPECT_TRACE("write(done,f=1,own,ack,keep)");
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	EXPECT_TRACE("released");
	assert_int_equal(live_count(), 0);
}

/* R15: a stop while the closing write of a call waits on its backoff keeps
 * the job: the result is written once Redis is back. */
static void
test_stop_keeps_result_to_write(void **state)
{
	struct fixture *f = *state;

	to_call_step(f, "1-1", "gate.open", NULL);
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	answer_call(pending(P_CALL, NULL), 204);
	answer_write_lost(pending(P_WRITE, NULL));
	w.trace[0] = '\0';
	ejobs_stop(f->jobs);
	EXPECT_TRACE("");
	ejobs_redis_up(f->jobs);
	EXPECT_TRACE("cancel:timer timer");
	fire(pending(P_TIMER, NULL));
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	EXPECT_TRACE("write(done,f=1,own,ack,keep) released");
	assert_int_equal(live_count(), 0);
}

/* R17: the hash cannot be read (WRONGTYPE) three times in a row: the
 * entry is dead, written without its hash, and acked. */
static void
test_redis_error_three_times(void **state)
{
	struct fixture *f = *state;
	static const char wrongtype[] =
		"WRONGTYPE Operation against a key holding the wrong kind of value";

	ejobs_admit(f->jobs, "1-1", "gate-14", 1, NULL);
	for (int i = 0; i < 2; i++) {
		answer_load_error(pending(P_LOAD, NULL), wrongtype);
		fire(pending(P_TIMER, NULL));
	}
	EXPECT_TRACE("load(P:decision:gate-14) timer load(P:decision:gate-14) timer load(P:decision:gate-14)");
	answer_load_error(pending(P_LOAD, NULL), wrongtype);
	EXPECT_TRACE("write(-,f=-1,ack,nohash,dead)");
	assert_false(w.last_has_hash);
	assert_string_equal(w.last.outcome, "redis-error");
	answer_write(pending(P_WRITE, NULL), "ok", -1);
	EXPECT_TRACE("released");
	assert_int_equal(f->n.dead, 1);
	assert_int_equal(live_count(), 0);
}

/* Issue 23 item 1: a record the load withheld (longer than max_bytes) is
 * record-invalid without a verification: dead, in its hash, and acked. */
static void
test_withheld_record(void **state)
{
	struct fixture *f = *state;
	struct ejob_loaded r = {.ok = 1, .exists = 1, .state = "queued", .withheld = 50331648};

	ejobs_admit(f->jobs, "1-1", "gate-14", 1, NULL);
	struct pend *p = pending(P_LOAD, NULL);
	p->live = 0;
	p->load(p->arg, &r);
	EXPECT_TRACE("load(P:decision:gate-14) write(dead,f=-1,ack,dead)");
	assert_true(w.last_has_hash);
	assert_string_equal(w.last.outcome, "record-invalid");
	assert_string_equal(w.last.dead_reason, "record-invalid");
	answer_write(pending(P_WRITE, NULL), "ok", -1);
	EXPECT_TRACE("released");
	assert_int_equal(f->n.dead, 1);
	assert_int_equal(live_count(), 0);
}

/* An entry without an id: its dead letter, acked, without a hash. */
static void
test_no_id(void **state)
{
	struct fixture *f = *state;

	ejobs_admit(f->jobs, "1-1", NULL, 1, NULL);
	EXPECT_TRACE("write(-,f=-1,ack,nohash,dead)");
	answer_write(pending(P_WRITE, NULL), "ok", -1);
	EXPECT_TRACE("released");
	assert_int_equal(f->n.dead, 1);
	assert_string_equal(w.outcomes, ":dead:no-id ");	/* no record: no action */
}

/* R11: an entry deleted while pending: dead letter without the lease check. */
static void
test_deleted(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(ejobs_dead_deleted(f->jobs, "1-1"), 0);
	EXPECT_TRACE("write(-,f=-1,nolease,nohash,dead)");
	const char *ids[4];
	assert_int_equal(ejobs_leased(f->jobs, ids, 4), 0);
	answer_write(pending(P_WRITE, NULL), "ok", -1);
	EXPECT_TRACE("released");
}

/* ejobs_abandon cancels what can be, and the answers that still come
 * (a write's, as the connection closes) free the job without acting. */
static void
test_abandon(void **state)
{
	struct fixture *f = *state;

	to_call_step(f, "1-1", "gate.open", NULL);
	w.trace[0] = '\0';
	ejobs_abandon(f->jobs);
	EXPECT_TRACE("");
	answer_write_lost(pending(P_WRITE, NULL));
	EXPECT_TRACE("released");
	assert_int_equal(ejobs_count(f->jobs), 0);
}

/* R4 at the load: a record whose P:final mark exists is acked, neither
 * verified nor run, whatever its hash says; the ack names no hash (and so
 * no key that may be missing). */
static void
test_final_mark_at_load(void **state)
{
	struct fixture *f = *state;

	ejobs_admit(f->jobs, "1-1", "gate-14", 1, NULL);
	answer_load_final(pending(P_LOAD, NULL), "done");
	EXPECT_TRACE("load(P:decision:gate-14) write(-,f=-1,ack,nohash)");
	answer_write(pending(P_WRITE, NULL), "ok", -1);
	EXPECT_TRACE("released");
	assert_int_equal(f->n.done, 0);
	assert_int_equal(live_count(), 0);
}

/* R19: with wait_replicas the call step and the final write carry the WAIT;
 * a call step too few replicas acknowledged is not called but retried (the
 * attempt spent); a final write too few acknowledged is notified anyway. */
static void
test_wait_replicas(void **state)
{
	struct fixture *f = *state;

	f->cfg->redis.wait_replicas = 1;
	f->cfg->notify.default_owner = strdup("ops");
	assert_non_null(f->cfg->notify.default_owner);
	to_call_step(f, "1-1", "gate.open", NULL);
	EXPECT_TRACE("load(P:decision:gate-14) verify(gate-14) write(running,f=0,+1,wait1)");
	answer_write_wait(pending(P_WRITE, NULL), 1, 0);
	EXPECT_TRACE("write(retrying,f=1,own)");
	answer_write(pending(P_WRITE, NULL), "ok", 1);
	EXPECT_TRACE("timer");
	w.now += 1000;
	fire(pending(P_TIMER, NULL));
	EXPECT_TRACE("write(running,f=1,+1,own,wait1)");
	answer_write_wait(pending(P_WRITE, NULL), 2, 1);
	EXPECT_TRACE("call");
	answer_call(pending(P_CALL, NULL), 404);
	EXPECT_TRACE("write(failed,f=2,own,ack,keep,wait1)");
	answer_write_wait(pending(P_WRITE, NULL), 2, -1);
	EXPECT_TRACE("notified(failed) released");
	assert_int_equal(f->n.failed, 1);
	assert_int_equal(live_count(), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_done, setup, teardown),
		cmocka_unit_test_setup_teardown(test_traceparent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_5xx_then_retry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_401_redispatch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_token_wait_hands_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lease_lost_during_call, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_calling_vs_waiting, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_then_5xx, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_write_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_keeps_result_to_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_redis_auth_held_then_reclaimed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_redis_auth_reclaim_lost, setup, teardown),
		cmocka_unit_test_setup_teardown(test_redis_auth_stale_reclaims_now, setup, teardown),
		cmocka_unit_test_setup_teardown(test_redis_auth_retry_becomes_held, setup, teardown),
		cmocka_unit_test_setup_teardown(test_redis_error_three_times, setup, teardown),
		cmocka_unit_test_setup_teardown(test_withheld_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_id, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deleted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abandon, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gate_holds_and_wakes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wait_replicas, setup, teardown),
		cmocka_unit_test_setup_teardown(test_final_mark_at_load, setup, teardown),
	};

	log_set_level(LOG_ERROR);	/* the jobs' log lines are not what is tested */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
