/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_httpdate: Retry-After (delay-seconds or IMF-fixdate), the HTTP-date
 * and RFC 3339 parsers, and WWW-Authenticate's error="invalid_token". */
#include "fuzz.h"
#include "core/job.h"
#include "base/wtime.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_cstr(data, size);
	int64_t ms = 0, now = 1796011200000LL;
	char buf[WTIME_RFC3339_LEN];

	if (job_retry_after_ms(s, now) < -1)
		abort();
	if (wtime_parse_http_date(s, &ms) == 0 && (job_retry_after_ms(s, ms) != 0))
		abort();	/* a date at now is no delay */
	if (wtime_parse_rfc3339(s, &ms) == 0) {
		int64_t back = 0;
		wtime_format_rfc3339(ms, buf, sizeof buf);
		if (wtime_parse_rfc3339(buf, &back) != 0 || back != ms)
			abort();	/* what parses formats and parses back */
	}
	(void)job_www_auth_invalid_token(s);
	free(s);
	return 0;
}
