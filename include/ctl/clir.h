/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * clir: warrantctl's Redis handle, one per run, in struct cli (ctl/cli.h):
 * the node of the shard in use (through the sentinels or the cluster's map,
 * the host checked against [redis] allow_hosts), AUTH as the command's user,
 * SELECT, and every command following one -ASK: the daemon's rconn and
 * disc (one connect, one discovery, one allowlist, one TLS path for both
 * programs) on a libev loop of the handle's own. A CLI runs one command and
 * exits, so it waits for each reply (rconn's timeouts: TIMEOUT_S).
 *
 * Replies are hiredis's redisReply, read through sreply_of (sreply.h); the
 * caller frees them with freeReplyObject (NULL is a no-op).
 */
#ifndef WARRANTD_CLIR_H
#define WARRANTD_CLIR_H

#include <stddef.h>
#include <hiredis/hiredis.h>
#include <jansson.h>

#include "ctl/cli.h"

struct store_args;

/* Connects to the node of c's shard, unless connected to it already. 0 or
 * an exit code (said). */
int clir_connect(struct cli *c) __attribute__((warn_unused_result));
/* Closes the connection (the next clir_connect makes a new one). */
void clir_drop(struct cli *c);
/* clir_drop, and frees [redis] tls (main, at the end). */
void clir_close(struct cli *c);

/* The AUTH password of c's user: with --as ROLE the role's password_file;
 * else as the daemon gets it ([redis] auth, rtoken.h). 0 with *pw NULL (no
 * AUTH) or a secret (caller frees with secrets_free), or an exit code. */
int clir_password(const struct cli *c, char **pw, size_t *len);

/* The reply, even an error reply (c connected: caller frees); NULL when
 * none came. No -ASK followed. */
redisReply *clir_argv(struct cli *c, int argc, const char **argv);
/* n commands of argc C strings each (argv: n x argc, command i at
 * argv[i * argc]) sent at once and waited for: one round trip, not n
 * (the console's charts). 0 with replies[i] each reply, error replies
 * included (caller frees each); -1 when the connection failed or a reply
 * did not come (replies all NULL then). An -ASK is followed by rconn
 * (cluster), not here. */
int clir_pipeline(struct cli *c, size_t n, int argc, const char **argv, redisReply **replies);
/* The reply to argv (len NULL: C strings), following one -ASK (a slot
 * mid-migration: the key is on the importing node, which serves it after
 * ASKING, on a connection of its own authenticated as this one). NULL when
 * a connection failed (said). */
redisReply *clir_asking(struct cli *c, int argc, const char **argv, const size_t *len);
/* r (taken) checked: 0 with *out (caller frees), EX_UNAVAILABLE when the
 * connection failed, EX_REFUSED on an error reply; said in both cases. */
int clir_checked(struct cli *c, redisReply *r, const char *what, redisReply **out);
/* As clir_checked, for a reply of clir_asking. */
int clir_checked_asking(struct cli *c, redisReply *r, const char *what, redisReply **out);
/* A command given as strings (argv borrowed), following one -ASK, checked:
 * as clir_checked. */
int clir_runv(struct cli *c, redisReply **out, int argc, const char **argv);
/* As clir_runv, the arguments after cmd up to a NULL (at most MAX_ARGS). */
int clir_run(struct cli *c, redisReply **out, const char *cmd, ...) __attribute__((sentinel));
/* A script of lua/ (lua/decide.lua, lua/requeue.lua) by EVAL, its
 * arguments set by name (a borrowed); a call with one missing is refused
 * here. As clir_checked. */
int clir_script(struct cli *c, redisReply **out, const struct store_args *a);
/* Called with each entry of a stream, in order: its id and the entry
 * ([id, fields], both borrowed for the call). */
typedef void clir_entry_fn(void *arg, const char *eid, const struct sreply *entry);
/* Every entry of stream key, read in pages with XRANGE (so a long stream
 * never arrives in one reply), given to fn. 0 or an exit code. */
int clir_each_entry(struct cli *c, const char *key, clir_entry_fn *fn, void *arg);
/* Appends to out every entry of stream key whose field id equals want
 * (every entry when want is NULL), as cli_entry_json, read in pages with
 * XRANGE, so a long stream never arrives in one reply. 0 or an exit code. */
int clir_scan_stream(struct cli *c, const char *key, const char *want,
		     const char *const *order, json_t *out);
/* XINFO GROUPS of c's stream: *all the reply (caller frees), *group the
 * flat reply of [redis] group in it (borrowed from *all), NULL when absent
 * (also when there is no stream yet: 0 then). 0 or an exit code (said). */
int clir_find_group(struct cli *c, redisReply **all, const struct sreply **group);

#endif
