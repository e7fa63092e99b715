/*
 * fake_pdp --port-file FILE [--port N]: the policy decision point warrantd
 * asks in integration tests (SPEC §7, the OPA Data API shape). Binds
 * 127.0.0.1 only; one thread per connection, so a delayed answer holds up no
 * other request.
 *
 * A POST to any path not starting with "/_" is a query: its body is
 * {"input": {"subject", "action", "resource", "parameters", "basis",
 * "recordId", "decidedAt"}}. The answer follows the policy:
 *   POST /_policy {"deny_resources": [...], "deny_subjects": [...],
 *                  "mode": "bool"|"object"|"missing"|"status",
 *                  "status": 503, "delay_ms": 0}
 *     mode bool    -> {"result": true|false}
 *     mode object  -> {"result": {"allow": true|false}}
 *     mode missing -> {} (no result: the worker must deny)
 *     mode status  -> HTTP `status` (default 503) with an empty body
 *   A query is denied when its input.resource is in deny_resources or its
 *   input.subject is in deny_subjects. Missing fields take the defaults:
 *   allow everything, mode bool, no delay. Each POST replaces the policy.
 *   A body that is not {"input": {...}} gets 400 (and is still recorded).
 * Control:
 *   POST /_reset   policy back to the default, queries forgotten
 *   GET  /_queries JSON array, one object per query in arrival order:
 *                  {"path", "input" (the object, or null), "authorization"
 *                   (bool: header present; its value is never kept),
 *                   "content_type", "arrival_ms", "status" (answered),
 *                   "decision" ("allow", "deny" or "unavailable")}
 *   GET  /_stats   {"total", "allow", "deny", "unavailable" (also counts
 *                   bad requests), "by_status": {"200": n, ...},
 *                   "queries_dropped"}
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
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

#define MAX_QUERIES	200000		/* bounds memory under a long benchmark */
#define MAX_BODY	(1u << 20)

enum mode { MODE_BOOL, MODE_OBJECT, MODE_MISSING, MODE_STATUS };

struct policy {
	json_t *deny_resources;		/* array of strings */
	json_t *deny_subjects;		/* array of strings */
	enum mode mode;
	int status;			/* with MODE_STATUS */
	long delay_ms;
};

/* One per request: created by the URI log callback, freed when MHD is done. */
struct req {
	char *uri;
	char *body;
	size_t len, cap;
	int started, too_big;
};

/* What one query gets: decided under the lock, sent after it. */
struct answer {
	int status;
	const char *decision;	/* static */
	char *body;		/* malloc'd, "" for none */
	long delay_ms;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t wake;	/* broadcast at shutdown to cut delays short */
	int stopping;
	struct policy pol;
	json_t *queries;
	json_t *by_status;
	long long total, allowed, denied, unavailable, dropped;
} st = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void
policy_clear(struct policy *p)
{
	json_decref(p->deny_resources);
	json_decref(p->deny_subjects);
	*p = (struct policy){ .mode = MODE_BOOL, .status = 503 };
}

static void
reset_locked(void)
{
	policy_clear(&st.pol);
	st.pol.deny_resources = json_array();
	st.pol.deny_subjects = json_array();
	json_decref(st.queries);
	json_decref(st.by_status);
	st.queries = json_array();
	st.by_status = json_object();
	st.total = st.allowed = st.denied = st.unavailable = st.dropped = 0;
}

static int
all_strings(const json_t *a)
{
	size_t i;
	json_t *v;

	if (!json_is_array(a))
		return 0;
	json_array_foreach(a, i, v)
		if (!json_is_string(v))
			return 0;
	return 1;
}

static int
parse_mode(const json_t *v, enum mode *out)
{
	static const char *const names[] = { "bool", "object", "missing", "status" };

	if (v == NULL) {
		*out = MODE_BOOL;
		return 0;
	}
	for (size_t i = 0; json_is_string(v) && i < sizeof names / sizeof names[0]; i++)
		if (strcmp(json_string_value(v), names[i]) == 0) {
			*out = (enum mode)i;
			return 0;
		}
	return -1;
}

