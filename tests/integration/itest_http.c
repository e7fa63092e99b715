/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_http: the libcurl-on-libev client against fake_target (and, for what
 * the fake cannot say -- big bodies, redirects --, a one-shot raw server
 * forked by the test). Every wait drives the test's own loop with
 * EVRUN_ONCE until a condition holds or a generous deadline passes.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "harness.h"
#include "http/http.h"
#include "base/log.h"

#define WAIT_MS 30000
#define CONCURRENT 200

static struct h_fake fake;
static struct ev_loop *loop;

/* What a callback saw, copied out of the response. */
struct res {
	int calls;
	long status;
	int timed_out;
	char *error, *body, *retry_after, *www_authenticate;
	size_t body_len;
	long elapsed_ms, connects;
	enum callfail fail;
};

static char *
dup_or_null(const char *s)
{
	return s != NULL ? strdup(s) : NULL;
}

static void
res_clear(struct res *r)
{
	free(r->error);
	free(r->body);
	free(r->retry_after);
	free(r->www_authenticate);
	memset(r, 0, sizeof(*r));
}

static void
on_done(const struct http_response *resp, void *arg)
{
	struct res *r = arg;

	res_clear(r);
	r->calls = 1;
	r->status = resp->status;
	r->timed_out = resp->timed_out;
	r->error = dup_or_null(resp->error);
	r->body = dup_or_null(resp->body);
	r->body_len = resp->body_len;
	r->retry_after = dup_or_null(resp->retry_after);
	r->www_authenticate = dup_or_null(resp->www_authenticate);
	r->elapsed_ms = resp->elapsed_ms;
	r->connects = resp->connects;
	r->fail = resp->fail;
}

static int
res_done(void *arg)
{
	return ((struct res *)arg)->calls > 0;
}

struct res_set {
	struct res *r;
	size_t n;
};

static int
all_done(void *arg)
{
	struct res_set *s = arg;

	for (size_t i = 0; i < s->n; i++)
		if (s->r[i].calls == 0)
			return 0;
	return 1;
}

static void
start(struct http_client *hc, const char *method, const char *url, const char *const *headers,
      const char *body, long timeout_ms, struct res *out, struct http_call **call)
{
	struct http_request rq = {
		.method = method, .url = url, .headers = headers,
		.body = body, .body_len = body != NULL ? strlen(body) : 0,
		.timeout_ms = timeout_ms,
	};

	assert_int_equal(http_start(hc, &rq, on_done, out, call), 0);
}

static void
fake_post(const char *path, const char *body)
{
	char url[256];
	long status = 0;
	char *reply;

	snprintf(url, sizeof(url), "%s%s", fake.url, path);
	reply = h_http("POST", url, body, &status);
	assert_int_equal(status, 200);
	free(reply);
}

static json_t *
fake_get_json(const char *path)
{
	char url[256];
	long status = 0;
	char *reply;
	json_t *j;

	snprintf(url, sizeof(url), "%s%s", fake.url, path);
	reply = h_http("GET", url, NULL, &status);
	assert_int_equal(status, 200);
	assert_non_null(reply);
	j = json_loads(reply, 0, NULL);
	free(reply);
	assert_non_null(j);
	return j;
}

static long
fake_total(void)
{
	json_t *s = fake_get_json("/_stats");
	long n = (long)json_integer_value(json_object_get(s, "total"));

	json_decref(s);
	return n;
}

static const char *
jstr(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	assert_non_null(s);
	return s;
}

static void
action_url(char *dst, size_t n, const char *path)
{
	snprintf(dst, n, "%s%s", fake.url, path);
}

/* A request with headers and a JSON body arrives at the fake as sent. */
static void
test_post_headers_and_body(void **state)
{
	static const char body[] = "{\"recordId\":\"rec-1\",\"parameters\":{\"door\":[1,2]}}";
	const char *headers[] = {
		"Authorization: Bearer t0k3n", "Idempotency-Key: rec-1",
		"Content-Type: application/json", "Warrant-On-Behalf-Of: operator:4417",
		"Warrant-Basis: role:gatekeeper", NULL,
	};
	struct http_client *hc = http_client_new(loop);
	struct res r = {0};
	char url[256];
	json_t *reqs, *rec;

	(void)state;
	assert_non_null(hc);
	action_url(url, sizeof(url), "/gate/north%2F1/open");
	start(hc, "POST", url, headers, body, 5000, &r, NULL);
	assert_int_equal(http_in_flight(hc), 1);
	assert_int_equal(h_loop_run_until(loop, res_done, &r, WAIT_MS), 0);
	assert_int_equal(http_in_flight(hc), 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.timed_out, 0);
	assert_string_equal(r.error, "");
	assert_int_equal(r.fail, CALLFAIL_NONE);
	assert_string_equal(r.body, "{\"status\":200}");
	assert_int_equal(r.body_len, strlen("{\"status\":200}"));

	reqs = fake_get_json("/_requests");
	assert_int_equal(json_array_size(reqs), 1);
	rec = json_array_get(reqs, 0);
	assert_string_equal(jstr(rec, "method"), "POST");
	assert_string_equal(jstr(rec, "path"), "/gate/north%2F1/open");
	assert_string_equal(jstr(rec, "idempotency_key"), "rec-1");
	assert_string_equal(jstr(rec, "on_behalf_of"), "operator:4417");
	assert_string_equal(jstr(rec, "basis"), "role:gatekeeper");
	assert_string_equal(jstr(rec, "content_type"), "application/json");
	assert_true(json_is_true(json_object_get(rec, "authorization")));
	assert_string_equal(jstr(rec, "body"), body);
	json_decref(reqs);
	res_clear(&r);
	http_client_free(hc);
}

