/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_deadline: R1 when the request leaves, and the end of a wait for a
 * token (R1, R9, R12), with the real warrantd, a real redis-server and the
 * fakes; and the two scripts of a re-dispatch (lua/redispatch.lua,
 * lua/handback.lua) run against redis-server directly.
 *
 *   - a connect that hangs (a listening socket whose backlog is full: the
 *     kernel drops the SYNs until the test accepts) is given up at the
 *     deadline: when the test opens the gate after expiresAt, no request
 *     ever arrives, and the record is `expired`;
 *   - a target that answers late, and a PDP that answers late, are not
 *     waited for past the deadline;
 *   - a wait for a token ends at the deadline as `expired`, and after
 *     auth_wait_max_ms the entry is handed back under a new stream entry
 *     that a worker with a token takes at once, its delivery count carried
 *     over (R12);
 *   - a re-dispatch sent again after its reply was lost counts one delivery.
 *
 * Every test brings up its own redis and fakes; the teardown stops them by
 * PID, also after a failed assertion. Waits are on conditions with a
 * timeout; the only fixed waits are the windows in which something must
 * NOT happen, each as long as the old behaviour needs to show itself.
 */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <jansson.h>

#include "harness.h"
#include "core/store.h"
#include "base/wtime.h"

#define CLIENT_ID	"warrantd-dl"
#define SECRET		"dl-S3cr3t"
/* How late after expiresAt a record may be written `expired`: the loop's
 * timer, the write, a loaded machine. The old behaviour is seconds late. */
#define LATE_MS		1000

static struct h_redis redis;
static struct h_fake idp, idp2, target, pdp;
static struct h_daemon dmn[2];
static redisContext *rc;
static char *secret_path;
static int gate_fd = -1, filler_fd = -1;

static int
teardown(void **state)
{
	(void)state;
	h_world_down(dmn, sizeof dmn / sizeof dmn[0], &rc, &redis, &target, &idp, &idp2, &pdp,
	    (struct h_fake *)NULL);
	if (gate_fd >= 0)
		close(gate_fd);
	if (filler_fd >= 0)
		close(filler_fd);
	gate_fd = filler_fd = -1;
	free(secret_path);
	secret_path = NULL;
	return 0;
}

/* fake_target, checking tokens of the IdPs' secret when `tokens`. */
static void
target_up(int tokens)
{
	const char *args[] = {"--jwt-secret-file", h_data("test-hs256.secret"), NULL};

	assert_int_equal(h_fake_start(&target, "fake_target", tokens ? args : NULL), 0);
}

static void
idp_up(struct h_fake *f)
{
	const char *args[] = {"--jwt-secret-file", h_data("test-hs256.secret"), "--client-id",
	    CLIENT_ID, "--client-secret-file", secret_path, "--lifetime-s", "3600", NULL};

	assert_int_equal(h_fake_start(f, "fake_idp", args), 0);
}

/* ------------------------------------------------------------------ */
/* the daemon                                                           */

struct dcfg {
	const char *consumer;
	const char *target_url;		/* [target.url] */
	const char *token_url;		/* [oauth] token_url's IdP base; NULL: auth = none */
	int timeout_ms;			/* the action's */
	int claim_idle_ms;		/* [2000] */
	int max_deliveries;		/* [16] */
	const char *daemon_extra, *redis_extra, *oauth_extra, *sections;
};

/*
 * The worker is ready before its first token arrives (it reads nothing until
 * then, R6): a test that takes the IdP down to strand a job in auth_wait
 * waits for that token first, or under load the IdP goes down before it
 * answers and the job is never read.
 */
static void
wait_first_token(const struct h_daemon *d)
{
	if (h_daemon_wait_log(d, "event=token.refreshed", H_WAIT_MS) != 0)
		fail_msg("warrantd got no first token (log %s)", d->log);
}

