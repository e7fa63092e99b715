/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ejob: one entry in hand, the imperative shell around the job core.
 *
 * The core (job_next) decides, and apply() carries out the effects in
 * order: first the Redis transition (one Lua script: fencing, state, audit,
 * dead letter, notification and XACK together), then the HTTP call, timer
 * or token wait that follows from it.
 *
 * An ejob is freed only when it is finished and no callback points at it
 * (`refs`); callbacks never free the object whose callback chain they run in.
 */
#define _DEFAULT_SOURCE
#include "ejob.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "job.h"
#include "log.h"
#include "wtime.h"

#include "authz.h"
#include "consumer.h"
#include "sreply.h"
#include "rnd.h"
#include "urltpl.h"
#include "vpool.h"
#include "resp.h"

#define STREAM_ID_MAX 48

enum ejob_timer { T_NONE, T_RETRY, T_TOKEN_WAIT, T_REDIS_RETRY, T_REDISPATCH_RETRY, T_LOAD_RETRY,
	T_HANDBACK_RETRY };
enum ejob_wait { W_NONE, W_WRITE, W_LOAD, W_VERIFY, W_AUTHZ, W_EXCHANGE, W_CALL, W_REDISPATCH,
	W_HANDBACK };

/* Buckets of the index by stream id: every entry read is looked up there
 * (a walk of the list with strcmp cost 5,000 instructions a job at 256 in
 * flight, 3 %). Chains stay short up to thousands in hand. A power of two. */
#define EJOB_BUCKETS 1024

struct ejobs {
	const struct ejob_env *env;
	struct ejob *head;	/* owned: every entry in hand, finished or not */
	struct ejob *bucket[EJOB_BUCKETS];	/* the same entries, by stream id */
	size_t n;
	int draining;		/* R15: no new call, no new wait */
};

/* One entry in hand. */
struct ejob {
	struct ejob *prev, *next;
	struct ejob *hnext;		/* in its bucket */
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
	struct oauth_xch_call *xch;	/* the exchange in flight */
	struct vpool_ticket *vt;	/* the record being verified on a worker */
	struct job_event loaded;	/* what the load said, while it is */
	long long fence;		/* `attempts` of this hand's current call; -1 none */
	int started;			/* this hand set `owner` */
	int refs;			/* callbacks in flight that point here */
	int finished;
	int lost;			/* the lease is gone: abandon at the next step */
	int deleted;			/* XAUTOCLAIM said the entry was deleted */
	int unpending;			/* pending for nobody: no lease to renew */
	struct consumer_errs errs;	/* R17: its failed Redis steps in a row */
	enum ejob_wait wait;
	enum ejob_timer timer_kind;
	ev_timer timer;
	struct http_call *call;
	int last_status;
	uint64_t token_gen;		/* generation of the token the call used */
	char written_at[WTIME_RFC3339_LEN];	/* `at` of the last transition sent */
	long long attempt_started_ms;
};

static void apply(struct ejob *j);
static void feed(struct ejob *j, struct job_event *ev);
static void start_load(struct ejob *j);
static void ejob_timer_cb(struct ev_loop *loop, ev_timer *w, int revents);

/* ------------------------------------------------------------------ */
/* small helpers                                                        */

static const struct ejob_env *
env_of(const struct ejob *j)
{
	return j->set->env;
}

/* The record's hash key, built where it is used: kept in every entry it
 * was a third of the entry, 80 KiB at 256 in flight (issue 10, RSS). */
struct hash_key {
	char s[STORE_KEY_MAX + RECORD_ID_MAX + 1];
};

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

static const char *
now_rfc3339(char *buf, size_t n)
{
	return wtime_format_rfc3339(wtime_now_ms(), buf, n);
}

static const struct cfg_action *
job_action(const struct ejob *j)
{
	return j->rec ? cfg_action_find(env_of(j)->cfg, j->rec->action) : NULL;
}

static const struct cred *
job_cred(const struct ejob *j)
{
	return j->rec ? creds_find(env_of(j)->creds, j->rec->action) : NULL;
}

/* R6: a token that outlives the call, for an action that needs one. */
static int
token_ok(const struct ejob *j)
{
	const struct cfg_action *a = job_action(j);
	const struct cred *c = job_cred(j);
	uint64_t gen;

	return a == NULL || !cred_is_oauth(c) || cred_bearer(c, a->timeout_ms, &gen) != NULL;
}

