/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wread: what the console shows, read from Redis as [redis.monitor] (else
 * as [redis]'s user, as warrantctl does): read-only commands that the
 * monitor's ACL line allows (conf/redis-acl.conf), on warrantctl's handle
 * (ctl/clir.h: the daemon's rconn and disc, waited for).
 *
 * Synchronous, because the console answers one request at a time on
 * libmicrohttpd's one thread, each a few round trips on a local socket; a
 * console that watches many shards wants the async rconn (issue 39, later).
 * A lost connection is made again once within the request, else at the
 * next. [redis] tls, sentinels and cluster are followed as warrantctl
 * follows them (allow_hosts, the clear-text rule, -ASK).
 *
 * The overview's fields per stream are warrantctl status --json's, by the
 * same names, so that the browser test compares the two.
 */
#ifndef WARRANTD_WREAD_H
#define WARRANTD_WREAD_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "conf/config.h"
#include "wroute.h"

struct wread;

/* cfg borrowed: it must outlive the reader. Reads the verification key
 * (for the records shown) now. NULL with one line in err. Caller frees with
 * wread_free. */
struct wread *wread_new(struct cfg *cfg, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* NULL is a no-op; wipes the key. */
void wread_free(struct wread *r);

/*
 * {"now": ms, "streams": [one object per shard, warrantctl status's fields
 * plus "alive" and each consumer's "heartbeatAgeMs"], "paused": {...}}.
 * A new object (caller json_decref's), or NULL with one line in err.
 */
json_t *wread_overview(struct wread *r, int64_t now_ms, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* {"jobs": [...], "more": bool}: q's page of the jobs found, newest first
 * within each source (pending, queued, scheduled, dead, audit). */
json_t *wread_jobs(struct wread *r, const struct wroute_jobq *q, int64_t now_ms, char *err,
		   size_t errlen) __attribute__((warn_unused_result));

/* One job: {"id", "state": {hash fields}, "record": {...} or "recordError",
 * "audit": [...], "deadLetters": [...]}; NULL with err "not found" when
 * it has no hash and no audit entry. */
json_t *wread_job(struct wread *r, const char *id, int64_t now_ms, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* {"reasons": {reason: count}, "total": n} over every shard's P:dead. */
json_t *wread_dead(struct wread *r, char *err, size_t errlen) __attribute__((warn_unused_result));

/* The charts' per-minute buckets (worker/wstats.h) of the last `minutes`
 * minutes up to now_ms, shard 0's (where every worker writes them):
 * {"first": minute, "buckets": [{field: n}, ...]} oldest first, {} for a
 * minute without one. */
json_t *wread_stats(struct wread *r, int64_t now_ms, long minutes, char *err, size_t errlen)
	__attribute__((warn_unused_result));

#endif
