/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ejob: one entry in hand, the imperative shell around the job core.
 *
 * The core (job_next) decides, and apply() carries out the effects in
 * order: first the Redis transition (one Lua script: fencing, state, audit,
 * dead letter, notification and XACK together), then the HTTP call, timer
 * or token wait that follows from it. Everything it does outside goes
 * through the set's operations (ejob.h); it reads no clock of its own.
 * The Redis steps are rows of ejob_redis.c's table, the calls and the gate
 * ejob_call.c's; the three files share ejob_int.h.
 *
 * Lifetime: every operation in flight holds one reference (`refs`). A
 * callback first drops its own, then acts, and ends with ejob_settle(), which
 * frees the job when it is finished and nothing points at it any more;
 * the public ejobs_* calls end with ejob_settle() too. Nothing else frees a job:
 * ejob_finish() only marks it and cancels what can be cancelled. So a job
 * is used after no call that might free it, and the analyzer sees as much.
 */
#define _DEFAULT_SOURCE
#include "ejob_int.h"

static void copy_cut(char *dst, size_t n, const char *src);
static int token_ok(const struct ejob *j);
static struct job_policy policy(const struct ejob *j);
static unsigned id_hash(const char *s);
static struct ejob *ejob_find(const struct ejobs *s, const char *stream_id);
static void cancel_op(struct ejob *j, enum ejob_op kind, void **h);
static void ejob_timer_stop(struct ejob *j);
static void ejob_release(struct ejob *j);
static struct ejob *ejob_new(struct ejobs *s, const char *stream_id, int deliveries);
static void apply(struct ejob *j);
static void on_timer(void *arg);
static void trace_of(struct ejob *j, const char *given);
static void ejob_token_ready(struct ejob *j);
static enum job_doing doing(const struct ejob *j);
static void ejob_stop(struct ejob *j);
static void ejob_redis_up(struct ejob *j);
static void each(struct ejobs *s, void (*f)(struct ejob *));
static void ejob_auth_ready(struct ejob *j);
static void ejob_auth_lost(struct ejob *j);
static void ejob_gate_wake(struct ejob *j);

/* R4: the record's P:final mark, into key->s ("" when it does not fit:
 * then the load is refused, and retried, rather than read without it). */
const char *
ejob_final_key_of(const struct ejob *j, struct hash_key *key)
{
	if (store_final_key(env_of(j)->keys, j->id, key->s, sizeof key->s) < 0)
		key->s[0] = '\0';
	return key->s;
}

/* key->s for an entry with an id (ejobs_admit checked that it fits). */
const char *
ejob_hash_key_of(const struct ejob *j, struct hash_key *key)
{
	if (store_decision_key(env_of(j)->keys, j->id, key->s, sizeof key->s) < 0)
		key->s[0] = '\0';	/* not reached: the id was checked */
	return key->s;
}

/* src into dst (n bytes), cut to fit: snprintf's "%s" without the format
 * engine, for the ids copied for every entry (issue 10). */
static void
copy_cut(char *dst, size_t n, const char *src)
{
	size_t k = strnlen(src, n - 1);

	memcpy(dst, src, k);
	dst[k] = '\0';
}

const struct cfg_action *
ejob_action(const struct ejob *j)
{
	return j->rec ? cfg_action_find(env_of(j)->cfg, j->rec->action) : NULL;
}

/* How the calls of the job's action authenticate (EJOB_AUTH_*). */
unsigned
ejob_auth_of(const struct ejob *j, const struct cfg_action *a)
{
	return a ? ops_of(j)->auth(ctx_of(j), a->name) : 0;
}

/* R6: a token that outlives the call, for an action that needs one. */
static int
token_ok(const struct ejob *j)
{
	const struct cfg_action *a = ejob_action(j);
	uint64_t gen;

	return !(ejob_auth_of(j, a) & EJOB_AUTH_TOKEN) ||
	    ops_of(j)->bearer(ctx_of(j), a->name, a->timeout_ms, &gen) != NULL;
}