static struct job_policy
policy(const struct ejob *j)
{
	const struct cfg *c = env_of(j)->cfg;
	const struct cfg_action *a = job_action(j);
	struct job_policy p = {
		.retry_base_ms = c->retry.base_ms,
		.retry_cap_ms = c->retry.cap_ms,
		.max_attempts = (int)c->retry.max_attempts,
		.max_deliveries = (int)c->redis.max_deliveries,
		.authz_enabled = c->authz.url != NULL,
		.token_needed = a != NULL && cred_is_oauth(job_cred(j)),
		.exchange_needed = a != NULL && cred_exchanges(job_cred(j)),
		.auth_wait_max_ms = c->oauth.auth_wait_max_ms,
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

	for (struct ejob *j = s->bucket[h & (EJOB_BUCKETS - 1)]; j; j = j->hnext)
		if (j->hash == h && strcmp(j->stream_id, stream_id) == 0)
			return j;
	return NULL;
}

static void
ejob_timer_stop(struct ejob *j)
{
	ev_timer_stop(env_of(j)->loop, &j->timer);
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

	if (j->prev)
		j->prev->next = j->next;
	else
		s->head = j->next;
	if (j->next)
		j->next->prev = j->prev;
	struct ejob **p = &s->bucket[j->hash & (EJOB_BUCKETS - 1)];
	while (*p != j)
		p = &(*p)->hnext;
	*p = j->hnext;
	s->n--;
	record_free(j->rec);
	free(j->raw);
	drop_xtoken(j);
	free(j->bad_owner);
	free(j);
}

static void
ejob_abandon(struct ejob *j)
{
	j->finished = 1;
	ejob_timer_stop(j);
	if (j->call) {
		http_cancel(j->call);
		j->call = NULL;
		j->refs--;
	}
	if (j->xch) {
		oauth_exchange_cancel(j->xch);
		j->xch = NULL;
		j->refs--;
	}
	if (j->vt) {
		vpool_cancel(env_of(j)->vpool, j->vt);
		j->vt = NULL;
		j->refs--;
	}
}

/* Marks j finished; frees it now when nothing points at it, else when the
 * last callback returns (ejob_unref). */
static void
ejob_finish(struct ejob *j)
{
	const struct ejob_env *env = env_of(j);

	if (!j->finished)
		ejob_abandon(j);
	if (j->refs == 0) {
		ejob_release(j);
		env->released(env->arg);
	}
}

static void
ejob_unref(struct ejob *j)
{
	j->refs--;
	if (j->finished && j->refs == 0)
		ejob_finish(j);
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
	j->fence = -1;
	ev_init(&j->timer, ejob_timer_cb);
	j->timer.data = j;
	j->next = s->head;
	if (s->head)
		s->head->prev = j;
	s->head = j;
	j->hash = id_hash(j->stream_id);
	j->hnext = s->bucket[j->hash & (EJOB_BUCKETS - 1)];
	s->bucket[j->hash & (EJOB_BUCKETS - 1)] = j;
	s->n++;
	return j;
}

static void
ejob_arm(struct ejob *j, enum ejob_timer kind, int64_t delay_ms)
{
	struct ev_loop *loop = env_of(j)->loop;

	ev_timer_stop(loop, &j->timer);
	ev_timer_set(&j->timer, delay_ms > 0 ? (double)delay_ms / 1000.0 : 0.0, 0.0);
	j->timer_kind = kind;
	ev_timer_start(loop, &j->timer);
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
		    j->id[0] ? j->id : "-", j->stream_id, j->errs.entry, CONSUMER_ERR_ENTRY_TRIES,
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
	    "reason=%s detail=%s", j->id[0] ? j->id : "-", j->stream_id,
	    job_state_name(s->next)[0] ? job_state_name(s->next) : "-",
	    j->rec ? LOG_Q(j->rec->action) : "-", j->rec ? LOG_Q(j->rec->resource) : "-",
	    j->core.calls, reason_name(s->reason), LOG_Q(s->detail));
}

static void after_transition(struct rconn *rc, const struct sreply *r, void *arg);

/* §6: the same fields as the P:notify entry, as JSON. */
static void
post_webhook(const struct ejob *j)
{
	json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "id", j->id,
	    "owner", notify_owner(j), "kind", job_state_name(j->step.next),
	    "reason", reason_name(j->step.reason),
	    "onBehalfOf", j->rec ? j->rec->on_behalf_of : "",
	    "action", j->rec ? j->rec->action : "", "resource", j->rec ? j->rec->resource : "",
	    "at", j->written_at);
	char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;

	if (body)
		webhook_post(env_of(j)->webhook, body);
	free(body);
	json_decref(o);
}

static int
needs_transition(unsigned fx)
{
	return fx & (JOB_FX_WRITE_STATE | JOB_FX_ACK | JOB_FX_DEAD_LETTER | JOB_FX_NOTIFY |
	    JOB_FX_RESCHEDULE | JOB_FX_CALL);
}

