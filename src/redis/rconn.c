/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rconn: an asynchronous Redis connection on libev. hiredis 0.14.1 gives
 * only its reader (with rreply's objects) and its command formatter; rconn
 * owns the socket: one link (rtls.h: clear text or TLS), one ev_io on it,
 * an output buffer, and the FIFO of commands sent.
 *
 * Life of one connection (rc->link): start_connect() makes the link and
 * watches it for writing; on_io() drives its connect and TLS handshake
 * (link_up() then sends AUTH/SELECT/ROLE, whose replies end in
 * became_up()). It ends in exactly one call of conn_gone(), which closes
 * the link: from start_connect() or on_io() when the link failed or the
 * server sent what is not RESP (or too much of it), or from drop() (our
 * timers, rconn_free()). conn_gone() arms the reconnect timer.
 *
 * Exactly once. A command accepted is appended to the output buffer and
 * its struct rc_cmd to rc->sent, in the same order, in one step (cmd_send):
 * so the n-th reply read belongs to the n-th entry. A reply is handed to
 * on_reply() for the queue's head only, which finish() unlinks before the
 * callback runs; a NOSCRIPT resend or an -ASK hand-over moves the entry
 * (to the tail, or to the side connection, which then owes the callback)
 * instead. conn_gone() runs finish(NULL) for every entry left, after the
 * link is closed and before anything else can be queued on it (up is 0).
 * rconn_free() drops the connection, so every callback ran before it
 * returns, and none can after: the entries are gone with it. So each
 * callback runs once: with its reply, or with NULL.
 *
 * Callbacks nest (a reply's callback queues commands, re-AUTHs, asks for a
 * reconnect); nothing is freed inside them: the reply loop checks rc->gen
 * after each callback, a drop asked for inside one arms drop_timer at 0,
 * the side connection is freed from its own timer, and rconn_free() inside
 * a callback of its rconn is a caller bug (asserted: rc->depth).
 *
 * What a reply may make rconn buffer is capped (RCONN_REPLY_MAX_BYTES): a
 * broken or hostile server announcing "$<huge>" or sending without end
 * gets redis.error kind=TOOBIG and the connection is dropped.
 *
 * This file holds the FIFO and its replies; the socket is rconn_io.c, the
 * handshake rconn_auth.c, connect/drop/reconnect rconn_life.c (rconn_int.h).
 */
#define _DEFAULT_SOURCE		/* strdup, strncasecmp */
#include "rconn_int.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include <hiredis/hiredis.h>
#include <openssl/evp.h>

#include "base/backoff.h"
#include "core/resp.h"
#include "base/log.h"
#include "base/rnd.h"
#include "redis/rreply.h"
#include "base/wtime.h"
#include "redis/cluster.h"
#include "redis/sentinel.h"
#include "core/allowlist.h"
#include "redis/rtls.h"

static const char *const expected_errors[] = {"BUSYGROUP", "NOSCRIPT"};


void
rconn_script_init(struct rconn_script *s, const char *body)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	s->body = body;
	s->verb = NULL;
	s->sha1[0] = '\0';
	if (EVP_Digest(body, strlen(body), md, &mdlen, EVP_sha1(), NULL) != 1 || mdlen != 20)
		return;		/* EVALSHA then fails with NOSCRIPT and EVAL still runs */
	for (unsigned i = 0; i < mdlen; i++) {
		s->sha1[2 * i] = hex[md[i] >> 4];
		s->sha1[2 * i + 1] = hex[md[i] & 15];
	}
	s->sha1[40] = '\0';
}

void
rconn_function_init(struct rconn_script *s, const char *name, int read_only)
{
	s->body = NULL;
	s->verb = read_only ? "FCALL_RO" : "FCALL";
	snprintf(s->sha1, sizeof s->sha1, "%s", name);
}

/* Queue of outstanding commands. */

static void
q_push(struct rconn *rc, struct rc_cmd *c)
{
	TAILQ_INSERT_TAIL(&rc->sent, c, link);
}

static void
q_unlink(struct rconn *rc, struct rc_cmd *c)
{
	TAILQ_REMOVE(&rc->sent, c, link);
}

static void
cmd_free(struct rc_cmd *c)
{
	free(c);
}


/* One command of argv as RESP into rc->fbuf (scratch, kept); its length,
 * or -1. RESP is written by hand (resp.h). */
