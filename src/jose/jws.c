/* SPDX-License-Identifier: BSD-2-Clause */
/* jws: the compact serialization signed with libcrypto (jws.h). */
#define _POSIX_C_SOURCE 200809L
#include "jose/jws.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>

#include "jose/b64url.h"

#define ES256_HALF	32	/* bytes of R and of S in a JWS ES256 signature */

/* Exactly one of pk (ES256, RS256) and secret (HS256) is set. */
struct jws_key {
	enum jwa_alg alg;
	EVP_PKEY *pk;
	unsigned char *secret;
	size_t secret_len;
};

/* ---- keys ---- */

int
jws_pkey_fits(const EVP_PKEY *pk, enum jwa_alg alg)
{
	char group[64];

	if (alg == JWA_RS256)
		return EVP_PKEY_get_base_id(pk) == EVP_PKEY_RSA && EVP_PKEY_get_bits(pk) >= 2048;
	if (alg == JWA_ES256)
		return EVP_PKEY_get_base_id(pk) == EVP_PKEY_EC &&
		    EVP_PKEY_get_group_name(pk, group, sizeof group, NULL) == 1 &&
		    strcmp(group, "prime256v1") == 0;
	return 0;
}

/* An encrypted private key fails instead of prompting on a terminal. */
static int
no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return -1;
}

EVP_PKEY *
jws_pem_read(const unsigned char *pem, size_t len, int private)
{
	BIO *bio;
	EVP_PKEY *pk;

	if (pem == NULL || len == 0 || len > INT_MAX)
		return NULL;
	if ((bio = BIO_new_mem_buf(pem, (int)len)) == NULL)
		return NULL;
	pk = private ? PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL) :
	    PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
	BIO_free(bio);
	/* Leave nothing on the thread's error queue for other modules to find. */
	ERR_clear_error();
	return pk;
}

const char *
jws_hs256_problem(const unsigned char *key, size_t key_len)
{
	static const char pem[] = "-----BEGIN";

	if (key == NULL || key_len == 0)
		return "the HS256 secret is empty";
	if (key_len < JWS_HS256_LEN)
		return "the HS256 secret is shorter than 32 bytes (RFC 7518 section 3.2)";
	for (size_t i = 0; i + sizeof pem - 1 <= key_len; i++)
		if (memcmp(key + i, pem, sizeof pem - 1) == 0)
			return "the HS256 secret is a PEM document: a public key is no secret";
	return NULL;
}

int
jws_hs256(const unsigned char *key, size_t key_len, const unsigned char *in, size_t len,
	  unsigned char md[JWS_HS256_LEN])
{
	unsigned md_len = 0;

	if (key_len > INT_MAX || jws_hs256_problem(key, key_len) != NULL)
		return -1;
	if (HMAC(EVP_sha256(), key, (int)key_len, in, len, md, &md_len) == NULL ||
	    md_len != JWS_HS256_LEN) {
		ERR_clear_error();
		return -1;
	}
	return 0;
}

