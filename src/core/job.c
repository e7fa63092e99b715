/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * job: the state machine of one stream entry in hand. Pure: the clock and
 * the random words come in with the events; the shell performs the effects.
 */
#define _POSIX_C_SOURCE 200809L
#include "core/job.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/backoff.h"
#include "base/dec.h"
#include "base/names.h"
#include "base/wtime.h"


/* The one table of states (warrantd(7) §3.3): the name written to the hash, and
 * whether it is terminal -- the Lua transition gets its terminal set from
 * here (job_terminal_list). */
static const struct {
	const char *name;
	int terminal;
} states[] = {
	[JOB_NONE] = {"", 0},
	[JOB_QUEUED] = {"queued", 0},
	[JOB_RUNNING] = {"running", 0},
	[JOB_RETRYING] = {"retrying", 0},
	[JOB_AUTH_WAIT] = {"auth_wait", 0},
	[JOB_DONE] = {"done", 1},
	[JOB_EXPIRED] = {"expired", 1},
	[JOB_DENIED] = {"denied", 1},
	[JOB_FAILED] = {"failed", 1},
	[JOB_DEAD] = {"dead", 1},
	[JOB_CANCELLED] = {"cancelled", 1},
};

#define NSTATES ((int)(sizeof states / sizeof states[0]))

static const char *const event_names[] = {
	[JOB_EV_LOADED] = "loaded",
	[JOB_EV_NO_ID] = "no-id",
	[JOB_EV_ENTRY_DELETED] = "entry-deleted",
	[JOB_EV_CANNOT_CALL] = "cannot-call",
	[JOB_EV_EXCHANGED] = "exchanged",
	[JOB_EV_TIMER] = "timer",
	[JOB_EV_TOKEN_READY] = "token-ready",
	[JOB_EV_TOKEN_TIMEOUT] = "token-timeout",
	[JOB_EV_REDISPATCHED] = "redispatched",
	[JOB_EV_AUTHZ] = "authz",
	[JOB_EV_HTTP] = "http",
	[JOB_EV_LEASE_LOST] = "lease-lost",
	[JOB_EV_HANDED_BACK] = "handed-back",
	[JOB_EV_REDIS_ERROR] = "redis-error",
	[JOB_EV_GATE] = "gate",
	[JOB_EV_UNREPLICATED] = "unreplicated",
	[JOB_EV_PARKED] = "parked",
};

const char *
job_state_name(enum job_state st)
{
	if ((int)st < 0 || (int)st >= NSTATES)
		return "";
	return states[st].name;
}

int
job_state_parse(const char *s, enum job_state *out)
{
	int i = names_find(states, NSTATES, sizeof states[0], s);

	if (i < 0)
		return -1;
	*out = (enum job_state)i;
	return 0;
}

int
job_state_terminal(enum job_state st)
{
	return (int)st >= 0 && (int)st < NSTATES && states[st].terminal;
}

int
job_terminal_list(char *buf, size_t n)
{
	size_t w = 0;

	if (n == 0)
		return -1;
	buf[0] = '\0';
	for (int i = 0; i < NSTATES; i++) {
		if (!states[i].terminal)
			continue;
		/* appends, not snprintf */
		size_t k = strlen(states[i].name) + (w ? 1 : 0);
		if (k >= n - w)
			return -1;
		if (w)
			buf[w] = ' ';
		memcpy(buf + w + (w ? 1 : 0), states[i].name, strlen(states[i].name) + 1);
		w += k;
	}
	return 0;
}

static const char *
event_name(enum job_event_kind k)
{
	if ((int)k < 0 || (size_t)k >= sizeof event_names / sizeof event_names[0])
		return "unknown";
	return event_names[k];
}

static void detail(struct job_step *st, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
detail(struct job_step *st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->detail, sizeof st->detail, fmt, ap);
	va_end(ap);
}

/* Appends s to st->detail at `at` (cut at its size, as vsnprintf would
 * cut); returns the new end. The details every job writes ("call 1 of 5",
 * "204 from target after 1 call(s)") are built with these, not vsnprintf:
 * 2,100 instructions a job (issue 10: no snprintf on the hot path). */
static size_t
detail_put(struct job_step *st, size_t at, const char *s)
{
	size_t room = sizeof st->detail - 1 - at, n = strlen(s);

	if (n > room)
		n = room;
	memcpy(st->detail + at, s, n);
	st->detail[at + n] = '\0';
	return at + n;
}

