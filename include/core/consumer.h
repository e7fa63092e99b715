/* SPDX-License-Identifier: BSD-2-Clause */
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
 *   2. Reading and claiming (R6, R11, R14, R17, R18): how much to read,
 *      whether a read or a claim may be sent now and which claim, and how
 *      long a refused read, renewal or heartbeat waits (consumer_view).
 *      Whether another consumer is gone is not decided here, nor anywhere
 *      in the worker: Redis decides it (lua/claim.lua, R11).
 *   3. Redis' own credential (R20): what a write refused for the
 *      credential does (consumer_auth_write), and what the reclaim that
 *      precedes its resend says (consumer_reclaim_next).
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
	CONSUMER_ERR_EXISTS,	/* BUSYGROUP: what XGROUP CREATE makes is there
				   already (R14: as good as made) */
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

/* The key a NOGROUP reply names ("NOGROUP No such key 'K' or consumer
 * group 'G' in XREADGROUP with GROUP option"): a pointer into text and its
 * length in *len, or NULL when text does not say (another server's
 * wording, or no NOGROUP). */
const char *consumer_nogroup_key(const char *text, size_t *len);

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

/* ------------------------------------------------------------------ */
/* 2. Reading and claiming                                              */

/* What the worker knows when it decides for one shard: plain data the
 * engine fills from its state, nothing kept. */
struct consumer_view {
	long max_in_flight, batch;	/* [daemon] max_in_flight, [redis] batch */
	long in_hand;			/* entries in hand over every shard (R18) */
	int draining;			/* R15: stopping */
	int tokens_usable;		/* R6: every action's credential can be had */
	long waiting_token;		/* R6: entries in hand waiting for a token */
	int group_ready;		/* R14: the group exists */
	int own_done;			/* R14: the own PEL has been read to its end */
	int cmd_up, blk_up;		/* R17: the command and the blocking connection */
	int reading;			/* a read for this shard is outstanding */
	int claiming;			/* a claim for this shard is outstanding */
	int backing_off;		/* R17: an error reply on the read path waits */
	long held;			/* §13, R6: entries in hand held back by a
					   pause, a limit or an open breaker */
	int queue_paused;		/* §13: `warrantctl pause` of the whole queue */
};

/* What may go out for a shard now. */
enum consumer_claim {
	CONSUMER_CLAIM_NONE,	/* nothing */
	CONSUMER_CLAIM_OWN,	/* R14: the next page of our own PEL */
	CONSUMER_CLAIM_AUTO,	/* R11: ask Redis for the entries of consumers it
				   judges gone (claim interval ticks only) */
};

/* The claim script examines at most this many x 10 pending entries of
 * owners judged gone per tick in all (R11): bounded work. */
#define CONSUMER_CLAIM_SCAN	100

/* Room for entries: what max_in_flight leaves, at most one batch; 0 or
 * less means none. */
long consumer_room(const struct consumer_view *v);

/* R18: how many entries one stream's read may ask for, when `streams`
 * streams are read at once (per shard, or one read naming them all, whose
 * COUNT Redis applies per stream): their share of the room, at least 1. */
long consumer_read_count(const struct consumer_view *v, size_t streams);

/* R6, R14, R17: a read of new entries may be sent: the group is there,
 * the own PEL was read first, both connections are up, no error reply is
 * being waited out, no read is outstanding, there is room and a usable
 * token, and the worker is not stopping. §13: nor while the whole queue is
 * paused (its entries stay unread), nor while entries held back by their
 * action's limits fill more than R6's share (consumer_held_max): one stuck
 * action does not starve the others. Entries held by a pause or an open
 * breaker are parked beyond that share (consumer_parks), so they never
 * stop the reads. */
int consumer_may_read(const struct consumer_view *v);

/* R6's share: how many entries held back for their action alone the hand
 * keeps, half of max_in_flight (at least one). */
long consumer_held_max(long max_in_flight);

/* R6, §13: an entry just held back for a reason that parks (gate_parks)
 * is set aside in Redis (lua/park.lua) rather than kept, when `kept`
 * other held entries already fill R6's share of max_in_flight: the hand
 * keeps room for the entries behind it. */
int consumer_parks(long kept, long max_in_flight);

/* R6, §13: what becomes of the parked entries of an action now. */
enum consumer_unpark {
	CONSUMER_UNPARK_NONE,	/* nothing: held, and no deadline has come */
	CONSUMER_UNPARK_ALL,	/* its hold ended: queued again, in order */
	CONSUMER_UNPARK_DUE,	/* still held, but the earliest deadline among
				   them passed: those whose deadline passed are
				   queued again, to end expired (R1) */
};

/* held: the gate still holds the action for a reason that parks;
 * earliest: the earliest deadline parked (P:parked's score, ms); now in
 * the same clock. Never while stopping (R15). */
