/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_record: validation of a record's content (warrantd(7) §3.1) with the
 * signature off, so every input reaches the field rules; and the recordId
 * syntax on its own.
 *
 * Besides "no crash": a record that loads OK keeps the whole of §3.1, as the
 * harness reads it again from the input (jansson, rules written out here):
 * recordId 1-64 of [A-Za-z0-9._-], not "." or "..", the key's suffix;
 * onBehalfOf and basis non-empty, at most 1024 bytes, no control character;
 * action non-empty, no '*', a configured one; resource non-empty, no segment
 * empty, "*", "." or "..", no '\' and no control character; parameters an
 * object; decidedAt at most clock_skew_s ahead; expiresAt later than
 * decidedAt and at most max_window_s after it; the record's fields are the
 * input's (no parser differential: what was checked is what runs). */
#include "fuzz.h"
#include "core/record.h"

#include <jansson.h>

#define NOW_MS		1796011200000LL
#define SKEW_MS		60000LL
#define WINDOW_MS	604800000LL

static int
known(void *ctx, const char *action)
{
	(void)ctx;
	return strcmp(action, "gate.open") == 0;
}

static int
has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

/* warrantd(7) §3.1's recordId, written out again. */
static int
id_ok(const char *id)
{
	size_t n = strlen(id);

	if (n < 1 || n > 64 || strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
		return 0;
	return strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

static int
text_ok(const char *s)
{
	return s[0] != '\0' && strlen(s) <= 1024 && !has_control(s);
}

static int
resource_ok(const char *r)
{
	if (r[0] == '\0' || strchr(r, '\\') != NULL || has_control(r))
		return 0;
	for (const char *seg = r;; ) {
		size_t n = strcspn(seg, "/");
		if (n == 0 || (n == 1 && (seg[0] == '*' || seg[0] == '.')) ||
		    (n == 2 && seg[0] == '.' && seg[1] == '.'))
			return 0;
		if (seg[n] == '\0')
			return 1;
		seg += n + 1;
	}
}

/* The input's string member `name` equals `have` (both absent or NULL: equal). */
static int
same(const json_t *o, const char *name, const char *have)
{
	const char *want = json_string_value(json_object_get(o, name));

	return want == NULL ? have == NULL : have != NULL && strcmp(want, have) == 0;
}

static void
check_ok_record(const struct record *rec, const char *raw)
{
	json_t *o = json_loads(raw, 0, NULL);
	const char *why = NULL;

	if (!json_is_object(o))
		why = "not a JSON object";
	else if (!id_ok(rec->id) || strcmp(rec->id, "gate-14") != 0 || !same(o, "recordId", rec->id))
		why = "recordId";
	else if (!text_ok(rec->on_behalf_of) || !same(o, "onBehalfOf", rec->on_behalf_of))
		why = "onBehalfOf";
	else if (!text_ok(rec->basis) || !same(o, "basis", rec->basis))
		why = "basis";
	else if (rec->action[0] == '\0' || strchr(rec->action, '*') != NULL ||
	    !known(NULL, rec->action) || !same(o, "action", rec->action))
		why = "action";
	else if (!resource_ok(rec->resource) || !same(o, "resource", rec->resource))
		why = "resource";
	else if (!json_is_object(json_object_get(o, "parameters")))
		why = "parameters";
	else if (!json_is_string(json_object_get(o, "decidedAt")) ||
	    rec->decided_at_ms > NOW_MS + SKEW_MS)
		why = "decidedAt";
	else if (!json_is_string(json_object_get(o, "expiresAt")) ||
	    rec->expires_at_ms <= rec->decided_at_ms ||
	    rec->expires_at_ms - rec->decided_at_ms > WINDOW_MS)
		why = "expiresAt";
	else if (rec->iss != NULL && !same(o, "iss", rec->iss))
		why = "iss";
	json_decref(o);
	if (why != NULL) {
		fprintf(stderr, "fuzz_record: an OK record breaks warrantd(7) §3.1 (%s)\n", why);
		abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *raw = fuzz_cstr(data, size), *owner = NULL, detail[256];
	struct record *rec = NULL;
	struct record_policy pol = {
		.signature_required = 0, .algorithm = JWA_ES256, .issuer = NULL,
		.max_window_ms = WINDOW_MS, .clock_skew_ms = SKEW_MS, .max_bytes = 16384,
		.action_known = known,
	};
	enum record_status st = record_load(&pol, "gate-14", raw, NOW_MS, &rec, &owner,
	    detail, sizeof detail);

	if ((st == RECORD_OK) != (rec != NULL))
		abort();
	if (rec != NULL)
		check_ok_record(rec, raw);
	record_free(rec);
	free(owner);
	if (record_id_valid(raw) != id_ok(raw))
		abort();	/* the syntax on its own, both ways */
	free(raw);
	return 0;
}
