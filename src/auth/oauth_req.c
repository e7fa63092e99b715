/* SPDX-License-Identifier: BSD-2-Clause */
/* oauth_req: one token request -- its body, its proof, what its answer says. */
#define _DEFAULT_SOURCE		/* explicit_bzero */
#include "oauth_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/rnd.h"
#include "core/token.h"
#include "jose/dpop.h"
#include "jose/jws.h"

#define ASSERTION_TTL_S		60
#define JTI_BYTES		16
#define CLIENT_ASSERTION_TYPE	"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

void
oauth_wipe_free(char *s)
{
	if (s != NULL) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}


/* RFC 7523 §3 client assertion; caller wipes and frees. NULL on error.
 * typ JWT: what libjwt wrote here before, and what IdPs built on it read. */
char *
oauth_build_assertion(const struct oauth_settings *s, int64_t now_ms)
{
	char jti[2 * JTI_BYTES + 1];
	json_int_t iat = (json_int_t)(now_ms / 1000);
	json_t *header = NULL, *claims = NULL;
	char *out = NULL;

	if (s->key == NULL || rnd_hex(jti, sizeof jti, JTI_BYTES) != 0)
		return NULL;
	header = json_pack("{s:s}", "typ", "JWT");
	claims = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I}", "iss", s->client_id, "sub",
	    s->client_id, "aud", s->assertion_audience, "jti", jti, "iat", iat, "exp",
	    iat + ASSERTION_TTL_S);
	if (header != NULL && claims != NULL &&
	    (s->key_id == NULL || json_object_set_new(header, "kid", json_string(s->key_id)) == 0) &&
	    (s->x5t == NULL || json_object_set_new(header, "x5t#S256", json_string(s->x5t)) == 0))
		out = jws_sign(s->key, header, claims);
	json_decref(header);
	json_decref(claims);
	return out;
}

/* The form body (and for client_secret_basic the userpwd) of one token
 * request. Both hold secrets: the caller wipes and frees them. */
int
oauth_build_request(const struct oauth_settings *s, int64_t now_ms, const char *const *grant,
		    char **body, char **userpwd, char *err, size_t errlen)
{
	const char *pairs[32];
	char *assertion = NULL;
	size_t n = 0;

	*body = *userpwd = NULL;
#define OPT(name, v) do { if ((v) != NULL) { pairs[n++] = (name); pairs[n++] = (v); } } while (0)
	/* the grant's own pairs, NULL values skipped; at most 10 */
	for (size_t i = 0; i < 20 && grant[i] != NULL; i += 2)
		OPT(grant[i], grant[i + 1]);
	switch (s->auth_method) {
	case CFG_CLIENT_SECRET_BASIC:
		if ((*userpwd = token_basic_userpwd(s->client_id, s->secret)) == NULL)
			goto oom;
		break;
	case CFG_CLIENT_SECRET_POST:
		OPT("client_id", s->client_id);
		OPT("client_secret", s->secret);
		break;
	case CFG_PRIVATE_KEY_JWT:
		if ((assertion = oauth_build_assertion(s, now_ms)) == NULL) {
			snprintf(err, errlen, "cannot sign the client assertion");
			return -1;
		}
		OPT("client_id", s->client_id);
		pairs[n++] = "client_assertion_type";
		pairs[n++] = CLIENT_ASSERTION_TYPE;
		OPT("client_assertion", assertion);
		break;
	}
#undef OPT
	pairs[n] = NULL;
	*body = token_form_encode(pairs);
	oauth_wipe_free(assertion);
	if (*body != NULL)
		return 0;
oom:
	oauth_wipe_free(*userpwd);
	*userpwd = NULL;
	snprintf(err, errlen, "out of memory");
	return -1;
}

/* RFC 9449 §4: the "DPoP: <proof>" line of a request, a new string (wipe
 * with wipe_free), or NULL (out of memory, or no key: check s->dpop). */
char *
oauth_dpop_line(const struct oauth_settings *s, const char *method, const char *url,
		const char *token, int64_t now_ms)
{
	char *proof, *line = NULL;
	size_t n;

	if (s->dpop == NULL || (proof = dpop_proof(s->dpop, method, url, token, now_ms)) == NULL)
		return NULL;
	n = strlen(proof) + sizeof "DPoP: ";
	if ((line = malloc(n)) != NULL)
		snprintf(line, n, "DPoP: %s", proof);
	dpop_proof_free(proof);
	return line;
}

/* RFC 9449 §8: keeps a DPoP-Nonce the token endpoint sent; 1 when the
 * answer is its use_dpop_nonce challenge (400), which one immediate retry
 * with that nonce answers. */
int
oauth_nonce_challenge(const struct oauth_settings *s, const struct http_response *resp)
{
	json_t *o;
	int is;

	if (s->dpop == NULL || resp->dpop_nonce == NULL)
		return 0;
	(void)dpop_nonce_keep(s->dpop, s->token_url, resp->dpop_nonce);
	if (resp->status != 400)
		return 0;
	o = json_loadb(resp->body ? resp->body : "", resp->body ? resp->body_len : 0, 0, NULL);
	is = json_is_string(json_object_get(o, "error")) &&
	    strcmp(json_string_value(json_object_get(o, "error")), "use_dpop_nonce") == 0;
	json_decref(o);
	return is;
}


/* One line about a failed exchange; never the body itself unless it is an
 * OAuth error object (whose fields token_parse_response picks). */
void
oauth_describe_failure(const struct http_response *resp, char *detail, size_t n)
{
	char *tok = NULL;
	long long exp;

	if (resp->status == 0)
		snprintf(detail, n, "%s", resp->timed_out ? "timeout" :
		    resp->error[0] ? resp->error : "transport error");
	else if (token_parse_response(resp->body, resp->body_len, &tok, &exp, detail, n) == 0 ||
	    strncmp(detail, "idp error: ", 11) != 0)
		snprintf(detail, n, "http %ld", resp->status);
	oauth_wipe_free(tok);
}

