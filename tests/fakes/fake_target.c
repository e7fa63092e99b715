/*
 * fake_target --port-file FILE [--port N] [--jwt-secret-file F]: the action
 * endpoint warrantd calls in integration tests. A path not starting with "/_"
 * is an action call, recorded and answered as the script says; /_script,
 * /_reset, /_revoke, /_stats and /_requests drive it (/work/notes/harness_api.md).
 * One thread per connection, so a delayed answer holds up no other request.
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <jwt.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "wtime.h"

#define MAX_RECORDS	200000		/* bounds memory under a long benchmark */
#define MAX_BODY	(16u << 20)

struct reply {
	int status;
	long delay_ms;
	char retry_after[64];
	char www_authenticate[256];
};

/* One per request: created by the URI log callback, freed when MHD is done. */
struct req {
	char *uri;		/* request-target as received, still percent-encoded */
	char *body;
	size_t len, cap;
	int started, too_big;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t wake;	/* broadcast at shutdown to cut delays short */
	int stopping;
	json_t *script;
	json_t *records;
	long long records_dropped;
	long long total, duplicates;
	json_t *by_status;	/* "200" -> answers */
	json_t *keys;		/* Idempotency-Key -> calls */
	json_t *ok_keys;	/* Idempotency-Key -> 2xx answers */
	unsigned char *secret;	/* NULL: no token check */
	int secret_len;
	long long revoked_at;	/* tokens issued before this second are dead */
} st = { .mu = PTHREAD_MUTEX_INITIALIZER };

static long long
counter_add(json_t *counters, const char *key, long long by)
{
	long long n = json_integer_value(json_object_get(counters, key)) + by;
	json_object_set_new(counters, key, json_integer(n));
	return n;
}

static void
drop_state(void)
{
	json_decref(st.script);
	json_decref(st.records);
	json_decref(st.by_status);
	json_decref(st.keys);
	json_decref(st.ok_keys);
}

static void
reset_locked(void)
{
	drop_state();
	st.script = json_object();
	st.records = json_array();
	st.by_status = json_object();
	st.keys = json_object();
	st.ok_keys = json_object();
	st.records_dropped = st.total = st.duplicates = 0;
}

static void
copy_str(char *dst, size_t n, const json_t *v)
{
	if (json_is_string(v))
		snprintf(dst, n, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(dst, n, "%lld", (long long)json_integer_value(v));
	else
		dst[0] = '\0';
}

/* Missing fields: status 200, no delay, no extra headers. */
static void
reply_from_spec(const json_t *spec, struct reply *out)
{
	const json_t *status = json_object_get(spec, "status");

	out->status = json_is_integer(status) ? (int)json_integer_value(status) : 200;
	out->delay_ms = (long)json_integer_value(json_object_get(spec, "delay_ms"));
	copy_str(out->retry_after, sizeof out->retry_after, json_object_get(spec, "retry_after"));
	copy_str(out->www_authenticate, sizeof out->www_authenticate,
	    json_object_get(spec, "www_authenticate"));
}

/* Per-key answers are used up in order; then the default applies. */
static void
next_reply_locked(const char *key, struct reply *out)
{
	json_t *queue = key ? json_object_get(json_object_get(st.script, "per_key"), key) : NULL;

	if (json_array_size(queue) > 0) {
		reply_from_spec(json_array_get(queue, 0), out);
		json_array_remove(queue, 0);
		return;
	}
	reply_from_spec(json_object_get(st.script, "default"), out);
}

static int
token_ok_locked(const char *authorization)
{
	jwt_t *jwt = NULL;
	int ok = 0;

	if (authorization == NULL || strncmp(authorization, "Bearer ", 7) != 0)
		return 0;
	if (jwt_decode(&jwt, authorization + 7, st.secret, st.secret_len) != 0)
		return 0;
	if (jwt_get_alg(jwt) == JWT_ALG_HS256) {
		errno = 0;
		long exp = jwt_get_grant_int(jwt, "exp");
		int has_exp = errno == 0;
		long iat = jwt_get_grant_int(jwt, "iat");
		ok = has_exp && exp > (long)time(NULL) && iat >= st.revoked_at;
	}
	jwt_free(jwt);
	return ok;
}

static json_t *
header_json(struct MHD_Connection *c, const char *name)
{
	const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
	return v ? json_string(v) : json_null();
}

static void
record_locked(struct MHD_Connection *c, const struct req *r, const char *method,
	      const char *key, int status)
{
	char code[16];

	st.total++;
	snprintf(code, sizeof code, "%d", status);
	counter_add(st.by_status, code, 1);
	if (key != NULL) {
		counter_add(st.keys, key, 1);
		if (status >= 200 && status < 300 && counter_add(st.ok_keys, key, 1) > 1)
			st.duplicates++;
	}
	if (json_array_size(st.records) >= MAX_RECORDS) {
		st.records_dropped++;
		return;
	}
	json_t *body = json_stringn(r->body ? r->body : "", r->len);
	json_array_append_new(st.records, json_pack("{s:s, s:s, s:o, s:b, s:o, s:o, s:o, s:o, s:I, s:i}",
	    "method", method, "path", r->uri,
	    "idempotency_key", key ? json_string(key) : json_null(),
	    "authorization", MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization") != NULL,
	    "on_behalf_of", header_json(c, "Warrant-On-Behalf-Of"),
	    "basis", header_json(c, "Warrant-Basis"),
	    "content_type", header_json(c, "Content-Type"),
	    "body", body ? body : json_null(),
	    "arrival_ms", (json_int_t)wtime_now_ms(), "status", status));
}

static char *
stats_locked(void)
{
	long long max = 0;
	const char *key;
	json_t *n;

	json_object_foreach(st.keys, key, n)
		if (json_integer_value(n) > max)
			max = json_integer_value(n);
	json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:O, s:O}",
	    "total", (json_int_t)st.total, "distinct_keys", (json_int_t)json_object_size(st.keys),
	    "max_per_key", (json_int_t)max, "duplicates", (json_int_t)st.duplicates,
	    "records_dropped", (json_int_t)st.records_dropped,
	    "by_status", st.by_status, "keys", st.keys);
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return s;
}

