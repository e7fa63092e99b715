/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rconn's private header, shared by the files split from it (none other
 * includes it): rconn.c (the exactly-once argument; the command FIFO and
 * its replies, errors, -ASK), rconn_io.c (the socket: its watcher, the
 * output buffer, reading replies), rconn_auth.c (AUTH, SELECT, ROLE and
 * re-AUTH), rconn_life.c (connect, drop, the reconnect policy, new/free).
 */
#ifndef WARRANTD_RCONN_INT_H
#define WARRANTD_RCONN_INT_H

#include "redis/rconn.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include <ev.h>
#include <hiredis/hiredis.h>

#define RCONN_OBUF_KEEP	65536	/* more room than this is freed with the link */
#define RCONN_READ_CHUNK 16384	/* a TLS record's most */


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

/* An AUTH's reply is about the password sent with it, which may have been
 * replaced since: each carries its own expiry. */
struct auth_sent {
	int64_t expires;
};

/* ---- rconn.c (the command FIFO and its replies) ---- */

/* Unlinks c, runs its callback with reply (borrowed; NULL: the connection
 * went) and frees c: the one place a callback runs. */
void rc_finish(struct rconn *rc, struct rc_cmd *c, redisReply *reply);
/* The kind of an error reply's text (its first word) into buf. */
void rc_error_kind(const char *text, char *buf, size_t n);
/* Asks for the -ASK side connection to be freed from its own timer. */
void rc_close_side(struct rconn *rc);
/* The side connection's timer: frees it when asked or idle. */
void rc_on_side_timer(struct ev_loop *loop, ev_timer *w, int revents);
/* Frees the side connection now (outside its callbacks only). */
void rc_free_side(struct rconn *rc);
/* A reply (borrowed; freed by the caller) to c, the FIFO's head. */
void rc_on_reply(struct rconn *rc, struct rc_cmd *c, redisReply *reply);
/* Appends cmd (copied) to the output buffer and its entry to rc->sent in
 * one step; keeps body (borrowed, static) for a NOSCRIPT resend. 0 or -1. */
int rc_submit(struct rconn *rc, rconn_reply_cb *cb, handshake_cb *hs, void *arg, const char *cmd,
	      size_t len, const char *body, size_t rest_off) __attribute__((warn_unused_result));

/* ---- rconn_io.c (the socket) ---- */

/* Watches the socket for what the link and the output buffer need. */
void rc_io_update(struct rconn *rc);
/* Appends n bytes of p (copied) to the output buffer. 0, or -1 (memory). */
int rc_obuf_put(struct rconn *rc, const char *p, size_t n) __attribute__((warn_unused_result));
/* The socket's one watcher: connect, TLS handshake, write, read. */
void rc_on_io(struct ev_loop *loop, ev_io *w, int revents);

/* ---- rconn_auth.c (the handshake) ---- */

/* The link is ready: creates the reader and starts the handshake. */
void rc_link_up(struct rconn *rc);

/* ---- rconn_life.c (the connection's life) ---- */

/* The one end of a connection: closes the link, fails every entry left
 * (callbacks with NULL), arms the reconnect timer. */
void rc_conn_gone(struct rconn *rc, const char *why);
/* The handshake succeeded: commands are accepted, state_cb(1). */
void rc_became_up(struct rconn *rc);
/* A drop asked for inside a callback: done from drop_timer at 0. */
void rc_schedule_drop(struct rconn *rc, const char *why);

#endif
