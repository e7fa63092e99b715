/* SPDX-License-Identifier: BSD-2-Clause */
/* authz: the OPA Data API request and answer of warrantd(7) §7. */
#include "authz.h"

#include <jansson.h>

char *
authz_request_body(const struct record *r)
{
	/* The payload read again by jansson: only with [authz], off the hot
	 * path, and parameters and decidedAt go out as written. */
	json_t *content = record_content(r);
	json_t *input = content == NULL ? NULL :
	    json_pack("{s:{s:s,s:s,s:s,s:O,s:s,s:s,s:O}}", "input",
	    "subject", r->on_behalf_of, "action", r->action, "resource", r->resource,
	    "parameters", json_object_get(content, "parameters"), "basis", r->basis,
	    "recordId", r->id, "decidedAt", json_object_get(content, "decidedAt"));
	char *body = input ? json_dumps(input, JSON_COMPACT) : NULL;

	json_decref(input);
	json_decref(content);
	return body;
}

enum job_authz
authz_parse_answer(long status, const char *body, size_t len)
{
	if (status < 200 || status > 299)
		return JOB_AUTHZ_UNAVAILABLE;
	json_t *doc = body ? json_loadb(body, len, 0, NULL) : NULL;
	json_t *res = doc ? json_object_get(doc, "result") : NULL;
	int allow = json_is_true(res) ||
	    (json_is_object(res) && json_is_true(json_object_get(res, "allow")));

	json_decref(doc);
	return allow ? JOB_AUTHZ_ALLOW : JOB_AUTHZ_DENY;
}

const char *
authz_name(enum job_authz a)
{
	switch (a) {
	case JOB_AUTHZ_ALLOW: return "allow";
	case JOB_AUTHZ_DENY: return "deny";
	case JOB_AUTHZ_UNAVAILABLE: return "unavailable";
	}
	return "unknown";
}