static struct job_policy
policy(const struct ejob *j)
{
	const struct cfg *c = env_of(j)->cfg;
	const struct cfg_action *a = ejob_action(j);
	unsigned auth = ejob_auth_of(j, a);
	struct job_policy p = {
		.retry_base_ms = c->retry.base_ms,
		.retry_cap_ms = c->retry.cap_ms,
		.max_attempts = (int)c->retry.max_attempts,
		.max_deliveries = (int)c->redis.max_deliveries,
		.authz_enabled = c->authz.url != NULL,
		.token_needed = (auth & EJOB_AUTH_TOKEN) != 0,
		.exchange_needed = (auth & EJOB_AUTH_EXCHANGE) != 0,
		.auth_wait_max_ms = c->oauth.auth_wait_max_ms,
		.wait_replicas = (int)c->redis.wait_replicas,
	};
	return p;
}

/* ------------------------------------------------------------------ */
/* the jobs in hand                                                     */

/* FNV-1a: stream ids differ in their last digits. */
static unsigned
id_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static struct ejob *
ejob_find(const struct ejobs *s, const char *stream_id)
{
	unsigned h = id_hash(stream_id);

	for (struct ejob *j = SLIST_FIRST(&s->bucket[h & (EJOB_BUCKETS - 1)]); j;
	    j = SLIST_NEXT(j, hnext))
		if (j->hash == h && strcmp(j->stream_id, stream_id) == 0)
			return j;
	return NULL;
}

/* Cancels the operation behind *h, if any: its callback and its reference
 * are gone. */
static void
cancel_op(struct ejob *j, enum ejob_op kind, void **h)
{
	if (*h == NULL)
		return;
	ops_of(j)->cancel(ctx_of(j), kind, *h);
	*h = NULL;
	j->refs--;
}

static void
ejob_timer_stop(struct ejob *j)
{
	cancel_op(j, EJOB_OP_TIMER, &j->timer);
	j->timer_kind = T_NONE;
}

void
ejob_drop_xtoken(struct ejob *j)
{
	if (j->xtoken != NULL) {
		explicit_bzero(j->xtoken, strlen(j->xtoken));
		free(j->xtoken);
		j->xtoken = NULL;
	}
}

/* Unlinks j and frees it, whatever still points at it. */
static void
ejob_release(struct ejob *j)
{
	struct ejobs *s = j->set;

	TAILQ_REMOVE(&s->all, j, link);
	SLIST_REMOVE(&s->bucket[j->hash & (EJOB_BUCKETS - 1)], j, ejob, hnext);
	s->n--;
	record_free(j->rec);
	free(j->raw);
	ejob_drop_xtoken(j);
	free(j->bad_owner);
	free(j);
}

void
ejob_finish(struct ejob *j)
{
	if (j->gate_held)
		ejob_gate_give_back(j, GATE_NO_CALL);
	j->finished = 1;
	ejob_timer_stop(j);
	cancel_op(j, EJOB_OP_CALL, &j->call);
	cancel_op(j, EJOB_OP_EXCHANGE, &j->xch);
	cancel_op(j, EJOB_OP_VERIFY, &j->verify);
}

/* The end of every callback and every ejobs_* call that touched j: frees
 * it when it is finished and no operation points at it any more, and says
 * so. j must not be used after this. */
void
ejob_settle(struct ejob *j)
{
	if (!j->finished || j->refs > 0)
		return;
	const struct ejob_env *env = j->set->env;

	ejob_release(j);
	env->ops->released(env->ctx);
}

/* An operation's callback arrived: its reference goes; 1 when the job is
 * still to act on it. */
int
ejob_answered(struct ejob *j)
{
	j->refs--;
	j->wait = W_NONE;
	return !j->finished;
}

