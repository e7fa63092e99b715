/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_rconn: the async Redis connection against a real redis-server.
 *
 * Each test drives its own ev_loop with EVRUN_ONCE until a condition holds
 * or a deadline passes; a 20 ms repeating tick keeps EVRUN_ONCE from
 * blocking longer than that. Log lines (stderr) are captured into a file
 * where a test needs to see retries happen.
 */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <ev.h>

#include "harness.h"
#include "base/log.h"
#include "redis/rconn.h"
#include "redis/script.h"
#include "redis/sreply.h"
#include "core/store.h"

#define WAIT_S 20.0		/* generous: 2 cores, ASan, load */

static struct ev_loop *L;
static ev_timer tick;

/* state_cb bookkeeping */
static int g_ups, g_downs;
static char g_seq[64];		/* "1" / "0" per transition, in order */
static int g_done;		/* slot callbacks so far */
static int g_done_at_down;	/* g_done when the last state_cb(0) ran */

struct slot {
	int calls;
	int null;
	int type;
	long long integer;
	char str[128];
};

static void
on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
}

static int
setup(void **state)
{
	(void)state;
	L = ev_loop_new(EVFLAG_AUTO);
	if (L == NULL)
		return -1;
	ev_timer_init(&tick, on_tick, 0.02, 0.02);
	ev_timer_start(L, &tick);
	g_ups = g_downs = g_done = g_done_at_down = 0;
	g_seq[0] = '\0';
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	ev_timer_stop(L, &tick);
	ev_loop_destroy(L);
	L = NULL;
	return 0;
}

static void
on_state(struct rconn *rc, int up, void *arg)
{
	(void)rc;
	(void)arg;
	size_t n = strlen(g_seq);
	if (n + 1 < sizeof(g_seq)) {
		g_seq[n] = up ? '1' : '0';
		g_seq[n + 1] = '\0';
	}
	if (up)
		g_ups++;
	else {
		g_downs++;
		g_done_at_down = g_done;
	}
}

/* rconn's own test looks at the whole reply: the tree hiredis built, which
 * the daemon reads through sreply's functions only. */
static const redisReply *
raw(const struct sreply *view)
{
	return (const redisReply *)(const void *)view;
}

static void
on_slot(struct rconn *rc, const struct sreply *view, void *arg)
{
	const redisReply *reply = raw(view);
	struct slot *s = arg;

	(void)rc;
	s->calls++;
	g_done++;
	if (reply == NULL) {
		s->null = 1;
		return;
	}
	s->type = reply->type;
	s->integer = reply->integer;
	if (reply->str != NULL)
		snprintf(s->str, sizeof(s->str), "%.*s", (int)reply->len, reply->str);
}

typedef int cond_fn(void *arg);

static int
run_until(cond_fn *cond, void *arg, double timeout_s)
{
	double end = ev_time() + timeout_s;

	while (!cond(arg)) {
		if (ev_time() > end)
			return -1;
		ev_run(L, EVRUN_ONCE);
	}
	return 0;
}

static int
cond_up(void *arg)
{
	return rconn_is_up(arg);
}

static int
cond_slot(void *arg)
{
	return ((struct slot *)arg)->calls > 0;
}

struct int_at_least { const int *v; int n; };

static int
cond_int(void *arg)
{
	const struct int_at_least *c = arg;
	return *c->v >= c->n;
}

static struct rconn_opts
opts_for(const struct h_redis *r)
{
	struct rconn_opts o = {
		.socket = r->sock,
		.connect_timeout_ms = 5000,
		.command_timeout_ms = 0,
		.backoff_min_ms = 20,
		.backoff_max_ms = 200,
	};
	return o;
}

static struct rconn *
connect_up(const struct rconn_opts *o, const char *name)
{
	struct rconn *rc = rconn_new(L, o, name, on_state, NULL);
	assert_non_null(rc);
	assert_int_equal(run_until(cond_up, rc, WAIT_S), 0);
	return rc;
}

/* Sends one command and runs the loop until its callback ran. */
static void
roundtrip(struct rconn *rc, struct slot *s, const char *fmt, const char *a, const char *b)
{
	memset(s, 0, sizeof(*s));
	if (b != NULL)
		assert_int_equal(rconn_command(rc, on_slot, s, fmt, a, b), 0);
	else if (a != NULL)
		assert_int_equal(rconn_command(rc, on_slot, s, fmt, a), 0);
	else
		assert_int_equal(rconn_command(rc, on_slot, s, fmt), 0);
	assert_int_equal(run_until(cond_slot, s, WAIT_S), 0);
	assert_int_equal(s->calls, 1);
	assert_int_equal(s->null, 0);
}

static void
check_set_get(struct rconn *rc, const char *key, const char *val)
{
	struct slot s;

	roundtrip(rc, &s, "SET %s %s", key, val);
	assert_int_equal(s.type, REDIS_REPLY_STATUS);
	assert_string_equal(s.str, "OK");
	roundtrip(rc, &s, "GET %s", key, NULL);
	assert_int_equal(s.type, REDIS_REPLY_STRING);
	assert_string_equal(s.str, val);
}

/* Redis has a client blocked in BLPOP: everything before it was written. */
static int
cond_blocked(void *arg)
{
	char *info = h_redis_str(arg, "INFO clients");
	int yes = info != NULL && strstr(info, "blocked_clients:1") != NULL;
	free(info);
	return yes;
}

/* stderr into a file, for counting log lines. */
static int saved_stderr = -1;

