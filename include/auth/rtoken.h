/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rtoken: the Redis AUTH password (warrantd(7) §9 "Short-lived credentials to
 * Redis itself", [redis] auth). One source for every Redis connection of the
 * daemon -- the blocking read, the command connection, each shard's, the
 * sentinels' and the cluster map's questions:
 *
 *   password  [redis] password_file, read once (or none: no AUTH);
 *   oauth     an access token of the [oauth] client for [redis] token_scope /
 *             token_resource, kept fresh by oauth.h (single flight, spaced);
 *   command   [redis] token_command, run without a shell with a deadline of
 *             RTOKEN_COMMAND_TIMEOUT_MS, prints {"token", "expires_in"}.
 *
 * A token is refreshed at [oauth] refresh_ratio of its life and no later
 * than `lead_ms` before it dies (token_refresh_before_ms): every live
 * connection must have sent AUTH with the new token, and Redis answered it,
 * before the old one's life ends -- on the blocking connection Redis answers
 * only when the read in progress ends, so lead_ms is block_ms and more. A
 * failed fetch is retried with backoff (token.h's TOKEN_RETRY_*), the old
 * token staying in use while it lives; one fetch at a time however many ask.
 *
 * The token's life is tokhold.h's, as for the worker's own token: with
 * oauth the manager's holder, with command one of rtoken's own whose source
 * is one run of the program. The pure parts are token.h's (lifetimes,
 * refresh times, token_redis_blocks_reading, token_command_argv,
 * token_command_parse). Single-threaded: call
 * from the loop's thread. Nothing here logs a token or the command's output.
 */
#ifndef WARRANTD_RTOKEN_H
#define WARRANTD_RTOKEN_H

#include <stdint.h>

#include <ev.h>

#include "conf/config.h"
#include "http/http.h"

#define RTOKEN_COMMAND_TIMEOUT_MS	10000
/* The most a token_command may print: a token of TOKEN_MAX_BYTES and room
 * for the JSON around it. More is garbage, and the program is stopped. */
#define RTOKEN_OUTPUT_MAX		(16384 + 4096)

struct rtoken;	/* opaque */

/*
 * The source cfg's [redis] auth names. With password, password_file is
 * read now (secrets_read_cfg). With oauth, a token manager of its own
 * (oauth_new_scoped: [oauth]'s client, [redis] token_scope and
 * token_resource). With command, token_command is split now and its
 * program refused unless rtoken_command_trusted (checked again before each
 * run: a program made writable later is not run). cfg is only
 * read during the call; loop and http are borrowed and must outlive it.
 * Fetches nothing before rtoken_start. Caller frees with rtoken_free; NULL
 * with one line in err (never a secret) on failure.
 */
struct rtoken *rtoken_new(struct ev_loop *loop, struct http_client *http, const struct cfg *cfg,
			  long lead_ms, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* Stops the program or request in flight (the program is killed, by its
 * process group), every watcher, wipes the secret, frees. NULL is a no-op.
 * Not from inside the listener. */
void rtoken_free(struct rtoken *rt);

/* Fetches the first token at once (nothing to do with password). */
void rtoken_start(struct rtoken *rt);

/* 1 with auth = password: the secret never changes, nothing is fetched. */
int rtoken_is_static(const struct rtoken *rt);

/*
 * The password for AUTH now: password_file's (NULL when none is set), or
 * the token held while it lives at now_ms (wtime_mono_ms), else NULL.
 * Owned by rt; valid until control returns to the loop or the next rtoken_*
 * call: copy it at once, never log it.
 */
const char *rtoken_secret(const struct rtoken *rt, int64_t now_ms);

/* When the token held dies (wtime_mono_ms); 0 with none held or password. */
int64_t rtoken_expires_at_ms(const struct rtoken *rt);

/* warrantd(7) §8 tokenState of the Redis token: "valid", "refreshing", "error" or
 * "none" as oauth_state_name; "valid" for password. Static. */
const char *rtoken_state_name(const struct rtoken *rt);

/* Tokens received since rtoken_new (the counter redisAuthRefreshes). */
long long rtoken_refreshes(const struct rtoken *rt);

/* A number that changes with every token received (0 before the first). */
uint64_t rtoken_generation(const struct rtoken *rt);

/*
 * cb(arg, secret, expires_at_ms) from the loop whenever a token arrives
 * (secret: the new one, valid during the call only; expires_at_ms on
 * wtime_mono_ms) or the one held is lost (secret NULL, expires_at_ms 0),
 * never from inside an rtoken_* call. It may call any rtoken_* function
 * except rtoken_free. NULL: none. Never called with password.
 */
typedef void rtoken_listener(void *arg, const char *secret, int64_t expires_at_ms);
void rtoken_set_listener(struct rtoken *rt, rtoken_listener *cb, void *arg);

/*
 * R20: Redis refused the token of generation gen (NOAUTH, WRONGPASS, or a
 * connection closed when its token died). One fetch for all connections,
 * spaced like R9's ([oauth] min_refresh_interval_ms, then backoff when the
 * fresh token is refused too), unless one is already in flight or gen is no
 * longer the token held. No-op with password.
 */
void rtoken_refused(struct rtoken *rt, uint64_t gen);

/*
 * warrantd(7) §9: the token_command program may be changed only by this
 * user or root, like the config and key files: it is refused when group or
 * others may write it or the directory it is in (also the directory its
 * real path is in, past a symbolic link), or when another user owns either.
 * 0, or -1 with one line in err that names the path and the fix. Reads no
 * file, runs nothing.
 */
int rtoken_command_trusted(const char *program, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* For -t: with [redis] auth = command, the program of token_command split
 * and checked by rtoken_command_trusted; a refusal is added to errs as
 * "file:line: message" (the line of token_command). 0, or -1. */
int rtoken_check_cfg(const struct cfg *cfg, struct cfg_errors *errs)
	__attribute__((warn_unused_result));

/*
 * For a program without a loop of its own (warrantctl): the password to
 * AUTH with now. With password: password_file's (*secret NULL when none is
 * set). With oauth or command: one token fetched on a private loop within
 * timeout_ms. 0 with *secret a new string (caller frees with secrets_free,
 * *len its length), or -1 with one line in err (never a secret).
 */
int rtoken_fetch_once(const struct cfg *cfg, long timeout_ms, char **secret, size_t *len,
		      char *err, size_t errlen)
	__attribute__((warn_unused_result));

#endif
