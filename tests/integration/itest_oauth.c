/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_oauth: the token manager (src/auth/oauth.c) on the test's own libev loop,
 * against fake_idp, with fake_target checking that the tokens it hands out
 * are accepted. Every wait drives the loop with EVRUN_ONCE until a condition
 * holds or a generous deadline passes.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <jwt.h>

#include "conf/config.h"
#include "harness.h"
#include "http/http.h"
#include "base/log.h"
#include "auth/oauth.h"
#include "base/wtime.h"

#define WAIT_MS		30000
#define CLIENT_ID	"warrantd worker:1"
/* A secret that breaks naive Basic auth and naive form encoding alike. */
#define SECRET		"s3cr+t%41:x y"
/* base64url(SHA-256(DER of tests/data/test-rs256.crt)), computed with
 *   openssl x509 -outform DER | openssl dgst -sha256 -binary | base64url */
#define CERT_X5T	"-eCfc0Xvly6aE5nSPMdzZMbtT7mJT4-MV-tQDV1bujk"

static struct ev_loop *loop;
static struct http_client *hc;
static struct h_fake idp, target;
static char *secret_path, *wrong_secret_path;
static unsigned char hs_secret[256];
static size_t hs_secret_len;

/* ---- the loop ---- */

static int
is_valid(void *arg)
{
	return strcmp(oauth_state_name(arg), "valid") == 0;
}

static int
is_error(void *arg)
{
	return strcmp(oauth_state_name(arg), "error") == 0;
}

/* ---- the fakes ---- */

static void
idp_post(const char *path, const char *body)
{
	char url[256];
	long status = 0;

	snprintf(url, sizeof url, "%s%s", idp.url, path);
	free(h_http("POST", url, body, &status));
	assert_int_equal(status, 200);
}

static json_t *
idp_stats(void)
{
	char url[256];
	long status = 0;
	char *s;

	snprintf(url, sizeof url, "%s/_stats", idp.url);
	s = h_http("GET", url, NULL, &status);
	assert_int_equal(status, 200);
	json_t *j = json_loads(s, 0, NULL);
	free(s);
	assert_non_null(j);
	return j;
}

static long long
idp_count(const char *field)
{
	json_t *s = idp_stats();
	long long n = json_integer_value(json_object_get(s, field));

	json_decref(s);
	return n;
}

/* The stats field as a string, or "null". Caller frees. */
static char *
idp_last(const char *field)
{
	json_t *s = idp_stats();
	const char *v = json_string_value(json_object_get(s, field));
	char *out = strdup(v ? v : "null");

	json_decref(s);
	return out;
}

static void
assert_last(const char *field, const char *want)
{
	char *v = idp_last(field);

	if (strcmp(v, want) != 0)
		fail_msg("%s: got %s, want %s", field, v, want);
	free(v);
}

/* fake_target answers 200 only to a live HS256 token from the same secret. */
static long
target_status(const char *token)
{
	char auth[4096], url[256];
	const char *headers[] = {auth, "Idempotency-Key: oauth-check", NULL};
	struct h_http_reply r;

	snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
	snprintf(url, sizeof url, "%s/check", target.url);
	int rc = h_http_req("POST", url, headers, "{}", &r);
	long status = rc == 0 ? r.status : 0;
	h_http_reply_clear(&r);
	return status;
}

/* The exp claim of a token fake_idp issued, verified with the shared secret. */
static long
token_exp(const char *token)
{
	jwt_t *jwt = NULL;

	assert_int_equal(jwt_decode(&jwt, token, hs_secret, (int)hs_secret_len), 0);
	long exp = jwt_get_grant_int(jwt, "exp");
	jwt_free(jwt);
	return exp;
}

/* ---- the manager ---- */

struct seen {
	int calls;
	int seq[256];
};

static void
on_token(void *arg, int have)
{
	struct seen *s = arg;

	if (s->calls < 256)
		s->seq[s->calls] = have;
	s->calls++;
}

static int
last_heard(const struct seen *s)
{
	int i = s->calls < 256 ? s->calls : 256;

	return i > 0 ? s->seq[i - 1] : -1;
}

