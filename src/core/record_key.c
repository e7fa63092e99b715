/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * record_key: the record module's key sets and signature checks (record.h,
 * record_key.h), split from record.c along the seam between the
 * cryptography (OpenSSL: keys, contexts, verifying) and the record's
 * rules (§3.1).
 */
#define _POSIX_C_SOURCE 200809L
#include "core/record_key.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/sha.h>

#include "jose/jwks.h"

/* One key of a set: exactly one of pk (ES256, RS256) and secret (HS256)
 * is set. */
struct member {
	char *kid;		/* NULL: none (a PEM file, a JWK without one) */
	EVP_PKEY *pk;
	unsigned char *secret;
	size_t secret_len;
	/* HS256: an HMAC-SHA256 context keyed once, re-initialised per record
	 * (HMAC() fetched the algorithm and keyed a new context every time:
	 * 30,000 instructions a record). NULL: the one-shot HMAC is used. */
	EVP_MAC_CTX *mac;
	/* ES256, RS256: a verify context for pk, kept for the next record
	 * (EVP_DigestVerifyInit made one and fetched its algorithms per
	 * record: about 25,000 instructions). For one thread at a time: the
	 * others bring their own (struct record_verifier). */
	EVP_PKEY_CTX *ctx;
};

/* The keys of [records] verify_key_file, all for one algorithm; a record's
 * kid picks one (pick_key). */
struct record_key {
	enum jwa_alg alg;
	size_t n;		/* at least 1 */
	struct member *keys;
	/* Owners (record_key_ref): a verifying thread keeps the key alive
	 * across a reload that lets go of the loop's own. */
	atomic_int refs;
};

/* Another thread's verify contexts, one per key of the set it holds an
 * owner of (made when first used). */
struct record_verifier {
	struct record_key *key;
	EVP_PKEY_CTX **ctx;	/* key->n of them */
};

/* An HMAC-SHA256 context holding `key`, or NULL. */
static EVP_MAC_CTX *
hmac_keyed(const unsigned char *key, size_t key_len)
{
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	EVP_MAC_CTX *ctx = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
		OSSL_PARAM_construct_end(),
	};

	EVP_MAC_free(mac);	/* the context keeps its own reference */
	if (ctx != NULL && EVP_MAC_init(ctx, key, key_len, params) != 1) {
		EVP_MAC_CTX_free(ctx);
		ctx = NULL;
	}
	ERR_clear_error();
	return ctx;
}

/* A context that verifies a SHA-256 digest with pk; NULL when out of
 * memory. Caller frees (EVP_PKEY_CTX_free). */
static EVP_PKEY_CTX *
verify_ctx_new(EVP_PKEY *pk)
{
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, pk, NULL);

	if (ctx == NULL || EVP_PKEY_verify_init(ctx) != 1 ||
	    EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) != 1) {
		EVP_PKEY_CTX_free(ctx);
		ctx = NULL;
	}
	ERR_clear_error();
	return ctx;
}

static void
keys_free(struct record_key *k)
{
	for (size_t i = 0; i < k->n; i++) {
		struct member *m = &k->keys[i];
		EVP_PKEY_CTX_free(m->ctx);
		EVP_PKEY_free(m->pk);
		EVP_MAC_CTX_free(m->mac);	/* cleanses the key it holds */
		if (m->secret != NULL)
			OPENSSL_clear_free(m->secret, m->secret_len);
		free(m->kid);
	}
	free(k->keys);
	free(k);
}

/* jwks_read parses (so warrantctl, -t and the daemon accept the same
 * files); each key gets the context it verifies with here. */
