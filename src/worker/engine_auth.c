/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * engine, connections and credentials (engine.c says what each file
 * holds): the Redis connections and what their going down and up starts,
 * where they connect (Sentinel, Cluster: disc.h), Redis' own credential
 * (R20, rtoken.h) and the worker's OAuth token (R6).
 */
#define _DEFAULT_SOURCE
#include "worker/engine.h"

#include <inttypes.h>
#include <stdio.h>

#include "redis/cluster.h"
#include "core/consumer.h"
#include "redis/disc.h"
#include "worker/ejob.h"
#include "base/log.h"
#include "auth/oauth.h"
#include "redis/rconn.h"
#include "auth/rtoken.h"
#include "core/token.h"
#include "redis/rtls.h"
#include "redis/script.h"
#include "worker/sdnotify.h"
#include "conf/secrets.h"
#include "redis/sentinel.h"
#include "base/wtime.h"
#include "engine_int.h"

/* ------------------------------------------------------------------ */
/* the connections' states                                              */

static void
on_cmd_state(struct rconn *rc, int up, void *arg)
{
	struct shard *sh = arg;
	(void)rc;

	if (!up) {
		if (!sh->redis_down_since) {
			sh->redis_down_since = engine_now_ms(sh->eng);
			sh->outages++;
			engine_notify(sh->eng, "STATUS=redis unreachable, reconnecting");
		}
		sh->claiming = 0;
		engine_name_down(sh);
		return;
	}
	if (sh->redis_down_since) {
		log_info("redis.recovered", "stream=%s down_ms=%" PRId64, sh->keys.jobs,
		    engine_now_ms(sh->eng) - sh->redis_down_since);
		sh->redis_down_since = 0;
		engine_notify(sh->eng, "STATUS=consuming");
	}
	/* Our own leases at once: the outage aged them too. And what waited
	 * on Redis goes out now, not a backoff later. */
	engine_renew_shard(sh);
	ejobs_redis_up(sh->jobs);
	/* Entries whose XREADGROUP reply was lost with the connection are in
	 * our PEL but not in hand: scan it again (admit skips known ones). */
	sh->own_done = 0;
	snprintf(sh->own_cursor, sizeof sh->own_cursor, "0");
	/* Writes that failed while down are retried by their own timers.
	 * Nothing is read before the consumer name is ours (engine_name.c),
	 * whose answer sends the heartbeat, the pauses and the group, in that
	 * order: Redis sees us alive before we take our entries back, and no
	 * job loaded after the pauses starts unseen. The library first: a
	 * missing one stops the worker saying so. */
	engine_check_library(sh);
	engine_claim_name(sh);
}

static void
on_blk_state(struct rconn *rc, int up, void *arg)
{
	struct shard *sh = arg;
	(void)rc;

	if (!up)
		sh->reading = 0;
	else
		engine_reread_own(sh);
}

/* The shared read's connection: every shard's stream was in the read. */
static void
on_shared_blk_state(struct rconn *rc, int up, void *arg)
{
	struct engine *eng = arg;
	(void)rc;

	if (!up) {
		eng->reading = 0;
		for (size_t i = 0; i < eng->nshards; i++)
			eng->shards[i].reading = 0;
		return;
	}
	for (size_t i = 0; i < eng->nshards; i++)
		engine_reread_own(&eng->shards[i]);
}

/* ------------------------------------------------------------------ */
/* the worker's token                                                   */

/* A token arrived: every job waiting on one goes on (R6, R9), the entries
 * parked for want of it are queued again, and reading resumes if it had
 * stopped for want of one. */
void
engine_on_token(void *arg, int have_token)
{
	struct engine *eng = arg;

	log_info("token.state", "state=%s have_token=%d", engine_token_state(eng), have_token);
	if (!have_token)
		return;
	int64_t life = oauth_expires_at_ms(eng->oauth) - wtime_mono_ms();
	if (eng->needs_token && life <= eng->token_timeout_ms + 1000)
		log_warn("token.too_short", "expires_in_ms=%" PRId64 " action_timeout_ms=%ld "
		    "detail=\"R6 needs more than the action timeout plus 1 s: no call can start\"",
		    life, eng->token_timeout_ms);
	for (size_t i = 0; i < eng->nshards; i++)
		ejobs_token_ready(eng->shards[i].jobs);
	for (size_t i = 0; i < eng->nshards; i++) {
		engine_unpark(&eng->shards[i]);	/* R6: its scope's parked entries */
		engine_read_more(&eng->shards[i]);
	}
}

