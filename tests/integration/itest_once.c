/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_once: warrantd(7) R4, one decision, one execution -- the real warrantd
 * against a real redis-server and fake_target.
 *
 *   - a record queued twice (a decider that retried its XADD) runs from one
 *     stream entry only; the other is acked with a `duplicate` audit entry,
 *     whether the two go to two workers or arrive in one read of one;
 *   - a terminal record set back to `queued` by hand and queued again is
 *     not run again: its P:final mark says it is terminal;
 *   - a hash whose `entry` names an entry pending nowhere (acked long ago,
 *     never there, not a stream id) is taken over by the new entry;
 *   - `warrantctl dead requeue` removes the mark, and the record runs again;
 *   - the library every step runs in (warrantd(7) §2.1): a worker refuses
 *     to start, exit 76, against a Redis without it or with another
 *     version, and `warrantctl functions status|load` says so and loads it.
 *
 * One redis-server and one fake_target for all (reset before each test);
 * each test has its own key prefix. Every wait is a condition with a
 * timeout; processes are stopped by PID (harness.h).
 */
#define _DEFAULT_SOURCE
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "core/store.h"
#include "harness.h"

#define WAIT_MS		30000
#define ACTION		"gate.open"
#define RESOURCE	"canal/lateral-3/gate-14"
#define NREC		10
#define DUP_PREFIX	"duplicate of entry "

static struct h_stack *const S = &h_group;	/* redis, fake_target, client */
static struct h_daemon D[2];

/* ------------------------------------------------------------------ */
/* plumbing (itest_engine's, cut down)                                  */

/* Whatever a failed test left running. */
static int
test_teardown(void **state)
{
	(void)state;
	for (int i = 0; i < 2; i++)
		if (D[i].pid > 0) {
			fprintf(stderr, "itest_once: killing leftover warrantd; log %s\n", D[i].log);
			h_daemon_kill(&D[i]);
		}
	return 0;
}

/* A fresh fake whose every answer is 200 after delay_ms. */
static void
fake_reset(int delay_ms)
{
	char script[64];

	h_fake_reset(&S->target);
	snprintf(script, sizeof script, "{\"default\": {\"delay_ms\": %d}}", delay_ms);
	assert_int_equal(h_fake_script(&S->target, script), 0);
}

static struct h_daemon_opts
opts(const char *prefix, const char *consumer)
{
	struct h_daemon_opts o = {
		.redis_sock = S->redis.sock, .target_url = S->target.url, .prefix = prefix,
		.consumer = consumer,
	};
	return o;
}

static void
wait_for(int (*cond)(void *), void *arg, const char *what)
{
	h_wait_for(cond, arg, WAIT_MS, what);
}

/* n signed records <prefix>-0000 ... under prefix, not queued; due in ten
 * minutes. */
static void
store_records(const char *prefix, int n)
{
	long long due = h_now_ms() + 600000;
	char id[64];

	for (int i = 0; i < n; i++) {
		snprintf(id, sizeof id, "%s-%04d", prefix, i);
		h_store_signed(S->c, prefix, id, ACTION, RESOURCE, due, 0);
	}
}

/* XADD P:jobs * id <id>: the new entry's id into out. */
static void
enqueue(const char *prefix, const char *id, char *out, size_t n)
{
	char *sid = h_redis_str(S->c, "XADD %s * id %s", h_key(prefix, "jobs"), id);

	assert_non_null(sid);
	snprintf(out, n, "%s", sid);
	free(sid);
}

/* The calls the fake received with Idempotency-Key = id. */
static long long
ncalls(const char *id)
{
	return h_count_calls(&S->target, id);
}

static long long
fake_stat(const char *name)
{
	return h_fake_stat(&S->target, NULL, name);
}

/* What the tests wait for: n records in `state` (NULL: any), every entry up
 * to `last` read by the group, and none pending. */
struct settled {
	const char *prefix, *state, *last;
	int n;
};

