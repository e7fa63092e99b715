/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * engine: the consumer, the imperative shell around the entries in hand.
 *
 * Two Redis connections: `blk` carries only the blocking XREADGROUP, `cmd`
 * everything else, pipelined. With shards each shard has its own `cmd`; on
 * a single Redis one `blk` reads every shard's stream at once, on a cluster
 * each shard has its own (CROSSSLOT refuses one read over several slots).
 * Each entry in hand is a struct ejob, carried from admission to release
 * by ejob.c.
 *
 * The module's files (engine_int.h is their one private header):
 *   engine.c        life cycle: new, start, stop, reload, free; the keys
 *                   and secrets, the gate's limits, the gauges
 *   engine_read.c   reading: XREADGROUP, the own PEL, claims, promotion,
 *                   the group (and the server's version)
 *   engine_lease.c  R10 lease renewals, the heartbeat, the stall check,
 *                   the pauses read beside it
 *   engine_auth.c   the connections and their states, Redis' own
 *                   credential, the worker's token, discovery
 *   engine_name.c   the consumer name's claim: one name, one live process
 *   engine_park.c   R6: parked entries queued again (lua/unpark.lua)
 */
#define _DEFAULT_SOURCE
#include "worker/engine.h"
#include "worker/engine_ops.h"
#include "worker/wstats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "redis/cluster.h"
#include "auth/cred.h"
#include "redis/disc.h"
#include "worker/ejob.h"
#include "worker/eops.h"
#include "core/gate.h"
#include "http/http.h"
#include "base/log.h"
#include "base/rnd.h"
#include "auth/oauth.h"
#include "redis/rconn.h"
#include "core/record.h"
#include "auth/rtoken.h"
#include "redis/rtls.h"
#include "redis/script.h"
#include "worker/sdnotify.h"
#include "conf/secrets.h"
#include "redis/sentinel.h"
#include "core/store.h"
#include "worker/webhook.h"
#include "base/wtime.h"
#include "worker/vpool.h"
#include "engine_int.h"

static void maybe_finish_stop(struct engine *eng);

/* ------------------------------------------------------------------ */
/* small helpers                                                        */

/* warrantd(7) §8: with no [oauth] at all, static or no credentials are "valid". */
const char *
engine_token_state(const struct engine *eng)
{
	if (eng->oauth)
		return oauth_state_name(eng->oauth);
	for (size_t i = 0; i < eng->cfg->nactions; i++)
		if (eng->cfg->actions[i].auth != CFG_AUTH_NONE)
			return "valid";
	return "none";
}

/* Whole seconds from now to `at` (monotonic ms; 0: none), 0 when past. */
long long
engine_seconds_until(int64_t at)
{
	int64_t left = at ? at - wtime_mono_ms() : 0;
	return left > 0 ? left / 1000 : 0;
}

long long
engine_redis_token_expires_in_s(const struct engine *eng)
{
	return engine_seconds_until(eng->rt ? rtoken_expires_at_ms(eng->rt) : 0);
}

const char *
engine_redis_token_state(const struct engine *eng)
{
	return eng->rt ? rtoken_state_name(eng->rt) : "none";
}

long long
engine_token_expires_in_s(const struct engine *eng)
{
	return engine_seconds_until(eng->oauth ? oauth_expires_at_ms(eng->oauth) : 0);
}

void
engine_ignore_reply(struct rconn *rc, const struct sreply *r, void *arg)
{
	(void)rc, (void)r, (void)arg;	/* rconn logs error replies */
}

/* For writes whose loss costs nothing: the next tick sends them again. */
void
engine_best_effort(int rc)
{
	if (rc < 0)
		log_debug("redis.skipped", "detail=\"not connected\"");
}

/* Entries in hand over every shard: max_in_flight bounds them all. */
size_t
engine_in_hand(const struct engine *eng)
{
	size_t n = 0;

	for (size_t i = 0; i < eng->nshards; i++)
		n += eng->shards[i].jobs ? ejobs_count(eng->shards[i].jobs) : 0;
	return n;
}

/* §13, R6: entries held at the gate over every shard. */
size_t
engine_held(const struct engine *eng)
{
	size_t n = 0;

	for (size_t i = 0; i < eng->nshards; i++)
		n += eng->shards[i].jobs ? ejobs_held(eng->shards[i].jobs) : 0;
	return n;
}

/* An entry left the hand (eops.released). */
static void
job_released(void *arg)
{
	struct shard *sh = arg;

	if (sh->eng->draining)
		maybe_finish_stop(sh->eng);
	else
		engine_read_all(sh);
}

/* The actions' limits (§13) into the gate: at the start and each reload. */
static int
configure_gate(struct engine *eng, const struct cfg *cfg)
{
	size_t n = cfg->nactions;
	const char **names = calloc(n ? n : 1, sizeof *names);
	struct gate_limits *lim = calloc(n ? n : 1, sizeof *lim);
	int rc = -1;

	if (names != NULL && lim != NULL) {
		for (size_t i = 0; i < n; i++) {
			const struct cfg_action *a = &cfg->actions[i];
			names[i] = a->name;
			lim[i] = (struct gate_limits){a->max_in_flight, a->rate_per_s,
			    a->breaker_failures, a->breaker_open_ms};
		}
		rc = gate_configure(eng->gate, names, lim, n);
	}
	free(names);
	free(lim);
	return rc;
}

/* With [notify] auth = oauth, notifications go out with a token for the
 * sink's own audience (§6) or wait for one; never unauthenticated. */
static int
webhook_token(void *arg, const char **token)
{
	struct engine *eng = arg;
	const struct cred *c = creds_webhook(eng->sec.creds);
	uint64_t gen;

	*token = c ? cred_bearer(c, eng->cfg->notify.timeout_ms, &gen) : NULL;
	return cred_is_oauth(c) && *token == NULL ? -1 : 0;
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
free_secrets(struct secrets *s)
{
	if (s->key)
		secrets_free((char *)s->key, s->key_len);
	record_key_free(s->parsed);
	creds_free(s->creds);
	memset(s, 0, sizeof *s);
}

/* The keys that verify records, by kid, at each start and reload: in a
 * rotation the operator sees which ones the workers hold. */
static void
log_keys(const struct record_key *k)
{
	char kids[LOG_VAL_MAX] = "";
	size_t len = 0;

	for (size_t i = 0; i < record_key_count(k); i++) {
		const char *kid = record_key_kid(k, i);
		int w = snprintf(kids + len, sizeof kids - len, "%s%s", i > 0 ? "," : "",
		    kid != NULL ? kid : "-");
		if (w < 0 || (size_t)w >= sizeof kids - len)
			break;	/* the count says there are more */
		len += (size_t)w;
	}
	log_info("records.keys", "count=%zu kids=%s", record_key_count(k), LOG_Q(kids));
}

/* The verification key (parsed here, not per record: a bad key fails the
 * start or the reload) and the actions' credentials of cfg. */
static int
load_secrets(struct engine *eng, const struct cfg *cfg, struct secrets *s, char *err,
	     size_t errlen)
{
	struct creds_ctx ctx = {eng->loop, eng->http, eng->oauth, engine_on_token, eng};
	char why[160];

	memset(s, 0, sizeof *s);
	if (cfg->records.signature_required &&
	    secrets_read_verify_key(cfg, (char **)&s->key, &s->key_len, err, errlen) < 0)
		return -1;
	if (cfg->records.signature_required &&
	    (s->parsed = record_key_new(cfg->records.algorithm, s->key, s->key_len, why,
	    sizeof why)) == NULL) {
		snprintf(err, errlen, "[records] verify_key_file %s: %s",
		    cfg->records.verify_key_file, why);
		goto fail;
	}
	if (record_key_issuer_problem(s->parsed, cfg->records.issuer) != NULL) {
		snprintf(err, errlen, "%s", record_key_issuer_problem(s->parsed,
		    cfg->records.issuer));
		goto fail;
	}
	if ((s->creds = creds_new(cfg, &ctx, err, errlen)) == NULL)
		goto fail;
	if (s->parsed != NULL)
		log_keys(s->parsed);
	return 0;
fail:
	free_secrets(s);
	return -1;
}

/* ES256 and RS256 records are verified on worker threads (issue 10): ~72 µs
 * of ECDSA each, where HS256 costs a few. Decided at the start: a reload
 * to another algorithm verifies inline what the pool would not take. */
static int
wants_vpool(const struct cfg *cfg)
{
	return cfg->records.verify_threads > 0 && cfg->records.signature_required &&
	    cfg->records.algorithm != JWA_HS256;
}

/* What a shard's jobs in hand see: the running config, key and credentials,
 * and the shard's own connection and keys. */
void
engine_lend_env(struct shard *sh)
{
	struct engine *eng = sh->eng;
	struct eops *e = &sh->eops;

	e->loop = eng->loop;
	e->cmd = sh->cmd;
	e->batch = sh->batch;
	e->http = eng->http;
	e->oauth = eng->oauth;
	e->webhook = eng->webhook;
	e->keys = &sh->keys;
	e->scripts = &eng->scripts;
	e->cfg = eng->cfg;
	e->parsed_key = eng->sec.parsed;
	e->verify_key = eng->sec.key;
	e->verify_key_len = eng->sec.key_len;
	e->vpool = eng->vpool;
	e->creds = eng->sec.creds;
	e->released = job_released;
	e->arg = sh;
	sh->env.ops = eng->ops->jobs != NULL ? eng->ops->jobs : &eops_ops;
	sh->env.ctx = e;
	sh->env.cfg = eng->cfg;
	sh->env.keys = &sh->keys;
	sh->env.n = &eng->n;
	sh->env.gate = eng->gate;
}

static void
lend_envs(struct engine *eng)
{
	for (size_t i = 0; i < eng->nshards; i++)
		engine_lend_env(&eng->shards[i]);
}

/* ------------------------------------------------------------------ */
/* life cycle                                                           */

static void
init_timer(struct engine *eng, ev_timer *t, void (*cb)(struct ev_loop *, ev_timer *, int),
	   long every_ms)
{
	ev_timer_init(t, cb, (double)every_ms / 1000.0, (double)every_ms / 1000.0);
	t->data = eng;
}

static void
init_timers(struct engine *eng)
{
	const struct cfg *cfg = eng->cfg;
	long wd_ms = sdnotify_watchdog_ms();

	init_timer(eng, &eng->heartbeat, engine_heartbeat_cb, cfg->daemon.heartbeat_ms);
	init_timer(eng, &eng->claim, engine_claim_cb, cfg->redis.claim_interval_ms);
	init_timer(eng, &eng->lease, engine_lease_cb, cfg->redis.lease_renew_ms);
	/* started only under WatchdogSec (engine start) */
	init_timer(eng, &eng->watchdog, engine_watchdog_cb, wd_ms > 1 ? wd_ms / 2 : 1000);
	ev_init(&eng->read_kick, engine_read_kick_cb);
	eng->read_kick.data = eng;
	ev_timer_init(&eng->name_stop, engine_name_stop_cb, 0.0, 0.0);
	eng->name_stop.data = eng;
}

/* R16: a periodic timer whose interval changed takes the new one now. */
static void
rearm(struct engine *eng, ev_timer *t, const char *what, long old_ms, long new_ms)
{
	if (old_ms == new_ms)
		return;
	ev_timer_set(t, (double)new_ms / 1000.0, (double)new_ms / 1000.0);
	if (engine_timer_active(eng, t) || !eng->draining) {
		engine_timer_stop(eng, t);
		engine_timer_start(eng, t, what);
	}
}

static void
rearm_timers(struct engine *eng, const struct cfg *old, const struct cfg *cfg)
{
	/* The watchdog's pace is systemd's (WATCHDOG_USEC), not the config's. */
	rearm(eng, &eng->heartbeat, "heartbeat", old->daemon.heartbeat_ms, cfg->daemon.heartbeat_ms);
	rearm(eng, &eng->lease, "lease", old->redis.lease_renew_ms, cfg->redis.lease_renew_ms);
	if (!eng->draining)
		rearm(eng, &eng->claim, "claim", old->redis.claim_interval_ms,
		    cfg->redis.claim_interval_ms);
}

/* One shard's keys, timer and empty set of jobs; 0 or -1 with err. */
static int
init_shard(struct engine *eng, struct shard *sh, unsigned index, char *err, size_t errlen)
{
	const struct cfg *cfg = eng->cfg;
	char prefix[STORE_KEY_MAX];

	sh->eng = eng;
	sh->index = index;
	snprintf(sh->own_cursor, sizeof sh->own_cursor, "0");
	if (cluster_shard_prefix(prefix, sizeof prefix, cfg->redis.prefix, index,
	    (unsigned)cfg->redis.shards) < 0 ||
	    store_keys_init(&sh->keys, prefix, cfg->daemon.consumer) < 0) {
		snprintf(err, errlen, "redis prefix or consumer name too long");
		return -1;
	}
	sh->slot = cluster_key_slot(sh->keys.jobs, strlen(sh->keys.jobs));
	ev_init(&sh->kick, engine_kick_cb);
	sh->kick.data = sh;
	ev_init(&sh->renew_retry, engine_renew_retry_cb);
	sh->renew_retry.data = sh;
	ev_init(&sh->owner_retry, engine_name_retry_cb);
	sh->owner_retry.data = sh;
	engine_lend_env(sh);
	if ((sh->jobs = ejobs_new(&sh->env)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

struct engine *
engine_new(struct ev_loop *loop, struct cfg *cfg, char *err, size_t errlen)
{
	return engine_new_with(loop, cfg, NULL, NULL, err, errlen);
}

struct engine *
engine_new_with(struct ev_loop *loop, struct cfg *cfg, const struct engine_ops *ops, void *ctx,
		char *err, size_t errlen)
{
	struct engine *eng = calloc(1, sizeof *eng);

	if (eng == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	eng->loop = loop;
	eng->ops = ops != NULL ? ops : &engine_real_ops;
	eng->opctx = ops != NULL ? ctx : loop;
	eng->cfg = cfg;
	script_set_init(&eng->scripts);
	if (rnd_hex(eng->instance, sizeof eng->instance, 16) < 0) {
		snprintf(err, errlen, "no random instance id");
		goto fail;
	}
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
		oauth_set_listener(eng->oauth, engine_on_token, eng);
		oauth_count_failures_into(eng->oauth, &eng->n.idp_failures);
	}
	if (load_secrets(eng, cfg, &eng->sec, err, errlen) < 0)
		goto fail;
	eng->rt = rtoken_new(loop, eng->http, cfg, cfg->redis.block_ms + REDIS_TOKEN_MARGIN_MS,
	    err, errlen);
	if (eng->rt == NULL)
		goto fail;
	rtoken_set_listener(eng->rt, engine_on_redis_token, eng);
	if (wants_vpool(cfg) &&
	    (eng->vpool = vpool_new(loop, (unsigned)cfg->records.verify_threads)) == NULL) {
		snprintf(err, errlen, "cannot start the verification threads");
		goto fail;
	}
	/* [notify] auth picks what the webhook carries (warrantd(7) §6). */
	eng->webhook = webhook_from_cfg(loop, eng->http, cfg, webhook_token, eng, err, errlen);
	if (eng->webhook == NULL && err[0] != '\0')
		goto fail;
	webhook_count_into(eng->webhook, &eng->n.webhook_failures, &eng->n.notify_dropped);
	init_timers(eng);
	if ((eng->gate = gate_new()) == NULL || configure_gate(eng, cfg) < 0) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	size_t n = cfg->redis.shards > 0 ? (size_t)cfg->redis.shards : 1;
	if ((eng->shards = calloc(n, sizeof *eng->shards)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	for (eng->nshards = 0; eng->nshards < n; eng->nshards++)
		if (init_shard(eng, &eng->shards[eng->nshards], (unsigned)eng->nshards, err,
		    errlen) < 0) {
			eng->nshards++;	/* its partial state is freed too */
			goto fail;
		}
	if ((eng->stats = wstats_new()) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	engine_set_call_observer(eng, NULL, NULL);	/* wstats counts first */
	return eng;
fail:
	eng->cfg = NULL;	/* still the caller's */
	engine_free(eng);
	return NULL;
}

int
engine_exit_status(const struct engine *eng)
{
	return eng->exit_status;
}

void
engine_start(struct engine *eng)
{
	char err[256];

	eng->started_at = engine_now_ms(eng);
	rtoken_start(eng->rt);
	/* With a token, the connections are made when the first one arrives
	 * (on_redis_token): a connection without AUTH would only be refused. */
	if (rtoken_is_static(eng->rt) && engine_connect_redis(eng, err, sizeof err) < 0) {
		log_error("engine.start", "error=%s", LOG_Q(err));
		eng->exit_status = EX_UNAVAILABLE;
		engine_break(eng);
		return;
	}
	if (eng->oauth)
		oauth_start(eng->oauth);
	creds_start(eng->sec.creds);
	engine_timer_start(eng, &eng->heartbeat, "heartbeat");
	engine_timer_start(eng, &eng->claim, "claim");
	engine_timer_start(eng, &eng->lease, "lease");
	/* Without WatchdogSec nobody listens: an idle worker wakes for its
	 * heartbeat and its blocking read only (issue 10). */
	if (sdnotify_watchdog_ms() > 1)
		engine_timer_start(eng, &eng->watchdog, "watchdog");
	for (size_t i = 0; i < eng->nshards; i++)
		log_info("engine.start", "consumer=%s group=%s stream=%s max_in_flight=%ld",
		    eng->cfg->daemon.consumer, eng->cfg->redis.group, eng->shards[i].keys.jobs,
		    eng->cfg->daemon.max_in_flight);
}

/* R15: nothing in hand any more: the consumer name is given back
 * (engine_name.c), then the loop ends. */
static void
maybe_finish_stop(struct engine *eng)
{
	if (engine_in_hand(eng) > 0 || eng->releasing > 0)
		return;	/* a call, a result to write, or a last callback on its way */
	if (!eng->released) {
		eng->released = 1;
		if ((eng->releasing = engine_release_names(eng)) > 0)
			return;
	}
	engine_finish_stop(eng);
}

void
engine_finish_stop(struct engine *eng)
{
	engine_timer_stop(eng, &eng->grace);
	log_info("engine.stopped", "consumer=%s", eng->cfg->daemon.consumer);
	engine_break(eng);
}

static void
grace_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct engine *eng = w->data;
	(void)loop, (void)revents;

	log_warn("engine.grace_expired", "in_hand=%zu", engine_in_hand(eng));
	engine_break(eng);
}

void
engine_stop(struct engine *eng)
{
	if (eng->draining)
		return;
	eng->draining = 1;
	engine_notify(eng, "STOPPING=1");
	log_info("engine.stopping", "in_hand=%zu grace_ms=%ld", engine_in_hand(eng),
	    eng->cfg->daemon.shutdown_grace_ms);
	engine_timer_stop(eng, &eng->claim);
	/* Entries read but not started, and those waiting on a timer, stay
	 * pending for R11/R14; only calls in flight may finish. */
	for (size_t i = 0; i < eng->nshards; i++)
		ejobs_stop(eng->shards[i].jobs);
	ev_timer_init(&eng->grace, grace_cb, (double)eng->cfg->daemon.shutdown_grace_ms / 1000.0, 0);
	eng->grace.data = eng;
	engine_timer_start(eng, &eng->grace, "grace");
	/* The blocking read holds its connection until block_ms: drop it. */
	engine_timer_stop(eng, &eng->read_kick);
	eng->ops->conn_free(eng->opctx, eng->blk);
	eng->blk = NULL;
	for (size_t i = 0; i < eng->nshards; i++) {
		eng->ops->conn_free(eng->opctx, eng->shards[i].blk);
		eng->shards[i].blk = NULL;
	}
	maybe_finish_stop(eng);
}

/* R16: what a reload cannot change on live connections (cfg_restart_keys)
 * is named in the log, never ignored silently; it takes effect at the
 * next start. */
static void
log_restart_needed(const struct cfg *old, const struct cfg *cfg)
{
	const char *keys[32];
	size_t nkeys = cfg_restart_keys(old, cfg, keys, sizeof keys / sizeof keys[0]);
	char changed[256] = "";
	size_t len = 0;

	for (size_t i = 0; i < nkeys; i++) {
		/* fits: every such name, with commas, is under 256 bytes */
		int w = snprintf(changed + len, sizeof changed - len, "%s%s", len > 0 ? "," : "",
		    keys[i]);
		if (w < 0 || (size_t)w >= sizeof changed - len)
			break;
		len += (size_t)w;
	}
	if (changed[0])
		log_warn("reload.restart_needed", "section=redis keys=%s detail=\"the running "
		    "connections keep the old values until warrantd restarts\"", changed);
}

int
engine_reload(struct engine *eng, struct cfg *cfg, char *err, size_t errlen)
{
	struct secrets s;
	struct cfg *old = eng->cfg;

	if (strcmp(cfg->redis.prefix, old->redis.prefix) != 0 ||
	    strcmp(cfg->redis.group, old->redis.group) != 0 ||
	    strcmp(cfg->daemon.consumer, old->daemon.consumer) != 0 ||
	    cfg->redis.shards != old->redis.shards ||
	    cfg->records.verify_threads != old->records.verify_threads ||
	    (cfg->redis.cluster == NULL) != (old->redis.cluster == NULL) ||
	    (cfg->redis.cluster && strcmp(cfg->redis.cluster, old->redis.cluster) != 0)) {
		snprintf(err, errlen,
		    "prefix, shards, cluster, group, consumer and verify_threads change only "
		    "with a restart");
		return -1;
	}
	if (cfg->oauth.present != old->oauth.present) {
		snprintf(err, errlen, "adding or removing [oauth] takes a restart");
		return -1;
	}
	if (load_secrets(eng, cfg, &s, err, errlen) < 0)
		return -1;
	if (eng->oauth && oauth_reload(eng->oauth, cfg, err, errlen) < 0) {
		free_secrets(&s);
		return -1;
	}
	if (configure_gate(eng, cfg) < 0) {
		snprintf(err, errlen, "out of memory");
		free_secrets(&s);
		return -1;
	}
	log_restart_needed(old, cfg);
	free_secrets(&eng->sec);
	eng->sec = s;
	eng->cfg = cfg;
	lend_envs(eng);
	if (eng->started_at)
		creds_start(eng->sec.creds);
	scan_token_needs(eng);
	log_set_level(cfg->daemon.log_level);
	log_set_format(cfg->daemon.log_format);
	rearm_timers(eng, old, cfg);
	cfg_free(old);
	for (size_t i = 0; i < eng->nshards; i++)
		ejobs_gate_wake(eng->shards[i].jobs);	/* limits may be wider now */
	return 0;
}

const struct engine_counters *
engine_counters(const struct engine *eng)
{
	return &eng->n;
}

/* redis_up: every shard's command connection is up. */
void
engine_gauges(const struct engine *eng, struct engine_gauges *out)
{
	out->in_flight = (long long)engine_in_hand(eng);
	out->token_expires_in_s = engine_token_expires_in_s(eng);
	out->token_refreshes = eng->oauth ? oauth_refreshes(eng->oauth) : 0LL;
	out->redis_outages = engine_total_outages(eng);
	out->token_state = engine_token_state(eng);
	out->redis_token_state = engine_redis_token_state(eng);
	out->redis_token_expires_in_s = engine_redis_token_expires_in_s(eng);
	out->redis_auth_refreshes = eng->rt ? rtoken_refreshes(eng->rt) : 0LL;
	out->redis_up = 1;
	for (size_t i = 0; i < eng->nshards; i++)
		out->redis_up &= engine_up(eng, eng->shards[i].cmd);
	out->started_at_ms = eng->started_at;
	out->gate = eng->gate;
	struct creds_scope sc[ENGINE_SCOPES_MAX];
	out->nscopes = creds_scopes(eng->sec.creds, sc, ENGINE_SCOPES_MAX);
	for (size_t i = 0; i < out->nscopes; i++) {
		out->scopes[i].name = sc[i].name;
		out->scopes[i].state = sc[i].state;
		out->scopes[i].expires_in_s = engine_seconds_until(sc[i].expires_at_ms);
	}
}

void
engine_set_outcome_observer(struct engine *eng, engine_outcome_observer *fn)
{
	wstats_set_next_outcome(eng->stats, fn);	/* after wstats has counted */
}

void
engine_set_call_observer(struct engine *eng, engine_call_observer *fn, void *arg)
{
	wstats_set_next_call(eng->stats, fn, arg);
	for (size_t i = 0; i < eng->nshards; i++) {
		eng->shards[i].eops.call_done = wstats_on_call;	/* read at each call */
		eng->shards[i].eops.call_done_arg = eng->stats;
		eng->shards[i].eops.outcome = wstats_on_outcome;
	}
}

void
engine_free(struct engine *eng)
{
	if (eng == NULL)
		return;
	engine_timer_stop(eng, &eng->heartbeat);
	engine_timer_stop(eng, &eng->claim);
	engine_timer_stop(eng, &eng->lease);
	engine_timer_stop(eng, &eng->grace);
	engine_timer_stop(eng, &eng->watchdog);
	engine_timer_stop(eng, &eng->read_kick);
	engine_timer_stop(eng, &eng->name_stop);
	eng->draining = 1;
	/* Outstanding callbacks fire with NULL while the connections close;
	 * every job is marked finished first so none of them acts. */
	for (size_t i = 0; i < eng->nshards; i++) {
		engine_timer_stop(eng, &eng->shards[i].kick);
		engine_timer_stop(eng, &eng->shards[i].renew_retry);
		engine_timer_stop(eng, &eng->shards[i].owner_retry);
		if (eng->shards[i].jobs)
			ejobs_abandon(eng->shards[i].jobs);
	}
	eng->ops->conn_free(eng->opctx, eng->blk);
	for (size_t i = 0; i < eng->nshards; i++) {
		/* before its connection: gathered calls get NULL while it is there */
		eng->ops->batch_free(eng->opctx, eng->shards[i].batch);
		eng->ops->conn_free(eng->opctx, eng->shards[i].blk);
		eng->ops->conn_free(eng->opctx, eng->shards[i].cmd);
	}
	webhook_free(eng->webhook);
	rtoken_free(eng->rt);	/* after the connections, before the HTTP client */
	oauth_free(eng->oauth);
	http_client_free(eng->http);
	for (size_t i = 0; i < eng->nshards; i++)
		ejobs_free(eng->shards[i].jobs);
	vpool_free(eng->vpool);	/* after the jobs: they cancelled their tickets */
	gate_free(eng->gate);	/* after the jobs: they give their places back */
	free(eng->shards);
	free_secrets(&eng->sec);
	if (eng->sentinel_password)
		secrets_free(eng->sentinel_password, eng->sentinel_password_len);
	disc_free(eng->disc);	/* after the connections: no callback asks it */
	rtls_ctx_free(eng->tls);	/* after every connection that borrowed it */
	cfg_free(eng->cfg);
	wstats_free(eng->stats);
	free(eng);
}
