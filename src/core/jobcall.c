/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * jobcall: the answers around one attempt as the job core reads them
 * (job.h, "The answers around an attempt"): an IdP's refusal, a DPoP-bound
 * call's answer, and which awaited effects hold a place at the gate. Pure;
 * ejob.c carries out what these say.
 */
#include "core/job.h"

#include <string.h>

#include "jose/dpop.h"

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
