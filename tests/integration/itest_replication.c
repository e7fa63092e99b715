/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_replication: warrantd(7) R19 (issue 27 item 4) -- what a failover
 * loses, against a real redis-server primary and its replica (127.0.0.1 for
 * the replication link, unix sockets for the clients) and fake_target.
 *
 * Both tests: N records decided and replicated (WAIT 1), then the replica
 * SIGSTOPped and its link cut (CLIENT KILL TYPE replica: else the kernel
 * would hold what the primary sends it, for the replica to read once
 * resumed) -- a replica that lags -- and a worker started on the primary.
 *
 *   - wait_replicas = 0: the worker runs all N on the primary (done,
 *     acknowledged, replicated nowhere). The primary is SIGKILLed, the
 *     replica resumed and promoted (REPLICAOF NO ONE) and a worker pointed
 *     at it: none is lost, and each of the N is run again -- exactly N re-run,
 *     counted at the target by Idempotency-Key.
 *   - wait_replicas = 1: every call step waits for the stopped replica and
 *     is not called (event=job.unreplicated; the target sees nothing while
 *     the attempts are spent); after the same failover, with a new replica
 *     for the new primary, each of the N runs once: none re-run.
 *
 * Every process is ours, stopped by PID; every wait is a condition with a
 * timeout (harness.h).
 */
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"

#define NJOBS	12
#define ACTION	"gate.open"

static struct h_fake target;

/* A primary on a TCP port (the replication link) and a unix socket, or
 * a replica of `primary_port` (0: none). */
struct node {
	struct h_redis r;
	int port;
	redisContext *c;
};

static struct node prim, repl, repl2;
static struct h_daemon D;

static void
node_up(struct node *n, int primary_port)
{
	char extra[256];

	n->port = h_free_port();
	assert_true(n->port > 0);
	if (primary_port > 0)
		snprintf(extra, sizeof extra, "port %d\nbind 127.0.0.1\nreplicaof 127.0.0.1 %d\n",
		    n->port, primary_port);
	else	/* no 5 s wait before a replica's first sync */
		snprintf(extra, sizeof extra, "port %d\nbind 127.0.0.1\nrepl-diskless-sync-delay 0\n",
		    n->port);
	assert_int_equal(h_redis_start_conf(&n->r, 0, extra), 0);
	assert_non_null(n->c = h_redis_connect(&n->r));
}

static void
node_down(struct node *n)
{
	if (n->c != NULL)
		redisFree(n->c);
	n->c = NULL;
	if (n->r.pid > 0) {
		kill(n->r.pid, SIGCONT);	/* a stopped one cannot hear SIGTERM */
		h_redis_stop(&n->r);
	}
	memset(n, 0, sizeof *n);
}

static int
link_up(void *arg)
{
	struct node *n = arg;
	char *info = h_redis_str(n->c, "INFO replication");
	int up = info != NULL && strstr(info, "master_link_status:up") != NULL;

	free(info);
	return up;
}

static int
test_setup(void **state)
{
	(void)state;
	h_fake_reset(&target);
	return 0;
}

static int
test_teardown(void **state)
{
	(void)state;
	if (D.pid > 0)
		h_daemon_kill(&D);
	node_down(&repl2);
	node_down(&repl);
	node_down(&prim);
	return 0;
}

static int
group_setup(void **state)
{
	(void)state;
	return h_fake_start(&target, "fake_target", NULL);
}

static int
group_teardown(void **state)
{
	(void)state;
	h_fake_stop(&target);
	return 0;
}

static char *
ini(const struct node *n, const char *prefix, int wait_replicas)
{
	char extra[128];

	snprintf(extra, sizeof extra, "wait_replicas = %d\nwait_timeout_ms = 200\n",
	    wait_replicas);
	struct h_daemon_opts o = {
		.redis_sock = n->r.sock, .target_url = target.url, .prefix = prefix,
		.signature_off = 1, .redis_extra = extra,
		/* attempts enough to outlast the stopped replica */
		.max_attempts = 1000, .base_ms = 50, .cap_ms = 200,
	};
	return h_daemon_ini(&o);
}

static void
worker_up(const struct node *n, const char *prefix, int wait_replicas)
{
	char *text = ini(n, prefix, wait_replicas);

	assert_non_null(text);
	assert_int_equal(h_daemon_start(&D, text), 0);
	free(text);
}

/* A primary and its replica, NJOBS records decided on the primary and
 * replicated, then the replica stopped. */
