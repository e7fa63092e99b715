/* SPDX-License-Identifier: BSD-2-Clause */
/* token: lifetimes, refresh times and wire formats of the worker's token. */
#define _DEFAULT_SOURCE
#include "core/token.h"

#include "base/backoff.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "jose/b64url.h"
#include "jose/jws.h"

/* Larger lifetimes are cut down to this (ten years): keeps ms in range. */
#define LIFETIME_MAX_S	(10LL * 365 * 24 * 3600)

/* ---- lifetime ---- */

/* A positive numeric claim (seconds), or -1. */
static int64_t
claim_s(const json_t *claims, const char *name)
{
	const json_t *v = json_object_get(claims, name);
	int64_t s = -1;

	if (json_is_integer(v) && json_integer_value(v) > 0)
		s = json_integer_value(v);
	else if (json_is_real(v) && json_real_value(v) >= 1 && json_real_value(v) < 9e15)
		s = (int64_t)json_real_value(v);
	if (s > LIFETIME_MAX_S * 100)
		s = LIFETIME_MAX_S * 100;	/* far beyond any now: same effect */
	return s;
}

/* The `exp` claim (seconds) of a JWS compact token, or -1: an opaque token,
 * a JWE (five segments) or a payload without a positive numeric exp. *iat_s
 * gets its `iat`, or -1. */
static int64_t
jwt_exp_s(const char *token, int64_t *iat_s)
{
	struct jws_segments seg;
	unsigned char *payload;
	size_t len;
	int64_t exp = -1;

	*iat_s = -1;
	if (jws_segments(token, &seg) < 0)
		return -1;
	/* lax: an IdP's token is read for its exp, not verified */
	if (b64url_decode_lax(seg.at[1], seg.len[1], &payload, &len) != 0)
		return -1;
	json_t *claims = json_loadb((const char *)payload, len, 0, NULL);
	exp = claim_s(claims, "exp");
	*iat_s = claim_s(claims, "iat");
	json_decref(claims);
	free(payload);
	return exp;
}

int64_t
token_lifetime_ms(long long expires_in_s, const char *access_token, int64_t now_ms)
{
	int64_t life = -1, iat_s, jwt_life;
	int64_t exp_s = jwt_exp_s(access_token, &iat_s);

	if (expires_in_s >= 0)
		life = (expires_in_s > LIFETIME_MAX_S ? LIFETIME_MAX_S : expires_in_s) * 1000;
	/* exp against our wall clock, exactly -- unless the token's iat shows
	 * that clock is off by more than TOKEN_SKEW_MS from the IdP's: then the
	 * IdP's own exp - iat, less the second that iat may have been cut by. */
	jwt_life = exp_s * 1000 - now_ms;
	if (iat_s > 0 && iat_s <= exp_s &&
	    (now_ms - iat_s * 1000 > TOKEN_SKEW_MS || iat_s * 1000 - now_ms > TOKEN_SKEW_MS))
		jwt_life = (exp_s - iat_s) * 1000 - 1000;
	if (exp_s > 0 && (life < 0 || jwt_life < life))
		life = jwt_life;
	return life > 0 ? life : -1;
}

/* ---- timing ---- */

int64_t
token_refresh_at_ms(int64_t obtained_ms, int64_t lifetime_ms, double ratio, uint64_t rnd)
{
	if (lifetime_ms <= 0)
		return obtained_ms;
	if (!(ratio > 0))
		ratio = 0;
	if (ratio > 1)
		ratio = 1;
	int64_t jitter = (int64_t)(rnd % (uint64_t)(lifetime_ms * TOKEN_JITTER_PERCENT / 100 + 1));
	int64_t at = (int64_t)llround(ratio * (double)lifetime_ms) - jitter;
	if (at < 0)
		at = 0;
	if (at > lifetime_ms - 1)
		at = lifetime_ms - 1;
	return obtained_ms + at;
}

int64_t
token_refresh_before_ms(int64_t obtained_ms, int64_t lifetime_ms, double ratio, uint64_t rnd,
			int64_t lead_ms)
{
	int64_t at = token_refresh_at_ms(obtained_ms, lifetime_ms, ratio, rnd);
	int64_t latest = obtained_ms + lifetime_ms - (lead_ms > 0 ? lead_ms : 0);

	return latest > obtained_ms && at > latest ? latest : at;
}