struct jws_key *
jws_key_new(enum jwa_alg alg, const unsigned char *key, size_t key_len, char *err,
	    size_t errlen)
{
	struct jws_key *k;
	const char *why;

	if (alg != JWA_ES256 && alg != JWA_RS256 && alg != JWA_HS256) {
		snprintf(err, errlen, "the algorithm is not ES256, RS256 or HS256");
		return NULL;
	}
	if (key == NULL || key_len == 0 || key_len > INT_MAX) {
		snprintf(err, errlen, "the key is %s", key_len > INT_MAX ? "too large" : "empty");
		return NULL;
	}
	if ((k = calloc(1, sizeof *k)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	k->alg = alg;
	if (alg == JWA_HS256) {
		if ((why = jws_hs256_problem(key, key_len)) != NULL)
			snprintf(err, errlen, "%s", why);
		else if ((k->secret = malloc(key_len)) == NULL)
			snprintf(err, errlen, "out of memory");
		else {
			memcpy(k->secret, key, key_len);
			k->secret_len = key_len;
			return k;
		}
		free(k);
		return NULL;
	}
	if ((k->pk = jws_pem_read(key, key_len, 1)) != NULL && jws_pkey_fits(k->pk, alg))
		return k;
	if (k->pk == NULL)
		snprintf(err, errlen, "not an unencrypted PEM private key");
	else
		snprintf(err, errlen, "not a usable %s key: want %s", jwa_name(alg),
		    alg == JWA_ES256 ? "an EC P-256 private key" :
		    "an RSA private key of at least 2048 bits");
	jws_key_free(k);
	return NULL;
}

void
jws_key_free(struct jws_key *k)
{
	if (k == NULL)
		return;
	EVP_PKEY_free(k->pk);
	if (k->secret != NULL)
		OPENSSL_clear_free(k->secret, k->secret_len);
	free(k);
}

enum jwa_alg
jws_key_alg(const struct jws_key *k)
{
	return k->alg;
}

/* ---- the public key as a JWK ---- */

/* A big number as base64url of exactly `len` bytes (RFC 7518 §6.2.1.2: the
 * coordinates keep their leading zeros). */
static json_t *
bn_b64(const BIGNUM *bn, int len)
{
	unsigned char buf[66];
	char *s;
	json_t *v;

	if (bn == NULL || len > (int)sizeof buf || BN_bn2binpad(bn, buf, len) != len ||
	    (s = b64url_encode(buf, (size_t)len)) == NULL)
		return NULL;
	v = json_string(s);
	free(s);
	return v;
}

json_t *
jws_key_public_jwk(const struct jws_key *k)
{
	BIGNUM *x = NULL, *y = NULL;
	json_t *jwk = NULL, *jx = NULL, *jy = NULL;

	if (k == NULL || k->alg != JWA_ES256 || k->pk == NULL)
		return NULL;
	if (EVP_PKEY_get_bn_param(k->pk, OSSL_PKEY_PARAM_EC_PUB_X, &x) == 1 &&
	    EVP_PKEY_get_bn_param(k->pk, OSSL_PKEY_PARAM_EC_PUB_Y, &y) == 1 &&
	    (jx = bn_b64(x, ES256_HALF)) != NULL && (jy = bn_b64(y, ES256_HALF)) != NULL) {
		/* "o" steals both, also when the pack fails */
		jwk = json_pack("{s:s, s:s, s:o, s:o}", "kty", "EC", "crv", "P-256", "x", jx, "y", jy);
		jx = jy = NULL;
	}
	json_decref(jx);
	json_decref(jy);
	BN_free(x);
	BN_free(y);
	ERR_clear_error();
	return jwk;
}

char *
jws_jwk_thumbprint(const json_t *jwk)
{
	static const char *const ec[] = {"crv", "kty", "x", "y", NULL},
	    *const rsa[] = {"e", "kty", "n", NULL}, *const oct[] = {"k", "kty", NULL};
	const char *kty = json_string_value(json_object_get(jwk, "kty"));
	const char *const *names = kty == NULL ? NULL : strcmp(kty, "EC") == 0 ? ec :
	    strcmp(kty, "RSA") == 0 ? rsa : strcmp(kty, "oct") == 0 ? oct : NULL;
	json_t *req = names ? json_object() : NULL;
	unsigned char md[32];
	unsigned md_len = 0;
	char *text = NULL, *out = NULL;

	for (size_t i = 0; req != NULL && names[i] != NULL; i++) {
		json_t *v = json_object_get(jwk, names[i]);
		if (!json_is_string(v) || json_object_set(req, names[i], v) != 0) {
			json_decref(req);
			req = NULL;
		}
	}
	/* RFC 7638 §3: the required members only, in lexicographic order, no
	 * white space -- what JSON_COMPACT | JSON_SORT_KEYS writes */
	if (req != NULL && (text = json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS)) != NULL &&
	    EVP_Digest(text, strlen(text), md, &md_len, EVP_sha256(), NULL) == 1 &&
	    md_len == sizeof md)
		out = b64url_encode(md, sizeof md);
	free(text);
	json_decref(req);
	return out;
}

/* ---- ECDSA: JWS carries R || S (RFC 7518 §3.4), OpenSSL speaks DER ---- */

int
jws_es256_to_der(const unsigned char *sig, size_t sig_len, unsigned char **der, int *der_len)
{
	ECDSA_SIG *es;
	BIGNUM *r, *s;

	*der = NULL;
	if (sig_len != 2 * ES256_HALF)
		return -1;
	es = ECDSA_SIG_new();
	r = BN_bin2bn(sig, ES256_HALF, NULL);
	s = BN_bin2bn(sig + ES256_HALF, ES256_HALF, NULL);
	if (es == NULL || r == NULL || s == NULL || ECDSA_SIG_set0(es, r, s) != 1) {
		BN_free(r);
		BN_free(s);
		ECDSA_SIG_free(es);
		return -1;
	}
	*der_len = i2d_ECDSA_SIG(es, der);
	ECDSA_SIG_free(es);
	return *der_len > 0 ? 0 : -1;
}

/* R || S into raw (64 bytes) from OpenSSL's DER. */
static int
es256_from_der(const unsigned char *der, size_t der_len, unsigned char raw[2 * ES256_HALF])
{
	const unsigned char *p = der;
	ECDSA_SIG *es;
	const BIGNUM *r, *s;
	int ok;

	if (der_len > LONG_MAX || (es = d2i_ECDSA_SIG(NULL, &p, (long)der_len)) == NULL)
		return -1;
	ECDSA_SIG_get0(es, &r, &s);
	ok = BN_bn2binpad(r, raw, ES256_HALF) == ES256_HALF &&
	    BN_bn2binpad(s, raw + ES256_HALF, ES256_HALF) == ES256_HALF;
	ECDSA_SIG_free(es);
	return ok ? 0 : -1;
}

/* ---- signing ---- */

/* The signature over `input` as JWS carries it: a new buffer (caller
 * frees) of *sig_len bytes, or NULL. */
static unsigned char *
sign_bytes(const struct jws_key *k, const char *input, size_t *sig_len)
{
	size_t len = strlen(input), der_len = 0;
	unsigned char *der = NULL, *sig = NULL;
	EVP_MD_CTX *ctx;
	int ok;

	if (k->alg == JWA_HS256) {
		if ((sig = malloc(JWS_HS256_LEN)) == NULL ||
		    jws_hs256(k->secret, k->secret_len, (const unsigned char *)input, len, sig) != 0) {
			free(sig);
			return NULL;
		}
		*sig_len = JWS_HS256_LEN;
		return sig;
	}
	ctx = EVP_MD_CTX_new();
	ok = ctx != NULL && EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, k->pk) == 1 &&
	    EVP_DigestSign(ctx, NULL, &der_len, (const unsigned char *)input, len) == 1 &&
	    (der = malloc(der_len)) != NULL &&
	    EVP_DigestSign(ctx, der, &der_len, (const unsigned char *)input, len) == 1;
	EVP_MD_CTX_free(ctx);
	ERR_clear_error();
	if (ok && k->alg == JWA_RS256) {
		*sig_len = der_len;
		return der;
	}
	if (ok && (sig = malloc(2 * ES256_HALF)) != NULL &&
	    es256_from_der(der, der_len, sig) == 0)
		*sig_len = 2 * ES256_HALF;
	else {
		free(sig);
		sig = NULL;
	}
	free(der);
	return sig;
}

