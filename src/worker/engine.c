/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * engine: the consumer, the imperative shell around the entries in hand.
 *
 * Two Redis connections: `blk` carries only the blocking XREADGROUP, `cmd`
 * everything else, pipelined. With shards each shard has its own `cmd`; on
 * a single Redis one `blk` reads every shard's stream at once, on a cluster
 * each shard has its own (CROSSSLOT refuses one read over several slots).
 * This file reads entry ids (XREADGROUP, our own PEL, XAUTOCLAIM), promotes
 * scheduled ones, renews leases, writes the heartbeat, follows the worker's
 * token and runs the life cycle; each entry in hand is a struct ejob,
 * carried from admission to release by ejob.c.
 */
#define _DEFAULT_SOURCE
#include "worker/engine.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "redis/cluster.h"
#include "core/consumer.h"
#include "auth/cred.h"
#include "redis/disc.h"
#include "worker/ejob.h"
#include "worker/eops.h"
#include "core/gate.h"
#include "http/http.h"
#include "base/log.h"
#include "auth/oauth.h"
#include "redis/rconn.h"
#include "core/record.h"
#include "base/rnd.h"
#include "auth/rtoken.h"
#include "redis/rtls.h"
#include "redis/script.h"
#include "worker/sdnotify.h"
#include "conf/secrets.h"
#include "redis/sentinel.h"
#include "redis/sreply.h"
#include "core/store.h"
#include "worker/webhook.h"
#include "base/wtime.h"
#include "base/version.h"

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
};

struct engine {
	struct ev_loop *loop;
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
	int had_token;			/* a token was usable once: a pause now is news */
	long token_timeout_ms;		/* the longest such action's timeout */
	struct script_set scripts;	/* every Lua script of lua/, by store_script_id */
	struct secrets sec;
	struct vpool *vpool;		/* NULL: records are verified inline */

	int draining;
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

	int64_t started_at;
	struct engine_counters n;	/* every shard's jobs count here */
	struct gate *gate;		/* §13: pauses, limits, breakers (all shards') */
	int paused_unreadable;		/* P:paused could not be read: logged once */
};

static void read_more(struct shard *sh);
static void own_pending_more(struct shard *sh);
static void maybe_finish_stop(struct engine *eng);
static void ensure_group(struct shard *sh);
static void read_shared(struct engine *eng);

/* ------------------------------------------------------------------ */
/* small helpers                                                        */

/* warrantd(7) §8: with no [oauth] at all, static or no credentials are "valid". */
static const char *
token_state(const struct engine *eng)
{
	return eng->oauth ? oauth_state_name(eng->oauth) : "valid";
}

/* Whole seconds from now to `at` (monotonic ms; 0: none), 0 when past. */
static long long
seconds_until(int64_t at)
{
	int64_t left = at ? at - wtime_mono_ms() : 0;
	return left > 0 ? left / 1000 : 0;
}

static long long
redis_token_expires_in_s(const struct engine *eng)
{
	return seconds_until(eng->rt ? rtoken_expires_at_ms(eng->rt) : 0);
}

static const char *
redis_token_state(const struct engine *eng)
{
	return eng->rt ? rtoken_state_name(eng->rt) : "none";
}

static long long
token_expires_in_s(const struct engine *eng)
{
	return seconds_until(eng->oauth ? oauth_expires_at_ms(eng->oauth) : 0);
}

static void
ignore_reply(struct rconn *rc, const struct sreply *r, void *arg)
{
	(void)rc, (void)r, (void)arg;	/* rconn logs error replies */
}

/* For writes whose loss costs nothing: the next tick sends them again. */
static void
best_effort(int rc)
{
	if (rc < 0)
		log_debug("redis.skipped", "detail=\"not connected\"");
}

/* Entries in hand over every shard: max_in_flight bounds them all. */
static size_t
in_hand(const struct engine *eng)
{
	size_t n = 0;

	for (size_t i = 0; i < eng->nshards; i++)
		n += eng->shards[i].jobs ? ejobs_count(eng->shards[i].jobs) : 0;
	return n;
}

/* §13, R6: entries held at the gate over every shard. */
static size_t
held(const struct engine *eng)
{
	size_t n = 0;

	for (size_t i = 0; i < eng->nshards; i++)
		n += eng->shards[i].jobs ? ejobs_held(eng->shards[i].jobs) : 0;
	return n;
}

/* R14: the shard's stream or group is gone: made again. */
static void
group_gone(struct shard *sh)
{
	sh->group_ready = 0;
	ensure_group(sh);
}

/* Room freed by one shard may be another's to read: each shard that may
 * read does, this one first. */
static void
read_all(struct shard *first)
{
	struct engine *eng = first->eng;

	read_more(first);
	for (size_t i = 0; i < eng->nshards; i++)
		if (&eng->shards[i] != first)
			read_more(&eng->shards[i]);
}

/* An entry left the hand (eops.released). */
static void
job_released(void *arg)
{
	struct shard *sh = arg;

	if (sh->eng->draining)
		maybe_finish_stop(sh->eng);
	else
		read_all(sh);
}

/* ------------------------------------------------------------------ */
/* reading: XREADGROUP, own PEL, claims, promotion                       */

/* R6: entries in hand waiting for a token, over every shard. */
static size_t
waiting_token(const struct engine *eng)
{
	size_t waiting = 0;

	for (size_t i = 0; i < eng->nshards; i++)
		waiting += eng->shards[i].jobs ? ejobs_waiting_token(eng->shards[i].jobs) : 0;
	return waiting;
}

/* What the consumer core (consumer.h) is told of the worker as a whole. */
static struct consumer_view
worker_view(const struct engine *eng)
{
	return (struct consumer_view){
		.max_in_flight = eng->cfg->daemon.max_in_flight, .batch = eng->cfg->redis.batch,
		.in_hand = (long)in_hand(eng), .draining = eng->draining,
		.tokens_usable = creds_tokens_usable(eng->sec.creds),
		.waiting_token = (long)waiting_token(eng),
		.held = (long)held(eng), .queue_paused = gate_paused(eng->gate, NULL),
	};
}

