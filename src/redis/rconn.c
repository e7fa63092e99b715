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
 */
#define _DEFAULT_SOURCE		/* strdup, strncasecmp */
#include "redis/rconn.h"

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
#include <inttypes.h>
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

/* The handshake's own commands read hiredis's reply; a user's callback sees
 * it through sreply only. */
typedef void handshake_cb(struct rconn *rc, const redisReply *reply, void *arg);

struct rc_cmd {
	TAILQ_ENTRY(rc_cmd) link;
	rconn_reply_cb *cb;	/* a user's command */
	handshake_cb *hs;	/* or a handshake command, not the user's */
	void *arg;
	struct rconn *rc;
	ev_tstamp sent_at;
	unsigned auth_epoch;	/* rc's when it was sent: which AUTH it follows */
	/* An EVALSHA keeps its script's body and the command as sent (in the
	 * same allocation): on NOSCRIPT the EVAL is spliced from the two, once.
	 * Formatting the EVAL up front cost more than the EVALSHA itself.
	 * On a cluster (resolve set) every command keeps its bytes: an -ASK
	 * sends it again, on the side connection to the importing node. */
	const char *body;	/* NULL: not an EVALSHA, or its EVAL was sent */
	const char *script;	/* an EVALSHA's body, kept after its EVAL was sent */
	size_t sha_len, rest_off;	/* sha_len: bytes kept (0: none); rest_off: numkeys */
	char sha_cmd[];
};

struct rconn {
	struct ev_loop *loop;
	char *host, *socket, *username, *password;
	int port, db;
	long connect_timeout_ms, command_timeout_ms, backoff_min_ms, backoff_max_ms;
	rconn_state_cb *state_cb;
	void *state_arg;
	int (*resolve)(void *arg, char *host, size_t hostlen, int *port);
	void *resolve_arg;
	int cluster;		/* MOVED drops, ASK is followed */
	void (*error_seen)(void *arg, const char *error);
	void (*auth_seen)(void *arg, int ok, const char *kind);
	void *auth_arg;
	struct allowlist *allow;	/* borrowed */
	struct rtls_ctx *tls_ctx;	/* borrowed; NULL: clear text */
	enum rconn_role role;
	int once;		/* one attempt, no reconnect */
	int resolving;		/* waiting for rconn_resolved() */
	int resumed;		/* this start_connect follows rconn_resolved() */
	int64_t password_expires;	/* of password; 0: never */
	int64_t auth_expires;		/* of the one this connection was last
					   authenticated with; 0: never */
	unsigned auth_epoch;		/* AUTHs sent on this connection */
	int reply_stale;		/* the reply being read is to a command sent
					   before the latest AUTH */
	char qname[64];		/* the name, ready for a log line */

	/* The connection: its link (NULL between connections), the one
	 * watcher on its socket, what is still to be written, the reader. */
	struct rtls_conn *link;
	int linked;		/* the link is ready: the handshake runs or ran */
	int read_wants_write;	/* TLS: the last read waits for the socket to be writable */
	ev_io io;
	char *obuf;		/* owned; bytes [ooff, olen) are still to be written */
	size_t olen, ooff, ocap;
	redisReader *reader;	/* owned; NULL between connections */
	unsigned gen;		/* bumped by every conn_gone() */
	unsigned attempt;	/* connect attempts since the last success */
	int64_t down_since, down_said;	/* the outage (mono ms; 0: none), its last warn */
	int up;			/* commands are accepted */
	int announced;		/* state_cb(1) ran, so state_cb(0) is owed */
	int handshake_left;	/* AUTH/SELECT replies still awaited */
	int handshake_failed;
	int freeing;
	int depth;		/* callbacks of this rconn running now */
	const char *drop_reason;

	/* R17: error replies are logged once per kind per episode; an
	 * episode ends with the next reply that is not an error. */
	char err_kinds[RCONN_ERR_KINDS][RCONN_ERR_KIND_LEN];
	int nerr_kinds;
	long long err_replies;
	ev_tstamp last_err_at;	/* of the episode's latest error reply */

	TAILQ_HEAD(, rc_cmd) sent;	/* in the order sent */
	size_t npending;		/* user commands among them */
	char *fbuf;			/* owned: scratch for formatting one command */
	size_t fcap;

	ev_timer retry_timer;	/* next connect attempt */
	ev_timer conn_timer;	/* connect + handshake deadline */
	ev_timer cmd_timer;	/* checks the oldest outstanding command */
	ev_timer drop_timer;	/* a drop asked for from inside a callback */

	/* Cluster -ASK: one side connection to the importing node (no
	 * resolve, same AUTH), freed from side_timer only -- never inside a
	 * callback chain -- when rc's connection went or it sat idle. */
	struct rconn *side;
	ev_timer side_timer;
	ev_tstamp side_used;	/* the last command handed to it */
	int side_close;		/* rc's connection went: free it at the next tick */
};

