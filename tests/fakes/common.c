/* SPDX-License-Identifier: BSD-2-Clause */
/* common: the libmicrohttpd plumbing of the HTTP fakes (see common.h). */
#define _POSIX_C_SOURCE 200809L
#include "common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include "jose/b64url.h"
#include "jose/jwks.h"
#include "jose/jws.h"
#include "base/log.h"

/* One per request: created by the URI log callback, freed when MHD is done. */
struct conn_req {
	char *uri;
	char *body;
	size_t len, cap;
	int started, too_big;
};

static struct {
	const struct fake_server *srv;
	sigset_t stop;
	pthread_mutex_t mu;
	pthread_cond_t wake;	/* broadcast at shutdown to cut delays short */
	int stopping;
} fk = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* ---- arguments and files ---- */

int
fake_parse_args(int argc, char **argv, struct fake_args *out, fake_option *take, void *arg)
{
	if (argc % 2 == 0)
		return -1;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--port-file") == 0)
			out->port_file = argv[i + 1];
		else if (strcmp(argv[i], "--port") == 0)
			out->port = (unsigned)strtoul(argv[i + 1], NULL, 10);
		else if (take == NULL || take(argv[i], argv[i + 1], arg) != 0)
			return -1;
	}
	return out->port_file != NULL ? 0 : -1;
}

int
fake_read_file(const char *path, size_t max, int trim, struct fake_blob *out)
{
	FILE *f = fopen(path, "r");
	char *buf;
	size_t n, start = 0;

	if (f == NULL)
		return -1;
	if ((buf = malloc(max + 1)) == NULL) {
		fclose(f);
		return -1;
	}
	n = fread(buf, 1, max, f);
	fclose(f);
	if (trim) {
		while (n > 0 && strchr(" \t\r\n", buf[n - 1]))
			n--;
		while (start < n && strchr(" \t\r\n", buf[start]))
			start++;
	}
	if (start >= n) {
		free(buf);
		return -1;
	}
	memmove(buf, buf + start, n - start);
	buf[n - start] = '\0';
	out->data = buf;
	out->len = n - start;
	return 0;
}

/* Written under a temporary name, then renamed: a reader never sees half. */
static int
write_port_file(const char *path, unsigned port)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	if ((f = fopen(tmp, "w")) == NULL)
		return -1;
	fprintf(f, "%u\n", port);
	if (fclose(f) != 0)
		return -1;
	return rename(tmp, path);
}

/* ---- answers ---- */

static void
add_headers(struct MHD_Response *resp, const char *const *list)
{
	for (size_t i = 0; list != NULL && list[i] != NULL; i += 2)
		if (list[i + 1] != NULL && list[i + 1][0] != '\0')
			MHD_add_response_header(resp, list[i], list[i + 1]);
}

enum MHD_Result
fake_send(struct MHD_Connection *c, int status, const char *body, const char *const *extra)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(body),
	    (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (resp == NULL)
		return MHD_NO;
	if (body[0] != '\0')
		MHD_add_response_header(resp, "Content-Type", "application/json");
	add_headers(resp, fk.srv != NULL ? fk.srv->headers : NULL);
	add_headers(resp, extra);
	ret = MHD_queue_response(c, (unsigned)status, resp);
	MHD_destroy_response(resp);
	return ret;
}

enum MHD_Result
fake_send_text(struct MHD_Connection *c, char *s)
{
	enum MHD_Result ret;

	if (s == NULL)
		return fake_send(c, 500, "{\"error\":\"out of memory\"}", NULL);
	ret = fake_send(c, 200, s, NULL);
	free(s);
	return ret;
}

char *
fake_dump(json_t *o)
{
	char *s = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	return s;
}

json_t *
fake_header_json(struct MHD_Connection *c, const char *name)
{
	const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
	return v ? json_string(v) : json_null();
}

int
fake_path_is(const struct fake_req *r, const char *path)
{
	size_t n = strcspn(r->uri, "?");
	return n == strlen(path) && strncmp(r->uri, path, n) == 0;
}

/* ---- delays ---- */

void
fake_delay(long ms)
{
	struct timespec until;

	if (ms <= 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&fk.mu);
	while (!fk.stopping && pthread_cond_timedwait(&fk.wake, &fk.mu, &until) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&fk.mu);
}

/* ---- the server ---- */

static int
append_body(struct conn_req *r, const char *data, size_t n)
{
	if (r->len + n > fk.srv->max_body)
		return -1;
	if (r->len + n + 1 > r->cap) {
		size_t cap = r->cap ? r->cap : 4096;
		while (cap < r->len + n + 1)
			cap *= 2;
		char *b = realloc(r->body, cap);
		if (b == NULL)
			return -1;
		r->body = b;
		r->cap = cap;
	}
	memcpy(r->body + r->len, data, n);
	r->len += n;
	r->body[r->len] = '\0';
	return 0;
}