/* The listener runs from the loop, after the state changed: wait for it. */
static int
heard_token(void *arg)
{
	return last_heard(arg) == 1;
}

static int
heard_loss(void *arg)
{
	return last_heard(arg) == 0;
}

static struct cfg *
make_cfg(const char *method, const char *extra)
{
	char text[4096];
	struct cfg_errors errs = {0};

	snprintf(text, sizeof text,
	    "[records]\nverify_key_file = k.pub\n"
	    "[action a]\nurl = http://127.0.0.1/x\nauth = none\n"
	    "[oauth]\ntoken_url = %s/token\nclient_id = " CLIENT_ID "\nauth_method = %s\n%s",
	    idp.url, method, extra);
	const struct cfg_env env = {.host = "itest-host", .dir = "."};
	struct cfg *cfg = cfg_parse("itest.ini", text, strlen(text), &env, &errs);
	for (size_t i = 0; i < errs.n; i++)
		print_message("config: %s\n", errs.msgs[i]);
	cfg_errors_clear(&errs);
	assert_non_null(cfg);
	return cfg;
}

static struct oauth *
new_manager(const char *method, const char *extra, struct seen *seen)
{
	struct cfg *cfg = make_cfg(method, extra);
	char err[512] = "";
	struct oauth *o = oauth_new(loop, hc, cfg, err, sizeof err);

	cfg_free(cfg);	/* the manager keeps copies */
	if (o == NULL)
		fail_msg("oauth_new: %s", err);
	if (seen != NULL)
		oauth_set_listener(o, on_token, seen);
	return o;
}

static struct oauth *
start_valid(const char *method, const char *extra, struct seen *seen)
{
	struct oauth *o = new_manager(method, extra, seen);

	assert_string_equal(oauth_state_name(o), "none");
	oauth_start(o);
	assert_string_equal(oauth_state_name(o), "refreshing");
	assert_int_equal(h_loop_run_until(loop, is_valid, o, WAIT_MS), 0);
	if (seen != NULL)
		assert_int_equal(h_loop_run_until(loop, heard_token, seen, WAIT_MS), 0);
	return o;
}

static char *
secret_line(void)
{
	static char line[600];

	snprintf(line, sizeof line, "client_secret_file = %s\n", secret_path);
	return line;
}

/* Checks what every freshly fetched manager must show. */
static void
assert_fresh_token(struct oauth *o)
{
	int64_t now = wtime_mono_ms();
	const char *tok = oauth_token(o, now, 5000);

	assert_non_null(tok);
	assert_int_equal(oauth_refreshes(o), 1);
	assert_true(oauth_expires_at_ms(o) > now + 3590000);
	assert_true(oauth_expires_at_ms(o) <= now + 3600000);
	assert_int_equal(target_status(tok), 200);
}

/* ---- client authentication ---- */

static void
test_client_secret_basic(void **state)
{
	struct seen seen = {0};
	char extra[1024];

	(void)state;
	snprintf(extra, sizeof extra, "%sscope = read:gates write\n"
	    "resource = https://gates.example/api\naudience = urn:gates\n", secret_line());
	struct oauth *o = new_manager("client_secret_basic", extra, &seen);
	oauth_start(o);
	assert_int_equal(seen.calls, 0);	/* never from inside oauth_start */
	assert_int_equal(h_loop_run_until(loop, is_valid, o, WAIT_MS), 0);
	assert_fresh_token(o);
	assert_last("last_auth", "client_secret_basic");
	assert_last("last_scope", "read:gates write");
	assert_last("last_resource", "https://gates.example/api");
	assert_last("last_audience", "urn:gates");
	assert_int_equal(idp_count("issued"), 1);
	assert_int_equal(idp_count("rejected"), 0);
	assert_int_equal(h_loop_run_until(loop, heard_token, &seen, WAIT_MS), 0);
	oauth_free(o);
	assert_int_equal(seen.calls, 1);
	assert_int_equal(seen.seq[0], 1);
}

static void
test_client_secret_post(void **state)
{
	(void)state;
	struct oauth *o = start_valid("client_secret_post", secret_line(), NULL);
	assert_fresh_token(o);
	assert_last("last_auth", "client_secret_post");
	assert_last("last_scope", "null");
	assert_last("last_resource", "null");
	assert_last("last_audience", "null");
	assert_int_equal(idp_count("rejected"), 0);
	oauth_free(o);
}

