/*
 * engine: the imperative shell around the job core.
 *
 * Two Redis connections: `blk` carries only the blocking XREADGROUP, `cmd`
 * everything else, pipelined. Each entry in hand is a struct ejob; the core
 * (job_next) decides, and apply() carries out the effects in order: first
 * the Redis transition (one Lua script: fencing, state, audit, dead letter,
 * notification and XACK together), then the HTTP call, timer or token wait
 * that follows from it.
 *
 * An ejob is freed only when it is finished and no callback points at it
 * (`refs`); callbacks never free the object whose callback chain they run in.
 */
#define _DEFAULT_SOURCE
#include "engine.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "http.h"
#include "job.h"
#include "log.h"
#include "oauth.h"
#include "rconn.h"
#include "record.h"
#include "sdnotify.h"
#include "store.h"
#include "urltpl.h"
#include "version.h"
#include "webhook.h"
#include "wtime.h"

#define STREAM_ID_MAX 48
#define REDIS_RETRY_MS 250

enum ejob_timer { T_NONE, T_RETRY, T_TOKEN_WAIT, T_REDIS_RETRY, T_REDISPATCH_RETRY };
enum ejob_wait { W_NONE, W_WRITE, W_LOAD, W_AUTHZ, W_CALL, W_REDISPATCH };

struct ejob {
	struct ejob *prev, *next;
	struct engine *eng;
	char stream_id[STREAM_ID_MAX];
	char id[RECORD_ID_MAX + 1];	/* "" when the entry had no valid id */
	char hash_key[STORE_KEY_MAX + RECORD_ID_MAX + 1];
	struct job core;
	struct job_step step;		/* the step being carried out */
	struct record *rec;
	char *bad_owner;		/* notifyOnDenial of a verified but invalid record */
	long long fence;		/* `attempts` of this hand's current call; -1 none */
	int started;			/* this hand set `owner` */
	int refs;			/* callbacks in flight that point here */
	int finished;
	int lost;			/* the lease is gone: abandon at the next step */
	enum ejob_wait wait;
	enum ejob_timer timer_kind;
	ev_timer timer;
	struct http_call *call;
	int last_status;
	uint64_t token_gen;		/* oauth generation of the token the call used */
	long long attempt_started_ms;
};

struct engine {
	struct ev_loop *loop;
	struct cfg *cfg;
	struct store_keys keys;
	struct rconn *cmd, *blk;
	struct http_client *http;
	struct webhook *webhook;	/* NULL without [notify] webhook_url */
	struct oauth *oauth;		/* NULL without an [oauth] section */
	int needs_token;		/* some action has auth = oauth */
	int paused_for_token;
	long token_timeout_ms;		/* the longest such action's timeout */
	struct rconn_script s_transition, s_claim, s_renew, s_redispatch, s_promote;

	unsigned char *verify_key;
	size_t verify_key_len;
	struct record_key *parsed_key;	/* verify_key parsed once per (re)load */
	char **bearers;			/* per action, with auth = static */

	struct ejob *jobs;
	size_t in_hand;

	int group_ready, reading, draining, own_done, claiming;
	char own_cursor[STREAM_ID_MAX];
	ev_timer heartbeat, claim, lease, grace, reconnect_kick, watchdog;
	int64_t started_at, last_read_at, redis_down_since;
	long long outages;
	uint64_t rng;
	struct engine_counters n;
};

static void apply(struct ejob *j);
static void feed(struct ejob *j, struct job_event *ev);
static void read_more(struct engine *eng);
static void own_pending_more(struct engine *eng);
static void maybe_finish_stop(struct engine *eng);

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

static void
ignore_reply(struct rconn *rc, redisReply *r, void *arg)
{
	(void)rc, (void)arg;
	if (r && r->type == REDIS_REPLY_ERROR)
		log_warn("redis.error", "error=%.120s", r->str);
}