static void
send_transition(struct ejob *j)
{
	const struct ejob_env *env = env_of(j);
	const struct cfg *cfg = env->cfg;
	const struct job_step *s = &j->step;
	unsigned fx = s->effects;
	char status[16] = "", score[24] = "";
	int terminal = job_state_terminal(s->next);
	struct hash_key key;
	struct store_transition t = {
		.hash_key = writes_hash(j) ? hash_key_of(j, &key) : NULL,
		.stream_id = j->stream_id,
		.record_id = j->id,
		.state = (fx & JOB_FX_WRITE_STATE) ? job_state_name(s->next) : "",
		.outcome = reason_name(s->reason),
		.detail = s->detail,
		.http_status = status,
		/* R8, R13: a call step increments `attempts` only from the value
		 * it was decided on (job_next counted the call already), so one
		 * sent again after its reply was lost is not counted twice */
		.fence_attempts = (fx & JOB_FX_CALL) ? j->core.calls - 1 : j->fence,
		.require_owner = j->started,
		.incr_attempts = (fx & JOB_FX_CALL) != 0,
		.ack = (fx & (JOB_FX_ACK | JOB_FX_RESCHEDULE)) != 0,
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
		.at = now_rfc3339(j->written_at, sizeof j->written_at),
		.retain_ms = terminal ? cfg->records.retain_s * 1000LL : 0,
		.dead_maxlen = cfg->redis.dead_maxlen,
		.notify_maxlen = cfg->redis.notify_maxlen,
		.skip_lease = j->deleted,
		/* a call's outcome survives a Redis that forgot its PEL */
		.keep_unpending = terminal && j->fence >= 0 && !(fx & JOB_FX_CALL),
	};
	struct store_args a;

	if (j->last_status > 0)	/* resp's digits: no snprintf for every job */
		*resp_put_dec(status, (size_t)j->last_status) = '\0';
	if (fx & JOB_FX_RESCHEDULE)
		snprintf(score, sizeof score, "%" PRId64, s->at_ms);
	store_transition_args(env->keys, cfg->redis.group, cfg->daemon.consumer,
	    cfg->records.audit_maxlen, &t, &a);
	if (script_batch_send(env->batch, &a, after_transition, j) < 0) {
		redis_failed(j, T_REDIS_RETRY, NULL, 0);
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
	else if (fx & JOB_FX_CALL)
		start_call(j);
	else if (fx & JOB_FX_RETRY_AT)
		ejob_arm(j, T_RETRY, j->step.at_ms - wtime_now_ms());
	else if (fx & JOB_FX_REDISPATCH)
		start_redispatch(j);
	else if (fx & JOB_FX_HANDBACK)
		start_handback(j);
	else if (fx & JOB_FX_WAIT_TOKEN)
		/* The token may have come while this step was written, or the
		 * failed call used an older one: then go on from the loop. The
		 * wait ends at the deadline or after auth_wait_max_ms (at_ms). */
		ejob_arm(j, T_TOKEN_WAIT, token_ok(j) ? 0 : j->step.at_ms - wtime_now_ms());
}

/* The script wrote the step: remember what it says, then count and tell. */
static void
transition_written(struct ejob *j, const struct sreply_transition *t)
{
	unsigned fx = j->step.effects;

	if (fx & JOB_FX_CALL)
		j->fence = t->fence;
	if (fx & JOB_FX_START_ATTEMPT)
		j->started = 1;
	if ((fx & JOB_FX_NOTIFY) && env_of(j)->webhook && notify_owner(j)[0])
		post_webhook(j);
	/* A dead letter with no hash to write (no-id, record-missing) is dead too. */
	count_outcome(env_of(j)->n, (fx & JOB_FX_WRITE_STATE) ? j->step.next :
	    (fx & JOB_FX_DEAD_LETTER) ? JOB_DEAD : JOB_NONE);
}

static void
after_transition(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct ejob *j = arg;
	(void)rc;

	j->wait = W_NONE;
	if (j->finished) {
		ejob_unref(j);
		return;
	}
	if (r == NULL || sreply_error(r, NULL)) {
		/* Nothing was decided twice: the same step is written again
		 * once Redis answers (rconn logged the error kind), unless the
		 * error is the entry's own (R17). */
		redis_failed(j, T_REDIS_RETRY, sreply_error_text(r), writes_hash(j));
		ejob_unref(j);
		return;
	}
	consumer_err_ok(&j->errs);
	struct sreply_transition t;
	sreply_transition(r, &t);
	if (!t.written) {
		/* R4: a terminal record, or one that runs from another stream
		 * entry; the script acked this one */
		int dup = t.why && (store_reply_is(t.why, STORE_REPLY_TERMINAL) ||
		    store_reply_is(t.why, STORE_REPLY_DUPLICATE));
		log_info(dup ? "job.duplicate" : "job.abandon", "id=%s stream_id=%s reason=%s",
		    j->id[0] ? j->id : "-", j->stream_id, t.why ? LOG_Q(t.why) : "bad-reply");
		ejob_finish(j);
		ejob_unref(j);
		return;
	}
	if (store_reply_is(t.why, STORE_REPLY_AGAIN))
		log_info("job.again", "id=%s stream_id=%s attempt=%lld detail=\"the call step "
		    "was written already, its reply lost: counted once\"", j->id, j->stream_id,
		    t.fence);
	transition_written(j, &t);
	continue_effects(j);
	ejob_unref(j);
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
		cred_refused(job_cred(j), j->token_gen);
	}
	if (j->lost || (j->step.effects & JOB_FX_RELEASE)) {
		ejob_finish(j);
		return;
	}
	if (needs_transition(j->step.effects))
		send_transition(j);
	else
		continue_effects(j);
}

