/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rtls: the socket under rconn, clear or TLS (rtls.h). One state machine,
 * rtls_step(), drives a connection from the connect through the TLS
 * handshake; it only says what it waits on (want_fd). rconn's one ev_io
 * follows that, then reads and writes through rtls_link_read/_write. Both
 * programs use it through rconn: nothing here forks or pumps.
 */
#define _GNU_SOURCE		/* close_range, explicit_bzero */
#include "redis/rtls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <hiredis/hiredis.h>

#include "conf/secrets.h"

#define PUMP_BUF	16384

struct rtls_ctx {
	SSL_CTX *ssl;
	char *server_name;	/* NULL: the host connected to */
};

enum state { ST_CONNECT, ST_HANDSHAKE, ST_READY, ST_PUMP, ST_DONE };

/* What a step waits for: on the TLS socket and on rtls's plain end. */
enum { W_READ = 1, W_WRITE = 2 };

struct rtls_conn {
	enum state st;
	struct rtls_ctx *ctx;	/* borrowed */
	int fd;			/* the TCP socket TLS runs on */
	int plain;		/* rtls's end of the pair; -1 before attach */
	SSL *ssl;		/* NULL: clear text (rtls_link_new without a ctx) */
	char name[256];		/* what the certificate must name */
	int want_fd, want_plain;
	int tls_eof, plain_eof;
	unsigned char t2p[PUMP_BUF], p2t[PUMP_BUF];	/* TLS to plain, plain to TLS */
	size_t t2p_off, t2p_len, p2t_off, p2t_len;
	char why[200];
};

/* ---- the context ---- */

static void
ssl_why(char *why, size_t whylen, const char *what)
{
	unsigned long e = ERR_peek_last_error();
	char buf[160];

	if (e != 0) {
		ERR_error_string_n(e, buf, sizeof buf);
		snprintf(why, whylen, "%s: %s", what, buf);
	} else {
		snprintf(why, whylen, "%s", what);
	}
	ERR_clear_error();
}

static int
load_pem(const struct cfg *cfg, const char *path, enum secrets_kind kind, BIO **bio,
	 char **buf, size_t *len, char *err, size_t errlen)
{
	if (secrets_read_cfg(cfg, path, kind, buf, len, err, errlen) != 0)
		return -1;
	*bio = BIO_new_mem_buf(*buf, (int)*len);
	if (*bio == NULL) {
		secrets_free(*buf, *len);
		*buf = NULL;
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

static int
load_ca(SSL_CTX *ssl, const struct cfg *cfg, const char *path, char *err, size_t errlen)
{
	BIO *bio;
	char *buf;
	size_t len;
	int n = 0;

	if (path == NULL) {
		if (SSL_CTX_set_default_verify_paths(ssl) != 1) {
			ssl_why(err, errlen, "tls: the system's CAs");
			return -1;
		}
		return 0;
	}
	if (load_pem(cfg, path, SECRETS_PUBLIC, &bio, &buf, &len, err, errlen) != 0)
		return -1;
	X509_STORE *store = SSL_CTX_get_cert_store(ssl);
	X509 *x;
	while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
		if (X509_STORE_add_cert(store, x) == 1)
			n++;
		X509_free(x);
	}
	ERR_clear_error();	/* the end of the file */
	BIO_free(bio);
	secrets_free(buf, len);
	if (n == 0) {
		snprintf(err, errlen, "tls_ca_file %s: no certificate in it", path);
		return -1;
	}
	return 0;
}

static int
load_client(SSL_CTX *ssl, const struct cfg *cfg, char *err, size_t errlen)
{
	const char *certf = cfg->redis.tls_cert_file, *keyf = cfg->redis.tls_key_file;
	BIO *bio;
	char *buf;
	size_t len;
	int rc = -1;

	if (certf == NULL)
		return 0;
	if (load_pem(cfg, certf, SECRETS_PUBLIC, &bio, &buf, &len, err, errlen) != 0)
		return -1;
	X509 *x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
	if (x == NULL || SSL_CTX_use_certificate(ssl, x) != 1) {
		ssl_why(err, errlen, "tls_cert_file: not a certificate");
		X509_free(x);
		goto out_cert;
	}
	X509_free(x);
	while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL)
		if (SSL_CTX_add0_chain_cert(ssl, x) != 1)	/* takes x */
			X509_free(x);
	ERR_clear_error();
	rc = 0;
out_cert:
	BIO_free(bio);
	secrets_free(buf, len);
	if (rc != 0)
		return -1;
	if (load_pem(cfg, keyf, SECRETS_PRIVATE_PEM, &bio, &buf, &len, err, errlen) != 0)
		return -1;
	EVP_PKEY *k = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	BIO_free(bio);
	secrets_free(buf, len);
	rc = -1;
	if (k == NULL)
		snprintf(err, errlen, "tls_key_file: not a PEM private key");
	else if (SSL_CTX_use_PrivateKey(ssl, k) != 1 || SSL_CTX_check_private_key(ssl) != 1)
		snprintf(err, errlen, "tls_key_file does not match tls_cert_file");
	else
		rc = 0;
	EVP_PKEY_free(k);
	ERR_clear_error();
	return rc;
}

