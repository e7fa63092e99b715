/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * disc: where to connect -- the primary by Redis Sentinel, or the owner of
 * a slot by the Cluster's map -- found asynchronously on the event loop
 * (issue 27). The sentinels and cluster nodes are asked through rconn
 * (one attempt each, `once`): the same connect, handshake, timeouts,
 * allow_hosts check and -- when rconn speaks TLS -- the same TLS as every
 * other Redis connection. Nothing here blocks the loop: a sentinel that
 * accepts and never answers costs its timeout on a timer, and the loop
 * (heartbeats, metrics, the watchdog) runs meanwhile.
 *
 * A connection's resolve (rconn_opts.resolve) asks disc_resolve: a fresh
 * answer is given at once; otherwise one lookup is started for every
 * connection that asks (answer 1: rconn waits), and when it ends every
 * connection is told (rconn_resolved). Every poll_ms the sentinels or the
 * cluster are asked again and the command connections' nodes are asked
 * ROLE: a connection to a node that is no longer the primary of its slot
 * -- a deposed primary cut off from the sentinels, a failover the worker
 * did not see -- is dropped and made again to the right one.
 *
 * Every host named by a sentinel, a CLUSTER SHARDS reply or a MOVED goes
 * through the allowlist (allowlist.h) first; refused ones are never used.
 */
#ifndef WARRANTD_DISC_H
#define WARRANTD_DISC_H

#include <stddef.h>

#include <ev.h>

#include "core/hostport.h"

struct rconn;
struct allowlist;
struct rtls_ctx;

/* For each connection the engine holds: fn(rc, slot, blocking, fnarg);
 * slot is its shard's (cluster), blocking 1 for a blocking read's. */
typedef void disc_conn_fn(struct rconn *rc, unsigned slot, int blocking, void *fnarg);

struct disc_opts {
	struct ev_loop *loop;
	/* Sentinel mode: nsentinels > 0 and master_name; Cluster mode:
	 * nseeds > 0 (config's parsed lists: copied) */
	const struct hostport *sentinels, *seeds;
	size_t nsentinels, nseeds;
	const char *master_name;
	const char *username;			/* cluster nodes' ACL user */
	const char *host;			/* neither: the one Redis */
	int port;				/* and its port */
	const char *allow_hosts;		/* NULL: warrantd(7) §10's default */
	int allow_plaintext;	/* [redis] allow_plaintext: credentials in clear text */
	/* The password for a sentinel (sentinel 1) or a cluster node (0)
	 * now; NULL: none. */
	const char *(*secret)(void *arg, int sentinel);
	void (*each_conn)(void *arg, disc_conn_fn *fn, void *fnarg);
	void *arg;
	struct rtls_ctx *tls;	/* [redis] tls for sentinels and nodes (borrowed) */
	long timeout_ms;	/* per node asked: connect, handshake, answer */
	long poll_ms;		/* asked again this often (0: only at connects) */
};

struct disc;

/* Copies the lists and builds the allowlist (a blocking host name lookup
 * of the configured hosts, at start only). Starts no lookup. NULL with
 * err on a bad list or out of memory. Free with disc_free. */
struct disc *disc_new(const struct disc_opts *o, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* No callback afterwards: call it after the connections are freed, or
 * before, as each_conn must then find none. NULL is a no-op. */
void disc_free(struct disc *d);

/* The allowlist every Redis connection gets (rconn_opts.allow), owned by d. */
struct allowlist *disc_allowlist(struct disc *d);

/* Refusals are counted in *counter (borrowed). */
void disc_count_refused_in(struct disc *d, long long *counter);

/* rconn_opts.resolve: 0 with host and port (the primary; on a cluster the
 * owner of slot), 1 when a lookup is under way (rconn_resolved follows),
 * -1 when none is known. */
int disc_resolve(struct disc *d, unsigned slot, char *host, size_t hostlen, int *port)
	__attribute__((warn_unused_result));

/* rconn_opts.error_seen on a cluster: a MOVED to an allowed node moves
 * the slot in the map and asks for a fresh map at the next connect; one to
 * a host outside allow_hosts is refused (counted, logged once). */
void disc_error_seen(struct disc *d, const char *error);

/* warrantd(7) §10's allow_hosts for a config (issue 37 item 2): the
 * entries of allow_hosts (NULL: none), and always the configured host:port
 * (host NULL: none) and nodes -- the n sentinels or seeds ([redis]
 * sentinels or cluster, parsed by config) -- each at its port exactly, a
 * name with the addresses it resolves to now (a blocking lookup: at start
 * only, and in warrantctl). Never loopback as such, never a block around
 * a node. On a cluster without allow_hosts, disc_new adds what a seed
 * announces in CLUSTER SHARDS (allowlist_announce). NULL with err on a bad
 * list or out of memory; free with allowlist_free. */
struct allowlist *disc_allowlist_of(const char *allow_hosts, const char *host, int port,
				    const struct hostport *nodes, size_t n, char *err,
				    size_t errlen)
	__attribute__((warn_unused_result));

/* Why the latest lookup found nothing, for people ("host:port: no
 * connection", the last node asked); "" when it found an answer or none
 * ended yet. Borrowed from d, valid until the next lookup. NULL: "". */
const char *disc_error(const struct disc *d);

/* Starts polling (poll_ms): call once the connections exist. */
void disc_start(struct disc *d);

#endif
