/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_engine: the engine driven through fake operations (engine_ops.h),
 * asserting the exact sequence of what it starts -- connections, commands,
 * scripts, timers, notifications -- at start, on a read with entries, with
 * the hand full, in the lease cycle, on NOGROUP, across a connection going
 * down and up, and at a stop with jobs in hand. Nothing here talks to
 * Redis or runs the loop: a reply is handed to a command's callback, a
 * timer is fired by calling its watcher's callback, as the loop would.
 * The jobs in hand run on fake job operations that log their loads.
 */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>
#include <hiredis/hiredis.h>

#include "base/log.h"
#include "conf/config.h"
#include "redis/sreply.h"
#include "worker/engine.h"
#include "worker/engine_ops.h"
#include "worker/eops.h"
#include "core/record.h"
#include "core/store.h"

/* ------------------------------------------------------------------ */
/* what the engine did, one line per operation                          */

static char seq[16384];

static void
say(const char *fmt, ...)
{
	size_t len = strlen(seq);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(seq + len, sizeof seq - len, fmt, ap);
	va_end(ap);
	len = strlen(seq);
	if (len + 1 < sizeof seq) {
		seq[len] = '\n';
		seq[len + 1] = '\0';
	}
}

/* The operations since the last expect are exactly `want`. */
static void
expect(const char *want)
{
	if (strcmp(seq, want) != 0)
		print_message("got:\n%s--- want:\n%s---\n", seq, want);
	assert_string_equal(seq, want);
	seq[0] = '\0';
}

/* ------------------------------------------------------------------ */
/* fake connections, commands and timers                                */

struct fconn {
	char name[32];
	int up, freed;
	rconn_state_cb *cb;
	void *arg;
};

struct fcmd {
	struct fconn *c;
	rconn_reply_cb *cb;
	void *arg;
	char text[256];
	int done;
};

struct ftimer {
	ev_timer *w;
	const char *what;
	int active;
};

#define MAXN 256
static struct fconn conns[8];
static size_t nconns;
static struct fcmd cmds[MAXN];
static size_t ncmds;
static struct ftimer timers[32];
static size_t ntimers;
static int64_t now_ms = 1700000000000;
static int broke;
static struct ev_loop *L;

static struct fconn *
conn_named(const char *name)
{
	for (size_t i = 0; i < nconns; i++)
		if (strcmp(conns[i].name, name) == 0 && !conns[i].freed)
			return &conns[i];
	fail_msg("no connection %s", name);
	return NULL;
}

static struct rconn *
f_conn_new(void *ctx, const struct rconn_opts *o, const char *name, rconn_state_cb *cb,
	   void *arg)
{
	(void)ctx, (void)o;
	assert_true(nconns < sizeof conns / sizeof conns[0]);
	struct fconn *c = &conns[nconns++];
	snprintf(c->name, sizeof c->name, "%s", name);
	c->cb = cb;
	c->arg = arg;
	say("conn %s", name);
	return (struct rconn *)(void *)c;
}

/* Outstanding commands get NULL, as rconn_free's do. */
static void
f_conn_free(void *ctx, struct rconn *rc)
{
	struct fconn *c = (struct fconn *)(void *)rc;
	(void)ctx;

	if (c == NULL)
		return;
	say("free %s", c->name);
	c->freed = 1;
	c->up = 0;
	for (size_t i = 0; i < ncmds; i++)
		if (cmds[i].c == c && !cmds[i].done) {
			cmds[i].done = 1;
			cmds[i].cb(rc, NULL, cmds[i].arg);
		}
}

static int
f_conn_up(void *ctx, const struct rconn *rc)
{
	(void)ctx;
	return ((const struct fconn *)(const void *)rc)->up;
}

static int
f_conn_reauth(void *ctx, struct rconn *rc, const char *secret, int64_t exp)
{
	(void)ctx, (void)secret, (void)exp;
	say("reauth %s", ((struct fconn *)(void *)rc)->name);
	return 0;
}

static struct script_batch *
f_batch_new(void *ctx, struct rconn *rc, const struct script_set *s)
{
	static char dummy;
	(void)ctx, (void)rc, (void)s;
	return (struct script_batch *)(void *)&dummy;
}

static void
f_batch_free(void *ctx, struct script_batch *b)
{
	(void)ctx, (void)b;
}

