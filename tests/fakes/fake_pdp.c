/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fake_pdp --port-file FILE [--port N]: the policy decision point warrantd
 * asks in integration tests (warrantd(7) §7, the OPA Data API shape). Binds
 * 127.0.0.1 only; one thread per connection, so a delayed answer holds up no
 * other request.
 *
 * A POST to any path not starting with "/_" is a query: its body is
 * {"input": {"subject", "action", "resource", "parameters", "basis",
 * "recordId", "decidedAt"}} (OPA), or an OpenID AuthZEN 1.0 Access
 * Evaluation request {"subject": {"type", "id"}, "action": {"name"},
 * "resource": {"type", "id"}, "context": {...}}, which is read as the input
 * {"subject": subject.id, "action": action.name, "resource": resource.id,
 * and context's members} and answered {"decision": true|false}. The answer
 * follows the policy:
 *   POST /_policy {"deny_resources": [...], "deny_subjects": [...],
 *                  "mode": "bool"|"object"|"missing"|"status",
 *                  "status": 503, "delay_ms": 0}
 *     mode bool    -> {"result": true|false}
 *     mode object  -> {"result": {"allow": true|false}}
 *     mode missing -> {} (no result: the worker must deny)
 *     mode status  -> HTTP `status` (default 503) with an empty body
 *     mode garbage -> 200 with a body that is not JSON (an HTML page)
 *   A query is denied when its input.resource is in deny_resources or its
 *   input.subject is in deny_subjects. With "canal_duty": {"LATERAL":
 *   "SUBJECT", ...} the canal rule of examples/policy/warrant.rego applies
 *   as well: only action gate.open on canal/LATERAL/gate-N, by the duty
 *   operator of LATERAL, with parameters.percent (a number or a numeric
 *   string) from 0 to 60. Missing fields take the defaults:
 *   allow everything, mode bool, no delay. Each POST replaces the policy.
 *   A body that is neither gets 400 (and is still recorded).
 * Control:
 *   POST /_reset   policy back to the default, queries forgotten
 *   GET  /_queries JSON array, one object per query in arrival order:
 *                  {"path", "input" (the object, or null), "authorization"
 *                   (bool: header present; its value is never kept),
 *                   "authzen" (an AuthZEN request as it came, or null),
 *                   "traceparent" (the header, or null),
 *                   "content_type", "arrival_ms", "status" (answered),
 *                   "decision" ("allow", "deny" or "unavailable")}
 *   GET  /_stats   {"total", "allow", "deny", "unavailable" (also counts
 *                   bad requests), "by_status": {"200": n, ...},
 *                   "queries_dropped"}
 */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "base/log.h"
#include "base/wtime.h"

#define MAX_QUERIES	200000		/* bounds memory under a long benchmark */
#define MAX_BODY	(1u << 20)

enum mode { MODE_BOOL, MODE_OBJECT, MODE_MISSING, MODE_STATUS, MODE_GARBAGE };

struct policy {
	json_t *deny_resources;		/* array of strings */
	json_t *deny_subjects;		/* array of strings */
	json_t *canal_duty;		/* NULL, or lateral -> duty operator */
	enum mode mode;
	int status;			/* with MODE_STATUS */
	long delay_ms;
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
	json_decref(p->canal_duty);
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
	static const char *const names[] = { "bool", "object", "missing", "status", "garbage" };

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
	const json_t *duty = json_object_get(o, "canal_duty");

	*out = (struct policy){ .mode = MODE_BOOL, .status = 503 };
	if (!json_is_object(o) || (dr && !all_strings(dr)) || (ds && !all_strings(ds)) ||
	    (status && !json_is_integer(status)) || (delay && !json_is_integer(delay)) ||
	    (duty && !json_is_object(duty)) ||
	    parse_mode(json_object_get(o, "mode"), &out->mode) != 0)
		return -1;
	if (status != NULL)
		out->status = (int)json_integer_value(status);
	if (out->status < 100 || out->status > 599)
		return -1;
	out->delay_ms = delay ? (long)json_integer_value(delay) : 0;
	out->deny_resources = dr ? json_deep_copy(dr) : json_array();
	out->deny_subjects = ds ? json_deep_copy(ds) : json_array();
	out->canal_duty = duty ? json_deep_copy(duty) : NULL;
	if (out->deny_resources == NULL || out->deny_subjects == NULL ||
	    (duty && out->canal_duty == NULL)) {
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

/* parameters.percent as a number: a JSON number, or a string that is one
 * whole (what `warrantctl decide --param percent=40` sends). */
static int
percent_of(const json_t *input, double *out)
{
	const json_t *v = json_object_get(json_object_get(input, "parameters"), "percent");
	char *end;

	if (json_is_number(v)) {
		*out = json_number_value(v);
		return 0;
	}
	if (!json_is_string(v) || *json_string_value(v) == '\0')
		return -1;
	*out = strtod(json_string_value(v), &end);
	return *end == '\0' ? 0 : -1;
}

/* The canal rule: the duty operator of a lateral may open its gates up to
 * 60%. Resource canal/LATERAL/gate-N, exactly three segments. */
static int
canal_allows(const json_t *duty, const json_t *input)
{
	const char *action = json_string_value(json_object_get(input, "action"));
	const char *res = json_string_value(json_object_get(input, "resource"));
	const char *subject = json_string_value(json_object_get(input, "subject"));
	char lateral[256];
	double pct;

	if (!action || !res || !subject || strcmp(action, "gate.open") != 0 ||
	    strncmp(res, "canal/", 6) != 0)
		return 0;
	const char *gate = strchr(res + 6, '/');
	if (!gate || gate == res + 6 || (size_t)(gate - res - 6) >= sizeof lateral ||
	    strncmp(gate + 1, "gate-", 5) != 0 || strchr(gate + 1, '/'))
		return 0;
	snprintf(lateral, sizeof lateral, "%.*s", (int)(gate - res - 6), res + 6);
	const char *on_duty = json_string_value(json_object_get(duty, lateral));
	return on_duty && strcmp(on_duty, subject) == 0 && percent_of(input, &pct) == 0 &&
	    pct >= 0 && pct <= 60;
}

static int
allowed_locked(const json_t *input)
{
	return !listed(st.pol.deny_resources, json_object_get(input, "resource")) &&
	    !listed(st.pol.deny_subjects, json_object_get(input, "subject")) &&
	    (!st.pol.canal_duty || canal_allows(st.pol.canal_duty, input));
}

/* The answer to a well-formed query under the current policy; AuthZEN's
 * has one shape whatever the mode asks of OPA's. */
static void
decide_locked(const json_t *input, int authzen, struct answer *a)
{
	int allow = allowed_locked(input);

	a->delay_ms = st.pol.delay_ms;
	a->status = 200;
	a->decision = allow ? "allow" : "deny";
	switch (st.pol.mode) {
	case MODE_BOOL:
	case MODE_OBJECT:
		if (authzen) {
			a->body = strdup(allow ? "{\"decision\":true}" : "{\"decision\":false}");
			break;
		}
		if (st.pol.mode == MODE_BOOL) {
			a->body = strdup(allow ? "{\"result\":true}" : "{\"result\":false}");
			break;
		}
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
	case MODE_GARBAGE:
		a->decision = "unavailable";
		a->body = strdup("<html><body>502 Bad Gateway</body></html>");
		break;
	}
}

/* An AuthZEN request read as the OPA input it stands for (new reference),
 * or NULL when doc is not one. */
static json_t *
authzen_input(const json_t *doc)
{
	const json_t *sub = json_object_get(doc, "subject");
	const json_t *act = json_object_get(doc, "action");
	const json_t *res = json_object_get(doc, "resource");
	const json_t *ctx = json_object_get(doc, "context");

	if (!json_is_object(sub) || !json_is_object(act) || !json_is_object(res) ||
	    (ctx && !json_is_object(ctx)))
		return NULL;
	json_t *in = ctx ? json_deep_copy(ctx) : json_object();
	if (in == NULL)
		return NULL;
	json_object_set(in, "subject", json_object_get(sub, "id"));
	json_object_set(in, "action", json_object_get(act, "name"));
	json_object_set(in, "resource", json_object_get(res, "id"));
	return in;
}

static void
record_locked(struct MHD_Connection *c, const struct fake_req *r, const json_t *input,
	      const json_t *authzen, const struct answer *a)
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
	json_array_append_new(st.queries, json_pack("{s:s, s:O?, s:O?, s:o, s:b, s:o, s:I, s:i, s:s}",
	    "path", r->uri, "input", input, "authzen", authzen,
	    "traceparent", fake_header_json(c, "traceparent"),
	    "authorization", MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization") != NULL,
	    "content_type", fake_header_json(c, "Content-Type"),
	    "arrival_ms", (json_int_t)wtime_now_ms(), "status", a->status,
	    "decision", a->decision));
	/* whose token asked (issue 26: the PDP's own audience) */
	json_object_set_new(json_array_get(st.queries, json_array_size(st.queries) - 1),
	    "token_aud", fake_unverified_claim(MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    "Authorization"), "aud"));
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
handle_query(struct MHD_Connection *c, const struct fake_req *r, const char *method)
{
	json_t *doc = json_loadb(r->body, r->len, 0, NULL);
	json_t *az = json_object_get(doc, "input") ? NULL : authzen_input(doc);
	json_t *input = az ? az : json_object_get(doc, "input");
	struct answer a = { .status = 400, .decision = "bad-request" };
	enum MHD_Result ret;

	if (strcmp(method, "POST") != 0) {
		json_decref(az);
		json_decref(doc);
		return fake_send(c, 405, "{\"error\":\"queries are POSTed\"}", NULL);
	}
	pthread_mutex_lock(&st.mu);
	if (json_is_object(input))
		decide_locked(input, az != NULL, &a);
	else
		a.body = strdup("{\"error\":\"body is not {\\\"input\\\": {...}}\"}");
	record_locked(c, r, json_is_object(input) ? input : NULL, az ? doc : NULL, &a);
	pthread_mutex_unlock(&st.mu);
	log_query(r->uri, input, &a);
	json_decref(az);
	json_decref(doc);
	fake_delay(a.delay_ms);
	ret = a.body ? fake_send(c, a.status, a.body, NULL) : MHD_NO;
	free(a.body);
	return ret;
}

static enum MHD_Result
set_policy(struct MHD_Connection *c, const struct fake_req *r)
{
	json_t *o = json_loadb(r->body, r->len, 0, NULL);
	struct policy p;
	int rc = policy_parse(o, &p);

	json_decref(o);
	if (rc != 0)
		return fake_send(c, 400, "{\"error\":\"bad policy\"}", NULL);
	pthread_mutex_lock(&st.mu);
	policy_clear(&st.pol);
	st.pol = p;
	pthread_mutex_unlock(&st.mu);
	return fake_send(c, 200, "{\"ok\":true}", NULL);
}

static char *
stats_locked(void)
{
	json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:O}",
	    "total", (json_int_t)st.total, "allow", (json_int_t)st.allowed,
	    "deny", (json_int_t)st.denied, "unavailable", (json_int_t)st.unavailable,
	    "queries_dropped", (json_int_t)st.dropped, "by_status", st.by_status);

	return fake_dump(o);
}

