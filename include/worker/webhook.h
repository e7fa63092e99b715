/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * webhook: the optional POST of each notification to [notify] webhook_url
 * (warrantd(7) §6). Best effort and bounded: a queue of at most WEBHOOK_QUEUE_MAX
 * bodies, each retried with backoff up to WEBHOOK_TRIES times, one request in
 * flight at a time. A webhook that is down never blocks the queue of jobs.
 */
#ifndef WARRANTD_WEBHOOK_H
#define WARRANTD_WEBHOOK_H

#include <ev.h>
#include <stddef.h>

#include "conf/config.h"
#include "http/http.h"

#define WEBHOOK_QUEUE_MAX 1024
#define WEBHOOK_TRIES 5

struct webhook;

/* Sets *token to the bearer token to send (NULL: send none), valid until
 * the next return to the loop, and returns 0; or returns -1 when a token is
 * needed but none is usable yet: the POST then waits (WEBHOOK_TOKEN_WAIT_MS
 * at a time, not counted as a try) instead of going out unauthenticated. */
typedef int webhook_token_fn(void *arg, const char **token);

#define WEBHOOK_TOKEN_WAIT_MS 1000

/* url and the http client are borrowed (url is copied). NULL on failure. */
struct webhook *webhook_new(struct ev_loop *loop, struct http_client *http, const char *url,
			    long timeout_ms, webhook_token_fn *token, void *token_arg)
	__attribute__((warn_unused_result));

/*
 * The webhook of [notify] (warrantd(7) §6), authenticated as `auth` says: `none`
 * (the default) sends no Authorization; `static` sends the token read from
 * bearer_file now (kept, wiped when freed); `oauth` asks `worker_token` (the
 * worker's token) and is the only way the webhook ever sees it: a
 * notification sink is not a target. cfg and http are borrowed; cfg is read
 * only here. Returns NULL when webhook_url is unset (and err is ""), or NULL
 * with a message in err (never the token) on failure.
 */
struct webhook *webhook_from_cfg(struct ev_loop *loop, struct http_client *http,
				 const struct cfg *cfg, webhook_token_fn *worker_token,
				 void *token_arg, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* Queues a JSON body (copied). Drops it with a log line when the queue is
 * full. */
void webhook_post(struct webhook *wh, const char *json);

/* §6: one notification, the fields of its P:notify entry (lua/transition.lua,
 * lua/cancel.lua write the entry; this is the one writer of its webhook body).
 * Plain data; every string borrowed, none NULL. */
struct webhook_note {
	const char *id, *owner, *kind, *reason, *on_behalf_of, *action, *resource, *at;
};

/* The JSON body of n: {"id", "owner", "kind", "reason", "onBehalfOf",
 * "action", "resource", "at"}. Caller frees; NULL out of memory. */
char *webhook_note_body(const struct webhook_note *n) __attribute__((warn_unused_result));

/* webhook_post of n's body. 0, or -1 out of memory (nothing queued). */
int webhook_post_note(struct webhook *wh, const struct webhook_note *n);

/* Bodies waiting or in flight. */
size_t webhook_queued(const struct webhook *wh);

/* Cancels what is in flight and drops the queue. Not from inside an http
 * callback. NULL is a no-op. */
void webhook_free(struct webhook *wh);

/* From now on each failed try adds 1 to *failures, each notification given
 * up (tries spent, or the queue full) 1 to *dropped (either may be NULL);
 * both are borrowed and must outlive wh. NULL wh is a no-op. */
void webhook_count_into(struct webhook *wh, long long *failures, long long *dropped);

#endif
