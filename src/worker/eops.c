/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * eops: the jobs' operations on the real world (eops.h). Each one starts
 * what ejob asks for and turns the reply into ejob.h's plain result; none
 * decides anything.
 */
#define _DEFAULT_SOURCE
#include "worker/eops.h"

#include <stdlib.h>
#include <string.h>

#include "redis/sreply.h"
#include "base/wtime.h"

/* ------------------------------------------------------------------ */
/* the clock and timers                                                 */

static int64_t
op_now_ms(void *ctx)
{
	(void)ctx;
	return wtime_now_ms();
}

struct eops_timer {
	ev_timer w;
	struct ev_loop *loop;
	ejob_timer_cb *cb;
	void *arg;
};

static void
timer_fired(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct eops_timer *t = w->data;
	ejob_timer_cb *cb = t->cb;
	void *arg = t->arg;
	(void)loop, (void)revents;

	free(t);	/* a one-shot timer is stopped before it is called */
	cb(arg);
}

static void *
op_timer(void *ctx, int64_t delay_ms, ejob_timer_cb *cb, void *arg)
{
	const struct eops *e = ctx;
	struct eops_timer *t = malloc(sizeof *t);

	if (t == NULL)
		return NULL;
	t->loop = e->loop;
	t->cb = cb;
	t->arg = arg;
	ev_timer_init(&t->w, timer_fired, delay_ms > 0 ? (double)delay_ms / 1000.0 : 0.0, 0.0);
	t->w.data = t;
	ev_timer_start(e->loop, &t->w);
	return t;
}

/* ------------------------------------------------------------------ */
/* Redis                                                                */

/* What a reply needs to reach the job: its callback and arg (one of the
 * callbacks is set). Freed when the reply came. */
struct eops_reply {
	ejob_load_cb *load;
	ejob_write_cb *write;
	ejob_moved_cb *moved;
	void *arg;
	/* R19: a write with a WAIT after it: the write's answer is kept
	 * here until the WAIT's comes. The WAIT may answer first -- rconn
	 * sends a script again after NOSCRIPT, behind the WAIT -- and then
	 * counted nothing of the write: one more is sent once it is in. */
	const struct eops *e;
	int wait_sent, wait_replicas, written, waited_early;
	/* R4: a load and its mark's GET: the answers still due, what the
	 * GET said (0 no mark, 1 final holds it, -1 no answer), the load's */
	int due, final_state;
	char final[16];
	struct ejob_loaded l;
	char *l_copy[5];
	struct ejob_written w;
	char why[16];
	char error[160];	/* w.error's text, cut (R17 reads its first word) */
};

static struct eops_reply *
reply_new(void *arg)
{
	struct eops_reply *p = calloc(1, sizeof *p);

	if (p != NULL)
		p->arg = arg;
	return p;
}

/* A load and its mark's GET both answered: the job gets the load's answer
 * with the mark (a GET with no answer fails the load: it is sent again). */
static void
load_deliver(struct eops_reply *p)
{
	if (p->final_state < 0) {
		p->l.ok = 0;
		p->l.error = p->error[0] ? p->error : NULL;
	} else if (p->final_state > 0) {
		p->l.final = p->final;
	}
	p->load(p->arg, &p->l);
	for (size_t i = 0; i < sizeof p->l_copy / sizeof p->l_copy[0]; i++)
		free(p->l_copy[i]);
	free(p);
}

/* R4: the mark's GET answered (NULL: no answer). Its answer and the
 * load's come in either order: an ASK sends one of them to another node. */
static void
after_final(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct eops_reply *p = arg;
	const char *v = r != NULL && !sreply_error(r, NULL) ? sreply_string(r) : NULL;
	(void)rc;

	if (r == NULL || sreply_error(r, NULL)) {
		/* its text for R17, as a load's own error would be */
		const char *e = sreply_error_text(r);
		size_t n = e ? strnlen(e, sizeof p->error - 1) : 0;
		memcpy(p->error, e ? e : "", n);
		p->error[n] = '\0';
		p->final_state = -1;
	} else if (v != NULL) {
		size_t n = strnlen(v, sizeof p->final - 1);
		memcpy(p->final, v, n);
		p->final[n] = '\0';
		p->final_state = 1;
	}
	if (--p->due == 0)
		load_deliver(p);
}

