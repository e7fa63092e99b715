/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * engine_int: the engine's own header, shared by engine.c, engine_read.c,
 * engine_lease.c, engine_auth.c and engine_name.c and by nothing else (engine.h is the
 * module's interface). It holds the state of the engine and its shards and
 * the functions one file calls in another. Every pointer passed is
 * borrowed during the call; nothing here frees what it is given.
 * Single-threaded: all of it runs on the engine's loop.
 */
#ifndef WARRANTD_ENGINE_INT_H
#define WARRANTD_ENGINE_INT_H

#include <ev.h>
#include <stddef.h>
#include <stdint.h>

#include "base/counters.h"
#include "conf/config.h"
#include "core/consumer.h"
#include "core/store.h"
#include "redis/rconn.h"
#include "redis/script.h"
#include "worker/ejob.h"
#include "worker/engine_ops.h"
#include "worker/eops.h"

#define STREAM_ID_MAX 48
#define SENTINEL_TIMEOUT_MS 500	/* per sentinel asked, connect and answer */
#define RECONNECT_MAX_MS 5000	/* the longest wait between Redis connect attempts */
/* A Redis token is refreshed this much more than block_ms before it dies:
 * the blocking connection's AUTH is answered when its read ends, and the
 * token_command or the IdP takes its time too (README "Tokens for Redis"). */
#define REDIS_TOKEN_MARGIN_MS 2000
/* Sentinel, Cluster: the sentinels or the slot map are asked again, and
 * the command connections asked ROLE, this often (disc.h: a deposed
 * primary is left within about this time). */
#define DISC_POLL_MS 2000

/* The verification key and the credentials of one config: replaced whole
 * on reload. */
struct secrets {
	unsigned char *key;
	size_t key_len;
	struct record_key *parsed;	/* key, parsed */
	struct creds *creds;
};

/*
 * One shard (issue 13): its keys (all in one hash-tag slot on a cluster),
 * its connections, its entries in hand and where its reading stands.
 * Without [redis] shards there is exactly one, under the prefix itself.
 * Each has its own R17 episode: a node that is down stops only its shards.
 * `reading`: its stream is in the blocking read outstanding (its own, or
 * the engine's shared one); `blk` is NULL when the engine reads for it.
 */
struct shard {
	struct engine *eng;
	unsigned index, slot;		/* slot: of its keys' hash tag (cluster) */
	struct store_keys keys;
	struct rconn *cmd, *blk;
	struct script_batch *batch;	/* cmd's transitions, batched */
	struct eops eops;		/* what its jobs in hand may use (eops.c) */
	struct ejob_env env;		/* eops_ops on it, and the data they read */
	struct ejobs *jobs;
	int group_ready, reading, own_done, claiming;
	char own_cursor[STREAM_ID_MAX];
	ev_timer kick;			/* R17: back to reading after an error reply */
	unsigned kick_failures;
	int64_t last_read_at, redis_down_since;
	long long outages;
	/* R10: renewals (and heartbeats) Redis refused, in a row; while any
	 * is, renew_retry backs off, and the first heartbeat Redis accepts
	 * again renews everything in hand at once. */
	unsigned renew_failures;
	int writes_refused;
	ev_timer renew_retry;
	/* Issue 38 item 1 (engine_name.c): owned, the name's claim was ours
	 * once; owner_ok, it is ours on this connection (nothing is read
	 * before); owner_first, another holder's claim as first seen. */
	int owned, owner_ok;
	char owner_first[96];
	ev_timer owner_retry;
};

struct engine {
	struct wstats *stats;	/* the console's per-minute buckets (wstats.h) */
	struct ev_loop *loop;
	const struct engine_ops *ops;	/* everything it starts (engine_ops.h) */
	void *opctx;
	struct cfg *cfg;
	struct shard *shards;
	size_t nshards;
	/* Shards on one Redis (no cluster): one blocking read over every
	 * shard's stream, on the engine's own connection, not one per shard. */
	int one_read;
	struct rconn *blk;		/* one_read's; NULL otherwise and after engine_stop */
	int reading;			/* the shared read is outstanding */
	ev_timer read_kick;		/* R17: its error replies, backed off */
	unsigned read_failures;
	struct http_client *http;
	struct webhook *webhook;	/* NULL without [notify] webhook_url */
	struct oauth *oauth;		/* NULL without an [oauth] section */
	int needs_token;		/* some action has auth = oauth */
	int paused_for_token;
	int paused_for_held;		/* §13: held entries fill half the hand */
	int had_token;			/* a token was usable once: a pause now is news */
	long token_timeout_ms;		/* the longest such action's timeout */
	struct script_set scripts;	/* every Lua script of lua/, by store_script_id */
	struct secrets sec;
	struct vpool *vpool;		/* NULL: records are verified inline */

	int draining;
	char instance[33];		/* this process's random id (engine_name.c) */
	size_t releasing;		/* stopping: release replies still to come */
	int released;			/* stopping: the names were given back */
	ev_timer name_stop;		/* engine_stop, out of the reply that found why */
	int exit_status;		/* engine_exit_status: 0, or why the loop broke */
	ev_timer heartbeat, claim, lease, grace, watchdog;
	/* Sentinel, Cluster: where to connect (disc.h), and allow_hosts */
	struct disc *disc;
	struct rtls_ctx *tls;	/* [redis] tls: made at the first connect, kept (R16) */
	char *sentinel_password;
	size_t sentinel_password_len;
	/* [redis] auth: the password or the token of every connection */
	struct rtoken *rt;
	int redis_connected;		/* connect_redis ran (with a token: at the first) */
	int paused_for_redis_token;
	uint64_t redis_gen_given;	/* the Redis token generation the connections were last
					   given (token_redis_refusal_blames) */

	int64_t started_at;
	struct engine_counters n;	/* every shard's jobs count here */
	struct gate *gate;		/* §13: pauses, limits, breakers (all shards') */
	int paused_unreadable;		/* P:paused could not be read: logged once */
};

/* engine.c: what the heartbeat, the gauges and the log show; best-effort
 * writes; the entries in hand and held at the gate over every shard; what
 * a shard's jobs in hand see (eops.h). */
const char *engine_token_state(const struct engine *eng);
long long engine_seconds_until(int64_t at);
long long engine_redis_token_expires_in_s(const struct engine *eng);
const char *engine_redis_token_state(const struct engine *eng);
long long engine_token_expires_in_s(const struct engine *eng);
void engine_ignore_reply(struct rconn *rc, const struct sreply *r, void *arg);
void engine_best_effort(int rc);
size_t engine_in_hand(const struct engine *eng);
size_t engine_held(const struct engine *eng);
void engine_lend_env(struct shard *sh);

/* engine_read.c: reading, claiming and the group. The timer callbacks'
 * data is the shard (kick) or the engine (read_kick, claim). */
void engine_group_gone(struct shard *sh);
void engine_read_all(struct shard *first);
struct consumer_view engine_shard_view(const struct shard *sh);
void engine_back_off_with(struct engine *eng, ev_timer *kick, const char *what,
			  unsigned *failures);
void engine_read_kick_cb(struct ev_loop *loop, ev_timer *w, int revents);
void engine_kick_cb(struct ev_loop *loop, ev_timer *w, int revents);
void engine_read_more(struct shard *sh);
void engine_read_shared(struct engine *eng);
void engine_own_pending_more(struct shard *sh);
void engine_claim_cb(struct ev_loop *loop, ev_timer *w, int revents);
void engine_ensure_group(struct shard *sh);
void engine_reread_own(struct shard *sh);

/* engine_park.c: R6's parked entries queued again when their action goes
 * on, or at their deadline (a claim tick, a change of the pauses). */
void engine_unpark(struct shard *sh);

/* engine_lease.c: renewals, the heartbeat and the pauses. The timer
 * callbacks' data is the shard (renew_retry) or the engine. */
void engine_renew_retry_cb(struct ev_loop *loop, ev_timer *w, int revents);
void engine_renew_shard(struct shard *sh);
void engine_lease_cb(struct ev_loop *loop, ev_timer *w, int revents);
long long engine_total_outages(const struct engine *eng);
void engine_heartbeat_shard(struct shard *sh);
void engine_read_pauses(struct engine *eng);
void engine_heartbeat_cb(struct ev_loop *loop, ev_timer *w, int revents);
void engine_watchdog_cb(struct ev_loop *loop, ev_timer *w, int revents);

/* engine_name.c: the claim of the consumer name. engine_claim_name asks
 * (at every connection, with every heartbeat); engine_name_down: the
 * shard's connection went; engine_release_names: a clean stop's, returns
 * how many replies engine_finish_stop (engine.c) waits for. The timer
 * callbacks' data is the shard (owner_retry) or the engine (name_stop). */
void engine_claim_name(struct shard *sh);
void engine_name_down(struct shard *sh);
size_t engine_release_names(struct engine *eng);
void engine_finish_stop(struct engine *eng);
void engine_name_retry_cb(struct ev_loop *loop, ev_timer *w, int revents);
void engine_name_stop_cb(struct ev_loop *loop, ev_timer *w, int revents);
void engine_check_library(struct shard *sh);

/* engine_auth.c: the worker's token (oauth.h's listener, arg the engine),
 * Redis' (rtoken.h's), and the connections made once; 0 or -1 with err. */
void engine_on_token(void *arg, int have_token);
void engine_on_redis_token(void *arg, const char *secret, int64_t expires_at_ms);
int engine_connect_redis(struct engine *eng, char *err, size_t errlen);

/* engine_ops.c, and the engine's way to its operations (engine_ops.h). */
#define ENGINE_COMMAND_ARGS 16	/* the most engine_command sends */
int engine_command(const struct engine *eng, struct rconn *rc, rconn_reply_cb *cb, void *arg,
		   const char *const *argv)
	__attribute__((warn_unused_result));

static inline int
engine_up(const struct engine *eng, const struct rconn *rc)
{
	return rc != NULL && eng->ops->conn_up(eng->opctx, rc);
}

static inline int
engine_commandv(const struct engine *eng, struct rconn *rc, rconn_reply_cb *cb, void *arg,
		int argc, const char **argv, const size_t *argvlen)
{
	return eng->ops->commandv(eng->opctx, rc, cb, arg, argc, argv, argvlen);
}

static inline int
engine_script(const struct engine *eng, struct rconn *rc, const struct store_args *a,
	      rconn_reply_cb *cb, void *arg)
{
	return eng->ops->script(eng->opctx, rc, &eng->scripts, a, cb, arg);
}

static inline void
engine_timer_start(const struct engine *eng, ev_timer *w, const char *what)
{
	eng->ops->timer_start(eng->opctx, w, what);
}

static inline void
engine_timer_stop(const struct engine *eng, ev_timer *w)
{
	eng->ops->timer_stop(eng->opctx, w);
}

static inline int
engine_timer_active(const struct engine *eng, const ev_timer *w)
{
	return eng->ops->timer_active(eng->opctx, w);
}

static inline int64_t
engine_now_ms(const struct engine *eng)
{
	return eng->ops->now_ms(eng->opctx);
}

static inline void
engine_notify(const struct engine *eng, const char *state)
{
	eng->ops->notify(eng->opctx, state);
}

static inline void
engine_break(const struct engine *eng)
{
	eng->ops->break_loop(eng->opctx);
}

#endif