static void
lagging_pair(const char *prefix)
{
	char id[64];
	long long now = h_now_ms();

	node_up(&prim, 0);
	node_up(&repl, prim.port);
	h_wait_for(link_up, &repl, H_WAIT_MS, "the replica's link to the primary");
	/* the group before the records, so the replica has both */
	char *ok = h_redis_str(prim.c, "XGROUP CREATE %s %s 0 MKSTREAM", h_key(prefix, "jobs"),
	    H_GROUP);
	assert_non_null(ok);
	free(ok);
	for (int i = 0; i < NJOBS; i++) {
		snprintf(id, sizeof id, "%s-%04d", prefix, i);
		char *js = h_record_json(id, ACTION, "north/1", now - 1000, now + 3600 * 1000LL, 0,
		    NULL);
		assert_non_null(js);
		assert_int_equal(h_decide(prim.c, prefix, id, js, 0), 0);
		free(js);
	}
	assert_int_equal(h_redis_int(prim.c, "WAIT 1 10000"), 1);
	assert_int_equal(kill(repl.r.pid, SIGSTOP), 0);
	/* and its link cut: what the primary sent a stopped replica would
	 * wait in the kernel's buffers, and the replica, resumed, would read
	 * it before it noticed the primary had died -- no lag at all */
	assert_int_equal(h_redis_int(prim.c, "CLIENT KILL TYPE replica"), 1);
}

struct states {
	redisContext *c;
	const char *prefix, *state;
	int min_attempts;	/* and at least that many attempts, when > 0 */
};

static int
all_in(void *arg)
{
	const struct states *s = arg;
	char id[64];

	for (int i = 0; i < NJOBS; i++) {
		snprintf(id, sizeof id, "%s-%04d", s->prefix, i);
		char *st = h_record_field(s->c, s->prefix, id, "state");
		char *at = h_record_field(s->c, s->prefix, id, "attempts");
		int ok = st != NULL && (s->state == NULL || strcmp(st, s->state) == 0) &&
		    (s->min_attempts <= 0 || (at != NULL && atoi(at) >= s->min_attempts));
		free(st);
		free(at);
		if (!ok)
			return 0;
	}
	/* a final state: and nothing left pending */
	return s->state == NULL || h_pending_count(s->c, h_key(s->prefix, "jobs"), H_GROUP) == 0;
}

/* The primary dies; the replica, resumed, is promoted. */
static void
failover(void)
{
	h_daemon_kill(&D);
	h_stop(prim.r.pid, SIGKILL, 5000);
	prim.r.pid = 0;
	assert_int_equal(kill(repl.r.pid, SIGCONT), 0);
	char *ok = h_redis_str(repl.c, "REPLICAOF NO ONE");
	assert_non_null(ok);
	free(ok);
}

static long long
calls_of(const char *prefix, int i)
{
	char id[64];

	snprintf(id, sizeof id, "%s-%04d", prefix, i);
	return h_count_calls(&target, id);
}

/* wait_replicas = 0: what the primary acknowledged and did not replicate
 * is run again on the promoted replica -- every one of the N, once more. */
static void
test_no_wait_reruns(void **state)
{
	const char *prefix = "rw0";
	(void)state;

	lagging_pair(prefix);
	worker_up(&prim, prefix, 0);
	struct states done = {prim.c, prefix, "done", 0};
	h_wait_for(all_in, &done, H_WAIT_MS, "every job done on the primary");
	for (int i = 0; i < NJOBS; i++)
		assert_int_equal(calls_of(prefix, i), 1);
	failover();
	worker_up(&repl, prefix, 0);
	done.c = repl.c;
	h_wait_for(all_in, &done, H_WAIT_MS, "every job done on the promoted replica");
	/* none lost, exactly N re-run */
	long long reruns = 0;
	for (int i = 0; i < NJOBS; i++) {
		assert_int_equal(calls_of(prefix, i), 2);
		reruns += calls_of(prefix, i) - 1;
	}
	assert_int_equal(reruns, NJOBS);
	assert_false(h_daemon_log_has(&D, "job.unreplicated"));
	h_daemon_down(&D);
}

/* wait_replicas = 1: no call while the replica cannot acknowledge the call
 * step; after the failover each job runs once: none re-run. */
static void
test_wait_none_rerun(void **state)
{
	const char *prefix = "rw1";
	(void)state;

	lagging_pair(prefix);
	worker_up(&prim, prefix, 1);
	/* every job has tried twice -- each try's WAIT timed out -- and the
	 * target saw none of them */
	struct states tried = {prim.c, prefix, NULL, 2};
	h_wait_for(all_in, &tried, H_WAIT_MS, "two unreplicated tries of every job");
	assert_int_equal(h_daemon_wait_log(&D, "event=job.unreplicated", 1000), 0);
	for (int i = 0; i < NJOBS; i++)
		assert_int_equal(calls_of(prefix, i), 0);
	failover();
	/* the new primary gets a replica of its own: wait_replicas = 1 holds */
	node_up(&repl2, repl.port);
	h_wait_for(link_up, &repl2, H_WAIT_MS, "the new replica's link");
	worker_up(&repl, prefix, 1);
	struct states done = {repl.c, prefix, "done", 0};
	h_wait_for(all_in, &done, H_WAIT_MS, "every job done on the promoted replica");
	for (int i = 0; i < NJOBS; i++)
		assert_int_equal(calls_of(prefix, i), 1);
	h_daemon_down(&D);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_no_wait_reruns, test_setup, test_teardown),
		cmocka_unit_test_setup_teardown(test_wait_none_rerun, test_setup, test_teardown),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