int
token_usable(int64_t expires_at_ms, int64_t now_ms, long timeout_ms)
{
	return expires_at_ms - now_ms > (int64_t)timeout_ms + TOKEN_SAFETY_MS;
}


int64_t
token_refused_fetch_at_ms(int64_t last_fetch_ms, long min_interval_ms, int refused_in_row)
{
	int64_t gap = min_interval_ms > 0 ? min_interval_ms : 0;

	if (refused_in_row >= 2) {
		int64_t base = gap > TOKEN_RETRY_BASE_MS ? gap : TOKEN_RETRY_BASE_MS;
		/* no jitter: the floor at the ceiling gives the ceiling itself */
		gap = backoff_ms(INT64_MAX, base, base > TOKEN_REFUSED_CAP_MS ?
		    base : TOKEN_REFUSED_CAP_MS, refused_in_row - 1, 0);
		if (gap > TOKEN_REFUSED_CAP_MS)
			gap = TOKEN_REFUSED_CAP_MS;
	}
	return last_fetch_ms + gap;
}

int
token_redis_blocks_reading(const struct token_redis_view *v, int64_t now_ms)
{
	if (!v->configured || v->is_static)
		return 0;
	return v->expires_at_ms == 0 || v->expires_at_ms - now_ms <= TOKEN_SAFETY_MS;
}

int
token_redis_refusal_blames(uint64_t given_gen, uint64_t held_gen)
{
	return given_gen == held_gen;
}

/* ---- form encoding ---- */

static int
unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	    c == '-' || c == '.' || c == '_' || c == '~';
}

/* Writes s form-urlencoded at p (room for 3 * strlen(s) bytes); returns the
 * new end. */
static char *
form_put(char *p, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (unreserved(*c)) {
			*p++ = (char)*c;
		} else if (*c == ' ') {
			*p++ = '+';
		} else {
			*p++ = '%';
			*p++ = hex[*c >> 4];
			*p++ = hex[*c & 15];
		}
	}
	return p;
}

char *
token_form_encode(const char *const *pairs)
{
	size_t room = 1;
	char *out, *p;

	for (size_t i = 0; pairs[i] != NULL; i += 2)
		room += 3 * (strlen(pairs[i]) + strlen(pairs[i + 1])) + 2;
	if ((out = malloc(room)) == NULL)
		return NULL;
	p = out;
	for (size_t i = 0; pairs[i] != NULL; i += 2) {
		if (i > 0)
			*p++ = '&';
		p = form_put(p, pairs[i]);
		*p++ = '=';
		p = form_put(p, pairs[i + 1]);
	}
	*p = '\0';
	return out;
}

char *
token_basic_userpwd(const char *client_id, const char *secret)
{
	char *out = malloc(3 * (strlen(client_id) + strlen(secret)) + 2), *p;

	if (out == NULL)
		return NULL;
	p = form_put(out, client_id);
	*p++ = ':';
	p = form_put(p, secret);
	*p = '\0';
	return out;
}

/* ---- the token endpoint's answer ---- */

/* expires_in: a non-negative integer, a real (cut to whole seconds) or a
 * string of digits. 0, or -1 when it is anything else. */
static int
read_expires_in(const json_t *v, long long *out)
{
	if (v == NULL || json_is_null(v)) {
		*out = -1;
		return 0;
	}
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = json_integer_value(v);
		return 0;
	}
	if (json_is_real(v) && json_real_value(v) >= 0 && json_real_value(v) < 9e15) {
		*out = (long long)json_real_value(v);
		return 0;
	}
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		char *end;
		errno = 0;
		long long n = strtoll(s, &end, 10);
		if (*s >= '0' && *s <= '9' && *end == '\0' && errno == 0) {
			*out = n;
			return 0;
		}
	}
	return -1;
}

/* Visible ASCII only: the token goes into an Authorization header line. */
static int
header_safe(const char *s)
{
	for (; *s; s++)
		if (*s < 0x21 || *s > 0x7e)
			return 0;
	return 1;
}

static int
idp_error(const json_t *o, char *err, size_t errlen)
{
	const char *code = json_string_value(json_object_get(o, "error"));
	const char *desc = json_string_value(json_object_get(o, "error_description"));

	if (code == NULL)
		code = "(not a string)";
	if (desc != NULL)
		snprintf(err, errlen, "idp error: %s: %s", code, desc);
	else
		snprintf(err, errlen, "idp error: %s", code);
	return -1;
}