/* A request body far over a socket's buffer goes out in many writes, whole. */
static void
test_big_request_body(void **state)
{
	enum { BIG = 8 << 20 };
	const char *headers[] = {"Idempotency-Key: big-1", "Content-Type: text/plain", NULL};
	struct http_client *hc = http_client_new(loop);
	struct res r = {0};
	char url[256], *body = malloc(BIG + 1);
	json_t *reqs;

	(void)state;
	assert_non_null(hc);
	assert_non_null(body);
	memset(body, 'a', BIG);
	body[BIG - 1] = 'z';
	body[BIG] = '\0';
	action_url(url, sizeof(url), "/big");
	start(hc, "POST", url, headers, body, 20000, &r, NULL);
	assert_int_equal(h_loop_run_until(loop, res_done, &r, WAIT_MS), 0);
	assert_int_equal(r.status, 200);
	reqs = fake_get_json("/_requests");
	assert_int_equal(json_array_size(reqs), 1);
	assert_int_equal(strlen(jstr(json_array_get(reqs, 0), "body")), BIG);
	assert_string_equal(jstr(json_array_get(reqs, 0), "body"), body);
	json_decref(reqs);
	free(body);
	res_clear(&r);
	http_client_free(hc);
}

/* Another method with a body, and Basic auth from userpwd. */
static void
test_put_with_userpwd(void **state)
{
	const char *headers[] = {"Idempotency-Key: put-1", "Content-Type: text/plain", NULL};
	struct http_request rq = {
		.method = "PUT", .headers = headers, .body = "a=1&b=2", .body_len = 7,
		.timeout_ms = 5000, .userpwd = "client%3Aid:s%2Bcret",
	};
	struct http_client *hc = http_client_new(loop);
	struct res r = {0};
	char url[256];
	json_t *reqs, *rec;

	(void)state;
	assert_non_null(hc);
	action_url(url, sizeof(url), "/put");
	rq.url = url;
	assert_int_equal(http_start(hc, &rq, on_done, &r, NULL), 0);
	assert_int_equal(h_loop_run_until(loop, res_done, &r, WAIT_MS), 0);
	assert_int_equal(r.status, 200);
	reqs = fake_get_json("/_requests");
	assert_int_equal(json_array_size(reqs), 1);
	rec = json_array_get(reqs, 0);
	assert_string_equal(jstr(rec, "method"), "PUT");
	assert_string_equal(jstr(rec, "body"), "a=1&b=2");
	assert_true(json_is_true(json_object_get(rec, "authorization")));
	json_decref(reqs);
	res_clear(&r);
	http_client_free(hc);
}

/* Status codes and the two captured headers, trimmed. */
static void
test_status_and_headers(void **state)
{
	const char *h200[] = {"Idempotency-Key: k200", NULL};
	const char *h503[] = {"Idempotency-Key: k503", NULL};
	const char *h401[] = {"Idempotency-Key: k401", NULL};
	struct http_client *hc = http_client_new(loop);
	struct res r[3] = {{0}};
	struct res_set set = {r, 3};
	char url[256];

	(void)state;
	assert_non_null(hc);
	fake_post("/_script", "{\"per_key\": {"
	    "\"k503\": [{\"status\": 503, \"retry_after\": \" 7 \"}],"
	    "\"k401\": [{\"status\": 401, \"www_authenticate\": \"Bearer error=\\\"invalid_token\\\"\"}]}}");
	action_url(url, sizeof(url), "/act");
	start(hc, "POST", url, h200, "{}", 5000, &r[0], NULL);
	start(hc, "POST", url, h503, "{}", 5000, &r[1], NULL);
	start(hc, "POST", url, h401, "{}", 5000, &r[2], NULL);
	assert_int_equal(h_loop_run_until(loop, all_done, &set, WAIT_MS), 0);

	assert_int_equal(r[0].status, 200);
	assert_null(r[0].retry_after);
	assert_null(r[0].www_authenticate);

	assert_int_equal(r[1].status, 503);
	assert_int_equal(r[1].timed_out, 0);
	assert_string_equal(r[1].error, "");
	assert_non_null(r[1].retry_after);
	assert_string_equal(r[1].retry_after, "7");
	assert_null(r[1].www_authenticate);

	assert_int_equal(r[2].status, 401);
	assert_non_null(r[2].www_authenticate);
	assert_string_equal(r[2].www_authenticate, "Bearer error=\"invalid_token\"");
	assert_null(r[2].retry_after);
	for (int i = 0; i < 3; i++)
		res_clear(&r[i]);
	http_client_free(hc);
}

/* A port that is bound but not listening refuses the connection. */
static void
test_connection_refused(void **state)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	struct http_client *hc = http_client_new(loop);
	struct res r = {0};
	char url[128];
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	(void)state;
	assert_non_null(hc);
	assert_true(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/x", (unsigned)ntohs(sa.sin_port));
	start(hc, "POST", url, NULL, "{}", 5000, &r, NULL);
	assert_int_equal(h_loop_run_until(loop, res_done, &r, WAIT_MS), 0);
	close(fd);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.timed_out, 0);
	assert_true(strlen(r.error) > 0);
	assert_int_equal(r.fail, CALLFAIL_CONNECT_REFUSED);
	assert_string_equal(r.body, "");
	res_clear(&r);
	http_client_free(hc);
}

/* A port bound but not listening: a call straight to it is refused. */
static int
refusing_port(int *fd)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);

	*fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(*fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(*fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(*fd, (struct sockaddr *)&sa, &len), 0);
	return ntohs(sa.sin_port);
}

