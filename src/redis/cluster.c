/* SPDX-License-Identifier: BSD-2-Clause */
/* cluster: slots, the slot map and redirects of Redis Cluster. */
#define _DEFAULT_SOURCE
#include "redis/cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "core/shard.h"

#define NO_NODE 0xffff

struct cluster_map {
	uint16_t owner[CLUSTER_SLOTS];	/* index into nodes, NO_NODE: unknown */
	struct cluster_node nodes[CLUSTER_NODES_MAX];
	size_t nnodes;
	int tls;	/* a node's "tls-port" wins over its "port" */
};

uint16_t
cluster_crc16(const char *buf, size_t len)
{
	uint16_t crc = 0;

	for (size_t i = 0; i < len; i++) {
		crc ^= (uint16_t)((unsigned char)buf[i] << 8);
		for (int b = 0; b < 8; b++)
			crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
	}
	return crc;
}

unsigned
cluster_key_slot(const char *key, size_t len)
{
	size_t s, n;

	if (shard_tag(key, len, &s, &n))
		return cluster_crc16(key + s, n) & (CLUSTER_SLOTS - 1);
	return cluster_crc16(key, len) & (CLUSTER_SLOTS - 1);
}

uint32_t
cluster_fnv1a(const char *s, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 16777619u;
	}
	return h;
}

unsigned
cluster_shard_of(const char *id, size_t len, unsigned nshards)
{
	return nshards ? cluster_fnv1a(id, len) % nshards : 0;
}

int
cluster_shard_prefix(char *buf, size_t n, const char *prefix, unsigned shard, unsigned nshards)
{
	int w = nshards ? snprintf(buf, n, "{%s:%u}", prefix, shard) : snprintf(buf, n, "%s", prefix);

	return w < 0 || (size_t)w >= n ? -1 : 0;
}

/* ---- the map ---- */

struct cluster_map *
cluster_map_new(void)
{
	struct cluster_map *m = calloc(1, sizeof *m);

	if (m != NULL)
		memset(m->owner, 0xff, sizeof m->owner);
	return m;
}

void
cluster_map_free(struct cluster_map *m)
{
	free(m);
}

const struct cluster_node *
cluster_map_owner(const struct cluster_map *m, unsigned slot)
{
	if (slot >= CLUSTER_SLOTS || m->owner[slot] == NO_NODE)
		return NULL;
	return &m->nodes[m->owner[slot]];
}

size_t
cluster_map_nodes(const struct cluster_map *m, struct cluster_node *out, size_t max)
{
	size_t n = m->nnodes < max ? m->nnodes : max;

	memcpy(out, m->nodes, n * sizeof *out);
	return n;
}

/* The index of host:port in m, added when new; -1 when full. */
static int
node_index(struct cluster_map *m, const char *host, int port)
{
	for (size_t i = 0; i < m->nnodes; i++)
		if (m->nodes[i].port == port && strcmp(m->nodes[i].host, host) == 0)
			return (int)i;
	if (m->nnodes == CLUSTER_NODES_MAX)
		return -1;
	snprintf(m->nodes[m->nnodes].host, CLUSTER_HOST_MAX, "%s", host);
	m->nodes[m->nnodes].port = port;
	return (int)m->nnodes++;
}

size_t
cluster_map_keep(struct cluster_map *m, int (*keep)(void *arg, const struct cluster_node *n),
		 void *arg)
{
	uint16_t to[CLUSTER_NODES_MAX];
	size_t k = 0;

	for (size_t i = 0; i < m->nnodes; i++) {
		if (!keep(arg, &m->nodes[i])) {
			to[i] = NO_NODE;
			continue;
		}
		to[i] = (uint16_t)k;
		if (k != i)
			m->nodes[k] = m->nodes[i];
		k++;
	}
	size_t gone = m->nnodes - k;
	m->nnodes = k;
	if (gone > 0)
		for (size_t s = 0; s < CLUSTER_SLOTS; s++)
			if (m->owner[s] != NO_NODE)
				m->owner[s] = to[m->owner[s]];
	return gone;
}

/* 1 when r is the string s, length included: every reply string is
 * length-delimited, and one with a NUL byte is never another name. */
static int
is_str(const redisReply *r, const char *s)
{
	return r && r->type == REDIS_REPLY_STRING && r->len == strlen(s) &&
	    memcmp(r->str, s, r->len) == 0;
}

/* In a flat field/value array, the value of field, or NULL. */
static const redisReply *
field(const redisReply *r, const char *name)
{
	if (r == NULL || r->type != REDIS_REPLY_ARRAY)
		return NULL;
	for (size_t i = 0; i + 1 < r->elements; i += 2)
		if (is_str(r->element[i], name))
			return r->element[i + 1];
	return NULL;
}


/* A usable address string: not absent, empty or "?" (unknown). */
static const char *
addr_of(const redisReply *r)
{
	if (r == NULL || r->type != REDIS_REPLY_STRING || r->len == 0 || is_str(r, "?") ||
	    r->len >= CLUSTER_HOST_MAX || strlen(r->str) != r->len)
		return NULL;
	return r->str;
}

void
cluster_map_use_tls(struct cluster_map *m, int tls)
{
	m->tls = tls != 0;
}

