/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_sentinel: warrantd behind Redis Sentinel (issue 13). One primary,
 * one replica and three sentinels of Debian's redis-server on 127.0.0.1;
 * 2,000 jobs flowing through two workers configured with [redis] sentinels
 * and master_name; the primary is SIGKILLed mid-run and the sentinels fail
 * over to the replica. Afterwards every job is in a terminal state on the new
 * primary, none is lost, the PEL is empty; duplicate executions are counted
 * and printed (replication is asynchronous: a result the old primary
 * acknowledged but had not yet sent to the replica is executed again).
 * test_shards_failover does the same with `[redis] shards = 3` (900 jobs):
 * each job once, but for results the dead primary had not replicated.
 * Skips, saying why, when redis-sentinel is not installed.
 */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "redis/cluster.h"
#include "harness.h"

#define WAIT_MS		120000	/* a failover takes seconds; 2 cores, ASan */
#define PREFIX		"warrant"
#define JOBS		2000
#define NSENT		3

struct node {
	pid_t pid;
	int port;
	char dir[512];
};

static struct node primary, replica, sent[NSENT];
static const char *run = "";	/* each test's nodes in their own directories */
static struct h_fake target;
static struct h_daemon workers[2];

static redisContext *
node_connect(const struct node *n)
{
	return h_redis_connect_tcp(n->port);
}

/* One node through the harness's helper (shared with itest_cluster). */
static void
node_start(struct node *n, const char *name, const char *conf, int flags)
{
	struct h_rnode r;

	assert_int_equal(h_rnode_start(&r, name, conf, flags), 0);
	n->pid = r.pid;
	n->port = r.port;
	snprintf(n->dir, sizeof n->dir, "%s", r.dir);
}

static void
start_data_node(struct node *n, const char *name, int replica_of)
{
	char text[512], extra[64] = "";

	if (replica_of > 0)
		snprintf(extra, sizeof extra, "replicaof 127.0.0.1 %d\n", replica_of);
	/* the worker's own ACL user: test_deposed_primary turns `default` off */
	snprintf(text, sizeof text, "save \"\"\nappendonly yes\nappendfsync no\n"
	    "user worker on >worker-pass ~* &* +@all\n%s", extra);
	node_start(n, name, text, 0);
}

static void
start_sentinel(struct node *n, int i)
{
	char text[512], name[32];

	snprintf(name, sizeof name, "%ssentinel-%d", run, i);
	snprintf(text, sizeof text, "sentinel monitor mymaster 127.0.0.1 %d 2\n"
	    "sentinel down-after-milliseconds mymaster 1000\n"
	    "sentinel failover-timeout mymaster 10000\n"
	    "sentinel parallel-syncs mymaster 1\n", primary.port);
	node_start(n, name, text, H_RNODE_SENTINEL);
}

/* The primary's port according to sentinel i, or -1. */
static int
sentinel_says(int i)
{
	redisContext *c = node_connect(&sent[i]);
	redisReply *r = c ? redisCommand(c, "SENTINEL get-master-addr-by-name mymaster") : NULL;
	int port = -1;

	if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
		port = atoi(r->element[1]->str);
	freeReplyObject(r);
	if (c)
		redisFree(c);
	return port;
}

static int
sentinels_see_replica(void *arg)
{
	(void)arg;
	redisContext *c = node_connect(&sent[0]);
	redisReply *r = c ? redisCommand(c, "SENTINEL replicas mymaster") : NULL;
	int ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 1;

	freeReplyObject(r);
	if (c)
		redisFree(c);
	return ok;
}

static int
failed_over(void *arg)
{
	(void)arg;
	return sentinel_says(0) == replica.port && sentinel_says(1) == replica.port;
}

struct states {
	redisContext *c;
	int terminal, done;
};

static int
all_terminal(void *arg)
{
	struct states *s = arg;
	s->terminal = s->done = 0;
	for (int i = 0; i < JOBS; i++) {
		char key[64];
		snprintf(key, sizeof key, PREFIX ":decision:sn-%04d", i);
		char *st = h_hget(s->c, key, "state");
		if (st && (!strcmp(st, "done") || !strcmp(st, "expired") || !strcmp(st, "denied") ||
		    !strcmp(st, "failed") || !strcmp(st, "dead")))
			s->terminal++;
		s->done += st && !strcmp(st, "done");
		free(st);
	}
	return s->terminal == JOBS;
}

