/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ejob: one entry in hand, the imperative shell around the job core.
 *
 * The core (job_next) decides, and apply() carries out the effects in
 * order: first the Redis transition (one Lua script: fencing, state, audit,
 * dead letter, notification and XACK together), then the HTTP call, timer
 * or token wait that follows from it. Everything it does outside goes
 * through the set's operations (ejob.h); it reads no clock of its own.
 *
 * Lifetime: every operation in flight holds one reference (`refs`). A
 * callback first drops its own, then acts, and ends with settle(), which
 * frees the job when it is finished and nothing points at it any more;
 * the public ejobs_* calls end with settle() too. Nothing else frees a job:
 * ejob_finish() only marks it and cancels what can be cancelled. So a job
 * is used after no call that might free it, and the analyzer sees as much.
 */
#define _DEFAULT_SOURCE
#include "worker/ejob.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "auth/authz.h"
#include "core/consumer.h"
#include "auth/cred.h"
#include "core/gate.h"
#include "jose/dpop.h"
#include "core/job.h"
#include "base/log.h"
#include "base/dec.h"
#include "base/rnd.h"
#include "core/trace.h"
#include "core/urltpl.h"
#include "base/wtime.h"

#define STREAM_ID_MAX 48

/* What the job's one timer is armed for. */
enum ejob_timer { T_NONE, T_RETRY, T_TOKEN_WAIT, T_REDIS_RETRY, T_REDISPATCH_RETRY, T_LOAD_RETRY,
	T_HANDBACK_RETRY, T_RECLAIM_RETRY, T_GATE_WAIT };
/* Which operation's answer the job waits for. */
enum ejob_wait { W_NONE, W_WRITE, W_LOAD, W_VERIFY, W_AUTHZ, W_EXCHANGE, W_CALL, W_REDISPATCH,
	W_HANDBACK, W_RECLAIM };

/* Buckets of the index by stream id: every entry read is looked up there
 * (a walk of the list with strcmp cost 5,000 instructions a job at 256 in
 * flight, 3 %). Chains stay short up to thousands in hand. A power of two. */
#define EJOB_BUCKETS 1024

/* §13: a job held at the gate asks again at least this often, whatever
 * else wakes it: a place given back on another shard's set, a probe's end. */

TAILQ_HEAD(ejob_list, ejob);
SLIST_HEAD(ejob_chain, ejob);

struct ejobs {
	const struct ejob_env *env;
	struct ejob_list all;	/* owned: every entry in hand, finished or not */
	struct ejob_chain bucket[EJOB_BUCKETS];	/* the same entries, by stream id */
	size_t n;
	int draining;		/* R15: no new call, no new wait */
	int auth_lost;		/* R20: Redis refused the credential, no new one yet */
};

/* One entry in hand. */
struct ejob {
	TAILQ_ENTRY(ejob) link;
	SLIST_ENTRY(ejob) hnext;	/* in its bucket */
	unsigned hash;			/* of stream_id */
	struct ejobs *set;
	char stream_id[STREAM_ID_MAX];
	char id[RECORD_ID_MAX + 1];	/* "" when the entry had no valid id; else
					   its hash key fits in a struct hash_key */
	struct job core;
	struct job_step step;		/* the step being carried out */
	struct record *rec;
	char *bad_owner;		/* notifyOnDenial of a verified but invalid record */
	char *raw;			/* the record as stored: token = exchange's subject */
	char *xtoken;			/* the token exchanged for this call; wiped */
	/* handles of the operations in flight that can be cancelled */
	void *timer, *verify, *call, *xch;
	struct job_event loaded;	/* what the load said, while it is verified */
	int refs;			/* operations in flight whose callback comes here */
	int finished;
	int lost;			/* the lease is gone: abandon at the next step */
	int unpending;			/* pending for nobody: no lease to renew */
	int held;			/* R20: j->step's write waits for a good credential */
	struct consumer_errs errs;	/* R17: its failed Redis steps in a row */
	enum ejob_wait wait;
	enum ejob_timer timer_kind;
	int last_status;
	int nonce_retried;		/* RFC 9449: this call answered a nonce challenge */
	uint64_t token_gen;		/* generation of the token the call used */
	char written_at[WTIME_RFC3339_LEN];	/* `at` of the last transition sent */
	long long attempt_started_ms;
	/* §13: a place at the gate, from the attempt's start to its call's
	 * answer; whether it is the breaker's probe; and a held job's timer
	 * set to go at once (a place came free) */
	int gate_held, gate_probe, gate_kicked;
	/* §13: the entry's traceparent (trace_given) or a new trace; "" for
	 * an entry not admitted (deleted while pending) */
	char trace[TRACE_LEN + 1];
	int trace_given;
	/* "id traceparent=..." as every log line about the job shows it */
	char lid[RECORD_ID_MAX + sizeof " traceparent=" + TRACE_LEN + 1];
};

static void apply(struct ejob *j);
static void feed(struct ejob *j, struct job_event *ev);
static void start_load(struct ejob *j);
static void on_timer(void *arg);

/* ------------------------------------------------------------------ */
/* small helpers                                                        */

/* The job's `id` value in its log lines: its id, then its trace (§13), so
 * that every line about it carries both. */
static const char *
lid(const struct ejob *j)
{
	return j->lid[0] ? j->lid : j->id[0] ? j->id : "-";
}

static const struct ejob_env *
env_of(const struct ejob *j)
{
	return j->set->env;
}

static const struct ejob_ops *
ops_of(const struct ejob *j)
{
	return j->set->env->ops;
}

static void *
ctx_of(const struct ejob *j)
{
	return j->set->env->ctx;
}

static int64_t
now_ms(const struct ejob *j)
{
	return ops_of(j)->now_ms(ctx_of(j));
}

/* The record's hash key, built where it is used: kept in every entry it
 * was a third of the entry, 80 KiB at 256 in flight (issue 10, RSS). */
struct hash_key {
	char s[STORE_KEY_MAX + RECORD_ID_MAX + 1];
};

/* R4: the record's P:final mark, into key->s ("" when it does not fit:
 * then the load is refused, and retried, rather than read without it). */
static const char *
final_key_of(const struct ejob *j, struct hash_key *key)
{
	if (store_final_key(env_of(j)->keys, j->id, key->s, sizeof key->s) < 0)
		key->s[0] = '\0';
	return key->s;
}

/* key->s for an entry with an id (ejobs_admit checked that it fits). */
static const char *
hash_key_of(const struct ejob *j, struct hash_key *key)
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

static const struct cfg_action *
job_action(const struct ejob *j)
{
	return j->rec ? cfg_action_find(env_of(j)->cfg, j->rec->action) : NULL;
}

/* How the calls of the job's action authenticate (EJOB_AUTH_*). */
static unsigned
job_auth(const struct ejob *j, const struct cfg_action *a)
{
	return a ? ops_of(j)->auth(ctx_of(j), a->name) : 0;
}

/* R6: a token that outlives the call, for an action that needs one. */
static int
token_ok(const struct ejob *j)
{
	const struct cfg_action *a = job_action(j);
	uint64_t gen;

	return !(job_auth(j, a) & EJOB_AUTH_TOKEN) ||
	    ops_of(j)->bearer(ctx_of(j), a->name, a->timeout_ms, &gen) != NULL;
}

