/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * act: the operator's actions of warrantd(7) §11 and §13 -- retry, cancel,
 * dead requeue and drop (one record, or every letter a filter chooses),
 * pause and resume -- with every check warrantctl makes (verified, before
 * the deadline, an action the config names), done through one struct cli
 * (its config and clir's connection, ctl/cli.h) as `who` asks.
 *
 * Nothing here prints: each function gathers what it has to say, in order,
 * in a struct act_result, and returns its exit code (warrantctl(1)).
 * warrantctl's commands (dead.c, pause.c) print the lines; warrantd-web
 * (src/web/wact.c) shows them on a page. Two programs, one set of checks.
 *
 * One way of saying who (issue 38 item 6): act_who_unix for warrantctl,
 * act_who_console for the console; the text goes into the audit entry's
 * detail ("asked by ...") and P:paused's value ("by=... at=...").
 */
#ifndef WARRANTD_ACT_H
#define WARRANTD_ACT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct cli;

#define ACT_WHO_MAX	256

/* Plain data: what an action said and counted. act_result_init before use,
 * act_result_clear after. */
struct act_result {
	json_t *lines;		/* [[is_error, "text"], ...] in order: warrantctl
				 * prints 0 on stdout, 1 on stderr */
	long long done;		/* records requeued, cancelled, retried; letters
				 * dropped; 1 for a pause or resume that changed
				 * something */
	long long refused;	/* records refused (bulk requeue) */
	long long matched;	/* dead letters a bulk filter chose */
};

/* --all, --reason R, --older-than D: which dead letters (plain data). */
struct act_filter {
	int all;
	const char *reason;	/* NULL: any (borrowed) */
	int64_t before_ms;	/* added before this; 0: any time */
};

void act_result_init(struct act_result *r);
/* Frees the lines; r may be initialised again. */
void act_result_clear(struct act_result *r);

/* warrantctl's way of saying them: the lines in order, stdout or stderr
 * (cli_say). The only function here that prints. */
void act_result_print(const struct act_result *r);

/* "unix user NAME[ (sudo from LOGIN)], redis user R" of this process:
 * warrantctl's who. redis_user NULL: "default". Control characters become
 * '?' (one line in the audit). */
void act_who_unix(const char *redis_user, char *buf, size_t n);
/* "console user NAME, redis user R": warrantd-web's who. */
void act_who_console(const char *console_user, const char *redis_user, char *buf, size_t n);

/*
 * Each takes c with its config loaded (c->cfg) and the Redis user chosen;
 * it picks the shard and connects (clir_connect). key/key_len: the
 * verification key of [records] (NULL with signature = off), borrowed.
 * Returns 0, EX_REFUSED (a check refused, said in res), or the exit code
 * of a connection or Redis failure (said by clir on stderr).
 */

/* A failed or dead record before its deadline, queued again with a fresh
 * budget; its dead letters answered (lua/requeue.lua). */
int act_retry(struct cli *c, const char *id, const char *key, size_t key_len, const char *who,
	      struct act_result *res) __attribute__((warn_unused_result));
/* A record not yet terminal, verified and before its deadline: cancelled
 * (lua/cancel.lua), its owner told through the webhook. */
int act_cancel(struct cli *c, const char *id, const char *key, size_t key_len, const char *who,
	       struct act_result *res) __attribute__((warn_unused_result));
/* dead requeue ID: a record with a dead letter, queued again. */
int act_dead_requeue(struct cli *c, const char *id, const char *key, size_t key_len,
		     const char *who, struct act_result *res) __attribute__((warn_unused_result));
/* dead drop ID: its dead letters deleted (any id, so a malformed one can be
 * cleared too). */
int act_dead_drop(struct cli *c, const char *id, struct act_result *res)
	__attribute__((warn_unused_result));
/* dead requeue|drop over the letters f chooses, on every shard of
 * cli_shard_range. EX_REFUSED when something was refused or nothing
 * matched. */
int act_dead_bulk(struct cli *c, int requeue, const struct act_filter *f, const char *key,
		  size_t key_len, const char *who, struct act_result *res)
	__attribute__((warn_unused_result));
/* pause (resume 0) or resume the action `name` ("*": the whole queue), one
 * the config names, in shard 0's P:paused. */
int act_pause(struct cli *c, const char *name, int resume, const char *who,
	      struct act_result *res) __attribute__((warn_unused_result));

#endif
