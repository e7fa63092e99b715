/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_jws: the JWS parser and verifier of record_load (warrantd(7) §3.2), with a
 * parsed ES256 key, a raw RS256 key and an HS256 secret: the input is the
 * hash's `record` value. */
#include "fuzz.h"
#include "record.h"

static struct record_key *es, *hs;
static unsigned char *rs_pem;
static size_t rs_len;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char err[256];
	size_t len;
	unsigned char *pem = fuzz_data_file("test-es256.pub", &len);

	(void)argc, (void)argv;
	es = record_key_new(JWA_ES256, pem, len, err, sizeof err);
	free(pem);
	pem = fuzz_data_file("test-hs256.secret", &len);
	while (len > 0 && (pem[len - 1] == '\n' || pem[len - 1] == ' '))
		len--;
	hs = record_key_new(JWA_HS256, pem, len, err, sizeof err);
	free(pem);
	rs_pem = fuzz_data_file("test-rs256.pub", &rs_len);
	if (es == NULL || hs == NULL)
		abort();
	return 0;
}

static void
load(const struct record_policy *pol, const char *raw)
{
	struct record *rec = NULL;
	char *owner = NULL, detail[256];
	enum record_status st = record_load(pol, "gate-14", raw, 1796011200000LL, &rec, &owner,
	    detail, sizeof detail);

	if ((st == RECORD_OK) != (rec != NULL) || strlen(detail) >= sizeof detail)
		abort();
	record_free(rec);
	free(owner);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *raw = fuzz_cstr(data, size);
	struct record_policy pol = {
		.signature_required = 1, .algorithm = JWA_ES256, .parsed_key = es,
		.max_window_ms = 604800000LL, .clock_skew_ms = 60000, .max_bytes = 16384,
	};

	load(&pol, raw);
	pol.algorithm = JWA_HS256;
	pol.parsed_key = hs;
	load(&pol, raw);
	pol.algorithm = JWA_RS256;
	pol.parsed_key = NULL;
	pol.key = rs_pem;
	pol.key_len = rs_len;
	load(&pol, raw);
	free(raw);
	return 0;
}
