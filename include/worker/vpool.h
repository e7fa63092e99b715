/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * vpool: records verified on worker threads (issue 10). An ES256 record's
 * signature check is ~72 µs of OpenSSL, the most of a job's CPU; with the
 * loop on one core it caps the daemon, while the next core has room.
 *
 * The loop submits a record (its bytes are copied, its policy copied with
 * another owner of the parsed key, so a reload may let go of its own); a
 * worker runs record_load on it and puts the result on a done queue; an
 * ev_async wakes the loop, which hands each result to its callback, on the
 * loop's thread. Every submission ends in exactly one of: its callback
 * once, or vpool_cancel (its result, if any, is dropped and freed).
 *
 * The worker loads with pol->action_known NULL: the config belongs to the
 * loop. The callback applies record_check_action itself, with the running
 * config, so the result is the one record_load gives inline.
 *
 * Every call happens on the loop's thread.
 */
#ifndef WARRANTD_VPOOL_H
#define WARRANTD_VPOOL_H

#include <stddef.h>
#include <stdint.h>

#include <ev.h>

#include "core/record.h"

/* The limit on worker threads ([records] verify_threads). */
#define VPOOL_THREADS_MAX 16

/* What record_load said of a record; everything in it is the callback's
 * to keep or free. */
struct vpool_result {
	enum record_status status;
	struct record *rec;		/* RECORD_OK: the record (record_free) */
	char *owner;			/* record_load's *owner_out (free); or NULL */
	char *raw;			/* the bytes submitted (free) */
	char detail[200];		/* record_load's detail */
};

/* Runs on the loop's thread, never inside a vpool_* call. It may submit
 * and cancel other tickets; `res` lives until it returns. */
typedef void vpool_done_cb(void *arg, struct vpool_result *res);

struct vpool;
struct vpool_ticket;	/* one submission, until its callback or its cancel */

/* `nthreads` workers (1 to VPOOL_THREADS_MAX) and the async watcher on
 * `loop` (borrowed, outlives the pool). NULL on failure, with nothing left
 * running. */
struct vpool *vpool_new(struct ev_loop *loop, unsigned nthreads)
	__attribute__((warn_unused_result));

/* Stops and joins the workers and frees every ticket left without calling
 * back (cancel them first: their holders' pointers go stale). NULL is a
 * no-op. Not from inside a callback. */
void vpool_free(struct vpool *p);

/*
 * Queues record_load(pol, expected_id, raw, now_ms) for a worker. pol must
 * have a parsed key (pol->parsed_key, not ES256/RS256 raw bytes: HS256 is
 * kept inline); it, its issuer and both strings are copied, the key gets
 * another owner. `done(arg, ...)` is called later from the loop. Returns
 * the ticket, valid until that callback starts or vpool_cancel; NULL when
 * out of memory (nothing is queued: verify inline).
 */
struct vpool_ticket *vpool_submit(struct vpool *p, const struct record_policy *pol,
				  const char *expected_id, const char *raw, int64_t now_ms,
				  vpool_done_cb *done, void *arg)
	__attribute__((warn_unused_result));

/* The ticket's callback will not be called; its work and result are freed
 * (now when no worker has taken it, else once the loop sees it done). */
void vpool_cancel(struct vpool *p, struct vpool_ticket *t);

/* Tickets submitted and neither called back nor freed (for tests). */
size_t vpool_pending(const struct vpool *p);

#endif
