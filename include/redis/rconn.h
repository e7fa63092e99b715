/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rconn: one asynchronous Redis connection on a libev loop (hiredis 0.14.1).
 *
 * It connects by itself, runs the AUTH and SELECT handshake, reconnects
 * with exponential backoff and full jitter when the connection is lost, and
 * enforces the timeouts hiredis 0.14 lacks: one for connect + handshake,
 * one for the oldest outstanding command (the connection is then dropped
 * and every outstanding callback gets NULL).
 *
 * Short-lived passwords (warrantd(7) §9, rtoken.h): rconn_reauth() hands a live
 * connection a fresh token; it sends AUTH on the same connection, queued in
 * order behind what is in flight, so nothing is dropped or reordered, and
 * every later connect uses the newest password.
 *
 * Every accepted command gets exactly one callback: its reply, or NULL when
 * the connection failed, timed out or the rconn was freed. No callback runs
 * after rconn_free() returned. SUBSCRIBE, PSUBSCRIBE, (P)UNSUBSCRIBE and
 * MONITOR are refused: their replies do not map one to one onto commands.
 *
 * Not thread safe: every call happens on the thread that runs the loop.
 */
#ifndef WARRANTD_RCONN_H
#define WARRANTD_RCONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <ev.h>

#include "core/consumer.h"
#include "redis/sreply.h"

struct allowlist;
struct rtls_ctx;

/* Plain data; rconn_new() copies the strings, the caller keeps its own. */
struct rconn_opts {
	const char *host; int port;	/* used when socket is NULL */
	const char *socket;		/* unix socket path */
	const char *username;		/* NULL: AUTH with password only (if any) */
	const char *password;		/* NULL: no AUTH */
	int db;				/* SELECT when != 0 */
	long connect_timeout_ms;	/* connect + AUTH + SELECT handshake (0 = none) */
	long command_timeout_ms;	/* oldest outstanding command older than this => drop
					   connection (0 = none). The blocking connection
					   passes block_ms + margin. */
	long backoff_min_ms, backoff_max_ms;	/* reconnect backoff (backoff.h), from min */
	/* Sentinel (sentinel.h): when set, asked for host and port before
	 * every connect attempt (-1: this attempt fails, with backoff; 1: the
	 * answer comes later, rconn_resolved()). With
	 * or without it, the node must answer ROLE with "master" at connect,
	 * and a -READONLY reply drops the connection, so a failover is
	 * followed at the next connect (through the sentinels, or a fresh
	 * connect to a VIP or a DNS name). */
	int (*resolve)(void *arg, char *host, size_t hostlen, int *port);
	void *resolve_arg;
	/* Cluster (cluster.h): set with resolve; a -MOVED reply drops the
	 * connection too (the slot is served elsewhere now; resolve asks the
	 * slot map at the next connect). error_seen, when set, is shown the
	 * text of every error reply (with resolve_arg) before the command's
	 * callback. */
	void (*error_seen)(void *arg, const char *error);
	int cluster;
	/* Cluster -ASK (cluster set): every command keeps its bytes until its
	 * reply (only then: a copy per command); the first ASK of a migration opens
	 * a side connection to the node it names (same AUTH, no resolve) and
	 * gets its reply as it is (the caller retries); once that connection
	 * is up, every ASKed command is sent there again after ASKING, and its
	 * callback gets that node's reply instead (still exactly once). The
	 * side connection goes when this one drops, when an ASK names another
	 * node, or after RCONN_ASK_IDLE_MS without a command. -TRYAGAIN is
	 * passed on as it is. */
	/* When password dies (wtime_mono_ms); 0: it does not. rconn_reauth
	 * replaces both. */
	int64_t password_expires_at_ms;
	/* auth_seen, when set, is told (with auth_arg) every answer about the
	 * credential: ok 1 and kind "AUTH" when a re-AUTH (rconn_reauth) was
	 * accepted; ok 0 with the error's kind ("NOAUTH", "WRONGPASS",
	 * "NOPERM": rconn_auth_error) when the handshake's AUTH, a re-AUTH or
	 * any command was refused, before that command's callback; ok -1 when
	 * the command refused was sent before the latest AUTH on its connection
	 * (it met an older password: the newest may be good); and ok 0
	 * with kind "closed" when a connection that was up is lost within
	 * RCONN_AUTH_CLOSE_MARGIN_MS of, or after, the death of the password it
	 * was last authenticated with (managed Redis closes such connections).
	 * It runs inside rconn's callbacks: it must not call rconn_free(). */
	void (*auth_seen)(void *arg, int ok, const char *kind);
	void *auth_arg;
	/* [redis] allow_hosts (allowlist.h, borrowed; NULL: any host): a TCP
	 * host outside it -- from resolve, or an -ASK's -- is never connected
	 * to, so no AUTH goes there; the attempt fails like a refused connect. */
	struct allowlist *allow;
	/* [redis] tls (rtls.h, borrowed: outlives rc): every connect to a
	 * host -- and an -ASK's side connection -- is TLS, verified before
	 * AUTH; a failed handshake is a failed connect. NULL: clear text. */
	struct rtls_ctx *tls;
	/* What ROLE must answer at connect: a primary (the default), a
	 * sentinel, or anything (a cluster node asked for its map). */
	enum rconn_role { RCONN_ROLE_PRIMARY, RCONN_ROLE_SENTINEL, RCONN_ROLE_ANY } role;
	/* One attempt only, for a question to one node (discovery): no
	 * reconnect, and state_cb(rc, 0) also when it never came up. */
	int once;
};