static void
daemon_up(struct h_daemon *d, const struct dcfg *c)
{
	char sections[2048] = "";

	if (c->token_url != NULL)
		snprintf(sections, sizeof sections, "[oauth]\ntoken_url = %s/token\n"
		    "client_id = %s\nclient_secret_file = %s\n%s", c->token_url, CLIENT_ID,
		    secret_path, c->oauth_extra ? c->oauth_extra : "");
	if (c->sections != NULL)
		snprintf(sections + strlen(sections), sizeof sections - strlen(sections), "%s",
		    c->sections);
	struct h_daemon_opts o = {
		.redis_sock = redis.sock, .consumer = c->consumer,
		.target_url = c->target_url ? c->target_url : target.url,
		.claim_idle_ms = c->claim_idle_ms, .max_deliveries = c->max_deliveries,
		.action_auth = c->token_url ? "oauth" : "none", .action_timeout_ms = c->timeout_ms,
		.block_ms = 500, .daemon_extra = c->daemon_extra, .redis_extra = c->redis_extra,
		.sections = sections,
	};
	char *ini = h_daemon_ini(&o);

	assert_non_null(ini);
	int r = h_daemon_start(d, ini);
	free(ini);
	if (r != 0)
		fail_msg("warrantd %s did not get ready (log %s)", c->consumer, d->log);
}

static long long
hb_int(const char *consumer, const char *name)
{
	char key[128];

	snprintf(key, sizeof key, H_PREFIX ":consumer:%s", consumer);
	char *v = h_hget(rc, key, name);
	long long n = v ? strtoll(v, NULL, 10) : -1;
	free(v);
	return n;
}

struct hb_wait {
	const char *consumer, *name;
	long long min;
};

static int
hb_reached(void *arg)
{
	const struct hb_wait *w = arg;
	return hb_int(w->consumer, w->name) >= w->min;
}

static void
wait_hb_min(const char *consumer, const char *name, long long min)
{
	struct hb_wait w = {consumer, name, min};

	if (h_wait_until(hb_reached, &w, H_WAIT_MS) != 0)
		fail_msg("%s %s = %lld, want >= %lld", consumer, name, hb_int(consumer, name), min);
}

/* ------------------------------------------------------------------ */
/* records                                                              */

/* A signed record for gate.open whose deadline is expires_ms; queued when
 * enqueue, else only stored (the test adds its own stream entry). */
static void
decide_until(const char *id, long long expires_ms, int enqueue)
{
	h_store_signed(rc, H_PREFIX, id, "gate.open", "lock/7", expires_ms, enqueue);
}

static char *
hash_field(const char *id, const char *name)
{
	char key[128];

	snprintf(key, sizeof key, H_PREFIX ":decision:%s", id);
	return h_hget(rc, key, name);
}

static void
wait_state_ms(const char *id, const char *want, int timeout_ms)
{
	h_wait_hash_field(rc, h_key(H_PREFIX, "decision:%s", id), "state", want, timeout_ms);
}

/* The hash's updatedAt, Unix ms. */
static long long
updated_at(const char *id)
{
	char *s = hash_field(id, "updatedAt");
	int64_t ms = 0;

	if (s == NULL || wtime_parse_rfc3339(s, &ms) < 0)
		fail_msg("%s: updatedAt \"%s\"", id, s ? s : "(nil)");
	free(s);
	return ms;
}

/* R1's outcome: expired no later than LATE_MS after the deadline, the
 * owner notified and the entry acked. */
static void
assert_expired_in_time(const char *id, long long expires_ms)
{
	char *outcome = hash_field(id, "outcome");
	long long late = updated_at(id) - expires_ms;

	printf("    %s: expired %lld ms after expiresAt\n", id, late);
	assert_string_equal(outcome, "deadline-passed");
	free(outcome);
	if (late > LATE_MS)
		fail_msg("%s written expired %lld ms after its deadline (want <= %d)", id, late,
		    LATE_MS);
	assert_true(h_stream_count(rc, H_NOTIFY, "id", id) >= 1);
	char *kind = h_stream_field(rc, H_NOTIFY, "id", id, "kind");
	assert_non_null(kind);
	assert_string_equal(kind, "expired");
	free(kind);
	assert_int_equal(h_pending_count(rc, H_JOBS, H_GROUP), 0);
}