static size_t
detail_put_int(struct job_step *st, size_t at, long long v)
{
	char buf[24], *p = buf;

	if (v < 0)
		*p++ = '-';
	*dec_put(p, v < 0 ? (size_t)(0ULL - (unsigned long long)v) : (size_t)v) = '\0';
	return detail_put(st, at, buf);
}

/* now + delay without wrapping: a far-off time is simply past the deadline. */
static int64_t
add_sat(int64_t now, int64_t delay)
{
	if (delay > 0 && now > INT64_MAX - delay)
		return INT64_MAX;
	return now + delay;
}

/* ---- transitions ---- */

static void
finish(struct job_step *st, struct job *job, enum job_state next, unsigned fx,
       enum reason reason)
{
	st->next = next;
	st->effects |= fx;
	st->reason = reason;
	job->state = next;
	job->awaiting = 0;
}

static void
expire(struct job_step *st, struct job *job)
{
	char dl[WTIME_RFC3339_LEN];

	finish(st, job, JOB_EXPIRED, JOB_FX_WRITE_STATE | JOB_FX_NOTIFY | JOB_FX_ACK,
	    REASON_DEADLINE_PASSED);
	detail(st, "deadline %s passed", wtime_format_rfc3339(job->expires_at_ms, dl, sizeof dl));
}

static void
dead(struct job_step *st, struct job *job, enum reason reason)
{
	finish(st, job, JOB_DEAD, JOB_FX_WRITE_STATE | JOB_FX_DEAD_LETTER | JOB_FX_NOTIFY |
	    JOB_FX_ACK, reason);
}

/* R1, R9: a wait for a token ends at the deadline or after auth_wait_max_ms
 * from its start, whichever is first: the timer the shell arms. */
static int64_t
token_wait_end(const struct job_policy *pol, const struct job *job)
{
	int64_t end = add_sat(job->wait_since_ms, pol->auth_wait_max_ms);

	return job->expires_at_ms > 0 && job->expires_at_ms < end ? job->expires_at_ms : end;
}

/* Into auth_wait (the wait starts now unless it runs already), with fx. */
static void
enter_token_wait(struct job_step *st, const struct job_policy *pol, struct job *job,
		 unsigned fx, int64_t now)
{
	if (job->state != JOB_AUTH_WAIT)
		job->wait_since_ms = now;
	finish(st, job, JOB_AUTH_WAIT, fx | JOB_FX_WAIT_TOKEN, REASON_NONE);
	st->at_ms = token_wait_end(pol, job);
}

static void
wait_token(struct job_step *st, const struct job_policy *pol, struct job *job, int64_t now)
{
	/* Writing auth_wait over auth_wait would only add a no-change audit entry. */
	unsigned fx = job->state == JOB_AUTH_WAIT ? 0 : JOB_FX_WRITE_STATE;

	enter_token_wait(st, pol, job, fx, now);
	job->waits = 0;	/* a PDP wait, if any, ended with this written state */
	detail(st, "no token with enough life; waiting for one");
}

/* R8's count: the calls since the last warrantctl retry (§11), which
 * gives a fresh budget without making `attempts` go down. */
static int
calls_used(const struct job *job)
{
	int n = job->calls - job->calls_base;

	return n > 0 ? n : 0;
}

static void
call(struct job_step *st, struct job *job, const struct job_policy *pol)
{
	job->calls++;
	job->awaiting = JOB_FX_CALL;
	st->effects |= JOB_FX_CALL;
	size_t at = detail_put(st, 0, "call ");
	at = detail_put_int(st, at, calls_used(job));
	at = detail_put(st, at, " of ");
	detail_put_int(st, at, pol->max_attempts);
}

/* After the authority allowed: this job's own token first, if the action
 * calls with one, else the call. */
static void
proceed(struct job_step *st, const struct job_policy *pol, struct job *job)
{
	if (pol->exchange_needed) {
		job->awaiting = JOB_FX_EXCHANGE;
		st->effects |= JOB_FX_EXCHANGE;
		detail(st, "exchanging for this job's token");
		return;
	}
	call(st, job, pol);
}

/* R8: the calls made by every worker over every delivery are the limit. */
static int
calls_used_up(const struct job_policy *pol, const struct job *job)
{
	return pol->max_attempts > 0 && calls_used(job) >= pol->max_attempts;
}

/* R1 -> R8 -> §13 gate -> R6 -> R5 -> the call, in that order, before every
 * attempt. */
