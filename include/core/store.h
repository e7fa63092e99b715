/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * store: the Redis layout of warrantd(7) §2 — key names, the Lua scripts that
 * make each step atomic (lua/, embedded), their arguments set by name, the
 * transition's replies and the P:dead fields. Pure: sending is script.c's
 * business (the daemon, on rconn) or warrantctl's (sync hiredis).
 */
#ifndef WARRANTD_STORE_H
#define WARRANTD_STORE_H

#include <stddef.h>
#include <sys/uio.h>

#define STORE_KEY_MAX 256

struct store_keys {
	char jobs[STORE_KEY_MAX], scheduled[STORE_KEY_MAX], dead[STORE_KEY_MAX];
	char notify[STORE_KEY_MAX], audit[STORE_KEY_MAX], consumer[STORE_KEY_MAX];
	char consumers[STORE_KEY_MAX], clock[STORE_KEY_MAX];	/* R11's liveness */
	char owner[STORE_KEY_MAX];		/* "P:owner:<consumer>" (lua/owner.lua) */
	char decision_prefix[STORE_KEY_MAX];	/* "P:decision:" */
	char final_prefix[STORE_KEY_MAX];	/* "P:final:" (R4's terminal mark) */
	char paused[STORE_KEY_MAX];		/* "P:paused" (§13's pauses) */
	char parked[STORE_KEY_MAX];		/* "P:parked" (R6: actions with
						   parked entries, by deadline) */
	char parked_prefix[STORE_KEY_MAX];	/* "P:parked:" (one list an action) */
	/* The transition's `terminal` (job_terminal_list, with a space at
	 * each end): made once here, not for each of the two transitions of
	 * every job. */
	char terminal[96];
};

/* Fills every key from the prefix and consumer name, and the terminal
 * states. -1 when too long. */
int store_keys_init(struct store_keys *k, const char *prefix, const char *consumer)
	__attribute__((warn_unused_result));

/* "P:decision:<id>" into buf. -1 when it does not fit. */
int store_decision_key(const struct store_keys *k, const char *id, char *buf, size_t n)
	__attribute__((warn_unused_result));
/* "P:final:<id>" into buf: the terminal state a record reached (R4), in
 * the decision hash's slot on a cluster (both under the one prefix, whose
 * hash tag is the slot). -1 when it does not fit. */
int store_final_key(const struct store_keys *k, const char *id, char *buf, size_t n)
	__attribute__((warn_unused_result));
/* "P:parked:<action>" into buf: the entries of the action set aside while
 * it is held (R6, lua/park.lua). -1 when it does not fit. */
int store_parked_key(const struct store_keys *k, const char *action, char *buf, size_t n)
	__attribute__((warn_unused_result));

/*
 * The scripts: one file each in lua/, embedded at build time by
 * scripts/luagen.sh into store_scripts.c (the table below) and
 * store_scripts.h (enum store_script_id, and enum store_slot: one
 * STORE_<SCRIPT>_<NAME> per key and argument its header names).
 *
 * STORE_TRANSITION  one state change of a job: fences, hash write, audit,
 *                   dead letter, notification, reschedule and XACK at once.
 * STORE_CLAIM       own pending entries (mode "own"), renewed, or a dead
 *                   consumer's ("auto", judged by Redis: P:consumers and
 *                   P:clock), each with its delivery count.
 * STORE_HEARTBEAT   R11: this consumer's heartbeat by Redis' TIME, and
 *                   P:clock's run of heartbeats without a gap.
 * STORE_RENEW       XCLAIM ... JUSTID of entries still ours; returns the ids
 *                   others hold and those pending for nobody.
 * STORE_REDISPATCH  XCLAIM (delivery count + 1) of an entry still ours, once
 *                   for the count the worker last knew (a resend after a
 *                   lost reply counts nothing twice).
 * STORE_HANDBACK    R9: a new stream entry for the record, carrying its
 *                   delivery count (`priorDeliveries`), named in the hash's
 *                   `entry`, and ours acked -- while it is still ours.
 * STORE_PARK        R6: an entry its action holds back set aside in
 *                   P:parked:<action>, ours acked -- while it is still ours.
 * STORE_UNPARK      R6: parked entries queued again in order (or only those
 *                   whose deadline passed, for R1).
 * STORE_PROMOTE     due ids from P:scheduled onto P:jobs (Redis' TIME).
 * STORE_TRIM        XTRIM MINID of P:jobs below what is undelivered or pending.
 * STORE_DECIDE      warrantctl decide: the hash and the enqueue, once per id.
 * STORE_REQUEUE     warrantctl retry and dead requeue: the record queued
 *                   again with a fresh budget (attemptsBase), its P:final
 *                   mark and dead letters removed.
 * STORE_CANCEL      warrantctl cancel: `cancelled`, terminal, P:final, audit
 *                   and the owner's notification at once.
 */
