/* SPDX-License-Identifier: BSD-2-Clause */
/* allowlist: the hosts a Redis connection may go to ([redis] allow_hosts). */
#define _DEFAULT_SOURCE
#include "core/allowlist.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "base/log.h"

#define NAME_MAX_LEN	255
#define SEEN_MAX	32	/* refused host:port remembered for log-once */
#define ANNOUNCED_MAX	1024	/* nodes a seed may announce */

enum kind { K_NAME, K_V4, K_V6 };

struct entry {
	enum kind kind;
	unsigned char addr[16];	/* K_V4: the first 4 bytes */
	int bits;		/* prefix length */
	int port;		/* 0: any port */
	int announced;		/* from a seed's CLUSTER SHARDS: replaced by the next */
	char name[NAME_MAX_LEN + 1];
};

struct allowlist {
	struct entry *e;
	size_t n, cap;
	long long *counter;
	int allow_plaintext;
	char seen[SEEN_MAX][NAME_MAX_LEN + 8];	/* "host port", logged already */
	size_t nseen, next_seen;
};

struct allowlist *
allowlist_new(void)
{
	return calloc(1, sizeof(struct allowlist));
}

void
allowlist_free(struct allowlist *a)
{
	if (a == NULL)
		return;
	free(a->e);
	free(a);
}

static int
push(struct allowlist *a, const struct entry *x)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 8;
		struct entry *ne = realloc(a->e, cap * sizeof *ne);
		if (ne == NULL)
			return -1;
		a->e = ne;
		a->cap = cap;
	}
	a->e[a->n++] = *x;
	return 0;
}

/* An address (IPv4, IPv6, IPv4-mapped IPv6 as IPv4) into *x; -1 when s is
 * not one. */
static int
parse_addr(const char *s, struct entry *x)
{
	unsigned char b[16];

	memset(x->addr, 0, sizeof x->addr);
	if (inet_pton(AF_INET, s, b) == 1) {
		x->kind = K_V4;
		memcpy(x->addr, b, 4);
		x->bits = 32;
		return 0;
	}
	if (inet_pton(AF_INET6, s, b) == 1) {
		static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
		if (memcmp(b, mapped, 12) == 0) {
			x->kind = K_V4;
			memcpy(x->addr, b + 12, 4);
			x->bits = 32;
		} else {
			x->kind = K_V6;
			memcpy(x->addr, b, 16);
			x->bits = 128;
		}
		return 0;
	}
	return -1;
}

/* A host name as DNS allows it: letters, digits, '-', '.', '_'. */
static int
is_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > NAME_MAX_LEN)
		return 0;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_'))
			return 0;
	return 1;
}

/* A host, an address or a CIDR block, without port. */
static int
parse_bare(const char *s, struct entry *x)
{
	char buf[NAME_MAX_LEN + 1];
	const char *slash = strchr(s, '/');

	memset(x, 0, sizeof *x);
	if (strlen(s) > NAME_MAX_LEN)
		return -1;
	if (slash == NULL) {
		if (parse_addr(s, x) == 0)
			return 0;
		if (!is_name(s))
			return -1;
		x->kind = K_NAME;
		snprintf(x->name, sizeof x->name, "%s", s);
		size_t n = strlen(x->name);
		if (n > 1 && x->name[n - 1] == '.')
			x->name[n - 1] = '\0';
		return 0;
	}
	memcpy(buf, s, (size_t)(slash - s));
	buf[slash - s] = '\0';
	if (parse_addr(buf, x) < 0)
		return -1;
	char *end;
	long bits = strtol(slash + 1, &end, 10);
	if (end == slash + 1 || *end != '\0' || bits < 0 || bits > (x->kind == K_V4 ? 32 : 128))
		return -1;
	x->bits = (int)bits;
	return 0;
}

/* "65535" into *port (1..65535); -1 when it is not one. */
static int
parse_port(const char *s, int *port)
{
	char *end;
	long v;

	if (*s < '0' || *s > '9' || strlen(s) > 5)
		return -1;
	v = strtol(s, &end, 10);
	if (*end != '\0' || v < 1 || v > 65535)
		return -1;
	*port = (int)v;
	return 0;
}

/* One entry: host, address or CIDR block, with an optional port: "h:p",
 * "a.b.c.d/n:p", "[v6]:p", "[v6/n]:p"; a bare IPv6 address or block (more
 * than one ':') has no port. */
