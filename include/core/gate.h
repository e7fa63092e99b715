/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gate: whether an attempt of an action may start now on this worker
 * (warrantd(7) §13) -- pauses, [action NAME] max_in_flight, rate_per_s and
 * the circuit breaker (breaker_failures, breaker_open_ms). Pure: it reads no
 * clock (now comes in) and does nothing itself; the shell (ejob) asks before
 * an attempt, takes a place when it starts, and gives the place back with
 * the call's outcome. A job the gate turns away waits in hand without a state
 * change and without spending an attempt; R1 still ends it at its deadline.
 *
 * A place is held from the start of the attempt (its PDP question and token
 * exchange included) to the call's answer, so the target never sees more
 * than max_in_flight calls at once; rate_per_s spaces the starts 1/rate s
 * apart (a bucket of one: no burst, so no window of a second holds more).
 *
 * Breaker: closed -> (breaker_failures retryable failures in a row, R8)
 * open for breaker_open_ms -> half-open: one probe attempt -> closed when it
 * gets an answer that is not a retryable failure, open again when it does
 * not. An outcome of a call started before the circuit opened changes
 * nothing. Single-threaded.
 */
#ifndef WARRANTD_GATE_H
#define WARRANTD_GATE_H

#include <stddef.h>
#include <stdint.h>

/* Why an attempt may not start (GATE_GO: it may). */
enum gate_verdict {
	GATE_GO = 0,
	GATE_PAUSED,	/* the action or the whole queue is paused */
	GATE_OPEN,	/* the breaker is open, or half-open with its probe out */
	GATE_FULL,	/* max_in_flight places are taken */
	GATE_RATE,	/* rate_per_s: the next start is not due yet */
};

enum gate_breaker { GATE_CLOSED = 0, GATE_HALF_OPEN, GATE_BROKEN };

/* What became of a place given back. */
enum gate_result {
	GATE_NO_CALL,		/* no call was made (denied, expired, lost...) */
	GATE_CALL_OK,		/* an answer that is not a retryable failure */
	GATE_CALL_FAILED,	/* R8's retryable: 408, 425, 429, 5xx, transport */
};

/* One action's limits; 0 in a field: no such limit (breaker off). */
struct gate_limits {
	long max_in_flight, rate_per_s, breaker_failures, breaker_open_ms;
};

/* What the metrics and the heartbeat show of one action. */
struct gate_view {
	const char *action;	/* valid until the next gate_configure */
	int paused;		/* the action itself or the whole queue */
	enum gate_breaker breaker;
	long max_in_flight, in_flight;
};

struct gate;

/* A job held at the gate looks again at least this often. */
#define GATE_POLL_MS 1000

/* An empty gate: no action, no pause. NULL when out of memory. */
struct gate *gate_new(void) __attribute__((warn_unused_result));
/* NULL is a no-op. */
void gate_free(struct gate *g);

/* The configured actions (names and limits, n each; borrowed): an action
 * kept keeps its places and its breaker, a new one starts closed, one gone
 * is forgotten (a place given back for it later changes nothing). 0, or -1
 * when out of memory (the gate is as it was). */
int gate_configure(struct gate *g, const char *const *names, const struct gate_limits *lim,
		   size_t n) __attribute__((warn_unused_result));

/* The pauses, all of them (P:paused's fields; "*" is the whole queue;
 * names borrowed). 1 when that changed something, 0 when not, -1 when out
 * of memory (the old set is kept). */
int gate_set_paused(struct gate *g, const char *const *names, size_t n)
	__attribute__((warn_unused_result));
/* 1 when `action` is paused, by name or with the whole queue; action NULL:
 * the whole queue. */
int gate_paused(const struct gate *g, const char *action);
/* The paused names, comma-separated, into buf ("" when none); cut short
 * with a trailing "..." when it does not fit. */
void gate_paused_list(const struct gate *g, char *buf, size_t n);

/*
 * May an attempt of `action` start at now? An action the gate does not know
 * has only the pauses. *at (may be NULL): when the answer may change by time
 * alone (the next start rate_per_s allows, the end of an open interval), or
 * INT64_MAX when only an event changes it (a place given back, a resume, the
 * probe's outcome).
 */
enum gate_verdict gate_check(const struct gate *g, const char *action, int64_t now, int64_t *at);

/* An attempt of `action` starts (gate_check said GATE_GO at this now): it
 * holds a place until gate_done. 1 when it is the breaker's probe, else 0. */
int gate_take(struct gate *g, const char *action, int64_t now);

/* The place taken by gate_take (probe: what it returned) is given back. */
void gate_done(struct gate *g, const char *action, int probe, enum gate_result r, int64_t now);

/* The breaker of `action` as it stands at now (GATE_CLOSED for an action
 * the gate does not know, or without a breaker). */
enum gate_breaker gate_breaker_at(const struct gate *g, const char *action, int64_t now);

/* The configured actions, for the metrics: how many, and the i-th's view
 * at now. */
size_t gate_count(const struct gate *g);
void gate_view(const struct gate *g, size_t i, int64_t now, struct gate_view *out);

/* R6: whether a job held for verdict v is one to park (consumer_parks)
 * rather than wait in hand: a pause, which lasts until an operator ends it,
 * or an open breaker (the target is down). A limit (full, rate) frees
 * within a call's time and is waited out. */
int gate_parks(enum gate_verdict v);

/* R6: whether the parked entries of `action` stay parked at now: it is
 * paused, or its breaker is not closed (open, or half-open until its probe
 * closes it: entries queued again for the probe alone would only be parked
 * again). */
int gate_keeps_parked(const struct gate *g, const char *action, int64_t now);

/* "closed", "half-open", "open"; "go", "paused", "breaker-open", "full",
 * "rate". Static. */
const char *gate_breaker_name(enum gate_breaker b);
const char *gate_verdict_name(enum gate_verdict v);

/* When a job held at the gate for action looks again: the gate's own time
 * (the next start rate_per_s allows, the end of an open interval), the
 * deadline, or now + GATE_POLL_MS, whichever is first. *why (may be NULL):
 * gate_check's verdict. g NULL: no gate, GATE_GO. */
int64_t gate_hold_until(const struct gate *g, const char *action, int64_t now,
			int64_t deadline, enum gate_verdict *why);

/* What a call's answer gives its place back as: no_descriptor (the call
 * never went out), else retryable (R8) or not. */
enum gate_result gate_result_of(int no_descriptor, int retryable);

/* What a job's place at the gate does when its step changes: held says it
 * holds one, attempt that its step holds one (job_attempt_holds_gate). */
enum gate_place {
	GATE_PLACE_KEEP,	/* as it is */
	GATE_PLACE_TAKE,	/* take one (gate_take), then wake the next held job */
	GATE_PLACE_GIVE,	/* give it back as GATE_NO_CALL, then wake the next */
};
enum gate_place gate_place_next(int held, int attempt);

/* Whether a job held at the gate is woken now: it waits there, no wake is
 * on its way to it (kicked), and the gate lets action start. Wakes come
 * one per place that came free, the oldest first (the shell's walk); a
 * pause that ends, or a reload, wakes all. */
int gate_may_wake(const struct gate *g, const char *action, int64_t now, int waiting,
		  int kicked);

#endif
