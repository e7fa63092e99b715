/*
 * consumer: the worker's consumer core -- what the worker as a whole does
 * with Redis, as pure functions over plain structs. It reads no clock (now
 * comes in where a rule needs it), draws no random numbers (a random word
 * comes in) and does no I/O; engine.c and ejob.c carry out what it says.
 * job.h decides what happens to one entry; this decides how the worker
 * meets Redis.
 *
 * Sections (each self-contained, with its own prefix below consumer_):
 *   1. Error replies (R17): what a Redis error reply means
 *      (consumer_err_classify), and whether a step that met one is tried
 *      again or given up (consumer_err_next).
 */
#ifndef WARRANTD_CONSUMER_H
#define WARRANTD_CONSUMER_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ */
/* 1. Error replies (R17)                                               */

/*
 * What an error reply means, by whom it can be fixed. Each class but
 * CONSUMER_ERR_ENTRY is transient for the entry that met it: the step is
 * tried again with backoff, however often, and the connection's owner may
 * have more to do (the note on each).
 */
enum consumer_err {
	CONSUMER_ERR_NONE = 0,	/* not an error reply */
	CONSUMER_ERR_LOST,	/* no reply at all: the connection went, or the
				   command could not be sent */
	CONSUMER_ERR_TRANSIENT,	/* Redis cannot serve now: LOADING, BUSY, MISCONF,
				   NOREPLICAS, OOM, CLUSTERDOWN, TRYAGAIN,
				   MASTERDOWN, MOVED, ASK, UNKILLABLE, NOSCRIPT,
				   a script killed by SCRIPT KILL */
	CONSUMER_ERR_READONLY,	/* a replica answered: drop the connection and find
				   the primary (R17) */
	CONSUMER_ERR_NOGROUP,	/* the stream or the group is gone: create it
				   again (R14) */
	CONSUMER_ERR_AUTH,	/* NOAUTH, WRONGPASS, NOPERM, or a script's command
				   the ACL refused: a credential to renew (R20) */
	CONSUMER_ERR_ENTRY,	/* the entry's own data: WRONGTYPE, a value that is
				   "not an integer" or "not a (valid) float", an
				   increment that "would overflow", a Lua runtime
				   error ("ERR user_script:N: ..."). Retrying
				   cannot fix it. */
	CONSUMER_ERR_OTHER,	/* an error reply of no known kind (a renamed
				   command, a bug of ours): treated as transient,
				   since nothing says it is the entry's */
	CONSUMER_ERR_COUNT	/* not a class: the number of them */
};

/* "lost", "transient", ... ("" for CONSUMER_ERR_NONE and out of range).
 * Static storage. */
const char *consumer_err_name(enum consumer_err c);

/*
 * The class of an error reply's text, as Redis 7.0 writes it (a script's
 * error carries a " script: <sha>, on @user_script:N." tail, which is
 * ignored). NULL is CONSUMER_ERR_LOST (no reply); "" and text that is no
 * known kind are CONSUMER_ERR_OTHER.
 */
enum consumer_err consumer_err_classify(const char *text);

/* The one line of text (an error reply) that may be stored and shown:
 * control characters become spaces, and text longer than n - 1 bytes is
 * cut at a UTF-8 character boundary and ends in "...". buf is always
 * terminated (n >= 4); NULL text gives "no reply". Returns buf. */
char *consumer_err_line(const char *text, char *buf, size_t n);

/* A step met per-entry errors this often in a row: the entry is given up
 * (R17: "after three tries"). */
#define CONSUMER_ERR_ENTRY_TRIES	3
/* R17: a step Redis refused or could not take is sent again after a
 * delay drawn between the first and a ceiling that doubles with each try
 * up to the last (backoff.h): never in a tight loop. */
#define CONSUMER_ERR_RETRY_MIN_MS	100
#define CONSUMER_ERR_RETRY_MAX_MS	5000

/* One entry's run of failed Redis steps. The shell zeroes it; only these
 * functions change it. */
struct consumer_errs {
	unsigned tries;		/* failed steps in a row, any class: the backoff */
	unsigned entry;		/* per-entry errors since the last reply that was
				   not an error (transient ones in between
				   neither count nor end the run) */
	int gave_up;		/* consumer_err_next said GIVE_UP once */
};

enum consumer_verdict {
	CONSUMER_RETRY,		/* send the same step again in delay_ms */
	CONSUMER_GIVE_UP,	/* the entry is dead (redis-error): write that
				   without its data, then XACK */
};

struct consumer_err_step {
	enum consumer_verdict verdict;
	int64_t delay_ms;	/* with CONSUMER_RETRY */
};

/*
 * A step of one entry failed with class c. entry_data: the step reads or
 * writes the entry's own data (the HGETALL of its hash, a transition that
 * names its hash); an error of a step that does not (a re-dispatch, a
 * dead letter written without the hash) is never the entry's, so it never
 * gives the entry up. Updates *e. Gives up at the CONSUMER_ERR_ENTRY_TRIES-th
 * per-entry error of a run, and once only: a step after that (the dead
 * letter itself) is retried, whatever it meets. rnd: a random word, for
 * the jitter.
 */
struct consumer_err_step consumer_err_next(struct consumer_errs *e, enum consumer_err c,
					   int entry_data, uint64_t rnd)
	__attribute__((warn_unused_result));

/* A step of the entry got a reply that is not an error: the run ends. */
void consumer_err_ok(struct consumer_errs *e);

/* Redis is reachable again: the next retry waits the shortest delay; the
 * entry's count of its own errors is kept. */
void consumer_err_redis_up(struct consumer_errs *e);

#endif