static struct job_policy
policy(const struct ejob *j)
{
	const struct cfg *c = env_of(j)->cfg;
	const struct cfg_action *a = job_action(j);
	unsigned auth = job_auth(j, a);
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

static void
drop_xtoken(struct ejob *j)
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
	drop_xtoken(j);
	free(j->bad_owner);
	free(j);
}

/* Marks j finished and cancels what can be cancelled; frees nothing (the
 * answers of loads and writes still come, and settle() frees it after the
 * last). */
static void gate_give_back(struct ejob *j, enum gate_result r);

static void
ejob_finish(struct ejob *j)
{
	if (j->gate_held)
		gate_give_back(j, GATE_NO_CALL);
	j->finished = 1;
	ejob_timer_stop(j);
	cancel_op(j, EJOB_OP_CALL, &j->call);
	cancel_op(j, EJOB_OP_EXCHANGE, &j->xch);
	cancel_op(j, EJOB_OP_VERIFY, &j->verify);
}

/* The end of every callback and every ejobs_* call that touched j: frees
 * it when it is finished and no operation points at it any more, and says
 * so. j must not be used after this. */
static void
settle(struct ejob *j)
{
	if (!j->finished || j->refs > 0)
		return;
	const struct ejob_env *env = j->set->env;

	ejob_release(j);
	env->ops->released(env->ctx);
}

/* An operation's callback arrived: its reference goes; 1 when the job is
 * still to act on it. */
static int
answered(struct ejob *j)
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
static void
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

/* R17: the Redis step `kind` failed -- text is its error reply, NULL when
 * none came (it could not be sent, or the connection went); entry_data:
 * the step read or wrote the entry's own hash. The consumer core says
 * whether it is sent again after a delay (never in a tight loop) or the
 * entry is given up: then the core of the job decides the dead letter. */
static void
redis_failed(struct ejob *j, enum ejob_timer kind, const char *text, int entry_data)
{
	enum consumer_err c = consumer_err_classify(text);
	struct consumer_err_step st = consumer_err_next(&j->errs, c, entry_data, rnd_u64());

	/* rconn logs each kind once per episode; an entry's own errors are
	 * few (three at most) and name it, so each is logged with its id. */
	if (c == CONSUMER_ERR_ENTRY && entry_data)
		log_warn("job.redis_error", "id=%s stream_id=%s try=%u of %d error=%s",
		    lid(j), j->stream_id, j->errs.entry, CONSUMER_ERR_ENTRY_TRIES,
		    LOG_Q(text));
	if (st.verdict == CONSUMER_RETRY) {
		ejob_arm(j, kind, st.delay_ms);
		return;
	}
	char line[sizeof j->step.detail];
	struct job_event ev = {.kind = JOB_EV_REDIS_ERROR,
	    .redis_error = consumer_err_line(text, line, sizeof line)};
	feed(j, &ev);
}

/* The transition names the record's hash: not for an entry without an id
 * or a hash (no-id, record-missing), nor for one whose hash Redis refuses
 * to read or write (R17: its dead letter is written without it). */
static int
writes_hash(const struct ejob *j)
{
	return j->id[0] && !j->core.redis_broken &&
	    (j->rec || (j->step.effects & JOB_FX_WRITE_STATE));
}

/* ------------------------------------------------------------------ */
/* Redis transitions                                                    */

static const char *
notify_owner(const struct ejob *j)
{
	const char *dflt = env_of(j)->cfg->notify.default_owner;

	if (j->rec && j->rec->notify_on_denial)
		return j->rec->notify_on_denial;
	if (j->bad_owner)
		return j->bad_owner;
	return dflt ? dflt : "";
}

static void
count_outcome(struct engine_counters *n, enum job_state st)
{
	switch (st) {
	case JOB_DONE: n->done++; break;
	case JOB_EXPIRED: n->expired++; break;
	case JOB_DENIED: n->denied++; break;
	case JOB_FAILED: n->failed++; break;
	case JOB_DEAD: n->dead++; break;
	case JOB_RETRYING: n->retried++; break;
	default: break;
	}
}

static void
log_step(const struct ejob *j, const struct job_step *s)
{
	const char *ev = "job.state";
	enum log_level lvl = LOG_INFO;

	if (s->next == JOB_RUNNING || s->next == JOB_QUEUED)
		lvl = LOG_DEBUG;
	if (s->next == JOB_DEAD || s->next == JOB_FAILED)
		lvl = LOG_WARN;
	if (lvl > log_get_level())
		return;	/* before the LOG_Qs format anything */
	log_msg(lvl, ev, "id=%s stream_id=%s state=%s action=%s resource=%s attempt=%d "
	    "reason=%s detail=%s", lid(j), j->stream_id,
	    job_state_name(s->next)[0] ? job_state_name(s->next) : "-",
	    j->rec ? LOG_Q(j->rec->action) : "-", j->rec ? LOG_Q(j->rec->resource) : "-",
	    j->core.calls, reason_name(s->reason), LOG_Q(s->detail));
}

static void after_transition(void *arg, const struct ejob_written *r);
static void write_failed(struct ejob *j, const char *text);
static void start_reclaim(struct ejob *j);

static void
send_transition(struct ejob *j)
{
	const struct ejob_env *env = env_of(j);
	const struct cfg *cfg = env->cfg;
	const struct job_step *s = &j->step;
	const struct job_write *w = &s->write;
	unsigned fx = s->effects;
	char status[16] = "", score[24] = "";
	int terminal = job_state_terminal(s->next);
	struct hash_key key;
	/* the fencing flags are the core's (job_next, struct job_write) */
	struct store_transition t = {
		.hash_key = writes_hash(j) ? hash_key_of(j, &key) : NULL,
		.stream_id = j->stream_id,
		.record_id = j->id,
		.traceparent = j->trace_given ? j->trace : "",
		.state = (fx & JOB_FX_WRITE_STATE) ? job_state_name(s->next) : "",
		.outcome = reason_name(s->reason),
		.detail = s->detail,
		.http_status = status,
		.fence_attempts = w->fence_attempts,
		.require_owner = w->require_owner,
		.incr_attempts = w->incr_attempts,
		.ack = w->ack,
		.dead_reason = (fx & JOB_FX_DEAD_LETTER) ? reason_name(s->reason) : "",
		/* With no owner named anywhere there is nobody to tell. */
		.notify = (fx & JOB_FX_NOTIFY) && notify_owner(j)[0],
		.notify_owner = notify_owner(j),
		.notify_kind = job_state_name(s->next),
		.on_behalf_of = j->rec ? j->rec->on_behalf_of : "",
		.action = j->rec ? j->rec->action : "",
		.resource = j->rec ? j->rec->resource : "",
		.schedule_score = score,
		.deliveries = j->core.deliveries,
		.attempt = j->core.calls,
		/* kept: the webhook says the same `at` as P:notify */
		.at = wtime_format_rfc3339(now_ms(j), j->written_at, sizeof j->written_at),
		/* §3.3: kept past the record's deadline, not only past now */
		.retain_ms = terminal ? job_retain_ms(&j->core, cfg->records.clock_skew_s * 1000LL,
		    cfg->records.retain_s * 1000LL, now_ms(j)) : 0,
		.dead_maxlen = cfg->redis.dead_maxlen,
		.notify_maxlen = cfg->redis.notify_maxlen,
		.skip_lease = w->skip_lease,
		.keep_unpending = w->keep_unpending,
		.call_result = w->call_result,
	};

	if (j->last_status > 0)	/* no snprintf for every job */
		*dec_put(status, (size_t)j->last_status) = '\0';
	if (fx & JOB_FX_RESCHEDULE)
		snprintf(score, sizeof score, "%" PRId64, s->at_ms);
	if (env->ops->write(env->ctx, &t, (fx & JOB_FX_WAIT_REPLICAS) ? w->wait_replicas : 0,
	    after_transition, j) < 0) {
		write_failed(j, NULL);
		return;
	}
	j->refs++;
	j->wait = W_WRITE;
}

