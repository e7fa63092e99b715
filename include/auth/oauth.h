/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * oauth: the worker's own access token (warrantd(7) §9, R6, R9), kept fresh on the
 * event loop. A source of tokhold.h: it reads the secret files and asks the
 * token endpoint (client credentials grant, RFC 6749 §4.4) through the async
 * http client; the token's life -- refresh at [oauth] refresh_ratio, retries
 * with backoff and full jitter while the old token lives (and after), R9's
 * spacing, expiry, the listener -- is the holder's (oauth_holder).
 *
 * One fetch at a time (single flight): however many callers invalidate the
 * token at once, the IdP sees one request. A token's life is kept on the
 * monotonic clock (wtime_mono_ms), so a step of the wall clock neither kills
 * a good token nor keeps a dead one; a JWT `exp` (wall-clock) is turned into
 * a lifetime the moment the token arrives.
 *
 * Single-threaded: call everything from the loop's thread. Nothing here logs
 * a token, a secret, an assertion or an Authorization header.
 */
#ifndef WARRANTD_OAUTH_H
#define WARRANTD_OAUTH_H

#include <ev.h>
#include <stdint.h>

#include "conf/config.h"
#include "http/http.h"

struct oauth;	/* opaque: one token manager */

/*
 * A manager for cfg's [oauth] section (cfg->oauth.present must be set). It
 * copies what it needs from cfg (which may be freed afterwards) and reads
 * client_secret_file, private_key_file and certificate_file with
 * secrets_read_cfg, keeping them in memory (wiped on free). A private key is
 * tried once here, so a key that cannot sign assertion_alg fails now.
 * `loop` and `http` are borrowed: both must outlive the manager. Fetches
 * nothing before oauth_start. Caller frees with oauth_free; NULL with a
 * message in err (never a secret) on failure.
 */