static int
settled(void *arg)
{
	const struct settled *w = arg;
	char id[64];

	for (int i = 0; w->state != NULL && i < w->n; i++) {
		snprintf(id, sizeof id, "%s-%04d", w->prefix, i);
		char *st = h_record_field(S->c, w->prefix, id, "state");
		int ok = st != NULL && strcmp(st, w->state) == 0;
		free(st);
		if (!ok)
			return 0;
	}
	if (h_pending_count(S->c, h_key(w->prefix, "jobs"), "workers") != 0)
		return 0;
	/* XINFO GROUPS: the group's last-delivered-id is the last entry */
	redisReply *r = redisCommand(S->c, "XINFO GROUPS %s", h_key(w->prefix, "jobs"));
	int read = 0;
	if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 1) {
		const redisReply *g = r->element[0];
		for (size_t i = 0; i + 1 < g->elements; i += 2)
			if (g->element[i]->type == REDIS_REPLY_STRING &&
			    strcmp(g->element[i]->str, "last-delivered-id") == 0)
				read = strcmp(g->element[i + 1]->str, w->last) == 0;
	}
	freeReplyObject(r);
	return read;
}

static void
wait_settled(const char *prefix, int n, const char *state, const char *last)
{
	struct settled w = {prefix, state, last, n};

	wait_for(settled, &w, "every record in its state, every entry read and acked");
}

/* The audit entries of one record that say `duplicate`. */
struct dup_scan {
	const char *id;
	int n;
	char detail[128], from[32], to[32], consumer[64];
};

static int
dup_each(const redisReply *fields, void *arg)
{
	struct dup_scan *s = arg;
	const char *id = h_entry_str(fields, "id"), *detail = h_entry_str(fields, "detail");

	if (id == NULL || strcmp(id, s->id) != 0 || detail == NULL ||
	    strncmp(detail, "duplicate", 9) != 0)
		return 0;
	s->n++;
	snprintf(s->detail, sizeof s->detail, "%s", detail);
	snprintf(s->from, sizeof s->from, "%s", h_entry_str(fields, "from"));
	snprintf(s->to, sizeof s->to, "%s", h_entry_str(fields, "to"));
	snprintf(s->consumer, sizeof s->consumer, "%s", h_entry_str(fields, "consumer"));
	return 0;
}

static int
count_lines(const char *path, const char *needle)
{
	char *text = h_read_file(path);
	int n = 0;

	for (const char *p = text; p && (p = strstr(p, needle)) != NULL; p++)
		n++;
	free(text);
	return n;
}

/*
 * Each of n records was queued as the entries first[i] and second[i]: each
 * ran exactly once, from the entry its hash's `entry` names, and the other
 * one has exactly one audit entry `duplicate of entry <that one>`, state to
 * the same state. Nothing is pending and nothing went to P:dead. Returns
 * how many duplicates a worker acked that did not run the record.
 */
static int
assert_once_each(const char *prefix, int n, char first[][48], char second[][48])
{
	char id[64];
	int across = 0;

	for (int i = 0; i < n; i++) {
		snprintf(id, sizeof id, "%s-%04d", prefix, i);
		if (ncalls(id) != 1)
			fail_msg("%s was called %lld times (logs %s %s)", id, ncalls(id), D[0].log,
			    D[1].log);
		char *entry = h_record_field(S->c, prefix, id, "entry");
		assert_non_null(entry);
		if (strcmp(entry, first[i]) != 0 && strcmp(entry, second[i]) != 0)
			fail_msg("%s: entry %s is neither %s nor %s", id, entry, first[i], second[i]);
		struct dup_scan s = {.id = id};
		h_stream_each(S->c, h_key(prefix, "audit"), dup_each, &s);
		if (s.n != 1)
			fail_msg("%s: %d duplicate audit entries, expected 1 (log %s)", id, s.n,
			    D[0].log);
		char want[128];
		snprintf(want, sizeof want, DUP_PREFIX "%s", entry);
		assert_string_equal(s.detail, want);
		assert_string_equal(s.from, s.to);
		char *owner = h_record_field(S->c, prefix, id, "owner");
		across += owner != NULL && strcmp(owner, s.consumer) != 0;
		free(owner);
		free(entry);
	}
	printf("itest_once: %s: %d of %d duplicates acked by another worker than the one "
	    "that ran the record\n", prefix, across, n);
	assert_int_equal(h_pending_count(S->c, h_key(prefix, "jobs"), "workers"), 0);
	assert_int_equal(h_redis_int(S->c, "XLEN %s", h_key(prefix, "dead")), 0);
	assert_int_equal(fake_stat("duplicates"), 0);
	return across;
}

