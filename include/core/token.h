/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * token: the pure core of the worker's own OAuth 2.0 access token (warrantd(7) §9,
 * R6): how long a token lives, when to refresh it, when it may still be used,
 * how long to wait after a refused token, and the token endpoint's wire
 * formats. No clock and no randomness: `now` and random words come in as
 * arguments (random words come from rnd.h, the delays after a failed fetch
 * from backoff.h with TOKEN_RETRY_BASE_MS and TOKEN_RETRY_CAP_MS).
 *
 * Nothing here verifies a token: the worker is not its audience. The JWT
 * `exp` of an access token is read only to learn when it stops working.
 */
#ifndef WARRANTD_TOKEN_H
#define WARRANTD_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#define TOKEN_SAFETY_MS		1000	/* R6: life left beyond the action's timeout */
#define TOKEN_SKEW_MS		5000	/* iat this far from our clock: the clocks disagree */
#define TOKEN_RETRY_BASE_MS	500
#define TOKEN_RETRY_CAP_MS	30000
#define TOKEN_JITTER_PERCENT	5	/* of the lifetime, taken off the refresh time */
/* An access token longer than this is refused where it enters: it goes into
 * one header line, and servers refuse longer ones (nginx: 8 KiB by default;
 * Entra ID tokens with many groups reach 6-8 KiB). */
#define TOKEN_MAX_BYTES		16384
#define TOKEN_MAX_STR		"16384"

/*
 * The lifetime in ms of a token received at now_ms (wall clock): the sooner
 * of expires_in_s (pass -1 when the response had none) and what the `exp`
 * claim of `access_token` gives when it is a JWS whose payload carries a
 * numeric exp (an opaque or encrypted token has none): exp - now_ms, or, when
 * the token's iat shows our clock off from the IdP's by more than
 * TOKEN_SKEW_MS, the IdP's own exp - iat less one second (iat is in whole
 * seconds). -1 when neither gives a lifetime or
 * the token is already dead (lifetime <= 0).
 */
int64_t token_lifetime_ms(long long expires_in_s, const char *access_token, int64_t now_ms);

/*
 * When to fetch the next token: obtained_ms + ratio * lifetime_ms, minus a
 * jitter of rnd modulo (TOKEN_JITTER_PERCENT % of the lifetime, + 1), so many
 * workers do not ask the IdP in the same millisecond. Always within
 * [obtained_ms, obtained_ms + lifetime_ms). ratio is clamped to [0, 1].
 */
int64_t token_refresh_at_ms(int64_t obtained_ms, int64_t lifetime_ms, double ratio, uint64_t rnd);

/*
 * As token_refresh_at_ms, and no later than lead_ms before the token dies,
 * when that is still after obtained_ms: a Redis token (warrantd(7) §9) must reach
 * every connection, the blocking read's included, whose AUTH Redis only
 * answers once the read it is queued behind ends. A token living no longer
 * than lead_ms keeps token_refresh_at_ms's time (the caller says so).
 */
int64_t token_refresh_before_ms(int64_t obtained_ms, int64_t lifetime_ms, double ratio,
				uint64_t rnd, int64_t lead_ms);

/* R6: 1 when a token that dies at expires_at_ms may start an action of
 * timeout_ms at now_ms (remaining life > timeout_ms + TOKEN_SAFETY_MS), else 0. */
int token_usable(int64_t expires_at_ms, int64_t now_ms, long timeout_ms);

/*
 * R9: the earliest time a refresh that a refused token (a 401) asks for may
 * go out, on the clock of last_fetch_ms (when the previous request was
 * sent). refused_in_row counts tokens refused in a row, this one included,
 * where each was fetched after the previous one's refusal (1: a token that
 * had been fetched in the ordinary way). 1: last_fetch_ms + min_interval_ms.
 * From 2 on: max(min_interval_ms, TOKEN_RETRY_BASE_MS) * 2^(n-2), capped at
 * TOKEN_REFUSED_CAP_MS: a target that refuses every token must not turn the
 * worker into a load generator against the IdP.
 */
#define TOKEN_REFUSED_CAP_MS	60000
int64_t token_refused_fetch_at_ms(int64_t last_fetch_ms, long min_interval_ms, int refused_in_row);

/*
 * R20 (warrantd(7) §9, "Short-lived credentials to Redis itself"): whether the
 * state of the Redis credential keeps the worker from reading new entries
 * at now_ms: what it read it could not complete. Never with no [redis]
 * auth source (configured 0) or a static password; otherwise unless a
 * token is held (expires_at_ms != 0, on now_ms's clock) that lives longer
 * than TOKEN_SAFETY_MS. Pure.
 */
struct token_redis_view {
	int configured;		/* the worker has a Redis credential source */
	int is_static;		/* [redis] auth = password: nothing expires */
	int64_t expires_at_ms;	/* the token held dies then; 0: none held */
};
int token_redis_blocks_reading(const struct token_redis_view *v, int64_t now_ms);