/* *s copied into p (slot i), for a load answered before its mark's GET;
 * -1 when out of memory. */
static int
keep_str(struct eops_reply *p, size_t i, const char **s)
{
	if (*s == NULL)
		return 0;
	if ((p->l_copy[i] = strdup(*s)) == NULL)
		return -1;
	*s = p->l_copy[i];
	return 0;
}

static void
after_load(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct eops_reply *p = arg;
	struct ejob_loaded *out = &p->l;
	struct sreply_load l;
	(void)rc;

	memset(out, 0, sizeof *out);
	if (sreply_load(r, &l) < 0) {
		out->error = sreply_error_text(r);
	} else {
		out->ok = 1;
		out->exists = l.exists;
		out->state = l.state;
		out->attempts = l.attempts;
		out->attempts_base = l.attempts_base;
		out->record = l.record;
		out->withheld = l.withheld;
	}
	if (--p->due == 0) {
		load_deliver(p);
		return;
	}
	/* the mark's answer is still due (ASKed elsewhere): what the load
	 * said must outlive r */
	if (keep_str(p, 0, &out->error) < 0 || keep_str(p, 1, &out->state) < 0 ||
	    keep_str(p, 2, &out->attempts) < 0 || keep_str(p, 3, &out->record) < 0 ||
	    keep_str(p, 4, &out->attempts_base) < 0) {
		out->ok = 0;
		out->error = NULL;
	}
}

/* lua/load.lua: HSTRLEN before the record is sent, so one longer than
 * max_bytes never reaches this process (issue 23 item 1). Batched: the
 * loads of an XREADGROUP's entries go as one call. R4's mark is a GET of
 * its own, sent first: a script naming it would stall while its slot
 * migrates, as it does not exist before the record is terminal. */
static int
op_load(void *ctx, const char *hash_key, const char *final_key, ejob_load_cb *cb, void *arg)
{
	const struct eops *e = ctx;
	struct eops_reply *p = reply_new(arg);
	struct store_args a;

	if (p == NULL)
		return -1;
	if (final_key[0] == '\0' || rconn_command(e->cmd, after_final, p, "GET %s",
	    final_key) < 0) {
		free(p);
		return -1;
	}
	p->load = cb;
	p->due = 2;
	store_args_init(&a, STORE_LOAD);
	store_arg(&a, STORE_LOAD_HASH, hash_key);
	store_arg_ll(&a, STORE_LOAD_MAX_BYTES, e->cfg->records.max_bytes);
	if (script_batch_send(e->batch, &a, after_load, p) < 0)
		p->due = 1;	/* the GET's answer ends it: a load with no answer */
	return 0;
}

static void after_wait(struct rconn *rc, const struct sreply *r, void *arg);

/* The write's answer as ejob reads it; out.why may point into r. */
static void
read_written(const struct sreply *r, struct ejob_written *out)
{
	*out = (struct ejob_written){.fence = -1, .replicas = -1};
	if (r == NULL || sreply_error(r, NULL)) {
		out->error = sreply_error_text(r);
	} else {
		struct sreply_transition t;
		sreply_transition(r, &t);
		out->ok = 1;
		out->written = t.written;
		out->why = t.why;
		out->fence = t.fence;
	}
}

