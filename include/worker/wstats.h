/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wstats: the per-minute buckets the console's charts are drawn from
 * (issue 39; warrantd(7) §8). Each worker counts, between two heartbeats,
 * its jobs by outcome, its calls and their milliseconds by action and its
 * dead letters by reason, and adds them to the hash P:stats:<minute>
 * (minute = Unix ms / 60000) with HINCRBY, then PEXPIREs it to 26 hours:
 * plain commands appended to the heartbeat's own pipeline on the same
 * connection, so that no job pays a command or a round trip. Buckets add
 * up across workers (HINCRBY) and outlive a console's restart.
 *
 * Fields: "o.STATE" (done, failed, dead, expired, denied, cancelled),
 * "c.ACTION" calls, "ms.ACTION" their summed duration, "d.REASON" dead
 * letters. A flush that cannot be sent (Redis down) keeps its counts for
 * the next one; one sent and lost is lost (counts are for people, not for
 * billing).
 *
 * It also sits between the engine and its observers (metrics): the engine
 * gives eops wstats_on_call / wstats_on_outcome with the struct wstats as
 * their argument, and wstats forwards every event to the observers set
 * with wstats_set_next_call / _outcome.
 */
#ifndef WARRANTD_WSTATS_H
#define WARRANTD_WSTATS_H

#include <stddef.h>
#include <stdint.h>


struct wstats;

#define WSTATS_TTL_MS	(26LL * 3600 * 1000)
#define WSTATS_FIELDS	256	/* distinct fields between two flushes */

/* NULL when out of memory. Caller frees with wstats_free. */
struct wstats *wstats_new(void) __attribute__((warn_unused_result));
/* NULL is a no-op. */
void wstats_free(struct wstats *s);

/* The observers to forward to (NULL: none); arg borrowed, given to both
 * (engine.h: the outcome observer shares the call observer's arg). */
void wstats_set_next_call(struct wstats *s, void (*fn)(void *arg, const char *action, long status,
			  long long duration_ms, long long queue_delay_ms), void *arg);
void wstats_set_next_outcome(struct wstats *s, void (*fn)(void *arg, const char *action,
			     const char *state, const char *reason));

/* worker/engine.h's engine_call_observer and engine_outcome_observer (not
 * included: engine includes this), arg the struct wstats. */
void wstats_on_call(void *arg, const char *action, long status, long long duration_ms,
		    long long queue_delay_ms);
void wstats_on_outcome(void *arg, const char *action, const char *state, const char *reason);

/* The bucket's key: "<prefix>stats:<minute>", where paused_key is the
 * shard's P:paused ("<prefix>paused"). 0, or -1 when it does not fit. */
int wstats_key(const char *paused_key, int64_t now_ms, char *buf, size_t n)
	__attribute__((warn_unused_result));

/* Sends one command of a flush (argv borrowed for the call): 0, or -1
 * when it could not be appended (Redis down). The engine's goes through
 * its operations table (engine_ops.h), on shard 0's command connection. */
typedef int wstats_send_fn(void *arg, int argc, const char **argv);

/* Appends the counts since the last flush to the connection's pipeline
 * through send (HINCRBY each, PEXPIRE), into the bucket of now_ms, and
 * starts counting afresh; what could not be sent waits for the next flush.
 * Nothing when nothing happened or send is NULL (not connected). */
void wstats_flush(struct wstats *s, wstats_send_fn *send, void *arg, const char *paused_key,
		  int64_t now_ms);

#endif
