/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * record: the authorization decision record of warrantd(7) §3, verified and
 * validated. Pure: the key comes in as bytes (or parsed once, as a
 * struct record_key) and `now` as a number.
 */
#ifndef WARRANTD_RECORD_H
#define WARRANTD_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "jose/jwa.h"
#include "core/reason.h"
#include "core/record_key.h"

#define RECORD_ID_MAX 64

enum record_status {
	RECORD_OK = 0,
	RECORD_BAD_SIGNATURE,	/* "bad-signature": not a JWS, wrong alg/typ, bad signature */
	RECORD_INVALID,		/* "record-invalid": breaks a rule of §3.1 */
	RECORD_UNKNOWN_ACTION,	/* "unknown-action": no [action NAME] for it */
	RECORD_WRONG_AUDIENCE,	/* "wrong-audience": aud does not name [records]
				   audience, or names one where none is set */
};

/* The reason code of warrantd(7) R3 for a status (REASON_NONE for RECORD_OK). */
enum reason record_status_reason(enum record_status st);
/* Its name, reason_name(record_status_reason(st)): "" for RECORD_OK. */
const char *record_status_code(enum record_status st);

/* What a record is checked against; built from struct cfg by the caller. */
struct record_policy {
	int signature_required;		/* 0: `raw` is plain JSON */
	enum jwa_alg algorithm;		/* ES256, HS256 or RS256 */
	/* Borrowed; when set, used instead of key/key_len. A key parsed for
	 * another algorithm than `algorithm` fails like a key of the wrong
	 * type: RECORD_BAD_SIGNATURE. */
	const struct record_key *parsed_key;
	/* Borrowed, the calling thread's: verifies parsed_key with its own
	 * context. NULL: with the key's own (record_key_ref says who may). */
	struct record_verifier *verifier;
	/* What verify_key_file holds (record_key_new's rules), parsed per
	 * record: for tools. */
	const unsigned char *key;
	size_t key_len;
	const char *issuer;		/* NULL: not checked */
	/* RFC 7519 §4.1.3: when set, aud must be it or an array holding it;
	 * NULL: a record with an aud is refused (it names another deployment) */
	const char *audience;
	int64_t max_window_ms, clock_skew_ms;
	size_t max_bytes;		/* a longer `raw` is RECORD_INVALID; 0: no cap */
	/* Returns non-zero when an [action NAME] exists. NULL: not checked
	 * (for tools that show a record; the daemon always sets it). */
	int (*action_known)(void *ctx, const char *action);
	void *action_ctx;
};

/* From record_load, the strings point into the block that `body` starts
 * (one allocation, freed with it by record_free); a record built by hand
 * sets them as it likes and is not given to record_free. */
struct record {
	char id[RECORD_ID_MAX + 1];
	char *on_behalf_of, *action, *resource, *basis;
	char *notify_on_denial;	/* NULL when absent or empty */
	char *iss;		/* NULL when absent */
	/* The verified payload's bytes as they came (owned, NUL-terminated):
	 * the R7 body, sent without re-serialising it; record_content reads it
	 * as JSON for what needs the whole object (parameters, decidedAt as
	 * written). */
	char *body;
	size_t body_len;
	int64_t decided_at_ms, expires_at_ms;
	int64_t not_before_ms;	/* 0 when absent */
};

/* 1 when `id` is a valid recordId (1-64 of [A-Za-z0-9._-], not "." or ".."). */
int record_id_valid(const char *id);

/*
 * Verifies (§3.2) and validates (§3.1) `raw`, the hash's `record` field, for
 * the key suffix `expected_id` at time `now_ms`.
 * RECORD_OK: *out is a new record (caller frees with record_free).
 * Otherwise *out is NULL and `detail` holds one line for people (never the
 * signature or key). When the signature verified but the content is invalid,
 * *owner_out (if not NULL) receives a copy of `notifyOnDenial` when the payload
 * had a usable one, so the owner can be told (caller frees; else NULL).
 * The signature is checked with OpenSSL against pol->algorithm alone (the
 * header's alg must name it, and never selects the check): libjwt 1.10's
 * jwt_decode refuses any typ but "JWT". The header's kid picks the key of
 * the set (warrantd(7) §3.2): with several keys a record without a kid, or
 * with one that names no key, is RECORD_BAD_SIGNATURE; a set of one key is
 * used by a record without a kid, and by any record when the key has no
 * kid itself (a PEM file), but a kid that differs from the one key's is
 * RECORD_BAD_SIGNATURE. An expired record is still RECORD_OK:
 * the deadline is the job's business, not validation's.
 */
enum record_status record_load(const struct record_policy *pol, const char *expected_id,
			       const char *raw, int64_t now_ms, struct record **out,
			       char **owner_out, char *detail, size_t detail_len)
	__attribute__((warn_unused_result));

/*
 * The last rule of §3.1, which record_load applies when pol->action_known is
 * set: for a record loaded with it NULL (on another thread than the
 * config's), checked afterwards with the same result. When *rec's action is
 * unknown: *rec is freed and set to NULL, *owner_out (if not NULL) takes its
 * notifyOnDenial, `detail` says why, and RECORD_UNKNOWN_ACTION is returned.
 */
enum record_status record_check_action(const struct record_policy *pol, struct record **rec,
				       char **owner_out, char *detail, size_t detail_len)
	__attribute__((warn_unused_result));

/* NULL is a no-op. */
void record_free(struct record *rec);

/*
 * The record's payload (rec->body) read by jansson: a new reference to the
 * object (caller decrefs), or NULL when out of memory or `body` is NULL.
 * Off the hot path: for the PDP's input (parameters) and warrantctl.
 */
json_t *record_content(const struct record *rec)
	__attribute__((warn_unused_result));

/*
 * Signs `content` (a JSON object) as a JWS compact serialization with header
 * {"alg": alg, "typ": "decision+jwt"} and "kid" when `kid` is not NULL.
 * `alg` is JWA_ES256 or JWA_RS256 with `key` a PEM private key, or
 * JWA_HS256 with `key` the HMAC secret (at least 32 bytes). Signed by
 * jws_sign (libjwt 1.10 always writes typ=JWT).
 * Returns a new string (caller frees), or NULL on any error.
 */
char *record_sign(enum jwa_alg alg, const unsigned char *key, size_t key_len, const char *kid,
		  const json_t *content)
	__attribute__((warn_unused_result));

#endif
