/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * engine, leases and the heartbeat (engine.c says what each file holds):
 * R10's renewals of the entries in hand, R11's heartbeat script and the
 * heartbeat hash (§8), the stall check beside it, the pauses of P:paused
 * (§13) and systemd's watchdog.
 */
#define _DEFAULT_SOURCE
#include "worker/engine.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/consumer.h"
#include "core/lag.h"
#include "auth/cred.h"
#include "worker/ejob.h"
#include "core/gate.h"
#include "base/log.h"
#include "auth/oauth.h"
#include "redis/rconn.h"
#include "auth/rtoken.h"
#include "redis/script.h"
#include "worker/sdnotify.h"
#include "redis/sreply.h"
#include "core/store.h"
#include "base/wtime.h"
#include "base/version.h"
#include "worker/wstats.h"
#include "engine_int.h"

/* ------------------------------------------------------------------ */
/* R10 leases                                                           */

static void
lease_lost(void *arg, const char *stream_id)
{
	struct shard *sh = arg;

	ejobs_lease_lost(sh->jobs, stream_id);
}

static void
unpending(void *arg, const char *stream_id)
{
	struct shard *sh = arg;

	ejobs_unpending(sh->jobs, stream_id);
}

/* R10: a renewal (or a heartbeat) that Redis refused is tried again with
 * backoff, never in a tight loop, and never left to the next lease tick. */
static void
renew_refused(struct shard *sh)
{
	sh->writes_refused = 1;
	engine_back_off_with(sh->eng, &sh->renew_retry, "renew_retry", &sh->renew_failures);
}

void
engine_renew_retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop, (void)revents;
	engine_renew_shard(w->data);
}

static void
after_renew(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct shard *sh = arg;
	(void)rc;

	/* LOST: on_cmd_state renews everything when it is back */
	enum consumer_err c = rconn_err_class(r);
	unsigned act = consumer_reply_next(CONSUMER_STEP_RENEW, c, c != CONSUMER_ERR_LOST &&
	    sreply_renew(r, lease_lost, unpending, sh) >= 0);
	if (act & CONSUMER_DO_GROUP)
		engine_group_gone(sh);
	if (act & CONSUMER_DO_BACKOFF)
		renew_refused(sh);
	if (act & CONSUMER_DO_OK)
		sh->renew_failures = 0;
}

void
engine_renew_shard(struct shard *sh)
{
	struct engine *eng = sh->eng;

	engine_timer_stop(eng, &sh->renew_retry);
	if (!engine_up(eng, sh->cmd) || ejobs_count(sh->jobs) == 0)
		return;
	size_t cap = ejobs_count(sh->jobs);
	const char **ids = calloc(cap, sizeof *ids);
	if (ids == NULL)
		return;
	size_t n = ejobs_leased(sh->jobs, ids, cap);
	struct store_args a;
	store_args_init(&a, STORE_RENEW);
	store_args_consumer(&a, &sh->keys, eng->cfg->redis.group, eng->cfg->daemon.consumer);
	store_arg_rest(&a, ids, n);
	if (n > 0)
		engine_best_effort(engine_script(eng, sh->cmd, &a, after_renew, sh));
	free(ids);
}

void
engine_lease_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct engine *eng = w->data;

	(void)loop, (void)revents;
	/* Nothing in hand, nothing to renew: an idle worker does not wake for
	 * it (issue 10); admit() starts the timer again. */
	if (engine_in_hand(eng) == 0) {
		engine_timer_stop(eng, w);
		return;
	}
	for (size_t i = 0; i < eng->nshards; i++)
		engine_renew_shard(&eng->shards[i]);
}

/* ------------------------------------------------------------------ */
/* the heartbeat, the stall check, the pauses                           */

/* §8: a worker with a token and room that has read nothing for a long time
 * while the group has undelivered entries is stuck, and says so. The lag
 * is counted from ids (core/lag.h): Redis 7.0's own is wrong after a
 * restart. */
