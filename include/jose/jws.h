/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * jws: the JWS compact serialization (RFC 7515) with OpenSSL's libcrypto,
 * the one signer in warrantd: decision records (record_sign), the
 * private_key_jwt client assertion (oauth), and what comes next. record.c
 * verifies with the same key rules and signature encodings, shared here.
 * Not libjwt: libjwt 1.10 writes typ=JWT whatever the caller asks and
 * refuses to decode any other typ (a record's is decision+jwt). Pure.
 */
#ifndef WARRANTD_JWS_H
#define WARRANTD_JWS_H

#include <stddef.h>

#include <jansson.h>
#include <openssl/types.h>

#include "jose/jwa.h"

/* ---- signing ---- */

/* A signing key: a private key (ES256, RS256) or an HMAC secret (HS256),
 * parsed once. Opaque. Signing with one key from several threads at once is
 * safe: nothing in it changes. */
struct jws_key;

/*
 * For ES256 a PEM P-256 private key, for RS256 a PEM RSA private key of at
 * least 2048 bits (an encrypted one is refused, never prompted for), for
 * HS256 a secret of at least 32 bytes that is no PEM document (copied).
 * `key` is borrowed: the caller wipes its own copy. Returns a new key
 * (caller frees with jws_key_free), or NULL with one line for people in
 * `err` (never the key's bytes).
 */
struct jws_key *jws_key_new(enum jwa_alg alg, const unsigned char *key, size_t key_len,
			    char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* Wipes a secret and frees (OpenSSL clears a private key's numbers). NULL
 * is a no-op. */
void jws_key_free(struct jws_key *key);

/* The algorithm `key` signs with. */
enum jwa_alg jws_key_alg(const struct jws_key *key);

/*
 * The compact serialization of `payload` (any JSON value, usually an
 * object) under the protected header "alg" (from the key) followed by the
 * members of `header` (an object, or NULL for none) in their order; a
 * member "alg" of `header` must agree with the key. Both are written
 * compact (JSON_COMPACT), and an ES256 signature is R || S, 64 bytes
 * (RFC 7518 §3.4), not DER. Borrowed arguments. Returns a new string
 * (caller frees; wipes it when it is a credential), or NULL on any error.
 */
char *jws_sign(const struct jws_key *key, const json_t *header, const json_t *payload)
	__attribute__((warn_unused_result));

/* The public half of an ES256 key as a JWK (RFC 7517, RFC 7518 §6.2.1):
 * {"kty": "EC", "crv": "P-256", "x", "y"}, a new object (caller decrefs),
 * or NULL for another algorithm or on error. For a DPoP proof's header. */
json_t *jws_key_public_jwk(const struct jws_key *key) __attribute__((warn_unused_result));

/* The RFC 7638 thumbprint of a public JWK (EC: crv, kty, x, y; RSA: e, kty,
 * n; oct: k, kty) -- base64url SHA-256 of those members, sorted, compact --
 * as a new string (caller frees), or NULL when a member is missing. */
char *jws_jwk_thumbprint(const json_t *jwk) __attribute__((warn_unused_result));

/* ---- what verifying shares ---- */

/* A compact JWS taken apart: each segment decoded (strictly: b64url.h), and
 * how many bytes at its start are the signing input. */
struct jws_parts {
	unsigned char *header, *payload, *sig;
	size_t header_len, payload_len, sig_len, input_len;
};

/* The three segments of a compact JWS, not decoded: where each starts and
 * how long it is (pointers into the string given). */
struct jws_segments {
	const char *at[3];
	size_t len[3];
};

/* The one compact-form splitter (jws_split, token_lifetime_ms): 0 and `s`
 * filled when `compact` has exactly two dots, else -1 (NULL, an opaque
 * token, two segments or five, a JWE). Decodes nothing. */
int jws_segments(const char *compact, struct jws_segments *s)
	__attribute__((warn_unused_result));

/* Exactly three base64url segments: 0 and `p` filled (caller clears with
 * jws_parts_clear), or -1 with `p` empty. A JWS JSON serialization, plain
 * JSON, two segments or five (JWE) are refused. */
int jws_split(const char *compact, struct jws_parts *p)
	__attribute__((warn_unused_result));

/* Frees what jws_split filled in and zeroes `p`. */
void jws_parts_clear(struct jws_parts *p);

/* The first key of its kind in `pem` (a private key when `private`, else a
 * public key), of any type; NULL when there is none. Caller frees
 * (EVP_PKEY_free). Leaves OpenSSL's error queue empty. */
EVP_PKEY *jws_pem_read(const unsigned char *pem, size_t len, int private)
	__attribute__((warn_unused_result));

/* 1 when `pk` is what `alg` needs (ES256: EC P-256; RS256: RSA, at least
 * 2048 bits), else 0, so a key of another type never picks the check. */
int jws_pkey_fits(const EVP_PKEY *pk, enum jwa_alg alg);

/* NULL when `key` is usable as an HS256 secret (RFC 7518 §3.2: at least
 * the hash's 32 bytes, and no PEM document, since a public key used as a
 * secret lets everyone who has it forge), else why not (static). */
const char *jws_hs256_problem(const unsigned char *key, size_t key_len);

#define JWS_HS256_LEN 32	/* bytes of an HS256 signature */

/* HMAC-SHA256 of `in` into md, with a key that jws_hs256_problem passes:
 * 0, else -1. */
int jws_hs256(const unsigned char *key, size_t key_len, const unsigned char *in, size_t len,
	      unsigned char md[JWS_HS256_LEN])
	__attribute__((warn_unused_result));

/* An ES256 signature R || S (64 bytes) as the DER OpenSSL verifies: 0 and
 * *der (caller frees, OPENSSL_free) of *der_len bytes, or -1. */
int jws_es256_to_der(const unsigned char *sig, size_t sig_len, unsigned char **der,
		     int *der_len)
	__attribute__((warn_unused_result));

#endif
