/*
 * script: the one loader and the one caller of the Lua scripts of lua/
 * (store.h) on an rconn. The loader hashes every body once (EVALSHA); the
 * caller checks a call's named arguments and sends it with rconn_eval
 * (which falls back to EVAL on NOSCRIPT).
 */
#ifndef WARRANTD_SCRIPT_H
#define WARRANTD_SCRIPT_H

#include "rconn.h"
#include "store.h"

/* Every script, by enum store_script_id. Plain data: no free. */
struct script_set {
	struct rconn_script s[STORE_NSCRIPTS];
};

/* SHA1 of every body of store_scripts[] (the bodies are static). */
void script_set_init(struct script_set *set);

/* Sends the call a describes (a is only read; its strings are copied).
 * rconn_eval()'s contract: 0 and exactly one callback, or -1 and none. A
 * call with a missing or misplaced argument is never sent: -1, logged
 * (event=script.refused), as a bug to fix rather than a reply to handle. */
int script_send(struct rconn *rc, const struct script_set *set, const struct store_args *a,
		rconn_reply_cb *cb, void *arg)
	__attribute__((warn_unused_result));

#endif