/* ... and of the shared read, over every shard's stream (consumer.h). */
static struct consumer_view
shared_view(const struct engine *eng)
{
	struct consumer_view v = worker_view(eng);

	v.group_ready = v.own_done = v.cmd_up = 1;	/* each stream's own: stream_ready */
	v.blk_up = rconn_is_up(eng->blk);
	v.reading = eng->reading;
	v.backing_off = ev_is_active(&eng->read_kick);
	return v;
}

/* ... and of one shard. */
static struct consumer_view
shard_view(const struct shard *sh)
{
	const struct engine *eng = sh->eng;
	struct consumer_view v = worker_view(eng);

	v.group_ready = sh->group_ready;
	v.own_done = sh->own_done;
	v.cmd_up = rconn_is_up(sh->cmd);
	v.blk_up = sh->blk != NULL && rconn_is_up(sh->blk);
	v.reading = sh->reading;
	v.claiming = sh->claiming;
	v.backing_off = ev_is_active(&sh->kick);
	return v;
}

static long
capacity(const struct engine *eng)
{
	struct consumer_view v = worker_view(eng);

	return consumer_room(&v);
}

/* R17: an error reply on the reading path (XREADGROUP, our PEL, XGROUP):
 * come back with backoff, never at once. rconn has logged it. */
static void
back_off_with(struct engine *eng, ev_timer *kick, unsigned *failures)
{
	if (*failures < 64)
		(*failures)++;
	int64_t delay = consumer_retry_ms(*failures, rnd_u64());

	ev_timer_stop(eng->loop, kick);
	ev_timer_set(kick, (double)delay / 1000.0, 0.0);
	ev_timer_start(eng->loop, kick);
}

static void
back_off(struct shard *sh)
{
	back_off_with(sh->eng, &sh->kick, &sh->kick_failures);
}

/* The shared read's error replies have one episode of their own: on one
 * Redis they concern every shard alike. */
static void
read_kick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop, (void)revents;
	read_shared(w->data);
}

static void
kick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct shard *sh = w->data;
	(void)loop, (void)revents;

	if (!sh->group_ready)
		ensure_group(sh);
	else
		read_more(sh);
}

/* A reply that is not an error: the reading path works again. */
static void
read_path_ok(struct shard *sh)
{
	sh->kick_failures = 0;
}

/* sreply_entry_cb: an entry delivered to us is taken in hand. */
static void
admit(void *arg, const struct sreply_entry *e)
{
	struct shard *sh = arg;

	ejobs_admit(sh->jobs, e->stream_id, e->id, e->deliveries, e->traceparent);
	/* R10's renewals run while something is in hand (lease_cb stops them) */
	if (!ev_is_active(&sh->eng->lease))
		ev_timer_start(sh->eng->loop, &sh->eng->lease);
}

/* sreply_id_cb: R11, an entry deleted while pending is a dead letter. */
static void
dead_deleted(void *arg, const char *stream_id)
{
	struct shard *sh = arg;

	if (ejobs_dead_deleted(sh->jobs, stream_id) < 0)
		log_error("job.admit", "stream_id=%s error=\"out of memory\"", LOG_Q(stream_id));
}

static void
after_read(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct shard *sh = arg;
	(void)rc;

	sh->reading = 0;
	/* LOST: the connection went, on_blk_state reads again */
	enum consumer_err c = rconn_err_class(r);
	unsigned next = consumer_reply_next(CONSUMER_STEP_READ, c,
	    c != CONSUMER_ERR_LOST && sreply_read(r, admit, sh) >= 0);
	if (next & CONSUMER_DO_GROUP)
		group_gone(sh);
	if (next & CONSUMER_DO_BACKOFF)
		back_off(sh);
	if (!(next & CONSUMER_DO_OK))
		return;
	read_path_ok(sh);
	sh->last_read_at = wtime_now_ms();
	read_more(sh);
}

/* R18: one stream's share of the room (consumer.h). */
static long
read_count(const struct engine *eng, size_t streams)
{
	struct consumer_view v = worker_view(eng);

	return consumer_read_count(&v, streams);
}

/* R6, R14, R17: consumer_may_read, for a shard with a read of its own. */
static int
may_read(const struct shard *sh)
{
	struct consumer_view v = shard_view(sh);

	return consumer_may_read(&v);
}

/* The shared read: whether a shard's stream goes into it (consumer.h). */
static int
stream_ready(const struct shard *sh)
{
	struct consumer_view v = shard_view(sh);

	return consumer_stream_ready(&v);
}

/* ... and whether the shared read waits for it. */
static int
stream_coming(const struct shard *sh)
{
	struct consumer_view v = shard_view(sh);

	return consumer_stream_coming(&v);
}

/* R6: with no usable token, read nothing new: entries stay undelivered for
 * healthy consumers. Logged once per pause. */
static int
token_blocks_reading(struct engine *eng)
{
	/* R20: nor without a good Redis credential: what it read it could
	 * not complete. */
	int redis_blocked = eng->rt != NULL && !rtoken_usable(eng->rt, wtime_mono_ms());

	if (redis_blocked != eng->paused_for_redis_token) {
		eng->paused_for_redis_token = redis_blocked;
		if (redis_blocked)
			log_warn("consumer.paused", "reason=no-redis-token redis_token_state=%s",
			    redis_token_state(eng));
		else
			log_info("consumer.resumed", "redis_token_state=%s", redis_token_state(eng));
	}
	if (redis_blocked)
		return 1;
	struct consumer_view v = worker_view(eng);
	int blocked = !consumer_tokens_let_read(&v);

	if (blocked != eng->paused_for_token) {
		eng->paused_for_token = blocked;
		/* At start no token is held yet: that is no warning. */
		if (blocked && eng->had_token)
			log_warn("consumer.paused", "reason=no-token token_state=%s", token_state(eng));
		else if (blocked)
			log_info("consumer.paused", "reason=no-token token_state=%s", token_state(eng));
		else
			log_info("consumer.resumed", "token_state=%s", token_state(eng));
	}
	eng->had_token |= !blocked;
	return blocked;
}

