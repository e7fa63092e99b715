/* Unit tests for h1: the native client's URLs, request head and answer reader. */
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "h1.h"

#define MAX (1024 * 1024)

/* ---- URLs ---- */

static void
test_url_taken(void **state)
{
	struct h1_url u;
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)(const void *)&u.addr;
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)(const void *)&u.addr;

	(void)state;
	assert_int_equal(h1_url_parse("http://127.0.0.1:8080/gates/14/open?x=1&y=%2F#frag", &u), 0);
	assert_string_equal(u.authority, "127.0.0.1:8080");
	assert_string_equal(u.host, "127.0.0.1");
	assert_int_equal(u.target_len, strlen("/gates/14/open?x=1&y=%2F"));
	assert_memory_equal(u.target, "/gates/14/open?x=1&y=%2F", u.target_len);
	assert_int_equal(s4->sin_family, AF_INET);
	assert_int_equal(ntohs(s4->sin_port), 8080);
	assert_int_equal(ntohl(s4->sin_addr.s_addr), 0x7f000001);

	assert_int_equal(h1_url_parse("HTTP://LocalHost/x", &u), 0);
	assert_string_equal(u.authority, "LocalHost");	/* port 80 is not written */
	assert_int_equal(ntohs(s4->sin_port), 80);
	assert_int_equal(ntohl(s4->sin_addr.s_addr), 0x7f000001);

	assert_int_equal(h1_url_parse("http://10.1.2.3:80", &u), 0);
	assert_string_equal(u.authority, "10.1.2.3");
	assert_int_equal(u.target_len, 0);

	assert_int_equal(h1_url_parse("http://[::1]:9000/p", &u), 0);
	assert_string_equal(u.authority, "[::1]:9000");
	assert_string_equal(u.host, "::1");
	assert_int_equal(s6->sin6_family, AF_INET6);
	assert_int_equal(ntohs(s6->sin6_port), 9000);
	assert_int_equal(u.addr_len, sizeof(struct sockaddr_in6));
}

static void
test_url_left_to_curl(void **state)
{
	static const char *const urls[] = {
		"https://127.0.0.1/x", "ftp://127.0.0.1/", "http://", "http:///x",
		"http://user:pw@127.0.0.1/x", "http://gates.example/x", "http://127.1/x",
		"http://127.0.0.1:0/x", "http://127.0.0.1:65536/x", "http://127.0.0.1:/x",
		"http://127.0.0.1:8a/x", "http://[::1/x", "http://[::1]x/", "http://[fe80::1%25eth0]/",
		"http://127.0.0.1/a b", "http://127.0.0.1/a\"b", "http://127.0.0.1/\xc3\xa9",
		"http://127.0.0.1/a/../b", "http://127.0.0.1/./b", "http://127.0.0.1/a/..",
		"http://127.0.0.1/%zz", "http://127.0.0.1/%4", "http://127.0.0.1?x=1",
		"http://127.0.0.1/a\\b", "http://127.0.0.1/{x}", NULL,
	};
	struct h1_url u;

	(void)state;
	for (int i = 0; urls[i] != NULL; i++)
		if (h1_url_parse(urls[i], &u) != -1)
			fail_msg("taken: %s", urls[i]);
	/* what looks like a dot segment but is not one */
	assert_int_equal(h1_url_parse("http://127.0.0.1/a.b/..c/.../x?../y", &u), 0);
}

/* ---- the request head ---- */

static char *
head_of(const char *method, const char *url, const char *const *headers, const char *basic,
	int has_body, size_t body_len)
{
	struct h1_url u;
	struct h1_head h = {.method = method, .url = &u, .headers = headers, .basic = basic,
	    .has_body = has_body, .body_len = body_len};
	size_t cap, n;
	char *buf;

	assert_int_equal(h1_url_parse(url, &u), 0);
	cap = h1_head_size(&h);
	buf = malloc(cap + 1);
	assert_non_null(buf);
	n = h1_head_write(buf, &h);
	assert_true(n <= cap);
	buf[n] = '\0';
	return buf;
}

