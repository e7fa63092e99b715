/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * eops: the real operations of the jobs in hand (ejob.h's struct ejob_ops)
 * -- thin wrappers over the command connection and its script batch
 * (rconn.h, script.h), the HTTP client, the verify pool, the credentials,
 * the webhook and libev's clock and timers.
 *
 * A struct eops is what one shard lends its jobs: plain data the consumer
 * (engine.c) fills and keeps up to date. Every pointer in it is borrowed and
 * must outlive the jobs; cfg, the key and creds may be replaced between
 * callbacks (R16 reload): each operation reads them afresh.
 *
 * Single-threaded: everything happens on the loop's thread.
 */
#ifndef WARRANTD_EOPS_H
#define WARRANTD_EOPS_H

#include <stddef.h>

#include <ev.h>

#include "conf/config.h"
#include "auth/cred.h"
#include "worker/ejob.h"
#include "http/http.h"
#include "auth/oauth.h"
#include "redis/rconn.h"
#include "core/record.h"
#include "redis/script.h"
#include "core/store.h"
#include "worker/vpool.h"
#include "worker/webhook.h"

struct eops {
	struct ev_loop *loop;
	struct rconn *cmd;			/* the command connection */
	struct script_batch *batch;		/* its loads and transitions, batched */
	struct http_client *http;
	struct oauth *oauth;			/* NULL without [oauth]: the PDP's token */
	struct webhook *webhook;		/* NULL without [notify] webhook_url */
	const struct store_keys *keys;
	const struct script_set *scripts;	/* the Lua scripts (script.h) */
	const struct cfg *cfg;			/* the running config */
	const struct record_key *parsed_key;	/* NULL with signature = off */
	const unsigned char *verify_key;
	size_t verify_key_len;
	/* NULL: records are verified inline; else ES256 and RS256 records are
	 * verified on its workers (vpool.h) while the loop goes on. */
	struct vpool *vpool;
	const struct creds *creds;		/* one per [action] */
	/* An entry left the hand (ejob_ops.released). */
	void (*released)(void *arg);
	void *arg;
	/* Optional (NULL: none), for metrics: ejob_ops.call_done. It must not
	 * call into the jobs. */
	void (*call_done)(void *arg, const char *action, long status, long long duration_ms,
			  long long queue_delay_ms);
	void *call_done_arg;
	/* Optional (NULL: none), for metrics: ejob_ops.outcome, with
	 * call_done_arg. It must not call into the set. */
	void (*outcome)(void *arg, const char *action, const char *state, const char *reason);
};

/* The operations; their ctx is a struct eops. Static. */
extern const struct ejob_ops eops_ops;

#endif
