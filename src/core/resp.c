/* SPDX-License-Identifier: BSD-2-Clause */
/* resp: RESP bulk strings, no printf. */
#include "core/resp.h"

#include <string.h>

size_t
resp_bulk_len(size_t n)
{
	return 1 + dec_len(n) + 2 + n + 2;
}

char *
resp_put_bulk(char *p, const char *s, size_t n)
{
	*p++ = '$';
	p = dec_put(p, n);
	*p++ = '\r';
	*p++ = '\n';
	memcpy(p, s, n);
	p += n;
	*p++ = '\r';
	*p++ = '\n';
	return p;
}
