/* SPDX-License-Identifier: BSD-2-Clause */
/* trace: W3C Trace Context traceparent, parsed and made (warrantd(7) §13). */
#include "core/trace.h"

#include <stdio.h>
#include <string.h>

/* n lower-case hex digits at s; *nonzero set when one is not '0'. */
static int
hex_run(const char *s, size_t n, int *nonzero)
{
	*nonzero = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return 0;
		*nonzero |= c != '0';
	}
	return 1;
}

int
trace_parse(const char *s, size_t len, char out[TRACE_LEN + 1])
{
	int nz;

	out[0] = '\0';
	if (s == NULL || len < TRACE_LEN)
		return -1;
	/* version 00 is exactly 55; a later one may append "-more" */
	if (!hex_run(s, 2, &nz) || (s[0] == 'f' && s[1] == 'f') ||
	    (len > TRACE_LEN && (!nz || s[TRACE_LEN] != '-')) ||
	    (len == TRACE_LEN + 1 && nz))	/* "-" with nothing after it */
		return -1;
	if (s[2] != '-' || s[35] != '-' || s[52] != '-')
		return -1;
	if (!hex_run(s + 3, 32, &nz) || !nz || !hex_run(s + 36, 16, &nz) || !nz ||
	    !hex_run(s + 53, 2, &nz))
		return -1;
	memcpy(out, "00", 2);
	memcpy(out + 2, s + 2, TRACE_LEN - 2);
	out[TRACE_LEN] = '\0';
	return 0;
}

void
trace_new(uint64_t a, uint64_t b, uint64_t c, char out[TRACE_LEN + 1])
{
	if (a == 0 && b == 0)
		b = 1;
	if (c == 0)
		c = 1;
	snprintf(out, TRACE_LEN + 1, "00-%016llx%016llx-%016llx-01", (unsigned long long)a,
	    (unsigned long long)b, (unsigned long long)c);
}
