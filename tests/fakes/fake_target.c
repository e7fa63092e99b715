/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fake_target --port-file FILE [--port N] [--jwt-secret-file F]: the action
 * endpoint warrantd calls in integration tests. A path not starting with "/_"
 * is an action call, recorded and answered as the script says; /_script,
 * /_default (replaces only the default answer), /_reset, /_revoke, /_stats
 * and /_requests drive it (/work/notes/harness_api.md).
 *
 * DPoP (RFC 9449 §7): a token with a cnf.jkt claim (fake_idp binds one to
 * a proof's key) is taken only as "Authorization: DPoP <token>" with a DPoP
 * proof that fake_dpop_check accepts for this method and URL, carries the
 * token's ath, a jti never seen before and the key cnf.jkt names; anything
 * else is 401 with WWW-Authenticate: DPoP error="invalid_token" (a bound
 * token sent as a bearer: a thief's replay) or "invalid_dpop_proof". POST
 * /_dpop_nonce (body: the nonce; "" for none) demands a nonce: 401
 * error="use_dpop_nonce" with a DPoP-Nonce header. POST /_dpop_refuse
 * (body: N) refuses the next N proofs as invalid. /_stats adds
 * "dpop_ok", "dpop_challenges" and "dpop_refused"; each request's record
 * "dpop" (its proof held) and "dpop_jkt".
 * One thread per connection, so a delayed answer holds up no other request.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <jansson.h>
#include <jwt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "base/log.h"
#include "base/wtime.h"

#define MAX_RECORDS	200000		/* bounds memory under a long benchmark */
#define MAX_BODY	(16u << 20)

struct reply {
	int status;
	long delay_ms;
	char retry_after[64];
	char www_authenticate[256];
	char dpop_nonce[64];
};

static struct {
	pthread_mutex_t mu;
	json_t *script;
	json_t *records;
	long long records_dropped;
	long long total, duplicates;
	json_t *by_status;	/* "200" -> answers */
	json_t *keys;		/* Idempotency-Key -> calls */
	json_t *ok_keys;	/* Idempotency-Key -> 2xx answers */
	struct fake_blob secret;	/* data NULL: no token check */
	long long revoked_at_ms;	/* tokens issued at or before this are dead */
	json_t *revoked_scopes;		/* scope -> ms: that scope's tokens issued before die */
	/* action calls being answered now, and the most at once since the
	 * last reset (§13's max_in_flight, seen from the target) */
	long long in_flight, max_concurrent;
	json_t *seen_jti;		/* DPoP proofs' jti, never reset */
	char dpop_nonce[64];		/* "": none demanded */
	long dpop_refuse;		/* proofs still to refuse */
	long long dpop_ok, dpop_challenges, dpop_refused;
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
	json_decref(st.revoked_scopes);
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
	st.revoked_scopes = json_object();
	st.ok_keys = json_object();
	st.records_dropped = st.total = st.duplicates = 0;
	st.max_concurrent = st.in_flight;	/* calls under way go on counting */
	st.dpop_ok = st.dpop_challenges = st.dpop_refused = 0;
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

/* The token of an Authorization value, Bearer or DPoP; NULL for another. */
static const char *
token_of(const char *authorization)
{
	if (authorization != NULL && strncmp(authorization, "Bearer ", 7) == 0)
		return authorization + 7;
	if (authorization != NULL && strncmp(authorization, "DPoP ", 5) == 0)
		return authorization + 5;
	return NULL;
}

static int
token_ok_locked(const char *authorization)
{
	jwt_t *jwt = NULL;
	int ok = 0;

	if (token_of(authorization) == NULL)
		return 0;
	if (jwt_decode(&jwt, token_of(authorization), (const unsigned char *)st.secret.data,
	    (int)st.secret.len) != 0)
		return 0;
	if (jwt_get_alg(jwt) == JWT_ALG_HS256) {
		errno = 0;
		long exp = jwt_get_grant_int(jwt, "exp");
		int has_exp = errno == 0;
		/* Prefer the fake IdP's iat_ms: a token issued earlier in the
		 * very second of a revocation must die too. */
		errno = 0;
		long long iat_ms = jwt_get_grant_int(jwt, "iat_ms");
		int has_ms = errno == 0;
		int fresh = has_ms ? iat_ms > st.revoked_at_ms :
		    jwt_get_grant_int(jwt, "iat") >= st.revoked_at_ms / 1000;
		/* a revocation of one scope kills that scope's tokens only */
		const char *scope = jwt_get_grant(jwt, "scope");
		json_t *cut = scope ? json_object_get(st.revoked_scopes, scope) : NULL;
		if (cut != NULL && has_ms && iat_ms <= json_integer_value(cut))
			fresh = 0;
		ok = has_exp && exp > (long)time(NULL) && fresh;
	}
	jwt_free(jwt);
	return ok;
}

/* A claim of the verified token (`sub`: the worker's client id; `scope`),
 * for people to see whose token it was; null without a secret or a valid
 * token. */
static json_t *
token_claim_json(struct MHD_Connection *c, const char *claim)
{
	const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	jwt_t *jwt = NULL;
	json_t *sub = NULL;

	if (st.secret.data == NULL || token_of(a) == NULL ||
	    jwt_decode(&jwt, token_of(a), (const unsigned char *)st.secret.data,
	    (int)st.secret.len) != 0)
		return json_null();
	if (jwt_get_alg(jwt) == JWT_ALG_HS256 && jwt_get_grant(jwt, claim))
		sub = json_string(jwt_get_grant(jwt, claim));
	else if (jwt_get_alg(jwt) == JWT_ALG_HS256 && strcmp(claim, "authorization_details") == 0) {
		/* RFC 9396: the granted details, as they are */
		char *d = jwt_get_grants_json(jwt, claim);
		sub = d ? json_loads(d, 0, NULL) : NULL;
		free(d);
	} else if (jwt_get_alg(jwt) == JWT_ALG_HS256 && (strcmp(claim, "act") == 0 ||
	    strcmp(claim, "cnf") == 0)) {
		/* an object: its `sub` (RFC 8693 §4.1), its `jkt` (RFC 9449 §6.1) */
		char *act = jwt_get_grants_json(jwt, claim);
		json_t *o = act ? json_loads(act, 0, NULL) : NULL;
		const char *member = strcmp(claim, "act") == 0 ? "sub" : "jkt";
		if (json_is_string(json_object_get(o, member)))
			sub = json_incref(json_object_get(o, member));
		json_decref(o);
		free(act);
	}
	jwt_free(jwt);
	return sub ? sub : json_null();
}

static void
record_locked(struct MHD_Connection *c, const struct fake_req *r, const char *method,
	      const char *key, const struct reply *rp, const char *dpop_jkt)
{
	int status = rp->status;
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
	json_t *body = json_stringn(r->body, r->len);
	json_array_append_new(st.records, json_pack("{s:s, s:s, s:o, s:b, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:i, s:I}",
	    "method", method, "path", r->uri,
	    "idempotency_key", key ? json_string(key) : json_null(),
	    "authorization", MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization") != NULL,
	    "token_sub", token_claim_json(c, "sub"), "token_scope", token_claim_json(c, "scope"),
	    "token_act_sub", token_claim_json(c, "act"),
	    "on_behalf_of", fake_header_json(c, "Warrant-On-Behalf-Of"),
	    "basis", fake_header_json(c, "Warrant-Basis"),
	    "content_type", fake_header_json(c, "Content-Type"),
	    "traceparent", fake_header_json(c, "traceparent"),
	    "body", body ? body : json_null(),
	    "arrival_ms", (json_int_t)wtime_now_ms(), "status", status,
	    "delay_ms", (json_int_t)rp->delay_ms));
	json_t *last = json_array_get(st.records, json_array_size(st.records) - 1);
	json_object_set_new(last, "dpop", json_boolean(dpop_jkt != NULL));
	json_object_set_new(last, "token_rar", token_claim_json(c, "authorization_details"));
	json_object_set_new(last, "token_aud", fake_unverified_claim(MHD_lookup_connection_value(c,
	    MHD_HEADER_KIND, "Authorization"), "aud"));
	json_object_set_new(last, "dpop_jkt", dpop_jkt ? json_string(dpop_jkt) : json_null());
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
	json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:O, s:O}",
	    "dpop_ok", (json_int_t)st.dpop_ok, "dpop_challenges", (json_int_t)st.dpop_challenges,
	    "dpop_refused", (json_int_t)st.dpop_refused,
	    "total", (json_int_t)st.total, "in_flight", (json_int_t)st.in_flight,
	    "max_concurrent", (json_int_t)st.max_concurrent,
	    "distinct_keys", (json_int_t)json_object_size(st.keys),
	    "max_per_key", (json_int_t)max, "duplicates", (json_int_t)st.duplicates,
	    "records_dropped", (json_int_t)st.records_dropped,
	    "by_status", st.by_status, "keys", st.keys);
	return fake_dump(o);
}

static enum MHD_Result
send_reply(struct MHD_Connection *c, const struct reply *rp, const char *body)
{
	const char *const extra[] = { "Retry-After", rp->retry_after,
	    "WWW-Authenticate", rp->www_authenticate, "DPoP-Nonce", rp->dpop_nonce, NULL };

	return fake_send(c, rp->status, body, extra);
}

static void
log_call(const char *method, const char *uri, const char *key, int status)
{
	char qm[64], qp[512], qk[256];

	log_info("fake.request", "method=%s path=%s key=%s status=%d",
	    log_quote(qm, sizeof qm, method), log_quote(qp, sizeof qp, uri),
	    log_quote(qk, sizeof qk, key), status);
}

/* A token exchanged for one job (it has `act`) must be for this subject
 * (sub = Warrant-On-Behalf-Of) and this action (the path holds /<scope>/).
 * A token without `act` is the worker's own and passes. */
static int
exchanged_token_fits(struct MHD_Connection *c, const char *path)
{
	json_t *act = token_claim_json(c, "act"), *sub = token_claim_json(c, "sub");
	json_t *scope = token_claim_json(c, "scope");
	const char *obo = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Warrant-On-Behalf-Of");
	char want[300];
	int ok = 1;

	if (!json_is_null(act)) {
		snprintf(want, sizeof want, "/%s/", json_is_string(scope) ?
		    json_string_value(scope) : "");
		ok = json_is_string(sub) && obo != NULL &&
		    strcmp(json_string_value(sub), obo) == 0 && json_is_string(scope) &&
		    strstr(path, want) != NULL;
	}
	json_decref(act);
	json_decref(sub);
	json_decref(scope);
	return ok;
}

/* RFC 9449 §7.1: NULL when the request may go on (a bearer token that is
 * not bound, or a bound one with a good proof, its key's thumbprint then
 * in jkt), else "invalid_token", "use_dpop_nonce" or what is wrong with
 * the proof. */
static const char *
dpop_problem_locked(struct MHD_Connection *c, const struct fake_req *r, const char *method,
		    const char *auth, char *jkt, size_t jktlen)
{
	json_t *cnf = token_claim_json(c, "cnf");
	const char *proof = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "DPoP");
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
	int scheme_dpop = strncmp(auth, "DPoP ", 5) == 0;
	const char *why = NULL;
	char htu[1024], jti[128];

	if (!json_is_string(cnf)) {
		json_decref(cnf);
		return scheme_dpop ? "invalid_token" : NULL;	/* DPoP with a token not bound */
	}
	snprintf(htu, sizeof htu, "http://%s%.*s", host ? host : "", (int)strcspn(r->uri, "?#"),
	    r->uri);
	if (!scheme_dpop || proof == NULL)
		why = "invalid_token";	/* a bound token as a bearer: a thief's replay */
	else if (st.dpop_refuse > 0) {
		st.dpop_refuse--;
		why = "refused for a test (POST /_dpop_refuse)";
	} else if ((why = fake_dpop_check(proof, method, htu, auth + 5,
	    st.dpop_nonce[0] ? st.dpop_nonce : NULL, jkt, jktlen, jti, sizeof jti)) == NULL) {
		if (json_object_get(st.seen_jti, jti) != NULL)
			why = "jti replayed";
		else if (strcmp(jkt, json_string_value(cnf)) != 0)
			why = "the proof's key is not the token's cnf.jkt";
		else {
			json_object_set_new(st.seen_jti, jti, json_true());
			st.dpop_ok++;
		}
	}
	json_decref(cnf);
	return why;
}