/* The primary of one shard's "nodes" into out. -1 when it has none. */
static int
shard_primary(const redisReply *nodes, const char *asked, int tls, struct cluster_node *out)
{
	if (nodes == NULL || nodes->type != REDIS_REPLY_ARRAY)
		return -1;
	for (size_t i = 0; i < nodes->elements; i++) {
		const redisReply *nd = nodes->element[i], *port = field(nd, "port");
		if (tls && field(nd, "tls-port") != NULL)
			port = field(nd, "tls-port");
		if (!is_str(field(nd, "role"), "master") || port == NULL ||
		    port->type != REDIS_REPLY_INTEGER || port->integer < 1 || port->integer > 65535)
			continue;
		const char *host = addr_of(field(nd, "endpoint"));
		if (host == NULL)
			host = addr_of(field(nd, "ip"));
		if (host == NULL)
			host = asked;
		snprintf(out->host, sizeof out->host, "%s", host);
		out->port = (int)port->integer;
		return 0;
	}
	return -1;
}

int
cluster_shards_each_node(const redisReply *r, const char *asked, int tls,
			 int (*fn)(void *arg, const char *host, int port), void *arg)
{
	if (r == NULL || r->type != REDIS_REPLY_ARRAY)
		return -1;
	for (size_t i = 0; i < r->elements; i++) {
		const redisReply *nodes = field(r->element[i], "nodes");
		if (nodes == NULL || nodes->type != REDIS_REPLY_ARRAY)
			continue;
		for (size_t j = 0; j < nodes->elements; j++) {
			const redisReply *nd = nodes->element[j], *port = field(nd, "port");
			if (tls && field(nd, "tls-port") != NULL)
				port = field(nd, "tls-port");
			if (port == NULL || port->type != REDIS_REPLY_INTEGER || port->integer < 1 ||
			    port->integer > 65535)
				continue;
			const char *host = addr_of(field(nd, "endpoint"));
			if (host == NULL)
				host = addr_of(field(nd, "ip"));
			if (host == NULL)
				host = asked;
			if (fn(arg, host, (int)port->integer) < 0)
				return -1;
		}
	}
	return 0;
}

/* One shard of the reply into m (already being rebuilt). */
static int
parse_shard(struct cluster_map *m, const redisReply *sh, const char *asked)
{
	const redisReply *slots = field(sh, "slots");
	struct cluster_node primary;

	if (slots == NULL || slots->type != REDIS_REPLY_ARRAY || slots->elements % 2 != 0)
		return -1;
	if (slots->elements == 0)
		return 0;	/* a primary without slots, or a shard being emptied */
	if (shard_primary(field(sh, "nodes"), asked, m->tls, &primary) < 0)
		return 0;	/* no primary now (a failover): its slots stay unknown */
	int idx = node_index(m, primary.host, primary.port);
	if (idx < 0)
		return -1;
	for (size_t i = 0; i < slots->elements; i += 2) {
		const redisReply *a = slots->element[i], *b = slots->element[i + 1];
		if (a->type != REDIS_REPLY_INTEGER || b->type != REDIS_REPLY_INTEGER ||
		    a->integer < 0 || b->integer < a->integer || b->integer >= CLUSTER_SLOTS)
			return -1;
		for (long long s = a->integer; s <= b->integer; s++)
			m->owner[s] = (uint16_t)idx;
	}
	return 0;
}

int
cluster_map_parse_shards(struct cluster_map *m, const redisReply *r, const char *asked)
{
	if (r == NULL || r->type != REDIS_REPLY_ARRAY)
		return -1;
	struct cluster_map *next = cluster_map_new();
	if (next == NULL)
		return -1;
	next->tls = m->tls;
	for (size_t i = 0; i < r->elements; i++)
		if (parse_shard(next, r->element[i], asked) < 0) {
			cluster_map_free(next);
			return -1;
		}
	memcpy(m, next, sizeof *m);
	cluster_map_free(next);
	return 0;
}

/* ---- redirects ---- */

/* "host:port" (the port after the last ':') into out. */
static int
parse_target(const char *s, struct cluster_node *out)
{
	const char *colon = strrchr(s, ':');
	char *end;

	if (colon == NULL || (size_t)(colon - s) >= sizeof out->host)
		return -1;
	long port = strtol(colon + 1, &end, 10);
	if (end == colon + 1 || *end != '\0' || port < 1 || port > 65535)
		return -1;
	memcpy(out->host, s, (size_t)(colon - s));
	out->host[colon - s] = '\0';
	out->port = (int)port;
	return 0;
}

enum cluster_redirect_kind
cluster_parse_redirect(const char *error, struct cluster_redirect *out)
{
	enum cluster_redirect_kind kind;
	const char *p;
	char *end;

	if (error == NULL)
		return CLUSTER_NO_REDIRECT;
	if (strncmp(error, "MOVED ", 6) == 0) {
		kind = CLUSTER_MOVED;
		p = error + 6;
	} else if (strncmp(error, "ASK ", 4) == 0) {
		kind = CLUSTER_ASK;
		p = error + 4;
	} else {
		return CLUSTER_NO_REDIRECT;
	}
	if (*p < '0' || *p > '9')
		return CLUSTER_NO_REDIRECT;
	unsigned long slot = strtoul(p, &end, 10);
	if (*end != ' ' || slot >= CLUSTER_SLOTS || parse_target(end + 1, &out->to) < 0)
		return CLUSTER_NO_REDIRECT;
	out->kind = kind;
	out->slot = (unsigned)slot;
	return kind;
}

int
cluster_map_apply(struct cluster_map *m, const struct cluster_redirect *rd)
{
	if (rd->kind != CLUSTER_MOVED || rd->slot >= CLUSTER_SLOTS || rd->to.host[0] == '\0')
		return 0;
	int idx = node_index(m, rd->to.host, rd->to.port);
	if (idx < 0 || m->owner[rd->slot] == (uint16_t)idx)
		return 0;
	m->owner[rd->slot] = (uint16_t)idx;
	return 1;
}