static long
resp_format(struct rconn *rc, int argc, const char **argv, const size_t *argvlen)
{
	size_t len = 1 + dec_len((size_t)argc) + 2;

	for (int i = 0; i < argc; i++)
		len += resp_bulk_len(argvlen ? argvlen[i] : strlen(argv[i]));
	if (len > LONG_MAX)
		return -1;
	if (len > rc->fcap) {
		char *nb = realloc(rc->fbuf, len);
		if (nb == NULL)
			return -1;
		rc->fbuf = nb;
		rc->fcap = len;
	}
	char *p = rc->fbuf;
	*p++ = '*';
	p = dec_put(p, (size_t)argc);
	*p++ = '\r';
	*p++ = '\n';
	for (int i = 0; i < argc; i++)
		p = resp_put_bulk(p, argv[i], argvlen ? argvlen[i] : strlen(argv[i]));
	return (long)len;
}

/* The one place a command's callback runs. */
void
rc_finish(struct rconn *rc, struct rc_cmd *c, redisReply *reply)
{
	q_unlink(rc, c);
	if (c->hs == NULL)
		rc->npending--;
	rc->depth++;
	if (c->hs != NULL)
		c->hs(rc, reply, c->arg);
	else
		c->cb(rc, sreply_of(reply), c->arg);
	rc->depth--;
	cmd_free(c);
}

static int
is_noscript(const redisReply *reply)
{
	return reply->type == REDIS_REPLY_ERROR && reply->str != NULL &&
	    strncmp(reply->str, "NOSCRIPT", 8) == 0;
}

/* The EVAL of a kept EVALSHA, malloc'ed (the caller frees), its length in
 * *len; NULL when out of memory. */
static char *
eval_of(const struct rc_cmd *c, size_t *len)
{
	/* "*N\r\n" stays; "$7 EVALSHA $40 sha" becomes "$4 EVAL $len body". */
	const char *nl = memchr(c->sha_cmd, '\n', c->sha_len);
	size_t head = nl ? (size_t)(nl - c->sha_cmd) + 1 : 0, blen = strlen(c->script);
	char *cmd, *p;

	*len = head + resp_bulk_len(4) + resp_bulk_len(blen) + c->sha_len - c->rest_off;
	cmd = head ? malloc(*len) : NULL;
	if (cmd == NULL)
		return NULL;
	memcpy(cmd, c->sha_cmd, head);
	p = resp_put_bulk(cmd + head, "EVAL", 4);
	p = resp_put_bulk(p, c->script, blen);
	memcpy(p, c->sha_cmd + c->rest_off, c->sha_len - c->rest_off);
	return cmd;
}

/* EVALSHA said NOSCRIPT: the same entry goes out again as EVAL, at the end
 * of the pipeline, so it moves to the tail of the queue. */
static int
resend_as_eval(struct rconn *rc, struct rc_cmd *c)
{
	size_t len;
	char *cmd = eval_of(c, &len);

	if (cmd == NULL)
		return -1;
	int r = rc_obuf_put(rc, cmd, len);
	free(cmd);
	if (r != 0)
		return -1;
	c->body = NULL;
	q_unlink(rc, c);
	c->sent_at = ev_now(rc->loop);
	q_push(rc, c);
	return 0;
}

/* The kind of an error's text into buf ("" when it has no leading
 * upper-case word), cut to n - 1 bytes. */
void
rc_error_kind(const char *text, char *buf, size_t n)
{
	size_t k = 0;

	if (n == 0)
		return;
	for (const char *p = text; k + 1 < n && *p >= 'A' && *p <= 'Z'; p++)
		buf[k++] = *p;
	buf[k] = '\0';
}

static int
expected_error(const char *kind)
{
	for (size_t i = 0; i < sizeof expected_errors / sizeof expected_errors[0]; i++)
		if (strcmp(kind, expected_errors[i]) == 0)
			return 1;
	return 0;
}

/* An episode ends after RCONN_EPISODE_QUIET_MS without an error reply (a
 * replica answers reads and refuses writes: successes between its errors
 * do not end it). */
static void
maybe_end_episode(struct rconn *rc)
{
	if (rc->nerr_kinds == 0 ||
	    ev_now(rc->loop) - rc->last_err_at < RCONN_EPISODE_QUIET_MS / 1000.0)
		return;
	log_info("redis.errors_ended", "name=%s errors=%lld", rc->qname, rc->err_replies);
	rc->nerr_kinds = 0;
	rc->err_replies = 0;
}