static struct ejob *
ejob_new(struct ejobs *s, const char *stream_id, int deliveries)
{
	struct ejob *j = calloc(1, sizeof *j);

	if (j == NULL)
		return NULL;
	j->set = s;
	copy_cut(j->stream_id, sizeof j->stream_id, stream_id);
	j->core.deliveries = deliveries;
	TAILQ_INSERT_HEAD(&s->all, j, link);
	j->hash = id_hash(j->stream_id);
	SLIST_INSERT_HEAD(&s->bucket[j->hash & (EJOB_BUCKETS - 1)], j, hnext);
	s->n++;
	return j;
}

/* The job's one timer, for `kind`, in delay_ms. Without memory for it the
 * entry is let go (it stays pending, for R11/R14): never left in hand with
 * nothing to wake it. */
void
ejob_arm(struct ejob *j, enum ejob_timer kind, int64_t delay_ms)
{
	ejob_timer_stop(j);
	j->timer = ops_of(j)->timer(ctx_of(j), delay_ms > 0 ? delay_ms : 0, on_timer, j);
	if (j->timer == NULL) {
		log_error("job.timer", "id=%s stream_id=%s error=\"out of memory\"",
		    lid(j), j->stream_id);
		ejob_finish(j);
		return;
	}
	j->refs++;
	j->timer_kind = kind;
}

/* R6: entries of the set kept in hand waiting for a token. */
static long
token_kept(const struct ejobs *s)
{
	const struct ejob *j;
	long n = 0;

	TAILQ_FOREACH(j, &s->all, link)
		n += !j->finished && j->timer_kind == T_TOKEN_WAIT;
	return n;
}

/* The token may have come while this step was written, or the failed call
 * used an older one: then go on from the loop. The wait ends at the
 * deadline or after auth_wait_max_ms (at_ms). R6: beyond its share of the
 * hand a job whose scope has no token is parked, so that the entries of
 * the other actions behind it are read and run. */
static void
token_wait(struct ejob *j)
{
	int ok = token_ok(j);
	int needed = (ejob_auth_of(j, ejob_action(j)) & EJOB_AUTH_TOKEN) != 0;

	if (j->rec != NULL && ops_of(j)->park != NULL && consumer_token_parks(needed, ok,
	    token_kept(j->set), env_of(j)->cfg->daemon.max_in_flight)) {
		ejob_step_start(j, EJOB_STEP_PARK);
		return;
	}
	ejob_arm(j, T_TOKEN_WAIT, ok ? 0 : j->step.at_ms - now_ms(j));
}

void
ejob_continue_effects(struct ejob *j)
{
	unsigned fx = j->step.effects;

	j->wait = W_NONE;
	if (fx & (JOB_FX_END | JOB_FX_RELEASE)) {
		ejob_finish(j);
		return;
	}
	if (j->set->draining) {
		/* R15: no new call and no new wait once stopping; the entry
		 * stays pending for R11/R14. */
		ejob_finish(j);
		return;
	}
	if (fx & JOB_FX_AUTHZ)
		ejob_start_authz(j);
	else if (fx & JOB_FX_EXCHANGE)
		ejob_start_exchange(j);
	else if (fx & JOB_FX_CALL) {
		j->nonce_retried = 0;	/* a new call: it may answer one challenge */
		ejob_start_call(j);
	}
	else if (fx & JOB_FX_GATE_WAIT)
		ejob_gate_hold(j);
	else if (fx & JOB_FX_RETRY_AT)
		ejob_arm(j, T_RETRY, j->step.at_ms - now_ms(j));
	else if (fx & JOB_FX_REDISPATCH)
		ejob_step_start(j, EJOB_STEP_REDISPATCH);
	else if (fx & JOB_FX_HANDBACK)
		ejob_step_start(j, EJOB_STEP_HANDBACK);
	else if (fx & JOB_FX_WAIT_TOKEN)
		token_wait(j);
}

