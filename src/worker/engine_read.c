/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * engine, reading (engine.c says what each file holds): new entries by
 * XREADGROUP (a shard's own, or one over every shard's stream), the own
 * PEL first (R14), others' entries claimed (R11), due scheduled ids
 * promoted (§5), the stream trimmed (§2), and the group made (R14). What
 * may be read and how much is the consumer core's (consumer.h).
 */
#define _DEFAULT_SOURCE
#include "worker/engine.h"

#include <stdio.h>
#include <string.h>
#include <sysexits.h>

#include "core/consumer.h"
#include "core/shard.h"
#include "auth/cred.h"
#include "worker/ejob.h"
#include "core/gate.h"
#include "base/log.h"
#include "redis/rconn.h"
#include "base/rnd.h"
#include "auth/rtoken.h"
#include "redis/script.h"
#include "worker/sdnotify.h"
#include "redis/sreply.h"
#include "core/store.h"
#include "core/token.h"
#include "base/wtime.h"
#include "engine_int.h"

/* R14: the shard's stream or group is gone: made again. */
void
engine_group_gone(struct shard *sh)
{
	sh->group_ready = 0;
	engine_ensure_group(sh);
}

/* Room freed by one shard may be another's to read: each shard that may
 * read does, this one first. */
void
engine_read_all(struct shard *first)
{
	struct engine *eng = first->eng;

	engine_read_more(first);
	for (size_t i = 0; i < eng->nshards; i++)
		if (&eng->shards[i] != first)
			engine_read_more(&eng->shards[i]);
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
		.in_hand = (long)engine_in_hand(eng), .draining = eng->draining,
		.tokens_usable = creds_tokens_usable(eng->sec.creds),
		.waiting_token = (long)waiting_token(eng),
		.held = (long)engine_held(eng), .queue_paused = gate_paused(eng->gate, NULL),
	};
}

/* ... and of the shared read, over every shard's stream (consumer.h). */
static struct consumer_view
shared_view(const struct engine *eng)
{
	struct consumer_view v = worker_view(eng);

	v.group_ready = v.own_done = v.cmd_up = 1;	/* each stream's own: stream_ready */
	v.blk_up = engine_up(eng, eng->blk);
	v.reading = eng->reading;
	v.backing_off = engine_timer_active(eng, &eng->read_kick);
	return v;
}

/* ... and of one shard. */
struct consumer_view
engine_shard_view(const struct shard *sh)
{
	const struct engine *eng = sh->eng;
	struct consumer_view v = worker_view(eng);

	v.group_ready = sh->group_ready && sh->owner_ok;	/* nothing read before */
	v.own_done = sh->own_done;
	v.cmd_up = engine_up(eng, sh->cmd);
	v.blk_up = sh->blk != NULL && engine_up(eng, sh->blk);
	v.reading = sh->reading;
	v.claiming = sh->claiming;
	v.backing_off = engine_timer_active(eng, &sh->kick);
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
void
engine_back_off_with(struct engine *eng, ev_timer *kick, const char *what,
		     unsigned *failures)
{
	if (*failures < 64)
		(*failures)++;
	int64_t delay = consumer_retry_ms(*failures, rnd_u64());

	engine_timer_stop(eng, kick);
	ev_timer_set(kick, (double)delay / 1000.0, 0.0);
	engine_timer_start(eng, kick, what);
}

static void
back_off(struct shard *sh)
{
	engine_back_off_with(sh->eng, &sh->kick, "kick", &sh->kick_failures);
}

/* The shared read's error replies have one episode of their own: on one
 * Redis they concern every shard alike. */
void
engine_read_kick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop, (void)revents;
	engine_read_shared(w->data);
}

void
engine_kick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct shard *sh = w->data;
	(void)loop, (void)revents;

	if (!sh->group_ready)
		engine_ensure_group(sh);
	else
		engine_read_more(sh);
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
	if (!engine_timer_active(sh->eng, &sh->eng->lease))
		engine_timer_start(sh->eng, &sh->eng->lease, "lease");
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
		engine_group_gone(sh);
	if (next & CONSUMER_DO_BACKOFF)
		back_off(sh);
	if (!(next & CONSUMER_DO_OK))
		return;
	read_path_ok(sh);
	sh->last_read_at = engine_now_ms(sh->eng);
	engine_read_more(sh);
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
	struct consumer_view v = engine_shard_view(sh);

	return consumer_may_read(&v);
}

/* The shared read: whether a shard's stream goes into it (consumer.h). */
static int
stream_ready(const struct shard *sh)
{
	struct consumer_view v = engine_shard_view(sh);

	return consumer_stream_ready(&v);
}

/* ... and whether the shared read waits for it. */
static int
stream_coming(const struct shard *sh)
{
	struct consumer_view v = engine_shard_view(sh);

	return consumer_stream_coming(&v);
}

/* R6: with no usable token, read nothing new: entries stay undelivered for
 * healthy consumers. Logged once per pause. */