static void
read_more(struct shard *sh)
{
	struct engine *eng = sh->eng;

	if (!sh->own_done) {
		own_pending_more(sh);	/* R14: ours, with a token or without */
		return;
	}
	if (token_blocks_reading(eng))
		return;
	if (eng->one_read) {
		read_shared(eng);
		return;
	}
	if (!may_read(sh))
		return;
	char count[24], block[24];
	snprintf(count, sizeof count, "%ld", read_count(eng, eng->nshards));
	snprintf(block, sizeof block, "%ld", eng->cfg->redis.block_ms);
	const char *argv[] = {"XREADGROUP", "GROUP", eng->cfg->redis.group,
	    eng->cfg->daemon.consumer, "COUNT", count, "BLOCK", block, "STREAMS",
	    sh->keys.jobs, ">"};
	size_t len[11];
	for (int i = 0; i < 11; i++)
		len[i] = strlen(argv[i]);
	if (rconn_commandv(sh->blk, after_read, sh, 11, argv, len) == 0)
		sh->reading = 1;
}

/* sreply_entry_cb of the shared read: the entry goes to the shard whose
 * stream it came from. */
static void
admit_to_shard(void *arg, const struct sreply_entry *e)
{
	struct engine *eng = arg;

	for (size_t i = 0; e->stream != NULL && i < eng->nshards; i++)
		if (strcmp(eng->shards[i].keys.jobs, e->stream) == 0) {
			admit(&eng->shards[i], e);
			return;
		}
	/* Redis answers only for the streams asked for; were it otherwise,
	 * the entry would stay in our PEL for the next scan of it (R14). */
	log_warn("job.admit", "stream_id=%s error=\"from a stream not read\"",
	    LOG_Q(e->stream_id));
}

/* The shards whose streams were in the shared read: it is over for them. */
static void
shared_read_over(struct engine *eng, int ok)
{
	eng->reading = 0;
	for (size_t i = 0; i < eng->nshards; i++) {
		struct shard *sh = &eng->shards[i];
		if (!sh->reading)
			continue;
		sh->reading = 0;
		if (ok) {
			read_path_ok(sh);
			sh->last_read_at = wtime_now_ms();
		}
	}
}

/* The shard whose stream a NOGROUP names (consumer_nogroup_key), or NULL
 * when the text does not say. */
static struct shard *
nogroup_shard(struct engine *eng, const char *text)
{
	size_t n = 0;
	const char *key = consumer_nogroup_key(text, &n);

	for (size_t i = 0; key != NULL && i < eng->nshards; i++)
		if (strlen(eng->shards[i].keys.jobs) == n &&
		    memcmp(eng->shards[i].keys.jobs, key, n) == 0)
			return &eng->shards[i];
	return NULL;
}

static void
after_shared_read(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct engine *eng = arg;
	(void)rc;

	/* LOST: the connection went, on_shared_blk_state reads again */
	enum consumer_err c = rconn_err_class(r);
	unsigned next = consumer_reply_next(CONSUMER_STEP_READ, c,
	    c != CONSUMER_ERR_LOST && sreply_read(r, admit_to_shard, eng) >= 0);
	if (next & CONSUMER_DO_GROUP) {
		/* Some stream or group is gone: the one the error names
		 * (nogroup_shard), else each group read (BUSYGROUP is fine). */
		struct shard *gone = nogroup_shard(eng, sreply_error_text(r));
		for (size_t i = 0; i < eng->nshards; i++)
			if (eng->shards[i].reading && (gone == NULL || gone == &eng->shards[i]))
				group_gone(&eng->shards[i]);
	}
	if (!(next & CONSUMER_DO_OK)) {
		shared_read_over(eng, 0);
		if (next & CONSUMER_DO_BACKOFF)
			back_off_with(eng, &eng->read_kick, &eng->read_failures);
		return;
	}
	eng->read_failures = 0;
	shared_read_over(eng, 1);
	read_shared(eng);
}

/* One XREADGROUP over the stream of every shard ready to read (a single
 * Redis allows it), so a worker holds one blocking connection, not N. */
static void
read_shared(struct engine *eng)
{
	const char *argv[9 + 2 * SHARD_MAX];
	struct consumer_view v = shared_view(eng);
	size_t n = 0;

	if (token_blocks_reading(eng) || !consumer_may_read(&v))
		return;
	for (size_t i = 0; i < eng->nshards; i++) {
		if (stream_coming(&eng->shards[i]))
			return;
		n += stream_ready(&eng->shards[i]);
	}
	if (n == 0)
		return;
	char count[24], block[24];
	snprintf(count, sizeof count, "%ld", read_count(eng, n));
	snprintf(block, sizeof block, "%ld", eng->cfg->redis.block_ms);
	const char *head[] = {"XREADGROUP", "GROUP", eng->cfg->redis.group,
	    eng->cfg->daemon.consumer, "COUNT", count, "BLOCK", block, "STREAMS"};
	int argc = 0;
	for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
		argv[argc++] = head[i];
	for (size_t i = 0; i < eng->nshards; i++)
		if (stream_ready(&eng->shards[i]))
			argv[argc++] = eng->shards[i].keys.jobs;
	for (size_t i = 0; i < n; i++)
		argv[argc++] = ">";
	if (rconn_commandv(eng->blk, after_shared_read, eng, argc, argv, NULL) < 0)
		return;
	eng->reading = 1;
	for (size_t i = 0; i < eng->nshards; i++)
		eng->shards[i].reading = stream_ready(&eng->shards[i]);
}