struct record_key *
record_key_new(enum jwa_alg alg, const unsigned char *key, size_t key_len, char *err,
	       size_t errlen)
{
	struct jwks_key *v;
	struct record_key *k;
	int n = jwks_read(key, key_len, alg, &v, err, errlen);

	if (n <= 0)
		return NULL;
	if ((k = calloc(1, sizeof *k)) == NULL ||
	    (k->keys = calloc((size_t)n, sizeof *k->keys)) == NULL) {
		free(k);
		jwks_free(v, (size_t)n);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	k->alg = alg;
	k->n = (size_t)n;
	atomic_init(&k->refs, 1);
	for (size_t i = 0; i < k->n; i++) {	/* the keys move from v to k */
		struct member *m = &k->keys[i];
		m->kid = v[i].kid;
		m->pk = v[i].pk;
		m->secret = v[i].secret;
		m->secret_len = v[i].secret_len;
		memset(&v[i], 0, sizeof v[i]);
	}
	jwks_free(v, k->n);
	for (size_t i = 0; i < k->n; i++) {
		struct member *m = &k->keys[i];
		if (m->secret != NULL)
			m->mac = hmac_keyed(m->secret, m->secret_len);
		else if ((m->ctx = verify_ctx_new(m->pk)) == NULL) {
			snprintf(err, errlen, "out of memory");
			keys_free(k);
			return NULL;
		}
	}
	return k;
}

size_t
record_key_count(const struct record_key *k)
{
	return k->n;
}

const char *
record_key_kid(const struct record_key *k, size_t i)
{
	return i < k->n ? k->keys[i].kid : NULL;
}

const char *
record_key_issuer_problem(const struct record_key *k, const char *issuer)
{
	if (k == NULL || k->n < 2 || (issuer != NULL && *issuer != '\0'))
		return NULL;
	return "[records] issuer is required when verify_key_file holds more than one key: "
	    "the keys may be several deciders', and only iss tells their records apart";
}

struct record_key *
record_key_ref(struct record_key *k)
{
	atomic_fetch_add(&k->refs, 1);
	return k;
}

void
record_key_free(struct record_key *k)
{
	if (k == NULL || atomic_fetch_sub(&k->refs, 1) > 1)
		return;
	keys_free(k);
}

struct record_verifier *
record_verifier_new(void)
{
	return calloc(1, sizeof(struct record_verifier));
}

/* Drops v's contexts and its owner of a key set. */
static void
verifier_clear(struct record_verifier *v)
{
	if (v->key != NULL)
		for (size_t i = 0; i < v->key->n; i++)
			EVP_PKEY_CTX_free(v->ctx[i]);
	free(v->ctx);
	record_key_free(v->key);
	v->ctx = NULL;
	v->key = NULL;
}

void
record_verifier_free(struct record_verifier *v)
{
	if (v == NULL)
		return;
	verifier_clear(v);
	free(v);
}

/* The signature over SHA-256(input); a context verifies any number of them. */
static int
digest_verify(EVP_PKEY_CTX *ctx, const char *input, size_t len, const unsigned char *sig,
	      size_t sig_len)
{
	unsigned char md[SHA256_DIGEST_LENGTH];

	SHA256((const unsigned char *)input, len, md);
	return EVP_PKEY_verify(ctx, sig, sig_len, md, sizeof md) == 1 ? 0 : -1;
}


static int
verify_hs256(const unsigned char *secret, size_t secret_len, const char *raw,
	     const struct jws_parts *j)
{
	unsigned char md[JWS_HS256_LEN];
	int ok;

	if (jws_hs256(secret, secret_len, (const unsigned char *)raw, j->input_len, md) != 0)
		return RECORD_KEY_UNUSABLE;
	ok = j->sig_len == sizeof md && CRYPTO_memcmp(md, j->sig, sizeof md) == 0;
	OPENSSL_cleanse(md, sizeof md);
	return ok ? RECORD_KEY_VERIFIED : RECORD_KEY_BAD;
}

/* HS256 with the context record_key_new keyed: EVP_MAC_init without a key
 * starts again with the same one. */
static int
verify_hmac(EVP_MAC_CTX *mac, const char *raw, const struct jws_parts *j)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	size_t md_len = 0;

	if (EVP_MAC_init(mac, NULL, 0, NULL) != 1 ||
	    EVP_MAC_update(mac, (const unsigned char *)raw, j->input_len) != 1 ||
	    EVP_MAC_final(mac, md, &md_len, sizeof md) != 1) {
		ERR_clear_error();
		return RECORD_KEY_UNUSABLE;
	}
	int ok = j->sig_len == md_len && CRYPTO_memcmp(md, j->sig, md_len) == 0;
	OPENSSL_cleanse(md, sizeof md);
	return ok ? RECORD_KEY_VERIFIED : RECORD_KEY_BAD;
}

