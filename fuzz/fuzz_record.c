/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_record: validation of a record's content (warrantd(7) §3.1) with the
 * signature off, so every input reaches the field rules; and the recordId
 * syntax on its own. */
#include "fuzz.h"
#include "record.h"

static int
known(void *ctx, const char *action)
{
	(void)ctx;
	return strcmp(action, "gate.open") == 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *raw = fuzz_cstr(data, size), *owner = NULL, detail[256];
	struct record *rec = NULL;
	struct record_policy pol = {
		.signature_required = 0, .algorithm = JWA_ES256, .issuer = NULL,
		.max_window_ms = 604800000LL, .clock_skew_ms = 60000, .max_bytes = 16384,
		.action_known = known,
	};
	enum record_status st = record_load(&pol, "gate-14", raw, 1796011200000LL, &rec, &owner,
	    detail, sizeof detail);

	if ((st == RECORD_OK) != (rec != NULL))
		abort();
	if (rec != NULL) {	/* what passed keeps the rules */
		if (!record_id_valid(rec->id) || strchr(rec->resource, '\\') != NULL ||
		    strstr(rec->resource, "//") != NULL || strlen(rec->basis) > 1024 ||
		    strlen(rec->on_behalf_of) > 1024 || rec->expires_at_ms <= rec->decided_at_ms)
			abort();
	}
	record_free(rec);
	free(owner);
	(void)record_id_valid(raw);
	free(raw);
	return 0;
}
