/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wread_int: the private header of the wread module's two files (wread.h is
 * its public one). wread.c holds the connection (a struct cli as the
 * monitor, on clir's handle: ctl/clir.h; made again once when lost), the commands and replies as JSON, the
 * overview, the dead letters and the charts' buckets; wread_jobs.c the
 * jobs lists and one job's page. Nothing outside wread's files includes it.
 */
#ifndef WARRANTD_WREAD_INT_H
#define WARRANTD_WREAD_INT_H

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "core/store.h"
#include "redis/sreply.h"
#include "wread.h"

#define WREAD_SCAN_MAX	2000	/* entries of one source a jobs page looks at */
#define WREAD_AUDIT_MAX	1000	/* audit entries of one job shown */

#include "ctl/cli.h"

struct wread {
	const struct cfg *cfg;
	struct cli c;		/* the monitor's: its Redis user, the shard's keys, clir's handle */
	char *key;		/* the verification key (secrets_free) */
	size_t key_len;
	unsigned nshards;
	struct store_keys keys;	/* of the shard in use */
	char prefix[STORE_KEY_MAX];
	unsigned shard;
};

/* Shard i's keys into r->keys (and r->prefix): 0, or -1 with err. */
int wread_use_shard(struct wread *r, unsigned i, char *err, size_t errlen);

/* One command of argc strings; a connection lost on the way is made again
 * once. The reply (caller frees with freeReplyObject), an error reply
 * included, or NULL with err. */
redisReply *wread_cmdv(struct wread *r, int argc, const char **argv, char *err, size_t errlen);

/* wread_cmdv of the NULL-terminated strings; an error reply is an error
 * here (NULL with err). */
redisReply *wread_cmd(struct wread *r, char *err, size_t errlen, const char *first, ...)
	__attribute__((sentinel));

/* A reply as JSON (a new value): strings through ctl_scalar, arrays
 * element by element. v borrowed. */
json_t *wread_reply_json(const struct sreply *v);

/* A flat field/value array into o, without `skip`. Borrowed. */
void wread_add_flat(json_t *o, const struct sreply *arr, const char *skip);

/* P:paused (shard 0's) into o: 0, or -1 with err. */
int wread_add_paused(struct wread *r, json_t *o, char *err, size_t errlen);

#endif