struct oauth *oauth_new(struct ev_loop *loop, struct http_client *http, const struct cfg *cfg,
			char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* An action's own scope, audience and resource (RFC 8707), each NULL to
 * keep [oauth]'s. Borrowed during the call. */
struct oauth_scope {
	const char *scope, *audience, *resource;
	int bearer_only;	/* no DPoP even with dpop_key_file: for a party whose
				   calls carry no proof (the webhook, the PDP) */
};

/* As oauth_new, for a token narrowed to one action's needs: the same client,
 * with sc's values in place of [oauth]'s (sc NULL: exactly oauth_new).
 * oauth_reload of such a manager keeps [oauth]'s values: rebuild it instead. */
struct oauth *oauth_new_scoped(struct ev_loop *loop, struct http_client *http,
			       const struct cfg *cfg, const struct oauth_scope *sc, char *err,
			       size_t errlen)
	__attribute__((warn_unused_result));

/* Cancels a fetch in flight, stops every watcher, wipes the token and the
 * secrets, frees. NULL is a no-op. Must not be called from the listener. */
void oauth_free(struct oauth *o);

/* Fetches the first token at once (the answer comes on the loop). A second
 * call does nothing. */
void oauth_start(struct oauth *o);

/* The holder of the manager's token (tokhold.h), owned by the manager: for
 * a user that reads every token source alike (rtoken.h). Its listener is
 * oauth_set_listener's: set one or the other. */
struct tokhold;
struct tokhold *oauth_holder(struct oauth *o);

/*
 * R6: the token when its remaining life at now_ms (wtime_mono_ms) is longer than
 * timeout_ms + 1 s, else NULL (wait for the listener). Owned by the manager,
 * valid until control returns to the loop or the next oauth_* call: copy it
 * into the request at once.
 */
const char *oauth_token(const struct oauth *o, int64_t now_ms, long timeout_ms);

/* §9: with no token held, the IdP's error code when its last answer was one
 * no retry mends (invalid_scope, invalid_target, ...: token_idp_classify's
 * TOKEN_IDP_FATAL), else NULL. Owned by the manager. Fetches go on (the
 * IdP may be mended), and a token that comes clears it. */
const char *oauth_refused(const struct oauth *o);

/* When the token held dies (wtime_mono_ms), or 0 when none is held. */
int64_t oauth_expires_at_ms(const struct oauth *o);

/*
 * warrantd(7) §8 tokenState, a static string: "valid" (a live token is held, a
 * refresh may be under way), "refreshing" (none held, a fetch in flight),
 * "error" (none held, the last fetch failed; a retry is scheduled), "none"
 * (none held and none asked for yet).
 */
const char *oauth_state_name(const struct oauth *o);

/*
 * R9: discards the token held and starts one fetch, unless one is already in
 * flight (it is not doubled). With no token held it does nothing: a fetch or
 * a retry is already under way. The fetch is spaced: not before
 * [oauth] min_refresh_interval_ms after the previous request, and when the
 * token refused was itself fetched after a refusal, with exponential backoff
 * (token_refused_fetch_at_ms). The listener hears of it later, never from
 * inside this call.
 */
void oauth_invalidate(struct oauth *o);

/* A call with the token of generation `gen` was accepted: refusals in a row
 * start again from one (R9's backoff ends). */
void oauth_token_accepted(struct oauth *o, uint64_t gen);

/*
 * A number that changes with every token received (0 before the first).
 * oauth_invalidate_gen(o, gen) invalidates only while the token of
 * generation `gen` is still the one held: a call that failed with an old
 * token cannot throw away the fresh one that already replaced it.
 */
uint64_t oauth_generation(const struct oauth *o);
void oauth_invalidate_gen(struct oauth *o, uint64_t gen);

/*
 * cb(arg, have_token) is called from the loop whenever a token arrives
 * (have_token 1, also for each proactive refresh) or the one held is lost
 * (0: expired or invalidated), never from inside an oauth_* call. The
 * callback may call any oauth_* function except oauth_free. cb NULL: none.
 * `arg` is borrowed.
 */
void oauth_set_listener(struct oauth *o, void (*cb)(void *arg, int have_token), void *arg);

/* Refresh no later than lead_ms before the token dies (token_refresh_before_ms),
 * from the next token on; 0 (the default): at refresh_ratio only. For the
 * Redis token (rtoken.h), which must reach a connection held by a blocking
 * read before it dies. */
void oauth_set_refresh_lead(struct oauth *o, long lead_ms);

/* Tokens received since oauth_new (warrantd(7) §8 tokenRefreshes). */
long long oauth_refreshes(const struct oauth *o);

/* From now on each failed fetch of the worker's token adds 1 to *failed
 * (borrowed, outlives o; NULL: none). */
void oauth_count_failures_into(struct oauth *o, long long *failed);

/*
 * SIGHUP (R16): takes cfg's [oauth] settings and re-reads its secret files.
 * The token held is kept; when token_url, client_id, auth_method, scope,
 * resource or audience changed, a fresh one is fetched at once (the old one
 * stays in use until it arrives). 0, or -1 with a message in err and the
 * manager unchanged.
 */
int oauth_reload(struct oauth *o, const struct cfg *cfg, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/*
 * A token for one job, never cached here. With subject_token set: RFC 8693
 * token exchange -- the worker's own token as the actor, subject_token (the
 * verified decision record) as the subject. Without: a client credentials
 * request narrowed by authorization_details (RFC 9396, token = per-record).
 * The client is authenticated as for its own token, and with
 * [oauth] dpop_key_file the request carries a proof (a nonce challenge is
 * answered by one immediate retry).
 */
struct oauth_exchange_req {
	const char *subject_token, *subject_token_type;	/* NULL: per-record */
	const char *scope, *resource;		/* NULL: not sent */
	const char *authorization_details;	/* JSON text; NULL: not sent */
	long max_ms;	/* > 0: the request's timeout is at most this ([oauth]
			   timeout_ms otherwise): the job's time left (R1) */
	long delay_ms;	/* > 0: sent only this much later (R9's spacing of
			   refreshes a refusal caused); the answer comes as usual */
};

enum oauth_xch {
	OAUTH_XCH_OK,		/* token holds the job's token */
	OAUTH_XCH_UNAVAILABLE,	/* no answer, 5xx, or one that cannot be read (§9) */
	OAUTH_XCH_REFRESH,	/* invalid_client or a 401: the actor token's R9 */
	OAUTH_XCH_REFUSED,	/* invalid_grant and the like: one more refresh, then failed */
	OAUTH_XCH_FAILED,	/* invalid_scope, invalid_target, ...: failed at once */
};

/* What came back. token is valid only during the callback (copy it, never
 * log it); detail is one line for people that never holds a token; code
 * the IdP's OAuth error code ("" when none). */
struct oauth_xch_answer {
	enum oauth_xch r;
	const char *token, *detail, *code;
	int64_t lifetime_ms;	/* OK: the token's life from the request, -1 unknown */
};

/* Called from the loop. */
typedef void oauth_exchange_cb(void *arg, const struct oauth_xch_answer *a);

struct oauth_xch_call;

/*
 * Starts one exchange. Needs a worker token that outlives call_timeout_ms
 * by 1 s (R6) at now_mono_ms: without one, or when the request cannot be
 * started, returns NULL and cb is never called. Otherwise cb is called
 * exactly once, unless oauth_exchange_cancel comes first. rq's strings are
 * copied before it returns.
 */
struct oauth_xch_call *oauth_exchange(struct oauth *o, const struct oauth_exchange_req *rq,
				      oauth_exchange_cb *cb, void *arg, int64_t now_mono_ms,
				      long call_timeout_ms)
	__attribute__((warn_unused_result));

/* Cancels an exchange in flight: cb is not called. NULL is a no-op. Not
 * from inside its own callback. */
void oauth_exchange_cancel(struct oauth_xch_call *x);

struct dpop;
/* The DPoP key the manager's tokens are bound to (RFC 9449), or NULL for
 * bearer tokens (or o NULL). Owned by the manager; replaced by a reload:
 * do not keep it past the current loop iteration. */
struct dpop *oauth_dpop(const struct oauth *o);

#endif
