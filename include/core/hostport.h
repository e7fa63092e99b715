/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * hostport: a "host:port, host:port, ..." list ([redis] sentinels and
 * cluster), parsed once by config into typed fields. Pure.
 */
#ifndef WARRANTD_HOSTPORT_H
#define WARRANTD_HOSTPORT_H

#include <stddef.h>

#define HOSTPORT_MAX		8	/* entries of one list */
#define HOSTPORT_HOST_MAX	256	/* bytes of a host, with the NUL */

/* Plain data: one host and its port (1 to 65535). */
struct hostport {
	char host[HOSTPORT_HOST_MAX];
	int port;
};

/* "host:port, host:port, ..." (IPv6 as [addr]:port; blanks around each
 * entry ignored), 1 to HOSTPORT_MAX of them, into out (room for
 * HOSTPORT_MAX), their number in *n. 0, or -1 with one line for people in
 * err. */
int hostport_parse_list(const char *s, struct hostport *out, size_t *n, char *err,
			size_t errlen)
	__attribute__((warn_unused_result));

#endif