static void
after_own(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct shard *sh = arg;
	struct engine *eng = sh->eng;
	(void)rc;

	char next[STREAM_ID_MAX];

	sh->claiming = 0;
	/* LOST: retried when the connection is back */
	enum consumer_err c = rconn_err_class(r);
	unsigned act = consumer_reply_next(CONSUMER_STEP_OWN, c, c != CONSUMER_ERR_LOST &&
	    sreply_claim(r, next, sizeof next, admit, dead_deleted, sh) >= 0);
	if (act & CONSUMER_DO_GROUP)
		group_gone(sh);
	if (act & CONSUMER_DO_BACKOFF)
		back_off(sh);
	if (!(act & CONSUMER_DO_OK))
		return;
	read_path_ok(sh);
	if (strcmp(next, "0-0") != 0) {
		snprintf(sh->own_cursor, sizeof sh->own_cursor, "%s", next);
	} else {
		sh->own_done = 1;
		log_info("consumer.ready", "consumer=%s group=%s stream=%s in_hand=%zu",
		    eng->cfg->daemon.consumer, eng->cfg->redis.group, sh->keys.jobs,
		    ejobs_count(sh->jobs));
		/* With shards: the first shard ready makes the worker ready; a
		 * node that is down holds up only its own shards, not the start
		 * (systemd would give up on it after TimeoutStartSec). */
		sdnotify_send("READY=1\nSTATUS=consuming");
	}
	read_more(sh);
}

/* The claim script (store.c) in one of its modes, for as many entries as
 * there is room for; one claim at a time. */
static void
send_claim(struct shard *sh, const char *mode, const char *start, rconn_reply_cb *cb)
{
	struct engine *eng = sh->eng;
	char count[24], calls[24];
	long room = capacity(eng);
	snprintf(count, sizeof count, "%ld", room);
	snprintf(calls, sizeof calls, "%ld", consumer_claim_calls(room));
	struct store_args a;
	store_args_init(&a, STORE_CLAIM);
	store_args_consumer(&a, &sh->keys, eng->cfg->redis.group, eng->cfg->daemon.consumer);
	store_arg(&a, STORE_CLAIM_CONSUMERS, sh->keys.consumers);
	store_arg(&a, STORE_CLAIM_CLOCK, sh->keys.clock);
	store_arg(&a, STORE_CLAIM_MODE, mode);
	store_arg_ll(&a, STORE_CLAIM_CLAIM_IDLE_MS, eng->cfg->redis.claim_idle_ms);
	store_arg_ll(&a, STORE_CLAIM_HEARTBEAT_MS, eng->cfg->daemon.heartbeat_ms);
	store_arg_ll(&a, STORE_CLAIM_FORGOTTEN_MS,
	    consumer_forgotten_ms(eng->cfg->redis.lease_renew_ms));
	store_arg(&a, STORE_CLAIM_START, start);
	store_arg(&a, STORE_CLAIM_COUNT, count);
	store_arg(&a, STORE_CLAIM_CALLS, calls);
	if (script_send(sh->cmd, &eng->scripts, &a, cb, sh) == 0)
		sh->claiming = 1;
}

/* R14: our own pending entries first, as far as there is room. */
static void
own_pending_more(struct shard *sh)
{
	struct consumer_view v = shard_view(sh);

	if (consumer_next_claim(&v, 0) == CONSUMER_CLAIM_OWN)
		send_claim(sh, "own", sh->own_cursor, after_own);
}

static void
after_autoclaim(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct shard *sh = arg;
	struct engine *eng = sh->eng;
	(void)rc;

	size_t before = ejobs_count(sh->jobs);
	char next[STREAM_ID_MAX];

	sh->claiming = 0;
	enum consumer_err c = rconn_err_class(r);
	unsigned act = consumer_reply_next(CONSUMER_STEP_AUTO, c, c != CONSUMER_ERR_LOST &&
	    sreply_claim(r, next, sizeof next, admit, dead_deleted, sh) >= 0);
	if (act & CONSUMER_DO_GROUP)
		group_gone(sh);
	if (!(act & CONSUMER_DO_OK))
		return;	/* the next tick tries again */
	size_t after = ejobs_count(sh->jobs);
	if (after > before) {
		eng->n.claimed += (long long)(after - before);
		log_info("consumer.claimed", "count=%zu", after - before);
	}
}

/* §5: the schedule holds something (the probe below answered): promote
 * the due ids; every worker may, the script makes each promotion happen
 * once, by Redis' own clock. */
static void
after_schedule_probe(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct shard *sh = arg;
	struct engine *eng = sh->eng;
	struct store_args a;
	size_t n = 0;

	if (r == NULL || sreply_array_len(r, &n) < 0 || n == 0)
		return;
	store_args_init(&a, STORE_PROMOTE);
	store_arg(&a, STORE_PROMOTE_SCHEDULED, sh->keys.scheduled);
	store_arg(&a, STORE_PROMOTE_JOBS, sh->keys.jobs);
	store_arg_ll(&a, STORE_PROMOTE_LIMIT, eng->cfg->redis.batch);
	best_effort(script_send(rc, &eng->scripts, &a, ignore_reply, NULL));
}

/* Issue 27 item 5: the script names P:scheduled, which does not exist once
 * empty, and a call naming a missing key stalls (-TRYAGAIN) while its slot
 * migrates: so it runs only when a one-key read found the schedule holds
 * an id. */
static void
promote_due(struct shard *sh)
{
	best_effort(rconn_command(sh->cmd, after_schedule_probe, sh,
	    "ZRANGEBYSCORE %s -inf +inf LIMIT 0 1", sh->keys.scheduled));
}

/* §2: P:jobs is trimmed below the oldest entry some group has not been
 * delivered or still holds pending; once per claim interval. */
static void
trim_jobs(struct shard *sh)
{
	struct engine *eng = sh->eng;
	struct store_args a;

	store_args_init(&a, STORE_TRIM);
	store_arg(&a, STORE_TRIM_JOBS, sh->keys.jobs);
	best_effort(script_send(sh->cmd, &eng->scripts, &a, ignore_reply, NULL));
}

