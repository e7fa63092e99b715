/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dpop: sender-constrained tokens (RFC 9449, warrantd(7) §9). One P-256 key,
 * parsed once, signs a proof for every token request and every call made
 * with a DPoP-bound token: header typ dpop+jwt, alg ES256 and the public
 * jwk; claims jti (unique), htm, htu (the URL without query and fragment),
 * iat, the server's nonce when it gave one for that origin, and ath (the
 * token's SHA-256) on a call. Signed by jws.c, the one signer. The nonces
 * are kept per origin, the latest wins.
 *
 * No clock: now comes in. Random jti from rnd.h. Single-threaded (the
 * nonces change): call from the loop's thread. A proof is a credential
 * for a minute: never logged.
 */
#ifndef WARRANTD_DPOP_H
#define WARRANTD_DPOP_H

#include <stddef.h>
#include <stdint.h>

struct dpop;	/* opaque: the key, its thumbprint, the nonces */

#define DPOP_NONCES_MAX	16	/* origins whose nonce is kept */
#define DPOP_NONCE_MAX	512	/* bytes of one nonce; a longer one is ignored */

/*
 * A DPoP key from a PEM P-256 private key (`pem` borrowed; the caller
 * wipes its copy). Caller frees with dpop_free; NULL with one line in err
 * (never the key's bytes).
 */
struct dpop *dpop_new(const unsigned char *pem, size_t len, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* Frees; NULL is a no-op. */
void dpop_free(struct dpop *d);

/* The key's RFC 7638 thumbprint (what a bound token's cnf.jkt holds).
 * Owned by d. */
const char *dpop_jkt(const struct dpop *d);

/*
 * A proof for one request: `method` and `url` as sent, `token` the
 * access token the request carries (NULL at the token endpoint: no ath),
 * now_ms wall-clock. The nonce kept for the url's origin, if any, is
 * included. A new string (caller wipes and frees: dpop_proof_free), or
 * NULL on error.
 */
char *dpop_proof(const struct dpop *d, const char *method, const char *url, const char *token,
		 int64_t now_ms) __attribute__((warn_unused_result));
void dpop_proof_free(char *proof);

/* Keeps `nonce` (a DPoP-Nonce header's value) for the origin of url, in
 * place of the one held. A value that is empty, too long or not visible
 * ASCII is ignored: -1; else 0. */
int dpop_nonce_keep(struct dpop *d, const char *url, const char *nonce);

/* ---- pure helpers, exposed for the tests and the fakes ---- */

/* htu (RFC 9449 §4.2): url without its query and fragment, into out (n
 * bytes). 0, or -1 when it does not fit or url is no http(s) URL. */
int dpop_htu(const char *url, char *out, size_t n) __attribute__((warn_unused_result));

/* The origin of url: scheme://host[:port], lower-cased scheme and host,
 * into out. 0 or -1 as dpop_htu. */
int dpop_origin(const char *url, char *out, size_t n) __attribute__((warn_unused_result));

/* ath: base64url SHA-256 of the token's ASCII bytes; a new string or NULL. */
char *dpop_ath(const char *token) __attribute__((warn_unused_result));

/* The error a WWW-Authenticate value gives for the DPoP scheme
 * (error="use_dpop_nonce", "invalid_dpop_proof", "invalid_token"...), into
 * out; 0, or -1 when the value has no DPoP challenge with an error. */
int dpop_challenge_error(const char *www_authenticate, char *out, size_t n)
	__attribute__((warn_unused_result));

#endif