static int
queue(struct rconn *rc, rconn_reply_cb *cb, void *arg, const char *text)
{
	struct fconn *c = (struct fconn *)(void *)rc;

	if (c == NULL || !c->up)
		return -1;
	assert_true(ncmds < MAXN);
	cmds[ncmds] = (struct fcmd){.c = c, .cb = cb, .arg = arg};
	snprintf(cmds[ncmds].text, sizeof cmds[ncmds].text, "%s: %s", c->name, text);
	say("%s", cmds[ncmds].text);
	ncmds++;
	return 0;
}

static int
f_commandv(void *ctx, struct rconn *rc, rconn_reply_cb *cb, void *arg, int argc,
	   const char **argv, const size_t *argvlen)
{
	char text[256] = "";
	(void)ctx, (void)argvlen;

	/* the heartbeat hash's fields are many: its key is enough */
	int n = argc > 0 && strcmp(argv[0], "HSET") == 0 ? 2 : argc;
	for (int i = 0; i < n; i++) {
		size_t len = strlen(text);
		snprintf(text + len, sizeof text - len, "%s%s", i ? " " : "", argv[i]);
	}
	return queue(rc, cb, arg, text);
}

static int
f_script(void *ctx, struct rconn *rc, const struct script_set *s, const struct store_args *a,
	 rconn_reply_cb *cb, void *arg)
{
	char text[256];
	(void)ctx, (void)s;

	if (a->script == STORE_CLAIM)
		snprintf(text, sizeof text, "script claim %s from %s count %s",
		    a->v[STORE_CLAIM_MODE & 0xff], a->v[STORE_CLAIM_START & 0xff],
		    a->v[STORE_CLAIM_COUNT & 0xff]);
	else if (a->script == STORE_RENEW)
		snprintf(text, sizeof text, "script renew ids %zu", a->nrest);
	else
		snprintf(text, sizeof text, "script %s", store_scripts[a->script].name);
	return queue(rc, cb, arg, text);
}

static struct ftimer *
timer_of(ev_timer *w)
{
	for (size_t i = 0; i < ntimers; i++)
		if (timers[i].w == w)
			return &timers[i];
	return NULL;
}

static void
f_timer_start(void *ctx, ev_timer *w, const char *what)
{
	struct ftimer *t = timer_of(w);
	(void)ctx;

	if (t == NULL) {
		assert_true(ntimers < sizeof timers / sizeof timers[0]);
		t = &timers[ntimers++];
		t->w = w;
	}
	t->what = what;
	t->active = 1;
	say("timer %s %.3f", what, w->at);
}

static void
f_timer_stop(void *ctx, ev_timer *w)
{
	struct ftimer *t = timer_of(w);
	(void)ctx;

	if (t != NULL && t->active) {
		t->active = 0;
		say("stop %s", t->what);
	}
}

static int
f_timer_active(void *ctx, const ev_timer *w)
{
	struct ftimer *t = timer_of((ev_timer *)(uintptr_t)w);
	(void)ctx;
	return t != NULL && t->active;
}

static int64_t
f_now_ms(void *ctx)
{
	(void)ctx;
	return now_ms;
}

static void
f_notify(void *ctx, const char *state)
{
	(void)ctx;
	say("notify %s", state);
}

static void
f_break(void *ctx)
{
	(void)ctx;
	broke++;
	say("break");
}

/* ------------------------------------------------------------------ */
/* fake job operations: loads are logged and wait for the test          */

struct fload {
	ejob_load_cb *cb;
	void *arg;
	int done;
};
static struct fload loads[MAXN];
static size_t nloads;

static int64_t
j_now_ms(void *ctx)
{
	(void)ctx;
	return now_ms;
}

static void *
j_timer(void *ctx, int64_t delay_ms, ejob_timer_cb *cb, void *arg)
{
	static char handle;
	(void)ctx, (void)cb, (void)arg;
	say("job.timer %lld", (long long)delay_ms);
	return &handle;
}

static int
j_load(void *ctx, const char *hash_key, const char *final_key, ejob_load_cb *cb, void *arg)
{
	(void)ctx, (void)final_key;
	assert_true(nloads < MAXN);
	loads[nloads++] = (struct fload){cb, arg, 0};
	say("job.load %s", hash_key);
	return 0;
}

