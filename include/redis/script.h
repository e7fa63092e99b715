/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * script: the one caller of the functions of lua/ (store.h), which an
 * administrator loads into Redis as one library (`warrantctl functions
 * load`; warrantd(7) §2.1): the caller checks a call's named arguments and
 * sends it with FCALL (FCALL_RO for a read-only one) through rconn_eval.
 * No user needs EVAL: Redis runs only the library's code. The worker asks
 * for the library's version at start (script_check_library) and refuses
 * to run against a missing or other one.
 *
 * A script_batch gathers the calls of a script that has a batch form (the
 * load, the transition) made in one turn of the event loop and sends them,
 * just before the loop waits again, as one call of the batch form per
 * STORE_BATCH_MAX items: Redis spends about 25,000 instructions on a script
 * call itself and 800 on each argument, and a batch pays them once for all
 * its items and passes the shared arguments (key names, group, consumer,
 * limits) once (bench/README.md). A lone call goes as the plain function.
 * Each item keeps rconn_eval's contract and its own reply: the function runs
 * every item under pcall, so one item's error is its own error reply; an
 * error reply to the whole call (BUSY, LOADING, OOM...) or a lost
 * connection reaches every item as it would have reached each alone.
 */
#ifndef WARRANTD_SCRIPT_H
#define WARRANTD_SCRIPT_H

#include <ev.h>

#include "redis/rconn.h"
#include "core/store.h"

/* Every function, by enum store_script_id, and its batch form (when it has
 * one). Plain data: no free. */
struct script_set {
	struct rconn_script s[STORE_NSCRIPTS];
	struct rconn_script batch[STORE_NSCRIPTS];
};

/* The function of every script of store_scripts[] (the names are static). */
void script_set_init(struct script_set *set);

/* `FCALL_RO warrantd_version 0` on rc, as rconn_command(): 0 and exactly one
 * callback, or -1 and none. The callback reads its reply with
 * script_library_state(). */
int script_check_library(struct rconn *rc, rconn_reply_cb *cb, void *arg)
	__attribute__((warn_unused_result));

/* What that reply says (store_library_check); NULL: STORE_LIBRARY_UNKNOWN. */
enum store_library_state script_library_state(const struct sreply *r);

/* Sends the call a describes (a is only read; its strings are copied).
 * rconn_eval()'s contract: 0 and exactly one callback, or -1 and none. A
 * call with a missing or misplaced argument is never sent: -1, logged
 * (event=script.refused), as a bug to fix rather than a reply to handle. */
int script_send(struct rconn *rc, const struct script_set *set, const struct store_args *a,
		rconn_reply_cb *cb, void *arg)
	__attribute__((warn_unused_result));

struct script_batch;

/* A batcher for the calls sent on rc (borrowed, as set and loop: they
 * outlive it). NULL when out of memory. */
struct script_batch *script_batch_new(struct ev_loop *loop, struct rconn *rc,
				      const struct script_set *set)
	__attribute__((warn_unused_result));

/* Every call still gathered gets its callback with NULL (as rconn_free
 * gives its commands), then b is freed; calls already sent are rc's and
 * answered by it. Call it before rconn_free(rc), never from inside one of
 * the callbacks of a call sent through b. NULL is a no-op. */
void script_batch_free(struct script_batch *b);

/* As script_send(), the call gathered into the next batch when its script
 * has a batch form (a is copied): 0 and exactly one callback -- never from
 * inside this call: a failure to send the batch later is a NULL reply --,
 * or -1 and none (rc not up, a refused as by script_send, out of memory). */
int script_batch_send(struct script_batch *b, const struct store_args *a, rconn_reply_cb *cb,
		      void *arg)
	__attribute__((warn_unused_result));

/*
 * R19: `WAIT replicas timeout_ms` on b's connection, sent when the batch is
 * (just before the loop waits), after every call gathered until then: one
 * WAIT for all that asked in one turn (with the largest numbers asked), its
 * reply given to each. The same contract as script_batch_send: 0 and exactly
 * one callback (NULL when it could not be sent or the connection went), or
 * -1 and none (rc not up, replicas or timeout_ms not positive, out of memory).
 */
int script_batch_wait(struct script_batch *b, long replicas, long timeout_ms, rconn_reply_cb *cb,
		      void *arg)
	__attribute__((warn_unused_result));

#endif
