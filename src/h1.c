/*
 * h1: the request head and the answer's reader of the native HTTP/1.1
 * client. See h1.h; hconn does the I/O.
 */
#define _DEFAULT_SOURCE
#include "h1.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "resp.h"

static char *
put(char *p, const char *s, size_t n)
{
	memcpy(p, s, n);
	return p + n;
}

/* ---- which URLs ---- */

/* RFC 3986 pchar, '/' and '?', and '%' (checked for two hex digits): what
 * curl 7.88 sends as it is. Anything else (a space, a quote, a byte over
 * 0x7f) curl rewrites or refuses, so such a URL goes through curl. */
static int
target_char(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	    (ch != '\0' && strchr("-._~!$&'()*+,;=:@/?%", ch) != NULL);
}

static int
is_hex(unsigned char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

/* Whether the path (up to the query) has a "." or ".." segment, which curl
 * removes (RFC 3986 §5.2.4) before it sends the path. */
static int
has_dot_segment(const char *p, size_t n)
{
	size_t i = 0;

	while (i < n && p[i] != '?') {
		size_t start = ++i;	/* p[i - 1] is '/' */
		while (i < n && p[i] != '/' && p[i] != '?')
			i++;
		if ((i - start == 1 && p[start] == '.') ||
		    (i - start == 2 && p[start] == '.' && p[start + 1] == '.'))
			return 1;
	}
	return 0;
}

static int
target_ok(const char *t, size_t n)
{
	if (n > 0 && t[0] != '/')
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)t[i];
		if (!target_char(ch))
			return 0;
		if (ch == '%' && (i + 2 >= n || !is_hex((unsigned char)t[i + 1]) ||
		    !is_hex((unsigned char)t[i + 2])))
			return 0;
	}
	return !has_dot_segment(t, n);
}

static int
parse_port(const char *p, const char *end, unsigned *port)
{
	unsigned v = 0;

	if (p == end || end - p > 5)
		return -1;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (unsigned)(*p - '0');
	}
	if (v == 0 || v > 65535)
		return -1;
	*port = v;
	return 0;
}

static int
host_addr(struct h1_url *u, int bracketed, unsigned port)
{
	if (bracketed) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)(void *)&u->addr;
		if (inet_pton(AF_INET6, u->host, &s6->sin6_addr) != 1)
			return -1;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		u->addr_len = sizeof *s6;
		return 0;
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)(void *)&u->addr;
	if (strcasecmp(u->host, "localhost") == 0)
		s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);	/* RFC 6761 §6.3 */
	else if (inet_pton(AF_INET, u->host, &s4->sin_addr) != 1)
		return -1;
	s4->sin_family = AF_INET;
	s4->sin_port = htons((uint16_t)port);
	u->addr_len = sizeof *s4;
	return 0;
}

int
h1_url_parse(const char *url, struct h1_url *u)
{
	const char *a, *end, *hs, *he, *colon = NULL, *frag;
	unsigned port = 80;
	int bracketed = 0;
	size_t hlen;

	memset(u, 0, sizeof *u);
	if (url == NULL || strncasecmp(url, "http://", 7) != 0)
		return -1;
	a = url + 7;
	end = a + strcspn(a, "/?#");
	if (end == a || memchr(a, '@', (size_t)(end - a)) != NULL)
		return -1;
	if (*a == '[') {
		bracketed = 1;
		hs = a + 1;
		he = memchr(hs, ']', (size_t)(end - hs));
		if (he == NULL || (he + 1 < end && he[1] != ':'))
			return -1;
		if (he + 1 < end)
			colon = he + 1;
	} else {
		hs = a;
		colon = memchr(a, ':', (size_t)(end - a));
		he = colon != NULL ? colon : end;
	}
	hlen = (size_t)(he - hs);
	if (hlen == 0 || hlen >= sizeof u->host ||
	    (colon != NULL && parse_port(colon + 1, end, &port) < 0))
		return -1;
	memcpy(u->host, hs, hlen);
	u->host[hlen] = '\0';
	if (host_addr(u, bracketed, port) < 0)
		return -1;
	/* curl's Host line: the port only when it is not 80 (it fits: a host
	 * under 256 bytes, brackets, ':' and 5 digits) */
	char *p = u->authority;
	if (bracketed)
		*p++ = '[';
	p = put(p, u->host, hlen);
	if (bracketed)
		*p++ = ']';
	if (port != 80) {
		*p++ = ':';
		p = resp_put_dec(p, port);
	}
	*p = '\0';
	frag = strchr(end, '#');
	u->target = end;
	u->target_len = frag != NULL ? (size_t)(frag - end) : strlen(end);
	return target_ok(u->target, u->target_len) ? 0 : -1;
}