/* One POST to `url` by a client made with the environment as it is now. */
static void
post_once(const char *url, struct res *r)
{
	struct http_client *hc = http_client_new(loop);

	assert_non_null(hc);
	start(hc, "POST", url, NULL, "{}", 5000, r, NULL);
	assert_int_equal(h_loop_run_until(loop, res_done, r, WAIT_MS), 0);
	http_client_free(hc);
}

/* http_proxy in the environment when the client is made sends its calls
 * through that proxy (the fake answers, and saw the absolute URL), no_proxy
 * exempts a host, and with neither the call goes straight to the target. */
static void
test_proxy_from_environment(void **state)
{
	struct res r = {0};
	char url[128];
	json_t *reqs;
	int fd, port = refusing_port(&fd);

	(void)state;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/via/proxy", port);
	assert_int_equal(setenv("http_proxy", fake.url, 1), 0);
	post_once(url, &r);
	assert_int_equal(r.status, 200);
	reqs = fake_get_json("/_requests");
	assert_int_equal(json_array_size(reqs), 1);
	assert_string_equal(jstr(json_array_get(reqs, 0), "path"), url);
	json_decref(reqs);
	res_clear(&r);

	assert_int_equal(setenv("no_proxy", "127.0.0.1", 1), 0);
	post_once(url, &r);
	assert_int_equal(r.status, 0);
	assert_true(strlen(r.error) > 0);
	res_clear(&r);
	assert_int_equal(unsetenv("no_proxy"), 0);
	assert_int_equal(unsetenv("http_proxy"), 0);

	post_once(url, &r);
	assert_int_equal(r.status, 0);
	assert_true(strlen(r.error) > 0);
	res_clear(&r);
	reqs = fake_get_json("/_requests");
	assert_int_equal(json_array_size(reqs), 1);	/* nothing more came by the proxy */
	json_decref(reqs);
	close(fd);
}

/* A target slower than the timeout: timed_out, status 0, and on time. */
static void
test_timeout(void **state)
{
	const char *headers[] = {"Idempotency-Key: slow", NULL};
	struct http_client *hc = http_client_new(loop);
	struct res r = {0};
	char url[256];

	(void)state;
	assert_non_null(hc);
	fake_post("/_script", "{\"per_key\": {\"slow\": [{\"status\": 200, \"delay_ms\": 20000}]}}");
	action_url(url, sizeof(url), "/slow");
	start(hc, "POST", url, headers, "{}", 300, &r, NULL);
	assert_int_equal(h_loop_run_until(loop, res_done, &r, WAIT_MS), 0);
	assert_int_equal(r.timed_out, 1);
	assert_int_equal(r.status, 0);
	assert_true(strlen(r.error) > 0);
	assert_int_equal(r.fail, CALLFAIL_READ_TIMEOUT);	/* the request went out */
	assert_true(r.elapsed_ms >= 290);
	assert_true(r.elapsed_ms < 15000);
	res_clear(&r);
	http_client_free(hc);
}

/* Sequential calls to one host share one kept-alive connection. */
static void
test_keepalive_sequential(void **state)
{
	struct http_client *hc = http_client_new(loop);
	struct res r = {0};
	char url[256];

	(void)state;
	assert_non_null(hc);
	action_url(url, sizeof(url), "/seq");
	for (int i = 0; i < 5; i++) {
		start(hc, "POST", url, NULL, "{}", 5000, &r, NULL);
		assert_int_equal(h_loop_run_until(loop, res_done, &r, WAIT_MS), 0);
		assert_int_equal(r.status, 200);
		assert_int_equal(r.connects, i == 0 ? 1 : 0);
		res_clear(&r);
	}
	http_client_free(hc);
}

static long
run_wave(struct http_client *hc, const char *url, int wave)
{
	struct res *r = calloc(CONCURRENT, sizeof(*r));
	struct res_set set = {r, CONCURRENT};
	char key[64];
	long connects = 0;

	assert_non_null(r);
	for (int i = 0; i < CONCURRENT; i++) {
		const char *headers[] = {key, NULL};

		snprintf(key, sizeof(key), "Idempotency-Key: w%d-%d", wave, i);
		start(hc, "POST", url, headers, "{}", 20000, &r[i], NULL);
	}
	assert_int_equal(http_in_flight(hc), CONCURRENT);
	assert_int_equal(h_loop_run_until(loop, all_done, &set, 60000), 0);
	assert_int_equal(http_in_flight(hc), 0);
	for (int i = 0; i < CONCURRENT; i++) {
		assert_int_equal(r[i].status, 200);
		connects += r[i].connects;
		res_clear(&r[i]);
	}
	free(r);
	return connects;
}

/* The first burst's answers trickle in over two seconds, so the last calls
 * finish when few are left in flight: the idle connections must stay cached
 * for the next burst all the same. */
static void
script_trickle(int wave)
{
	json_t *per = json_object(), *script;
	char key[64], *text;

	for (int i = 0; i < CONCURRENT; i++) {
		snprintf(key, sizeof(key), "w%d-%d", wave, i);
		json_object_set_new(per, key,
		    json_pack("[{s:i, s:i}]", "status", 200, "delay_ms", i * 10));
	}
	script = json_pack("{s:o}", "per_key", per);
	text = json_dumps(script, JSON_COMPACT);
	assert_non_null(text);
	fake_post("/_script", text);
	free(text);
	json_decref(script);
}

/* 200 at once all complete; a second burst reuses the first one's
 * connections instead of opening new ones. */
static void
test_concurrent_and_reuse(void **state)
{
	struct http_client *hc = http_client_new(loop);
	char url[256];
	long first, second;

	(void)state;
	assert_non_null(hc);
	action_url(url, sizeof(url), "/burst");
	script_trickle(1);
	first = run_wave(hc, url, 1);
	assert_true(first >= 1 && first <= CONCURRENT);
	second = run_wave(hc, url, 2);
	print_message("connections opened: first burst %ld, second burst %ld\n", first, second);
	assert_true(second <= CONCURRENT / 20);
	assert_int_equal(fake_total(), 2 * CONCURRENT);
	http_client_free(hc);
}