static void
test_private_key_jwt_rs256(void **state)
{
	char extra[1024];

	(void)state;
	snprintf(extra, sizeof extra, "private_key_file = %s\nkey_id = k-2027\n"
	    "certificate_file = %s\nscope = gates\n", h_data("test-rs256.key"),
	    h_data("test-rs256.crt"));
	struct oauth *o = start_valid("private_key_jwt", extra, NULL);
	assert_fresh_token(o);
	assert_last("last_auth", "private_key_jwt");
	assert_last("last_alg", "RS256");
	assert_last("last_kid", "k-2027");
	assert_last("last_x5t", CERT_X5T);
	assert_last("last_scope", "gates");
	/* A second assertion has a fresh jti: the IdP refuses replays. */
	oauth_invalidate(o);
	assert_int_equal(h_loop_run_until(loop, is_valid, o, WAIT_MS), 0);
	assert_int_equal(oauth_refreshes(o), 2);
	assert_int_equal(idp_count("rejected"), 0);
	oauth_free(o);
}

static void
test_private_key_jwt_es256(void **state)
{
	char extra[1024];

	(void)state;
	snprintf(extra, sizeof extra, "private_key_file = %s\nassertion_alg = ES256\n",
	    h_data("test-es256.key"));
	struct oauth *o = start_valid("private_key_jwt", extra, NULL);
	assert_fresh_token(o);
	assert_last("last_alg", "ES256");
	assert_last("last_kid", "null");
	assert_last("last_x5t", "null");
	oauth_free(o);
}

/* A relative secret file is found in $CREDENTIALS_DIRECTORY (warrantd(7) §9). */
static void
test_credentials_directory(void **state)
{
	(void)state;
	char *p = h_write_file("cred-secret", SECRET "\n");
	assert_non_null(p);
	assert_int_equal(setenv("CREDENTIALS_DIRECTORY", h_tmpdir(), 1), 0);
	struct oauth *o = start_valid("client_secret_basic", "client_secret_file = cred-secret\n",
	    NULL);
	unsetenv("CREDENTIALS_DIRECTORY");
	assert_fresh_token(o);
	oauth_free(o);
	free(p);
}

static int
rejected_at_least_3(void *arg)
{
	(void)arg;
	return idp_count("rejected") >= 3;
}

/* Wrong credentials: state error, no token, retries with backoff, no crash. */
static void
expect_refused(const char *method, const char *extra)
{
	idp_post("/_reset", "");
	struct oauth *o = new_manager(method, extra, NULL);
	oauth_start(o);
	assert_int_equal(h_loop_run_until(loop, is_error, o, WAIT_MS), 0);
	assert_null(oauth_token(o, wtime_mono_ms(), 0));
	assert_int_equal(oauth_expires_at_ms(o), 0);
	assert_int_equal(oauth_refreshes(o), 0);
	assert_int_equal(h_loop_run_until(loop, rejected_at_least_3, NULL, WAIT_MS), 0);
	assert_int_equal(idp_count("issued"), 0);
	oauth_free(o);
}

static void
test_wrong_credentials(void **state)
{
	char extra[1024];

	(void)state;
	snprintf(extra, sizeof extra, "client_secret_file = %s\n", wrong_secret_path);
	expect_refused("client_secret_basic", extra);
	expect_refused("client_secret_post", extra);
	snprintf(extra, sizeof extra, "private_key_file = %s\nassertion_alg = ES256\n",
	    h_data("test-es256-other.key"));
	expect_refused("private_key_jwt", extra);
	snprintf(extra, sizeof extra, "private_key_file = %s\nassertion_audience = %s/other\n",
	    h_data("test-rs256.key"), idp.url);
	expect_refused("private_key_jwt", extra);
}

static void
expect_new_fails(const char *method, const char *extra, const char *want_in_err)
{
	struct cfg *cfg = make_cfg(method, extra);
	char err[512] = "";

	assert_null(oauth_new(loop, hc, cfg, err, sizeof err));
	if (strstr(err, want_in_err) == NULL)
		fail_msg("error '%s' lacks '%s'", err, want_in_err);
	cfg_free(cfg);
}

