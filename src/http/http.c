/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http: libcurl's multi socket interface on libev (the evhiperfifo pattern).
 *
 * Re-entrancy: curl must never be re-entered from its own callbacks, and the
 * user's callbacks may start and cancel calls. So curl callbacks only touch
 * libev watchers and the call's buffers; finished calls are first detached
 * from curl and moved to a `done` list, and only after
 * curl_multi_socket_action has returned are the user callbacks run, one call
 * at a time taken off the head of that list (a cancel from a callback may
 * unlink any other entry).
 */
#define _DEFAULT_SOURCE	/* explicit_bzero */
#include "http_call.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>

#include <curl/curl.h>

#include "base/log.h"

struct http_sock {
	struct ev_io io;		/* first: the watcher's address is the sock's */
	struct http_client *hc;
	LIST_ENTRY(http_sock) link;
};

static int curl_ready;

static int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Unlinks and returns the first call, or NULL: the loops that free every
 * call take them this way, one at a time, since a callback may cancel any
 * other. */
static struct http_call *
list_pop(struct call_list *l)
{
	struct http_call *c = TAILQ_FIRST(l);

	if (c != NULL) {
		TAILQ_REMOVE(l, c, link);
		/* Said for the analyzer, which cannot follow tqe_prev back to
		 * the head: c is off the list, not handed out again. */
		assert(TAILQ_FIRST(l) != c);
	}
	return c;
}

/* ---- libev side: watchers that curl asks for ---- */

static void process_messages(struct http_client *hc);

static void
socket_action(struct http_client *hc, curl_socket_t fd, int action)
{
	int running;
	CURLMcode rc = curl_multi_socket_action(hc->multi, fd, action, &running);

	if (rc != CURLM_OK && rc != CURLM_BAD_SOCKET)
		log_error("http.multi", "error=%s", curl_multi_strerror(rc));
	process_messages(hc);
}

static void
io_cb(struct ev_loop *loop, struct ev_io *w, int revents)
{
	/* w may be freed by the socket action below: read it first */
	struct http_client *hc = ((struct http_sock *)w)->hc;
	curl_socket_t fd = w->fd;
	int action = ((revents & EV_READ) ? CURL_CSELECT_IN : 0) |
	    ((revents & EV_WRITE) ? CURL_CSELECT_OUT : 0) |
	    ((revents & EV_ERROR) ? CURL_CSELECT_ERR : 0);

	(void)loop;
	socket_action(hc, fd, action);
}

static void
timer_cb(struct ev_loop *loop, struct ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	socket_action(w->data, CURL_SOCKET_TIMEOUT, 0);
}

static void
sock_free(struct http_sock *s)
{
	struct http_client *hc = s->hc;

	ev_io_stop(hc->loop, &s->io);
	LIST_REMOVE(s, link);
	free(s);
}

/* Connections kept open between calls. curl's default sizes the cache at
 * four times the transfers in the multi when a connection comes back, so
 * the tail of a burst (few transfers left) closed the connections the next
 * burst needed and it paid a connect each. */
#define HTTP_MAX_IDLE 1024L

/* CURLMOPT_SOCKETFUNCTION: only watchers change here, never curl. */
static int
curl_sock_cb(CURL *easy, curl_socket_t fd, int what, void *userp, void *sockp)
{
	struct http_client *hc = userp;
	struct http_sock *s = sockp;
	int events = ((what & CURL_POLL_IN) ? EV_READ : 0) | ((what & CURL_POLL_OUT) ? EV_WRITE : 0);

	(void)easy;
	if (what == CURL_POLL_REMOVE) {
		if (s != NULL)
			sock_free(s);
		return 0;
	}
	if (s == NULL) {
		s = calloc(1, sizeof(*s));
		if (s == NULL) {
			log_error("http.socket", "error=\"out of memory\"");
			return -1;
		}
		s->hc = hc;
		LIST_INSERT_HEAD(&hc->socks, s, link);
		if (curl_multi_assign(hc->multi, fd, s) != CURLM_OK) {
			sock_free(s);
			return -1;
		}
		ev_io_init(&s->io, io_cb, fd, events);
	} else {
		ev_io_stop(hc->loop, &s->io);
		ev_io_set(&s->io, fd, events);
	}
	ev_io_start(hc->loop, &s->io);
	return 0;
}