static char step_auth[] = "auth", step_select[] = "select", step_role[] = "role";

/* An AUTH's reply is about the password sent with it, which may have been
 * replaced since: each carries its own expiry. */
struct auth_sent {
	int64_t expires;
};

/* Error kinds that are answers, not trouble: not logged. */
static const char *const expected_errors[] = {"BUSYGROUP", "NOSCRIPT"};

static void start_connect(struct rconn *rc);
static void start_handshake(struct rconn *rc);
static void on_reply(struct rconn *rc, struct rc_cmd *c, redisReply *reply);
static void drop(struct rconn *rc, const char *why);
static void close_side(struct rconn *rc);
static void free_side(struct rconn *rc);
static int submit(struct rconn *rc, rconn_reply_cb *cb, handshake_cb *hs, void *arg,
		  const char *cmd, size_t len, const char *body, size_t rest_off);
static void on_side_timer(struct ev_loop *loop, ev_timer *w, int revents);


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

/* The socket. One ev_io watches it: for writing while the link connects
 * (then for what its TLS handshake wants), then for reading always and for
 * writing while the output buffer holds bytes. */

#define RCONN_OBUF_KEEP	65536	/* more room than this is freed with the link */
#define RCONN_READ_CHUNK 16384	/* a TLS record's most */

static void
io_watch(struct rconn *rc, int events)
{
	if (rc->link == NULL)
		return;
	if (ev_is_active(&rc->io) && (rc->io.events & (EV_READ | EV_WRITE)) == events)
		return;
	ev_io_stop(rc->loop, &rc->io);
	ev_io_set(&rc->io, rtls_link_fd(rc->link), events);
	if (events != 0)
		ev_io_start(rc->loop, &rc->io);
}

static int
wants_events(int wants)
{
	return (wants & RTLS_WANT_READ ? EV_READ : 0) | (wants & RTLS_WANT_WRITE ? EV_WRITE : 0);
}

static void
io_update(struct rconn *rc)
{
	if (!rc->linked)
		io_watch(rc, wants_events(rtls_link_wants(rc->link)));
	else
		io_watch(rc, EV_READ | (rc->ooff < rc->olen || rc->read_wants_write ? EV_WRITE : 0));
}

/* Appends n bytes to the output buffer; they are written when the socket
 * is writable (one write for all a loop iteration queued). 0, or -1 when
 * out of memory (nothing appended). */