/* ---- the request head ---- */

/* Whether `line` is a header of that name ("Name:" or "Name: value"). */
static int
is_header(const char *line, const char *name)
{
	size_t n = strlen(name);

	return strncasecmp(line, name, n) == 0 && line[n] == ':';
}

/* A "Name:" with nothing after it: curl's way of saying "not this header". */
static int
is_removal(const char *line)
{
	const char *c = strchr(line, ':');

	if (c == NULL)
		return 0;
	for (c++; *c == ' ' || *c == '\t'; c++)
		;
	return *c == '\0';
}

static int
caller_has(const struct h1_head *h, const char *name)
{
	for (const char *const *l = h->headers; l != NULL && *l != NULL; l++)
		if (is_header(*l, name))
			return 1;
	return 0;
}

/* Framing is ours: a caller's own lines for these are not sent. */
static int
framing_header(const char *line)
{
	return is_header(line, "Content-Length") || is_header(line, "Transfer-Encoding") ||
	    is_header(line, "Expect") || is_header(line, "Host");
}

static const char form_type[] = "Content-Type: application/x-www-form-urlencoded\r\n";

size_t
h1_head_size(const struct h1_head *h)
{
	size_t n = strlen(h->method) + 1 + h->url->target_len + 1 + sizeof " HTTP/1.1\r\n";

	n += sizeof "Host: \r\n" + strlen(h->url->authority);
	if (h->basic != NULL)
		n += sizeof "Authorization: Basic \r\n" + 4 * ((strlen(h->basic) + 2) / 3) + 1;
	n += sizeof "Accept: */*\r\n";
	for (const char *const *l = h->headers; l != NULL && *l != NULL; l++)
		n += strlen(*l) + 2;
	n += sizeof "Content-Length: \r\n" + 20 + sizeof form_type + 2;
	return n;
}


#define PUT_LIT(p, lit) put((p), (lit), sizeof(lit) - 1)

size_t
h1_head_write(char *buf, const struct h1_head *h)
{
	char *p = buf;

	p = put(p, h->method, strlen(h->method));
	*p++ = ' ';
	if (h->url->target_len == 0)
		*p++ = '/';
	p = put(p, h->url->target, h->url->target_len);
	p = PUT_LIT(p, " HTTP/1.1\r\nHost: ");
	p = put(p, h->url->authority, strlen(h->url->authority));
	p = PUT_LIT(p, "\r\n");
	if (h->basic != NULL) {
		p = PUT_LIT(p, "Authorization: Basic ");
		p += EVP_EncodeBlock((unsigned char *)p, (const unsigned char *)h->basic,
		    (int)strlen(h->basic));
		p = PUT_LIT(p, "\r\n");
	}
	if (!caller_has(h, "Accept"))
		p = PUT_LIT(p, "Accept: */*\r\n");
	for (const char *const *l = h->headers; l != NULL && *l != NULL; l++) {
		if (framing_header(*l) || is_removal(*l))
			continue;
		p = put(p, *l, strlen(*l));
		p = PUT_LIT(p, "\r\n");
	}
	if (h->has_body) {
		p = PUT_LIT(p, "Content-Length: ");
		p = resp_put_dec(p, h->body_len);
		p = PUT_LIT(p, "\r\n");
		if (!caller_has(h, "Content-Type"))
			p = PUT_LIT(p, form_type);
	}
	p = PUT_LIT(p, "\r\n");
	return (size_t)(p - buf);
}

/* ---- the answer ---- */

enum rstate {
	S_STATUS, S_HEADER, S_BODY_LEN, S_BODY_CLOSE, S_CHUNK_SIZE, S_CHUNK_DATA,
	S_CHUNK_END, S_TRAILER, S_DONE, S_ERROR
};

struct h1_reader {
	enum rstate st;
	int head_request, started, too_large;
	size_t body_max, head_bytes;
	char *line;			/* a line that came in pieces */
	size_t line_len, line_cap;
	long status;
	int minor, conn_close, conn_keep, keep_alive;
	int chunked, te_other, has_len;
	uint64_t clen, remain;
	char *body;
	size_t body_len, body_cap;
	char *retry_after, *www_authenticate;
	char err[96];
};

struct h1_reader *
h1_reader_new(void)
{
	struct h1_reader *r = calloc(1, sizeof *r);

	if (r != NULL)
		h1_reader_reset(r, 0, 0, 0);
	return r;
}