/* ------------------------------------------------------------------ */
/* R4: one stream entry runs a record                                   */

/* Ten records, each queued twice in a row, read one entry at a time by two
 * workers while the target takes a second per call: the two entries of a
 * record are in hand at once, mostly in different workers. */
static void
test_queued_twice_two_workers(void **state)
{
	const char *p = "tw";
	char first[NREC][48], second[NREC][48], id[64];
	struct h_daemon_opts o1 = opts(p, "w1"), o2 = opts(p, "w2");
	(void)state;

	fake_reset(1000);
	o1.redis_extra = o2.redis_extra = "batch = 1\n";
	store_records(p, NREC);
	h_daemon_up(&D[0], &o1);
	h_daemon_up(&D[1], &o2);
	for (int i = 0; i < NREC; i++) {
		snprintf(id, sizeof id, "%s-%04d", p, i);
		enqueue(p, id, first[i], sizeof first[i]);
		enqueue(p, id, second[i], sizeof second[i]);
	}
	wait_settled(p, NREC, "done", second[NREC - 1]);
	/* read one at a time by two workers, some pairs are split */
	assert_true(assert_once_each(p, NREC, first, second) > 0);
	assert_int_equal(fake_stat("total"), NREC);
	int dups[2];
	for (int i = 0; i < 2; i++)
		dups[i] = count_lines(D[i].log, "event=job.duplicate");
	printf("itest_once: duplicates acked by w1 %d, by w2 %d\n", dups[0], dups[1]);
	assert_int_equal(dups[0] + dups[1], NREC);
	h_daemon_down(&D[1]);
	h_daemon_down(&D[0]);
}

/* The same with both entries of every record in one worker's hand: queued
 * before it starts, they come in its first read, and their first
 * transitions go to Redis in one batch. */
static void
test_queued_twice_one_batch(void **state)
{
	const char *p = "ob";
	char first[NREC][48], second[NREC][48], id[64];
	struct h_daemon_opts o = opts(p, "w1");
	(void)state;

	fake_reset(500);
	store_records(p, NREC);
	for (int i = 0; i < NREC; i++) {
		snprintf(id, sizeof id, "%s-%04d", p, i);
		enqueue(p, id, first[i], sizeof first[i]);
		enqueue(p, id, second[i], sizeof second[i]);
	}
	h_daemon_up(&D[0], &o);
	wait_settled(p, NREC, "done", second[NREC - 1]);
	assert_int_equal(assert_once_each(p, NREC, first, second), 0);
	assert_int_equal(fake_stat("total"), NREC);
	assert_int_equal(count_lines(D[0].log, "event=job.duplicate"), NREC);
	assert_int_equal(count_lines(D[0].log, "reason=duplicate"), NREC);
	h_daemon_down(&D[0]);
}

/* ------------------------------------------------------------------ */
/* R4: terminal stays terminal                                          */

/* Five records done; then someone with the decider's access sets each back
 * to `queued` and queues it again. The P:final mark (written with `done`,
 * with the hash's TTL) makes the worker ack the new entries unrun and
 * write nothing. */