static void
start_attempt(struct job_step *st, const struct job_policy *pol, struct job *job,
	      int token_ok, int gate_shut, int64_t now)
{
	if (now >= job->expires_at_ms) {
		expire(st, job);
		return;
	}
	if (calls_used_up(pol, job)) {
		dead(st, job, REASON_MAX_ATTEMPTS);
		detail(st, "%d of %d calls already made", calls_used(job), pol->max_attempts);
		return;
	}
	if (gate_shut) {
		/* §13: a pause, a limit or an open breaker spends no attempt
		 * and writes nothing; R1 still ends the wait (at_ms). */
		job->awaiting = JOB_FX_GATE_WAIT;
		st->effects = JOB_FX_GATE_WAIT;
		st->at_ms = job->expires_at_ms;
		detail(st, "held back by a pause, a limit or an open breaker");
		return;
	}
	if (pol->token_needed && !token_ok) {
		wait_token(st, pol, job, now);
		return;
	}
	/* §6: while the PDP stays down the hash keeps saying `retrying`; the
	 * state written when the wait ends is its one closing audit entry. */
	finish(st, job, JOB_RUNNING,
	    job->waits > 0 ? 0 : JOB_FX_START_ATTEMPT | JOB_FX_WRITE_STATE, REASON_NONE);
	if (pol->authz_enabled) {
		job->awaiting = JOB_FX_AUTHZ;
		st->effects |= JOB_FX_AUTHZ;
		detail(st, "asking the authority");
	} else {
		proceed(st, pol, job);
	}
}

/* Arms a retry at now + delay, or expires now when it would fire too late.
 * `quiet`: the wait is already written (§6), only the timer is armed. */
static void
retry_in(struct job_step *st, struct job *job, int64_t delay, int64_t now, const char *why,
	 int quiet)
{
	char dl[WTIME_RFC3339_LEN];
	int64_t at = add_sat(now, delay);

	if (at >= job->expires_at_ms) {
		finish(st, job, JOB_EXPIRED, JOB_FX_WRITE_STATE | JOB_FX_NOTIFY | JOB_FX_ACK,
		    REASON_DEADLINE_PASSED);
		detail(st, "%s; a retry in %lld ms would land past deadline %s", why,
		    (long long)delay, wtime_format_rfc3339(job->expires_at_ms, dl, sizeof dl));
		return;
	}
	finish(st, job, JOB_RETRYING, (quiet ? 0 : JOB_FX_WRITE_STATE) | JOB_FX_RETRY_AT, REASON_NONE);
	st->at_ms = at;
	detail(st, "%s; retry in %lld ms", why, (long long)delay);
}

static void
on_loaded(struct job_step *st, const struct job_policy *pol, struct job *job,
	  const struct job_event *ev, int64_t now)
{
	char t[WTIME_RFC3339_LEN];

	job->deliveries = ev->deliveries;
	if (ev->attempts > job->calls)
		job->calls = ev->attempts;
	/* a base above attempts (a hash edited by hand) is no budget of its own */
	if (ev->attempts_base > 0)
		job->calls_base = ev->attempts_base < job->calls ? ev->attempts_base : job->calls;
	if (!ev->hash_exists) {
		/* Nothing to write a state into: only the dead letter tells. */
		finish(st, job, JOB_NONE, JOB_FX_DEAD_LETTER | JOB_FX_ACK, REASON_RECORD_MISSING);
		detail(st, "no decision hash for this id");
		return;
	}
	if (job_state_terminal(ev->stored_state)) {
		finish(st, job, ev->stored_state, JOB_FX_ACK, REASON_NONE);
		detail(st, "already %s; acked, not executed", job_state_name(ev->stored_state));
		return;
	}
	if (ev->record_status != RECORD_OK) {
		dead(st, job, record_status_reason(ev->record_status));
		detail(st, "record rejected: %s", reason_name(st->reason));
		return;
	}
	if (ev->record == NULL) {
		detail(st, "loaded event without a record; ignored");
		return;
	}
	if (pol->max_deliveries > 0 && ev->deliveries > pol->max_deliveries) {
		dead(st, job, REASON_TOO_MANY_DELIVERIES);
		detail(st, "delivered %d times, more than max_deliveries %d",
		    ev->deliveries, pol->max_deliveries);
		return;
	}
	job->expires_at_ms = ev->record->expires_at_ms;
	job->not_before_ms = ev->record->not_before_ms;
	if (job->not_before_ms > now) {
		finish(st, job, JOB_QUEUED, JOB_FX_WRITE_STATE | JOB_FX_RESCHEDULE, REASON_NONE);
		st->at_ms = job->not_before_ms;
		detail(st, "not before %s; back on the schedule",
		    wtime_format_rfc3339(job->not_before_ms, t, sizeof t));
		return;
	}
	start_attempt(st, pol, job, ev->token_ok, ev->gate_shut, now);
}

