/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rtls: Redis over TLS (warrantd(7) §10, [redis] tls) for hiredis 0.14,
 * which has no TLS. OpenSSL speaks TLS on the TCP socket; hiredis speaks
 * RESP on one end of a socketpair, and rtls pumps bytes between the other
 * end and the TLS session. So rconn, its handshake (AUTH only after the
 * server's certificate and name were verified) and every reply path stay
 * as they are; see HACKING.md, "Redis over TLS", for why.
 *
 * An rtls_ctx is one SSL_CTX per configuration: TLS 1.2 at least, the
 * server's chain checked against tls_ca_file (or the system's CAs), its
 * name against tls_server_name or the host connected to (an address is
 * checked as an IP SAN), an optional client certificate. Its files are read
 * through secrets (a key that group or others may read is refused).
 *
 * Shell: sockets, OpenSSL, libev (rtls_conn_new) or a process (rtls_dial).
 */
#ifndef WARRANTD_RTLS_H
#define WARRANTD_RTLS_H

#include <stddef.h>

#include <ev.h>

#include "conf/config.h"

struct rtls_ctx;

/* The TLS settings of cfg's [redis] (cfg borrowed for the call). NULL with
 * a message in err (a file that cannot be read, a key that does not match
 * its certificate, ...). Caller frees with rtls_ctx_free(). */
struct rtls_ctx *rtls_ctx_new(const struct cfg *cfg, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* NULL is a no-op. Every rtls_conn made with it must be freed first. */
void rtls_ctx_free(struct rtls_ctx *ctx);

/*
 * One connection on a libev loop. Connects to host:port without blocking
 * the loop (the name lookup, as hiredis's, is getaddrinfo), runs the TLS
 * handshake, then calls ready(arg, 1, NULL) -- or ready(arg, 0, why) on a
 * failure (why: "certificate verify failed: ..."; never a key), exactly
 * once, as the last thing it does: ready may free the connection.
 *
 * NULL (why set) when it fails at once; ready is then not called. ctx is
 * borrowed and must outlive the connection. Caller frees with
 * rtls_conn_free(), which closes the TLS socket and rtls's end of the pair.
 */
typedef void rtls_ready_cb(void *arg, int ok, const char *why);
struct rtls_conn *rtls_conn_new(struct ev_loop *loop, struct rtls_ctx *ctx, const char *host,
				int port, rtls_ready_cb *ready, void *arg, char *why,
				size_t whylen)
	__attribute__((warn_unused_result));

/*
 * After ready(ok): makes the socketpair, puts its plain end in place of fd
 * (dup2: hiredis's context keeps its fd number) and starts pumping. When the
 * TLS side ends, fd's peer is closed, so its reader sees end of file; when
 * fd is closed, the TLS session ends. 0, or -1 with why.
 */
int rtls_conn_attach(struct rtls_conn *t, int fd, char *why, size_t whylen)
	__attribute__((warn_unused_result));

/* Why the pump stopped ("" while it runs or ended cleanly); valid until
 * rtls_conn_free(). */
const char *rtls_conn_why(const struct rtls_conn *t);

/* NULL is a no-op. Never calls ready. */
void rtls_conn_free(struct rtls_conn *t);

/*
 * hiredis 0.14 has no asynchronous context for a given fd: its context is
 * made by connecting to this unix socket, private to the process (a 0700
 * directory under $RUNTIME_DIRECTORY, $TMPDIR or /tmp, made at first use,
 * made again when its path is gone, removed at exit),
 * and its fd is then replaced by rtls_conn_attach. Nothing is ever sent to
 * it; rtls_trampoline_drain() closes what it accepted. NULL (why set) when
 * it cannot be made.
 */
const char *rtls_trampoline(char *why, size_t whylen);
void rtls_trampoline_drain(void);

/*
 * Blocking, for warrantctl: connects and handshakes within timeout_ms and
 * returns a blocking fd that speaks plain RESP (hand it to redisConnectFd);
 * a process of its own (forked twice: never waited for) pumps it until
 * either side closes, so the caller may exit at any time. -1 with why.
 */
int rtls_dial(struct rtls_ctx *ctx, const char *host, int port, long timeout_ms, char *why,
	      size_t whylen)
	__attribute__((warn_unused_result));

/* As hiredis's redisConnectWithTimeout -- the same errors in c->err and
 * c->errstr -- over TLS when ctx is not NULL (rtls_dial, redisConnectFd).
 * For warrantctl and its sentinel and cluster questions. */
struct redisContext;
struct redisContext *rtls_redis_connect(struct rtls_ctx *ctx, const char *host, int port,
					long timeout_ms)
	__attribute__((warn_unused_result));

#endif