#define RCONN_AUTH_CLOSE_MARGIN_MS	1000

struct rconn;

/* reply is NULL when the command failed (disconnect, timeout, rconn_free).
 * It is read through sreply's functions (sreply.h: no caller sees hiredis's
 * layout) and valid only during the callback; it is freed afterwards. An
 * error reply is passed as is (sreply_error).
 * The callback may queue new commands; it must not call rconn_free() on rc. */
typedef void rconn_reply_cb(struct rconn *rc, const struct sreply *reply, void *arg);

/* Called on every transition: up=1 after connect+AUTH+SELECT succeeded;
 * up=0 when lost (after all outstanding callbacks got NULL). Reconnects by
 * itself with backoff. Not called for attempts that never came up, nor from
 * rconn_free(). It must not call rconn_free() on rc. */
typedef void rconn_state_cb(struct rconn *rc, int up, void *arg);

/* Copies opts and name. Starts connecting at once; a failing first attempt
 * is retried with backoff like any later one. state_cb may be NULL; arg is
 * passed to it as is. Caller frees with rconn_free(). NULL on a bad option
 * (neither socket nor host) or out of memory. */
struct rconn *rconn_new(struct ev_loop *loop, const struct rconn_opts *opts, const char *name,
			rconn_state_cb *state_cb, void *arg)
	__attribute__((warn_unused_result));

/* Closes the connection and frees rc. All outstanding callbacks are called
 * with NULL before it returns, none afterwards. Must not be called from
 * inside a callback of this rconn (reply or state): defer it (e.g. with an
 * ev_timer of 0). NULL is a no-op. */
void rconn_free(struct rconn *rc);

/* 1 when connected and the handshake succeeded, else 0. */
int rconn_is_up(const struct rconn *rc);

/*
 * Asynchronous discovery (issue 27): opts.resolve may answer 1, "asked,
 * the answer comes later": the attempt then waits -- within the connect
 * timeout, without blocking the loop -- until rconn_resolved(), which makes
 * it call resolve again at the next loop iteration. Anywhere but inside
 * resolve itself; a no-op when rc is not waiting.
 */
void rconn_resolved(struct rconn *rc);

/* The host and port of the current or last attempt (NULL and 0 before the
 * first, or on a unix socket). Valid until the next attempt. */
const char *rconn_host(const struct rconn *rc);
int rconn_port(const struct rconn *rc);

/* Drops the connection at the next loop iteration (why: logged) and
 * reconnects, asking resolve afresh: the node is no longer the one to talk
 * to (a failover, a slot moved). Safe from inside callbacks. No-op without
 * a connection. */
void rconn_reconnect(struct rconn *rc, const char *why);

/* Queues a command (pipelined); fmt is hiredis's format (%s, %b, ...).
 * 0 when accepted: cb (not NULL) is then called exactly once. -1 when not
 * up, the command cannot be formatted or is refused: cb is then NOT called.
 * The strings are copied before it returns. */
int rconn_command(struct rconn *rc, rconn_reply_cb *cb, void *arg, const char *fmt, ...)
	__attribute__((warn_unused_result));

/* As rconn_command() with an argument vector; argvlen NULL means each
 * argv[i] is a C string. The arguments are copied before it returns. */
int rconn_commandv(struct rconn *rc, rconn_reply_cb *cb, void *arg, int argc,
		   const char **argv, const size_t *argvlen)
	__attribute__((warn_unused_result));

/*
 * A new password for rc (a fresh token, expiring at expires_at_ms on
 * wtime_mono_ms, 0: never): kept for every later connect (and the ASK side
 * connection's), and, when a connection exists (up, or in its handshake),
 * sent on it at once as AUTH [username] password, queued behind the
 * commands in flight: Redis answers in order, so no reply is lost or
 * reordered and no pipeline is dropped. On a connection held by a blocking
 * read Redis answers the AUTH only when that read ends: the caller sends it
 * early enough (rtoken.h: lead_ms). The answer goes to opts.auth_seen; a
 * refused AUTH does not drop the connection (commands will tell). 0, or -1
 * when password is NULL or out of memory (rc unchanged). The password is
 * copied, wiped when replaced, and never logged.
 */