static void
on_authz(struct job_step *st, const struct job_policy *pol, struct job *job,
	 const struct job_event *ev, int64_t now)
{
	switch (ev->authz) {
	case JOB_AUTHZ_ALLOW:
		job->awaiting = 0;
		if (job->waits > 0)
			st->effects |= JOB_FX_WRITE_STATE;	/* the PDP wait ends */
		job->waits = 0;
		if (pol->token_needed && !ev->token_ok)
			wait_token(st, pol, job, now);
		else
			proceed(st, pol, job);
		return;
	case JOB_AUTHZ_DENY:
		finish(st, job, JOB_DENIED, JOB_FX_WRITE_STATE | JOB_FX_NOTIFY | JOB_FX_ACK,
		    REASON_AUTHORITY_DENIED);
		detail(st, "the authority denied it");
		return;
	case JOB_AUTHZ_UNAVAILABLE:
		/* Not a call of the action: its own counter, bounded by the deadline. */
		job->waits++;
		retry_in(st, job, backoff_ms(0, pol->retry_base_ms, pol->retry_cap_ms,
		    job->waits, ev->rnd), now, "authority unavailable", job->waits > 1);
		return;
	}
	detail(st, "unknown authority answer %d; ignored", (int)ev->authz);
}

/* R9 for a token the IdP or the target refused: drop it (one refresh
 * however many jobs saw it), wait for a new one, re-dispatch. */
static void
refresh_and_redispatch(struct job_step *st, const struct job_policy *pol, struct job *job,
		       int64_t now, const char *why)
{
	if (now >= job->expires_at_ms) {
		/* R1: no wait begins past the deadline; the token is
		 * refused all the same */
		expire(st, job);
		st->effects |= JOB_FX_DROP_TOKEN;
		return;
	}
	job->redispatch = 1;
	enter_token_wait(st, pol, job, JOB_FX_WRITE_STATE | JOB_FX_DROP_TOKEN, now);
	detail(st, "%s; refresh, then re-dispatch", why);
}

/* R8 after a call that got no usable answer, or none that went out: at the
 * deadline expired (R1: a call cut there, job_time_left, is not retried,
 * whatever calls are left), with the calls spent dead, else retrying after
 * `retry_after_ms` (-1: none) or the backoff. `why` begins the detail. */
static void
retry_or_end(struct job_step *st, const struct job_policy *pol, struct job *job,
	     int64_t retry_after_ms, uint64_t rnd, int64_t now, const char *why)
{
	char dl[WTIME_RFC3339_LEN], retry[160];

	if (now >= job->expires_at_ms) {
		expire(st, job);
		detail(st, "%s; deadline %s passed", why,
		    wtime_format_rfc3339(job->expires_at_ms, dl, sizeof dl));
		return;
	}
	if (calls_used_up(pol, job)) {
		dead(st, job, REASON_MAX_ATTEMPTS);
		detail(st, "%s; %d of %d calls made", why, calls_used(job), pol->max_attempts);
		return;
	}
	int64_t delay = retry_after_ms >= 0 ? retry_after_ms :
	    backoff_ms(0, pol->retry_base_ms, pol->retry_cap_ms, calls_used(job), rnd);
	snprintf(retry, sizeof retry, "%s; retry %d", why, calls_used(job));
	retry_in(st, job, delay, now, retry, 0);
}

