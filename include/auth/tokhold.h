/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tokhold: the one holder of a short-lived token's life (warrantd(7) §9, R6,
 * R9, R20), whatever its source: the worker's OAuth token and an action's
 * (oauth.h), the Redis token from the IdP or from [redis] token_command
 * (rtoken.h). The holder keeps the token and when it dies (wtime_mono_ms),
 * fetches the first one on tokhold_start, refreshes at refresh_ratio of the
 * life and no later than lead_ms before the end (token_refresh_before_ms),
 * retries a failed fetch with backoff and full jitter (TOKEN_RETRY_*) while
 * the old token lives and after, drops it when it dies, spaces the
 * refreshes a refusal causes (token_refused_fetch_at_ms), and tells its
 * listener -- from the loop, never from inside the call that caused it.
 * One fetch at a time: however many ask, the source sees one request.
 *
 * A source plugs in with struct tokhold_ops: `fetch` starts one request and
 * later answers it exactly once with tokhold_fetched or tokhold_failed (or
 * tokhold_fetch_again), unless `cancel` came first. The source reads
 * its own wire format; the arithmetic is token.h's, pure.
 *
 * Single-threaded: the loop's thread only. Nothing here logs a token.
 */
#ifndef WARRANTD_TOKHOLD_H
#define WARRANTD_TOKHOLD_H

#include <ev.h>
#include <stddef.h>
#include <stdint.h>

struct tokhold;	/* opaque */

/* What a source does, and the names its log lines carry. */
struct tokhold_ops {
	/* Starts one fetch. 0: *sent_mono_ms is when it went (wtime_mono_ms,
	 * read last), and exactly one tokhold_fetched, tokhold_failed or
	 * tokhold_fetch_again follows from the loop, never from inside this
	 * call, unless `cancel` comes first. -1: nothing in flight, one line
	 * in why (never a secret). */
	int (*fetch)(void *src, int64_t *sent_mono_ms, char *why, size_t whylen);
	/* Abandons the fetch in flight: no answer follows. */
	void (*cancel)(void *src);
	const char *source;	/* the logs' source= ("oauth", "command") */
	long start_fail_status;	/* status= of a fetch that could not start; < 0: none */
	/* log events, static strings; ev_short NULL: not said */
	const char *ev_request, *ev_refreshed, *ev_error, *ev_expired, *ev_refused,
	    *ev_short;
};

/* Refresh timing and R9's spacing, copied. */
struct tokhold_params {
	double refresh_ratio;		/* [oauth] refresh_ratio */
	long min_refresh_interval_ms;	/* [oauth] min_refresh_interval_ms */
	long lead_ms;			/* 0: refresh_ratio only */
};

/*
 * A holder for one source. ops and src are borrowed (both outlive the
 * holder), loop too; p is copied. Fetches nothing before tokhold_start.
 * Caller frees with tokhold_free; NULL when out of memory.
 */
struct tokhold *tokhold_new(struct ev_loop *loop, const struct tokhold_ops *ops, void *src,
			    const struct tokhold_params *p)
	__attribute__((warn_unused_result));

/* Cancels the fetch in flight (ops->cancel), stops every watcher, wipes the
 * token, frees. NULL is a no-op. Not from inside the listener. */
void tokhold_free(struct tokhold *h);

/* Fetches the first token at once. A second call does nothing. */
void tokhold_start(struct tokhold *h);

/* New timing (a reload), from the next token on. */
void tokhold_set_params(struct tokhold *h, const struct tokhold_params *p);

/* The source changed (a reload): the fetch in flight is cancelled and one
 * starts at once; the token held stays in use until the new one comes.
 * Nothing before tokhold_start. */
void tokhold_refetch(struct tokhold *h);

/* ---- the source's answers (from the loop, once per fetch) ---- */

/* A token (taken: a new string the holder wipes and frees) that lives
 * lifetime_ms (> 0) from the fetch's sent_mono_ms. */
void tokhold_fetched(struct tokhold *h, char *token, int64_t lifetime_ms);

/* The fetch failed: status (the logs' status=; < 0: none), detail one line
 * that holds no secret, fatal_code the error code when no retry mends it
 * (tokhold_refused_code), else NULL. Retried with backoff. */
void tokhold_failed(struct tokhold *h, long status, const char *detail, const char *fatal_code);

/* The fetch ended without an answer and should go again at once (RFC 9449
 * §8's nonce challenge): neither a failure nor a refusal. */
void tokhold_fetch_again(struct tokhold *h);

/* ---- readers ---- */

/* R6: the token when its life left at now_ms (wtime_mono_ms) is longer than
 * timeout_ms + TOKEN_SAFETY_MS, else NULL. Owned by the holder, valid until
 * control returns to the loop or the next tokhold_* call. */
const char *tokhold_token(const struct tokhold *h, int64_t now_ms, long timeout_ms);

/* When the token held dies (wtime_mono_ms), or 0 when none is held. */
int64_t tokhold_expires_at_ms(const struct tokhold *h);

/* warrantd(7) §8 tokenState, static: "valid" (held; a refresh may be under
 * way), "refreshing" (none held, a fetch in flight or due), "error" (none
 * held, the last fetch failed, a retry scheduled), "none". */
const char *tokhold_state_name(const struct tokhold *h);

/* With no token held, the fatal_code of the last failure, else NULL. Owned
 * by the holder. */
const char *tokhold_refused_code(const struct tokhold *h);

/* The last failure's detail ("" when none since tokhold_new). Owned. */
const char *tokhold_last_error(const struct tokhold *h);

/* A number that changes with every token received (0 before the first). */
uint64_t tokhold_generation(const struct tokhold *h);

/* Tokens received since tokhold_new. */
long long tokhold_refreshes(const struct tokhold *h);

/* Each failed fetch from now on adds 1 to *failed (borrowed; NULL: none). */
void tokhold_count_failures_into(struct tokhold *h, long long *failed);

/* ---- the users' news ---- */

/*
 * R9/R20: the token of generation gen was refused. When it is still the one
 * held it is dropped and one fetch starts, unless one is in flight: not
 * before min_refresh_interval_ms after the previous request, and with
 * exponential backoff when the token refused was itself fetched after a
 * refusal (token_refused_fetch_at_ms). Nothing with no token held.
 */
void tokhold_refused(struct tokhold *h, uint64_t gen);

/* A call with the token of generation gen was accepted: R9's streak of
 * refusals ends. */
void tokhold_accepted(struct tokhold *h, uint64_t gen);

/*
 * cb(arg, token, expires_at_ms) from the loop whenever a token arrives (the
 * new one, valid during the call only, and when it dies) or the one held is
 * lost (NULL, 0); never from inside a tokhold_* call, once per change. It
 * may call any tokhold_* function except tokhold_free. One listener; cb
 * NULL: none. arg is borrowed.
 */
typedef void tokhold_listener(void *arg, const char *token, int64_t expires_at_ms);
void tokhold_set_listener(struct tokhold *h, tokhold_listener *cb, void *arg);

#endif