static void
test_head_as_curl_sends_it(void **state)
{
	const char *action[] = {"Content-Type: application/json", "Idempotency-Key: r-2",
	    "Authorization: Bearer tok", NULL};
	const char *form[] = {"Content-Type: application/x-www-form-urlencoded",
	    "Accept: application/json", NULL};
	char *h;

	(void)state;
	h = head_of("POST", "http://127.0.0.1:8080/gates/14?a=1", action, NULL, 1, 18);
	assert_string_equal(h, "POST /gates/14?a=1 HTTP/1.1\r\n"
	    "Host: 127.0.0.1:8080\r\n"
	    "Accept: */*\r\n"
	    "Content-Type: application/json\r\n"
	    "Idempotency-Key: r-2\r\n"
	    "Authorization: Bearer tok\r\n"
	    "Content-Length: 18\r\n"
	    "\r\n");
	free(h);
	/* Basic credentials, the caller's Accept, no form type added twice */
	h = head_of("POST", "http://localhost/token", form, "client:pw", 1, 50);
	assert_string_equal(h, "POST /token HTTP/1.1\r\n"
	    "Host: localhost\r\n"
	    "Authorization: Basic Y2xpZW50OnB3\r\n"
	    "Content-Type: application/x-www-form-urlencoded\r\n"
	    "Accept: application/json\r\n"
	    "Content-Length: 50\r\n"
	    "\r\n");
	free(h);
	/* no body: no length; an empty path is "/" */
	h = head_of("GET", "http://[::1]:81", NULL, NULL, 0, 0);
	assert_string_equal(h, "GET / HTTP/1.1\r\nHost: [::1]:81\r\nAccept: */*\r\n\r\n");
	free(h);
	/* an empty POST has a length and curl's form type */
	h = head_of("POST", "http://127.0.0.1:1/", NULL, NULL, 1, 0);
	assert_string_equal(h, "POST / HTTP/1.1\r\nHost: 127.0.0.1:1\r\nAccept: */*\r\n"
	    "Content-Length: 0\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\n");
	free(h);
}

static void
test_head_framing_is_ours(void **state)
{
	const char *hdrs[] = {"Accept:", "Expect:", "Expect: 100-continue", "Content-Length: 99",
	    "Transfer-Encoding: chunked", "Host: evil", "X-Empty:  ", "X-Kept: 1", NULL};
	char *h;

	(void)state;
	h = head_of("PUT", "http://127.0.0.1:8080/x", hdrs, NULL, 1, 3);
	assert_string_equal(h, "PUT /x HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-Kept: 1\r\n"
	    "Content-Length: 3\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\n");
	free(h);
}

/* ---- the answer ---- */

struct got {
	enum h1_rc rc;
	long status;
	int keep_alive, too_large;
	char body[4096];
	size_t body_len, used;
	char retry_after[128], www_auth[256], error[128];
};

/* Feeds `text` in pieces of `step` bytes (0: all at once), then the end of
 * the connection when `eof`. */
static struct got
read_answer(const char *text, size_t len, size_t step, int head, size_t max, int eof)
{
	struct h1_reader *r = h1_reader_new();
	struct got g;
	size_t off = 0, used;
	const char *b;

	memset(&g, 0, sizeof g);
	assert_non_null(r);
	h1_reader_reset(r, head, max, 256);
	g.rc = H1_MORE;
	while (off < len && g.rc == H1_MORE) {
		size_t n = step == 0 || step > len - off ? len - off : step;
		g.rc = h1_reader_feed(r, text + off, n, &used);
		assert_true(used <= n);
		if (g.rc == H1_MORE)
			assert_int_equal(used, n);
		off += used;
	}
	g.used = off;
	if (g.rc == H1_MORE && eof)
		g.rc = h1_reader_eof(r);
	g.status = h1_reader_status(r);
	g.keep_alive = h1_reader_keep_alive(r);
	g.too_large = h1_reader_too_large(r);
	b = h1_reader_body(r, &g.body_len);
	assert_non_null(b);
	assert_true(g.body_len < sizeof g.body);
	memcpy(g.body, b, g.body_len);
	assert_int_equal(b[g.body_len], '\0');
	snprintf(g.retry_after, sizeof g.retry_after, "%s",
	    h1_reader_retry_after(r) ? h1_reader_retry_after(r) : "(none)");
	snprintf(g.www_auth, sizeof g.www_auth, "%s",
	    h1_reader_www_authenticate(r) ? h1_reader_www_authenticate(r) : "(none)");
	snprintf(g.error, sizeof g.error, "%s", h1_reader_error(r));
	h1_reader_free(r);
	return g;
}

#define READ(text, step) read_answer((text), sizeof(text) - 1, (step), 0, MAX, 0)

/* The same answer, whole and in pieces of every size up to its length. */
static void
assert_same_in_pieces(const char *text, long status, const char *body, int keep_alive)
{
	size_t len = strlen(text);

	for (size_t step = 0; step <= len; step++) {
		struct got g = read_answer(text, len, step, 0, MAX, 1);
		if (g.rc != H1_DONE || g.status != status || g.keep_alive != keep_alive ||
		    g.body_len != strlen(body) || memcmp(g.body, body, g.body_len) != 0)
			fail_msg("step %zu: rc %d status %ld keep %d body '%.*s' error '%s'", step,
			    g.rc, g.status, g.keep_alive, (int)g.body_len, g.body, g.error);
	}
}