/* ------------------------------------------------------------------ */
/* connection options, discovery                                        */

static struct rconn_opts
redis_opts(const struct cfg *cfg, const char *password, int64_t expires_at_ms, long timeout_ms)
{
	struct rconn_opts o = {
		.host = cfg->redis.host, .port = cfg->redis.port, .socket = cfg->redis.socket,
		.username = cfg->redis.username, .password = password, .db = cfg->redis.db,
		.password_expires_at_ms = expires_at_ms,
		.connect_timeout_ms = 5000, .command_timeout_ms = timeout_ms,
		.backoff_min_ms = 100, .backoff_max_ms = RECONNECT_MAX_MS,
	};
	return o;
}

/* The sentinels' password: sentinel_password_file's; without one, with a
 * Redis token ([redis] auth = oauth or command), that token (a sentinel of
 * a managed service takes the same credential); else none. */
static const char *
sentinel_secret(const struct engine *eng)
{
	if (eng->sentinel_password != NULL || rtoken_is_static(eng->rt))
		return eng->sentinel_password;
	return rtoken_secret(eng->rt, wtime_mono_ms());
}

/* rconn_opts.resolve: the primary, as the sentinels see it now, or on a
 * cluster the node that owns the shard's slot; asked without blocking the
 * loop (disc.h: 1, the answer comes later). */
static int
resolve_node(void *arg, char *host, size_t hostlen, int *port)
{
	struct shard *sh = arg;

	return disc_resolve(sh->eng->disc, sh->slot, host, hostlen, port);
}

/* rconn_opts.error_seen: a MOVED says where the slot is now, a READONLY
 * that the primary is not (disc_error_seen). An ASK -- keys mid-migration
 * -- changes no map: rconn follows it on a side connection (ASKING + the
 * command), and only the first ASK of a migration (or one rconn could not
 * follow) reaches the caller, which backs off and retries (HACKING.md
 * "Redis Cluster routing"). */
static void
node_error_seen(void *arg, const char *error)
{
	disc_error_seen(((struct shard *)arg)->eng->disc, error);
}

/* disc_opts.secret */
static const char *
disc_secret(void *arg, int sentinel)
{
	struct engine *eng = arg;

	return sentinel ? sentinel_secret(eng) : rtoken_secret(eng->rt, wtime_mono_ms());
}

/* disc_opts.each_conn: every connection that exists now. */
static void
each_conn(void *arg, disc_conn_fn *fn, void *fnarg)
{
	struct engine *eng = arg;

	for (size_t i = 0; i < eng->nshards; i++) {
		struct shard *sh = &eng->shards[i];
		if (sh->cmd != NULL)
			fn(sh->cmd, sh->slot, 0, fnarg);
		if (sh->blk != NULL)
			fn(sh->blk, sh->slot, 1, fnarg);
	}
	if (eng->blk != NULL)
		fn(eng->blk, eng->shards[0].slot, 1, fnarg);
}

/* Where to connect and where not: made once, at the first connect. */
static int
setup_disc(struct engine *eng, char *err, size_t errlen)
{
	const struct cfg *cfg = eng->cfg;
	struct disc_opts o = {
		.loop = eng->loop, .sentinels = cfg->redis.sentinel_addr,
		.nsentinels = cfg->redis.n_sentinel_addr, .seeds = cfg->redis.cluster_addr,
		.nseeds = cfg->redis.n_cluster_addr, .master_name = cfg->redis.master_name,
		.username = cfg->redis.username,
		.host = cfg->redis.socket == NULL ? cfg->redis.host : NULL, .port = cfg->redis.port,
		.allow_hosts = cfg->redis.allow_hosts, .secret = disc_secret,
		.allow_plaintext = cfg->redis.allow_plaintext,
		.each_conn = each_conn, .arg = eng, .tls = eng->tls,
		.timeout_ms = SENTINEL_TIMEOUT_MS, .poll_ms = DISC_POLL_MS,
	};

	if ((eng->disc = disc_new(&o, err, errlen)) == NULL)
		return -1;
	disc_count_refused_in(eng->disc, &eng->n.redis_hosts_refused);
	return 0;
}