static void
j_cancel(void *ctx, enum ejob_op kind, void *h)
{
	(void)ctx, (void)kind, (void)h;
}

static int
j_fails(void)
{
	say("job.other");
	return -1;
}

static ejob_write_cb *write_cb;
static void *write_arg;

/* one write at a time is enough here: the test answers it (write_ok) */
static int
j_write(void *ctx, const struct store_transition *t, int wait_replicas, ejob_write_cb *cb,
	void *arg)
{
	(void)ctx, (void)t, (void)wait_replicas;
	assert_null(write_cb);
	write_cb = cb;
	write_arg = arg;
	say("job.write");
	return 0;
}

static void
write_ok(void)
{
	ejob_write_cb *cb = write_cb;
	struct ejob_written w = {.ok = 1, .written = 1, .why = "ok", .fence = -1, .replicas = -1};

	assert_non_null(cb);
	write_cb = NULL;
	cb(write_arg, &w);
}

/* A job's load finds no hash (the entry's record is gone). */
static void
load_missing(size_t i)
{
	struct ejob_loaded none = {.ok = 1, .exists = 0};

	assert_true(i < nloads && !loads[i].done);
	loads[i].done = 1;
	loads[i].cb(loads[i].arg, &none);
}

static int
j_redispatch(void *ctx, const char *stream_id, long long expected, ejob_moved_cb *cb, void *arg)
{
	(void)ctx, (void)stream_id, (void)expected, (void)cb, (void)arg;
	return j_fails();
}

static int
j_reclaim(void *ctx, const char *stream_id, ejob_moved_cb *cb, void *arg)
{
	(void)ctx, (void)stream_id, (void)cb, (void)arg;
	return j_fails();
}

static unsigned
j_auth(void *ctx, const char *action)
{
	(void)ctx, (void)action;
	return 0;
}

/* as eops_ops's: the consumer's own callback */
static void
j_released(void *ctx)
{
	struct eops *e = ctx;

	say("job.released");
	e->released(e->arg);
}

static int
j_verify(void *ctx, const char *id, const char *raw, int64_t now, struct ejob_verified *out,
	 ejob_verify_cb *cb, void *arg, void **h)
{
	(void)ctx, (void)id, (void)raw, (void)now, (void)cb, (void)arg, (void)h;
	memset(out, 0, sizeof *out);
	out->status = RECORD_BAD_SIGNATURE;
	say("job.verify");
	return 0;
}

static int
j_call(void *ctx, const struct http_request *req, http_done_cb *cb, void *arg, void **h)
{
	(void)ctx, (void)req, (void)cb, (void)arg, (void)h;
	return j_fails();
}

static void *
j_exchange(void *ctx, const struct ejob_exchange_req *rq, uint64_t *gen, oauth_exchange_cb *cb,
	   void *arg)
{
	(void)ctx, (void)rq, (void)gen, (void)cb, (void)arg;
	say("job.exchange");
	return NULL;
}

static int
j_handback(void *ctx, const char *hash_key, const char *stream_id, const char *record_id,
	   ejob_moved_cb *cb, void *arg)
{
	(void)ctx, (void)hash_key, (void)stream_id, (void)record_id, (void)cb, (void)arg;
	return j_fails();
}

static const char *
j_bearer(void *ctx, const char *action, long timeout_ms, uint64_t *gen)
{
	(void)ctx, (void)action, (void)timeout_ms;
	*gen = 0;
	return NULL;
}

static void
j_token_verdict(void *ctx, const char *action, uint64_t gen, int accepted)
{
	(void)ctx, (void)action, (void)gen, (void)accepted;
}

static void
j_notified(void *ctx, const char *id, const char *owner, const char *kind, const char *reason,
	   const char *on_behalf_of, const char *action, const char *resource, const char *at)
{
	(void)ctx, (void)id, (void)owner, (void)kind, (void)reason, (void)on_behalf_of;
	(void)action, (void)resource, (void)at;
	say("job.notified");
}

static void
j_call_done(void *ctx, const char *action, long status, long long duration_ms,
	    long long queue_delay_ms)
{
	(void)ctx, (void)action, (void)status, (void)duration_ms, (void)queue_delay_ms;
}

static void
j_outcome(void *ctx, const char *action, const char *state, const char *reason)
{
	(void)ctx, (void)action;
	say("job.outcome %s %s", state, reason);
}

