/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * job: the state machine of one stream entry in hand (warrantd(7) §3.3, R1-R4,
 * R8, R9, R12), as a pure function. The shell feeds it events and performs
 * the effects it returns; it reads no clock (now comes in) and draws no random
 * numbers (a random word comes in with each event).
 *
 * One attempt runs: R1 deadline -> (R6) token -> (R5) authority -> (token
 * exchange, for an action with token = exchange) -> the call.
 * `calls` counts calls of the action (R8's max_attempts); waiting on a token or
 * on an unreachable PDP is bounded by the deadline alone. A wait for a token
 * ends at the deadline (expired) or, after auth_wait_max_ms, by handing the
 * entry back to the group (R9: JOB_FX_HANDBACK), whichever comes first.
 */
#ifndef WARRANTD_JOB_H
#define WARRANTD_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "core/callfail.h"
#include "core/reason.h"
#include "core/record.h"

enum job_state {
	JOB_NONE = 0,	/* not yet loaded, or no hash */
	JOB_QUEUED,
	JOB_RUNNING,
	JOB_RETRYING,
	JOB_AUTH_WAIT,
	JOB_DONE,
	JOB_EXPIRED,
	JOB_DENIED,
	JOB_FAILED,
	JOB_DEAD,
	JOB_CANCELLED,	/* warrantctl cancel (§11): written by the operator, never here */
};

/* "queued", "running", ... ("" for JOB_NONE). Static. */
const char *job_state_name(enum job_state st);
/* The inverse; unknown text -> -1. */
int job_state_parse(const char *s, enum job_state *out) __attribute__((warn_unused_result));
/* 1 for done, expired, denied, failed, dead and cancelled: never executed again. */
int job_state_terminal(enum job_state st);
/* The names of the terminal states, space-separated, into buf (the set the
 * Lua transition refuses to overwrite). -1 when it does not fit. */
int job_terminal_list(char *buf, size_t n) __attribute__((warn_unused_result));

struct job_policy {
	int64_t retry_base_ms, retry_cap_ms;
	int max_attempts;	/* calls of the action */
	int max_deliveries;
	int authz_enabled;	/* [authz] url is set */
	int token_needed;	/* the action's auth = oauth */
	int exchange_needed;	/* the action's token = exchange: one token per job */
	int64_t auth_wait_max_ms;	/* [oauth] auth_wait_max_ms: then the entry is handed back */
	int wait_replicas;	/* R19: [redis] wait_replicas (0: no WAIT) */
};

/* One entry in hand. The shell zeroes it, sets `id`, and passes it to every
 * call; the core alone changes it afterwards. */
struct job {
	enum job_state state;
	int64_t expires_at_ms, not_before_ms;
	int calls;		/* calls of the action made: the hash's `attempts` (R8) */
	int calls_base;		/* the hash's `attemptsBase` (warrantctl retry): R8
				   counts calls - calls_base; `attempts` itself
				   never decreases, R13's fence needs it */
	int waits;		/* PDP-unavailable retries, for their backoff */
	int deliveries;		/* from XREADGROUP/XPENDING/XCLAIM data (Redis' count) */
	int redispatch;		/* set by a 401: XCLAIM once a token is there */
	int64_t wait_since_ms;	/* when the current wait for a token began */
	int redis_broken;	/* JOB_EV_REDIS_ERROR came: dead without the hash */
	unsigned awaiting;	/* JOB_FX_AUTHZ, JOB_FX_CALL, JOB_FX_EXCHANGE or
				   JOB_FX_HANDBACK whose answer is due, else 0 */
	/* What this hand's own writes established (job_written), and what
	 * the transitions that follow are fenced with (struct job_write): */
	int owner_set;		/* a START_ATTEMPT step was written: `owner` is us */
	int fenced;		/* a call step was written; fence is its `attempts` */
	long long fence;
	int deleted;		/* JOB_EV_ENTRY_DELETED: the entry left the PEL */
	int idp_refused;	/* §9: refusals of this job's token (invalid_grant...)
				   in this hand; the second ends it failed */
};

enum job_event_kind {
	JOB_EV_LOADED,		/* the hash was read and the record checked */
	JOB_EV_NO_ID,		/* the stream entry has no valid id field */
	JOB_EV_ENTRY_DELETED,	/* XAUTOCLAIM reports the pending entry deleted */
	JOB_EV_CANNOT_CALL,	/* the decided call cannot be sent (see no_call) */
	JOB_EV_TIMER,		/* a retry timer fired */
	JOB_EV_TOKEN_READY,	/* a token with enough life is there */
	JOB_EV_TOKEN_TIMEOUT,	/* the wait's timer (step.at_ms) fired without one */
	JOB_EV_REDISPATCHED,	/* the XCLAIM of a re-dispatch succeeded */
	JOB_EV_AUTHZ,		/* the PDP answered, or did not */
	JOB_EV_HTTP,		/* the action call ended */
	JOB_EV_EXCHANGED,	/* the token exchange answered, or did not */
	JOB_EV_LEASE_LOST,	/* another consumer holds the entry now */
	JOB_EV_HANDED_BACK,	/* the hand-back script added the new entry and acked ours */
	JOB_EV_REDIS_ERROR,	/* R17: a Redis step of this entry met an error
				   that belongs to its data, and retrying gave
				   up (consumer_err_next): in any state, once */
	JOB_EV_GATE,		/* §13: a job held at the gate (JOB_FX_GATE_WAIT)
				   may try again: the gate may have opened, or
				   its deadline came */
	JOB_EV_UNREPLICATED,	/* R19: the call step's WAIT saw too few
				   replicas (job_replicated said NO_CALL) */
	JOB_EV_PARKED,		/* R6: a job held at the gate, or waiting in
				   auth_wait for its scope's token, was set
				   aside in Redis (lua/park.lua), ours acked */
};

enum job_authz { JOB_AUTHZ_ALLOW, JOB_AUTHZ_DENY, JOB_AUTHZ_UNAVAILABLE };

/* A token for one job (RFC 8693 exchange, RFC 9396 per-record): what the
 * IdP's answer means (warrantd(7) §9, token_idp_classify). */
enum job_exchange {
	JOB_XCH_OK,		/* the job's token is there */
	JOB_XCH_UNAVAILABLE,	/* no answer, 5xx, temporarily_unavailable: backoff */
	JOB_XCH_REFRESH,	/* invalid_client, 401: R9 (refresh, re-dispatch) */
	JOB_XCH_REFUSED,	/* invalid_grant and the like: R9 once, then failed */
	JOB_XCH_FAILED,		/* invalid_scope, invalid_target, ...: failed now */
};

/* Why a decided call could not be sent (JOB_EV_CANNOT_CALL). */
enum job_no_call {
	JOB_NOCALL_ACTION_GONE,	/* a reload removed the record's [action] */
	JOB_NOCALL_BAD_REQUEST,	/* the URL template cannot expand for this record */
	JOB_NOCALL_TOKEN_GONE,	/* the token died between the decision and the call */
	JOB_NOCALL_DEADLINE,	/* R1: no time left before expiresAt (job_time_left) */
};

struct job_event {
	enum job_event_kind kind;
	uint64_t rnd;		/* a random word, for jitter */
	int token_ok;		/* a token with life > timeout + 1 s is held now */
	int gate_shut;		/* §13: the gate (gate.h) holds the action's
				   attempts back now: a pause, a limit, an open
				   breaker; 0 when it lets one start */
	enum reason token_refused;	/* with !token_ok: the IdP refused the action's
					   token for good (REASON_IDP_*, §9): no wait,
					   failed; REASON_NONE otherwise */

	/* JOB_EV_LOADED */
	int hash_exists;
	enum job_state stored_state;	/* JOB_NONE when the hash has no state */
	enum record_status record_status;
	const struct record *record;	/* with RECORD_OK; read, not kept */
	int deliveries;		/* also JOB_EV_REDISPATCHED: the count after the XCLAIM */
	int attempts;		/* the hash's `attempts`: calls made by every worker */
	int attempts_base;	/* the hash's `attemptsBase` (0 when absent) */

	/* JOB_EV_AUTHZ */
	enum job_authz authz;

	/* JOB_EV_EXCHANGED */
	enum job_exchange exchange;
	enum reason idp_reason;	/* the IdP's error as a reason code
				   (REASON_IDP_*), for REFUSED and FAILED */

	/* JOB_EV_CANNOT_CALL */
	enum job_no_call no_call;

	/* JOB_EV_UNREPLICATED: the replicas that acknowledged (-1: WAIT
	 * got no answer) */
	long long replicas;

	/* JOB_EV_REDIS_ERROR: the reply, one line (consumer_err_line); borrowed */
	const char *redis_error;

	/* JOB_EV_HTTP */
	int http_status;	/* 0 on a transport error or timeout */
	int invalid_token;	/* a 403 whose WWW-Authenticate says invalid_token */
	int dpop_proof_refused;	/* a 401 with DPoP error="invalid_dpop_proof": R8, not R9 */
	int no_descriptor;	/* with http_status 0: the call never left the host
				   (EMFILE): a retry that spends no attempt */
	enum callfail call_fail;	/* with http_status 0: why no answer came
					   (named in the step's detail) */
	int64_t retry_after_ms;	/* delay from Retry-After, or -1 */
};

/* Effects, or-ed; the shell performs them in the order of the bits. */
enum job_effect {
	JOB_FX_WRITE_STATE = 1 << 0,	/* write step.next (and fields) to the hash + audit */
	JOB_FX_RESCHEDULE = 1 << 1,	/* ZADD P:scheduled not_before_ms, then ack */
	JOB_FX_DEAD_LETTER = 1 << 2,	/* XADD P:dead with step.reason */
	JOB_FX_NOTIFY = 1 << 3,		/* XADD P:notify (+ webhook) */
	JOB_FX_ACK = 1 << 4,		/* XACK (atomically with a terminal write, R13) */
	JOB_FX_AUTHZ = 1 << 5,		/* ask the PDP */
	JOB_FX_CALL = 1 << 6,		/* call the action; job->calls was incremented */
	JOB_FX_RETRY_AT = 1 << 7,	/* arm a timer for step.at_ms */
	JOB_FX_WAIT_TOKEN = 1 << 8,	/* wait for a token; the timer fires at step.at_ms */
	JOB_FX_DROP_TOKEN = 1 << 9,	/* discard the token and refresh (single-flight) */
	JOB_FX_REDISPATCH = 1 << 10,	/* XCLAIM the entry to this consumer (count +1) */
	JOB_FX_RELEASE = 1 << 11,	/* forget the entry, leave it pending, stop the lease */
	JOB_FX_START_ATTEMPT = 1 << 12,	/* a new attempt began: set owner, count it */
	JOB_FX_END = 1 << 13,		/* after the write, the entry leaves the hand */
	JOB_FX_EXCHANGE = 1 << 14,	/* exchange for this job's token (RFC 8693) */
	JOB_FX_HANDBACK = 1 << 15,	/* R9: a new stream entry for the record, ours acked */
	JOB_FX_GATE_WAIT = 1 << 16,	/* §13: held at the gate, no state change, no
					   attempt: wait for it (JOB_EV_GATE), at the
					   latest until step.at_ms (the deadline). An
					   attempt that passed holds a place there while
					   `awaiting` is the PDP, the exchange or the call */
	JOB_FX_WAIT_REPLICAS = 1 << 17,	/* R19: WAIT step.write.wait_replicas right
					   after the write, before what follows it
					   (job_replicated reads the answer) */
};

/*
 * How the step's transition (store.h's struct store_transition) is fenced,
 * for a step with a Redis write (job_step_writes). Decided with the step, so
 * a write sent again after its reply was lost carries the same fence.
 */
struct job_write {
	/* R8, R13: `attempts` must still be this (-1: not checked). A call
	 * step increments it only from the value it was decided on (job_next
	 * counted the call already), so one sent again after its reply was
	 * lost is not counted twice; a later step of the same call is fenced
	 * by the `attempts` its call step wrote. */
	long long fence_attempts;
	int incr_attempts;	/* a call step: `attempts` + 1 */
	int require_owner;	/* this hand set `owner`: it must still be us */
	int ack;		/* XACK with the write (an END or a RESCHEDULE) */
	int skip_lease;		/* the entry left the PEL already (entry-deleted) */
	int keep_unpending;	/* a call's outcome: written even when Redis
				   forgot the PEL entry (owner and fence ours) */
	int call_result;	/* the step follows a call's answer: when the
				   record was cancelled meanwhile (§11), the
				   result goes to lateOutcome/lateHttpStatus */
	int wait_replicas;	/* R19, with JOB_FX_WAIT_REPLICAS: WAIT for this many */
};

struct job_step {
	enum job_state next;
	unsigned effects;
	int64_t at_ms;		/* with JOB_FX_RETRY_AT, JOB_FX_RESCHEDULE, JOB_FX_WAIT_TOKEN */
	enum reason reason;	/* REASON_NONE when no code applies */
	char detail[160];	/* one line for people */
	struct job_write write;	/* with job_step_writes */
};

/* 1 when the step's effects begin with the transition (one Lua script:
 * state, audit, dead letter, notification, schedule, XACK together). */
int job_step_writes(const struct job_step *st);

/*
 * The transition for `ev` at `now_ms`. Updates *job; returns what to do.
 * An event that makes no sense in job->state (an HTTP answer while retrying,
 * anything after a terminal state) changes nothing: effects 0, the state
 * kept, and step.detail says why. step.reason is REASON_NONE when no code
 * applies.
 * JOB_EV_TOKEN_READY itself means a usable token is there (token_ok implied).
 * pol->max_deliveries <= 0 means no limit (R12 off).
 */
struct job_step job_next(const struct job_policy *pol, struct job *job,
			 const struct job_event *ev, int64_t now_ms);

/*
 * The step's transition was written; `fence` is the `attempts` the script
 * wrote (-1 when its reply did not say). Updates *job: what the next
 * steps' writes are fenced with (struct job_write).
 */
void job_written(struct job *job, const struct job_step *st, long long fence);

/* R19: what the WAIT after a step's write decides. */
enum job_repl {
	JOB_REPL_GO,		/* enough replicas (or no WAIT): carry on as decided */
	JOB_REPL_NO_CALL,	/* a call step short of replicas: no call; the
				   shell feeds JOB_EV_UNREPLICATED */
	JOB_REPL_SHORT,		/* a final write short of replicas: logged, and the
				   notification still goes */
};

/*
 * R19: st's write was answered and its WAIT saw `replicas` acknowledge (-1:
 * the WAIT got no answer). A call is made only on replicas the write
 * reached; a final state was written either way, so what follows it
 * (the webhook) goes on. A step without JOB_FX_WAIT_REPLICAS: JOB_REPL_GO.
 */
enum job_repl job_replicated(const struct job_step *st, long long replicas)
	__attribute__((warn_unused_result));

/* What the shell is doing for a job when the worker stops (R15). */
enum job_doing {
	JOB_DOING_NOTHING,	/* waiting on a timer, a token, a load... */
	JOB_DOING_WRITE,	/* a transition is out, its reply due */
	JOB_DOING_WRITE_AGAIN,	/* a transition waits on its backoff to go again */
	JOB_DOING_CALL,		/* the action or the PDP is being called */
};

/*
 * R15: 1 when the job may run on after a stop (it is let go, left pending
 * for R11/R14, otherwise): a call in flight may finish, and a result in
 * hand -- a transition out, or the closing write of a call waiting on its
 * backoff -- is never thrown away early. `st` is the step being carried out.
 */
int job_runs_on_at_stop(const struct job *job, const struct job_step *st, enum job_doing doing)
	__attribute__((warn_unused_result));

/*
 * R1 when a request leaves: the timeout for a request of this job -- the
 * action call, the PDP's, a token exchange -- whose own limit is limit_ms,
 * started at now_ms: min(limit_ms, expiresAt - now_ms), so that neither the
 * connect nor the request outlasts the deadline. 0 when no time is left (the
 * shell sends nothing and feeds JOB_EV_CANNOT_CALL with JOB_NOCALL_DEADLINE).
 * A job with no deadline loaded yet gets limit_ms.
 */
long job_time_left(const struct job *job, long limit_ms, int64_t now_ms)
	__attribute__((warn_unused_result));

/*
 * §3.3: how long a terminal hash and its P:final mark are kept, in ms from
 * now_ms: until max(expiresAt + skew_ms, now_ms) + retain_ms, so neither is
 * gone while a copy of the record could still run (a record recreated from
 * the same JWS after that is past its deadline). A job with no deadline
 * loaded (a record that did not verify or validate) gets retain_ms. At least
 * 1; an overflow is capped.
 */
int64_t job_retain_ms(const struct job *job, int64_t skew_ms, int64_t retain_ms, int64_t now_ms)
	__attribute__((warn_unused_result));

/* ------------------------------------------------------------------ */
/* The answers around an attempt (jobcall.c): what the shell hears from   */
/* the target, the IdP and a DPoP-bound call, as the core reads it.       */

/*
 * Retry-After (RFC 9110 §10.2.3): delay-seconds or an IMF-fixdate. Returns
 * the delay in ms from now (0 for a date in the past), or -1 when the value
 * is absent or malformed. Surrounding blanks (SP, HTAB, CR, LF) are ignored;
 * delay-seconds are digits only (no sign) and capped at one day.
 */
int64_t job_retry_after_ms(const char *value, int64_t now_ms);

/* R8: 1 when an HTTP status (0: no answer) is a retryable failure. */
int job_status_retryable(int status);

/* 1 when a WWW-Authenticate value carries error="invalid_token". */
int job_www_auth_invalid_token(const char *value);

/* §9: the reason of an IdP's refusal: its own error code when it is one
 * reason.h names among the IdP's (invalid_grant, ...), else idp-refused
 * (also for NULL or ""). */
enum reason job_idp_reason(const char *code);

/* RFC 9449 §9: what the answer to a DPoP-bound call says of its proof. */
enum job_dpop {
	JOB_DPOP_NONE = 0,	/* nothing: an answer like any other */
	JOB_DPOP_NONCE,		/* 401 use_dpop_nonce with a DPoP-Nonce: the
				   call goes again at once with the nonce */
	JOB_DPOP_REFUSED,	/* 401 invalid_dpop_proof: the proof itself (a
				   clock off for iat, an htu a proxy rewrote) */
};

/* status: the answer's HTTP status; www_authenticate: its header (or NULL);
 * has_nonce: it carried a DPoP-Nonce. */
enum job_dpop job_dpop_answer(long status, const char *www_authenticate, int has_nonce);

/* Whether the call goes again at once (d is JOB_DPOP_NONCE and *retried is
 * not set): one immediate retry per nonce challenge, spending no attempt
 * (R8) and no R9 wait. Updates *retried: set when it says 1, cleared by
 * any other answer. */
int job_dpop_retry_now(enum job_dpop d, int *retried) __attribute__((warn_unused_result));

/* §13: an attempt awaiting these effects (the PDP, the exchange, the call)
 * holds its place at the gate; any other step gives it back. */
int job_attempt_holds_gate(unsigned awaiting);

#endif