enum consumer_unpark consumer_unpark_next(int held, int64_t earliest, int64_t now,
					  int draining);

/* R6: an entry that waits for its action's scope token (token_needed, no
 * usable token: token_ok 0) is parked rather than kept when `kept` other
 * entries waiting for a token already fill R6's share of max_in_flight. */
int consumer_token_parks(int token_needed, int token_ok, long kept, long max_in_flight);

/* R6: whether an action's parked entries stay parked: the gate keeps them
 * (gate_keeps_parked), or its calls need a token and none is usable for
 * its scope (queued again, they would only wait or be parked again). */
int consumer_keeps_parked(int gate_keeps, int token_needed, int token_ok);

/* R6: entries that wait for a token stay in hand up to R6's share
 * (consumer_held_max) and are parked beyond it (consumer_token_parks), so
 * the worker reads on with the share held; past it (entries on their way
 * to be parked), or with a credential that cannot be had, it reads and
 * claims nothing new (one scope's trouble stays its own). */
int consumer_tokens_let_read(const struct consumer_view *v);

/* One blocking read over several shards' streams (shards on one Redis):
 * consumer_may_read of the worker's view, where reading, blk_up and
 * backing_off are the shared read's, with group_ready, own_done and cmd_up
 * set; a stream goes into it when consumer_stream_ready says so of its
 * shard's view. */
int consumer_stream_ready(const struct consumer_view *v);

/* A shard a round trip from ready (its group or own PEL on the way): the
 * shared read waits for it rather than leave its stream out for block_ms.
 * One whose command connection is down or that backs off is not waited for. */
int consumer_stream_coming(const struct consumer_view *v);

/* §8: a shard that has read nothing for quiet_ms is asked whether its
 * group has undelivered entries (then it is stalled, and says so) once it
 * waited 3 x block_ms + heartbeat_ms, with its own PEL read, room, a usable
 * credential, and not stopping. */
int consumer_check_stall(const struct consumer_view *v, int64_t quiet_ms, long block_ms,
			 long heartbeat_ms);

/* R11: a consumer whose heartbeat stopped (or never came) this long ago is
 * forgotten by the claim script: twice lease_renew_ms. */
long consumer_forgotten_ms(long lease_renew_ms);

/* The worker's own steps on the reading and lease path, each answered
 * by one reply. */
enum consumer_step {
	CONSUMER_STEP_READ,	/* XREADGROUP (a shard's, or the shared one) */
	CONSUMER_STEP_OWN,	/* the claim script on our own PEL (R14) */
	CONSUMER_STEP_AUTO,	/* the claim script on others' (R11) */
	CONSUMER_STEP_RENEW,	/* the renewal of the leases in hand (R10) */
	CONSUMER_STEP_GROUP,	/* XGROUP CREATE (R14) */
	CONSUMER_STEP_BEAT,	/* the heartbeat script (R11) */
};

/* What follows a reply to a step (a mask; 0: nothing now -- the
 * connection's return, or the next tick, sends it again). */
#define CONSUMER_DO_OK		1u	/* the path works: its failures end, go on */
#define CONSUMER_DO_GROUP	2u	/* R14: the group went; create it again */
#define CONSUMER_DO_BACKOFF	4u	/* R17: try again after consumer_retry_ms */

/* The reply to step s had class c (CONSUMER_ERR_LOST: none; NONE: no
 * error) and parsed: it had the shape the step reads. */
unsigned consumer_reply_next(enum consumer_step s, enum consumer_err c, int parsed)
	__attribute__((warn_unused_result));

/* Which claim may be sent now; `tick`: a claim interval's timer fired
 * (CONSUMER_CLAIM_AUTO only then). The own PEL comes before anything else,
 * also without a usable token (its entries are ours already); another's
 * entries never without one (R6: never claim what cannot be completed);
 * neither without room and the command connection. */
enum consumer_claim consumer_next_claim(const struct consumer_view *v, int tick);

/* How many XPENDING pages of `room` entries the claim script may look at
 * in one tick, so that it examines at most CONSUMER_CLAIM_SCAN x 10 in all. */
long consumer_claim_calls(long room);

/* R10, R17: the wait before the `failures`-th try again of a refused read,
 * renewal or heartbeat: full jitter between CONSUMER_ERR_RETRY_MIN_MS and a
 * ceiling that doubles up to CONSUMER_ERR_RETRY_MAX_MS. */
int64_t consumer_retry_ms(unsigned failures, uint64_t rnd);

/* R17: an outage is told once at warn when it begins, then at most once
 * per CONSUMER_DOWN_REMIND_MS while it lasts (each failed attempt between
 * at debug), and its end with its length (rconn's redis.down, redis.up). */
#define CONSUMER_DOWN_REMIND_MS	60000

/* A connect attempt failed at now_ms (a monotonic clock); said_at_ms: when
 * this outage was last said at warn (0: not yet). 1: say it at warn now. */
