/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pace SOCKET PREFIX COUNT RATE: enqueues bench-1 ... bench-COUNT (records
 * already written by mkrecords with BENCH_NO_XADD=1) onto PREFIX:jobs at a
 * steady RATE per second, as a decider would over time, and prints
 * "bench-<i> <ms>" for each: the ms part of the stream id Redis gave it,
 * the moment the job was enqueued. bench/run.sh pairs these with the fake
 * target's arrival times for the latency line. Sync hiredis; not part of
 * the daemon.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void
sleep_until_ns(long long t)
{
	struct timespec ts = {(time_t)(t / 1000000000LL), (long)(t % 1000000000LL)};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static long long
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int
main(int argc, char **argv)
{
	char jobs[256], id[64];
	long count;
	double rate;

	if (argc != 5 || (count = atol(argv[3])) <= 0 || (rate = atof(argv[4])) <= 0) {
		fprintf(stderr, "usage: pace SOCKET PREFIX COUNT RATE\n");
		return 64;
	}
	redisContext *c = redisConnectUnix(argv[1]);
	if (c == NULL || c->err) {
		fprintf(stderr, "pace: cannot connect\n");
		return 1;
	}
	snprintf(jobs, sizeof jobs, "%s:jobs", argv[2]);
	long long t0 = mono_ns(), step = (long long)(1e9 / rate);
	for (long i = 1; i <= count; i++) {
		sleep_until_ns(t0 + (i - 1) * step);
		snprintf(id, sizeof id, "bench-%ld", i);
		redisReply *r = redisCommand(c, "XADD %s * id %s", jobs, id);
		if (r == NULL || r->type != REDIS_REPLY_STRING) {
			fprintf(stderr, "pace: XADD failed\n");
			return 1;
		}
		printf("%s %lld\n", id, strtoll(r->str, NULL, 10));
		freeReplyObject(r);
	}
	redisFree(c);
	return fflush(stdout) == 0 ? 0 : 1;
}
