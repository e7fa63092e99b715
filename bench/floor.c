/*
 * floor SOCKET PREFIX COUNT: the Redis floor of the benchmark -- what one
 * job costs Redis itself with no HTTP and no verification, the least any
 * worker built on these keys could spend. With a consumer group "floor" on
 * PREFIX:jobs (the jobs mkrecords wrote), it repeats until COUNT jobs are
 * through: XREADGROUP COUNT 100, one pipelined HGETALL per entry, one
 * pipelined HSET (state done) per entry, one XACK for the batch. Prints
 * "jobs wall_ms redis_cpu_us" on stdout: the wall time and Redis' own CPU
 * time (INFO cpu, user + sys) across the run. Sync hiredis; not part of the
 * daemon.
 */
#define _POSIX_C_SOURCE 200809L
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH 100

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

/* One batch; returns how many entries it took, or -1. */
static int
one_batch(redisContext *c, const char *jobs, const char *prefix)
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
	for (size_t i = 0; i < entries->elements; i++)
		redisAppendCommand(c, "HGETALL %s:decision:%s", prefix,
		    entries->element[i]->element[1]->element[1]->str);
	for (size_t i = 0; i < entries->elements; i++)
		redisAppendCommand(c, "HSET %s:decision:%s state done", prefix,
		    entries->element[i]->element[1]->element[1]->str);
	const char **argv = calloc(entries->elements + 3, sizeof *argv);
	argv[0] = "XACK";
	argv[1] = jobs;
	argv[2] = "floor";
	for (size_t i = 0; i < entries->elements; i++)
		argv[3 + i] = entries->element[i]->element[0]->str;
	redisAppendCommandArgv(c, (int)entries->elements + 3, argv, NULL);
	free(argv);
	for (size_t i = 0; i < 2 * entries->elements + 1; i++) {
		redisReply *x;
		if (redisGetReply(c, (void **)&x) != REDIS_OK) {
			freeReplyObject(r);
			return -1;
		}
		freeReplyObject(x);
	}
	n = (int)entries->elements;
	freeReplyObject(r);
	return n;
}

int
main(int argc, char **argv)
{
	char jobs[256];
	long count;

	if (argc != 4 || (count = atol(argv[3])) <= 0) {
		fprintf(stderr, "usage: floor SOCKET PREFIX COUNT\n");
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
		int n = one_batch(c, jobs, argv[2]);
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