/* Carries out j->step: logs it, then the Redis write or what follows. */
static void
apply(struct ejob *j)
{
	if (j->step.effects & (JOB_FX_WRITE_STATE | JOB_FX_DEAD_LETTER))
		ejob_log_step(j, &j->step);
	if (j->step.effects & JOB_FX_DROP_TOKEN) {
		/* R9: one refresh however many calls fail; a call that failed with
		 * an older token does not throw away a newer one. */
		env_of(j)->n->auth_failures++;
		ops_of(j)->token_verdict(ctx_of(j), j->rec ? j->rec->action : NULL, j->token_gen, 0);
	}
	if (j->lost || (j->step.effects & JOB_FX_RELEASE)) {
		ejob_finish(j);
		return;
	}
	if (job_step_writes(&j->step))
		ejob_step_start(j, EJOB_STEP_WRITE);
	else
		ejob_continue_effects(j);
}

void
ejob_feed(struct ejob *j, struct job_event *ev)
{
	struct job_policy pol = policy(j);

	ev->rnd = rnd_u64();
	ev->token_ok = token_ok(j);
	ev->gate_shut = ejob_gate_shut(j);
	/* §9: a token the IdP refused for good fails the job, no wait mends it */
	const struct cfg_action *a = ev->token_ok ? NULL : ejob_action(j);
	const char *code = a && ops_of(j)->token_refused ?
	    ops_of(j)->token_refused(ctx_of(j), a->name) : NULL;
	if (code != NULL)
		ev->token_refused = job_idp_reason(code);
	j->step = job_next(&pol, &j->core, ev, now_ms(j));
	ejob_gate_follow(j);
	if (j->step.effects == 0 && !job_state_terminal(j->step.next)) {
		log_debug("job.ignored", "id=%s detail=%s", lid(j), LOG_Q(j->step.detail));
		return;
	}
	apply(j);
}

static void
on_timer(void *arg)
{
	struct ejob *j = arg;
	enum ejob_timer kind = j->timer_kind;
	struct job_event ev = {0};

	j->timer = NULL;
	j->timer_kind = T_NONE;
	j->refs--;
	switch (j->finished ? T_NONE : kind) {
	case T_RETRY:
		ev.kind = JOB_EV_TIMER;
		ejob_feed(j, &ev);
		break;
	case T_TOKEN_WAIT:
		ev.kind = token_ok(j) ? JOB_EV_TOKEN_READY : JOB_EV_TOKEN_TIMEOUT;
		ejob_feed(j, &ev);
		break;
	case T_GATE_WAIT:
		j->gate_kicked = 0;
		ev.kind = JOB_EV_GATE;
		ejob_feed(j, &ev);
		break;
	case T_REDIS_RETRY:
	case T_REDISPATCH_RETRY:
	case T_HANDBACK_RETRY:
	case T_RECLAIM_RETRY:
	case T_PARK_RETRY:
	case T_LOAD_RETRY:
		/* R17: the Redis step this timer is the retry of, again */
		ejob_step_start(j, (enum ejob_step)ejob_step_of_timer(kind));
		break;
	case T_NONE:
		break;
	}
	ejob_settle(j);
}

/* §13: the entry's traceparent when it is one, else a new trace. */
static void
trace_of(struct ejob *j, const char *given)
{
	j->trace_given = given != NULL && trace_parse(given, strlen(given), j->trace) == 0;
	if (!j->trace_given) {
		if (given != NULL)
			log_warn("job.traceparent", "stream_id=%s value=%s detail=\"not a W3C "
			    "traceparent: the job starts a new trace\"", j->stream_id, LOG_Q(given));
		trace_new(rnd_u64(), rnd_u64(), rnd_u64(), j->trace);
	}
	snprintf(j->lid, sizeof j->lid, "%s traceparent=%s", j->id[0] ? j->id : "-", j->trace);
}