static const struct ejob_ops job_ops = {
	.verify = j_verify, .call = j_call, .exchange = j_exchange, .handback = j_handback,
	.bearer = j_bearer, .token_verdict = j_token_verdict, .notified = j_notified,
	.call_done = j_call_done, .outcome = j_outcome,
	.now_ms = j_now_ms, .timer = j_timer, .load = j_load, .write = j_write,
	.redispatch = j_redispatch, .reclaim = j_reclaim, .cancel = j_cancel, .auth = j_auth,
	.released = j_released,
};

static const struct engine_ops ops = {
	.conn_new = f_conn_new, .conn_free = f_conn_free, .conn_up = f_conn_up,
	.conn_reauth = f_conn_reauth, .batch_new = f_batch_new, .batch_free = f_batch_free,
	.commandv = f_commandv, .script = f_script, .timer_start = f_timer_start,
	.timer_stop = f_timer_stop, .timer_active = f_timer_active, .now_ms = f_now_ms,
	.notify = f_notify, .break_loop = f_break, .jobs = &job_ops,
};

/* ------------------------------------------------------------------ */
/* replies                                                              */

static redisReply *
r_new(int type)
{
	redisReply *r = calloc(1, sizeof *r);
	assert_non_null(r);
	r->type = type;
	return r;
}

static redisReply *
r_str(int type, const char *s)
{
	redisReply *r = r_new(type);
	r->str = strdup(s);
	r->len = strlen(s);
	return r;
}

#define R_STR(s)	r_str(REDIS_REPLY_STRING, s)
#define R_OK()		r_str(REDIS_REPLY_STATUS, "OK")
#define R_ERR(s)	r_str(REDIS_REPLY_ERROR, s)

static redisReply *
r_arr(size_t n, ...)
{
	redisReply *r = r_new(REDIS_REPLY_ARRAY);
	va_list ap;

	r->elements = n;
	r->element = calloc(n ? n : 1, sizeof *r->element);
	assert_non_null(r->element);
	va_start(ap, n);
	for (size_t i = 0; i < n; i++)
		r->element[i] = va_arg(ap, redisReply *);
	va_end(ap);
	return r;
}

static void
r_free(redisReply *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->elements; i++)
		r_free(r->element[i]);
	free(r->element);
	free(r->str);
	free(r);
}

/* The first unanswered command that starts with `prefix` gets r (NULL:
 * none came), from the loop as it were: the callback runs now. */
static void
answer(const char *prefix, redisReply *r)
{
	for (size_t i = 0; i < ncmds; i++) {
		struct fcmd *c = &cmds[i];
		if (c->done || strncmp(c->text, prefix, strlen(prefix)) != 0)
			continue;
		c->done = 1;
		c->cb((struct rconn *)(void *)c->c, r ? sreply_of(r) : NULL, c->arg);
		r_free(r);
		return;
	}
	fail_msg("no command %s outstanding", prefix);
}

/* Every command outstanding that starts with prefix gets a copy of what
 * make() builds. */
static void
answer_all(const char *prefix, redisReply *(*make)(void))
{
	for (size_t i = 0; i < ncmds; i++)
		if (!cmds[i].done && strncmp(cmds[i].text, prefix, strlen(prefix)) == 0)
			answer(prefix, make());
}

static redisReply *
r_ok(void)
{
	return R_OK();
}

static redisReply *
r_empty_hash(void)
{
	return r_arr(0);
}

static redisReply *
r_int(long long v)
{
	redisReply *r = r_new(REDIS_REPLY_INTEGER);
	r->integer = v;
	return r;
}

/* lua/owner.lua's answers: the name is ours, or held by value */
static redisReply *
r_owner_won(void)
{
	return r_arr(2, r_int(1), R_STR("me 1000"));
}

static redisReply *
r_owner_held(const char *value)
{
	return r_arr(3, r_int(0), R_STR(value), r_int(2500));
}

static redisReply *
r_claim_done(void)
{
	return r_arr(3, R_STR("0-0"), r_arr(0), r_arr(0));
}

