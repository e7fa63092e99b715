/*
 * h1: HTTP/1.1 on the wire without I/O, for the native client (hconn). Pure.
 *
 * Three parts: which URLs the native client may take (plain http:// to an
 * IP address or localhost, a path without anything curl would rewrite), the
 * request head it sends (the lines curl 7.88 sends for the same request, so
 * a target sees the same call either way), and a reader of the answer that
 * takes the bytes as they come, in pieces of any size (RFC 9112: a status
 * line, header fields, a body by Content-Length, chunked or up to the close;
 * 1xx answers skipped; nothing for HEAD, 204 and 304).
 *
 * Nothing here logs, and nothing keeps a pointer to what it was given.
 */
#ifndef WARRANTD_H1_H
#define WARRANTD_H1_H

#include <stddef.h>
#include <sys/socket.h>

/* The longest answer head (status line and header fields, 1xx heads
 * included) the reader takes; a longer one is an error, as curl refuses a
 * header line over 100 KiB. */
#define H1_HEAD_MAX (64 * 1024)

struct h1_url {
	struct sockaddr_storage addr;	/* the host's address and the port */
	socklen_t addr_len;
	char authority[272];		/* "host[:port]" as written: the Host line */
	const char *target;		/* into the URL: path and query, no fragment */
	size_t target_len;		/* "/" is sent when 0 */
	char host[256];			/* for log lines */
};

/* 0 when `url` is one the native client takes, *u filled (u->target points
 * into url, valid while url is). -1 for anything else -- https, user info,
 * a host name other than localhost, a path with a dot segment, a space or a
 * byte curl would percent-encode --, which goes through curl. */
int h1_url_parse(const char *url, struct h1_url *u)
	__attribute__((warn_unused_result));

/* Plain data: read only during h1_head_size and h1_head_write. */
struct h1_head {
	const char *method;
	const struct h1_url *url;
	const char *const *headers;	/* NULL-terminated "Name: value" lines, or NULL */
	const char *basic;		/* "user:pass" for Authorization: Basic, or NULL */
	int has_body;			/* a body of body_len bytes follows (Content-Length) */
	size_t body_len;
};

/* At least the bytes h1_head_write writes. */
size_t h1_head_size(const struct h1_head *h);

/* Writes the head into buf (h1_head_size(h) bytes or more) and returns its
 * length. As curl: "Host" and an "Accept" of any type unless the caller gave its own;
 * with a body "Content-Length" and, unless the caller gave one,
 * "Content-Type: application/x-www-form-urlencoded"; a caller's "Name:" with
 * no value sends nothing of that name; never "Expect". */
size_t h1_head_write(char *buf, const struct h1_head *h);

/* ---- the answer ---- */

enum h1_rc {
	H1_MORE,	/* every byte taken; the answer goes on */
	H1_DONE,	/* the answer is whole; *used may be less than given */
	H1_ERROR	/* not HTTP/1.x, or over a limit: h1_error says what */
};

struct h1_reader;	/* opaque: one answer being read; reusable */

/* Caller frees with h1_reader_free. NULL when out of memory. */
struct h1_reader *h1_reader_new(void) __attribute__((warn_unused_result));
void h1_reader_free(struct h1_reader *r);	/* NULL is a no-op */

/* Ready for the answer to a new request: `head_request` for HEAD (no body
 * whatever the head says); a body over `body_max` bytes is an error. What
 * the last answer left is forgotten; buffers over `keep` bytes are freed. */
void h1_reader_reset(struct h1_reader *r, int head_request, size_t body_max, size_t keep);

/* Takes up to `len` bytes; *used says how many were part of the answer. */
enum h1_rc h1_reader_feed(struct h1_reader *r, const char *data, size_t len, size_t *used)
	__attribute__((warn_unused_result));

/* The connection ended: H1_DONE when that ends a body read to the close,
 * else H1_ERROR. */
enum h1_rc h1_reader_eof(struct h1_reader *r) __attribute__((warn_unused_result));

/* Whether any byte of an answer has been taken since the reset. */
int h1_reader_started(const struct h1_reader *r);

/* After H1_DONE: the final status, whether the connection may carry another
 * request, the body (NUL-terminated, never NULL) and the last Retry-After
 * and WWW-Authenticate values of the final head, trimmed (NULL if none).
 * Pointers are valid until the next reset or feed. */
long h1_reader_status(const struct h1_reader *r);
int h1_reader_keep_alive(const struct h1_reader *r);
const char *h1_reader_body(const struct h1_reader *r, size_t *len);
const char *h1_reader_retry_after(const struct h1_reader *r);
const char *h1_reader_www_authenticate(const struct h1_reader *r);
/* After H1_ERROR: what was wrong, for people ("" before). */
const char *h1_reader_error(const struct h1_reader *r);
/* Whether the error was the body over body_max. */
int h1_reader_too_large(const struct h1_reader *r);

#endif