static int
parse_entry(const char *s, struct entry *x)
{
	char buf[NAME_MAX_LEN + 1];
	size_t n = strlen(s);
	int port = 0;

	if (n > NAME_MAX_LEN)
		return -1;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (close == NULL || close == s + 1 || memchr(s + 1, ':', (size_t)(close - s - 1)) == NULL)
			return -1;	/* brackets hold an IPv6 address only */
		if (close[1] != '\0' && (close[1] != ':' || parse_port(close + 2, &port) < 0))
			return -1;
		memcpy(buf, s + 1, (size_t)(close - s - 1));
		buf[close - s - 1] = '\0';
		if (parse_bare(buf, x) < 0 || x->kind != K_V6)
			return -1;
		x->port = port;
		return 0;
	}
	const char *colon = strchr(s, ':');
	if (colon != NULL && strchr(colon + 1, ':') == NULL) {
		if (parse_port(colon + 1, &port) < 0)
			return -1;
		memcpy(buf, s, (size_t)(colon - s));
		buf[colon - s] = '\0';
		if (parse_bare(buf, x) < 0)
			return -1;
		x->port = port;
		return 0;
	}
	return parse_bare(s, x);
}

int
allowlist_add_list(struct allowlist *a, const char *list, char *err, size_t errlen)
{
	const char *p = list;

	if (list == NULL || list[strspn(list, " \t")] == '\0') {
		snprintf(err, errlen, "allow_hosts: no host named");
		return -1;
	}
	while (p != NULL && *p != '\0') {
		while (*p == ' ' || *p == '\t')
			p++;
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		char one[NAME_MAX_LEN + 1];
		struct entry x;
		if (len == 0 || len > NAME_MAX_LEN) {
			snprintf(err, errlen, "allow_hosts: an empty or overlong entry");
			return -1;
		}
		memcpy(one, p, len);
		one[len] = '\0';
		if (parse_entry(one, &x) < 0) {
			snprintf(err, errlen, "allow_hosts: '%.80s' is not a host name, an address "
			    "or a CIDR block, with an optional :port ([v6]:port)", one);
			return -1;
		}
		if (push(a, &x) < 0) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		p = end ? end + 1 : NULL;
	}
	return 0;
}

/* The host (a name or an address) with port, and -- a name -- each
 * address it resolves to now (blocking: at start only). */
static int
add_exact(struct allowlist *a, const char *host, int port, int announced)
{
	struct entry x;

	if (host == NULL || port <= 0 || port > 65535 || strchr(host, '/') != NULL ||
	    parse_bare(host, &x) < 0)
		return 0;	/* config.c refused what cannot be a host; a block is none */
	x.port = port;
	x.announced = announced;
	if (push(a, &x) < 0)
		return -1;
	if (x.kind != K_NAME || announced)
		return 0;
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;
	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return 0;
	int rc = 0;
	for (struct addrinfo *r = res; r != NULL && rc == 0; r = r->ai_next) {
		struct entry y = {.kind = K_V4, .bits = 32, .port = port};
		if (r->ai_family == AF_INET) {
			memcpy(y.addr, &((struct sockaddr_in *)(void *)r->ai_addr)->sin_addr, 4);
		} else if (r->ai_family == AF_INET6) {
			y.kind = K_V6;
			y.bits = 128;
			memcpy(y.addr, &((struct sockaddr_in6 *)(void *)r->ai_addr)->sin6_addr, 16);
		} else {
			continue;
		}
		rc = push(a, &y);
	}
	freeaddrinfo(res);
	return rc;
}

int
allowlist_add_host(struct allowlist *a, const char *host, int port)
{
	return add_exact(a, host, port, 0);
}

void
allowlist_announce_clear(struct allowlist *a)
{
	size_t k = 0;

	if (a == NULL)
		return;
	for (size_t i = 0; i < a->n; i++)
		if (!a->e[i].announced)
			a->e[k++] = a->e[i];
	a->n = k;
}

int
allowlist_announce(struct allowlist *a, const char *host, int port)
{
	size_t nann = 0;

	if (a == NULL)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		nann += a->e[i].announced;
	if (nann >= ANNOUNCED_MAX)
		return -1;
	/* a "[v6]" as a node may write it */
	char bare[NAME_MAX_LEN + 1];
	size_t n = host != NULL ? strlen(host) : 0;
	if (n > 2 && n - 2 <= NAME_MAX_LEN && host[0] == '[' && host[n - 1] == ']') {
		memcpy(bare, host + 1, n - 2);
		bare[n - 2] = '\0';
		host = bare;
	}
	return add_exact(a, host, port, 1);
}

/* The first bits of p and q are equal. */
static int
prefix_equal(const unsigned char *p, const unsigned char *q, int bits)
{
	int whole = bits / 8, rest = bits % 8;

	if (memcmp(p, q, (size_t)whole) != 0)
		return 0;
	if (rest == 0)
		return 1;
	unsigned char mask = (unsigned char)(0xff << (8 - rest));
	return (p[whole] & mask) == (q[whole] & mask);
}