static long long
target_total(void)
{
	json_t *st = h_fake_json(&target, "/_stats");
	long long n = json_integer_value(json_object_get(st, "total"));
	json_decref(st);
	return n;
}

static int
target_reached(void *arg)
{
	return target_total() >= *(long long *)arg;
}


static void
test_failover(void **state)
{
	char *path = h_which("redis-sentinel");
	(void)state;

	if (path == NULL)
		h_skip("redis-sentinel is not installed (Debian package redis-sentinel)");
	free(path);
	start_data_node(&primary, "primary", 0);
	start_data_node(&replica, "replica", primary.port);
	for (int i = 0; i < NSENT; i++)
		start_sentinel(&sent[i], i);
	assert_int_equal(h_wait_until(sentinels_see_replica, NULL, WAIT_MS), 0);
	/* synced (the library came with it): a failover now keeps the library */
	assert_int_equal(h_wait_until(h_node_has_library, &replica.port, WAIT_MS), 0);
	assert_int_equal(h_fake_start(&target, "fake_target", NULL), 0);
	assert_int_equal(h_fake_script(&target, "{\"default\": {\"delay_ms\": 5}}"), 0);

	/* 2,000 jobs on the primary, replicated before anything runs */
	redisContext *p = node_connect(&primary);
	assert_non_null(p);
	long long now = h_now_ms();
	for (int i = 0; i < JOBS; i++) {
		char id[32];
		snprintf(id, sizeof id, "sn-%04d", i);
		char *js = h_record_json(id, "gate.open", "north/1", now - 1000, now + 3600 * 1000LL,
		    0, NULL);
		assert_int_equal(h_decide(p, PREFIX, id, js, 0), 0);
		free(js);
	}
	assert_true(h_redis_int(p, "WAIT 1 10000") == 1);
	redisFree(p);

	char redis_extra[256];
	snprintf(redis_extra, sizeof redis_extra, "sentinels = 127.0.0.1:%d, 127.0.0.1:%d, "
	    "127.0.0.1:%d\nmaster_name = mymaster\nallow_hosts = 127.0.0.1:%d, 127.0.0.1:%d\n",
	    sent[0].port, sent[1].port, sent[2].port, primary.port, replica.port);
	for (int w = 0; w < 2; w++) {
		struct h_daemon_opts o = {
			.target_url = target.url,
			.consumer = w == 0 ? "w1" : "w2", .signature_off = 1,
			.redis_extra = redis_extra, .claim_idle_ms = 3000,
			.daemon_extra = "max_in_flight = 16\n",
		};
		char *ini = h_daemon_ini(&o);
		assert_non_null(ini);
		assert_int_equal(h_daemon_start(&workers[w], ini), 0);
		free(ini);
	}

	long long mid = JOBS / 4;
	assert_int_equal(h_wait_until(target_reached, &mid, WAIT_MS), 0);
	assert_int_equal(kill(primary.pid, SIGKILL), 0);
	int64_t killed_at = h_now_ms();
	assert_int_equal(h_wait_until(failed_over, NULL, WAIT_MS), 0);
	printf("    primary SIGKILLed after %lld calls; the sentinels named the replica after "
	    "%lld ms\n", target_total(), h_now_ms() - killed_at);

	struct states s = {node_connect(&replica), 0, 0};
	assert_non_null(s.c);
	if (h_wait_until(all_terminal, &s, WAIT_MS) != 0)
		fail_msg("%d of %d jobs terminal on the new primary", s.terminal, JOBS);
	assert_int_equal(h_pending_count(s.c, PREFIX ":jobs", "workers"), 0);
	json_t *st = h_fake_json(&target, "/_stats");
	long long dups = json_integer_value(json_object_get(st, "duplicates"));
	long long keys = json_integer_value(json_object_get(st, "distinct_keys"));
	json_decref(st);
	printf("    after the failover: %d of %d done, %lld distinct keys at the target, %lld "
	    "duplicate executions (results the old primary had not yet replicated)\n",
	    s.done, JOBS, keys, dups);
	assert_int_equal(keys, JOBS);	/* none lost */
	/* every record's deadline is an hour away and the target answers 200:
	 * anything but done is a defect */
	assert_int_equal(s.done, JOBS);
	long long extra = h_assert_each_once(&target, "sn-", JOBS, killed_at);
	assert_int_equal(extra, dups);	/* the fake's own count agrees */
	assert_true(h_daemon_wait_log(&workers[0], "event=redis.primary", 1000) == 0 ||
	    h_daemon_wait_log(&workers[1], "event=redis.primary", 1000) == 0);
	redisFree(s.c);
	for (int w = 0; w < 2; w++) {
		int stc = h_daemon_stop(&workers[w]);
		assert_true(WIFEXITED(stc) && WEXITSTATUS(stc) == 0);
		assert_true(h_daemon_log_clean(&workers[w]));
	}
	h_fake_stop(&target);
	for (int i = 0; i < NSENT; i++)
		h_stop(sent[i].pid, SIGTERM, 5000);
	h_stop(replica.pid, SIGTERM, 5000);
	h_stop(primary.pid, SIGTERM, 1000);
}

