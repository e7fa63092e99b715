/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ejob_redis: a job's Redis steps (ejob_int.h). Each is one row of
 * `steps[]`: its name, the script it runs (through the operations of
 * ejob.h, which eops.c sends through script.c and store.c), how its
 * arguments are built and sent, how its reply is read, the event it feeds
 * job_next, the timer its R17 retry waits on, and whether an error reply
 * of it is the entry's own. A failed step goes to consumer_err_next.
 */
#define _DEFAULT_SOURCE
#include "ejob_int.h"

static void reclaimed(struct ejob *j, const void *reply);
static void on_loaded(void *arg, const struct ejob_loaded *r);
static void on_written(void *arg, const struct ejob_written *r);
static void on_moved(void *arg, const struct ejob_moved *r);
static void redis_failed(struct ejob *j, enum ejob_timer kind, const char *text, int entry_data);
static int writes_hash(const struct ejob *j);
static const char *notify_owner(const struct ejob *j);
static void count_outcome(struct engine_counters *n, enum job_state st);
static void transition_written(struct ejob *j, const struct ejob_written *r);
static void write_failed(struct ejob *j, const char *text);
static void keep_raw(struct ejob *j, struct job_event *ev, const char *raw, char **owned);
static void loaded(struct ejob *j, struct job_event *ev, const char *detail);
static void take_verified(struct ejob *j, struct job_event *ev, struct ejob_verified *v,
			  const char *raw);
static void verified(void *arg, struct ejob_verified *r);

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
	ejob_feed(j, &ev);
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

void
ejob_log_step(const struct ejob *j, const struct job_step *s)
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

static int
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
		.hash_key = writes_hash(j) ? ejob_hash_key_of(j, &key) : NULL,
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
	return env->ops->write(env->ctx, &t, (fx & JOB_FX_WAIT_REPLICAS) ? w->wait_replicas : 0,
	    on_written, j);
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
written(struct ejob *j, const void *reply)
{
	const struct ejob_written *r = reply;

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
		ejob_feed(j, &ev);
		return;
	}
	ejob_continue_effects(j);
}


/* ------------------------------------------------------------------ */
/* R9 re-dispatch                                                       */

static void
redispatched(struct ejob *j, const void *reply)
{
	const struct ejob_moved *r = reply;
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
	ejob_feed(j, &ev);
}

static int
send_redispatch(struct ejob *j)
{
	/* the count before it: a resend after a lost reply claims nothing twice */
	return ops_of(j)->redispatch(ctx_of(j), j->stream_id, j->core.deliveries, on_moved, j);
}

/* ------------------------------------------------------------------ */
/* R9 hand-back: no token within auth_wait_max_ms                       */

static void
handed_back(struct ejob *j, const void *reply)
{
	const struct ejob_moved *r = reply;
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
	ejob_feed(j, &ev);
}

static int
send_handback(struct ejob *j)
{
	struct hash_key key;

	return ops_of(j)->handback(ctx_of(j), ejob_hash_key_of(j, &key), j->stream_id, j->id,
	    on_moved, j);
}

/* ------------------------------------------------------------------ */
/* R6: set aside while its action is held                               */

static void
parked(struct ejob *j, const void *reply)
{
	const struct ejob_moved *r = reply;
	struct job_event ev = {.kind = JOB_EV_PARKED};

	if (!r->ok) {
		/* Sent again with backoff; had it run (its reply lost), ours
		 * is acked: the resend finds it no longer ours and lets it go.
		 * It names no hash: an error is never the entry's. */
		redis_failed(j, T_PARK_RETRY, r->error, 0);
		return;
	}
	consumer_err_ok(&j->errs);
	if (!r->handed) {
		ev.kind = JOB_EV_LEASE_LOST;
	} else {
		env_of(j)->n->parked++;
		log_info("job.parked", "id=%s stream_id=%s action=%s parked=%s", lid(j),
		    j->stream_id, LOG_Q(j->rec->action),
		    r->new_stream_id ? r->new_stream_id : "-");
	}
	ejob_feed(j, &ev);
}

static int
send_park(struct ejob *j)
{
	return ops_of(j)->park(ctx_of(j), j->stream_id, j->id, j->rec->action,
	    j->core.expires_at_ms, on_moved, j);
}

/* ------------------------------------------------------------------ */
/* R20: a write refused for Redis' credential                           */

/* The write waits for ejobs_redis_auth_ready: no timer, nothing in flight
 * (the renewals still see it in hand: another's claim is found there). */
void
ejob_hold(struct ejob *j)
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
		ejob_hold(j);
		return;
	case CONSUMER_AUTH_RECLAIM:
		ejob_step_start(j, EJOB_STEP_RECLAIM);
		return;
	case CONSUMER_AUTH_R17:
		break;
	}
	redis_failed(j, T_REDIS_RETRY, text, text != NULL && writes_hash(j));
}

static void
reclaimed(struct ejob *j, const void *reply)
{
	const struct ejob_moved *r = reply;
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
		ejob_step_start(j, EJOB_STEP_WRITE);	/* the step decided before: its fence */
		return;
	case CONSUMER_RS_ABANDON: {
		struct job_event ev = {.kind = JOB_EV_LEASE_LOST};
		j->lost = 1;
		ejob_feed(j, &ev);
		return;
	}
	case CONSUMER_RS_HOLD:
		ejob_hold(j);
		return;
	case CONSUMER_RS_RETRY:
		break;
	}
	redis_failed(j, T_RECLAIM_RETRY, r->error, 0);
}

