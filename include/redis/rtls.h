/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rtls: the socket under rconn, and Redis over TLS (warrantd(7) §10,
 * [redis] tls). hiredis 0.14 has no TLS; rconn uses only its reader and its
 * command formatter and owns the socket: a link (below) connects, runs the
 * TLS handshake (AUTH only after the server's certificate and name were
 * verified), then reads and writes with read/send or SSL_read/SSL_write.
 * See HACKING.md, "Redis over TLS".
 *
 * An rtls_ctx is one SSL_CTX per configuration: TLS 1.2 at least, the
 * server's chain checked against tls_ca_file (or the system's CAs), its
 * name against tls_server_name or the host connected to (an address is
 * checked as an IP SAN), an optional client certificate. Its files are read
 * through secrets (a key that group or others may read is refused).
 *
 * Shell: sockets and OpenSSL.
 */
#ifndef WARRANTD_RTLS_H
#define WARRANTD_RTLS_H

#include <stddef.h>
#include <sys/types.h>

#include <ev.h>

#include "conf/config.h"

struct rtls_ctx;

/* The TLS settings of cfg's [redis] (cfg borrowed for the call). NULL with
 * a message in err (a file that cannot be read, a key that does not match
 * its certificate, ...). Caller frees with rtls_ctx_free(). */
struct rtls_ctx *rtls_ctx_new(const struct cfg *cfg, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* NULL is a no-op. Every link made with it must be freed first. */
void rtls_ctx_free(struct rtls_ctx *ctx);

/*
 * A link: one socket, made by rtls_link_new and read and written by its
 * owner (rconn: one ev_io on rtls_link_fd, its own buffers), clear text or
 * TLS. Every socket is SOCK_NONBLOCK | SOCK_CLOEXEC; a TCP one gets
 * TCP_NODELAY. The name lookup, as hiredis's, is getaddrinfo.
 */
struct rtls_conn;

/* What a link waits for before the call that said 0 can make progress. */
#define RTLS_WANT_READ	1
#define RTLS_WANT_WRITE	2

/* Starts connecting to path (a unix socket, when not NULL) or host:port,
 * with TLS when ctx is not NULL (borrowed: it must outlive the link; a unix
 * socket is never TLS). NULL with why when it fails at once. The caller
 * waits until rtls_link_fd is writable, then calls rtls_link_connect.
 * Caller frees with rtls_conn_free(). */
struct rtls_conn *rtls_link_new(struct rtls_ctx *ctx, const char *host, int port,
				const char *path, char *why, size_t whylen)
	__attribute__((warn_unused_result));

/* The socket (owned by the link: never close it). */
int rtls_link_fd(const struct rtls_conn *t);

/* Drives the connect and the TLS handshake (the server's chain and name
 * verified): 1 when the link is ready for reads and writes, 0 when it waits
 * (rtls_link_wants says for what), -1 when it failed (rtls_conn_why:
 * "certificate verify failed: ...", "connect: ..."; never a key). */
int rtls_link_connect(struct rtls_conn *t);

/* RTLS_WANT_READ and/or RTLS_WANT_WRITE, after a call that answered 0. */
int rtls_link_wants(const struct rtls_conn *t);

/* read(2) or SSL_read on a ready link: the bytes read (> 0); 0 when none
 * are there yet (rtls_link_wants says what to wait for: TLS may need to
 * write to read); -1 when the link ended (closed by the server, an error:
 * rtls_conn_why), for good. */
ssize_t rtls_link_read(struct rtls_conn *t, void *buf, size_t n)
	__attribute__((warn_unused_result));

/* send(2) (no SIGPIPE) or SSL_write: the bytes written (> 0, maybe fewer
 * than n), 0 when it would block (rtls_link_wants), -1 when the link
 * ended. buf may move between a 0 and the retry. */
ssize_t rtls_link_write(struct rtls_conn *t, const void *buf, size_t n)
	__attribute__((warn_unused_result));

/* Why the link ended ("" while it works); valid until rtls_conn_free(). */
const char *rtls_conn_why(const struct rtls_conn *t);

/* Closes the socket (no TLS close_notify: the server reads end of file).
 * NULL is a no-op. */
void rtls_conn_free(struct rtls_conn *t);

#endif