/* Unreadable or unusable files fail at oauth_new, naming the file. */
static void
test_bad_files(void **state)
{
	char extra[1024];

	(void)state;
	expect_new_fails("client_secret_basic", "client_secret_file = /nonexistent/secret\n",
	    "/nonexistent/secret");
	snprintf(extra, sizeof extra, "private_key_file = %s\n", secret_path);
	expect_new_fails("private_key_jwt", extra, secret_path);
	snprintf(extra, sizeof extra, "private_key_file = %s\n", h_data("test-es256.key"));
	expect_new_fails("private_key_jwt", extra, "cannot sign RS256");	/* EC key, RS256 */
	snprintf(extra, sizeof extra, "private_key_file = %s\ncertificate_file = %s\n",
	    h_data("test-rs256.key"), h_data("test-rs256.pub"));
	expect_new_fails("private_key_jwt", extra, "holds no PEM certificate");
}

/* ---- refresh ---- */

#define CLOCK_CUT_MS	2

struct watch {
	struct oauth *o;
	long timeout_ms;
	int violations, handed_out, proactive, samples_held;
	int64_t least_margin_ms;	/* life past timeout + 1 s, least seen */
	uint64_t last_gen;
	int64_t last_expires_at;
	char last_token[2048];
};

/* Samples the manager as a caller would, checking every token handed out
 * against its own JWT exp (not the manager's idea of it). */
static int
watch_refreshes(void *arg)
{
	struct watch *w = arg;
	/* wall first: read after the monotonic clock it would make a token
	 * handed out at `now` look up to a tick shorter-lived than it was */
	int64_t wall = wtime_now_ms(), now = wtime_mono_ms();
	const char *tok = oauth_token(w->o, now, w->timeout_ms);

	if (oauth_generation(w->o) != w->last_gen) {
		/* a new token arrived while the previous one still lived */
		if (w->last_gen != 0 && w->last_expires_at > now)
			w->proactive++;
		w->last_gen = oauth_generation(w->o);
	}
	if (oauth_expires_at_ms(w->o) != 0) {
		w->last_expires_at = oauth_expires_at_ms(w->o);
		w->samples_held++;
	}
	if (tok != NULL) {
		/* Less CLOCK_CUT_MS: the manager's two clock reads and these two
		 * are each cut to the ms, so at the very edge of usable a sample
		 * can see up to 2 ms less life than the manager did (one such
		 * sample failed a run of 8d41abf on a loaded machine, where the
		 * refresh came late and the old token reached that edge). */
		int64_t margin = token_exp(tok) * 1000LL - wall - (w->timeout_ms + 1000);

		if (margin < w->least_margin_ms)
			w->least_margin_ms = margin;
		if (margin <= -CLOCK_CUT_MS)
			w->violations++;
		if (strcmp(tok, w->last_token) != 0) {
			w->handed_out++;
			snprintf(w->last_token, sizeof w->last_token, "%s", tok);
		}
	}
	return oauth_refreshes(w->o) >= 5;
}

/* Lifetime 4 s: refreshed ahead of expiry, again and again, and never a
 * token with less than timeout + 1 s of real life (the JWT exp, which is
 * sooner than expires_in here: iat is whole seconds). Not 2 s: a token then
 * lives 1-2 s and is refreshed 0.25-0.5 s before it ends, which a loaded
 * 2-core machine running ASan builds did not always manage (1 run in 6). */
