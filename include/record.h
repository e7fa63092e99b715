/*
 * record: the authorization decision record of SPEC §3, verified and
 * validated. Pure: the key comes in as bytes and `now` as a number.
 */
#ifndef WARRANTD_RECORD_H
#define WARRANTD_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include <jwt.h>

#define RECORD_ID_MAX 64

enum record_status {
	RECORD_OK = 0,
	RECORD_BAD_SIGNATURE,	/* "bad-signature": not a JWS, wrong alg/typ, bad signature */
	RECORD_INVALID,		/* "record-invalid": breaks a rule of §3.1 */
	RECORD_UNKNOWN_ACTION,	/* "unknown-action": no [action NAME] for it */
};

/* The reason code of SPEC R3 for a status ("" for RECORD_OK). Static. */
const char *record_status_code(enum record_status st);

/* What a record is checked against; built from struct cfg by the caller. */
struct record_policy {
	int signature_required;		/* 0: `raw` is plain JSON */
	jwt_alg_t algorithm;		/* ES256, HS256 or RS256 */
	const unsigned char *key;	/* PEM public key, or the HMAC secret */
	size_t key_len;
	const char *issuer;		/* NULL: not checked */
	int64_t max_window_ms, clock_skew_ms;
	/* Returns non-zero when an [action NAME] exists. */
	int (*action_known)(void *ctx, const char *action);
	void *action_ctx;
};

struct record {
	char id[RECORD_ID_MAX + 1];
	char *on_behalf_of, *action, *resource, *basis;
	char *notify_on_denial;	/* NULL when absent */
	char *iss;		/* NULL when absent */
	json_t *parameters;	/* an object, owned */
	json_t *content;	/* the whole verified payload object, owned: the R7 body */
	int64_t decided_at_ms, expires_at_ms;
	int64_t not_before_ms;	/* 0 when absent */
};

/* 1 when `id` is a valid recordId (1-64 of [A-Za-z0-9._-]). */
int record_id_valid(const char *id);

/*
 * Verifies (§3.2) and validates (§3.1) `raw`, the hash's `record` field, for
 * the key suffix `expected_id` at time `now_ms`.
 * RECORD_OK: *out is a new record (caller frees with record_free).
 * Otherwise *out is NULL and `detail` holds one line for people (never the
 * signature or key). When the signature verified but the content is invalid,
 * *owner_out (if not NULL) receives a copy of `notifyOnDenial` when the payload
 * had a usable one, so the owner can be told (caller frees; else NULL).
 */
enum record_status record_load(const struct record_policy *pol, const char *expected_id,
			       const char *raw, int64_t now_ms, struct record **out,
			       char **owner_out, char *detail, size_t detail_len)
	__attribute__((warn_unused_result));

void record_free(struct record *rec);

#endif