static void
claim_shard(struct shard *sh)
{
	struct engine *eng = sh->eng;

	if (!sh->group_ready || !rconn_is_up(sh->cmd) || eng->draining)
		return;
	promote_due(sh);
	trim_jobs(sh);
	/* A PEL scan that a reconnect restarted while a claim was on its way
	 * is taken up here, at the latest: with one read over every shard,
	 * the read waits for it. Whether an owner is gone is the script's
	 * judgement (R11), by Redis' clock: no local timer stands in for it. */
	struct consumer_view v = shard_view(sh);
	switch (consumer_next_claim(&v, 1)) {
	case CONSUMER_CLAIM_OWN: send_claim(sh, "own", sh->own_cursor, after_own); break;
	case CONSUMER_CLAIM_AUTO: send_claim(sh, "auto", "0", after_autoclaim); break;
	case CONSUMER_CLAIM_NONE: break;
	}
}

static void
claim_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct engine *eng = w->data;
	(void)loop, (void)revents;

	for (size_t i = 0; i < eng->nshards; i++)
		claim_shard(&eng->shards[i]);
}

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

static void renew_shard(struct shard *sh);

/* R10: a renewal (or a heartbeat) that Redis refused is tried again with
 * backoff, never in a tight loop, and never left to the next lease tick. */
static void
renew_refused(struct shard *sh)
{
	sh->writes_refused = 1;
	back_off_with(sh->eng, &sh->renew_retry, &sh->renew_failures);
}

static void
renew_retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop, (void)revents;
	renew_shard(w->data);
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
		group_gone(sh);
	if (act & CONSUMER_DO_BACKOFF)
		renew_refused(sh);
	if (act & CONSUMER_DO_OK)
		sh->renew_failures = 0;
}

static void
renew_shard(struct shard *sh)
{
	struct engine *eng = sh->eng;

	ev_timer_stop(eng->loop, &sh->renew_retry);
	if (!rconn_is_up(sh->cmd) || ejobs_count(sh->jobs) == 0)
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
		best_effort(script_send(sh->cmd, &eng->scripts, &a, after_renew, sh));
	free(ids);
}

static void
lease_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct engine *eng = w->data;

	(void)revents;
	/* Nothing in hand, nothing to renew: an idle worker does not wake for
	 * it (issue 10); admit() starts the timer again. */
	if (in_hand(eng) == 0) {
		ev_timer_stop(loop, w);
		return;
	}
	for (size_t i = 0; i < eng->nshards; i++)
		renew_shard(&eng->shards[i]);
}

/* ------------------------------------------------------------------ */
/* the group, the connections, the heartbeat                            */

static void
after_group(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct shard *sh = arg;
	(void)rc;

	/* LOST: retried on reconnect; BACKOFF: kick_cb asks again */
	unsigned act = consumer_reply_next(CONSUMER_STEP_GROUP, rconn_err_class(r), 1);
	if (act & CONSUMER_DO_BACKOFF)
		back_off(sh);
	if (!(act & CONSUMER_DO_OK))
		return;
	if (!sh->group_ready)
		log_info("consumer.group", "stream=%s group=%s", sh->keys.jobs,
		    sh->eng->cfg->redis.group);
	sh->group_ready = 1;
	read_more(sh);
}

/* The scripts and the liveness rule need Redis 7.0 (the Lua of 6.2 lacks
 * what they use; XAUTOCLAIM's deleted-entry list is 7.0's): a worker on an
 * older server would fail job by job, so it stops at once, saying why. An
 * error reply says nothing about the version: the other steps report it. */
static void
after_version(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct shard *sh = arg;
	int major = 0, minor = 0, v;
	(void)rc;

	if (r == NULL || (v = sreply_redis_version(r, &major, &minor)) < 0 ||
	    (v == 0 && major >= 7))
		return;
	if (v == 1)
		log_error("redis.too_old", "stream=%s need=7.0 detail=\"the server is older than "
		    "Redis 7.0; upgrade it\"", sh->keys.jobs);
	else
		log_error("redis.too_old", "stream=%s version=%d.%d need=7.0 detail=\"upgrade the "
		    "server\"", sh->keys.jobs, major, minor);
	sh->eng->exit_status = EX_UNAVAILABLE;
	ev_break(sh->eng->loop, EVBREAK_ALL);
}

/* R14: created at id 0 with MKSTREAM, so entries written before the first
 * worker started are processed. The server's version is asked first (EVAL,
 * which the worker's ACL user has, unlike INFO). */
static void
ensure_group(struct shard *sh)
{
	if (!rconn_is_up(sh->cmd))
		return;
	best_effort(rconn_command(sh->cmd, after_version, sh,
	    "EVAL %s 0", "return redis.REDIS_VERSION or ''"));
	best_effort(rconn_command(sh->cmd, after_group, sh, "XGROUP CREATE %s %s 0 MKSTREAM",
	    sh->keys.jobs, sh->eng->cfg->redis.group));
}


/* §8: a worker with a token and room that has read nothing for a long time
 * while the group has undelivered entries is stuck, and says so. */
static void
after_lag(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct shard *sh = arg;
	struct engine *eng = sh->eng;
	(void)rc;

	long long lag = sreply_group_lag(r, eng->cfg->redis.group);
	if (lag > 0)
		log_warn("consumer.stalled", "stream=%s lag=%lld last_read_ms_ago=%" PRId64
		    " token_state=%s in_hand=%zu", sh->keys.jobs, lag,
		    wtime_now_ms() - sh->last_read_at, token_state(eng), ejobs_count(sh->jobs));
}

static void
check_stalled(struct shard *sh)
{
	struct engine *eng = sh->eng;
	int64_t quiet = wtime_now_ms() - (sh->last_read_at ? sh->last_read_at : eng->started_at);
	struct consumer_view v = shard_view(sh);

	if (!consumer_check_stall(&v, quiet, eng->cfg->redis.block_ms,
	    eng->cfg->daemon.heartbeat_ms))
		return;
	best_effort(rconn_command(sh->cmd, after_lag, sh, "XINFO GROUPS %s", sh->keys.jobs));
}

#define HB_FIELDS	(12 + 32)	/* fixed fields + room for counter_fields */

