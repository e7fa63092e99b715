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
#include "engine_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "urltpl.h"

#define REDIS_RETRY_MS 250

static void apply(struct ejob *j);
static void feed(struct ejob *j, struct job_event *ev);
static void ejob_timer_cb(struct ev_loop *loop, ev_timer *w, int revents);

/* ------------------------------------------------------------------ */
/* small helpers                                                        */

static uint64_t
rnd(struct engine *eng)
{
	/* xorshift64*: jitter only, not security. */
	uint64_t x = eng->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	eng->rng = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static const char *
now_rfc3339(char *buf, size_t n)
{
	return wtime_format_rfc3339(wtime_now_ms(), buf, n);
}

static const redisReply *
reply_elem(const redisReply *r, size_t i, int type)
{
	if (r == NULL || r->type != REDIS_REPLY_ARRAY || i >= r->elements)
		return NULL;
	if (r->element[i]->type != type)
		return NULL;
	return r->element[i];
}

static const struct cfg_action *
job_action(const struct ejob *j)
{
	return j->rec ? cfg_action_find(j->eng->cfg, j->rec->action) : NULL;
}

static int
action_index(const struct cfg *cfg, const struct cfg_action *a)
{
	return (int)(a - cfg->actions);
}

/* R6: a token that outlives the call, for an action that needs one. */
static int
token_ok(const struct ejob *j)
{
	const struct cfg_action *a = job_action(j);
	return a == NULL || a->auth != CFG_AUTH_OAUTH || worker_token(j->eng, a->timeout_ms);
}

static struct job_policy
policy(const struct engine *eng, const struct ejob *j)
{
	const struct cfg *c = eng->cfg;
	const struct cfg_action *a = job_action(j);
	struct job_policy p = {
		.retry_base_ms = c->retry.base_ms,
		.retry_cap_ms = c->retry.cap_ms,
		.max_attempts = (int)c->retry.max_attempts,
		.max_deliveries = (int)c->redis.max_deliveries,
		.authz_enabled = c->authz.url != NULL,
		.token_needed = a != NULL && a->auth == CFG_AUTH_OAUTH,
	};
	return p;
}

/* ------------------------------------------------------------------ */
/* the jobs in hand                                                     */

static struct ejob *
ejob_find(struct engine *eng, const char *stream_id)
{
	for (struct ejob *j = eng->jobs; j; j = j->next)
		if (strcmp(j->stream_id, stream_id) == 0)
			return j;
	return NULL;
}

static void
ejob_timer_stop(struct ejob *j)
{
	ev_timer_stop(j->eng->loop, &j->timer);
	j->timer_kind = T_NONE;
}

void
ejob_release(struct ejob *j)
{
	struct engine *eng = j->eng;

	if (j->prev)
		j->prev->next = j->next;
	else
		eng->jobs = j->next;
	if (j->next)
		j->next->prev = j->prev;
	eng->in_hand--;
	record_free(j->rec);
	free(j->bad_owner);
	free(j);
}

void
ejob_abandon(struct ejob *j)
{
	j->finished = 1;
	ejob_timer_stop(j);
	if (j->call) {
		http_cancel(j->call);
		j->call = NULL;
		j->refs--;
	}
}

/* Marks j finished; frees it now when nothing points at it, else when the
 * last callback returns (ejob_unref). */
static void
ejob_finish(struct ejob *j)
{
	struct engine *eng = j->eng;

	if (!j->finished)
		ejob_abandon(j);
	if (j->refs == 0) {
		ejob_release(j);
		engine_job_released(eng);
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
ejob_new(struct engine *eng, const char *stream_id, int deliveries)
{
	struct ejob *j = calloc(1, sizeof *j);

	if (j == NULL)
		return NULL;
	j->eng = eng;
	snprintf(j->stream_id, sizeof j->stream_id, "%s", stream_id);
	j->core.deliveries = deliveries;
	j->fence = -1;
	ev_init(&j->timer, ejob_timer_cb);
	j->timer.data = j;
	j->next = eng->jobs;
	if (eng->jobs)
		eng->jobs->prev = j;
	eng->jobs = j;
	eng->in_hand++;
	return j;
}

static void
ejob_arm(struct ejob *j, enum ejob_timer kind, int64_t delay_ms)
{
	ev_timer_stop(j->eng->loop, &j->timer);
	ev_timer_set(&j->timer, delay_ms > 0 ? (double)delay_ms / 1000.0 : 0.0, 0.0);
	j->timer_kind = kind;
	ev_timer_start(j->eng->loop, &j->timer);
}

/* ------------------------------------------------------------------ */
/* Redis transitions                                                    */

static const char *
notify_owner(const struct ejob *j)
{
	const char *dflt = j->eng->cfg->notify.default_owner;

	if (j->rec && j->rec->notify_on_denial)
		return j->rec->notify_on_denial;
	if (j->bad_owner)
		return j->bad_owner;
	return dflt ? dflt : "";
}

static void
count_outcome(struct engine *eng, enum job_state st)
{
	switch (st) {
	case JOB_DONE: eng->n.done++; break;
	case JOB_EXPIRED: eng->n.expired++; break;
	case JOB_DENIED: eng->n.denied++; break;
	case JOB_FAILED: eng->n.failed++; break;
	case JOB_DEAD: eng->n.dead++; break;
	case JOB_RETRYING: eng->n.retried++; break;
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
	log_msg(lvl, ev, "id=%s stream_id=%s state=%s action=%s resource=%s attempt=%d "
	    "reason=%s detail=%s", j->id[0] ? j->id : "-", j->stream_id,
	    job_state_name(s->next)[0] ? job_state_name(s->next) : "-",
	    j->rec ? LOG_Q(j->rec->action) : "-", j->rec ? LOG_Q(j->rec->resource) : "-",
	    j->core.calls, s->reason ? s->reason : "-", LOG_Q(s->detail));
}

static void after_transition(struct rconn *rc, redisReply *r, void *arg);

/* §6: the same fields as the P:notify entry, as JSON. */
static void
post_webhook(const struct ejob *j)
{
	json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "id", j->id,
	    "owner", notify_owner(j), "kind", job_state_name(j->step.next),
	    "reason", j->step.reason ? j->step.reason : "",
	    "onBehalfOf", j->rec ? j->rec->on_behalf_of : "",
	    "action", j->rec ? j->rec->action : "", "resource", j->rec ? j->rec->resource : "",
	    "at", j->written_at);
	char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;

	if (body)
		webhook_post(j->eng->webhook, body);
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
	struct engine *eng = j->eng;
	const struct job_step *s = &j->step;
	unsigned fx = s->effects;
	char status[16] = "", score[24] = "";
	int terminal = job_state_terminal(s->next);
	struct store_transition t = {
		.hash_key = j->id[0] && (j->rec || (fx & JOB_FX_WRITE_STATE)) ? j->hash_key : NULL,
		.stream_id = j->stream_id,
		.record_id = j->id,
		.state = (fx & JOB_FX_WRITE_STATE) ? job_state_name(s->next) : "",
		.outcome = s->reason ? s->reason : "",
		.detail = s->detail,
		.http_status = status,
		.fence_attempts = (fx & JOB_FX_CALL) ? -1 : j->fence,
		.require_owner = j->started,
		.incr_attempts = (fx & JOB_FX_CALL) != 0,
		.ack = (fx & (JOB_FX_ACK | JOB_FX_RESCHEDULE)) != 0,
		.dead_reason = (fx & JOB_FX_DEAD_LETTER) ? s->reason : "",
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
		.retain_ms = terminal ? eng->cfg->records.retain_s * 1000LL : 0,
	};
	struct store_argv a;

	if (j->last_status)
		snprintf(status, sizeof status, "%d", j->last_status);
	if (fx & JOB_FX_RESCHEDULE)
		snprintf(score, sizeof score, "%" PRId64, s->at_ms);
	store_transition_argv(&eng->keys, eng->cfg->redis.group, eng->cfg->daemon.consumer,
	    eng->cfg->records.audit_maxlen, &t, &a);
	if (rconn_eval(eng->cmd, &eng->s_transition, after_transition, j, a.nkeys,
	    a.argc, a.argv, a.len) < 0) {
		ejob_arm(j, T_REDIS_RETRY, REDIS_RETRY_MS);
		return;
	}
	j->refs++;
	j->wait = W_WRITE;
}

/* What follows the Redis write: the HTTP call, a timer or a token wait. */
static void start_authz(struct ejob *j);
static void start_call(struct ejob *j);
static void start_redispatch(struct ejob *j);

static void
continue_effects(struct ejob *j)
{
	unsigned fx = j->step.effects;
	struct engine *eng = j->eng;

	j->wait = W_NONE;
	if (job_state_terminal(j->step.next) || (fx & (JOB_FX_ACK | JOB_FX_RESCHEDULE)) ||
	    (fx & JOB_FX_RELEASE) || (j->step.next == JOB_NONE && (fx & JOB_FX_DEAD_LETTER))) {
		ejob_finish(j);
		return;
	}
	if (eng->draining) {
		/* R15: no new call and no new wait once stopping; the entry
		 * stays pending for R11/R14. */
		ejob_finish(j);
		return;
	}
	if (fx & JOB_FX_AUTHZ)
		start_authz(j);
	else if (fx & JOB_FX_CALL)
		start_call(j);
	else if (fx & JOB_FX_RETRY_AT)
		ejob_arm(j, T_RETRY, j->step.at_ms - wtime_now_ms());
	else if (fx & JOB_FX_REDISPATCH)
		start_redispatch(j);
	else if (fx & JOB_FX_WAIT_TOKEN)
		/* The token may have come while this step was written, or the
		 * failed call used an older one: then go on from the loop. */
		ejob_arm(j, T_TOKEN_WAIT, token_ok(j) ? 0 : eng->cfg->oauth.auth_wait_max_ms);
}

/* The script wrote the step: remember what it says, then count and tell. */
static void
transition_written(struct ejob *j, const redisReply *r)
{
	unsigned fx = j->step.effects;

	if (fx & JOB_FX_CALL) {
		const redisReply *n = reply_elem(r, 3, REDIS_REPLY_STRING);
		j->fence = n ? strtoll(n->str, NULL, 10) : -1;
	}
	if (fx & JOB_FX_START_ATTEMPT)
		j->started = 1;
	if ((fx & JOB_FX_NOTIFY) && j->eng->webhook && notify_owner(j)[0])
		post_webhook(j);
	/* A dead letter with no hash to write (no-id, record-missing) is dead too. */
	count_outcome(j->eng, (fx & JOB_FX_WRITE_STATE) ? j->step.next :
	    (fx & JOB_FX_DEAD_LETTER) ? JOB_DEAD : JOB_NONE);
}

static void
after_transition(struct rconn *rc, redisReply *r, void *arg)
{
	struct ejob *j = arg;
	(void)rc;

	j->wait = W_NONE;
	if (j->finished) {
		ejob_unref(j);
		return;
	}
	if (r == NULL || r->type == REDIS_REPLY_ERROR) {
		if (r != NULL)
			log_warn("redis.error", "op=transition id=%s error=%s",
			    j->id[0] ? j->id : "-", LOG_Q(r->str));
		/* Nothing was decided twice: the same step is written again
		 * once Redis answers. */
		ejob_arm(j, T_REDIS_RETRY, REDIS_RETRY_MS);
		ejob_unref(j);
		return;
	}
	const redisReply *ok = reply_elem(r, 0, REDIS_REPLY_INTEGER);
	const redisReply *why = reply_elem(r, 1, REDIS_REPLY_STRING);
	if (ok == NULL || ok->integer != 1) {
		int dup = why && strcmp(why->str, "terminal") == 0;
		log_info(dup ? "job.duplicate" : "job.abandon", "id=%s stream_id=%s reason=%s",
		    j->id[0] ? j->id : "-", j->stream_id, why ? LOG_Q(why->str) : "bad-reply");
		ejob_finish(j);
		ejob_unref(j);
		return;
	}
	transition_written(j, r);
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
		j->eng->n.auth_failures++;
		if (j->eng->oauth)
			oauth_invalidate_gen(j->eng->oauth, j->token_gen);
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
	struct job_policy pol = policy(j->eng, j);

	ev->rnd = rnd(j->eng);
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
	log_info("job.call", "id=%s action=%s resource=%s attempt=%d status=%ld ms=%ld%s%s",
	    j->id, LOG_Q(j->rec->action), LOG_Q(j->rec->resource), j->core.calls, resp->status,
	    resp->elapsed_ms, resp->status == 0 ? " error=" : "",
	    resp->status == 0 ? (resp->timed_out ? "timeout" : "transport") : "");
	feed(j, &ev);
	ejob_unref(j);
}

static char *
call_body(const struct ejob *j)
{
	return json_dumps(j->rec->content, JSON_COMPACT);
}

/* The bearer for a's call, or NULL; notes which token generation it is. */
static const char *
call_bearer(struct ejob *j, const struct cfg_action *a)
{
	struct engine *eng = j->eng;
	const char *bearer = NULL;

	if (a->auth == CFG_AUTH_STATIC)
		bearer = eng->bearers[action_index(eng->cfg, a)];
	else if (a->auth == CFG_AUTH_OAUTH)
		bearer = worker_token(eng, a->timeout_ms);
	j->token_gen = eng->oauth ? oauth_generation(eng->oauth) : 0;
	return bearer;
}

/* The action call's headers; `auth` holds a secret: wipe it after use. */
struct call_headers {
	char idem[128], obo[1200], basis[1200], auth[4200];
	const char *list[8];
};

static void
call_headers_fill(struct call_headers *h, const struct record *r, const char *bearer)
{
	int nh = 0;

	snprintf(h->idem, sizeof h->idem, "Idempotency-Key: %s", r->id);
	snprintf(h->obo, sizeof h->obo, "Warrant-On-Behalf-Of: %s", r->on_behalf_of);
	snprintf(h->basis, sizeof h->basis, "Warrant-Basis: %s", r->basis);
	h->list[nh++] = "Content-Type: application/json";
	h->list[nh++] = h->idem;
	h->list[nh++] = h->obo;
	h->list[nh++] = h->basis;
	if (bearer) {
		snprintf(h->auth, sizeof h->auth, "Authorization: Bearer %s", bearer);
		h->list[nh++] = h->auth;
	}
	h->list[nh] = NULL;
}

static void
start_call(struct ejob *j)
{
	struct engine *eng = j->eng;
	const struct cfg_action *a = job_action(j);
	char err[160];
	struct urltpl_vars vars = {j->rec->resource, j->rec->action, j->rec->id,
	    j->rec->on_behalf_of};
	char *url = a ? urltpl_expand(a->url, &vars, err, sizeof err) : NULL;
	char *body = call_body(j);
	struct job_event ev = {.kind = JOB_EV_HTTP, .http_status = 0, .retry_after_ms = -1};

	if (url == NULL || body == NULL) {
		log_error("job.call", "id=%s error=%s", j->id, LOG_Q(url ? "out of memory" : err));
		free(url);
		free(body);
		feed(j, &ev);	/* counts as a failed call: retried within limits */
		return;
	}
	const char *bearer = call_bearer(j, a);
	if (a->auth == CFG_AUTH_OAUTH && bearer == NULL) {
		/* The token died between the decision and now: R6 says wait,
		 * and the core treats it as an auth failure. */
		free(url);
		free(body);
		struct job_event tev = {.kind = JOB_EV_HTTP, .http_status = 401, .retry_after_ms = -1};
		feed(j, &tev);
		return;
	}
	struct call_headers h;
	call_headers_fill(&h, j->rec, bearer);
	struct http_request req = {
		.method = a->method, .url = url, .headers = h.list,
		.body = body, .body_len = strlen(body), .timeout_ms = a->timeout_ms,
	};
	int rc = http_start(eng->http, &req, on_call_done, j, &j->call);
	explicit_bzero(h.auth, sizeof h.auth);
	free(url);
	free(body);
	if (rc < 0) {
		log_error("job.call", "id=%s error=\"cannot start request\"", j->id);
		feed(j, &ev);
		return;
	}
	j->refs++;
	j->wait = W_CALL;
	j->attempt_started_ms = wtime_now_ms();
}

/* SPEC §7: {"result": true} or {"result": {"allow": true}} allows. */
static enum job_authz
authz_answer(const struct http_response *resp)
{
	return job_authz_answer(resp->status, resp->body, resp->body_len);
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
	ev.authz = authz_answer(resp);
	log_info("job.authz", "id=%s status=%ld answer=%s ms=%ld", j->id, resp->status,
	    ev.authz == JOB_AUTHZ_ALLOW ? "allow" : ev.authz == JOB_AUTHZ_DENY ? "deny" :
	    "unavailable", resp->elapsed_ms);
	feed(j, &ev);
	ejob_unref(j);
}

/* The authority check's input document, compact; NULL when out of memory.
 * Caller frees. */
static char *
authz_body(const struct record *r)
{
	/* decidedAt goes as the record wrote it, not re-formatted. */
	json_t *input = json_pack("{s:{s:s,s:s,s:s,s:O,s:s,s:s,s:O}}", "input",
	    "subject", r->on_behalf_of, "action", r->action, "resource", r->resource,
	    "parameters", r->parameters, "basis", r->basis, "recordId", r->id,
	    "decidedAt", json_object_get(r->content, "decidedAt"));
	char *body = input ? json_dumps(input, JSON_COMPACT) : NULL;

	json_decref(input);
	return body;
}

static void
start_authz(struct ejob *j)
{
	struct engine *eng = j->eng;
	char *body = authz_body(j->rec);
	struct job_event ev = {.kind = JOB_EV_AUTHZ, .authz = JOB_AUTHZ_UNAVAILABLE};
	char h_auth[4200];
	const char *tok = worker_token(eng, eng->cfg->authz.timeout_ms);
	const char *headers[] = {"Content-Type: application/json", tok ? h_auth : NULL, NULL};

	if (tok)
		snprintf(h_auth, sizeof h_auth, "Authorization: Bearer %s", tok);
	struct http_request req = {
		.method = "POST", .url = eng->cfg->authz.url, .headers = headers,
		.body = body, .body_len = body ? strlen(body) : 0,
		.timeout_ms = eng->cfg->authz.timeout_ms,
	};
	int rc = body ? http_start(eng->http, &req, on_authz_done, j, &j->call) : -1;
	explicit_bzero(h_auth, sizeof h_auth);
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
after_redispatch(struct rconn *rc, redisReply *r, void *arg)
{
	struct ejob *j = arg;
	struct job_event ev = {.kind = JOB_EV_REDISPATCHED};
	(void)rc;

	j->wait = W_NONE;
	if (j->finished) {
		ejob_unref(j);
		return;
	}
	if (r == NULL || r->type != REDIS_REPLY_INTEGER) {
		ejob_arm(j, T_REDISPATCH_RETRY, REDIS_RETRY_MS);	/* ask again */
		ejob_unref(j);
		return;
	}
	if (r->integer == 0) {
		ev.kind = JOB_EV_LEASE_LOST;
	} else {
		j->core.deliveries = (int)r->integer;
		j->eng->n.redispatched++;
		log_info("job.redispatch", "id=%s stream_id=%s deliveries=%lld", j->id,
		    j->stream_id, r->integer);
	}
	feed(j, &ev);
	ejob_unref(j);
}

static void
start_redispatch(struct ejob *j)
{
	struct engine *eng = j->eng;
	const char *argv[] = {eng->keys.jobs, eng->cfg->redis.group, eng->cfg->daemon.consumer,
	    j->stream_id};
	size_t len[4];

	for (int i = 0; i < 4; i++)
		len[i] = strlen(argv[i]);
	if (rconn_eval(eng->cmd, &eng->s_redispatch, after_redispatch, j, 1, 4, argv, len) < 0) {
		ejob_arm(j, T_REDISPATCH_RETRY, REDIS_RETRY_MS);
		return;
	}
	j->refs++;
	j->wait = W_REDISPATCH;
}

/* ------------------------------------------------------------------ */
/* loading an entry                                                     */

static int
action_known(void *ctx, const char *name)
{
	return cfg_action_find(ctx, name) != NULL;
}

/* The record in the hash, checked by the running config and key. */
static enum record_status
verify_record(struct ejob *j, const char *raw, char *detail, size_t detail_len)
{
	const struct engine *eng = j->eng;
	struct record_policy pol = {
		.signature_required = eng->cfg->records.signature_required,
		.algorithm = eng->cfg->records.algorithm,
		.parsed_key = eng->parsed_key,
		.key = eng->verify_key, .key_len = eng->verify_key_len,
		.issuer = eng->cfg->records.issuer,
		.max_window_ms = eng->cfg->records.max_window_s * 1000LL,
		.clock_skew_ms = eng->cfg->records.clock_skew_s * 1000LL,
		.max_bytes = (size_t)eng->cfg->records.max_bytes,
		.action_known = action_known, .action_ctx = eng->cfg,
	};

	return record_load(&pol, j->id, raw, wtime_now_ms(), &j->rec, &j->bad_owner,
	    detail, detail_len);
}

static void
after_load(struct rconn *rc, redisReply *r, void *arg)
{
	struct ejob *j = arg;
	struct job_event ev = {.kind = JOB_EV_LOADED, .deliveries = j->core.deliveries};
	char detail[200] = "";
	(void)rc;

	j->wait = W_NONE;
	if (j->finished) {
		ejob_unref(j);
		return;
	}
	if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
		/* Lost before we knew anything: leave it pending, R14/R11 redo it. */
		ejob_finish(j);
		ejob_unref(j);
		return;
	}
	ev.hash_exists = r->elements > 0;
	const char *state = field(r, "state");
	if (state == NULL || job_state_parse(state, &ev.stored_state) < 0)
		ev.stored_state = JOB_NONE;
	const char *raw = field(r, "record");
	if (ev.hash_exists && raw == NULL) {
		ev.record_status = RECORD_INVALID;
		snprintf(detail, sizeof detail, "hash has no record field");
	} else if (ev.hash_exists) {
		ev.record_status = verify_record(j, raw, detail, sizeof detail);
	}
	ev.record = j->rec;
	feed(j, &ev);
	if (ev.record_status != RECORD_OK && detail[0]) {
		log_warn("record.rejected", "id=%s reason=%s detail=%s", j->id,
		    record_status_code(ev.record_status), LOG_Q(detail));
	}
	ejob_unref(j);
}

static void
dead_no_id(struct ejob *j)
{
	j->step = (struct job_step){.next = JOB_NONE, .reason = JOB_R_NO_ID,
	    .effects = JOB_FX_DEAD_LETTER | JOB_FX_ACK};
	snprintf(j->step.detail, sizeof j->step.detail, "stream entry has no valid id field");
	apply(j);
}

void
ejob_admit(struct engine *eng, const char *stream_id, const redisReply *fields, int deliveries)
{
	if (ejob_find(eng, stream_id))
		return;	/* already in hand: a renewal or a second scan */
	struct ejob *j = ejob_new(eng, stream_id, deliveries);
	if (j == NULL) {
		log_error("job.admit", "stream_id=%s error=\"out of memory\"", stream_id);
		return;
	}
	eng->n.received++;
	const char *id = field(fields, "id");
	if (id == NULL || !record_id_valid(id)) {
		dead_no_id(j);
		return;
	}
	snprintf(j->id, sizeof j->id, "%s", id);
	if (store_decision_key(&eng->keys, id, j->hash_key, sizeof j->hash_key) < 0 ||
	    rconn_command(eng->cmd, after_load, j, "HGETALL %s", j->hash_key) < 0) {
		ejob_finish(j);	/* not loaded: stays pending for R11/R14 */
		return;
	}
	j->refs++;
	j->wait = W_LOAD;
}

/* ------------------------------------------------------------------ */
/* what the consumer tells an entry                                     */

int
ejob_dead_deleted(struct engine *eng, const char *stream_id)
{
	if (ejob_find(eng, stream_id))
		return 0;
	struct ejob *j = ejob_new(eng, stream_id, 0);
	if (j == NULL)
		return -1;
	j->step = (struct job_step){.next = JOB_NONE, .reason = JOB_R_ENTRY_DELETED,
	    .effects = JOB_FX_DEAD_LETTER};
	snprintf(j->step.detail, sizeof j->step.detail,
	    "entry deleted from the stream while pending");
	eng->n.dead++;
	log_step(j, &j->step);
	/* The entry is gone from the PEL, so the lease check would
	 * refuse: write the dead letter directly. */
	char at[WTIME_RFC3339_LEN];
	best_effort(rconn_command(eng->cmd, ignore_reply, NULL, "XADD %s * id %s streamId %s reason %s detail %s "
	    "deliveries 0 consumer %s at %s", eng->keys.dead, "", j->stream_id,
	    JOB_R_ENTRY_DELETED, j->step.detail, eng->cfg->daemon.consumer,
	    now_rfc3339(at, sizeof at)));
	ejob_finish(j);
	return 0;
}

void
ejob_lease_lost(struct engine *eng, const char *stream_id)
{
	struct ejob *j = ejob_find(eng, stream_id);

	if (j == NULL || j->finished)
		return;
	log_warn("job.lease_lost", "id=%s stream_id=%s", j->id, j->stream_id);
	j->lost = 1;
	struct job_event ev = {.kind = JOB_EV_LEASE_LOST};
	feed(j, &ev);
}

void
ejob_token_ready(struct ejob *j)
{
	if (j->finished || j->timer_kind != T_TOKEN_WAIT || !token_ok(j))
		return;
	ejob_timer_stop(j);
	struct job_event ev = {.kind = JOB_EV_TOKEN_READY};
	feed(j, &ev);
}

static int
job_is_calling(const struct ejob *j)
{
	return j->wait == W_CALL || j->wait == W_AUTHZ || j->wait == W_WRITE;
}

void
ejob_stop(struct ejob *j)
{
	if (!job_is_calling(j))
		ejob_finish(j);
}