static void
test_terminal_reset_not_run(void **state)
{
	const char *p = "tr";
	char sid[48], id[64];
	struct h_daemon_opts o = opts(p, "w1");
	(void)state;

	fake_reset(0);
	store_records(p, 5);
	for (int i = 0; i < 5; i++) {
		snprintf(id, sizeof id, "%s-%04d", p, i);
		enqueue(p, id, sid, sizeof sid);
	}
	h_daemon_up(&D[0], &o);
	wait_settled(p, 5, "done", sid);
	for (int i = 0; i < 5; i++) {
		snprintf(id, sizeof id, "%s-%04d", p, i);
		char *mark = h_redis_str(S->c, "GET %s", h_key(p, "final:%s", id));
		assert_non_null(mark);
		assert_string_equal(mark, "done");
		free(mark);
		/* the hash's TTL: both were set by one script */
		long long hp = h_redis_int(S->c, "PTTL %s", h_key(p, "decision:%s", id));
		long long fp = h_redis_int(S->c, "PTTL %s", h_key(p, "final:%s", id));
		assert_true(hp > 0 && fp > 0);
		assert_true(fp - hp < 1000 && hp - fp < 1000);
	}
	long long audit = h_redis_int(S->c, "XLEN %s", h_key(p, "audit"));
	for (int i = 0; i < 5; i++) {
		snprintf(id, sizeof id, "%s-%04d", p, i);
		assert_true(h_redis_int(S->c, "HSET %s state queued", h_key(p, "decision:%s", id)) >= 0);
		enqueue(p, id, sid, sizeof sid);
	}
	wait_settled(p, 5, NULL, sid);
	for (int i = 0; i < 5; i++) {
		snprintf(id, sizeof id, "%s-%04d", p, i);
		if (ncalls(id) != 1)
			fail_msg("%s ran %lld times (log %s)", id, ncalls(id), D[0].log);
		h_assert_record_field(S->c, p, id, "state", "queued");	/* nothing written */
	}
	assert_int_equal(h_redis_int(S->c, "XLEN %s", h_key(p, "audit")), audit);
	assert_int_equal(count_lines(D[0].log, "reason=terminal"), 5);
	assert_int_equal(fake_stat("total"), 5);
	h_daemon_down(&D[0]);
}

/* ------------------------------------------------------------------ */
/* §3.3: a record cannot outlive its hash                                */

/* PTTL of P:<key>, between lo and hi ms; fails naming both. */
static void
assert_pttl(const char *p, const char *key, long long lo, long long hi)
{
	long long ttl = h_redis_int(S->c, "PTTL %s", h_key(p, "%s", key));

	if (ttl < lo || ttl > hi)
		fail_msg("PTTL %s:%s is %lld, expected %lld..%lld", p, key, ttl, lo, hi);
}

/* Issue 23 item 3, retain_s = 1: a record due in an hour is done, one due
 * half a second ago expired. The hash and the P:final mark of each are kept
 * until expiresAt + clock_skew_s (60 s) + retain_s: an hour and a minute,
 * and a minute -- not the one second after the terminal write they had, after
 * which a copy of the record, stored again, would run again. */
static void
test_kept_past_deadline(void **state)
{
	const char *p = "kd";
	char sid[48];
	struct h_daemon_opts o = opts(p, "w1");
	long long now = h_now_ms(), slack = 30000;
	(void)state;

	o.records_extra = "retain_s = 1\n";
	fake_reset(0);
	h_store_signed(S->c, p, "kd-0000", ACTION, RESOURCE, now + 3600000, 0);
	h_store_signed(S->c, p, "kd-0001", ACTION, RESOURCE, now - 500, 0);
	enqueue(p, "kd-0000", sid, sizeof sid);
	enqueue(p, "kd-0001", sid, sizeof sid);
	h_daemon_up(&D[0], &o);
	wait_settled(p, 0, NULL, sid);
	h_assert_record_field(S->c, p, "kd-0000", "state", "done");
	h_assert_record_field(S->c, p, "kd-0001", "state", "expired");
	assert_pttl(p, "decision:kd-0000", 3661000 - slack, 3661000);
	assert_pttl(p, "final:kd-0000", 3661000 - slack, 3661000);
	assert_pttl(p, "decision:kd-0001", 60500 - slack, 60500);
	assert_pttl(p, "final:kd-0001", 60500 - slack, 60500);
	assert_int_equal(ncalls("kd-0000"), 1);
	assert_int_equal(ncalls("kd-0001"), 0);
	h_daemon_down(&D[0]);
}

/* ------------------------------------------------------------------ */
/* R4: an `entry` pending nowhere is taken over                          */

/* Three records whose hash names an entry that is pending nowhere: one
 * delivered and acked long ago, one that never was (a Redis that forgot its
 * PEL), one that is no stream id at all. Each runs once from its new entry,
 * which its hash then names; no duplicate is written. */