static enum MHD_Result
send_dump(struct MHD_Connection *c, int queries)
{
	pthread_mutex_lock(&st.mu);
	char *s = queries ? json_dumps(st.queries, JSON_COMPACT) : stats_locked();
	pthread_mutex_unlock(&st.mu);
	return fake_send_text(c, s);
}

static enum MHD_Result
handle_control(struct MHD_Connection *c, const struct fake_req *r, const char *method)
{
	int post = strcmp(method, "POST") == 0, get = strcmp(method, "GET") == 0;
	int queries = fake_path_is(r, "/_queries");

	if (post && fake_path_is(r, "/_policy"))
		return set_policy(c, r);
	if (get && (fake_path_is(r, "/_stats") || queries))
		return send_dump(c, queries);
	if (post && fake_path_is(r, "/_reset")) {
		pthread_mutex_lock(&st.mu);
		reset_locked();
		pthread_mutex_unlock(&st.mu);
		return fake_send(c, 200, "{\"ok\":true}", NULL);
	}
	return fake_send(c, 404, "{\"error\":\"no such control endpoint\"}", NULL);
}

static const struct fake_server server = {
	.control = handle_control,
	.handle = handle_query,
	.max_body = MAX_BODY,
	.connection_limit = 2000,
};

static int
usage(void)
{
	fprintf(stderr, "usage: fake_pdp --port-file FILE [--port N]\n");
	return 64;
}

int
main(int argc, char **argv)
{
	struct fake_args args = { 0 };
	struct MHD_Daemon *d;
	int sig;

	log_init("fake_pdp");
	if (fake_parse_args(argc, argv, &args, NULL, NULL) != 0)
		return usage();
	reset_locked();
	if ((d = fake_start(&server, &args.port, args.port_file)) == NULL)
		return 1;
	log_info("fake.listening", "port=%u", args.port);
	sig = fake_wait(d);
	policy_clear(&st.pol);
	json_decref(st.queries);
	json_decref(st.by_status);
	log_info("fake.stopped", "signal=%d", sig);
	return 0;
}
