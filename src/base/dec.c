/* SPDX-License-Identifier: BSD-2-Clause */
/* dec: decimal numbers without printf (dec.h). */
#include "base/dec.h"

size_t
dec_len(size_t n)
{
	size_t k = 1;

	while (n >= 10) {
		n /= 10;
		k++;
	}
	return k;
}

char *
dec_put(char *p, size_t n)
{
	if (n < 10) {	/* most lengths of a script's arguments */
		*p = (char)('0' + n);
		return p + 1;
	}
	char *end = p + dec_len(n), *q = end;

	do {
		*--q = (char)('0' + n % 10);
		n /= 10;
	} while (n != 0);
	return end;
}