int consumer_down_warn(int64_t said_at_ms, int64_t now_ms);

/* ------------------------------------------------------------------ */
/* 3. Redis' own credential (R20)                                       */

/* What the engine does when rconn says Redis answered about its
 * credential (rconn_opts.auth_seen). */
enum consumer_auth_seen {
	CONSUMER_AS_NONE,	/* nothing: accepted, or with a static password a
				   NOPERM (the ACL's word on one command: R17's) */
	CONSUMER_AS_NOTE,	/* count it; a static password has nothing to
				   fetch (rconn's redis.error said it) */
	CONSUMER_AS_STALE,	/* count it and say so: it met a token older than
				   its connection's latest AUTH */
	CONSUMER_AS_RENEW,	/* count it, say so, hold the refused writes and
				   ask for one fresh token (R20) */
};

/* ok: 1 accepted, 0 refused, -1 refused a stale token; kind: the error's
 * kind ("NOAUTH", "WRONGPASS", "NOPERM", ...); static_cred: [redis] auth is
 * a password (or none). */
enum consumer_auth_seen consumer_auth_seen(int ok, const char *kind, int static_cred)
	__attribute__((warn_unused_result));

/* What becomes of an entry's write (a transition) that Redis did not take. */
enum consumer_auth_act {
	CONSUMER_AUTH_R17,	/* not the credential's doing: R17's retry */
	CONSUMER_AUTH_HOLD,	/* the credential died: hold the write until a
				   good token is there (ejobs_redis_auth_ready),
				   then reclaim the entry and write again */
	CONSUMER_AUTH_RECLAIM,	/* refused for a credential already replaced (the
				   command left before its connection's latest
				   AUTH): reclaim now, then write again */
};

/*
 * A write failed with class c; auth_lost: Redis refused the current
 * credential and no new token has been taken since (the engine says so
 * before the refused command's callback, also for a connection closed as
 * its token died, which reaches the write as CONSUMER_ERR_LOST).
 */
enum consumer_auth_act consumer_auth_write(enum consumer_err c, int auth_lost)
	__attribute__((warn_unused_result));

/* The owner-checked reclaim's answer (R10's renewal of one entry). */
enum consumer_reclaim {
	CONSUMER_RECLAIM_OURS,	/* still ours, idle reset: write again */
	CONSUMER_RECLAIM_LOST,	/* another consumer holds it: abandon (R10) */
	CONSUMER_RECLAIM_GONE,	/* pending for nobody: write again, the script
				   fences it (a call's result is still written) */
	CONSUMER_RECLAIM_FAILED,/* no answer, or an error reply */
};

/* What follows a reclaim's answer r. */
enum consumer_reclaim_step {
	CONSUMER_RS_WRITE,	/* send the held write, the same step and fence */
	CONSUMER_RS_WRITE_UNPENDING,	/* the same, the entry marked pending for nobody */
	CONSUMER_RS_ABANDON,	/* the lease is lost: the attempt is abandoned */
	CONSUMER_RS_HOLD,	/* refused for the credential again: hold */
	CONSUMER_RS_RETRY,	/* R17: reclaim again after a backoff */
};

/* r, and with CONSUMER_RECLAIM_FAILED the class of the failure c and
 * auth_lost as for consumer_auth_write. The write never goes out before
 * the entry was found ours (or nobody's). */
enum consumer_reclaim_step consumer_reclaim_next(enum consumer_reclaim r, enum consumer_err c,
						  int auth_lost)
	__attribute__((warn_unused_result));

/* Issue 38 item 1: one consumer name, one live process (lua/owner.lua).
 * What the worker does with the claim script's answer. */
enum consumer_name_step {
	CONSUMER_NAME_OURS,	/* the claim is ours: read (again), renew it */
	CONSUMER_NAME_WAIT,	/* at start, held by another whose claim has not
				   moved since first seen: it may be dead, so ask
				   again until its claim runs out or moves */
	CONSUMER_NAME_TAKEN,	/* at start, held by a live process (its claim
				   moved on): refuse to start (exit 73) */
	CONSUMER_NAME_LOST,	/* while running, another instance holds it:
				   stop reading, exit 73 */
	CONSUMER_NAME_RETRY,	/* no answer or an error: ask again later */
};

/* held: the claim was ours before (the worker has been running under the
 * name); ok: the script answered; won: it answered that the claim is ours;
 * value: the holder's "<instance> <TIME ms>" it answered (NULL when won or
 * no answer); first: the holder's value this worker saw at its first
 * refusal ("" when none yet). A holder is live when its claim's time moves
 * on (it renews with every heartbeat); a dead one's claim only runs out. */
enum consumer_name_step consumer_name_next(int held, int ok, int won, const char *value,
					   const char *first)
	__attribute__((warn_unused_result));

#endif