/* A field of stream entry sid; caller frees; NULL when absent. */
static char *
entry_field(const char *sid, const char *name)
{
	redisReply *r = redisCommand(rc, "XRANGE %s %s %s", H_JOBS, sid, sid);
	char *v = NULL;

	if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 1) {
		const char *s = h_entry_str(r->element[0]->element[1], name);
		v = s ? strdup(s) : NULL;
	}
	freeReplyObject(r);
	return v;
}

/* XPENDING for one entry: its owner and delivery count (0: not pending). */
static long long
pending_deliveries(const char *sid, char *owner, size_t n)
{
	redisReply *r = redisCommand(rc, "XPENDING %s %s %s %s 1", H_JOBS, H_GROUP, sid, sid);
	long long d = 0;

	if (owner != NULL)
		owner[0] = '\0';
	if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
	    r->element[0]->elements == 4) {
		if (owner != NULL)
			snprintf(owner, n, "%s", r->element[0]->element[1]->str);
		d = r->element[0]->element[3]->integer;
	}
	freeReplyObject(r);
	return d;
}

static int
clock_past(void *arg)
{
	return h_now_ms() >= *(const long long *)arg;
}

/* ------------------------------------------------------------------ */
/* 1. a connect that hangs: given up at the deadline (R1)               */

/*
 * The gate: a socket listening with a backlog of 0 whose one place the test
 * fills with a connection of its own, so the kernel drops every further SYN
 * (the client sends it again after 1, 3, 7 s) until the test accepts the
 * filler. Returns the port.
 */