static void
set_up(const char *name, int up)
{
	struct fconn *c = conn_named(name);

	c->up = up;
	if (!up)	/* as rconn: outstanding commands fail first */
		for (size_t i = 0; i < ncmds; i++)
			if (cmds[i].c == c && !cmds[i].done) {
				cmds[i].done = 1;
				cmds[i].cb((struct rconn *)(void *)c, NULL, cmds[i].arg);
			}
	c->cb((struct rconn *)(void *)c, up, c->arg);
}

/* The loop fires the active timer named what. */
static void
fire(const char *what)
{
	for (size_t i = 0; i < ntimers; i++) {
		struct ftimer *t = &timers[i];
		if (!t->active || strcmp(t->what, what) != 0)
			continue;
		if (t->w->repeat == 0)
			t->active = 0;
		ev_invoke(L, t->w, EV_TIMER);
		return;
	}
	fail_msg("no timer %s active", what);
}

/* ------------------------------------------------------------------ */
/* fixture                                                              */

static const char ini[] =
	"[daemon]\nconsumer = w1\nmax_in_flight = 2\nheartbeat_ms = 1000\n"
	"[redis]\nprefix = P\ngroup = g\nbatch = 2\nblock_ms = 1000\nlease_renew_ms = 500\n"
	"claim_interval_ms = 3000\n"
	"[records]\nsignature = off\n"
	"[action a]\nurl = http://127.0.0.1/x\nauth = none\n";

static struct engine *E;

static int
setup(void **state)
{
	static const struct cfg_env cenv = {.host = "test-host", .dir = "/etc/warrantd"};
	struct cfg_errors errs = {0};
	char err[256] = "";

	(void)state;
	log_set_level(LOG_ERROR);
	memset(conns, 0, sizeof conns);
	nconns = ncmds = ntimers = nloads = 0;
	write_cb = NULL;
	broke = 0;
	seq[0] = '\0';
	L = ev_loop_new(EVFLAG_AUTO);
	struct cfg *cfg = cfg_parse("t.ini", ini, sizeof ini - 1, &cenv, &errs);
	for (size_t i = 0; i < errs.n; i++)
		print_message("config: %s\n", errs.msgs[i]);
	assert_non_null(cfg);
	E = engine_new_with(L, cfg, &ops, NULL, err, sizeof err);
	if (E == NULL)
		print_message("engine_new: %s\n", err);
	assert_non_null(E);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	engine_free(E);
	ev_loop_destroy(L);
	log_set_level(LOG_INFO);
	return 0;
}

/* Start, both connections up, the group made, the own PEL read empty. */
static void
start_ready(void)
{
	engine_start(E);
	set_up("cmd", 1);
	answer("cmd: FCALL_RO", R_STR(STORE_LIBRARY_VERSION));
	answer("cmd: script owner", r_owner_won());
	answer("cmd: FCALL_RO", R_STR(STORE_LIBRARY_VERSION));
	answer("cmd: XGROUP", R_OK());
	answer("cmd: script claim", r_claim_done());
	set_up("read", 1);
	answer("cmd: script claim", r_claim_done());
	answer_all("cmd: script heartbeat", r_ok);
	answer_all("cmd: HGETALL", r_empty_hash);
	seq[0] = '\0';
}

/* An XREADGROUP reply of n entries on P:jobs, ids 1-0, 2-0, ... */
static redisReply *
entries(size_t n)
{
	redisReply *list = r_arr(0);
	char id[32], rid[32];

	free(list->element);
	list->elements = n;
	list->element = calloc(n ? n : 1, sizeof *list->element);
	for (size_t i = 0; i < n; i++) {
		snprintf(id, sizeof id, "%zu-0", i + 1);
		snprintf(rid, sizeof rid, "r%zu", i + 1);
		list->element[i] = r_arr(2, R_STR(id), r_arr(2, R_STR("id"), R_STR(rid)));
	}
	return r_arr(1, r_arr(2, R_STR("P:jobs"), list));
}

/* ------------------------------------------------------------------ */
/* tests                                                                */

/* R14: connections, then the version and the group, then the own PEL,
 * then the first read; READY only once the own PEL is read. */
