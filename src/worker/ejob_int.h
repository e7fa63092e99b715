/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ejob_int: the private header of ejob's three files (ejob.h is the
 * module's public one; nothing outside src/worker/ejob*.c includes this).
 *
 *   ejob.c        the hand: the set, admission, a job's lifetime (refs,
 *                 settle), job_next fed and its effects carried out in
 *                 order, timers, and the ejobs_* calls of ejob.h;
 *   ejob_redis.c  the Redis steps of a job, one row each of a table (the
 *                 load, the transition, the re-dispatch, the hand-back, the
 *                 reclaim): the script, how its arguments are built, how
 *                 its reply is read, the event it feeds job_next, the
 *                 timer its R17 retry waits on;
 *   ejob_call.c   the calls: the action (R7), the PDP (R5), the token
 *                 exchange (RFC 8693), and the place at the gate (§13).
 */
#ifndef WARRANTD_EJOB_INT_H
#define WARRANTD_EJOB_INT_H

#include "worker/ejob.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "auth/authz.h"
#include "core/consumer.h"
#include "auth/cred.h"
#include "core/gate.h"
#include "jose/dpop.h"
#include "core/job.h"
#include "base/log.h"
#include "base/dec.h"
#include "base/rnd.h"
#include "core/trace.h"
#include "core/urltpl.h"
#include "base/wtime.h"

#define STREAM_ID_MAX 48

/* What the job's one timer is armed for. */
enum ejob_timer { T_NONE, T_RETRY, T_TOKEN_WAIT, T_REDIS_RETRY, T_REDISPATCH_RETRY, T_LOAD_RETRY,
	T_HANDBACK_RETRY, T_RECLAIM_RETRY, T_GATE_WAIT, T_PARK_RETRY };
/* Which operation's answer the job waits for. */
enum ejob_wait { W_NONE, W_WRITE, W_LOAD, W_VERIFY, W_AUTHZ, W_EXCHANGE, W_CALL, W_REDISPATCH,
	W_HANDBACK, W_RECLAIM, W_PARK };

/* Buckets of the index by stream id: every entry read is looked up there
 * (a walk of the list with strcmp cost 5,000 instructions a job at 256 in
 * flight, 3 %). Chains stay short up to thousands in hand. A power of two. */
#define EJOB_BUCKETS 1024

/* §13: a job held at the gate asks again at least this often, whatever
 * else wakes it: a place given back on another shard's set, a probe's end. */

TAILQ_HEAD(ejob_list, ejob);
SLIST_HEAD(ejob_chain, ejob);

struct ejobs {
	const struct ejob_env *env;
	struct ejob_list all;	/* owned: every entry in hand, finished or not */
	struct ejob_chain bucket[EJOB_BUCKETS];	/* the same entries, by stream id */
	size_t n;
	int draining;		/* R15: no new call, no new wait */
	int auth_lost;		/* R20: Redis refused the credential, no new one yet */
};

/* One entry in hand. */
struct ejob {
	TAILQ_ENTRY(ejob) link;
	SLIST_ENTRY(ejob) hnext;	/* in its bucket */
	unsigned hash;			/* of stream_id */
	struct ejobs *set;
	char stream_id[STREAM_ID_MAX];
	char id[RECORD_ID_MAX + 1];	/* "" when the entry had no valid id; else
					   its hash key fits in a struct hash_key */
	struct job core;
	struct job_step step;		/* the step being carried out */
	struct record *rec;
	char *bad_owner;		/* notifyOnDenial of a verified but invalid record */
	char *raw;			/* the record as stored: token = exchange's subject */
	char *xtoken;			/* the token exchanged for this call; wiped */
	/* handles of the operations in flight that can be cancelled */
	void *timer, *verify, *call, *xch;
	struct job_event loaded;	/* what the load said, while it is verified */
	int refs;			/* operations in flight whose callback comes here */
	int finished;
	int lost;			/* the lease is gone: abandon at the next step */
	int unpending;			/* pending for nobody: no lease to renew */
	int held;			/* R20: j->step's write waits for a good credential */
	struct consumer_errs errs;	/* R17: its failed Redis steps in a row */
	enum ejob_wait wait;
	enum ejob_timer timer_kind;
	int last_status;
	int nonce_retried;		/* RFC 9449: this call answered a nonce challenge */
	uint64_t token_gen;		/* generation of the token the call used */
	char written_at[WTIME_RFC3339_LEN];	/* `at` of the last transition sent */
	long long attempt_started_ms;
	/* §13: a place at the gate, from the attempt's start to its call's
	 * answer; whether it is the breaker's probe; and a held job's timer
	 * set to go at once (a place came free) */
	int gate_held, gate_probe, gate_kicked;
	/* §13: the entry's traceparent (trace_given) or a new trace; "" for
	 * an entry not admitted (deleted while pending) */
	char trace[TRACE_LEN + 1];
	int trace_given;
	/* "id traceparent=..." as every log line about the job shows it */
	char lid[RECORD_ID_MAX + sizeof " traceparent=" + TRACE_LEN + 1];
};