static int
gate_up(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof a;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	gate_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(gate_fd >= 0);
	assert_int_equal(bind(gate_fd, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(gate_fd, 0), 0);
	assert_int_equal(getsockname(gate_fd, (struct sockaddr *)&a, &len), 0);
	filler_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(filler_fd >= 0);
	assert_int_equal(connect(filler_fd, (struct sockaddr *)&a, sizeof a), 0);
	return ntohs(a.sin_port);
}

/* Opens the gate (accepts the filler), then until `until_ms` accepts
 * whatever connects and answers 200 to what it sends. Returns the arrival
 * (Unix ms) of the first request's bytes, or 0 when none came. */
static long long
gate_open_until(long long until_ms)
{
	long long first = 0;
	int fd = accept(gate_fd, NULL, NULL);

	assert_true(fd >= 0);
	close(fd);	/* the filler's */
	while (h_now_ms() < until_ms) {
		struct pollfd p = {.fd = gate_fd, .events = POLLIN};
		if (poll(&p, 1, 50) <= 0)
			continue;
		if ((fd = accept(gate_fd, NULL, NULL)) < 0)
			continue;
		char buf[4096];
		struct pollfd q = {.fd = fd, .events = POLLIN};
		if (poll(&q, 1, 2000) > 0 && read(fd, buf, sizeof buf) > 0) {
			if (first == 0)
				first = h_now_ms();
			static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n"
			    "Connection: close\r\n\r\n";
			if (write(fd, ok, sizeof ok - 1) < 0)
				printf("    (the answer could not be written)\n");
		}
		close(fd);
	}
	return first;
}

static void
connect_hang(const char *id)
{
	char url[64];
	const int timeout_ms = 8000;

	rc = h_redis_up(&redis);
	snprintf(url, sizeof url, "http://127.0.0.1:%d", gate_up());
	struct dcfg c = {.consumer = "w1", .target_url = url, .timeout_ms = timeout_ms};
	daemon_up(&dmn[0], &c);
	long long expires = h_now_ms() + 2500;
	decide_until(id, expires, 1);
	/* the call step is written, the connect under way, before the deadline */
	wait_state_ms(id, "running", 2500);
	assert_int_equal(h_wait_until(clock_past, &expires, H_WAIT_MS), 0);
	/* Before the fix the connect went on for timeout_ms from the call's
	 * start: a SYN sent again after the gate opens gets through then. */
	long long arrived = gate_open_until(expires + timeout_ms + 500);
	if (arrived != 0)
		fail_msg("%s: the request reached the target %lld ms after expiresAt", id,
		    arrived - expires);
	wait_state_ms(id, "expired", 5000);
	assert_expired_in_time(id, expires);
	h_daemon_down(&dmn[0]);
}

static void
test_connect_hang_curl(void **state)
{
	(void)state;
	connect_hang("dl-connect-curl");
}

/* ------------------------------------------------------------------ */
/* 2. a target and a PDP that answer late: not waited for past R1       */

/* The request left in time; its answer comes 3.5 s after the deadline,
 * within the action's timeout_ms. R1 holds when the request leaves: once
 * it has left, its answer decides -- cut at the deadline, a call that may
 * have run at the target would be reported expired (and run again on a
 * retry had it time). */
static void
test_slow_answer_after_deadline_decides(void **state)
{
	const char *id = "dl-slow";
	(void)state;

	rc = h_redis_up(&redis);
	target_up(0);
	assert_int_equal(h_fake_script(&target, "{\"per_key\":{\"dl-slow\":"
	    "[{\"status\":200,\"delay_ms\":5000}]}}"), 0);
	struct dcfg c = {.consumer = "w1", .timeout_ms = 8000};
	daemon_up(&dmn[0], &c);
	long long expires = h_now_ms() + 1500;
	decide_until(id, expires, 1);
	wait_state_ms(id, "done", (int)(expires - h_now_ms()) + 10000);
	json_t *all = h_get_ok(&target, "/_requests");
	assert_int_equal(json_array_size(all), 1);
	long long arrival = json_integer_value(json_object_get(json_array_get(all, 0),
	    "arrival_ms"));
	json_decref(all);
	printf("    the request arrived %lld ms before expiresAt\n", expires - arrival);
	assert_true(arrival < expires);
	h_daemon_down(&dmn[0]);
}

/* R5 within R1: a PDP that would answer 4.5 s after the deadline (within
 * [authz] timeout_ms) is not waited for; the action is never called. */
static void
test_pdp_bounded_by_deadline(void **state)
{
	const char *id = "dl-pdp";
	char sections[512];
	(void)state;

	rc = h_redis_up(&redis);
	target_up(0);
	assert_int_equal(h_fake_start(&pdp, "fake_pdp", NULL), 0);
	h_post_ok(&pdp, "/_policy", "{\"delay_ms\": 6000}");
	snprintf(sections, sizeof sections, "[authz]\nurl = %s/v1/data/warrant/allow\n"
	    "timeout_ms = 8000\n", pdp.url);
	struct dcfg c = {.consumer = "w1", .timeout_ms = 2000, .sections = sections};
	daemon_up(&dmn[0], &c);
	long long expires = h_now_ms() + 1500;
	decide_until(id, expires, 1);
	wait_state_ms(id, "expired", (int)(expires - h_now_ms()) + 8000);
	assert_expired_in_time(id, expires);
	json_t *q = h_get_ok(&pdp, "/_queries");
	assert_int_equal(json_array_size(q), 1);
	json_decref(q);
	json_t *calls = h_get_ok(&target, "/_requests");
	assert_int_equal(json_array_size(calls), 0);
	json_decref(calls);
	h_daemon_down(&dmn[0]);
}

/* ------------------------------------------------------------------ */
/* 3. a wait for a token (R1, R9, R12)                                  */

static void
token_world_up(void)
{
	secret_path = h_write_file("client-secret", SECRET "\n");
	assert_non_null(secret_path);
	rc = h_redis_up(&redis);
	idp_up(&idp);
	target_up(1);
}

/*
 * The call is refused (401), the IdP is down: the worker waits for a token,
 * with auth_wait_max_ms far away. The wait ends at the deadline: expired,
 * notified, acked -- not left in hand until auth_wait_max_ms and released.
 */
static void
test_token_wait_ends_at_deadline(void **state)
{
	const char *id = "dl-wait";
	(void)state;

	token_world_up();
	assert_int_equal(h_fake_script(&target, "{\"per_key\":{\"dl-wait\":[{\"status\":401}]}}"),
	    0);
	struct dcfg c = {.consumer = "w1", .token_url = idp.url, .timeout_ms = 2000,
	    .oauth_extra = "auth_wait_max_ms = 30000\n"};
	daemon_up(&dmn[0], &c);
	wait_first_token(&dmn[0]);
	h_post_ok(&idp, "/_down", NULL);
	long long expires = h_now_ms() + 2500;
	decide_until(id, expires, 1);
	wait_state_ms(id, "auth_wait", H_WAIT_MS);
	wait_state_ms(id, "expired", (int)(expires - h_now_ms()) + 5000);
	assert_expired_in_time(id, expires);
	json_t *s = h_get_ok(&target, "/_stats");
	assert_int_equal(json_integer_value(json_object_get(s, "total")), 1);
	json_decref(s);
	h_post_ok(&idp, "/_up", NULL);
	h_daemon_down(&dmn[0]);
}

/*
 * Two workers, each with its own IdP. w1's call is refused and its IdP is
 * down: after auth_wait_max_ms it hands the entry back -- a new stream entry
 * named in the hash's `entry`, carrying the delivery count, the old one
 * acked -- and w2, which has a token, takes it at once and runs it. Before,
 * the entry was only released and sat in w1's PEL until claim_idle_ms (a
 * minute here). Then R12 across a hand-back: an entry whose
 * priorDeliveries already reach max_deliveries is dead when delivered.
 */
static void
test_token_wait_hands_back(void **state)
{
	const char *id = "dl-back", *poisoned = "dl-back-poison";
	char old_sid[64], new_sid[64], line[256];
	(void)state;

	token_world_up();
	idp_up(&idp2);
	assert_int_equal(h_fake_script(&target, "{\"per_key\":{\"dl-back\":[{\"status\":401}]}}"),
	    0);
	struct dcfg c1 = {.consumer = "w1", .token_url = idp.url, .timeout_ms = 2000,
	    .claim_idle_ms = 60000, .max_deliveries = 3, .oauth_extra = "auth_wait_max_ms = 1500\n"};
	daemon_up(&dmn[0], &c1);
	wait_first_token(&dmn[0]);
	h_post_ok(&idp, "/_down", NULL);
	decide_until(id, h_now_ms() + 3600 * 1000LL, 1);
	h_stream_id_of(rc, H_JOBS, id, old_sid, sizeof old_sid);
	wait_state_ms(id, "auth_wait", H_WAIT_MS);
	long long waiting = h_now_ms();

	struct dcfg c2 = c1;
	c2.consumer = "w2";
	c2.token_url = idp2.url;
	daemon_up(&dmn[1], &c2);
	wait_state_ms(id, "done", 15000);
	long long took = h_now_ms() - waiting;
	char *who = hash_field(id, "owner"), *entry = hash_field(id, "entry");
	h_stream_id_of(rc, H_JOBS, id, new_sid, sizeof new_sid);
	printf("    handed back by w1 and done by w2 %lld ms after the wait began\n", took);
	assert_string_equal(who, "w2");
	assert_non_null(entry);
	assert_string_equal(entry, new_sid);
	assert_string_not_equal(new_sid, old_sid);
	free(who);
	free(entry);
	char *prior = entry_field(new_sid, "priorDeliveries");
	assert_non_null(prior);
	assert_string_equal(prior, "1");
	free(prior);
	assert_int_equal(pending_deliveries(old_sid, NULL, 0), 0);
	/* the job's trace (§13) stands between its id and the rest */
	assert_true(h_daemon_log_has(&dmn[0], "event=job.handback id=dl-back traceparent="));
	snprintf(line, sizeof line, " stream_id=%s new_stream_id=%s", old_sid, new_sid);
	assert_true(h_daemon_log_has(&dmn[0], line));
	wait_hb_min("w1", "redispatched", 1);
	assert_int_equal(hb_int("w1", "redispatched"), 1);
	assert_int_equal(hb_int("w2", "claimed"), 0);
	json_t *s = h_get_ok(&target, "/_stats");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(s, "keys"), id)), 2);
	json_decref(s);

	/* R12: 3 deliveries before, this one the 4th > max_deliveries 3 */
	decide_until(poisoned, h_now_ms() + 3600 * 1000LL, 0);
	redisReply *r = redisCommand(rc, "XADD %s * id %s priorDeliveries 3", H_JOBS, poisoned);
	assert_non_null(r);
	freeReplyObject(r);
	wait_state_ms(poisoned, "dead", 15000);
	char *outcome = hash_field(poisoned, "outcome");
	assert_string_equal(outcome, "too-many-deliveries");
	free(outcome);
	char *n = h_stream_field(rc, H_DEAD, "id", poisoned, "deliveries");
	assert_non_null(n);
	assert_string_equal(n, "4");
	free(n);
	h_daemon_down(&dmn[1]);
	h_post_ok(&idp, "/_up", NULL);
	h_daemon_down(&dmn[0]);
}

