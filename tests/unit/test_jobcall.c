/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for src/core/jobcall.c: what the IdP's and a DPoP-bound call's
 * answers say to the job core, and which steps hold a place at the gate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/job.h"

/* §9: the IdP's own code is the reason; one reason.h does not name among
 * the IdP's is idp-refused. */
static void
test_idp_reason(void **state)
{
	(void)state;
	assert_int_equal(job_idp_reason("invalid_grant"), REASON_IDP_INVALID_GRANT);
	assert_int_equal(job_idp_reason("access_denied"), REASON_IDP_ACCESS_DENIED);
	assert_int_equal(job_idp_reason("invalid_target"), REASON_IDP_INVALID_TARGET);
	assert_int_equal(job_idp_reason("unsupported_grant_type"),
	    REASON_IDP_UNSUPPORTED_GRANT_TYPE);
	assert_int_equal(job_idp_reason("server_error"), REASON_IDP_REFUSED);
	assert_int_equal(job_idp_reason(""), REASON_IDP_REFUSED);
	assert_int_equal(job_idp_reason(NULL), REASON_IDP_REFUSED);
	/* a reason of the worker's own is never the IdP's */
	assert_int_equal(job_idp_reason("max-attempts"), REASON_IDP_REFUSED);
	assert_int_equal(job_idp_reason("deadline-passed"), REASON_IDP_REFUSED);
	assert_int_equal(job_idp_reason("exchange-denied"), REASON_IDP_REFUSED);
	assert_int_equal(job_idp_reason("redis-error"), REASON_IDP_REFUSED);
}

/* RFC 9449 §9: a nonce challenge with its nonce, a refused proof, or
 * nothing. */
static void
test_dpop_answer(void **state)
{
	static const char nonce[] = "DPoP error=\"use_dpop_nonce\", "
	    "error_description=\"Resource server requires nonce in DPoP proof\"";
	static const char proof[] = "DPoP error=\"invalid_dpop_proof\"";

	(void)state;
	assert_int_equal(job_dpop_answer(401, nonce, 1), JOB_DPOP_NONCE);
	assert_int_equal(job_dpop_answer(401, nonce, 0), JOB_DPOP_NONE);	/* no nonce to use */
	assert_int_equal(job_dpop_answer(400, nonce, 1), JOB_DPOP_NONE);
	assert_int_equal(job_dpop_answer(401, proof, 1), JOB_DPOP_REFUSED);
	assert_int_equal(job_dpop_answer(401, proof, 0), JOB_DPOP_REFUSED);
	assert_int_equal(job_dpop_answer(403, proof, 0), JOB_DPOP_NONE);
	assert_int_equal(job_dpop_answer(401, "DPoP error=\"invalid_token\"", 1), JOB_DPOP_NONE);
	assert_int_equal(job_dpop_answer(401, "Bearer error=\"use_dpop_nonce\"", 1),
	    JOB_DPOP_NONE);
	assert_int_equal(job_dpop_answer(401, NULL, 1), JOB_DPOP_NONE);
	assert_int_equal(job_dpop_answer(200, NULL, 1), JOB_DPOP_NONE);
}

/* One immediate retry per challenge: a second challenge in a row is the
 * call's answer; any other answer makes the next challenge retried again. */
static void
test_dpop_retry_once(void **state)
{
	int retried = 0;

	(void)state;
	assert_true(job_dpop_retry_now(JOB_DPOP_NONCE, &retried));
	assert_int_equal(retried, 1);
	assert_false(job_dpop_retry_now(JOB_DPOP_NONCE, &retried));
	assert_int_equal(retried, 0);
	assert_true(job_dpop_retry_now(JOB_DPOP_NONCE, &retried));
	assert_false(job_dpop_retry_now(JOB_DPOP_NONE, &retried));
	assert_int_equal(retried, 0);
	assert_false(job_dpop_retry_now(JOB_DPOP_REFUSED, &retried));
	assert_true(job_dpop_retry_now(JOB_DPOP_NONCE, &retried));
}

/* §13: the PDP, the exchange and the call hold the place; nothing else. */
static void
test_attempt_holds_gate(void **state)
{
	(void)state;
	assert_true(job_attempt_holds_gate(JOB_FX_AUTHZ));
	assert_true(job_attempt_holds_gate(JOB_FX_EXCHANGE));
	assert_true(job_attempt_holds_gate(JOB_FX_CALL));
	assert_false(job_attempt_holds_gate(0));
	assert_false(job_attempt_holds_gate(JOB_FX_WRITE_STATE));
	assert_false(job_attempt_holds_gate(JOB_FX_WAIT_TOKEN));
	assert_false(job_attempt_holds_gate(JOB_FX_GATE_WAIT));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idp_reason),
		cmocka_unit_test(test_dpop_answer),
		cmocka_unit_test(test_dpop_retry_once),
		cmocka_unit_test(test_attempt_holds_gate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