/* Sentinel: the sentinels' password, kept for every lookup. */
static int
setup_sentinels(struct engine *eng, char *err, size_t errlen)
{
	const struct cfg *cfg = eng->cfg;

	if (cfg->redis.sentinels == NULL)
		return 0;
	if (cfg->redis.sentinel_password_file &&
	    secrets_read_cfg(cfg, cfg->redis.sentinel_password_file, SECRETS_TRIMMED,
	    &eng->sentinel_password, &eng->sentinel_password_len, err, errlen) < 0)
		return -1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Redis' own credential (warrantd(7) §9, rtoken.h)                           */

/* Every live connection: each shard's command and blocking ones, and the
 * shared read. */
static void
reauth_all(struct engine *eng, const char *secret, int64_t expires_at_ms)
{
	struct rconn *all[2];

	for (size_t i = 0; i <= eng->nshards; i++) {
		size_t n = 0;
		if (i < eng->nshards) {
			all[n++] = eng->shards[i].cmd;
			all[n++] = eng->shards[i].blk;
		} else {
			all[n++] = eng->blk;
		}
		for (size_t k = 0; k < n; k++)
			if (all[k] != NULL && eng->ops->conn_reauth(eng->opctx, all[k], secret, expires_at_ms) < 0)
				log_warn("redis.reauth_failed", "err=\"out of memory\"");
	}
}

/* A Redis token arrived: the first one makes the connections; each later
 * one re-authenticates every live connection on itself (AUTH queued in
 * order: no read or pipeline is dropped). A token lost stops new reads
 * (token_blocks_reading). */
void
engine_on_redis_token(void *arg, const char *secret, int64_t expires_at_ms)
{
	struct engine *eng = arg;
	char err[256];

	log_info("redis.token_state", "state=%s have_token=%d", engine_redis_token_state(eng),
	    secret != NULL);
	if (eng->started_at == 0)
		return;
	if (secret == NULL) {	/* said now, not at the next read (R20: no new reads) */
		for (size_t i = 0; i < eng->nshards && eng->redis_connected; i++)
			engine_read_more(&eng->shards[i]);
		return;
	}
	if (!eng->redis_connected) {
		if (engine_connect_redis(eng, err, sizeof err) < 0) {
			log_error("engine.start", "error=%s", LOG_Q(err));
			engine_break(eng);
		}
		return;
	}
	eng->redis_gen_given = rtoken_generation(eng->rt);
	reauth_all(eng, secret, expires_at_ms);
	/* R20: the writes held meanwhile go after the AUTH just queued, each
	 * entry reclaimed to us first */
	for (size_t i = 0; i < eng->nshards; i++)
		ejobs_redis_auth_ready(eng->shards[i].jobs);
	for (size_t i = 0; i < eng->nshards; i++)
		engine_read_more(&eng->shards[i]);
}

/*
 * rconn_opts.auth_seen: Redis answered about its credential. A refusal
 * (NOAUTH, WRONGPASS, NOPERM, or a connection closed as its token died) is
 * counted and, unless it met a token older than the connection's latest
 * AUTH, asks rtoken for one fresh token for all connections, spaced like
 * R9's; the commands it refused are their callers' to take back (R20, ejob).
 */
static void
on_redis_auth(void *arg, int ok, const char *kind)
{
	struct engine *eng = arg;

	enum consumer_auth_seen as = consumer_auth_seen(ok, kind, rtoken_is_static(eng->rt));

	if (as == CONSUMER_AS_NONE)
		return;
	eng->n.redis_auth_failures++;
	/* R17: with a fixed credential nothing is fetched, and rconn's
	 * redis.error already said the kind once for the episode */
	if (as == CONSUMER_AS_NOTE)
		log_debug("redis.auth_refused", "kind=%s stale=%d redis_token_state=%s",
		    LOG_Q(kind), ok < 0, engine_redis_token_state(eng));
	else
		log_warn("redis.auth_refused", "kind=%s stale=%d redis_token_state=%s",
		    LOG_Q(kind), ok < 0, engine_redis_token_state(eng));
	/* a command sent before its connection's latest AUTH met an older
	 * token: the newest is not to blame */
	if (as == CONSUMER_AS_RENEW) {
		/* R20: the refused writes are held until the new token is in
		 * (a static password has none coming: R17's retries) */
		for (size_t i = 0; i < eng->nshards; i++)
			ejobs_redis_auth_lost(eng->shards[i].jobs);
		/* the refusal of a token older than the one held blames nothing */
		if (token_redis_refusal_blames(eng->redis_gen_given, rtoken_generation(eng->rt)))
			rtoken_refused(eng->rt, rtoken_generation(eng->rt));
	}
}

/* A shard's connections, named after it when there are shards: its
 * blocking one only when it reads alone. */
static int
connect_shard(struct shard *sh, struct rconn_opts o)
{
	const struct cfg *cfg = sh->eng->cfg;
	char name[32];

	if (cfg->redis.sentinels || cfg->redis.cluster) {
		o.resolve = resolve_node;
		o.error_seen = node_error_seen;
		o.cluster = cfg->redis.cluster != NULL;
		o.resolve_arg = sh;
	}
	snprintf(name, sizeof name, cfg->redis.shards ? "cmd.%u" : "cmd", sh->index);
	sh->cmd = sh->eng->ops->conn_new(sh->eng->opctx, &o, name, on_cmd_state, sh);
	if (sh->cmd == NULL || (sh->batch = sh->eng->ops->batch_new(sh->eng->opctx, sh->cmd,
	    &sh->eng->scripts)) == NULL)
		return -1;
	engine_lend_env(sh);
	if (sh->eng->one_read)
		return 0;
	o.command_timeout_ms = cfg->redis.block_ms + 5000;
	snprintf(name, sizeof name, cfg->redis.shards ? "read.%u" : "read", sh->index);
	sh->blk = sh->eng->ops->conn_new(sh->eng->opctx, &o, name, on_blk_state, sh);
	return sh->cmd && sh->blk ? 0 : -1;
}

/* The one blocking connection of shards on one Redis (named "read", as
 * without shards). With sentinels it asks for the primary like the rest;
 * resolve_primary needs only the engine, which shard 0 leads to. */
static int
connect_shared_read(struct engine *eng, struct rconn_opts o)
{
	if (eng->cfg->redis.sentinels) {
		o.resolve = resolve_node;
		o.error_seen = node_error_seen;
		o.resolve_arg = &eng->shards[0];
	}
	o.command_timeout_ms = eng->cfg->redis.block_ms + 5000;
	eng->blk = eng->ops->conn_new(eng->opctx, &o, "read", on_shared_blk_state, eng);
	return eng->blk ? 0 : -1;
}

int
engine_connect_redis(struct engine *eng, char *err, size_t errlen)
{
	const struct cfg *cfg = eng->cfg;

	if (eng->redis_connected)
		return 0;
	if (cfg->redis.tls && eng->tls == NULL &&
	    (eng->tls = rtls_ctx_new(cfg, err, errlen)) == NULL)
		return -1;
	if (setup_sentinels(eng, err, errlen) < 0 || setup_disc(eng, err, errlen) < 0)
		return -1;
	int64_t now = wtime_mono_ms();
	eng->redis_gen_given = rtoken_generation(eng->rt);
	struct rconn_opts o = redis_opts(cfg, rtoken_secret(eng->rt, now),
	    rtoken_is_static(eng->rt) ? 0 : rtoken_expires_at_ms(eng->rt),
	    /* R19: a WAIT holds its connection's replies that long */
	    10000 + (cfg->redis.wait_replicas > 0 ? cfg->redis.wait_timeout_ms : 0));
	o.auth_seen = on_redis_auth;
	o.auth_arg = eng;
	o.allow = disc_allowlist(eng->disc);
	o.tls = eng->tls;
	eng->redis_connected = 1;
	/* A cluster refuses one read over several slots (CROSSSLOT). */
	eng->one_read = eng->nshards > 1 && cfg->redis.cluster == NULL;
	for (size_t i = 0; i < eng->nshards; i++)
		if (connect_shard(&eng->shards[i], o) < 0) {
			snprintf(err, errlen, "cannot create the Redis connections");
			return -1;
		}
	if (eng->one_read && connect_shared_read(eng, o) < 0) {
		snprintf(err, errlen, "cannot create the Redis connections");
		return -1;
	}
	disc_start(eng->disc);
	return 0;
}
