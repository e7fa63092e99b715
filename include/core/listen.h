/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * listen: where a local server listens ([metrics] listen today): a numeric
 * IPv4 or IPv6 address and port, or a unix socket. Pure: config checks the
 * value with it, the server (metrics) binds what it returns.
 */
#ifndef WARRANTD_LISTEN_H
#define WARRANTD_LISTEN_H

#include <stddef.h>
#include <sys/socket.h>

/* Plain data: a parsed listen address. */
struct listen_addr {
	struct sockaddr_storage sa;
	socklen_t salen;
	int is_unix;
	int is_loopback;	/* 127.0.0.0/8, ::1 or a unix socket */
};

/*
 * "IPV4:PORT", "[IPV6]:PORT" (numeric addresses only, no names: a name could
 * resolve elsewhere tomorrow) or "unix:/absolute/path", into out. A
 * non-loopback address is refused unless allow_remote. 0, or -1 with one
 * line in err.
 */
int listen_parse(const char *s, int allow_remote, struct listen_addr *out, char *err,
		 size_t errlen)
	__attribute__((warn_unused_result));

#endif
