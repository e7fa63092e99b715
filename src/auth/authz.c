/* SPDX-License-Identifier: BSD-2-Clause */
/* authz: the OPA Data API and AuthZEN requests and answers of warrantd(7) §7. */
#include "auth/authz.h"

#include <jansson.h>

char *
authz_request_body(const struct record *r, const struct authz_shape *s)
{
	/* The payload read again by jansson: only with [authz], off the hot
	 * path, and parameters and decidedAt go out as written. */
	json_t *content = record_content(r), *q = NULL;
	json_t *params = json_object_get(content, "parameters");
	json_t *decided = json_object_get(content, "decidedAt");

	if (content != NULL && s->api == CFG_AUTHZ_AUTHZEN)
		q = json_pack("{s:{s:s,s:s},s:{s:s},s:{s:s,s:s},s:{s:s,s:s,s:O,s:O}}",
		    "subject", "type", s->subject_type ? s->subject_type : "user",
		    "id", r->on_behalf_of,
		    "action", "name", r->action,
		    "resource", "type", s->resource_type ? s->resource_type : "resource",
		    "id", r->resource,
		    "context", "recordId", r->id, "basis", r->basis, "decidedAt", decided,
		    "parameters", params);
	else if (content != NULL)
		q = json_pack("{s:{s:s,s:s,s:s,s:O,s:s,s:s,s:O}}", "input",
		    "subject", r->on_behalf_of, "action", r->action, "resource", r->resource,
		    "parameters", params, "basis", r->basis, "recordId", r->id,
		    "decidedAt", decided);
	char *body = q ? json_dumps(q, JSON_COMPACT) : NULL;

	json_decref(q);
	json_decref(content);
	return body;
}

static int
opa_allows(const json_t *doc)
{
	const json_t *res = json_object_get(doc, "result");

	return json_is_true(res) ||
	    (json_is_object(res) && json_is_true(json_object_get(res, "allow")));
}

enum job_authz
authz_parse_answer(enum cfg_authz_api api, long status, const char *body, size_t len)
{
	if (status < 200 || status > 299 || body == NULL)
		return JOB_AUTHZ_UNAVAILABLE;
	/* JSON_DECODE_ANY: `true` or `[]` is an answer (a denial), not noise */
	json_t *doc = json_loadb(body, len, JSON_DECODE_ANY, NULL);
	if (doc == NULL)
		return JOB_AUTHZ_UNAVAILABLE;	/* §7: an unreadable body decides nothing */
	int allow = api == CFG_AUTHZ_AUTHZEN ? json_is_true(json_object_get(doc, "decision")) :
	    opa_allows(doc);

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