static void
after_lag_count(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct shard *sh = arg;
	struct engine *eng = sh->eng;
	long long count = 0;
	size_t n = 0;
	char text[32];
	struct lag l;
	(void)rc;

	if (sreply_array_len(r, &n) == 0)	/* XRANGE's entries */
		l = lag_from_count(LAG_XRANGE, (long long)n);
	else if (sreply_integer(r, &count) == 0)	/* XLEN */
		l = lag_from_count(LAG_XLEN, count);
	else
		return;
	if (l.n == 0) {
		log_debug("consumer.stall_check", "stream=%s lag=0", sh->keys.jobs);
		return;
	}
	log_warn("consumer.stalled", "stream=%s lag=%s last_read_ms_ago=%" PRId64
	    " token_state=%s in_hand=%zu", sh->keys.jobs, lag_text(l, text, sizeof text),
	    engine_now_ms(eng) - sh->last_read_at, engine_token_state(eng),
	    ejobs_count(sh->jobs));
}

static void
after_lag(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct shard *sh = arg;
	const char *last = NULL;
	char start[LAG_START_MAX];
	size_t n = 0;
	(void)rc;

	for (size_t i = 0; sreply_array_len(r, &n) == 0 && i < n && last == NULL; i++) {
		const struct sreply *g = sreply_element(r, i);
		const char *name = sreply_field(g, "name");
		if (name != NULL && strcmp(name, sh->eng->cfg->redis.group) == 0 &&
		    (last = sreply_field(g, "last-delivered-id")) == NULL)
			return;
	}
	int q = last != NULL ? lag_query_for(last, start) : -1;
	if (q == LAG_XLEN)
		engine_best_effort(engine_command(sh->eng, sh->cmd, after_lag_count, sh,
		    (const char *[]){"XLEN", sh->keys.jobs, NULL}));
	else if (q == LAG_XRANGE)
		engine_best_effort(engine_command(sh->eng, sh->cmd, after_lag_count, sh,
		    (const char *[]){"XRANGE", sh->keys.jobs, start, "+", "COUNT", LAG_CAP_S,
		    NULL}));
}

static void
check_stalled(struct shard *sh)
{
	struct engine *eng = sh->eng;
	int64_t quiet = engine_now_ms(eng) - (sh->last_read_at ? sh->last_read_at : eng->started_at);
	struct consumer_view v = engine_shard_view(sh);

	if (!consumer_check_stall(&v, quiet, eng->cfg->redis.block_ms,
	    eng->cfg->daemon.heartbeat_ms))
		return;
	engine_best_effort(engine_command(eng, sh->cmd, after_lag, sh,
	    (const char *[]){"XINFO", "GROUPS", sh->keys.jobs, NULL}));
}

#define HB_FIELDS	(12 + 32)	/* fixed fields + room for counter_fields */

long long
engine_total_outages(const struct engine *eng)
{
	long long n = 0;

	for (size_t i = 0; i < eng->nshards; i++)
		n += eng->shards[i].outages;
	return n;
}

/* R11: Redis' heartbeat script accepted: writes go through again, and
 * after an episode of refused writes everything in hand is renewed at
 * once (R10). Refused: renewals back off until it is accepted. */
static void
after_beat(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct shard *sh = arg;
	(void)rc;

	unsigned act = consumer_reply_next(CONSUMER_STEP_BEAT, rconn_err_class(r), 1);
	if (act & CONSUMER_DO_BACKOFF) {
		if (!sh->writes_refused)
			log_warn("redis.writes_refused", "stream=%s detail=\"heartbeat refused: "
			    "renewals back off until Redis accepts writes\"", sh->keys.jobs);
		renew_refused(sh);
		return;
	}
	if ((act & CONSUMER_DO_OK) && sh->writes_refused) {
		log_info("redis.writes_accepted", "stream=%s", sh->keys.jobs);
		sh->writes_refused = 0;
		sh->renew_failures = 0;
		engine_renew_shard(sh);
	}
}

/* R11: liveness by Redis' own clock (lua/heartbeat.lua). */
static void
beat_shard(struct shard *sh)
{
	const struct cfg *cfg = sh->eng->cfg;
	struct store_args a;

	store_args_init(&a, STORE_HEARTBEAT);
	store_arg(&a, STORE_HEARTBEAT_CONSUMERS, sh->keys.consumers);
	store_arg(&a, STORE_HEARTBEAT_CLOCK, sh->keys.clock);
	store_arg(&a, STORE_HEARTBEAT_CONSUMER, cfg->daemon.consumer);
	store_arg_ll(&a, STORE_HEARTBEAT_CLAIM_IDLE_MS, cfg->redis.claim_idle_ms);
	store_arg_ll(&a, STORE_HEARTBEAT_HEARTBEAT_MS, cfg->daemon.heartbeat_ms);
	engine_best_effort(engine_script(sh->eng, sh->cmd, &a, after_beat, sh));
}