/* ctx verifies with a key that fits `alg` (ES256 or RS256). */
static int
verify_pkey(EVP_PKEY_CTX *ctx, enum jwa_alg alg, const char *raw, const struct jws_parts *j)
{
	unsigned char *der = NULL;
	int der_len = 0, rc = RECORD_KEY_BAD;

	if (ctx == NULL)
		rc = RECORD_KEY_UNUSABLE;
	else if (alg == JWA_RS256)
		rc = digest_verify(ctx, raw, j->input_len, j->sig, j->sig_len);
	else if (jws_es256_to_der(j->sig, j->sig_len, &der, &der_len) == 0)
		rc = digest_verify(ctx, raw, j->input_len, der, (size_t)der_len);
	OPENSSL_free(der);
	ERR_clear_error();
	return rc == 0 ? RECORD_KEY_VERIFIED : rc == RECORD_KEY_UNUSABLE ? RECORD_KEY_UNUSABLE :
	    RECORD_KEY_BAD;
}

/* Key i of k, with v's context for it when v is set (made on first use:
 * v holds an owner of its set, so no other set can be at k). */
static int
verify_member(const struct record_key *k, size_t i, struct record_verifier *v,
	      const char *raw, const struct jws_parts *j)
{
	const struct member *m = &k->keys[i];

	if (k->alg == JWA_HS256 && m->mac != NULL)
		return verify_hmac(m->mac, raw, j);
	if (k->alg == JWA_HS256)
		return verify_hs256(m->secret, m->secret_len, raw, j);
	if (v == NULL)
		return verify_pkey(m->ctx, k->alg, raw, j);
	if (v->key != k) {
		verifier_clear(v);
		if ((v->ctx = calloc(k->n, sizeof(EVP_PKEY_CTX *))) == NULL)
			return RECORD_KEY_UNUSABLE;
		v->key = record_key_ref((struct record_key *)k);
	}
	if (v->ctx[i] == NULL)
		v->ctx[i] = verify_ctx_new(m->pk);
	return verify_pkey(v->ctx[i], k->alg, raw, j);
}

/* The header's kid (JREAD_NONE when it has none) as a NUL-terminated
 * string in buf: 0, or -1 when it is longer than any kid a set holds. */
static int
header_kid(const struct jread_member *kid, char *buf, size_t bufsize)
{
	if (kid->len > bufsize)	/* its quotes count: the text is shorter */
		return -1;
	jread_unescape(kid, buf);
	return 0;
}

/*
 * warrantd(7) §3.2: with several keys the record names one by kid; with
 * one, a record without a kid uses it, and so does one that names any kid
 * when the key has none (a PEM file: nothing to tell them apart by, as
 * before key sets). Index of the key, or -1: the record names no key of k.
 */
static long
pick_key(const struct record_key *k, const struct jread_member *kid)
{
	char name[6 * JWKS_KID_MAX + 2];	/* \uXXXX is 6 bytes of text for 1 to 3 */

	if (k->n == 1 && (kid->type == JREAD_NONE || k->keys[0].kid == NULL))
		return 0;
	if (kid->type != JREAD_STRING || header_kid(kid, name, sizeof name) != 0)
		return -1;
	for (size_t i = 0; i < k->n; i++)
		if (k->keys[i].kid != NULL && strcmp(k->keys[i].kid, name) == 0)
			return (long)i;
	return -1;
}

int
record_key_verify(const struct record_key *k, enum jwa_alg alg, struct record_verifier *v,
		  const char *raw, const struct jws_parts *j, const struct jread_member *kid)
{
	long i;

	if (k->alg != alg)
		return RECORD_KEY_UNUSABLE;
	if ((i = pick_key(k, kid)) < 0)
		return kid->type == JREAD_NONE ? RECORD_KEY_NO_KID : RECORD_KEY_UNKNOWN_KID;
	return verify_member(k, (size_t)i, v, raw, j);
}
