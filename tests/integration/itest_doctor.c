/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_doctor: `warrantctl doctor` (issue 25 item 7) against a real
 * redis-server with ACL users, fake_idp and fake_pdp: one line per check,
 * "ok" or "FAIL: why", exit 1 on any failure -- a Redis user whose password
 * is wrong, one whose ACL lacks a command its role needs (asked with ACL
 * DRYRUN from a connection that may), an action whose host does not
 * resolve, an IdP that refuses the client, a PDP that answers 503.
 * Issue 38 item 3: what the worker will do, tried -- the target stopped,
 * Redis at appendonly no or maxmemory-policy allkeys-lru, another live
 * worker under the consumer name; and no log line in the output. And the
 * rest of it: the Functions library missing or of another version, a name
 * whose claim (P:owner:<name>) and heartbeat are two instances', and a
 * monitor user refused something `status` reads.
 */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define CLIENT_ID	"warrantd-doctor"
#define SECRET		"doctor-secret-0123456789"
#define PDP_PATH	"/v1/data/warrant/allow"
/* what the monitor user needs beyond setup's for `status` */
#define MON_STATUS	"+xpending +xinfo|consumers +scan +get"

static struct h_redis redis;
static redisContext *C;
static struct h_fake idp, pdp, target;
static char *secret, *pw_op, *pw_mon, *pw_bad;

static int
setup(void **state)
{
	(void)state;
	secret = h_write_file("client-secret", SECRET "\n");
	pw_op = h_write_file("pw-op", "op-password\n");
	pw_mon = h_write_file("pw-mon", "mon-password\n");
	pw_bad = h_write_file("pw-bad", "not-the-password\n");
	if (!secret || !pw_op || !pw_mon || !pw_bad)
		return -1;
	const char *idp_args[] = {"--jwt-secret-file", h_data("test-hs256.secret"),
	    "--client-id", CLIENT_ID, "--client-secret-file", secret, NULL};
	if (h_redis_start(&redis, 1) != 0 || (C = h_redis_connect(&redis)) == NULL ||
	    h_fake_start(&idp, "fake_idp", idp_args) != 0 || h_fake_start(&pdp, "fake_pdp", NULL) != 0 ||
	    h_fake_start(&target, "fake_target", NULL) != 0)
		return -1;
	/* op may do everything; mon reads, but not the PEL (XPENDING) */
	free(h_redis_str(C, "ACL SETUSER op on >op-password ~* &* +@all"));
	free(h_redis_str(C, "ACL SETUSER mon on >mon-password %%R~* +select +role +ping "
	    "+xinfo|groups +xrange +xrevrange +hgetall +zrange +xlen +zcard"));
	return 0;
}

static int
teardown(void **state)
{
	static struct h_daemon none;	/* no daemon here; h_world_down wants one */

	(void)state;
	h_world_down(&none, 0, &C, &redis, &idp, &pdp, &target, (struct h_fake *)NULL);
	free(secret);
	free(pw_op);
	free(pw_mon);
	free(pw_bad);
	return 0;
}

/* The config: [redis] as the default user, [redis.operator] and
 * [redis.monitor] with the given password files, the IdP, the PDP, and
 * `extra` sections (another action). Caller frees. */
static char *
ini(const char *op_pw, const char *mon_pw, const char *extra)
{
	char sections[4096];

	snprintf(sections, sizeof sections,
	    "[redis.operator]\nusername = op\npassword_file = %s\n"
	    "[redis.monitor]\nusername = mon\npassword_file = %s\n"
	    "[oauth]\ntoken_url = %s/token\nclient_id = %s\nclient_secret_file = %s\n"
	    "[authz]\nurl = %s" PDP_PATH "\ntimeout_ms = 2000\n%s",
	    op_pw, mon_pw, idp.url, CLIENT_ID, secret, pdp.url, extra ? extra : "");
	struct h_daemon_opts o = {.redis_sock = redis.sock, .target_url = target.url,
	    .sections = sections};
	char *text = h_daemon_ini(&o), *path;

	assert_non_null(text);
	path = h_write_file("doctor.ini", text);
	assert_non_null(path);
	free(text);
	return path;
}

