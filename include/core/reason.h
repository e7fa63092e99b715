/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * reason: the reason codes written to P:dead `reason`, the hash's `outcome`
 * and the P:notify `reason` (warrantd(7) R3, R8, R11, R12, R17). One enum, one name
 * table (reason.c): code decides with the enum, Redis and logs see the name.
 * Pure.
 */
#ifndef WARRANTD_REASON_H
#define WARRANTD_REASON_H

enum reason {
	REASON_NONE = 0,		/* "": no code applies */
	REASON_OK,			/* "ok": done */
	REASON_NO_ID,			/* "no-id" (R3) */
	REASON_RECORD_MISSING,		/* "record-missing" (R3) */
	REASON_BAD_SIGNATURE,		/* "bad-signature" (R3, §3.2) */
	REASON_RECORD_INVALID,		/* "record-invalid" (R3, §3.1) */
	REASON_UNKNOWN_ACTION,		/* "unknown-action" (R3, R16) */
	REASON_WRONG_AUDIENCE,		/* "wrong-audience" (R3, §3.1): aud is not
					   [records] audience */
	REASON_TOO_MANY_DELIVERIES,	/* "too-many-deliveries" (R12) */
	REASON_MAX_ATTEMPTS,		/* "max-attempts" (R8) */
	REASON_ENTRY_DELETED,		/* "entry-deleted" (R11) */
	REASON_DEADLINE_PASSED,		/* "deadline-passed" (R1) */
	REASON_AUTHORITY_DENIED,	/* "authority-denied" (R5) */
	REASON_HTTP_4XX,		/* "http-4xx" (R8) */
	REASON_REQUEST_INVALID,		/* "request-invalid": the URL cannot expand */
	REASON_EXCHANGE_DENIED,		/* "exchange-denied": the IdP refused the
					   per-job token exchange (RFC 8693) */
	REASON_REDIS_ERROR,		/* "redis-error" (R17): an error reply that
					   belongs to the entry, three times */
	/* §9: the IdP refused a token for this job (exchange, per-record, a
	 * scope): the IdP's own error code is the reason */
	REASON_IDP_INVALID_GRANT,	/* "invalid_grant" */
	REASON_IDP_UNAUTHORIZED_CLIENT,	/* "unauthorized_client" */
	REASON_IDP_ACCESS_DENIED,	/* "access_denied" */
	REASON_IDP_INVALID_REQUEST,	/* "invalid_request" */
	REASON_IDP_INVALID_SCOPE,	/* "invalid_scope" */
	REASON_IDP_INVALID_TARGET,	/* "invalid_target" */
	REASON_IDP_INVALID_AUTHORIZATION_DETAILS, /* "invalid_authorization_details" */
	REASON_IDP_UNSUPPORTED_GRANT_TYPE, /* "unsupported_grant_type" */
	REASON_IDP_REFUSED,		/* "idp-refused": any other refusal */
	REASON_COUNT			/* not a code: the number of them */
};

/* The code as written to Redis ("" for REASON_NONE and for a value out of
 * range). Static storage. */
const char *reason_name(enum reason r);

/* The inverse: 0 and *out, or -1 for text that names no code ("" parses
 * as REASON_NONE). */
int reason_parse(const char *s, enum reason *out) __attribute__((warn_unused_result));

#endif
