/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_discovery: where warrantd connects, against hostile and stuck
 * nodes (issue 27, items 1 and 2).
 *
 * allow_hosts: a sentinel that names a foreign primary, a cluster node
 * whose CLUSTER SHARDS names a foreign owner, one that answers -MOVED and
 * one that answers -ASK to a foreign node (fake_rnode). The foreign node is
 * the test's own listening socket (the trap), on 127.0.0.2 or -- issue 37
 * item 2, a port any local user could open -- on 127.0.0.1 under the
 * default allow_hosts or one bound to another port: after the worker
 * refused the host (event=redis.host_refused, once; the counter
 * warrantd_redis_hosts_refused_total), no connection and not one byte --
 * so no AUTH -- reached it.
 *
 * Asynchronous discovery: a sentinel that accepts and never answers comes
 * first in the list; the worker reaches the primary through the second,
 * and while Redis drops its connections again and again (each reconnect
 * asks the sentinels again) the metrics listener keeps answering at once.
 */
#define _GNU_SOURCE	/* strcasestr */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "harness.h"

#define WAIT_MS		30000

/* A listening socket (on 127.0.0.2, or 127.0.0.1) that nobody accepts from
 * until it closes: the kernel queues whatever connects and what it sends. */
struct trap {
	int fd, port;
	char addr[32];
	long long bytes;	/* received by the queued connections, at close */
};

static void
trap_open_at(struct trap *t, const char *ip)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof a;

	t->bytes = 0;
	assert_int_equal(inet_pton(AF_INET, ip, &a.sin_addr), 1);
	t->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_true(t->fd >= 0);
	assert_int_equal(bind(t->fd, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(t->fd, 16), 0);
	assert_int_equal(getsockname(t->fd, (struct sockaddr *)&a, &len), 0);
	t->port = ntohs(a.sin_port);
	snprintf(t->addr, sizeof t->addr, "%s:%d", ip, t->port);
}

/* Connections queued on the trap since it opened (each accepted, what it
 * sent counted into t->bytes, and closed). */