/* For writes whose loss costs nothing: the next tick sends them again. */
static void
best_effort(int rc)
{
	if (rc < 0)
		log_debug("redis.skipped", "detail=\"not connected\"");
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

/* The value of `name` in a flat field/value array, or NULL. */
static const char *
field(const redisReply *arr, const char *name)
{
	if (arr == NULL || arr->type != REDIS_REPLY_ARRAY)
		return NULL;
	for (size_t i = 0; i + 1 < arr->elements; i += 2) {
		const redisReply *k = arr->element[i], *v = arr->element[i + 1];
		if (k->type == REDIS_REPLY_STRING && v->type == REDIS_REPLY_STRING &&
		    strcmp(k->str, name) == 0)
			return v->str;
	}
	return NULL;
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

/* The worker's token for a call of timeout_ms, or NULL (R6). */
static const char *
worker_token(const struct engine *eng, long timeout_ms)
{
	return eng->oauth ? oauth_token(eng->oauth, wtime_now_ms(), timeout_ms) : NULL;
}

/* SPEC §8: with no [oauth] at all, static or no credentials are "valid". */
static const char *
token_state(const struct engine *eng)
{
	return eng->oauth ? oauth_state_name(eng->oauth) : "valid";
}

static long long
token_expires_in_s(const struct engine *eng)
{
	int64_t at = eng->oauth ? oauth_expires_at_ms(eng->oauth) : 0;
	int64_t left = at ? at - wtime_now_ms() : 0;
	return left > 0 ? left / 1000 : 0;
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

static void
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

/* Marks j finished; frees it now when nothing points at it, else when the
 * last callback returns (ejob_unref). */
static void
ejob_finish(struct ejob *j)
{
	struct engine *eng = j->eng;

	if (!j->finished) {
		j->finished = 1;
		ejob_timer_stop(j);
		if (j->call) {
			http_cancel(j->call);
			j->call = NULL;
			j->refs--;
		}
	}
	if (j->refs == 0) {
		ejob_release(j);
		if (eng->draining)
			maybe_finish_stop(eng);
		else
			read_more(eng);
	}
}

static void
ejob_unref(struct ejob *j)
{
	j->refs--;
	if (j->finished && j->refs == 0)
		ejob_finish(j);
}

static void ejob_timer_cb(struct ev_loop *loop, ev_timer *w, int revents);

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
	char d[256];
	const char *ev = "job.state";
	enum log_level lvl = LOG_INFO;

	if (s->next == JOB_RUNNING || s->next == JOB_QUEUED)
		lvl = LOG_DEBUG;
	if (s->next == JOB_DEAD || s->next == JOB_FAILED)
		lvl = LOG_WARN;
	log_msg(lvl, ev, "id=%s stream_id=%s state=%s action=%s resource=%s attempt=%d "
	    "reason=%s detail=%s", j->id[0] ? j->id : "-", j->stream_id,
	    job_state_name(s->next)[0] ? job_state_name(s->next) : "-",
	    j->rec ? j->rec->action : "-", j->rec ? j->rec->resource : "-", j->core.calls,
	    s->reason ? s->reason : "-", log_quote(d, sizeof d, s->detail));
}

static void after_transition(struct rconn *rc, redisReply *r, void *arg);

/* §6: the same fields as the P:notify entry, as JSON. */
static void
post_webhook(const struct ejob *j)
{
	char at[WTIME_RFC3339_LEN];
	json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "id", j->id,
	    "owner", notify_owner(j), "kind", job_state_name(j->step.next),
	    "reason", j->step.reason ? j->step.reason : "",
	    "onBehalfOf", j->rec ? j->rec->on_behalf_of : "",
	    "action", j->rec ? j->rec->action : "", "resource", j->rec ? j->rec->resource : "",
	    "at", now_rfc3339(at, sizeof at));
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
	char at[WTIME_RFC3339_LEN], status[16] = "", score[24] = "";
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
		.at = now_rfc3339(at, sizeof at),
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
			log_warn("redis.error", "op=transition id=%s error=%.120s",
			    j->id[0] ? j->id : "-", r->str);
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
		    j->id[0] ? j->id : "-", j->stream_id, why ? why->str : "bad-reply");
		ejob_finish(j);
		ejob_unref(j);
		return;
	}
	if (j->step.effects & JOB_FX_CALL) {
		const redisReply *n = reply_elem(r, 3, REDIS_REPLY_STRING);
		j->fence = n ? strtoll(n->str, NULL, 10) : -1;
	}
	if (j->step.effects & JOB_FX_START_ATTEMPT)
		j->started = 1;
	if ((j->step.effects & JOB_FX_NOTIFY) && j->eng->webhook && notify_owner(j)[0])
		post_webhook(j);
	/* A dead letter with no hash to write (no-id, record-missing) is dead too. */
	unsigned fx = j->step.effects;
	count_outcome(j->eng, (fx & JOB_FX_WRITE_STATE) ? j->step.next :
	    (fx & JOB_FX_DEAD_LETTER) ? JOB_DEAD : JOB_NONE);
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
		log_debug("job.ignored", "id=%s detail=\"%s\"", j->id, j->step.detail);
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
	    j->id, j->rec->action, j->rec->resource, j->core.calls, resp->status,
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