/* Sleeps, but wakes at once when the server shuts down. */
static void
delay(long ms)
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
	pthread_mutex_lock(&st.mu);
	while (!st.stopping && pthread_cond_timedwait(&st.wake, &st.mu, &until) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&st.mu);
}

static enum MHD_Result
send_json(struct MHD_Connection *c, const struct reply *rp, const char *body)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(body),
	    (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (resp == NULL)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", "application/json");
	if (rp->retry_after[0])
		MHD_add_response_header(resp, "Retry-After", rp->retry_after);
	if (rp->www_authenticate[0])
		MHD_add_response_header(resp, "WWW-Authenticate", rp->www_authenticate);
	ret = MHD_queue_response(c, (unsigned)rp->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result
send_plain(struct MHD_Connection *c, int status, const char *body)
{
	struct reply rp = { .status = status };
	return send_json(c, &rp, body);
}

static void
log_call(const char *method, const char *uri, const char *key, int status)
{
	char qm[64], qp[512], qk[256];

	log_info("fake.request", "method=%s path=%s key=%s status=%d",
	    log_quote(qm, sizeof qm, method), log_quote(qp, sizeof qp, uri),
	    log_quote(qk, sizeof qk, key), status);
}

static enum MHD_Result
handle_action(struct MHD_Connection *c, const struct req *r, const char *method)
{
	const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Idempotency-Key");
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	struct reply rp;
	char body[64];

	pthread_mutex_lock(&st.mu);
	if (st.secret != NULL && !token_ok_locked(auth)) {
		rp = (struct reply){ .status = 401 };
		snprintf(rp.www_authenticate, sizeof rp.www_authenticate,
		    "Bearer error=\"invalid_token\"");
	} else {
		next_reply_locked(key, &rp);
	}
	record_locked(c, r, method, key, rp.status);
	pthread_mutex_unlock(&st.mu);
	log_call(method, r->uri, key, rp.status);
	delay(rp.delay_ms);
	snprintf(body, sizeof body, "{\"status\":%d}", rp.status);
	return send_json(c, &rp, body);
}

/* A script is an object whose "default" is an object and whose "per_key"
 * maps keys to arrays of objects. */
static int
script_valid(const json_t *s)
{
	const json_t *def = json_object_get(s, "default"), *per = json_object_get(s, "per_key");
	const char *key;
	json_t *queue, *spec;
	size_t i;

	if (!json_is_object(s) || (def && !json_is_object(def)) || (per && !json_is_object(per)))
		return 0;
	json_object_foreach((json_t *)per, key, queue) {
		if (!json_is_array(queue))
			return 0;
		json_array_foreach(queue, i, spec)
			if (!json_is_object(spec))
				return 0;
	}
	return 1;
}

static enum MHD_Result
set_script(struct MHD_Connection *c, const struct req *r)
{
	json_t *s = json_loadb(r->body ? r->body : "", r->len, 0, NULL);

	if (!script_valid(s)) {
		json_decref(s);
		return send_plain(c, 400, "{\"error\":\"bad script\"}");
	}
	pthread_mutex_lock(&st.mu);
	json_decref(st.script);
	st.script = s;
	pthread_mutex_unlock(&st.mu);
	return send_plain(c, 200, "{\"ok\":true}");
}

static enum MHD_Result
send_dump(struct MHD_Connection *c, int requests)
{
	pthread_mutex_lock(&st.mu);
	char *s = requests ? json_dumps(st.records, JSON_COMPACT) : stats_locked();
	pthread_mutex_unlock(&st.mu);
	if (s == NULL)
		return send_plain(c, 500, "{\"error\":\"out of memory\"}");
	enum MHD_Result ret = send_plain(c, 200, s);
	free(s);
	return ret;
}

static enum MHD_Result
handle_control(struct MHD_Connection *c, const struct req *r, const char *method)
{
	size_t n = strcspn(r->uri, "?");
	int post = strcmp(method, "POST") == 0, get = strcmp(method, "GET") == 0;

#define IS(p) (n == strlen(p) && strncmp(r->uri, p, n) == 0)
	if (post && IS("/_script"))
		return set_script(c, r);
	if (get && (IS("/_stats") || IS("/_requests")))
		return send_dump(c, IS("/_requests"));
	if (post && (IS("/_reset") || IS("/_revoke"))) {
		pthread_mutex_lock(&st.mu);
		if (IS("/_reset"))
			reset_locked();
		else
			st.revoked_at = (long long)time(NULL);
		pthread_mutex_unlock(&st.mu);
		return send_plain(c, 200, "{\"ok\":true}");
	}
#undef IS
	return send_plain(c, 404, "{\"error\":\"no such control endpoint\"}");
}

static int
append_body(struct req *r, const char *data, size_t n)
{
	if (r->len + n > MAX_BODY)
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
	struct req *r = *ctx;

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
		return send_plain(c, 413, "{\"error\":\"body too large\"}");
	if (strncmp(r->uri, "/_", 2) == 0)
		return handle_control(c, r, method);
	return handle_action(c, r, method);
}

static void *
on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct req *r = calloc(1, sizeof *r);

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
	struct req *r = *ctx;

	(void)cls, (void)c, (void)toe;
	if (r != NULL) {
		free(r->uri);
		free(r->body);
		free(r);
	}
	*ctx = NULL;
}

/* Surrounding whitespace is not part of the secret. */
static int
read_secret(const char *path)
{
	char buf[4096];
	FILE *f = fopen(path, "r");

	if (f == NULL)
		return -1;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	while (n > 0 && strchr(" \t\r\n", buf[n - 1]))
		n--;
	size_t start = strspn(buf, " \t\r\n");
	if (start >= n || (st.secret = malloc(n - start)) == NULL)
		return -1;
	memcpy(st.secret, buf + start, n - start);
	st.secret_len = (int)(n - start);
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

static struct MHD_Daemon *
start_daemon(unsigned port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
	    MHD_USE_AUTO | MHD_USE_ERROR_LOG, (uint16_t)port, NULL, NULL, on_request, NULL,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
	    MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)2000,
	    MHD_OPTION_END);
}

