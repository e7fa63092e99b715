/*
 * engine_impl: private to the engine module (src/engine.c, src/ejob.c).
 *
 * engine.c is the consumer: connections, group, reading, leases, heartbeat,
 * the token listener, secrets and the life cycle. ejob.c is one entry in
 * hand, from admission to release. engine.c hands ejob.c stream ids and
 * events; ejob.c tells engine.c when an entry has left the hand.
 *
 * An ejob is freed only when it is finished and no callback points at it
 * (`refs`); callbacks never free the object whose callback chain they run in.
 */
#ifndef WARRANTD_ENGINE_IMPL_H
#define WARRANTD_ENGINE_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <ev.h>

#include "config.h"
#include "engine.h"
#include "http.h"
#include "job.h"
#include "log.h"
#include "oauth.h"
#include "rconn.h"
#include "record.h"
#include "script.h"
#include "store.h"
#include "webhook.h"
#include "wtime.h"

#define STREAM_ID_MAX 48

enum ejob_timer { T_NONE, T_RETRY, T_TOKEN_WAIT, T_REDIS_RETRY, T_REDISPATCH_RETRY, T_LOAD_RETRY };
enum ejob_wait { W_NONE, W_WRITE, W_LOAD, W_AUTHZ, W_CALL, W_REDISPATCH };

struct ejob {
	struct ejob *prev, *next;
	struct engine *eng;
	char stream_id[STREAM_ID_MAX];
	char id[RECORD_ID_MAX + 1];	/* "" when the entry had no valid id */
	char hash_key[STORE_KEY_MAX + RECORD_ID_MAX + 1];
	struct job core;
	struct job_step step;		/* the step being carried out */
	struct record *rec;
	char *bad_owner;		/* notifyOnDenial of a verified but invalid record */
	long long fence;		/* `attempts` of this hand's current call; -1 none */
	int started;			/* this hand set `owner` */
	int refs;			/* callbacks in flight that point here */
	int finished;
	int lost;			/* the lease is gone: abandon at the next step */
	int deleted;			/* XAUTOCLAIM said the entry was deleted */
	int unpending;			/* pending for nobody: no lease to renew */
	unsigned redis_tries;		/* R17: failed sends/error replies in a row */
	enum ejob_wait wait;
	enum ejob_timer timer_kind;
	ev_timer timer;
	struct http_call *call;
	int last_status;
	uint64_t token_gen;		/* oauth generation of the token the call used */
	char written_at[WTIME_RFC3339_LEN];	/* `at` of the last transition sent */
	long long attempt_started_ms;
};

struct engine {
	struct ev_loop *loop;
	struct cfg *cfg;
	struct store_keys keys;
	struct rconn *cmd, *blk;
	struct http_client *http;
	struct webhook *webhook;	/* NULL without [notify] webhook_url */
	struct oauth *oauth;		/* NULL without an [oauth] section */
	int needs_token;		/* some action has auth = oauth */
	int paused_for_token;
	long token_timeout_ms;		/* the longest such action's timeout */
	struct script_set scripts;	/* every Lua script of lua/, by store_script_id */

	unsigned char *verify_key;
	size_t verify_key_len;
	struct record_key *parsed_key;	/* verify_key parsed once per (re)load */
	char **bearers;			/* per action, with auth = static */

	struct ejob *jobs;		/* owned: every entry in hand, finished or not */
	size_t in_hand;

	int group_ready, reading, draining, own_done, claiming;
	char own_cursor[STREAM_ID_MAX];
	char auto_cursor[STREAM_ID_MAX];	/* R11: where the XAUTOCLAIM scan goes on */
	ev_timer heartbeat, claim, lease, grace, watchdog;
	ev_timer kick;			/* R17: back to reading after an error reply */
	unsigned kick_failures;
	int64_t started_at, last_read_at, redis_down_since;
	long long outages;
	struct engine_counters n;
};

/* ------------------------------------------------------------------ */
/* ejob.c, called by engine.c                                           */

/* An entry delivered to us (XREADGROUP, our PEL, XAUTOCLAIM): takes it in
 * hand unless it already is, and loads its record. `fields` is valid only
 * during the call; the ejob belongs to eng->jobs. */
void ejob_admit(struct engine *eng, const char *stream_id, const redisReply *fields,
    int deliveries);

/* An entry deleted from the stream while pending: dead-lettered directly.
 * A stream id already in hand is skipped (0). -1 when out of memory. */
int ejob_dead_deleted(struct engine *eng, const char *stream_id);

/* R10: the lease on stream_id is gone. No-op for an id not in hand or an
 * entry already finished. The ejob may be freed before this returns. */
void ejob_lease_lost(struct engine *eng, const char *stream_id);

/* The entry is pending for nobody (acked elsewhere, or a Redis without
 * persistence forgot its PEL): no more renewals; a call's result is still
 * written (fenced by the hash), anything else is refused by the script. */
void ejob_unpending(struct engine *eng, const char *stream_id);

/* R6, R9: a token arrived; j goes on if it was waiting for one. j may be
 * freed before this returns: the caller must have read j->next already. */
void ejob_token_ready(struct ejob *j);

/* R15: finishes j unless a call or write is in flight. j may be freed
 * before this returns: the caller must have read j->next already. */
void ejob_stop(struct ejob *j);

/* Marks j finished and drops its timer and HTTP call; never frees j. For
 * engine_free, before the connections close and fire their callbacks. */
void ejob_abandon(struct ejob *j);

/* Unlinks j from eng->jobs and frees it, whatever still points at it.
 * engine.c calls it only from engine_free, once no callback can run. */
void ejob_release(struct ejob *j);

/* ------------------------------------------------------------------ */
/* engine.c, called by ejob.c                                           */

/* An entry left the hand: read more, or finish stopping (R15). May break
 * the loop; never frees eng. */
void engine_job_released(struct engine *eng);

/* ------------------------------------------------------------------ */
/* helpers both files use: static, so nothing more crosses the files    */

/* The worker's token for a call of timeout_ms, or NULL (R6). Valid until
 * the next oauth refresh; never log it. */
static inline const char *
worker_token(const struct engine *eng, long timeout_ms)
{
	return eng->oauth ? oauth_token(eng->oauth, wtime_mono_ms(), timeout_ms) : NULL;
}

/* The value of `name` in a flat field/value array, or NULL. Valid as long
 * as the reply. */
static inline const char *
field(const redisReply *arr, const char *name)
{
	if (arr == NULL || arr->type != REDIS_REPLY_ARRAY)
		return NULL;
	for (size_t i = 0; i + 1 < arr->elements; i += 2) {
		const redisReply *k = arr->element[i], *v = arr->element[i + 1];
		if (k->type == REDIS_REPLY_STRING && v->type == REDIS_REPLY_STRING &&
		    strcmp(k->str, name) == 0)
			return v->str;
	}
	return NULL;
}

static inline void
ignore_reply(struct rconn *rc, redisReply *r, void *arg)
{
	(void)rc, (void)arg;
	if (r && r->type == REDIS_REPLY_ERROR)
		log_warn("redis.error", "error=%.120s", r->str);
}

/* For writes whose loss costs nothing: the next tick sends them again. */
static inline void
best_effort(int rc)
{
	if (rc < 0)
		log_debug("redis.skipped", "detail=\"not connected\"");
}

#endif