static enum MHD_Result
handle_action(struct MHD_Connection *c, const struct fake_req *r, const char *method)
{
	const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Idempotency-Key");
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	struct reply rp;
	char body[64];

	const char *dpop_problem = NULL;
	char jkt[64] = "";

	pthread_mutex_lock(&st.mu);
	if (st.secret.data != NULL && token_ok_locked(auth))
		dpop_problem = dpop_problem_locked(c, r, method, auth, jkt, sizeof jkt);
	if (st.secret.data != NULL && !token_ok_locked(auth)) {
		rp = (struct reply){ .status = 401 };
		snprintf(rp.www_authenticate, sizeof rp.www_authenticate,
		    "Bearer error=\"invalid_token\"");
	} else if (dpop_problem != NULL) {
		rp = (struct reply){ .status = 401 };
		int challenge = strcmp(dpop_problem, "use_dpop_nonce") == 0;
		int refused = strcmp(dpop_problem, "invalid_token") != 0 && !challenge;
		snprintf(rp.www_authenticate, sizeof rp.www_authenticate,
		    "DPoP algs=\"ES256\", error=\"%s\"", challenge ? "use_dpop_nonce" :
		    refused ? "invalid_dpop_proof" : "invalid_token");
		if (challenge) {
			snprintf(rp.dpop_nonce, sizeof rp.dpop_nonce, "%s", st.dpop_nonce);
			st.dpop_challenges++;
		} else {
			st.dpop_refused++;
		}
	} else if (st.secret.data != NULL && !exchanged_token_fits(c, r->uri)) {
		rp = (struct reply){ .status = 403 };	/* a token for someone or something else */
	} else {
		next_reply_locked(key, &rp);
	}
	record_locked(c, r, method, key, &rp, jkt[0] && dpop_problem == NULL ? jkt : NULL);
	if (++st.in_flight > st.max_concurrent)
		st.max_concurrent = st.in_flight;
	pthread_mutex_unlock(&st.mu);
	log_call(method, r->uri, key, rp.status);
	fake_delay(rp.delay_ms);
	snprintf(body, sizeof body, "{\"status\":%d}", rp.status);
	enum MHD_Result res = send_reply(c, &rp, body);
	pthread_mutex_lock(&st.mu);
	st.in_flight--;
	pthread_mutex_unlock(&st.mu);
	return res;
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
set_script(struct MHD_Connection *c, const struct fake_req *r)
{
	json_t *s = json_loadb(r->body, r->len, 0, NULL);

	if (!script_valid(s)) {
		json_decref(s);
		return fake_send(c, 400, "{\"error\":\"bad script\"}", NULL);
	}
	pthread_mutex_lock(&st.mu);
	json_decref(st.script);
	st.script = s;
	pthread_mutex_unlock(&st.mu);
	return fake_send(c, 200, "{\"ok\":true}", NULL);
}

/* POST /_default: replaces only the script's default answer, so per-key
 * queues already scripted (and partly used up) stay as they are. */
static enum MHD_Result
set_default(struct MHD_Connection *c, const struct fake_req *r)
{
	json_t *def = json_loadb(r->body, r->len, 0, NULL);

	if (!json_is_object(def)) {
		json_decref(def);
		return fake_send(c, 400, "{\"error\":\"bad default\"}", NULL);
	}
	pthread_mutex_lock(&st.mu);
	json_object_set_new(st.script, "default", def);
	pthread_mutex_unlock(&st.mu);
	return fake_send(c, 200, "{\"ok\":true}", NULL);
}

static enum MHD_Result
send_dump(struct MHD_Connection *c, int requests)
{
	pthread_mutex_lock(&st.mu);
	char *s = requests ? json_dumps(st.records, JSON_COMPACT) : stats_locked();
	pthread_mutex_unlock(&st.mu);
	return fake_send_text(c, s);
}

static enum MHD_Result
handle_control(struct MHD_Connection *c, const struct fake_req *r, const char *method)
{
	int post = strcmp(method, "POST") == 0, get = strcmp(method, "GET") == 0;
	int reset = fake_path_is(r, "/_reset"), requests = fake_path_is(r, "/_requests");

	if (post && fake_path_is(r, "/_script"))
		return set_script(c, r);
	if (post && fake_path_is(r, "/_default"))
		return set_default(c, r);
	if (get && (fake_path_is(r, "/_stats") || requests))
		return send_dump(c, requests);
	if (post && (fake_path_is(r, "/_dpop_nonce") || fake_path_is(r, "/_dpop_refuse"))) {
		pthread_mutex_lock(&st.mu);
		if (fake_path_is(r, "/_dpop_refuse")) {
			st.dpop_refuse = strtol(r->body, NULL, 10);
		} else {
			size_t n = r->len < sizeof st.dpop_nonce - 1 ? r->len : sizeof st.dpop_nonce - 1;
			memcpy(st.dpop_nonce, r->body, n);
			st.dpop_nonce[n] = '\0';
		}
		pthread_mutex_unlock(&st.mu);
		return fake_send(c, 200, "{\"ok\":true}", NULL);
	}
	if (post && (reset || fake_path_is(r, "/_revoke"))) {
		pthread_mutex_lock(&st.mu);
		json_t *body = reset ? NULL : json_loadb(r->body, r->len, 0, NULL);
		const char *scope = json_string_value(json_object_get(body, "scope"));
		if (reset)
			reset_locked();
		else if (scope != NULL)
			json_object_set_new(st.revoked_scopes, scope, json_integer(wtime_now_ms()));
		else
			st.revoked_at_ms = wtime_now_ms();
		json_decref(body);
		pthread_mutex_unlock(&st.mu);
		return fake_send(c, 200, "{\"ok\":true}", NULL);
	}
	return fake_send(c, 404, "{\"error\":\"no such control endpoint\"}", NULL);
}

static const struct fake_server server = {
	.control = handle_control,
	.handle = handle_action,
	.max_body = MAX_BODY,
	.connection_limit = 2000,
};

static int
usage(void)
{
	fprintf(stderr, "usage: fake_target --port-file FILE [--port N] [--jwt-secret-file F]\n");
	return 64;
}

static int
take_option(const char *name, const char *value, void *arg)
{
	const char **secret_file = arg;

	if (strcmp(name, "--jwt-secret-file") != 0)
		return -1;
	*secret_file = value;
	return 0;
}

int
main(int argc, char **argv)
{
	struct fake_args args = { 0 };
	const char *secret_file = NULL;
	struct MHD_Daemon *d;
	int sig;

	log_init("fake_target");
	if (fake_parse_args(argc, argv, &args, take_option, &secret_file) != 0)
		return usage();
	/* Surrounding whitespace is not part of the secret. */
	if (secret_file != NULL && fake_read_file(secret_file, 4095, 1, &st.secret) != 0) {
		log_error("fake.secret", "msg=\"cannot read the secret file\"");
		return 1;
	}
	reset_locked();
	st.seen_jti = json_object();
	if ((d = fake_start(&server, &args.port, args.port_file)) == NULL)
		return 1;
	log_info("fake.listening", "port=%u jwt=%s", args.port, st.secret.data ? "on" : "off");
	sig = fake_wait(d);
	drop_state();
	json_decref(st.seen_jti);
	free(st.secret.data);
	log_info("fake.stopped", "signal=%d", sig);
	return 0;
}