int rconn_reauth(struct rconn *rc, const char *password, int64_t expires_at_ms)
	__attribute__((warn_unused_result));

/* 1 when an error reply's text refuses the credential: NOAUTH, WRONGPASS
 * or NOPERM (the last means an expired token only right after one died:
 * the caller knows). NULL: 0. Pure. */
int rconn_auth_error(const char *text);

/* Number of commands sent and not yet answered (the handshake not counted). */
size_t rconn_pending(const struct rconn *rc);

/* A Lua script run with EVALSHA; on NOSCRIPT it is re-sent with EVAL
 * transparently (the caller's callback sees only the final reply).
 * body is borrowed: it must outlive every command sent with it (a NOSCRIPT
 * answer splices the EVAL from it and the EVALSHA as sent). */
struct rconn_script { const char *body; char sha1[41]; const char *verb; };

/* Sets s->body = body and s->sha1 to the lowercase hex SHA1 of body (OpenSSL). */
void rconn_script_init(struct rconn_script *s, const char *body);
/* A function of a library loaded with FUNCTION LOAD, called as "FCALL name"
 * ("FCALL_RO name" when read_only): no body, so no EVAL fallback, and an
 * -ASK sends the same FCALL again. name (at most 40 bytes) is copied. */
void rconn_function_init(struct rconn_script *s, const char *name, int read_only);

/* Runs the script: argv holds nkeys keys then the arguments (argc in all;
 * argvlen NULL means C strings). Same contract as rconn_commandv(): 0 and
 * exactly one callback, or -1 and none. argv and argvlen are copied; s->body
 * is borrowed until the reply (see struct rconn_script). */
int rconn_eval(struct rconn *rc, const struct rconn_script *s, rconn_reply_cb *cb, void *arg,
	       int nkeys, int argc, const char **argv, const size_t *argvlen)
	__attribute__((warn_unused_result));

/* As rconn_eval(), with the arguments after numkeys already written as RESP
 * bulk strings (resp.h): argc of them, the first nkeys keys, in nparts
 * pieces sent one after the other. A batch writes each call's arguments
 * once, where they are sent from (store.h, struct store_batch): no argument
 * vector and no second formatting. The bytes are copied before it returns. */
int rconn_eval_resp(struct rconn *rc, const struct rconn_script *s, rconn_reply_cb *cb,
		    void *arg, int nkeys, int argc, const struct iovec *parts, size_t nparts)
	__attribute__((warn_unused_result));

/*
 * R17: error replies are passed to the callback as they are, and rconn logs
 * them (event=redis.error): once per kind (the reply's leading upper-case
 * word: LOADING, BUSY, READONLY, MISCONF, ...) per episode, where an episode
 * ends once RCONN_EPISODE_QUIET_MS pass without an error reply
 * (event=redis.errors_ended, at the next reply).
 * BUSYGROUP and NOSCRIPT are answers, not trouble, and are not logged.
 * Callers back off and retry; they need not log the reply again.
 */
#define RCONN_ERR_KINDS		8
#define RCONN_ERR_KIND_LEN	24
#define RCONN_EPISODE_QUIET_MS	10000
#define RCONN_ASK_IDLE_MS	10000

/* The most one reply may make rconn hold: the bytes buffered for it, the
 * objects built from it, or what a bulk string's header announces. A
 * server that goes beyond (a broken or hostile "$999999999999") gets one
 * event=redis.error kind=TOOBIG and its connection is dropped (and made
 * again with backoff): no reply the daemon asks for comes near it. A reply
 * that is not RESP gets kind=PROTOCOL, the same way. */
#define RCONN_REPLY_MAX_BYTES	(64 * 1024 * 1024)

/* R17 for an error found inside a reply (an item's error in the reply to
 * a batch, store.h): logged and counted as if it had come alone. text is
 * the error's text (sreply_error_text); NULL is a no-op. */
void rconn_note_error(struct rconn *rc, const char *text);

/* What reply r (a callback's) means, classified once, here, into the kinds
 * the core reads (consumer.h): CONSUMER_ERR_LOST for no reply,
 * CONSUMER_ERR_NONE for one that is no error. Callers branch on the kind,
 * never on the error's text. */
static inline enum consumer_err
rconn_err_class(const struct sreply *r)
{
	return r == NULL ? CONSUMER_ERR_LOST : sreply_error_text(r) == NULL ? CONSUMER_ERR_NONE :
	    consumer_err_classify(sreply_error_text(r));
}

#endif