static long long
total_outages(const struct engine *eng)
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
		renew_shard(sh);
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
	best_effort(script_send(sh->cmd, &sh->eng->scripts, &a, after_beat, sh));
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
		snprintf(secs[i], sizeof secs[i], "%lld", seconds_until(sc[i].expires_at_ms));
		argv[argc++] = names[i][0];
		argv[argc++] = sc[i].state;
		argv[argc++] = names[i][1];
		argv[argc++] = secs[i];
	}
	best_effort(rconn_commandv(sh->cmd, ignore_reply, NULL, argc, argv, NULL));
}

static void
heartbeat_shard(struct shard *sh)
{
	struct engine *eng = sh->eng;
	char host[256] = "", pid[16], started[WTIME_RFC3339_LEN], now[WTIME_RFC3339_LEN];
	char last_read[WTIME_RFC3339_LEN] = "", in_flight[24], expires[24], rexpires[24];
	char paused[256];
	char nums[HB_FIELDS][24];
	const char *argv[2 + 2 * HB_FIELDS];
	int argc = 0, k = 0;

	if (!rconn_is_up(sh->cmd))
		return;
	beat_shard(sh);
	gethostname(host, sizeof host - 1);
	if (sh->last_read_at)
		wtime_format_rfc3339(sh->last_read_at, last_read, sizeof last_read);
	snprintf(pid, sizeof pid, "%d", (int)getpid());
	snprintf(in_flight, sizeof in_flight, "%zu", ejobs_count(sh->jobs));
	snprintf(expires, sizeof expires, "%lld", token_expires_in_s(eng));
	snprintf(rexpires, sizeof rexpires, "%lld", redis_token_expires_in_s(eng));
	eng->n.redis_auth_refreshes = eng->rt ? rtoken_refreshes(eng->rt) : 0;
	eng->n.token_refreshes = eng->oauth ? oauth_refreshes(eng->oauth) : 0;
	eng->n.redis_outages = total_outages(eng);
	gate_paused_list(eng->gate, paused, sizeof paused);
	const char *fixed[] = {"host", host, "pid", pid, "version", WARRANTD_VERSION,
	    "startedAt", wtime_format_rfc3339(eng->started_at, started, sizeof started),
	    "heartbeatAt", wtime_format_rfc3339(wtime_now_ms(), now, sizeof now),
	    "lastReadAt", last_read, "inFlight", in_flight, "tokenState", token_state(eng),
	    "tokenExpiresIn", expires, "redisTokenState", redis_token_state(eng),
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
	best_effort(rconn_commandv(sh->cmd, ignore_reply, NULL, argc, argv, NULL));
	heartbeat_scopes(sh);
	best_effort(rconn_command(sh->cmd, ignore_reply, NULL, "PEXPIRE %s %ld", sh->keys.consumer,
	    3 * eng->cfg->daemon.heartbeat_ms));
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
	for (size_t i = 0; i < eng->nshards; i++)
		ejobs_gate_wake(eng->shards[i].jobs);
	if (!eng->draining)
		read_all(&eng->shards[0]);
}

static void
read_pauses(struct engine *eng)
{
	struct shard *sh = &eng->shards[0];

	if (rconn_is_up(sh->cmd))
		best_effort(rconn_command(sh->cmd, after_paused, eng, "HGETALL %s",
		    sh->keys.paused));
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

static void
heartbeat_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct engine *eng = w->data;
	(void)loop, (void)revents;

	for (size_t i = 0; i < eng->nshards; i++)
		heartbeat_shard(&eng->shards[i]);
	read_pauses(eng);
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
	struct shard *sh = arg;
	(void)rc;

	if (!up) {
		if (!sh->redis_down_since) {
			sh->redis_down_since = wtime_now_ms();
			sh->outages++;
			sdnotify_send("STATUS=redis unreachable, reconnecting");
		}
		sh->claiming = 0;
		return;
	}
	if (sh->redis_down_since) {
		log_info("redis.recovered", "stream=%s down_ms=%" PRId64, sh->keys.jobs,
		    wtime_now_ms() - sh->redis_down_since);
		sh->redis_down_since = 0;
		sdnotify_send("STATUS=consuming");
	}
	/* Our own leases at once: the outage aged them too. And what waited
	 * on Redis goes out now, not a backoff later. */
	renew_shard(sh);
	ejobs_redis_up(sh->jobs);
	/* Entries whose XREADGROUP reply was lost with the connection are in
	 * our PEL but not in hand: scan it again (admit skips known ones). */
	sh->own_done = 0;
	snprintf(sh->own_cursor, sizeof sh->own_cursor, "0");
	/* Writes that failed while down are retried by their own timers. The
	 * heartbeat goes before the scan of our PEL that the group's reply
	 * starts: Redis sees us alive before we take our entries back. The
	 * pauses go first too: no job loaded after them starts unseen. */
	heartbeat_shard(sh);
	if (sh->index == 0)
		read_pauses(sh->eng);
	ensure_group(sh);
}

/* A read whose reply died with the connection left entries in our PEL
 * that we never saw: the shard reads its PEL again before new entries. */
static void
reread_own(struct shard *sh)
{
	sh->own_done = 0;
	snprintf(sh->own_cursor, sizeof sh->own_cursor, "0");
	read_more(sh);
}

static void
on_blk_state(struct rconn *rc, int up, void *arg)
{
	struct shard *sh = arg;
	(void)rc;

	if (!up)
		sh->reading = 0;
	else
		reread_own(sh);
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
		reread_own(&eng->shards[i]);
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
	int64_t life = oauth_expires_at_ms(eng->oauth) - wtime_mono_ms();
	if (eng->needs_token && life <= eng->token_timeout_ms + 1000)
		log_warn("token.too_short", "expires_in_ms=%" PRId64 " action_timeout_ms=%ld "
		    "detail=\"R6 needs more than the action timeout plus 1 s: no call can start\"",
		    life, eng->token_timeout_ms);
	for (size_t i = 0; i < eng->nshards; i++)
		ejobs_token_ready(eng->shards[i].jobs);
	for (size_t i = 0; i < eng->nshards; i++)
		read_more(&eng->shards[i]);
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
	struct creds_ctx ctx = {eng->loop, eng->http, eng->oauth, on_token, eng};
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
static void
lend_env(struct shard *sh)
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
	sh->env.ops = &eops_ops;
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
		lend_env(&eng->shards[i]);
}

/* ------------------------------------------------------------------ */
/* life cycle                                                           */

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
		.host = cfg->redis.socket == NULL ? cfg->redis.host : NULL,
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

static int connect_redis(struct engine *eng, char *err, size_t errlen);

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
			if (all[k] != NULL && rconn_reauth(all[k], secret, expires_at_ms) < 0)
				log_warn("redis.reauth_failed", "err=\"out of memory\"");
	}
}

