/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fake_idp: an OAuth 2.0 token endpoint (client credentials grant), for
 * integration tests.
 *
 *   fake_idp --port-file FILE [--port N] --jwt-secret-file S --client-id ID
 *            [--client-secret-file F] [--assertion-key-file PUBPEM]...
 *            [--lifetime-s N] [--audience-url URL] [--decision-key-file PUBPEM]
 *            [--redis-scope S] [--redis-lifetime-s N]
 *
 * POST /token takes a form body with grant_type=client_credentials and
 * authenticates the client by exactly one of: HTTP Basic (id and secret each
 * form-urlencoded before Base64, RFC 6749 §2.3.1), client_id + client_secret
 * in the body, or a private_key_jwt assertion (RFC 7523) verified with one of
 * the --assertion-key-file public keys (up to 4): alg RS256 or ES256, iss =
 * sub = client id, aud = --audience-url (default http://127.0.0.1:PORT/token),
 * exp in the future and at most 5 minutes away, jti never seen before. It
 * answers {"access_token", "token_type": "Bearer", "expires_in"} with an
 * HS256 JWT signed with the --jwt-secret-file content (what fake_target
 * checks): iat = now, exp = now + lifetime (seconds), jti, sub, and the
 * requested scope (when one was asked for) as `scope`.
 * Wrong client credentials: 401 {"error": "invalid_client"}.
 *
 * A request whose scope or resource is --redis-scope (a token for Redis
 * itself, warrantd(7) §9, e.g. https://redis.azure.com/.default) gets a token of
 * --redis-lifetime-s (default 5 s: managed Redis' hour, shrunk for tests),
 * which fake_redisgate reads the exp of. /_stats adds "redis_issued".
 *
 * With --decision-key-file (the decider's ES256 public key) it also takes
 * grant_type=urn:ietf:params:oauth:grant-type:token-exchange (RFC 8693),
 * the client authenticated as above: actor_token must be a live token it
 * issued to this client, subject_token (subject_token_type
 * urn:warrant:params:oauth:token-type:decision) a decision record that
 * verifies with that key (by warrantd's own record.c). It answers a token
 * whose sub is the record's onBehalfOf, act {"sub": client id}, scope the
 * requested scope and resource the requested resource; a bad actor or
 * record, or POST /_exchange_deny, gets 400 invalid_grant (POST
 * /_exchange_allow undoes it; a body names another error code, e.g.
 * invalid_scope). POST /_revoke_actors refuses every actor token issued
 * until then (400 invalid_grant), as an IdP that revoked them does.
 * /_stats adds "exchanges" and "exchanges_denied".
 *
 * DPoP (RFC 9449): a request with a DPoP header has its proof checked
 * (fake_dpop_check: htm POST, htu this /token, a jti never seen) and gets
 * {"token_type": "DPoP"} with the token bound by a `cnf.jkt` claim; a bad
 * proof gets 400 invalid_dpop_proof. POST /_dpop_nonce (body: a nonce, ""
 * for none) makes it require that nonce: a proof without it gets 400
 * use_dpop_nonce and a DPoP-Nonce header. /_stats adds "dpop_issued",
 * "dpop_challenges", "dpop_refused" and "last_jkt".
 *
 * RAR (RFC 9396): a client credentials request with authorization_details
 * (a JSON array of objects with type "warrant", "actions" and "locations"
 * arrays of strings and an "identifier") gets a token whose
 * authorization_details claim is what was asked; anything else, or any
 * request after POST /_rar_deny (POST /_rar_allow undoes it), gets 400
 * invalid_authorization_details. /_stats adds "rar_issued" and
 * "last_authorization_details".
 *
 * POST /_deny_scope (body: a scope; "" for none) answers every client
 * credentials request for that scope 400 invalid_scope, POST /_down_scope
 * 503 temporarily_unavailable.
 *
 * Control: POST /_down (every /token gets 503 until POST /_up), POST /_up,
 * POST /_lifetime (body: seconds), POST /_reset (counters and last_*),
 * GET /_stats -> {"issued", "requests", "rejected", "unavailable",
 * "last_scope", "last_resource", "last_audience", "last_auth" (method name),
 * "last_alg", "last_kid", "last_x5t" (assertion header fields)}; absent
 * values are null. One thread per connection. Never logs a secret.
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

#include "jose/b64url.h"
#include "common.h"
#include "core/record.h"
#include "base/wtime.h"
#include "base/log.h"
#include "base/rnd.h"
#include "core/token.h"

#define MAX_BODY	(64u << 10)
#define MAX_KEYS	4
#define BLOB_MAX	16383		/* bytes read of a secret or key file */
#define ASSERTION_MAX_AHEAD_S	300
#define JWT_BEARER	"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
#define EXCHANGE_GRANT	"urn:ietf:params:oauth:grant-type:token-exchange"
#define DECISION_TYPE	"urn:warrant:params:oauth:token-type:decision"

static struct {
	pthread_mutex_t mu;
	int down;
	long lifetime_s;
	const char *redis_scope;	/* NULL: no Redis tokens */
	long redis_lifetime_s;
	long long redis_issued;
	long long issued, requests, rejected, unavailable;
	long long exchanges, exchanges_denied;
	long long dpop_issued, dpop_challenges, dpop_refused;
	long long rar_issued;
	int rar_deny;
	char deny_scope[128];	/* "": none refused */
	char down_scope[128];	/* "": none down */
	char dpop_nonce[64];	/* "": no nonce required */
	char token_url[512];	/* http://127.0.0.1:PORT/token: a proof's htu */
	int exchange_deny;
	char deny_code[64];	/* the error /_exchange_deny answers with */
	long long revoked_before_ms;	/* actor tokens issued before: refused */
	struct record_key *decision_key;	/* NULL: no token exchange */
	json_t *last;		/* last_* fields of /_stats */
	json_t *seen_jti;	/* jti -> true, for replay checks; never reset */
	struct fake_blob jwt_secret, client_secret;
	struct fake_blob keys[MAX_KEYS];
	int nkeys;
	const char *client_id;
	char audience_url[512];
} st = { .mu = PTHREAD_MUTEX_INITIALIZER, .lifetime_s = 3600, .redis_lifetime_s = 5 };

static void
reset_locked(void)
{
	static const char *const fields[] = {"last_scope", "last_resource", "last_audience",
	    "last_auth", "last_alg", "last_kid", "last_x5t", "last_jkt",
	    "last_authorization_details"};

	json_decref(st.last);
	st.last = json_object();
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
		json_object_set_new(st.last, fields[i], json_null());
	st.issued = st.requests = st.rejected = st.unavailable = st.redis_issued = 0;
	st.exchanges = st.exchanges_denied = 0;
	st.dpop_issued = st.dpop_challenges = st.dpop_refused = st.rar_issued = 0;
}

static void
set_last(const char *field, const char *value)
{
	json_object_set_new(st.last, field, value ? json_string(value) : json_null());
}

/* ---- replies ---- */

static enum MHD_Result
send_error(struct MHD_Connection *c, int status, const char *code, const char *desc)
{
	const char *const extra[] = { "WWW-Authenticate",
	    status == 401 ? "Basic realm=\"fake_idp\"" : NULL, NULL };
	char *s = fake_dump(json_pack("{s:s, s:s}", "error", code, "error_description", desc));
	enum MHD_Result ret = fake_send(c, status, s ? s : "{\"error\":\"server_error\"}", extra);

	free(s);
	log_info("fake.token", "status=%d error=%s", status, code);
	return ret;
}

/* RFC 9449 §8: a DPoP error, with the nonce to use when there is one. */
static enum MHD_Result
send_dpop_error(struct MHD_Connection *c, const char *code, const char *desc, const char *nonce)
{
	const char *const extra[] = { "DPoP-Nonce", nonce, NULL };
	char *s = fake_dump(json_pack("{s:s, s:s}", "error", code, "error_description", desc));
	enum MHD_Result ret = fake_send(c, 400, s ? s : "{\"error\":\"server_error\"}", extra);

	free(s);
	log_info("fake.token", "status=400 error=%s", code);
	return ret;
}

/* ---- decoding ---- */

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* application/x-www-form-urlencoded value of n bytes into a new string; NULL
 * on a bad escape or an encoded NUL. */
static char *
form_decode(const char *s, size_t n)
{
	char *out = malloc(n + 1), *p = out;

	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '+') {
			*p++ = ' ';
		} else if (s[i] == '%') {
			int hi = i + 2 < n ? hexval(s[i + 1]) : -1;
			int lo = i + 2 < n ? hexval(s[i + 2]) : -1;
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
				free(out);
				return NULL;
			}
			*p++ = (char)(hi * 16 + lo);
			i += 2;
		} else {
			*p++ = s[i];
		}
	}
	*p = '\0';
	return out;
}

/* The form body as an object name -> value; NULL when malformed or when a
 * parameter repeats (RFC 6749 §3.2: each at most once). */
static json_t *
parse_form(const char *body, size_t len)
{
	json_t *form = json_object();
	const char *p = body, *end = body + len;

	while (form != NULL && p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *stop = amp ? amp : end;
		const char *eq = memchr(p, '=', (size_t)(stop - p));
		char *name = form_decode(p, (size_t)((eq ? eq : stop) - p));
		char *value = eq ? form_decode(eq + 1, (size_t)(stop - eq - 1)) : strdup("");

		if (name == NULL || value == NULL || json_object_get(form, name) != NULL ||
		    json_object_set_new(form, name, json_string(value)) != 0) {
			json_decref(form);
			form = NULL;
		}
		free(name);
		free(value);
		p = stop + 1;
	}
	return form;
}

/* Standard Base64 with padding (RFC 4648 §4), as HTTP Basic has it, into a
 * new string; NULL when malformed. Mapped onto the URL alphabet first, so
 * that one decoder serves both. */
static char *
b64_decode(const char *s)
{
	size_t n = strlen(s);
	unsigned char *out;
	char *url;
	size_t len;
	int rc;

	if (n % 4 != 0 || strpbrk(s, "-_") != NULL || (url = strdup(s)) == NULL)
		return NULL;
	for (int pad = 0; pad < 2 && n > 0 && url[n - 1] == '='; pad++)
		n--;
	for (size_t i = 0; i < n; i++)
		url[i] = url[i] == '+' ? '-' : url[i] == '/' ? '_' : url[i];
	/* A third '=' is no padding: refused here, where the lax decoder would drop it. */
	rc = n > 0 && url[n - 1] == '=' ? -1 : b64url_decode_lax(url, n, &out, &len);
	free(url);
	return rc == 0 ? (char *)out : NULL;
}

/* ---- client authentication ---- */

static int
secret_ok(const char *id, const char *secret)
{
	return id != NULL && secret != NULL && st.client_secret.data != NULL &&
	    strcmp(id, st.client_id) == 0 && strlen(secret) == st.client_secret.len &&
	    memcmp(secret, st.client_secret.data, st.client_secret.len) == 0;
}

/* "Basic base64(form(id):form(secret))". */
static int
basic_ok(const char *authorization)
{
	char *raw, *colon, *id = NULL, *secret = NULL;
	int ok = 0;

	if (strncmp(authorization, "Basic ", 6) != 0 || (raw = b64_decode(authorization + 6)) == NULL)
		return 0;
	if ((colon = strchr(raw, ':')) != NULL) {
		id = form_decode(raw, (size_t)(colon - raw));
		secret = form_decode(colon + 1, strlen(colon + 1));
		ok = secret_ok(id, secret);
	}
	free(raw);
	free(id);
	free(secret);
	return ok;
}

/* libjwt 1.10 skips the signature for alg "none" and would take a public
 * key as an HMAC secret: only the RSA and EC algorithms count. */
static jwt_t *
decode_with_any_key(const char *assertion)
{
	for (int i = 0; i < st.nkeys; i++) {
		jwt_t *jwt = NULL;

		if (jwt_decode(&jwt, assertion, (const unsigned char *)st.keys[i].data,
		    (int)st.keys[i].len) != 0)
			continue;
		if (jwt_get_alg(jwt) == JWT_ALG_RS256 || jwt_get_alg(jwt) == JWT_ALG_ES256)
			return jwt;
		jwt_free(jwt);
	}
	return NULL;
}

static int
claim_is(jwt_t *jwt, const char *claim, const char *want)
{
	const char *v = jwt_get_grant(jwt, claim);
	return v != NULL && strcmp(v, want) == 0;
}

static const char *
assertion_problem_locked(jwt_t *jwt)
{
	long now = (long)time(NULL);
	const char *jti;

	errno = 0;
	long exp = jwt_get_grant_int(jwt, "exp");
	if (errno != 0)
		return "assertion has no exp";
	if (exp <= now || exp > now + ASSERTION_MAX_AHEAD_S)
		return "assertion exp out of range";
	if (!claim_is(jwt, "iss", st.client_id) || !claim_is(jwt, "sub", st.client_id))
		return "assertion iss/sub is not the client";
	if (!claim_is(jwt, "aud", st.audience_url))
		return "assertion aud is not this server";
	if ((jti = jwt_get_grant(jwt, "jti")) == NULL || *jti == '\0')
		return "assertion has no jti";
	if (json_object_get(st.seen_jti, jti) != NULL)
		return "assertion jti replayed";
	json_object_set_new(st.seen_jti, jti, json_true());
	return NULL;
}

static const char *
assertion_check_locked(const json_t *form)
{
	const char *type = json_string_value(json_object_get(form, "client_assertion_type"));
	const char *assertion = json_string_value(json_object_get(form, "client_assertion"));
	const char *id = json_string_value(json_object_get(form, "client_id"));
	const char *problem;
	jwt_t *jwt;

	if (type == NULL || strcmp(type, JWT_BEARER) != 0)
		return "wrong client_assertion_type";
	if (id != NULL && strcmp(id, st.client_id) != 0)
		return "client_id does not match the assertion";
	if ((jwt = decode_with_any_key(assertion)) == NULL)
		return "assertion signature does not verify";
	set_last("last_alg", jwt_alg_str(jwt_get_alg(jwt)));
	set_last("last_kid", jwt_get_header(jwt, "kid"));
	set_last("last_x5t", jwt_get_header(jwt, "x5t#S256"));
	problem = assertion_problem_locked(jwt);
	jwt_free(jwt);
	return problem;
}

/* NULL when the client authenticated by exactly one method, else why not.
 * *status is 400 for a malformed request, 401 for bad credentials. */
static const char *
authenticate_locked(struct MHD_Connection *c, const json_t *form, int *status)
{
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	int in_body = json_object_get(form, "client_secret") != NULL;
	int by_jwt = json_object_get(form, "client_assertion") != NULL;

	*status = 401;
	if ((auth != NULL) + in_body + by_jwt > 1) {
		*status = 400;
		return "more than one client authentication method";
	}
	if (auth != NULL) {
		set_last("last_auth", "client_secret_basic");
		return basic_ok(auth) ? NULL : "bad basic credentials";
	}
	if (by_jwt) {
		set_last("last_auth", "private_key_jwt");
		return st.nkeys > 0 ? assertion_check_locked(form) : "no assertion keys";
	}
	if (in_body) {
		set_last("last_auth", "client_secret_post");
		return secret_ok(json_string_value(json_object_get(form, "client_id")),
		    json_string_value(json_object_get(form, "client_secret"))) ? NULL :
		    "bad client_secret";
	}
	set_last("last_auth", NULL);
	return "no client authentication";
}

/* ---- issuing ---- */

static char *issue_token_locked(const char *scope, const struct record *rec,
				const char *resource, const char *jkt, const json_t *details);
static const char *issue_aud;	/* the audience asked for, while st.mu is held */

/* RFC 8693 §4.1: the worker acts for the record's subject. */
static int
add_exchange_claims(jwt_t *jwt, const struct record *rec)
{
	json_t *act = json_pack("{s:{s:s}, s:s}", "act", "sub", st.client_id, "record", rec->id);
	char *text = act ? json_dumps(act, JSON_COMPACT) : NULL;
	int rc = text ? jwt_add_grants_json(jwt, text) : -1;

	free(text);
	json_decref(act);
	return rc;
}

/* The actor token: one this IdP issued to this client, still alive. */
static int
actor_ok_locked(const char *tok)
{
	jwt_t *jwt = NULL;
	int ok = 0;

	if (tok == NULL || jwt_decode(&jwt, tok, (const unsigned char *)st.jwt_secret.data,
	    (int)st.jwt_secret.len) != 0)
		return 0;
	const char *sub = jwt_get_grant(jwt, "sub");
	errno = 0;
	long exp = jwt_get_grant_int(jwt, "exp");
	ok = jwt_get_alg(jwt) == JWT_ALG_HS256 && errno == 0 && exp > (long)time(NULL) &&
	    sub != NULL && strcmp(sub, st.client_id) == 0;
	errno = 0;
	long iat_ms = jwt_get_grant_int(jwt, "iat_ms");
	if (ok && st.revoked_before_ms > 0 && (errno != 0 || iat_ms < st.revoked_before_ms))
		ok = 0;	/* revoked */
	char *act = ok ? jwt_get_grants_json(jwt, "act") : NULL;
	if (act != NULL)
		ok = 0;	/* an exchanged token is no actor token */
	free(act);
	jwt_free(jwt);
	return ok;
}

/* The subject token: a decision record that verifies with the decider's
 * key. Its recordId comes from its own payload (there is no key suffix
 * here); record_load then checks everything else. NULL when it fails. */
static struct record *
decision_of(const char *raw)
{
	const char *dot1 = raw ? strchr(raw, '.') : NULL;
	const char *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
	struct record *rec = NULL;
	char detail[200];

	if (dot2 == NULL)
		return NULL;
	size_t n = 0;
	unsigned char *payload = NULL;
	json_t *doc = b64url_decode_lax(dot1 + 1, (size_t)(dot2 - dot1 - 1), &payload, &n) == 0 ?
	    json_loadb((const char *)payload, n, 0, NULL) : NULL;
	const char *id = json_string_value(json_object_get(doc, "recordId"));
	struct record_policy pol = {
		.signature_required = 1, .algorithm = JWA_ES256,
		.parsed_key = st.decision_key, .max_window_ms = 366LL * 86400 * 1000,
		.clock_skew_ms = 60000,
	};
	if (id == NULL || record_load(&pol, id, raw, wtime_now_ms(), &rec, NULL, detail,
	    sizeof detail) != RECORD_OK)
		rec = NULL;
	json_decref(doc);
	free(payload);
	return rec;
}

/* RFC 8693 token exchange; called with st.mu held and the client
 * authenticated. The answer (caller frees) or NULL with *problem set. */
static char *
exchange_locked(const json_t *form, const char *jkt, const char **problem)
{
	const char *type = json_string_value(json_object_get(form, "subject_token_type"));
	const char *subject = json_string_value(json_object_get(form, "subject_token"));
	struct record *rec = NULL;
	char *answer = NULL;

	st.exchanges++;
	if (st.exchange_deny)
		*problem = "exchanges are refused (POST /_exchange_deny)";
	else if (!actor_ok_locked(json_string_value(json_object_get(form, "actor_token"))))
		*problem = "actor_token is not a live token of this client";
	else if (type == NULL || strcmp(type, DECISION_TYPE) != 0)
		*problem = "subject_token_type is not a decision record";
	else if ((rec = decision_of(subject)) == NULL)
		*problem = "subject_token is not a decision record signed by the decider";
	else
		answer = issue_token_locked(json_string_value(json_object_get(form, "scope")), rec,
		    json_string_value(json_object_get(form, "resource")), jkt, NULL);
	if (answer == NULL)
		st.exchanges_denied++;
	record_free(rec);
	return answer;
}

/* RFC 9449 §6.1: cnf.jkt binds the token to the proof's key. */
static int
add_cnf(jwt_t *jwt, const char *jkt)
{
	json_t *cnf = json_pack("{s:{s:s}}", "cnf", "jkt", jkt);
	char *text = cnf ? json_dumps(cnf, JSON_COMPACT) : NULL;
	int rc = text ? jwt_add_grants_json(jwt, text) : -1;

	free(text);
	json_decref(cnf);
	return rc;
}

/* RFC 9396 §2: what this fake grants, else NULL. */
static json_t *
rar_details(const char *text)
{
	json_t *d = text ? json_loads(text, 0, NULL) : NULL, *e;
	size_t i;
	int ok = json_is_array(d) && json_array_size(d) > 0;

	json_array_foreach(d, i, e) {
		const char *type = json_string_value(json_object_get(e, "type"));
		ok = ok && type != NULL && strcmp(type, "warrant") == 0 &&
		    json_is_array(json_object_get(e, "actions")) &&
		    json_is_string(json_array_get(json_object_get(e, "actions"), 0)) &&
		    json_is_array(json_object_get(e, "locations")) &&
		    json_is_string(json_object_get(e, "identifier"));
	}
	if (!ok) {
		json_decref(d);
		return NULL;
	}
	return d;
}

static int
add_details(jwt_t *jwt, const json_t *details)
{
	json_t *o = json_pack("{s:O}", "authorization_details", details);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	int rc = text ? jwt_add_grants_json(jwt, text) : -1;

	free(text);
	json_decref(o);
	return rc;
}

static char *
issue_token_locked(const char *scope, const struct record *rec, const char *resource,
		   const char *jkt, const json_t *details)
{
	long now = (long)time(NULL);
	jwt_t *jwt = NULL;
	char jti[33], *tok = NULL, *out = NULL;
	int for_redis = rec == NULL && st.redis_scope != NULL &&
	    ((scope != NULL && strcmp(scope, st.redis_scope) == 0) ||
	    (resource != NULL && strcmp(resource, st.redis_scope) == 0));
	long lifetime_s = for_redis ? st.redis_lifetime_s : st.lifetime_s;

	if (rnd_hex(jti, sizeof jti, 16) != 0 || jwt_new(&jwt) != 0)
		goto done;
	if (jwt_add_grant(jwt, "sub", rec ? rec->on_behalf_of : st.client_id) ||
	    jwt_add_grant(jwt, "jti", jti) ||
	    jwt_add_grant_int(jwt, "iat", now) || jwt_add_grant_int(jwt, "exp", now + lifetime_s) ||
	    /* iat to the ms, so a revocation in the same second as an issue
	     * is ordered right (the fake gate reads it) */
	    jwt_add_grant_int(jwt, "iat_ms", (long)wtime_now_ms()) ||
	    (scope != NULL && jwt_add_grant(jwt, "scope", scope)) ||
	    (resource != NULL && jwt_add_grant(jwt, "resource", resource)) ||
	    (rec != NULL && add_exchange_claims(jwt, rec) != 0) ||
	    (jkt != NULL && add_cnf(jwt, jkt) != 0) ||
	    (issue_aud != NULL && jwt_add_grant(jwt, "aud", issue_aud) != 0) ||
	    (details != NULL && add_details(jwt, details) != 0) ||
	    jwt_set_alg(jwt, JWT_ALG_HS256, (const unsigned char *)st.jwt_secret.data,
	    (int)st.jwt_secret.len) || (tok = jwt_encode_str(jwt)) == NULL)
		goto done;
	out = fake_dump(json_pack("{s:s, s:s, s:I}", "access_token", tok, "token_type",
	    jkt ? "DPoP" : "Bearer", "expires_in", (json_int_t)lifetime_s));
	st.issued++;
	st.dpop_issued += jkt != NULL;
	st.rar_issued += details != NULL;
	st.redis_issued += for_redis;
done:
	free(tok);
	jwt_free(jwt);
	return out;
}

static enum MHD_Result
handle_token(struct MHD_Connection *c, const struct fake_req *r)
{
	const char *ctype = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	const char *problem;
	json_t *form;
	int status;

	pthread_mutex_lock(&st.mu);
	st.requests++;
	if (st.down) {
		st.unavailable++;
		pthread_mutex_unlock(&st.mu);
		return send_error(c, 503, "temporarily_unavailable", "down for a test");
	}
	if (ctype == NULL || strncmp(ctype, "application/x-www-form-urlencoded", 33) != 0 ||
	    (form = parse_form(r->body, r->len)) == NULL) {
		st.rejected++;
		pthread_mutex_unlock(&st.mu);
		return send_error(c, 400, "invalid_request", "not a well-formed form body");
	}
	/* RFC 9449 §4.3, before anything else is looked at */
	const char *proof = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "DPoP");
	char jkt_buf[64] = "", jti[128];
	const char *jkt = NULL;
	if (proof != NULL) {
		const char *why = fake_dpop_check(proof, "POST", st.token_url, NULL,
		    st.dpop_nonce[0] ? st.dpop_nonce : NULL, jkt_buf, sizeof jkt_buf, jti,
		    sizeof jti);
		if (why == NULL && json_object_get(st.seen_jti, jti) != NULL)
			why = "the proof's jti was seen before";
		if (why != NULL) {
			int challenge = strcmp(why, "use_dpop_nonce") == 0;
			char nonce[64];
			snprintf(nonce, sizeof nonce, "%s", st.dpop_nonce);
			if (challenge)
				st.dpop_challenges++;
			else
				st.dpop_refused++;
			json_decref(form);
			pthread_mutex_unlock(&st.mu);
			return send_dpop_error(c, challenge ? "use_dpop_nonce" : "invalid_dpop_proof",
			    why, challenge ? nonce : NULL);
		}
		json_object_set_new(st.seen_jti, jti, json_true());
		jkt = jkt_buf;
		set_last("last_jkt", jkt);
	}
	set_last("last_authorization_details",
	    json_string_value(json_object_get(form, "authorization_details")));
	set_last("last_scope", json_string_value(json_object_get(form, "scope")));
	set_last("last_resource", json_string_value(json_object_get(form, "resource")));
	set_last("last_audience", json_string_value(json_object_get(form, "audience")));
	const char *grant = json_string_value(json_object_get(form, "grant_type"));
	int exchange = grant != NULL && strcmp(grant, EXCHANGE_GRANT) == 0 &&
	    st.decision_key != NULL;
	if (grant == NULL || (!exchange && strcmp(grant, "client_credentials") != 0)) {
		status = 400;
		problem = "unsupported_grant_type";
	} else {
		problem = authenticate_locked(c, form, &status);
	}
	if (problem == NULL && exchange) {
		char *answer = exchange_locked(form, jkt, &problem);
		json_decref(form);
		pthread_mutex_unlock(&st.mu);
		if (answer == NULL) {
			log_info("fake.exchange", "status=400 detail=\"%s\"", problem);
			return send_error(c, 400, st.exchange_deny && st.deny_code[0] &&
			    strstr(problem, "/_exchange_deny") ? st.deny_code : "invalid_grant",
			    problem);
		}
		enum MHD_Result ret = fake_send(c, 200, answer, NULL);
		free(answer);
		log_info("fake.exchange", "status=200");
		return ret;
	}
	char *scope = json_string_value(json_object_get(form, "scope")) ?
	    strdup(json_string_value(json_object_get(form, "scope"))) : NULL;
	/* only to tell a Redis token: the worker's own carry no resource claim */
	const char *res = json_string_value(json_object_get(form, "resource"));
	char *resource = res && st.redis_scope && strcmp(res, st.redis_scope) == 0 ?
	    strdup(res) : NULL;
	const char *rt = json_string_value(json_object_get(form, "authorization_details"));
	char *rar_text = rt ? strdup(rt) : NULL;
	json_decref(form);
	if (problem != NULL) {
		free(rar_text);
		free(scope);
		free(resource);
		st.rejected++;
		pthread_mutex_unlock(&st.mu);
		return send_error(c, status, status == 401 ? "invalid_client" :
		    strcmp(problem, "unsupported_grant_type") == 0 ? problem : "invalid_request",
		    problem);
	}
	if (scope != NULL && st.down_scope[0] && strcmp(scope, st.down_scope) == 0) {
		free(scope);
		free(resource);
		free(rar_text);
		st.unavailable++;
		pthread_mutex_unlock(&st.mu);
		return send_error(c, 503, "temporarily_unavailable", "this scope is down (POST "
		    "/_down_scope)");
	}
	if (scope != NULL && st.deny_scope[0] && strcmp(scope, st.deny_scope) == 0) {
		free(scope);
		free(resource);
		free(rar_text);
		st.rejected++;
		pthread_mutex_unlock(&st.mu);
		return send_error(c, 400, "invalid_scope", "this scope is refused (POST /_deny_scope)");
	}
	json_t *details = NULL;
	if (rar_text != NULL && (st.rar_deny || (details = rar_details(rar_text)) == NULL)) {
		free(scope);
		free(resource);
		free(rar_text);
		st.rejected++;
		pthread_mutex_unlock(&st.mu);
		return send_error(c, 400, "invalid_authorization_details",
		    "not what this server grants");
	}
	issue_aud = json_string_value(json_object_get(st.last, "last_audience"));
	char *answer = issue_token_locked(scope, NULL, resource, jkt, details);
	issue_aud = NULL;
	json_decref(details);
	free(rar_text);
	free(scope);
	free(resource);
	pthread_mutex_unlock(&st.mu);
	if (answer == NULL)
		return send_error(c, 500, "server_error", "cannot issue a token");
	enum MHD_Result ret = fake_send(c, 200, answer, NULL);
	free(answer);
	log_info("fake.token", "status=200");
	return ret;
}

/* ---- control ---- */

static enum MHD_Result
send_stats(struct MHD_Connection *c)
{
	pthread_mutex_lock(&st.mu);
	json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
	    "dpop_issued", (json_int_t)st.dpop_issued,
	    "dpop_challenges", (json_int_t)st.dpop_challenges,
	    "dpop_refused", (json_int_t)st.dpop_refused, "rar_issued", (json_int_t)st.rar_issued,
	    "issued",
	    (json_int_t)st.issued, "redis_issued", (json_int_t)st.redis_issued,
	    "requests", (json_int_t)st.requests, "rejected", (json_int_t)st.rejected,
	    "unavailable", (json_int_t)st.unavailable, "lifetime_s", (json_int_t)st.lifetime_s,
	    "exchanges", (json_int_t)st.exchanges,
	    "exchanges_denied", (json_int_t)st.exchanges_denied);
	if (o != NULL)
		json_object_update(o, st.last);
	pthread_mutex_unlock(&st.mu);
	return fake_send_text(c, fake_dump(o));
}