struct rtls_ctx *
rtls_ctx_new(const struct cfg *cfg, char *err, size_t errlen)
{
	struct rtls_ctx *ctx = calloc(1, sizeof *ctx);

	if (ctx == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	ctx->ssl = SSL_CTX_new(TLS_client_method());
	if (ctx->ssl == NULL) {
		ssl_why(err, errlen, "tls");
		goto fail;
	}
	if (cfg->redis.tls_server_name != NULL &&
	    (ctx->server_name = strdup(cfg->redis.tls_server_name)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	SSL_CTX_set_min_proto_version(ctx->ssl, TLS1_2_VERSION);
	SSL_CTX_set_verify(ctx->ssl, SSL_VERIFY_PEER, NULL);
	/* the pump hands SSL_write what it has, from wherever it is */
	SSL_CTX_set_mode(ctx->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if (load_ca(ctx->ssl, cfg, cfg->redis.tls_ca_file, err, errlen) != 0 ||
	    load_client(ctx->ssl, cfg, err, errlen) != 0)
		goto fail;
	return ctx;
fail:
	rtls_ctx_free(ctx);
	return NULL;
}

void
rtls_ctx_free(struct rtls_ctx *ctx)
{
	if (ctx == NULL)
		return;
	SSL_CTX_free(ctx->ssl);
	free(ctx->server_name);
	free(ctx);
}

/* ---- the state machine ---- */

static void
fail_conn(struct rtls_conn *t, const char *what)
{
	if (t->why[0] == '\0')
		snprintf(t->why, sizeof t->why, "%s", what);
	t->st = ST_DONE;
	t->want_fd = t->want_plain = 0;
}

/* The TLS session is over or broken: the plain side sees end of file. */
static void
end_pump(struct rtls_conn *t)
{
	if (t->plain >= 0) {
		close(t->plain);
		t->plain = -1;
	}
	t->st = ST_DONE;
	t->want_fd = t->want_plain = 0;
}

static int
ssl_wants(struct rtls_conn *t, int r, const char *what)
{
	int e = SSL_get_error(t->ssl, r);

	if (e == SSL_ERROR_WANT_READ) {
		t->want_fd |= W_READ;
		return 0;
	}
	if (e == SSL_ERROR_WANT_WRITE) {
		t->want_fd |= W_WRITE;
		return 0;
	}
	if (e == SSL_ERROR_ZERO_RETURN)
		return 1;
	if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)
		snprintf(t->why, sizeof t->why, "%s: %s", what, errno != 0 ? strerror(errno) :
		    "connection closed");
	else
		ssl_why(t->why, sizeof t->why, what);
	return -1;
}

static void
start_ssl(struct rtls_conn *t)
{
	unsigned char addr[16];

	t->ssl = SSL_new(t->ctx->ssl);
	if (t->ssl == NULL || SSL_set_fd(t->ssl, t->fd) != 1) {
		fail_conn(t, "tls: out of memory");
		return;
	}
	SSL_set_hostflags(t->ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS |
	    X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
	if (inet_pton(AF_INET, t->name, addr) == 1 || inet_pton(AF_INET6, t->name, addr) == 1) {
		/* an address: no SNI (RFC 6066), an IP SAN must match */
		if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), t->name) != 1)
			fail_conn(t, "tls: bad address in tls_server_name or host");
	} else if (SSL_set_tlsext_host_name(t->ssl, t->name) != 1 ||
	    SSL_set1_host(t->ssl, t->name) != 1) {
		fail_conn(t, "tls: bad server name");
	}
	if (t->st != ST_DONE)
		t->st = ST_HANDSHAKE;
}

static void
step_handshake(struct rtls_conn *t)
{
	ERR_clear_error();
	int r = SSL_connect(t->ssl);
	if (r == 1) {
		t->st = ST_READY;
		t->want_fd = 0;
		return;
	}
	long v = SSL_get_verify_result(t->ssl);
	if (v != X509_V_OK) {
		snprintf(t->why, sizeof t->why, "tls: certificate verify failed: %s",
		    X509_verify_cert_error_string(v));
		fail_conn(t, "");
		return;
	}
	if (ssl_wants(t, r, "tls handshake") != 0)
		fail_conn(t, "tls handshake: closed by the server");
}

/* Moves what can move, both ways, until nothing does. */
static void
step_pump(struct rtls_conn *t)
{
	int progress = 1;

	while (progress && t->st == ST_PUMP) {
		progress = 0;
		t->want_fd = t->want_plain = 0;
		if (t->t2p_len == 0 && !t->tls_eof) {
			ERR_clear_error();
			int n = SSL_read(t->ssl, t->t2p, sizeof t->t2p);
			if (n > 0) {
				t->t2p_off = 0;
				t->t2p_len = (size_t)n;
				progress = 1;
			} else {
				int r = ssl_wants(t, n, "tls read");
				if (r < 0) {
					end_pump(t);
					return;
				}
				if (r > 0)
					t->tls_eof = 1;
			}
		}
		if (t->t2p_len > 0) {
			ssize_t n = write(t->plain, t->t2p + t->t2p_off, t->t2p_len);
			if (n > 0) {
				t->t2p_off += (size_t)n;
				t->t2p_len -= (size_t)n;
				progress = 1;
			} else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
				t->want_plain |= W_WRITE;
			} else {
				end_pump(t);	/* hiredis closed its end */
				return;
			}
		}
		if (t->tls_eof && t->t2p_len == 0) {
			end_pump(t);
			return;
		}
		if (t->p2t_len == 0 && !t->plain_eof) {
			ssize_t n = read(t->plain, t->p2t, sizeof t->p2t);
			if (n > 0) {
				t->p2t_off = 0;
				t->p2t_len = (size_t)n;
				progress = 1;
			} else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
				t->want_plain |= W_READ;
			} else {
				t->plain_eof = 1;
			}
		}
		if (t->p2t_len > 0) {
			ERR_clear_error();
			int n = SSL_write(t->ssl, t->p2t + t->p2t_off, (int)t->p2t_len);
			if (n > 0) {
				t->p2t_off += (size_t)n;
				t->p2t_len -= (size_t)n;
				progress = 1;
			} else if (ssl_wants(t, n, "tls write") != 0) {
				end_pump(t);
				return;
			}
		}
		if (t->plain_eof && t->p2t_len == 0) {
			(void)SSL_shutdown(t->ssl);	/* best effort: we are leaving */
			end_pump(t);
			return;
		}
	}
}

