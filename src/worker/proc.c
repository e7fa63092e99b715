/* SPDX-License-Identifier: BSD-2-Clause */
/* proc: the process's own limits (proc.h). */
#define _DEFAULT_SOURCE	/* explicit_bzero */
#include "worker/proc.h"

#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <malloc.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <jansson.h>

/* Mirrors http.c's HTTP_MAX_IDLE and metrics.c's client cap, with room for
 * the IdP, PDP, webhook, sentinels, logs and the odd pipe. */
#define IDLE_HTTP 1024L
#define SPARE 128L

long
proc_fds_needed(long max_in_flight, long shards)
{
	return max_in_flight + IDLE_HTTP + 2 * (shards > 0 ? shards : 1) + SPARE;
}

int
proc_harden(long fds_needed, char *msg, size_t n)
{
	struct rlimit none = {0, 0}, core, fds;

	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
		snprintf(msg, n, "cannot turn core dumps off: %s", strerror(errno));
		return -1;
	}
	/* Not dumpable is what keeps secrets off the disk; the limit of 0 says
	 * so to anyone who looks. Under the units' system call filter
	 * setrlimit is refused (EPERM), and LimitCORE=0 has set it already. */
	if (getrlimit(RLIMIT_CORE, &core) == 0 && (core.rlim_cur != 0 || core.rlim_max != 0))
		(void)setrlimit(RLIMIT_CORE, &none);
	if (getrlimit(RLIMIT_NOFILE, &fds) != 0) {
		snprintf(msg, n, "cannot read the descriptor limit: %s", strerror(errno));
		return 1;
	}
	if (fds.rlim_cur != RLIM_INFINITY && fds.rlim_cur < (rlim_t)fds_needed) {
		rlim_t want = (rlim_t)fds_needed;
		fds.rlim_cur = fds.rlim_max == RLIM_INFINITY || fds.rlim_max > want ?
		    want : fds.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &fds);
		(void)getrlimit(RLIMIT_NOFILE, &fds);
	}
	if (fds.rlim_cur != RLIM_INFINITY && fds.rlim_cur < (rlim_t)fds_needed) {
		snprintf(msg, n, "the descriptor limit is %llu, below the %ld that max_in_flight "
		    "and the connection pools may need: raise LimitNOFILE",
		    (unsigned long long)fds.rlim_cur, fds_needed);
		return 1;
	}
	return 0;
}

/* jansson's free: zero the block first. Its size is malloc's own word
 * (glibc's malloc_usable_size), so jansson's blocks stay plain malloc ones:
 * a string from json_dumps that a caller frees with free() is fine. */
static void
wipe_free(void *p)
{
	if (p != NULL) {
		explicit_bzero(p, malloc_usable_size(p));
		free(p);
	}
}

void
proc_wipe_json(void)
{
	json_set_alloc_funcs(malloc, wipe_free);
}

int
proc_wipe_json_check(size_t n, int c)
{
	unsigned char *p = malloc(n);
	int zero = 1;

	if (p == NULL)
		return 0;
	memset(p, c, n);
	size_t usable = malloc_usable_size(p);
	explicit_bzero(p, usable);	/* what wipe_free does before free */
	for (size_t i = 0; i < n; i++)
		zero &= p[i] == 0;
	free(p);
	return zero && usable >= n;
}

void
proc_usage(struct proc_usage *u)
{
	struct rusage ru;
	struct rlimit fds;
	long long rss = -1;
	char line[128];
	FILE *f = fopen("/proc/self/statm", "r");

	u->cpu_s = getrusage(RUSAGE_SELF, &ru) == 0 ?
	    (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	    (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6 : -1;
	if (f != NULL) {	/* "size resident shared ...", in pages */
		if (fgets(line, sizeof line, f) != NULL) {
			char *end, *p = line;
			(void)strtoll(p, &end, 10);
			p = end;
			rss = strtoll(p, &end, 10);
			if (end == p || rss < 0)
				rss = -1;
		}
		fclose(f);
	}
	u->rss_bytes = rss >= 0 ? rss * sysconf(_SC_PAGESIZE) : -1;
	u->open_fds = -1;
	DIR *d = opendir("/proc/self/fd");
	if (d != NULL) {
		long long n = 0;
		for (struct dirent *e; (e = readdir(d)) != NULL;)
			n += e->d_name[0] != '.';
		closedir(d);
		u->open_fds = n - 1;	/* the directory's own descriptor */
	}
	u->max_fds = getrlimit(RLIMIT_NOFILE, &fds) == 0 && fds.rlim_cur != RLIM_INFINITY ?
	    (long long)fds.rlim_cur : -1;
}