void
h1_reader_free(struct h1_reader *r)
{
	if (r == NULL)
		return;
	free(r->line);
	free(r->body);
	free(r->retry_after);
	free(r->www_authenticate);
	free(r);
}

static void
trim_buf(char **p, size_t *cap, size_t keep)
{
	if (*cap > keep) {
		free(*p);
		*p = NULL;
		*cap = 0;
	}
}

static void
forget_head(struct h1_reader *r)
{
	free(r->retry_after);
	free(r->www_authenticate);
	r->retry_after = r->www_authenticate = NULL;
	r->conn_close = r->conn_keep = r->chunked = r->te_other = r->has_len = 0;
	r->clen = 0;
}

void
h1_reader_reset(struct h1_reader *r, int head_request, size_t body_max, size_t keep)
{
	forget_head(r);
	trim_buf(&r->line, &r->line_cap, keep);
	trim_buf(&r->body, &r->body_cap, keep);
	r->st = S_STATUS;
	r->head_request = head_request;
	r->started = r->too_large = 0;
	r->body_max = body_max;
	r->head_bytes = r->line_len = r->body_len = 0;
	r->status = 0;
	r->minor = r->keep_alive = 0;
	r->remain = 0;
	r->err[0] = '\0';
	if (r->body != NULL)
		r->body[0] = '\0';
}

static enum h1_rc
fail(struct h1_reader *r, const char *why)
{
	snprintf(r->err, sizeof r->err, "%s", why);
	r->st = S_ERROR;
	return H1_ERROR;
}

static enum h1_rc
too_large(struct h1_reader *r)
{
	snprintf(r->err, sizeof r->err, "response body larger than %zu bytes", r->body_max);
	r->too_large = 1;
	r->st = S_ERROR;
	return H1_ERROR;
}

static int
body_append(struct h1_reader *r, const char *p, size_t n)
{
	size_t need = r->body_len + n + 1, cap = r->body_cap ? r->body_cap : 256;
	char *nb;

	if (need > r->body_cap) {
		while (cap < need)
			cap *= 2;
		nb = realloc(r->body, cap);
		if (nb == NULL)
			return -1;
		r->body = nb;
		r->body_cap = cap;
	}
	memcpy(r->body + r->body_len, p, n);
	r->body_len += n;
	r->body[r->body_len] = '\0';
	return 0;
}

static int
parse_status(struct h1_reader *r, const char *l, size_t n)
{
	if (n < 12 || memcmp(l, "HTTP/1.", 7) != 0 || l[7] < '0' || l[7] > '9' || l[8] != ' ' ||
	    l[9] < '1' || l[9] > '9' || l[10] < '0' || l[10] > '9' || l[11] < '0' || l[11] > '9' ||
	    (n > 12 && l[12] != ' '))
		return -1;
	r->minor = l[7] - '0';
	r->status = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
	return 0;
}

static int
token_char(unsigned char ch)
{
	return ch > 0x20 && ch < 0x7f && strchr("\"(),/:;<=>?@[\\]{}", ch) == NULL;
}

static int
ci_equal(const char *a, size_t n, const char *lit)
{
	return strlen(lit) == n && strncasecmp(a, lit, n) == 0;
}

static char *
dup_n(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d != NULL) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

static int
keep_value(char **slot, const char *v, size_t n)
{
	char *d = dup_n(v, n);

	if (d == NULL)
		return -1;
	free(*slot);
	*slot = d;
	return 0;
}

/* Calls fn on each comma-separated element of v, trimmed. */
static void
each_element(struct h1_reader *r, const char *v, size_t n,
	      void (*fn)(struct h1_reader *, const char *, size_t, int last))
{
	size_t i = 0;

	while (i <= n) {
		size_t s = i, e;
		while (i < n && v[i] != ',')
			i++;
		e = i;
		while (s < e && (v[s] == ' ' || v[s] == '\t'))
			s++;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		fn(r, v + s, e - s, i >= n);
		i++;
	}
}

static void
connection_token(struct h1_reader *r, const char *t, size_t n, int last)
{
	(void)last;
	if (ci_equal(t, n, "close"))
		r->conn_close = 1;
	else if (ci_equal(t, n, "keep-alive"))
		r->conn_keep = 1;
}

static void
coding_token(struct h1_reader *r, const char *t, size_t n, int last)
{
	if (!last)
		return;
	if (ci_equal(t, n, "chunked"))
		r->chunked = 1;
	else
		r->te_other = 1;
}