static int
doctor(const char *cfg, char **out)
{
	char *argv[] = {(char *)h_bin("warrantctl"), "-c", (char *)cfg, "doctor", NULL};
	int rc = h_run(argv, 60000, out);

	printf("itest_doctor: exit %d:\n%s", rc, *out);
	return rc;
}

static void
has(const char *out, const char *line)
{
	if (strstr(out, line) == NULL)
		fail_msg("doctor said no \"%s\"", line);
}

/* Everything works: every line ok, exit 0. */
static void
test_all_ok(void **state)
{
	char *cfg, *out;
	(void)state;

	char scoped[512];
	free(h_redis_str(C, "ACL SETUSER mon " MON_STATUS));
	/* an action with a token of its own scope: asked for too */
	snprintf(scoped, sizeof scoped, "[action gate.scoped]\nurl = %s/x\nauth = oauth\n"
	    "scope = gates\n", target.url);
	cfg = ini(pw_op, pw_mon, scoped);
	assert_int_equal(doctor(cfg, &out), 0);
	has(out, "/token for action gate.scoped: ok (lives ");
	has(out, "config: ok");
	has(out, "redis user default [redis]: ok\n");
	has(out, "redis version: ok 7.");
	has(out, "redis user op [redis.operator]: ok\n");
	has(out, "redis user mon [redis.monitor]: ok\n");
	has(out, "/token: ok (lives ");
	has(out, PDP_PATH ": ok (answered allow)");
	has(out, "redis appendonly: ok (yes)\n");
	has(out, "redis maxmemory-policy: ok (noeviction)\n");
	has(out, "redis replicas: INFO: none");
	has(out, "consumer name w1: ok (no live heartbeat: free)\n");
	has(out, "redis functions: ok (library warrantd ");
	has(out, "action gate.open target: ok (http://127.0.0.1:");
	assert_null(strstr(out, "FAIL"));
	assert_null(strstr(out, "WARN"));
	assert_null(strstr(out, "level="));	/* no log line mixed in */
	free(out);
	free(cfg);
	free(h_redis_str(C, "ACL SETUSER mon -xpending -xinfo|consumers -scan -get"));
}

/* Each failure is its own line, and the exit is 1. */
static void
test_failures(void **state)
{
	char *cfg, *out;
	(void)state;

	assert_int_equal(h_fake_post(&pdp, "/_policy", "{\"mode\": \"status\", \"status\": 503}"),
	    200);
	cfg = ini(pw_bad, pw_mon, "[action gate.far]\nurl = https://no-such-host.invalid/x\n"
	    "auth = none\n");
	assert_int_equal(doctor(cfg, &out), 1);
	has(out, "redis user default [redis]: ok\n");
	has(out, "redis user op [redis.operator]: FAIL: cannot connect or log in");
	has(out, "redis user mon [redis.monitor]: FAIL: its ACL refuses XPENDING");
	has(out, PDP_PATH ": FAIL: HTTP 503");
	has(out, "action gate.open target: ok");
	has(out, "action gate.far target: FAIL: https://no-such-host.invalid:443/: ");
	free(out);
	free(cfg);
	assert_int_equal(h_fake_post(&pdp, "/_reset", "{}"), 200);

	/* an IdP that does not know the client */
	char *wrong = h_write_file("client-secret-wrong", "wrong\n");
	char extra[512];
	assert_non_null(wrong);
	snprintf(extra, sizeof extra, "client_secret_file = %s\n", wrong);
	cfg = ini(pw_op, pw_mon, NULL);
	char *text = h_read_file(cfg);
	assert_non_null(text);
	char *at = strstr(text, "client_secret_file = ");
	assert_non_null(at);
	char fixed[8192];
	snprintf(fixed, sizeof fixed, "%.*s%s%s", (int)(at - text), text, extra,
	    strchr(at, '\n') + 1);
	free(cfg);
	cfg = h_write_file("doctor-wrong.ini", fixed);
	assert_int_equal(doctor(cfg, &out), 1);
	has(out, "/token: FAIL: no token");
	free(out);
	free(cfg);
	free(text);
	free(wrong);
}

/* What the worker will meet: the target stopped, the server's settings,
 * the consumer name held by another live worker. */
