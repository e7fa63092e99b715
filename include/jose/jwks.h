/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * jwks: the keys a record is verified with (warrantd(7) §3.2, [records]
 * verify_key_file): a PEM public key, an HS256 secret, or a JWKS (RFC 7517)
 * of one or more keys with the key types of RFC 7518 §6. Pure: text in,
 * keys out; jws.h signs, record.h verifies with these keys.
 */
#ifndef WARRANTD_JWKS_H
#define WARRANTD_JWKS_H

#include <stddef.h>

#include <openssl/types.h>

#include "jose/jwa.h"

#define JWKS_KID_MAX	256	/* bytes of a key's kid in a JWKS */
#define JWKS_KEYS_MAX	32	/* keys in one JWKS: a rotation needs two or three */

/* One key to verify with: a public key (ES256, RS256) or an HMAC secret
 * (HS256), and the kid a JWKS gave it. Plain data. */
struct jwks_key {
	char *kid;		/* NULL: none (a PEM file, a JWK without one) */
	EVP_PKEY *pk;		/* exactly one of pk and secret is set */
	unsigned char *secret;
	size_t secret_len;
};

/*
 * The contents of [records] verify_key_file for `alg`. A text whose first
 * byte that is not white space is '{' is a JWKS (RFC 7517 §5, {"keys":
 * [...]}) and nothing else, also for HS256; otherwise it is one key without
 * a kid: for ES256 a PEM P-256 public key, for RS256 a PEM RSA public key
 * of at least 2048 bits, for HS256 the secret itself (jws_hs256_problem).
 * Each JWK must fit `alg`: kty EC with crv P-256 and x, y of 32 bytes each
 * (ES256), kty RSA with n of at least 2048 bits and e (RS256), kty oct with
 * k (HS256); "alg", when present, must name `alg`, "use" must be "sig",
 * "key_ops" must hold "verify"; a private member ("d") is refused; a kid is
 * 1 to JWKS_KID_MAX bytes without control characters, unique, and required
 * when there are several keys. Members RFC 7517 lets a reader ignore are
 * ignored. At most JWKS_KEYS_MAX keys.
 * Returns the number of keys (at least 1) with *out a new array of them
 * (caller frees with jwks_free), or -1 with one line for people in
 * `err` that names the JWK by its index and kid, and never holds the key's
 * bytes. `text` is borrowed (the caller wipes a secret's copy).
 */
int jwks_read(const unsigned char *text, size_t len, enum jwa_alg alg,
		   struct jwks_key **out, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* Frees the n keys at `keys` and the array, wiping secrets. NULL is a
 * no-op. */
void jwks_free(struct jwks_key *keys, size_t n);

#endif
