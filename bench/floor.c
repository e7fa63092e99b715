/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * floor SOCKET PREFIX COUNT [MODE]: the Redis floor of the benchmark -- what
 * one job costs Redis itself with no HTTP and no verification, the least any
 * worker built on these keys could spend. With a consumer group "floor" on
 * PREFIX:jobs (the jobs mkrecords wrote), it repeats until COUNT jobs are
 * through: XREADGROUP COUNT 100, one pipelined HGETALL per entry, then per
 * MODE:
 *   floor     one pipelined HSET (state done) per entry, one XACK a batch
 *             (the floor);
 *   writes    the writes the rules make per job, as plain commands: the
 *             start's HINCRBY attempts (R13), HSET running and audit XADD
 *             (§6), the end's HSET done, PEXPIRE (retain_s), audit XADD and
 *             XACK -- no check of anything;
 *   commands  every redis.call load.lua and transition.lua make per job,
 *             in order, as plain pipelined commands (no Lua, no atomicity):
 *             the load's HSTRLEN and HMGET (in place of HGETALL); the
 *             start's XPENDING, GET of the final mark, HMGET state entry,
 *             HINCRBY, HSET, XADD and the end's XPENDING, GET, HMGET of four
 *             fields, HSET, PEXPIRE, SET of the mark, XADD, XACK.
 * Prints "jobs wall_ms redis_cpu_us" on stdout: the wall time and Redis' own
 * CPU time (INFO cpu, user + sys) across the run. Sync hiredis; not part of
 * the daemon.
 */
#define _POSIX_C_SOURCE 200809L
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH 100

enum mode { MODE_FLOOR, MODE_WRITES, MODE_COMMANDS };

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Redis' CPU (user + sys) in µs, or -1. */
static long long
redis_cpu_us(redisContext *c)
{
	redisReply *r = redisCommand(c, "INFO cpu");
	double user = 0, sys = 0;
	const char *p;

	if (r == NULL || r->type != REDIS_REPLY_STRING) {
		freeReplyObject(r);
		return -1;
	}
	if ((p = strstr(r->str, "used_cpu_user:")) != NULL)
		user = atof(p + strlen("used_cpu_user:"));
	if ((p = strstr(r->str, "used_cpu_sys:")) != NULL)
		sys = atof(p + strlen("used_cpu_sys:"));
	freeReplyObject(r);
	return (long long)((user + sys) * 1e6);
}

static int
fail(const char *what, redisContext *c)
{
	fprintf(stderr, "floor: %s: %s\n", what, c->errstr[0] ? c->errstr : "bad reply");
	return 1;
}

static void
append_xack(redisContext *c, const char *jobs, const redisReply *entries)
{
	const char **argv = calloc(entries->elements + 3, sizeof *argv);

	argv[0] = "XACK";
	argv[1] = jobs;
	argv[2] = "floor";
	for (size_t i = 0; i < entries->elements; i++)
		argv[3 + i] = entries->element[i]->element[0]->str;
	redisAppendCommandArgv(c, (int)entries->elements + 3, argv, NULL);
	free(argv);
}

/*
 * One transition's commands for one entry ({stream id, {"id", rid}}): the
 * start's, or with `end` the final one's (done, 204); returns how many
 * replies they make. The values are what the daemon's transition writes
 * (the same fields, of about the same lengths).
 */
static size_t
append_transition(redisContext *c, const char *jobs, const char *prefix, const redisReply *e,
    enum mode mode, int end)
{
	const char *sid = e->element[0]->str, *rid = e->element[1]->element[1]->str;
	size_t n = 0;

	if (mode == MODE_COMMANDS) {
		redisAppendCommand(c, "XPENDING %s floor %s %s 1", jobs, sid, sid);
		redisAppendCommand(c, "GET %s:final:%s", prefix, rid);
		if (end)
			redisAppendCommand(c, "HMGET %s:decision:%s state entry owner attempts", prefix,
			    rid);
		else
			redisAppendCommand(c, "HMGET %s:decision:%s state entry", prefix, rid);
		n += 3;
	}
	if (end) {
		redisAppendCommand(c, "HSET %s:decision:%s state done owner f updatedAt "
		    "2026-12-02T03:00:00.001Z outcome done detail %s entry %s httpStatus 204", prefix,
		    rid, "", sid);
		redisAppendCommand(c, "PEXPIRE %s:decision:%s 604800000", prefix, rid);
		if (mode == MODE_COMMANDS) {
			redisAppendCommand(c, "SET %s:final:%s done PX 604800000", prefix, rid);
			n++;
		}
	} else {
		redisAppendCommand(c, "HINCRBY %s:decision:%s attempts 1", prefix, rid);
		redisAppendCommand(c, "HSET %s:decision:%s state running owner f updatedAt "
		    "2026-12-02T03:00:00.000Z outcome %s detail %s entry %s", prefix, rid, "", "",
		    sid);
	}
	redisAppendCommand(c, "XADD %s:audit MAXLEN ~ 100000 * id %s from %s to %s "
	    "consumer f attempt 1 at 2026-12-02T03:00:00.00%dZ detail %s", prefix, rid,
	    end ? "running" : "queued", end ? "done" : "running", end, "");
	n += 3;
	if (end) {
		redisAppendCommand(c, "XACK %s floor %s", jobs, sid);
		n++;
	}
	return n;
}