static void
rtls_step(struct rtls_conn *t)
{
	if (t->st == ST_CONNECT) {
		int e = 0;
		socklen_t el = sizeof e;
		if (getsockopt(t->fd, SOL_SOCKET, SO_ERROR, &e, &el) != 0)
			e = errno;
		if (e == EINPROGRESS || e == EALREADY) {
			t->want_fd = W_WRITE;
			return;
		}
		if (e != 0) {
			snprintf(t->why, sizeof t->why, "connect: %s", strerror(e));
			fail_conn(t, "");
			return;
		}
		if (t->ctx == NULL) {	/* clear text: connected is ready */
			t->st = ST_READY;
			t->want_fd = 0;
			return;
		}
		start_ssl(t);
	}
	if (t->st == ST_HANDSHAKE) {
		t->want_fd = 0;
		step_handshake(t);
	}
	if (t->st == ST_PUMP)
		step_pump(t);
}

static struct rtls_conn *
conn_alloc(struct rtls_ctx *ctx, const char *host, int port, char *why, size_t whylen)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *res, *ai;
	char sport[16];
	struct rtls_conn *t = calloc(1, sizeof *t);

	if (t == NULL) {
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	t->fd = t->plain = -1;
	t->ctx = ctx;
	snprintf(t->name, sizeof t->name, "%s", ctx && ctx->server_name ? ctx->server_name : host);
	snprintf(sport, sizeof sport, "%d", port);
	int g = getaddrinfo(host, sport, &hints, &res);
	if (g != 0) {
		snprintf(why, whylen, "%s", gai_strerror(g));
		free(t);
		return NULL;
	}
	snprintf(why, whylen, "no address");
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    ai->ai_protocol);
		if (fd < 0) {
			snprintf(why, whylen, "socket: %s", strerror(errno));
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 || errno == EINPROGRESS) {
			t->fd = fd;
			break;
		}
		snprintf(why, whylen, "connect: %s", strerror(errno));
		close(fd);
	}
	freeaddrinfo(res);
	if (t->fd < 0) {
		free(t);
		return NULL;
	}
	int one = 1;
	(void)setsockopt(t->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	t->st = ST_CONNECT;
	t->want_fd = W_WRITE;
	return t;
}

