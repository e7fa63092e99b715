/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sentinel: finding the Redis primary through Redis Sentinel (issue 13).
 * The worker asks the sentinels, in the order configured, for the address
 * of `master_name` (SENTINEL get-master-addr-by-name) before each connect;
 * the connection then confirms the node is a primary (ROLE) and drops it on
 * -READONLY, so a failover is followed by the next connect.
 *
 * Parsing is pure. The daemon asks asynchronously (disc.h); sentinel_master
 * asks over the network, synchronously, with a timeout per sentinel: for
 * warrantctl, a command that may wait.
 */
#ifndef WARRANTD_SENTINEL_H
#define WARRANTD_SENTINEL_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "core/hostport.h"	/* the sentinels: [redis] sentinels, parsed by config */

/* The reply to SENTINEL get-master-addr-by-name: [host, port]. 0, or -1
 * (nil: the sentinel does not know the name; anything else malformed). */
int sentinel_parse_reply(const redisReply *r, char *host, size_t hostlen, int *port)
	__attribute__((warn_unused_result));

/* The reply to ROLE: 1 when its first element is "master", else 0. */
int sentinel_is_master(const redisReply *r);

/* Asks each sentinel in turn (connect and command each bounded by
 * timeout_ms; AUTH with `password` when not NULL) for the primary of
 * `master_name`. 0 with host/port set, or -1 with err (never the password). */
int sentinel_master(const struct hostport *s, size_t n, const char *master_name,
		    const char *password, long timeout_ms, char *host, size_t hostlen, int *port,
		    char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* The same, over TLS with tls ([redis] tls, rtls.h); NULL: clear text. */
struct rtls_ctx;
int sentinel_master_tls(struct rtls_ctx *tls, const struct hostport *s, size_t n,
			const char *master_name, const char *password, long timeout_ms,
			char *host, size_t hostlen, int *port, char *err, size_t errlen)
	__attribute__((warn_unused_result));

#endif