static int
fail(char *err, size_t errlen, const char *msg)
{
	snprintf(err, errlen, "%s", msg);
	return -1;
}

int
token_parse_response(const char *body, size_t len, char **access_token,
		     long long *expires_in_s, char *err, size_t errlen)
{
	return token_parse_bound(body, len, 0, access_token, expires_in_s, err, errlen);
}

int
token_parse_bound(const char *body, size_t len, int dpop, char **access_token,
		  long long *expires_in_s, char *err, size_t errlen)
{
	json_t *o = json_loadb(body ? body : "", body ? len : 0, 0, NULL);
	const char *tok, *type;
	long long expires;
	int rc = -1;

	*access_token = NULL;
	*expires_in_s = -1;
	if (!json_is_object(o))
		rc = fail(err, errlen, "token response is not a JSON object");
	else if (json_object_get(o, "error") != NULL)
		rc = idp_error(o, err, errlen);
	else if ((tok = json_string_value(json_object_get(o, "access_token"))) == NULL ||
	    *tok == '\0')
		rc = fail(err, errlen, "token response has no access_token");
	else if (!header_safe(tok))
		rc = fail(err, errlen, "access_token holds characters a header cannot carry");
	else if (strlen(tok) > TOKEN_MAX_BYTES)
		rc = fail(err, errlen, "access_token is longer than " TOKEN_MAX_STR " bytes");
	else if (!dpop && json_object_get(o, "token_type") != NULL &&
	    ((type = json_string_value(json_object_get(o, "token_type"))) == NULL ||
	    strcasecmp(type, "Bearer") != 0))
		rc = fail(err, errlen, "token_type is not Bearer");
	/* RFC 9449 §5: a server that ignored the proof answers Bearer, and that
	 * token would be refused (or worse, work unbound): not taken */
	else if (dpop && ((type = json_string_value(json_object_get(o, "token_type"))) == NULL ||
	    strcasecmp(type, "DPoP") != 0))
		rc = fail(err, errlen, "token_type is not DPoP: the server did not bind the token");
	else if (read_expires_in(json_object_get(o, "expires_in"), &expires) != 0)
		rc = fail(err, errlen, "expires_in is not a non-negative number");
	else if ((*access_token = strdup(tok)) == NULL)
		rc = fail(err, errlen, "out of memory");
	else {
		*expires_in_s = expires;
		rc = 0;
	}
	/* jansson keeps its own copy of the token: wipe it before freeing. */
	json_t *t = json_object_get(o, "access_token");
	if (json_is_string(t))
		explicit_bzero((char *)json_string_value(t), json_string_length(t));
	json_decref(o);
	return rc;
}


/* ---- what an IdP's error means (warrantd(7) §9) ---- */

static const struct {
	const char *code;
	enum token_idp_error e;
} idp_codes[] = {
	{"invalid_client", TOKEN_IDP_REFRESH},
	{"invalid_grant", TOKEN_IDP_REFUSED},
	{"unauthorized_client", TOKEN_IDP_REFUSED},
	{"access_denied", TOKEN_IDP_REFUSED},
	/* a revoked actor_token is refused so by some servers: a refresh mends it */
	{"invalid_request", TOKEN_IDP_REFUSED},
	{"invalid_scope", TOKEN_IDP_FATAL},
	{"invalid_target", TOKEN_IDP_FATAL},
	{"invalid_authorization_details", TOKEN_IDP_FATAL},
	{"unsupported_grant_type", TOKEN_IDP_FATAL},
	{"temporarily_unavailable", TOKEN_IDP_TRANSIENT},
	/* RFC 9449: a proof refused (a clock off, a nonce challenged twice) is
	 * asked again, not an answer about the client */
	{"use_dpop_nonce", TOKEN_IDP_TRANSIENT},
	{"invalid_dpop_proof", TOKEN_IDP_TRANSIENT},
	{"server_error", TOKEN_IDP_TRANSIENT},
};