/* warrantd(7) §8: the heartbeat hash, built from one table of fields; with shards
 * one per shard (its own entries in hand and last read), so that an
 * operator sees every shard's consumers where that shard's keys are. */
/* §8, R6: tokenState.<scope> and tokenExpiresIn.<scope> of each action's
 * own narrowed token, beside the worker's tokenState. */
#define HB_SCOPES	16
static void
heartbeat_scopes(struct shard *sh)
{
	struct creds_scope sc[HB_SCOPES];
	size_t n = creds_scopes(sh->eng->sec.creds, sc, HB_SCOPES);
	char names[HB_SCOPES][2][160], secs[HB_SCOPES][24];
	const char *argv[2 + 4 * HB_SCOPES];
	int argc = 0;

	if (n == 0)
		return;
	argv[argc++] = "HSET";
	argv[argc++] = sh->keys.consumer;
	for (size_t i = 0; i < n; i++) {
		snprintf(names[i][0], sizeof names[i][0], "tokenState.%s", sc[i].name);
		snprintf(names[i][1], sizeof names[i][1], "tokenExpiresIn.%s", sc[i].name);
		snprintf(secs[i], sizeof secs[i], "%lld", engine_seconds_until(sc[i].expires_at_ms));
		argv[argc++] = names[i][0];
		argv[argc++] = sc[i].state;
		argv[argc++] = names[i][1];
		argv[argc++] = secs[i];
	}
	engine_best_effort(engine_commandv(sh->eng, sh->cmd, engine_ignore_reply, NULL, argc, argv,
	    NULL));
}

void
engine_heartbeat_shard(struct shard *sh)
{
	struct engine *eng = sh->eng;
	char host[256] = "", pid[16], started[WTIME_RFC3339_LEN], now[WTIME_RFC3339_LEN];
	char last_read[WTIME_RFC3339_LEN] = "", in_flight[24], expires[24], rexpires[24];
	char paused[256];
	char nums[HB_FIELDS][24];
	const char *argv[2 + 2 * HB_FIELDS];
	int argc = 0, k = 0;

	if (!engine_up(eng, sh->cmd) || !sh->owner_ok)
		return;	/* not before the name is ours: engine_name.c */
	beat_shard(sh);
	gethostname(host, sizeof host - 1);
	if (sh->last_read_at)
		wtime_format_rfc3339(sh->last_read_at, last_read, sizeof last_read);
	snprintf(pid, sizeof pid, "%d", (int)getpid());
	snprintf(in_flight, sizeof in_flight, "%zu", ejobs_count(sh->jobs));
	snprintf(expires, sizeof expires, "%lld", engine_token_expires_in_s(eng));
	snprintf(rexpires, sizeof rexpires, "%lld", engine_redis_token_expires_in_s(eng));
	eng->n.redis_auth_refreshes = eng->rt ? rtoken_refreshes(eng->rt) : 0;
	eng->n.token_refreshes = eng->oauth ? oauth_refreshes(eng->oauth) : 0;
	eng->n.redis_outages = engine_total_outages(eng);
	gate_paused_list(eng->gate, paused, sizeof paused);
	const char *fixed[] = {"host", host, "pid", pid, "instance", eng->instance,
	    "version", WARRANTD_VERSION,
	    "startedAt", wtime_format_rfc3339(eng->started_at, started, sizeof started),
	    "heartbeatAt", wtime_format_rfc3339(engine_now_ms(eng), now, sizeof now),
	    "lastReadAt", last_read, "inFlight", in_flight, "tokenState", engine_token_state(eng),
	    "tokenExpiresIn", expires, "redisTokenState", engine_redis_token_state(eng),
	    "redisTokenExpiresIn", rexpires, "paused", paused};
	argv[argc++] = "HSET";
	argv[argc++] = sh->keys.consumer;
	for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
		argv[argc++] = fixed[i];
	/* bounded by argv's room, which the fixed fields share */
	for (const struct counter_field *f = counter_fields;
	    f->name && k < HB_FIELDS && argc + 2 <= (int)(sizeof argv / sizeof argv[0]); f++, k++) {
		snprintf(nums[k], sizeof nums[k], "%lld", counter_value(&eng->n, f));
		argv[argc++] = f->name;
		argv[argc++] = nums[k];
	}
	engine_best_effort(engine_commandv(eng, sh->cmd, engine_ignore_reply, NULL, argc, argv, NULL));
	heartbeat_scopes(sh);
	char ttl[24];
	snprintf(ttl, sizeof ttl, "%ld", 3 * eng->cfg->daemon.heartbeat_ms);
	engine_best_effort(engine_command(eng, sh->cmd, engine_ignore_reply, NULL,
	    (const char *[]){"PEXPIRE", sh->keys.consumer, ttl, NULL}));
	check_stalled(sh);
}

