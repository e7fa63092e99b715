/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_harness: the harness and fake_target do what the other integration
 * tests rely on -- redis that keeps its AOF over a restart, processes that
 * never outlive the test, scripted answers, delays that block nobody, exact
 * stats and records, and the bearer token checks.
 */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE
#include <errno.h>
#include <jansson.h>
#include <jwt.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

#define WAIT_MS 20000

/* Every pid a test started; the last test checks that none is left. */
static pid_t seen[64];
static int nseen;

static void
remember(pid_t pid)
{
	if (nseen < (int)(sizeof seen / sizeof seen[0]))
		seen[nseen++] = pid;
}

static long long
mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static long long
wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Gone, or a zombie waiting for someone else to reap it: not running. */
static int
pid_gone(void *arg)
{
	pid_t pid = *(pid_t *)arg;
	char path[64], buf[512];
	FILE *f;

	if (kill(pid, 0) != 0 && errno == ESRCH)
		return 1;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return 1;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *paren = strrchr(buf, ')');
	return paren != NULL && paren[1] == ' ' && paren[2] == 'Z';
}

static void
assert_gone(pid_t pid)
{
	assert_int_equal(h_wait_until(pid_gone, &pid, WAIT_MS), 0);
}

static json_t *
get_json(const struct h_fake *f, const char *path)
{
	char url[256];
	long status = 0;

	snprintf(url, sizeof url, "%s%s", f->url, path);
	char *body = h_http("GET", url, NULL, &status);
	assert_non_null(body);
	assert_int_equal(status, 200);
	json_t *j = json_loads(body, 0, NULL);
	free(body);
	assert_non_null(j);
	return j;
}

static void
post_ok(const struct h_fake *f, const char *path, const char *body)
{
	assert_int_equal(h_fake_post(f, path, body), 200);
}

static long long
stat_int(const json_t *stats, const char *a, const char *b)
{
	const json_t *v = json_object_get(stats, a);
	if (b != NULL)
		v = json_object_get(v, b);
	assert_true(json_is_integer(v));
	return (long long)json_integer_value(v);
}

/* One action call; returns the status, and Retry-After/WWW-Authenticate
 * through the optional out pointers (caller frees). */
static long
call(const struct h_fake *f, const char *path, const char *const headers[],
     char **retry_after, char **www_auth)
{
	struct h_http_reply r;
	char url[512];

	snprintf(url, sizeof url, "%s%s", f->url, path);
	assert_int_equal(h_http_req("POST", url, headers, "{\"x\":1}", &r), 0);
	if (retry_after != NULL)
		*retry_after = h_http_header(&r, "Retry-After");
	if (www_auth != NULL)
		*www_auth = h_http_header(&r, "WWW-Authenticate");
	long status = r.status;
	h_http_reply_clear(&r);
	return status;
}

static void
start_fake(struct h_fake *f, const char *const args[])
{
	assert_int_equal(h_fake_start(f, "fake_target", args), 0);
	assert_true(f->port > 0);
	remember(f->pid);
}

/* A clean exit 0 also means no leak report under ASan. */
static void
stop_fake(struct h_fake *f)
{
	pid_t pid = f->pid;
	assert_int_equal(h_stop(pid, SIGTERM, WAIT_MS), 0);
	f->pid = 0;
	assert_gone(pid);
}

static void
test_redis_aof_survives_restart(void **state)
{
	struct h_redis r;
	(void)state;

	assert_int_equal(h_redis_start(&r, 1), 0);
	pid_t first = r.pid;
	remember(first);
	redisContext *c = h_redis_connect(&r);
	assert_non_null(c);
	char *ok = h_redis_str(c, "SET %s %s", "hk", "hello");
	assert_string_equal(ok, "OK");
	free(ok);
	assert_int_equal(h_redis_int(c, "INCRBY %s %d", "counter", 41), 41);
	redisFree(c);

	assert_int_equal(h_redis_restart(&r), 0);
	remember(r.pid);
	assert_true(r.pid != first);
	assert_gone(first);
	c = h_redis_connect(&r);
	assert_non_null(c);
	char *v = h_redis_str(c, "GET %s", "hk");
	assert_string_equal(v, "hello");
	free(v);
	assert_int_equal(h_redis_int(c, "INCR %s", "counter"), 42);
	assert_null(h_redis_str(c, "GET %s", "missing"));
	assert_int_equal(h_redis_int(c, "GET %s", "hk"), -1);
	redisFree(c);
	pid_t last = r.pid;
	h_redis_stop(&r);
	assert_int_equal(r.pid, 0);
	assert_gone(last);
}