static void
test_proactive_refresh(void **state)
{
	struct seen seen = {0};
	struct watch w = {.timeout_ms = 100, .least_margin_ms = INT64_MAX};

	(void)state;
	idp_post("/_lifetime", "4");
	w.o = start_valid("client_secret_basic", secret_line(), &seen);
	int rc = h_loop_run_until(loop, watch_refreshes, &w, 60000);

	/* freed before any assert: a failure must not leave its timers, which
	 * point at this frame, running into the next test */
	oauth_free(w.o);
	print_message("handed out %d tokens, %d refreshes proactive, %d violations, "
	    "least life past timeout + 1 s %lld ms\n",
	    w.handed_out, w.proactive, w.violations, (long long)w.least_margin_ms);
	assert_int_equal(rc, 0);
	assert_int_equal(w.violations, 0);
	assert_true(w.handed_out >= 1);
	assert_true(w.proactive >= 2);
	assert_int_equal(idp_count("rejected"), 0);
	int arrivals = 0;
	for (int i = 0; i < seen.calls && i < 256; i++)
		arrivals += seen.seq[i];
	assert_true(arrivals >= 2);
}

static int
no_call_in_flight(void *arg)
{
	(void)arg;
	return http_in_flight(hc) == 0;
}

/* R9: 50 invalidations at once -> one token request, one new token. */
static void
test_invalidate_single_flight(void **state)
{
	struct seen seen = {0};

	(void)state;
	struct oauth *o = start_valid("client_secret_post", secret_line(), &seen);
	assert_int_equal(h_loop_run_until(loop, no_call_in_flight, NULL, WAIT_MS), 0);
	long long before = idp_count("requests");
	uint64_t gen = oauth_generation(o);
	int calls = seen.calls;

	for (int i = 0; i < 50; i++)
		oauth_invalidate(o);
	assert_int_equal(seen.calls, calls);	/* never from inside oauth_invalidate */
	assert_null(oauth_token(o, wtime_mono_ms(), 0));
	assert_int_equal(oauth_expires_at_ms(o), 0);
	assert_string_equal(oauth_state_name(o), "refreshing");
	assert_int_equal(h_loop_run_until(loop, is_valid, o, WAIT_MS), 0);
	assert_int_equal(h_loop_run_until(loop, no_call_in_flight, NULL, WAIT_MS), 0);
	assert_int_equal(h_loop_run_until(loop, heard_token, &seen, WAIT_MS), 0);
	assert_int_equal(idp_count("requests"), before + 1);
	assert_int_equal(oauth_refreshes(o), 2);
	assert_true(oauth_generation(o) != gen);

	/* A failure seen with the old token must not discard the new one. */
	oauth_invalidate_gen(o, gen);
	assert_non_null(oauth_token(o, wtime_mono_ms(), 0));
	assert_int_equal(http_in_flight(hc), 0);
	assert_int_equal(seen.calls, 3);
	assert_int_equal(seen.seq[0], 1);
	assert_int_equal(seen.seq[1], 0);
	assert_int_equal(seen.seq[2], 1);
	oauth_free(o);
}

static int
lost_token(void *arg)
{
	struct oauth *o = arg;
	const char *s = oauth_state_name(o);

	return oauth_token(o, wtime_mono_ms(), 0) == NULL &&
	    (strcmp(s, "error") == 0 || strcmp(s, "none") == 0);
}

static int
retried_twice(void *arg)
{
	(void)arg;
	return idp_count("unavailable") >= 2;
}

/* IdP down: the token runs out, state error; IdP back: valid again. */
static void
test_idp_down_and_back(void **state)
{
	struct seen seen = {0};

	(void)state;
	idp_post("/_lifetime", "2");
	struct oauth *o = start_valid("client_secret_basic", secret_line(), &seen);
	long long refreshes = oauth_refreshes(o);
	idp_post("/_down", "");
	assert_int_equal(h_loop_run_until(loop, lost_token, o, WAIT_MS), 0);
	assert_int_equal(h_loop_run_until(loop, retried_twice, NULL, WAIT_MS), 0);	/* not given up */
	assert_int_equal(h_loop_run_until(loop, heard_loss, &seen, WAIT_MS), 0);
	idp_post("/_up", "");
	assert_int_equal(h_loop_run_until(loop, is_valid, o, 60000), 0);
	assert_true(oauth_refreshes(o) > refreshes);
	assert_int_equal(h_loop_run_until(loop, heard_token, &seen, WAIT_MS), 0);
	assert_int_equal(target_status(oauth_token(o, wtime_mono_ms(), 0)), 200);
	oauth_free(o);
}

