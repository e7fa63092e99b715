/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cluster: Redis Cluster routing, small and in one place (issue 13).
 * hiredis 0.14 has no cluster client. Every key of one deployment -- or of
 * one shard of it -- carries one hash tag, so each shard lives in one slot
 * and the worker needs only: the slot of a key (CRC16, the hash-tag rule),
 * the slot map (CLUSTER SHARDS), the node owning a slot, and what a -MOVED
 * or -ASK reply says. All of it pure: both programs ask for the map
 * through disc.h (asynchronously, on a libev loop).
 *
 * The shard of a record (`[redis] shards`, warrantd(7) §2):
 * shard = FNV-1a-32(recordId) mod N, its prefix "{P:shard}".
 */
#ifndef WARRANTD_CLUSTER_H
#define WARRANTD_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "core/hostport.h"
#include "core/shard.h"	/* SHARD_MAX, the hash-tag rule */

#define CLUSTER_SLOTS		16384
#define CLUSTER_NODES_MAX	64
#define CLUSTER_HOST_MAX	HOSTPORT_HOST_MAX

/* CRC16-CCITT (XMODEM: poly 0x1021, init 0), the cluster spec's. */
uint16_t cluster_crc16(const char *buf, size_t len);

/* The slot of a key: CRC16 of the hash tag -- the bytes between the first
 * '{' and the next '}', when there are some -- else of the whole key,
 * mod 16384. */
unsigned cluster_key_slot(const char *key, size_t len);

/* FNV-1a, 32 bits: offset basis 2166136261, prime 16777619, per byte
 * h ^= byte; h *= prime (mod 2^32). */
uint32_t cluster_fnv1a(const char *s, size_t len);

/* The shard of a recordId: cluster_fnv1a(id) mod nshards (nshards >= 1). */
unsigned cluster_shard_of(const char *id, size_t len, unsigned nshards);

/* The key prefix of shard i: "{P:i}" with nshards >= 1, P itself with
 * nshards 0 (shards unset: today's names). -1 when it does not fit. */
int cluster_shard_prefix(char *buf, size_t n, const char *prefix, unsigned shard,
			 unsigned nshards)
	__attribute__((warn_unused_result));

/* ---- the slot map ---- */

struct cluster_node {
	char host[CLUSTER_HOST_MAX];
	int port;
};

struct cluster_map;

/* An empty map (every slot unknown). Free with cluster_map_free. NULL when
 * out of memory. */
struct cluster_map *cluster_map_new(void) __attribute__((warn_unused_result));

/* [redis] tls: a node's "tls-port" in CLUSTER SHARDS is the one to connect
 * to (a node with tls-port and port reports both); 0: its "port". Kept by
 * every parse. Redirects already name the TLS port (tls-cluster yes). */
void cluster_map_use_tls(struct cluster_map *m, int tls);

/* NULL is a no-op. */
void cluster_map_free(struct cluster_map *m);

/* Replaces the map by the reply to CLUSTER SHARDS (RESP2: an array of
 * shards, each a flat field/value array with "slots" [start, end, ...] and
 * "nodes" [flat field/value arrays with "ip", "endpoint", "port", "role"]):
 * each shard's slots go to its node with role "master", at its endpoint,
 * else its ip, else -- a node that has not learnt its own address yet says
 * "" -- `asked`, the host the reply came from. 0, or -1 on a malformed
 * reply (the map is then unchanged). */
int cluster_map_parse_shards(struct cluster_map *m, const redisReply *r, const char *asked)
	__attribute__((warn_unused_result));

/* Every node of a CLUSTER SHARDS reply, primaries and replicas, whatever
 * their slots: fn(arg, host, port) with the host and port (tls-port with
 * tls) a connection would take, as cluster_map_parse_shards reads them.
 * A seed's answer is what the default allow_hosts admits (disc.c). 0, or
 * -1 when r is no array or fn said -1. */
int cluster_shards_each_node(const redisReply *r, const char *asked, int tls,
			     int (*fn)(void *arg, const char *host, int port), void *arg);

/* The node that owns slot, or NULL when unknown. Valid until the map
 * changes. */
const struct cluster_node *cluster_map_owner(const struct cluster_map *m, unsigned slot);

/* The known primaries, up to max, into out (to ask for the next refresh).
 * Returns how many. */
size_t cluster_map_nodes(const struct cluster_map *m, struct cluster_node *out, size_t max);

/* Keeps only the nodes for which keep(arg, node) is 1: the slots of the
 * others become unknown (allow_hosts: a CLUSTER SHARDS reply named a host
 * outside it). Returns how many nodes went. */
size_t cluster_map_keep(struct cluster_map *m,
			int (*keep)(void *arg, const struct cluster_node *n), void *arg);

/* ---- redirects ---- */

enum cluster_redirect_kind { CLUSTER_NO_REDIRECT, CLUSTER_MOVED, CLUSTER_ASK };

struct cluster_redirect {
	enum cluster_redirect_kind kind;
	unsigned slot;
	struct cluster_node to;	/* host "" when the reply named none: the same host */
};

/* What an error reply's text says: "MOVED <slot> <host>:<port>" or "ASK
 * <slot> <host>:<port>" (host may be an IPv6 address: the port follows the
 * last ':'). CLUSTER_NO_REDIRECT for anything else, NULL included, or a
 * malformed redirect. */
enum cluster_redirect_kind cluster_parse_redirect(const char *error,
						  struct cluster_redirect *out);

/* MOVED: the slot is the target's from now on (the map says so until the
 * next refresh). ASK is one command's detour during a migration and changes
 * nothing. Returns 1 when the map changed, else 0. */
int cluster_map_apply(struct cluster_map *m, const struct cluster_redirect *rd);

#endif
