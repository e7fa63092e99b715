/* SPDX-License-Identifier: BSD-2-Clause */
/* names: the one name-to-index lookup of the name tables (names.h). */
#include "base/names.h"

#include <string.h>

int
names_find(const void *table, size_t n, size_t size, const char *s)
{
	const char *entry = table;

	if (s == NULL)
		return -1;
	/* A struct's first member is at its start, so each entry reads as a
	 * pointer to its name. */
	for (size_t i = 0; i < n; i++, entry += size) {
		const char *name = *(const char *const *)(const void *)entry;
		if (name != NULL && strcmp(name, s) == 0)
			return (int)i;
	}
	return -1;
}
