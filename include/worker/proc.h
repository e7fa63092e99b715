/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * proc: what the daemon asks of its own process before it reads a secret.
 * No core dump may carry the client secret, private keys, the Redis
 * password or a live token to disk, and the descriptor limit must cover the
 * connections the configuration can open. Shell: prctl and setrlimit.
 */
#ifndef WARRANTD_PROC_H
#define WARRANTD_PROC_H

#include <stddef.h>

/*
 * The descriptors a worker may hold at once with max_in_flight calls and
 * `shards` shards (0: one stream): a socket per call in flight, curl's idle
 * connections (HTTP_MAX_IDLE), two Redis connections per shard, the metrics
 * clients and a margin for the IdP, PDP, webhook, logs and sentinels. Pure.
 */
long proc_fds_needed(long max_in_flight, long shards);

/*
 * Marks the process not dumpable (no core, no ptrace by other users, /proc
 * files root-only), sets the core size limit to 0 where it may (a unit's
 * LimitCORE=0 and system call filter do it instead), and raises the soft
 * descriptor limit towards fds_needed (up to the hard limit). 0 when all
 * holds; 1 when the descriptor limit stays below fds_needed (msg says the
 * numbers: a warning, the worker still runs); -1 when the process could not
 * be made undumpable (msg says why).
 */
int proc_harden(long fds_needed, char *msg, size_t n) __attribute__((warn_unused_result));

/* This process's use of the machine, for the process_* metrics; a value
 * that cannot be read is -1. */
struct proc_usage {
	double cpu_s;			/* user + system */
	long long rss_bytes, open_fds, max_fds;
};

void proc_usage(struct proc_usage *u);

/*
 * jansson's memory wiped when it is freed: token responses, exchanged tokens
 * and webhook bodies pass through jansson, and its parse buffers and strings
 * would otherwise stay in freed memory. Installs a free that zeroes the
 * block (malloc_usable_size bytes) first; blocks stay malloc's, so a
 * json_dumps string freed with free() is fine. Call once, before any jansson
 * value exists (warrantd and warrantctl's main).
 */
void proc_wipe_json(void);

/* For the test: a block of n bytes filled with c is zeroed over its whole
 * usable size as the installed free does (1), checked before the free, so
 * no freed memory is read. */
int proc_wipe_json_check(size_t n, int c);

#endif
