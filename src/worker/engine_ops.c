/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * engine, its real operations (engine_ops.h): rconn, script, libev, the
 * wall clock and sdnotify, each a thin wrapper; their ctx is the loop.
 */
#define _DEFAULT_SOURCE
#include "worker/engine_ops.h"

#include "base/wtime.h"
#include "redis/rconn.h"
#include "redis/script.h"
#include "worker/sdnotify.h"
#include "engine_int.h"

static struct rconn *
real_conn_new(void *ctx, const struct rconn_opts *o, const char *name, rconn_state_cb *cb,
	      void *arg)
{
	return rconn_new(ctx, o, name, cb, arg);
}

static void
real_conn_free(void *ctx, struct rconn *rc)
{
	(void)ctx;
	rconn_free(rc);
}

static int
real_conn_up(void *ctx, const struct rconn *rc)
{
	(void)ctx;
	return rconn_is_up(rc);
}

static int
real_conn_reauth(void *ctx, struct rconn *rc, const char *secret, int64_t expires_at_ms)
{
	(void)ctx;
	return rconn_reauth(rc, secret, expires_at_ms);
}

static struct script_batch *
real_batch_new(void *ctx, struct rconn *rc, const struct script_set *s)
{
	return script_batch_new(ctx, rc, s);
}

static void
real_batch_free(void *ctx, struct script_batch *b)
{
	(void)ctx;
	script_batch_free(b);
}

static int
real_commandv(void *ctx, struct rconn *rc, rconn_reply_cb *cb, void *arg, int argc,
	      const char **argv, const size_t *argvlen)
{
	(void)ctx;
	return rconn_commandv(rc, cb, arg, argc, argv, argvlen);
}

static int
real_script(void *ctx, struct rconn *rc, const struct script_set *s, const struct store_args *a,
	    rconn_reply_cb *cb, void *arg)
{
	(void)ctx;
	return script_send(rc, s, a, cb, arg);
}

static void
real_timer_start(void *ctx, ev_timer *w, const char *what)
{
	(void)what;
	ev_timer_start(ctx, w);
}

static void
real_timer_stop(void *ctx, ev_timer *w)
{
	ev_timer_stop(ctx, w);
}

static int
real_timer_active(void *ctx, const ev_timer *w)
{
	(void)ctx;
	return ev_is_active(w);
}

static int64_t
real_now_ms(void *ctx)
{
	(void)ctx;
	return wtime_now_ms();
}

static void
real_notify(void *ctx, const char *state)
{
	(void)ctx;
	sdnotify_send(state);
}

static void
real_break_loop(void *ctx)
{
	ev_break(ctx, EVBREAK_ALL);
}

const struct engine_ops engine_real_ops = {
	.conn_new = real_conn_new, .conn_free = real_conn_free, .conn_up = real_conn_up,
	.conn_reauth = real_conn_reauth, .batch_new = real_batch_new,
	.batch_free = real_batch_free, .commandv = real_commandv, .script = real_script,
	.timer_start = real_timer_start, .timer_stop = real_timer_stop,
	.timer_active = real_timer_active, .now_ms = real_now_ms, .notify = real_notify,
	.break_loop = real_break_loop, .jobs = NULL,
};

/* A command of C strings, argv ended by NULL: the engine's fixed commands
 * read as they are sent. */
int
engine_command(const struct engine *eng, struct rconn *rc, rconn_reply_cb *cb, void *arg,
	       const char *const *argv)
{
	const char *v[ENGINE_COMMAND_ARGS];
	int argc = 0;

	while (argc < ENGINE_COMMAND_ARGS && argv[argc] != NULL) {
		v[argc] = argv[argc];
		argc++;
	}
	return eng->ops->commandv(eng->opctx, rc, cb, arg, argc, v, NULL);
}
