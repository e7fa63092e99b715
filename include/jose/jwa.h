/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * jwa: the JWS algorithms warrantd knows (RFC 7518), as its own enum, so
 * that the config and the record carry an algorithm without including
 * libjwt; only the modules that sign or verify map it to a library's. Pure.
 */
#ifndef WARRANTD_JWA_H
#define WARRANTD_JWA_H

enum jwa_alg {
	JWA_NONE = 0,	/* no algorithm: refused wherever one is needed, so a
			 * zeroed struct never verifies by accident */
	JWA_ES256,	/* ECDSA P-256 with SHA-256 */
	JWA_RS256,	/* RSASSA-PKCS1-v1_5 with SHA-256 */
	JWA_HS256,	/* HMAC with SHA-256 */
	JWA_COUNT	/* not an algorithm: the number of values */
};

/* "ES256", "RS256", "HS256" as JWS headers spell them; "" for JWA_NONE and
 * a value out of range. Static storage. */
const char *jwa_name(enum jwa_alg alg);

#endif
