/* SPDX-License-Identifier: BSD-2-Clause */
/* jws: the compact serialization signed with libcrypto (jws.h). */
#define _POSIX_C_SOURCE 200809L
#include "jose/jws.h"

#include <limits.h>
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