static void
start_call(struct ejob *j)
{
	struct engine *eng = j->eng;
	const struct cfg_action *a = job_action(j);
	char err[160], h_idem[128], h_obo[1200], h_basis[1200], h_auth[4200];
	const char *headers[8];
	int nh = 0;
	struct urltpl_vars vars = {j->rec->resource, j->rec->action, j->rec->id,
	    j->rec->on_behalf_of};
	char *url = a ? urltpl_expand(a->url, &vars, err, sizeof err) : NULL;
	char *body = call_body(j);
	struct job_event ev = {.kind = JOB_EV_HTTP, .http_status = 0, .retry_after_ms = -1};

	if (url == NULL || body == NULL) {
		log_error("job.call", "id=%s error=\"%s\"", j->id, url ? "out of memory" : err);
		free(url);
		free(body);
		feed(j, &ev);	/* counts as a failed call: retried within limits */
		return;
	}
	snprintf(h_idem, sizeof h_idem, "Idempotency-Key: %s", j->rec->id);
	snprintf(h_obo, sizeof h_obo, "Warrant-On-Behalf-Of: %s", j->rec->on_behalf_of);
	snprintf(h_basis, sizeof h_basis, "Warrant-Basis: %s", j->rec->basis);
	headers[nh++] = "Content-Type: application/json";
	headers[nh++] = h_idem;
	headers[nh++] = h_obo;
	headers[nh++] = h_basis;
	const char *bearer = NULL;
	if (a->auth == CFG_AUTH_STATIC)
		bearer = eng->bearers[action_index(eng->cfg, a)];
	else if (a->auth == CFG_AUTH_OAUTH)
		bearer = worker_token(eng, a->timeout_ms);
	j->token_gen = eng->oauth ? oauth_generation(eng->oauth) : 0;
	if (a->auth == CFG_AUTH_OAUTH && bearer == NULL) {
		/* The token died between the decision and now: R6 says wait,
		 * and the core treats it as an auth failure. */
		free(url);
		free(body);
		struct job_event tev = {.kind = JOB_EV_HTTP, .http_status = 401, .retry_after_ms = -1};
		feed(j, &tev);
		return;
	}
	if (bearer) {
		snprintf(h_auth, sizeof h_auth, "Authorization: Bearer %s", bearer);
		headers[nh++] = h_auth;
	}
	headers[nh] = NULL;
	struct http_request req = {
		.method = a->method, .url = url, .headers = headers,
		.body = body, .body_len = strlen(body), .timeout_ms = a->timeout_ms,
	};
	int rc = http_start(eng->http, &req, on_call_done, j, &j->call);
	explicit_bzero(h_auth, sizeof h_auth);
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
	if (resp->status < 200 || resp->status > 299)
		return JOB_AUTHZ_UNAVAILABLE;
	json_t *doc = json_loadb(resp->body, resp->body_len, 0, NULL);
	json_t *res = doc ? json_object_get(doc, "result") : NULL;
	int allow = json_is_true(res) ||
	    (json_is_object(res) && json_is_true(json_object_get(res, "allow")));
	json_decref(doc);
	return allow ? JOB_AUTHZ_ALLOW : JOB_AUTHZ_DENY;
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

static void
start_authz(struct ejob *j)
{
	struct engine *eng = j->eng;
	const struct record *r = j->rec;
	/* decidedAt goes as the record wrote it, not re-formatted. */
	json_t *input = json_pack("{s:{s:s,s:s,s:s,s:O,s:s,s:s,s:O}}", "input",
	    "subject", r->on_behalf_of, "action", r->action, "resource", r->resource,
	    "parameters", r->parameters, "basis", r->basis, "recordId", r->id,
	    "decidedAt", json_object_get(r->content, "decidedAt"));
	struct job_event ev = {.kind = JOB_EV_AUTHZ, .authz = JOB_AUTHZ_UNAVAILABLE};

	if (input == NULL) {
		feed(j, &ev);
		return;
	}
	char *body = json_dumps(input, JSON_COMPACT);
	json_decref(input);
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

static void
after_load(struct rconn *rc, redisReply *r, void *arg)
{
	struct ejob *j = arg;
	struct engine *eng = j->eng;
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
		struct record_policy pol = {
			.signature_required = eng->cfg->records.signature_required,
			.algorithm = eng->cfg->records.algorithm,
			.parsed_key = eng->parsed_key,
			.key = eng->verify_key, .key_len = eng->verify_key_len,
			.issuer = eng->cfg->records.issuer,
			.max_window_ms = eng->cfg->records.max_window_s * 1000LL,
			.clock_skew_ms = eng->cfg->records.clock_skew_s * 1000LL,
			.action_known = action_known, .action_ctx = eng->cfg,
		};
		ev.record_status = record_load(&pol, j->id, raw, wtime_now_ms(), &j->rec,
		    &j->bad_owner, detail, sizeof detail);
	}
	ev.record = j->rec;
	feed(j, &ev);
	if (ev.record_status != RECORD_OK && detail[0]) {
		char d[256];
		log_warn("record.rejected", "id=%s reason=%s detail=%s", j->id,
		    record_status_code(ev.record_status), log_quote(d, sizeof d, detail));
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

/* An entry delivered to us: from XREADGROUP, our PEL, or XAUTOCLAIM. */
static void
admit(struct engine *eng, const char *stream_id, const redisReply *fields, int deliveries)
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
/* reading: XREADGROUP, own PEL, XAUTOCLAIM, promotion                  */

static long
capacity(const struct engine *eng)
{
	long room = eng->cfg->daemon.max_in_flight - (long)eng->in_hand;
	return room < eng->cfg->redis.batch ? room : eng->cfg->redis.batch;
}

static void
admit_entries(struct engine *eng, const redisReply *entries, int deliveries)
{
	for (size_t i = 0; entries && i < entries->elements; i++) {
		const redisReply *e = entries->element[i];
		if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 ||
		    e->element[0]->type != REDIS_REPLY_STRING)
			continue;
		int d = deliveries;
		if (e->elements >= 3 && e->element[2]->type == REDIS_REPLY_INTEGER)
			d = (int)e->element[2]->integer;
		admit(eng, e->element[0]->str, e->element[1], d);
	}
}

static void ensure_group(struct engine *eng);

static int
is_nogroup(const redisReply *r)
{
	return r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOGROUP", 7) == 0;
}

static void
after_read(struct rconn *rc, redisReply *r, void *arg)
{
	struct engine *eng = arg;
	(void)rc;

	eng->reading = 0;
	if (is_nogroup(r)) {
		eng->group_ready = 0;
		ensure_group(eng);
		return;
	}
	if (r && r->type == REDIS_REPLY_ERROR)
		log_warn("redis.error", "op=xreadgroup error=%.120s", r->str);
	if (r && r->type == REDIS_REPLY_ARRAY) {
		eng->last_read_at = wtime_now_ms();
		for (size_t i = 0; i < r->elements; i++) {
			const redisReply *s = r->element[i];
			if (s->type == REDIS_REPLY_ARRAY && s->elements == 2)
				admit_entries(eng, s->element[1], 1);
		}
	} else if (r && r->type == REDIS_REPLY_NIL) {
		eng->last_read_at = wtime_now_ms();
	}
	if (r != NULL)
		read_more(eng);
}

/* R6: with an action that needs an OAuth token and none held, read nothing. */
static int
may_read(const struct engine *eng)
{
	return eng->group_ready && eng->own_done && !eng->draining && !eng->reading &&
	    eng->blk && rconn_is_up(eng->blk) && capacity(eng) > 0;
}

/* R6: with no usable token, read nothing new: entries stay undelivered for
 * healthy consumers. Logged once per pause. */
static int
token_blocks_reading(struct engine *eng)
{
	int blocked = eng->needs_token && !worker_token(eng, eng->token_timeout_ms);

	if (blocked != eng->paused_for_token) {
		eng->paused_for_token = blocked;
		if (blocked)
			log_warn("consumer.paused", "reason=no-token token_state=%s", token_state(eng));
		else
			log_info("consumer.resumed", "token_state=%s", token_state(eng));
	}
	return blocked;
}

static void
read_more(struct engine *eng)
{
	if (token_blocks_reading(eng))
		return;
	if (!eng->own_done) {
		own_pending_more(eng);
		return;
	}
	if (!may_read(eng))
		return;
	char count[24], block[24];
	snprintf(count, sizeof count, "%ld", capacity(eng));
	snprintf(block, sizeof block, "%ld", eng->cfg->redis.block_ms);
	const char *argv[] = {"XREADGROUP", "GROUP", eng->cfg->redis.group,
	    eng->cfg->daemon.consumer, "COUNT", count, "BLOCK", block, "STREAMS",
	    eng->keys.jobs, ">"};
	size_t len[11];
	for (int i = 0; i < 11; i++)
		len[i] = strlen(argv[i]);
	if (rconn_commandv(eng->blk, after_read, eng, 11, argv, len) == 0)
		eng->reading = 1;
}

static void
dead_deleted(struct engine *eng, const redisReply *ids)
{
	for (size_t i = 0; ids && ids->type == REDIS_REPLY_ARRAY && i < ids->elements; i++) {
		if (ids->element[i]->type != REDIS_REPLY_STRING || ejob_find(eng, ids->element[i]->str))
			continue;
		struct ejob *j = ejob_new(eng, ids->element[i]->str, 0);
		if (j == NULL)
			return;
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
	}
}

static void
after_own(struct rconn *rc, redisReply *r, void *arg)
{
	struct engine *eng = arg;
	(void)rc;

	eng->claiming = 0;
	if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 3) {
		if (is_nogroup(r)) {
			eng->group_ready = 0;
			ensure_group(eng);
		}
		return;	/* retried when the connection is back */
	}
	const redisReply *next = r->element[0];
	admit_entries(eng, r->element[1], 1);
	dead_deleted(eng, r->element[2]);
	if (next->type == REDIS_REPLY_STRING && strcmp(next->str, "0-0") != 0) {
		snprintf(eng->own_cursor, sizeof eng->own_cursor, "%s", next->str);
	} else {
		eng->own_done = 1;
		log_info("consumer.ready", "consumer=%s group=%s stream=%s in_hand=%zu",
		    eng->cfg->daemon.consumer, eng->cfg->redis.group, eng->keys.jobs, eng->in_hand);
		sdnotify_send("READY=1\nSTATUS=consuming");
	}
	read_more(eng);
}

/* R14: our own pending entries first, as far as there is room. */
static void
own_pending_more(struct engine *eng)
{
	if (!eng->group_ready || eng->claiming || eng->draining || capacity(eng) <= 0 ||
	    !rconn_is_up(eng->cmd))
		return;
	char count[24];
	snprintf(count, sizeof count, "%ld", capacity(eng));
	const char *argv[] = {eng->keys.jobs, eng->cfg->redis.group, eng->cfg->daemon.consumer,
	    "own", "0", eng->own_cursor, count};
	size_t len[7];
	for (int i = 0; i < 7; i++)
		len[i] = strlen(argv[i]);
	if (rconn_eval(eng->cmd, &eng->s_claim, after_own, eng, 1, 7, argv, len) == 0)
		eng->claiming = 1;
}

static void
after_autoclaim(struct rconn *rc, redisReply *r, void *arg)
{
	struct engine *eng = arg;
	(void)rc;

	eng->claiming = 0;
	if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 3) {
		if (is_nogroup(r)) {
			eng->group_ready = 0;
			ensure_group(eng);
		}
		return;
	}
	const redisReply *entries = r->element[1];
	size_t before = eng->in_hand;
	admit_entries(eng, entries, 1);
	if (eng->in_hand > before) {
		eng->n.claimed += (long long)(eng->in_hand - before);
		log_info("consumer.claimed", "count=%zu", eng->in_hand - before);
	}
	dead_deleted(eng, r->element[2]);
}

