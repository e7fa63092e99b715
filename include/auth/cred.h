/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cred: how the calls of each action are authenticated (warrantd(7) §10 [action]
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

#include "conf/config.h"
#include "auth/oauth.h"

struct creds;	/* opaque: the credentials of every [action] of one config */
struct cred;	/* opaque: one action's */

/* What the credentials work with; every pointer borrowed. */
struct creds_ctx {
	struct ev_loop *loop;
	struct http_client *http;
	struct oauth *oauth;	/* [oauth]'s own token; NULL without [oauth] */
	/* told whenever any scoped token arrives or is lost (oauth.h) */
	void (*listener)(void *arg, int have_token);
	void *arg;
};

/*
 * The credentials of cfg's actions: static bearers are read now (secrets_read_cfg,
 * kept in memory, wiped on free); an OAuth action uses ctx->oauth, or, when
 * it sets its own scope, audience or resource, a token manager of its own,
 * shared by every action of the set that asks for the same three (fetched
 * from creds_start on; a reload builds a new set, so narrowed tokens are
 * fetched again). cfg is only read during the call. Caller frees with
 * creds_free; NULL with a message in err (never a secret) on failure.
 */
struct creds *creds_new(const struct cfg *cfg, const struct creds_ctx *ctx, char *err,
			size_t errlen)
	__attribute__((warn_unused_result));

/* Starts fetching the narrowed tokens the set owns. */
void creds_start(struct creds *cs);

/* R6: 1 when every action that calls with the worker's own token has one
 * that outlives its timeout by 1 s; then entries may be read. An action's
 * narrowed token holds up that action's entries alone (they wait in hand).
 * 1 also when no action uses OAuth. */
int creds_tokens_usable(const struct creds *cs);

/* One narrowed token (an action's own scope, audience or resource), for
 * warrantd(7) §8 tokenState.<scope>: its name, oauth_state_name, and when it
 * dies (wtime_mono_ms; 0: none held). Borrowed: valid as long as cs. */
struct creds_scope {
	const char *name, *state;
	int64_t expires_at_ms;
};

/* Fills out with at most max of them; returns how many. */
size_t creds_scopes(const struct creds *cs, struct creds_scope *out, size_t max);

/* Wipes every secret and frees. NULL is a no-op. */
void creds_free(struct creds *cs);

/* The credential of the action called `name`, or NULL when there is no such
 * action. Valid as long as cs. */
const struct cred *creds_find(const struct creds *cs, const char *name);

/* The PDP's credential ([authz] auth: none, static or a token of the PDP's
 * own audience, §7) and the webhook's ([notify] auth, §6); never an
 * action's. NULL when there is no [authz] url / webhook_url. Valid as
 * long as cs. */
const struct cred *creds_pdp(const struct creds *cs);
const struct cred *creds_webhook(const struct creds *cs);

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

/*
 * The one writer of an Authorization header: every call that carries a
 * token (an action's, the PDP's question, the webhook's) has its line from
 * here. cred_auth_line writes "Authorization: Bearer <token>" and its NUL
 * at buf, which must hold CRED_AUTH_LINE_SIZE(token_len) bytes, and returns
 * the line's length. The line holds the token: wipe it when done.
 */
#define CRED_AUTH_PREFIX "Authorization: Bearer "
#define CRED_AUTH_LINE_SIZE(token_len) (sizeof CRED_AUTH_PREFIX + (token_len))
size_t cred_auth_line(char *buf, const char *token, size_t token_len);

/* The same line in memory of its own, for a caller without a buffer. NULL
 * when token is NULL or out of memory. Caller frees with
 * cred_auth_line_free, which wipes it (NULL is a no-op). */
char *cred_auth_line_new(const char *token) __attribute__((warn_unused_result));
void cred_auth_line_free(char *line);

/* 1 when each call of the action carries a token exchanged for that one job
 * (token = exchange), not the worker's own. */
int cred_exchanges(const struct cred *c);

/* 1 when the action's calls carry a token for this action on the record's
 * resource alone (token = per-record, RFC 9396); cred_exchanges is 1 too. */
int cred_per_record(const struct cred *c);

/* token = per-record: the token kept for `resource` when it outlives
 * timeout_ms by 1 s (R6), else NULL. *gen: its generation, for
 * cred_refused. Valid until control returns to the loop; never log it. */
const char *cred_record_token(const struct cred *c, const char *resource, long timeout_ms,
			      uint64_t *gen);

/* Keeps a per-record token received for `resource`, living lifetime_ms
 * from now (<= 0: not kept), in place of the one held; *gen its generation
 * (0 when not kept). At most 1024 resources per action: then the one that
 * dies first goes. */
void cred_record_keep(const struct cred *c, const char *resource, const char *token,
		      int64_t lifetime_ms, uint64_t *gen);

/* RFC 8693: the subject_token_type of a decision record. */
#define CRED_DECISION_TOKEN_TYPE "urn:warrant:params:oauth:token-type:decision"

/*
 * Exchanges the worker's token (the actor) and `record` (the verified
 * decision record as stored: the subject) for a token for this one job --
 * or, with token = per-record, asks for a token with authorization_details
 * naming this action, its URL's origin and `record`, which is then the
 * record's resource (scope and resource are the action's own then) --
 * asking for `scope` and `resource` (the target URL). Same contract as
 * oauth_exchange (NULL: no worker token outlives timeout_ms + 1 s, or the
 * request could not start; else cb exactly once unless cancelled with
 * oauth_exchange_cancel). The exchange request itself takes at most
 * max_ms (> 0: the job's time left, R1). *gen is the actor token's
 * generation.
 */
struct oauth_xch_call *cred_exchange(const struct cred *c, const char *record, const char *scope,
				     const char *resource, long timeout_ms, long max_ms,
				     uint64_t *gen, oauth_exchange_cb *cb, void *arg)
	__attribute__((warn_unused_result));

/* ---- DPoP (RFC 9449, warrantd(7) §9) ---- */

struct dpop;
/* The key the action's tokens are bound to, or NULL (bearer tokens, or no
 * OAuth). Borrowed: valid until control returns to the loop. */
struct dpop *cred_dpop(const struct cred *c);

/* As cred_auth_line, for a DPoP-bound token: "Authorization: DPoP <token>"
 * (never longer than the Bearer line: CRED_AUTH_LINE_SIZE holds it). */
#define CRED_DPOP_PREFIX "Authorization: DPoP "
size_t cred_dpop_auth_line(char *buf, const char *token, size_t token_len);

/* A fresh proof for a call of `method` to `url` carrying `token`: 0 with
 * *proof NULL when the action's tokens are bearer tokens, 0 with a new
 * string (free with dpop_proof_free; never log it), or -1. */
int cred_proof(const struct cred *c, const char *method, const char *url, const char *token,
	       char **proof) __attribute__((warn_unused_result));

/* Keeps a resource server's DPoP-Nonce for url's origin (RFC 9449 §9). */
void cred_dpop_nonce(const struct cred *c, const char *url, const char *nonce);

/* §9: the IdP's error code when it refused the action's token for good
 * (oauth_refused), else NULL. */
const char *cred_refused_code(const struct cred *c);

/* The target refused (R9: 401) or accepted the token of generation gen. */
void cred_refused(const struct cred *c, uint64_t gen);
void cred_accepted(const struct cred *c, uint64_t gen);

#endif
