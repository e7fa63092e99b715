/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * urltpl: the action URL templates of warrantd(7) R7.
 *
 *   {resource}    each path segment percent-encoded, '/' kept
 *   {action}, {recordId}, {onBehalfOf}   percent-encoded whole
 *
 * Everything outside the braces is copied as written. Pure.
 */
#ifndef WARRANTD_URLTPL_H
#define WARRANTD_URLTPL_H

#include <stddef.h>

struct urltpl_vars {
	const char *resource, *action, *record_id, *on_behalf_of;
};

/* 0 when every {name} in tpl is known, braces balance and every placeholder
 * is in the path or the query (never the scheme, host, port or fragment),
 * else -1 and a message in err. urltpl_expand refuses such a template too. */
int urltpl_check(const char *tpl, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* The expanded URL (caller frees), or NULL with a message in err. */
char *urltpl_expand(const char *tpl, const struct urltpl_vars *vars, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* Appends s percent-encoded (RFC 3986 unreserved kept; '/' kept when
 * keep_slash) to dst of size n at *len. -1 when it does not fit. */
int urltpl_encode(char *dst, size_t n, size_t *len, const char *s, int keep_slash);

#endif
