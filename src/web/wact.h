/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wact: the console's actions (issue 39) -- retry, cancel, dead requeue and
 * drop (one record, the selected ones, all of a reason), pause and resume --
 * done through warrantctl's own code (ctl/act.h: the same checks, the same
 * audit), as [redis.operator], in the name of the console user.
 *
 * Pure: what a request asks (wact_parse) and the sentence that names it on
 * the confirmation page (wact_describe). Shell: wact_run, on the operator's
 * connection (clir, one attempt, dropped after each action: actions are
 * rare, and a stale connection must not hold one up).
 *
 * Without [redis.operator] there is no struct wact: web.c answers 404 on
 * /confirm and /act, and no page shows a button (wpage_who's operator).
 */
#ifndef WARRANTD_WACT_H
#define WARRANTD_WACT_H

#include <stddef.h>

#include "conf/config.h"
#include "ctl/act.h"

enum wact_op {
	WACT_RETRY, WACT_CANCEL, WACT_REQUEUE, WACT_DROP,	/* ids (one or selected) */
	WACT_REQUEUE_REASON, WACT_DROP_REASON,		/* arg: a reason */
	WACT_PAUSE, WACT_RESUME,			/* arg: an action or "*" */
};

/* wact_run's exit code for a refusal: ctl/cli.h's EX_REFUSED (which web.c
 * cannot include: its PROG is warrantctl's) */
#define WACT_REFUSED	1

#define WACT_IDS_MAX	50	/* records one confirmation may name */
#define WACT_ARG_MAX	4096	/* the ids, space-separated, or the one argument */

/* Plain data: one action asked for. */
struct wact_req {
	enum wact_op op;
	char arg[WACT_ARG_MAX];	/* as given: ids separated by spaces, a reason,
				 * an action */
	const char *ids[WACT_IDS_MAX];	/* into ids_buf */
	size_t nids;
	char ids_buf[WACT_ARG_MAX];
};

/* The op's name in a form ("retry", "requeue-reason", ...). */
const char *wact_op_name(enum wact_op op);

/*
 * op and arg of a form into *out: a known op; for an id op 1..WACT_IDS_MAX
 * record ids (record_id_valid, separated by spaces; drop takes any id
 * without control characters or spaces), for a reason op a reason name of
 * reason.h, for pause/resume "*" or an action cfg names. 0, or -1 with
 * one line in err.
 */
int wact_parse(const struct cfg *cfg, const char *op, const char *arg, struct wact_req *out,
	       char *err, size_t errlen) __attribute__((warn_unused_result));

/* What req will do, one sentence for people ("requeue 12 dead letters of
 * reason max-attempts"); count: the letters a reason op covers now. */
void wact_describe(const struct wact_req *req, long long count, char *buf, size_t n);

/* The page to go back to after req (a path of ours, made from req, never
 * from what the request says): the job, the dead letters, the overview. */
void wact_back(const struct wact_req *req, char *buf, size_t n);

struct wact;

/* cfg borrowed (it must outlive the struct), with [redis.operator] set;
 * reads the verification key now. NULL with one line in err. */
struct wact *wact_new(struct cfg *cfg, char *err, size_t errlen)
	__attribute__((warn_unused_result));
/* NULL is a no-op; closes the connection, wipes the key. */
void wact_free(struct wact *w);

/* Does req as console user `user` (borrowed): what it said in res
 * (act_result_init'ed by the caller). The exit code of ctl/act.h: 0,
 * EX_REFUSED, or a Redis failure. */
int wact_run(struct wact *w, const struct wact_req *req, const char *user,
	     struct act_result *res) __attribute__((warn_unused_result));

#endif
