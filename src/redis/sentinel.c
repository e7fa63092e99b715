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

static const char *
skip_blank(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* One "host:port" of length len at p. */
static int
parse_one(const char *p, size_t len, struct sentinel_addr *a)
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
sentinel_parse_list(const char *s, struct sentinel_addr *out, size_t *n, char *err,
		    size_t errlen)
{
	const char *p = s;

	*n = 0;
	while (p != NULL && *(p = skip_blank(p)) != '\0') {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (*n == SENTINEL_MAX) {
			snprintf(err, errlen, "more than %d sentinels", SENTINEL_MAX);
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
ask(struct rtls_ctx *tls, const struct sentinel_addr *a, const char *master,
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
sentinel_master(const struct sentinel_addr *s, size_t n, const char *master_name,
		const char *password, long timeout_ms, char *host, size_t hostlen, int *port,
		char *err, size_t errlen)
{
	return sentinel_master_tls(NULL, s, n, master_name, password, timeout_ms, host, hostlen,
	    port, err, errlen);
}

int
sentinel_master_tls(struct rtls_ctx *tls, const struct sentinel_addr *s, size_t n,
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