struct reentry {
	struct http_client *hc;
	struct http_call *victim;
	struct res victim_res, follow;
	size_t in_flight_seen;
	int fast_calls;
	char url[256];
};

static void
on_fast_then_reenter(const struct http_response *resp, void *arg)
{
	struct reentry *e = arg;
	const char *headers[] = {"Idempotency-Key: from-callback", NULL};
	struct http_request rq = {
		.method = "POST", .url = e->url, .headers = headers, .body = "{}", .body_len = 2,
		.timeout_ms = 5000,
	};

	e->fast_calls++;
	assert_int_equal(resp->status, 200);
	e->in_flight_seen = http_in_flight(e->hc);
	http_cancel(e->victim);
	e->victim = NULL;
	assert_int_equal(http_start(e->hc, &rq, on_done, &e->follow, NULL), 0);
}

/* A callback cancels another call and starts a new one. */
static void
test_callback_reenters(void **state)
{
	const char *slow[] = {"Idempotency-Key: victim", NULL};
	struct reentry e = {0};
	struct http_request fast = {.method = "POST", .body = "{}", .body_len = 2, .timeout_ms = 5000};

	(void)state;
	e.hc = http_client_new(loop);
	assert_non_null(e.hc);
	fake_post("/_script", "{\"per_key\": {\"victim\": [{\"status\": 200, \"delay_ms\": 20000}]}}");
	action_url(e.url, sizeof(e.url), "/re");
	fast.url = e.url;
	start(e.hc, "POST", e.url, slow, "{}", 25000, &e.victim_res, &e.victim);
	assert_non_null(e.victim);
	assert_int_equal(http_start(e.hc, &fast, on_fast_then_reenter, &e, NULL), 0);
	assert_int_equal(h_loop_run_until(loop, res_done, &e.follow, WAIT_MS), 0);
	assert_int_equal(e.fast_calls, 1);
	assert_int_equal(e.in_flight_seen, 1);	/* the victim, not the running call */
	assert_int_equal(e.follow.status, 200);
	assert_int_equal(e.victim_res.calls, 0);
	assert_int_equal(http_in_flight(e.hc), 0);
	res_clear(&e.follow);
	http_client_free(e.hc);
}

struct pair {
	struct http_call *call[2];
	int calls[2];
	long status;
	char error[256];
};

struct side {
	struct pair *p;
	int idx;
};

static void
on_pair(const struct http_response *resp, void *arg)
{
	struct side *s = arg;

	s->p->calls[s->idx]++;
	s->p->status = resp->status;
	snprintf(s->p->error, sizeof(s->p->error), "%s", resp->error);
	http_cancel(s->p->call[1 - s->idx]);
}

static int
pair_called(void *arg)
{
	struct pair *p = arg;

	return p->calls[0] + p->calls[1] > 0;
}

static int
no_call_in_flight(void *arg)
{
	return http_in_flight(arg) == 0;
}

/* Two calls fail together (a protocol other than http/https): the first
 * callback cancels the second, finished or not, so exactly one runs. Neither
 * runs inside http_start. */
static void
test_cancel_finished_sibling(void **state)
{
	struct http_client *hc = http_client_new(loop);
	struct pair p = {0};
	struct side sides[2] = {{&p, 0}, {&p, 1}};
	struct http_request rq = {.method = "GET", .url = "ftp://127.0.0.1/x", .timeout_ms = 5000};

	(void)state;
	assert_non_null(hc);
	for (int i = 0; i < 2; i++)
		assert_int_equal(http_start(hc, &rq, on_pair, &sides[i], &p.call[i]), 0);
	assert_int_equal(p.calls[0] + p.calls[1], 0);
	assert_int_equal(h_loop_run_until(loop, pair_called, &p, WAIT_MS), 0);
	assert_int_equal(h_loop_run_until(loop, no_call_in_flight, hc, WAIT_MS), 0);
	/* one more turn of the loop: nothing else may arrive */
	ev_run(loop, EVRUN_NOWAIT);
	assert_int_equal(p.calls[0] + p.calls[1], 1);
	assert_int_equal(p.status, 0);
	assert_true(strlen(p.error) > 0);
	http_client_free(hc);
}

#if defined(__SANITIZE_ADDRESS__)
static void
on_done_flag(const struct http_response *resp, void *arg)
{
	(void)resp;
	*(int *)arg = 1;
}

static int
flag_set(void *arg)
{
	return *(int *)arg;
}
#endif

/* A handle is dead once its callback ran; the call is kept for the next
 * one, but under ASan it is poisoned meanwhile, so a cancel after the
 * callback is reported as it was when calls were freed (in a child, which
 * ASan ends). Without ASan there is nothing to see: skipped. */