static void
feed(struct ejob *j, struct job_event *ev)
{
	struct job_policy pol = policy(j);

	ev->rnd = rnd_u64();
	ev->token_ok = token_ok(j);
	j->step = job_next(&pol, &j->core, ev, wtime_now_ms());
	if (j->step.effects == 0 && !job_state_terminal(j->step.next)) {
		log_debug("job.ignored", "id=%s detail=%s", j->id, LOG_Q(j->step.detail));
		return;
	}
	apply(j);
}

static void
ejob_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct ejob *j = w->data;
	enum ejob_timer kind = j->timer_kind;
	struct job_event ev = {0};
	(void)loop, (void)revents;

	j->timer_kind = T_NONE;
	switch (kind) {
	case T_RETRY:
		ev.kind = JOB_EV_TIMER;
		feed(j, &ev);
		break;
	case T_TOKEN_WAIT:
		ev.kind = token_ok(j) ? JOB_EV_TOKEN_READY : JOB_EV_TOKEN_TIMEOUT;
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
	case T_LOAD_RETRY:
		start_load(j);
		break;
	case T_NONE:
		break;
	}
}

/* ------------------------------------------------------------------ */
/* HTTP: the action call and the authority check                        */

static void
on_call_done(const struct http_response *resp, void *arg)
{
	struct ejob *j = arg;
	struct job_event ev = {.kind = JOB_EV_HTTP};

	j->call = NULL;
	j->wait = W_NONE;
	if (j->finished) {
		ejob_unref(j);
		return;
	}
	ev.http_status = (int)resp->status;
	ev.invalid_token = resp->status == 403 && resp->www_authenticate &&
	    job_www_auth_invalid_token(resp->www_authenticate);
	ev.retry_after_ms = job_retry_after_ms(resp->retry_after, wtime_now_ms());
	j->last_status = (int)resp->status;
	if (resp->status >= 200 && resp->status <= 299)
		cred_accepted(job_cred(j), j->token_gen);
	log_info("job.call", "id=%s action=%s resource=%s attempt=%d status=%ld ms=%ld%s%s",
	    j->id, LOG_Q(j->rec->action), LOG_Q(j->rec->resource), j->core.calls, resp->status,
	    resp->elapsed_ms, resp->status == 0 ? " error=" : "",
	    resp->status == 0 ? (resp->timed_out ? "timeout" : "transport") : "");
	if (env_of(j)->call_done)	/* a stream id starts with its XADD's ms */
		env_of(j)->call_done(env_of(j)->call_done_arg, j->rec->action, resp->status,
		    resp->elapsed_ms, j->attempt_started_ms - strtoll(j->stream_id, NULL, 10));
	feed(j, &ev);
	ejob_unref(j);
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

static int
call_headers_fill(struct call_headers *h, const struct record *r, const char *bearer)
{
	static const char idem[] = "Idempotency-Key", obo[] = "Warrant-On-Behalf-Of",
	    basis[] = "Warrant-Basis";
	size_t il = strlen(r->id), ol = strlen(r->on_behalf_of), bl = strlen(r->basis);
	size_t tl = bearer ? strlen(bearer) : 0;
	size_t need = sizeof idem + 2 + il + sizeof obo + 2 + ol + sizeof basis + 2 + bl +
	    (bearer ? CRED_AUTH_LINE_SIZE(tl) : 0);
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
	if (bearer) {
		h->list[nh++] = p;
		p += cred_auth_line(p, bearer, tl) + 1;
	}
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

	log_error("job.call", "id=%s error=%s", j->id, LOG_Q(why));
	feed(j, &ev);
}

static void
start_call(struct ejob *j)
{
	const struct ejob_env *env = env_of(j);
	const struct cfg_action *a = job_action(j);
	const struct cred *cred = job_cred(j);
	char err[160] = "";
	int64_t now = wtime_now_ms();

	if (job_time_left(&j->core, 1, now) == 0) {
		cannot_call(j, JOB_NOCALL_DEADLINE);	/* R1, at the last moment */
		return;
	}
	if (a == NULL || cred == NULL) {
		cannot_call(j, JOB_NOCALL_ACTION_GONE);	/* a reload removed it */
		return;
	}
	struct urltpl_vars vars = {j->rec->resource, j->rec->action, j->rec->id,
	    j->rec->on_behalf_of};
	char *url = urltpl_expand(a->url, &vars, err, sizeof err);
	if (url == NULL) {
		log_warn("job.call", "id=%s error=%s", j->id, LOG_Q(err));
		cannot_call(j, JOB_NOCALL_BAD_REQUEST);
		return;
	}
	/* token = exchange: this job's own token, for this one call */
	const char *bearer = cred_exchanges(cred) ? j->xtoken :
	    cred_bearer(cred, a->timeout_ms, &j->token_gen);
	if (cred_is_oauth(cred) && bearer == NULL) {
		free(url);
		cannot_call(j, JOB_NOCALL_TOKEN_GONE);	/* R6: wait for one */
		return;
	}
	/* R7: the verified payload's own bytes (equal as JSON, never re-serialised) */
	const char *body = j->rec->body;
	struct call_headers h;
	int rc = -1;
	if (body != NULL && call_headers_fill(&h, j->rec, bearer) == 0) {
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
		rc = http_start(env->http, &req, on_call_done, j, &j->call);
	}
	if (body != NULL)
		call_headers_free(&h);
	drop_xtoken(j);	/* cached across nothing: the next call exchanges again */
	free(url);
	if (rc < 0) {
		call_not_started(j, "cannot start request");
		return;
	}
	j->refs++;
	j->wait = W_CALL;
	j->attempt_started_ms = wtime_now_ms();
}

/* ------------------------------------------------------------------ */
/* RFC 8693: a token for this one job                                   */

static void
on_exchanged(void *arg, enum oauth_xch r, const char *token, const char *detail)
{
	struct ejob *j = arg;
	struct job_event ev = {.kind = JOB_EV_EXCHANGED};
	char q[256];

	j->xch = NULL;
	j->wait = W_NONE;
	if (j->finished) {
		ejob_unref(j);
		return;
	}
	ev.exchange = r == OAUTH_XCH_OK ? JOB_XCH_OK : r == OAUTH_XCH_DENIED ? JOB_XCH_DENIED :
	    JOB_XCH_UNAVAILABLE;
	if (r == OAUTH_XCH_OK && (j->xtoken = strdup(token)) == NULL)
		ev.exchange = JOB_XCH_UNAVAILABLE;
	log_info("job.exchange", "id=%s answer=%s detail=%s", j->id,
	    ev.exchange == JOB_XCH_OK ? "token" : ev.exchange == JOB_XCH_DENIED ? "denied" :
	    "unavailable", log_quote(q, sizeof q, detail));
	feed(j, &ev);
	ejob_unref(j);
}

static void
start_exchange(struct ejob *j)
{
	const struct cfg_action *a = job_action(j);
	const struct cred *cred = job_cred(j);
	char err[160] = "";
	long left = job_time_left(&j->core, env_of(j)->cfg->oauth.timeout_ms, wtime_now_ms());

	if (left == 0) {
		cannot_call(j, JOB_NOCALL_DEADLINE);	/* R1: no exchange past it */
		return;
	}
	if (a == NULL || cred == NULL) {
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
	/* scope = the action (or the scope it names), resource = the target;
	 * the exchange's own request ends by the deadline (R1) */
	j->xch = cred_exchange(cred, j->raw ? j->raw : "", a->scope ? a->scope : a->name, url,
	    a->timeout_ms, left, &j->token_gen, on_exchanged, j);
	free(url);
	if (j->xch == NULL) {
		cannot_call(j, JOB_NOCALL_TOKEN_GONE);	/* R6: no actor token now */
		return;
	}
	j->refs++;
	j->wait = W_EXCHANGE;
}

static void
on_authz_done(const struct http_response *resp, void *arg)
{
	struct ejob *j = arg;
	struct job_event ev = {.kind = JOB_EV_AUTHZ};

	j->call = NULL;
	j->wait = W_NONE;
	if (j->finished) {
		ejob_unref(j);
		return;
	}
	ev.authz = authz_parse_answer(resp->status, resp->body, resp->body_len);
	log_info("job.authz", "id=%s status=%ld answer=%s ms=%ld", j->id, resp->status,
	    authz_name(ev.authz), resp->elapsed_ms);
	feed(j, &ev);
	ejob_unref(j);
}

static void
start_authz(struct ejob *j)
{
	const struct ejob_env *env = env_of(j);
	/* R1, R5: the PDP's answer is awaited no later than the deadline */
	long left = job_time_left(&j->core, env->cfg->authz.timeout_ms, wtime_now_ms());

	if (left == 0) {
		cannot_call(j, JOB_NOCALL_DEADLINE);
		return;
	}
	char *body = authz_request_body(j->rec);
	struct job_event ev = {.kind = JOB_EV_AUTHZ, .authz = JOB_AUTHZ_UNAVAILABLE};
	/* the PDP gets the worker's own token, when there is one */
	const char *tok = env->oauth ?
	    oauth_token(env->oauth, wtime_mono_ms(), env->cfg->authz.timeout_ms) : NULL;
	char *h_auth = cred_auth_line_new(tok);
	const char *headers[] = {"Content-Type: application/json", h_auth, NULL};
	struct http_request req = {
		.method = "POST", .url = env->cfg->authz.url, .headers = headers,
		.body = body, .body_len = body ? strlen(body) : 0, .timeout_ms = left,
	};
	int rc = body && (!tok || h_auth) ?
	    http_start(env->http, &req, on_authz_done, j, &j->call) : -1;
	cred_auth_line_free(h_auth);
	free(body);
	if (rc < 0) {
		feed(j, &ev);
		return;
	}
	j->refs++;
	j->wait = W_AUTHZ;
}

/* ------------------------------------------------------------------ */
/* R9 re-dispatch                                                       */

static void
after_redispatch(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct ejob *j = arg;
	struct job_event ev = {.kind = JOB_EV_REDISPATCHED};
	long long deliveries;
	(void)rc;

	j->wait = W_NONE;
	if (j->finished) {
		ejob_unref(j);
		return;
	}
	if (sreply_integer(r, &deliveries) < 0) {
		/* ask again: the script touches the stream alone, so no
		 * error of it is the entry's */
		redis_failed(j, T_REDISPATCH_RETRY, sreply_error_text(r), 0);
		ejob_unref(j);
		return;
	}
	consumer_err_ok(&j->errs);
	if (deliveries == 0) {
		ev.kind = JOB_EV_LEASE_LOST;
	} else {
		/* R12: the count Redis keeps, checked by the core before the run */
		ev.deliveries = deliveries > INT32_MAX ? INT32_MAX : (int)deliveries;
		env_of(j)->n->redispatched++;
		log_info("job.redispatch", "id=%s stream_id=%s deliveries=%lld", j->id,
		    j->stream_id, deliveries);
	}
	feed(j, &ev);
	ejob_unref(j);
}

static void
start_redispatch(struct ejob *j)
{
	const struct ejob_env *env = env_of(j);
	struct store_args a;

	store_args_init(&a, STORE_REDISPATCH);
	store_args_consumer(&a, env->keys, env->cfg->redis.group, env->cfg->daemon.consumer);
	store_arg(&a, STORE_REDISPATCH_ID, j->stream_id);
	/* the count before it: a resend after a lost reply claims nothing twice */
	store_arg_ll(&a, STORE_REDISPATCH_EXPECTED, j->core.deliveries);
	if (script_send(env->cmd, env->scripts, &a, after_redispatch, j) < 0) {
		redis_failed(j, T_REDISPATCH_RETRY, NULL, 0);
		return;
	}
	j->refs++;
	j->wait = W_REDISPATCH;
}

/* ------------------------------------------------------------------ */
/* R9 hand-back: no token within auth_wait_max_ms                       */

static void
after_handback(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct ejob *j = arg;
	struct job_event ev = {.kind = JOB_EV_HANDED_BACK};
	char sid[STREAM_ID_MAX];
	(void)rc;

	j->wait = W_NONE;
	if (j->finished) {
		ejob_unref(j);
		return;
	}
	int got = sreply_handback(r, sid, sizeof sid);
	if (got < 0) {
		/* Sent again with backoff. Had it run (its reply lost), ours is
		 * acked: the resend finds it no longer ours and lets it go. It
		 * writes the record's hash: an error there is the entry's. */
		redis_failed(j, T_HANDBACK_RETRY, sreply_error_text(r), 1);
		ejob_unref(j);
		return;
	}
	consumer_err_ok(&j->errs);
	if (got == 0) {
		ev.kind = JOB_EV_LEASE_LOST;
	} else {
		env_of(j)->n->redispatched++;
		log_info("job.handback", "id=%s stream_id=%s new_stream_id=%s", j->id,
		    j->stream_id, sid);
	}
	feed(j, &ev);
	ejob_unref(j);
}

static void
start_handback(struct ejob *j)
{
	const struct ejob_env *env = env_of(j);
	struct store_args a;
	struct hash_key key;

	store_args_init(&a, STORE_HANDBACK);
	store_args_consumer(&a, env->keys, env->cfg->redis.group, env->cfg->daemon.consumer);
	store_arg(&a, STORE_HANDBACK_HASH, hash_key_of(j, &key));
	store_arg(&a, STORE_HANDBACK_ID, j->stream_id);
	store_arg(&a, STORE_HANDBACK_RECORD_ID, j->id);
	if (script_send(env->cmd, env->scripts, &a, after_handback, j) < 0) {
		redis_failed(j, T_HANDBACK_RETRY, NULL, 0);
		return;
	}
	j->refs++;
	j->wait = W_HANDBACK;
}

/* ------------------------------------------------------------------ */
/* loading an entry                                                     */

static int
action_known(void *ctx, const char *name)
{
	return cfg_action_find(ctx, name) != NULL;
}

/* What a record is checked against: the running config and key. */
static struct record_policy
record_policy_of(const struct ejob *j)
{
	const struct ejob_env *env = env_of(j);
	const struct cfg *cfg = env->cfg;
	struct record_policy pol = {
		.signature_required = cfg->records.signature_required,
		.algorithm = cfg->records.algorithm,
		.parsed_key = env->parsed_key,
		.key = env->verify_key, .key_len = env->verify_key_len,
		.issuer = cfg->records.issuer,
		.max_window_ms = cfg->records.max_window_s * 1000LL,
		.clock_skew_ms = cfg->records.clock_skew_s * 1000LL,
		.max_bytes = (size_t)cfg->records.max_bytes,
		.action_known = action_known, .action_ctx = (void *)cfg,
	};
	return pol;
}

/* token = exchange sends the record itself as the subject: kept then, as
 * *owned when there is a copy already (taken: set to NULL), else copied. */
static void
keep_raw(struct ejob *j, struct job_event *ev, const char *raw, char **owned)
{
	if (ev->record_status != RECORD_OK || !cred_exchanges(job_cred(j)))
		return;
	if (owned != NULL) {
		j->raw = *owned;
		*owned = NULL;
	} else {
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
		log_warn("record.rejected", "id=%s reason=%s detail=%s", j->id,
		    record_status_code(ev->record_status), LOG_Q(detail));
	}
}

/* A worker verified the record: the same as record_load inline, the last
 * rule (the action) checked here by the running config. */
static void
verified(void *arg, struct vpool_result *res)
{
	struct ejob *j = arg;
	struct job_event ev = j->loaded;
	struct record_policy pol = record_policy_of(j);

	j->vt = NULL;	/* freed by the pool once this returns */
	j->wait = W_NONE;
	j->rec = res->rec;
	j->bad_owner = res->owner;
	ev.record_status = res->status;
	if (ev.record_status == RECORD_OK)
		ev.record_status = record_check_action(&pol, &j->rec, &j->bad_owner, res->detail,
		    sizeof res->detail);
	keep_raw(j, &ev, res->raw, &res->raw);
	free(res->raw);
	loaded(j, &ev, res->detail);
	ejob_unref(j);
}

/* The record goes to a worker (1), or is verified here (0: no pool, HS256
 * or out of memory). */
static int
start_verify(struct ejob *j, const struct job_event *ev, const char *raw)
{
	struct vpool *vp = env_of(j)->vpool;
	struct record_policy pol = record_policy_of(j);

	if (vp == NULL || (j->vt = vpool_submit(vp, &pol, j->id, raw, wtime_now_ms(), verified,
	    j)) == NULL)
		return 0;
	j->loaded = *ev;
	j->refs++;
	j->wait = W_VERIFY;
	return 1;
}

static void
after_load(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct ejob *j = arg;
	struct job_event ev = {.kind = JOB_EV_LOADED, .deliveries = j->core.deliveries};
	char detail[200] = "";
	size_t nfields;
	(void)rc;

	j->wait = W_NONE;
	if (j->finished) {
		ejob_unref(j);
		return;
	}
	if (sreply_array_len(r, &nfields) < 0) {
		/* An error reply, or the connection went: load again with
		 * backoff. The entry stays in hand, so nothing more is read --
		 * until an error of its own hash (WRONGTYPE) gives it up. */
		redis_failed(j, T_LOAD_RETRY, sreply_error_text(r), 1);
		ejob_unref(j);
		return;
	}
	consumer_err_ok(&j->errs);
	ev.hash_exists = nfields > 0;
	const char *attempts = sreply_field(r, "attempts");
	if (attempts != NULL) {
		long long n = strtoll(attempts, NULL, 10);
		ev.attempts = n < 0 ? 0 : n > INT32_MAX ? INT32_MAX : (int)n;
	}
	const char *state = sreply_field(r, "state");
	if (state == NULL || job_state_parse(state, &ev.stored_state) < 0)
		ev.stored_state = JOB_NONE;
	const char *raw = sreply_field(r, "record");
	if (ev.hash_exists && raw == NULL) {
		ev.record_status = RECORD_INVALID;
		snprintf(detail, sizeof detail, "hash has no record field");
	} else if (ev.hash_exists && start_verify(j, &ev, raw)) {
		ejob_unref(j);	/* verified() goes on */
		return;
	} else if (ev.hash_exists) {
		struct record_policy pol = record_policy_of(j);
		ev.record_status = record_load(&pol, j->id, raw, wtime_now_ms(), &j->rec,
		    &j->bad_owner, detail, sizeof detail);
		keep_raw(j, &ev, raw, NULL);
	}
	loaded(j, &ev, detail);
	ejob_unref(j);
}

/* HGETALL of the record's hash, whose key the caller built (ejobs_admit
 * checks it while building it; a retry builds it again). */
static void
load_key(struct ejob *j, const char *key)
{
	const char *argv[] = {"HGETALL", key};

	if (rconn_commandv(env_of(j)->cmd, after_load, j, 2, argv, NULL) < 0) {
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

void
ejobs_admit(struct ejobs *s, const char *stream_id, const char *id, int deliveries)
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
	if (id == NULL || !record_id_valid(id) ||
	    store_decision_key(s->env->keys, id, key.s, sizeof key.s) < 0) {
		struct job_event ev = {.kind = JOB_EV_NO_ID};
		feed(j, &ev);
		return;
	}
	copy_cut(j->id, sizeof j->id, id);
	load_key(j, key.s);
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
	/* Gone from the PEL too, so the transition skips the lease check. */
	j->deleted = 1;
	struct job_event ev = {.kind = JOB_EV_ENTRY_DELETED};
	feed(j, &ev);
	return 0;
}

void
ejobs_lease_lost(struct ejobs *s, const char *stream_id)
{
	struct ejob *j = ejob_find(s, stream_id);

	if (j == NULL || j->finished)
		return;
	log_warn("job.lease_lost", "id=%s stream_id=%s", j->id, j->stream_id);
	j->lost = 1;
	struct job_event ev = {.kind = JOB_EV_LEASE_LOST};
	feed(j, &ev);
}

void
ejobs_unpending(struct ejobs *s, const char *stream_id)
{
	struct ejob *j = ejob_find(s, stream_id);

	if (j == NULL || j->finished || j->unpending)
		return;
	log_warn("job.unpending", "id=%s stream_id=%s detail=\"pending for nobody: a result "
	    "obtained is still written\"", j->id, j->stream_id);
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

/* R15: a call in flight may finish, and a result in hand waits for Redis
 * (within the grace): it is never thrown away early. */
static int
job_is_calling(const struct ejob *j)
{
	return j->wait == W_CALL || j->wait == W_AUTHZ || j->wait == W_WRITE ||
	    (j->timer_kind == T_REDIS_RETRY && (j->step.effects & JOB_FX_END) && j->fence >= 0);
}

static void
ejob_stop(struct ejob *j)
{
	if (!job_is_calling(j))
		ejob_finish(j);
}

/* ------------------------------------------------------------------ */
/* the set                                                              */

struct ejobs *
ejobs_new(const struct ejob_env *env)
{
	struct ejobs *s = calloc(1, sizeof *s);

	if (s != NULL)
		s->env = env;
	return s;
}

void
ejobs_free(struct ejobs *s)
{
	if (s == NULL)
		return;
	while (s->head)
		ejob_release(s->head);
	free(s);
}

size_t
ejobs_count(const struct ejobs *s)
{
	return s->n;
}

/* Each job of the set, also when f frees it (the next one is read first). */
static void
each(struct ejobs *s, void (*f)(struct ejob *))
{
	for (struct ejob *j = s->head, *next; j; j = next) {
		next = j->next;
		f(j);
	}
}

static void
ejob_redis_up(struct ejob *j)
{
	if (j->finished || (j->timer_kind != T_REDIS_RETRY && j->timer_kind != T_LOAD_RETRY &&
	    j->timer_kind != T_REDISPATCH_RETRY && j->timer_kind != T_HANDBACK_RETRY))
		return;
	consumer_err_redis_up(&j->errs);
	ejob_arm(j, j->timer_kind, 0);
}

void
ejobs_redis_up(struct ejobs *s)
{
	each(s, ejob_redis_up);
}

void
ejobs_token_ready(struct ejobs *s)
{
	each(s, ejob_token_ready);
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
	s->draining = 1;
	for (struct ejob *j = s->head; j; j = j->next)
		ejob_abandon(j);
}

size_t
ejobs_leased(const struct ejobs *s, const char **ids, size_t max)
{
	size_t n = 0;

	for (const struct ejob *j = s->head; j && n < max; j = j->next)
		if (!j->finished && !j->lost && !j->deleted && !j->unpending)
			ids[n++] = j->stream_id;
	return n;
}
