/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wsess: the console's sessions, their CSRF tokens and the login rate
 * limit (pure: the clock and the random bytes come in as arguments).
 *
 * Sessions live in memory: a restart logs everyone out, which is what an
 * operator expects of a console whose password file may have changed. A
 * session unused for idle_ms ends; at most `max` exist at once (the one
 * unused longest goes first).
 */
#ifndef WARRANTD_WSESS_H
#define WARRANTD_WSESS_H

#include <stddef.h>
#include <stdint.h>

#include "wpass.h"

#define WSESS_RAND	64	/* random bytes a session is made of */
#define WSESS_ID_LEN	64	/* hex characters of an id and of a CSRF token */
#define WSESS_FAILS	5	/* failed logins per source and window */
#define WSESS_FAILS_ALL	30	/* of every source together, per window */
#define WSESS_WINDOW_MS	60000

/* Plain data: one live session. */
struct wsess {
	char id[WSESS_ID_LEN + 1];	/* the cookie's value */
	char csrf[WSESS_ID_LEN + 1];	/* every POST's csrf field */
	char user[WPASS_USER_MAX];
	int64_t created_ms, last_ms;
};

struct wsess_table;

/* A table of up to max sessions; NULL when out of memory. Caller frees
 * with wsess_free. */
struct wsess_table *wsess_new(size_t max, int64_t idle_ms) __attribute__((warn_unused_result));

/* NULL is a no-op. Wipes the ids. */
void wsess_free(struct wsess_table *t);

/*
 * A new session for user made of the WSESS_RAND bytes of rnd (the first
 * half its id, the second its CSRF token). Returns it, valid until the
 * next call that changes the table; NULL for a bad user name.
 */
const struct wsess *wsess_create(struct wsess_table *t, const char *user, int64_t now_ms,
				 const unsigned char rnd[WSESS_RAND]);

/* The live session whose id is `id` (compared in constant time), its last
 * use set to now_ms; NULL when none or idle too long (then ended). */
const struct wsess *wsess_find(struct wsess_table *t, const char *id, int64_t now_ms);

/* 1 when token is s's CSRF token (constant time), else 0; NULL: 0. */
int wsess_csrf_ok(const struct wsess *s, const char *token);

/* Ends the session with that id (logout); unknown: a no-op. */
void wsess_end(struct wsess_table *t, const char *id);

/* How many sessions are live at now_ms. */
size_t wsess_count(struct wsess_table *t, int64_t now_ms);

/*
 * The login rate limit. source names where a login came from (the peer's
 * address, "unix" on the socket); borrowed. wsess_login_allowed: 1 when a
 * login may be tried now, 0 when source (or everyone together) failed too
 * often in the last window. wsess_login_failed counts a failure.
 */
int wsess_login_allowed(struct wsess_table *t, const char *source, int64_t now_ms);
void wsess_login_failed(struct wsess_table *t, const char *source, int64_t now_ms);

#endif