static void
test_kept_call_poisoned(void **state)
{
#if defined(__SANITIZE_ADDRESS__)
	int pfd[2], status;
	char out[8192];
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ev_loop *l = ev_loop_new(EVFLAG_AUTO);
		struct http_client *hc = l ? http_client_new(l) : NULL;
		struct http_request rq = {.method = "GET", .url = "ftp://127.0.0.1/x",
		    .timeout_ms = 5000};
		struct http_call *call = NULL;
		int done = 0;
		dup2(pfd[1], 2);
		if (hc == NULL || http_start(hc, &rq, on_done_flag, &done, &call) < 0 ||
		    h_loop_run_until(l, flag_set, &done, WAIT_MS) < 0)
			_exit(3);
		http_cancel(call);	/* after its callback: ASan ends the child here */
		_exit(0);
	}
	close(pfd[1]);
	while (got < sizeof out - 1 && (n = read(pfd[0], out + got, sizeof out - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(pfd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_false(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_false(WIFEXITED(status) && WEXITSTATUS(status) == 3);
	assert_non_null(strstr(out, "use-after-poison"));
#else
	(void)state;
	skip();
#endif
}

static int
count_fds(void)
{
	int n = h_dir_count("/proc/self/fd");

	assert_true(n > 0);
	return n;
}

static int
fake_has_total(void *arg)
{
	return fake_total() >= *(long *)arg;
}

/* Freeing the client with calls on the wire: no callback, no leak (ASan),
 * every socket closed. */
static void
test_free_with_calls_in_flight(void **state)
{
	struct http_client *hc;
	struct res r[10] = {{0}};
	char url[256];
	long want = 10;
	int fds_before;

	(void)state;
	http_client_free(http_client_new(loop));	/* one-time library setup done */
	fds_before = count_fds();
	hc = http_client_new(loop);
	assert_non_null(hc);
	fake_post("/_script", "{\"default\": {\"status\": 200, \"delay_ms\": 20000}}");
	action_url(url, sizeof(url), "/hang");
	for (int i = 0; i < 10; i++)
		start(hc, "POST", url, NULL, "{}", 25000, &r[i], NULL);
	assert_int_equal(h_loop_run_until(loop, fake_has_total, &want, WAIT_MS), 0);
	assert_int_equal(http_in_flight(hc), 10);
	http_client_free(hc);
	ev_run(loop, EVRUN_NOWAIT);
	for (int i = 0; i < 10; i++)
		assert_int_equal(r[i].calls, 0);
	assert_int_equal(count_fds(), fds_before);
	http_client_free(NULL);
}

/* Requests that http_start refuses: nothing starts, no callback. */
static void
test_bad_requests_refused(void **state)
{
	const char *injected[] = {"X-A: 1\r\nX-B: 2", NULL};
	struct http_client *hc = http_client_new(loop);
	struct http_call *call = (struct http_call *)&call;
	struct res r = {0};
	struct http_request rq = {.method = "POST", .url = "http://127.0.0.1:1/", .timeout_ms = 1000};
	struct http_request bad;

	(void)state;
	assert_non_null(hc);
	bad = rq, bad.url = NULL;
	assert_int_equal(http_start(hc, &bad, on_done, &r, &call), -1);
	assert_null(call);
	bad = rq, bad.method = "PO ST";
	assert_int_equal(http_start(hc, &bad, on_done, &r, NULL), -1);
	bad = rq, bad.headers = injected;
	assert_int_equal(http_start(hc, &bad, on_done, &r, NULL), -1);
	bad = rq, bad.timeout_ms = 0;
	assert_int_equal(http_start(hc, &bad, on_done, &r, NULL), -1);
	assert_int_equal(http_in_flight(hc), 0);
	ev_run(loop, EVRUN_NOWAIT);
	assert_int_equal(r.calls, 0);
	http_client_free(hc);
}

/* The debug log names the call but holds no header value, body or query. */
static void
test_log_holds_no_secret(void **state)
{
	const char *headers[] = {"Authorization: Bearer SECRET-TOKEN-42", NULL};
	struct http_client *hc = http_client_new(loop);
	struct res r = {0};
	char url[256];
	char *path = h_write_file("http-log.txt", "");
	char *text;
	int saved = dup(2), fd;

	(void)state;
	assert_non_null(hc);
	assert_non_null(path);
	fd = open(path, O_WRONLY | O_APPEND);
	assert_true(fd >= 0 && saved >= 0);
	action_url(url, sizeof(url), "/logged?sig=QUERY-SECRET");
	log_set_level(LOG_DEBUG);
	dup2(fd, 2);
	start(hc, "POST", url, headers, "{\"x\":\"BODY-SECRET\"}", 5000, &r, NULL);
	int waited = h_loop_run_until(loop, res_done, &r, WAIT_MS);
	dup2(saved, 2);
	log_set_level(LOG_INFO);
	close(fd);
	close(saved);
	assert_int_equal(waited, 0);
	assert_int_equal(r.status, 200);
	text = h_read_file(path);
	assert_non_null(text);
	assert_non_null(strstr(text, "event=http.done"));
	assert_non_null(strstr(text, "path=/logged"));
	assert_null(strstr(text, "SECRET"));
	free(text);
	free(path);
	res_clear(&r);
	http_client_free(hc);
}

/* ---- a one-shot raw server for answers the fake cannot give ---- */

static int
raw_listen(int *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 4) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
		return -1;
	*port = ntohs(sa.sin_port);
	return fd;
}

static int
write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Child: answers one connection with `head` then body_len bytes of 'x'. It
 * dies by itself after 20 s whatever happens. */
static pid_t
raw_serve_once(int lfd, const char *head, size_t body_len)
{
	static char chunk[65536];
	char req[8192];
	size_t got = 0;
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	alarm(20);
	int c = accept(lfd, NULL, NULL);
	while (c >= 0 && got < sizeof(req) - 1) {
		ssize_t n = read(c, req + got, sizeof(req) - 1 - got);
		if (n <= 0)
			_exit(1);
		got += (size_t)n;
		req[got] = '\0';
		if (strstr(req, "\r\n\r\n") != NULL)
			break;
	}
	memset(chunk, 'x', sizeof(chunk));
	if (write_all(c, head, strlen(head)) != 0)
		_exit(1);
	while (body_len > 0) {
		size_t n = body_len < sizeof(chunk) ? body_len : sizeof(chunk);
		if (write_all(c, chunk, n) != 0)
			_exit(1);
		body_len -= n;
	}
	close(c);
	_exit(0);
}

static void
raw_exchange(const char *head, size_t body_len, struct res *r)
{
	struct http_client *hc = http_client_new(loop);
	char url[64];
	int port = 0, lfd = raw_listen(&port), status;
	pid_t pid;

	assert_non_null(hc);
	assert_true(lfd >= 0);
	pid = raw_serve_once(lfd, head, body_len);
	assert_true(pid > 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/raw", port);
	start(hc, "GET", url, NULL, NULL, 10000, r, NULL);
	int waited = h_loop_run_until(loop, res_done, r, WAIT_MS);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	close(lfd);
	http_client_free(hc);
	assert_int_equal(waited, 0);
}

/* A body of exactly the cap is delivered whole; one byte more, announced or
 * not, is a transport error. */
static void
test_body_cap(void **state)
{
	struct res r = {0};

	(void)state;
	raw_exchange("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", HTTP_BODY_MAX, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body_len, HTTP_BODY_MAX);
	assert_int_equal(strlen(r.body), HTTP_BODY_MAX);
	res_clear(&r);

	raw_exchange("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", HTTP_BODY_MAX + 1, &r);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.timed_out, 0);
	assert_non_null(strstr(r.error, "larger than"));
	assert_int_equal(r.fail, CALLFAIL_TOO_LARGE);
	assert_int_equal(r.body_len, 0);
	res_clear(&r);

	raw_exchange("HTTP/1.1 200 OK\r\nContent-Length: 2097152\r\n\r\n", 2 * HTTP_BODY_MAX, &r);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.error, "larger than"));
	res_clear(&r);
}

/* A header block and a body many times curl's small receive buffer
 * (HTTP_RECV_BUFFER, kept small for the memory of 256 calls in flight) still
 * come whole: headers are gathered across reads, the last one is parsed. */
static void
test_longer_than_recv_buffer(void **state)
{
	static char head[16384];
	char filler[8192];
	struct res r = {0};
	int n;

	(void)state;
	memset(filler, 'x', sizeof filler - 1);
	filler[sizeof filler - 1] = '\0';
	n = snprintf(head, sizeof head, "HTTP/1.1 401 Unauthorized\r\nX-Filler: %s\r\n"
	    "WWW-Authenticate: Bearer error=\"invalid_token\"\r\nRetry-After: 7\r\n"
	    "Content-Length: 100000\r\nConnection: close\r\n\r\n", filler);
	assert_true(n > 0 && (size_t)n < sizeof head);
	raw_exchange(head, 100000, &r);
	assert_int_equal(r.status, 401);
	assert_string_equal(r.www_authenticate, "Bearer error=\"invalid_token\"");
	assert_string_equal(r.retry_after, "7");
	assert_int_equal(r.body_len, 100000);
	res_clear(&r);
}

/* A redirect is reported, not followed; header names match in any case and
 * the last of repeated headers wins. */
static void
test_redirect_and_header_case(void **state)
{
	struct res r = {0};

	(void)state;
	raw_exchange("HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/elsewhere\r\n"
	    "retry-after: 1\r\nRETRY-AFTER:\t 120 \t\r\nwww-authenticate: Basic\r\n"
	    "Content-Length: 0\r\n\r\n", 0, &r);
	assert_int_equal(r.status, 302);
	assert_string_equal(r.error, "");
	assert_string_equal(r.retry_after, "120");
	assert_string_equal(r.www_authenticate, "Basic");
	res_clear(&r);
}

/* A chunked answer and the 1xx heads before it are read whole; a 1xx
 * head's fields are not the answer's. */
static void
test_chunked_after_1xx(void **state)
{
	struct res r = {0};

	(void)state;
	raw_exchange("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nRetry-After: 9\r\n\r\n"
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
	    "4;x=y\r\nwarr\r\n3\r\nant\r\n0\r\nX-Trailer: 5\r\n\r\n", 0, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "warrant");
	assert_int_equal(r.body_len, 7);
	assert_null(r.retry_after);
	res_clear(&r);
}

/* Child: on one connection, answers a request, reads the next one and closes
 * without a word (a server ending a kept-alive connection just as a request
 * came); then answers a request on a second connection. */
static pid_t
raw_serve_close_kept(int lfd)
{
	static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	static const char ok2[] = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok2";
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	alarm(20);
	for (int conn = 0; conn < 2; conn++) {
		int c = accept(lfd, NULL, NULL);
		char req[4096];
		size_t got = 0;
		int seen = 0;

		if (c < 0)
			_exit(1);
		while (seen < (conn == 0 ? 2 : 1)) {
			ssize_t n = read(c, req + got, sizeof req - 1 - got);
			char *end;
			if (n <= 0)
				_exit(1);
			got += (size_t)n;
			req[got] = '\0';
			while ((end = strstr(req, "\r\n\r\n")) != NULL) {
				size_t used = (size_t)(end + 4 - req);
				memmove(req, end + 4, got - used + 1);
				got -= used;
				if (++seen == 1 && write_all(c, conn == 0 ? ok : ok2,
				    strlen(conn == 0 ? ok : ok2)) != 0)
					_exit(1);
			}
		}
		close(c);
	}
	_exit(0);
}

/* A request on a kept connection the server closes unanswered goes once
 * more, on a new connection (curl does the same): the caller sees the
 * second answer, and one connection opened for it. */
static void
test_kept_connection_closed_by_server(void **state)
{
	struct http_client *hc = http_client_new(loop);
	struct res r = {0};
	char url[64];
	int port = 0, lfd = raw_listen(&port), status;
	pid_t pid;

	(void)state;
	assert_non_null(hc);
	assert_true(lfd >= 0);
	pid = raw_serve_close_kept(lfd);
	assert_true(pid > 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/k", port);
	start(hc, "GET", url, NULL, NULL, 10000, &r, NULL);
	assert_int_equal(h_loop_run_until(loop, res_done, &r, WAIT_MS), 0);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "ok");
	assert_int_equal(r.connects, 1);
	res_clear(&r);
	start(hc, "GET", url, NULL, NULL, 10000, &r, NULL);
	assert_int_equal(h_loop_run_until(loop, res_done, &r, WAIT_MS), 0);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "ok2");
	assert_int_equal(r.connects, 1);
	res_clear(&r);
	waitpid(pid, &status, 0);
	close(lfd);
	http_client_free(hc);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ---- one kept-alive connection, every request recorded raw ---- */

/* Child: serves `n` requests on one connection and writes each request's raw
 * bytes (head and body), NUL-terminated, to `wfd`. A HEAD gets a head that
 * announces a body it does not send; any other method gets "ok". */
static pid_t
raw_serve_keepalive(int lfd, int n, int wfd)
{
	static char req[65536];
	size_t got = 0;
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	alarm(20);
	int c = accept(lfd, NULL, NULL);
	if (c < 0)
		_exit(1);
	for (int i = 0; i < n; i++) {
		char *end = NULL;
		size_t want = 0;

		for (;;) {
			req[got] = '\0';
			end = end != NULL ? end : strstr(req, "\r\n\r\n");
			if (end != NULL && want == 0) {
				size_t cl = 0;
				for (char *l = req; l < end; l = strstr(l, "\r\n") + 2) {
					static const char name[] = "content-length:";
					size_t k = 0;
					while (k < sizeof name - 1 && (l[k] | 0x20) == name[k])
						k++;
					if (k == sizeof name - 1)
						cl = strtoul(l + k, NULL, 10);
				}
				want = (size_t)(end + 4 - req) + cl;
			}
			if (end != NULL && got >= want)
				break;
			ssize_t r = read(c, req + got, sizeof(req) - 1 - got);
			if (r <= 0)
				_exit(1);
			got += (size_t)r;
		}
		const char *answer = strncmp(req, "HEAD ", 5) == 0 ?
		    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n" :
		    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
		if (write_all(wfd, req, want) != 0 || write_all(wfd, "", 1) != 0 ||
		    write_all(c, answer, strlen(answer)) != 0)
			_exit(1);
		memmove(req, req + want, got - want);
		got -= want;
	}
	close(c);
	_exit(0);
}

static int
has_line(const char *head, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = strstr(head, "\r\n"); p != NULL; p = strstr(p + 2, "\r\n"))
		if (strncmp(p + 2, line, n) == 0 && strncmp(p + 2 + n, "\r\n", 2) == 0)
			return 1;
	return 0;
}