/* Fills *out (owning its arrays) from a /_policy body; 0 or -1. */
static int
policy_parse(const json_t *o, struct policy *out)
{
	const json_t *dr = json_object_get(o, "deny_resources");
	const json_t *ds = json_object_get(o, "deny_subjects");
	const json_t *status = json_object_get(o, "status");
	const json_t *delay = json_object_get(o, "delay_ms");

	*out = (struct policy){ .mode = MODE_BOOL, .status = 503 };
	if (!json_is_object(o) || (dr && !all_strings(dr)) || (ds && !all_strings(ds)) ||
	    (status && !json_is_integer(status)) || (delay && !json_is_integer(delay)) ||
	    parse_mode(json_object_get(o, "mode"), &out->mode) != 0)
		return -1;
	if (status != NULL)
		out->status = (int)json_integer_value(status);
	if (out->status < 100 || out->status > 599)
		return -1;
	out->delay_ms = delay ? (long)json_integer_value(delay) : 0;
	out->deny_resources = dr ? json_deep_copy(dr) : json_array();
	out->deny_subjects = ds ? json_deep_copy(ds) : json_array();
	if (out->deny_resources == NULL || out->deny_subjects == NULL) {
		policy_clear(out);
		return -1;
	}
	return 0;
}

static int
listed(const json_t *list, const json_t *value)
{
	size_t i;
	json_t *v;

	if (!json_is_string(value))
		return 0;
	json_array_foreach(list, i, v)
		if (strcmp(json_string_value(v), json_string_value(value)) == 0)
			return 1;
	return 0;
}

static int
allowed_locked(const json_t *input)
{
	return !listed(st.pol.deny_resources, json_object_get(input, "resource")) &&
	    !listed(st.pol.deny_subjects, json_object_get(input, "subject"));
}

/* The answer to a well-formed query under the current policy. */
static void
decide_locked(const json_t *input, struct answer *a)
{
	int allow = allowed_locked(input);

	a->delay_ms = st.pol.delay_ms;
	a->status = 200;
	a->decision = allow ? "allow" : "deny";
	switch (st.pol.mode) {
	case MODE_BOOL:
		a->body = strdup(allow ? "{\"result\":true}" : "{\"result\":false}");
		break;
	case MODE_OBJECT:
		a->body = strdup(allow ? "{\"result\":{\"allow\":true}}" :
		    "{\"result\":{\"allow\":false}}");
		break;
	case MODE_MISSING:
		a->decision = "deny";
		a->body = strdup("{}");
		break;
	case MODE_STATUS:
		a->status = st.pol.status;
		a->decision = "unavailable";
		a->body = strdup("");
		break;
	}
}

static json_t *
header_json(struct MHD_Connection *c, const char *name)
{
	const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
	return v ? json_string(v) : json_null();
}