/* SIGHUP: secret files re-read, the token kept; a new scope fetches anew. */
static void
test_reload(void **state)
{
	char extra[1024], err[512] = "", before[2048];

	(void)state;
	struct oauth *o = start_valid("client_secret_basic", secret_line(), NULL);
	snprintf(before, sizeof before, "%s", oauth_token(o, wtime_mono_ms(), 0));

	struct cfg *bad = make_cfg("client_secret_basic", "client_secret_file = /nonexistent/s2\n");
	assert_int_equal(oauth_reload(o, bad, err, sizeof err), -1);
	assert_non_null(strstr(err, "/nonexistent/s2"));
	cfg_free(bad);
	assert_string_equal(oauth_token(o, wtime_mono_ms(), 0), before);

	struct cfg *same = make_cfg("client_secret_basic", secret_line());
	assert_int_equal(oauth_reload(o, same, err, sizeof err), 0);
	cfg_free(same);
	assert_string_equal(oauth_token(o, wtime_mono_ms(), 0), before);
	assert_int_equal(http_in_flight(hc), 0);

	snprintf(extra, sizeof extra, "%sscope = reloaded\n", secret_line());
	struct cfg *scoped = make_cfg("client_secret_basic", extra);
	assert_int_equal(oauth_reload(o, scoped, err, sizeof err), 0);
	cfg_free(scoped);
	assert_string_equal(oauth_token(o, wtime_mono_ms(), 0), before);	/* kept meanwhile */
	assert_int_equal(http_in_flight(hc), 1);
	assert_int_equal(h_loop_run_until(loop, no_call_in_flight, NULL, WAIT_MS), 0);
	assert_int_equal(oauth_refreshes(o), 2);
	assert_string_not_equal(oauth_token(o, wtime_mono_ms(), 0), before);
	assert_last("last_scope", "reloaded");
	oauth_free(o);
}

/* ---- fake_idp's own rules, which the tests above lean on ---- */

struct raw {
	int done;
	long status;
	char body[1024];
};

static void
on_raw(const struct http_response *resp, void *arg)
{
	struct raw *r = arg;

	r->done = 1;
	r->status = resp->status;
	snprintf(r->body, sizeof r->body, "%s", resp->body);
}

static int
raw_done(void *arg)
{
	return ((struct raw *)arg)->done;
}

static long
raw_token_request(const char *body, const char *userpwd)
{
	char url[256];
	const char *headers[] = {"Content-Type: application/x-www-form-urlencoded", NULL};
	struct raw r = {0};

	snprintf(url, sizeof url, "%s/token", idp.url);
	struct http_request rq = {.method = "POST", .url = url, .headers = headers,
	    .body = body, .body_len = strlen(body), .timeout_ms = 10000, .userpwd = userpwd};
	assert_int_equal(http_start(hc, &rq, on_raw, &r, NULL), 0);
	assert_int_equal(h_loop_run_until(loop, raw_done, &r, WAIT_MS), 0);
	return r.status;
}

/* An assertion built here, so each rule can be broken on purpose. */
static long
assertion_status(jwt_alg_t alg, const char *key_file, const char *jti, const char *aud,
		 long exp_from_now)
{
	jwt_t *jwt = NULL;
	char body[8192], audience[256];
	long now = (long)time(NULL);
	char *key = h_read_file(key_file);

	assert_non_null(key);
	snprintf(audience, sizeof audience, "%s/token", idp.url);
	assert_int_equal(jwt_new(&jwt), 0);
	assert_int_equal(jwt_add_grant(jwt, "iss", CLIENT_ID), 0);
	assert_int_equal(jwt_add_grant(jwt, "sub", CLIENT_ID), 0);
	assert_int_equal(jwt_add_grant(jwt, "aud", aud ? aud : audience), 0);
	assert_int_equal(jwt_add_grant(jwt, "jti", jti), 0);
	assert_int_equal(jwt_add_grant_int(jwt, "exp", now + exp_from_now), 0);
	assert_int_equal(jwt_set_alg(jwt, alg, alg == JWT_ALG_NONE ? NULL :
	    (unsigned char *)key, alg == JWT_ALG_NONE ? 0 : (int)strlen(key)), 0);
	char *a = jwt_encode_str(jwt);
	assert_non_null(a);
	snprintf(body, sizeof body, "grant_type=client_credentials&client_assertion_type="
	    "urn%%3Aietf%%3Aparams%%3Aoauth%%3Aclient-assertion-type%%3Ajwt-bearer"
	    "&client_assertion=%s", a);
	free(a);
	jwt_free(jwt);
	free(key);
	return raw_token_request(body, NULL);
}

