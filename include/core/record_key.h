/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * record_key: the verification keys of [records] verify_key_file parsed once
 * (struct record_key), the verify contexts of a thread (struct
 * record_verifier), and how record.c checks a signature with them (§3.2).
 * Pure: OpenSSL does the cryptography. record.h includes this header.
 */
#ifndef WARRANTD_RECORD_KEY_H
#define WARRANTD_RECORD_KEY_H

#include <stddef.h>

#include "base/jread.h"
#include "jose/jwa.h"
#include "jose/jws.h"

/* The verification keys parsed once (public keys, or copies of HMAC
 * secrets), so that record_load need not parse a PEM or a JWKS per record.
 * Opaque. */
struct record_key;

/*
 * Parses `key`, the contents of [records] verify_key_file, for `alg` by
 * jwks_read (jwks.h): a JWKS (RFC 7517) of one or more keys, each with
 * its kid, or one key without a kid -- for ES256 a PEM P-256 public key,
 * for RS256 a PEM RSA public key of at least 2048 bits, for HS256 the
 * secret (at least 32 bytes, no PEM document; copied). record_load applies
 * the same rules to raw bytes. `key` is borrowed. Returns a new key set
 * (caller frees with record_key_free), or NULL with one line for people in
 * `err` (never the key's bytes).
 */
struct record_key *record_key_new(enum jwa_alg alg, const unsigned char *key, size_t key_len,
				  char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* How many keys the set holds (at least 1), and the kid of key i (NULL:
 * none, or i out of range; valid while the set is), for the log. */
size_t record_key_count(const struct record_key *key);
const char *record_key_kid(const struct record_key *key, size_t i);

/* Another owner of `key` (returned): each owner calls record_key_free once,
 * and the last one frees it. Thread-safe. Verifying is not, by itself: a
 * key keeps one OpenSSL context for one thread at a time (the loop's);
 * every other thread that verifies with an ES256 or RS256 key at the same
 * time brings its own struct record_verifier (vpool's workers do). An
 * HS256 key's HMAC context is the key's alone: keep it on one thread. */
struct record_key *record_key_ref(struct record_key *key);

/* Drops one owner; the last wipes a secret before freeing it. NULL is a
 * no-op. */
void record_key_free(struct record_key *key);

/* warrantd(7) §3.2: a set of more than one key may hold several deciders'
 * keys, and only iss tells one decider's records from another's, so
 * [records] issuer (`issuer`) is then required. NULL when the pair is
 * acceptable, else the rule broken (static, one line). */
const char *record_key_issuer_problem(const struct record_key *key, const char *issuer);

/* One thread's verify contexts (opaque): those it set up for the keys of
 * the last ES256 or RS256 key set it verified with (about 25,000
 * instructions each to make, when a key is first used), kept with an owner
 * of that set until it verifies with another or is freed. Never shared
 * between threads at the same time. */
struct record_verifier;

/* A new, empty verifier (caller frees with record_verifier_free), or NULL
 * when out of memory. */
struct record_verifier *record_verifier_new(void)
	__attribute__((warn_unused_result));

/* Drops its context and its owner of a key. NULL is a no-op. */
void record_verifier_free(struct record_verifier *v);

enum {
	RECORD_KEY_VERIFIED = 0,
	RECORD_KEY_BAD = -1,		/* the signature does not verify */
	RECORD_KEY_UNUSABLE = -2,	/* the key is not one of `alg`, or no context */
	RECORD_KEY_NO_KID = -3,		/* several keys and the header names none */
	RECORD_KEY_UNKNOWN_KID = -4,	/* the header's kid names no key of the set */
};

/*
 * warrantd(7) §3.2: the compact JWS `raw` (taken apart in j) checked with the
 * key of k that the header's kid picks (see record_load), by `alg` alone.
 * With v set, with v's context for that key (made on first use), else with
 * the key's own. One of the values above. All borrowed.
 */
int record_key_verify(const struct record_key *k, enum jwa_alg alg, struct record_verifier *v,
		      const char *raw, const struct jws_parts *j, const struct jread_member *kid)
	__attribute__((warn_unused_result));

#endif
