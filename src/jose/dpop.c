/* SPDX-License-Identifier: BSD-2-Clause */
/* dpop: RFC 9449 proofs signed with one key parsed once (dpop.h). */
#define _DEFAULT_SOURCE
#include "jose/dpop.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "jose/b64url.h"
#include "jose/jws.h"
#include "base/rnd.h"
#include "base/wwwauth.h"

#define JTI_BYTES	16
#define ORIGIN_MAX	300
#define HTU_MAX		2048

struct nonce {
	char origin[ORIGIN_MAX];
	char *value;		/* NULL: a free slot */
	uint64_t used;		/* for replacing the least recent */
};

struct dpop {
	struct jws_key *key;
	json_t *header;		/* {"typ": "dpop+jwt", "jwk": {...}}: built once */
	char *jkt;
	struct nonce nonces[DPOP_NONCES_MAX];
	uint64_t tick;
};

struct dpop *
dpop_new(const unsigned char *pem, size_t len, char *err, size_t errlen)
{
	struct dpop *d = calloc(1, sizeof *d);
	char why[160];
	json_t *jwk;

	if (d == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if ((d->key = jws_key_new(JWA_ES256, pem, len, why, sizeof why)) == NULL) {
		snprintf(err, errlen, "dpop_key_file: %s", why);
		free(d);
		return NULL;
	}
	jwk = jws_key_public_jwk(d->key);
	d->jkt = jwk ? jws_jwk_thumbprint(jwk) : NULL;
	d->header = jwk ? json_pack("{s:s, s:o}", "typ", "dpop+jwt", "jwk", jwk) : NULL;
	if (d->jkt == NULL || d->header == NULL) {
		snprintf(err, errlen, "dpop_key_file: cannot export the public key");
		dpop_free(d);
		return NULL;
	}
	return d;
}

void
dpop_free(struct dpop *d)
{
	if (d == NULL)
		return;
	for (size_t i = 0; i < DPOP_NONCES_MAX; i++)
		free(d->nonces[i].value);
	json_decref(d->header);
	free(d->jkt);
	jws_key_free(d->key);
	free(d);
}

const char *
dpop_jkt(const struct dpop *d)
{
	return d->jkt;
}

/* ---- URLs ---- */

/* The end of scheme://authority in url, or NULL for no http(s) URL. */
static const char *
authority_end(const char *url, size_t *scheme_len)
{
	const char *p;

	if (strncasecmp(url, "https://", 8) == 0)
		*scheme_len = 5;
	else if (strncasecmp(url, "http://", 7) == 0)
		*scheme_len = 4;
	else
		return NULL;
	p = url + *scheme_len + 3;
	if (*p == '\0' || *p == '/' || *p == '?' || *p == '#')
		return NULL;
	return p + strcspn(p, "/?#");
}

/* Where the host starts: after "scheme://" and any userinfo ("user:pw@"),
 * which is no part of an origin or an htu (RFC 9449 §4.2 compares scheme,
 * host, port and path; a password must never reach a proof). */
static const char *
host_start(const char *url, size_t scheme_len, const char *end)
{
	const char *p = url + scheme_len + 3, *at = NULL;

	for (const char *q = p; q < end; q++)
		if (*q == '@')
			at = q;
	return at != NULL ? at + 1 : p;
}

/* scheme "://" host[:port] then `rest` bytes from end, into out. */
static int
without_userinfo(const char *url, size_t sl, const char *end, size_t rest, char *out, size_t n)
{
	const char *host = host_start(url, sl, end);
	size_t head = sl + 3, len = head + (size_t)(end - host) + rest;

	if (host == end || len + 1 > n)
		return -1;
	memcpy(out, url, head);
	memcpy(out + head, host, (size_t)(end - host) + rest);
	out[len] = '\0';
	return 0;
}

int
dpop_origin(const char *url, char *out, size_t n)
{
	size_t sl;
	const char *end = url ? authority_end(url, &sl) : NULL;

	if (end == NULL || without_userinfo(url, sl, end, 0, out, n) != 0)
		return -1;
	for (char *c = out; *c != '\0'; c++)
		*c = (char)tolower((unsigned char)*c);
	return 0;
}

int
dpop_htu(const char *url, char *out, size_t n)
{
	size_t sl;
	const char *end = url ? authority_end(url, &sl) : NULL;

	if (end == NULL)
		return -1;
	return without_userinfo(url, sl, end, strcspn(end, "?#"), out, n);
}

char *
dpop_ath(const char *token)
{
	unsigned char md[SHA256_DIGEST_LENGTH];

	if (token == NULL || SHA256((const unsigned char *)token, strlen(token), md) == NULL)
		return NULL;
	return b64url_encode(md, sizeof md);
}

/* ---- nonces ---- */

static struct nonce *
nonce_of(const struct dpop *d, const char *origin)
{
	for (size_t i = 0; i < DPOP_NONCES_MAX; i++)
		if (d->nonces[i].value != NULL && strcmp(d->nonces[i].origin, origin) == 0)
			return (struct nonce *)&d->nonces[i];
	return NULL;
}

int
dpop_nonce_keep(struct dpop *d, const char *url, const char *nonce)
{
	char origin[ORIGIN_MAX];
	struct nonce *slot;
	size_t n = nonce ? strlen(nonce) : 0;

	if (n == 0 || n > DPOP_NONCE_MAX || dpop_origin(url, origin, sizeof origin) != 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (nonce[i] < 0x21 || nonce[i] > 0x7e)
			return -1;	/* RFC 9449 §8.1: NQCHAR, and it goes into JSON */
	if ((slot = nonce_of(d, origin)) == NULL) {
		slot = &d->nonces[0];
		for (size_t i = 0; i < DPOP_NONCES_MAX; i++) {
			if (d->nonces[i].value == NULL) {
				slot = &d->nonces[i];
				break;
			}
			if (d->nonces[i].used < slot->used)
				slot = &d->nonces[i];
		}
	}
	char *v = strdup(nonce);
	if (v == NULL)
		return -1;
	free(slot->value);
	slot->value = v;
	memcpy(slot->origin, origin, strlen(origin) + 1);
	slot->used = ++d->tick;
	return 0;
}

/* ---- the proof ---- */

char *
dpop_proof(const struct dpop *d, const char *method, const char *url, const char *token,
	   int64_t now_ms)
{
	char htu[HTU_MAX], origin[ORIGIN_MAX], jti[2 * JTI_BYTES + 1];
	const struct nonce *nc;
	char *ath = NULL, *out = NULL;
	json_t *claims;

	if (d == NULL || method == NULL || dpop_htu(url, htu, sizeof htu) != 0 ||
	    dpop_origin(url, origin, sizeof origin) != 0 ||
	    rnd_hex(jti, sizeof jti, JTI_BYTES) != 0)
		return NULL;
	if (token != NULL && (ath = dpop_ath(token)) == NULL)
		return NULL;
	nc = nonce_of(d, origin);
	claims = json_pack("{s:s, s:s, s:s, s:I}", "jti", jti, "htm", method, "htu", htu,
	    "iat", (json_int_t)(now_ms / 1000));
	if (claims != NULL &&
	    (nc == NULL || json_object_set_new(claims, "nonce", json_string(nc->value)) == 0) &&
	    (ath == NULL || json_object_set_new(claims, "ath", json_string(ath)) == 0))
		out = jws_sign(d->key, d->header, claims);
	json_decref(claims);
	free(ath);
	return out;
}

void
dpop_proof_free(char *proof)
{
	if (proof != NULL)
		OPENSSL_clear_free(proof, strlen(proof));
}

/* ---- WWW-Authenticate: DPoP error="..." ---- */

int
dpop_challenge_error(const char *value, char *out, size_t n)
{
	return wwwauth_param(value, "DPoP", "error", out, n);
}
