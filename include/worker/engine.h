/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * engine: the consumer on one libev loop (warrantd(7) §4). It reads entry ids from
 * the consumer group, hands each entry to the pure job core (job.h) and moves
 * data between that core, Redis (rconn.h) and HTTP (http.h).
 */
#ifndef WARRANTD_ENGINE_H
#define WARRANTD_ENGINE_H

#include <ev.h>
#include <stddef.h>

#include "conf/config.h"
#include "base/counters.h"

struct gate;

struct engine;


/*
 * Takes ownership of cfg on success (the caller must not free it then).
 * Reads the key and secret files the config names. NULL on failure with a
 * message in err (cfg is then still the caller's).
 */
struct engine *engine_new(struct ev_loop *loop, struct cfg *cfg, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* Connects and starts consuming. The loop runs until engine_stop has
 * finished (ev_break). */
void engine_start(struct engine *eng);

/* Why the loop broke: 0 after engine_stop, EX_UNAVAILABLE (69) when Redis
 * could not be used at all (no connection could be set up at start, or a
 * server older than 7.0), ENGINE_EXIT_NAME_TAKEN (73) when another live
 * process runs under the consumer name (at start or later). The daemon's
 * exit status. */
#define ENGINE_EXIT_NAME_TAKEN 73
int engine_exit_status(const struct engine *eng);

/* R15: stop reading, start no new call, let calls in flight finish for up to
 * shutdown_grace_ms, leave the rest pending, then break the loop. Safe to
 * call more than once; not from inside an engine callback chain. */
void engine_stop(struct engine *eng);

/* R16: takes ownership of cfg on success (returns 0). On -1 (e.g. a key file
 * that cannot be read) err says why and the running config is kept; cfg is
 * still the caller's. */
int engine_reload(struct engine *eng, struct cfg *cfg, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* Valid as long as the engine. */
const struct engine_counters *engine_counters(const struct engine *eng);

/* Plain data: the rest of what the heartbeat hash shows (warrantd(7) §8). */
#define ENGINE_SCOPES_MAX	16

struct engine_gauges {
	long long in_flight, token_expires_in_s, token_refreshes, redis_outages;
	const char *token_state;	/* static: valid, refreshing, none, error */
	const char *redis_token_state;	/* the same for Redis' own (rtoken.h) */
	long long redis_token_expires_in_s, redis_auth_refreshes;
	int redis_up;			/* the command connection */
	long long started_at_ms;
	const struct gate *gate;	/* §13: pauses, limits, breakers (gate.h) */
	/* R6, §8: each action's own narrowed token; names and states borrowed
	 * until the next reload */
	struct engine_scope {
		const char *name, *state;
		long long expires_in_s;
	} scopes[ENGINE_SCOPES_MAX];
	size_t nscopes;
};

void engine_gauges(const struct engine *eng, struct engine_gauges *out);

/* Called once per action call that got an answer (or a transport error):
 * the action's name (valid during the call), the HTTP status (0: none), the
 * call's duration and the delay from the entry's XADD (its stream id's ms)
 * to the call's start. It must not call back into the engine. */
typedef void engine_call_observer(void *arg, const char *action, long status,
				  long long duration_ms, long long queue_delay_ms);

/* fn NULL: none. arg is borrowed and must outlive the engine. */
void engine_set_call_observer(struct engine *eng, engine_call_observer *fn, void *arg);

/* Called once per job that reached a terminal state: its action ("" when no
 * record names one), the state ("done", "dead", ...) and the reason code
 * ("" when none). Strings valid during the call; it must not call back into
 * the engine. The same arg as the call observer's (set that one first). */
typedef void engine_outcome_observer(void *arg, const char *action, const char *state,
				     const char *reason);

void engine_set_outcome_observer(struct engine *eng, engine_outcome_observer *fn);

/* Not from inside the loop's callbacks. NULL is a no-op. */
void engine_free(struct engine *eng);

#endif