static void
after_write(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct eops_reply *pp = arg;
	struct ejob_written out;
	(void)rc;

	read_written(r, &out);
	if (pp->wait_sent && pp->waited_early) {
		/* the WAIT answered before this write was applied: again */
		pp->waited_early = 0;
		if (script_batch_wait(pp->e->batch, pp->wait_replicas,
		    pp->e->cfg->redis.wait_timeout_ms, after_wait, pp) < 0)
			pp->wait_sent = 0;	/* delivered below, as unanswered */
	}
	if (pp->wait_sent) {
		pp->written = 1;
		/* kept for the WAIT's answer, the strings copied */
		pp->w = out;
		if (out.error != NULL) {
			size_t n = strnlen(out.error, sizeof pp->error - 1);
			memcpy(pp->error, out.error, n);
			pp->error[n] = '\0';
			pp->w.error = pp->error;
		}
		if (out.why != NULL) {
			size_t n = strnlen(out.why, sizeof pp->why - 1);
			memcpy(pp->why, out.why, n);
			pp->why[n] = '\0';
			pp->w.why = pp->why;
		}
		return;
	}
	struct eops_reply p = *pp;
	free(pp);
	p.write(p.arg, &out);
}

/* R19: the WAIT after the write answered (NULL: it did not). */
static void
after_wait(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct eops_reply *p = arg;
	long long n;
	(void)rc;

	if (!p->written) {
		p->waited_early = 1;	/* after_write sends it again */
		return;
	}
	/* freed after the callback: p->w's strings are in p */
	p->w.replicas = r != NULL && sreply_integer(r, &n) == 0 ? n : -1;
	p->write(p->arg, &p->w);
	free(p);
}

static int
op_write(void *ctx, const struct store_transition *t, int wait_replicas, ejob_write_cb *cb,
	 void *arg)
{
	const struct eops *e = ctx;
	const struct cfg *cfg = e->cfg;
	struct eops_reply *p = reply_new(arg);
	struct store_args a;

	if (p == NULL)
		return -1;
	p->write = cb;
	store_transition_args(e->keys, cfg->redis.group, cfg->daemon.consumer,
	    cfg->records.audit_maxlen, t, &a);
	if (script_batch_send(e->batch, &a, after_write, p) < 0) {
		free(p);
		return -1;
	}
	/* Pipelined right behind the write; no callback comes before this
	 * returns, so the flag is set in time. Not sent: the write's answer
	 * comes alone, as a WAIT that got none (replicas -1). */
	if (wait_replicas > 0 && script_batch_wait(e->batch, wait_replicas,
	    cfg->redis.wait_timeout_ms, after_wait, p) == 0) {
		p->wait_sent = 1;
		p->e = e;
		p->wait_replicas = wait_replicas;
	}
	return 0;
}

/* The arguments of a script that moves the entry (re-dispatch, reclaim,
 * hand-back): its table entry, then this group and consumer. */
static void
moved_args(const struct eops *e, struct store_args *a, enum store_script_id id)
{
	store_args_init(a, id);
	store_args_consumer(a, e->keys, e->cfg->redis.group, e->cfg->daemon.consumer);
}

/* Sends it on the command connection; `after` reads the reply for cb. */
static int
send_moved(const struct eops *e, const struct store_args *a, rconn_reply_cb *after,
	   ejob_moved_cb *cb, void *arg)
{
	struct eops_reply *p = reply_new(arg);

	if (p == NULL)
		return -1;
	p->moved = cb;
	if (script_send(e->cmd, e->scripts, a, after, p) < 0) {
		free(p);
		return -1;
	}
	return 0;
}

static void
after_redispatch(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct eops_reply p = *(struct eops_reply *)arg;
	struct ejob_moved out = {0};
	(void)rc;

	free(arg);
	if (sreply_integer(r, &out.deliveries) < 0) {
		out.deliveries = 0;
		out.error = sreply_error_text(r);
	} else {
		out.ok = 1;
	}
	p.moved(p.arg, &out);
}

static int
op_redispatch(void *ctx, const char *stream_id, long long expected, ejob_moved_cb *cb,
	      void *arg)
{
	const struct eops *e = ctx;
	struct store_args a;

	moved_args(e, &a, STORE_REDISPATCH);
	store_arg(&a, STORE_REDISPATCH_ID, stream_id);
	store_arg_ll(&a, STORE_REDISPATCH_EXPECTED, expected);
	return send_moved(e, &a, after_redispatch, cb, arg);
}

