/* SPDX-License-Identifier: BSD-2-Clause */
/* listen: where a local server listens (see listen.h). */
#include "core/listen.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

static int
parse_port(const char *s, int *port)
{
	size_t n = strlen(s);
	long p = n >= 1 && n <= 5 && strspn(s, "0123456789") == n ? strtol(s, NULL, 10) : 0;

	if (p < 1 || p > 65535)
		return -1;
	*port = (int)p;
	return 0;
}

int
listen_parse(const char *s, int allow_remote, struct listen_addr *out, char *err,
	     size_t errlen)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *colon;
	int port;

	memset(out, 0, sizeof *out);
	if (strncmp(s, "unix:", 5) == 0) {
		struct sockaddr_un *un = (struct sockaddr_un *)&out->sa;
		const char *path = s + 5;
		if (path[0] != '/' || strlen(path) >= sizeof un->sun_path) {
			snprintf(err, errlen, "'%.60s': a unix socket needs an absolute path "
			    "shorter than %zu bytes", s, sizeof un->sun_path);
			return -1;
		}
		un->sun_family = AF_UNIX;
		memcpy(un->sun_path, path, strlen(path) + 1);
		out->salen = (socklen_t)sizeof *un;
		out->is_unix = out->is_loopback = 1;
		return 0;
	}
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');
		if (!rb || rb[1] != ':' || (size_t)(rb - s - 1) >= sizeof host)
			goto bad;
		memcpy(host, s + 1, (size_t)(rb - s - 1));
		host[rb - s - 1] = '\0';
		colon = rb + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || (size_t)(colon - s) >= sizeof host)
			goto bad;
		memcpy(host, s, (size_t)(colon - s));
		host[colon - s] = '\0';
	}
	if (parse_port(colon + 1, &port) < 0)
		goto bad;
	struct sockaddr_in *v4 = (struct sockaddr_in *)&out->sa;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&out->sa;
	if (s[0] != '[' && inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)port);
		out->salen = (socklen_t)sizeof *v4;
		out->is_loopback = (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
	} else if (s[0] == '[' && inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)port);
		out->salen = (socklen_t)sizeof *v6;
		out->is_loopback = IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
	} else {
		goto bad;
	}
	if (!out->is_loopback && !allow_remote) {
		snprintf(err, errlen, "'%.60s' is not a loopback address: set allow_remote = yes "
		    "to serve metrics beyond this host", s);
		return -1;
	}
	return 0;
bad:
	snprintf(err, errlen, "'%.60s' is not IPV4:PORT, [IPV6]:PORT or unix:/PATH", s);
	return -1;
}