/* CURLMOPT_TIMERFUNCTION: -1 removes the timer. */
static int
curl_timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
	struct http_client *hc = userp;

	(void)multi;
	ev_timer_stop(hc->loop, &hc->timer);
	if (timeout_ms >= 0) {
		ev_timer_set(&hc->timer, (double)timeout_ms / 1000.0, 0.0);
		ev_timer_start(hc->loop, &hc->timer);
	}
	return 0;
}

/* ---- calls ---- */

static void
call_destroy(struct http_call *c)
{
	if (c->easy != NULL)
		curl_easy_cleanup(c->easy);
	free(c->hdr);
	free(c->req_body);
	if (c->body != NULL)
		explicit_bzero(c->body, c->body_len);	/* a token response, perhaps */
	free(c->body);
	free(c->retry_after);
	free(c->www_authenticate);
	free(c->dpop_nonce);
	free(c);
}

/* A kept call leaves the pool: usable again (see KEPT_POISON). */
static struct http_call *
kept_take(struct http_call *c)
{
	KEPT_UNPOISON(c, sizeof *c);
	KEPT_UNPOISON(c->hdr, c->hdr_cap);
	KEPT_UNPOISON(c->req_body, c->req_body_cap);
	KEPT_UNPOISON(c->body, c->body_cap);
	return c;
}

/* A kept call, or a new one with a new handle. NULL when out of memory. */
static struct http_call *
call_get(struct http_client *hc)
{
	struct http_call *c;

	if (hc->nidle > 0)
		return kept_take(hc->idle[--hc->nidle]);
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->hc = hc;
	if ((c->easy = curl_easy_init()) == NULL || http_req_easy_setup(c) < 0) {
		call_destroy(c);
		return NULL;
	}
	return c;
}

/* Out of the multi, our buffers wiped and taken back from curl: what is
 * left in the handle are the constant options and this call's URL, timeout
 * and method, which the next call sets again. */
static void
call_detach_curl(struct http_call *c)
{
	if (c->in_multi) {
		curl_multi_remove_handle(c->hc->multi, c->easy);
		c->in_multi = 0;
	}
	http_req_wipe(c);
	if (c->headers != NULL) {
		curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, (struct curl_slist *)NULL);
		c->headers = NULL;
	}
	if (c->has_req_body) {
		curl_easy_setopt(c->easy, CURLOPT_POSTFIELDS, (char *)NULL);
		curl_easy_setopt(c->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)-1);
		c->has_req_body = 0;
		c->req_body_len = 0;
	}
}

/* Shrinks a kept buffer that grew past HTTP_KEEP_BUF (its content is dead). */
static void
buf_trim(char **p, size_t *cap)
{
	if (*cap > HTTP_KEEP_BUF) {
		free(*p);
		*p = NULL;
		*cap = 0;
	}
}

/* The call is over (detached, its callback run or cancelled): kept for the
 * next call with its handle, or destroyed when enough are kept. */
static void
call_free(struct http_call *c)
{
	struct http_client *hc = c->hc;

	call_detach_curl(c);
	free(c->retry_after);
	free(c->www_authenticate);
	free(c->dpop_nonce);
	c->retry_after = c->www_authenticate = c->dpop_nonce = NULL;
	if (hc->nidle >= HTTP_EASY_POOL) {
		call_destroy(c);
		return;
	}
	if (c->body != NULL)
		explicit_bzero(c->body, c->body_len);	/* a token response, perhaps */
	buf_trim(&c->hdr, &c->hdr_cap);
	buf_trim(&c->req_body, &c->req_body_cap);
	buf_trim(&c->body, &c->body_cap);
	c->cb = NULL;
	c->arg = NULL;
	/* An http_cancel of a kept call (a caller's bug: the handle died with
	 * the callback) does nothing, or is reported under ASan. */
	c->state = CALL_IN_CALLBACK;
	hc->idle[hc->nidle++] = c;
	KEPT_POISON(c->hdr, c->hdr_cap);
	KEPT_POISON(c->req_body, c->req_body_cap);
	KEPT_POISON(c->body, c->body_cap);
	KEPT_POISON(c, sizeof *c);
}