/* What follows the Redis write: the HTTP call, a timer or a token wait. */
static void start_authz(struct ejob *j);
static void start_call(struct ejob *j);
static void start_redispatch(struct ejob *j);
static void start_handback(struct ejob *j);
static void start_exchange(struct ejob *j);
static void gate_hold(struct ejob *j);

static void
continue_effects(struct ejob *j)
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
		start_authz(j);
	else if (fx & JOB_FX_EXCHANGE)
		start_exchange(j);
	else if (fx & JOB_FX_CALL) {
		j->nonce_retried = 0;	/* a new call: it may answer one challenge */
		start_call(j);
	}
	else if (fx & JOB_FX_GATE_WAIT)
		gate_hold(j);
	else if (fx & JOB_FX_RETRY_AT)
		ejob_arm(j, T_RETRY, j->step.at_ms - now_ms(j));
	else if (fx & JOB_FX_REDISPATCH)
		start_redispatch(j);
	else if (fx & JOB_FX_HANDBACK)
		start_handback(j);
	else if (fx & JOB_FX_WAIT_TOKEN)
		/* The token may have come while this step was written, or the
		 * failed call used an older one: then go on from the loop. The
		 * wait ends at the deadline or after auth_wait_max_ms (at_ms). */
		ejob_arm(j, T_TOKEN_WAIT, token_ok(j) ? 0 : j->step.at_ms - now_ms(j));
}

/* The script wrote the step: the core learns what it says, then count and
 * tell. */
static void
transition_written(struct ejob *j, const struct ejob_written *r)
{
	unsigned fx = j->step.effects;

	job_written(&j->core, &j->step, r->fence);
	if ((fx & JOB_FX_NOTIFY) && notify_owner(j)[0])
		ops_of(j)->notified(ctx_of(j), j->id, notify_owner(j),
		    job_state_name(j->step.next), reason_name(j->step.reason),
		    j->rec ? j->rec->on_behalf_of : "", j->rec ? j->rec->action : "",
		    j->rec ? j->rec->resource : "", j->written_at);
	/* A dead letter with no hash to write (no-id, record-missing) is dead too. */
	enum job_state st = (fx & JOB_FX_WRITE_STATE) ? j->step.next :
	    (fx & JOB_FX_DEAD_LETTER) ? JOB_DEAD : JOB_NONE;
	count_outcome(env_of(j)->n, st);
	if (job_state_terminal(st))
		ops_of(j)->outcome(ctx_of(j), j->rec ? j->rec->action : "", job_state_name(st),
		    reason_name(j->step.reason));
}

static void
written(struct ejob *j, const struct ejob_written *r)
{
	if (!r->ok) {
		/* Nothing was decided twice: the same step is written again
		 * once Redis answers (rconn logged the error kind), unless the
		 * error is the entry's own (R17) -- or the credential's (R20):
		 * then the entry is reclaimed first. */
		write_failed(j, r->error);
		return;
	}
	consumer_err_ok(&j->errs);
	if (!r->written) {
		/* R4: a terminal record, or one that runs from another stream
		 * entry; the script acked this one */
		int dup = r->why && (store_reply_is(r->why, STORE_REPLY_TERMINAL) ||
		    store_reply_is(r->why, STORE_REPLY_DUPLICATE));
		log_info(dup ? "job.duplicate" : "job.abandon", "id=%s stream_id=%s reason=%s",
		    lid(j), j->stream_id, r->why ? LOG_Q(r->why) : "bad-reply");
		ejob_finish(j);
		return;
	}
	if (r->why && store_reply_is(r->why, STORE_REPLY_AGAIN))
		log_info("job.again", "id=%s stream_id=%s attempt=%lld detail=\"the call step "
		    "was written already, its reply lost: counted once\"", lid(j), j->stream_id,
		    r->fence);
	/* R19: the core says what too few replicas mean for this step */
	enum job_repl rp = job_replicated(&j->step, r->replicas);
	if (rp != JOB_REPL_GO)
		log_warn("job.unreplicated", "id=%s stream_id=%s state=%s replicas=%lld wanted=%d "
		    "detail=%s", lid(j), j->stream_id,
		    job_state_name(j->step.next)[0] ? job_state_name(j->step.next) : "-",
		    r->replicas, j->step.write.wait_replicas, rp == JOB_REPL_NO_CALL ?
		    "\"the call step may be lost in a failover: not called\"" :
		    "\"a failover may lose this state: notified all the same\"");
	transition_written(j, r);
	if (rp == JOB_REPL_NO_CALL) {
		struct job_event ev = {.kind = JOB_EV_UNREPLICATED, .replicas = r->replicas};
		feed(j, &ev);
		return;
	}
	continue_effects(j);
}

static void
after_transition(void *arg, const struct ejob_written *r)
{
	struct ejob *j = arg;

	if (answered(j))
		written(j, r);
	settle(j);
}

/* Carries out j->step: logs it, then the Redis write or what follows. */
static void
apply(struct ejob *j)
{
	if (j->step.effects & (JOB_FX_WRITE_STATE | JOB_FX_DEAD_LETTER))
		log_step(j, &j->step);
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
		send_transition(j);
	else
		continue_effects(j);
}

/* ------------------------------------------------------------------ */
/* §13: the gate -- pauses, limits, the breaker (gate.h decides)        */

static struct gate *
gate_of(const struct ejob *j)
{
	return j->rec ? env_of(j)->gate : NULL;
}

static int
gate_shut(const struct ejob *j)
{
	struct gate *g = gate_of(j);

	return g != NULL && gate_check(g, j->rec->action, now_ms(j), NULL) != GATE_GO;
}

/* The oldest job held at the gate that it would let start now goes on from
 * the loop: one per place that came free, and each that starts wakes the
 * next (a pause that ends wakes all: ejobs_gate_wake). */
static void
gate_wake_one(struct ejobs *s)
{
	struct ejob *j;

	if (s->draining)
		return;
	for (j = TAILQ_LAST(&s->all, ejob_list); j != NULL; j = TAILQ_PREV(j, ejob_list, link)) {
		if (j->finished || !gate_may_wake(gate_of(j), j->rec ? j->rec->action : NULL,
		    now_ms(j), j->timer_kind == T_GATE_WAIT, j->gate_kicked))
			continue;
		j->gate_kicked = 1;
		ejob_arm(j, T_GATE_WAIT, 0);
		return;
	}
}