static int
obuf_put(struct rconn *rc, const char *p, size_t n)
{
	if (rc->ocap - rc->olen < n && rc->ooff > 0) {	/* the written part goes first */
		memmove(rc->obuf, rc->obuf + rc->ooff, rc->olen - rc->ooff);
		rc->olen -= rc->ooff;
		rc->ooff = 0;
	}
	if (rc->ocap - rc->olen < n) {
		size_t cap = rc->ocap > 0 ? rc->ocap : 4096;
		while (cap - rc->olen < n) {
			if (cap > SIZE_MAX / 2)
				return -1;
			cap *= 2;
		}
		char *nb = realloc(rc->obuf, cap);
		if (nb == NULL)
			return -1;
		rc->obuf = nb;
		rc->ocap = cap;
	}
	memcpy(rc->obuf + rc->olen, p, n);
	rc->olen += n;
	io_update(rc);
	return 0;
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
static void
finish(struct rconn *rc, struct rc_cmd *c, redisReply *reply)
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

static void
notify_state(struct rconn *rc, int up)
{
	if (rc->state_cb == NULL)
		return;
	rc->depth++;
	rc->state_cb(rc, up, rc->state_arg);
	rc->depth--;
}

static void
stop_conn_timers(struct rconn *rc)
{
	ev_timer_stop(rc->loop, &rc->conn_timer);
	ev_timer_stop(rc->loop, &rc->cmd_timer);
	ev_timer_stop(rc->loop, &rc->drop_timer);
}

/* Closes the socket and forgets what was unsent or unread (the output
 * buffer may hold an AUTH: wiped). The entries in rc->sent stay. */
static void
link_close(struct rconn *rc)
{
	ev_io_stop(rc->loop, &rc->io);
	rtls_conn_free(rc->link);
	rc->link = NULL;
	rc->linked = 0;
	rc->read_wants_write = 0;
	if (rc->reader != NULL)
		redisReaderFree(rc->reader);	/* frees a reply half read */
	rc->reader = NULL;
	if (rc->obuf != NULL)
		explicit_bzero(rc->obuf, rc->olen);
	rc->olen = rc->ooff = 0;
	if (rc->ocap > RCONN_OBUF_KEEP) {	/* a big batch's room: not kept idle */
		free(rc->obuf);
		rc->obuf = NULL;
		rc->ocap = 0;
	}
}

/* The current connection is gone (or never came to be): close it, give
 * every outstanding command NULL, and plan the next attempt. Not from
 * inside a reply's callback (drop_timer is for that). */
static void
conn_gone(struct rconn *rc, const char *why)
{
	char qwhy[160], wbuf[200];
	int was_up = rc->announced;

	/* why may be the link's, freed here */
	snprintf(wbuf, sizeof wbuf, "%s", why);
	why = wbuf;
	link_close(rc);
	rc->gen++;
	rc->up = 0;
	rc->announced = 0;
	rc->drop_reason = NULL;
	stop_conn_timers(rc);
	/* A server that closes a connection whose token died (Azure) says
	 * nothing: the time says it, before the commands hear of the loss. */
	if (was_up && !rc->freeing && rc->auth_seen != NULL && rc->auth_expires != 0 &&
	    wtime_mono_ms() >= rc->auth_expires - RCONN_AUTH_CLOSE_MARGIN_MS)
		rc->auth_seen(rc->auth_arg, 0, "closed");
	rc->auth_expires = 0;
	while (!TAILQ_EMPTY(&rc->sent))
		finish(rc, TAILQ_FIRST(&rc->sent), NULL);
	if (rc->freeing)
		return;
	/* A new connection meets its own ASKs. The side's callbacks, too,
	 * come before state_cb(0), unless this runs inside one of them. */
	if (rc->side != NULL && rc->side->depth == 0)
		free_side(rc);
	else
		close_side(rc);

	rc->resolving = 0;
	if (rc->once) {		/* the asker moves on: no retry of its own */
		log_debug("redis.down", "name=%s attempt=%u was_up=%d err=%s", rc->qname,
		    rc->attempt, was_up, log_quote(qwhy, sizeof(qwhy), why));
		notify_state(rc, 0);
		return;
	}
	unsigned failures = rc->attempt > 0 ? rc->attempt : 1;
	long delay = (long)backoff_ms(rc->backoff_min_ms, rc->backoff_min_ms,
	    rc->backoff_max_ms, failures > INT32_MAX ? INT32_MAX : (int)failures, rnd_u64());
	/* issue 38 item 5: the outage at warn once, then a reminder a minute */
	int64_t now = wtime_mono_ms();
	rc->down_since = rc->down_since ? rc->down_since : now;
	int warn = consumer_down_warn(rc->down_said, now);
	rc->down_said = warn ? now : rc->down_said;
	log_msg(warn ? LOG_WARN : LOG_DEBUG, "redis.down", "name=%s attempt=%u was_up=%d "
	    "retry_ms=%ld down_ms=%" PRId64 " err=%s", rc->qname, rc->attempt, was_up, delay,
	    now - rc->down_since, log_quote(qwhy, sizeof(qwhy), why));
	ev_timer_set(&rc->retry_timer, (double)delay / 1000.0, 0.0);
	ev_timer_start(rc->loop, &rc->retry_timer);
	if (was_up)
		notify_state(rc, 0);
}

static void
became_up(struct rconn *rc)
{
	ev_timer_stop(rc->loop, &rc->conn_timer);
	rc->up = 1;
	rc->announced = 1;
	if (rc->once)	/* a discovery question, every few seconds: not news */
		log_debug("redis.up", "name=%s attempt=%u", rc->qname, rc->attempt);
	else if (rc->down_since)
		log_info("redis.up", "name=%s attempt=%u down_ms=%" PRId64, rc->qname,
		    rc->attempt, wtime_mono_ms() - rc->down_since);
	else
		log_info("redis.up", "name=%s attempt=%u", rc->qname, rc->attempt);
	rc->down_since = rc->down_said = 0;
	rc->attempt = 0;
	notify_state(rc, 1);
}

/* From inside a callback: drop the connection once it returned. */
static void
schedule_drop(struct rconn *rc, const char *why)
{
	rc->up = 0;
	if (ev_is_active(&rc->drop_timer))
		return;
	rc->drop_reason = why;
	ev_timer_set(&rc->drop_timer, 0.0, 0.0);
	ev_timer_start(rc->loop, &rc->drop_timer);
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
	int r = obuf_put(rc, cmd, len);
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
static void
error_kind(const char *text, char *buf, size_t n)
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

	error_kind(text, kind, sizeof kind);
	if (expected_error(kind))
		return;
	rc->last_err_at = ev_now(rc->loop);
	/* Sentinel: the primary was demoted under us; find the new one.
	 * Cluster: the same after a failover, and MOVED: the slot went. */
	if (rc->error_seen != NULL)
		rc->error_seen(rc->resolve_arg, text);
	if (strcmp(kind, "READONLY") == 0)
		schedule_drop(rc, "READONLY: a failover");
	if (rc->cluster && strcmp(kind, "MOVED") == 0)
		schedule_drop(rc, "MOVED: the slot is served elsewhere");
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
static void
close_side(struct rconn *rc)
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
	    submit(side, NULL, on_asking, NULL, asking, sizeof asking - 1, NULL, 0) < 0) {
		free(f);
		free(eval);
		return -1;
	}
	*f = (struct ask_fwd){rc, c->cb, c->arg};
	int r = submit(side, on_side_reply, NULL, f, eval ? eval : c->sha_cmd, len, NULL, 0);
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
		close_side(rc);	/* another slot's migration: the next ASK opens anew */
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

static void
on_side_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct rconn *rc = w->data;

	(void)revents;
	if (rc->side != NULL && !rc->side_close && (rconn_pending(rc->side) > 0 ||
	    ev_now(loop) - rc->side_used < RCONN_ASK_IDLE_MS / 1000.0))
		return;
	free_side(rc);
}