/*
 * R20: whether Redis refusing the credential (NOAUTH, WRONGPASS, ...) on
 * connections last given the token of generation given_gen blames the
 * token of generation held_gen, the one held now: only when it is that
 * token. A refusal of an older one, met before the connections were given
 * the newer (a token can arrive between two connections' refusals), asks
 * for nothing: the newer is on its way to them. Pure.
 */
int token_redis_refusal_blames(uint64_t given_gen, uint64_t held_gen);

/*
 * application/x-www-form-urlencoded: `pairs` is name, value, name, value, ...,
 * ended by a NULL name (a value must not be NULL). RFC 3986 unreserved
 * characters are kept, space becomes '+', every other byte %XX (upper case).
 * Returns "n1=v1&n2=v2" (caller frees, and should wipe: it may hold a
 * secret), or NULL when out of memory.
 */
char *token_form_encode(const char *const *pairs)
	__attribute__((warn_unused_result));

/* RFC 6749 §2.3.1: client_id and secret each form-urlencoded, joined with
 * ':', for CURLOPT_USERPWD (curl Base64s it). Caller frees and should wipe.
 * NULL when out of memory. */
char *token_basic_userpwd(const char *client_id, const char *secret)
	__attribute__((warn_unused_result));

/*
 * A token endpoint response body (RFC 6749 §5.1, §5.2). 0: *access_token is
 * a new string (caller frees and should wipe) of visible ASCII only (it goes
 * into a header), *expires_in_s the expires_in value or -1 when absent.
 * -1: nothing allocated, err holds one line for people that never contains a
 * token (also for an access_token longer than TOKEN_MAX_BYTES): "idp error: <error>: <error_description>" for an error body, else
 * what was wrong. token_type, when present, must be Bearer (any case);
 * expires_in may be a number or a numeric string.
 */
int token_parse_response(const char *body, size_t len, char **access_token,
			 long long *expires_in_s, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/*
 * What an IdP's answer to a token request means (warrantd(7) §9), for the
 * worker's token, an action's scope, an exchange and a per-record token
 * alike. status is the HTTP status (0: no answer), detail what
 * token_parse_response said ("idp error: <code>..." for an OAuth error body).
 */
enum token_idp_error {
	TOKEN_IDP_TRANSIENT,	/* no answer, 5xx, 408, 429, temporarily_unavailable, an
				   unreadable answer: retry with backoff */
	TOKEN_IDP_REFRESH,	/* invalid_client or a 401: R9's spaced refreshes */
	TOKEN_IDP_REFUSED,	/* invalid_grant, unauthorized_client, access_denied,
				   invalid_request and other 4xx: one more refresh after
				   R9's spacing, then failed */
	TOKEN_IDP_FATAL,	/* invalid_scope, invalid_target,
				   invalid_authorization_details, unsupported_grant_type:
				   failed at once, no retry mends them */
};

/* The class of an answer, and into code (codelen bytes, at least 1) the
 * OAuth error code when detail carries one ("" otherwise; at most 63
 * characters of [a-z_] kept, so it can be a reason code). Pure. */
enum token_idp_error token_idp_classify(long status, const char *detail, char *code,
					size_t codelen);

/* "transient", "refresh", "refused", "fatal". Static. */
const char *token_idp_error_name(enum token_idp_error e);

/* As token_parse_response; with dpop set the token_type must be DPoP
 * (RFC 9449 §5: the token is bound to our key), not Bearer. */
int token_parse_bound(const char *body, size_t len, int dpop, char **access_token,
		      long long *expires_in_s, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/*
 * [redis] token_command (warrantd(7) §9) as an argument vector, for execv: split on
 * spaces and tabs; '...' keeps everything inside as it is, "..." too except
 * that \" and \\ stand for " and \. No shell: no variables, globs,
 * redirections or pipes (to have them, name /bin/sh -c '...' yourself). The
 * program must be an absolute path: the daemon's PATH is not the operator's.
 * NULL-terminated, one allocation (free with token_command_argv_free); NULL
 * with one line in why (an empty command, an unclosed quote, a relative
 * program, out of memory).
 */
char **token_command_argv(const char *cmd, char *why, size_t whylen)
	__attribute__((warn_unused_result));
void token_command_argv_free(char **argv);

/*
 * What a token_command printed: one JSON object {"token": "...",
 * "expires_in": N} (N seconds, a number or a numeric string; absent: -1,
 * the token's JWT exp must then tell). The same rules as
 * token_parse_response for the token (visible ASCII, at most
 * TOKEN_MAX_BYTES). 0 with *token a new string (caller frees and wipes), or
 * -1 with one line in err that never holds a token or the output itself.
 */
int token_command_parse(const char *out, size_t len, char **token, long long *expires_in_s,
			char *err, size_t errlen)
	__attribute__((warn_unused_result));


#endif