static int
has_name(const char *head, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = strstr(head, "\r\n"); p != NULL; p = strstr(p + 2, "\r\n"))
		if (strncasecmp(p + 2, name, n) == 0 && p[2 + n] == ':')
			return 1;
	return 0;
}

/* Calls one after the other on one client reuse one easy handle: nothing of
 * a call -- its method, body, Content-Length, headers, Basic credentials,
 * HEAD's no-body -- may show in the next one. */
static void
test_nothing_leaks_between_calls(void **state)
{
	static const char token_body[] = "grant_type=client_credentials&client_secret=s3cr3t";
	static const char json[] = "{\"recordId\":\"r-2\"}";
	static char big[3001];
	const char *hpost[] = {"Content-Type: application/x-www-form-urlencoded",
	    "Accept: application/json", NULL};
	const char *haction[] = {"Content-Type: application/json", "Idempotency-Key: r-2",
	    "Warrant-On-Behalf-Of: op:1", "Warrant-Basis: role:x", "Authorization: Bearer tok-2", NULL};
	struct http_request rq[] = {
		{.method = "POST", .headers = hpost, .body = token_body,
		    .body_len = sizeof token_body - 1, .timeout_ms = 5000, .userpwd = "client:pw"},
		{.method = "GET", .timeout_ms = 5000},
		{.method = "PUT", .headers = haction, .body = json, .body_len = sizeof json - 1,
		    .timeout_ms = 5000},
		{.method = "HEAD", .timeout_ms = 5000},
		{.method = "DELETE", .timeout_ms = 5000},
		{.method = "GET", .timeout_ms = 5000},
		{.method = "POST", .timeout_ms = 5000},
		{.method = "POST", .headers = haction, .body = json, .body_len = sizeof json - 1,
		    .timeout_ms = 5000},
		{.method = "POST", .headers = haction, .body = big, .body_len = sizeof big - 1,
		    .timeout_ms = 5000},
	};
	enum { N = sizeof rq / sizeof rq[0] };
	static char seen[N * 4096];
	struct http_client *hc = http_client_new(loop);
	struct res r = {0};
	char url[64];
	int port = 0, lfd = raw_listen(&port), pfd[2], status;
	size_t got = 0;
	pid_t pid;

	(void)state;
	memset(big, 'b', sizeof big - 1);
	assert_non_null(hc);
	assert_true(lfd >= 0);
	assert_int_equal(pipe(pfd), 0);
	pid = raw_serve_keepalive(lfd, N, pfd[1]);
	assert_true(pid > 0);
	close(pfd[1]);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/x", port);
	for (int i = 0; i < N; i++) {
		rq[i].url = url;
		assert_int_equal(http_start(hc, &rq[i], on_done, &r, NULL), 0);
		assert_int_equal(h_loop_run_until(loop, res_done, &r, WAIT_MS), 0);
		assert_int_equal(r.status, 200);
		assert_int_equal(r.connects, i == 0 ? 1 : 0);
		assert_string_equal(r.body, strcmp(rq[i].method, "HEAD") == 0 ? "" : "ok");
		res_clear(&r);
	}
	for (ssize_t n; (n = read(pfd[0], seen + got, sizeof seen - 1 - got)) > 0;)
		got += (size_t)n;
	seen[got] = '\0';
	close(pfd[0]);
	waitpid(pid, &status, 0);
	close(lfd);
	http_client_free(hc);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	const char *q[N];
	const char *p = seen;
	for (int i = 0; i < N; i++) {
		assert_true(p < seen + got);
		q[i] = p;
		if (getenv("ITEST_HTTP_DUMP") != NULL)
			fprintf(stderr, "---- %d\n%s\n", i, p);
		p += strlen(p) + 1;
	}
	/* 0: the token request, Basic credentials and a form body */
	assert_true(strncmp(q[0], "POST /x HTTP/1.1\r\n", 18) == 0);
	assert_true(has_line(q[0], "Authorization: Basic Y2xpZW50OnB3"));
	assert_true(has_line(q[0], "Content-Length: 50"));
	assert_non_null(strstr(q[0], "\r\n\r\n" "grant_type=client_credentials&client_secret=s3cr3t"));
	/* 1: a bare GET: no credentials, no body, no header of call 0 */
	assert_true(strncmp(q[1], "GET /x HTTP/1.1\r\n", 17) == 0);
	assert_false(has_name(q[1], "Authorization"));
	assert_false(has_name(q[1], "Content-Length"));
	assert_false(has_name(q[1], "Content-Type"));
	assert_true(has_line(q[1], "Accept: */*"));
	assert_string_equal(strstr(q[1], "\r\n\r\n"), "\r\n\r\n");
	/* 2: an action call with a body, its own bearer, no Basic */
	assert_true(strncmp(q[2], "PUT /x HTTP/1.1\r\n", 17) == 0);
	assert_true(has_line(q[2], "Authorization: Bearer tok-2"));
	assert_true(has_line(q[2], "Content-Length: 18"));
	assert_false(has_name(q[2], "Expect"));
	assert_string_equal(strstr(q[2], "\r\n\r\n") + 4, json);
	/* 3-6: HEAD, DELETE, GET, an empty POST: nothing of call 2 */
	assert_true(strncmp(q[3], "HEAD /x HTTP/1.1\r\n", 18) == 0);
	assert_true(strncmp(q[4], "DELETE /x HTTP/1.1\r\n", 20) == 0);
	assert_true(strncmp(q[5], "GET /x HTTP/1.1\r\n", 17) == 0);
	assert_true(strncmp(q[6], "POST /x HTTP/1.1\r\n", 18) == 0);
	for (int i = 3; i <= 6; i++) {
		assert_false(has_name(q[i], "Authorization"));
		assert_false(has_name(q[i], "Idempotency-Key"));
		assert_false(has_name(q[i], "Content-Type") && i != 6);
		assert_string_equal(strstr(q[i], "\r\n\r\n"), "\r\n\r\n");
		assert_true(has_name(q[i], "Content-Length") == (i == 6));
	}
	assert_true(has_line(q[6], "Content-Length: 0"));
	/* 7: a POST with the action's headers, after all that */
	assert_true(strncmp(q[7], "POST /x HTTP/1.1\r\n", 18) == 0);
	assert_true(has_line(q[7], "Idempotency-Key: r-2"));
	assert_string_equal(strstr(q[7], "\r\n\r\n") + 4, json);
	/* 8: a body past the old 1 KiB threshold goes without Expect */
	assert_false(has_name(q[8], "Expect"));
	assert_true(has_line(q[8], "Content-Length: 3000"));
	assert_string_equal(strstr(q[8], "\r\n\r\n") + 4, big);
}