/* One line per kind of error per episode (note_reply ends episodes). */
static void
note_error(struct rconn *rc, const char *text)
{
	char kind[RCONN_ERR_KIND_LEN], q[160];

	rc_error_kind(text, kind, sizeof kind);
	if (expected_error(kind))
		return;
	rc->last_err_at = ev_now(rc->loop);
	/* Sentinel: the primary was demoted under us; find the new one.
	 * Cluster: the same after a failover, and MOVED: the slot went. */
	if (rc->error_seen != NULL)
		rc->error_seen(rc->resolve_arg, text);
	if (strcmp(kind, "READONLY") == 0)
		rc_schedule_drop(rc, "READONLY: a failover");
	if (rc->cluster && strcmp(kind, "MOVED") == 0)
		rc_schedule_drop(rc, "MOVED: the slot is served elsewhere");
	if (rc->auth_seen != NULL && rconn_auth_error(kind))
		rc->auth_seen(rc->auth_arg, rc->reply_stale ? -1 : 0, kind);
	rc->err_replies++;
	for (int i = 0; i < rc->nerr_kinds; i++)
		if (strcmp(rc->err_kinds[i], kind) == 0)
			return;
	if (rc->nerr_kinds < RCONN_ERR_KINDS)
		memcpy(rc->err_kinds[rc->nerr_kinds++], kind, sizeof kind);
	log_warn("redis.error", "name=%s kind=%s error=%s", rc->qname, kind[0] ? LOG_Q(kind) : "-",
	    log_quote(q, sizeof q, text));
}

/* One line per kind of error reply per episode, and one when it ends. */
static void
note_reply(struct rconn *rc, const redisReply *reply)
{
	if (reply == NULL)
		return;
	maybe_end_episode(rc);
	if (reply->type == REDIS_REPLY_ERROR)
		note_error(rc, reply->str ? reply->str : "");
}

void
rconn_note_error(struct rconn *rc, const char *text)
{
	if (text != NULL)
		note_error(rc, text);
}

/* Cluster -ASK (the spec: ASKING, then the same command on the importing
 * node, once; the slot map stays as it is). The side connection is opened
 * at the first ASK of an episode, whose command falls back to the caller
 * (the error, retried with backoff like any other); once it is up, later
 * ASKs go through it and the caller sees only the importing node's reply. */

/* What the side connection's callback needs to answer the caller. */
struct ask_fwd {
	struct rconn *rc;	/* the caller's rconn */
	rconn_reply_cb *cb;
	void *arg;
};

static void
on_side_reply(struct rconn *side, const struct sreply *reply, void *arg)
{
	struct ask_fwd f = *(struct ask_fwd *)arg;

	(void)side;
	free(arg);
	f.rc->depth++;		/* rconn_free(f.rc) from here is a caller bug, caught */
	f.cb(f.rc, reply, f.arg);
	f.rc->depth--;
}

/* ASKING's reply: +OK, or an error the command's own reply repeats. */
static void
on_asking(struct rconn *side, const redisReply *reply, void *arg)
{
	(void)side;
	(void)reply;
	(void)arg;
}

/* Frees the side connection at the next tick (never inside a callback). */
void
rc_close_side(struct rconn *rc)
{
	if (rc->side == NULL)
		return;
	rc->side_close = 1;
	ev_timer_stop(rc->loop, &rc->side_timer);
	ev_timer_set(&rc->side_timer, 0.0, 1.0);
	ev_timer_start(rc->loop, &rc->side_timer);
}

/* A child rconn to host:port with rc's AUTH and timeouts, no resolve. */
static int
open_side(struct rconn *rc, const struct cluster_redirect *rd, const char *host)
{
	char name[96];
	struct rconn_opts o = {
		.host = host, .port = rd->to.port, .username = rc->username,
		.password = rc->password, .db = rc->db,
		.password_expires_at_ms = rc->password_expires,
		.auth_seen = rc->auth_seen, .auth_arg = rc->auth_arg,
		.connect_timeout_ms = rc->connect_timeout_ms,
		.command_timeout_ms = rc->command_timeout_ms,
		.backoff_min_ms = rc->backoff_min_ms, .backoff_max_ms = rc->backoff_max_ms,
		.allow = rc->allow, .tls = rc->tls_ctx,
	};

	/* the importing node is whoever the answer named: checked before a
	 * connection (and its AUTH) exists; ROLE is checked at its connect */
	if (!allowlist_check(rc->allow, host, rd->to.port, "ask"))
		return -1;
	snprintf(name, sizeof name, "%s.ask", rc->qname);
	rc->side = rconn_new(rc->loop, &o, name, NULL, NULL);
	if (rc->side == NULL)
		return -1;
	rc->side_close = 0;
	rc->side_used = ev_now(rc->loop);
	ev_timer_stop(rc->loop, &rc->side_timer);
	ev_timer_set(&rc->side_timer, 1.0, 1.0);
	ev_timer_start(rc->loop, &rc->side_timer);
	log_info("redis.ask", "name=%s slot=%u host=%s port=%d", rc->qname, rd->slot,
	    LOG_Q(host), rd->to.port);
	return 0;
}

