/* SPDX-License-Identifier: BSD-2-Clause */
/* jwks: the keys records are verified with, read from [records]
 * verify_key_file: a PEM public key, an HS256 secret or a JWKS (jwks.h). */
#define _POSIX_C_SOURCE 200809L
#include "jose/jwks.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#include "jose/b64url.h"
#include "jose/jws.h"

#define ES256_HALF	32	/* bytes of x and of y in a P-256 JWK */

void
jwks_free(struct jwks_key *keys, size_t n)
{
	if (keys == NULL)
		return;
	for (size_t i = 0; i < n; i++) {
		free(keys[i].kid);
		EVP_PKEY_free(keys[i].pk);
		if (keys[i].secret != NULL)
			OPENSSL_clear_free(keys[i].secret, keys[i].secret_len);
	}
	free(keys);
}

/* A copy of `key` as the one secret of *v: 0, or -1 with `err`. */
static int
vkey_secret(struct jwks_key *v, const unsigned char *key, size_t key_len, char *err,
	    size_t errlen)
{
	const char *why = jws_hs256_problem(key, key_len);

	if (why != NULL) {
		snprintf(err, errlen, "%s", why);
		return -1;
	}
	if ((v->secret = malloc(key_len)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	memcpy(v->secret, key, key_len);
	v->secret_len = key_len;
	return 0;
}

static const char *
want_public(enum jwa_alg alg)
{
	return alg == JWA_ES256 ? "an EC P-256 public key" :
	    "an RSA public key of at least 2048 bits";
}

/* A PEM public key, or the HS256 secret: one key without a kid. */
static int
vkey_plain(const unsigned char *text, size_t len, enum jwa_alg alg, struct jwks_key *v,
	   char *err, size_t errlen)
{
	if (alg == JWA_HS256)
		return vkey_secret(v, text, len, err, errlen);
	if ((v->pk = jws_pem_read(text, len, 0)) == NULL) {
		snprintf(err, errlen, "not a PEM public key (BEGIN PUBLIC KEY)");
		return -1;
	}
	if (!jws_pkey_fits(v->pk, alg)) {
		snprintf(err, errlen, "not a usable %s key: want %s", jwa_name(alg),
		    want_public(alg));
		return -1;
	}
	return 0;
}

/* ---- JWKS (RFC 7517), with the key types of RFC 7518 §6 ---- */

/* Where a JWK's error is said: "keys[1] (kid "2026-12")". */
struct jwk_at {
	size_t i;
	const char *kid;	/* NULL until it is known to be printable */
};

static void jwk_fail(const struct jwk_at *at, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void
jwk_fail(const struct jwk_at *at, char *err, size_t errlen, const char *fmt, ...)
{
	char what[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	if (at->kid != NULL)
		snprintf(err, errlen, "JWKS keys[%zu] (kid \"%.40s\"): %s", at->i, at->kid, what);
	else
		snprintf(err, errlen, "JWKS keys[%zu]: %s", at->i, what);
}

/* Member `name` of the JWK as base64url without padding (RFC 7515 §2):
 * 0 and *out (caller frees, wipes when secret), or -1 with `err`. */
static int
jwk_bytes(const json_t *jwk, const char *name, const struct jwk_at *at, unsigned char **out,
	  size_t *len, char *err, size_t errlen)
{
	const json_t *v = json_object_get(jwk, name);

	*out = NULL;
	if (v == NULL) {
		jwk_fail(at, err, errlen, "\"%s\" missing", name);
		return -1;
	}
	if (!json_is_string(v) || b64url_decode(json_string_value(v), json_string_length(v), out,
	    len) != 0) {
		jwk_fail(at, err, errlen, "\"%s\" is not base64url without padding", name);
		return -1;
	}
	return 0;
}

/* RFC 7518 §6.2.1: the uncompressed point 04 || x || y on P-256. */
static EVP_PKEY *
ec_p256(const unsigned char *x, const unsigned char *y)
{
	unsigned char pt[1 + 2 * ES256_HALF];
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, (char *)"prime256v1", 0),
		OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, pt, sizeof pt),
		OSSL_PARAM_construct_end(),
	};
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
	EVP_PKEY *pk = NULL;

	pt[0] = 0x04;
	memcpy(pt + 1, x, ES256_HALF);
	memcpy(pt + 1 + ES256_HALF, y, ES256_HALF);
	if (ctx == NULL || EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_PUBLIC_KEY, params) != 1)
		pk = NULL;
	EVP_PKEY_CTX_free(ctx);
	return pk;
}

