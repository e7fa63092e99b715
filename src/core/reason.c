/* SPDX-License-Identifier: BSD-2-Clause */
/* reason: the one table of reason codes (reason.h). */
#include "core/reason.h"
#include "base/names.h"

static const char *const names[REASON_COUNT] = {
	[REASON_NONE] = "",
	[REASON_OK] = "ok",
	[REASON_NO_ID] = "no-id",
	[REASON_RECORD_MISSING] = "record-missing",
	[REASON_BAD_SIGNATURE] = "bad-signature",
	[REASON_RECORD_INVALID] = "record-invalid",
	[REASON_UNKNOWN_ACTION] = "unknown-action",
	[REASON_WRONG_AUDIENCE] = "wrong-audience",
	[REASON_TOO_MANY_DELIVERIES] = "too-many-deliveries",
	[REASON_MAX_ATTEMPTS] = "max-attempts",
	[REASON_ENTRY_DELETED] = "entry-deleted",
	[REASON_DEADLINE_PASSED] = "deadline-passed",
	[REASON_AUTHORITY_DENIED] = "authority-denied",
	[REASON_HTTP_4XX] = "http-4xx",
	[REASON_REQUEST_INVALID] = "request-invalid",
	[REASON_EXCHANGE_DENIED] = "exchange-denied",
	[REASON_REDIS_ERROR] = "redis-error",
	[REASON_IDP_INVALID_GRANT] = "invalid_grant",
	[REASON_IDP_UNAUTHORIZED_CLIENT] = "unauthorized_client",
	[REASON_IDP_ACCESS_DENIED] = "access_denied",
	[REASON_IDP_INVALID_REQUEST] = "invalid_request",
	[REASON_IDP_INVALID_SCOPE] = "invalid_scope",
	[REASON_IDP_INVALID_TARGET] = "invalid_target",
	[REASON_IDP_INVALID_AUTHORIZATION_DETAILS] = "invalid_authorization_details",
	[REASON_IDP_UNSUPPORTED_GRANT_TYPE] = "unsupported_grant_type",
	[REASON_IDP_REFUSED] = "idp-refused",
};

const char *
reason_name(enum reason r)
{
	if ((int)r < 0 || (int)r >= REASON_COUNT || names[r] == NULL)
		return "";
	return names[r];
}

int
reason_parse(const char *s, enum reason *out)
{
	int i = names_find(names, REASON_COUNT, sizeof names[0], s);

	if (i < 0)
		return -1;
	*out = (enum reason)i;
	return 0;
}