static char *
capture_start(const char *name)
{
	char *path = h_write_file(name, "");
	assert_non_null(path);
	int fd = open(path, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	fflush(stderr);
	saved_stderr = dup(STDERR_FILENO);
	assert_true(saved_stderr >= 0);
	assert_true(dup2(fd, STDERR_FILENO) >= 0);
	close(fd);
	return path;
}

static void
capture_end(void)
{
	if (saved_stderr < 0)
		return;
	fflush(stderr);
	dup2(saved_stderr, STDERR_FILENO);
	close(saved_stderr);
	saved_stderr = -1;
}

static int
count_in_file(const char *path, const char *needle)
{
	char *text = h_read_file(path);
	int n = 0;

	for (const char *p = text; p != NULL && (p = strstr(p, needle)) != NULL; p++)
		n++;
	free(text);
	return n;
}

struct log_wait { const char *path, *needle; int n; };

static int
cond_log(void *arg)
{
	const struct log_wait *w = arg;
	return count_in_file(w->path, w->needle) >= w->n;
}

/* ---- tests ---- */


static void
test_script_sha1(void **state)
{
	struct rconn_script s;

	(void)state;
	rconn_script_init(&s, "");
	assert_string_equal(s.sha1, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
	rconn_script_init(&s, "abc");
	assert_string_equal(s.sha1, "a9993e364706816aba3e25717850c26c9cd0d89d");
	assert_string_equal(s.body, "abc");
}

static void
test_set_get_unix(void **state)
{
	struct h_redis r;
	struct slot s, never = {0};

	(void)state;
	assert_int_equal(h_redis_start(&r, 0), 0);
	struct rconn_opts o = opts_for(&r);
	struct rconn *rc = rconn_new(L, &o, "basic", on_state, NULL);
	assert_non_null(rc);
	/* not up before the loop ran the handshake: refused, no callback */
	assert_int_equal(rconn_is_up(rc), 0);
	assert_int_equal(rconn_command(rc, on_slot, &never, "PING"), -1);
	assert_int_equal(run_until(cond_up, rc, WAIT_S), 0);
	assert_string_equal(g_seq, "1");

	check_set_get(rc, "k1", "hello world");
	/* pending counts sent, unanswered commands */
	memset(&s, 0, sizeof(s));
	assert_int_equal(rconn_command(rc, on_slot, &s, "PING"), 0);
	assert_int_equal(rconn_pending(rc), 1);
	assert_int_equal(run_until(cond_slot, &s, WAIT_S), 0);
	assert_int_equal(rconn_pending(rc), 0);
	/* an error reply is passed as is */
	roundtrip(rc, &s, "INCR %s", "k1", NULL);
	assert_int_equal(s.type, REDIS_REPLY_ERROR);
	assert_non_null(strstr(s.str, "not an integer"));
	/* argv form, binary safe */
	const char *argv[] = {"SET", "bin", "a\0b"};
	const size_t lens[] = {3, 3, 3};
	memset(&s, 0, sizeof(s));
	assert_int_equal(rconn_commandv(rc, on_slot, &s, 3, argv, lens), 0);
	assert_int_equal(run_until(cond_slot, &s, WAIT_S), 0);
	roundtrip(rc, &s, "STRLEN bin", NULL, NULL);
	assert_int_equal(s.integer, 3);
	/* commands whose replies do not pair up with commands are refused */
	assert_int_equal(rconn_command(rc, on_slot, &never, "SUBSCRIBE ch"), -1);
	assert_int_equal(rconn_command(rc, on_slot, &never, "monitor"), -1);
	assert_int_equal(rconn_command(rc, on_slot, &never, ""), -1);
	assert_int_equal(rconn_command(rc, NULL, NULL, "PING"), -1);
	assert_int_equal(rconn_pending(rc), 0);

	rconn_free(rc);
	assert_int_equal(never.calls, 0);
	assert_int_equal(g_downs, 0);	/* rconn_free does not call state_cb */
	h_redis_stop(&r);
	rconn_free(NULL);
}

static void
test_select_db(void **state)
{
	struct h_redis r;

	(void)state;
	assert_int_equal(h_redis_start(&r, 0), 0);
	struct rconn_opts o = opts_for(&r);
	o.db = 3;
	struct rconn *rc = connect_up(&o, "db3");
	check_set_get(rc, "dbkey", "in-three");

	redisContext *c = h_redis_connect(&r);
	assert_non_null(c);
	char *v = h_redis_str(c, "GET dbkey");
	assert_null(v);			/* not in db 0 */
	v = h_redis_str(c, "SELECT 3");
	free(v);
	v = h_redis_str(c, "GET dbkey");
	assert_non_null(v);
	assert_string_equal(v, "in-three");
	free(v);
	redisFree(c);
	rconn_free(rc);
	h_redis_stop(&r);
}

#define NPIPE 1000

struct pipe_ctx {
	int next;		/* index expected next */
	int bad;		/* out-of-order or wrong value */
	int done;
};

static struct pipe_ctx pipe_ctx;

static void
on_incr(struct rconn *rc, const struct sreply *view, void *arg)
{
	const redisReply *reply = raw(view);
	int i = (int)(intptr_t)arg;

	(void)rc;
	if (reply == NULL || reply->type != REDIS_REPLY_INTEGER || reply->integer != i + 1 ||
	    i != pipe_ctx.next)
		pipe_ctx.bad++;
	pipe_ctx.next = i + 1;
	pipe_ctx.done++;
}

static void
test_pipeline_1000(void **state)
{
	struct h_redis r;

	(void)state;
	assert_int_equal(h_redis_start(&r, 0), 0);
	struct rconn_opts o = opts_for(&r);
	o.command_timeout_ms = 10000;
	struct rconn *rc = connect_up(&o, "pipe");
	memset(&pipe_ctx, 0, sizeof(pipe_ctx));
	for (int i = 0; i < NPIPE; i++)
		assert_int_equal(rconn_command(rc, on_incr, (void *)(intptr_t)i, "INCR ctr"), 0);
	assert_int_equal(rconn_pending(rc), NPIPE);
	struct int_at_least c = {&pipe_ctx.done, NPIPE};
	assert_int_equal(run_until(cond_int, &c, WAIT_S), 0);
	assert_int_equal(pipe_ctx.done, NPIPE);
	assert_int_equal(pipe_ctx.bad, 0);
	assert_int_equal(rconn_pending(rc), 0);
	assert_int_equal(g_downs, 0);
	rconn_free(rc);
	h_redis_stop(&r);
}

#define NOUT 11

static void
test_restart_outstanding(void **state)
{
	struct h_redis r;
	struct slot s[NOUT];

	(void)state;
	assert_int_equal(h_redis_start(&r, 0), 0);
	struct rconn_opts o = opts_for(&r);
	struct rconn *rc = connect_up(&o, "restart");
	redisContext *c = h_redis_connect(&r);
	assert_non_null(c);

	memset(s, 0, sizeof(s));
	assert_int_equal(rconn_command(rc, on_slot, &s[0], "BLPOP empty 60"), 0);
	for (int i = 1; i < NOUT; i++)
		assert_int_equal(rconn_command(rc, on_slot, &s[i], "GET k%d", i), 0);
	assert_int_equal(rconn_pending(rc), NOUT);
	assert_int_equal(run_until(cond_blocked, c, WAIT_S), 0);
	redisFree(c);

	assert_int_equal(h_redis_restart(&r), 0);
	struct int_at_least downs = {&g_downs, 1};
	assert_int_equal(run_until(cond_int, &downs, WAIT_S), 0);
	/* every callback got NULL, once, before state_cb(0) */
	for (int i = 0; i < NOUT; i++) {
		assert_int_equal(s[i].calls, 1);
		assert_int_equal(s[i].null, 1);
	}
	assert_int_equal(g_done_at_down, NOUT);
	assert_int_equal(rconn_pending(rc), 0);

	assert_int_equal(run_until(cond_up, rc, WAIT_S), 0);
	assert_string_equal(g_seq, "101");
	check_set_get(rc, "after", "restart");
	for (int i = 0; i < NOUT; i++)
		assert_int_equal(s[i].calls, 1);
	rconn_free(rc);
	h_redis_stop(&r);
}

static void
test_command_timeout(void **state)
{
	struct h_redis r;
	struct slot s;

	(void)state;
	assert_int_equal(h_redis_start(&r, 0), 0);
	struct rconn_opts o = opts_for(&r);
	o.command_timeout_ms = 600;
	struct rconn *rc = connect_up(&o, "blocking");

	/* commands each shorter than the timeout, back to back for longer
	 * than it: the timeout is per oldest command, not per connection */
	for (int i = 0; i < 5; i++) {
		roundtrip(rc, &s, "BLPOP %s 0.2", "nothing", NULL);
		assert_int_equal(s.type, REDIS_REPLY_NIL);
	}
	assert_int_equal(g_downs, 0);

	/* a BLPOP blocking longer than the timeout: dropped, NULL, reconnect */
	memset(&s, 0, sizeof(s));
	double t0 = ev_time();
	assert_int_equal(rconn_command(rc, on_slot, &s, "BLPOP nothing 30"), 0);
	assert_int_equal(run_until(cond_slot, &s, WAIT_S), 0);
	double waited = ev_time() - t0;
	assert_int_equal(s.calls, 1);
	assert_int_equal(s.null, 1);
	assert_true(waited >= 0.55);
	assert_true(waited < 25.0);	/* not BLPOP's own 30 s answer */
	assert_int_equal(g_downs, 1);
	assert_int_equal(run_until(cond_up, rc, WAIT_S), 0);
	assert_string_equal(g_seq, "101");
	check_set_get(rc, "after", "timeout");
	assert_int_equal(s.calls, 1);
	rconn_free(rc);
	h_redis_stop(&r);
}

static void
test_missing_socket_backoff(void **state)
{
	struct h_redis r;

	(void)state;
	assert_int_equal(h_redis_start(&r, 0), 0);
	h_redis_stop(&r);
	unlink(r.sock);
	assert_int_not_equal(access(r.sock, F_OK), 0);

	struct rconn_opts o = opts_for(&r);
	o.backoff_min_ms = 100;
	o.backoff_max_ms = 400;
	char *log = capture_start("rconn-nosock.log");
	log_set_level(LOG_DEBUG);	/* each attempt's redis.down; warn: the first only */
	double t0 = ev_time();
	struct rconn *rc = rconn_new(L, &o, "nosock", on_state, NULL);
	struct log_wait w = {log, "event=redis.down name=nosock", 3};
	int waited_ok = rc != NULL ? run_until(cond_log, &w, WAIT_S) : -1;
	double elapsed = ev_time() - t0;
	int up_before = rconn_is_up(rc);
	int restarted = h_redis_restart(&r);
	int up_after = rc != NULL ? run_until(cond_up, rc, WAIT_S) : -1;
	capture_end();
	log_set_level(LOG_INFO);

	assert_non_null(rc);
	assert_int_equal(waited_ok, 0);
	/* issue 38 item 5: one warning for the outage, its end with its length */
	assert_int_equal(count_in_file(log, "level=warn event=redis.down name=nosock"), 1);
	char *text = h_read_file(log);
	const char *up = text ? strstr(text, "event=redis.up name=nosock") : NULL;
	const char *eol = up ? strchr(up, '\n') : NULL;
	const char *dms = up ? strstr(up, " down_ms=") : NULL;
	assert_true(dms != NULL && (eol == NULL || dms < eol));
	free(text);
	/* three attempts need two retry delays of at least min each */
	assert_true(elapsed >= 0.2);
	assert_int_equal(up_before, 0);
	assert_int_equal(restarted, 0);
	assert_int_equal(up_after, 0);
	assert_int_equal(g_ups, 1);
	assert_true(count_in_file(log, "attempt=3") >= 1);
	assert_int_equal(count_in_file(log, "event=redis.up name=nosock"), 1);
	check_set_get(rc, "k", "found");
	rconn_free(rc);
	free(log);
	h_redis_stop(&r);
}

static void
test_handshake_timeout(void **state)
{
	struct h_redis r;

	(void)state;
	assert_int_equal(h_redis_start(&r, 0), 0);
	struct rconn_opts o = opts_for(&r);
	o.db = 1;			/* a handshake that needs an answer */
	o.connect_timeout_ms = 200;
	o.backoff_min_ms = 20;
	o.backoff_max_ms = 50;
	/* a stopped server accepts the connection but never answers */
	assert_int_equal(kill(r.pid, SIGSTOP), 0);
	char *log = capture_start("rconn-hs.log");
	log_set_level(LOG_DEBUG);	/* each attempt's redis.down */
	struct rconn *rc = rconn_new(L, &o, "hs", on_state, NULL);
	struct log_wait w = {log, "err=\"connect timeout\"", 2};
	int waited_ok = rc != NULL ? run_until(cond_log, &w, WAIT_S) : -1;
	int up_before = rconn_is_up(rc);
	kill(r.pid, SIGCONT);
	int up_after = rc != NULL ? run_until(cond_up, rc, WAIT_S) : -1;
	capture_end();
	log_set_level(LOG_INFO);

	assert_non_null(rc);
	assert_int_equal(waited_ok, 0);
	assert_int_equal(up_before, 0);
	assert_int_equal(up_after, 0);
	assert_string_equal(g_seq, "1");
	check_set_get(rc, "hs", "done");
	rconn_free(rc);
	free(log);
	h_redis_stop(&r);
}

static void
test_auth(void **state)
{
	struct h_redis r;
	static const char good[] = "pw-Good-123", bad[] = "wrong-SECRET-xyz";

	(void)state;
	assert_int_equal(h_redis_start(&r, 0), 0);
	redisContext *c = h_redis_connect(&r);
	assert_non_null(c);
	char *ok = h_redis_str(c, "CONFIG SET requirepass %s", good);
	assert_non_null(ok);
	free(ok);

	/* password only */
	struct rconn_opts o = opts_for(&r);
	o.password = good;
	struct rconn *rc = connect_up(&o, "auth");
	check_set_get(rc, "a", "1");
	rconn_free(rc);

	/* username + password */
	o.username = "default";
	rc = connect_up(&o, "authuser");
	check_set_get(rc, "a", "2");
	rconn_free(rc);

	/* wrong password: never up, keeps retrying, never logs the password */
	g_ups = 0;
	o.username = NULL;
	o.password = bad;
	o.backoff_min_ms = 20;
	o.backoff_max_ms = 60;
	char *log = capture_start("rconn-auth.log");
	log_set_level(LOG_DEBUG);	/* each attempt's redis.down */
	rc = rconn_new(L, &o, "badpw", on_state, NULL);
	struct log_wait w = {log, "event=redis.handshake_failed name=badpw step=auth", 3};
	int waited_ok = rc != NULL ? run_until(cond_log, &w, WAIT_S) : -1;
	int ups_before = g_ups;
	/* the server now accepts that password: the retries get through */
	ok = h_redis_str(c, "CONFIG SET requirepass %s", bad);
	int up_after = rc != NULL ? run_until(cond_up, rc, WAIT_S) : -1;
	capture_end();
	log_set_level(LOG_INFO);

	assert_non_null(rc);
	assert_non_null(ok);
	free(ok);
	assert_int_equal(waited_ok, 0);
	assert_int_equal(ups_before, 0);
	assert_true(count_in_file(log, "event=redis.down name=badpw") >= 3);
	assert_int_equal(up_after, 0);
	assert_int_equal(g_ups, 1);
	assert_int_equal(count_in_file(log, bad), 0);
	assert_int_equal(count_in_file(log, good), 0);
	check_set_get(rc, "a", "3");
	rconn_free(rc);
	free(log);
	redisFree(c);
	h_redis_stop(&r);
}

#define NEVAL 5

static void
test_eval_noscript(void **state)
{
	struct h_redis r;
	struct rconn_script incr, fail;
	struct slot s[NEVAL];

	(void)state;
	assert_int_equal(h_redis_start(&r, 0), 0);
	struct rconn *rc;
	struct rconn_opts o = opts_for(&r);
	rc = connect_up(&o, "eval");
	redisContext *c = h_redis_connect(&r);
	assert_non_null(c);

	rconn_script_init(&incr, "return redis.call('INCRBY', KEYS[1], ARGV[1])");
	/* our SHA1 is the one Redis computes */
	char *sha = h_redis_str(c, "SCRIPT LOAD %s", incr.body);
	assert_non_null(sha);
	assert_string_equal(sha, incr.sha1);
	free(sha);
	char *flushed = h_redis_str(c, "SCRIPT FLUSH");
	free(flushed);
	redisReply *ex = redisCommand(c, "SCRIPT EXISTS %s", incr.sha1);
	assert_non_null(ex);
	assert_int_equal(ex->element[0]->integer, 0);
	freeReplyObject(ex);

	/* pipelined, all hit NOSCRIPT, all re-sent with EVAL, in order */
	const char *argv[] = {"evk", "5"};
	memset(s, 0, sizeof(s));
	for (int i = 0; i < NEVAL; i++)
		assert_int_equal(rconn_eval(rc, &incr, on_slot, &s[i], 1, 2, argv, NULL), 0);
	assert_int_equal(rconn_pending(rc), NEVAL);
	assert_int_equal(run_until(cond_slot, &s[NEVAL - 1], WAIT_S), 0);
	for (int i = 0; i < NEVAL; i++) {
		assert_int_equal(s[i].calls, 1);
		assert_int_equal(s[i].type, REDIS_REPLY_INTEGER);
		assert_int_equal(s[i].integer, 5 * (i + 1));
	}
	assert_int_equal(rconn_pending(rc), 0);
	ex = redisCommand(c, "SCRIPT EXISTS %s", incr.sha1);
	assert_non_null(ex);
	assert_int_equal(ex->element[0]->integer, 1);
	freeReplyObject(ex);

	/* cached now: EVALSHA answers directly; binary-safe lengths */
	const char *argv2[] = {"evk", "7xx"};
	const size_t lens2[] = {3, 1};
	memset(s, 0, sizeof(s));
	assert_int_equal(rconn_eval(rc, &incr, on_slot, &s[0], 1, 2, argv2, lens2), 0);
	assert_int_equal(run_until(cond_slot, &s[0], WAIT_S), 0);
	assert_int_equal(s[0].integer, 32);

	/* other errors pass through as they are */
	rconn_script_init(&fail, "return redis.error_reply('boom')");
	memset(s, 0, sizeof(s));
	assert_int_equal(rconn_eval(rc, &fail, on_slot, &s[0], 0, 0, NULL, NULL), 0);
	assert_int_equal(run_until(cond_slot, &s[0], WAIT_S), 0);
	assert_int_equal(s[0].calls, 1);
	assert_int_equal(s[0].type, REDIS_REPLY_ERROR);
	assert_non_null(strstr(s[0].str, "boom"));

	/* bad key count: refused, no callback */
	assert_int_equal(rconn_eval(rc, &incr, on_slot, &s[1], 3, 2, argv, NULL), -1);
	assert_int_equal(s[1].calls, 0);

	redisFree(c);
	rconn_free(rc);
	h_redis_stop(&r);
}

static int
cond_ticks(void *arg)
{
	int *left = arg;
	return (*left)-- <= 0;
}

/* A cluster's resolve hook; the socket is used all the same. */
static int
resolve_any(void *arg, char *host, size_t hostlen, int *port)
{
	(void)arg;
	snprintf(host, hostlen, "127.0.0.1");
	*port = 1;
	return 0;
}

/* -ASK without a cluster: a script on A answers it while KEYS[1] is "A"
 * there; B (TCP) has no such key, so there the same script INCRs KEYS[2].
 * The first ASK opens the side connection and is the caller's (the
 * fallback); once it is up, the ASKed commands are B's to answer, as EVAL
 * (B never saw the script), one callback each; rconn_free() frees it. */
static void
test_follow_ask(void **state)
{
	struct h_redis a, b;
	struct rconn_script ask;
	static char body[256];
	struct slot s[NEVAL];
	char conf[64];
	int port = h_free_port();

	(void)state;
	assert_true(port > 0);
	snprintf(conf, sizeof conf, "port %d\nbind 127.0.0.1\n", port);
	assert_int_equal(h_redis_start(&a, 0), 0);
	assert_int_equal(h_redis_start_conf(&b, 0, conf), 0);
	redisContext *ca = h_redis_connect(&a), *cb = h_redis_connect(&b);
	assert_non_null(ca);
	assert_non_null(cb);
	freeReplyObject(redisCommand(ca, "SET ak A"));
	snprintf(body, sizeof body, "if redis.call('GET', KEYS[1]) == 'A' then return "
	    "redis.error_reply('ASK 7 127.0.0.1:%d') end return redis.call('INCR', KEYS[2])", port);
	rconn_script_init(&ask, body);
	struct rconn_opts o = opts_for(&a);
	o.resolve = resolve_any;
	o.cluster = 1;
	struct rconn *rc = connect_up(&o, "ask");
	const char *argv[] = {"ak", "an"};

	/* the first: the ASK error itself, while the side connects */
	memset(s, 0, sizeof(s));
	assert_int_equal(rconn_eval(rc, &ask, on_slot, &s[0], 2, 2, argv, NULL), 0);
	assert_int_equal(run_until(cond_slot, &s[0], WAIT_S), 0);
	assert_int_equal(s[0].type, REDIS_REPLY_ERROR);
	assert_non_null(strstr(s[0].str, "ASK 7"));
	/* retried until B answers (the side is up) */
	int tries = 0;
	do {
		memset(s, 0, sizeof(s));
		assert_int_equal(rconn_eval(rc, &ask, on_slot, &s[0], 2, 2, argv, NULL), 0);
		assert_int_equal(run_until(cond_slot, &s[0], WAIT_S), 0);
		assert_int_equal(s[0].calls, 1);
	} while (s[0].type == REDIS_REPLY_ERROR && ++tries < 200);
	assert_int_equal(s[0].type, REDIS_REPLY_INTEGER);
	assert_int_equal(s[0].integer, 1);
	/* pipelined: every one answered by B, once, in order */
	memset(s, 0, sizeof(s));
	for (int i = 0; i < NEVAL; i++)
		assert_int_equal(rconn_eval(rc, &ask, on_slot, &s[i], 2, 2, argv, NULL), 0);
	assert_int_equal(run_until(cond_slot, &s[NEVAL - 1], WAIT_S), 0);
	for (int i = 0; i < NEVAL; i++) {
		assert_int_equal(s[i].calls, 1);
		assert_int_equal(s[i].type, REDIS_REPLY_INTEGER);
		assert_int_equal(s[i].integer, i + 2);
	}
	assert_int_equal(rconn_pending(rc), 0);
	assert_int_equal(h_redis_int(cb, "INCRBY an 0"), NEVAL + 1);
	assert_int_equal(h_redis_int(ca, "EXISTS an"), 0);

	/* outstanding on the side when freed: NULL, once */
	memset(s, 0, sizeof(s));
	assert_int_equal(rconn_eval(rc, &ask, on_slot, &s[0], 2, 2, argv, NULL), 0);
	int left = 3;
	assert_int_equal(run_until(cond_ticks, &left, WAIT_S), 0);
	rconn_free(rc);
	assert_int_equal(s[0].calls, 1);
	redisFree(ca);
	redisFree(cb);
	h_redis_stop(&a);
	h_redis_stop(&b);
}

static void
test_free_outstanding(void **state)
{
	struct h_redis r;
	struct slot s[NOUT];

	(void)state;
	assert_int_equal(h_redis_start(&r, 0), 0);
	struct rconn_opts o = opts_for(&r);
	struct rconn *rc = connect_up(&o, "free");
	redisContext *c = h_redis_connect(&r);
	assert_non_null(c);
	memset(s, 0, sizeof(s));
	assert_int_equal(rconn_command(rc, on_slot, &s[0], "BLPOP empty 60"), 0);
	for (int i = 1; i < NOUT; i++)
		assert_int_equal(rconn_command(rc, on_slot, &s[i], "INCR n"), 0);
	assert_int_equal(run_until(cond_blocked, c, WAIT_S), 0);

	rconn_free(rc);
	for (int i = 0; i < NOUT; i++) {
		assert_int_equal(s[i].calls, 1);
		assert_int_equal(s[i].null, 1);
	}
	assert_int_equal(g_downs, 0);
	/* nothing fires later */
	int left = 10;
	assert_int_equal(run_until(cond_ticks, &left, WAIT_S), 0);
	for (int i = 0; i < NOUT; i++)
		assert_int_equal(s[i].calls, 1);
	/* the server never saw the queued INCRs run after the free */
	assert_true(h_redis_int(c, "EXISTS n") == 0);

	/* free while retrying, with nothing connected */
	o.socket = "/nonexistent/rconn.sock";
	rc = rconn_new(L, &o, "free2", on_state, NULL);
	assert_non_null(rc);
	left = 3;
	assert_int_equal(run_until(cond_ticks, &left, WAIT_S), 0);
	assert_int_equal(rconn_is_up(rc), 0);
	rconn_free(rc);
	redisFree(c);
	h_redis_stop(&r);
}

/* ---- script_batch (script.h) ---- */

struct item_seen {
	int calls, null, written;
	char why[32], error[128];
};

static void
on_item(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct item_seen *s = arg;
	struct sreply_transition t;
	const char *e = sreply_error_text(r);

	(void)rc;
	s->calls++;
	s->null = r == NULL;
	if (e != NULL) {
		snprintf(s->error, sizeof s->error, "%s", e);
		return;
	}
	sreply_transition(r, &t);
	s->written = t.written;
	snprintf(s->why, sizeof s->why, "%s", t.why ? t.why : "");
}

static int
cond_items(void *arg)
{
	const struct item_seen *s = arg;
	for (int i = 0; i < 3; i++)
		if (s[i].calls == 0)
			return 0;
	return 1;
}

/* A transition that starts a call on hash sb:decision:<id>, with no lease
 * check (no stream needed). */
static void
start_args(const struct store_keys *k, const char *hash, struct store_args *a)
{
	struct store_transition t = {
		.hash_key = hash, .stream_id = "1-0", .record_id = "x", .state = "running",
		.fence_attempts = -1, .incr_attempts = 1, .attempt = 1, .at = "2026-01-01T00:00:00Z",
		.dead_maxlen = 10, .notify_maxlen = 10, .skip_lease = 1,
	};
	store_transition_args(k, "g", "c1", 10, &t, a);
}

/* How many FCALLs of function `name` Redis ran since the last SLOWLOG
 * RESET: its slow log, set to keep every command. */
static long long
fcalls_of(redisContext *c, const char *name)
{
	redisReply *r = redisCommand(c, "SLOWLOG GET 100000");
	long long n = 0;

	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	for (size_t i = 0; i < r->elements; i++) {
		const redisReply *e = r->element[i], *args = e->elements > 3 ? e->element[3] : NULL;
		n += args != NULL && args->type == REDIS_REPLY_ARRAY && args->elements > 1 &&
		    strcmp(args->element[0]->str, "FCALL") == 0 &&
		    strcmp(args->element[1]->str, name) == 0;
	}
	freeReplyObject(r);
	return n;
}

/* Calls gathered in one turn go as one call of the batch form, each with
 * its own reply (written, refused, an error of its own) and never a
 * callback from inside script_batch_send; a lone call goes as the plain
 * script; calls still gathered when the batch is freed get NULL once; a
 * batch on a connection that is not up refuses at once. */
static void
test_script_batch(void **state)
{
	struct h_redis r;
	struct script_set set;
	struct store_keys k;
	struct store_args a[3];
	struct item_seen seen[3];
	const char *hash[3] = {"sb:decision:ok", "sb:decision:bad", "sb:decision:gone"};

	(void)state;
	assert_int_equal(h_redis_start(&r, 0), 0);
	struct rconn_opts o = opts_for(&r);
	struct rconn *rc = connect_up(&o, "batch");
	redisContext *c = h_redis_connect(&r);
	assert_non_null(c);
	script_set_init(&set);
	assert_int_equal(store_keys_init(&k, "sb", "c1"), 0);
	struct script_batch *b = script_batch_new(L, rc, &set);
	assert_non_null(b);
	free(h_redis_str(c, "CONFIG SET slowlog-max-len 100000"));
	free(h_redis_str(c, "CONFIG SET slowlog-log-slower-than 0"));
	free(h_redis_str(c, "SLOWLOG RESET"));
	assert_true(h_redis_int(c, "HSET sb:decision:ok state queued") >= 0);
	assert_true(h_redis_int(c, "HSET sb:decision:bad state queued attempts x") >= 0);

	memset(seen, 0, sizeof seen);
	for (int i = 0; i < 3; i++) {
		start_args(&k, hash[i], &a[i]);
		assert_int_equal(script_batch_send(b, &a[i], on_item, &seen[i]), 0);
	}
	memset(a, 0, sizeof a);	/* the calls are copies */
	for (int i = 0; i < 3; i++)
		assert_int_equal(seen[i].calls, 0);
	assert_int_equal(run_until(cond_items, seen, WAIT_S), 0);
	assert_int_equal(seen[0].written, 1);
	assert_string_equal(seen[0].why, "ok");
	assert_non_null(strstr(seen[1].error, "ERR hash value is not an integer"));
	assert_int_equal(seen[2].written, 0);
	assert_string_equal(seen[2].why, "missing");
	for (int i = 0; i < 3; i++)
		assert_int_equal(seen[i].calls, 1);
	/* the three went as one FCALL of the batch form */
	assert_int_equal(fcalls_of(c, store_scripts[STORE_TRANSITION].batch_function), 1);
	assert_int_equal(fcalls_of(c, store_scripts[STORE_TRANSITION].function), 0);
	char *st = h_redis_str(c, "HGET sb:decision:ok state");
	assert_string_equal(st, "running");
	free(st);
	assert_int_equal(h_redis_int(c, "XLEN sb:audit"), 1);

	/* one alone: the plain function */
	free(h_redis_str(c, "SLOWLOG RESET"));
	memset(seen, 0, sizeof seen);
	start_args(&k, hash[0], &a[0]);
	assert_int_equal(script_batch_send(b, &a[0], on_item, &seen[0]), 0);
	seen[1].calls = seen[2].calls = 1;
	assert_int_equal(run_until(cond_items, seen, WAIT_S), 0);
	assert_int_equal(seen[0].written, 1);
	assert_int_equal(fcalls_of(c, store_scripts[STORE_TRANSITION].function), 1);
	assert_int_equal(fcalls_of(c, store_scripts[STORE_TRANSITION].batch_function), 0);

	/* one turn of more calls than a batch holds, one of them with another
	 * limit (a reload): several calls sent, each item its own reply, once */
	{
		enum { N = STORE_BATCH_MAX + 6, ODD = 3 };
		static struct item_seen many[N];
		char hname[N][48];
		memset(many, 0, sizeof many);
		for (int i = 0; i < N; i++) {
			struct store_args m;
			snprintf(hname[i], sizeof hname[i], "sb:decision:m%d", i);
			assert_true(h_redis_int(c, "HSET %s state queued", hname[i]) >= 0);
			struct store_transition t = {
				.hash_key = hname[i], .stream_id = "1-0", .record_id = "x",
				.state = "running", .fence_attempts = -1, .incr_attempts = 1,
				.attempt = 1, .at = "2026-01-01T00:00:00Z", .dead_maxlen = 10,
				.notify_maxlen = i == ODD ? 11 : 10, .skip_lease = 1,
			};
			store_transition_args(&k, "g", "c1", 10, &t, &m);
			assert_int_equal(script_batch_send(b, &m, on_item, &many[i]), 0);
		}
		int waited = 200;
		while (waited-- > 0) {
			int done = 0;
			for (int i = 0; i < N; i++)
				done += many[i].calls > 0;
			if (done == N)
				break;
			int turns = 1;
			assert_int_equal(run_until(cond_ticks, &turns, WAIT_S), 0);
		}
		for (int i = 0; i < N; i++) {
			assert_int_equal(many[i].calls, 1);
			assert_int_equal(many[i].written, 1);
			st = h_redis_str(c, "HGET %s attempts", hname[i]);
			assert_string_equal(st, "1");
			free(st);
		}
	}

	/* items that leave out different numbers of trailing empty arguments
	 * in one batch: each gets its own, none a neighbour's */
	{
		static struct item_seen v[3];
		const char *vh[3] = {"sb:decision:v0", "sb:decision:v1", "sb:decision:v2"};
		struct store_transition dead = {
			.hash_key = vh[1], .stream_id = "2-0", .record_id = "v1", .state = "dead",
			.outcome = "max-attempts", .detail = "503 thrice", .http_status = "503",
			.fence_attempts = -1, .ack = 1, .dead_reason = "max-attempts", .notify = 1,
			.notify_owner = "o1", .notify_kind = "dead", .on_behalf_of = "u1",
			.action = "open", .resource = "gate/14", .deliveries = 4, .attempt = 3,
			.at = "2026-01-01T00:00:02Z", .retain_ms = 60000, .dead_maxlen = 10,
			.notify_maxlen = 10, .skip_lease = 1,
		};
		struct store_args m;
		memset(v, 0, sizeof v);
		for (int i = 0; i < 3; i++) {
			assert_true(h_redis_int(c, "HSET %s state queued", vh[i]) >= 0);
			/* the third's attempt is two digits (no one-digit shortcut) */
			if (i == 2)
				assert_true(h_redis_int(c, "HSET %s attempts 41", vh[i]) >= 0);
			if (i == 1)
				store_transition_args(&k, "g", "c1", 10, &dead, &m);
			else
				start_args(&k, vh[i], &m);
			assert_int_equal(script_batch_send(b, &m, on_item, &v[i]), 0);
		}
		assert_int_equal(run_until(cond_items, v, WAIT_S), 0);
		for (int i = 0; i < 3; i++) {
			assert_int_equal(v[i].written, 1);
			st = h_redis_str(c, "HGET %s state", vh[i]);
			assert_string_equal(st, i == 1 ? "dead" : "running");
			free(st);
		}
		st = h_redis_str(c, "HGET %s httpStatus", vh[1]);
		assert_string_equal(st, "503");
		free(st);
		assert_true(h_redis_int(c, "PTTL %s", vh[1]) > 0);
		assert_int_equal(h_redis_int(c, "PTTL %s", vh[2]), -1);
		st = h_redis_str(c, "HGET %s attempts", vh[2]);
		assert_string_equal(st, "42");
		free(st);
		redisReply *x = redisCommand(c, "XRANGE sb:notify - +");
		assert_non_null(x);
		assert_int_equal(x->type, REDIS_REPLY_ARRAY);
		assert_int_equal(x->elements, 1);
		redisReply *f = x->element[0]->element[1];
		const char *want[] = {"id", "v1", "owner", "o1", "kind", "dead", "reason",
		    "max-attempts", "onBehalfOf", "u1", "action", "open", "resource", "gate/14"};
		for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
			assert_string_equal(f->element[i]->str, want[i]);
		freeReplyObject(x);
		x = redisCommand(c, "XRANGE sb:dead - +");
		assert_non_null(x);
		assert_int_equal(x->elements, 1);
		f = x->element[0]->element[1];
		assert_string_equal(f->element[0]->str, "id");
		assert_string_equal(f->element[1]->str, "v1");
		assert_string_equal(f->element[8]->str, "deliveries");
		assert_string_equal(f->element[9]->str, "4");
		freeReplyObject(x);
		/* the audit says the start's attempt (HINCRBY) and the end's own */
		x = redisCommand(c, "XREVRANGE sb:audit + - COUNT 3");
		assert_non_null(x);
		assert_int_equal(x->elements, 3);
		for (size_t e = 0; e < 3; e++) {
			redisReply *af = x->element[e]->element[1];
			/* newest first: v2 (42), v1 (its own 3), v0 (1) */
			const char *want_attempt[] = {"42", "3", "1"};
			assert_string_equal(af->element[8]->str, "attempt");
			assert_string_equal(af->element[9]->str, want_attempt[e]);
		}
		freeReplyObject(x);
	}

	/* freed while gathered: NULL, once, and nothing sent */
	memset(seen, 0, sizeof seen);
	for (int i = 0; i < 2; i++) {
		start_args(&k, hash[0], &a[i]);
		assert_int_equal(script_batch_send(b, &a[i], on_item, &seen[i]), 0);
	}
	script_batch_free(b);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(seen[i].calls, 1);
		assert_int_equal(seen[i].null, 1);
	}
	int left = 5;
	assert_int_equal(run_until(cond_ticks, &left, WAIT_S), 0);
	assert_int_equal(seen[0].calls + seen[1].calls, 2);
	st = h_redis_str(c, "HGET sb:decision:ok attempts");
	assert_string_equal(st, "2");
	free(st);
	rconn_free(rc);

	/* not up: refused now, no callback */
	o.socket = "/nonexistent/rconn.sock";
	rc = rconn_new(L, &o, "batch2", on_state, NULL);
	assert_non_null(rc);
	b = script_batch_new(L, rc, &set);
	assert_non_null(b);
	memset(seen, 0, sizeof seen);
	start_args(&k, hash[0], &a[0]);
	assert_int_equal(script_batch_send(b, &a[0], on_item, &seen[0]), -1);
	left = 3;
	assert_int_equal(run_until(cond_ticks, &left, WAIT_S), 0);
	assert_int_equal(seen[0].calls, 0);
	script_batch_free(b);
	rconn_free(rc);
	redisFree(c);
	h_redis_stop(&r);
}

/* ---- rconn_reauth (warrantd(7) §9: short-lived Redis tokens) ---- */

static char g_auth_seq[64];	/* "A" accepted, "W" refused, "S" refused to a command
				   sent before the latest AUTH, "R" a reply, in order */
static int g_auth_ok, g_auth_refused;
static char g_auth_kind[32];

static void
on_auth_seen(void *arg, int ok, const char *kind)
{
	size_t n = strlen(g_auth_seq);

	(void)arg;
	if (n + 1 < sizeof g_auth_seq) {
		g_auth_seq[n] = ok > 0 ? 'A' : ok < 0 ? 'S' : 'W';
		g_auth_seq[n + 1] = '\0';
	}
	if (ok > 0)
		g_auth_ok++;
	else
		g_auth_refused++;
	snprintf(g_auth_kind, sizeof g_auth_kind, "%s", kind);
}

static void
on_seq_slot(struct rconn *rc, const struct sreply *view, void *arg)
{
	size_t n = strlen(g_auth_seq);

	if (n + 1 < sizeof g_auth_seq) {
		g_auth_seq[n] = 'R';
		g_auth_seq[n + 1] = '\0';
	}
	on_slot(rc, view, arg);
}

static int
cond_auth_events(void *arg)
{
	return g_auth_ok + g_auth_refused >= *(int *)arg;
}

#define NREAUTH 100

/* AUTH with a new password on the live connection, between pipelined
 * commands: every reply arrives, in order, on the same connection (same
 * CLIENT ID, no reconnect); behind a BLPOP the AUTH is answered when the
 * BLPOP is; a refused AUTH leaves the connection as it was. */
static void
test_reauth_in_order(void **state)
{
	struct h_redis r;
	static struct slot s[2 * NREAUTH];
	struct slot id1, id2, blk, after;
	int want;

	(void)state;
	g_auth_seq[0] = '\0';
	g_auth_ok = g_auth_refused = 0;
	assert_int_equal(h_redis_start(&r, 0), 0);
	redisContext *c = h_redis_connect(&r);
	assert_non_null(c);
	char *ok = h_redis_str(c, "ACL SETUSER tok on >tok-One-1 >tok-Two-2 ~* &* +@all");
	assert_non_null(ok);
	free(ok);
	struct rconn_opts o = opts_for(&r);
	o.username = "tok";
	o.password = "tok-One-1";
	o.auth_seen = on_auth_seen;
	struct rconn *rc = connect_up(&o, "reauth");
	roundtrip(rc, &id1, "CLIENT ID", NULL, NULL);

	memset(s, 0, sizeof s);
	for (int i = 0; i < NREAUTH; i++)
		assert_int_equal(rconn_command(rc, on_slot, &s[i], "INCR n"), 0);
	assert_int_equal(rconn_reauth(rc, "tok-Two-2", 0), 0);
	for (int i = NREAUTH; i < 2 * NREAUTH; i++)
		assert_int_equal(rconn_command(rc, on_slot, &s[i], "INCR n"), 0);
	assert_int_equal(run_until(cond_slot, &s[2 * NREAUTH - 1], WAIT_S), 0);
	for (int i = 0; i < 2 * NREAUTH; i++) {
		assert_int_equal(s[i].calls, 1);
		assert_int_equal(s[i].type, REDIS_REPLY_INTEGER);
		assert_int_equal(s[i].integer, i + 1);
	}
	assert_int_equal(g_auth_ok, 1);
	assert_int_equal(g_auth_refused, 0);
	roundtrip(rc, &id2, "CLIENT ID", NULL, NULL);
	assert_int_equal(id1.integer, id2.integer);
	assert_int_equal(g_ups, 1);
	assert_int_equal(g_downs, 0);

	/* behind a blocking read: answered when the read ends, after it */
	g_auth_seq[0] = '\0';
	memset(&blk, 0, sizeof blk);
	assert_int_equal(rconn_command(rc, on_seq_slot, &blk, "BLPOP q 10"), 0);
	assert_int_equal(rconn_reauth(rc, "tok-One-1", 0), 0);
	want = 2;
	assert_int_equal(run_until(cond_auth_events, &want, 0.5), -1);	/* still held */
	assert_string_equal(g_auth_seq, "");
	freeReplyObject(redisCommand(c, "RPUSH q x"));
	assert_int_equal(run_until(cond_auth_events, &want, WAIT_S), 0);
	assert_string_equal(g_auth_seq, "RA");
	assert_int_equal(blk.type, REDIS_REPLY_ARRAY);

	/* refused: said, and the connection goes on as the old user */
	assert_int_equal(rconn_reauth(rc, "not-the-password", 0), 0);
	want = 3;
	assert_int_equal(run_until(cond_auth_events, &want, WAIT_S), 0);
	assert_int_equal(g_auth_refused, 1);
	assert_string_equal(g_auth_kind, "WRONGPASS");
	roundtrip(rc, &after, "INCR n", NULL, NULL);
	assert_int_equal(after.integer, 2 * NREAUTH + 1);
	assert_int_equal(g_downs, 0);
	assert_int_equal(rconn_reauth(rc, NULL, 0), -1);

	/* a refusal to a command sent before the latest AUTH is told apart */
	ok = h_redis_str(c, "ACL SETUSER tok -incr");
	assert_non_null(ok);
	free(ok);
	g_auth_seq[0] = '\0';
	struct slot p1, p2;
	memset(&p1, 0, sizeof p1);
	memset(&p2, 0, sizeof p2);
	assert_int_equal(rconn_command(rc, on_slot, &p1, "INCR n"), 0);
	assert_int_equal(rconn_reauth(rc, "tok-Two-2", 0), 0);
	assert_int_equal(rconn_command(rc, on_slot, &p2, "INCR n"), 0);
	assert_int_equal(run_until(cond_slot, &p2, WAIT_S), 0);
	assert_string_equal(g_auth_seq, "SAW");
	assert_string_equal(g_auth_kind, "NOPERM");

	rconn_free(rc);
	redisFree(c);
	h_redis_stop(&r);
}

static void
test_auth_error_kinds(void **state)
{
	(void)state;
	assert_int_equal(rconn_auth_error("NOAUTH Authentication required."), 1);
	assert_int_equal(rconn_auth_error("WRONGPASS invalid username-password pair"), 1);
	assert_int_equal(rconn_auth_error("NOPERM this user has no permissions"), 1);
	assert_int_equal(rconn_auth_error("NOAUTH"), 1);
	assert_int_equal(rconn_auth_error("NOAUTHX y"), 0);
	assert_int_equal(rconn_auth_error("ERR NOAUTH"), 0);
	assert_int_equal(rconn_auth_error(NULL), 0);
}

/* A hostile node on a unix socket, in a thread: ROLE says master, and the
 * next command gets "$999999999999" (a bulk string of almost 1 TB) then
 * bytes without end, until the client closes. */
struct huge_node {
	int lfd;
	char path[108];
	long long sent;		/* bytes of the "bulk" the client took */
};

static void *
huge_node_run(void *arg)
{
	static const char role[] = "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n";
	static const char head[] = "$999999999999\r\n";
	struct huge_node *h = arg;
	static char junk[65536];
	char buf[4096];
	int fd = accept(h->lfd, NULL, NULL);

	memset(junk, 'x', sizeof junk);
	if (fd < 0 || read(fd, buf, sizeof buf) <= 0 ||
	    send(fd, role, sizeof role - 1, MSG_NOSIGNAL) < 0 || read(fd, buf, sizeof buf) <= 0 ||
	    send(fd, head, sizeof head - 1, MSG_NOSIGNAL) < 0)
		goto out;
	/* 2 GiB at most: far beyond the cap, and an end if rconn never stops */
	while (h->sent < (2LL << 30)) {
		ssize_t n = send(fd, junk, sizeof junk, MSG_NOSIGNAL);
		if (n <= 0)
			break;
		h->sent += n;
	}
out:
	if (fd >= 0)
		close(fd);
	return NULL;
}

/* VmRSS of this process in KiB, from /proc. */
static long
rss_kib(void)
{
	char line[128];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f != NULL && fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, "VmRSS:", 6) == 0)
			kib = atol(line + 6);
	if (f != NULL)
		fclose(f);
	return kib;
}

