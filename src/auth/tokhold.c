/* SPDX-License-Identifier: BSD-2-Clause */
/* tokhold: one token's life -- held, refreshed, retried, spaced, told. */
#define _DEFAULT_SOURCE		/* explicit_bzero */
#include "auth/tokhold.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/backoff.h"
#include "base/log.h"
#include "base/rnd.h"
#include "base/wtime.h"
#include "core/token.h"

struct tokhold {
	struct ev_loop *loop;
	const struct tokhold_ops *ops;
	void *src;
	struct tokhold_params p;

	char *token;		/* NULL: none held */
	int64_t expires_at_ms;	/* monotonic; 0 when none held */
	uint64_t generation;
	long long refreshes;
	int failures;		/* fetches failed since the last success */
	long long *failed_total;	/* tokhold_count_failures_into; may be NULL */
	int refused;		/* R9: tokens refused in a row, each fetched after
				   the last one's refusal */
	int after_refusal;	/* the token held was fetched because one was refused */
	int started, in_flight, warned_short;
	int64_t sent_ms;	/* the fetch in flight's (monotonic) */
	int64_t last_fetch_ms;	/* the previous request's; 0 before the first */
	char refused_code[64];	/* tokhold_failed's fatal_code, "" otherwise */
	char last_error[200];

	ev_timer fetch_timer;	/* proactive refresh, or a retry */
	ev_timer expiry_timer;
	ev_timer notify_timer;	/* 0 s: the listener runs from the loop */

	tokhold_listener *listener;
	void *listener_arg;
	int notified_have;
	uint64_t notified_gen;
};

static void
arm(struct tokhold *h, ev_timer *t, int64_t delay_ms)
{
	/* A timer counts from the loop's time of waking, which a long callback
	 * before this one leaves behind: R9's spacing would fire that much
	 * early (seen: a 2 s gap 103 ms short, ASan under load). */
	ev_now_update(h->loop);
	ev_timer_stop(h->loop, t);
	ev_timer_set(t, delay_ms > 0 ? (double)delay_ms / 1000.0 : 0.0, 0.0);
	ev_timer_start(h->loop, t);
}

static void
schedule_notify(struct tokhold *h)
{
	if (!ev_is_active(&h->notify_timer))
		arm(h, &h->notify_timer, 0);
}

static void
drop_token(struct tokhold *h)
{
	if (h->token != NULL) {
		explicit_bzero(h->token, strlen(h->token));
		free(h->token);
	}
	h->token = NULL;
	h->expires_at_ms = 0;
	ev_timer_stop(h->loop, &h->expiry_timer);
}

static void
note_failure(struct tokhold *h, long status, const char *detail, const char *fatal_code)
{
	char q[512], st[32] = "";
	int64_t delay, left;

	h->in_flight = 0;
	if (h->failures < 1000000)
		h->failures++;
	snprintf(h->refused_code, sizeof h->refused_code, "%s", fatal_code ? fatal_code : "");
	snprintf(h->last_error, sizeof h->last_error, "%s", detail);
	if (h->failed_total != NULL)
		(*h->failed_total)++;
	delay = backoff_ms(0, TOKEN_RETRY_BASE_MS, TOKEN_RETRY_CAP_MS, h->failures, rnd_u64());
	left = h->token ? h->expires_at_ms - wtime_mono_ms() : 0;
	arm(h, &h->fetch_timer, delay);
	if (status >= 0)
		snprintf(st, sizeof st, "status=%ld ", status);
	/* detail is the source's own line: never a token or a program's output */
	log_warn(h->ops->ev_error, "%ssource=%s detail=%s failures=%d retry_ms=%lld held=%d "
	    "held_expires_in_ms=%lld", st, h->ops->source, log_quote(q, sizeof q, detail),
	    h->failures, (long long)delay, h->token != NULL, (long long)(left > 0 ? left : 0));
}