static int
setup(void **state)
{
	(void)state;
	signal(SIGPIPE, SIG_IGN);
	loop = ev_loop_new(EVFLAG_AUTO);	/* not the default loop: it reaps children */
	if (loop == NULL || h_fake_start(&fake, "fake_target", NULL) != 0)
		return -1;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	h_fake_stop(&fake);
	ev_loop_destroy(loop);
	return 0;
}

static int
reset_fake(void **state)
{
	(void)state;
	fake_post("/_reset", "");
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_post_headers_and_body, reset_fake),
		cmocka_unit_test_setup(test_put_with_userpwd, reset_fake),
		cmocka_unit_test_setup(test_big_request_body, reset_fake),
		cmocka_unit_test_setup(test_status_and_headers, reset_fake),
		cmocka_unit_test_setup(test_connection_refused, reset_fake),
		cmocka_unit_test_setup(test_proxy_from_environment, reset_fake),
		cmocka_unit_test_setup(test_timeout, reset_fake),
		cmocka_unit_test_setup(test_keepalive_sequential, reset_fake),
		cmocka_unit_test_setup(test_concurrent_and_reuse, reset_fake),
		cmocka_unit_test_setup(test_callback_reenters, reset_fake),
		cmocka_unit_test_setup(test_cancel_finished_sibling, reset_fake),
		cmocka_unit_test_setup(test_free_with_calls_in_flight, reset_fake),
		cmocka_unit_test_setup(test_bad_requests_refused, reset_fake),
		cmocka_unit_test_setup(test_log_holds_no_secret, reset_fake),
		cmocka_unit_test(test_body_cap),
		cmocka_unit_test(test_longer_than_recv_buffer),
		cmocka_unit_test(test_redirect_and_header_case),
		cmocka_unit_test(test_chunked_after_1xx),
		cmocka_unit_test(test_kept_connection_closed_by_server),
		cmocka_unit_test(test_nothing_leaks_between_calls),
		cmocka_unit_test(test_kept_call_poisoned),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
