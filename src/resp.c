/* SPDX-License-Identifier: BSD-2-Clause */
/* resp: RESP bulk strings and numbers, no printf. */
#include "resp.h"

#include <string.h>

size_t
resp_dec_len(size_t n)
{
	size_t k = 1;

	while (n >= 10) {
		n /= 10;
		k++;
	}
	return k;
}

char *
resp_put_dec(char *p, size_t n)
{
	if (n < 10) {	/* most lengths of a script's arguments */
		*p = (char)('0' + n);
		return p + 1;
	}
	char *end = p + resp_dec_len(n), *q = end;

	do {
		*--q = (char)('0' + n % 10);
		n /= 10;
	} while (n != 0);
	return end;
}

size_t
resp_bulk_len(size_t n)
{
	return 1 + resp_dec_len(n) + 2 + n + 2;
}

char *
resp_put_bulk(char *p, const char *s, size_t n)
{
	*p++ = '$';
	p = resp_put_dec(p, n);
	*p++ = '\r';
	*p++ = '\n';
	memcpy(p, s, n);
	p += n;
	*p++ = '\r';
	*p++ = '\n';
	return p;
}
