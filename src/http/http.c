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
#include "http/http.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/queue.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/evp.h>

/* Under ASan a kept call is poisoned while it is idle, so a use of a call
 * after its callback or cancel is still reported, as when calls were freed. */
#if defined(__SANITIZE_ADDRESS__)
#define HTTP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HTTP_ASAN 1
#endif
#endif
#ifdef HTTP_ASAN
#include <sanitizer/asan_interface.h>
#define KEPT_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define KEPT_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define KEPT_POISON(p, n) ((void)(p), (void)(n))
#define KEPT_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#include "base/log.h"

enum call_state { CALL_ACTIVE, CALL_DONE, CALL_IN_CALLBACK };

TAILQ_HEAD(call_list, http_call);

struct http_sock {
	struct ev_io io;		/* first: the watcher's address is the sock's */
	struct http_client *hc;
	LIST_ENTRY(http_sock) link;
};

/* Calls kept between calls, each with its easy handle (one per slot at
 * max_in_flight 256 and more): curl_easy_init and curl_easy_cleanup per call
 * were 5 % of a job; curl_easy_reset and setting every option again per call
 * another 4 % (issue 10). */
#define HTTP_EASY_POOL 512
/* curl's receive buffer, one per transfer under way: its default 16 KiB made
 * a third of the heap at 256 calls in flight (issue 10: peak RSS 16.6-18.6
 * MiB, 14.0-15.5 with 2 KiB); 1 KiB, curl's least, is another 1 KiB less per
 * transfer (160 of them at the heap's peak with token = exchange). The
 * answers we read are a status line, a few headers and a small body (an
 * exchange's token answer about 700 bytes in all); headers are gathered
 * across reads, so a longer answer only takes more reads. */
#define HTTP_RECV_BUFFER 1024L
/* A kept call keeps its buffers (header lines, request body, answer) up to
 * this size each for the next call; a bigger one is freed when the call ends.
 * It holds a call without a token whole (the bench's: header lines 185
 * bytes, R7 body 234, no answer body), so auth none allocates nothing per
 * call. Not a bearer's header lines (about 630), a token exchange's request
 * (1,010) or its answer (470): kept up to 4 KiB, every pooled call grew to
 * the largest of each it ever held, 2.7 KiB a call (issue 10: with
 * token = exchange 0.55 MB of the heap at 220 calls in flight). */
#define HTTP_KEEP_BUF 256
/* No curl adds "Expect: 100-continue" to a CURLOPT_POSTFIELDS body of this
 * many bytes or fewer (the threshold was 1 KiB, it is 1 MiB since 7.6x), so
 * the "Expect:" line that turns it off is only sent along with a bigger body:
 * one header line fewer for curl to scan in every small call. */
#define HTTP_EXPECT_MIN 1024

struct http_client {
	struct ev_loop *loop;
	CURLM *multi;
	struct ev_timer timer;
	struct call_list active;	/* attached to the multi */
	struct call_list done;		/* finished, callback not yet run */
	LIST_HEAD(, http_sock) socks;	/* every watcher we own */
	struct http_call *idle[HTTP_EASY_POOL];	/* owned: finished calls, kept with their handles */
	size_t nidle;
	size_t in_flight;
	int dispatching;
	int env_proxy;		/* a proxy variable was set when the client was made */
};

