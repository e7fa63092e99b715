/* SPDX-License-Identifier: BSD-2-Clause */
/* sentinel: where the primary is, by Redis Sentinel. */
#define _DEFAULT_SOURCE
#include "redis/sentinel.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "redis/rtls.h"

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

/* One sentinel: 0 with the address, -1 with why. */
static int
ask(struct rtls_ctx *tls, const struct hostport *a, const char *master,
    const char *password, long timeout_ms, char *host, size_t hostlen, int *port, char *why,
    size_t whylen)
{
	struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
	redisContext *c = rtls_redis_connect(tls, a->host, a->port, timeout_ms);
	redisReply *r = NULL;
	int rc = -1;

	if (c == NULL || c->err) {
		snprintf(why, whylen, "%s", c ? c->errstr : "out of memory");
		goto out;
	}
	redisSetTimeout(c, tv);
	if (password != NULL) {
		r = redisCommand(c, "AUTH %s", password);
		if (r == NULL || r->type == REDIS_REPLY_ERROR) {
			snprintf(why, whylen, "AUTH refused");
			goto out;
		}
		freeReplyObject(r);
	}
	r = redisCommand(c, "SENTINEL get-master-addr-by-name %s", master);
	if (sentinel_parse_reply(r, host, hostlen, port) == 0)
		rc = 0;
	else
		snprintf(why, whylen, "%s", r == NULL ? c->errstr : r->type == REDIS_REPLY_NIL ?
		    "does not know the master name" : "unexpected reply");
out:
	freeReplyObject(r);
	redisFree(c);
	return rc;
}

int
sentinel_master(const struct hostport *s, size_t n, const char *master_name,
		const char *password, long timeout_ms, char *host, size_t hostlen, int *port,
		char *err, size_t errlen)
{
	return sentinel_master_tls(NULL, s, n, master_name, password, timeout_ms, host, hostlen,
	    port, err, errlen);
}

int
sentinel_master_tls(struct rtls_ctx *tls, const struct hostport *s, size_t n,
		    const char *master_name, const char *password, long timeout_ms, char *host,
		    size_t hostlen, int *port, char *err, size_t errlen)
{
	char why[160] = "no sentinel";

	for (size_t i = 0; i < n; i++)
		if (ask(tls, &s[i], master_name, password, timeout_ms, host, hostlen, port, why,
		    sizeof why) == 0)
			return 0;
	snprintf(err, errlen, "no sentinel answered for %s (last: %s)", master_name, why);
	return -1;
}