static void
test_stale_entry_taken_over(void **state)
{
	const char *p = "st";
	char old[48], fresh[3][48], id[64];
	struct h_daemon_opts o = opts(p, "w1");
	(void)state;

	fake_reset(0);
	store_records(p, 3);
	free(h_redis_str(S->c, "XGROUP CREATE %s workers 0 MKSTREAM", h_key(p, "jobs")));
	enqueue(p, "st-0000", old, sizeof old);
	redisReply *r = redisCommand(S->c, "XREADGROUP GROUP workers gone COUNT 1 STREAMS %s >",
	    h_key(p, "jobs"));
	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	freeReplyObject(r);
	assert_int_equal(h_redis_int(S->c, "XACK %s workers %s", h_key(p, "jobs"), old), 1);
	assert_true(h_redis_int(S->c, "HSET %s entry %s", h_key(p, "decision:st-0000"), old) >= 0);
	assert_true(h_redis_int(S->c, "HSET %s entry 1-1", h_key(p, "decision:st-0001")) >= 0);
	assert_true(h_redis_int(S->c, "HSET %s entry not-an-id", h_key(p, "decision:st-0002")) >= 0);
	for (int i = 0; i < 3; i++) {
		snprintf(id, sizeof id, "%s-%04d", p, i);
		enqueue(p, id, fresh[i], sizeof fresh[i]);
	}
	h_daemon_up(&D[0], &o);
	wait_settled(p, 3, NULL, fresh[2]);
	for (int i = 0; i < 3; i++) {
		snprintf(id, sizeof id, "%s-%04d", p, i);
		h_assert_record_field(S->c, p, id, "state", "done");
		assert_int_equal(ncalls(id), 1);
		h_assert_record_field(S->c, p, id, "entry", fresh[i]);
		struct dup_scan s = {.id = id};
		h_stream_each(S->c, h_key(p, "audit"), dup_each, &s);
		assert_int_equal(s.n, 0);
	}
	assert_false(h_daemon_log_has(&D[0], "event=job.duplicate"));
	h_daemon_down(&D[0]);
}

/* ------------------------------------------------------------------ */
/* R4: the operator removes the mark                                    */

static int
dead_letter_of(void *arg)
{
	return h_stream_count(S->c, h_key(arg, "dead"), "id", "rq-0000") > 0;
}

/* A record dead after max_attempts has P:final = dead; `warrantctl dead
 * requeue` (with the worker stopped, so what it wrote can be seen) removes
 * it and names its new entry in the hash, and the record runs again to
 * done. */
static void
test_requeue_removes_mark(void **state)
{
	const char *p = "rq";
	char sid[48];
	struct h_daemon_opts o = opts(p, "w1");
	(void)state;

	fake_reset(0);
	assert_int_equal(h_fake_script(&S->target, "{\"per_key\": {\"rq-0000\": [{\"status\": 503},"
	    " {\"status\": 503}]}}"), 0);
	o.max_attempts = 2;
	store_records(p, 1);
	enqueue(p, "rq-0000", sid, sizeof sid);
	h_daemon_up(&D[0], &o);
	wait_settled(p, 1, "dead", sid);
	wait_for(dead_letter_of, (void *)p, "the dead letter");
	char *mark = h_redis_str(S->c, "GET %s", h_key(p, "final:rq-0000"));
	assert_non_null(mark);
	assert_string_equal(mark, "dead");
	free(mark);

	/* with no worker running, what the requeue wrote stays to be seen */
	char ini[sizeof D[0].ini];
	snprintf(ini, sizeof ini, "%s", D[0].ini);
	h_daemon_down(&D[0]);
	char *argv[] = {(char *)h_bin("warrantctl"), "-c", ini, "dead", "requeue", "rq-0000",
	    NULL};
	char *out = NULL;
	int rc = h_run(argv, 30000, &out);
	if (rc != 0)
		fail_msg("warrantctl dead requeue: exit %d: %s", rc, out ? out : "");
	/* "requeued rq-0000 with a fresh budget ... as rq:jobs entry <id>" */
	const char *at = strstr(out, "entry ");
	assert_non_null(at);
	snprintf(sid, sizeof sid, "%.*s", (int)strcspn(at + 6, "\n"), at + 6);
	free(out);
	assert_int_equal(h_redis_int(S->c, "EXISTS %s", h_key(p, "final:rq-0000")), 0);
	h_assert_record_field(S->c, p, "rq-0000", "entry", sid);
	h_assert_record_field(S->c, p, "rq-0000", "state", "queued");
	h_daemon_up(&D[0], &o);
	wait_settled(p, 1, "done", sid);
	assert_int_equal(ncalls("rq-0000"), 3);
	mark = h_redis_str(S->c, "GET %s", h_key(p, "final:rq-0000"));
	assert_non_null(mark);
	assert_string_equal(mark, "done");
	free(mark);
	h_daemon_down(&D[0]);
}