/* ------------------------------------------------------------------ */
/* 4. the scripts themselves                                            */

/* EVAL of script `a` on rc; caller frees. */
static redisReply *
eval(const struct store_args *a)
{
	struct store_vec v;
	char err[256];

	if (store_args_vec(a, &v, err, sizeof err) < 0)
		fail_msg("%s", err);
	redisReply *r = redisCommandArgv(rc, v.argc, v.argv, v.len);
	store_vec_free(&v);
	assert_non_null(r);
	if (r->type == REDIS_REPLY_ERROR)
		fail_msg("%s", r->str);
	return r;
}

static struct store_keys keys;

static long long
redispatch(const char *consumer, const char *sid, long long expected)
{
	struct store_args a;

	store_args_init(&a, STORE_REDISPATCH);
	store_args_consumer(&a, &keys, H_GROUP, consumer);
	store_arg(&a, STORE_REDISPATCH_ID, sid);
	store_arg_ll(&a, STORE_REDISPATCH_EXPECTED, expected);
	redisReply *r = eval(&a);
	assert_int_equal(r->type, REDIS_REPLY_INTEGER);
	long long n = r->integer;
	freeReplyObject(r);
	return n;
}

/* An entry with `fields` (space-separated names and values), delivered to
 * w1 once (XREADGROUP); its stream id into sid. */