/* Single flight: nothing when a fetch is in flight. */
static void
fetch(struct tokhold *h)
{
	char why[256] = "";
	int64_t sent = 0;

	ev_timer_stop(h->loop, &h->fetch_timer);
	if (h->in_flight)
		return;
	if (h->ops->fetch(h->src, &sent, why, sizeof why) != 0) {
		note_failure(h, h->ops->start_fail_status, why[0] ? why : "cannot start the request",
		    NULL);
		return;
	}
	h->in_flight = 1;
	h->sent_ms = h->last_fetch_ms = sent;
	log_debug(h->ops->ev_request, "source=%s failures=%d held=%d", h->ops->source,
	    h->failures, h->token != NULL);
}

void
tokhold_fetched(struct tokhold *h, char *token, int64_t life)
{
	int64_t now = wtime_mono_ms();
	int64_t refresh_at = token_refresh_before_ms(h->sent_ms, life, h->p.refresh_ratio,
	    rnd_u64(), h->p.lead_ms);

	h->in_flight = 0;
	drop_token(h);
	h->token = token;
	h->expires_at_ms = h->sent_ms + life;
	h->generation++;
	h->refreshes++;
	h->failures = 0;
	h->refused_code[0] = '\0';
	h->after_refusal = h->refused > 0;
	arm(h, &h->fetch_timer, refresh_at - now);
	arm(h, &h->expiry_timer, h->expires_at_ms - now);
	log_info(h->ops->ev_refreshed, "source=%s expires_in_ms=%lld refresh_in_ms=%lld ms=%lld",
	    h->ops->source, (long long)life, (long long)(refresh_at - now),
	    (long long)(now - h->sent_ms));
	if (h->ops->ev_short != NULL && life <= h->p.lead_ms && !h->warned_short) {
		h->warned_short = 1;
		log_warn(h->ops->ev_short, "expires_in_ms=%lld lead_ms=%ld detail=\"the token "
		    "dies before every connection can be re-authenticated (a blocking read holds "
		    "AUTH up to block_ms): lower [redis] block_ms\"", (long long)life, h->p.lead_ms);
	}
	schedule_notify(h);
}

void
tokhold_failed(struct tokhold *h, long status, const char *detail, const char *fatal_code)
{
	note_failure(h, status, detail, fatal_code);
}

void
tokhold_fetch_again(struct tokhold *h)
{
	h->in_flight = 0;
	arm(h, &h->fetch_timer, 0);
}

/* ---- watchers ---- */

static void
on_fetch_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct tokhold *h = w->data;
	(void)loop, (void)revents;

	if (h->token != NULL)
		h->refused = 0;	/* it lived to its refresh: nobody refused it */
	fetch(h);
}

static void
on_expiry(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct tokhold *h = w->data;
	int64_t now = wtime_mono_ms();
	(void)loop, (void)revents;

	if (h->token == NULL)
		return;
	if (now < h->expires_at_ms) {	/* the loop's clock ran ahead */
		arm(h, &h->expiry_timer, h->expires_at_ms - now);
		return;
	}
	drop_token(h);
	log_warn(h->ops->ev_expired, "source=%s failures=%d", h->ops->source, h->failures);
	schedule_notify(h);
	if (!h->in_flight && !ev_is_active(&h->fetch_timer))
		fetch(h);
}

static void
on_notify(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct tokhold *h = w->data;
	int have = h->token != NULL;
	(void)loop, (void)revents;

	if (have == h->notified_have && (!have || h->generation == h->notified_gen))
		return;
	h->notified_have = have;
	h->notified_gen = h->generation;
	if (h->listener != NULL)
		h->listener(h->listener_arg, h->token, h->expires_at_ms);
}

/* ---- public ---- */

static void
init_timer(struct tokhold *h, ev_timer *t, void (*cb)(struct ev_loop *, ev_timer *, int))
{
	ev_init(t, cb);
	t->data = h;
}