static int
send_reclaim(struct ejob *j)
{
	j->held = 0;
	return ops_of(j)->reclaim(ctx_of(j), j->stream_id, on_moved, j);
}

/* A reclaim that could not be sent is read as one that got no answer. */
static void
reclaim_not_sent(struct ejob *j)
{
	struct ejob_moved none = {0};

	reclaimed(j, &none);
}

/* ------------------------------------------------------------------ */
/* loading an entry                                                     */

/* token = exchange sends the record itself as the subject: kept then, as
 * *owned when there is a copy already (taken: set to NULL), else copied. */
static void
keep_raw(struct ejob *j, struct job_event *ev, const char *raw, char **owned)
{
	if (ev->record_status != RECORD_OK || !(ejob_auth_of(j, ejob_action(j)) & EJOB_AUTH_EXCHANGE))
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
	ejob_feed(j, ev);
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
	if (ejob_answered(j)) {
		struct job_event ev = j->loaded;
		take_verified(j, &ev, r, r->raw);
	} else {
		record_free(r->rec);
		free(r->owner);
		free(r->raw);
	}
	ejob_settle(j);
}

static void
hash_read(struct ejob *j, const void *reply)
{
	const struct ejob_loaded *r = reply;
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

/* The record's hash (ejobs_admit checked that its key fits) and its
 * P:final mark. Not sent: backoff, and the entry stays in hand, so reads
 * wait too. */
static int
send_load(struct ejob *j)
{
	struct hash_key key, fin;

	return ops_of(j)->load(ctx_of(j), ejob_hash_key_of(j, &key), ejob_final_key_of(j, &fin),
	    on_loaded, j);
}

static void
write_not_sent(struct ejob *j)
{
	write_failed(j, NULL);
}

/* ------------------------------------------------------------------ */
/* the table                                                            */

struct step_row {
	const char *name;		/* as the step is named in comments and tests */
	const char *script;		/* lua/NAME.lua that eops runs for it */
	enum ejob_wait wait;		/* what the job waits for while it is out */
	enum ejob_timer retry;		/* the timer an R17 retry waits on */
	enum job_event_kind feeds;	/* what its reply feeds job_next (the write:
					   only when too few replicas took it) */
	int (*send)(struct ejob *j);	/* builds its arguments from the job and
					   sends it: 0, or -1 when it could not */
	void (*read)(struct ejob *j, const void *reply);	/* its reply, the
					   operation's type (ejob.h) */
	void (*not_sent)(struct ejob *j);	/* NULL: R17's backoff (redis_failed) */
};

/* One row per Redis step of a job: adding a step is a row here, its send
 * and read functions, and its operation in ejob.h and eops.c. */
static const struct step_row steps[EJOB_STEP_COUNT] = {
	[EJOB_STEP_LOAD] = {"load", "load", W_LOAD, T_LOAD_RETRY, JOB_EV_LOADED,
	    send_load, hash_read, NULL},
	[EJOB_STEP_WRITE] = {"transition", "transition", W_WRITE, T_REDIS_RETRY,
	    JOB_EV_UNREPLICATED, send_transition, written, write_not_sent},
	[EJOB_STEP_REDISPATCH] = {"redispatch", "redispatch", W_REDISPATCH, T_REDISPATCH_RETRY,
	    JOB_EV_REDISPATCHED, send_redispatch, redispatched, NULL},
	[EJOB_STEP_HANDBACK] = {"handback", "handback", W_HANDBACK, T_HANDBACK_RETRY,
	    JOB_EV_HANDED_BACK, send_handback, handed_back, NULL},
	[EJOB_STEP_RECLAIM] = {"reclaim", "reclaim", W_RECLAIM, T_RECLAIM_RETRY,
	    JOB_EV_LEASE_LOST, send_reclaim, reclaimed, reclaim_not_sent},
	[EJOB_STEP_PARK] = {"park", "park", W_PARK, T_PARK_RETRY, JOB_EV_PARKED,
	    send_park, parked, NULL},
};

void
ejob_step_start(struct ejob *j, enum ejob_step k)
{
	const struct step_row *row = &steps[k];

	if (row->send(j) < 0) {
		if (row->not_sent != NULL)
			row->not_sent(j);
		else
			redis_failed(j, row->retry, NULL, 0);
		return;
	}
	j->refs++;
	j->wait = row->wait;
}

int
ejob_step_of_timer(enum ejob_timer t)
{
	for (int k = 0; k < EJOB_STEP_COUNT; k++)
		if (steps[k].retry == t)
			return k;
	return -1;
}

/* Every step's reply comes here, through the adapter of its type: the
 * step is the one the job waits for (one Redis step out at a time). */
static void
step_answered(void *arg, const void *reply)
{
	struct ejob *j = arg;
	int k = 0;

	while (k < EJOB_STEP_COUNT && steps[k].wait != j->wait)
		k++;
	if (ejob_answered(j) && k < EJOB_STEP_COUNT)
		steps[k].read(j, reply);
	ejob_settle(j);
}

static void
on_loaded(void *arg, const struct ejob_loaded *r)
{
	step_answered(arg, r);
}

static void
on_written(void *arg, const struct ejob_written *r)
{
	step_answered(arg, r);
}

static void
on_moved(void *arg, const struct ejob_moved *r)
{
	step_answered(arg, r);
}