static enum h1_rc
content_length(struct h1_reader *r, const char *v, size_t n)
{
	uint64_t x = 0;

	if (n == 0)
		return fail(r, "bad Content-Length");
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9' || x > (UINT64_MAX - 9) / 10)
			return fail(r, "bad Content-Length");
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	if (r->has_len && r->clen != x)
		return fail(r, "two different Content-Lengths");
	r->has_len = 1;
	r->clen = x;
	return H1_MORE;
}

static enum h1_rc
header_field(struct h1_reader *r, const char *l, size_t n)
{
	const char *colon = memchr(l, ':', n), *v, *e = l + n;
	size_t nlen;

	if (l[0] == ' ' || l[0] == '\t')
		return fail(r, "obsolete line folding in the answer's head");
	if (colon == NULL || colon == l)
		return fail(r, "a header line without a name");
	nlen = (size_t)(colon - l);
	for (size_t i = 0; i < nlen; i++)
		if (!token_char((unsigned char)l[i]))
			return fail(r, "a bad header name");
	for (v = colon + 1; v < e && (*v == ' ' || *v == '\t'); v++)
		;
	while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	if (ci_equal(l, nlen, "Content-Length"))
		return content_length(r, v, (size_t)(e - v));
	if (ci_equal(l, nlen, "Transfer-Encoding"))
		each_element(r, v, (size_t)(e - v), coding_token);
	else if (ci_equal(l, nlen, "Connection"))
		each_element(r, v, (size_t)(e - v), connection_token);
	else if ((ci_equal(l, nlen, "Retry-After") &&
		     keep_value(&r->retry_after, v, (size_t)(e - v)) < 0) ||
		 (ci_equal(l, nlen, "WWW-Authenticate") &&
		     keep_value(&r->www_authenticate, v, (size_t)(e - v)) < 0))
		return fail(r, "out of memory");
	return H1_MORE;
}

/* The blank line after the head: where the body ends decides the state. */
static enum h1_rc
head_end(struct h1_reader *r)
{
	if (r->status < 200) {
		if (r->status == 101)
			return fail(r, "101 Switching Protocols, which was not asked for");
		forget_head(r);		/* 100, 103: the real answer follows */
		r->st = S_STATUS;
		return H1_MORE;
	}
	r->keep_alive = r->minor >= 1 ? !r->conn_close : r->conn_keep && !r->conn_close;
	if (r->head_request || r->status == 204 || r->status == 304) {
		r->st = S_DONE;
		return H1_DONE;
	}
	if (r->chunked || r->te_other) {
		if (r->has_len || r->te_other)
			r->keep_alive = 0;	/* RFC 9112 §6.3: close after it */
		r->st = r->chunked ? S_CHUNK_SIZE : S_BODY_CLOSE;
		return H1_MORE;
	}
	if (!r->has_len) {
		r->keep_alive = 0;
		r->st = S_BODY_CLOSE;
		return H1_MORE;
	}
	if (r->clen > r->body_max)
		return too_large(r);
	r->remain = r->clen;
	r->st = r->remain > 0 ? S_BODY_LEN : S_DONE;
	return r->st == S_DONE ? H1_DONE : H1_MORE;
}

static enum h1_rc
chunk_size(struct h1_reader *r, const char *l, size_t n)
{
	uint64_t x = 0;
	size_t i = 0;

	for (; i < n && is_hex((unsigned char)l[i]); i++) {
		unsigned d = (unsigned char)l[i];
		d = d <= '9' ? d - '0' : (d | 0x20) - 'a' + 10;
		x = x * 16 + d;
		if (x > r->body_max)
			return too_large(r);
	}
	if (i == 0 || (i < n && l[i] != ';' && l[i] != ' ' && l[i] != '\t'))
		return fail(r, "a bad chunk size");
	if (r->body_len + x > r->body_max)
		return too_large(r);
	r->remain = x;
	r->st = x > 0 ? S_CHUNK_DATA : S_TRAILER;
	return H1_MORE;
}

/* One whole line, without its LF (and CR). */
static enum h1_rc
line(struct h1_reader *r, const char *l, size_t n)
{
	switch (r->st) {
	case S_STATUS:
		if (parse_status(r, l, n) < 0)
			return fail(r, "not an HTTP/1.x answer");
		r->st = S_HEADER;
		return H1_MORE;
	case S_HEADER:
		return n == 0 ? head_end(r) : header_field(r, l, n);
	case S_CHUNK_SIZE:
		return chunk_size(r, l, n);
	case S_CHUNK_END:
		if (n != 0)
			return fail(r, "a chunk longer than its size");
		r->st = S_CHUNK_SIZE;
		return H1_MORE;
	case S_TRAILER:
		if (n == 0) {
			r->st = S_DONE;
			return H1_DONE;
		}
		return H1_MORE;
	default:
		return fail(r, "internal: a line in a body state");
	}
}

