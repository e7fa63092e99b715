/*
 * cred: how the calls of each action are authenticated (SPEC §10 [action]
 * auth): no credential, a static bearer read from a file, or the worker's
 * own OAuth token (oauth.h). One credential per action, owning its secret;
 * a set of them is built from a config as a whole and replaced whole on
 * reload. Adding an auth kind (per-scope tokens, token exchange) means a new
 * case here, not a new array beside cfg->actions.
 *
 * Single-threaded: call from the loop's thread. Nothing here logs a secret.
 */
#ifndef WARRANTD_CRED_H
#define WARRANTD_CRED_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "oauth.h"

struct creds;	/* opaque: the credentials of every [action] of one config */
struct cred;	/* opaque: one action's */

/*
 * The credentials of cfg's actions: static bearers are read now (cfg_read_file,
 * kept in memory, wiped on free); OAuth ones borrow `oauth` (NULL when there
 * is no [oauth]: then an action with auth = oauth is refused). cfg is only
 * read during the call. Caller frees with creds_free; NULL with a message in
 * err (never a secret) on failure.
 */
struct creds *creds_new(const struct cfg *cfg, struct oauth *oauth, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* Wipes every secret and frees. NULL is a no-op. */
void creds_free(struct creds *cs);

/* The credential of the action called `name`, or NULL when there is no such
 * action. Valid as long as cs. */
const struct cred *creds_find(const struct creds *cs, const char *name);

/* 1 when the action calls with the worker's OAuth token (R6 and R9 apply). */
int cred_is_oauth(const struct cred *c);

/*
 * The bearer token for a call that may take timeout_ms, or NULL: with
 * auth = none always; with auth = oauth when no token outlives the call by
 * 1 s (R6: wait for one). *gen is the token's generation (0 for none or
 * static): pass it back to cred_refused/cred_accepted. Valid until control
 * returns to the loop; copy it into the request at once and never log it.
 */
const char *cred_bearer(const struct cred *c, long timeout_ms, uint64_t *gen);

/* The target refused (R9: 401) or accepted the token of generation gen. */
void cred_refused(const struct cred *c, uint64_t gen);
void cred_accepted(const struct cred *c, uint64_t gen);

#endif