static void
test_start(void **state)
{
	(void)state;
	engine_start(E);
	expect("conn cmd\nconn read\n"
	       "timer heartbeat 1.000\ntimer claim 3.000\ntimer lease 0.500\n");
	set_up("cmd", 1);
	/* issue 38 item 1: the library, then the name's claim; nothing else */
	expect("cmd: FCALL_RO warrantd_version 0\ncmd: script owner\n");
	answer("cmd: FCALL_RO", R_STR(STORE_LIBRARY_VERSION));
	answer("cmd: script owner", r_owner_won());
	expect("cmd: script heartbeat\ncmd: HSET P:consumer:w1\ncmd: PEXPIRE P:consumer:w1 3000\n"
	       "cmd: HGETALL P:paused\n"
	       "cmd: FCALL_RO warrantd_version 0\n"
	       "cmd: XGROUP CREATE P:jobs g 0 MKSTREAM\n");
	answer("cmd: FCALL_RO", R_STR(STORE_LIBRARY_VERSION));
	expect("");
	answer("cmd: XGROUP", R_OK());
	expect("cmd: script claim own from 0 count 2\n");
	answer("cmd: script claim", r_claim_done());
	expect("notify READY=1\nSTATUS=consuming\n");	/* the read connection is not up */
	set_up("read", 1);
	/* the read's connection came: our PEL again, then the read */
	expect("cmd: script claim own from 0 count 2\n");
	answer("cmd: script claim", r_claim_done());
	expect("notify READY=1\nSTATUS=consuming\n"
	       "read: XREADGROUP GROUP g w1 COUNT 2 BLOCK 1000 STREAMS P:jobs >\n");
	assert_int_equal(broke, 0);
}

/* A server older than 7.0 (no FCALL_RO) ends the start with EX_UNAVAILABLE. */
static void
test_start_too_old(void **state)
{
	(void)state;
	engine_start(E);
	set_up("cmd", 1);
	seq[0] = '\0';
	answer("cmd: FCALL_RO", R_ERR("ERR unknown command 'FCALL_RO', with args beginning "
	    "with: 'warrantd_version' '0' "));
	expect("break\n");
	assert_int_equal(engine_exit_status(E), 69);
}

/* §2.1: a missing library, or another version of it, ends the start with
 * EX_PROTOCOL (76), and the group's reply after it starts no read. */
static void
test_start_wrong_library(void **state)
{
	(void)state;
	engine_start(E);
	set_up("cmd", 1);
	seq[0] = '\0';
	answer("cmd: FCALL_RO", R_STR("0000000000000000"));
	expect("break\n");
	assert_int_equal(engine_exit_status(E), 76);
	answer("cmd: script owner", r_owner_won());
	expect("");
}

static void
test_start_no_library(void **state)
{
	(void)state;
	engine_start(E);
	set_up("cmd", 1);
	seq[0] = '\0';
	answer("cmd: FCALL_RO", R_ERR("ERR Function not found"));
	expect("break\n");
	assert_int_equal(engine_exit_status(E), 76);
}

/* R18: the entries read are loaded; the read goes on with the room left. */
static void
test_read_entries(void **state)
{
	(void)state;
	start_ready();
	answer("read: XREADGROUP", entries(1));
	expect("job.load P:decision:r1\n"
	       "read: XREADGROUP GROUP g w1 COUNT 1 BLOCK 1000 STREAMS P:jobs >\n");
}

/* R18: with the hand full nothing is read, until an entry leaves it. */
static void
test_hand_full(void **state)
{
	(void)state;
	start_ready();
	answer("read: XREADGROUP", entries(2));
	expect("job.load P:decision:r1\njob.load P:decision:r2\n");	/* no read: no room */
	fire("claim");	/* nor a claim of others' entries */
	expect("cmd: ZRANGEBYSCORE P:scheduled -inf +inf LIMIT 0 1\n"
	       "cmd: ZRANGE P:parked 0 -1 WITHSCORES\ncmd: script trim\n");
	/* one load finds no hash: its end is written, the entry leaves the
	 * hand, and there is room for one */
	load_missing(0);
	expect("job.write\n");
	write_ok();
	expect("job.outcome dead record-missing\njob.released\n"
	       "read: XREADGROUP GROUP g w1 COUNT 1 BLOCK 1000 STREAMS P:jobs >\n");
}

/* R6: each claim tick asks P:parked (a one-key read, issue 27 item 5);
 * an action the gate lets go has its parked entries queued again, a page
 * of `batch` at a time until a page is short; none when nothing is parked. */