struct http_call {
	struct http_client *hc;
	TAILQ_ENTRY(http_call) link;	/* in active or done */
	enum call_state state;
	/* Kept with the call between calls: the handle, with the options that
	 * are the same for every call set once (easy_setup), and our buffers. */
	CURL *easy;
	int in_multi;
	char *hdr;			/* the header list's nodes, then its lines: may
					   hold a bearer or Basic credentials */
	size_t hdr_lines, hdr_len, hdr_cap;	/* where the lines start, where they end */
	struct curl_slist *headers;	/* CURLOPT_HTTPHEADER: in hdr, or NULL */
	char *req_body;			/* CURLOPT_POSTFIELDS: may hold a client secret */
	size_t req_body_len, req_body_cap;
	int has_req_body;
	int custom, nobody;		/* CURLOPT_CUSTOMREQUEST, CURLOPT_NOBODY set */
	/* This call's own: set by http_start */
	http_done_cb *cb;
	void *arg;
	char method[16];		/* for the log line only */
	char errbuf[CURL_ERROR_SIZE];
	char *body;
	size_t body_len, body_cap;
	int body_too_large;
	char *retry_after, *www_authenticate;
	char *dpop_nonce;	/* RFC 9449 §8: DPoP-Nonce */
	CURLcode result;
	enum callfail fail;	/* classify()'s, CALLFAIL_NONE when it answered */
	long status, connects;
	int no_descriptor;	/* a socket() of this call met EMFILE or ENFILE */
	int64_t started_ms, elapsed_ms;
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

/* ---- per-call curl callbacks: they fill the call's buffers only ---- */

static int
body_reserve(struct http_call *c, size_t extra)
{
	size_t need = c->body_len + extra + 1;
	size_t cap = c->body_cap ? c->body_cap : HTTP_KEEP_BUF;
	char *p;

	if (need <= c->body_cap)
		return 0;
	while (cap < need)
		cap *= 2;
	/* Not realloc: a token response moved by it would stay behind,
	 * unwiped, in the memory it left. */
	if ((p = malloc(cap)) == NULL)
		return -1;
	if (c->body != NULL) {
		memcpy(p, c->body, c->body_len);
		explicit_bzero(c->body, c->body_len);
		free(c->body);
	}
	c->body = p;
	c->body_cap = cap;
	return 0;
}

static size_t
write_cb(char *data, size_t size, size_t nmemb, void *userp)
{
	struct http_call *c = userp;
	size_t n = size * nmemb;

	if (n > HTTP_BODY_MAX - c->body_len) {
		c->body_too_large = 1;
		return 0;	/* anything but n aborts the transfer */
	}
	if (body_reserve(c, n) < 0)
		return 0;
	memcpy(c->body + c->body_len, data, n);
	c->body_len += n;
	c->body[c->body_len] = '\0';
	return n;
}

static int
is_ows(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

/* Replaces *slot with the trimmed value when `line` is "name: value". */
static int
capture_header(const char *line, size_t len, const char *name, char **slot)
{
	size_t nlen = strlen(name);
	const char *v, *end;
	char *copy;

	if (len <= nlen || line[nlen] != ':' || strncasecmp(line, name, nlen) != 0)
		return 0;
	v = line + nlen + 1;
	end = line + len;
	while (v < end && is_ows(*v))
		v++;
	while (end > v && is_ows(end[-1]))
		end--;
	copy = malloc((size_t)(end - v) + 1);
	if (copy == NULL)
		return -1;
	memcpy(copy, v, (size_t)(end - v));
	copy[end - v] = '\0';
	free(*slot);
	*slot = copy;
	return 0;
}

static size_t
header_cb(char *data, size_t size, size_t nitems, void *userp)
{
	struct http_call *c = userp;
	size_t n = size * nitems;

	/* A new status line (after a 1xx) starts a new header block. */
	if (n >= 5 && memcmp(data, "HTTP/", 5) == 0) {
		free(c->retry_after);
		free(c->www_authenticate);
		free(c->dpop_nonce);
		c->retry_after = c->www_authenticate = c->dpop_nonce = NULL;
		return n;
	}
	if (capture_header(data, n, "Retry-After", &c->retry_after) < 0 ||
	    capture_header(data, n, "WWW-Authenticate", &c->www_authenticate) < 0 ||
	    capture_header(data, n, "DPoP-Nonce", &c->dpop_nonce) < 0)
		return 0;
	return n;
}

/* ---- calls ---- */

/* Headers and the request body may carry a token, Basic credentials or a
 * client secret. They are our buffers, never curl's copies (no
 * CURLOPT_USERPWD, no CURLOPT_COPYPOSTFIELDS), so they can be wiped: once
 * the handle is out of the multi nothing reads them any more. */
static void
wipe_request(struct http_call *c)
{
	if (c->hdr_len > c->hdr_lines)
		explicit_bzero(c->hdr + c->hdr_lines, c->hdr_len - c->hdr_lines);
	c->hdr_len = c->hdr_lines = 0;
	if (c->has_req_body && c->req_body_len > 0)
		explicit_bzero(c->req_body, c->req_body_len);
}

/* The options that are the same for every call, set once per handle: a
 * handle is never reset, so they stay. What differs between calls -- URL,
 * timeout, method, body, headers -- is set by every http_start (and the
 * headers and body are taken back from curl when the call ends), so nothing
 * of one call is left for the next. */

/* curl's own socket(), noting the process' descriptor limit (EMFILE, or the
 * system's: ENFILE): such a call never left this host, and the job must not
 * pay an attempt for it (issue 23 item 8). Close-on-exec as every other
 * descriptor of the daemon. */
static curl_socket_t
open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct http_call *c = arg;
	int fd = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);