static void
reclaim_lost(void *arg, const char *stream_id)
{
	(void)stream_id;
	((struct ejob_moved *)arg)->owner = 0;
}

static void
reclaim_gone(void *arg, const char *stream_id)
{
	(void)stream_id;
	((struct ejob_moved *)arg)->owner = -1;
}

static void
after_reclaim(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct eops_reply p = *(struct eops_reply *)arg;
	struct ejob_moved out = {.owner = 1};	/* named in neither list: ours */
	(void)rc;

	free(arg);
	if (sreply_renew(r, reclaim_lost, reclaim_gone, &out) < 0) {
		out.owner = 0;
		out.error = sreply_error_text(r);
	} else {
		out.ok = 1;
	}
	p.moved(p.arg, &out);
}

/* R20: R10's renewal of this one entry (lua/renew.lua). */
static int
op_reclaim(void *ctx, const char *stream_id, ejob_moved_cb *cb, void *arg)
{
	const struct eops *e = ctx;
	struct store_args a;
	const char *ids[1] = {stream_id};

	moved_args(e, &a, STORE_RENEW);
	store_arg_rest(&a, ids, 1);
	return send_moved(e, &a, after_reclaim, cb, arg);
}

/* A stream id's room (engine.c's and ejob.c's STREAM_ID_MAX). */
#define EOPS_STREAM_ID_MAX 48

static void
after_handback(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct eops_reply p = *(struct eops_reply *)arg;
	struct ejob_moved out = {0};
	char sid[EOPS_STREAM_ID_MAX];
	(void)rc;

	free(arg);
	int got = sreply_handback(r, sid, sizeof sid);
	if (got < 0) {
		out.error = sreply_error_text(r);
	} else {
		out.ok = 1;
		out.handed = got;
		out.new_stream_id = got ? sid : NULL;
	}
	p.moved(p.arg, &out);
}

static int
op_handback(void *ctx, const char *hash_key, const char *stream_id, const char *record_id,
	    ejob_moved_cb *cb, void *arg)
{
	const struct eops *e = ctx;
	struct store_args a;

	moved_args(e, &a, STORE_HANDBACK);
	store_arg(&a, STORE_HANDBACK_HASH, hash_key);
	store_arg(&a, STORE_HANDBACK_ID, stream_id);
	store_arg(&a, STORE_HANDBACK_RECORD_ID, record_id);
	return send_moved(e, &a, after_handback, cb, arg);
}

/* R6: lua/park.lua; its reply has the hand-back's shape ({1, the list's
 * length} or {0}). */
static int
op_park(void *ctx, const char *stream_id, const char *record_id, const char *action,
	int64_t expires_at_ms, ejob_moved_cb *cb, void *arg)
{
	const struct eops *e = ctx;
	struct store_args a;
	char key[STORE_KEY_MAX];

	if (store_parked_key(e->keys, action, key, sizeof key) < 0)
		return -1;
	moved_args(e, &a, STORE_PARK);
	store_arg(&a, STORE_PARK_PARKED, key);
	store_arg(&a, STORE_PARK_DUE, e->keys->parked);
	store_arg(&a, STORE_PARK_ID, stream_id);
	store_arg(&a, STORE_PARK_RECORD_ID, record_id);
	store_arg(&a, STORE_PARK_ACTION, action);
	store_arg_ll(&a, STORE_PARK_EXPIRES_AT, (long long)expires_at_ms);
	return send_moved(e, &a, after_handback, cb, arg);
}

/* ------------------------------------------------------------------ */
/* verifying a record                                                   */

static int
action_known(void *ctx, const char *name)
{
	return cfg_action_find(ctx, name) != NULL;
}