/* One batch; returns how many entries it took, or -1. */
static int
one_batch(redisContext *c, const char *jobs, const char *prefix, enum mode mode)
{
	redisReply *r = redisCommand(c, "XREADGROUP GROUP floor f COUNT %d STREAMS %s >", BATCH,
	    jobs);
	const redisReply *entries;
	int n = 0;

	if (r == NULL)
		return -1;
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 1) {
		freeReplyObject(r);
		return 0;
	}
	entries = r->element[0]->element[1];
	size_t replies = 0;
	for (size_t i = 0; i < entries->elements; i++) {
		const char *rid = entries->element[i]->element[1]->element[1]->str;

		if (mode == MODE_COMMANDS) {
			redisAppendCommand(c, "HSTRLEN %s:decision:%s record", prefix, rid);
			redisAppendCommand(c, "HMGET %s:decision:%s state attempts record", prefix,
			    rid);
			replies += 2;
		} else {
			redisAppendCommand(c, "HGETALL %s:decision:%s", prefix, rid);
			replies++;
		}
	}
	if (mode == MODE_FLOOR) {
		for (size_t i = 0; i < entries->elements; i++)
			redisAppendCommand(c, "HSET %s:decision:%s state done", prefix,
			    entries->element[i]->element[1]->element[1]->str);
		replies += entries->elements + 1;
		append_xack(c, jobs, entries);
	} else {
		for (size_t i = 0; i < entries->elements; i++)
			replies += append_transition(c, jobs, prefix, entries->element[i], mode, 0);
		for (size_t i = 0; i < entries->elements; i++)
			replies += append_transition(c, jobs, prefix, entries->element[i], mode, 1);
	}
	/* An error reply fails the run: a bench of failed commands measures nothing. */
	int errors = 0;
	for (size_t i = 0; i < replies; i++) {
		redisReply *x;
		if (redisGetReply(c, (void **)&x) != REDIS_OK) {
			freeReplyObject(r);
			return -1;
		}
		if (x->type == REDIS_REPLY_ERROR && errors++ == 0)
			fprintf(stderr, "floor: %s\n", x->str);
		freeReplyObject(x);
	}
	n = errors ? -1 : (int)entries->elements;
	freeReplyObject(r);
	return n;
}

int
main(int argc, char **argv)
{
	char jobs[256];
	long count;

	enum mode mode = MODE_FLOOR;

	if (argc == 5 && strcmp(argv[4], "writes") == 0)
		mode = MODE_WRITES;
	else if (argc == 5 && strcmp(argv[4], "commands") == 0)
		mode = MODE_COMMANDS;
	else if (argc == 5 && strcmp(argv[4], "floor") != 0)
		argc = 0;
	if ((argc != 4 && argc != 5) || (count = atol(argv[3])) <= 0) {
		fprintf(stderr, "usage: floor SOCKET PREFIX COUNT [floor|writes|commands]\n");
		return 64;
	}
	redisContext *c = redisConnectUnix(argv[1]);
	if (c == NULL || c->err)
		return c ? fail("connect", c) : 1;
	snprintf(jobs, sizeof jobs, "%s:jobs", argv[2]);
	freeReplyObject(redisCommand(c, "XGROUP CREATE %s floor 0", jobs));
	long long cpu0 = redis_cpu_us(c), t0 = now_ms();
	long done = 0;
	while (done < count) {
		int n = one_batch(c, jobs, argv[2], mode);
		if (n < 0)
			return fail("batch", c);
		if (n == 0)
			break;
		done += n;
	}
	long long wall = now_ms() - t0, cpu = redis_cpu_us(c) - cpu0;
	printf("%ld %lld %lld\n", done, wall, cpu);
	redisFree(c);
	return done == count ? 0 : 1;
}