/* ASKING and c's command on the side connection, back to back. */
static int
send_asked(struct rconn *rc, const struct rc_cmd *c)
{
	struct rconn *side = rc->side;
	size_t len = c->sha_len;
	char *eval = NULL;
	struct ask_fwd *f = malloc(sizeof *f);
	static const char asking[] = "*1\r\n$6\r\nASKING\r\n";

	/* scripts are per node: the importing node may not have this one,
	 * and a NOSCRIPT resend would go without ASKING */
	if (f == NULL || (c->script != NULL && (eval = eval_of(c, &len)) == NULL) ||
	    rc_submit(side, NULL, on_asking, NULL, asking, sizeof asking - 1, NULL, 0) < 0) {
		free(f);
		free(eval);
		return -1;
	}
	*f = (struct ask_fwd){rc, c->cb, c->arg};
	int r = rc_submit(side, on_side_reply, NULL, f, eval ? eval : c->sha_cmd, len, NULL, 0);
	free(eval);
	if (r < 0) {
		free(f);	/* ASKING alone applies to nothing */
		return -1;
	}
	rc->side_used = ev_now(rc->loop);
	return 0;
}

/* 0 when c's -ASK reply was followed (the side connection now owes c's
 * callback), -1 when c gets the reply as it is. */
static int
follow_ask(struct rconn *rc, const struct rc_cmd *c, const redisReply *reply)
{
	struct cluster_redirect rd;

	if (!rc->cluster || reply->type != REDIS_REPLY_ERROR ||
	    cluster_parse_redirect(reply->str, &rd) != CLUSTER_ASK || rc->freeing)
		return -1;
	const char *host = rd.to.host[0] != '\0' ? rd.to.host : rc->host;
	struct rconn *side = rc->side;
	if (host == NULL)
		return -1;
	if (side != NULL && !rc->side_close &&
	    (side->port != rd.to.port || side->host == NULL || strcmp(side->host, host) != 0)) {
		rc_close_side(rc);	/* another slot's migration: the next ASK opens anew */
		return -1;
	}
	if (side == NULL) {
		(void)open_side(rc, &rd, host);	/* up by the caller's retry, or not */
		return -1;
	}
	if (rc->side_close || !rconn_is_up(side))
		return -1;
	return send_asked(rc, c);
}

/* c's callback is the side connection's to call now. */
static void
hand_over(struct rconn *rc, struct rc_cmd *c)
{
	q_unlink(rc, c);
	rc->npending--;
	cmd_free(c);
}

void
rc_on_side_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct rconn *rc = w->data;

	(void)revents;
	if (rc->side != NULL && !rc->side_close && (rconn_pending(rc->side) > 0 ||
	    ev_now(loop) - rc->side_used < RCONN_ASK_IDLE_MS / 1000.0))
		return;
	rc_free_side(rc);
}

/* Its outstanding callbacks get NULL now. Not from inside one of them. */
void
rc_free_side(struct rconn *rc)
{
	struct rconn *side = rc->side;

	ev_timer_stop(rc->loop, &rc->side_timer);
	rc->side = NULL;
	rc->side_close = 0;
	rconn_free(side);
}

/* The reply to c, the queue's head (never NULL: rc_conn_gone() calls rc_finish()
 * itself); the caller frees reply afterwards. */
void
rc_on_reply(struct rconn *rc, struct rc_cmd *c, redisReply *reply)
{
	if (c->body != NULL && is_noscript(reply)) {
		if (resend_as_eval(rc, c) == 0)
			return;
		reply = NULL;
	} else if (c->hs == NULL && c->sha_len > 0 && follow_ask(rc, c, reply) == 0) {
		hand_over(rc, c);
		return;
	}
	if (c->hs == NULL) {
		rc->reply_stale = c->auth_epoch != rc->auth_epoch;
		note_reply(rc, reply);
		rc->reply_stale = 0;
	}
	rc_finish(rc, c, reply);
}