static void
test_unpark(void **state)
{
	(void)state;
	start_ready();
	seq[0] = '\0';
	fire("claim");
	answer("cmd: ZRANGE P:parked", r_arr(0));
	answer("cmd: ZRANGEBYSCORE P:scheduled", r_arr(0));
	answer("cmd: script claim", r_claim_done());
	expect("cmd: ZRANGEBYSCORE P:scheduled -inf +inf LIMIT 0 1\n"
	       "cmd: ZRANGE P:parked 0 -1 WITHSCORES\ncmd: script trim\n"
	       "cmd: script claim auto from 0 count 2\n");
	fire("claim");
	answer("cmd: ZRANGE P:parked", r_arr(2, R_STR("a"), R_STR("99999999999999")));
	expect("cmd: ZRANGEBYSCORE P:scheduled -inf +inf LIMIT 0 1\n"
	       "cmd: ZRANGE P:parked 0 -1 WITHSCORES\ncmd: script trim\n"
	       "cmd: script claim auto from 0 count 2\ncmd: script unpark\n");
	redisReply *full = r_new(REDIS_REPLY_INTEGER);
	full->integer = 2;	/* [redis] batch */
	answer("cmd: script unpark", full);	/* a whole page: the next one */
	expect("cmd: script unpark\n");
	redisReply *some = r_new(REDIS_REPLY_INTEGER);
	some->integer = 1;
	answer("cmd: script unpark", some);	/* the last: then the reads go on */
	assert_null(strstr(seq, "script unpark"));
}

/* R10: the lease timer renews what is in hand; a refused renewal backs
 * off and is sent again from its own timer, not the next tick. */
static void
test_lease_cycle(void **state)
{
	(void)state;
	start_ready();
	answer("read: XREADGROUP", entries(1));
	seq[0] = '\0';
	fire("lease");
	expect("cmd: script renew ids 1\n");
	answer("cmd: script renew", r_arr(2, r_arr(0), r_arr(0)));
	expect("");
	fire("lease");
	expect("cmd: script renew ids 1\n");
	answer("cmd: script renew", R_ERR("BUSY Redis is busy running a script"));
	assert_non_null(strstr(seq, "timer renew_retry"));
	seq[0] = '\0';
	fire("renew_retry");
	expect("cmd: script renew ids 1\n");
}

/* An idle worker's lease timer stops itself (issue 10). */
static void
test_lease_idle(void **state)
{
	(void)state;
	start_ready();
	fire("lease");
	expect("stop lease\n");
}

/* R14: NOGROUP on the read: the group is made again, then read. */
static void
test_nogroup(void **state)
{
	(void)state;
	start_ready();
	answer("read: XREADGROUP", R_ERR("NOGROUP No such key 'P:jobs' or consumer group 'g' "
	    "in XREADGROUP with GROUP option"));
	expect("cmd: FCALL_RO warrantd_version 0\n"
	       "cmd: XGROUP CREATE P:jobs g 0 MKSTREAM\n");
	answer("cmd: FCALL_RO", R_STR(STORE_LIBRARY_VERSION));
	answer("cmd: XGROUP", R_OK());
	expect("read: XREADGROUP GROUP g w1 COUNT 2 BLOCK 1000 STREAMS P:jobs >\n");
}

/* R17: the command connection goes: nothing is sent; back up, the
 * heartbeat goes before the own PEL is scanned again, then the group. */
static void
test_down_up(void **state)
{
	(void)state;
	start_ready();
	answer("read: XREADGROUP", entries(1));
	seq[0] = '\0';
	set_up("cmd", 0);
	expect("notify STATUS=redis unreachable, reconnecting\n");
	fire("lease");
	fire("heartbeat");
	expect("");
	set_up("cmd", 1);
	expect("notify STATUS=consuming\ncmd: script renew ids 1\n"
	       "cmd: FCALL_RO warrantd_version 0\ncmd: script owner\n");
	fire("claim");	/* nothing taken into hand before the name is ours again */
	expect("");
	answer("cmd: script owner", r_owner_won());
	expect("cmd: script heartbeat\ncmd: HSET P:consumer:w1\ncmd: PEXPIRE P:consumer:w1 3000\n"
	       "cmd: HGETALL P:paused\n"
	       "cmd: FCALL_RO warrantd_version 0\n"
	       "cmd: XGROUP CREATE P:jobs g 0 MKSTREAM\n");
	answer("cmd: XGROUP", R_OK());
	expect("cmd: script claim own from 0 count 1\n");
}