static void
deliver(const char *fields, char *sid, size_t n)
{
	char copy[512], *save = NULL;
	const char *argv[32] = {"XADD", H_JOBS, "*"};
	int argc = 3;

	snprintf(copy, sizeof copy, "%s", fields);
	for (char *w = strtok_r(copy, " ", &save); w != NULL && argc < 32;
	    w = strtok_r(NULL, " ", &save))
		argv[argc++] = w;
	redisReply *r = redisCommandArgv(rc, argc, argv, NULL);

	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_STRING);
	snprintf(sid, n, "%s", r->str);
	freeReplyObject(r);
	r = redisCommand(rc, "XREADGROUP GROUP %s w1 COUNT 1 STREAMS %s >", H_GROUP, H_JOBS);
	assert_non_null(r);
	freeReplyObject(r);
	assert_int_equal(pending_deliveries(sid, NULL, 0), 1);
}

/*
 * R9 + R12: a re-dispatch whose reply was lost is sent again with the same
 * expected count; it must not count a second delivery (the old script did,
 * and the entry went dead early as too-many-deliveries).
 */
static void
test_redispatch_resend_counts_once(void **state)
{
	char sid[64];
	(void)state;

	rc = h_redis_up(&redis);
	assert_int_equal(store_keys_init(&keys, H_PREFIX, "w1"), 0);
	redisReply *r = redisCommand(rc, "XGROUP CREATE %s %s 0 MKSTREAM", H_JOBS, H_GROUP);
	freeReplyObject(r);

	deliver("id dl-rd", sid, sizeof sid);
	assert_int_equal(redispatch("w1", sid, 1), 2);
	assert_int_equal(redispatch("w1", sid, 1), 2);	/* the resend */
	assert_int_equal(pending_deliveries(sid, NULL, 0), 2);
	assert_int_equal(redispatch("w1", sid, 2), 3);	/* the next re-dispatch */
	assert_int_equal(pending_deliveries(sid, NULL, 0), 3);
	assert_int_equal(redispatch("w2", sid, 3), 0);	/* not w2's */
	assert_int_equal(pending_deliveries(sid, NULL, 0), 3);

	/* an entry handed back: its count goes on from priorDeliveries */
	deliver("id dl-rd2 priorDeliveries 5", sid, sizeof sid);
	assert_int_equal(redispatch("w1", sid, 6), 7);
	assert_int_equal(redispatch("w1", sid, 6), 7);
	assert_int_equal(pending_deliveries(sid, NULL, 0), 2);

	/* deleted from the stream while pending: not ours to run */
	deliver("id dl-rd3", sid, sizeof sid);
	freeReplyObject(redisCommand(rc, "XDEL %s %s", H_JOBS, sid));
	assert_int_equal(redispatch("w1", sid, 1), 0);
}