/* The restart keeps appendonly=no too: without AOF or RDB the key is lost. */
static void
test_redis_restart_keeps_settings(void **state)
{
	struct h_redis r;
	(void)state;

	assert_int_equal(h_redis_start(&r, 0), 0);
	remember(r.pid);
	redisContext *c = h_redis_connect(&r);
	assert_non_null(c);
	free(h_redis_str(c, "SET %s %s", "hk", "hello"));
	redisFree(c);
	assert_int_equal(h_redis_restart(&r), 0);
	remember(r.pid);
	c = h_redis_connect(&r);
	assert_non_null(c);
	assert_null(h_redis_str(c, "GET %s", "hk"));
	char *aof = h_redis_str(c, "CONFIG GET %s", "appendonly");
	assert_null(aof);	/* an array reply, not a string */
	redisFree(c);
	char conf[600];
	snprintf(conf, sizeof conf, "%s/redis.conf", r.dir);
	assert_true(h_file_contains(conf, "appendonly no"));
	pid_t pid = r.pid;
	h_redis_stop(&r);
	assert_gone(pid);
}

struct pid_file {
	const char *path;
	pid_t *pid;
};

static int
read_pid_file(void *arg)
{
	struct pid_file *pf = arg;
	char *s = h_read_file(pf->path);

	*pf->pid = s ? (pid_t)atoi(s) : 0;
	free(s);
	return *pf->pid > 0;
}

static void
test_spawn_wait_and_stop(void **state)
{
	char *log = h_write_file("spawn.log", "");
	char *pidfile = h_write_file("grandchild.pid", "");
	char script[600];
	int status = 0;
	(void)state;

	assert_non_null(log);
	assert_non_null(pidfile);
	char *quick[] = { "/bin/sh", "-c", "echo spawned-output; exit 3", NULL };
	pid_t pid = h_spawn(log, quick);
	assert_true(pid > 0);
	remember(pid);
	assert_int_equal(h_wait_exit(pid, WAIT_MS, &status), 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 3);
	assert_true(h_file_contains(log, "spawned-output"));
	assert_int_equal(h_wait_exit(pid, 0, &status), -1);	/* already reaped */

	/* Ignores SIGTERM and has a child of its own: h_stop escalates to
	 * SIGKILL and takes the whole process group. */
	snprintf(script, sizeof script, "trap '' TERM; sleep 60 & echo $! > %s; wait", pidfile);
	char *stubborn[] = { "/bin/sh", "-c", script, NULL };
	pid = h_spawn(log, stubborn);
	assert_true(pid > 0);
	remember(pid);
	assert_int_equal(h_wait_exit(pid, 300, &status), -1);	/* still running */
	pid_t grandchild = 0;
	struct pid_file pf = { pidfile, &grandchild };
	assert_int_equal(h_wait_until(read_pid_file, &pf, WAIT_MS), 0);
	assert_true(grandchild > 0);
	status = h_stop(pid, SIGTERM, 300);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGKILL);
	assert_gone(pid);
	assert_gone(grandchild);
	assert_int_equal(h_stop(pid, SIGTERM, 100), -1);	/* not ours any more */
	free(log);
	free(pidfile);
}

/*
 * A test process that dies (exit or fatal signal) takes its children along,
 * and their whole process groups: the grandchild checks that, since
 * PR_SET_PDEATHSIG alone would only take the direct child.
 */
static void
check_registry_cleanup(int by_signal)
{
	char *log = h_write_file("orphan.log", "");
	char *pidfile = h_write_file(by_signal ? "orphan-sig.pid" : "orphan-exit.pid", "");
	char script[600];
	pid_t pids[2] = { 0, 0 };
	int fds[2], status;

	assert_non_null(log);
	assert_non_null(pidfile);
	snprintf(script, sizeof script, "sleep 60 & echo $! > %s; wait", pidfile);
	assert_int_equal(pipe(fds), 0);
	fflush(NULL);
	pid_t test = fork();
	assert_true(test >= 0);
	if (test == 0) {
		char *argv[] = { "/bin/sh", "-c", script, NULL };
		struct pid_file pf = { pidfile, &pids[1] };
		pids[0] = h_spawn(log, argv);
		if (pids[0] < 0 || h_wait_until(read_pid_file, &pf, WAIT_MS) != 0 ||
		    write(fds[1], pids, sizeof pids) != (ssize_t)sizeof pids)
			_exit(2);
		if (by_signal)
			raise(SIGTERM);
		exit(0);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], pids, sizeof pids), (ssize_t)sizeof pids);
	close(fds[0]);
	assert_int_equal(waitpid(test, &status, 0), test);
	if (by_signal)
		assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	else
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_gone(pids[0]);
	assert_gone(pids[1]);
	free(log);
	free(pidfile);
}

