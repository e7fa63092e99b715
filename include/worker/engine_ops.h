/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * engine_ops: what the engine (engine.h) does to the world, as a table of
 * operations -- the Redis connections and their commands and scripts, the
 * timers, the wall clock, systemd's notify socket and the loop's end -- as
 * ejob.h's struct ejob_ops is for one job. engine_real_ops are the real
 * ones (rconn.h, script.h, libev, sdnotify.h); a unit test gives fakes and
 * drives the engine step by step, asserting the exact sequence of what it
 * started (tests/unit/test_engine.c).
 *
 * The contract of every command and script below is rconn.h's: 0 when
 * started, and then its callback exactly once -- with a reply, or NULL
 * when none came -- never from inside the call that started it; -1 when it
 * could not start, and then no callback comes. A connection's state
 * callback likewise comes only from the loop, never from inside conn_new.
 * A timer's callback comes from the loop after it was started, once (or
 * each repeat) until it is stopped.
 *
 * A connection is a `struct rconn *` that only the operations look into:
 * the engine hands it back to them and to nothing else (a fake's need not
 * be an rconn at all).
 */
#ifndef WARRANTD_ENGINE_OPS_H
#define WARRANTD_ENGINE_OPS_H

#include <ev.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/config.h"
#include "redis/rconn.h"
#include "redis/script.h"
#include "core/store.h"
#include "worker/ejob.h"

struct engine;

struct engine_ops {
	/* A connection (rconn_new's contract), NULL on failure; freed with
	 * conn_free (NULL: no-op), whose outstanding callbacks then get NULL.
	 * name is borrowed during the call. */
	struct rconn *(*conn_new)(void *ctx, const struct rconn_opts *o, const char *name,
				  rconn_state_cb *cb, void *arg);
	void (*conn_free)(void *ctx, struct rconn *rc);
	/* 1 when commands are accepted (rc NULL: 0). Synchronous. */
	int (*conn_up)(void *ctx, const struct rconn *rc);
	/* rconn_reauth: 0 or -1 (out of memory). Synchronous. */
	int (*conn_reauth)(void *ctx, struct rconn *rc, const char *secret, int64_t expires_at_ms);
	/* The transitions' batch on rc (script.h); NULL on failure. */
	struct script_batch *(*batch_new)(void *ctx, struct rconn *rc, const struct script_set *s);
	void (*batch_free)(void *ctx, struct script_batch *b);

	/* A command, its arguments copied before it returns (argvlen NULL:
	 * C strings). */
	int (*commandv)(void *ctx, struct rconn *rc, rconn_reply_cb *cb, void *arg, int argc,
			const char **argv, const size_t *argvlen);
	/* A Lua script of lua/ with its arguments (script_send). */
	int (*script)(void *ctx, struct rconn *rc, const struct script_set *s,
		      const struct store_args *a, rconn_reply_cb *cb, void *arg);

	/* Starts w as set (ev_timer_set: after, repeat); `what` names it
	 * ("heartbeat", "kick", ...: static). Stopping one not started is a
	 * no-op. */
	void (*timer_start)(void *ctx, ev_timer *w, const char *what);
	void (*timer_stop)(void *ctx, ev_timer *w);
	int (*timer_active)(void *ctx, const ev_timer *w);

	/* The wall clock, ms since the epoch. */
	int64_t (*now_ms)(void *ctx);
	/* systemd's notify protocol ("READY=1", "STOPPING=1", ...). */
	void (*notify)(void *ctx, const char *state);
	/* The engine is done (stopped, or cannot go on): the loop ends. */
	void (*break_loop)(void *ctx);

	/* What the jobs in hand use (ejob.h); NULL: eops_ops on each shard's
	 * struct eops. A fake's ctx is still that struct eops. */
	const struct ejob_ops *jobs;
};

/* The real operations; their ctx is the engine's struct ev_loop. Static. */
extern const struct engine_ops engine_real_ops;

/*
 * engine_new with other operations: ops and ctx are borrowed and must
 * outlive the engine; ops NULL means engine_real_ops with the loop as
 * ctx. Otherwise as engine_new.
 */
struct engine *engine_new_with(struct ev_loop *loop, struct cfg *cfg, const struct engine_ops *ops,
			       void *ctx, char *err, size_t errlen)
	__attribute__((warn_unused_result));

#endif