struct job_wait {
	const struct node *n;
	const char *id;
};

/* test_deposed_primary runs Sentinel with shards: a record's prefix is
 * its shard's, {warrant:s} (warrantd(7) §2). */
#define DP_SHARDS	2

static void
shard_prefix(const char *id, char *buf, size_t n)
{
	assert_int_equal(cluster_shard_prefix(buf, n, PREFIX,
	    cluster_shard_of(id, strlen(id), DP_SHARDS), DP_SHARDS), 0);
}

static int
job_done(void *arg)
{
	struct job_wait *w = arg;
	char key[96];
	redisContext *c = node_connect(w->n);
	char *st;

	if (c == NULL)
		return 0;
	char prefix[64];
	shard_prefix(w->id, prefix, sizeof prefix);
	snprintf(key, sizeof key, "%s:decision:%s", prefix, w->id);
	st = h_hget(c, key, "state");
	int done = st != NULL && strcmp(st, "done") == 0;
	free(st);
	redisFree(c);
	return done;
}

static void
decide_on(const struct node *n, const char *id)
{
	redisContext *c = node_connect(n);
	long long now = h_now_ms();

	assert_non_null(c);
	char *js = h_record_json(id, "gate.open", "north/1", now - 1000, now + 600000, 0, NULL);
	char prefix[64];
	shard_prefix(id, prefix, sizeof prefix);
	assert_int_equal(h_decide(c, prefix, id, js, 0), 0);
	free(js);
	redisFree(c);
}

/*
 * Issue 27 item 3: a primary the sentinels lose while the worker does not.
 * The sentinels are locked out of the primary (its `default` user off and
 * its clients killed) while the worker's own ACL user still works there:
 * they fail over to the replica and cannot demote the old primary, which
 * goes on answering ROLE "master". The worker must leave it (it asks the
 * sentinels every 2 s) and run a job queued on the new primary, in bounded
 * time; it never hears READONLY. With shards (2 on one Redis: one shared
 * blocking read), the Sentinel + shards case.
 */
