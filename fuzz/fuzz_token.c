/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_token: the token endpoint's response (RFC 6749 §5.1, §5.2) and the
 * access token's JWT exp, as the IdP (hostile, in this exercise) sends them. */
#include "fuzz.h"
#include "token.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *tok = NULL, err[256];
	long long expires = 0;
	char *body = fuzz_cstr(data, size);

	if (token_parse_response((const char *)data, size, &tok, &expires, err, sizeof err) == 0) {
		for (const char *p = tok; *p; p++)
			if (*p < 0x21 || *p > 0x7e)
				abort();	/* it goes into a header */
		(void)token_lifetime_ms(expires, tok, 1796011200000LL);
		free(tok);
	}
	/* the input itself as an access token whose exp is read */
	(void)token_lifetime_ms(-1, body, 1796011200000LL);
	(void)token_lifetime_ms(300, body, 1796011200000LL);
	free(body);
	return 0;
}
