/* SPDX-License-Identifier: BSD-2-Clause */
#include <stdlib.h>
#include <string.h>

#include "base/wtime.h"
#include "jose/b64url.h"
#include "jose/jws.h"
#include "wjob.h"

void
wjob_header(json_t *job, const char *raw)
{
	struct jws_segments sg;
	unsigned char *h = NULL;
	size_t n = 0;
	json_t *hdr;

	if (raw == NULL || jws_segments(raw, &sg) != 0 ||
	    b64url_decode_lax(sg.at[0], sg.len[0], &h, &n) != 0)
		return;
	if ((hdr = json_loadb((const char *)h, n, 0, NULL)) != NULL) {
		if (json_is_string(json_object_get(hdr, "alg")))
			json_object_set(job, "alg", json_object_get(hdr, "alg"));
		if (json_is_string(json_object_get(hdr, "kid")))
			json_object_set(job, "kid", json_object_get(hdr, "kid"));
		json_decref(hdr);
	}
	free(h);
}

static const char *
str(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

json_t *
wjob_attempts(const json_t *audit)
{
	json_t *out = json_array(), *cur = NULL;
	const json_t *e;
	int64_t start = 0, end;
	size_t i;

	json_array_foreach(audit, i, e) {
		if (cur != NULL && strcmp(str(e, "from"), "running") == 0) {
			json_object_set_new(cur, "outcome", json_string(str(e, "to")));
			json_object_set_new(cur, "detail", json_string(str(e, "detail")));
			if (start && wtime_parse_rfc3339(str(e, "at"), &end) == 0)
				json_object_set_new(cur, "durationMs", json_integer(end - start));
			cur = NULL;
		}
		if (strcmp(str(e, "to"), "running") == 0) {
			cur = json_pack("{s:O?, s:s, s:s}", "attempt", json_object_get(e, "attempt"),
			    "startedAt", str(e, "at"), "outcome", "");
			json_array_append_new(out, cur);
			if (wtime_parse_rfc3339(str(e, "at"), &start) != 0)
				start = 0;
		}
	}
	return out;
}

const char *
wjob_held(const char *state, const char *action, const json_t *paused)
{
	static const char *const live[] = {"queued", "running", "retrying", "auth_wait",
	    "pending"};
	int waiting = 0;

	for (size_t i = 0; state && i < sizeof live / sizeof live[0]; i++)
		waiting |= strcmp(state, live[i]) == 0;
	if (!waiting)
		return NULL;
	if (json_object_get(paused, "*") != NULL ||
	    (action != NULL && json_object_get(paused, action) != NULL))
		return "paused";
	return strcmp(state, "auth_wait") == 0 ? "waiting for a token" : NULL;
}