/* RFC 7518 §6.3.1: the modulus and the exponent, big-endian. */
static EVP_PKEY *
rsa_public(const unsigned char *n, size_t n_len, const unsigned char *e, size_t e_len)
{
	BIGNUM *bn = BN_bin2bn(n, (int)n_len, NULL), *be = BN_bin2bn(e, (int)e_len, NULL);
	OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
	OSSL_PARAM *params = NULL;
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
	EVP_PKEY *pk = NULL;

	if (bn == NULL || be == NULL || bld == NULL || ctx == NULL ||
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) != 1 ||
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be) != 1 ||
	    (params = OSSL_PARAM_BLD_to_param(bld)) == NULL ||
	    EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_PUBLIC_KEY, params) != 1)
		pk = NULL;
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	EVP_PKEY_CTX_free(ctx);
	BN_free(bn);
	BN_free(be);
	return pk;
}

/* OpenSSL's own check of a public key (an EC point on the curve, an RSA
 * exponent that is odd and more than 1). */
static int
public_ok(EVP_PKEY *pk)
{
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, pk, NULL);
	int ok = ctx != NULL && EVP_PKEY_public_check(ctx) == 1;

	EVP_PKEY_CTX_free(ctx);
	return ok;
}

/* RFC 7518 §6.3.1.1: "MUST utilize the minimum number of octets". */
static int
minimal_uint(const unsigned char *b, size_t len)
{
	return len > 0 && b[0] != 0;
}

static int
jwk_ec(const json_t *jwk, const struct jwk_at *at, struct jwks_key *v, char *err, size_t errlen)
{
	const char *crv = json_string_value(json_object_get(jwk, "crv"));
	unsigned char *x = NULL, *y = NULL;
	size_t x_len = 0, y_len = 0;
	int rc = -1;

	if (crv == NULL || strcmp(crv, "P-256") != 0)
		jwk_fail(at, err, errlen, "crv is not \"P-256\", which ES256 needs");
	else if (jwk_bytes(jwk, "x", at, &x, &x_len, err, errlen) == 0 &&
	    jwk_bytes(jwk, "y", at, &y, &y_len, err, errlen) == 0) {
		if (x_len != ES256_HALF || y_len != ES256_HALF)
			jwk_fail(at, err, errlen, "x and y must be 32 bytes each (RFC 7518 "
			    "section 6.2.1)");
		else if ((v->pk = ec_p256(x, y)) == NULL || !public_ok(v->pk))
			jwk_fail(at, err, errlen, "x, y is not a point on P-256");
		else
			rc = 0;
	}
	free(x);
	free(y);
	return rc;
}

static int
jwk_rsa(const json_t *jwk, const struct jwk_at *at, struct jwks_key *v, char *err,
	size_t errlen)
{
	unsigned char *n = NULL, *e = NULL;
	size_t n_len = 0, e_len = 0;
	int rc = -1;

	if (jwk_bytes(jwk, "n", at, &n, &n_len, err, errlen) == 0 &&
	    jwk_bytes(jwk, "e", at, &e, &e_len, err, errlen) == 0) {
		if (!minimal_uint(n, n_len) || !minimal_uint(e, e_len) || n_len > 2048 ||
		    e_len > 8)
			jwk_fail(at, err, errlen, "n or e is empty, too long or has a leading "
			    "zero byte (RFC 7518 section 6.3.1)");
		else if ((v->pk = rsa_public(n, n_len, e, e_len)) == NULL)
			jwk_fail(at, err, errlen, "n, e is not an RSA public key");
		else if (!jws_pkey_fits(v->pk, JWA_RS256))
			jwk_fail(at, err, errlen, "the RSA key is shorter than 2048 bits");
		else if (!public_ok(v->pk))
			jwk_fail(at, err, errlen, "n, e is not an RSA public key");
		else
			rc = 0;
	}
	free(n);
	free(e);
	return rc;
}