static void
gate_give_back(struct ejob *j, enum gate_result r)
{
	struct gate *g = gate_of(j);
	int64_t now = now_ms(j);

	j->gate_held = 0;
	if (g == NULL)
		return;
	enum gate_breaker before = gate_breaker_at(g, j->rec->action, now);
	gate_done(g, j->rec->action, j->gate_probe, r, now);
	enum gate_breaker after = gate_breaker_at(g, j->rec->action, now);
	const struct cfg_action *a = job_action(j);
	if (after == GATE_BROKEN && before != GATE_BROKEN)
		log_warn("breaker.open", "action=%s open_ms=%ld detail=%s", LOG_Q(j->rec->action),
		    a ? a->breaker_open_ms : 0L, j->gate_probe ? "\"the probe failed\"" :
		    "\"retryable failures in a row\"");
	else if (after == GATE_CLOSED && before != GATE_CLOSED)
		log_info("breaker.closed", "action=%s detail=\"the probe got an answer\"",
		    LOG_Q(j->rec->action));
	j->gate_probe = 0;
	gate_wake_one(j->set);
}

/* The place at the gate follows the core: held while an attempt that
 * passed it (job_next checked gate_shut) awaits the PDP, the exchange or
 * the call; given back when it ends without a call (denied, a PDP or token
 * wait, the deadline). A call's answer gives it back itself, with the
 * outcome. */
static void
gate_follow(struct ejob *j)
{
	struct gate *g = gate_of(j);
	enum gate_place p = gate_place_next(j->gate_held, job_attempt_holds_gate(j->core.awaiting));

	if (p == GATE_PLACE_GIVE)
		gate_give_back(j, GATE_NO_CALL);
	if (g != NULL && p == GATE_PLACE_TAKE) {
		j->gate_probe = gate_take(g, j->rec->action, now_ms(j));
		j->gate_held = 1;
		if (j->gate_probe)
			log_info("breaker.probe", "id=%s action=%s", lid(j), LOG_Q(j->rec->action));
		gate_wake_one(j->set);
	}
}

/* Held until gate_hold_until says. */
static void
gate_hold(struct ejob *j)
{
	struct gate *g = gate_of(j);
	int64_t now = now_ms(j);
	enum gate_verdict v;
	int64_t at = gate_hold_until(g, g ? j->rec->action : NULL, now, j->step.at_ms, &v);

	log_debug("job.held", "id=%s action=%s why=%s", lid(j), j->rec ? LOG_Q(j->rec->action) :
	    "-", gate_verdict_name(v));
	j->gate_kicked = 0;
	ejob_arm(j, T_GATE_WAIT, at - now);
}

static void
feed(struct ejob *j, struct job_event *ev)
{
	struct job_policy pol = policy(j);

	ev->rnd = rnd_u64();
	ev->token_ok = token_ok(j);
	ev->gate_shut = gate_shut(j);
	/* §9: a token the IdP refused for good fails the job, no wait mends it */
	const struct cfg_action *a = ev->token_ok ? NULL : job_action(j);
	const char *code = a && ops_of(j)->token_refused ?
	    ops_of(j)->token_refused(ctx_of(j), a->name) : NULL;
	if (code != NULL)
		ev->token_refused = job_idp_reason(code);
	j->step = job_next(&pol, &j->core, ev, now_ms(j));
	gate_follow(j);
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
		feed(j, &ev);
		break;
	case T_TOKEN_WAIT:
		ev.kind = token_ok(j) ? JOB_EV_TOKEN_READY : JOB_EV_TOKEN_TIMEOUT;
		feed(j, &ev);
		break;
	case T_GATE_WAIT:
		j->gate_kicked = 0;
		ev.kind = JOB_EV_GATE;
		feed(j, &ev);
		break;
	case T_REDIS_RETRY:
		send_transition(j);
		break;
	case T_REDISPATCH_RETRY:
		start_redispatch(j);
		break;
	case T_HANDBACK_RETRY:
		start_handback(j);
		break;
	case T_RECLAIM_RETRY:
		start_reclaim(j);
		break;
	case T_LOAD_RETRY:
		start_load(j);
		break;
	case T_NONE:
		break;
	}
	settle(j);
}

/* ------------------------------------------------------------------ */
/* HTTP: the action call and the authority check                        */

/* RFC 9449 §9: keeps a target's DPoP-Nonce; what the answer says of the
 * proof (job_dpop_answer). */
static enum job_dpop
dpop_answer(struct ejob *j, const struct http_response *resp)
{
	const struct cfg_action *a = job_action(j);
	char uerr[160];

	if (a == NULL || ops_of(j)->dpop_nonce == NULL)
		return JOB_DPOP_NONE;
	if (resp->dpop_nonce != NULL) {
		struct urltpl_vars vars = {j->rec->resource, j->rec->action, j->rec->id,
		    j->rec->on_behalf_of};
		char *url = urltpl_expand(a->url, &vars, uerr, sizeof uerr);
		if (url != NULL)
			ops_of(j)->dpop_nonce(ctx_of(j), a->name, url, resp->dpop_nonce);
		free(url);
	}
	return job_dpop_answer(resp->status, resp->www_authenticate, resp->dpop_nonce != NULL);
}

/* A call that got no answer: its class and curl's message (which names a
 * host and port, no userinfo, no header) at warn, counted by class. */
static void
call_failed(struct ejob *j, const struct http_response *resp)
{
	enum callfail f = resp->fail == CALLFAIL_NONE ? CALLFAIL_OTHER : resp->fail;
	char detail[256];

	env_of(j)->n->call_failures[f]++;
	log_warn("http.failed", "id=%s action=%s attempt=%d class=%s detail=%s", lid(j),
	    LOG_Q(j->rec->action), j->core.calls, callfail_name(f),
	    log_quote(detail, sizeof detail, resp->error));
}