static void
test_fake_idp_rules(void **state)
{
	const char *key = h_data("test-rs256.key"), *pub = h_data("test-rs256.pub");

	(void)state;
	assert_int_equal(raw_token_request("grant_type=password", "warrantd+worker%3A1:x"), 400);
	assert_int_equal(raw_token_request("grant_type=client_credentials", NULL), 401);
	assert_int_equal(raw_token_request("grant_type=client_credentials&client_id=warrantd"
	    "+worker%3A1&client_secret=s3cr%2Bt%2541%3Ax+y", "a:b"), 400);	/* two methods */
	assert_int_equal(raw_token_request("grant_type=client_credentials",
	    "warrantd+worker%3A1:s3cr%2Bt%2541%3Ax+y"), 200);
	assert_int_equal(raw_token_request("grant_type=client_credentials",
	    "warrantd worker%3A1:s3cr+t%41:x y"), 401);	/* not form-encoded */
	assert_int_equal(assertion_status(JWT_ALG_RS256, key, "jti-1", NULL, 60), 200);
	assert_int_equal(assertion_status(JWT_ALG_RS256, key, "jti-1", NULL, 60), 401);
	assert_int_equal(assertion_status(JWT_ALG_RS256, key, "jti-2", "http://else/token", 60),
	    401);
	assert_int_equal(assertion_status(JWT_ALG_RS256, key, "jti-3", NULL, 600), 401);
	assert_int_equal(assertion_status(JWT_ALG_RS256, key, "jti-4", NULL, -5), 401);
	assert_int_equal(assertion_status(JWT_ALG_NONE, key, "jti-5", NULL, 60), 401);
	/* The public key as an HMAC secret: the classic algorithm confusion. */
	assert_int_equal(assertion_status(JWT_ALG_HS256, pub, "jti-6", NULL, 60), 401);
	assert_int_equal(assertion_status(JWT_ALG_ES256, h_data("test-es256.key"), "jti-7", NULL,
	    60), 200);
}

/* ---- logs ---- */

static void
append_token(char *list, size_t n, struct oauth *o)
{
	const char *t = oauth_token(o, wtime_mono_ms(), 0);

	assert_non_null(t);
	assert_true(strlen(list) + strlen(t) + 2 < n);
	strcat(list, t);
	strcat(list, "\n");
}

/* Nothing the manager logs holds a token, a secret or an assertion. */
static void
test_log_holds_no_secret(void **state)
{
	char extra[1024], tokens[32768] = "";
	char *path = h_write_file("oauth-log.txt", "");
	int saved = dup(2), fd;

	(void)state;
	assert_non_null(path);
	fd = open(path, O_WRONLY | O_APPEND);
	assert_true(fd >= 0 && saved >= 0);
	log_set_level(LOG_DEBUG);
	dup2(fd, 2);

	struct oauth *o = start_valid("client_secret_basic", secret_line(), NULL);
	append_token(tokens, sizeof tokens, o);
	oauth_invalidate(o);
	assert_int_equal(h_loop_run_until(loop, is_valid, o, WAIT_MS), 0);
	append_token(tokens, sizeof tokens, o);
	oauth_free(o);
	o = start_valid("client_secret_post", secret_line(), NULL);
	append_token(tokens, sizeof tokens, o);
	oauth_free(o);
	snprintf(extra, sizeof extra, "private_key_file = %s\n", h_data("test-rs256.key"));
	o = start_valid("private_key_jwt", extra, NULL);
	append_token(tokens, sizeof tokens, o);
	oauth_free(o);
	snprintf(extra, sizeof extra, "client_secret_file = %s\n", wrong_secret_path);
	o = new_manager("client_secret_post", extra, NULL);
	oauth_start(o);
	int erred = h_loop_run_until(loop, is_error, o, WAIT_MS);
	oauth_free(o);

	dup2(saved, 2);
	log_set_level(LOG_INFO);
	close(fd);
	close(saved);
	assert_int_equal(erred, 0);
	char *text = h_read_file(path);
	assert_non_null(text);
	assert_non_null(strstr(text, "event=token.refreshed"));
	assert_non_null(strstr(text, "event=token.error status=401"));
	assert_non_null(strstr(text, "detail=\"idp error: invalid_client"));
	for (char *t = strtok(tokens, "\n"); t != NULL; t = strtok(NULL, "\n"))
		assert_null(strstr(text, t));
	assert_null(strstr(text, "eyJ"));		/* no JWT: token or assertion */
	assert_null(strstr(text, "s3cr"));		/* the secret, raw or encoded */
	assert_null(strstr(text, "wrong-secret"));
	assert_null(strstr(text, "Bearer"));
	assert_null(strstr(text, "Authorization"));
	assert_null(strstr(text, "PRIVATE KEY"));
	free(text);
	free(path);
}

