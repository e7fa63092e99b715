/*
 * store: the Redis layout of SPEC §2 — key names and the Lua scripts that
 * make each step atomic. Building arguments is pure; sending is the
 * engine's business (through rconn).
 */
#ifndef WARRANTD_STORE_H
#define WARRANTD_STORE_H

#include <stddef.h>

#define STORE_KEY_MAX 256

struct store_keys {
	char jobs[STORE_KEY_MAX], scheduled[STORE_KEY_MAX], dead[STORE_KEY_MAX];
	char notify[STORE_KEY_MAX], audit[STORE_KEY_MAX], consumer[STORE_KEY_MAX];
	char decision_prefix[STORE_KEY_MAX];	/* "P:decision:" */
};

/* Fills every key from the prefix and consumer name. -1 when too long. */
int store_keys_init(struct store_keys *k, const char *prefix, const char *consumer)
	__attribute__((warn_unused_result));

/* "P:decision:<id>" into buf. -1 when it does not fit. */
int store_decision_key(const struct store_keys *k, const char *id, char *buf, size_t n)
	__attribute__((warn_unused_result));

/*
 * The scripts. Each is documented beside its body in store.c; the engine
 * sends them with rconn_eval.
 *
 * STORE_TRANSITION  one state change of a job: fences, hash write, audit,
 *                   dead letter, notification, reschedule and XACK at once.
 * STORE_CLAIM       own pending entries (mode "own") or XAUTOCLAIM ("auto"),
 *                   each with its delivery count.
 * STORE_RENEW       XCLAIM ... JUSTID of entries still ours; returns the ids
 *                   others hold and those pending for nobody.
 * STORE_REDISPATCH  XCLAIM (delivery count + 1) of an entry still ours.
 * STORE_PROMOTE     due ids from P:scheduled onto P:jobs (Redis' TIME).
 * STORE_TRIM        XTRIM MINID of P:jobs below what is undelivered or pending.
 */
extern const char *const store_script_transition;
extern const char *const store_script_claim;
extern const char *const store_script_renew;
extern const char *const store_script_redispatch;
extern const char *const store_script_promote;
extern const char *const store_script_trim;

/* The arguments of one transition (strings are borrowed, "" for none). */
struct store_transition {
	const char *hash_key;		/* NULL when there is no record hash */
	const char *stream_id, *record_id;
	const char *state;		/* new state, "" for none */
	const char *outcome, *detail, *http_status;
	long long fence_attempts;	/* -1: no check of `attempts` */
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
	long long retain_ms;		/* PEXPIRE of a terminal hash; 0 none */
	long long dead_maxlen, notify_maxlen;	/* MAXLEN ~ of P:dead, P:notify */
	int skip_lease;			/* no PEL check: the entry left it already */
	int keep_unpending;		/* a call's result: written even when the
					   PEL forgot the entry (owner and fence ours) */
};

#define STORE_TRANSITION_NKEYS 6
#define STORE_TRANSITION_ARGC (STORE_TRANSITION_NKEYS + 30)

/* Argument vectors for rconn_eval: keys first, then args. The strings
 * point into `t`, `k` and `scratch`, which must outlive the call. */
struct store_argv {
	const char *argv[STORE_TRANSITION_ARGC];
	size_t len[STORE_TRANSITION_ARGC];
	char scratch[8][24];
	int argc, nkeys;
};

void store_transition_argv(const struct store_keys *k, const char *group, const char *consumer,
			   long long audit_maxlen, const struct store_transition *t,
			   struct store_argv *out);

#endif