static int
refused_command(const char *cmd, size_t len)
{
	static const char *const refused[] = {
		"subscribe", "psubscribe", "unsubscribe", "punsubscribe", "monitor",
	};
	const char *p = memchr(cmd, '$', len);
	char *end;

	if (p == NULL)
		return 1;	/* no arguments at all: hiredis would abort */
	long n = strtol(p + 1, &end, 10);
	if (n <= 0 || end[0] != '\r' || (size_t)(end + 2 - cmd) + (size_t)n > len)
		return 1;
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (strlen(refused[i]) == (size_t)n && strncasecmp(end + 2, refused[i], (size_t)n) == 0)
			return 1;
	return 0;
}

/* A command's entry, with room for keep bytes of it (an EVALSHA's, or any
 * user command's on a cluster). malloc, not calloc: a batch's bytes need
 * no zeroing first. NULL when out of memory. */
static struct rc_cmd *
cmd_new(struct rconn *rc, rconn_reply_cb *cb, handshake_cb *hs, void *arg, size_t keep)
{
	struct rc_cmd *c = malloc(sizeof(*c) + keep);

	if (c != NULL)
		*c = (struct rc_cmd){.cb = cb, .hs = hs, .arg = arg, .rc = rc,
		    .auth_epoch = rc->auth_epoch};
	return c;
}

/* c keeps its EVALSHA (len bytes, already in c->sha_cmd) for NOSCRIPT. */
static void
cmd_keep(struct rc_cmd *c, const char *body, size_t len, size_t rest_off)
{
	c->body = c->script = body;
	c->sha_len = len;
	c->rest_off = rest_off;
}

/* Appends cmd (c's kept bytes or the caller's) to the output buffer and
 * queues c, in one step: the queue's order is the order sent. c is freed
 * when there is no connection or no memory. */
static int
cmd_send(struct rconn *rc, struct rc_cmd *c, const char *cmd, size_t len)
{
	c->sent_at = ev_now(rc->loop);
	if (!rc->linked || rc_obuf_put(rc, cmd, len) != 0) {
		cmd_free(c);
		return -1;
	}
	q_push(rc, c);
	if (c->hs != NULL)
		return 0;
	rc->npending++;
	if (rc->command_timeout_ms > 0 && !ev_is_active(&rc->cmd_timer)) {
		ev_timer_set(&rc->cmd_timer, (double)rc->command_timeout_ms / 1000.0, 0.0);
		ev_timer_start(rc->loop, &rc->cmd_timer);
	}
	return 0;
}

/* Sends a formatted command: a user's (cb) or the handshake's
 * (hs); cmd stays the caller's. With body (an EVALSHA, whose numkeys begins
 * at rest_off) a copy is kept for NOSCRIPT. */
int
rc_submit(struct rconn *rc, rconn_reply_cb *cb, handshake_cb *hs, void *arg, const char *cmd,
       size_t len, const char *body, size_t rest_off)
{
	int keep = body != NULL || (cb != NULL && rc->cluster);

	if (!rc->linked || refused_command(cmd, len))
		return -1;
	struct rc_cmd *c = cmd_new(rc, cb, hs, arg, keep ? len : 0);
	if (c == NULL)
		return -1;
	if (keep) {
		memcpy(c->sha_cmd, cmd, len);
		cmd_keep(c, body, len, rest_off);
	}
	return cmd_send(rc, c, cmd, len);
}

static int
can_send(const struct rconn *rc, rconn_reply_cb *cb)
{
	return rc != NULL && cb != NULL && rc->up && rc->linked && !rc->freeing;
}

int
rconn_command(struct rconn *rc, rconn_reply_cb *cb, void *arg, const char *fmt, ...)
{
	va_list ap;
	char *cmd;
	int len;

	if (!can_send(rc, cb) || fmt == NULL)
		return -1;
	va_start(ap, fmt);
	len = redisvFormatCommand(&cmd, fmt, ap);
	va_end(ap);
	if (len < 0)
		return -1;
	int r = rc_submit(rc, cb, NULL, arg, cmd, (size_t)len, NULL, 0);
	redisFreeCommand(cmd);
	return r;
}

int
rconn_commandv(struct rconn *rc, rconn_reply_cb *cb, void *arg, int argc, const char **argv,
	       const size_t *argvlen)
{
	if (!can_send(rc, cb) || argc < 1 || argv == NULL)
		return -1;
	long len = resp_format(rc, argc, argv, argvlen);
	if (len < 0)
		return -1;
	return rc_submit(rc, cb, NULL, arg, rc->fbuf, (size_t)len, NULL, 0);
}