/* Its outstanding callbacks get NULL now. Not from inside one of them. */
static void
free_side(struct rconn *rc)
{
	struct rconn *side = rc->side;

	ev_timer_stop(rc->loop, &rc->side_timer);
	rc->side = NULL;
	rc->side_close = 0;
	rconn_free(side);
}

/* The reply to c, the queue's head (never NULL: conn_gone() calls finish()
 * itself); the caller frees reply afterwards. */
static void
on_reply(struct rconn *rc, struct rc_cmd *c, redisReply *reply)
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
	finish(rc, c, reply);
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
	if (!rc->linked || obuf_put(rc, cmd, len) != 0) {
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
static int
submit(struct rconn *rc, rconn_reply_cb *cb, handshake_cb *hs, void *arg, const char *cmd,
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

/* Handshake. */

/* ROLE's answer is the one rc expects. */
static int
role_ok(const struct rconn *rc, const redisReply *reply)
{
	switch (rc->role) {
	case RCONN_ROLE_SENTINEL:
		return reply->type == REDIS_REPLY_ARRAY && reply->elements >= 1 &&
		    reply->element[0]->type == REDIS_REPLY_STRING &&
		    strcmp(reply->element[0]->str, "sentinel") == 0;
	case RCONN_ROLE_ANY:
		return 1;
	default:
		return sentinel_is_master(reply);
	}
}

static void
on_handshake(struct rconn *rc, const redisReply *reply, void *arg)
{
	const char *step = arg;
	char qerr[160];

	if (reply == NULL || rc->handshake_failed)
		return;		/* going down anyway: conn_gone() follows */
	if (reply->type == REDIS_REPLY_ERROR) {
		if (step == step_auth && rc->auth_seen != NULL) {
			char kind[RCONN_ERR_KIND_LEN];
			error_kind(reply->str != NULL ? reply->str : "", kind, sizeof kind);
			rc->auth_seen(rc->auth_arg, 0, kind[0] ? kind : "AUTH");
		}
		rc->handshake_failed = 1;
		/* Only the error code for AUTH: the rest is the server's text
		 * about credentials, and credentials are never logged. */
		const char *msg = reply->str != NULL ? reply->str : "";
		size_t n = step == step_auth ? strcspn(msg, " ") : strlen(msg);
		char code[128];
		snprintf(code, sizeof(code), "%.*s", (int)(n < 127 ? n : 127), msg);
		log_warn("redis.handshake_failed", "name=%s step=%s err=%s", rc->qname, step,
			 log_quote(qerr, sizeof(qerr), code));
		schedule_drop(rc, step == step_auth ? "AUTH failed" : step == step_role ?
		    "ROLE failed" : "SELECT failed");
		return;
	}
	if (step == step_role && !role_ok(rc, reply)) {
		rc->handshake_failed = 1;
		log_warn("redis.not_primary", "name=%s host=%s port=%d", rc->qname,
		    rc->host ? LOG_Q(rc->host) : "-", rc->port);
		schedule_drop(rc, "not the primary");
		return;
	}
	if (step == step_auth)
		rc->auth_expires = rc->password_expires;
	if (--rc->handshake_left == 0)
		became_up(rc);
}

/* A re-AUTH's answer: the connection now lives on the new token's time, or
 * it was refused (said once here, the code only: the server's text is about
 * credentials; commands will meet the refusal and R20 takes over). */
static void
on_reauth(struct rconn *rc, const redisReply *reply, void *arg)
{
	struct auth_sent *a = arg;
	int64_t expires = a->expires;

	free(a);
	if (reply == NULL)
		return;		/* the connection went: the next one AUTHs afresh */
	if (reply->type != REDIS_REPLY_ERROR) {
		rc->auth_expires = expires;
		log_debug("redis.reauth", "name=%s ok=1", rc->qname);
		if (rc->auth_seen != NULL)
			rc->auth_seen(rc->auth_arg, 1, "AUTH");
		return;
	}
	char kind[RCONN_ERR_KIND_LEN];
	error_kind(reply->str != NULL ? reply->str : "", kind, sizeof kind);
	log_warn("redis.reauth_failed", "name=%s err=%s", rc->qname, kind[0] ? LOG_Q(kind) : "-");
	if (rc->auth_seen != NULL)
		rc->auth_seen(rc->auth_arg, 0, kind[0] ? kind : "AUTH");
}

int
rconn_auth_error(const char *text)
{
	static const char *const kinds[] = {"NOAUTH", "WRONGPASS", "NOPERM"};

	if (text == NULL)
		return 0;
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		size_t n = strlen(kinds[i]);
		if (strncmp(text, kinds[i], n) == 0 && (text[n] == '\0' || text[n] == ' '))
			return 1;
	}
	return 0;
}

static int
send_auth_cmd(struct rconn *rc, handshake_cb *hs, void *arg)
{
	const char *argv[3] = {"AUTH", rc->password, NULL};
	int argc = 2;
	char *cmd;

	if (rc->username != NULL) {
		argv[1] = rc->username;
		argv[2] = rc->password;
		argc = 3;
	}
	int len = redisFormatCommandArgv(&cmd, argc, argv, NULL);

	if (len < 0)
		return -1;
	int r = submit(rc, NULL, hs, arg, cmd, (size_t)len, NULL, 0);
	if (r == 0)
		rc->auth_epoch++;	/* commands from now on follow this AUTH */
	explicit_bzero(cmd, (size_t)len);
	redisFreeCommand(cmd);
	return r;
}

static int
send_auth(struct rconn *rc)
{
	return send_auth_cmd(rc, on_handshake, step_auth);
}

static int
send_select(struct rconn *rc)
{
	char *cmd;
	int len = redisFormatCommand(&cmd, "SELECT %d", rc->db);

	if (len < 0)
		return -1;
	int r = submit(rc, NULL, on_handshake, step_select, cmd, (size_t)len, NULL, 0);
	redisFreeCommand(cmd);
	return r;
}

/* A node that says it is a replica is no place to write. */
static int
send_role(struct rconn *rc)
{
	char *cmd;
	int len = redisFormatCommand(&cmd, "ROLE");

	if (len < 0)
		return -1;
	int r = submit(rc, NULL, on_handshake, step_role, cmd, (size_t)len, NULL, 0);
	redisFreeCommand(cmd);
	return r;
}

static void
start_handshake(struct rconn *rc)
{
	rc->handshake_left = 0;
	rc->handshake_failed = 0;
	if (rc->password != NULL) {
		if (send_auth(rc) < 0)
			goto fail;
		rc->handshake_left++;
	}
	if (rc->db != 0) {
		if (send_select(rc) < 0)
			goto fail;
		rc->handshake_left++;
	}
	/* Every connection, not only Sentinel's and Cluster's: behind a VIP
	 * or a DNS name a failover leaves the old primary answering as a
	 * replica (R17: READONLY finds the primary again). */
	if (send_role(rc) < 0)
		goto fail;
	rc->handshake_left++;
	if (rc->handshake_left == 0)
		became_up(rc);
	return;
fail:
	rc->handshake_failed = 1;
	schedule_drop(rc, "handshake not sent");
}

/* The link ended under us (closed by the server, a read or write error). */
static void
link_ended(struct rconn *rc)
{
	const char *why = rc->drop_reason;

	if (why == NULL)
		why = rtls_conn_why(rc->link)[0] != '\0' ? rtls_conn_why(rc->link) :
		    "connection closed";
	conn_gone(rc, why);
}

/* Writes what the output buffer holds, as far as the socket takes it.
 * 0, or -1 when the link ended (conn_gone() ran). */
static int
flush_out(struct rconn *rc)
{
	while (rc->ooff < rc->olen) {
		ssize_t n = rtls_link_write(rc->link, rc->obuf + rc->ooff, rc->olen - rc->ooff);
		if (n < 0) {
			link_ended(rc);
			return -1;
		}
		if (n == 0)
			break;
		rc->ooff += (size_t)n;
	}
	if (rc->ooff == rc->olen)
		rc->ooff = rc->olen = 0;
	return 0;
}

/* A server that breaks RESP, or sends more than rconn buffers: said once
 * (R17's event, kind PROTOCOL or TOOBIG), then the connection goes. */
static void
reply_refused(struct rconn *rc, const char *kind, const char *what)
{
	char q[200];

	log_warn("redis.error", "name=%s kind=%s error=%s", rc->qname, LOG_Q(kind),
	    log_quote(q, sizeof q, what));
	conn_gone(rc, what);
}

/* The reply being read holds (in the reader's buffer and the objects
 * built so far) or announces (a bulk string's length, before its bytes)
 * more than RCONN_REPLY_MAX_BYTES: that much into *n, and 1. */
static int
reply_too_big(const redisReader *r, unsigned long long *n)
{
	const char *p = r->buf + r->pos, *end = r->buf + r->len;

	*n = r->len - r->pos;
	if (r->ridx >= 0 && r->rstack[0].obj != NULL)	/* an array, part built */
		*n += rreply_size(r->rstack[0].obj);
	if (*n > RCONN_REPLY_MAX_BYTES)
		return 1;
	/* the reader took the '$' (the task's type) and waits for the rest */
	if (r->ridx >= 0 && r->rstack[r->ridx].type == REDIS_REPLY_STRING) {
		unsigned long long v = 0;
		for (; p < end && *p >= '0' && *p <= '9' && v < 100000000000000000ULL; p++)
			v = v * 10 + (unsigned)(*p - '0');
		if (v > RCONN_REPLY_MAX_BYTES) {
			*n = v;
			return 1;
		}
	}
	return 0;
}

/* Every whole reply the reader has, each to the queue's head, in order.
 * 0, or -1 when the connection went. */
static int
take_replies(struct rconn *rc, unsigned gen)
{
	void *r;
	unsigned long long n;
	char what[160];

	for (;;) {
		if (redisReaderGetReply(rc->reader, &r) != REDIS_OK) {
			snprintf(what, sizeof what, "%s", rc->reader->errstr);
			reply_refused(rc, strcmp(what, "Out of memory") == 0 ? "TOOBIG" : "PROTOCOL",
			    what);
			return -1;
		}
		if (r == NULL)
			break;
		struct rc_cmd *c = TAILQ_FIRST(&rc->sent);
		if (c == NULL) {
			rreply_functions()->freeObject(r);
			reply_refused(rc, "PROTOCOL", "a reply to no command");
			return -1;
		}
		on_reply(rc, c, r);
		rreply_functions()->freeObject(r);
		if (rc->gen != gen)
			return -1;
	}
	if (reply_too_big(rc->reader, &n)) {
		snprintf(what, sizeof what, "a reply of %llu bytes or more: over the %d it may take",
		    n, RCONN_REPLY_MAX_BYTES);
		reply_refused(rc, "TOOBIG", what);
		return -1;
	}
	return 0;
}

/* Reads what the socket has, feeding the reader, replies as they are
 * whole. A short clear-text read means the socket is empty; TLS reads
 * one record at a time, until it has none. */
static void
read_in(struct rconn *rc)
{
	char buf[RCONN_READ_CHUNK];
	unsigned gen = rc->gen;
	int tls = rc->socket == NULL && rc->tls_ctx != NULL;

	rc->read_wants_write = 0;
	for (;;) {
		ssize_t n = rtls_link_read(rc->link, buf, sizeof buf);
		if (n < 0) {
			link_ended(rc);
			return;
		}
		if (n == 0) {
			rc->read_wants_write = (rtls_link_wants(rc->link) & RTLS_WANT_WRITE) != 0;
			return;
		}
		if (redisReaderFeed(rc->reader, buf, (size_t)n) != REDIS_OK) {
			conn_gone(rc, "out of memory");
			return;
		}
		if (take_replies(rc, gen) != 0)
			return;
		if (!tls && (size_t)n < sizeof buf)
			return;
	}
}

/* The link is ready (connected; TLS verified): the reader, then AUTH,
 * SELECT, ROLE. */
static void
link_up(struct rconn *rc)
{
	rc->linked = 1;
	rc->reader = redisReaderCreateWithFunctions(rreply_functions());
	if (rc->reader == NULL) {
		conn_gone(rc, "out of memory");
		return;
	}
	start_handshake(rc);
	io_update(rc);
}

static void
on_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct rconn *rc = w->data;
	unsigned gen = rc->gen;

	(void)loop;
	if (!rc->linked) {
		int r = rtls_link_connect(rc->link);
		if (r < 0)
			conn_gone(rc, rtls_conn_why(rc->link));
		else if (r == 0)
			io_update(rc);
		else
			link_up(rc);
		return;
	}
	if (rc->ooff < rc->olen && flush_out(rc) != 0)
		return;
	if ((revents & EV_READ) || rc->read_wants_write) {
		read_in(rc);
		if (rc->gen != gen)
			return;
		/* what the replies' callbacks queued goes now, in one write,
		 * not a loop iteration (and a watcher change) later */
		if (rc->ooff < rc->olen && flush_out(rc) != 0)
			return;
	}
	io_update(rc);
}

