/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wpage: the console's pages, rendered from the JSON that wread reads
 * (pure: `now` comes in; every value from Redis is escaped by whtml).
 *
 * A page carries no inline script or style (the CSP forbids both): the
 * refresh is /static/console.js, which reads the session's CSRF token from
 * <meta name="csrf-token"> for the POSTs a later version adds. The token is
 * the session's, never a Redis credential.
 */
#ifndef WARRANTD_WPAGE_H
#define WARRANTD_WPAGE_H

#include <stdint.h>

#include <jansson.h>

#include "whtml.h"
#include "wroute.h"

/* Who is looking, for the frame: user and csrf borrowed (NULL: logged out);
 * operator: the console has [redis.operator], so the pages show the action
 * buttons (without it they are absent, not disabled). */
struct wpage_who {
	const char *user, *csrf;
	int operator;
};

/* The login form; `csrf` the login cookie's token, `message` NULL or a
 * line for people. */
void wpage_login(struct whtml *b, const char *csrf, const char *message);

/* The overview (wread_overview's object). */
void wpage_overview(struct whtml *b, const struct wpage_who *who, const json_t *ov);

/* The jobs list for q (wread_jobs's object: "jobs" and "more"). */
void wpage_jobs(struct whtml *b, const struct wpage_who *who, const struct wroute_jobq *q,
		const json_t *list);

/* One job (wread_job's object), times shown against now_ms. */
void wpage_job(struct whtml *b, const struct wpage_who *who, const json_t *job, int64_t now_ms);

/* The dead letters by reason (wread_dead's object). */
void wpage_dead(struct whtml *b, const struct wpage_who *who, const json_t *dead);

/* The charts (wread_stats's object, a day of buckets). */
void wpage_charts(struct whtml *b, const struct wpage_who *who, const json_t *stats);

/* The confirmation of an action: `sentence` (wact_describe's) and a POST
 * form to /act with op, arg and the CSRF token; `back` the page to go back
 * to (a path of ours). */
void wpage_confirm(struct whtml *b, const struct wpage_who *who, const char *op,
		   const char *arg, const char *sentence, const char *back);

/* What an action did: its lines ([[is_error, text], ...]) and whether it
 * was refused (rc != 0). */
void wpage_acted(struct whtml *b, const struct wpage_who *who, const char *sentence, int rc,
		 const json_t *lines, const char *back);

/* A page for an error: status and one line. */
void wpage_error(struct whtml *b, const struct wpage_who *who, int status, const char *message);

/* "3.2 s", "5 min", "2 h", "4 d" for ms (negative: "-" first) into buf. */
const char *wpage_age(int64_t ms, char *buf, size_t n);

#endif