static int
trap_close(struct trap *t)
{
	int n = 0, fd;
	char buf[4096];

	while ((fd = accept(t->fd, NULL, NULL)) >= 0) {
		ssize_t got;
		n++;
		while ((got = recv(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0)
			t->bytes += got;
		close(fd);
	}
	close(t->fd);
	return n;
}

/* A worker's INI with no socket line: [redis] names the nodes. */
static char *
worker_ini(const char *target_url, const char *prefix, const char *redis_extra,
	   const char *sections)
{
	struct h_daemon_opts o = {
		.target_url = target_url, .signature_off = 1,
		.prefix = prefix, .redis_extra = redis_extra, .sections = sections,
	};
	char *ini = h_daemon_ini(&o);

	assert_non_null(ini);
	return ini;
}

static long long
metric(int port, const char *name)
{
	char url[128], line[128];
	long status = 0;

	snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", port);
	snprintf(line, sizeof line, "\n%s ", name);	/* the sample, not its HELP */
	char *body = h_http("GET", url, NULL, &status);
	long long v = -1;
	const char *p = body ? strstr(body, line) : NULL;
	if (status == 200 && p != NULL)
		v = atoll(p + strlen(line));
	free(body);
	return v;
}

struct refused_wait {
	int port;
	long long want;
};

static int
refused_at_least(void *arg)
{
	struct refused_wait *w = arg;

	return metric(w->port, "warrantd_redis_hosts_refused_total") >= w->want;
}

static int
count_lines(const char *path, const char *needle)
{
	char *s = h_read_file(path);
	int n = 0;

	for (const char *p = s; p != NULL && (p = strstr(p, needle)) != NULL; p++)
		n++;
	free(s);
	return n;
}

/*
 * One hostile node: fake_rnode in `mode`, aimed at the trap (on trap_ip);
 * the worker configured with `key` = the fake's address and `extra`, a
 * password (so AUTH would go wherever it connects) and allow_hosts = `allow`
 * (NULL: none, the default), bound with other_port to a free port other
 * than the trap's. The refusal is logged once with `via`, counted at least three
 * times, and the trap saw no connection and no byte.
 */
static void
hostile_at(const char *mode, const char *key, const char *extra, const char *via,
	   const char *trap_ip, const char *allow, int other_port)
{
	struct trap t;
	struct h_fake node, target;
	struct h_daemon w;
	char redis_extra[512], sections[128], needle[96], allow_line[128] = "";

	trap_open_at(&t, trap_ip);
	if (allow != NULL) {
		int other = h_free_port();
		while (other == t.port)
			other = h_free_port();
		char port[16] = "";
		if (other_port)
			snprintf(port, sizeof port, ":%d", other);
		snprintf(allow_line, sizeof allow_line, "allow_hosts = %s%s\n", allow, port);
	}
	const char *args[] = {"--mode", mode, "--target", t.addr, NULL};
	assert_int_equal(h_fake_start(&node, "fake_rnode", args), 0);
	assert_int_equal(h_fake_start(&target, "fake_target", NULL), 0);
	char *pw = h_write_file("redis-password", "not-for-strangers\n");
	assert_non_null(pw);
	snprintf(redis_extra, sizeof redis_extra, "%s = 127.0.0.1:%d\n%s"
	    "password_file = %s\n%s", key, node.port, extra, pw, allow_line);
	free(pw);
	int mport = h_free_port();
	snprintf(sections, sizeof sections, "[metrics]\nlisten = 127.0.0.1:%d\n", mport);
	char *ini = worker_ini(target.url, strcmp(key, "cluster") == 0 ? "{warrant}" : NULL,
	    redis_extra, sections);
	assert_int_equal(h_daemon_spawn(&w, ini), 0);
	free(ini);

	snprintf(needle, sizeof needle, "event=redis.host_refused host=%s port=%d via=%s",
	    trap_ip, t.port, via);
	assert_int_equal(h_daemon_wait_log(&w, needle, WAIT_MS), 0);
	struct refused_wait rw = {mport, 3};
	assert_int_equal(h_wait_until(refused_at_least, &rw, WAIT_MS), 0);
	assert_int_equal(count_lines(w.log, "event=redis.host_refused"), 1);
	assert_false(h_daemon_log_has(&w, "not-for-strangers"));
	assert_true(h_daemon_stop_clean(&w));
	assert_int_equal(trap_close(&t), 0);	/* never connected to: no AUTH went there */
	assert_int_equal(t.bytes, 0);
	h_fake_stop(&node);
	h_fake_stop(&target);
}

static void
hostile(const char *mode, const char *key, const char *extra, const char *via)
{
	hostile_at(mode, key, extra, via, "127.0.0.2", "127.0.0.1", 0);
}

static void
test_sentinel_names_a_stranger(void **state)
{
	(void)state;
	hostile("sentinel", "sentinels", "master_name = mymaster\n", "sentinel");
}

/* Issue 37 item 2: a fake sentinel names 127.0.0.1 at a port any local
 * user could have opened; allow_hosts binds the primaries to another port:
 * not one byte -- so no AUTH -- reaches the listener. */
static void
test_sentinel_names_a_loopback_port(void **state)
{
	(void)state;
	hostile_at("sentinel", "sentinels", "master_name = mymaster\n", "sentinel", "127.0.0.1",
	    "127.0.0.1", 1);
}

/* Issue 37 item 2: the default allow_hosts (none set) on a cluster admits
 * the seeds and what they announce -- never all of loopback: a MOVED or an
 * ASK to another port of 127.0.0.1 is refused before any byte goes there. */
static void
test_moved_to_a_loopback_port(void **state)
{
	(void)state;
	hostile_at("moved", "cluster", "", "moved", "127.0.0.1", NULL, 0);
}

static void
test_ask_to_a_loopback_port(void **state)
{
	(void)state;
	hostile_at("ask", "cluster", "", "ask", "127.0.0.1", NULL, 0);
}

/* Issue 37 item 1: a cluster seed (the default allow_hosts admits what it
 * announces) names as the owner of every slot a node that is not loopback
 * (192.0.2.1, TEST-NET-1), with no TLS: the password would cross a network
 * in clear text, so rconn refuses before connecting -- no AUTH -- logs it
 * once per host and counts it. (With sentinels, allow_hosts names where
 * the primaries may be, and -t refuses a host beyond loopback there.) */
static void
test_seed_announces_a_cleartext_node(void **state)
{
	struct h_fake node, target;
	struct h_daemon w;
	char redis_extra[512], sections[128];
	(void)state;

	const char *args[] = {"--mode", "shards", "--target", "192.0.2.1:6379", NULL};
	assert_int_equal(h_fake_start(&node, "fake_rnode", args), 0);
	assert_int_equal(h_fake_start(&target, "fake_target", NULL), 0);
	char *pw = h_write_file("redis-password", "not-for-strangers\n");
	assert_non_null(pw);
	snprintf(redis_extra, sizeof redis_extra, "cluster = 127.0.0.1:%d\npassword_file = %s\n",
	    node.port, pw);
	free(pw);
	int mport = h_free_port();
	snprintf(sections, sizeof sections, "[metrics]\nlisten = 127.0.0.1:%d\n", mport);
	char *ini = worker_ini(target.url, "{warrant}", redis_extra, sections);
	assert_int_equal(h_daemon_spawn(&w, ini), 0);
	free(ini);
	assert_int_equal(h_daemon_wait_log(&w, "event=redis.cleartext_refused host=192.0.2.1 "
	    "port=6379", WAIT_MS), 0);
	struct refused_wait rw = {mport, 3};
	assert_int_equal(h_wait_until(refused_at_least, &rw, WAIT_MS), 0);
	assert_int_equal(count_lines(w.log, "event=redis.cleartext_refused"), 1);
	assert_int_equal(count_lines(w.log, "event=redis.host_refused"), 0);
	assert_false(h_daemon_log_has(&w, "not-for-strangers"));
	assert_true(h_daemon_stop_clean(&w));
	h_fake_stop(&node);
	h_fake_stop(&target);
}

static void
test_shards_name_a_stranger(void **state)
{
	(void)state;
	hostile("shards", "cluster", "", "shards");
}

static void
test_moved_to_a_stranger(void **state)
{
	(void)state;
	hostile("moved", "cluster", "", "moved");
}

static void
test_ask_to_a_stranger(void **state)
{
	(void)state;
	hostile("ask", "cluster", "", "ask");
}

/* Issue 23 item 9: a hostile node's MOVED names a "host" made to forge log
 * fields; the refusal logs it as one quoted value, so no line of the log
 * gains an event=... of Redis' making. */
static void
test_moved_host_cannot_forge_log_fields(void **state)
{
	struct h_fake node, target;
	struct h_daemon w;
	char redis_extra[256];
	(void)state;

	const char *args[] = {"--mode", "moved", "--target", "x level=error event=forged:6379",
	    NULL};
	assert_int_equal(h_fake_start(&node, "fake_rnode", args), 0);
	assert_int_equal(h_fake_start(&target, "fake_target", NULL), 0);
	snprintf(redis_extra, sizeof redis_extra, "cluster = 127.0.0.1:%d\n"
	    "allow_hosts = 127.0.0.1\n", node.port);
	char *ini = worker_ini(target.url, "{warrant}", redis_extra, "");
	assert_int_equal(h_daemon_spawn(&w, ini), 0);
	free(ini);
	assert_int_equal(h_daemon_wait_log(&w,
	    "event=redis.host_refused host=\"x level=error event=forged\" port=6379", WAIT_MS), 0);
	assert_false(h_daemon_log_has(&w, "event=forged port"));
	assert_false(h_daemon_log_has(&w, "event=forged\n"));
	assert_true(h_daemon_stop_clean(&w));
	h_fake_stop(&node);
	h_fake_stop(&target);
}

/* warrantctl too (issue 27 item 2): an -ASK naming a host outside
 * allow_hosts gets no connection, so no AUTH; decide says why and fails. */
static void
test_ctl_ask_to_a_stranger(void **state)
{
	struct trap t;
	struct h_fake node;
	char redis_extra[512];
	(void)state;

	trap_open_at(&t, "127.0.0.1");	/* the default allow_hosts: not all of loopback */
	const char *args[] = {"--mode", "ask", "--target", t.addr, NULL};
	assert_int_equal(h_fake_start(&node, "fake_rnode", args), 0);
	char *pw = h_write_file("ctl-redis-password", "not-for-strangers\n");
	assert_non_null(pw);
	snprintf(redis_extra, sizeof redis_extra, "cluster = 127.0.0.1:%d\npassword_file = %s\n",
	    node.port, pw);
	free(pw);
	char *ini = worker_ini("http://127.0.0.1:9/", "{warrant}", redis_extra, "");
	char *path = h_write_file("ctl-ask.ini", ini);
	free(ini);
	assert_non_null(path);
	char *argv[] = {(char *)h_bin("warrantctl"), "-c", path, "decide", "--on-behalf-of",
	    "operator:4417", "--action", "gate.open", "--resource", "north/1", "--basis",
	    "role:canal-operator", "--expires", "+1h", "--id", "ctl-ask-1", NULL};
	char *out = NULL;
	int rc = h_run(argv, 20000, &out);
	if (rc == 0 || out == NULL || strstr(out, "outside [redis] allow_hosts") == NULL)
		fail_msg("warrantctl decide after -ASK to %s: exit %d: %s", t.addr, rc,
		    out ? out : "");
	free(out);
	free(path);
	assert_int_equal(trap_close(&t), 0);	/* never connected to: no AUTH went there */
	assert_int_equal(t.bytes, 0);
	h_fake_stop(&node);
}

/* An ASK to an allowed node that is a replica: the side connection's ROLE
 * check refuses it before any command goes there. */
static void
test_ask_to_a_replica(void **state)
{
	struct h_fake replica, node, target;
	struct h_daemon w;
	char redis_extra[256], tgt[64];

	(void)state;
	const char *rargs[] = {"--mode", "replica", "--target", "127.0.0.1:1", NULL};
	assert_int_equal(h_fake_start(&replica, "fake_rnode", rargs), 0);
	snprintf(tgt, sizeof tgt, "127.0.0.1:%d", replica.port);
	const char *args[] = {"--mode", "ask", "--target", tgt, NULL};
	assert_int_equal(h_fake_start(&node, "fake_rnode", args), 0);
	assert_int_equal(h_fake_start(&target, "fake_target", NULL), 0);
	snprintf(redis_extra, sizeof redis_extra, "cluster = 127.0.0.1:%d\nallow_hosts = "
	    "127.0.0.1:%d, 127.0.0.1:%d\n", node.port, node.port, replica.port);
	char *ini = worker_ini(target.url, "{warrant}", redis_extra, NULL);
	assert_int_equal(h_daemon_spawn(&w, ini), 0);
	free(ini);
	assert_int_equal(h_daemon_wait_log(&w, "event=redis.not_primary name=cmd.ask", WAIT_MS),
	    0);
	assert_true(h_daemon_stop_clean(&w));
	/* it was asked ROLE, and nothing was sent after it */
	assert_true(h_file_contains(replica.log, "fake_rnode: ROLE"));
	assert_false(h_file_contains(replica.log, "fake_rnode: ASKING"));
	assert_false(h_file_contains(replica.log, "fake_rnode: EVAL"));
	h_fake_stop(&replica);
	h_fake_stop(&node);
	h_fake_stop(&target);
}

/* ---- asynchronous discovery ---- */

static int
redis_tcp_start(struct h_redis *r, int *port)
{
	char extra[96];

	*port = h_free_port();
	snprintf(extra, sizeof extra, "port %d\nbind 127.0.0.1\n", *port);
	return h_redis_start_conf(r, 0, extra);
}

/* The longest /metrics answer, in ms, over `for_ms`, asking every 20 ms. */
static long long
slowest_metrics(int port, long long for_ms)
{
	char url[128];
	long long worst = 0, end = h_now_ms() + for_ms;

	snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", port);
	while (h_now_ms() < end) {
		long status = 0;
		long long t0 = h_now_ms();
		free(h_http("GET", url, NULL, &status));
		long long took = h_now_ms() - t0;
		if (status == 200 && took > worst)
			worst = took;
		usleep(20000);
	}
	return worst;
}

static void
test_stuck_sentinel_does_not_stop_the_loop(void **state)
{
	struct h_redis redis;
	struct h_fake stuck, good, target;
	struct h_daemon w;
	int rport;
	char redis_extra[256], sections[128], tgt[64];

	(void)state;
	assert_int_equal(redis_tcp_start(&redis, &rport), 0);
	snprintf(tgt, sizeof tgt, "127.0.0.1:%d", rport);
	const char *stuck_args[] = {"--mode", "silent", NULL};
	const char *good_args[] = {"--mode", "sentinel", "--target", tgt, NULL};
	assert_int_equal(h_fake_start(&stuck, "fake_rnode", stuck_args), 0);
	assert_int_equal(h_fake_start(&good, "fake_rnode", good_args), 0);
	assert_int_equal(h_fake_start(&target, "fake_target", NULL), 0);
	snprintf(redis_extra, sizeof redis_extra, "sentinels = 127.0.0.1:%d, 127.0.0.1:%d\n"
	    "master_name = mymaster\nallow_hosts = 127.0.0.1:%d\n", stuck.port, good.port, rport);
	int mport = h_free_port();
	snprintf(sections, sizeof sections, "[metrics]\nlisten = 127.0.0.1:%d\n", mport);
	char *ini = worker_ini(target.url, NULL, redis_extra, sections);
	assert_int_equal(h_daemon_start(&w, ini), 0);	/* through the second sentinel */
	free(ini);

	/* every kill makes each connection ask the sentinels again, the stuck
	 * one first (500 ms each); the loop must not wait for it */
	redisContext *c = h_redis_connect_tcp(rport);
	assert_non_null(c);
	long long worst = 0;
	for (int i = 0; i < 4; i++) {
		freeReplyObject(redisCommand(c, "CLIENT KILL TYPE normal SKIPME yes"));
		long long s = slowest_metrics(mport, 1500);
		if (s > worst)
			worst = s;
	}
	printf("    slowest /metrics answer while the worker asked a stuck sentinel: %lld ms\n",
	    worst);
	assert_true(worst < 300);
	assert_int_equal(h_daemon_wait_log(&w, "event=redis.up name=cmd", WAIT_MS), 0);
	/* and it still works: a job goes through on the primary */
	long long now = h_now_ms();
	char *js = h_record_json("stuck-1", "gate.open", "north/1", now - 1000, now + 600000, 0,
	    NULL);
	assert_int_equal(h_decide(c, "warrant", "stuck-1", js, 0), 0);
	free(js);
	for (long long end = h_now_ms() + WAIT_MS; h_now_ms() < end; usleep(50000)) {
		char *s = h_hget(c, "warrant:decision:stuck-1", "state");
		int done = s != NULL && strcmp(s, "done") == 0;
		free(s);
		if (done)
			break;
	}
	char *s = h_hget(c, "warrant:decision:stuck-1", "state");
	assert_non_null(s);
	assert_string_equal(s, "done");
	free(s);
	redisFree(c);
	assert_true(h_daemon_stop_clean(&w));
	h_fake_stop(&stuck);
	h_fake_stop(&good);
	h_fake_stop(&target);
	h_redis_stop(&redis);
}

/* ---- a shared read's NOGROUP (item 7) ---- */

static int
stream_back(void *arg)
{
	return h_redis_int(arg, "EXISTS {warrant:2}:jobs") == 1;
}

/* Four shards on one Redis share one blocking read; one shard's stream is
 * deleted under it: only that shard's group is made again (MONITOR sees
 * no XGROUP CREATE for the other three). */
static void
test_shared_read_nogroup_one_shard(void **state)
{
	struct h_stack st;
	struct h_daemon w;

	(void)state;
	assert_int_equal(h_stack_start(&st), 0);
	struct h_daemon_opts o = {
		.redis_sock = st.redis.sock, .target_url = st.target.url, .signature_off = 1,
		.redis_extra = "shards = 4\n", .claim_interval_ms = 30000,
	};
	char *ini = h_daemon_ini(&o);
	assert_non_null(ini);
	assert_int_equal(h_daemon_start(&w, ini), 0);
	free(ini);
	assert_int_equal(h_daemon_wait_log(&w, "event=consumer.group stream={warrant:3}:jobs",
	    WAIT_MS), 0);
	redisContext *m = h_redis_connect(&st.redis);
	assert_non_null(m);
	freeReplyObject(redisCommand(m, "MONITOR"));
	assert_true(h_redis_int(st.c, "DEL {warrant:2}:jobs") == 1);
	assert_int_equal(h_wait_until(stream_back, st.c, WAIT_MS), 0);
	int mine = 0, others = 0;
	/* a read of block_ms (1 s) more: nothing else is made meanwhile */
	for (long long end = h_now_ms() + 2500; h_now_ms() < end;) {
		redisReply *r = NULL;
		if (redisGetReply(m, (void **)&r) != REDIS_OK || r == NULL)
			break;
		if (r->type == REDIS_REPLY_STATUS && strcasestr(r->str, "\"XGROUP\" \"CREATE\"")) {
			if (strstr(r->str, "{warrant:2}:jobs"))
				mine++;
			else
				others++;
		}
		freeReplyObject(r);
	}
	redisFree(m);
	printf("    XGROUP CREATE after shard 2's stream went: %d for it, %d for the others\n",
	    mine, others);
	assert_true(mine >= 1);
	assert_int_equal(others, 0);
	assert_true(h_daemon_stop_clean(&w));
	h_stack_stop(&st);
}

/* VmRSS of pid in KiB, or -1. */
static long
rss_kib(pid_t pid)
{
	char path[64], line[128];
	long kib = -1;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	while (f != NULL && fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, "VmRSS:", 6) == 0)
			kib = atol(line + 6);
	if (f != NULL)
		fclose(f);
	return kib;
}

struct log_count { const char *path, *needle; int n; };

static int
log_count_reached(void *arg)
{
	const struct log_count *c = arg;
	return count_lines(c->path, c->needle) >= c->n;
}

/* Issue 36: a node whose every answer announces a bulk string of ~1 TB.
 * The worker says so (redis.error kind=TOOBIG), drops the connection each
 * time, and holds none of it: its RSS stays far below the cap. */
static void
test_huge_reply_refused(void **state)
{
	struct h_fake node, target;
	struct h_daemon w;
	char redis_extra[256], sections[128];

	(void)state;
	const char *args[] = {"--mode", "huge", NULL};
	assert_int_equal(h_fake_start(&node, "fake_rnode", args), 0);
	assert_int_equal(h_fake_start(&target, "fake_target", NULL), 0);
	snprintf(redis_extra, sizeof redis_extra, "host = 127.0.0.1\nport = %d\n", node.port);
	int mport = h_free_port();
	snprintf(sections, sizeof sections, "[metrics]\nlisten = 127.0.0.1:%d\n", mport);
	char *ini = worker_ini(target.url, NULL, redis_extra, sections);
	assert_int_equal(h_daemon_spawn(&w, ini), 0);
	free(ini);
	struct log_count c = {w.log, "event=redis.error name=", 3};
	assert_int_equal(h_wait_until(log_count_reached, &c, WAIT_MS), 0);
	assert_true(count_lines(w.log, "kind=TOOBIG") >= 3);
	long kib = rss_kib(w.pid);
	assert_true(kib > 0 && kib < 48 * 1024);
	assert_true(h_daemon_stop_clean(&w));
	h_fake_stop(&node);
	h_fake_stop(&target);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sentinel_names_a_stranger),
		cmocka_unit_test(test_sentinel_names_a_loopback_port),
		cmocka_unit_test(test_moved_to_a_loopback_port),
		cmocka_unit_test(test_ask_to_a_loopback_port),
		cmocka_unit_test(test_seed_announces_a_cleartext_node),
		cmocka_unit_test(test_shards_name_a_stranger),
		cmocka_unit_test(test_moved_to_a_stranger),
		cmocka_unit_test(test_moved_host_cannot_forge_log_fields),
		cmocka_unit_test(test_ask_to_a_stranger),
		cmocka_unit_test(test_ctl_ask_to_a_stranger),
		cmocka_unit_test(test_ask_to_a_replica),
		cmocka_unit_test(test_stuck_sentinel_does_not_stop_the_loop),
		cmocka_unit_test(test_shared_read_nogroup_one_shard),
		cmocka_unit_test(test_huge_reply_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