static void
claim_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct engine *eng = w->data;
	(void)loop, (void)revents;

	if (!eng->group_ready || !rconn_is_up(eng->cmd) || eng->draining)
		return;
	/* §5: promote due scheduled ids; every worker may, the script makes
	 * each promotion happen once. */
	char now[24], limit[24];
	snprintf(now, sizeof now, "%" PRId64, wtime_now_ms());
	snprintf(limit, sizeof limit, "%ld", eng->cfg->redis.batch);
	const char *pargv[] = {eng->keys.scheduled, eng->keys.jobs, now, limit};
	size_t plen[4];
	for (int i = 0; i < 4; i++)
		plen[i] = strlen(pargv[i]);
	best_effort(rconn_eval(eng->cmd, &eng->s_promote, ignore_reply, NULL, 2, 4, pargv, plen));

	/* R6: never claim what cannot be completed for want of a token. */
	if (!eng->own_done || eng->claiming || capacity(eng) <= 0 ||
	    (eng->needs_token && !worker_token(eng, eng->token_timeout_ms)))
		return;
	char idle[24], count[24];
	snprintf(idle, sizeof idle, "%ld", eng->cfg->redis.claim_idle_ms);
	snprintf(count, sizeof count, "%ld", capacity(eng));
	const char *argv[] = {eng->keys.jobs, eng->cfg->redis.group, eng->cfg->daemon.consumer,
	    "auto", idle, "0-0", count};
	size_t len[7];
	for (int i = 0; i < 7; i++)
		len[i] = strlen(argv[i]);
	if (rconn_eval(eng->cmd, &eng->s_claim, after_autoclaim, eng, 1, 7, argv, len) == 0)
		eng->claiming = 1;
}

