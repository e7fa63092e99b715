/* SPDX-License-Identifier: BSD-2-Clause */
#include <string.h>

#include "wasset.h"

const struct wasset *
wasset_find(const char *name)
{
	for (const struct wasset *a = wasset_table; a->name; a++)
		if (strcmp(a->name, name) == 0)
			return a;
	return NULL;
}
