/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ejob: the entries in hand, each from admission to release -- the
 * imperative shell around the job core (job.h). The consumer (engine.c)
 * hands the set stream ids and events; the set tells the consumer, through
 * its operations, when an entry has left the hand.
 *
 * What a job does to the world it does through a table of operations
 * (struct ejob_ops): load its record, verify it, write a transition, call
 * the action or the PDP, exchange a token, re-dispatch or hand back the
 * entry, read the clock and arm timers. eops.c gives the real ones (Redis,
 * HTTP, the verify pool, the credentials); a unit test gives fakes and
 * drives the jobs step by step (tests/unit/test_ejob.c). Besides them a
 * job reads plain data: the running config, the shard's key names and the
 * counters it counts into (struct ejob_env).
 *
 * Time comes through the operations too (now_ms, timer): a job reads no
 * clock and arms no libev watcher of its own, so a test drives time by
 * firing the timers it was asked for.
 *
 * A job is freed only when it is finished and no callback points at it;
 * callbacks never free the object whose callback chain they run in.
 * Single-threaded: call from the loop's thread.
 */
#ifndef WARRANTD_EJOB_H
#define WARRANTD_EJOB_H

#include <stddef.h>
#include <stdint.h>

#include "conf/config.h"
#include "base/counters.h"
#include "core/gate.h"
#include "http/http.h"
#include "auth/oauth.h"
#include "core/record.h"
#include "core/store.h"

/*
 * The contract of every asynchronous operation below (as rconn.h's
 * commands): it returns 0 (or a handle) when started, and then calls its
 * callback exactly once -- with a result or a failure, never from inside
 * the call that started it -- unless an operation that has a handle is
 * cancelled first (cancel: its callback is then never called). It returns
 * -1 (or NULL) when it could not start: then no callback comes. The
 * callback's result, and every pointer in it, is valid only during the
 * callback. `arg` is the job's, passed back as it is.
 *
 * Loads, writes, re-dispatches and hand-backs cannot be cancelled: a
 * finished job waits for their callbacks (the consumer closes its
 * connections, which answers them with a failure, before ejobs_free).
 */

/* What a job reads of its record's hash (lua/load.lua). */
struct ejob_loaded {
	int ok;			/* 0: an error reply, or none came */
	const char *error;	/* !ok: the error reply's text; NULL when none came */
	int exists;		/* the hash has fields */
	const char *state, *attempts, *record;	/* those fields, NULL when absent */
	const char *attempts_base;	/* `attemptsBase` (§11), NULL when absent */
	long long withheld;	/* the length of a `record` longer than [records]
				   max_bytes, which was not fetched (record
				   NULL); 0 when it fits or is absent */
	const char *final;	/* R4: the record's P:final mark, NULL when none */
};
typedef void ejob_load_cb(void *arg, const struct ejob_loaded *r);

/* A record verified (record_load), on a worker or inline. Everything in
 * it is the job's: it frees rec (record_free), owner and raw. */
struct ejob_verified {
	enum record_status status;
	struct record *rec;	/* RECORD_OK: the record */
	char *owner;		/* notifyOnDenial of a verified but invalid record */
	char *raw;		/* on a worker: the bytes submitted; inline: NULL */
	char detail[200];	/* why it was refused */
};
typedef void ejob_verify_cb(void *arg, struct ejob_verified *r);

/* A transition's reply (lua/transition.lua). */
struct ejob_written {
	int ok;			/* 0: an error reply, or none came */
	const char *error;	/* !ok: the error reply's text; NULL when none came */
	int written;		/* the step was written (else why says why not) */
	const char *why;	/* "ok", "again", "terminal", "duplicate", ...; or NULL */
	long long fence;	/* the `attempts` written: the next call's fence; -1 */
	long long replicas;	/* R19, a write sent with a WAIT: the replicas that
				   acknowledged it; -1 when the WAIT got no answer */
};
typedef void ejob_write_cb(void *arg, const struct ejob_written *r);

/* A re-dispatch's (R9) or a hand-back's (R9) reply. */
struct ejob_moved {
	int ok;			/* 0: an error reply, none came, or a wrong shape */
	const char *error;	/* the error reply's text; NULL when none came */
	long long deliveries;	/* re-dispatch: the count after it; 0: not ours */
	int handed;		/* hand-back, park: 1 done, 0 no longer ours */
	const char *new_stream_id;	/* hand-back, handed: the new entry's id */
	int owner;		/* reclaim: 1 still ours, 0 another's, -1 nobody's */
};
typedef void ejob_moved_cb(void *arg, const struct ejob_moved *r);

typedef void ejob_timer_cb(void *arg);

/* A token for one job (RFC 8693 or RFC 9396, cred_exchange). Borrowed. */
struct ejob_exchange_req {
	const char *action;	/* whose credential acts */
	const char *record;	/* the subject: the record as stored; per-record:
				   the record's resource */
	const char *scope, *resource;
	long timeout_ms;	/* the action's */
	long max_ms;		/* the exchange's own request: the job's time left (R1) */
};