/* What a record is checked against: the running config and key. */
static struct record_policy
record_policy_of(const struct eops *e)
{
	const struct cfg *cfg = e->cfg;
	struct record_policy pol = {
		.signature_required = cfg->records.signature_required,
		.algorithm = cfg->records.algorithm,
		.parsed_key = e->parsed_key,
		.key = e->verify_key, .key_len = e->verify_key_len,
		.issuer = cfg->records.issuer, .audience = cfg->records.audience,
		.max_window_ms = cfg->records.max_window_s * 1000LL,
		.clock_skew_ms = cfg->records.clock_skew_s * 1000LL,
		.max_bytes = (size_t)cfg->records.max_bytes,
		.action_known = action_known, .action_ctx = (void *)cfg,
	};
	return pol;
}

/* A worker's verification, passed on once the last rule (the action) is
 * checked here by the running config: the result record_load gives inline. */
struct eops_verify {
	const struct eops *e;
	struct vpool *pool;
	ejob_verify_cb *cb;
	void *arg;
	struct vpool_ticket *t;
};

static void
verified(void *arg, struct vpool_result *res)
{
	struct eops_verify v = *(struct eops_verify *)arg;
	struct record_policy pol = record_policy_of(v.e);
	struct ejob_verified out = {.status = res->status, .rec = res->rec,
	    .owner = res->owner, .raw = res->raw};

	free(arg);
	if (out.status == RECORD_OK)
		out.status = record_check_action(&pol, &out.rec, &out.owner, res->detail,
		    sizeof res->detail);
	memcpy(out.detail, res->detail, sizeof out.detail);
	v.cb(v.arg, &out);
}

static int
op_verify(void *ctx, const char *id, const char *raw, int64_t now_ms, struct ejob_verified *now,
	  ejob_verify_cb *cb, void *arg, void **h)
{
	const struct eops *e = ctx;
	struct record_policy pol = record_policy_of(e);
	struct eops_verify *v = e->vpool ? malloc(sizeof *v) : NULL;

	if (v != NULL) {
		v->e = e;
		v->pool = e->vpool;
		v->cb = cb;
		v->arg = arg;
		if ((v->t = vpool_submit(e->vpool, &pol, id, raw, now_ms, verified, v)) != NULL) {
			*h = v;
			return 1;
		}
		free(v);
	}
	now->status = record_load(&pol, id, raw, now_ms, &now->rec, &now->owner, now->detail,
	    sizeof now->detail);
	now->raw = NULL;
	return 0;
}

/* ------------------------------------------------------------------ */
/* HTTP and tokens                                                      */

static int
op_call(void *ctx, const struct http_request *req, http_done_cb *cb, void *arg, void **h)
{
	const struct eops *e = ctx;
	struct http_call *c = NULL;

	if (http_start(e->http, req, cb, arg, &c) < 0)
		return -1;
	*h = c;
	return 0;
}

static void *
op_exchange(void *ctx, const struct ejob_exchange_req *rq, uint64_t *gen, oauth_exchange_cb *cb,
	    void *arg)
{
	const struct eops *e = ctx;
	const struct cred *c = creds_find(e->creds, rq->action);

	if (c == NULL)
		return NULL;
	return cred_exchange(c, rq->record, rq->scope, rq->resource, rq->timeout_ms, rq->max_ms,
	    gen, cb, arg);
}

static void
op_cancel(void *ctx, enum ejob_op kind, void *h)
{
	(void)ctx;
	switch (kind) {
	case EJOB_OP_TIMER: {
		struct eops_timer *t = h;
		ev_timer_stop(t->loop, &t->w);
		free(t);
		break;
	}
	case EJOB_OP_VERIFY: {
		struct eops_verify *v = h;
		vpool_cancel(v->pool, v->t);
		free(v);
		break;
	}
	case EJOB_OP_CALL:
		http_cancel(h);
		break;
	case EJOB_OP_EXCHANGE:
		oauth_exchange_cancel(h);
		break;
	}
}

static unsigned
op_auth(void *ctx, const char *action)
{
	const struct eops *e = ctx;
	const struct cred *c = action == NULL ? creds_pdp(e->creds) : creds_find(e->creds, action);

	return (cred_is_oauth(c) ? EJOB_AUTH_TOKEN : 0U) |
	    (cred_exchanges(c) ? EJOB_AUTH_EXCHANGE : 0U) |
	    (cred_per_record(c) ? EJOB_AUTH_PER_RECORD : 0U);
}