/* The record's hash key, built where it is used: kept in every entry it
 * was a third of the entry, 80 KiB at 256 in flight (issue 10, RSS). */
struct hash_key {
	char s[STORE_KEY_MAX + RECORD_ID_MAX + 1];
};

/* ---- small helpers (ejob.c) ---- */

/* ------------------------------------------------------------------ */
/* small helpers                                                        */

/* The job's `id` value in its log lines: its id, then its trace (§13), so
 * that every line about it carries both. */
static inline const char *
lid(const struct ejob *j)
{
	return j->lid[0] ? j->lid : j->id[0] ? j->id : "-";
}

static inline const struct ejob_env *
env_of(const struct ejob *j)
{
	return j->set->env;
}

static inline const struct ejob_ops *
ops_of(const struct ejob *j)
{
	return j->set->env->ops;
}

static inline void *
ctx_of(const struct ejob *j)
{
	return j->set->env->ctx;
}

static inline int64_t
now_ms(const struct ejob *j)
{
	return ops_of(j)->now_ms(ctx_of(j));
}

/* ---- ejob.c: the hand ---- */

/* The record's hash key and its P:final mark, into *key (on the caller's
 * stack); "" when it does not fit. */
const char *ejob_final_key_of(const struct ejob *j, struct hash_key *key);
const char *ejob_hash_key_of(const struct ejob *j, struct hash_key *key);
/* The record's action in the running config, or NULL (borrowed). */
const struct cfg_action *ejob_action(const struct ejob *j);
/* How the calls of a authenticate (ejob_ops.auth, EJOB_AUTH_*). */
unsigned ejob_auth_of(const struct ejob *j, const struct cfg_action *a);
/* Wipes and frees the token exchanged for this job's call, if any. */
void ejob_drop_xtoken(struct ejob *j);
/* Marks j finished and cancels what can be; frees nothing (ejob_settle does). */
void ejob_finish(struct ejob *j);
/* Frees j when it is finished and no callback points at it: the last thing
 * a callback or an ejobs_* call does with j. */
void ejob_settle(struct ejob *j);
/* An operation's callback came: drops its reference; 1 when j still acts on it. */
int ejob_answered(struct ejob *j);
/* The job's one timer, for kind, in delay_ms (out of memory: j is let go). */
void ejob_arm(struct ejob *j, enum ejob_timer kind, int64_t delay_ms);
/* After the step's write (or with none): what follows, in the effects' order. */
void ejob_continue_effects(struct ejob *j);
/* ev (the caller's, filled here with the random word, token and gate) to
 * job_next, and the step it decides carried out. */
void ejob_feed(struct ejob *j, struct job_event *ev);
/* Logs the step being carried out (job.state). */
void ejob_log_step(const struct ejob *j, const struct job_step *s);

/* ---- ejob_redis.c: the Redis steps, one table row each ---- */

enum ejob_step {
	EJOB_STEP_LOAD,		/* lua/load.lua: the hash and the P:final mark */
	EJOB_STEP_WRITE,	/* lua/transition.lua: j->step, batched (+ WAIT, R19) */
	EJOB_STEP_REDISPATCH,	/* lua/redispatch.lua: R9's XCLAIM to us */
	EJOB_STEP_HANDBACK,	/* lua/handback.lua: R9's new entry, ours acked */
	EJOB_STEP_RECLAIM,	/* R20, R10: the entry XCLAIMed back if still ours */
	EJOB_STEP_PARK,		/* lua/park.lua: R6, set aside while held, ours acked */
	EJOB_STEP_COUNT
};

/* Sends step k of j, its arguments built from j; its reply is read by the
 * step's row (ejob_redis.c), and a failure to send goes to the row's rule.
 * j holds one reference while it is out. */
void ejob_step_start(struct ejob *j, enum ejob_step k);
/* The step whose R17 retry waits on timer t, or -1. */
int ejob_step_of_timer(enum ejob_timer t) __attribute__((warn_unused_result));
/* R20: the write waits for a new Redis credential (no timer, nothing out). */
void ejob_hold(struct ejob *j);

/* ---- ejob_call.c: the calls and the gate ---- */

/* §13: the gate would not let j's attempt start now. */
int ejob_gate_shut(const struct ejob *j);
/* §13: j's place at the gate given back, with what the call came to. */
void ejob_gate_give_back(struct ejob *j, enum gate_result r);
/* §13: the place taken or given back as the core's step says. */
void ejob_gate_follow(struct ejob *j);
/* §13: j held at the gate until gate_hold_until says. */
void ejob_gate_hold(struct ejob *j);
/* The action call (R7), the token exchange (RFC 8693), the PDP (R5): each
 * answers through ejob_feed, never from inside the call. */
void ejob_start_call(struct ejob *j);
void ejob_start_exchange(struct ejob *j);
void ejob_start_authz(struct ejob *j);

#endif