/* ------------------------------------------------------------------ */
/* R10 leases                                                           */

static void
after_renew(struct rconn *rc, redisReply *r, void *arg)
{
	struct engine *eng = arg;
	(void)rc;

	if (r == NULL || r->type != REDIS_REPLY_ARRAY)
		return;
	for (size_t i = 0; i < r->elements; i++) {
		if (r->element[i]->type != REDIS_REPLY_STRING)
			continue;
		struct ejob *j = ejob_find(eng, r->element[i]->str);
		if (j == NULL || j->finished)
			continue;
		log_warn("job.lease_lost", "id=%s stream_id=%s", j->id, j->stream_id);
		j->lost = 1;
		struct job_event ev = {.kind = JOB_EV_LEASE_LOST};
		feed(j, &ev);
	}
}

static void
lease_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct engine *eng = w->data;
	(void)loop, (void)revents;

	if (!rconn_is_up(eng->cmd) || eng->in_hand == 0)
		return;
	size_t n = 3, cap = eng->in_hand + 3;
	const char **argv = calloc(cap, sizeof *argv);
	size_t *len = calloc(cap, sizeof *len);
	if (argv == NULL || len == NULL)
		goto out;
	argv[0] = eng->keys.jobs;
	argv[1] = eng->cfg->redis.group;
	argv[2] = eng->cfg->daemon.consumer;
	for (struct ejob *j = eng->jobs; j && n < cap; j = j->next)
		if (!j->finished && !j->lost)
			argv[n++] = j->stream_id;
	for (size_t i = 0; i < n; i++)
		len[i] = strlen(argv[i]);
	if (n > 3)
		best_effort(rconn_eval(eng->cmd, &eng->s_renew, after_renew, eng, 1, (int)n, argv, len));
out:
	free(argv);
	free(len);
}

/* ------------------------------------------------------------------ */
/* the group, the connections, the heartbeat                            */

static void
after_group(struct rconn *rc, redisReply *r, void *arg)
{
	struct engine *eng = arg;
	(void)rc;

	if (r == NULL)
		return;	/* retried on reconnect */
	if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "BUSYGROUP", 9) != 0) {
		log_error("redis.error", "op=xgroup_create error=%.120s", r->str);
		return;
	}
	if (!eng->group_ready)
		log_info("consumer.group", "stream=%s group=%s", eng->keys.jobs, eng->cfg->redis.group);
	eng->group_ready = 1;
	read_more(eng);
}

/* R14: created at id 0 with MKSTREAM, so entries written before the first
 * worker started are processed. */
static void
ensure_group(struct engine *eng)
{
	if (rconn_is_up(eng->cmd))
		best_effort(rconn_command(eng->cmd, after_group, eng, "XGROUP CREATE %s %s 0 MKSTREAM",
		    eng->keys.jobs, eng->cfg->redis.group));
}


/* §8: a worker with a token and room that has read nothing for a long time
 * while the group has undelivered entries is stuck, and says so. */
static void
after_lag(struct rconn *rc, redisReply *r, void *arg)
{
	struct engine *eng = arg;
	(void)rc;

	if (r == NULL || r->type != REDIS_REPLY_ARRAY)
		return;
	for (size_t i = 0; i < r->elements; i++) {
		const redisReply *g = r->element[i];
		const char *name = field(g, "name");
		if (name == NULL || strcmp(name, eng->cfg->redis.group) != 0)
			continue;
		for (size_t k = 0; g->type == REDIS_REPLY_ARRAY && k + 1 < g->elements; k += 2)
			if (g->element[k]->type == REDIS_REPLY_STRING &&
			    strcmp(g->element[k]->str, "lag") == 0 &&
			    g->element[k + 1]->type == REDIS_REPLY_INTEGER &&
			    g->element[k + 1]->integer > 0)
				log_warn("consumer.stalled", "lag=%lld last_read_ms_ago=%" PRId64
				    " token_state=%s in_hand=%zu", g->element[k + 1]->integer,
				    wtime_now_ms() - eng->last_read_at, token_state(eng), eng->in_hand);
	}
}

static void
check_stalled(struct engine *eng)
{
	int64_t quiet = wtime_now_ms() - (eng->last_read_at ? eng->last_read_at : eng->started_at);

	if (eng->draining || !eng->own_done || capacity(eng) <= 0 ||
	    quiet < 3 * eng->cfg->redis.block_ms + eng->cfg->daemon.heartbeat_ms ||
	    (eng->needs_token && !worker_token(eng, eng->token_timeout_ms)))
		return;
	best_effort(rconn_command(eng->cmd, after_lag, eng, "XINFO GROUPS %s", eng->keys.jobs));
}

static void
heartbeat_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct engine *eng = w->data;
	const struct engine_counters *n = &eng->n;
	char host[256] = "", started[WTIME_RFC3339_LEN], now[WTIME_RFC3339_LEN];
	char last_read[WTIME_RFC3339_LEN] = "";
	(void)loop, (void)revents;

	if (!rconn_is_up(eng->cmd))
		return;
	gethostname(host, sizeof host - 1);
	if (eng->last_read_at)
		wtime_format_rfc3339(eng->last_read_at, last_read, sizeof last_read);
	best_effort(rconn_command(eng->cmd, ignore_reply, NULL,
	    "HSET %s host %s pid %d version %s startedAt %s heartbeatAt %s lastReadAt %s "
	    "inFlight %lld tokenState %s tokenExpiresIn %lld received %lld done %lld expired %lld "
	    "denied %lld failed %lld dead %lld retried %lld redispatched %lld authFailures %lld "
	    "tokenRefreshes %lld claimed %lld redisOutages %lld",
	    eng->keys.consumer, host, (int)getpid(), WARRANTD_VERSION,
	    wtime_format_rfc3339(eng->started_at, started, sizeof started),
	    now_rfc3339(now, sizeof now), last_read, (long long)eng->in_hand, token_state(eng), token_expires_in_s(eng),
	    n->received, n->done, n->expired, n->denied, n->failed, n->dead, n->retried,
	    n->redispatched, n->auth_failures,
	    eng->oauth ? oauth_refreshes(eng->oauth) : 0LL, n->claimed, eng->outages));
	best_effort(rconn_command(eng->cmd, ignore_reply, NULL, "PEXPIRE %s %ld", eng->keys.consumer,
	    3 * eng->cfg->daemon.heartbeat_ms));
	check_stalled(eng);
}