static const char *
op_bearer(void *ctx, const char *action, long timeout_ms, uint64_t *gen)
{
	const struct eops *e = ctx;
	const struct cred *c;

	*gen = 0;
	/* the PDP's own (§7: never the worker's, never an action's) */
	c = action == NULL ? creds_pdp(e->creds) : creds_find(e->creds, action);
	return c ? cred_bearer(c, timeout_ms, gen) : NULL;
}

static const char *
op_record_token(void *ctx, const char *action, const char *resource, long timeout_ms,
		uint64_t *gen)
{
	const struct eops *e = ctx;

	*gen = 0;
	return cred_record_token(creds_find(e->creds, action), resource, timeout_ms, gen);
}

static void
op_record_keep(void *ctx, const char *action, const char *resource, const char *token,
	       int64_t lifetime_ms, uint64_t *gen)
{
	const struct eops *e = ctx;

	cred_record_keep(creds_find(e->creds, action), resource, token, lifetime_ms, gen);
}

static const char *
op_token_refused(void *ctx, const char *action)
{
	const struct eops *e = ctx;

	return cred_refused_code(creds_find(e->creds, action));
}

static int
op_proof(void *ctx, const char *action, const char *method, const char *url, const char *token,
	 char **proof)
{
	const struct eops *e = ctx;

	*proof = NULL;
	return cred_proof(creds_find(e->creds, action), method, url, token, proof);
}

static void
op_dpop_nonce(void *ctx, const char *action, const char *url, const char *nonce)
{
	const struct eops *e = ctx;

	cred_dpop_nonce(creds_find(e->creds, action), url, nonce);
}

static void
op_token_verdict(void *ctx, const char *action, uint64_t gen, int accepted)
{
	const struct eops *e = ctx;
	const struct cred *c = action == NULL ? creds_pdp(e->creds) : creds_find(e->creds, action);

	if (accepted)
		cred_accepted(c, gen);
	else
		cred_refused(c, gen);
}

/* §6: the same fields as the P:notify entry, as JSON. */
static void
op_notified(void *ctx, const char *id, const char *owner, const char *kind, const char *reason,
	    const char *on_behalf_of, const char *action, const char *resource, const char *at)
{
	const struct eops *e = ctx;

	struct webhook_note n = {id, owner, kind, reason, on_behalf_of, action, resource, at};

	if (e->webhook != NULL)
		(void)webhook_post_note(e->webhook, &n);	/* out of memory: as a full queue */
}

static void
op_call_done(void *ctx, const char *action, long status, long long duration_ms,
	     long long queue_delay_ms)
{
	const struct eops *e = ctx;

	if (e->call_done)
		e->call_done(e->call_done_arg, action, status, duration_ms, queue_delay_ms);
}

static void
op_outcome(void *ctx, const char *action, const char *state, const char *reason)
{
	const struct eops *e = ctx;

	if (e->outcome)
		e->outcome(e->call_done_arg, action, state, reason);
}

static void
op_released(void *ctx)
{
	const struct eops *e = ctx;

	e->released(e->arg);
}

const struct ejob_ops eops_ops = {
	.now_ms = op_now_ms,
	.timer = op_timer,
	.load = op_load,
	.verify = op_verify,
	.write = op_write,
	.call = op_call,
	.exchange = op_exchange,
	.redispatch = op_redispatch,
	.handback = op_handback,
	.park = op_park,
	.reclaim = op_reclaim,
	.cancel = op_cancel,
	.auth = op_auth,
	.bearer = op_bearer,
	.record_token = op_record_token,
	.record_keep = op_record_keep,
	.token_refused = op_token_refused,
	.proof = op_proof,
	.dpop_nonce = op_dpop_nonce,
	.token_verdict = op_token_verdict,
	.notified = op_notified,
	.call_done = op_call_done,
	.outcome = op_outcome,
	.released = op_released,
};