static void
conn_close(struct rtls_conn *t)
{
	if (t->ssl != NULL)
		SSL_free(t->ssl);
	t->ssl = NULL;
	if (t->fd >= 0)
		close(t->fd);
	if (t->plain >= 0)
		close(t->plain);
	t->fd = t->plain = -1;
}

/* ---- a link: the socket rconn reads and writes itself ---- */

/* A unix socket, connecting without blocking. */
static struct rtls_conn *
conn_alloc_unix(const char *path, char *why, size_t whylen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct rtls_conn *t;

	if (strlen(path) >= sizeof sa.sun_path) {
		snprintf(why, whylen, "unix socket path too long");
		return NULL;
	}
	if ((t = calloc(1, sizeof *t)) == NULL) {
		snprintf(why, whylen, "out of memory");
		return NULL;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	t->plain = -1;
	t->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (t->fd < 0 || (connect(t->fd, (struct sockaddr *)&sa, sizeof sa) != 0 &&
	    errno != EINPROGRESS)) {
		snprintf(why, whylen, "%s: %s", t->fd < 0 ? "socket" : "connect", strerror(errno));
		if (t->fd >= 0)
			close(t->fd);
		free(t);
		return NULL;
	}
	t->st = ST_CONNECT;
	t->want_fd = W_WRITE;
	return t;
}

struct rtls_conn *
rtls_link_new(struct rtls_ctx *ctx, const char *host, int port, const char *path, char *why,
	      size_t whylen)
{
	if (path != NULL)
		return conn_alloc_unix(path, why, whylen);
	if (host == NULL) {
		snprintf(why, whylen, "no host");
		return NULL;
	}
	return conn_alloc(ctx, host, port, why, whylen);
}

int
rtls_link_fd(const struct rtls_conn *t)
{
	return t->fd;
}

int
rtls_link_wants(const struct rtls_conn *t)
{
	return t->want_fd;
}

int
rtls_link_connect(struct rtls_conn *t)
{
	if (t->st < ST_READY)
		rtls_step(t);
	return t->st == ST_READY ? 1 : t->st == ST_DONE ? -1 : 0;
}

/* errno's word on a failed read or write of the clear-text socket. */
static ssize_t
plain_failed(struct rtls_conn *t, ssize_t n, int dir, const char *what)
{
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
		t->want_fd |= dir;
		return 0;
	}
	if (n == 0)
		snprintf(t->why, sizeof t->why, "connection closed");
	else
		snprintf(t->why, sizeof t->why, "%s: %s", what, strerror(errno));
	t->st = ST_DONE;
	return -1;
}

ssize_t
rtls_link_read(struct rtls_conn *t, void *buf, size_t n)
{
	t->want_fd = 0;
	if (t->st != ST_READY)
		return -1;
	if (t->ssl == NULL) {
		ssize_t r = read(t->fd, buf, n);
		return r > 0 ? r : plain_failed(t, r, W_READ, "read");
	}
	ERR_clear_error();
	int r = SSL_read(t->ssl, buf, n > INT_MAX ? INT_MAX : (int)n);
	if (r > 0)
		return r;
	int w = ssl_wants(t, r, "tls read");
	if (w == 0)
		return 0;
	if (w > 0)
		snprintf(t->why, sizeof t->why, "tls: closed by the server");
	t->st = ST_DONE;
	return -1;
}

ssize_t
rtls_link_write(struct rtls_conn *t, const void *buf, size_t n)
{
	t->want_fd = 0;
	if (t->st != ST_READY)
		return -1;
	if (t->ssl == NULL) {
		/* MSG_NOSIGNAL: a closed peer is an error here, not SIGPIPE */
		ssize_t r = send(t->fd, buf, n, MSG_NOSIGNAL);
		return r > 0 ? r : plain_failed(t, r < 0 ? r : -1, W_WRITE, "write");
	}
	ERR_clear_error();
	int r = SSL_write(t->ssl, buf, n > INT_MAX ? INT_MAX : (int)n);
	if (r > 0)
		return r;
	if (ssl_wants(t, r, "tls write") == 0)
		return 0;
	if (t->why[0] == '\0')
		snprintf(t->why, sizeof t->why, "tls: closed by the server");
	t->st = ST_DONE;
	return -1;
}

const char *
rtls_conn_why(const struct rtls_conn *t)
{
	return t != NULL ? t->why : "";
}

void
rtls_conn_free(struct rtls_conn *t)
{
	if (t == NULL)
		return;
	conn_close(t);
	explicit_bzero(t->p2t, sizeof t->p2t);	/* it held an AUTH */
	free(t);
}