/* MHD calls this once with the headers, once per body chunk, then once more
 * with no data: only that last call answers. */
static enum MHD_Result
on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
	   const char *version, const char *data, size_t *data_size, void **ctx)
{
	struct conn_req *r = *ctx;

	(void)cls, (void)url, (void)version;
	if (r == NULL)
		return MHD_NO;
	if (!r->started) {
		r->started = 1;
		return MHD_YES;
	}
	if (*data_size > 0) {
		if (!r->too_big && append_body(r, data, *data_size) != 0)
			r->too_big = 1;
		*data_size = 0;
		return MHD_YES;
	}
	if (r->too_big)
		return fake_send(c, 413, "{\"error\":\"body too large\"}", NULL);
	struct fake_req whole = { .uri = r->uri, .body = r->body ? r->body : "", .len = r->len };
	if (strncmp(whole.uri, "/_", 2) == 0)
		return fk.srv->control(c, &whole, method);
	return fk.srv->handle(c, &whole, method);
}

static void *
on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct conn_req *r = calloc(1, sizeof *r);

	(void)cls, (void)c;
	if (r != NULL && (r->uri = strdup(uri)) == NULL) {
		free(r);
		r = NULL;
	}
	return r;
}

static void
on_completed(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_RequestTerminationCode toe)
{
	struct conn_req *r = *ctx;

	(void)cls, (void)c, (void)toe;
	if (r != NULL) {
		free(r->uri);
		free(r->body);
		free(r);
	}
	*ctx = NULL;
}

static struct MHD_Daemon *
start_daemon(unsigned port, unsigned connection_limit)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
	    MHD_USE_AUTO | MHD_USE_ERROR_LOG, (uint16_t)port, NULL, NULL, on_request, NULL,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
	    MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
	    MHD_OPTION_CONNECTION_LIMIT, connection_limit,
	    MHD_OPTION_END);
}

struct MHD_Daemon *
fake_start(const struct fake_server *srv, unsigned *port, const char *port_file)
{
	pthread_condattr_t ca;
	struct MHD_Daemon *d;

	fk.srv = srv;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&fk.wake, &ca);
	pthread_condattr_destroy(&ca);

	/* Blocked before any thread starts, so only sigwait() sees them. */
	sigemptyset(&fk.stop);
	sigaddset(&fk.stop, SIGTERM);
	sigaddset(&fk.stop, SIGINT);
	pthread_sigmask(SIG_BLOCK, &fk.stop, NULL);
	signal(SIGPIPE, SIG_IGN);

	if ((d = start_daemon(*port, srv->connection_limit)) == NULL) {
		log_error("fake.listen", "port=%u", *port);
		return NULL;
	}
	*port = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port;
	if (srv->on_bound != NULL)
		srv->on_bound(*port);
	if (write_port_file(port_file, *port) != 0) {
		log_error("fake.port_file", "errno=%d", errno);
		MHD_stop_daemon(d);
		return NULL;
	}
	return d;
}

int
fake_wait(struct MHD_Daemon *d)
{
	int sig;

	sigwait(&fk.stop, &sig);
	pthread_mutex_lock(&fk.mu);
	fk.stopping = 1;
	pthread_cond_broadcast(&fk.wake);
	pthread_mutex_unlock(&fk.mu);
	MHD_stop_daemon(d);
	return sig;
}

/* ---- RFC 9449 §4.3: a DPoP proof as a server checks it ---- */

/* Segment `which` (0 header, 1 payload) of a compact JWS as JSON. */
static json_t *
jws_segment(const char *jws, int which)
{
	const char *p = jws, *end;
	unsigned char *raw = NULL;
	size_t n = 0;
	json_t *j;

	for (int i = 0; i < which; i++)
		if ((p = strchr(p, '.')) == NULL)
			return NULL;
		else
			p++;
	if ((end = strchr(p, '.')) == NULL ||
	    b64url_decode(p, (size_t)(end - p), &raw, &n) != 0)
		return NULL;
	j = json_loadb((const char *)raw, n, 0, NULL);
	free(raw);
	return j;
}

/* The ES256 signature of jws verifies with the public jwk (a JWKS of one
 * key, read by the verifier's own reader). */