/* ---- setup ---- */

static int
reset_idp(void **state)
{
	(void)state;
	idp_post("/_up", "");
	idp_post("/_lifetime", "3600");
	idp_post("/_reset", "");
	return 0;
}

static int
load_hs_secret(void)
{
	char *s = h_read_file(h_data("test-hs256.secret"));
	size_t start, n;

	if (s == NULL)
		return -1;
	n = strlen(s);
	while (n > 0 && strchr(" \t\r\n", s[n - 1]))
		n--;
	start = strspn(s, " \t\r\n");
	hs_secret_len = n > start && n - start < sizeof hs_secret ? n - start : 0;
	memcpy(hs_secret, s + start, hs_secret_len);
	free(s);
	return hs_secret_len > 0 ? 0 : -1;
}

static int
setup(void **state)
{
	(void)state;
	signal(SIGPIPE, SIG_IGN);
	secret_path = h_write_file("idp-secret", "  " SECRET "\n");
	wrong_secret_path = h_write_file("wrong-secret", "wrong-secret\n");
	if (secret_path == NULL || wrong_secret_path == NULL || load_hs_secret() != 0)
		return -1;
	const char *idp_args[] = {"--jwt-secret-file", h_data("test-hs256.secret"),
	    "--client-id", CLIENT_ID, "--client-secret-file", secret_path,
	    "--assertion-key-file", h_data("test-rs256.pub"),
	    "--assertion-key-file", h_data("test-es256.pub"), NULL};
	const char *target_args[] = {"--jwt-secret-file", h_data("test-hs256.secret"), NULL};
	loop = ev_loop_new(EVFLAG_AUTO);	/* not the default loop: it reaps children */
	if (loop == NULL || (hc = http_client_new(loop)) == NULL)
		return -1;
	if (h_fake_start(&idp, "fake_idp", idp_args) != 0 ||
	    h_fake_start(&target, "fake_target", target_args) != 0)
		return -1;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	h_fake_stop(&idp);
	h_fake_stop(&target);
	http_client_free(hc);
	ev_loop_destroy(loop);
	free(secret_path);
	free(wrong_secret_path);
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_client_secret_basic, reset_idp),
		cmocka_unit_test_setup(test_client_secret_post, reset_idp),
		cmocka_unit_test_setup(test_private_key_jwt_rs256, reset_idp),
		cmocka_unit_test_setup(test_private_key_jwt_es256, reset_idp),
		cmocka_unit_test_setup(test_credentials_directory, reset_idp),
		cmocka_unit_test_setup(test_wrong_credentials, reset_idp),
		cmocka_unit_test_setup(test_bad_files, reset_idp),
		cmocka_unit_test_setup(test_proactive_refresh, reset_idp),
		cmocka_unit_test_setup(test_invalidate_single_flight, reset_idp),
		cmocka_unit_test_setup(test_idp_down_and_back, reset_idp),
		cmocka_unit_test_setup(test_reload, reset_idp),
		cmocka_unit_test_setup(test_fake_idp_rules, reset_idp),
		cmocka_unit_test_setup(test_log_holds_no_secret, reset_idp),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