static int
token_blocks_reading(struct engine *eng)
{
	/* R20: nor without a good Redis credential: what it read it could
	 * not complete. */
	struct token_redis_view rv = {eng->rt != NULL, eng->rt != NULL && rtoken_is_static(eng->rt),
	    eng->rt != NULL ? rtoken_expires_at_ms(eng->rt) : 0};
	int redis_blocked = token_redis_blocks_reading(&rv, wtime_mono_ms());

	if (redis_blocked != eng->paused_for_redis_token) {
		eng->paused_for_redis_token = redis_blocked;
		if (redis_blocked)
			log_warn("consumer.paused", "reason=no-redis-token redis_token_state=%s",
			    engine_redis_token_state(eng));
		else
			log_info("consumer.resumed", "redis_token_state=%s", engine_redis_token_state(eng));
	}
	if (redis_blocked)
		return 1;
	struct consumer_view v = worker_view(eng);
	int blocked = !consumer_tokens_let_read(&v);

	if (blocked != eng->paused_for_token) {
		eng->paused_for_token = blocked;
		/* At start no token is held yet: that is no warning. */
		if (blocked && eng->had_token)
			log_warn("consumer.paused", "reason=no-token token_state=%s", engine_token_state(eng));
		else if (blocked)
			log_info("consumer.paused", "reason=no-token token_state=%s", engine_token_state(eng));
		else
			log_info("consumer.resumed", "token_state=%s", engine_token_state(eng));
	}
	eng->had_token |= !blocked;
	/* §13, R6: entries held by a pause, a limit or a breaker fill R6's
	 * share of max_in_flight: those a pause or an open breaker holds beyond
	 * it are parked,
	 * and reading stops only when limits hold more (consumer_may_read
	 * decides; issue 38 items 6, 8). This says so once. */
	long share = consumer_held_max(eng->cfg->daemon.max_in_flight);
	int held_full = !blocked && (long)engine_held(eng) >= share;
	if (held_full != eng->paused_for_held) {
		eng->paused_for_held = held_full;
		if (held_full)
			log_info("consumer.held_full", "held=%zu share=%ld detail=\"R6's share of the "
			    "hand is held back: further entries of a paused action or an open "
			    "breaker are parked\"",
			    engine_held(eng), share);
		else
			log_info("consumer.held_below", "held=%zu share=%ld", engine_held(eng), share);
	}
	return blocked;
}

void
engine_read_more(struct shard *sh)
{
	struct engine *eng = sh->eng;

	if (!sh->owner_ok)
		return;	/* the consumer name is not ours (yet): engine_name.c */
	if (!sh->own_done) {
		engine_own_pending_more(sh);	/* R14: ours, with a token or without */
		return;
	}
	if (token_blocks_reading(eng))
		return;
	if (eng->one_read) {
		engine_read_shared(eng);
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
	if (engine_commandv(eng, sh->blk, after_read, sh, 11, argv, len) == 0)
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
			sh->last_read_at = engine_now_ms(eng);
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
				engine_group_gone(&eng->shards[i]);
	}
	if (!(next & CONSUMER_DO_OK)) {
		shared_read_over(eng, 0);
		if (next & CONSUMER_DO_BACKOFF)
			engine_back_off_with(eng, &eng->read_kick, "read_kick", &eng->read_failures);
		return;
	}
	eng->read_failures = 0;
	shared_read_over(eng, 1);
	engine_read_shared(eng);
}

/* One XREADGROUP over the stream of every shard ready to read (a single
 * Redis allows it), so a worker holds one blocking connection, not N. */
void
engine_read_shared(struct engine *eng)
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
	if (engine_commandv(eng, eng->blk, after_shared_read, eng, argc, argv, NULL) < 0)
		return;
	eng->reading = 1;
	for (size_t i = 0; i < eng->nshards; i++)
		eng->shards[i].reading = stream_ready(&eng->shards[i]);
}

/* A claim script's reply (own PEL or XAUTOCLAIM): its entries admitted,
 * what the consumer core makes of it returned, a lost group re-made. */
static unsigned
claim_answered(struct shard *sh, const struct sreply *r, enum consumer_step step, char *next,
	       size_t nextlen)
{
	enum consumer_err c = rconn_err_class(r);

	sh->claiming = 0;
	unsigned act = consumer_reply_next(step, c, c != CONSUMER_ERR_LOST &&
	    sreply_claim(r, next, nextlen, admit, dead_deleted, sh) >= 0);
	if (act & CONSUMER_DO_GROUP)
		engine_group_gone(sh);
	return act;
}

static void
after_own(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct shard *sh = arg;
	struct engine *eng = sh->eng;
	(void)rc;

	char next[STREAM_ID_MAX];

	/* LOST: retried when the connection is back */
	unsigned act = claim_answered(sh, r, CONSUMER_STEP_OWN, next, sizeof next);
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
		engine_notify(eng, "READY=1\nSTATUS=consuming");
	}
	engine_read_more(sh);
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
	if (engine_script(eng, sh->cmd, &a, cb, sh) == 0)
		sh->claiming = 1;
}

/* R14: our own pending entries first, as far as there is room. */
void
engine_own_pending_more(struct shard *sh)
{
	struct consumer_view v = engine_shard_view(sh);

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

	unsigned act = claim_answered(sh, r, CONSUMER_STEP_AUTO, next, sizeof next);
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
	engine_best_effort(engine_script(eng, rc, &a, engine_ignore_reply, NULL));
}