/* ------------------------------------------------------------------ */
/* The library (warrantd(7) §2.1)                                       */

/* warrantd on S's Redis exits (within 30 s) with status 76, saying
 * event=redis.library and `want`. */
static void
expect_library_refused(const char *p, const char *want)
{
	struct h_daemon_opts o = opts(p, "w1");
	char *text = h_daemon_ini(&o);
	struct h_daemon d = {0};
	int st = -1;

	assert_non_null(text);
	assert_int_equal(h_daemon_spawn(&d, text), 0);
	free(text);
	if (h_wait_exit(d.pid, WAIT_MS, &st) != 0) {
		h_daemon_kill(&d);
		fail_msg("warrantd ran without this library; log %s", d.log);
	}
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 76);
	assert_true(h_file_contains(d.log, "event=redis.library"));
	assert_true(h_file_contains(d.log, want));
	assert_true(h_file_contains(d.log, "want=" STORE_LIBRARY_VERSION));
}

/* warrantctl -c ini functions CMD: its exit code, its output in *out. */
static int
functions_cmd(const char *ini, const char *cmd, char **out)
{
	char *argv[] = {(char *)h_bin("warrantctl"), "-c", (char *)ini, "functions", (char *)cmd,
	    NULL};

	return h_run(argv, 30000, out);
}

/* No library, then another version: the worker stops at once, before it
 * reads (nothing delivered to it), exit 76; `functions status` exits 1
 * and `functions load` loads this build's, after which the record runs. */
static void
test_library_checked_at_start(void **state)
{
	const char *p = "lib";
	char sid[48], *out = NULL;
	struct h_daemon_opts o = opts(p, "w1");
	(void)state;

	fake_reset(0);
	store_records(p, 1);
	enqueue(p, "lib-0000", sid, sizeof sid);
	free(h_redis_str(S->c, "FUNCTION DELETE warrantd"));
	expect_library_refused(p, "got=none");
	free(h_redis_str(S->c, "FUNCTION LOAD %s", "#!lua name=warrantd\n"
	    "redis.register_function{function_name = 'warrantd_version', callback = function() "
	    "return 'older' end, flags = {'no-writes'}}"));
	expect_library_refused(p, "got=older");
	assert_true(h_pending_count(S->c, h_key(p, "jobs"), H_GROUP) <= 0);

	char *text = h_daemon_ini(&o), *ini = h_write_file("lib.ini", text);
	assert_non_null(ini);
	free(text);
	assert_int_equal(functions_cmd(ini, "status", &out), 1);
	assert_non_null(strstr(out, "shard 0: older (another version"));
	free(out);
	if (functions_cmd(ini, "load", &out) != 0)
		fail_msg("warrantctl functions load: %s", out ? out : "");
	assert_non_null(strstr(out, "shard 0: " STORE_LIBRARY_VERSION ", was older"));
	free(out);
	char *v = h_redis_str(S->c, "FCALL_RO warrantd_version 0");
	assert_non_null(v);
	assert_string_equal(v, STORE_LIBRARY_VERSION);
	free(v);
	assert_int_equal(functions_cmd(ini, "status", &out), 0);
	assert_non_null(strstr(out, "shard 0: " STORE_LIBRARY_VERSION " (this version)"));
	free(out);
	free(ini);
	h_daemon_up(&D[0], &o);
	wait_settled(p, 1, "done", sid);
	h_daemon_down(&D[0]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_queued_twice_two_workers, test_teardown),
		cmocka_unit_test_teardown(test_queued_twice_one_batch, test_teardown),
		cmocka_unit_test_teardown(test_terminal_reset_not_run, test_teardown),
		cmocka_unit_test_teardown(test_kept_past_deadline, test_teardown),
		cmocka_unit_test_teardown(test_stale_entry_taken_over, test_teardown),
		cmocka_unit_test_teardown(test_requeue_removes_mark, test_teardown),
		cmocka_unit_test_teardown(test_library_checked_at_start, test_teardown),
	};

	return cmocka_run_group_tests_name("once (R4)", tests, h_group_setup, h_group_teardown);
}