#include "store_scripts.h"

struct store_script {
	const char *name;		/* the file name without ".lua" */
	const char *function;		/* its name in the library: "warrantd_<name>" */
	const char *batch_function;	/* its batch form's, or NULL */
	int read_only;			/* "-- FLAGS: no-writes": called by FCALL_RO */
	const char *body;		/* the file, its header lines replaced by the
					   locals K_name and A_name (luagen.sh): the
					   callback of its function in the library */
	const char *const *keys;	/* KEYS names in order, NULL-terminated */
	const char *const *args;	/* ARGV names in order, NULL-terminated */
	const char *rest;		/* the trailing list's name ("ids"), or NULL */
	int nkeys, nargs;
	/* The batch form ("-- BATCH:" line, luagen.sh), or NULL: one call for
	 * several items, each run under pcall, the reply an array of theirs. */
	const char *batch;
	const unsigned char *shared;	/* per slot, with batch: 1 when the same
					   for every item (passed once) */
};

extern const struct store_script store_scripts[STORE_NSCRIPTS];

/* The Redis Functions library of every script (luagen.sh; warrantd(7)
 * §2.1), as FUNCTION LOAD takes it: `#!lua name=warrantd`, one function a
 * script and one a batch form, the code they share, and warrantd_version,
 * which returns STORE_LIBRARY_VERSION. Only an administrator loads it
 * (warrantctl functions load); the workers and warrantctl only FCALL it. */
extern const char store_library[];

/* What the worker makes of the reply to `FCALL_RO warrantd_version 0` at
 * start (store_library_check). */
enum store_library_state {
	STORE_LIBRARY_OK,		/* this build's version */
	STORE_LIBRARY_MISSING,		/* no such function: not loaded */
	STORE_LIBRARY_WRONG,		/* another version */
	STORE_LIBRARY_NO_FUNCTIONS,	/* no FCALL_RO: a server older than 7.0 */
	STORE_LIBRARY_UNKNOWN		/* any other error: asked again later */
};

/* The state for a reply: its text (the version, or an error's text when
 * is_error; NULL: no reply, or not a string). Pure. */
enum store_library_state store_library_check(int is_error, const char *text);

/*
 * One call's keys and arguments, set by name (a slot of enum store_slot) in
 * any order. Every key and argument the header names must be set exactly
 * once, with a slot of this script: store_args_vec() refuses anything else,
 * so a forgotten or misplaced argument never reaches Redis.
 * Strings are borrowed and must outlive store_args_vec(); numbers, and a
 * key store.c derives itself, are kept in `a`.
 */
struct store_args {
	enum store_script_id script;
	int bad;				/* a slot of another script, or twice */
	int bad_slot;
	const char *v[STORE_SLOTS_MAX];		/* NULL: not set */
	char num[STORE_SLOTS_MAX][24];
	/* the transition's P:final:<record_id> (a prefix and an id of at
	 * most 64 bytes, record.h) */
	char key[STORE_KEY_MAX + 72];
	const char *const *rest;		/* the trailing list, borrowed */
	size_t nrest;
};

void store_args_init(struct store_args *a, enum store_script_id script);
/* value NULL leaves the slot unset (refused later). */
void store_arg(struct store_args *a, enum store_slot slot, const char *value);
void store_arg_ll(struct store_args *a, enum store_slot slot, long long value);
/* "1" or "0". */
void store_arg_flag(struct store_args *a, enum store_slot slot, int on);
/* The key "jobs" and the arguments "group" and "consumer", which every
 * script of the consumer names (claim, renew, redispatch, transition); a
 * script without one of them gets the call refused. */
void store_args_consumer(struct store_args *a, const struct store_keys *k, const char *group,
			 const char *consumer);
/* The trailing list (renew's ids, requeue's entry_ids); items borrowed. */
void store_arg_rest(struct store_args *a, const char *const *items, size_t n);

/* The FCALL command of one call: argv[0] "FCALL" (FCALL_RO for a read-only
 * script), argv[1] the function's name, argv[2] the number of keys, then
 * the keys, the arguments and the list; len[i] is strlen(argv[i]).
 * STORE_VEC_HEAD entries precede the keys (script.c sends the rest after
 * a head of its own). */
#define STORE_VEC_HEAD 3
#define STORE_VEC_INLINE (STORE_VEC_HEAD + STORE_SLOTS_MAX + 8)
struct store_vec {
	int argc;
	const char **argv;	/* argv_in, or allocated for a longer list */
	size_t *len;
	char nkeys[24];
	const char *argv_in[STORE_VEC_INLINE];
	size_t len_in[STORE_VEC_INLINE];
};