/* ejob_ops.auth's answer. */
enum {
	EJOB_AUTH_TOKEN = 1,	/* the worker's OAuth token: R6 and R9 apply */
	EJOB_AUTH_EXCHANGE = 2,	/* a token for each job (token = exchange, per-record) */
	EJOB_AUTH_PER_RECORD = 4,	/* token = per-record: kept per (action, resource) */
};

/* What can be cancelled. */
enum ejob_op { EJOB_OP_TIMER, EJOB_OP_VERIFY, EJOB_OP_CALL, EJOB_OP_EXCHANGE };

struct ejob_ops {
	/* The wall clock, ms since the epoch (deadlines, `at`). */
	int64_t (*now_ms)(void *ctx);
	/* cb(arg) once after delay_ms (<= 0: at the next turn of the loop).
	 * A handle, or NULL when out of memory. */
	void *(*timer)(void *ctx, int64_t delay_ms, ejob_timer_cb *cb, void *arg);

	/* The state, attempts and record of hash_key, the record only when
	 * it is at most [records] max_bytes long, and the mark final_key
	 * (R4) -- read on its own: a call naming a key that does not exist
	 * stalls while its slot migrates. 0 or -1. */
	int (*load)(void *ctx, const char *hash_key, const char *final_key, ejob_load_cb *cb,
		    void *arg);
	/* Verifies raw, the record of `id`, by the running config and key:
	 * 1 and a handle in *h when a worker does it (cb later); 0 when it
	 * was done now, into *now (no callback). Never fails: out of memory
	 * for a worker means inline. */
	int (*verify)(void *ctx, const char *id, const char *raw, int64_t now_ms,
		      struct ejob_verified *now, ejob_verify_cb *cb, void *arg, void **h);
	/* The transition t (store.h), batched. With wait_replicas > 0 (R19)
	 * `WAIT wait_replicas [redis] wait_timeout_ms` follows it on the same
	 * connection, and the callback comes once both answered. 0 or -1. */
	int (*write)(void *ctx, const struct store_transition *t, int wait_replicas,
		     ejob_write_cb *cb, void *arg);
	/* An HTTP request (the action, or the PDP). 0 and a handle in *h, or
	 * -1. The response is http.h's. */
	int (*call)(void *ctx, const struct http_request *req, http_done_cb *cb, void *arg,
		    void **h);
	/* A token for this one job. A handle and *gen (the actor token's
	 * generation), or NULL: no worker token outlives the call, or it
	 * could not start. The callback is oauth.h's. */
	void *(*exchange)(void *ctx, const struct ejob_exchange_req *rq, uint64_t *gen,
			  oauth_exchange_cb *cb, void *arg);
	/* R9: the entry XCLAIMed to us again, if its delivery count is still
	 * `expected` (a resend after a lost reply claims nothing twice). */
	int (*redispatch)(void *ctx, const char *stream_id, long long expected,
			  ejob_moved_cb *cb, void *arg);
	/* R9: a new stream entry for the record, ours acked (lua/handback.lua). */
	int (*handback)(void *ctx, const char *hash_key, const char *stream_id,
			const char *record_id, ejob_moved_cb *cb, void *arg);
	/* R6: the entry, held back by its action, set aside in Redis until
	 * it goes on, ours acked (lua/park.lua); the answer's `handed` says
	 * it was still ours. expires_at_ms: the job's deadline. */
	int (*park)(void *ctx, const char *stream_id, const char *record_id,
		    const char *action, int64_t expires_at_ms, ejob_moved_cb *cb, void *arg);
	/* R20, R10: the entry XCLAIMed to us (JUSTID, idle reset, no
	 * delivery counted) if it is still ours; the answer's `owner` says
	 * whose it was. */
	int (*reclaim)(void *ctx, const char *stream_id, ejob_moved_cb *cb, void *arg);
	/* Stops the operation of that kind behind h: its callback never comes. */
	void (*cancel)(void *ctx, enum ejob_op kind, void *h);

