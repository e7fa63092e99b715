/* SPDX-License-Identifier: BSD-2-Clause */
/* shard: hash tags (see shard.h). */
#include "core/shard.h"

#include <string.h>

int
shard_tag(const char *key, size_t len, size_t *start, size_t *n)
{
	const char *open = memchr(key, '{', len);

	if (open == NULL)
		return 0;
	size_t s = (size_t)(open - key) + 1;
	const char *close = memchr(key + s, '}', len - s);
	if (close == NULL || close == key + s)
		return 0;	/* no '}', or "{}": the whole key is hashed */
	*start = s;
	*n = (size_t)(close - (key + s));
	return 1;
}

int
shard_has_tag(const char *key)
{
	size_t s, n;

	return shard_tag(key, strlen(key), &s, &n);
}