/* Only from outside callbacks: our timers and rconn_free(). */
static void
drop(struct rconn *rc, const char *why)
{
	if (rc->link == NULL)
		return;
	rc->up = 0;
	conn_gone(rc, why);	/* closes the link: every outstanding command gets NULL */
}

/* Sentinel or Cluster: where to connect now; 1: asked, answer later. */
static int
resolve_primary(struct rconn *rc, char *why, size_t whylen)
{
	char host[256];
	int port;

	int r = rc->resolve(rc->resolve_arg, host, sizeof host, &port);
	if (r > 0)
		return 1;
	if (r < 0) {
		snprintf(why, whylen, rc->cluster ? "no node for the slot" :
		    "no primary from the sentinels");
		return -1;
	}
	if (rc->host == NULL || strcmp(rc->host, host) != 0 || rc->port != port) {
		char *copy = strdup(host);
		if (copy == NULL) {
			snprintf(why, whylen, "out of memory");
			return -1;
		}
		free(rc->host);
		rc->host = copy;
		rc->port = port;
		/* what a sentinel answered: quoted */
		log_info("redis.primary", "name=%s host=%s port=%d", rc->qname, LOG_Q(host), port);
	}
	return 0;
}

static void
arm_conn_timer(struct rconn *rc)
{
	if (rc->connect_timeout_ms <= 0)
		return;
	ev_timer_stop(rc->loop, &rc->conn_timer);
	ev_timer_set(&rc->conn_timer, (double)rc->connect_timeout_ms / 1000.0, 0.0);
	ev_timer_start(rc->loop, &rc->conn_timer);
}

