/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ejob: the entries in hand, each from admission to release -- the
 * imperative shell around the job core (job.h). The consumer (engine.c)
 * hands the set stream ids and events; the set tells the consumer, through
 * its environment, when an entry has left the hand.
 *
 * The environment is what a job may use, lent by the consumer: the loop,
 * the command connection, the HTTP client, key names, scripts, the running
 * config and key, the credentials, the counters. Every pointer in it is
 * borrowed and must outlive the set; the consumer may replace cfg, key and
 * creds between callbacks (R16 reload), and the jobs read them afresh.
 *
 * A job is freed only when it is finished and no callback points at it;
 * callbacks never free the object whose callback chain they run in.
 * Single-threaded: call from the loop's thread.
 */
#ifndef WARRANTD_EJOB_H
#define WARRANTD_EJOB_H

#include <stddef.h>

#include <ev.h>

#include "config.h"
#include "counters.h"
#include "cred.h"
#include "http.h"
#include "oauth.h"
#include "rconn.h"
#include "record.h"
#include "script.h"
#include "store.h"
#include "vpool.h"
#include "webhook.h"

struct ejob_env {
	struct ev_loop *loop;
	struct rconn *cmd;			/* the command connection */
	struct script_batch *batch;		/* its transitions, batched */
	struct http_client *http;
	struct oauth *oauth;			/* NULL without [oauth]: the PDP's token */
	struct webhook *webhook;		/* NULL without [notify] webhook_url */
	const struct store_keys *keys;
	const struct script_set *scripts;	/* the Lua scripts (script.h) */
	const struct cfg *cfg;			/* the running config */
	const struct record_key *parsed_key;	/* NULL with signature = off */
	const unsigned char *verify_key;
	size_t verify_key_len;
	/* NULL: records are verified inline; else ES256 and RS256 records are
	 * verified on its workers (vpool.h) while the loop goes on. */
	struct vpool *vpool;
	const struct creds *creds;		/* one per [action] */
	struct engine_counters *n;		/* outcomes are counted here */
	/* An entry left the hand: read more, or finish stopping. Also called
	 * from inside ejobs_admit, ejobs_stop, ejobs_token_ready and the
	 * other ejobs_* calls; it must not free the set. */
	void (*released)(void *arg);
	void *arg;
	/* Optional (NULL: none), for metrics: told of every action call that got
	 * an answer or a transport error -- the action, the HTTP status (0:
	 * none), the call's duration and the delay from the entry's XADD (its
	 * stream id's ms) to the call's start. It must not call into the set. */
	void (*call_done)(void *arg, const char *action, long status, long long duration_ms,
			  long long queue_delay_ms);
	void *call_done_arg;
};

struct ejobs;	/* opaque: the entries in hand */

/* An empty set working in env (borrowed). NULL when out of memory. */
struct ejobs *ejobs_new(const struct ejob_env *env) __attribute__((warn_unused_result));

/* Frees every job, whatever still points at it: only once no callback can
 * run (after ejobs_abandon and the connections and HTTP client are freed).
 * NULL is a no-op. */
void ejobs_free(struct ejobs *s);

/* Entries in hand, finished or not. */
size_t ejobs_count(const struct ejobs *s);

/* An entry delivered to us (XREADGROUP, our PEL, XAUTOCLAIM): taken in hand
 * unless it already is, and its record loaded. `id` is the entry's `id`
 * field (NULL when it has none: a dead letter, no-id); both strings are read
 * only during the call. */
void ejobs_admit(struct ejobs *s, const char *stream_id, const char *id, int deliveries);

/* R11: an entry deleted from the stream while pending: dead-lettered
 * (entry-deleted). Skipped (0) when in hand already; -1 when out of memory. */
int ejobs_dead_deleted(struct ejobs *s, const char *stream_id)
	__attribute__((warn_unused_result));

/* R10: another consumer holds stream_id now: its attempt is abandoned. */
void ejobs_lease_lost(struct ejobs *s, const char *stream_id);

/* The entry is pending for nobody (acked elsewhere, or a Redis without
 * persistence forgot its PEL): no more renewals; a call's result is still
 * written (fenced by the hash), anything else is refused by the script. */
void ejobs_unpending(struct ejobs *s, const char *stream_id);

/* R17: the command connection is back: every load, write or re-dispatch
 * waiting on its backoff goes out now (a result in hand is written before a
 * stop's grace runs out, not a backoff later). */
void ejobs_redis_up(struct ejobs *s);

/* R6, R9: a token arrived; jobs waiting for one go on. */
void ejobs_token_ready(struct ejobs *s);

/* R15: no new call and no new wait from now on; jobs neither calling nor
 * holding a result to write are let go (they stay pending). */
void ejobs_stop(struct ejobs *s);

/* R10: the stream ids whose leases are to be renewed, up to max, into ids
 * (valid until the set changes). Returns how many. */
size_t ejobs_leased(const struct ejobs *s, const char **ids, size_t max);

/* Marks every job finished and drops its timer and HTTP call; frees none.
 * For engine_free, before the connections close and fire their callbacks. */
void ejobs_abandon(struct ejobs *s);

#endif