static void
on_http(struct job_step *st, const struct job_policy *pol, struct job *job,
	const struct job_event *ev, int64_t now)
{
	int s = ev->http_status;
	char why[64];

	job->awaiting = 0;
	if (s >= 200 && s <= 299) {
		finish(st, job, JOB_DONE, JOB_FX_WRITE_STATE | JOB_FX_ACK, REASON_OK);
		size_t at = detail_put_int(st, 0, s);
		at = detail_put(st, at, " from target after ");
		at = detail_put_int(st, at, calls_used(job));
		detail_put(st, at, " call(s)");
		return;
	}
	if (s == 0 && ev->no_descriptor && job->calls_base < job->calls) {
		/* R8 counts calls made: this one never left the host (no
		 * descriptor), so its attempt is given back -- on this
		 * worker; `attempts` in Redis, R13's fence, still counts it */
		job->calls_base++;
		snprintf(why, sizeof why, "not sent: no descriptor left (EMFILE)");
	} else if (s == 0 && ev->call_fail != CALLFAIL_NONE)
		snprintf(why, sizeof why, "no answer from target (%s)",
		    callfail_name(ev->call_fail));
	else if (s == 0)
		snprintf(why, sizeof why, "no answer from target");
	else
		snprintf(why, sizeof why, "%d from target", s);
	if (ev->dpop_proof_refused)
		snprintf(why + strlen(why), sizeof why - strlen(why), " (invalid_dpop_proof)");
	if ((s == 401 || (s == 403 && ev->invalid_token)) && pol->token_needed &&
	    !ev->dpop_proof_refused) {
		/* R9: refresh and re-dispatch; R12 and R8 bound how often. */
		snprintf(why + strlen(why), sizeof why - strlen(why), ": token rejected");
		refresh_and_redispatch(st, pol, job, now, why);
	} else if (job_status_retryable(s) || ev->dpop_proof_refused) {
		/* §9: a refused proof is retried (R8); a new token would not help */
		retry_or_end(st, pol, job, ev->retry_after_ms, ev->rnd, now, why);
	} else {
		/* Also a 401 on an action without an OAuth token: no refresh can fix it. */
		finish(st, job, JOB_FAILED, JOB_FX_WRITE_STATE | JOB_FX_NOTIFY | JOB_FX_ACK,
		    REASON_HTTP_4XX);
		detail(st, "%s: permanent failure", why);
	}
}

static void
on_token_ready(struct job_step *st, const struct job_policy *pol, struct job *job,
	       int gate_shut, int64_t now)
{
	if (job->redispatch) {
		/* R9: take the entry again (delivery count +1) before running it. */
		st->effects |= JOB_FX_REDISPATCH;
		detail(st, "token ready; re-dispatching");
		return;
	}
	start_attempt(st, pol, job, 1, gate_shut, now);
}

/* R9: the XCLAIM counted a delivery; R12 is checked before the run. */
static void
on_redispatched(struct job_step *st, const struct job_policy *pol, struct job *job,
		const struct job_event *ev, int64_t now)
{
	job->redispatch = 0;
	job->deliveries = ev->deliveries > 0 ? ev->deliveries : job->deliveries + 1;
	if (pol->max_deliveries > 0 && job->deliveries > pol->max_deliveries) {
		dead(st, job, REASON_TOO_MANY_DELIVERIES);
		detail(st, "re-dispatched: delivered %d times, more than max_deliveries %d",
		    job->deliveries, pol->max_deliveries);
		return;
	}
	start_attempt(st, pol, job, ev->token_ok, ev->gate_shut, now);
}

static void
idp_failed(struct job_step *st, struct job *job, enum reason why, const char *what)
{
	finish(st, job, JOB_FAILED, JOB_FX_WRITE_STATE | JOB_FX_NOTIFY | JOB_FX_ACK,
	    why != REASON_NONE ? why : REASON_IDP_REFUSED);
	detail(st, "the IdP refused this job's token (%s)%s", reason_name(st->reason), what);
}

/* §9: the job's own token (exchange, per-record) came, or the IdP's
 * answer says what to do instead -- the same rules as for the worker's. */
static void
on_exchanged(struct job_step *st, const struct job_policy *pol, struct job *job,
	     const struct job_event *ev, int64_t now)
{
	switch (ev->exchange) {
	case JOB_XCH_OK:
		job->awaiting = 0;
		if (job->waits > 0)
			st->effects |= JOB_FX_WRITE_STATE;	/* the wait ends */
		job->waits = 0;
		call(st, job, pol);
		return;
	case JOB_XCH_REFRESH:
		job->awaiting = 0;
		job->waits = 0;
		refresh_and_redispatch(st, pol, job, now, "the IdP refused the client");
		return;
	case JOB_XCH_REFUSED:
		job->awaiting = 0;
		job->waits = 0;
		if (job->idp_refused++ == 0) {
			refresh_and_redispatch(st, pol, job, now, "the IdP refused this job's token");
			return;
		}
		idp_failed(st, job, ev->idp_reason, ", again after a refresh");
		return;
	case JOB_XCH_FAILED:
		job->awaiting = 0;
		idp_failed(st, job, ev->idp_reason, "");
		return;
	case JOB_XCH_UNAVAILABLE:
		/* Like the PDP: not a call, bounded by the deadline alone. */
		job->waits++;
		retry_in(st, job, backoff_ms(0, pol->retry_base_ms, pol->retry_cap_ms,
		    job->waits, ev->rnd), now, "token for this job unavailable", job->waits > 1);
		return;
	}
	detail(st, "unknown exchange answer %d; ignored", (int)ev->exchange);
}