/*
 * Batches (scripts with a batch form). STORE_BATCH_MAX items at most per
 * call: a batch runs inside Redis as one script, blocking it meanwhile
 * (64 transitions take about 3 ms there).
 */
#define STORE_BATCH_MAX 64

/* Bytes that grow; kept from one batch to the next. */
struct store_buf {
	char *p;
	size_t len, cap;
};

/*
 * The calls of one batch, gathered as the RESP (resp.h) they are sent as:
 * each call's slots are written once, as bulk strings, straight into the
 * group the batch form takes them in -- the shared slots (the first call's;
 * a later call's must be the same bytes), each call's own keys, each call's
 * own arguments -- so sending it is four pieces one after the other, with
 * no copy of a call and no second formatting (bench/README.md, lever 14).
 * Zero it to start; its buffers are reused by store_batch_clear() and
 * freed by store_batch_release().
 */
#define STORE_BATCH_GROUPS 4
struct store_batch {
	enum store_script_id script;
	size_t n;			/* calls gathered */
	/* in the order sent: the shared keys, each call's own keys, the
	 * shared arguments, each call's own arguments */
	struct store_buf group[STORE_BATCH_GROUPS];
	/* the first call's slots: where each one's value is in its group's
	 * buffer, and its length (a later call's shared slots are compared
	 * with them; a lone call is sent from them in header order) */
	size_t val[STORE_SLOTS_MAX], vlen[STORE_SLOTS_MAX];
	/* the script's slots by kind, set with the first call: the shared
	 * ones, then each call's own (keys before arguments in both);
	 * own_arg0 is where the own arguments begin */
	unsigned char slot[STORE_SLOTS_MAX], nshared, nslots, own_arg0;
	/* A call's trailing empty own arguments are left out (the script
	 * reads a missing one as "", luagen.sh), so in the batch form each
	 * call's own arguments follow their number. lone_slots: how many of
	 * the first call's slots, in header order, its plain form sends;
	 * own_argc: the bulk strings in the own arguments' group. */
	unsigned char lone_slots;
	size_t own_argc;
};

/* Adds the call a (checked as by store_args_vec; its strings are copied):
 * 0; 1 when it does not fit b (b holds STORE_BATCH_MAX calls, or calls of
 * another script, or a shared slot differs: b is to be sent first and a
 * added to an empty one); -1 with one line in err when it is refused (a
 * slot missing or misplaced, a trailing list, a script without a batch
 * form) or out of memory. b is unchanged unless 0. */