static void
test_deposed_primary(void **state)
{
	char *path = h_which("redis-sentinel");
	(void)state;

	if (path == NULL)
		h_skip("redis-sentinel is not installed (Debian package redis-sentinel)");
	free(path);
	run = "dp-";
	start_data_node(&primary, "dp-primary", 0);
	start_data_node(&replica, "dp-replica", primary.port);
	for (int i = 0; i < NSENT; i++)
		start_sentinel(&sent[i], i);
	assert_int_equal(h_wait_until(sentinels_see_replica, NULL, WAIT_MS), 0);
	/* synced (the library came with it): a failover now keeps the library */
	assert_int_equal(h_wait_until(h_node_has_library, &replica.port, WAIT_MS), 0);
	assert_int_equal(h_fake_start(&target, "fake_target", NULL), 0);
	char *pw = h_write_file("worker-pass", "worker-pass\n");
	assert_non_null(pw);
	char redis_extra[512];
	snprintf(redis_extra, sizeof redis_extra, "sentinels = 127.0.0.1:%d, 127.0.0.1:%d, "
	    "127.0.0.1:%d\nmaster_name = mymaster\nusername = worker\npassword_file = %s\n"
	    "shards = %d\nallow_hosts = 127.0.0.1:%d, 127.0.0.1:%d\n", sent[0].port, sent[1].port,
	    sent[2].port, pw, DP_SHARDS, primary.port, replica.port);
	free(pw);
	struct h_daemon_opts o = {
		.target_url = target.url, .consumer = "w1",
		.signature_off = 1, .redis_extra = redis_extra, .claim_idle_ms = 3000,
	};
	char *ini = h_daemon_ini(&o);
	assert_non_null(ini);
	assert_int_equal(h_daemon_start(&workers[0], ini), 0);
	free(ini);
	decide_on(&primary, "dp-before");
	struct job_wait before = {&primary, "dp-before"};
	assert_int_equal(h_wait_until(job_done, &before, WAIT_MS), 0);

	/* the partition, as the sentinels see it */
	redisContext *p = node_connect(&primary);
	assert_non_null(p);
	freeReplyObject(redisCommand(p, "ACL SETUSER default off"));
	freeReplyObject(redisCommand(p, "CLIENT KILL USER default"));
	redisFree(p);
	assert_int_equal(h_wait_until(failed_over, NULL, WAIT_MS), 0);
	int64_t failed_at = h_now_ms();
	/* the old primary still thinks it is one */
	p = node_connect(&primary);
	assert_non_null(p);
	freeReplyObject(redisCommand(p, "AUTH worker worker-pass"));
	redisReply *role = redisCommand(p, "ROLE");
	assert_true(role != NULL && role->type == REDIS_REPLY_ARRAY &&
	    strcmp(role->element[0]->str, "master") == 0);
	freeReplyObject(role);
	redisFree(p);

	decide_on(&replica, "dp-after");
	struct job_wait after = {&replica, "dp-after"};
	if (h_wait_until(job_done, &after, 20000) != 0)
		fail_msg("the worker stayed on the deposed primary");
	printf("    a job queued on the new primary ran %lld ms after the sentinels named it\n",
	    h_now_ms() - failed_at);
	assert_true(h_daemon_log_has(&workers[0], "event=redis.reconnect"));
	int stc = h_daemon_stop(&workers[0]);
	assert_true(WIFEXITED(stc) && WEXITSTATUS(stc) == 0);
	h_fake_stop(&target);
	for (int i = 0; i < NSENT; i++)
		h_stop(sent[i].pid, SIGTERM, 5000);
	h_stop(replica.pid, SIGTERM, 5000);
	h_stop(primary.pid, SIGTERM, 5000);
}

/* ---- issue 27 item 7: Sentinel with shards, a failover under load ---- */

#define SS_SHARDS	3
#define SS_JOBS		900

static void
ss_prefix(const char *id, char *buf, size_t n)
{
	assert_int_equal(cluster_shard_prefix(buf, n, PREFIX,
	    cluster_shard_of(id, strlen(id), SS_SHARDS), SS_SHARDS), 0);
}

static int
ss_all_terminal(void *arg)
{
	struct states *s = arg;
	char id[32], p[64], key[128];

	s->terminal = s->done = 0;
	for (int i = 0; i < SS_JOBS; i++) {
		snprintf(id, sizeof id, "ss-%04d", i);
		ss_prefix(id, p, sizeof p);
		snprintf(key, sizeof key, "%s:decision:%s", p, id);
		char *st = h_hget(s->c, key, "state");
		if (st && (!strcmp(st, "done") || !strcmp(st, "expired") || !strcmp(st, "denied") ||
		    !strcmp(st, "failed") || !strcmp(st, "dead")))
			s->terminal++;
		s->done += st && !strcmp(st, "done");
		free(st);
	}
	return s->terminal == SS_JOBS;
}

/*
 * `[redis] shards = 3` behind Sentinel (one Redis holds every shard's
 * keys, one blocking read over their streams): 900 jobs replicated, two
 * workers, the primary SIGKILLed a quarter of the way in and the replica
 * promoted by the sentinels. Every job ends done on the new primary, every
 * shard's PEL is empty, and a job called twice is only one whose first call
 * came before the kill (h_assert_each_once).
 */
