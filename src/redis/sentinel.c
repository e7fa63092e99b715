/* SPDX-License-Identifier: BSD-2-Clause */
/* sentinel: where the primary is, by Redis Sentinel. */
#define _DEFAULT_SOURCE
#include "redis/sentinel.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


int
sentinel_parse_reply(const redisReply *r, char *host, size_t hostlen, int *port)
{
	if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING)
		return -1;
	/* length-delimited: a NUL inside either would make the C string name
	 * another host or port than the one sent (issue 37 item 6) */
	const redisReply *h = r->element[0], *pr = r->element[1];
	char *end;
	long p = strtol(pr->str, &end, 10);
	if (end != pr->str + pr->len || p < 1 || p > 65535 || h->len == 0 || h->len >= hostlen ||
	    strlen(h->str) != h->len)
		return -1;
	snprintf(host, hostlen, "%s", r->element[0]->str);
	*port = (int)p;
	return 0;
}

int
sentinel_is_master(const redisReply *r)
{
	return r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
	    r->element[0]->type == REDIS_REPLY_STRING && r->element[0]->len == 6 &&
	    memcmp(r->element[0]->str, "master", 6) == 0;
}