static void
start_connect(struct rconn *rc)
{
	char why[200];

	if (!rc->resumed)
		rc->attempt++;
	rc->resumed = 0;
	/* a slow lookup or a long callback before: timers from the real now */
	ev_now_update(rc->loop);
	if (rc->resolve != NULL) {
		int r = resolve_primary(rc, why, sizeof why);
		if (r > 0) {	/* asked: rconn_resolved() calls again */
			rc->resolving = 1;
			arm_conn_timer(rc);
			return;
		}
		if (r < 0) {
			conn_gone(rc, why);
			return;
		}
	}
	if (rc->socket == NULL && !allowlist_check(rc->allow, rc->host, rc->port, "connect")) {
		conn_gone(rc, "host not in allow_hosts");
		return;
	}
	rc->link = rtls_link_new(rc->socket == NULL ? rc->tls_ctx : NULL, rc->host, rc->port,
	    rc->socket, why, sizeof why);
	if (rc->link == NULL) {
		conn_gone(rc, why);
		return;
	}
	/* connected once writable; then TLS, then the handshake: on_io() */
	ev_io_set(&rc->io, rtls_link_fd(rc->link), EV_WRITE);
	ev_io_start(rc->loop, &rc->io);
	arm_conn_timer(rc);
}

/* Timers. */