static void
test_registry_cleanup_at_exit(void **state)
{
	(void)state;
	check_registry_cleanup(0);
}

static void
test_registry_cleanup_on_signal(void **state)
{
	(void)state;
	check_registry_cleanup(1);
}

static void
test_fake_scripted_answers_and_stats(void **state)
{
	struct h_fake f;
	const char *const k1[] = { "Idempotency-Key: k1", NULL };
	const char *const k2[] = { "Idempotency-Key: k2", NULL };
	char *ra = NULL, url[256];
	long status;
	(void)state;

	start_fake(&f, NULL);
	post_ok(&f, "/_script", "{\"default\": {\"status\": 200}, \"per_key\": {\"k1\": ["
	    "{\"status\": 503, \"retry_after\": \"2\"}, {\"status\": 503}, {\"status\": 200}]}}");
	assert_int_equal(call(&f, "/act", k1, &ra, NULL), 503);
	assert_string_equal(ra, "2");
	free(ra);
	assert_int_equal(call(&f, "/act", k1, &ra, NULL), 503);
	assert_null(ra);
	assert_int_equal(call(&f, "/act", k1, &ra, NULL), 200);
	assert_null(ra);
	assert_int_equal(call(&f, "/act", k1, NULL, NULL), 200);	/* default now */
	assert_int_equal(call(&f, "/act", k2, NULL, NULL), 200);
	assert_int_equal(call(&f, "/act", NULL, NULL, NULL), 200);	/* no key */

	json_t *s = get_json(&f, "/_stats");
	assert_int_equal(stat_int(s, "total", NULL), 6);
	assert_int_equal(stat_int(s, "distinct_keys", NULL), 2);
	assert_int_equal(stat_int(s, "max_per_key", NULL), 4);
	assert_int_equal(stat_int(s, "duplicates", NULL), 1);	/* k1 succeeded twice */
	assert_int_equal(stat_int(s, "by_status", "503"), 2);
	assert_int_equal(stat_int(s, "by_status", "200"), 4);
	assert_int_equal(stat_int(s, "keys", "k1"), 4);
	assert_int_equal(stat_int(s, "keys", "k2"), 1);
	json_decref(s);

	/* A new script replaces the old one; its default carries headers. */
	post_ok(&f, "/_script", "{\"default\": {\"status\": 429, \"retry_after\": 7}}");
	assert_int_equal(call(&f, "/act", k2, &ra, NULL), 429);
	assert_string_equal(ra, "7");
	free(ra);
	snprintf(url, sizeof url, "%s/_script", f.url);
	free(h_http("POST", url, "{\"per_key\": {\"k\": 5}}", &status));
	assert_int_equal(status, 400);
	free(h_http("POST", url, "not json", &status));
	assert_int_equal(status, 400);
	assert_int_equal(call(&f, "/act", k2, NULL, NULL), 429);	/* bad script ignored */

	/* Reset forgets script, records and counters. */
	post_ok(&f, "/_reset", NULL);
	assert_int_equal(call(&f, "/act", k1, NULL, NULL), 200);
	s = get_json(&f, "/_stats");
	assert_int_equal(stat_int(s, "total", NULL), 1);
	assert_int_equal(stat_int(s, "duplicates", NULL), 0);
	assert_null(json_object_get(json_object_get(s, "by_status"), "429"));
	json_decref(s);
	s = get_json(&f, "/_requests");
	assert_int_equal(json_array_size(s), 1);
	json_decref(s);
	stop_fake(&f);
}

struct slow_call {
	const struct h_fake *f;
	long status;
	long long elapsed_ms;
	int done;
};