long
job_time_left(const struct job *job, long limit_ms, int64_t now_ms)
{
	if (job->expires_at_ms <= 0)
		return limit_ms;
	if (now_ms >= job->expires_at_ms)
		return 0;
	int64_t left = job->expires_at_ms - now_ms;
	return left < limit_ms ? (long)left : limit_ms;
}

int64_t
job_retain_ms(const struct job *job, int64_t skew_ms, int64_t retain_ms, int64_t now_ms)
{
	/* 2^52 ms (142,000 years), beyond any window: no sum below overflows. */
	const int64_t cap = INT64_C(1) << 52;
	int64_t after = 0;

	if (retain_ms < 1)
		retain_ms = 1;
	if (retain_ms > cap)
		retain_ms = cap;
	if (skew_ms < 0)
		skew_ms = 0;
	if (job->expires_at_ms > 0 && job->expires_at_ms < cap && skew_ms < cap &&
	    job->expires_at_ms + skew_ms > now_ms)
		after = job->expires_at_ms + skew_ms - now_ms;
	if (after > cap)
		after = cap;
	return after + retain_ms;
}

/* R1, R9: the wait's timer fired with no token. At the deadline the job
 * expires; after auth_wait_max_ms the entry goes back to the group, so a
 * worker that has a token takes it; a timer that fired early is armed again. */
static void
on_token_timeout(struct job_step *st, const struct job_policy *pol, struct job *job,
		 int64_t now)
{
	if (now >= job->expires_at_ms) {
		expire(st, job);
		return;
	}
	if (now < token_wait_end(pol, job)) {
		st->effects = JOB_FX_WAIT_TOKEN;
		st->at_ms = token_wait_end(pol, job);
		detail(st, "still waiting for a token");
		return;
	}
	job->awaiting = JOB_FX_HANDBACK;
	st->effects = JOB_FX_HANDBACK;
	size_t at = detail_put(st, 0, "no token within ");
	at = detail_put_int(st, at, pol->auth_wait_max_ms);
	detail_put(st, at, " ms; handing the entry back");
}

static void
on_cannot_call(struct job_step *st, const struct job_policy *pol, struct job *job,
	       const struct job_event *ev, int64_t now)
{
	job->awaiting = 0;
	switch (ev->no_call) {
	case JOB_NOCALL_ACTION_GONE:
		dead(st, job, record_status_reason(RECORD_UNKNOWN_ACTION));
		detail(st, "the record's action is no longer configured");
		return;
	case JOB_NOCALL_BAD_REQUEST:
		dead(st, job, REASON_REQUEST_INVALID);
		detail(st, "the action's URL cannot be built for this record");
		return;
	case JOB_NOCALL_TOKEN_GONE:
		wait_token(st, pol, job, now);
		return;
	case JOB_NOCALL_DEADLINE:
		expire(st, job);
		return;
	}
	detail(st, "unknown cannot-call reason %d; ignored", (int)ev->no_call);
}

/* R19: the call step reached too few replicas, so no call was made. The
 * attempt was counted with the step (R13), as a call that got no answer
 * would be: the same backoff, the same budget, the same deadline. */
static void
on_unreplicated(struct job_step *st, const struct job_policy *pol, struct job *job,
		const struct job_event *ev, int64_t now)
{
	char why[96];

	job->awaiting = 0;
	snprintf(why, sizeof why, "%lld of %d replica(s) acknowledged the call step; not called",
	    ev->replicas < 0 ? 0 : ev->replicas, pol->wait_replicas);
	retry_or_end(st, pol, job, -1, ev->rnd, now, why);
}

/* R19: the writes a failover must not lose are waited for -- the one that
 * starts a call (its counted attempt is the fence of everything after it)
 * and a final one (state, dead letter, ack) -- when the policy asks. */
static void
wait_replicas(struct job_step *st, const struct job_policy *pol)
{
	if (pol->wait_replicas <= 0 || !job_step_writes(st))
		return;
	if (!(st->effects & JOB_FX_CALL) && !job_state_terminal(st->next) &&
	    !(st->effects & JOB_FX_DEAD_LETTER))
		return;
	st->effects |= JOB_FX_WAIT_REPLICAS;
	st->write.wait_replicas = pol->wait_replicas;
}

enum job_repl
job_replicated(const struct job_step *st, long long replicas)
{
	if (!(st->effects & JOB_FX_WAIT_REPLICAS) || replicas >= st->write.wait_replicas)
		return JOB_REPL_GO;
	return (st->effects & JOB_FX_CALL) ? JOB_REPL_NO_CALL : JOB_REPL_SHORT;
}

