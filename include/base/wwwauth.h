/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wwwauth: the one reader of a WWW-Authenticate value (RFC 9110 §11.6.1):
 * challenges, each a scheme and its auth-params (token or quoted-string
 * values; a token68 is skipped). A token not followed by '=' opens a
 * challenge, a token followed by '=' is a parameter of the current one.
 * Quoted strings are read whole, so text inside them never matches. Scheme
 * and parameter names match without case, values exactly. Pure: `job`
 * asks it for Bearer error="invalid_token", `dpop` for DPoP's error.
 */
#ifndef WARRANTD_WWWAUTH_H
#define WARRANTD_WWWAUTH_H

#include <stddef.h>

#define WWWAUTH_VALUE_MAX	128	/* bytes of a value kept, with the NUL */

/* The first `param` of a challenge of `scheme` in `value` (NULL: none),
 * unquoted, into out (size n, cut to fit and to WWWAUTH_VALUE_MAX). 0, or
 * -1 when there is none (or n is 0). */
int wwwauth_param(const char *value, const char *scheme, const char *param, char *out,
		  size_t n);

/* 1 when some challenge of `scheme` in `value` has `param` equal to
 * `want`, else 0 (value NULL included). */
int wwwauth_has(const char *value, const char *scheme, const char *param, const char *want);

#endif
