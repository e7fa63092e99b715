/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * allowlist: the hosts a Redis connection may go to ([redis] allow_hosts,
 * warrantd(7) §10, issue 27). A MOVED or ASK redirect, a CLUSTER SHARDS
 * endpoint or a Sentinel answer names a host chosen by whoever answers;
 * only a host of the configured topology is ever connected to, so no
 * credential is sent anywhere else.
 *
 * Entries are host names (matched without case, a trailing dot ignored),
 * IPv4 or IPv6 addresses, and CIDR blocks (a.b.c.d/n, x::y/n), each with
 * an optional port (issue 37 item 2): "host:6379", "10.0.0.0/24:6379",
 * "[fd00::1]:6379", "[fd00::/64]:6379"; no port is any port. An address
 * matches an address or a block; a name matches only the same name (its
 * address is whatever DNS says at connect, so a name is trusted as such).
 * An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is matched as its IPv4.
 *
 * The default (allow_hosts unset, disc.h) is built from exact host:port
 * entries: the configured host, sentinels or seeds (allowlist_add_host)
 * and, on a cluster, what a configured seed announced in its latest
 * CLUSTER SHARDS answer (allowlist_announce, replaced at each answer).
 *
 * allowlist_match is pure. allowlist_check is the shell every connect and
 * redirect goes through: it counts a refusal and logs it (event
 * redis.host_refused) once per host:port.
 */
#ifndef WARRANTD_ALLOWLIST_H
#define WARRANTD_ALLOWLIST_H

#include <stddef.h>

struct allowlist;

/* An empty list (nothing matches). Free with allowlist_free. NULL when out
 * of memory. */
struct allowlist *allowlist_new(void) __attribute__((warn_unused_result));

/* NULL is a no-op. */
void allowlist_free(struct allowlist *a);

/* Adds "entry, entry, ..." (names, addresses, CIDR blocks, each with an
 * optional :port). 0, or -1 with one line for people in err (a is then
 * partly extended). */
int allowlist_add_list(struct allowlist *a, const char *list, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* Adds a configured host at port (1..65535) exactly: the host itself and,
 * a name, each address it resolves to now (a blocking getaddrinfo: at start
 * only; a name that does not resolve is still added as a name). Never a
 * block around it. 0, or -1 (out of memory). */
int allowlist_add_host(struct allowlist *a, const char *host, int port)
	__attribute__((warn_unused_result));

/* A seed's CLUSTER SHARDS answer: allowlist_announce_clear forgets every
 * node announced before, allowlist_announce adds one node's host (an
 * address or a name, never resolved nor widened; "[v6]" taken) at port
 * exactly. 0, or -1 (out of memory, or more than 1024 nodes). NULL a:
 * no-op. */
void allowlist_announce_clear(struct allowlist *a);
int allowlist_announce(struct allowlist *a, const char *host, int port)
	__attribute__((warn_unused_result));

/* 1, with the entry written into buf, when an entry of a admits a host
 * that is not loopback (a name other than localhost, an address or block
 * outside 127.0.0.0/8 and ::1): the hosts -t checks clear text against
 * (issue 37 item 1). 0 otherwise, or for NULL. */
int allowlist_first_remote(const struct allowlist *a, char *buf, size_t len);

/* 1 when host (a name or an address, as a redirect or a sentinel wrote it)
 * at port is in a, else 0. NULL host, a port outside 1..65535: 0. Pure. */
int allowlist_match(const struct allowlist *a, const char *host, int port);

/* Where refusals are counted (borrowed; NULL: not counted). */
void allowlist_count_in(struct allowlist *a, long long *counter);

/*
 * The shell: 1 when host may be connected to. A NULL list allows every
 * host (no allowlist configured: the tests' own rconns). Otherwise a host
 * outside is counted and logged once per host:port (event
 * redis.host_refused, with `via`: what named it -- "moved", "ask",
 * "shards", "sentinel", "connect") and 0 is returned.
 */
int allowlist_check(struct allowlist *a, const char *host, int port, const char *via);

/*
 * Clear text (issue 37): whether a credential (a Redis password or token, a
 * sentinel's password) may go to host over this link: always over TLS or a
 * unix socket, to loopback (127.0.0.0/8, ::1, localhost), or anywhere with
 * [redis] allow_plaintext = yes; otherwise it would cross a network in
 * clear text. Pure: the one rule config (-t) and every connect follow.
 */
int allowlist_cleartext_ok(const char *host, int unix_socket, int tls, int allow_plaintext);

/* [redis] allow_plaintext for allowlist_check_credential (default 0). */
void allowlist_allow_plaintext(struct allowlist *a, int yes);

/*
 * The shell of the rule above, before every TCP connect that will send a
 * credential: 1 when it may. A NULL list allows all (the tests' own rconns).
 * Otherwise a refusal is counted (allowlist_count_in) and logged once per
 * host:port (event redis.cleartext_refused) and 0 is returned.
 */
int allowlist_check_credential(struct allowlist *a, const char *host, int port, int tls);

#endif