/* How st's transition is fenced (struct job_write), from what this hand
 * wrote before: the job as job_next left it. */
static void
fence(struct job_step *st, const struct job *job)
{
	unsigned fx = st->effects;
	int call = (fx & JOB_FX_CALL) != 0;

	st->write.fence_attempts = call ? job->calls - 1 : job->fenced ? job->fence : -1;
	st->write.incr_attempts = call;
	st->write.require_owner = job->owner_set;
	st->write.ack = (fx & (JOB_FX_ACK | JOB_FX_RESCHEDULE)) != 0;
	st->write.skip_lease = job->deleted;
	st->write.keep_unpending = job_state_terminal(st->next) && job->fenced && !call;
}

/* Which events the current state accepts. */
static int
accepts(const struct job *job, enum job_event_kind k)
{
	/* Also after a terminal state was decided: its write is what failed. */
	if (k == JOB_EV_REDIS_ERROR)
		return !job->redis_broken;
	if (job_state_terminal(job->state))
		return 0;
	/* §13: held at the gate, the job waits for the gate alone */
	if (job->awaiting == JOB_FX_GATE_WAIT)
		return k == JOB_EV_GATE || k == JOB_EV_LEASE_LOST || k == JOB_EV_PARKED;
	switch (k) {
	case JOB_EV_LOADED:
	case JOB_EV_NO_ID:
	case JOB_EV_ENTRY_DELETED:
		return job->state == JOB_NONE;
	case JOB_EV_CANNOT_CALL:
		return job->state == JOB_RUNNING && (job->awaiting == JOB_FX_CALL ||
		    job->awaiting == JOB_FX_EXCHANGE || job->awaiting == JOB_FX_AUTHZ);
	case JOB_EV_TIMER:
		return job->state == JOB_RETRYING;
	case JOB_EV_TOKEN_READY:
	case JOB_EV_TOKEN_TIMEOUT:
		return job->state == JOB_AUTH_WAIT && job->awaiting != JOB_FX_HANDBACK;
	case JOB_EV_REDISPATCHED:
		return job->state == JOB_AUTH_WAIT && job->redispatch &&
		    job->awaiting != JOB_FX_HANDBACK;
	case JOB_EV_HANDED_BACK:
		return job->state == JOB_AUTH_WAIT && job->awaiting == JOB_FX_HANDBACK;
	case JOB_EV_AUTHZ:
		return job->state == JOB_RUNNING && job->awaiting == JOB_FX_AUTHZ;
	case JOB_EV_HTTP:
		return job->state == JOB_RUNNING && job->awaiting == JOB_FX_CALL;
	case JOB_EV_EXCHANGED:
		return job->state == JOB_RUNNING && job->awaiting == JOB_FX_EXCHANGE;
	case JOB_EV_LEASE_LOST:
		return 1;
	case JOB_EV_PARKED:	/* R6: held at the gate (above), or for a token */
		return job->state == JOB_AUTH_WAIT && job->awaiting != JOB_FX_HANDBACK;
	case JOB_EV_GATE:	/* only while held: above */
		break;
	case JOB_EV_UNREPLICATED:
		return job->state == JOB_RUNNING && job->awaiting == JOB_FX_CALL;
	case JOB_EV_REDIS_ERROR:
		break;	/* answered above */
	}
	return 0;
}