struct tokhold *
tokhold_new(struct ev_loop *loop, const struct tokhold_ops *ops, void *src,
	    const struct tokhold_params *p)
{
	struct tokhold *h = calloc(1, sizeof *h);

	if (h == NULL)
		return NULL;
	h->loop = loop;
	h->ops = ops;
	h->src = src;
	h->p = *p;
	init_timer(h, &h->fetch_timer, on_fetch_timer);
	init_timer(h, &h->expiry_timer, on_expiry);
	init_timer(h, &h->notify_timer, on_notify);
	return h;
}

void
tokhold_free(struct tokhold *h)
{
	if (h == NULL)
		return;
	if (h->in_flight)
		h->ops->cancel(h->src);
	ev_timer_stop(h->loop, &h->fetch_timer);
	ev_timer_stop(h->loop, &h->notify_timer);
	drop_token(h);
	free(h);
}

void
tokhold_start(struct tokhold *h)
{
	if (h->started)
		return;
	h->started = 1;
	fetch(h);
}

void
tokhold_set_params(struct tokhold *h, const struct tokhold_params *p)
{
	h->p = *p;
}

void
tokhold_refetch(struct tokhold *h)
{
	if (!h->started)
		return;
	if (h->in_flight)
		h->ops->cancel(h->src);
	h->in_flight = 0;
	fetch(h);
}

const char *
tokhold_token(const struct tokhold *h, int64_t now_ms, long timeout_ms)
{
	if (h->token == NULL || !token_usable(h->expires_at_ms, now_ms, timeout_ms))
		return NULL;
	return h->token;
}

int64_t
tokhold_expires_at_ms(const struct tokhold *h)
{
	return h->token != NULL ? h->expires_at_ms : 0;
}

const char *
tokhold_state_name(const struct tokhold *h)
{
	if (h->token != NULL)
		return "valid";
	if (h->in_flight || (h->failures == 0 && ev_is_active(&h->fetch_timer)))
		return "refreshing";
	return h->failures > 0 ? "error" : "none";
}

const char *
tokhold_refused_code(const struct tokhold *h)
{
	return h->token == NULL && h->refused_code[0] ? h->refused_code : NULL;
}

const char *
tokhold_last_error(const struct tokhold *h)
{
	return h->last_error;
}

uint64_t
tokhold_generation(const struct tokhold *h)
{
	return h->generation;
}

long long
tokhold_refreshes(const struct tokhold *h)
{
	return h->refreshes;
}

void
tokhold_count_failures_into(struct tokhold *h, long long *failed)
{
	h->failed_total = failed;
}

/* R9: refreshes that refusals cause are spaced, and back off when the
 * fresh token is refused too. */
void
tokhold_refused(struct tokhold *h, uint64_t gen)
{
	if (h->token == NULL || gen != h->generation)
		return;
	h->refused = h->after_refusal && h->refused < 1000 ? h->refused + 1 : 1;
	drop_token(h);
	schedule_notify(h);
	if (h->in_flight) {
		log_info(h->ops->ev_refused, "refreshing=1 refused_in_row=%d", h->refused);
		return;
	}
	int64_t wait = token_refused_fetch_at_ms(h->last_fetch_ms, h->p.min_refresh_interval_ms,
	    h->refused) - wtime_mono_ms();
	log_info(h->ops->ev_refused, "refreshing=0 refused_in_row=%d fetch_in_ms=%lld",
	    h->refused, (long long)(wait > 0 ? wait : 0));
	if (wait > 0)
		arm(h, &h->fetch_timer, wait);
	else
		fetch(h);
}

void
tokhold_accepted(struct tokhold *h, uint64_t gen)
{
	if (gen == h->generation)
		h->refused = 0;
}

void
tokhold_set_listener(struct tokhold *h, tokhold_listener *cb, void *arg)
{
	h->listener = cb;
	h->listener_arg = arg;
}
