/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http: an asynchronous HTTP/1.1 client on the daemon's libev loop.
 *
 * One libcurl multi handle per client, driven by libev through
 * curl_multi_socket_action: an ev_io watcher per socket and one ev_timer.
 * Connections are kept alive and reused between calls; only http and https
 * are spoken; redirects are never followed; a response body is capped at
 * HTTP_BODY_MAX bytes (a longer one is a transport error).
 *
 * Single-threaded: every function must be called from the thread that runs
 * the loop (the first http_client_new also runs curl_global_init, once).
 * CURLOPT_NOSIGNAL is set, so the process must ignore SIGPIPE itself.
 * Nothing here logs a header value, a body or a URL's query: they carry
 * tokens. At debug level each finished call logs method, host and path.
 * The request's header lines (the bearer, Basic credentials built here) and
 * body (a client secret) are held in our own buffers, never as curl's copies,
 * and wiped when the call ends. A finished call is kept, with its easy handle
 * and those buffers, for a later call: the options every call shares stay
 * set, and each http_start sets all that differs between calls (URL,
 * timeout, method, body, headers), so nothing of one call is sent with the
 * next (itest_http test_nothing_leaks_between_calls).
 */
#ifndef WARRANTD_HTTP_H
#define WARRANTD_HTTP_H

#include <ev.h>
#include <stddef.h>

#include "core/callfail.h"

#define HTTP_BODY_MAX (1024 * 1024)

struct http_client;	/* opaque: one curl multi handle driven by a libev loop */
struct http_call;	/* opaque: one request in flight */

/* Plain data, read only during http_start: every field is copied. */
struct http_request {
	const char *method;		/* "POST", "PUT", "GET", ... (an HTTP token) */
	const char *url;		/* http:// or https:// */
	const char *const *headers;	/* NULL-terminated "Name: value" lines; NULL for none */
	const char *body; size_t body_len;	/* NULL/0 for none */
	long timeout_ms;		/* the whole request, queueing included; > 0 */
	long connect_timeout_ms;	/* connecting alone (a kept connection takes
					   none); 0: only timeout_ms bounds it */
	const char *userpwd;		/* optional "user:pass" for Basic auth, already
					   form-urlencoded by the caller (RFC 6749 §2.3.1) */
};

/* Plain data handed to the callback; every pointer is owned by the client and
 * valid only during the callback. */
struct http_response {
	long status;			/* 0 on a transport error or timeout */
	int timed_out;			/* 1 when the timeout fired */
	const char *error;		/* curl's message on a transport error, else "":
					   names a host and port, never a URL's
					   userinfo, query or a header */
	enum callfail fail;		/* status 0: why (never CALLFAIL_NONE); else
					   CALLFAIL_NONE */
	const char *body; size_t body_len;	/* never NULL, NUL-terminated, <= HTTP_BODY_MAX */
	const char *retry_after;	/* last Retry-After value (trimmed) or NULL */
	const char *www_authenticate;	/* last WWW-Authenticate value (trimmed) or NULL */
	const char *dpop_nonce;		/* last DPoP-Nonce value (trimmed) or NULL */
	long elapsed_ms;		/* from http_start to completion */
	long connects;			/* connections this call opened: 0 when it reused one */
	int no_descriptor;		/* a transport error because this process had no
					   descriptor left (EMFILE, ENFILE): nothing
					   left this host */
};

/* `resp` and everything it points to are valid only during the callback.
 * The call is already finished and detached when it runs, so the callback may
 * start new requests or cancel others; it must not free the client. */
typedef void http_done_cb(const struct http_response *resp, void *arg);

/* A client on `loop` (borrowed: it must outlive the client). Caller frees with
 * http_client_free. NULL on failure. Proxies come from the environment, as
 * curl reads them (http_proxy, https_proxy, all_proxy, no_proxy), as it was
 * when the client was made. */
struct http_client *http_client_new(struct ev_loop *loop)
	__attribute__((warn_unused_result));

/* Cancels every call in flight without calling their callbacks, stops the
 * client's watchers and frees it. NULL is a no-op. Must not be called from
 * inside an http callback (it aborts if it is). */
void http_client_free(struct http_client *hc);

/* Starts a request; `req` is copied, `arg` is borrowed and passed to `cb`.
 * *out (may be NULL) receives a handle owned by the client, valid until the
 * callback starts or http_cancel. The callback is called exactly once unless
 * the call is cancelled, and never from inside http_start. 0, or -1 (logged)
 * on a bad request (no url, a method or header with CR/LF, timeout_ms <= 0)
 * or on allocation failure, in which case nothing is started. */
int http_start(struct http_client *hc, const struct http_request *req, http_done_cb *cb,
	       void *arg, struct http_call **out)
	__attribute__((warn_unused_result));

/* Stops and frees the call; its callback will not be called. Safe from any
 * callback, including another call's. NULL is a no-op. */
void http_cancel(struct http_call *call);

/* Calls started whose callback has not started yet and that were not
 * cancelled. */
size_t http_in_flight(const struct http_client *hc);

#endif