void
ejobs_admit(struct ejobs *s, const char *stream_id, const char *id, int deliveries,
	    const char *traceparent)
{
	if (ejob_find(s, stream_id))
		return;	/* already in hand: a renewal or a second scan */
	struct ejob *j = ejob_new(s, stream_id, deliveries);
	struct hash_key key;
	if (j == NULL) {
		log_error("job.admit", "stream_id=%s error=\"out of memory\"", stream_id);
		return;
	}
	s->env->n->received++;
	int named = id != NULL && record_id_valid(id) &&
	    store_decision_key(s->env->keys, id, key.s, sizeof key.s) == 0;
	if (named)
		copy_cut(j->id, sizeof j->id, id);
	trace_of(j, traceparent);
	if (!named) {
		struct job_event ev = {.kind = JOB_EV_NO_ID};
		ejob_feed(j, &ev);
	} else {
		ejob_step_start(j, EJOB_STEP_LOAD);
	}
	ejob_settle(j);
}

/* ------------------------------------------------------------------ */
/* what the consumer tells an entry                                     */

int
ejobs_dead_deleted(struct ejobs *s, const char *stream_id)
{
	if (ejob_find(s, stream_id))
		return 0;
	struct ejob *j = ejob_new(s, stream_id, 0);
	if (j == NULL)
		return -1;
	/* Gone from the PEL too: the core writes it without the lease check. */
	struct job_event ev = {.kind = JOB_EV_ENTRY_DELETED};
	ejob_feed(j, &ev);
	ejob_settle(j);
	return 0;
}

void
ejobs_lease_lost(struct ejobs *s, const char *stream_id)
{
	struct ejob *j = ejob_find(s, stream_id);

	if (j == NULL || j->finished)
		return;
	log_warn("job.lease_lost", "id=%s stream_id=%s", lid(j), j->stream_id);
	j->lost = 1;
	struct job_event ev = {.kind = JOB_EV_LEASE_LOST};
	ejob_feed(j, &ev);
	ejob_settle(j);
}

void
ejobs_unpending(struct ejobs *s, const char *stream_id)
{
	struct ejob *j = ejob_find(s, stream_id);

	if (j == NULL || j->finished || j->unpending)
		return;
	log_warn("job.unpending", "id=%s stream_id=%s detail=\"pending for nobody: a result "
	    "obtained is still written\"", lid(j), j->stream_id);
	j->unpending = 1;
}

static void
ejob_token_ready(struct ejob *j)
{
	if (j->finished || j->timer_kind != T_TOKEN_WAIT || !token_ok(j))
		return;
	ejob_timer_stop(j);
	struct job_event ev = {.kind = JOB_EV_TOKEN_READY};
	ejob_feed(j, &ev);
}

/* What the job is doing, as the core's stop rule sees it. */
static enum job_doing
doing(const struct ejob *j)
{
	switch (j->wait) {
	case W_CALL:
	case W_AUTHZ:
		return JOB_DOING_CALL;
	case W_WRITE:
		return JOB_DOING_WRITE;
	default:
		break;
	}
	/* R20: a held write, or its reclaim, carries a result in hand too */
	return j->timer_kind == T_REDIS_RETRY || j->timer_kind == T_RECLAIM_RETRY || j->held ||
	    j->wait == W_RECLAIM ? JOB_DOING_WRITE_AGAIN : JOB_DOING_NOTHING;
}

/* R15: the core says who runs on (job_runs_on_at_stop); the rest is let go. */
static void
ejob_stop(struct ejob *j)
{
	if (!j->finished && !job_runs_on_at_stop(&j->core, &j->step, doing(j)))
		ejob_finish(j);
}

static void
ejob_redis_up(struct ejob *j)
{
	if (j->finished || (j->timer_kind != T_REDIS_RETRY && j->timer_kind != T_LOAD_RETRY &&
	    j->timer_kind != T_REDISPATCH_RETRY && j->timer_kind != T_HANDBACK_RETRY &&
	    j->timer_kind != T_RECLAIM_RETRY && j->timer_kind != T_PARK_RETRY))
		return;
	consumer_err_redis_up(&j->errs);
	ejob_arm(j, j->timer_kind, 0);
}

/* ------------------------------------------------------------------ */
/* the set                                                              */