static enum MHD_Result
set_lifetime(struct MHD_Connection *c, const struct fake_req *r)
{
	char buf[32], *end;
	size_t n = r->len < sizeof buf - 1 ? r->len : sizeof buf - 1;

	memcpy(buf, r->body, n);
	buf[n] = '\0';
	long s = strtol(buf, &end, 10);
	if (end == buf || (*end != '\0' && *end != '\n') || s < 1 || s > 86400 * 365)
		return fake_send(c, 400, "{\"error\":\"lifetime: seconds, 1 or more\"}", NULL);
	pthread_mutex_lock(&st.mu);
	st.lifetime_s = s;
	pthread_mutex_unlock(&st.mu);
	return fake_send(c, 200, "{\"ok\":true}", NULL);
}

static enum MHD_Result
handle_control(struct MHD_Connection *c, const struct fake_req *r, const char *method)
{
	int post = strcmp(method, "POST") == 0;
	int down = fake_path_is(r, "/_down"), reset = fake_path_is(r, "/_reset");

	if (strcmp(method, "GET") == 0 && fake_path_is(r, "/_stats"))
		return send_stats(c);
	if (post && fake_path_is(r, "/_lifetime"))
		return set_lifetime(c, r);
	if (post && (fake_path_is(r, "/_exchange_deny") || fake_path_is(r, "/_exchange_allow"))) {
		pthread_mutex_lock(&st.mu);
		st.exchange_deny = fake_path_is(r, "/_exchange_deny");
		/* a body of [a-z_] names the error; "{}" (the harness' empty
		 * body) or nothing keeps invalid_grant */
		size_t n = strspn(r->body, "abcdefghijklmnopqrstuvwxyz_");
		if (n != r->len || n >= sizeof st.deny_code)
			n = 0;
		memcpy(st.deny_code, r->body, n);
		st.deny_code[n] = '\0';
		pthread_mutex_unlock(&st.mu);
		return fake_send(c, 200, "{\"ok\":true}", NULL);
	}
	if (post && (fake_path_is(r, "/_rar_deny") || fake_path_is(r, "/_rar_allow"))) {
		pthread_mutex_lock(&st.mu);
		st.rar_deny = fake_path_is(r, "/_rar_deny");
		pthread_mutex_unlock(&st.mu);
		return fake_send(c, 200, "{\"ok\":true}", NULL);
	}
	if (post && (fake_path_is(r, "/_deny_scope") || fake_path_is(r, "/_down_scope"))) {
		pthread_mutex_lock(&st.mu);
		char *to = fake_path_is(r, "/_deny_scope") ? st.deny_scope : st.down_scope;
		size_t n = r->len < sizeof st.deny_scope - 1 ? r->len : sizeof st.deny_scope - 1;
		memcpy(to, r->body, n);
		to[n] = '\0';
		pthread_mutex_unlock(&st.mu);
		return fake_send(c, 200, "{\"ok\":true}", NULL);
	}
	if (post && fake_path_is(r, "/_dpop_nonce")) {
		pthread_mutex_lock(&st.mu);
		size_t n = r->len < sizeof st.dpop_nonce - 1 ? r->len : sizeof st.dpop_nonce - 1;
		memcpy(st.dpop_nonce, r->body, n);
		st.dpop_nonce[n] = '\0';
		pthread_mutex_unlock(&st.mu);
		return fake_send(c, 200, "{\"ok\":true}", NULL);
	}
	if (post && fake_path_is(r, "/_revoke_actors")) {
		pthread_mutex_lock(&st.mu);
		st.revoked_before_ms = wtime_now_ms();
		pthread_mutex_unlock(&st.mu);
		return fake_send(c, 200, "{\"ok\":true}", NULL);
	}
	if (post && (down || fake_path_is(r, "/_up") || reset)) {
		pthread_mutex_lock(&st.mu);
		if (reset)
			reset_locked();
		else
			st.down = down;
		pthread_mutex_unlock(&st.mu);
		return fake_send(c, 200, "{\"ok\":true}", NULL);
	}
	return fake_send(c, 404, "{\"error\":\"no such control endpoint\"}", NULL);
}