int store_batch_add(struct store_batch *b, const struct store_args *a, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* The most pieces store_batch_parts() returns. */
#define STORE_BATCH_PARTS \
	(STORE_SLOTS_MAX > STORE_BATCH_GROUPS ? STORE_SLOTS_MAX : STORE_BATCH_GROUPS)

/* What to send for b (b->n >= 1) after numkeys: with one call the plain
 * script's keys and arguments in header order, else the batch form's (the
 * shared keys, each call's own keys, the shared arguments, then for each
 * call the number of its own arguments and those up to the last that is not
 * empty; the plain form also leaves out trailing empty ones); item i's reply is element i + 1 of the array the batch form
 * returns). The pieces point into b's buffers (valid until b changes);
 * returns their number, *nkeys and *argc the counts of bulk strings. */
size_t store_batch_parts(const struct store_batch *b, struct iovec parts[STORE_BATCH_PARTS],
			 int *nkeys, int *argc);

/* Empty again (n = 0), the buffers kept. */
void store_batch_clear(struct store_batch *b);
/* Frees the buffers; b is then empty and zero. */
void store_batch_release(struct store_batch *b);

/* Builds *v from a (v->argv and v->len point into a's strings and into v).
 * 0, or -1 with one line in err naming the script and the missing or
 * misplaced slot (or "out of memory"); *v then needs no free. The caller
 * frees a built vector with store_vec_free(). */
int store_args_vec(const struct store_args *a, struct store_vec *v, char *err, size_t errlen)
	__attribute__((warn_unused_result));
void store_vec_free(struct store_vec *v);

/* The name of a slot ("transition.fence"; "?" when it names none) into buf. */
const char *store_slot_name(int slot, char *buf, size_t n);

/*
 * The transition's answer (lua/transition.lua): {1, "ok", from, attempts}
 * or {0, why, from}. STORE_REPLY_LEASE: no longer pending for this consumer;
 * OWNER, ATTEMPTS: a newer attempt exists (R13); TERMINAL: already terminal
 * (its state or its P:final mark), acked (R4); MISSING: the hash is gone;
 * DUPLICATE: the record runs from another stream entry still pending (its
 * hash's `entry`), this one acked with an audit entry (R4). AGAIN
 * (written): a call step sent again after its reply was lost had been
 * written already (R8, R13).
 */
enum store_reply {
	STORE_REPLY_OK,
	STORE_REPLY_LEASE,
	STORE_REPLY_OWNER,
	STORE_REPLY_ATTEMPTS,
	STORE_REPLY_TERMINAL,
	STORE_REPLY_MISSING,
	STORE_REPLY_AGAIN,
	STORE_REPLY_DUPLICATE,
	STORE_REPLY_COUNT	/* not a reply: the number of them */
};

/* "ok", "lease", ... ("" out of range). Static. */
const char *store_reply_name(enum store_reply r);
/* The inverse: 0 and *out, or -1 for text the scripts never return. */
int store_reply_parse(const char *s, enum store_reply *out) __attribute__((warn_unused_result));
/* 1 when s (may be NULL) is the reply r. */
int store_reply_is(const char *s, enum store_reply r);

/*
 * The fields of a P:dead entry (warrantd(7) §2), the one list of them: in the
 * order warrantctl shows them; lua/transition.lua writes exactly these
 * (test_store checks it).
 */
enum store_dead_field {
	STORE_DEAD_ID,
	STORE_DEAD_REASON,
	STORE_DEAD_DETAIL,
	STORE_DEAD_DELIVERIES,
	STORE_DEAD_CONSUMER,
	STORE_DEAD_AT,
	STORE_DEAD_STREAM_ID,
	STORE_DEAD_NFIELDS
};

/* Their names by enum store_dead_field, NULL-terminated. */
extern const char *const store_dead_fields[STORE_DEAD_NFIELDS + 1];

/* The arguments of one transition (strings are borrowed, "" for none). */
struct store_transition {
	const char *hash_key;		/* NULL when there is no record hash */
	const char *stream_id, *record_id;
	const char *state;		/* new state, "" for none */
	const char *outcome, *detail, *http_status;
	long long fence_attempts;	/* -1: no check of `attempts`; with
					   incr_attempts, the value it increments
					   from (a re-send answers "again") */
	int require_owner;		/* hash `owner` must be this consumer */
	int incr_attempts;		/* HINCRBY attempts 1 (a call begins) */
	int ack;
	const char *dead_reason;	/* "" for no dead letter */
	int notify;
	const char *notify_owner, *notify_kind;
	const char *on_behalf_of, *action, *resource;
	const char *schedule_score;	/* "" for no ZADD to P:scheduled */
	long long deliveries, attempt;
	const char *at;			/* RFC 3339 now */
	long long retain_ms;		/* PEXPIRE of a terminal hash and its P:final
					   mark (job_retain_ms, §3.3); 0 none */
	long long dead_maxlen, notify_maxlen;	/* MAXLEN ~ of P:dead, P:notify */
	int skip_lease;			/* no PEL check: the entry left it already */
	int keep_unpending;		/* a call's result: written even when the
					   PEL forgot the entry (owner and fence ours) */
	int call_result;		/* a call's answer: on a record cancelled
					   meanwhile (§11) it is kept as
					   lateOutcome/lateHttpStatus */
	const char *traceparent;	/* §13: into the audit entries; NULL or ""
					   when the stream entry carried none */
};

/* The transition's `flags` argument: the sum of those that hold (one
 * number instead of eight arguments; transition.lua takes it apart). */
enum store_tflag {
	STORE_TF_HAS_HASH = 1,
	STORE_TF_ACK = 2,
	STORE_TF_NOTIFY_WRITE = 4,
	STORE_TF_REQUIRE_OWNER = 8,
	STORE_TF_INCR_ATTEMPTS = 16,
	STORE_TF_CHECK_LEASE = 32,
	STORE_TF_KEEP_UNPENDING = 64,
	STORE_TF_FINAL_WRITE = 128,	/* a terminal state: P:final too */
	STORE_TF_CALL_RESULT = 256,	/* a call's answer: late on a cancelled record */
};

/* The transition's keys and arguments from t; every slot is set (strings
 * are borrowed from k, group, consumer and t; NULL is sent as ""). The
 * terminal states come from job.c's table. The key P:final:<record_id> is
 * made here, in a (with a hash only: the script touches it only then). */
void store_transition_args(const struct store_keys *k, const char *group, const char *consumer,
			   long long audit_maxlen, const struct store_transition *t,
			   struct store_args *a);

#endif