enum token_idp_error
token_idp_classify(long status, const char *detail, char *code, size_t codelen)
{
	static const char pfx[] = "idp error: ";
	size_t n = 0;

	code[0] = '\0';
	if (detail != NULL && strncmp(detail, pfx, sizeof pfx - 1) == 0) {
		const char *c = detail + sizeof pfx - 1;
		while (n + 1 < codelen && n < 63 && ((c[n] >= 'a' && c[n] <= 'z') || c[n] == '_'))
			n++;
		/* a code is the whole word: "invalid_grant2" is no invalid_grant */
		if (c[n] != '\0' && c[n] != ':')
			n = 0;
		memcpy(code, c, n);
		code[n] = '\0';
	}
	if (status == 0 || status >= 500 || status == 408 || status == 429 ||
	    (status >= 200 && status <= 299))
		return TOKEN_IDP_TRANSIENT;
	for (size_t i = 0; n > 0 && i < sizeof idp_codes / sizeof idp_codes[0]; i++)
		if (strcmp(code, idp_codes[i].code) == 0)
			return idp_codes[i].e;
	return status == 401 ? TOKEN_IDP_REFRESH : TOKEN_IDP_REFUSED;
}

const char *
token_idp_error_name(enum token_idp_error e)
{
	switch (e) {
	case TOKEN_IDP_TRANSIENT:
		return "transient";
	case TOKEN_IDP_REFRESH:
		return "refresh";
	case TOKEN_IDP_REFUSED:
		return "refused";
	case TOKEN_IDP_FATAL:
		return "fatal";
	}
	return "unknown";
}

/* ---- token_command (warrantd(7) §9: the Redis token from a program) ---- */

char **
token_command_argv(const char *cmd, char *why, size_t whylen)
{
	size_t n = strlen(cmd), words = 0;
	/* at most n/2 + 1 words; each word's bytes and NUL fit in n + 1 each */
	size_t slots = n / 2 + 2;
	char **argv = malloc(slots * sizeof *argv + n + slots);
	char *out;
	const char *p = cmd;

	if (argv == NULL) {
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	out = (char *)(argv + slots);
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0')
			break;
		argv[words++] = out;
		while (*p != '\0' && *p != ' ' && *p != '\t') {
			char q = *p;
			if (q != '\'' && q != '"') {
				*out++ = *p++;
				continue;
			}
			for (p++; *p != '\0' && *p != q; p++) {
				if (q == '"' && *p == '\\' && (p[1] == '"' || p[1] == '\\'))
					p++;
				*out++ = *p;
			}
			if (*p != q) {
				snprintf(why, whylen, "unclosed %s quote", q == '"' ? "double" :
				    "single");
				free(argv);
				return NULL;
			}
			p++;
		}
		*out++ = '\0';
	}
	argv[words] = NULL;
	if (words == 0 || argv[0][0] != '/') {
		snprintf(why, whylen, words == 0 ? "empty command" :
		    "the program must be an absolute path (no PATH lookup, no shell)");
		free(argv);
		return NULL;
	}
	return argv;
}

void
token_command_argv_free(char **argv)
{
	free(argv);
}

int
token_command_parse(const char *out, size_t len, char **token, long long *expires_in_s,
		    char *err, size_t errlen)
{
	json_t *o = json_loadb(out ? out : "", out ? len : 0, 0, NULL);
	const char *tok;
	long long expires;
	int rc = -1;

	*token = NULL;
	*expires_in_s = -1;
	if (!json_is_object(o))
		rc = fail(err, errlen, "the output is not a JSON object");
	else if ((tok = json_string_value(json_object_get(o, "token"))) == NULL || *tok == '\0')
		rc = fail(err, errlen, "the output has no \"token\" string");
	else if (!header_safe(tok))
		rc = fail(err, errlen, "the token holds characters other than visible ASCII");
	else if (strlen(tok) > TOKEN_MAX_BYTES)
		rc = fail(err, errlen, "the token is longer than " TOKEN_MAX_STR " bytes");
	else if (read_expires_in(json_object_get(o, "expires_in"), &expires) != 0)
		rc = fail(err, errlen, "expires_in is not a non-negative number");
	else if ((*token = strdup(tok)) == NULL)
		rc = fail(err, errlen, "out of memory");
	else {
		*expires_in_s = expires;
		rc = 0;
	}
	json_t *t = json_object_get(o, "token");
	if (json_is_string(t))
		explicit_bzero((char *)json_string_value(t), json_string_length(t));
	json_decref(o);
	return rc;
}