static int
es256_verifies(const char *jws, const json_t *jwk)
{
	json_t *set = json_pack("{s:[O]}", "keys", jwk);
	char *text = set ? json_dumps(set, JSON_COMPACT) : NULL, err[160];
	struct jwks_key *keys = NULL;
	int n = text ? jwks_read((const unsigned char *)text, strlen(text), JWA_ES256, &keys,
	    err, sizeof err) : -1;
	const char *dot = strrchr(jws, '.');
	unsigned char *sig = NULL, *der = NULL;
	size_t sig_len = 0;
	int der_len = 0, ok = 0;

	if (n == 1 && dot != NULL && b64url_decode(dot + 1, strlen(dot + 1), &sig, &sig_len) == 0 &&
	    jws_es256_to_der(sig, sig_len, &der, &der_len) == 0) {
		EVP_MD_CTX *ctx = EVP_MD_CTX_new();
		ok = ctx != NULL && EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, keys[0].pk) == 1 &&
		    EVP_DigestVerify(ctx, der, (size_t)der_len, (const unsigned char *)jws,
		    (size_t)(dot - jws)) == 1;
		EVP_MD_CTX_free(ctx);
	}
	OPENSSL_free(der);
	free(sig);
	if (n > 0)
		jwks_free(keys, (size_t)n);
	free(text);
	json_decref(set);
	return ok;
}

static const char *
str_of(const json_t *o, const char *name)
{
	return json_string_value(json_object_get(o, name));
}

const char *
fake_dpop_check(const char *proof, const char *htm, const char *htu, const char *token,
		const char *nonce, char *jkt, size_t jktlen, char *jti, size_t jtilen)
{
	json_t *h = proof ? jws_segment(proof, 0) : NULL, *c = proof ? jws_segment(proof, 1) : NULL;
	const json_t *jwk = json_object_get(h, "jwk"), *iat = json_object_get(c, "iat");
	const char *why = NULL;
	char canon[400];
	unsigned char md[SHA256_DIGEST_LENGTH];
	char *b = NULL;
	long long now = (long long)time(NULL);

	jkt[0] = jti[0] = '\0';
	if (h == NULL || c == NULL)
		why = "the DPoP proof is not a JWS";
	else if (str_of(h, "typ") == NULL || strcmp(str_of(h, "typ"), "dpop+jwt") != 0)
		why = "typ is not dpop+jwt";
	else if (str_of(h, "alg") == NULL || strcmp(str_of(h, "alg"), "ES256") != 0)
		why = "alg is not ES256";
	else if (!json_is_object(jwk) || json_object_get(jwk, "d") != NULL ||
	    str_of(jwk, "x") == NULL || str_of(jwk, "y") == NULL)
		why = "no public jwk";
	else if (!es256_verifies(proof, jwk))
		why = "the signature does not verify with the jwk";
	else if (str_of(c, "htm") == NULL || strcmp(str_of(c, "htm"), htm) != 0)
		why = "htm is not the method";
	else if (str_of(c, "htu") == NULL || strcmp(str_of(c, "htu"), htu) != 0)
		why = "htu is not the URL";
	else if (!json_is_integer(iat) || json_integer_value(iat) < now - 60 ||
	    json_integer_value(iat) > now + 60)
		why = "iat is not within 60 s";
	else if (str_of(c, "jti") == NULL || strlen(str_of(c, "jti")) < 8 ||
	    strlen(str_of(c, "jti")) >= jtilen)
		why = "no jti";
	else if (nonce != NULL && (str_of(c, "nonce") == NULL ||
	    strcmp(str_of(c, "nonce"), nonce) != 0))
		why = "use_dpop_nonce";
	if (why == NULL && token != NULL) {
		SHA256((const unsigned char *)token, strlen(token), md);
		b = b64url_encode(md, sizeof md);
		if (b == NULL || str_of(c, "ath") == NULL || strcmp(str_of(c, "ath"), b) != 0)
			why = "ath is not the token's hash";
		free(b);
	} else if (why == NULL && json_object_get(c, "ath") != NULL) {
		why = "ath without a token";
	}
	if (why == NULL) {
		snprintf(jti, jtilen, "%s", str_of(c, "jti"));
		/* RFC 7638 by hand: the required members, sorted, no blanks */
		snprintf(canon, sizeof canon, "{\"crv\":\"%s\",\"kty\":\"%s\",\"x\":\"%s\",\"y\":\"%s\"}",
		    str_of(jwk, "crv") ? str_of(jwk, "crv") : "", str_of(jwk, "kty") ?
		    str_of(jwk, "kty") : "", str_of(jwk, "x"), str_of(jwk, "y"));
		SHA256((const unsigned char *)canon, strlen(canon), md);
		if ((b = b64url_encode(md, sizeof md)) != NULL)
			snprintf(jkt, jktlen, "%s", b);
		free(b);
	}
	json_decref(h);
	json_decref(c);
	return why;
}

json_t *
fake_unverified_claim(const char *authorization, const char *claim)
{
	const char *tok = authorization == NULL ? NULL :
	    strncmp(authorization, "Bearer ", 7) == 0 ? authorization + 7 :
	    strncmp(authorization, "DPoP ", 5) == 0 ? authorization + 5 : NULL;
	json_t *payload = tok && strchr(tok, '.') ? jws_segment(tok, 1) : NULL;
	json_t *v = json_object_get(payload, claim);

	v = v ? json_incref(v) : json_null();
	json_decref(payload);
	return v;
}