/* ---- the server ---- */

static enum MHD_Result
handle_other(struct MHD_Connection *c, const struct fake_req *r, const char *method)
{
	if (strcmp(method, "POST") == 0 && strcmp(r->uri, "/token") == 0)
		return handle_token(c, r);
	return fake_send(c, 404, "{\"error\":\"not found\"}", NULL);
}

static const char *audience_option;

/* The default audience needs the port, known only once it is bound. */
static void
set_audience(unsigned port)
{
	pthread_mutex_lock(&st.mu);
	snprintf(st.token_url, sizeof st.token_url, "http://127.0.0.1:%u/token", port);
	if (audience_option != NULL)
		snprintf(st.audience_url, sizeof st.audience_url, "%s", audience_option);
	else
		snprintf(st.audience_url, sizeof st.audience_url, "http://127.0.0.1:%u/token", port);
	pthread_mutex_unlock(&st.mu);
}

/* RFC 6749 §5.1: token endpoint answers must not be cached. */
static const char *const every_answer[] = { "Cache-Control", "no-store", NULL };

static const struct fake_server server = {
	.control = handle_control,
	.handle = handle_other,
	.max_body = MAX_BODY,
	.connection_limit = 500,
	.headers = every_answer,
	.on_bound = set_audience,
};

static int
usage(void)
{
	fprintf(stderr, "usage: fake_idp --port-file FILE [--port N] --jwt-secret-file S "
	    "--client-id ID [--client-secret-file F] [--assertion-key-file PUBPEM]... "
	    "[--lifetime-s N] [--audience-url URL] [--decision-key-file PUBPEM] "
	    "[--redis-scope S] [--redis-lifetime-s N]\n");
	return 64;
}