struct ejobs *
ejobs_new(const struct ejob_env *env)
{
	struct ejobs *s = calloc(1, sizeof *s);	/* every bucket an empty SLIST */

	if (s != NULL) {
		s->env = env;
		TAILQ_INIT(&s->all);
	}
	return s;
}

void
ejobs_free(struct ejobs *s)
{
	if (s == NULL)
		return;
	while (!TAILQ_EMPTY(&s->all))
		ejob_release(TAILQ_FIRST(&s->all));
	free(s);
}

size_t
ejobs_count(const struct ejobs *s)
{
	return s->n;
}

size_t
ejobs_waiting_token(const struct ejobs *s)
{
	const struct ejob *j;
	size_t n = 0;

	TAILQ_FOREACH(j, &s->all, link)
		n += !j->finished && j->core.state == JOB_AUTH_WAIT;
	return n;
}

/* f on each job of the set, then settle(): the next one is read first, as
 * the job may be freed (entries f admits go to the head, not seen here). */
static void
each(struct ejobs *s, void (*f)(struct ejob *))
{
	struct ejob *j = TAILQ_FIRST(&s->all);

	while (j != NULL) {
		struct ejob *next = TAILQ_NEXT(j, link);
		f(j);
		ejob_settle(j);
		j = next;
	}
}

void
ejobs_redis_up(struct ejobs *s)
{
	each(s, ejob_redis_up);
}

static void
ejob_auth_ready(struct ejob *j)
{
	if (!j->finished && j->held)
		ejob_step_start(j, EJOB_STEP_RECLAIM);
}

/* A write waiting on R17's backoff failed before the credential was known
 * to be lost (a connection closed early, by a revocation): it is held too,
 * and reclaimed before it goes again. */
static void
ejob_auth_lost(struct ejob *j)
{
	if (j->finished || j->timer_kind != T_REDIS_RETRY)
		return;
	ejob_timer_stop(j);
	ejob_hold(j);
}

void
ejobs_redis_auth_lost(struct ejobs *s)
{
	s->auth_lost = 1;
	each(s, ejob_auth_lost);
}

void
ejobs_redis_auth_ready(struct ejobs *s)
{
	s->auth_lost = 0;
	each(s, ejob_auth_ready);
}

void
ejobs_token_ready(struct ejobs *s)
{
	each(s, ejob_token_ready);
}

static void
ejob_gate_wake(struct ejob *j)
{
	if (j->finished || j->timer_kind != T_GATE_WAIT || j->gate_kicked)
		return;
	j->gate_kicked = 1;
	ejob_arm(j, T_GATE_WAIT, 0);
}

void
ejobs_gate_wake(struct ejobs *s)
{
	if (!s->draining)
		each(s, ejob_gate_wake);
}

size_t
ejobs_held(const struct ejobs *s)
{
	size_t n = 0;
	const struct ejob *j;

	for (j = TAILQ_FIRST(&s->all); j != NULL; j = TAILQ_NEXT(j, link))
		n += !j->finished && j->timer_kind == T_GATE_WAIT;
	return n;
}

void
ejobs_stop(struct ejobs *s)
{
	s->draining = 1;
	each(s, ejob_stop);
}

void
ejobs_abandon(struct ejobs *s)
{
	struct ejob *j;

	s->draining = 1;
	/* the loop TAILQ_FOREACH spells, which cppcheck cannot expand */
	for (j = TAILQ_FIRST(&s->all); j != NULL; j = TAILQ_NEXT(j, link))
		ejob_finish(j);
}

size_t
ejobs_leased(const struct ejobs *s, const char **ids, size_t max)
{
	size_t n = 0;
	const struct ejob *j;

	for (j = TAILQ_FIRST(&s->all); j != NULL && n < max; j = TAILQ_NEXT(j, link))
		if (!j->finished && !j->lost && !j->core.deleted && !j->unpending)
			ids[n++] = j->stream_id;
	return n;
}
