/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * common (prefix fake_): the libmicrohttpd plumbing the HTTP fakes share.
 * "--name value" arguments with --port-file and --port; a server on
 * 127.0.0.1, one thread per connection, whose handler sees each request once
 * with its whole body; JSON answers; the port file; the wait for SIGTERM or
 * SIGINT. One server per process.
 */
#ifndef WARRANTD_FAKE_COMMON_H
#define WARRANTD_FAKE_COMMON_H

#include <stddef.h>

#include <jansson.h>
#include <microhttpd.h>

/* One request with its whole body. */
struct fake_req {
	const char *uri;	/* request-target as received, still percent-encoded */
	const char *body;	/* len bytes and a NUL; "" when there was none */
	size_t len;
};

/* Answers one request. r is valid only during the call. A request whose body
 * is larger than the server's max_body never gets here: it is answered 413. */
typedef enum MHD_Result fake_handler(struct MHD_Connection *c, const struct fake_req *r,
				     const char *method);

struct fake_server {
	fake_handler *control;	/* paths starting with "/_": the test drives the fake */
	fake_handler *handle;	/* every other path */
	size_t max_body;
	unsigned connection_limit;
	/* Headers on every answer: name, value, ..., NULL. May be NULL. */
	const char *const *headers;
	/* Called once the port is bound, before the port file is written (so
	 * before any client can know the port). May be NULL. */
	void (*on_bound)(unsigned port);
};

struct fake_args {
	const char *port_file;	/* points into argv */
	unsigned port;		/* 0: any free port */
};

/* A file's bytes, NUL-terminated. */
struct fake_blob {
	char *data;
	size_t len;
};

/* Takes one "--name value" pair other than --port-file and --port: 0, or -1
 * when the name is unknown or the value bad. */
typedef int fake_option(const char *name, const char *value, void *arg);

/*
 * argv[1..] must be "--name value" pairs. --port-file and --port go into
 * *out; every other pair goes to take(name, value, arg), in order (take may
 * be NULL: no other option is known). 0 when every pair was taken and
 * --port-file was given, else -1 (the caller prints its usage).
 */
int fake_parse_args(int argc, char **argv, struct fake_args *out, fake_option *take, void *arg)
	__attribute__((warn_unused_result));

/* At most max bytes of the file at path into out->data, NUL-terminated
 * (caller frees); surrounding white space dropped when trim. -1 when the
 * file cannot be read or nothing is left of it. */
int fake_read_file(const char *path, size_t max, int trim, struct fake_blob *out)
	__attribute__((warn_unused_result));

/*
 * Starts srv on 127.0.0.1:*port (0: any free port), sets *port to the port
 * bound and writes it to port_file (under a temporary name, then renamed: a
 * reader never sees half). SIGTERM and SIGINT are blocked first, before any
 * thread starts, so that only fake_wait sees them; SIGPIPE is ignored.
 * NULL, logged, on failure. srv must outlive the server.
 */
struct MHD_Daemon *fake_start(const struct fake_server *srv, unsigned *port,
			      const char *port_file)
	__attribute__((warn_unused_result));

/* Waits for SIGTERM or SIGINT, cuts every fake_delay short, then stops d
 * (and so waits for every handler). Returns the signal. */
int fake_wait(struct MHD_Daemon *d);

/* Sleeps ms, but returns at once when the server is shutting down. */
void fake_delay(long ms);

/*
 * Answers status with body: Content-Type application/json (unless body is
 * ""), the server's headers, then extra: name, value, ..., NULL, where a pair
 * whose value is NULL or "" is left out (extra may be NULL).
 */
enum MHD_Result fake_send(struct MHD_Connection *c, int status, const char *body,
			  const char *const *extra);

/* 200 with the JSON text s, or 500 when s is NULL (out of memory). Takes s:
 * frees it. */
enum MHD_Result fake_send_text(struct MHD_Connection *c, char *s);

/* Compact JSON text of o (caller frees), or NULL when o is NULL or out of
 * memory. Takes o: drops the reference. */
char *fake_dump(json_t *o)
	__attribute__((warn_unused_result));

/* The request header's value as a JSON string, or JSON null when absent.
 * New reference. */
json_t *fake_header_json(struct MHD_Connection *c, const char *name);

/* 1 when r's path (the request-target before any '?') is exactly path. */
int fake_path_is(const struct fake_req *r, const char *path);

/*
 * RFC 9449 §4.3: checks a DPoP proof as a server does -- one JWS with typ
 * dpop+jwt, alg ES256, a public P-256 jwk and a signature that verifies
 * with it; htm and htu equal to what was asked (htu without query), iat
 * within 60 s of now, a jti (copied into jti), ath = the token's SHA-256
 * when token is set, nonce equal to `nonce` when that is set. The jwk's
 * RFC 7638 thumbprint, computed here by hand, goes into jkt. NULL when
 * it holds, else what is wrong (static). Replay (the jti seen before) is
 * the caller's to refuse.
 */
const char *fake_dpop_check(const char *proof, const char *htm, const char *htu,
			    const char *token, const char *nonce, char *jkt, size_t jktlen,
			    char *jti, size_t jtilen);

/* A claim of the JWT in an Authorization value (Bearer or DPoP), read
 * without verifying it -- for a fake to tell whose token came -- as a new
 * reference; JSON null when there is none. */
json_t *fake_unverified_claim(const char *authorization, const char *claim);

#endif
