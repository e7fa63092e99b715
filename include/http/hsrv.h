/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hsrv: the one HTTP server, libmicrohttpd on a libev loop, single-threaded
 * (MHD's external polling: one ev_io on MHD's epoll descriptor, one timer
 * from MHD_get_timeout, MHD_run from both). The daemon's /metrics and the
 * web console (warrantd-web) run on it.
 *
 * hsrv binds the address itself (a unix socket is made 0660 as it is
 * bound, never wider for a moment) and accepts itself: each connection
 * close-on-exec, handed to MHD with MHD_add_connection, which holds it to
 * the budgets (per peer, in total, an idle timeout, a cap on the request
 * head). Out of descriptors (EMFILE) the accepting pauses for a second
 * rather than spin on the connection left in the backlog. With a TLS pair
 * (PEM in memory) MHD speaks TLS on every connection (GnuTLS through it).
 *
 * A request is answered at once, from the loop, by the handler, once its
 * body is in: a status, a content type, a body and a few header lines. A
 * body is kept up to limits.body_max bytes (0: read and dropped); past it
 * hsrv answers 413 itself and the handler is not called. Without
 * limits.keep_alive every answer says "Connection: close" (one answer a
 * connection, so that it gives its place back at once: /metrics).
 */
#ifndef WARRANTD_HSRV_H
#define WARRANTD_HSRV_H

#include <ev.h>
#include <stddef.h>

#include "core/listen.h"

/* Plain data: what a server allows. */
struct hsrv_limits {
	const char *ev_accept;	/* the log event of a failed accept (static) */
	const char *ev_http;	/* of what MHD says, at debug (static) */
	unsigned per_peer;	/* connections from one IP address at once */
	unsigned total;		/* connections at once */
	unsigned timeout_s;	/* a connection idle this long is closed */
	size_t head_max;	/* bytes of a request head (431 past it) */
	size_t body_max;	/* bytes of a request body kept (413 past it); 0: none */
	int keep_alive;		/* 0: "Connection: close" on every answer */
	const char *tls_cert;	/* PEM, NUL-terminated; NULL: plain HTTP. Borrowed: */
	const char *tls_key;	/* both must outlive the server */
};

#define HSRV_HEADERS	12

/* Plain data: the handler's answer. */
struct hsrv_answer {
	int status;
	const char *content_type;	/* static */
	char *body;			/* malloc'd: hsrv frees it; NULL: empty */
	size_t len;
	int body_static;		/* body is borrowed for good (not freed) */
	const char *allow;		/* static; an Allow header when not NULL */
	size_t nheaders;		/* hsrv_answer_header's lines */
	struct {
		const char *name;	/* static */
		char *value;		/* malloc'd: hsrv frees it */
	} headers[HSRV_HEADERS];
};

/* One more header line on a: name static, value copied. 0, or -1 (out of
 * memory, or HSRV_HEADERS already). */
int hsrv_answer_header(struct hsrv_answer *a, const char *name, const char *value);

/* A request, as the handler sees it: borrowed for the handler's call. */
struct hsrv_req;

/* A request header's value (name case-insensitive), or NULL. Borrowed. */
const char *hsrv_req_header(const struct hsrv_req *q, const char *name);

/* A query argument's value (percent-decoded; the first of several), or NULL. */
const char *hsrv_req_arg(const struct hsrv_req *q, const char *name);

/* Calls fn(arg, value) for each query argument called name, in order,
 * while it returns 0. */
typedef int hsrv_each_fn(void *arg, const char *value);
void hsrv_req_args(const struct hsrv_req *q, const char *name, hsrv_each_fn *fn, void *arg);

/* The request body (not NUL-terminated; "" and 0 without one). Borrowed;
 * hsrv wipes it when the request is done (a password, maybe). */
const char *hsrv_req_body(const struct hsrv_req *q, size_t *len);

/* The peer's IP address as text into buf ("unix" on a unix socket). */
void hsrv_req_peer(const struct hsrv_req *q, char *buf, size_t n);

/* One request: method and path (the query string cut off) are borrowed for
 * the call, as is q. Fills *out; called from the loop, never re-entered. */
typedef void hsrv_handler_fn(void *arg, const struct hsrv_req *q, const char *method,
			     const char *path, struct hsrv_answer *out);

struct hsrv;

/*
 * Listens on addr (a stale unix socket file there is replaced, and removed
 * again by hsrv_free). limits is copied (its TLS pair borrowed); handler
 * and arg are borrowed and must outlive the server. NULL with a message in
 * err (nothing left open).
 */
struct hsrv *hsrv_new(struct ev_loop *loop, const struct listen_addr *addr,
		      const struct hsrv_limits *limits, hsrv_handler_fn *handler, void *arg,
		      char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* Closes every connection and the listener. NULL is a no-op. Not from
 * inside the handler. */
void hsrv_free(struct hsrv *s);

#endif