static void *
slow_thread(void *arg)
{
	struct slow_call *sc = arg;
	const char *const hdr[] = { "Idempotency-Key: slow", NULL };
	struct h_http_reply r;
	char url[256];
	long long start = mono_ms();

	snprintf(url, sizeof url, "%s/act", sc->f->url);
	if (h_http_req("POST", url, hdr, "{}", &r) == 0)
		sc->status = r.status;
	h_http_reply_clear(&r);
	sc->elapsed_ms = mono_ms() - start;
	__atomic_store_n(&sc->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static int
slow_call_arrived(void *arg)
{
	const struct h_fake *f = arg;
	json_t *s = get_json(f, "/_stats");
	int arrived = json_object_get(json_object_get(s, "keys"), "slow") != NULL;
	json_decref(s);
	return arrived;
}

static void
test_fake_delay_blocks_only_its_request(void **state)
{
	const char *const fast[] = { "Idempotency-Key: fast", NULL };
	struct h_fake f;
	pthread_t t;
	(void)state;

	start_fake(&f, NULL);
	post_ok(&f, "/_script", "{\"per_key\": {\"slow\": [{\"status\": 202, \"delay_ms\": 4000}]}}");
	struct slow_call sc = { &f, 0, 0, 0 };
	assert_int_equal(pthread_create(&t, NULL, slow_thread, &sc), 0);
	assert_int_equal(h_wait_until(slow_call_arrived, &f, WAIT_MS), 0);
	assert_int_equal(call(&f, "/act", fast, NULL, NULL), 200);
	/* The fast call came back while the slow one was still held. */
	assert_int_equal(__atomic_load_n(&sc.done, __ATOMIC_SEQ_CST), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(sc.status, 202);
	assert_true(sc.elapsed_ms >= 4000);
	stop_fake(&f);
}

static void
test_fake_records_requests(void **state)
{
	const char *const hdrs[] = { "Idempotency-Key: rec-1", "Authorization: Bearer not-logged-xyz",
	    "Warrant-On-Behalf-Of: alice@example.com", "Warrant-Basis: ticket 42", NULL };
	const char *raw = "/things/a%2Fb/c%20d%C3%A9?x=%41";
	struct h_http_reply r;
	struct h_fake f;
	char url[512];
	size_t big = 300 * 1024;	/* arrives over many upload calls */
	(void)state;

	start_fake(&f, NULL);
	char *body = malloc(big + 16);
	assert_non_null(body);
	memcpy(body, "{\"pad\":\"", 8);
	memset(body + 8, 'p', big);
	memcpy(body + 8 + big, "\"}", 3);

	long long before = wall_ms();
	snprintf(url, sizeof url, "%s%s", f.url, raw);
	assert_int_equal(h_http_req("POST", url, hdrs, body, &r), 0);
	assert_int_equal(r.status, 200);
	char *ct = h_http_header(&r, "Content-Type");
	assert_string_equal(ct, "application/json");
	free(ct);
	h_http_reply_clear(&r);
	snprintf(url, sizeof url, "%s/plain", f.url);
	assert_int_equal(h_http_req("GET", url, NULL, NULL, &r), 0);
	assert_int_equal(r.status, 200);
	h_http_reply_clear(&r);
	long long after = wall_ms();

	json_t *recs = get_json(&f, "/_requests");
	assert_int_equal(json_array_size(recs), 2);
	json_t *a = json_array_get(recs, 0), *b = json_array_get(recs, 1);
	assert_string_equal(json_string_value(json_object_get(a, "method")), "POST");
	assert_string_equal(json_string_value(json_object_get(a, "path")), raw);
	assert_string_equal(json_string_value(json_object_get(a, "idempotency_key")), "rec-1");
	assert_true(json_is_true(json_object_get(a, "authorization")));
	assert_string_equal(json_string_value(json_object_get(a, "on_behalf_of")), "alice@example.com");
	assert_string_equal(json_string_value(json_object_get(a, "basis")), "ticket 42");
	assert_string_equal(json_string_value(json_object_get(a, "content_type")), "application/json");
	assert_string_equal(json_string_value(json_object_get(a, "body")), body);
	assert_int_equal(json_integer_value(json_object_get(a, "status")), 200);
	long long at = (long long)json_integer_value(json_object_get(a, "arrival_ms"));
	assert_true(at >= before && at <= after);

	assert_string_equal(json_string_value(json_object_get(b, "method")), "GET");
	assert_string_equal(json_string_value(json_object_get(b, "path")), "/plain");
	assert_true(json_is_null(json_object_get(b, "idempotency_key")));
	assert_true(json_is_false(json_object_get(b, "authorization")));
	assert_true(json_is_null(json_object_get(b, "on_behalf_of")));
	assert_string_equal(json_string_value(json_object_get(b, "body")), "");
	json_decref(recs);
	free(body);

	char *log = strdup(f.log);
	stop_fake(&f);
	assert_true(h_file_contains(log, "rec-1"));	/* one line per request */
	assert_false(h_file_contains(log, "not-logged-xyz"));
	free(log);
}

static char *
make_token(const char *secret, long iat, long exp, jwt_alg_t alg)
{
	jwt_t *jwt = NULL;
	char *tok = NULL;

	assert_int_equal(jwt_new(&jwt), 0);
	assert_int_equal(jwt_add_grant(jwt, "sub", "warrantd"), 0);
	assert_int_equal(jwt_add_grant_int(jwt, "iat", iat), 0);
	assert_int_equal(jwt_add_grant_int(jwt, "exp", exp), 0);
	assert_int_equal(jwt_set_alg(jwt, alg, alg == JWT_ALG_NONE ? NULL :
	    (const unsigned char *)secret, alg == JWT_ALG_NONE ? 0 : (int)strlen(secret)), 0);
	tok = jwt_encode_str(jwt);
	jwt_free(jwt);
	assert_non_null(tok);
	return tok;
}

/* Status of one call with the token (NULL: no Authorization at all); a 401
 * must carry the invalid_token challenge. */
static long
call_with(const struct h_fake *f, const char *token)
{
	char auth[2048], *www = NULL;
	const char *const with[] = { "Idempotency-Key: jk", auth, NULL };
	const char *const without[] = { "Idempotency-Key: jk", NULL };

	snprintf(auth, sizeof auth, "Authorization: Bearer %s", token ? token : "");
	long status = call(f, "/act", token ? with : without, NULL, &www);
	if (status == 401)
		assert_string_equal(www, "Bearer error=\"invalid_token\"");
	free(www);
	return status;
}

static void
test_fake_jwt(void **state)
{
	const char *secret = "s3cret-for-tests";
	char *secret_file = h_write_file("jwt.secret", "  s3cret-for-tests\n");
	struct h_fake f;
	long now = (long)time(NULL);
	(void)state;

	assert_non_null(secret_file);
	const char *const args[] = { "--jwt-secret-file", secret_file, NULL };
	start_fake(&f, args);
	post_ok(&f, "/_script", "{\"per_key\": {\"jk\": [{\"status\": 503}]}}");

	char *valid = make_token(secret, now - 5, now + 300, JWT_ALG_HS256);
	char *expired = make_token(secret, now - 600, now - 10, JWT_ALG_HS256);
	char *forged = make_token("another-secret", now, now + 300, JWT_ALG_HS256);
	char *unsigned_tok = make_token(secret, now, now + 300, JWT_ALG_NONE);
	char *hs512 = make_token(secret, now, now + 300, JWT_ALG_HS512);

	assert_int_equal(call_with(&f, expired), 401);
	assert_int_equal(call_with(&f, NULL), 401);
	assert_int_equal(call_with(&f, "garbage"), 401);
	assert_int_equal(call_with(&f, forged), 401);
	assert_int_equal(call_with(&f, unsigned_tok), 401);
	assert_int_equal(call_with(&f, hs512), 401);
	/* Rejected calls leave the script alone: the 503 is still next. */
	assert_int_equal(call_with(&f, valid), 503);
	assert_int_equal(call_with(&f, valid), 200);

	post_ok(&f, "/_revoke", NULL);
	assert_int_equal(call_with(&f, valid), 401);	/* issued before the revocation */
	char *fresh = make_token(secret, (long)time(NULL), (long)time(NULL) + 300, JWT_ALG_HS256);
	assert_int_equal(call_with(&f, fresh), 200);

	json_t *s = get_json(&f, "/_stats");
	assert_int_equal(stat_int(s, "by_status", "401"), 7);
	assert_int_equal(stat_int(s, "total", NULL), 10);
	json_decref(s);
	free(valid);
	free(expired);
	free(forged);
	free(unsigned_tok);
	free(hs512);
	free(fresh);
	free(secret_file);
	stop_fake(&f);
}

static void
test_nothing_left_running(void **state)
{
	(void)state;
	assert_true(nseen >= 8);
	for (int i = 0; i < nseen; i++)
		assert_gone(seen[i]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		/* First: a forked test process inherits (and, under LSan,
		 * reports) whatever an earlier failed test leaked. */
		cmocka_unit_test(test_registry_cleanup_at_exit),
		cmocka_unit_test(test_registry_cleanup_on_signal),
		cmocka_unit_test(test_spawn_wait_and_stop),
		cmocka_unit_test(test_redis_aof_survives_restart),
		cmocka_unit_test(test_redis_restart_keeps_settings),
		cmocka_unit_test(test_fake_scripted_answers_and_stats),
		cmocka_unit_test(test_fake_delay_blocks_only_its_request),
		cmocka_unit_test(test_fake_records_requests),
		cmocka_unit_test(test_fake_jwt),
		cmocka_unit_test(test_nothing_left_running),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