static int
jwk_oct(const json_t *jwk, const struct jwk_at *at, struct jwks_key *v, char *err,
	size_t errlen)
{
	char why[160];
	unsigned char *k = NULL;
	size_t k_len = 0;
	int rc = -1;

	if (jwk_bytes(jwk, "k", at, &k, &k_len, err, errlen) == 0) {
		if (vkey_secret(v, k, k_len, why, sizeof why) == 0)
			rc = 0;
		else
			jwk_fail(at, err, errlen, "k: %s", why);
	}
	if (k != NULL)
		OPENSSL_clear_free(k, k_len);
	return rc;
}

/* A kid that may be printed and compared: 1 to JWKS_KID_MAX bytes, no
 * control character (it goes into messages and log lines). */
static int
kid_ok(const char *kid, size_t len)
{
	if (len == 0 || len > JWKS_KID_MAX || strlen(kid) != len)
		return 0;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)kid[i] < 0x20 || kid[i] == 0x7f)
			return 0;
	return 1;
}

/* "use" and "key_ops" (RFC 7517 §4.2, §4.3): a key for verifying. */
static int
jwk_purpose(const json_t *jwk, const struct jwk_at *at, char *err, size_t errlen)
{
	const json_t *use = json_object_get(jwk, "use"), *ops = json_object_get(jwk, "key_ops");
	const json_t *op;
	size_t i;

	if (use != NULL && (!json_is_string(use) || strcmp(json_string_value(use), "sig") != 0)) {
		jwk_fail(at, err, errlen, "use is not \"sig\": the key is not for signatures");
		return -1;
	}
	if (ops == NULL)
		return 0;
	if (json_is_array(ops))
		json_array_foreach(ops, i, op)
			if (json_is_string(op) && strcmp(json_string_value(op), "verify") == 0)
				return 0;
	jwk_fail(at, err, errlen, "key_ops does not hold \"verify\"");
	return -1;
}