static void
on_retry_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	start_connect(w->data);
}

static void
on_conn_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct rconn *rc = w->data;

	(void)loop;
	(void)revents;
	if (rc->resolving) {
		conn_gone(rc, "no answer from discovery in time");
		return;
	}
	drop(rc, "connect timeout");
}

static void
on_drop_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct rconn *rc = w->data;

	(void)loop;
	(void)revents;
	drop(rc, rc->drop_reason != NULL ? rc->drop_reason : "dropped");
}

static void
on_cmd_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct rconn *rc = w->data;
	struct rc_cmd *oldest = TAILQ_FIRST(&rc->sent);

	(void)revents;
	if (!rc->up || oldest == NULL)
		return;		/* re-armed by the next command */
	double limit = (double)rc->command_timeout_ms / 1000.0;
	double waited = ev_now(loop) - oldest->sent_at;
	if (waited + 0.0005 >= limit) {
		log_warn("redis.timeout", "name=%s waited_ms=%.0f pending=%zu", rc->qname,
			 waited * 1000.0, rc->npending);
		drop(rc, "command timeout");
		return;
	}
	ev_timer_set(w, limit - waited, 0.0);
	ev_timer_start(loop, w);
}

/* Public API. */

static int
copy_opt(char **dst, const char *src)
{
	*dst = NULL;
	if (src == NULL)
		return 0;
	*dst = strdup(src);
	return *dst != NULL ? 0 : -1;
}

static void
rc_release(struct rconn *rc)
{
	link_close(rc);
	free(rc->obuf);
	free(rc->host);
	free(rc->socket);
	free(rc->username);
	if (rc->password != NULL)
		explicit_bzero(rc->password, strlen(rc->password));
	free(rc->password);
	free(rc->fbuf);
	free(rc);
}

static void
init_timer(struct rconn *rc, ev_timer *t, void (*cb)(struct ev_loop *, ev_timer *, int))
{
	ev_timer_init(t, cb, 0.0, 0.0);
	t->data = rc;
}