	/* How the calls of `action` authenticate (EJOB_AUTH_*, or-ed; 0 for
	 * none, a static bearer or an unknown action; NULL: the PDP's): the
	 * kind of credential is the credentials' business (cred.h). Synchronous. */
	unsigned (*auth)(void *ctx, const char *action);
	/* R6: the bearer for a call of `action` that may take timeout_ms, or
	 * NULL (auth = none; or no token outlives the call by 1 s); action
	 * NULL: the PDP's own ([authz] auth, §7). *gen: its generation.
	 * Valid until control returns to the loop. Synchronous. */
	const char *(*bearer)(void *ctx, const char *action, long timeout_ms, uint64_t *gen);
	/* RFC 9449: a DPoP proof for a call of `action` (cred_proof): 0 with
	 * *proof NULL for a bearer token, 0 with a new string (the caller
	 * frees it with dpop_proof_free), or -1. NULL op: bearer always. */
	int (*proof)(void *ctx, const char *action, const char *method, const char *url,
		     const char *token, char **proof);
	/* token = per-record: the token kept for (action, resource) that
	 * outlives timeout_ms by 1 s, or NULL; *gen its generation. And
	 * keeping one received (cred_record_token, cred_record_keep). */
	const char *(*record_token)(void *ctx, const char *action, const char *resource,
				    long timeout_ms, uint64_t *gen);
	void (*record_keep)(void *ctx, const char *action, const char *resource, const char *token,
			    int64_t lifetime_ms, uint64_t *gen);
	/* RFC 9449 §9: a DPoP-Nonce a target sent, kept for url's origin. */
	void (*dpop_nonce)(void *ctx, const char *action, const char *url, const char *nonce);
	/* §9: the IdP's error code when it refused `action`'s token for good
	 * (cred_refused_code), else NULL. NULL op: never. */
	const char *(*token_refused)(void *ctx, const char *action);
	/* R9: the target accepted (1) or refused (0: refresh, single-flight)
	 * the token of generation gen. */
	void (*token_verdict)(void *ctx, const char *action, uint64_t gen, int accepted);
	/* §6: a notification was written (P:notify); the webhook's copy. The
	 * strings are borrowed during the call. */
	void (*notified)(void *ctx, const char *id, const char *owner, const char *kind,
			 const char *reason, const char *on_behalf_of, const char *action,
			 const char *resource, const char *at);
	/* For metrics: an action call got an answer or a transport error. */
	void (*call_done)(void *ctx, const char *action, long status, long long duration_ms,
			  long long queue_delay_ms);
	/* For metrics: a state was written (or a dead letter with no hash);
	 * action "" when no record names one, reason "" when none applies. */
	void (*outcome)(void *ctx, const char *action, const char *state, const char *reason);
	/* An entry left the hand: read more, or finish stopping. Also called
	 * from inside ejobs_admit, ejobs_stop, ejobs_token_ready and the
	 * other ejobs_* calls; it must not free the set. */
	void (*released)(void *ctx);
};

/* What the jobs of a set use; every pointer borrowed, outliving the set.
 * The consumer may replace cfg between callbacks (R16 reload), and the
 * jobs read it afresh. */
struct ejob_env {
	const struct ejob_ops *ops;
	void *ctx;				/* the operations' */
	const struct cfg *cfg;			/* the running config */
	const struct store_keys *keys;		/* the shard's key names */
	struct engine_counters *n;		/* outcomes are counted here */
	struct gate *gate;			/* §13: pauses, limits, breakers of
						   this worker (shared by every
						   shard's set); NULL: none */
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

/* R6: entries in hand that wait for a token (their scope's, or a fresh one
 * after a 401). */
size_t ejobs_waiting_token(const struct ejobs *s);

/* An entry delivered to us (XREADGROUP, our PEL, XAUTOCLAIM): taken in hand
 * unless it already is, and its record loaded. `id` is the entry's `id`
 * field (NULL when it has none: a dead letter, no-id), `traceparent` its
 * `traceparent` field (NULL: none; one that is not W3C Trace Context is
 * logged and replaced by a new trace, §13); the strings are read only
 * during the call. */
void ejobs_admit(struct ejobs *s, const char *stream_id, const char *id, int deliveries,
		 const char *traceparent);

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

/* R20: Redis refused its current credential (or closed a connection as
 * its token died); said before the refused commands' callbacks. From now
 * on a write refused for the credential, or left without a reply, is held
 * (consumer_auth_write), not retried, until ejobs_redis_auth_ready. */
void ejobs_redis_auth_lost(struct ejobs *s);

/* R20: a new Redis token was taken (every connection re-authenticated or
 * reconnecting with it): each held write's entry is reclaimed to us with
 * R10's owner check, and its write sent again -- the same step, the same
 * fence -- once the reclaim found it ours. */
void ejobs_redis_auth_ready(struct ejobs *s);

/* R6, R9: a token arrived; jobs waiting for one go on. */
void ejobs_token_ready(struct ejobs *s);

/* §13: the gate may let held jobs start (a pause ended, a reload): each
 * held job asks it again from the loop. */
void ejobs_gate_wake(struct ejobs *s);

/* §13, R6: entries held at the gate (a pause, a limit, an open breaker). */
size_t ejobs_held(const struct ejobs *s);

/* R15: no new call and no new wait from now on; jobs the core does not
 * let run on (job_runs_on_at_stop) are let go (they stay pending). */
void ejobs_stop(struct ejobs *s);

/* R10: the stream ids whose leases are to be renewed, up to max, into ids
 * (valid until the set changes). Returns how many. */
size_t ejobs_leased(const struct ejobs *s, const char **ids, size_t max);

/* Marks every job finished and cancels its timer, verification, HTTP call
 * and exchange; frees none. For engine_free, before the connections close
 * and fire their callbacks. */
void ejobs_abandon(struct ejobs *s);

#endif