/* The protected header: "alg" first, then the caller's members. */
static json_t *
full_header(const struct jws_key *k, const json_t *header)
{
	const char *alg = jwa_name(k->alg);
	json_t *h = json_pack("{s:s}", "alg", alg);
	const json_t *theirs = header != NULL ? json_object_get(header, "alg") : NULL;

	if (h == NULL)
		return NULL;
	if (header != NULL && (!json_is_object(header) ||
	    (theirs != NULL && (!json_is_string(theirs) ||
	    strcmp(json_string_value(theirs), alg) != 0)) ||
	    json_object_update(h, (json_t *)header) != 0)) {
		json_decref(h);
		return NULL;
	}
	return h;
}

/* a.b as a new string, or NULL. */
static char *
join_dot(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *s = malloc(n);

	if (s != NULL)
		snprintf(s, n, "%s.%s", a, b);
	return s;
}

/* Frees a string that may be (part of) a credential. */
static void
wipe_free(char *s)
{
	if (s != NULL)
		OPENSSL_clear_free(s, strlen(s));
}

char *
jws_sign(const struct jws_key *k, const json_t *header, const json_t *payload)
{
	json_t *h = NULL;
	char *head = NULL, *body = NULL, *head64 = NULL, *body64 = NULL, *sig64 = NULL;
	char *input = NULL, *out = NULL;
	unsigned char *sig = NULL;
	size_t sig_len = 0;

	if (k == NULL || payload == NULL || (h = full_header(k, header)) == NULL)
		return NULL;
	if ((head = json_dumps(h, JSON_COMPACT)) != NULL &&
	    (body = json_dumps(payload, JSON_COMPACT | JSON_ENCODE_ANY)) != NULL &&
	    (head64 = b64url_encode((unsigned char *)head, strlen(head))) != NULL &&
	    (body64 = b64url_encode((unsigned char *)body, strlen(body))) != NULL &&
	    (input = join_dot(head64, body64)) != NULL &&
	    (sig = sign_bytes(k, input, &sig_len)) != NULL &&
	    (sig64 = b64url_encode(sig, sig_len)) != NULL)
		out = join_dot(input, sig64);
	json_decref(h);
	free(head);
	/* The payload may carry a secret claim, the signature and the whole
	 * are a credential until it expires: no copy is left behind. */
	wipe_free(body);
	free(head64);
	wipe_free(body64);
	wipe_free(input);
	if (sig != NULL)
		OPENSSL_clear_free(sig, sig_len);
	wipe_free(sig64);
	return out;
}

