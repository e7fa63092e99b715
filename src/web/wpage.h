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

/* Who is looking, for the frame: user and csrf borrowed (NULL: logged out). */
struct wpage_who {
	const char *user, *csrf;
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

/* A page for an error: status and one line. */
void wpage_error(struct whtml *b, const struct wpage_who *who, int status, const char *message);

/* "3.2 s", "5 min", "2 h", "4 d" for ms (negative: "-" first) into buf. */
const char *wpage_age(int64_t ms, char *buf, size_t n);

#endif
