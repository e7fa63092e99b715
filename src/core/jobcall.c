/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * jobcall: the answers around one attempt as the job core reads them
 * (job.h, "The answers around an attempt"): a target's Retry-After and
 * WWW-Authenticate, which statuses are retried (R8), an IdP's refusal, a
 * DPoP-bound call's answer, and which awaited effects hold a place at the
 * gate. Pure; ejob.c carries out what these say, job.c's state machine
 * reads them.
 */
#include "core/job.h"

#include <string.h>

#include "base/wtime.h"
#include "base/wwwauth.h"
#include "jose/dpop.h"

#define RETRY_AFTER_MAX_S	86400	/* a day: longer is past any sane deadline */

static int
blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int64_t
job_retry_after_ms(const char *value, int64_t now_ms)
{
	const char *b, *e;
	char date[32];
	int64_t at;

	if (value == NULL)
		return -1;
	for (b = value; blank(*b); b++)
		;
	for (e = b + strlen(b); e > b && blank(e[-1]); e--)
		;
	if (b == e)
		return -1;
	if (*b >= '0' && *b <= '9') {
		int64_t secs = 0;
		for (const char *p = b; p < e; p++) {
			if (*p < '0' || *p > '9')
				return -1;
			if (secs < RETRY_AFTER_MAX_S)
				secs = secs * 10 + (*p - '0');
		}
		if (secs > RETRY_AFTER_MAX_S)
			secs = RETRY_AFTER_MAX_S;
		return secs * 1000;
	}
	if ((size_t)(e - b) >= sizeof date)
		return -1;
	memcpy(date, b, (size_t)(e - b));
	date[e - b] = '\0';
	if (wtime_parse_http_date(date, &at) < 0)
		return -1;
	return at > now_ms ? at - now_ms : 0;
}

/* Bearer error="invalid_token" (RFC 6750 §3.1), read by the one
 * WWW-Authenticate reader. */
int
job_www_auth_invalid_token(const char *value)
{
	return wwwauth_has(value, "Bearer", "error", "invalid_token");
}

int
job_status_retryable(int status)
{
	return status == 0 || status == 408 || status == 425 || status == 429 ||
	    (status >= 500 && status <= 599);
}


enum reason
job_idp_reason(const char *code)
{
	enum reason r;

	if (code == NULL || code[0] == '\0' || reason_parse(code, &r) != 0 ||
	    r < REASON_IDP_INVALID_GRANT)
		return REASON_IDP_REFUSED;
	return r;
}

enum job_dpop
job_dpop_answer(long status, const char *www_authenticate, int has_nonce)
{
	char err[32];

	if (status != 401 || dpop_challenge_error(www_authenticate, err, sizeof err) != 0)
		return JOB_DPOP_NONE;
	if (strcmp(err, "use_dpop_nonce") == 0 && has_nonce)
		return JOB_DPOP_NONCE;
	return strcmp(err, "invalid_dpop_proof") == 0 ? JOB_DPOP_REFUSED : JOB_DPOP_NONE;
}

int
job_dpop_retry_now(enum job_dpop d, int *retried)
{
	if (d == JOB_DPOP_NONCE && !*retried) {
		*retried = 1;
		return 1;
	}
	*retried = 0;
	return 0;
}

int
job_attempt_holds_gate(unsigned awaiting)
{
	return awaiting == JOB_FX_AUTHZ || awaiting == JOB_FX_EXCHANGE || awaiting == JOB_FX_CALL;
}
