/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * metrics: the daemon's own numbers in the Prometheus text format (0.0.4,
 * written by base/promtext), served on [metrics] listen by hsrv
 * (libmicrohttpd on the libev loop).
 *
 * Pure core, unit-tested without sockets:
 *   metrics_hist_*         the call-duration and queue-delay histograms
 *   metrics_format         a sample and the histograms -> exposition text
 *
 * Shell: metrics_new listens and answers GET /metrics with metrics_format
 * of a sample taken through a callback at that moment, 405 for another
 * method on /metrics, 404 for another path. Its budgets: METRICS_PER_PEER
 * connections from one address and METRICS_CLIENTS in all (more are closed
 * at once: a scrape from elsewhere is never queued behind them), a
 * connection idle for METRICS_TIMEOUT_S closed, a request head over
 * METRICS_REQ_MAX refused (431). A unix socket is 0660.
 *
 * The module reads nothing of the engine: warrantd.c fills a metrics_sample
 * from engine_counters()/engine_gauges() and forwards the engine's call
 * observer to metrics_observe_call().
 */
#ifndef WARRANTD_METRICS_H
#define WARRANTD_METRICS_H

#include <ev.h>
#include <stddef.h>

#include "base/counters.h"
#include "core/listen.h"
#include "core/gate.h"

#define METRICS_REQ_MAX		8192	/* bytes of a request head (MHD's memory per connection) */
#define METRICS_TIMEOUT_S	5	/* a connection idle this long is closed */
#define METRICS_CLIENTS		64	/* connections open at once */
#define METRICS_PER_PEER	8	/* of them from one IP address */
#define METRICS_ACTIONS_MAX	256	/* distinct action labels kept */

/* A heartbeat counter name (warrantd(7) §8, counters.h) as a metric name part:
 * "authFailures" -> "auth_failures". Writes at most n bytes with the NUL;
 * 0, or -1 when it does not fit. */
int metrics_snake_case(const char *camel, char *out, size_t n)
	__attribute__((warn_unused_result));

#define METRICS_SCOPES_MAX	16	/* narrowed tokens served; more are left out */

/* Plain data: what the daemon is at one moment. Strings are borrowed. Each
 * counter of counters.h's table is served as warrantd_<snake_case>_total. */
struct metrics_sample {
	struct engine_counters n;
	long long in_flight;
	const char *token_state;	/* "valid", "refreshing", "none" or "error" */
	long long token_expires_in_s;
	const char *redis_token_state;	/* the same, for [redis] auth's token */
	long long redis_token_expires_in_s;
	int redis_up;
	const char *version;
	long long start_time_s;
	/* the standard process_* metrics; a negative value is left out */
	double cpu_s;
	long long rss_bytes, open_fds, max_fds;
	long long reloads_ok, reloads_failed;	/* SIGHUPs applied, refused (R16) */
	/* §13: pauses, breakers and limits per action, as they stand at
	 * now_ms (wall clock); NULL: none shown */
	const struct gate *gate;
	long long now_ms;
	/* R6, §8: each action's own narrowed token (cred.h creds_scopes) */
	struct metrics_scope {
		const char *name, *state;	/* borrowed; state as token_state */
		long long expires_in_s;
	} scopes[METRICS_SCOPES_MAX];
	size_t nscopes;
};

/* ---- histograms ---- */

struct metrics_hist;

/* NULL when out of memory. */
struct metrics_hist *metrics_hist_new(void)
	__attribute__((warn_unused_result));
/* NULL is a no-op. */
void metrics_hist_free(struct metrics_hist *h);

/*
 * One finished action call: its duration, by its HTTP status's class
 * (metrics_status_class), and its delay from the XADD (the stream id's
 * milliseconds) to the start of the call; a negative value (clock skew)
 * counts as 0. `action` is copied. -1 when the action is new and
 * METRICS_ACTIONS_MAX are kept already, or out of memory: nothing is counted.
 */
int metrics_hist_observe(struct metrics_hist *h, const char *action, long status,
			 long long duration_ms, long long queue_delay_ms);

/* "1xx" to "5xx" for a status from 100 to 599, else "error" (0: no answer).
 * Static. */
const char *metrics_status_class(long status);

/*
 * A job reached `outcome` (done, expired, denied, failed or dead; any other
 * state is ignored) for `action` ("" when no record names one); a dead one
 * is counted under `reason` too. Strings are copied. -1 when the action or
 * reason is new and no room is left, or out of memory: nothing is counted.
 */
int metrics_hist_outcome(struct metrics_hist *h, const char *action, const char *outcome,
			 const char *reason);

/*
 * The exposition text of s and h (h may be NULL: empty histograms), ending
 * in a newline. Returns a malloc'd NUL-terminated string (caller frees) and
 * its length in *len, or NULL when out of memory.
 */
char *metrics_format(const struct metrics_sample *s, const struct metrics_hist *h, size_t *len)
	__attribute__((warn_unused_result));

/* ---- the server ---- */

struct metrics;

/* Fills *out for one scrape; called from the loop, never re-entered. */
typedef void metrics_sample_fn(void *arg, struct metrics_sample *out);

/*
 * Listens on addr (a unix socket: a stale socket file there is replaced, the
 * new one is 0660 -- the socket's group may scrape -- and removed by
 * metrics_free). sample and arg are borrowed and must outlive the
 * server. NULL with a message in err (nothing left open).
 */
struct metrics *metrics_new(struct ev_loop *loop, const struct listen_addr *addr,
			    metrics_sample_fn *sample, void *arg, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* As metrics_hist_observe on the server's own histograms; a failure is
 * logged once. */
void metrics_observe_call(struct metrics *m, const char *action, long status,
			  long long duration_ms, long long queue_delay_ms);

/* As metrics_hist_outcome on the server's own counters; a failure is
 * logged once. */
void metrics_observe_outcome(struct metrics *m, const char *action, const char *outcome,
			     const char *reason);

/* Closes every connection and the listener. NULL is a no-op. */
void metrics_free(struct metrics *m);

#endif