static void
test_shards_failover(void **state)
{
	char *path = h_which("redis-sentinel");
	(void)state;

	if (path == NULL)
		h_skip("redis-sentinel is not installed (Debian package redis-sentinel)");
	free(path);
	run = "ss-";
	start_data_node(&primary, "ss-primary", 0);
	start_data_node(&replica, "ss-replica", primary.port);
	for (int i = 0; i < NSENT; i++)
		start_sentinel(&sent[i], i);
	assert_int_equal(h_wait_until(sentinels_see_replica, NULL, WAIT_MS), 0);
	/* synced (the library came with it): a failover now keeps the library */
	assert_int_equal(h_wait_until(h_node_has_library, &replica.port, WAIT_MS), 0);
	assert_int_equal(h_fake_start(&target, "fake_target", NULL), 0);
	assert_int_equal(h_fake_script(&target, "{\"default\": {\"delay_ms\": 5}}"), 0);

	redisContext *p = node_connect(&primary);
	assert_non_null(p);
	long long now = h_now_ms();
	for (int i = 0; i < SS_JOBS; i++) {
		char id[32], pre[64];
		snprintf(id, sizeof id, "ss-%04d", i);
		ss_prefix(id, pre, sizeof pre);
		char *js = h_record_json(id, "gate.open", "north/1", now - 1000, now + 3600 * 1000LL,
		    0, NULL);
		assert_int_equal(h_decide(p, pre, id, js, 0), 0);
		free(js);
	}
	assert_true(h_redis_int(p, "WAIT 1 10000") == 1);
	redisFree(p);

	char redis_extra[256];
	snprintf(redis_extra, sizeof redis_extra, "sentinels = 127.0.0.1:%d, 127.0.0.1:%d, "
	    "127.0.0.1:%d\nmaster_name = mymaster\nshards = %d\nallow_hosts = 127.0.0.1:%d, "
	    "127.0.0.1:%d\n", sent[0].port, sent[1].port, sent[2].port, SS_SHARDS, primary.port,
	    replica.port);
	for (int w = 0; w < 2; w++) {
		struct h_daemon_opts o = {
			.target_url = target.url,
			.consumer = w == 0 ? "w1" : "w2", .signature_off = 1,
			.redis_extra = redis_extra, .claim_idle_ms = 3000,
			.daemon_extra = "max_in_flight = 16\n",
		};
		char *ini = h_daemon_ini(&o);
		assert_non_null(ini);
		assert_int_equal(h_daemon_start(&workers[w], ini), 0);
		free(ini);
	}

	long long mid = SS_JOBS / 4;
	assert_int_equal(h_wait_until(target_reached, &mid, WAIT_MS), 0);
	assert_int_equal(kill(primary.pid, SIGKILL), 0);
	int64_t killed_at = h_now_ms();
	assert_int_equal(h_wait_until(failed_over, NULL, WAIT_MS), 0);
	printf("    shards = %d: primary SIGKILLed after %lld calls; the sentinels named the "
	    "replica after %lld ms\n", SS_SHARDS, target_total(), h_now_ms() - killed_at);

	struct states s = {node_connect(&replica), 0, 0};
	assert_non_null(s.c);
	if (h_wait_until(ss_all_terminal, &s, WAIT_MS) != 0)
		fail_msg("%d of %d jobs terminal on the new primary", s.terminal, SS_JOBS);
	assert_int_equal(s.done, SS_JOBS);
	for (int i = 0; i < SS_SHARDS; i++) {
		char pre[64];
		assert_int_equal(cluster_shard_prefix(pre, sizeof pre, PREFIX, (unsigned)i,
		    SS_SHARDS), 0);
		assert_int_equal(h_pending_count(s.c, h_key(pre, "jobs"), "workers"), 0);
	}
	long long extra = h_assert_each_once(&target, "ss-", SS_JOBS, killed_at);
	printf("    after the failover: %d of %d done, %lld re-run (each first called before "
	    "the kill: results the old primary had not replicated), %lld s in all\n", s.done,
	    SS_JOBS, extra, (h_now_ms() - killed_at) / 1000);
	redisFree(s.c);
	for (int w = 0; w < 2; w++)
		assert_true(h_daemon_stop_clean(&workers[w]));
	h_fake_stop(&target);
	for (int i = 0; i < NSENT; i++)
		h_stop(sent[i].pid, SIGTERM, 5000);
	h_stop(replica.pid, SIGTERM, 5000);
	h_stop(primary.pid, SIGTERM, 1000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_failover),
		cmocka_unit_test(test_deposed_primary),
		cmocka_unit_test(test_shards_failover),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