struct job_step
job_next(const struct job_policy *pol, struct job *job, const struct job_event *ev,
	 int64_t now_ms)
{
	struct job_step st;

	memset(&st, 0, sizeof st);
	st.next = job->state;
	st.reason = REASON_NONE;
	if (!accepts(job, ev->kind)) {
		detail(&st, "event %s makes no sense in state %s; ignored",
		    event_name(ev->kind), job->state == JOB_NONE ? "none" :
		    job_state_name(job->state));
		return st;
	}
	switch (ev->kind) {
	case JOB_EV_LOADED:
		on_loaded(&st, pol, job, ev, now_ms);
		break;
	case JOB_EV_TIMER:
	case JOB_EV_GATE:
		start_attempt(&st, pol, job, ev->token_ok, ev->gate_shut, now_ms);
		break;
	case JOB_EV_TOKEN_READY:
		on_token_ready(&st, pol, job, ev->gate_shut, now_ms);
		break;
	case JOB_EV_REDISPATCHED:
		on_redispatched(&st, pol, job, ev, now_ms);
		break;
	case JOB_EV_NO_ID:
		finish(&st, job, JOB_NONE, JOB_FX_DEAD_LETTER | JOB_FX_ACK, REASON_NO_ID);
		detail(&st, "stream entry has no valid id field");
		break;
	case JOB_EV_ENTRY_DELETED:
		/* Gone from the stream and the PEL: nothing to ack, only to
		 * tell, and no lease to check. */
		job->deleted = 1;
		finish(&st, job, JOB_NONE, JOB_FX_DEAD_LETTER | JOB_FX_END, REASON_ENTRY_DELETED);
		detail(&st, "entry deleted from the stream while pending");
		break;
	case JOB_EV_CANNOT_CALL:
		on_cannot_call(&st, pol, job, ev, now_ms);
		break;
	case JOB_EV_EXCHANGED:
		on_exchanged(&st, pol, job, ev, now_ms);
		break;
	case JOB_EV_AUTHZ:
		on_authz(&st, pol, job, ev, now_ms);
		break;
	case JOB_EV_HTTP:
		on_http(&st, pol, job, ev, now_ms);
		break;
	case JOB_EV_TOKEN_TIMEOUT:
		on_token_timeout(&st, pol, job, now_ms);
		break;
	case JOB_EV_HANDED_BACK:	/* the new entry is the record's now, ours acked */
	case JOB_EV_PARKED:	/* R6: parked, its deadline and attempts as they are */
		job->awaiting = 0;
		st.effects = JOB_FX_END;
		detail(&st, ev->kind == JOB_EV_PARKED ? "held back by its action: parked until "
		    "it goes on" : "handed back to the group under a new stream entry");
		break;
	case JOB_EV_LEASE_LOST:
		job->awaiting = 0;
		st.effects = JOB_FX_RELEASE;
		detail(&st, "another consumer holds the entry; attempt abandoned");
		break;
	case JOB_EV_REDIS_ERROR:
		/* R17: the hash cannot be read or written, so only the dead
		 * letter tells (as for no-id); the reply is the detail. */
		job->redis_broken = 1;
		finish(&st, job, JOB_DEAD, JOB_FX_DEAD_LETTER | JOB_FX_ACK, REASON_REDIS_ERROR);
		detail_put(&st, 0, ev->redis_error ? ev->redis_error : "");
		break;
	case JOB_EV_UNREPLICATED:
		on_unreplicated(&st, pol, job, ev, now_ms);
		break;
	}
	/* §9: no token because the IdP refused it for good (invalid_scope,
	 * invalid_target...): a wait would not mend it, and neither would a
	 * hand-back to another worker of the same client */
	if (ev->token_refused != REASON_NONE && !ev->token_ok && pol->token_needed &&
	    st.next == JOB_AUTH_WAIT && (st.effects & (JOB_FX_WAIT_TOKEN | JOB_FX_HANDBACK))) {
		st.effects &= JOB_FX_DROP_TOKEN;
		job->redispatch = 0;
		finish(&st, job, JOB_FAILED, JOB_FX_WRITE_STATE | JOB_FX_NOTIFY | JOB_FX_ACK,
		    ev->token_refused);
		detail(&st, "no token: the IdP refused it (%s)", reason_name(ev->token_refused));
	}
	if (job_state_terminal(st.next) || (st.effects & (JOB_FX_ACK | JOB_FX_RESCHEDULE)))
		st.effects |= JOB_FX_END;
	fence(&st, job);
	st.write.call_result = ev->kind == JOB_EV_HTTP && job_step_writes(&st);
	wait_replicas(&st, pol);
	return st;
}

int
job_step_writes(const struct job_step *st)
{
	return (st->effects & (JOB_FX_WRITE_STATE | JOB_FX_ACK | JOB_FX_DEAD_LETTER |
	    JOB_FX_NOTIFY | JOB_FX_RESCHEDULE | JOB_FX_CALL)) != 0;
}

void
job_written(struct job *job, const struct job_step *st, long long fence_attempts)
{
	if (st->effects & JOB_FX_CALL) {
		job->fenced = fence_attempts >= 0;
		job->fence = fence_attempts;
	}
	if (st->effects & JOB_FX_START_ATTEMPT)
		job->owner_set = 1;
}

int
job_runs_on_at_stop(const struct job *job, const struct job_step *st, enum job_doing doing)
{
	switch (doing) {
	case JOB_DOING_WRITE:
	case JOB_DOING_CALL:
		return 1;
	case JOB_DOING_WRITE_AGAIN:
		/* the result of a call this hand made: within the grace, once
		 * Redis answers (a write of another step is sent again by
		 * whoever takes the entry next) */
		return (st->effects & JOB_FX_END) && job->fenced;
	case JOB_DOING_NOTHING:
		break;
	}
	return 0;
}