	(void)purpose;
	if (fd < 0 && (errno == EMFILE || errno == ENFILE))
		c->no_descriptor = 1;
	return fd < 0 ? CURL_SOCKET_BAD : fd;
}

static int
easy_setup(struct http_call *c)
{
	CURL *e = c->easy;
	int ok = 1;

	ok &= curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https") == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 15L) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)HTTP_BODY_MAX) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_BUFFERSIZE, HTTP_RECV_BUFFER) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->errbuf) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_PRIVATE, c) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_socket) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, c) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_WRITEDATA, c) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_HEADERDATA, c) == CURLE_OK;
	if (!c->hc->env_proxy) {
		/* What curl would find in the environment, said once: without
		 * these it reads up to five variables per call (bench/README.md,
		 * lever 29). "" is no proxy, and no host is exempt. */
		ok &= curl_easy_setopt(e, CURLOPT_PROXY, "") == CURLE_OK;
		ok &= curl_easy_setopt(e, CURLOPT_NOPROXY, "") == CURLE_OK;
	}
	return ok ? 0 : -1;
}

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
	if ((c->easy = curl_easy_init()) == NULL || easy_setup(c) < 0) {
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
	wipe_request(c);
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

static int
has_crlf(const char *s)
{
	return strpbrk(s, "\r\n") != NULL;
}

static int
request_valid(const struct http_request *req)
{
	if (req->url == NULL || req->method == NULL || req->method[0] == '\0' ||
	    strlen(req->method) >= sizeof(((struct http_call *)0)->method) ||
	    strpbrk(req->method, " \t\r\n") != NULL || has_crlf(req->url) || req->timeout_ms <= 0 ||
	    (req->userpwd != NULL && has_crlf(req->userpwd)) ||
	    (req->body == NULL && req->body_len != 0))
		return 0;
	for (const char *const *h = req->headers; h != NULL && *h != NULL; h++)
		if (has_crlf(*h))
			return 0;
	return 1;
}

/* Grows a kept buffer to hold `need` bytes; its content is dead. */
static int
buf_reserve(char **p, size_t *cap, size_t need)
{
	char *n;

	if (need <= *cap)
		return 0;
	if (need < HTTP_KEEP_BUF)
		need = HTTP_KEEP_BUF;
	n = malloc(need);
	if (n == NULL)
		return -1;
	free(*p);
	*p = n;
	*cap = need;
	return 0;
}

/* The header list, curl_slist nodes and their lines, in the call's own
 * buffer (curl only reads the list): no allocation per line, one wipe.
 * Basic credentials are one of these lines, "Authorization: Basic
 * <base64(userpwd)>", instead of CURLOPT_USERPWD, whose copy curl frees
 * unwiped. */
static int
set_headers(struct http_call *c, const struct http_request *req)
{
	static const char basic[] = "Authorization: Basic ";
	static const char expect[] = "Expect:";	/* no 100-continue round trip */
	size_t n = 0, bytes = 0, up = 0, len;
	int with_expect = req->body != NULL && req->body_len > HTTP_EXPECT_MIN;
	struct curl_slist *nodes;
	char *p;

	if (req->userpwd != NULL) {
		up = strlen(req->userpwd);
		if (up > INT32_MAX / 2)
			return -1;
		n++;
		bytes += sizeof basic - 1 + 4 * ((up + 2) / 3) + 1;
	}
	for (const char *const *h = req->headers; h != NULL && *h != NULL; h++) {
		n++;
		bytes += strlen(*h) + 1;
	}
	if (with_expect) {
		n++;
		bytes += sizeof expect;
	}
	if (n == 0)
		return 0;
	if (buf_reserve(&c->hdr, &c->hdr_cap, n * sizeof(*nodes) + bytes) < 0)
		return -1;
	nodes = (struct curl_slist *)(void *)c->hdr;
	p = c->hdr + n * sizeof(*nodes);
	n = 0;
	if (req->userpwd != NULL) {
		nodes[n].data = p;
		memcpy(p, basic, sizeof basic - 1);
		len = sizeof basic - 1 + (size_t)EVP_EncodeBlock((unsigned char *)p + sizeof basic - 1,
		    (const unsigned char *)req->userpwd, (int)up);
		p += len + 1;
		n++;
	}
	for (const char *const *h = req->headers; h != NULL && *h != NULL; h++) {
		len = strlen(*h);
		nodes[n].data = p;
		memcpy(p, *h, len + 1);
		p += len + 1;
		n++;
	}
	if (with_expect) {
		nodes[n].data = p;
		memcpy(p, expect, sizeof expect);
		p += sizeof expect;
		n++;
	}
	for (size_t i = 0; i + 1 < n; i++)
		nodes[i].next = &nodes[i + 1];
	nodes[n - 1].next = NULL;
	c->hdr_lines = (size_t)((char *)&nodes[n] - c->hdr);
	c->hdr_len = (size_t)(p - c->hdr);
	c->headers = nodes;
	return curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, c->headers) == CURLE_OK ? 0 : -1;
}