/* A server announcing a reply of ~1 TB and sending without end: the
 * command's callback gets NULL, once, redis.error kind=TOOBIG is logged,
 * and rconn holds next to nothing of it (RCONN_REPLY_MAX_BYTES). */
static void
test_huge_reply(void **state)
{
	struct huge_node h = {.lfd = -1};
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	pthread_t th;
	struct slot s;

	(void)state;
	snprintf(h.path, sizeof h.path, "%s/huge.sock", h_tmpdir());
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", h.path);
	h.lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(h.lfd >= 0);
	assert_int_equal(bind(h.lfd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(h.lfd, 4), 0);
	assert_int_equal(pthread_create(&th, NULL, huge_node_run, &h), 0);
	char *log = capture_start("huge.log");
	long before = rss_kib();
	struct rconn_opts o = {.socket = h.path, .connect_timeout_ms = 5000,
	    .backoff_min_ms = 5000, .backoff_max_ms = 5000};
	struct rconn *rc = connect_up(&o, "huge");

	memset(&s, 0, sizeof s);
	assert_int_equal(rconn_command(rc, on_slot, &s, "GET k"), 0);
	assert_int_equal(run_until(cond_slot, &s, WAIT_S), 0);
	long after = rss_kib();
	capture_end();
	assert_int_equal(s.calls, 1);
	assert_int_equal(s.null, 1);
	assert_int_equal(count_in_file(log, "event=redis.error name=huge kind=TOOBIG"), 1);
	assert_int_equal(count_in_file(log, "event=redis.down name=huge"), 1);
	assert_int_equal(pthread_join(th, NULL), 0);
	/* what the server could push before it saw the close: socket buffers */
	assert_true(h.sent < RCONN_REPLY_MAX_BYTES);
	assert_true(after - before < 16 * 1024);
	rconn_free(rc);
	close(h.lfd);
	unlink(h.path);
	free(log);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_script_sha1),
		cmocka_unit_test_setup_teardown(test_set_get_unix, setup, teardown),
		cmocka_unit_test_setup_teardown(test_select_db, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipeline_1000, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restart_outstanding, setup, teardown),
		cmocka_unit_test_setup_teardown(test_command_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_socket_backoff, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handshake_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_auth, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eval_noscript, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_outstanding, setup, teardown),
		cmocka_unit_test_setup_teardown(test_follow_ask, setup, teardown),
		cmocka_unit_test_setup_teardown(test_script_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reauth_in_order, setup, teardown),
		cmocka_unit_test(test_auth_error_kinds),
		cmocka_unit_test_setup_teardown(test_huge_reply, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
