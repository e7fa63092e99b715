/* SPDX-License-Identifier: BSD-2-Clause */
/* wwwauth: WWW-Authenticate challenges (see wwwauth.h). */
#define _DEFAULT_SOURCE
#include "base/wwwauth.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* RFC 9110 §5.6.2 tchar. */
static int
tchar(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	    (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static const char *
skip_ows(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* An auth-param value (token, with a token68's '/' and '=', or
 * quoted-string) at p into val (size n, cut); returns what follows it. */
static const char *
read_value(const char *p, char *val, size_t n)
{
	size_t len = 0;

	if (*p == '"') {
		for (p++; *p && *p != '"'; p++) {
			if (*p == '\\' && p[1])
				p++;
			if (len + 1 < n)
				val[len++] = *p;
		}
		if (*p == '"')
			p++;
	} else {
		for (; tchar((unsigned char)*p) || *p == '/' || *p == '='; p++)
			if (len + 1 < n)
				val[len++] = *p;
	}
	val[len] = '\0';
	return p;
}

static int
name_is(const char *name, size_t len, const char *want)
{
	return strlen(want) == len && strncasecmp(name, want, len) == 0;
}

/* Each `param` of a challenge of `scheme`, in order: stop(arg, value)
 * returning 1 ends the walk with 1. 0 when none did. */
static int
walk(const char *value, const char *scheme, const char *param,
     int (*stop)(const void *arg, const char *val), const void *arg)
{
	const char *p = value;
	int in_scheme = 0;

	if (value == NULL)
		return 0;
	while (*p) {
		const char *name = p;
		size_t name_len;
		char val[WWWAUTH_VALUE_MAX];

		if (*p == '"') {
			p = read_value(p, val, sizeof val);	/* stray: skipped whole */
			continue;
		}
		if (!tchar((unsigned char)*p)) {
			p++;	/* commas, blanks, stray bytes */
			continue;
		}
		while (tchar((unsigned char)*p))
			p++;
		name_len = (size_t)(p - name);
		p = skip_ows(p);
		if (*p != '=') {
			in_scheme = name_is(name, name_len, scheme);	/* a new challenge */
			continue;
		}
		p = skip_ows(p + 1);
		if (*p == '=' || *p == ',' || *p == '\0') {
			while (*p == '=')
				p++;	/* the padding of a token68 */
			continue;
		}
		p = read_value(p, val, sizeof val);
		if (in_scheme && name_is(name, name_len, param) && stop(arg, val))
			return 1;
	}
	return 0;
}

struct out {
	char *buf;
	size_t n;
};

static int
take_first(const void *arg, const char *val)
{
	const struct out *o = arg;

	snprintf(o->buf, o->n, "%s", val);
	return 1;
}

int
wwwauth_param(const char *value, const char *scheme, const char *param, char *out, size_t n)
{
	struct out o = {out, n};

	if (n == 0)
		return -1;
	return walk(value, scheme, param, take_first, &o) ? 0 : -1;
}

static int
equals(const void *arg, const char *val)
{
	return strcmp(val, arg) == 0;
}

int
wwwauth_has(const char *value, const char *scheme, const char *param, const char *want)
{
	return walk(value, scheme, param, equals, want);
}