/* §12: systemd's WatchdogSec sets the pace, not heartbeat_ms, and the
 * pings go on while Redis is down (R17: the worker rides it out). */
static void
watchdog_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop, (void)w, (void)revents;
	sdnotify_send("WATCHDOG=1");
}

static void
on_cmd_state(struct rconn *rc, int up, void *arg)
{
	struct engine *eng = arg;
	(void)rc;

	if (!up) {
		if (!eng->redis_down_since) {
			eng->redis_down_since = wtime_now_ms();
			eng->outages++;
			sdnotify_send("STATUS=redis unreachable, reconnecting");
		}
		eng->claiming = 0;
		return;
	}
	if (eng->redis_down_since) {
		log_info("redis.recovered", "down_ms=%" PRId64,
		    wtime_now_ms() - eng->redis_down_since);
		eng->redis_down_since = 0;
		sdnotify_send("STATUS=consuming");
	}
	/* Entries whose XREADGROUP reply was lost with the connection are in
	 * our PEL but not in hand: scan it again (admit skips known ones). */
	eng->own_done = 0;
	snprintf(eng->own_cursor, sizeof eng->own_cursor, "0");
	/* Writes that failed while down are retried by their own timers. */
	ensure_group(eng);
	heartbeat_cb(eng->loop, &eng->heartbeat, 0);
}

static void
on_blk_state(struct rconn *rc, int up, void *arg)
{
	struct engine *eng = arg;
	(void)rc;

	if (!up) {
		eng->reading = 0;
		return;
	}
	/* A read whose reply died with the connection left entries in our
	 * PEL that we never saw: read the PEL again before new entries. */
	eng->own_done = 0;
	snprintf(eng->own_cursor, sizeof eng->own_cursor, "0");
	read_more(eng);
}

/* ------------------------------------------------------------------ */
/* the worker's token                                                   */

/* A token arrived: every job waiting on one goes on (R6, R9), and reading
 * resumes if it had stopped for want of one. */
static void
on_token(void *arg, int have_token)
{
	struct engine *eng = arg;

	log_info("token.state", "state=%s have_token=%d", token_state(eng), have_token);
	if (!have_token)
		return;
	int64_t life = oauth_expires_at_ms(eng->oauth) - wtime_now_ms();
	if (eng->needs_token && life <= eng->token_timeout_ms + 1000)
		log_warn("token.too_short", "expires_in_ms=%" PRId64 " action_timeout_ms=%ld "
		    "detail=\"R6 needs more than the action timeout plus 1 s: no call can start\"",
		    life, eng->token_timeout_ms);
	for (struct ejob *j = eng->jobs, *next; j; j = next) {
		next = j->next;
		if (j->finished || j->timer_kind != T_TOKEN_WAIT || !token_ok(j))
			continue;
		ejob_timer_stop(j);
		struct job_event ev = {.kind = JOB_EV_TOKEN_READY};
		feed(j, &ev);
	}
	read_more(eng);
}

static const char *
webhook_token(void *arg)
{
	struct engine *eng = arg;
	return worker_token(eng, eng->cfg->notify.timeout_ms);
}

static void
scan_token_needs(struct engine *eng)
{
	eng->needs_token = 0;
	eng->token_timeout_ms = 0;
	for (size_t i = 0; i < eng->cfg->nactions; i++) {
		const struct cfg_action *a = &eng->cfg->actions[i];
		if (a->auth != CFG_AUTH_OAUTH)
			continue;
		eng->needs_token = 1;
		if (a->timeout_ms > eng->token_timeout_ms)
			eng->token_timeout_ms = a->timeout_ms;
	}
}

/* ------------------------------------------------------------------ */
/* keys and secrets                                                     */

static void
free_bearers(char **bearers, size_t n)
{
	for (size_t i = 0; bearers && i < n; i++)
		if (bearers[i])
			cfg_secret_free(bearers[i], strlen(bearers[i]));
	free(bearers);
}

struct secrets {
	unsigned char *key;
	size_t key_len;
	struct record_key *parsed;	/* key, parsed */
	char **bearers;
};

static void
free_secrets(const struct cfg *cfg, struct secrets *s)
{
	if (s->key)
		cfg_secret_free((char *)s->key, s->key_len);
	record_key_free(s->parsed);
	free_bearers(s->bearers, cfg->nactions);
	memset(s, 0, sizeof *s);
}