static void
test_what_the_worker_meets(void **state)
{
	char *cfg, *out;
	(void)state;

	free(h_redis_str(C, "ACL SETUSER mon " MON_STATUS));
	cfg = ini(pw_op, pw_mon, NULL);
	h_fake_stop(&target);
	assert_int_equal(doctor(cfg, &out), 1);
	has(out, "action gate.open target: FAIL: http://127.0.0.1:");
	free(out);
	assert_int_equal(h_fake_start(&target, "fake_target", NULL), 0);
	free(cfg);
	cfg = ini(pw_op, pw_mon, NULL);		/* its new port */

	free(h_redis_str(C, "CONFIG SET appendonly no"));
	assert_int_equal(doctor(cfg, &out), 1);
	has(out, "redis appendonly: FAIL: no: a restart loses");
	free(out);
	free(h_redis_str(C, "CONFIG SET appendonly yes"));

	free(h_redis_str(C, "CONFIG SET maxmemory-policy allkeys-lru"));
	assert_int_equal(doctor(cfg, &out), 1);
	has(out, "redis maxmemory-policy: FAIL: allkeys-lru: Redis may evict");
	free(out);
	free(h_redis_str(C, "CONFIG SET maxmemory-policy noeviction"));

	/* another worker's live heartbeat under our name */
	assert_int_equal(h_redis_int(C, "HSET warrant:consumer:w1 host elsewhere pid 4242"), 2);
	assert_int_equal(doctor(cfg, &out), 1);
	has(out, "consumer name w1: FAIL: another live worker holds it (host elsewhere, pid 4242)");
	free(out);
	assert_int_equal(h_redis_int(C, "DEL warrant:consumer:w1"), 1);

	/* a collision: the name's claim is one instance's, its heartbeat
	 * another's (two workers under one name) */
	free(h_redis_str(C, "SET warrant:owner:w1 %s PX 60000", "aaaa1111 1000"));
	assert_int_equal(h_redis_int(C, "HSET warrant:consumer:w1 host elsewhere pid 4242 "
	    "instance bbbb2222"), 3);
	assert_int_equal(doctor(cfg, &out), 1);
	has(out, "consumer name w1: FAIL: collision: the name's claim is instance aaaa1111's, "
	    "its heartbeat instance bbbb2222's");
	free(out);
	assert_int_equal(h_redis_int(C, "DEL warrant:consumer:w1 warrant:owner:w1"), 2);

	/* the Functions library missing, then of another version */
	free(h_redis_str(C, "FUNCTION DELETE warrantd"));
	assert_int_equal(doctor(cfg, &out), 1);
	has(out, "redis functions: FAIL: the library warrantd is not loaded: the worker refuses "
	    "to start (exit 76); load it as an administrator with warrantctl functions load\n");
	free(out);
	redisReply *r = redisCommand(C, "FUNCTION LOAD %s", "#!lua name=warrantd\n"
	    "redis.register_function{function_name = 'warrantd_version', callback = "
	    "function() return '0000000000000000' end, flags = {'no-writes'}}\n");
	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_STRING);
	freeReplyObject(r);
	assert_int_equal(doctor(cfg, &out), 1);
	has(out, "redis functions: FAIL: the library warrantd is version 0000000000000000, this "
	    "build needs ");
	has(out, "warrantctl functions load\n");
	free(out);
	free(h_redis_str(C, "FUNCTION DELETE warrantd"));
	assert_int_equal(h_redis_load_functions(C), 0);

	/* the monitor user refused what `status` reads (XINFO CONSUMERS) */
	free(h_redis_str(C, "ACL SETUSER mon -xinfo|consumers"));
	assert_int_equal(doctor(cfg, &out), 1);
	has(out, "redis user mon [redis.monitor]: FAIL: its ACL refuses XINFO");
	free(out);
	free(h_redis_str(C, "ACL SETUSER mon +xinfo|consumers"));

	/* all good again: exit 0 */
	assert_int_equal(doctor(cfg, &out), 0);
	assert_null(strstr(out, "FAIL"));
	free(out);
	free(cfg);
	free(h_redis_str(C, "ACL SETUSER mon -xpending -xinfo|consumers -scan -get"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_ok),
		cmocka_unit_test(test_failures),
		cmocka_unit_test(test_what_the_worker_meets),
	};

	return cmocka_run_group_tests_name("doctor", tests, setup, teardown);
}
