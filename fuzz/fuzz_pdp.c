/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_pdp: the policy decision point's answer (warrantd(7) §7), in both of
 * [authz] api's shapes. Only a 2xx body that is JSON decides, and only one
 * that says allow in a documented shape of its own API may allow: the OPA
 * result (true or {"allow": true}), or AuthZEN's {"decision": true}. */
#include "fuzz.h"
#include "auth/authz.h"

#include <jansson.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *body = (const char *)data;
	enum job_authz opa = authz_parse_answer(CFG_AUTHZ_OPA, 200, body, size);
	enum job_authz az = authz_parse_answer(CFG_AUTHZ_AUTHZEN, 200, body, size);

	if (authz_parse_answer(CFG_AUTHZ_OPA, 503, body, size) != JOB_AUTHZ_UNAVAILABLE ||
	    authz_parse_answer(CFG_AUTHZ_AUTHZEN, 401, body, size) != JOB_AUTHZ_UNAVAILABLE)
		abort();
	/* cross-check: what is JSON decides, what is not does not */
	json_t *doc = json_loadb(body, size, JSON_DECODE_ANY, NULL);
	if ((doc == NULL) != (opa == JOB_AUTHZ_UNAVAILABLE) ||
	    (doc == NULL) != (az == JOB_AUTHZ_UNAVAILABLE))
		abort();
	const json_t *res = json_object_get(doc, "result");
	if (opa == JOB_AUTHZ_ALLOW && !json_is_true(res) &&
	    !json_is_true(json_object_get(res, "allow")))
		abort();
	if (az == JOB_AUTHZ_ALLOW && !json_is_true(json_object_get(doc, "decision")))
		abort();
	json_decref(doc);
	return 0;
}