/* Issue 27 item 5: the script names P:scheduled, which does not exist once
 * empty, and a call naming a missing key stalls (-TRYAGAIN) while its slot
 * migrates: so it runs only when a one-key read found the schedule holds
 * an id. */
static void
promote_due(struct shard *sh)
{
	engine_best_effort(engine_command(sh->eng, sh->cmd, after_schedule_probe, sh,
	    (const char *[]){"ZRANGEBYSCORE", sh->keys.scheduled, "-inf", "+inf", "LIMIT", "0",
	    "1", NULL}));
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
	engine_best_effort(engine_script(eng, sh->cmd, &a, engine_ignore_reply, NULL));
}

static void
claim_shard(struct shard *sh)
{
	struct engine *eng = sh->eng;

	if (!sh->group_ready || !sh->owner_ok || !engine_up(eng, sh->cmd) || eng->draining)
		return;	/* owner_ok: nothing is taken into hand before the name is ours */
	promote_due(sh);
	engine_unpark(sh);
	trim_jobs(sh);
	/* A PEL scan that a reconnect restarted while a claim was on its way
	 * is taken up here, at the latest: with one read over every shard,
	 * the read waits for it. Whether an owner is gone is the script's
	 * judgement (R11), by Redis' clock: no local timer stands in for it. */
	struct consumer_view v = engine_shard_view(sh);
	switch (consumer_next_claim(&v, 1)) {
	case CONSUMER_CLAIM_OWN: send_claim(sh, "own", sh->own_cursor, after_own); break;
	case CONSUMER_CLAIM_AUTO: send_claim(sh, "auto", "0", after_autoclaim); break;
	case CONSUMER_CLAIM_NONE: break;
	}
}

void
engine_claim_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct engine *eng = w->data;
	(void)loop, (void)revents;

	for (size_t i = 0; i < eng->nshards; i++)
		claim_shard(&eng->shards[i]);
}

/* ------------------------------------------------------------------ */
/* the group (and the server's version)                                 */

static void
after_group(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct shard *sh = arg;
	(void)rc;

	if (sh->eng->exit_status != 0)
		return;		/* stopping: no library, or the wrong one */
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
	engine_read_more(sh);
}

/* The library (warrantd(7) §2.1) and the liveness rule need Redis 7.0
 * (XAUTOCLAIM's deleted-entry list is 7.0's), and this build's version of
 * the library on the shard's primary: a worker against an older server, a
 * missing or another library would fail job by job, so it stops at once,
 * saying why. Any other error says nothing about either: it is asked again
 * at the next connection, and the other steps report it. */
static void
after_version(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct shard *sh = arg;
	enum store_library_state st = script_library_state(r);
	(void)rc;

	if (st == STORE_LIBRARY_OK || st == STORE_LIBRARY_UNKNOWN)
		return;
	if (st == STORE_LIBRARY_NO_FUNCTIONS) {
		log_error("redis.too_old", "stream=%s need=7.0 detail=\"the server has no Redis "
		    "Functions (FCALL_RO): older than Redis 7.0; upgrade it\"", sh->keys.jobs);
		sh->eng->exit_status = EX_UNAVAILABLE;
	} else {
		const char *got = st == STORE_LIBRARY_WRONG ? sreply_string(r) : NULL;
		log_error("redis.library", "stream=%s want=%s got=%s detail=\"%s: load it as an "
		    "administrator with warrantctl functions load\"", sh->keys.jobs,
		    STORE_LIBRARY_VERSION, got ? LOG_Q(got) : "none", got ? "the library "
		    "warrantd in Redis is another version" : "the library warrantd is not loaded");
		sh->eng->exit_status = EX_PROTOCOL;
	}
	engine_break(sh->eng);
}

/* R14: created at id 0 with MKSTREAM, so entries written before the first
 * worker started are processed. The library's version is asked first, on
 * every connection to the shard's primary: its reply comes before the
 * group's, which starts the reads. */
void
engine_check_library(struct shard *sh)
{
	if (engine_up(sh->eng, sh->cmd))
		engine_best_effort(engine_command(sh->eng, sh->cmd, after_version, sh,
		    (const char *[]){"FCALL_RO", "warrantd_version", "0", NULL}));
}

void
engine_ensure_group(struct shard *sh)
{
	if (!engine_up(sh->eng, sh->cmd))
		return;
	engine_check_library(sh);
	engine_best_effort(engine_command(sh->eng, sh->cmd, after_group, sh,
	    (const char *[]){"XGROUP", "CREATE", sh->keys.jobs, sh->eng->cfg->redis.group, "0",
	    "MKSTREAM", NULL}));
}

/* A read whose reply died with the connection left entries in our PEL
 * that we never saw: the shard reads its PEL again before new entries. */
void
engine_reread_own(struct shard *sh)
{
	sh->own_done = 0;
	snprintf(sh->own_cursor, sizeof sh->own_cursor, "0");
	engine_read_more(sh);
}
