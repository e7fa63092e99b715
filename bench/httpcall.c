/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * httpcall MODE PORT COUNT: what one action call costs its caller, by the
 * way it is made, on one kept-alive connection to 127.0.0.1:PORT (nginx
 * answering 204). The call is the bench's: POST with R7's headers (no
 * Authorization: auth none) and the record's JSON as its body.
 *   curl   one curl easy handle kept across calls, the options the daemon
 *          sets (bench/README "An action call without curl")
 *   plain  the request head written with appends and sent with one writev,
 *          the answer read into a buffer and its status line and headers
 *          parsed: what an HTTP/1.1 client of our own would do at the least
 * Prints "calls user_us sys_us" (getrusage, the whole run). Not part of the
 * daemon; a measure for the decision issue 10's closing notes ask for.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <curl/curl.h>

#define PATH	"/gates/canal%2Fgates%2F14/open"
static const char body[] =
    "{\"recordId\":\"bench-1\",\"onBehalfOf\":\"operator:4417\",\"action\":\"gate.open\","
    "\"resource\":\"canal/gates/14\",\"parameters\":{\"percent\":40},"
    "\"basis\":\"role:duty-operator\",\"decidedAt\":\"2026-11-30T16:00:00Z\","
    "\"expiresAt\":\"2099-12-01T04:30:00Z\"}";

/* ---- plain ---- */

struct head {
	char p[1024];
	size_t n;
};

/* 0, or -1 when it does not fit */
static int
put(struct head *h, const char *s, size_t n)
{
	if (n > sizeof h->p - h->n)
		return -1;
	memcpy(h->p + h->n, s, n);
	h->n += n;
	return 0;
}

#define PUT_LIT(h, lit) put((h), (lit), sizeof(lit) - 1)

static int
put_str(struct head *h, const char *s)
{
	/* a header value must not end its line early (header injection) */
	if (strpbrk(s, "\r\n") != NULL)
		return -1;
	return put(h, s, strlen(s));
}

static int
put_dec(struct head *h, unsigned long v)
{
	char d[24];
	size_t i = sizeof d;

	do
		d[--i] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	return put(h, d + i, sizeof d - i);
}

struct answer {
	int status;
	long content_length;
	int close;
};

static int
line_is(const char *l, size_t n, const char *name)
{
	size_t k = strlen(name);

	return n > k && l[k] == ':' && strncasecmp(l, name, k) == 0;
}

/* The head's length once b[0..n) holds it, 0 before, -1 when it is not an
 * HTTP/1.1 head. */
static long
parse(const char *b, size_t n, struct answer *a)
{
	const char *end = memmem(b, n, "\r\n\r\n", 4), *l;

	if (end == NULL)
		return 0;
	if (end - b < 12 || memcmp(b, "HTTP/1.1 ", 9) != 0)
		return -1;
	a->status = (b[9] - '0') * 100 + (b[10] - '0') * 10 + (b[11] - '0');
	a->content_length = -1;
	a->close = 0;
	for (l = (const char *)memchr(b, '\n', (size_t)(end - b)) + 1; l < end + 2;) {
		const char *e = memchr(l, '\r', (size_t)(end + 2 - l));
		size_t len = (size_t)(e - l);

		if (line_is(l, len, "content-length"))
			a->content_length = strtol(l + 15, NULL, 10);
		else if (line_is(l, len, "connection"))
			a->close = memmem(l, len, "close", 5) != NULL;
		l = e + 2;
	}
	return end + 4 - b;
}

static int
plain_call(int fd, int port, const char *record_id)
{
	struct head h = {.n = 0};
	struct answer a;
	char in[1024];
	size_t got = 0;
	long head_len;

	if (PUT_LIT(&h, "POST " PATH " HTTP/1.1\r\nHost: 127.0.0.1:") < 0 ||
	    put_dec(&h, (unsigned long)port) < 0 ||
	    PUT_LIT(&h, "\r\nIdempotency-Key: ") < 0 || put_str(&h, record_id) < 0 ||
	    PUT_LIT(&h, "\r\nContent-Type: application/json\r\nWarrant-On-Behalf-Of: ") < 0 ||
	    put_str(&h, "operator:4417") < 0 ||
	    PUT_LIT(&h, "\r\nWarrant-Basis: ") < 0 || put_str(&h, "role:duty-operator") < 0 ||
	    PUT_LIT(&h, "\r\nContent-Length: ") < 0 || put_dec(&h, sizeof body - 1) < 0 ||
	    PUT_LIT(&h, "\r\n\r\n") < 0)
		return -1;
	struct iovec iov[2] = {{h.p, h.n}, {(void *)body, sizeof body - 1}};
	if (writev(fd, iov, 2) != (ssize_t)(h.n + sizeof body - 1))
		return -1;
	while ((head_len = parse(in, got, &a)) == 0) {
		ssize_t r = read(fd, in + got, sizeof in - got);

		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	/* a 204 has no body; this measure reads no other answer */
	return head_len > 0 && a.status == 204 && !a.close ? 0 : -1;
}

static int
plain(int port, long count)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	char id[32];

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
		return -1;
	for (long i = 1; i <= count; i++) {
		snprintf(id, sizeof id, "bench-%ld", i);
		if (plain_call(fd, port, id) < 0)
			return -1;
	}
	return close(fd);
}

/* ---- curl ---- */

static size_t
sink(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

static int
curl_calls(int port, long count)
{
	char url[128], key[64];
	CURL *e;
	long status = 0;
	int ok = 1;

	snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, PATH);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || (e = curl_easy_init()) == NULL)
		return -1;
	ok &= curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_PROXY, "") == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_NOPROXY, "") == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, sink) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_POSTFIELDS, body) == CURLE_OK;
	ok &= curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)(sizeof body - 1)) == CURLE_OK;
	for (long i = 1; ok && i <= count; i++) {
		struct curl_slist *h;

		snprintf(key, sizeof key, "Idempotency-Key: bench-%ld", i);
		h = curl_slist_append(NULL, key);
		h = curl_slist_append(h, "Content-Type: application/json");
		h = curl_slist_append(h, "Warrant-On-Behalf-Of: operator:4417");
		h = curl_slist_append(h, "Warrant-Basis: role:duty-operator");
		ok &= h != NULL && curl_easy_setopt(e, CURLOPT_URL, url) == CURLE_OK &&
		    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h) == CURLE_OK &&
		    curl_easy_perform(e) == CURLE_OK &&
		    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK &&
		    status == 204;
		curl_slist_free_all(h);
	}
	curl_easy_cleanup(e);
	return ok ? 0 : -1;
}

int
main(int argc, char **argv)
{
	struct rusage ru;
	long count;
	int port, rc;

	if (argc != 4 || (port = atoi(argv[2])) <= 0 || (count = atol(argv[3])) <= 0 ||
	    (strcmp(argv[1], "curl") != 0 && strcmp(argv[1], "plain") != 0)) {
		fprintf(stderr, "usage: httpcall curl|plain PORT COUNT\n");
		return 64;
	}
	rc = strcmp(argv[1], "curl") == 0 ? curl_calls(port, count) : plain(port, count);
	if (rc != 0) {
		fprintf(stderr, "httpcall: a call failed\n");
		return 1;
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("%ld %lld %lld\n", count,
	    (long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec,
	    (long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec);
	return 0;
}