static int
load_secrets(const struct cfg *cfg, struct secrets *s, char *err, size_t errlen)
{
	char why[160];
	size_t len;

	memset(s, 0, sizeof *s);
	if (cfg->records.signature_required &&
	    /* a PEM keeps its layout; an HMAC secret is trimmed like any secret */
	    cfg_read_file(cfg, cfg->records.verify_key_file,
	    cfg->records.algorithm != JWT_ALG_HS256, (char **)&s->key, &s->key_len,
	    err, errlen) < 0)
		return -1;
	/* Parsed here, not per record: a bad key fails the start or the reload. */
	if (cfg->records.signature_required &&
	    (s->parsed = record_key_new(cfg->records.algorithm, s->key, s->key_len, why,
	    sizeof why)) == NULL) {
		snprintf(err, errlen, "[records] verify_key_file %s: %s",
		    cfg->records.verify_key_file, why);
		goto fail;
	}
	s->bearers = calloc(cfg->nactions + 1, sizeof *s->bearers);
	if (s->bearers == NULL)
		goto fail;
	for (size_t i = 0; i < cfg->nactions; i++) {
		const struct cfg_action *a = &cfg->actions[i];
		if (a->auth == CFG_AUTH_STATIC &&
		    cfg_read_file(cfg, a->bearer_file, 0, &s->bearers[i], &len, err, errlen) < 0)
			goto fail;
	}
	return 0;
fail:
	free_secrets(cfg, s);
	return -1;
}

static void
install_secrets(struct engine *eng, const struct cfg *old, struct secrets *s)
{
	if (eng->verify_key)
		cfg_secret_free((char *)eng->verify_key, eng->verify_key_len);
	free_bearers(eng->bearers, old ? old->nactions : 0);
	record_key_free(eng->parsed_key);
	eng->verify_key = s->key;
	eng->verify_key_len = s->key_len;
	eng->parsed_key = s->parsed;
	eng->bearers = s->bearers;
}

/* ------------------------------------------------------------------ */
/* life cycle                                                           */

static struct rconn_opts
redis_opts(const struct cfg *cfg, const char *password, long timeout_ms)
{
	struct rconn_opts o = {
		.host = cfg->redis.host, .port = cfg->redis.port, .socket = cfg->redis.socket,
		.username = cfg->redis.username, .password = password, .db = cfg->redis.db,
		.connect_timeout_ms = 5000, .command_timeout_ms = timeout_ms,
		.backoff_min_ms = 100, .backoff_max_ms = 5000,
	};
	return o;
}

static int
connect_redis(struct engine *eng, char *err, size_t errlen)
{
	char *password = NULL;
	size_t plen = 0;
	const struct cfg *cfg = eng->cfg;

	if (cfg->redis.password_file &&
	    cfg_read_file(cfg, cfg->redis.password_file, 0, &password, &plen, err, errlen) < 0)
		return -1;
	struct rconn_opts o = redis_opts(cfg, password, 10000);
	eng->cmd = rconn_new(eng->loop, &o, "cmd", on_cmd_state, eng);
	o = redis_opts(cfg, password, cfg->redis.block_ms + 5000);
	eng->blk = rconn_new(eng->loop, &o, "read", on_blk_state, eng);
	if (password)
		cfg_secret_free(password, plen);
	if (eng->cmd == NULL || eng->blk == NULL) {
		snprintf(err, errlen, "cannot create the Redis connections");
		return -1;
	}
	return 0;
}

static void
init_timer(struct engine *eng, ev_timer *t, void (*cb)(struct ev_loop *, ev_timer *, int),
	   long every_ms)
{
	ev_timer_init(t, cb, (double)every_ms / 1000.0, (double)every_ms / 1000.0);
	t->data = eng;
}

struct engine *
engine_new(struct ev_loop *loop, struct cfg *cfg, char *err, size_t errlen)
{
	struct engine *eng = calloc(1, sizeof *eng);
	struct secrets s;

	if (eng == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	eng->loop = loop;
	eng->cfg = cfg;
	eng->rng = (uint64_t)wtime_now_ms() ^ ((uint64_t)getpid() << 32) ^ 0x9E3779B97F4A7C15ULL;
	snprintf(eng->own_cursor, sizeof eng->own_cursor, "0");
	if (store_keys_init(&eng->keys, cfg->redis.prefix, cfg->daemon.consumer) < 0) {
		snprintf(err, errlen, "redis prefix or consumer name too long");
		goto fail;
	}
	if (load_secrets(cfg, &s, err, errlen) < 0)
		goto fail;
	install_secrets(eng, NULL, &s);
	rconn_script_init(&eng->s_transition, store_script_transition);
	rconn_script_init(&eng->s_claim, store_script_claim);
	rconn_script_init(&eng->s_renew, store_script_renew);
	rconn_script_init(&eng->s_redispatch, store_script_redispatch);
	rconn_script_init(&eng->s_promote, store_script_promote);
	eng->http = http_client_new(loop);
	if (eng->http == NULL) {
		snprintf(err, errlen, "cannot create the HTTP client");
		goto fail;
	}
	scan_token_needs(eng);
	if (cfg->oauth.present) {
		eng->oauth = oauth_new(loop, eng->http, cfg, err, errlen);
		if (eng->oauth == NULL)
			goto fail;
		oauth_set_listener(eng->oauth, on_token, eng);
	}
	if (cfg->notify.webhook_url &&
	    (eng->webhook = webhook_new(loop, eng->http, cfg->notify.webhook_url,
	    cfg->notify.timeout_ms, webhook_token, eng)) == NULL) {
		snprintf(err, errlen, "cannot create the webhook client");
		goto fail;
	}
	init_timer(eng, &eng->heartbeat, heartbeat_cb, cfg->daemon.heartbeat_ms);
	init_timer(eng, &eng->claim, claim_cb, cfg->redis.claim_interval_ms);
	init_timer(eng, &eng->lease, lease_cb, cfg->redis.lease_renew_ms);
	long wd_ms = sdnotify_watchdog_ms();
	init_timer(eng, &eng->watchdog, watchdog_cb,
	    wd_ms > 1 ? wd_ms / 2 : cfg->daemon.heartbeat_ms);
	return eng;
fail:
	eng->cfg = NULL;	/* still the caller's */
	engine_free(eng);
	return NULL;
}

void
engine_start(struct engine *eng)
{
	char err[256];

	eng->started_at = wtime_now_ms();
	if (connect_redis(eng, err, sizeof err) < 0) {
		log_error("engine.start", "error=\"%s\"", err);
		ev_break(eng->loop, EVBREAK_ALL);
		return;
	}
	if (eng->oauth)
		oauth_start(eng->oauth);
	ev_timer_start(eng->loop, &eng->heartbeat);
	ev_timer_start(eng->loop, &eng->claim);
	ev_timer_start(eng->loop, &eng->lease);
	ev_timer_start(eng->loop, &eng->watchdog);
	log_info("engine.start", "consumer=%s group=%s stream=%s max_in_flight=%ld",
	    eng->cfg->daemon.consumer, eng->cfg->redis.group, eng->keys.jobs,
	    eng->cfg->daemon.max_in_flight);
}

static int
job_is_calling(const struct ejob *j)
{
	return j->wait == W_CALL || j->wait == W_AUTHZ || j->wait == W_WRITE;
}

static void
maybe_finish_stop(struct engine *eng)
{
	for (struct ejob *j = eng->jobs; j; j = j->next)
		if (!j->finished)
			return;
	if (eng->jobs != NULL)
		return;	/* a last callback is on its way */
	ev_timer_stop(eng->loop, &eng->grace);
	log_info("engine.stopped", "consumer=%s", eng->cfg->daemon.consumer);
	ev_break(eng->loop, EVBREAK_ALL);
}

static void
grace_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct engine *eng = w->data;
	(void)revents;

	log_warn("engine.grace_expired", "in_hand=%zu", eng->in_hand);
	ev_break(loop, EVBREAK_ALL);
}

