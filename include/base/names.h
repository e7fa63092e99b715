/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * names: the one lookup from a name back to its index in a name table, for
 * the enums that are written to Redis as words (reason codes, job states,
 * the transition's replies). Pure.
 */
#ifndef WARRANTD_NAMES_H
#define WARRANTD_NAMES_H

#include <stddef.h>

/*
 * The index below n of the first entry whose name equals s, or -1 when none
 * does or s is NULL. The table is n entries of `size` bytes each, starting
 * with the name (a `const char *`, NULL: no name): a plain array of names
 * (size = sizeof(char *)) or an array of structs whose first member is the
 * name. The table is borrowed.
 */
int names_find(const void *table, size_t n, size_t size, const char *s)
	__attribute__((warn_unused_result));

#endif