static void
call_answered(struct ejob *j, const struct http_response *resp)
{
	struct job_event ev = {.kind = JOB_EV_HTTP};
	int64_t now = now_ms(j);
	enum job_dpop dp = (job_auth(j, job_action(j)) & EJOB_AUTH_TOKEN) ?
	    dpop_answer(j, resp) : JOB_DPOP_NONE;

	if (job_dpop_retry_now(dp, &j->nonce_retried)) {
		/* one immediate retry with the nonce: no attempt (R8), no R9 */
		log_info("job.dpop_nonce", "id=%s action=%s status=401 retry=1", lid(j),
		    LOG_Q(j->rec->action));
		start_call(j);
		return;
	}
	drop_xtoken(j);	/* cached across nothing: the next call exchanges again */
	ev.dpop_proof_refused = dp == JOB_DPOP_REFUSED;
	ev.no_descriptor = resp->no_descriptor;
	ev.call_fail = resp->fail;
	ev.http_status = (int)resp->status;
	ev.invalid_token = resp->status == 403 && resp->www_authenticate &&
	    job_www_auth_invalid_token(resp->www_authenticate);
	ev.retry_after_ms = job_retry_after_ms(resp->retry_after, now);
	j->last_status = (int)resp->status;
	if (j->gate_held)
		gate_give_back(j, gate_result_of(resp->no_descriptor,
		    job_status_retryable((int)resp->status)));
	if (resp->status >= 200 && resp->status <= 299 &&
	    (job_auth(j, job_action(j)) & EJOB_AUTH_TOKEN))
		ops_of(j)->token_verdict(ctx_of(j), j->rec->action, j->token_gen, 1);
	if (resp->status == 0)
		call_failed(j, resp);
	log_info("job.call", "id=%s action=%s resource=%s attempt=%d status=%ld ms=%ld%s%s",
	    lid(j), LOG_Q(j->rec->action), LOG_Q(j->rec->resource), j->core.calls, resp->status,
	    resp->elapsed_ms, resp->status == 0 ? " error=" : "",
	    resp->status == 0 ? (resp->no_descriptor ? "no-descriptor" : resp->timed_out ?
	    "timeout" : "transport") : "");
	/* a stream id starts with its XADD's ms */
	ops_of(j)->call_done(ctx_of(j), j->rec->action, resp->status, resp->elapsed_ms,
	    j->attempt_started_ms - strtoll(j->stream_id, NULL, 10));
	feed(j, &ev);
}

static void
on_call_done(const struct http_response *resp, void *arg)
{
	struct ejob *j = arg;

	j->call = NULL;
	if (answered(j))
		call_answered(j, resp);
	settle(j);
}

/* The action call's headers (R7), their lines in one buffer (on the stack
 * unless they are long): it holds the bearer, so it is wiped. */
struct call_headers {
	char *buf;
	size_t len;
	const char *list[8];
	char stack[1024];
};

/* Appends "name: value" and its NUL at *p, as long as it needs to be:
 * nothing that goes out is cut short. */
static const char *
put_line(char **p, const char *name, size_t nl, const char *value, size_t vl)
{
	char *line = *p;

	memcpy(line, name, nl);
	line[nl] = ':';
	line[nl + 1] = ' ';
	memcpy(line + nl + 2, value, vl);
	line[nl + 2 + vl] = '\0';
	*p = line + nl + 2 + vl + 1;
	return line;
}

/* proof: a DPoP proof (RFC 9449) when the bearer is a DPoP-bound token,
 * else NULL. */
static int
call_headers_fill(struct call_headers *h, const struct record *r, const char *bearer,
		  const char *proof, const char *trace)
{
	static const char idem[] = "Idempotency-Key", obo[] = "Warrant-On-Behalf-Of",
	    basis[] = "Warrant-Basis", dpop[] = "DPoP", tp[] = "traceparent";
	size_t il = strlen(r->id), ol = strlen(r->on_behalf_of), bl = strlen(r->basis);
	size_t tl = bearer ? strlen(bearer) : 0, pl = proof ? strlen(proof) : 0;
	size_t trl = strlen(trace);
	size_t need = sizeof idem + 2 + il + sizeof obo + 2 + ol + sizeof basis + 2 + bl +
	    sizeof tp + 2 + trl + (bearer ? CRED_AUTH_LINE_SIZE(tl) : 0) +
	    (proof ? sizeof dpop + 2 + pl : 0);
	int nh = 0;
	char *p;

	h->len = 0;
	h->buf = need <= sizeof h->stack ? h->stack : malloc(need);
	if (h->buf == NULL)
		return -1;
	p = h->buf;
	h->list[nh++] = "Content-Type: application/json";
	h->list[nh++] = put_line(&p, idem, sizeof idem - 1, r->id, il);
	h->list[nh++] = put_line(&p, obo, sizeof obo - 1, r->on_behalf_of, ol);
	h->list[nh++] = put_line(&p, basis, sizeof basis - 1, r->basis, bl);
	if (trl > 0)	/* §13 */
		h->list[nh++] = put_line(&p, tp, sizeof tp - 1, trace, trl);
	if (bearer) {
		h->list[nh++] = p;
		p += (proof ? cred_dpop_auth_line(p, bearer, tl) : cred_auth_line(p, bearer, tl)) + 1;
	}
	if (proof)
		h->list[nh++] = put_line(&p, dpop, sizeof dpop - 1, proof, pl);
	h->list[nh] = NULL;
	h->len = (size_t)(p - h->buf);
	return 0;
}

static void
call_headers_free(struct call_headers *h)
{
	if (h->buf == NULL)
		return;
	explicit_bzero(h->buf, h->len);
	if (h->buf != h->stack)
		free(h->buf);
	h->buf = NULL;
}

/* The decided call cannot go out: the core says what that means. */
static void
cannot_call(struct ejob *j, enum job_no_call why)
{
	struct job_event ev = {.kind = JOB_EV_CANNOT_CALL, .no_call = why};
	feed(j, &ev);
}

/* A call that could not be started counts as one that got no answer. */
static void
call_not_started(struct ejob *j, const char *why)
{
	struct job_event ev = {.kind = JOB_EV_HTTP, .http_status = 0, .retry_after_ms = -1};

	log_error("job.call", "id=%s error=%s", lid(j), LOG_Q(why));
	feed(j, &ev);
}

static void
start_call(struct ejob *j)
{
	const struct ejob_ops *ops = ops_of(j);
	const struct cfg_action *a = job_action(j);
	char err[160] = "";
	int64_t now = now_ms(j);

	if (job_time_left(&j->core, 1, now) == 0) {
		cannot_call(j, JOB_NOCALL_DEADLINE);	/* R1, at the last moment */
		return;
	}
	if (a == NULL) {
		cannot_call(j, JOB_NOCALL_ACTION_GONE);	/* a reload removed it */
		return;
	}
	struct urltpl_vars vars = {j->rec->resource, j->rec->action, j->rec->id,
	    j->rec->on_behalf_of};
	char *url = urltpl_expand(a->url, &vars, err, sizeof err);
	if (url == NULL) {
		log_warn("job.call", "id=%s error=%s", lid(j), LOG_Q(err));
		cannot_call(j, JOB_NOCALL_BAD_REQUEST);
		return;
	}
	/* token = exchange: this job's own token, for this one call */
	unsigned auth = job_auth(j, a);
	const char *bearer = (auth & EJOB_AUTH_EXCHANGE) ? j->xtoken :
	    ops->bearer(ctx_of(j), a->name, a->timeout_ms, &j->token_gen);
	if ((auth & EJOB_AUTH_TOKEN) && bearer == NULL) {
		free(url);
		cannot_call(j, JOB_NOCALL_TOKEN_GONE);	/* R6: wait for one */
		return;
	}
	/* RFC 9449: a DPoP-bound token travels with a fresh proof */
	char *proof = NULL;
	if (bearer != NULL && ops->proof != NULL &&
	    ops->proof(ctx_of(j), a->name, a->method, url, bearer, &proof) != 0) {
		free(url);
		call_not_started(j, "cannot sign the DPoP proof");
		return;
	}
	/* R7: the verified payload's own bytes (equal as JSON, never re-serialised) */
	const char *body = j->rec->body;
	struct call_headers h;
	int rc = -1;
	if (body != NULL && call_headers_fill(&h, j->rec, bearer, proof, j->trace) == 0) {
		struct http_request req = {
			.method = a->method, .url = url, .headers = h.list,
			.body = body, .body_len = j->rec->body_len,
			/* R1: the request leaves by the deadline -- connecting is
			 * bounded by the time left -- and once it has left, its
			 * answer decides (within timeout_ms): a call cut after
			 * it left might have run at the target all the same */
			.timeout_ms = a->timeout_ms,
			.connect_timeout_ms = job_time_left(&j->core, a->timeout_ms, now),
		};
		rc = ops->call(ctx_of(j), &req, on_call_done, j, &j->call);
	}
	if (body != NULL)
		call_headers_free(&h);
	dpop_proof_free(proof);
	free(url);
	if (rc < 0) {
		j->call = NULL;
		call_not_started(j, "cannot start request");
		return;
	}
	j->refs++;
	j->wait = W_CALL;
	j->attempt_started_ms = now_ms(j);
}