static void
record_locked(struct MHD_Connection *c, const struct req *r, const json_t *input,
	      const struct answer *a)
{
	char code[16];
	long long *counter = strcmp(a->decision, "allow") == 0 ? &st.allowed :
	    strcmp(a->decision, "deny") == 0 ? &st.denied : &st.unavailable;

	st.total++;
	(*counter)++;
	snprintf(code, sizeof code, "%d", a->status);
	json_object_set_new(st.by_status, code,
	    json_integer(json_integer_value(json_object_get(st.by_status, code)) + 1));
	if (json_array_size(st.queries) >= MAX_QUERIES) {
		st.dropped++;
		return;
	}
	json_array_append_new(st.queries, json_pack("{s:s, s:O?, s:b, s:o, s:I, s:i, s:s}",
	    "path", r->uri, "input", input,
	    "authorization", MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization") != NULL,
	    "content_type", header_json(c, "Content-Type"),
	    "arrival_ms", (json_int_t)wtime_now_ms(), "status", a->status,
	    "decision", a->decision));
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
send_body(struct MHD_Connection *c, int status, const char *body)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(body),
	    (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (resp == NULL)
		return MHD_NO;
	if (body[0] != '\0')
		MHD_add_response_header(resp, "Content-Type", "application/json");
	ret = MHD_queue_response(c, (unsigned)status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void
log_query(const char *uri, const json_t *input, const struct answer *a)
{
	char qp[512], qi[256], qr[512];
	const json_t *id = json_object_get(input, "recordId");
	const json_t *res = json_object_get(input, "resource");

	log_info("fake.query", "path=%s id=%s resource=%s status=%d decision=%s",
	    log_quote(qp, sizeof qp, uri),
	    log_quote(qi, sizeof qi, json_is_string(id) ? json_string_value(id) : ""),
	    log_quote(qr, sizeof qr, json_is_string(res) ? json_string_value(res) : ""),
	    a->status, a->decision);
}

static enum MHD_Result
handle_query(struct MHD_Connection *c, const struct req *r, const char *method)
{
	json_t *doc = json_loadb(r->body ? r->body : "", r->len, 0, NULL);
	json_t *input = json_object_get(doc, "input");
	struct answer a = { .status = 400, .decision = "bad-request" };
	enum MHD_Result ret;

	if (strcmp(method, "POST") != 0) {
		json_decref(doc);
		return send_body(c, 405, "{\"error\":\"queries are POSTed\"}");
	}
	pthread_mutex_lock(&st.mu);
	if (json_is_object(input))
		decide_locked(input, &a);
	else
		a.body = strdup("{\"error\":\"body is not {\\\"input\\\": {...}}\"}");
	record_locked(c, r, json_is_object(input) ? input : NULL, &a);
	pthread_mutex_unlock(&st.mu);
	log_query(r->uri, input, &a);
	json_decref(doc);
	delay(a.delay_ms);
	ret = a.body ? send_body(c, a.status, a.body) : MHD_NO;
	free(a.body);
	return ret;
}

static enum MHD_Result
set_policy(struct MHD_Connection *c, const struct req *r)
{
	json_t *o = json_loadb(r->body ? r->body : "", r->len, 0, NULL);
	struct policy p;
	int rc = policy_parse(o, &p);

	json_decref(o);
	if (rc != 0)
		return send_body(c, 400, "{\"error\":\"bad policy\"}");
	pthread_mutex_lock(&st.mu);
	policy_clear(&st.pol);
	st.pol = p;
	pthread_mutex_unlock(&st.mu);
	return send_body(c, 200, "{\"ok\":true}");
}

static char *
stats_locked(void)
{
	json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:O}",
	    "total", (json_int_t)st.total, "allow", (json_int_t)st.allowed,
	    "deny", (json_int_t)st.denied, "unavailable", (json_int_t)st.unavailable,
	    "queries_dropped", (json_int_t)st.dropped, "by_status", st.by_status);
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	return s;
}

static enum MHD_Result
send_dump(struct MHD_Connection *c, int queries)
{
	pthread_mutex_lock(&st.mu);
	char *s = queries ? json_dumps(st.queries, JSON_COMPACT) : stats_locked();
	pthread_mutex_unlock(&st.mu);
	if (s == NULL)
		return send_body(c, 500, "{\"error\":\"out of memory\"}");
	enum MHD_Result ret = send_body(c, 200, s);
	free(s);
	return ret;
}

static enum MHD_Result
handle_control(struct MHD_Connection *c, const struct req *r, const char *method)
{
	size_t n = strcspn(r->uri, "?");
	int post = strcmp(method, "POST") == 0, get = strcmp(method, "GET") == 0;

#define IS(p) (n == strlen(p) && strncmp(r->uri, p, n) == 0)
	if (post && IS("/_policy"))
		return set_policy(c, r);
	if (get && (IS("/_stats") || IS("/_queries")))
		return send_dump(c, IS("/_queries"));
	if (post && IS("/_reset")) {
		pthread_mutex_lock(&st.mu);
		reset_locked();
		pthread_mutex_unlock(&st.mu);
		return send_body(c, 200, "{\"ok\":true}");
	}
#undef IS
	return send_body(c, 404, "{\"error\":\"no such control endpoint\"}");
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
		return send_body(c, 413, "{\"error\":\"body too large\"}");
	if (strncmp(r->uri, "/_", 2) == 0)
		return handle_control(c, r, method);
	return handle_query(c, r, method);
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
	fprintf(stderr, "usage: fake_pdp --port-file FILE [--port N]\n");
	return 64;
}

int
main(int argc, char **argv)
{
	const char *port_file = NULL;
	unsigned port = 0;
	pthread_condattr_t ca;
	sigset_t stop;
	int sig;

	log_init("fake_pdp");
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--port-file") == 0)
			port_file = argv[i + 1];
		else if (strcmp(argv[i], "--port") == 0)
			port = (unsigned)strtoul(argv[i + 1], NULL, 10);
		else
			return usage();
	}
	if (port_file == NULL || argc % 2 == 0)
		return usage();
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
	log_info("fake.listening", "port=%u", port);
	sigwait(&stop, &sig);

	pthread_mutex_lock(&st.mu);
	st.stopping = 1;
	pthread_cond_broadcast(&st.wake);
	pthread_mutex_unlock(&st.mu);
	MHD_stop_daemon(d);
	policy_clear(&st.pol);
	json_decref(st.queries);
	json_decref(st.by_status);
	log_info("fake.stopped", "signal=%d", sig);
	return 0;
}
