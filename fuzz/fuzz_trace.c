/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_trace: a stream entry's traceparent (warrantd(7) §13). What is
 * accepted goes into log lines and headers: it must be 55 bytes of lower
 * hex and '-', version 00, and parse back to itself. */
#include "fuzz.h"
#include "core/trace.h"

#include <string.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[TRACE_LEN + 1], back[TRACE_LEN + 1];

	if (trace_parse((const char *)data, size, out) != 0) {
		if (out[0] != '\0')
			abort();
		return 0;
	}
	if (strlen(out) != TRACE_LEN || strspn(out, "0123456789abcdef-") != TRACE_LEN ||
	    strncmp(out, "00-", 3) != 0)
		abort();
	if (trace_parse(out, TRACE_LEN, back) != 0 || strcmp(out, back) != 0)
		abort();
	return 0;
}
