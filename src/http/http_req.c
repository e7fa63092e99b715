/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * http_req: one request on a call's easy handle (http_call.h): the options
 * every call shares, what differs per call (URL, timeouts, method, body,
 * header lines -- in our own buffers, so they can be wiped), curl's
 * callbacks that fill the answer's body and headers, the debug line of a
 * finished call, and the class of a call that got no answer.
 */
#define _DEFAULT_SOURCE	/* explicit_bzero */
#include "http_call.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <openssl/evp.h>

#include "base/log.h"

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

/* Headers and the request body may carry a token, Basic credentials or a
 * client secret. They are our buffers, never curl's copies (no
 * CURLOPT_USERPWD, no CURLOPT_COPYPOSTFIELDS), so they can be wiped: once
 * the handle is out of the multi nothing reads them any more. */
void
http_req_wipe(struct http_call *c)
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

int
http_req_easy_setup(struct http_call *c)
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

static int
has_crlf(const char *s)
{
	return strpbrk(s, "\r\n") != NULL;
}

int
http_req_valid(const struct http_request *req)
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

int
http_req_set(struct http_call *c, const struct http_request *req)
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
void
http_req_log_done(const struct http_call *c)
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
enum callfail
http_req_classify(const struct http_call *c, CURLcode result)
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
