/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * engine_name: one consumer name, one live process (issue 38 item 1).
 * Before a shard reads anything, and again on every connection and with
 * every heartbeat, the worker claims P:owner:<consumer> for its random
 * instance id (lua/owner.lua, judged by Redis' clock). At start a claim
 * another live process holds refuses the start (consumer.name_taken, exit
 * 73); a claim that does not move is a dead holder's, waited out (its TTL
 * is three heartbeats). A claim found taken while running stops the
 * worker (consumer.name_lost, exit 73). A clean stop gives the name back
 * (lua/release.lua). What each answer means is consumer_name_next's.
 */
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "core/consumer.h"
#include "core/store.h"
#include "redis/rconn.h"
#include "redis/sreply.h"
#include "worker/engine.h"
#include "engine_int.h"

/* The claim lives three heartbeats, as the heartbeat hash: a SIGKILLed
 * holder's name is free again within that, by Redis' clock. */
static long
claim_ttl_ms(const struct engine *eng)
{
	return 3 * eng->cfg->daemon.heartbeat_ms;
}

/* A holder's claim is asked about again this often while it is waited
 * out: a live holder renews within heartbeat_ms, so it is seen to move. */
static double
retry_s(const struct engine *eng)
{
	long ms = eng->cfg->daemon.heartbeat_ms / 2;

	return (double)(ms < 50 ? 50 : ms) / 1000.0;
}

/* The instance id of a claim's value ("<instance> <TIME ms>"), for the log. */
static void
holder_of(const char *value, char *buf, size_t n)
{
	size_t len = value ? strcspn(value, " ") : 0;

	snprintf(buf, n, "%.*s", (int)(len < n ? len : n - 1), value ? value : "");
}

static void
stop_soon(struct engine *eng)
{
	eng->exit_status = ENGINE_EXIT_NAME_TAKEN;
	engine_timer_start(eng, &eng->name_stop, "name_stop");
}

void
engine_name_stop_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop, (void)revents;
	engine_stop(w->data);
}

void
engine_name_retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop, (void)revents;
	engine_claim_name(w->data);
}

/* The claim is ours: a shard that had not read under it yet starts (the
 * steps a connection used to start at once, in their order). */
static void
claimed(struct shard *sh)
{
	struct engine *eng = sh->eng;

	if (!sh->owned)
		log_info("consumer.name_claimed", "consumer=%s stream=%s instance=%s ttl_ms=%ld",
		    eng->cfg->daemon.consumer, sh->keys.jobs, eng->instance, claim_ttl_ms(eng));
	sh->owned = 1;
	sh->owner_first[0] = '\0';
	if (sh->owner_ok)
		return;	/* a renewal */
	sh->owner_ok = 1;
	engine_heartbeat_shard(sh);
	if (sh->index == 0)
		engine_read_pauses(eng);
	engine_ensure_group(sh);
}

