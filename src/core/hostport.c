/* SPDX-License-Identifier: BSD-2-Clause */
/* hostport: "host:port, ..." lists (see hostport.h). */
#include "core/hostport.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static const char *
skip_blank(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* One "host:port" of length len at p. */
static int
parse_one(const char *p, size_t len, struct hostport *a)
{
	const char *colon, *host = p;
	size_t hostlen;

	if (len > 0 && *p == '[') {
		const char *close = memchr(p, ']', len);
		if (close == NULL || close + 1 >= p + len || close[1] != ':')
			return -1;
		host = p + 1;
		hostlen = (size_t)(close - host);
		colon = close + 1;
	} else {
		colon = NULL;
		for (const char *q = p; q < p + len; q++)
			if (*q == ':')
				colon = q;
		if (colon == NULL)
			return -1;
		hostlen = (size_t)(colon - p);
	}
	if (hostlen == 0 || hostlen >= sizeof a->host)
		return -1;
	memcpy(a->host, host, hostlen);
	a->host[hostlen] = '\0';
	long port = 0;
	const char *q = colon + 1;
	if (q >= p + len)
		return -1;
	for (; q < p + len; q++) {
		if (!isdigit((unsigned char)*q) || (port = port * 10 + (*q - '0')) > 65535)
			return -1;
	}
	if (port < 1)
		return -1;
	a->port = (int)port;
	return 0;
}

int
hostport_parse_list(const char *s, struct hostport *out, size_t *n, char *err,
			size_t errlen)
{
	const char *p = s;

	*n = 0;
	while (p != NULL && *(p = skip_blank(p)) != '\0') {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (*n == HOSTPORT_MAX) {
			snprintf(err, errlen, "more than %d sentinels", HOSTPORT_MAX);
			return -1;
		}
		if (parse_one(p, len, &out[*n]) < 0) {
			snprintf(err, errlen, "'%.*s' is not host:port", (int)(len > 80 ? 80 : len), p);
			return -1;
		}
		(*n)++;
		p = end ? end + 1 : NULL;
	}
	if (*n == 0) {
		snprintf(err, errlen, "no sentinel named");
		return -1;
	}
	return 0;
}
