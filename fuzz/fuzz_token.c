/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_token: the token endpoint's response (RFC 6749 §5.1, §5.2) and the
 * access token's JWT exp, as the IdP (hostile, in this exercise) sends them.
 *
 * Besides "no crash": an accepted access_token is visible ASCII only (it goes
 * into a header), and every lifetime token_lifetime_ms computes is bounded by
 * what the IdP said: at most expires_in seconds when it gave one, at most
 * the time left to the JWT's exp (read here by the harness, not by token.c;
 * or exp - iat less a second when iat shows the clocks apart), and -1 when
 * neither gives one. A longer lifetime would keep a dead token in use. */
#include "fuzz.h"
#include "core/token.h"

#include <jansson.h>

#define NOW_MS	1796011200000LL

/* A positive numeric claim of the payload as token.c's contract reads it
 * (seconds; a real at least 1), or -1. */
static long double
claim(const json_t *claims, const char *name)
{
	const json_t *v = json_object_get(claims, name);

	if (json_is_integer(v) && json_integer_value(v) > 0)
		return (long double)json_integer_value(v);
	if (json_is_real(v) && json_real_value(v) >= 1 && json_real_value(v) < 9e15)
		return (long double)(long long)json_real_value(v);
	return -1;
}

/* exp and iat of a JWS compact token whose payload is base64url JSON (padded
 * or not: an IdP's token is read leniently); 0, or -1 when it has no exp
 * (opaque, a JWE, or no positive numeric exp). */
static int
jwt_claims(const char *tok, long double *exp, long double *iat)
{
	size_t d1, d2, len;
	unsigned char *payload;

	if (fuzz_jws_split(tok, &d1, &d2) != 0 ||
	    (payload = fuzz_b64url_decode(tok + d1 + 1, d2 - d1 - 1, 1, &len)) == NULL)
		return -1;
	json_t *c = json_loadb((const char *)payload, len, 0, NULL);
	free(payload);
	*exp = claim(c, "exp");
	*iat = claim(c, "iat");
	json_decref(c);
	return *exp > 0 ? 0 : -1;
}

/* Aborts unless token_lifetime_ms(expires_in_s, tok, NOW_MS) keeps the bounds. */
static void
check_lifetime(long long expires_in_s, const char *tok)
{
	long double exp, iat, bound = -1;
	int64_t life = token_lifetime_ms(expires_in_s, tok, NOW_MS);
	int has_exp = jwt_claims(tok, &exp, &iat) == 0;

	if (life != -1 && life <= 0)
		abort();
	if (life == -1)
		return;
	if (expires_in_s < 0 && !has_exp)
		abort();	/* a lifetime from nowhere */
	if (expires_in_s >= 0 && (long double)life > (long double)expires_in_s * 1000)
		abort();
	if (has_exp) {
		bound = exp * 1000 - NOW_MS;
		/* iat this far from our clock: the clocks disagree, and the
		 * IdP's own exp - iat (less the second iat may be cut by) rules */
		if (iat > 0 && iat <= exp && (NOW_MS - iat * 1000 > TOKEN_SKEW_MS ||
		    iat * 1000 - NOW_MS > TOKEN_SKEW_MS))
			bound = (exp - iat) * 1000 - 1000;
		if ((long double)life > bound)
			abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *tok = NULL, err[256];
	long long expires = 0;
	char *body = fuzz_cstr(data, size);

	if (token_parse_response((const char *)data, size, &tok, &expires, err, sizeof err) == 0) {
		for (const char *p = tok; *p; p++)
			if (*p < 0x21 || *p > 0x7e)
				abort();	/* it goes into a header */
		check_lifetime(expires, tok);
		free(tok);
	}
	/* the input itself as an access token whose exp is read */
	check_lifetime(-1, body);
	check_lifetime(300, body);
	check_lifetime(0, body);
	free(body);
	return 0;
}