/* Copies the finished transfer's results into the call and lets go of curl. */
static void
call_finish(struct http_call *c, CURLcode result)
{
	struct http_client *hc = c->hc;

	c->result = result;
	c->elapsed_ms = mono_ms() - c->started_ms;
	if (result == CURLE_OK)
		curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &c->status);
	curl_easy_getinfo(c->easy, CURLINFO_NUM_CONNECTS, &c->connects);
	if (result != CURLE_OK && c->errbuf[0] == '\0')
		snprintf(c->errbuf, sizeof(c->errbuf), "%s", curl_easy_strerror(result));
	if (c->body_too_large || result == CURLE_FILESIZE_EXCEEDED)
		snprintf(c->errbuf, sizeof(c->errbuf), "response body larger than %d bytes",
		    HTTP_BODY_MAX);
	c->fail = result == CURLE_OK ? CALLFAIL_NONE : http_req_classify(c, result);
	http_req_log_done(c);
	call_detach_curl(c);
	TAILQ_REMOVE(&hc->active, c, link);
	TAILQ_INSERT_TAIL(&hc->done, c, link);
	c->state = CALL_DONE;
}

static void
collect_finished(struct http_client *hc)
{
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(hc->multi, &left)) != NULL) {
		CURL *easy = msg->easy_handle;
		CURLcode result = msg->data.result;
		char *priv = NULL;

		if (msg->msg != CURLMSG_DONE)
			continue;
		/* msg dies with the handle's removal: everything is read above */
		curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
		if (priv != NULL)
			call_finish((struct http_call *)(void *)priv, result);
	}
}

static void
run_callback(struct http_call *c)
{
	struct http_response r = {
		.status = c->result == CURLE_OK ? c->status : 0,
		.timed_out = c->result == CURLE_OPERATION_TIMEDOUT,
		.error = c->result == CURLE_OK ? "" : c->errbuf,
		.fail = c->result == CURLE_OK ? CALLFAIL_NONE : c->fail,
		.body = c->body != NULL && c->result == CURLE_OK ? c->body : "",
		.body_len = c->result == CURLE_OK ? c->body_len : 0,
		.retry_after = c->retry_after,
		.www_authenticate = c->www_authenticate,
		.dpop_nonce = c->dpop_nonce,
		.elapsed_ms = (long)c->elapsed_ms,
		.connects = c->connects,
		.no_descriptor = c->result != CURLE_OK && c->no_descriptor,
	};

	c->cb(&r, c->arg);
}

/* Takes one call at a time from the head: a callback may cancel any other. */
static void
dispatch_done(struct http_client *hc)
{
	struct http_call *c;

	if (hc->dispatching)
		return;
	hc->dispatching = 1;
	while ((c = list_pop(&hc->done)) != NULL) {
		c->state = CALL_IN_CALLBACK;
		hc->in_flight--;
		run_callback(c);
		call_free(c);
	}
	hc->dispatching = 0;
}

static void
process_messages(struct http_client *hc)
{
	collect_finished(hc);
	dispatch_done(hc);
}

/* ---- public ---- */

/* Whether curl would take a proxy from the environment (libcurl 7.88's
 * names: HTTP_PROXY in capitals is ignored, as curl does); when one is set,
 * curl reads them itself, per call, as it always has. The environment does
 * not change under a running daemon, so reading it once is the same. */
static int
env_has_proxy(void)
{
	static const char *const names[] = {"http_proxy", "https_proxy", "HTTPS_PROXY",
	    "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"};

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (getenv(names[i]) != NULL)
			return 1;
	return 0;
}