/* ------------------------------------------------------------------ */
/* RFC 8693: a token for this one job                                   */

static const char *
xch_answer_name(enum job_exchange x)
{
	static const char *const n[] = {[JOB_XCH_OK] = "token",
	    [JOB_XCH_UNAVAILABLE] = "unavailable", [JOB_XCH_REFRESH] = "refresh",
	    [JOB_XCH_REFUSED] = "refused", [JOB_XCH_FAILED] = "failed"};
	return (unsigned)x < sizeof n / sizeof n[0] ? n[x] : "unknown";
}

static void
exchange_answered(struct ejob *j, const struct oauth_xch_answer *a)
{
	static const enum job_exchange map[] = {[OAUTH_XCH_OK] = JOB_XCH_OK,
	    [OAUTH_XCH_UNAVAILABLE] = JOB_XCH_UNAVAILABLE, [OAUTH_XCH_REFRESH] = JOB_XCH_REFRESH,
	    [OAUTH_XCH_REFUSED] = JOB_XCH_REFUSED, [OAUTH_XCH_FAILED] = JOB_XCH_FAILED};
	struct job_event ev = {.kind = JOB_EV_EXCHANGED, .exchange = JOB_XCH_UNAVAILABLE};
	char q[256];

	if ((unsigned)a->r < sizeof map / sizeof map[0])
		ev.exchange = map[a->r];
	/* §9: the IdP's own code is the reason; one we do not name is idp-refused */
	ev.idp_reason = job_idp_reason(a->code);
	drop_xtoken(j);	/* one a call that never went out left behind */
	if (a->r == OAUTH_XCH_OK && (j->xtoken = strdup(a->token)) == NULL)
		ev.exchange = JOB_XCH_UNAVAILABLE;
	/* per-record: kept for the next job on this resource (RFC 9396) */
	const struct cfg_action *act = job_action(j);
	if (ev.exchange == JOB_XCH_OK && act != NULL && a->lifetime_ms > 0 &&
	    (job_auth(j, act) & EJOB_AUTH_PER_RECORD) && ops_of(j)->record_keep != NULL)
		ops_of(j)->record_keep(ctx_of(j), act->name, j->rec->resource, a->token,
		    a->lifetime_ms, &j->token_gen);
	log_info("job.exchange", "id=%s answer=%s detail=%s", lid(j),
	    xch_answer_name(ev.exchange), log_quote(q, sizeof q, a->detail));
	feed(j, &ev);
}

static void
on_exchanged(void *arg, const struct oauth_xch_answer *a)
{
	struct ejob *j = arg;

	j->xch = NULL;
	if (answered(j))
		exchange_answered(j, a);
	settle(j);
}

static void
start_exchange(struct ejob *j)
{
	const struct cfg_action *a = job_action(j);
	char err[160] = "";
	long left = job_time_left(&j->core, env_of(j)->cfg->oauth.timeout_ms, now_ms(j));

	if (left == 0) {
		cannot_call(j, JOB_NOCALL_DEADLINE);	/* R1: no exchange past it */
		return;
	}
	if (a == NULL) {
		cannot_call(j, JOB_NOCALL_ACTION_GONE);
		return;
	}
	struct urltpl_vars vars = {j->rec->resource, j->rec->action, j->rec->id,
	    j->rec->on_behalf_of};
	char *url = urltpl_expand(a->url, &vars, err, sizeof err);
	if (url == NULL) {
		cannot_call(j, JOB_NOCALL_BAD_REQUEST);
		return;
	}
	/* per-record: a token kept for this (action, resource) serves */
	unsigned auth = job_auth(j, a);
	const char *kept = (auth & EJOB_AUTH_PER_RECORD) && ops_of(j)->record_token != NULL ?
	    ops_of(j)->record_token(ctx_of(j), a->name, j->rec->resource, a->timeout_ms,
	    &j->token_gen) : NULL;
	if (kept != NULL) {
		struct oauth_xch_answer hit = {OAUTH_XCH_OK, kept, "kept", "", -1};
		free(url);
		exchange_answered(j, &hit);
		return;
	}
	/* scope = the action (or the scope it names), resource = the target;
	 * the exchange's own request ends by the deadline (R1) */
	struct ejob_exchange_req rq = {
		.action = a->name, .record = (auth & EJOB_AUTH_PER_RECORD) ? j->rec->resource :
		    j->raw ? j->raw : "",
		.scope = a->scope ? a->scope : a->name, .resource = url,
		.timeout_ms = a->timeout_ms, .max_ms = left,
	};
	j->xch = ops_of(j)->exchange(ctx_of(j), &rq, &j->token_gen, on_exchanged, j);
	free(url);
	if (j->xch == NULL) {
		cannot_call(j, JOB_NOCALL_TOKEN_GONE);	/* R6: no actor token now */
		return;
	}
	j->refs++;
	j->wait = W_EXCHANGE;
}

static void
authz_answered(struct ejob *j, const struct http_response *resp)
{
	struct job_event ev = {.kind = JOB_EV_AUTHZ};

	ev.authz = authz_parse_answer(env_of(j)->cfg->authz.api, resp->status, resp->body,
	    resp->body_len);
	if (ev.authz == JOB_AUTHZ_UNAVAILABLE)
		env_of(j)->n->pdp_failures++;
	if (resp->status == 401)	/* §7: the PDP's token is refreshed, the question asked again */
		ops_of(j)->token_verdict(ctx_of(j), NULL, j->token_gen, 0);
	log_info("job.authz", "id=%s status=%ld answer=%s ms=%ld", lid(j), resp->status,
	    authz_name(ev.authz), resp->elapsed_ms);
	feed(j, &ev);
}

static void
on_authz_done(const struct http_response *resp, void *arg)
{
	struct ejob *j = arg;

	j->call = NULL;
	if (answered(j))
		authz_answered(j, resp);
	settle(j);
}