/* A Redis token arrived: the first one makes the connections; each later
 * one re-authenticates every live connection on itself (AUTH queued in
 * order: no read or pipeline is dropped). A token lost stops new reads
 * (token_blocks_reading). */
static void
on_redis_token(void *arg, const char *secret, int64_t expires_at_ms)
{
	struct engine *eng = arg;
	char err[256];

	log_info("redis.token_state", "state=%s have_token=%d", redis_token_state(eng),
	    secret != NULL);
	if (eng->started_at == 0)
		return;
	if (secret == NULL) {	/* said now, not at the next read (R20: no new reads) */
		for (size_t i = 0; i < eng->nshards && eng->redis_connected; i++)
			read_more(&eng->shards[i]);
		return;
	}
	if (!eng->redis_connected) {
		if (connect_redis(eng, err, sizeof err) < 0) {
			log_error("engine.start", "error=%s", LOG_Q(err));
			ev_break(eng->loop, EVBREAK_ALL);
		}
		return;
	}
	reauth_all(eng, secret, expires_at_ms);
	/* R20: the writes held meanwhile go after the AUTH just queued, each
	 * entry reclaimed to us first */
	for (size_t i = 0; i < eng->nshards; i++)
		ejobs_redis_auth_ready(eng->shards[i].jobs);
	for (size_t i = 0; i < eng->nshards; i++)
		read_more(&eng->shards[i]);
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
		    LOG_Q(kind), ok < 0, redis_token_state(eng));
	else
		log_warn("redis.auth_refused", "kind=%s stale=%d redis_token_state=%s",
		    LOG_Q(kind), ok < 0, redis_token_state(eng));
	/* a command sent before its connection's latest AUTH met an older
	 * token: the newest is not to blame */
	if (as == CONSUMER_AS_RENEW) {
		/* R20: the refused writes are held until the new token is in
		 * (a static password has none coming: R17's retries) */
		for (size_t i = 0; i < eng->nshards; i++)
			ejobs_redis_auth_lost(eng->shards[i].jobs);
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
	sh->cmd = rconn_new(sh->eng->loop, &o, name, on_cmd_state, sh);
	if (sh->cmd == NULL || (sh->batch = script_batch_new(sh->eng->loop, sh->cmd,
	    &sh->eng->scripts)) == NULL)
		return -1;
	lend_env(sh);
	if (sh->eng->one_read)
		return 0;
	o.command_timeout_ms = cfg->redis.block_ms + 5000;
	snprintf(name, sizeof name, cfg->redis.shards ? "read.%u" : "read", sh->index);
	sh->blk = rconn_new(sh->eng->loop, &o, name, on_blk_state, sh);
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
	eng->blk = rconn_new(eng->loop, &o, "read", on_shared_blk_state, eng);
	return eng->blk ? 0 : -1;
}

static int
connect_redis(struct engine *eng, char *err, size_t errlen)
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

	init_timer(eng, &eng->heartbeat, heartbeat_cb, cfg->daemon.heartbeat_ms);
	init_timer(eng, &eng->claim, claim_cb, cfg->redis.claim_interval_ms);
	init_timer(eng, &eng->lease, lease_cb, cfg->redis.lease_renew_ms);
	/* started only under WatchdogSec (engine start) */
	init_timer(eng, &eng->watchdog, watchdog_cb, wd_ms > 1 ? wd_ms / 2 : 1000);
	ev_init(&eng->read_kick, read_kick_cb);
	eng->read_kick.data = eng;
}

/* R16: a periodic timer whose interval changed takes the new one now. */
static void
rearm(struct engine *eng, ev_timer *t, long old_ms, long new_ms)
{
	if (old_ms == new_ms)
		return;
	ev_timer_set(t, (double)new_ms / 1000.0, (double)new_ms / 1000.0);
	if (ev_is_active(t) || !eng->draining) {
		ev_timer_stop(eng->loop, t);
		ev_timer_start(eng->loop, t);
	}
}