/* Takes bytes up to and with the next LF; *used says how many. */
static enum h1_rc
take_line(struct h1_reader *r, const char *p, size_t n, size_t *used)
{
	const char *lf = memchr(p, '\n', n);
	size_t take = lf != NULL ? (size_t)(lf - p) + 1 : n;
	const char *l;
	size_t len;

	r->head_bytes += take;
	if (r->head_bytes > H1_HEAD_MAX)
		return fail(r, "the answer's head is over 64 KiB");
	*used = take;
	if (lf == NULL || r->line_len > 0) {
		if (r->line_len + take > r->line_cap) {
			size_t cap = r->line_cap ? r->line_cap : 128;
			char *nl;
			while (cap < r->line_len + take)
				cap *= 2;
			if ((nl = realloc(r->line, cap)) == NULL)
				return fail(r, "out of memory");
			r->line = nl;
			r->line_cap = cap;
		}
		memcpy(r->line + r->line_len, p, take);
		r->line_len += take;
		if (lf == NULL)
			return H1_MORE;
		l = r->line;
		len = r->line_len - 1;
		r->line_len = 0;
	} else {
		l = p;
		len = take - 1;
	}
	if (len > 0 && l[len - 1] == '\r')
		len--;
	return line(r, l, len);
}

static enum h1_rc
take_body(struct h1_reader *r, const char *p, size_t n, size_t *used)
{
	size_t take = n;

	if (r->st != S_BODY_CLOSE && take > r->remain)
		take = (size_t)r->remain;
	if (r->body_len + take > r->body_max)
		return too_large(r);
	if (body_append(r, p, take) < 0)
		return fail(r, "out of memory");
	*used = take;
	if (r->st == S_BODY_CLOSE)
		return H1_MORE;
	r->remain -= take;
	if (r->remain > 0)
		return H1_MORE;
	if (r->st == S_CHUNK_DATA) {
		r->st = S_CHUNK_END;
		return H1_MORE;
	}
	r->st = S_DONE;
	return H1_DONE;
}

enum h1_rc
h1_reader_feed(struct h1_reader *r, const char *data, size_t len, size_t *used)
{
	size_t off = 0;
	enum h1_rc rc = H1_MORE;

	*used = 0;
	if (r->st == S_DONE)
		return H1_DONE;
	if (r->st == S_ERROR)
		return H1_ERROR;
	if (len > 0)
		r->started = 1;
	while (off < len && rc == H1_MORE) {
		size_t n = 0;
		if (r->st == S_BODY_LEN || r->st == S_BODY_CLOSE || r->st == S_CHUNK_DATA)
			rc = take_body(r, data + off, len - off, &n);
		else
			rc = take_line(r, data + off, len - off, &n);
		off += n;
	}
	*used = off;
	return rc;
}

enum h1_rc
h1_reader_eof(struct h1_reader *r)
{
	if (r->st == S_DONE)
		return H1_DONE;
	if (r->st == S_ERROR)
		return H1_ERROR;
	if (r->st == S_BODY_CLOSE) {
		r->keep_alive = 0;
		r->st = S_DONE;
		return H1_DONE;
	}
	return fail(r, r->started ? "the connection closed before the answer was whole"
				  : "the connection closed with no answer");
}

int
h1_reader_started(const struct h1_reader *r)
{
	return r->started;
}

long
h1_reader_status(const struct h1_reader *r)
{
	return r->st == S_DONE ? r->status : 0;
}

int
h1_reader_keep_alive(const struct h1_reader *r)
{
	return r->st == S_DONE && r->keep_alive;
}

const char *
h1_reader_body(const struct h1_reader *r, size_t *len)
{
	*len = r->body != NULL ? r->body_len : 0;
	return r->body != NULL ? r->body : "";
}

const char *
h1_reader_retry_after(const struct h1_reader *r)
{
	return r->retry_after;
}

const char *
h1_reader_www_authenticate(const struct h1_reader *r)
{
	return r->www_authenticate;
}

const char *
h1_reader_error(const struct h1_reader *r)
{
	return r->err;
}

int
h1_reader_too_large(const struct h1_reader *r)
{
	return r->too_large;
}
