/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * oauth's own parts, shared by its files: oauth.c (settings, the token
 * source under tokhold.h, the public calls), oauth_req.c (the token
 * request and what its answer means) and oauth_xch.c (a token for one job).
 * Not for other modules.
 */
#ifndef WARRANTD_OAUTH_INT_H
#define WARRANTD_OAUTH_INT_H

#include <stddef.h>
#include <stdint.h>

#include "auth/oauth.h"
#include "auth/tokhold.h"
#include "jose/jwa.h"

struct jws_key;

/* Everything taken from the config, secrets included: replaced whole on
 * reload. */
struct oauth_settings {
	char *token_url, *client_id, *scope, *resource, *audience;
	enum cfg_client_auth auth_method;
	enum jwa_alg assertion_alg;	/* RS256 or ES256 (config checked) */
	char *assertion_audience, *key_id;
	double refresh_ratio;
	long timeout_ms, min_refresh_interval_ms;
	char *secret;		/* client_secret_basic and _post */
	size_t secret_len;
	struct jws_key *key;	/* private_key_jwt: the private key, parsed */
	char *x5t;		/* base64url SHA-256 of the DER certificate, or NULL */
	struct dpop *dpop;	/* dpop_key_file, parsed; NULL: bearer tokens */
};

struct oauth {
	struct ev_loop *loop;
	struct http_client *http;
	struct oauth_settings set;
	struct tokhold *hold;	/* the worker's (or the action's) token */
	long lead_ms;		/* oauth_set_refresh_lead */

	struct http_call *call;	/* the holder's one fetch in flight, or NULL */
	int nonce_retry;	/* RFC 9449 §8: the fetch in flight answers a nonce challenge */
	int64_t call_started_wall;	/* for a JWT exp, which is wall-clock */

	void (*listener)(void *arg, int have_token);
	void *listener_arg;
};

/* Wipes s (a NUL-terminated secret) and frees it. NULL is a no-op. */
void oauth_wipe_free(char *s);

/* RFC 7523 §3 client assertion at now_ms (wall clock): caller wipes and
 * frees. NULL on error (no key, out of memory). */
char *oauth_build_assertion(const struct oauth_settings *s, int64_t now_ms)
	__attribute__((warn_unused_result));

/* The form body (and for client_secret_basic the userpwd) of one token
 * request: grant is name, value, ... (NULL values skipped, at most 10
 * pairs), NULL-ended, then the client's authentication. Both hold secrets:
 * the caller wipes and frees them (oauth_wipe_free). 0, or -1 with one
 * line in err and nothing allocated. */
int oauth_build_request(const struct oauth_settings *s, int64_t now_ms, const char *const *grant,
			char **body, char **userpwd, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* RFC 9449 §4: the "DPoP: <proof>" line of a request, a new string (wipe
 * with oauth_wipe_free), or NULL (out of memory, or no key: check s->dpop). */
char *oauth_dpop_line(const struct oauth_settings *s, const char *method, const char *url,
		      const char *token, int64_t now_ms)
	__attribute__((warn_unused_result));

/* RFC 9449 §8: keeps a DPoP-Nonce the token endpoint sent; 1 when the
 * answer is its use_dpop_nonce challenge (400), which one immediate retry
 * with that nonce answers. resp is borrowed. */
int oauth_nonce_challenge(const struct oauth_settings *s, const struct http_response *resp);

/* One line about a failed token request into detail: the transport's
 * error, an OAuth error object's fields (token_parse_response's "idp
 * error: ..."), or "http <status>"; never the body otherwise. */
void oauth_describe_failure(const struct http_response *resp, char *detail, size_t n);

#endif