static void
rearm_timers(struct engine *eng, const struct cfg *old, const struct cfg *cfg)
{
	/* The watchdog's pace is systemd's (WATCHDOG_USEC), not the config's. */
	rearm(eng, &eng->heartbeat, old->daemon.heartbeat_ms, cfg->daemon.heartbeat_ms);
	rearm(eng, &eng->lease, old->redis.lease_renew_ms, cfg->redis.lease_renew_ms);
	if (!eng->draining)
		rearm(eng, &eng->claim, old->redis.claim_interval_ms,
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
	ev_init(&sh->kick, kick_cb);
	sh->kick.data = sh;
	ev_init(&sh->renew_retry, renew_retry_cb);
	sh->renew_retry.data = sh;
	lend_env(sh);
	if ((sh->jobs = ejobs_new(&sh->env)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

struct engine *
engine_new(struct ev_loop *loop, struct cfg *cfg, char *err, size_t errlen)
{
	struct engine *eng = calloc(1, sizeof *eng);

	if (eng == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	eng->loop = loop;
	eng->cfg = cfg;
	script_set_init(&eng->scripts);
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
		oauth_count_failures_into(eng->oauth, &eng->n.idp_failures);
	}
	if (load_secrets(eng, cfg, &eng->sec, err, errlen) < 0)
		goto fail;
	eng->rt = rtoken_new(loop, eng->http, cfg, cfg->redis.block_ms + REDIS_TOKEN_MARGIN_MS,
	    err, errlen);
	if (eng->rt == NULL)
		goto fail;
	rtoken_set_listener(eng->rt, on_redis_token, eng);
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

	eng->started_at = wtime_now_ms();
	rtoken_start(eng->rt);
	/* With a token, the connections are made when the first one arrives
	 * (on_redis_token): a connection without AUTH would only be refused. */
	if (rtoken_is_static(eng->rt) && connect_redis(eng, err, sizeof err) < 0) {
		log_error("engine.start", "error=%s", LOG_Q(err));
		eng->exit_status = EX_UNAVAILABLE;
		ev_break(eng->loop, EVBREAK_ALL);
		return;
	}
	if (eng->oauth)
		oauth_start(eng->oauth);
	creds_start(eng->sec.creds);
	ev_timer_start(eng->loop, &eng->heartbeat);
	ev_timer_start(eng->loop, &eng->claim);
	ev_timer_start(eng->loop, &eng->lease);
	/* Without WatchdogSec nobody listens: an idle worker wakes for its
	 * heartbeat and its blocking read only (issue 10). */
	if (sdnotify_watchdog_ms() > 1)
		ev_timer_start(eng->loop, &eng->watchdog);
	for (size_t i = 0; i < eng->nshards; i++)
		log_info("engine.start", "consumer=%s group=%s stream=%s max_in_flight=%ld",
		    eng->cfg->daemon.consumer, eng->cfg->redis.group, eng->shards[i].keys.jobs,
		    eng->cfg->daemon.max_in_flight);
}

static void
maybe_finish_stop(struct engine *eng)
{
	if (in_hand(eng) > 0)
		return;	/* a call, a result to write, or a last callback on its way */
	ev_timer_stop(eng->loop, &eng->grace);
	log_info("engine.stopped", "consumer=%s", eng->cfg->daemon.consumer);
	ev_break(eng->loop, EVBREAK_ALL);
}

static void
grace_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct engine *eng = w->data;
	(void)revents;

	log_warn("engine.grace_expired", "in_hand=%zu", in_hand(eng));
	ev_break(loop, EVBREAK_ALL);
}

void
engine_stop(struct engine *eng)
{
	if (eng->draining)
		return;
	eng->draining = 1;
	sdnotify_send("STOPPING=1");
	log_info("engine.stopping", "in_hand=%zu grace_ms=%ld", in_hand(eng),
	    eng->cfg->daemon.shutdown_grace_ms);
	ev_timer_stop(eng->loop, &eng->claim);
	/* Entries read but not started, and those waiting on a timer, stay
	 * pending for R11/R14; only calls in flight may finish. */
	for (size_t i = 0; i < eng->nshards; i++)
		ejobs_stop(eng->shards[i].jobs);
	ev_timer_init(&eng->grace, grace_cb, (double)eng->cfg->daemon.shutdown_grace_ms / 1000.0, 0);
	eng->grace.data = eng;
	ev_timer_start(eng->loop, &eng->grace);
	/* The blocking read holds its connection until block_ms: drop it. */
	ev_timer_stop(eng->loop, &eng->read_kick);
	rconn_free(eng->blk);
	eng->blk = NULL;
	for (size_t i = 0; i < eng->nshards; i++) {
		rconn_free(eng->shards[i].blk);
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
	out->in_flight = (long long)in_hand(eng);
	out->token_expires_in_s = token_expires_in_s(eng);
	out->token_refreshes = eng->oauth ? oauth_refreshes(eng->oauth) : 0LL;
	out->redis_outages = total_outages(eng);
	out->token_state = token_state(eng);
	out->redis_token_state = redis_token_state(eng);
	out->redis_token_expires_in_s = redis_token_expires_in_s(eng);
	out->redis_auth_refreshes = eng->rt ? rtoken_refreshes(eng->rt) : 0LL;
	out->redis_up = 1;
	for (size_t i = 0; i < eng->nshards; i++)
		out->redis_up &= rconn_is_up(eng->shards[i].cmd);
	out->started_at_ms = eng->started_at;
	out->gate = eng->gate;
	struct creds_scope sc[ENGINE_SCOPES_MAX];
	out->nscopes = creds_scopes(eng->sec.creds, sc, ENGINE_SCOPES_MAX);
	for (size_t i = 0; i < out->nscopes; i++) {
		out->scopes[i].name = sc[i].name;
		out->scopes[i].state = sc[i].state;
		out->scopes[i].expires_in_s = seconds_until(sc[i].expires_at_ms);
	}
}

void
engine_set_outcome_observer(struct engine *eng, engine_outcome_observer *fn)
{
	for (size_t i = 0; i < eng->nshards; i++)
		eng->shards[i].eops.outcome = fn;
}

void
engine_set_call_observer(struct engine *eng, engine_call_observer *fn, void *arg)
{
	for (size_t i = 0; i < eng->nshards; i++) {
		eng->shards[i].eops.call_done = fn;	/* read at each call */
		eng->shards[i].eops.call_done_arg = arg;
	}
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
	ev_timer_stop(eng->loop, &eng->read_kick);
	eng->draining = 1;
	/* Outstanding callbacks fire with NULL while the connections close;
	 * every job is marked finished first so none of them acts. */
	for (size_t i = 0; i < eng->nshards; i++) {
		ev_timer_stop(eng->loop, &eng->shards[i].kick);
		ev_timer_stop(eng->loop, &eng->shards[i].renew_retry);
		if (eng->shards[i].jobs)
			ejobs_abandon(eng->shards[i].jobs);
	}
	rconn_free(eng->blk);
	for (size_t i = 0; i < eng->nshards; i++) {
		/* before its connection: gathered calls get NULL while it is there */
		script_batch_free(eng->shards[i].batch);
		rconn_free(eng->shards[i].blk);
		rconn_free(eng->shards[i].cmd);
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
	free(eng);
}