/* The hand-back, atomically and only while the entry is ours. */
static void
test_handback_script(void **state)
{
	char sid[64];
	struct store_args a;
	(void)state;

	rc = h_redis_up(&redis);
	assert_int_equal(store_keys_init(&keys, H_PREFIX, "w1"), 0);
	freeReplyObject(redisCommand(rc, "XGROUP CREATE %s %s 0 MKSTREAM", H_JOBS, H_GROUP));
	freeReplyObject(redisCommand(rc, "HSET " H_PREFIX ":decision:dl-hb state auth_wait"));
	deliver("id dl-hb priorDeliveries 2 traceparent 00-0af7651916cd43dd8448eb211c80319c-"
	    "b7ad6b7169203331-01", sid, sizeof sid);
	freeReplyObject(redisCommand(rc, "XCLAIM %s %s w1 0 %s", H_JOBS, H_GROUP, sid));

	for (int mine = 0; mine < 2; mine++) {
		store_args_init(&a, STORE_HANDBACK);
		store_args_consumer(&a, &keys, H_GROUP, mine ? "w1" : "w2");
		store_arg(&a, STORE_HANDBACK_HASH, H_PREFIX ":decision:dl-hb");
		store_arg(&a, STORE_HANDBACK_ID, sid);
		store_arg(&a, STORE_HANDBACK_RECORD_ID, "dl-hb");
		redisReply *r = eval(&a);
		assert_int_equal(r->type, REDIS_REPLY_ARRAY);
		if (!mine) {
			/* not w2's: nothing added, nothing acked */
			assert_int_equal(r->elements, 1);
			assert_int_equal(r->element[0]->integer, 0);
			assert_int_equal(h_stream_count(rc, H_JOBS, NULL, NULL), 1);
			assert_int_equal(pending_deliveries(sid, NULL, 0), 2);
			freeReplyObject(r);
			continue;
		}
		assert_int_equal(r->elements, 3);
		assert_int_equal(r->element[0]->integer, 1);
		const char *nsid = r->element[1]->str;
		assert_string_equal(r->element[2]->str, "4");	/* 2 by Redis + 2 before */
		char *entry = hash_field("dl-hb", "entry"), *prior = entry_field(nsid, "priorDeliveries");
		char *tp = entry_field(nsid, "traceparent"), *rid = entry_field(nsid, "id");
		assert_string_equal(entry, nsid);
		assert_string_equal(prior, "4");
		assert_non_null(tp);
		assert_string_equal(rid, "dl-hb");
		free(entry), free(prior), free(tp), free(rid);
		assert_int_equal(pending_deliveries(sid, NULL, 0), 0);
		assert_int_equal(h_pending_count(rc, H_JOBS, H_GROUP), 0);	/* the new one undelivered */
		assert_int_equal(h_stream_count(rc, H_JOBS, NULL, NULL), 2);
		freeReplyObject(r);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_redispatch_resend_counts_once, teardown),
		cmocka_unit_test_teardown(test_handback_script, teardown),
		cmocka_unit_test_teardown(test_connect_hang_curl, teardown),
		cmocka_unit_test_teardown(test_slow_answer_after_deadline_decides, teardown),
		cmocka_unit_test_teardown(test_pdp_bounded_by_deadline, teardown),
		cmocka_unit_test_teardown(test_token_wait_ends_at_deadline, teardown),
		cmocka_unit_test_teardown(test_token_wait_hands_back, teardown),
	};

	if (getenv("ITEST_FILTER") != NULL)	/* e.g. ITEST_FILTER='test_token*' */
		cmocka_set_test_filter(getenv("ITEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