static void
test_answer_by_length(void **state)
{
	struct got g;

	(void)state;
	assert_same_in_pieces("HTTP/1.1 204 No Content\r\nServer: nginx\r\n\r\n", 204, "", 1);
	assert_same_in_pieces("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 200, "hello", 1);
	assert_same_in_pieces("HTTP/1.1 503\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno",
	    503, "no", 0);
	/* bare LF line ends, as curl takes them */
	assert_same_in_pieces("HTTP/1.1 200 OK\nContent-Length: 2\n\nok", 200, "ok", 1);
	/* what follows the answer is not taken */
	g = READ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA", 0);
	assert_int_equal(g.rc, H1_DONE);
	assert_int_equal(g.used, strlen("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
	/* the same length twice is one length */
	g = READ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\nok", 0);
	assert_int_equal(g.rc, H1_DONE);
}

static void
test_answer_chunked(void **state)
{
	(void)state;
	assert_same_in_pieces("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "5;ext=1\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n",
	    200, "hello 0123456789", 1);
	/* chunked and a length: chunked wins, and the connection is closed after */
	assert_same_in_pieces("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n"
	    "Transfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", 200, "ok", 0);
	assert_int_equal(READ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 0).rc,
	    H1_ERROR);
	assert_int_equal(READ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "2\r\nokX\r\n", 0).rc, H1_ERROR);
}

static void
test_answer_to_the_close(void **state)
{
	struct got g;

	(void)state;
	/* no length: the body ends with the connection, which is not kept */
	assert_same_in_pieces("HTTP/1.1 200 OK\r\n\r\nall of it", 200, "all of it", 0);
	assert_same_in_pieces("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzz", 200, "zz", 0);
	/* HTTP/1.0: kept only when it says keep-alive */
	assert_same_in_pieces("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", 200, "x", 0);
	assert_same_in_pieces("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1\r\n\r\nx",
	    200, "x", 1);
	/* the end before the answer is whole */
	g = read_answer("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort", 38, 0, 0, MAX, 1);
	assert_int_equal(g.rc, H1_ERROR);
	assert_int_equal(g.status, 0);
	g = read_answer("", 0, 0, 0, MAX, 1);
	assert_int_equal(g.rc, H1_ERROR);
	assert_string_equal(g.error, "the connection closed with no answer");
}

static void
test_answer_without_body(void **state)
{
	struct got g;

	(void)state;
	/* HEAD, 204 and 304 end at the head whatever it says */
	g = read_answer("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", 38, 0, 1, MAX, 0);
	assert_int_equal(g.rc, H1_DONE);
	assert_int_equal(g.body_len, 0);
	assert_int_equal(g.keep_alive, 1);
	assert_same_in_pieces("HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n", 304, "", 1);
	/* 1xx heads are skipped with their fields; 101 is not asked for */
	assert_same_in_pieces("HTTP/1.1 100 Continue\r\nRetry-After: 9\r\n\r\n"
	    "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
	    "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n", 201, "", 1);
	g = READ("HTTP/1.1 100 Continue\r\nRetry-After: 9\r\n\r\nHTTP/1.1 200 OK\r\n"
	    "Content-Length: 0\r\n\r\n", 0);
	assert_string_equal(g.retry_after, "(none)");
	g = READ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n", 0);
	assert_int_equal(g.rc, H1_ERROR);
}

static void
test_answer_fields_kept(void **state)
{
	struct got g;

	(void)state;
	g = READ("HTTP/1.1 429 Too Many\r\nRetry-After: 1\r\nretry-after:   120 \t\r\n"
	    "WWW-Authenticate: Bearer error=\"invalid_token\", error_description=\"expired\"\r\n"
	    "Content-Length: 0\r\n\r\n", 3);
	assert_int_equal(g.rc, H1_DONE);
	assert_int_equal(g.status, 429);
	assert_string_equal(g.retry_after, "120");
	assert_string_equal(g.www_auth,
	    "Bearer error=\"invalid_token\", error_description=\"expired\"");
	g = READ("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 0);
	assert_string_equal(g.retry_after, "(none)");
	assert_string_equal(g.www_auth, "(none)");
}

static void
test_answer_refused(void **state)
{
	static const char *const bad[] = {
		"HTTP/2 200\r\n\r\n", "HTTP/1.1 20 OK\r\n\r\n", "HTTP/1.1 2000 OK\r\n\r\n",
		"HTTP/1.1 099 X\r\n\r\n", "ICY 200 OK\r\n\r\n", "HTTP/1.1 200OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1,1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\n\r\n",
		"HTTP/1.1 200 OK\r\nNo colon\r\n\r\n", "HTTP/1.1 200 OK\r\n: no name\r\n\r\n",
		"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFFFF\r\n",
		NULL,
	};

	(void)state;
	for (int i = 0; bad[i] != NULL; i++) {
		struct got g = read_answer(bad[i], strlen(bad[i]), 0, 0, MAX, 1);
		if (g.rc != H1_ERROR || g.status != 0 || g.error[0] == '\0')
			fail_msg("taken: %s", bad[i]);
	}
}

static void
test_answer_limits(void **state)
{
	static char big[H1_HEAD_MAX + 64];
	struct got g;
	int n;

	(void)state;
	g = read_answer("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n", 39, 0, 0, 10, 0);
	assert_int_equal(g.rc, H1_ERROR);
	assert_int_equal(g.too_large, 1);
	assert_string_equal(g.error, "response body larger than 10 bytes");
	g = read_answer("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789", 49, 1, 0, 10, 0);
	assert_int_equal(g.rc, H1_DONE);
	g = read_answer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\n012345\r\n"
	    "5\r\n", 62, 0, 0, 10, 0);
	assert_int_equal(g.too_large, 1);
	g = read_answer("HTTP/1.1 200 OK\r\n\r\n0123456789A", 30, 4, 0, 10, 1);
	assert_int_equal(g.rc, H1_ERROR);
	assert_int_equal(g.too_large, 1);
	/* a head over H1_HEAD_MAX, in one line or in many */
	n = snprintf(big, sizeof big, "HTTP/1.1 200 OK\r\nX: ");
	memset(big + n, 'a', sizeof big - (size_t)n);
	g = read_answer(big, sizeof big, 1000, 0, MAX, 0);
	assert_int_equal(g.rc, H1_ERROR);
	assert_int_equal(g.too_large, 0);
	for (size_t i = (size_t)n; i + 8 < sizeof big; i += 8)
		memcpy(big + i, "a\r\nX: b", 7), big[i + 7] = 'c';
	g = read_answer(big, sizeof big, 0, 0, MAX, 0);
	assert_int_equal(g.rc, H1_ERROR);
}

/* A reader is reused: nothing of one answer shows in the next. */
static void
test_reader_reused(void **state)
{
	static const char first[] = "HTTP/1.1 401 No\r\nWWW-Authenticate: Bearer\r\n"
	    "Retry-After: 5\r\nContent-Length: 3\r\n\r\nabc";
	static const char second[] = "HTTP/1.1 204 No Content\r\n\r\n";
	struct h1_reader *r = h1_reader_new();
	size_t used, len;

	(void)state;
	assert_non_null(r);
	h1_reader_reset(r, 0, MAX, 0);
	assert_int_equal(h1_reader_feed(r, first, sizeof first - 1, &used), H1_DONE);
	assert_int_equal(h1_reader_status(r), 401);
	assert_int_equal(h1_reader_feed(r, "x", 1, &used), H1_DONE);	/* done is done */
	assert_int_equal(used, 0);
	h1_reader_reset(r, 0, MAX, 0);
	assert_int_equal(h1_reader_started(r), 0);
	assert_int_equal(h1_reader_status(r), 0);
	assert_int_equal(h1_reader_feed(r, second, sizeof second - 1, &used), H1_DONE);
	assert_int_equal(h1_reader_started(r), 1);
	assert_int_equal(h1_reader_status(r), 204);
	assert_string_equal(h1_reader_body(r, &len), "");
	assert_int_equal(len, 0);
	assert_null(h1_reader_retry_after(r));
	assert_null(h1_reader_www_authenticate(r));
	h1_reader_free(r);
	h1_reader_free(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url_taken),
		cmocka_unit_test(test_url_left_to_curl),
		cmocka_unit_test(test_head_as_curl_sends_it),
		cmocka_unit_test(test_head_framing_is_ours),
		cmocka_unit_test(test_answer_by_length),
		cmocka_unit_test(test_answer_chunked),
		cmocka_unit_test(test_answer_to_the_close),
		cmocka_unit_test(test_answer_without_body),
		cmocka_unit_test(test_answer_fields_kept),
		cmocka_unit_test(test_answer_refused),
		cmocka_unit_test(test_answer_limits),
		cmocka_unit_test(test_reader_reused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