/* EVALSHA, or a function's FCALL/FCALL_RO. */
static const char *
script_verb(const struct rconn_script *s)
{
	return s->verb != NULL ? s->verb : "EVALSHA";
}

/* The bytes of "*N EVALSHA sha numkeys" for a script call of argc
 * arguments after numkeys (nk: numkeys in decimal). */
static size_t
evalsha_head_len(const struct rconn_script *s, int argc, const char *nk)
{
	return 1 + dec_len((size_t)argc + 3) + 2 + resp_bulk_len(strlen(script_verb(s))) +
	    resp_bulk_len(strlen(s->sha1)) + resp_bulk_len(strlen(nk));
}

/* Writes that head at p; returns the end, *rest_off where numkeys begins. */
static char *
evalsha_head_put(char *p, const struct rconn_script *s, int argc, const char *nk,
		 size_t *rest_off)
{
	char *start = p;

	*p++ = '*';
	p = dec_put(p, (size_t)argc + 3);
	*p++ = '\r';
	*p++ = '\n';
	p = resp_put_bulk(p, script_verb(s), strlen(script_verb(s)));
	p = resp_put_bulk(p, s->sha1, strlen(s->sha1));
	*rest_off = (size_t)(p - start);
	return resp_put_bulk(p, nk, strlen(nk));
}

static int
eval_ok(const struct rconn *rc, const struct rconn_script *s, rconn_reply_cb *cb, int nkeys,
	int argc)
{
	return can_send(rc, cb) && s != NULL && (s->body != NULL || s->verb != NULL) &&
	    nkeys >= 0 && argc >= nkeys &&
	    argc <= INT_MAX - 3;
}

/* The entry of an EVALSHA whose arguments after numkeys take rest_len
 * bytes: its head written, kept for NOSCRIPT; *p is where those bytes go.
 * The EVALSHA is written straight into the entry, and the output buffer
 * takes it from there: no scratch copy between. NULL when out of memory. */
static struct rc_cmd *
eval_begin(struct rconn *rc, const struct rconn_script *s, rconn_reply_cb *cb, void *arg,
	   int nkeys, int argc, size_t rest_len, char **p)
{
	char nk[24];
	size_t rest_off;

	*dec_put(nk, (size_t)nkeys) = '\0';
	size_t len = evalsha_head_len(s, argc, nk) + rest_len;
	struct rc_cmd *c = cmd_new(rc, cb, NULL, arg, len);
	if (c == NULL)
		return NULL;
	*p = evalsha_head_put(c->sha_cmd, s, argc, nk, &rest_off);
	cmd_keep(c, s->body, len, rest_off);
	return c;
}

int
rconn_eval(struct rconn *rc, const struct rconn_script *s, rconn_reply_cb *cb, void *arg,
	   int nkeys, int argc, const char **argv, const size_t *argvlen)
{
	size_t rest_len = 0;
	struct rc_cmd *c;
	char *p;

	if (!eval_ok(rc, s, cb, nkeys, argc) || (argc > 0 && argv == NULL))
		return -1;
	for (int i = 0; i < argc; i++)
		rest_len += resp_bulk_len(argvlen ? argvlen[i] : strlen(argv[i]));
	if ((c = eval_begin(rc, s, cb, arg, nkeys, argc, rest_len, &p)) == NULL)
		return -1;
	for (int i = 0; i < argc; i++)
		p = resp_put_bulk(p, argv[i], argvlen ? argvlen[i] : strlen(argv[i]));
	return cmd_send(rc, c, c->sha_cmd, c->sha_len);
}

int
rconn_eval_resp(struct rconn *rc, const struct rconn_script *s, rconn_reply_cb *cb, void *arg,
		int nkeys, int argc, const struct iovec *parts, size_t nparts)
{
	size_t rest_len = 0;
	struct rc_cmd *c;
	char *p;

	if (!eval_ok(rc, s, cb, nkeys, argc) || (nparts > 0 && parts == NULL))
		return -1;
	for (size_t i = 0; i < nparts; i++)
		rest_len += parts[i].iov_len;
	if ((c = eval_begin(rc, s, cb, arg, nkeys, argc, rest_len, &p)) == NULL)
		return -1;
	for (size_t i = 0; i < nparts; i++)
		if (parts[i].iov_len > 0) {	/* an empty piece may be at NULL */
			memcpy(p, parts[i].iov_base, parts[i].iov_len);
			p += parts[i].iov_len;
		}
	return cmd_send(rc, c, c->sha_cmd, c->sha_len);
}
