/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * world (prefix w_): what the fault matrix, its named scenarios and the soak
 * share -- one redis-server (appendonly, private unix socket), fake_idp,
 * fake_pdp and fake_target on 127.0.0.1, and up to W_MAX_WORKERS warrantd
 * consumers of one group, each restartable. Every start of a worker is an
 * incarnation with its own log, start and end time and how it ended: that is
 * the evidence the matrix uses to explain a duplicate execution.
 *
 * Built on tests/integration/harness.h; everything is stopped by PID (the
 * harness kills what is left at exit, also on a failed check).
 */
#ifndef WARRANTD_FAULTS_WORLD_H
#define WARRANTD_FAULTS_WORLD_H

#include <stdint.h>

#include "harness.h"

#define W_PREFIX	"warrant"
#define W_JOBS		W_PREFIX ":jobs"
#define W_DEAD		W_PREFIX ":dead"
#define W_NOTIFY	W_PREFIX ":notify"
#define W_AUDIT		W_PREFIX ":audit"
#define W_GROUP		"workers"
#define W_CLIENT_ID	"warrantd-faults"
#define W_PDP_PATH	"/v1/data/warrant/allow"
#define W_REDIS_SCOPE	"https://redis.example/.default"
#define W_REDIS_TOKEN_S	6	/* fake_idp's Redis tokens: managed Redis' hour, shrunk */
#define W_MAX_WORKERS	4
#define W_MAX_INC	256

/* Seeded PRNG (splitmix64): the same seed gives the same run plan. */
struct w_rng {
	uint64_t s;
};
uint64_t w_rand(struct w_rng *r);
/* Uniform in [lo, hi]. */
long w_between(struct w_rng *r, long lo, long hi);

/* One worker's configuration; 0 fields take the harness defaults. */
struct w_params {
	int max_in_flight;		/* [16] */
	int claim_idle_ms, claim_interval_ms, lease_renew_ms, heartbeat_ms;
	int block_ms, grace_ms, action_timeout_ms, max_deliveries;
	int max_attempts, base_ms, cap_ms;
	int oauth;			/* action auth = oauth with [oauth] to fake_idp */
	int authz;			/* [authz] url = fake_pdp */
	const char *redis_extra;	/* more "key = value\n" lines in [redis] */
	const char *redis_at;		/* lines naming the nodes (sentinels = ..., cluster
					 * = ...) instead of the world's socket; NULL: it */
	const char *oauth_extra;	/* ... in [oauth] */
	const char *action_name;	/* [gate.open] */
};

enum w_end { W_RUNNING, W_KILLED, W_TERMINATED, W_TERM_KILLED };

struct w_inc {
	int worker;
	char log[256];
	long long start_ms, end_ms;	/* wall clock; end 0 while running */
	enum w_end end;
	int exit_status;		/* waitpid status after SIGTERM */
	char *text;			/* the log, read once it ended; NULL before */
};

struct w_worker {
	struct h_daemon d;
	char consumer[32];
	struct w_params p;
	int inc;			/* index into world.incs, -1: none yet */
};

struct world {
	struct h_redis redis;
	struct h_fake idp, pdp, target;
	struct h_fake gate;		/* fake_redisgate, when gated */
	int gated;
	redisContext *rc;
	char *secret_path;
	int nworkers;
	struct w_worker w[W_MAX_WORKERS];
	struct w_inc incs[W_MAX_INC];
	int ninc;
};

/* Redis (appendonly), fake_pdp, fake_idp (tokens live token_life_s) and
 * fake_target; the target checks tokens when check_tokens. 0 or -1. */
int w_up(struct world *w, int token_life_s, int check_tokens);
/* fake_redisgate in front of redis (on_expiry "close" or "noauth"): the
 * workers started afterwards connect through it with [redis] auth = oauth
 * (fake_idp's Redis tokens, W_REDIS_TOKEN_S long; they need the params'
 * oauth). The checks' own connection stays on redis' socket. 0 or -1. */
int w_gate_up(struct world *w, const char *on_expiry);
/* GATE.REVOKE: every Redis token issued so far dies now (R20). 0 or -1. */
int w_gate_revoke(struct world *w);

/* Stops every worker (SIGKILL), the fakes and redis; frees the logs. */
void w_down(struct world *w);

/* A synchronous connection to the world's redis, reconnected when the last
 * one broke (after a restart). NULL when redis does not answer. */
redisContext *w_rc(struct world *w);
/* Drops the connection: the next w_rc makes a new one (after a restart). */
void w_reconnect(struct world *w);

/* Adds worker `consumer` with params (not started). Its index, or -1. */
int w_add_worker(struct world *w, const char *consumer, const struct w_params *p);
/* The INI text for worker i (caller frees). */
char *w_ini(struct world *w, int i);
/* Starts worker i and waits for consumer.ready (0), or -1. */
int w_start(struct world *w, int i);
/* SIGKILL; records the incarnation's end. */
void w_kill(struct world *w, int i);
/* SIGTERM and wait (R15); the waitpid status, -1 when it had to be killed. */
int w_term(struct world *w, int i);
/* Rewrites worker i's INI with w->w[i].p and sends SIGHUP. 0 or -1. */
int w_reload(struct world *w, int i);
/* 1 while worker i runs. */
int w_running(const struct world *w, int i);
/* The incarnation's whole log (read when it ended, else read now and not
 * kept). Valid until w_down, or for a running one until the next call. */
const char *w_inc_log(struct world *w, int k);

/* Signs (ES256) and enqueues a record for `id` on `resource`, deadline
 * expires_ms (Unix ms), decided a second ago, notify owner "owner:faults".
 * 0 or -1. */
int w_enqueue(struct world *w, const char *id, const char *resource, long long expires_ms);

/* The record's state field (caller frees), NULL when missing. */
char *w_state(struct world *w, const char *id);
/* 1 for done, expired, denied, failed, dead. */
int w_terminal(const char *state);
/* States of n ids at once (pipelined): out[i] gets a malloc'd string or
 * NULL. 0, or -1 when redis did not answer. */
int w_states(struct world *w, char *const ids[], int n, char **out);
/* XPENDING count of the group (-1 on error). */
long long w_pending(struct world *w);
/* XPENDING count held by one consumer (0 when none, -1 on error). */
long long w_pending_of(struct world *w, const char *consumer);
/* A counter from INFO commandstats: calls of `cmd` (e.g. "xreadgroup"). */
long long w_cmd_calls(struct world *w, const char *cmd);
/* Integer field of the heartbeat hash P:consumer:<consumer>, -1 if absent. */
long long w_hb_int(struct world *w, const char *consumer, const char *field);

/* Integer field of a fake's GET /_stats, -1 on error. */
long long w_fake_stat(const struct h_fake *f, const char *field);
/* POSTs to a fake; 0 when it answered 200. */
int w_post(const struct h_fake *f, const char *path, const char *body);
/* Calls recorded by the target whose Idempotency-Key is key and whose
 * status is 2xx. */
long long w_target_ok(const struct world *w, const char *key);

/* Paces load or holds a fault for ms; never used to wait for an outcome. */
void w_pause_ms(long ms);
/* Monotonic ms. */
long long w_mono_ms(void);
/* 1 when `warrantd -t` accepts the INI `text` (keys the fixes add). */
int w_config_ok(const char *text);

/* Prints to stdout and flushes (the run's progress). */
void w_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