struct http_client *
http_client_new(struct ev_loop *loop)
{
	struct http_client *hc;

	if (!curl_ready) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			log_error("http.init", "error=\"curl_global_init failed\"");
			return NULL;
		}
		curl_ready = 1;
	}
	hc = calloc(1, sizeof(*hc));
	if (hc == NULL)
		return NULL;
	hc->loop = loop;
	TAILQ_INIT(&hc->active);
	TAILQ_INIT(&hc->done);
	LIST_INIT(&hc->socks);
	hc->env_proxy = env_has_proxy();
	hc->multi = curl_multi_init();
	if (hc->multi == NULL) {
		free(hc);
		return NULL;
	}
	ev_timer_init(&hc->timer, timer_cb, 0.0, 0.0);
	hc->timer.data = hc;
	if (curl_multi_setopt(hc->multi, CURLMOPT_SOCKETFUNCTION, curl_sock_cb) != CURLM_OK ||
	    curl_multi_setopt(hc->multi, CURLMOPT_SOCKETDATA, hc) != CURLM_OK ||
	    curl_multi_setopt(hc->multi, CURLMOPT_TIMERFUNCTION, curl_timer_cb) != CURLM_OK ||
	    curl_multi_setopt(hc->multi, CURLMOPT_TIMERDATA, hc) != CURLM_OK ||
	    curl_multi_setopt(hc->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_NOTHING) != CURLM_OK ||
	    curl_multi_setopt(hc->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 0L) != CURLM_OK ||
	    curl_multi_setopt(hc->multi, CURLMOPT_MAXCONNECTS, HTTP_MAX_IDLE) != CURLM_OK) {
		curl_multi_cleanup(hc->multi);
		free(hc);
		return NULL;
	}
	return hc;
}

void
http_client_free(struct http_client *hc)
{
	struct http_call *c;
	struct http_sock *s;

	if (hc == NULL)
		return;
	if (hc->dispatching) {
		log_error("http.misuse", "error=\"http_client_free called from an http callback\"");
		abort();
	}
	while ((c = list_pop(&hc->active)) != NULL)
		call_free(c);
	while ((c = list_pop(&hc->done)) != NULL)
		call_free(c);
	while (hc->nidle > 0)
		call_destroy(kept_take(hc->idle[--hc->nidle]));
	curl_multi_cleanup(hc->multi);
	/* curl may close cached connections without telling the socket callback */
	while ((s = LIST_FIRST(&hc->socks)) != NULL) {
		LIST_REMOVE(s, link);
		ev_io_stop(hc->loop, &s->io);
		free(s);
	}
	ev_timer_stop(hc->loop, &hc->timer);
	free(hc);
}

int
http_start(struct http_client *hc, const struct http_request *req, http_done_cb *cb, void *arg,
	   struct http_call **out)
{
	struct http_call *c;

	if (out != NULL)
		*out = NULL;
	if (hc == NULL || req == NULL || cb == NULL || !http_req_valid(req)) {
		log_error("http.start", "error=\"invalid request\"");
		return -1;
	}
	c = call_get(hc);
	if (c == NULL) {
		log_error("http.start", "error=\"out of memory\"");
		return -1;
	}
	c->cb = cb;
	c->arg = arg;
	memcpy(c->method, req->method, strlen(req->method) + 1);	/* fits: request_valid */
	c->errbuf[0] = '\0';
	c->body_len = 0;
	if (c->body != NULL)
		c->body[0] = '\0';	/* a kept buffer still holds the last answer */
	c->body_too_large = 0;
	c->result = CURLE_OK;
	c->status = c->connects = 0;
	c->no_descriptor = 0;
	c->elapsed_ms = 0;
	if (http_req_set(c, req) < 0) {
		/* a handle half set up is not kept */
		call_detach_curl(c);
		call_destroy(c);
		log_error("http.start", "error=\"curl_easy_setopt failed\"");
		return -1;
	}
	c->started_ms = mono_ms();
	/* adding only arms the timer: the transfer runs from the loop */
	if (curl_multi_add_handle(hc->multi, c->easy) != CURLM_OK) {
		call_detach_curl(c);
		call_destroy(c);
		log_error("http.start", "error=\"curl_multi_add_handle failed\"");
		return -1;
	}
	c->in_multi = 1;
	c->state = CALL_ACTIVE;
	TAILQ_INSERT_TAIL(&hc->active, c, link);
	hc->in_flight++;
	if (out != NULL)
		*out = c;
	return 0;
}

void
http_cancel(struct http_call *call)
{
	struct http_client *hc;

	if (call == NULL || call->state == CALL_IN_CALLBACK)
		return;
	hc = call->hc;
	TAILQ_REMOVE(call->state == CALL_ACTIVE ? &hc->active : &hc->done, call, link);
	hc->in_flight--;
	call_free(call);
}

size_t
http_in_flight(const struct http_client *hc)
{
	return hc != NULL ? hc->in_flight : 0;
}
