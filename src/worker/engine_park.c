/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * engine, parked entries (engine.c says what each file holds): R6, §13.
 * An entry held back by its action's pause or open breaker, or waiting
 * for its scope's token, beyond R6's share of the hand is parked in Redis
 * (ejob: lua/park.lua); here the parked entries of each action are queued
 * again (lua/unpark.lua), in order, once the pause ended, the breaker is
 * closed and the scope has a usable token, and those whose deadline passed
 * meanwhile while not, so that R1 ends them expired and notified. What
 * happens when is the consumer core's (consumer_keeps_parked,
 * consumer_unpark_next). Asked on every claim tick, at once when the
 * pauses change and when a token arrives.
 */
#define _DEFAULT_SOURCE
#include "worker/engine.h"

#include <stdlib.h>
#include <string.h>

#include "auth/cred.h"
#include "conf/config.h"
#include "core/consumer.h"
#include "core/gate.h"
#include "base/log.h"
#include "redis/sreply.h"
#include "core/store.h"
#include "base/wtime.h"
#include "engine_int.h"

/* One unpark call's context: the shard, and the action it is for. */
struct unpark {
	struct shard *sh;
	long limit;
	char action[];
};

static void send_unpark(struct unpark *u, int all);

static void
after_unpark(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct unpark *u = arg;
	long long moved = 0;
	(void)rc;

	if (r == NULL || sreply_integer(r, &moved) < 0) {
		free(u);	/* the next tick asks again */
		return;
	}
	struct shard *sh = u->sh;
	if (moved > 0)
		log_info("job.unparked", "action=%s count=%lld stream=%s", LOG_Q(u->action), moved,
		    sh->keys.jobs);
	if (u->limit > 0 && moved >= u->limit && !sh->eng->draining) {
		send_unpark(u, 1);	/* more of them: the next page, in order */
		return;
	}
	free(u);
	if (moved > 0 && !sh->eng->draining)
		engine_read_all(sh);
}

/* all: the first `limit` in order; else those whose deadline passed. */
static void
send_unpark(struct unpark *u, int all)
{
	struct shard *sh = u->sh;
	struct store_args a;
	char key[STORE_KEY_MAX];

	if (!engine_up(sh->eng, sh->cmd) ||
	    store_parked_key(&sh->keys, u->action, key, sizeof key) < 0) {
		free(u);
		return;
	}
	u->limit = all ? sh->eng->cfg->redis.batch : 0;
	store_args_init(&a, STORE_UNPARK);
	store_arg(&a, STORE_UNPARK_JOBS, sh->keys.jobs);
	store_arg(&a, STORE_UNPARK_PARKED, key);
	store_arg(&a, STORE_UNPARK_DUE, sh->keys.parked);
	store_arg(&a, STORE_UNPARK_ACTION, u->action);
	store_arg_ll(&a, STORE_UNPARK_LIMIT, u->limit);
	if (all)
		store_arg(&a, STORE_UNPARK_DUE_AT, "");
	else
		store_arg_ll(&a, STORE_UNPARK_DUE_AT, (long long)wtime_now_ms());
	if (engine_script(sh->eng, sh->cmd, &a, after_unpark, u) < 0)
		free(u);
}

/* R6: the gate holds the action, or its calls need its scope's token and
 * none is usable (cred_bearer's rule: one that outlives its timeout). */
static int
keeps_parked(const struct engine *eng, const char *action, int64_t now)
{
	const struct cred *c = creds_find(eng->sec.creds, action);
	const struct cfg_action *a = cfg_action_find(eng->cfg, action);
	int needed = a != NULL && cred_is_oauth(c);
	uint64_t gen;

	return consumer_keeps_parked(gate_keeps_parked(eng->gate, action, now), needed,
	    needed && cred_bearer(c, a->timeout_ms, &gen) != NULL);
}

/* P:parked answered (action, earliest deadline, ...): each action's
 * parked entries as the core says. */
static void
after_probe(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct shard *sh = arg;
	struct engine *eng = sh->eng;
	size_t n = 0;
	int64_t now = wtime_now_ms();
	(void)rc;

	if (r == NULL || sreply_array_len(r, &n) < 0)
		return;
	for (size_t i = 0; i + 1 < n; i += 2) {
		const char *action = sreply_string(sreply_element(r, i));
		const char *score = sreply_string(sreply_element(r, i + 1));
		if (action == NULL || score == NULL)
			continue;
		int held = keeps_parked(eng, action, now);
		enum consumer_unpark d = consumer_unpark_next(held, strtoll(score, NULL, 10), now,
		    eng->draining);
		if (d == CONSUMER_UNPARK_NONE)
			continue;
		size_t len = strlen(action);
		struct unpark *u = malloc(sizeof *u + len + 1);
		if (u == NULL)
			return;	/* the next tick asks again */
		u->sh = sh;
		memcpy(u->action, action, len + 1);
		send_unpark(u, d == CONSUMER_UNPARK_ALL);
	}
}

/* Issue 27 item 5: a one-key read first, so that a script naming keys that
 * do not exist never runs for nothing. */
void
engine_unpark(struct shard *sh)
{
	struct engine *eng = sh->eng;

	if (!sh->group_ready || eng->draining || !engine_up(eng, sh->cmd))
		return;
	engine_best_effort(engine_command(eng, sh->cmd, after_probe, sh,
	    (const char *[]){"ZRANGE", sh->keys.parked, "0", "-1", "WITHSCORES", NULL}));
}