/* Every call sets the method: a kept handle still has the previous call's
 * (POST, a custom one, HEAD's no-body). */
static int
set_method_and_body(struct http_call *c, const struct http_request *req)
{
	CURL *e = c->easy;
	int post = strcmp(req->method, "POST") == 0;
	int head = 0, custom, ok = 1;

	if (req->body != NULL || post) {
		/* Our copy, wiped when the call ends (curl's COPYPOSTFIELDS would
		 * not be). POST always sends a body, possibly empty, so
		 * Content-Length is set. */
		size_t n = req->body != NULL ? req->body_len : 0;
		if (buf_reserve(&c->req_body, &c->req_body_cap, n + 1) < 0)
			return -1;
		if (n > 0)
			memcpy(c->req_body, req->body, n);
		c->req_body[n] = '\0';
		c->req_body_len = n;
		c->has_req_body = 1;
		if (c->nobody)
			ok &= curl_easy_setopt(e, CURLOPT_NOBODY, 0L) == CURLE_OK;
		ok &= curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n) == CURLE_OK;
		ok &= curl_easy_setopt(e, CURLOPT_POSTFIELDS, c->req_body) == CURLE_OK;
		custom = !post;
	} else if (strcmp(req->method, "HEAD") == 0) {
		ok &= curl_easy_setopt(e, CURLOPT_NOBODY, 1L) == CURLE_OK;
		head = 1;
		custom = 0;
	} else {
		/* HTTPGET also clears NOBODY */
		ok &= curl_easy_setopt(e, CURLOPT_HTTPGET, 1L) == CURLE_OK;
		custom = strcmp(req->method, "GET") != 0;
	}
	if (custom || c->custom)
		ok &= curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, custom ? req->method : NULL) ==
		    CURLE_OK;
	c->nobody = head;
	c->custom = custom;
	return ok ? 0 : -1;
}

