/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sentinel: finding the Redis primary through Redis Sentinel (issue 13).
 * The worker asks the sentinels, in the order configured, for the address
 * of `master_name` (SENTINEL get-master-addr-by-name) before each connect;
 * the connection then confirms the node is a primary (ROLE) and drops it on
 * -READONLY, so a failover is followed by the next connect.
 *
 * Pure: the list and the answers parsed. Both programs ask the sentinels
 * through disc.h (asynchronously, on a libev loop).
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

#endif