struct rconn *
rconn_new(struct ev_loop *loop, const struct rconn_opts *opts, const char *name,
	  rconn_state_cb *state_cb, void *arg)
{
	struct rconn *rc;

	if (loop == NULL || opts == NULL ||
	    (opts->socket == NULL && opts->host == NULL && opts->resolve == NULL))
		return NULL;
	rc = calloc(1, sizeof(*rc));
	if (rc == NULL)
		return NULL;
	TAILQ_INIT(&rc->sent);
	if (copy_opt(&rc->host, opts->host) < 0 || copy_opt(&rc->socket, opts->socket) < 0 ||
	    copy_opt(&rc->username, opts->username) < 0 ||
	    copy_opt(&rc->password, opts->password) < 0) {
		rc_release(rc);
		return NULL;
	}
	rc->loop = loop;
	rc->port = opts->port;
	rc->db = opts->db;
	rc->connect_timeout_ms = opts->connect_timeout_ms;
	rc->command_timeout_ms = opts->command_timeout_ms;
	rc->backoff_min_ms = opts->backoff_min_ms;
	rc->backoff_max_ms = opts->backoff_max_ms;
	rc->state_cb = state_cb;
	rc->state_arg = arg;
	rc->resolve = opts->resolve;
	rc->resolve_arg = opts->resolve_arg;
	rc->error_seen = opts->error_seen;
	rc->auth_seen = opts->auth_seen;
	rc->auth_arg = opts->auth_arg;
	rc->password_expires = opts->password_expires_at_ms;
	rc->cluster = opts->resolve != NULL && opts->cluster;
	rc->allow = opts->allow;
	rc->tls_ctx = opts->tls;
	rc->role = opts->role;
	rc->once = opts->once;
	log_quote(rc->qname, sizeof(rc->qname), name != NULL ? name : "redis");
	init_timer(rc, &rc->retry_timer, on_retry_timer);
	init_timer(rc, &rc->conn_timer, on_conn_timer);
	init_timer(rc, &rc->cmd_timer, on_cmd_timer);
	init_timer(rc, &rc->drop_timer, on_drop_timer);
	init_timer(rc, &rc->side_timer, on_side_timer);
	ev_io_init(&rc->io, on_io, 0, EV_WRITE);
	rc->io.data = rc;
	/* Called before the loop runs, ev_now() may be long past: timers
	 * started from it would expire at once. */
	ev_now_update(loop);
	start_connect(rc);
	return rc;
}

void
rconn_free(struct rconn *rc)
{
	if (rc == NULL)
		return;
	/* Freeing rc inside its own callback chain would pull the reader
	 * and the queue out from under the reply loop: a caller bug, caught
	 * loudly. */
	assert(rc->depth == 0);
	rc->freeing = 1;
	rc->up = 0;
	ev_timer_stop(rc->loop, &rc->retry_timer);
	free_side(rc);		/* its callbacks answer rc's callers: first */
	drop(rc, "freed");
	stop_conn_timers(rc);
	while (!TAILQ_EMPTY(&rc->sent))
		finish(rc, TAILQ_FIRST(&rc->sent), NULL);
	rc_release(rc);
}

int
rconn_reauth(struct rconn *rc, const char *password, int64_t expires_at_ms)
{
	char *copy;

	if (rc == NULL || password == NULL || (copy = strdup(password)) == NULL)
		return -1;
	if (rc->password != NULL)
		explicit_bzero(rc->password, strlen(rc->password));
	free(rc->password);
	rc->password = copy;
	rc->password_expires = expires_at_ms;
	/* out of memory there: the side connection goes idle and is reopened */
	if (rc->side != NULL && !rc->side_close && rconn_reauth(rc->side, password,
	    expires_at_ms) < 0)
		close_side(rc);
	if (!rc->linked || rc->freeing || rc->handshake_failed)
		return 0;	/* the next connect sends it */
	struct auth_sent *a = malloc(sizeof *a);
	if (a == NULL)
		return 0;	/* kept for the next connect; this one may lapse */
	*a = (struct auth_sent){.expires = expires_at_ms};
	if (send_auth_cmd(rc, on_reauth, a) < 0) {
		free(a);
		return 0;
	}
	return 0;
}

void
rconn_resolved(struct rconn *rc)
{
	if (rc == NULL || !rc->resolving || rc->freeing)
		return;
	rc->resolving = 0;
	rc->resumed = 1;
	ev_timer_stop(rc->loop, &rc->conn_timer);
	ev_timer_stop(rc->loop, &rc->retry_timer);
	ev_timer_set(&rc->retry_timer, 0.0, 0.0);
	ev_timer_start(rc->loop, &rc->retry_timer);
}

const char *
rconn_host(const struct rconn *rc)
{
	return rc != NULL && rc->socket == NULL ? rc->host : NULL;
}

int
rconn_port(const struct rconn *rc)
{
	return rc != NULL && rc->socket == NULL && rc->host != NULL ? rc->port : 0;
}

void
rconn_reconnect(struct rconn *rc, const char *why)
{
	if (rc == NULL || rc->link == NULL || rc->freeing)
		return;
	log_info("redis.reconnect", "name=%s host=%s port=%d why=%s", rc->qname,
	    rc->host ? LOG_Q(rc->host) : "-", rc->port, LOG_Q(why));
	schedule_drop(rc, why);
}

int
rconn_is_up(const struct rconn *rc)
{
	return rc != NULL && rc->up;
}

size_t
rconn_pending(const struct rconn *rc)
{
	return rc != NULL ? rc->npending + rconn_pending(rc->side) : 0;
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
	int r = submit(rc, cb, NULL, arg, cmd, (size_t)len, NULL, 0);
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
	return submit(rc, cb, NULL, arg, rc->fbuf, (size_t)len, NULL, 0);
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