static int
set_options(struct http_call *c, const struct http_request *req)
{
	CURL *e = c->easy;
	int ok = 1;

	ok &= curl_easy_setopt(e, CURLOPT_URL, req->url) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, req->timeout_ms) == CURLE_OK;
	/* always set: a kept easy handle must not carry the last call's */
	ok &= curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, req->connect_timeout_ms > 0 ?
	    req->connect_timeout_ms : 0L) == CURLE_OK;
	if (!ok || set_method_and_body(c, req) < 0 || set_headers(c, req) < 0)
		return -1;
	return 0;
}

/* Host and path only: the query and userinfo may hold secrets. */
static void
log_done(const struct http_call *c)
{
	char host[128], path[256], err[256];
	char *h = NULL, *p = NULL, *url = NULL;
	CURLU *u;

	if (log_get_level() < LOG_DEBUG)
		return;
	curl_easy_getinfo(c->easy, CURLINFO_EFFECTIVE_URL, &url);
	u = curl_url();
	if (u != NULL && url != NULL && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK) {
		curl_url_get(u, CURLUPART_HOST, &h, 0);
		curl_url_get(u, CURLUPART_PATH, &p, 0);
	}
	log_debug("http.done", "method=%s host=%s path=%s status=%ld ms=%lld connects=%ld error=%s",
	    c->method, log_quote(host, sizeof(host), h), log_quote(path, sizeof(path), p),
	    c->status, (long long)c->elapsed_ms, c->connects,
	    log_quote(err, sizeof(err), c->result == CURLE_OK ? "" : c->errbuf));
	curl_free(h);
	curl_free(p);
	curl_url_cleanup(u);
}

/* A transport error's class (callfail.h), classified here once: the only
 * place that reads curl's codes. A timeout before the request went out
 * (pretransfer time 0: connecting, or the TLS handshake) is a
 * connect-timeout, after it a read-timeout. */
static enum callfail
classify(const struct http_call *c, CURLcode result)
{
	curl_off_t pretransfer = 0;
	long os_errno = 0;

	if (c->no_descriptor)
		return CALLFAIL_NO_DESCRIPTOR;
	if (c->body_too_large)
		return CALLFAIL_TOO_LARGE;
	switch (result) {
	case CURLE_COULDNT_CONNECT:
		curl_easy_getinfo(c->easy, CURLINFO_OS_ERRNO, &os_errno);
		return os_errno == ECONNREFUSED ? CALLFAIL_CONNECT_REFUSED : CALLFAIL_CONNECT;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return CALLFAIL_DNS;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
		return CALLFAIL_TLS_VERIFY;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ENGINE_INITFAILED:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_SHUTDOWN_FAILED:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_CLIENTCERT:
		return CALLFAIL_TLS;
	case CURLE_OPERATION_TIMEDOUT:
		curl_easy_getinfo(c->easy, CURLINFO_PRETRANSFER_TIME_T, &pretransfer);
		return pretransfer > 0 ? CALLFAIL_READ_TIMEOUT : CALLFAIL_CONNECT_TIMEOUT;
	case CURLE_SEND_ERROR:
		return CALLFAIL_SEND;
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
		return CALLFAIL_RECV;
	case CURLE_FILESIZE_EXCEEDED:
		return CALLFAIL_TOO_LARGE;
	default:
		return CALLFAIL_OTHER;
	}
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
	c->fail = result == CURLE_OK ? CALLFAIL_NONE : classify(c, result);
	log_done(c);
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
	if (hc == NULL || req == NULL || cb == NULL || !request_valid(req)) {
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
	if (set_options(c, req) < 0) {
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