static void
after_claim(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct shard *sh = arg;
	struct engine *eng = sh->eng;
	long long won = 0, pttl = -1;
	size_t n = 0;
	char holder[64];
	(void)rc;

	if (eng->exit_status != 0 && eng->exit_status != ENGINE_EXIT_NAME_TAKEN)
		return;		/* stopping: no library, or the wrong one */
	int ok = r != NULL && sreply_array_len(r, &n) == 0 && n >= 2 &&
	    sreply_integer(sreply_element(r, 0), &won) == 0;
	const char *value = ok ? sreply_string(sreply_element(r, 1)) : NULL;
	if (ok && n >= 3 && sreply_integer(sreply_element(r, 2), &pttl) != 0)
		pttl = -1;
	holder_of(value, holder, sizeof holder);
	switch (consumer_name_next(sh->owned, ok, won == 1, won == 1 ? NULL : value,
	    sh->owner_first)) {
	case CONSUMER_NAME_OURS:
		claimed(sh);
		break;
	case CONSUMER_NAME_WAIT:
		if (sh->owner_first[0] == '\0') {
			log_info("consumer.name_waiting", "consumer=%s stream=%s holder=%s "
			    "ttl_ms=%lld detail=\"another instance claimed this name; waiting "
			    "for its claim to run out (a live holder renews it)\"",
			    eng->cfg->daemon.consumer, sh->keys.jobs, holder, pttl);
			snprintf(sh->owner_first, sizeof sh->owner_first, "%s", value);
		}
		engine_timer_stop(eng, &sh->owner_retry);
		ev_timer_set(&sh->owner_retry, retry_s(eng), 0.0);
		engine_timer_start(eng, &sh->owner_retry, "owner_retry");
		break;
	case CONSUMER_NAME_TAKEN:
		log_error("consumer.name_taken", "consumer=%s stream=%s holder=%s detail=\"another "
		    "live worker runs under this consumer name: give each worker its own [daemon] "
		    "consumer\"", eng->cfg->daemon.consumer, sh->keys.jobs, holder);
		stop_soon(eng);
		break;
	case CONSUMER_NAME_LOST:
		if (sh->owner_ok)
			log_error("consumer.name_lost", "consumer=%s stream=%s holder=%s "
			    "detail=\"another worker claimed this consumer name: reading stops, "
			    "exit 73\"", eng->cfg->daemon.consumer, sh->keys.jobs, holder);
		sh->owner_ok = sh->owned = 0;	/* nothing of it is ours to release */
		stop_soon(eng);
		break;
	case CONSUMER_NAME_RETRY:
		/* running: the next heartbeat asks again; at start, a backoff */
		if (!sh->owner_ok && r != NULL) {
			engine_timer_stop(eng, &sh->owner_retry);
			ev_timer_set(&sh->owner_retry, retry_s(eng) * 4, 0.0);
			engine_timer_start(eng, &sh->owner_retry, "owner_retry");
		}
		break;
	}
}

void
engine_claim_name(struct shard *sh)
{
	struct engine *eng = sh->eng;
	struct store_args a;
	char ttl[24];

	if (!engine_up(eng, sh->cmd) || (eng->draining && !sh->owner_ok))
		return;
	snprintf(ttl, sizeof ttl, "%ld", claim_ttl_ms(eng));
	store_args_init(&a, STORE_OWNER);
	store_arg(&a, STORE_OWNER_OWNER, sh->keys.owner);
	store_arg(&a, STORE_OWNER_INSTANCE, eng->instance);
	store_arg(&a, STORE_OWNER_TTL_MS, ttl);
	engine_best_effort(engine_script(eng, sh->cmd, &a, after_claim, sh));
}

void
engine_name_down(struct shard *sh)
{
	sh->owner_ok = 0;
	engine_timer_stop(sh->eng, &sh->owner_retry);
}

static void
after_release(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct engine *eng = arg;
	(void)rc, (void)r;

	if (eng->releasing > 0 && --eng->releasing == 0)
		engine_finish_stop(eng);
}

size_t
engine_release_names(struct engine *eng)
{
	size_t sent = 0;

	for (size_t i = 0; i < eng->nshards; i++) {
		struct shard *sh = &eng->shards[i];
		struct store_args a;

		engine_timer_stop(eng, &sh->owner_retry);
		if (!sh->owned || !engine_up(eng, sh->cmd))
			continue;
		store_args_init(&a, STORE_RELEASE);
		store_arg(&a, STORE_RELEASE_OWNER, sh->keys.owner);
		store_arg(&a, STORE_RELEASE_CONSUMERS, sh->keys.consumers);
		store_arg(&a, STORE_RELEASE_CONSUMER, sh->keys.consumer);
		store_arg(&a, STORE_RELEASE_INSTANCE, eng->instance);
		store_arg(&a, STORE_RELEASE_NAME, eng->cfg->daemon.consumer);
		if (engine_script(eng, sh->cmd, &a, after_release, eng) == 0)
			sent++;
	}
	return sent;
}