static int
usage(void)
{
	fprintf(stderr, "usage: fake_target --port-file FILE [--port N] [--jwt-secret-file F]\n");
	return 64;
}

int
main(int argc, char **argv)
{
	const char *port_file = NULL, *secret_file = NULL;
	unsigned port = 0;
	pthread_condattr_t ca;
	sigset_t stop;
	int sig;

	log_init("fake_target");
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--port-file") == 0)
			port_file = argv[i + 1];
		else if (strcmp(argv[i], "--port") == 0)
			port = (unsigned)strtoul(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--jwt-secret-file") == 0)
			secret_file = argv[i + 1];
		else
			return usage();
	}
	if (port_file == NULL || argc % 2 == 0)
		return usage();
	if (secret_file != NULL && read_secret(secret_file) != 0) {
		log_error("fake.secret", "msg=\"cannot read the secret file\"");
		return 1;
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&st.wake, &ca);
	pthread_condattr_destroy(&ca);
	reset_locked();

	/* Blocked before any thread starts, so only sigwait() sees them. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct MHD_Daemon *d = start_daemon(port);
	if (d == NULL) {
		log_error("fake.listen", "port=%u", port);
		return 1;
	}
	port = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port;
	if (write_port_file(port_file, port) != 0) {
		log_error("fake.port_file", "errno=%d", errno);
		MHD_stop_daemon(d);
		return 1;
	}
	log_info("fake.listening", "port=%u jwt=%s", port, st.secret ? "on" : "off");
	sigwait(&stop, &sig);

	pthread_mutex_lock(&st.mu);
	st.stopping = 1;
	pthread_cond_broadcast(&st.wake);
	pthread_mutex_unlock(&st.mu);
	MHD_stop_daemon(d);
	drop_state();
	free(st.secret);
	log_info("fake.stopped", "signal=%d", sig);
	return 0;
}