int
allowlist_match(const struct allowlist *a, const char *host, int port)
{
	struct entry h;
	char bare[NAME_MAX_LEN + 1];
	size_t n = host != NULL ? strlen(host) : 0;

	/* "[::1]", as a redirect may write an IPv6 address (only one) */
	if (n > 2 && n - 2 <= NAME_MAX_LEN && host[0] == '[' && host[n - 1] == ']' &&
	    memchr(host, ':', n) != NULL) {
		memcpy(bare, host + 1, n - 2);
		bare[n - 2] = '\0';
		host = bare;
	}
	if (a == NULL || host == NULL || port <= 0 || port > 65535 || parse_bare(host, &h) < 0 ||
	    strchr(host, '/'))
		return 0;
	for (size_t i = 0; i < a->n; i++) {
		const struct entry *x = &a->e[i];
		if (x->kind != h.kind || (x->port != 0 && x->port != port))
			continue;
		if (x->kind == K_NAME ? strcasecmp(x->name, h.name) == 0 :
		    prefix_equal(x->addr, h.addr, x->bits))
			return 1;
	}
	return 0;
}

/* x admits loopback only: localhost, a block inside 127.0.0.0/8, ::1. */
static int
entry_loopback(const struct entry *x)
{
	static const unsigned char v6_loopback[16] = {[15] = 1};

	switch (x->kind) {
	case K_NAME:
		return strcasecmp(x->name, "localhost") == 0;
	case K_V4:
		return x->bits >= 8 && x->addr[0] == 127;
	default:
		return x->bits == 128 && memcmp(x->addr, v6_loopback, 16) == 0;
	}
}

int
allowlist_first_remote(const struct allowlist *a, char *buf, size_t len)
{
	for (size_t i = 0; a != NULL && i < a->n; i++) {
		const struct entry *x = &a->e[i];
		char addr[INET6_ADDRSTRLEN];
		if (entry_loopback(x))
			continue;
		if (x->kind == K_NAME)
			snprintf(buf, len, "%s", x->name);
		else if (inet_ntop(x->kind == K_V4 ? AF_INET : AF_INET6, x->addr, addr,
		    sizeof addr) == NULL)
			snprintf(buf, len, "?");
		else if (x->bits == (x->kind == K_V4 ? 32 : 128))
			snprintf(buf, len, "%s", addr);
		else
			snprintf(buf, len, "%s/%d", addr, x->bits);
		return 1;
	}
	return 0;
}

void
allowlist_count_in(struct allowlist *a, long long *counter)
{
	if (a != NULL)
		a->counter = counter;
}

static int seen_before(struct allowlist *a, const char *host, int port);

int
allowlist_check(struct allowlist *a, const char *host, int port, const char *via)
{
	if (a == NULL || allowlist_match(a, host, port))
		return 1;
	if (a->counter != NULL)
		(*a->counter)++;
	if (seen_before(a, host, port))
		return 0;
	/* the host is what a redirect or a sentinel said: quoted */
	log_warn("redis.host_refused", "host=%s port=%d via=%s", LOG_Q(host != NULL ? host : "-"),
	    port, via);
	return 0;
}

int
allowlist_cleartext_ok(const char *host, int unix_socket, int tls, int allow_plaintext)
{
	struct entry h;

	if (unix_socket || tls || allow_plaintext)
		return 1;
	if (host == NULL)
		return 0;
	if (strcasecmp(host, "localhost") == 0 || strcasecmp(host, "localhost.") == 0)
		return 1;
	if (strcmp(host, "[::1]") == 0)
		return 1;
	if (parse_addr(host, &h) < 0)
		return 0;	/* a name other than localhost: wherever DNS says */
	if (h.kind == K_V4)
		return h.addr[0] == 127;
	static const unsigned char v6_loopback[16] = {[15] = 1};
	return memcmp(h.addr, v6_loopback, 16) == 0;
}

void
allowlist_allow_plaintext(struct allowlist *a, int yes)
{
	if (a != NULL)
		a->allow_plaintext = yes;
}

/* 1 when "host port" was logged already; else remembers it (the oldest
 * forgotten past SEEN_MAX). */
static int
seen_before(struct allowlist *a, const char *host, int port)
{
	char key[sizeof a->seen[0]];

	snprintf(key, sizeof key, "%.255s %d", host != NULL ? host : "-", port);
	for (size_t i = 0; i < a->nseen; i++)
		if (strcmp(a->seen[i], key) == 0)
			return 1;
	memcpy(a->seen[a->next_seen], key, sizeof key);
	a->next_seen = (a->next_seen + 1) % SEEN_MAX;
	if (a->nseen < SEEN_MAX)
		a->nseen++;
	return 0;
}

int
allowlist_check_credential(struct allowlist *a, const char *host, int port, int tls)
{
	if (a == NULL || allowlist_cleartext_ok(host, 0, tls, a->allow_plaintext))
		return 1;
	if (a->counter != NULL)
		(*a->counter)++;
	if (!seen_before(a, host, port))
		log_warn("redis.cleartext_refused", "host=%s port=%d msg=%s",
		    LOG_Q(host != NULL ? host : "-"), port,
		    LOG_Q("the credential would cross the network in clear text: "
		    "set tls = yes, or allow_plaintext = yes"));
	return 0;
}