static void
start_authz(struct ejob *j)
{
	const struct ejob_env *env = env_of(j);
	/* R1, R5: the PDP's answer is awaited no later than the deadline */
	long left = job_time_left(&j->core, env->cfg->authz.timeout_ms, now_ms(j));
	uint64_t gen;

	if (left == 0) {
		cannot_call(j, JOB_NOCALL_DEADLINE);
		return;
	}
	const struct authz_shape shape = {.api = env->cfg->authz.api,
	    .subject_type = env->cfg->authz.subject_type,
	    .resource_type = env->cfg->authz.resource_type};
	char *body = authz_request_body(j->rec, &shape);
	struct job_event ev = {.kind = JOB_EV_AUTHZ, .authz = JOB_AUTHZ_UNAVAILABLE};
	/* the PDP's own token ([authz] auth, §7), never the worker's */
	const char *tok = env->ops->bearer(env->ctx, NULL, env->cfg->authz.timeout_ms, &gen);
	j->token_gen = gen;
	char *h_auth = cred_auth_line_new(tok);
	char h_trace[sizeof "traceparent: " + TRACE_LEN];
	snprintf(h_trace, sizeof h_trace, "traceparent: %s", j->trace);	/* §13 */
	const char *headers[] = {"Content-Type: application/json", h_trace, h_auth, NULL};
	struct http_request req = {
		.method = "POST", .url = env->cfg->authz.url, .headers = headers,
		.body = body, .body_len = body ? strlen(body) : 0, .timeout_ms = left,
	};
	/* no PDP token yet: asked again later, like a PDP that is down (R5) */
	int no_token = tok == NULL && (env->ops->auth(env->ctx, NULL) & EJOB_AUTH_TOKEN);
	int rc = body && !no_token && (!tok || h_auth) ?
	    env->ops->call(env->ctx, &req, on_authz_done, j, &j->call) : -1;
	cred_auth_line_free(h_auth);
	free(body);
	if (rc < 0) {
		j->call = NULL;
		env->n->pdp_failures++;
		feed(j, &ev);
		return;
	}
	j->refs++;
	j->wait = W_AUTHZ;
}

/* ------------------------------------------------------------------ */
/* R9 re-dispatch                                                       */

static void
redispatched(struct ejob *j, const struct ejob_moved *r)
{
	struct job_event ev = {.kind = JOB_EV_REDISPATCHED};

	if (!r->ok) {
		/* ask again: the script touches the stream alone, so no
		 * error of it is the entry's */
		redis_failed(j, T_REDISPATCH_RETRY, r->error, 0);
		return;
	}
	consumer_err_ok(&j->errs);
	if (r->deliveries <= 0) {
		ev.kind = JOB_EV_LEASE_LOST;
	} else {
		/* R12: the count Redis keeps, checked by the core before the run */
		ev.deliveries = r->deliveries > INT32_MAX ? INT32_MAX : (int)r->deliveries;
		env_of(j)->n->redispatched++;
		log_info("job.redispatch", "id=%s stream_id=%s deliveries=%lld", lid(j),
		    j->stream_id, r->deliveries);
	}
	feed(j, &ev);
}

static void
after_redispatch(void *arg, const struct ejob_moved *r)
{
	struct ejob *j = arg;

	if (answered(j))
		redispatched(j, r);
	settle(j);
}

static void
start_redispatch(struct ejob *j)
{
	/* the count before it: a resend after a lost reply claims nothing twice */
	if (ops_of(j)->redispatch(ctx_of(j), j->stream_id, j->core.deliveries, after_redispatch,
	    j) < 0) {
		redis_failed(j, T_REDISPATCH_RETRY, NULL, 0);
		return;
	}
	j->refs++;
	j->wait = W_REDISPATCH;
}

/* ------------------------------------------------------------------ */
/* R9 hand-back: no token within auth_wait_max_ms                       */

static void
handed_back(struct ejob *j, const struct ejob_moved *r)
{
	struct job_event ev = {.kind = JOB_EV_HANDED_BACK};

	if (!r->ok) {
		/* Sent again with backoff. Had it run (its reply lost), ours is
		 * acked: the resend finds it no longer ours and lets it go. It
		 * writes the record's hash: an error there is the entry's. */
		redis_failed(j, T_HANDBACK_RETRY, r->error, 1);
		return;
	}
	consumer_err_ok(&j->errs);
	if (!r->handed) {
		ev.kind = JOB_EV_LEASE_LOST;
	} else {
		env_of(j)->n->redispatched++;
		log_info("job.handback", "id=%s stream_id=%s new_stream_id=%s", lid(j),
		    j->stream_id, r->new_stream_id ? r->new_stream_id : "-");
	}
	feed(j, &ev);
}

static void
after_handback(void *arg, const struct ejob_moved *r)
{
	struct ejob *j = arg;

	if (answered(j))
		handed_back(j, r);
	settle(j);
}

static void
start_handback(struct ejob *j)
{
	struct hash_key key;

	if (ops_of(j)->handback(ctx_of(j), hash_key_of(j, &key), j->stream_id, j->id,
	    after_handback, j) < 0) {
		redis_failed(j, T_HANDBACK_RETRY, NULL, 0);
		return;
	}
	j->refs++;
	j->wait = W_HANDBACK;
}

/* ------------------------------------------------------------------ */
/* R20: a write refused for Redis' credential                           */

/* The write waits for ejobs_redis_auth_ready: no timer, nothing in flight
 * (the renewals still see it in hand: another's claim is found there). */
static void
hold(struct ejob *j)
{
	if (!j->held)
		log_warn("job.redis_auth_held", "id=%s stream_id=%s state=%s detail=\"the write "
		    "met an expired Redis credential: reclaimed and written again once a new "
		    "token is in\"", lid(j), j->stream_id,
		    job_state_name(j->step.next)[0] ? job_state_name(j->step.next) : "-");
	j->held = 1;
}

/* A transition was not taken (text: the error reply, NULL for none). */
static void
write_failed(struct ejob *j, const char *text)
{
	enum consumer_err c = consumer_err_classify(text);

	switch (consumer_auth_write(c, j->set->auth_lost)) {
	case CONSUMER_AUTH_HOLD:
		hold(j);
		return;
	case CONSUMER_AUTH_RECLAIM:
		start_reclaim(j);
		return;
	case CONSUMER_AUTH_R17:
		break;
	}
	redis_failed(j, T_REDIS_RETRY, text, text != NULL && writes_hash(j));
}

static void
reclaimed(struct ejob *j, const struct ejob_moved *r)
{
	enum consumer_reclaim got = !r->ok ? CONSUMER_RECLAIM_FAILED :
	    r->owner > 0 ? CONSUMER_RECLAIM_OURS : r->owner < 0 ? CONSUMER_RECLAIM_GONE :
	    CONSUMER_RECLAIM_LOST;
	enum consumer_err c = r->ok ? CONSUMER_ERR_NONE : consumer_err_classify(r->error);
	enum consumer_reclaim_step st = consumer_reclaim_next(got, c, j->set->auth_lost);

	if (got != CONSUMER_RECLAIM_FAILED)
		log_info("job.redis_auth_reclaim", "id=%s stream_id=%s owner=%s",
		    lid(j), j->stream_id, got == CONSUMER_RECLAIM_OURS ? "us" :
		    got == CONSUMER_RECLAIM_GONE ? "nobody" : "another");
	switch (st) {
	case CONSUMER_RS_WRITE_UNPENDING:
		j->unpending = 1;
		/* FALLTHROUGH */
	case CONSUMER_RS_WRITE:
		consumer_err_ok(&j->errs);
		env_of(j)->n->redispatched++;	/* R20: a re-dispatch to ourselves */
		send_transition(j);	/* the step decided before: its fence */
		return;
	case CONSUMER_RS_ABANDON: {
		struct job_event ev = {.kind = JOB_EV_LEASE_LOST};
		j->lost = 1;
		feed(j, &ev);
		return;
	}
	case CONSUMER_RS_HOLD:
		hold(j);
		return;
	case CONSUMER_RS_RETRY:
		break;
	}
	redis_failed(j, T_RECLAIM_RETRY, r->error, 0);
}

