/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hsrv: the one HTTP server, libmicrohttpd on a libev loop, single-threaded
 * (MHD's external polling: one ev_io on MHD's epoll descriptor, one timer
 * from MHD_get_timeout, MHD_run from both). The daemon's /metrics runs on
 * it; the web console may too.
 *
 * hsrv binds the address itself (a unix socket is made 0660 as it is
 * bound, never wider for a moment) and accepts itself: each connection
 * close-on-exec, handed to MHD with MHD_add_connection, which holds it to
 * the budgets (per peer, in total, an idle timeout, a cap on the request
 * head). Out of descriptors (EMFILE) the accepting pauses for a second
 * rather than spin on the connection left in the backlog.
 *
 * A request is answered at once, from the loop, by the handler: a status, a
 * content type and a body, with "Connection: close" (one answer a
 * connection, so that it gives its place back at once). A request body is not read: a server with one
 * is not what this is for.
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
};

/* Plain data: the handler's answer. */
struct hsrv_answer {
	int status;
	const char *content_type;	/* static */
	char *body;			/* malloc'd: hsrv frees it; NULL: empty */
	size_t len;
	const char *allow;		/* static; an Allow header when not NULL */
};

/* One request: method and path (the query string cut off) are borrowed for
 * the call. Fills *out; called from the loop, never re-entered. */
typedef void hsrv_handler_fn(void *arg, const char *method, const char *path,
			     struct hsrv_answer *out);

struct hsrv;

/*
 * Listens on addr (a stale unix socket file there is replaced, and removed
 * again by hsrv_free). limits is copied; handler and arg are borrowed and
 * must outlive the server. NULL with a message in err (nothing left open).
 */
struct hsrv *hsrv_new(struct ev_loop *loop, const struct listen_addr *addr,
		      const struct hsrv_limits *limits, hsrv_handler_fn *handler, void *arg,
		      char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* Closes every connection and the listener. NULL is a no-op. Not from
 * inside the handler. */
void hsrv_free(struct hsrv *s);

#endif