/* R15: a stop drops the blocking read, claims nothing more, waits for the
 * jobs in hand up to the grace, and ends the loop when the last leaves. */
static void
test_stop_with_jobs(void **state)
{
	(void)state;
	start_ready();
	answer("read: XREADGROUP", entries(1));
	seq[0] = '\0';
	engine_stop(E);
	expect("notify STOPPING=1\nstop claim\ntimer grace 15.000\nfree read\n");
	assert_int_equal(broke, 0);
	/* R15: not started, it stays pending, unwritten; the last one out
	 * ends the stop */
	load_missing(0);
	/* issue 38 item 1: the name is given back before the loop ends */
	expect("job.released\ncmd: script release\n");
	assert_int_equal(broke, 0);
	answer("cmd: script release", r_int(1));
	expect("stop grace\nbreak\n");
	assert_int_equal(broke, 1);
	assert_int_equal(engine_exit_status(E), 0);
}

/* Issue 38 item 1: at start a name whose claim moves on (a live holder
 * renews it) refuses the start with 73; nothing is ever read. */
static void
test_name_taken(void **state)
{
	(void)state;
	engine_start(E);
	set_up("cmd", 1);
	set_up("read", 1);
	answer("cmd: FCALL_RO", R_STR(STORE_LIBRARY_VERSION));
	seq[0] = '\0';
	answer("cmd: script owner", r_owner_held("other 1000"));
	expect("timer owner_retry 0.500\n");
	fire("heartbeat");	/* no heartbeat, no renewal under another's name */
	expect("cmd: HGETALL P:paused\n");
	fire("owner_retry");
	expect("cmd: script owner\n");
	answer("cmd: script owner", r_owner_held("other 2000"));
	expect("timer name_stop 0.000\n");
	fire("name_stop");
	assert_int_equal(broke, 1);
	assert_int_equal(engine_exit_status(E), 73);
	assert_null(strstr(seq, "XREADGROUP"));
	assert_null(strstr(seq, "script release"));	/* the claim is not ours */
}

/* ... a claim that does not move is a dead holder's: waited out, then
 * taken, and the worker starts as usual. */
static void
test_name_waited_out(void **state)
{
	(void)state;
	engine_start(E);
	set_up("cmd", 1);
	answer("cmd: FCALL_RO", R_STR(STORE_LIBRARY_VERSION));
	answer("cmd: script owner", r_owner_held("dead 1000"));
	fire("owner_retry");
	seq[0] = '\0';
	answer("cmd: script owner", r_owner_held("dead 1000"));
	expect("timer owner_retry 0.500\n");
	fire("owner_retry");
	answer("cmd: script owner", r_owner_won());
	assert_non_null(strstr(seq, "cmd: XGROUP CREATE P:jobs g 0 MKSTREAM\n"));
	assert_int_equal(broke, 0);
}

/* ... and a worker that finds its claim taken while running stops
 * reading and exits 73, leaving the other's claim alone. */
static void
test_name_lost(void **state)
{
	(void)state;
	start_ready();
	fire("heartbeat");
	seq[0] = '\0';
	answer("cmd: script owner", r_owner_held("other 5000"));
	expect("timer name_stop 0.000\n");
	fire("name_stop");
	assert_non_null(strstr(seq, "notify STOPPING=1"));
	assert_null(strstr(seq, "script release"));
	assert_int_equal(broke, 1);
	assert_int_equal(engine_exit_status(E), 73);
}

/* ... and the grace ends the loop with jobs still in hand. */
static void
test_stop_grace(void **state)
{
	(void)state;
	start_ready();
	answer("read: XREADGROUP", entries(1));
	engine_stop(E);
	seq[0] = '\0';
	fire("grace");
	expect("break\n");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_start, setup, teardown),
		cmocka_unit_test_setup_teardown(test_start_too_old, setup, teardown),
		cmocka_unit_test_setup_teardown(test_start_wrong_library, setup, teardown),
		cmocka_unit_test_setup_teardown(test_start_no_library, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_entries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unpark, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hand_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lease_cycle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lease_idle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nogroup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_down_up, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_with_jobs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_grace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_name_taken, setup, teardown),
		cmocka_unit_test_setup_teardown(test_name_waited_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_name_lost, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