/* §13: the pauses in P:paused (shard 0's, where warrantctl writes them),
 * read beside every heartbeat: every worker sees one within heartbeat_ms. */
#define PAUSES_MAX 64

static void
after_paused(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct engine *eng = arg;
	const char *names[PAUSES_MAX];
	size_t n = 0, len = 0;
	char list[256];
	(void)rc;

	if (r == NULL)
		return;	/* the connection went: the next heartbeat asks again */
	if (sreply_array_len(r, &len) != 0) {
		if (!eng->paused_unreadable)
			log_warn("gate.unreadable", "key=%s error=%s detail=\"pauses are not "
			    "seen until it can be read (conf/redis-acl.conf)\"",
			    eng->shards[0].keys.paused, LOG_Q(sreply_error_text(r) ?
			    sreply_error_text(r) : "not a hash"));
		eng->paused_unreadable = 1;
		return;
	}
	eng->paused_unreadable = 0;
	for (size_t i = 0; i + 1 < len && n < PAUSES_MAX; i += 2) {
		const char *f = sreply_string(sreply_element(r, i));
		if (f != NULL && f[0] != '\0')
			names[n++] = f;
	}
	int changed = gate_set_paused(eng->gate, names, n);
	if (changed <= 0)
		return;	/* the same, or out of memory: the old pauses hold */
	gate_paused_list(eng->gate, list, sizeof list);
	log_info("gate.pauses", "paused=%s", list[0] ? LOG_Q(list) : "-");
	for (size_t i = 0; i < eng->nshards; i++) {
		ejobs_gate_wake(eng->shards[i].jobs);
		engine_unpark(&eng->shards[i]);	/* R6: a resume queues them again */
	}
	if (!eng->draining)
		engine_read_all(&eng->shards[0]);
}

void
engine_read_pauses(struct engine *eng)
{
	struct shard *sh = &eng->shards[0];

	if (engine_up(eng, sh->cmd))
		engine_best_effort(engine_command(eng, sh->cmd, after_paused, eng,
		    (const char *[]){"HGETALL", sh->keys.paused, NULL}));
}

/* wstats_send_fn: one command of the charts' flush, on shard 0's connection. */
static int
send_stat(void *arg, int argc, const char **argv)
{
	struct shard *sh = arg;

	return engine_commandv(sh->eng, sh->cmd, engine_ignore_reply, NULL, argc, argv, NULL);
}

void
engine_heartbeat_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct engine *eng = w->data;
	(void)loop, (void)revents;

	for (size_t i = 0; i < eng->nshards; i++) {
		/* the consumer name's claim is renewed with every heartbeat */
		if (eng->shards[i].owner_ok)
			engine_claim_name(&eng->shards[i]);
		engine_heartbeat_shard(&eng->shards[i]);
	}
	/* the charts' counts, in shard 0's heartbeat pipeline (wstats.h) */
	struct shard *first = &eng->shards[0];
	wstats_flush(eng->stats, engine_up(eng, first->cmd) ? send_stat : NULL, first,
	    first->keys.paused, engine_now_ms(eng));
	engine_read_pauses(eng);
}

/* §12: systemd's WatchdogSec sets the pace, not heartbeat_ms, and the
 * pings go on while Redis is down (R17: the worker rides it out). */
void
engine_watchdog_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct engine *eng = w->data;

	(void)loop, (void)revents;
	engine_notify(eng, "WATCHDOG=1");
}
