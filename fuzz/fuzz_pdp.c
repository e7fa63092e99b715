/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_pdp: the policy decision point's answer (warrantd(7) §7). Only a body that
 * says allow in one of the two documented shapes may allow. */
#include "fuzz.h"
#include "authz.h"

#include <jansson.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum job_authz a = authz_parse_answer(200, (const char *)data, size);

	if (authz_parse_answer(503, (const char *)data, size) != JOB_AUTHZ_UNAVAILABLE)
		abort();
	if (a == JOB_AUTHZ_ALLOW) {	/* cross-check the one way to allow */
		json_t *doc = json_loadb((const char *)data, size, 0, NULL);
		json_t *res = json_object_get(doc, "result");
		if (!json_is_true(res) && !json_is_true(json_object_get(res, "allow")))
			abort();
		json_decref(doc);
	}
	return 0;
}