static int
load_decision_key(const char *path)
{
	struct fake_blob pem = {0};
	char err[160];

	if (fake_read_file(path, BLOB_MAX, 0, &pem) != 0)
		return -1;
	st.decision_key = record_key_new(JWA_ES256, (const unsigned char *)pem.data, pem.len,
	    err, sizeof err);
	free(pem.data);
	return st.decision_key ? 0 : -1;
}

static int
take_option(const char *opt, const char *v, void *arg)
{
	(void)arg;
	if (strcmp(opt, "--jwt-secret-file") == 0)
		return fake_read_file(v, BLOB_MAX, 1, &st.jwt_secret);
	else if (strcmp(opt, "--client-id") == 0)
		st.client_id = v;
	else if (strcmp(opt, "--client-secret-file") == 0)
		return fake_read_file(v, BLOB_MAX, 1, &st.client_secret);
	else if (strcmp(opt, "--assertion-key-file") == 0)
		return st.nkeys < MAX_KEYS ? fake_read_file(v, BLOB_MAX, 0, &st.keys[st.nkeys++]) : -1;
	else if (strcmp(opt, "--lifetime-s") == 0)
		st.lifetime_s = strtol(v, NULL, 10);
	else if (strcmp(opt, "--redis-scope") == 0)
		st.redis_scope = v;
	else if (strcmp(opt, "--redis-lifetime-s") == 0)
		st.redis_lifetime_s = strtol(v, NULL, 10);
	else if (strcmp(opt, "--audience-url") == 0)
		audience_option = v;
	else if (strcmp(opt, "--decision-key-file") == 0)
		return load_decision_key(v);
	else
		return -1;
	return 0;
}

int
main(int argc, char **argv)
{
	struct fake_args args = { 0 };
	struct MHD_Daemon *d;
	int sig;

	log_init("fake_idp");
	if (fake_parse_args(argc, argv, &args, take_option, NULL) != 0 ||
	    st.jwt_secret.data == NULL || st.client_id == NULL || st.lifetime_s < 1)
		return usage();
	st.seen_jti = json_object();
	reset_locked();
	if ((d = fake_start(&server, &args.port, args.port_file)) == NULL)
		return 1;
	log_info("fake.listening", "port=%u keys=%d basic_post=%s", args.port, st.nkeys,
	    st.client_secret.data ? "on" : "off");
	sig = fake_wait(d);
	json_decref(st.last);
	json_decref(st.seen_jti);
	free(st.jwt_secret.data);
	free(st.client_secret.data);
	for (int i = 0; i < st.nkeys; i++)
		free(st.keys[i].data);
	log_info("fake.stopped", "signal=%d", sig);
	return 0;
}