/* One member of "keys" into *v: 0, or -1 with `err`. */
static int
jwk_read(const json_t *jwk, enum jwa_alg alg, struct jwk_at *at, struct jwks_key *v,
	 char *err, size_t errlen)
{
	static const char *const kty_of[JWA_COUNT] = {
		[JWA_ES256] = "EC", [JWA_RS256] = "RSA", [JWA_HS256] = "oct",
	};
	const json_t *kid = json_object_get(jwk, "kid"), *a = json_object_get(jwk, "alg");
	const char *kty = json_string_value(json_object_get(jwk, "kty"));

	if (!json_is_object(jwk)) {
		jwk_fail(at, err, errlen, "not a JSON object");
		return -1;
	}
	if (kid != NULL && (!json_is_string(kid) ||
	    !kid_ok(json_string_value(kid), json_string_length(kid)))) {
		jwk_fail(at, err, errlen, "kid is not a string of 1 to %d bytes without "
		    "control characters", JWKS_KID_MAX);
		return -1;
	}
	if (kid != NULL) {
		if ((v->kid = strdup(json_string_value(kid))) == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		at->kid = v->kid;
	}
	if (kty == NULL || strcmp(kty, kty_of[alg]) != 0) {
		jwk_fail(at, err, errlen, "kty is not \"%s\", which [records] algorithm %s needs",
		    kty_of[alg], jwa_name(alg));
		return -1;
	}
	if (a != NULL && (!json_is_string(a) || strcmp(json_string_value(a), jwa_name(alg)) != 0)) {
		jwk_fail(at, err, errlen, "alg is not %s, the [records] algorithm", jwa_name(alg));
		return -1;
	}
	if (jwk_purpose(jwk, at, err, errlen) != 0)
		return -1;
	if (alg != JWA_HS256 && json_object_get(jwk, "d") != NULL) {
		jwk_fail(at, err, errlen, "a private key (\"d\"): give the workers the public "
		    "key only");
		return -1;
	}
	return alg == JWA_ES256 ? jwk_ec(jwk, at, v, err, errlen) :
	    alg == JWA_RS256 ? jwk_rsa(jwk, at, v, err, errlen) : jwk_oct(jwk, at, v, err, errlen);
}

/* Every key named, and no name twice: a record's kid picks one key. */
static int
kids_unique(const struct jwks_key *keys, size_t n, char *err, size_t errlen)
{
	for (size_t i = 0; i < n && n > 1; i++) {
		struct jwk_at at = {i, keys[i].kid};
		if (keys[i].kid == NULL) {
			jwk_fail(&at, err, errlen, "no kid: with several keys each needs one, "
			    "for records to name it");
			return -1;
		}
		for (size_t j = 0; j < i; j++)
			if (strcmp(keys[i].kid, keys[j].kid) == 0) {
				jwk_fail(&at, err, errlen, "the kid of keys[%zu] again", j);
				return -1;
			}
	}
	return 0;
}

/* The HS256 secrets' text in jansson's strings is wiped before they are
 * freed (the parser's own token buffer is not ours to reach). */
static void
wipe_secrets(json_t *keys)
{
	const json_t *jwk;
	size_t i;

	json_array_foreach(keys, i, jwk) {
		const json_t *k = json_object_get(jwk, "k");
		if (json_is_string(k))
			OPENSSL_cleanse((char *)json_string_value(k), json_string_length(k));
	}
}

/* jansson's message without its " near '...'": that may quote a secret. */
static void
syntax_error(const json_error_t *je, char *err, size_t errlen)
{
	char text[sizeof je->text];
	char *near;

	snprintf(text, sizeof text, "%s", je->text);
	if ((near = strstr(text, " near ")) != NULL)
		*near = '\0';
	snprintf(err, errlen, "not a JWKS: line %d column %d: %s", je->line, je->column, text);
}

static int
keyset_read(const unsigned char *text, size_t len, enum jwa_alg alg, struct jwks_key **out,
	  char *err, size_t errlen)
{
	json_error_t je;
	json_t *doc = json_loadb((const char *)text, len, JSON_REJECT_DUPLICATES, &je);
	json_t *keys = json_object_get(doc, "keys");
	struct jwks_key *v = NULL;
	size_t n = json_array_size(keys);
	int rc = -1;

	if (doc == NULL) {
		syntax_error(&je, err, errlen);
		return -1;
	}
	if (!json_is_array(keys) || n == 0)
		snprintf(err, errlen, "not a JWKS: no \"keys\" array with a key in it (a single "
		    "JWK goes inside {\"keys\": [...]})");
	else if (n > JWKS_KEYS_MAX)
		snprintf(err, errlen, "the JWKS holds %zu keys, more than %d", n, JWKS_KEYS_MAX);
	else if ((v = calloc(n, sizeof *v)) == NULL)
		snprintf(err, errlen, "out of memory");
	else {
		rc = 0;
		for (size_t i = 0; i < n && rc == 0; i++) {
			struct jwk_at at = {i, NULL};
			rc = jwk_read(json_array_get(keys, i), alg, &at, &v[i], err, errlen);
		}
		if (rc == 0)
			rc = kids_unique(v, n, err, errlen);
	}
	if (alg == JWA_HS256 && json_is_array(keys))
		wipe_secrets(keys);
	json_decref(doc);
	ERR_clear_error();
	if (rc != 0) {
		jwks_free(v, n);
		return -1;
	}
	*out = v;
	return (int)n;
}

static int
looks_like_json(const unsigned char *text, size_t len)
{
	size_t i = 0;

	while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'))
		i++;
	return i < len && text[i] == '{';
}

int
jwks_read(const unsigned char *text, size_t len, enum jwa_alg alg, struct jwks_key **out,
	       char *err, size_t errlen)
{
	struct jwks_key *v;

	*out = NULL;
	if (alg != JWA_ES256 && alg != JWA_RS256 && alg != JWA_HS256) {
		snprintf(err, errlen, "the algorithm is not ES256, RS256 or HS256");
		return -1;
	}
	if (text == NULL || len == 0 || len > INT_MAX) {
		snprintf(err, errlen, "the key is %s", len > INT_MAX ? "too large" : "empty");
		return -1;
	}
	if (looks_like_json(text, len))
		return keyset_read(text, len, alg, out, err, errlen);
	if ((v = calloc(1, sizeof *v)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (vkey_plain(text, len, alg, v, err, errlen) != 0) {
		jwks_free(v, 1);
		ERR_clear_error();
		return -1;
	}
	*out = v;
	return 1;
}