static void
after_reclaim(void *arg, const struct ejob_moved *r)
{
	struct ejob *j = arg;

	if (answered(j))
		reclaimed(j, r);
	settle(j);
}

static void
start_reclaim(struct ejob *j)
{
	j->held = 0;
	if (ops_of(j)->reclaim(ctx_of(j), j->stream_id, after_reclaim, j) < 0) {
		struct ejob_moved none = {0};
		reclaimed(j, &none);
		return;
	}
	j->refs++;
	j->wait = W_RECLAIM;
}

/* ------------------------------------------------------------------ */
/* loading an entry                                                     */

/* token = exchange sends the record itself as the subject: kept then, as
 * *owned when there is a copy already (taken: set to NULL), else copied. */
static void
keep_raw(struct ejob *j, struct job_event *ev, const char *raw, char **owned)
{
	if (ev->record_status != RECORD_OK || !(job_auth(j, job_action(j)) & EJOB_AUTH_EXCHANGE))
		return;
	if (*owned != NULL) {
		j->raw = *owned;
		*owned = NULL;
	} else if (raw != NULL) {
		j->raw = strdup(raw);
	}
	if (j->raw == NULL)
		ev->record_status = RECORD_INVALID;
}

/* The load is over: the core decides, and a refused record is logged. */
static void
loaded(struct ejob *j, struct job_event *ev, const char *detail)
{
	ev->record = j->rec;
	feed(j, ev);
	if (ev->record_status != RECORD_OK && detail[0]) {
		log_warn("record.rejected", "id=%s reason=%s detail=%s", lid(j),
		    record_status_code(ev->record_status), LOG_Q(detail));
	}
}

/* The verification's result (inline or from a worker) is the job's now. */
static void
take_verified(struct ejob *j, struct job_event *ev, struct ejob_verified *v, const char *raw)
{
	j->rec = v->rec;
	j->bad_owner = v->owner;
	ev->record_status = v->status;
	keep_raw(j, ev, raw, &v->raw);
	free(v->raw);
	v->raw = NULL;
	loaded(j, ev, v->detail);
}

static void
verified(void *arg, struct ejob_verified *r)
{
	struct ejob *j = arg;

	j->verify = NULL;
	if (answered(j)) {
		struct job_event ev = j->loaded;
		take_verified(j, &ev, r, r->raw);
	} else {
		record_free(r->rec);
		free(r->owner);
		free(r->raw);
	}
	settle(j);
}

static void
hash_read(struct ejob *j, const struct ejob_loaded *r)
{
	struct job_event ev = {.kind = JOB_EV_LOADED, .deliveries = j->core.deliveries};

	if (!r->ok) {
		/* An error reply, or the connection went: load again with
		 * backoff. The entry stays in hand, so nothing more is read --
		 * until an error of its own hash (WRONGTYPE) gives it up. */
		redis_failed(j, T_LOAD_RETRY, r->error, 1);
		return;
	}
	consumer_err_ok(&j->errs);
	ev.hash_exists = r->exists;
	if (r->attempts != NULL) {
		long long n = strtoll(r->attempts, NULL, 10);
		ev.attempts = n < 0 ? 0 : n > INT32_MAX ? INT32_MAX : (int)n;
	}
	if (r->attempts_base != NULL) {
		long long n = strtoll(r->attempts_base, NULL, 10);
		ev.attempts_base = n < 0 ? 0 : n > INT32_MAX ? INT32_MAX : (int)n;
	}
	if (r->state == NULL || job_state_parse(r->state, &ev.stored_state) < 0)
		ev.stored_state = JOB_NONE;
	if (r->final != NULL) {
		/* R4: terminal whatever the hash says now (a hash set back
		 * by hand, or gone): acked, not run, not even verified */
		if (job_state_parse(r->final, &ev.stored_state) < 0 ||
		    !job_state_terminal(ev.stored_state))
			ev.stored_state = JOB_DONE;
		/* as the transition script's refusal is logged (written()) */
		log_info("job.duplicate", "id=%s stream_id=%s reason=terminal", lid(j), j->stream_id);
		ev.hash_exists = 1;
		loaded(j, &ev, "");
		return;
	}
	if (!ev.hash_exists) {
		loaded(j, &ev, "");
		return;
	}
	if (r->withheld > 0) {	/* §3.1, not fetched: record_load's words */
		char d[80];
		snprintf(d, sizeof d, "record: longer than [records] max_bytes (%ld)",
		    env_of(j)->cfg->records.max_bytes);
		ev.record_status = RECORD_INVALID;
		loaded(j, &ev, d);
		return;
	}
	if (r->record == NULL) {
		ev.record_status = RECORD_INVALID;
		loaded(j, &ev, "hash has no record field");
		return;
	}
	struct ejob_verified v;
	void *h = NULL;
	memset(&v, 0, sizeof v);
	if (ops_of(j)->verify(ctx_of(j), j->id, r->record, now_ms(j), &v, verified, j, &h)) {
		j->verify = h;
		j->loaded = ev;
		j->refs++;
		j->wait = W_VERIFY;
		return;
	}
	take_verified(j, &ev, &v, r->record);
}

static void
after_load(void *arg, const struct ejob_loaded *r)
{
	struct ejob *j = arg;

	if (answered(j))
		hash_read(j, r);
	settle(j);
}

/* The load of the record's hash, whose key the caller built (ejobs_admit
 * checks it while building it; a retry builds it again). */
static void
load_key(struct ejob *j, const char *key)
{
	struct hash_key fin;

	if (ops_of(j)->load(ctx_of(j), key, final_key_of(j, &fin), after_load, j) < 0) {
		redis_failed(j, T_LOAD_RETRY, NULL, 0);	/* stays in hand: reads wait too */
		return;
	}
	j->refs++;
	j->wait = W_LOAD;
}

static void
start_load(struct ejob *j)
{
	struct hash_key key;

	load_key(j, hash_key_of(j, &key));
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
		feed(j, &ev);
	} else {
		load_key(j, key.s);
	}
	settle(j);
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
	feed(j, &ev);
	settle(j);
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
	feed(j, &ev);
	settle(j);
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
	feed(j, &ev);
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
	    j->timer_kind != T_RECLAIM_RETRY))
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
		settle(j);
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
		start_reclaim(j);
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
	hold(j);
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