/* ---- taking one apart ---- */

void
jws_parts_clear(struct jws_parts *p)
{
	free(p->header);
	free(p->payload);
	free(p->sig);
	memset(p, 0, sizeof *p);
}

int
jws_segments(const char *compact, struct jws_segments *s)
{
	const char *dot1, *dot2;

	if (compact == NULL || (dot1 = strchr(compact, '.')) == NULL ||
	    (dot2 = strchr(dot1 + 1, '.')) == NULL || strchr(dot2 + 1, '.') != NULL)
		return -1;
	s->at[0] = compact;
	s->len[0] = (size_t)(dot1 - compact);
	s->at[1] = dot1 + 1;
	s->len[1] = (size_t)(dot2 - dot1 - 1);
	s->at[2] = dot2 + 1;
	s->len[2] = strlen(dot2 + 1);
	return 0;
}

int
jws_split(const char *raw, struct jws_parts *p)
{
	struct jws_segments s;

	memset(p, 0, sizeof *p);
	if (jws_segments(raw, &s) < 0)
		return -1;
	p->input_len = s.len[0] + 1 + s.len[1];
	if (b64url_decode(s.at[0], s.len[0], &p->header, &p->header_len) != 0 ||
	    b64url_decode(s.at[1], s.len[1], &p->payload, &p->payload_len) != 0 ||
	    b64url_decode(s.at[2], s.len[2], &p->sig, &p->sig_len) != 0) {
		jws_parts_clear(p);
		return -1;
	}
	return 0;
}

/* ---- verification keys ---- */

void
jws_vkeys_free(struct jws_vkey *keys, size_t n)
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
vkey_secret(struct jws_vkey *v, const unsigned char *key, size_t key_len, char *err,
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
vkey_plain(const unsigned char *text, size_t len, enum jwa_alg alg, struct jws_vkey *v,
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
jwk_ec(const json_t *jwk, const struct jwk_at *at, struct jws_vkey *v, char *err, size_t errlen)
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
jwk_rsa(const json_t *jwk, const struct jwk_at *at, struct jws_vkey *v, char *err,
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
jwk_oct(const json_t *jwk, const struct jwk_at *at, struct jws_vkey *v, char *err,
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

/* A kid that may be printed and compared: 1 to JWS_KID_MAX bytes, no
 * control character (it goes into messages and log lines). */
static int
kid_ok(const char *kid, size_t len)
{
	if (len == 0 || len > JWS_KID_MAX || strlen(kid) != len)
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
jwk_read(const json_t *jwk, enum jwa_alg alg, struct jwk_at *at, struct jws_vkey *v,
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
		    "control characters", JWS_KID_MAX);
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
kids_unique(const struct jws_vkey *keys, size_t n, char *err, size_t errlen)
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
jwks_read(const unsigned char *text, size_t len, enum jwa_alg alg, struct jws_vkey **out,
	  char *err, size_t errlen)
{
	json_error_t je;
	json_t *doc = json_loadb((const char *)text, len, JSON_REJECT_DUPLICATES, &je);
	json_t *keys = json_object_get(doc, "keys");
	struct jws_vkey *v = NULL;
	size_t n = json_array_size(keys);
	int rc = -1;

	if (doc == NULL) {
		syntax_error(&je, err, errlen);
		return -1;
	}
	if (!json_is_array(keys) || n == 0)
		snprintf(err, errlen, "not a JWKS: no \"keys\" array with a key in it (a single "
		    "JWK goes inside {\"keys\": [...]})");
	else if (n > JWS_KEYS_MAX)
		snprintf(err, errlen, "the JWKS holds %zu keys, more than %d", n, JWS_KEYS_MAX);
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
		jws_vkeys_free(v, n);
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
jws_vkeys_read(const unsigned char *text, size_t len, enum jwa_alg alg, struct jws_vkey **out,
	       char *err, size_t errlen)
{
	struct jws_vkey *v;

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
		return jwks_read(text, len, alg, out, err, errlen);
	if ((v = calloc(1, sizeof *v)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (vkey_plain(text, len, alg, v, err, errlen) != 0) {
		jws_vkeys_free(v, 1);
		ERR_clear_error();
		return -1;
	}
	*out = v;
	return 1;
}
