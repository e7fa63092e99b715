/*
 * hconn: plain HTTP/1.1 exchanges on kept-alive TCP connections, on a libev
 * loop: the native client's I/O (h1 writes the head and reads the answer).
 *
 * Life cycle: hconn_pool_new; any number of hconn_start, each of which calls
 * back exactly once unless cancelled (never from inside hconn_start);
 * hconn_pool_free. Connections are kept per address, at most
 * HCONN_MAX_IDLE in all, and each has one exchange at a time. A kept
 * connection is watched while idle, so a close by the server is seen and the
 * socket closed then. A request sent on a kept connection that the server had
 * closed (no byte of an answer, then the close or a reset) is sent once more
 * on a new connection, as curl does: the server did not take it.
 *
 * Single-threaded, as the loop. The process must ignore SIGPIPE or not:
 * sends use MSG_NOSIGNAL. Nothing here logs: the caller logs what it knows.
 */
#ifndef WARRANTD_HCONN_H
#define WARRANTD_HCONN_H

#include <ev.h>
#include <stddef.h>
#include <sys/socket.h>

#define HCONN_MAX_IDLE 1024

struct hconn_pool;	/* opaque: the connections and the exchanges on them */
struct hconn_xfer;	/* opaque: one exchange */

/* Plain data, read during hconn_start. The head and body bytes are borrowed:
 * they must stay as they are until the callback starts or hconn_cancel. */
struct hconn_req {
	const struct sockaddr *addr;
	socklen_t addr_len;
	const char *host;		/* for error messages only */
	const char *head; size_t head_len;
	const char *body; size_t body_len;
	int head_request;		/* HEAD: the answer has no body */
	size_t body_max;		/* a longer answer body is an error */
	long timeout_ms;		/* the whole exchange, connect included; > 0 */
};

/* Everything is valid only during the callback. */
struct hconn_result {
	long status;			/* 0 on any error */
	int timed_out;
	int too_large;			/* the body was over body_max */
	const char *error;		/* "" when status > 0 */
	const char *body; size_t body_len;	/* never NULL, NUL-terminated */
	const char *retry_after, *www_authenticate;	/* NULL when absent */
	long connects;			/* connections opened for it: 0 when one was reused */
};

/* The exchange is finished and detached when this runs: the callback may
 * start and cancel exchanges, but not free the pool. */
typedef void hconn_done_cb(const struct hconn_result *r, void *arg);

/* Caller frees with hconn_pool_free; `loop` is borrowed. NULL when out of
 * memory. */
struct hconn_pool *hconn_pool_new(struct ev_loop *loop) __attribute__((warn_unused_result));

/* Closes every connection and frees every exchange, calling back none. NULL
 * is a no-op. Not from inside a callback. */
void hconn_pool_free(struct hconn_pool *p);

/* 0: started, *out (may be NULL) is valid until the callback starts or
 * hconn_cancel. -1: out of memory, nothing started, no callback. */
int hconn_start(struct hconn_pool *p, const struct hconn_req *req, hconn_done_cb *cb, void *arg,
		struct hconn_xfer **out) __attribute__((warn_unused_result));

/* Stops the exchange without its callback; its connection is closed (the
 * answer may be half read). NULL is a no-op. */
void hconn_cancel(struct hconn_xfer *x);

#endif