void
engine_stop(struct engine *eng)
{
	if (eng->draining)
		return;
	eng->draining = 1;
	sdnotify_send("STOPPING=1");
	log_info("engine.stopping", "in_hand=%zu grace_ms=%ld", eng->in_hand,
	    eng->cfg->daemon.shutdown_grace_ms);
	ev_timer_stop(eng->loop, &eng->claim);
	/* Entries read but not started, and those waiting on a timer, stay
	 * pending for R11/R14; only calls in flight may finish. */
	for (struct ejob *j = eng->jobs, *next; j; j = next) {
		next = j->next;
		if (!job_is_calling(j))
			ejob_finish(j);
	}
	ev_timer_init(&eng->grace, grace_cb, (double)eng->cfg->daemon.shutdown_grace_ms / 1000.0, 0);
	eng->grace.data = eng;
	ev_timer_start(eng->loop, &eng->grace);
	/* The blocking read holds its connection until block_ms: drop it. */
	rconn_free(eng->blk);
	eng->blk = NULL;
	maybe_finish_stop(eng);
}

int
engine_reload(struct engine *eng, struct cfg *cfg, char *err, size_t errlen)
{
	struct secrets s;
	struct cfg *old = eng->cfg;

	if (strcmp(cfg->redis.prefix, old->redis.prefix) != 0 ||
	    strcmp(cfg->redis.group, old->redis.group) != 0 ||
	    strcmp(cfg->daemon.consumer, old->daemon.consumer) != 0) {
		snprintf(err, errlen, "prefix, group and consumer change only with a restart");
		return -1;
	}
	if (cfg->oauth.present != old->oauth.present) {
		snprintf(err, errlen, "adding or removing [oauth] takes a restart");
		return -1;
	}
	if (load_secrets(cfg, &s, err, errlen) < 0)
		return -1;
	if (eng->oauth && oauth_reload(eng->oauth, cfg, err, errlen) < 0) {
		free_secrets(cfg, &s);
		return -1;
	}
	install_secrets(eng, old, &s);
	eng->cfg = cfg;
	scan_token_needs(eng);
	log_set_level(cfg->daemon.log_level);
	ev_timer_set(&eng->heartbeat, (double)cfg->daemon.heartbeat_ms / 1000.0,
	    (double)cfg->daemon.heartbeat_ms / 1000.0);
	ev_timer_again(eng->loop, &eng->heartbeat);
	cfg_free(old);
	return 0;
}

const struct engine_counters *
engine_counters(const struct engine *eng)
{
	return &eng->n;
}

void
engine_free(struct engine *eng)
{
	if (eng == NULL)
		return;
	ev_timer_stop(eng->loop, &eng->heartbeat);
	ev_timer_stop(eng->loop, &eng->claim);
	ev_timer_stop(eng->loop, &eng->lease);
	ev_timer_stop(eng->loop, &eng->grace);
	ev_timer_stop(eng->loop, &eng->watchdog);
	eng->draining = 1;
	/* Outstanding callbacks fire with NULL while the connections close;
	 * every job is marked finished first so none of them acts. */
	for (struct ejob *j = eng->jobs; j; j = j->next) {
		j->finished = 1;
		ejob_timer_stop(j);
		if (j->call) {
			http_cancel(j->call);
			j->call = NULL;
			j->refs--;
		}
	}
	rconn_free(eng->blk);
	rconn_free(eng->cmd);
	webhook_free(eng->webhook);
	oauth_free(eng->oauth);
	http_client_free(eng->http);
	while (eng->jobs)
		ejob_release(eng->jobs);
	if (eng->verify_key)
		cfg_secret_free((char *)eng->verify_key, eng->verify_key_len);
	record_key_free(eng->parsed_key);
	free_bearers(eng->bearers, eng->cfg ? eng->cfg->nactions : 0);
	cfg_free(eng->cfg);
	free(eng);
}
