/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for the pure core of the worker's OAuth token (warrantd(7) §9, R6). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/token.h"
#include "jose/b64url.h"
#include "testlib.h"

#define NOW_MS 1800000000123LL	/* 2027-01-15, with a fraction of a second */

/* A JWS compact token (unsigned: nothing here verifies) with `payload`. */
static char *
make_jwt(const char *payload)
{
	const char *head = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";
	char *h = b64url_encode((const unsigned char *)head, strlen(head));
	char *p = b64url_encode((const unsigned char *)payload, strlen(payload));
	size_t n = strlen(h) + strlen(p) + 16;
	char *out = malloc(n);

	assert_non_null(h);
	assert_non_null(p);
	assert_non_null(out);
	snprintf(out, n, "%s.%s.c2lnbmF0dXJl", h, p);
	free(h);
	free(p);
	return out;
}

static char *
jwt_with_exp(long long exp_s)
{
	char payload[128];

	snprintf(payload, sizeof payload, "{\"sub\":\"w\",\"exp\":%lld}", exp_s);
	return make_jwt(payload);
}

/* The sooner of expires_in and the JWT exp wins; either alone is enough. */
static void
test_lifetime_min_of_both(void **state)
{
	long long now_s = NOW_MS / 1000;
	char *jwt = jwt_with_exp(now_s + 100);		/* 99.877 s from NOW_MS */

	(void)state;
	assert_int_equal(token_lifetime_ms(3600, jwt, NOW_MS), 99877);
	assert_int_equal(token_lifetime_ms(50, jwt, NOW_MS), 50000);
	assert_int_equal(token_lifetime_ms(-1, jwt, NOW_MS), 99877);
	free(jwt);

	jwt = jwt_with_exp(now_s - 1);			/* already dead */
	assert_int_equal(token_lifetime_ms(3600, jwt, NOW_MS), -1);
	assert_int_equal(token_lifetime_ms(-1, jwt, NOW_MS), -1);
	free(jwt);

	assert_int_equal(token_lifetime_ms(0, "opaque", NOW_MS), -1);
	assert_int_equal(token_lifetime_ms(-1, NULL, NOW_MS), -1);
	/* A huge expires_in is cut down, never overflows. */
	assert_true(token_lifetime_ms(9223372036854775807LL, "opaque", NOW_MS) > 0);
}

/* With iat, the lifetime is the IdP's exp - iat, whatever the skew: a wall
 * clock two hours ahead or behind the IdP's neither kills a fresh token nor
 * keeps a dead one alive (issue 7, item 8). */
static void
test_lifetime_skew(void **state)
{
	long long now_s = NOW_MS / 1000;
	char payload[128], *t;

	(void)state;
	for (long long skew = -7200; skew <= 7200; skew += 3600) {
		snprintf(payload, sizeof payload, "{\"iat\":%lld,\"exp\":%lld}", now_s + skew,
		    now_s + skew + 60);
		t = make_jwt(payload);
		/* in step: exp against our clock, to the ms; off: exp - iat - 1 s */
		int64_t want = skew == 0 ? 60000 - NOW_MS % 1000 : 59000;
		assert_int_equal(token_lifetime_ms(3600, t, NOW_MS), want);
		assert_int_equal(token_lifetime_ms(-1, t, NOW_MS), want);
		assert_int_equal(token_lifetime_ms(30, t, NOW_MS), 30000);	/* sooner wins */
		free(t);
	}
	/* within TOKEN_SKEW_MS the clocks agree: exp against ours */
	snprintf(payload, sizeof payload, "{\"iat\":%lld,\"exp\":%lld}", now_s - 4, now_s + 56);
	t = make_jwt(payload);
	assert_int_equal(token_lifetime_ms(3600, t, NOW_MS), 56000 - NOW_MS % 1000);
	free(t);
	/* an iat after exp is nonsense: exp against our clock */
	snprintf(payload, sizeof payload, "{\"iat\":%lld,\"exp\":%lld}", now_s + 100, now_s + 50);
	t = make_jwt(payload);
	assert_int_equal(token_lifetime_ms(3600, t, NOW_MS), 50000 - NOW_MS % 1000);
	free(t);
}

static void
test_lifetime_jwt_forms(void **state)
{
	long long now_s = NOW_MS / 1000;
	char payload[128], *t;

	(void)state;
	/* Opaque and non-JWS tokens carry no exp: expires_in alone, or nothing. */
	assert_int_equal(token_lifetime_ms(60, "2YotnFZFEjr1zCsicMWpAA", NOW_MS), 60000);
	assert_int_equal(token_lifetime_ms(-1, "2YotnFZFEjr1zCsicMWpAA", NOW_MS), -1);
	assert_int_equal(token_lifetime_ms(-1, "a.b", NOW_MS), -1);
	assert_int_equal(token_lifetime_ms(-1, "a.!!!.c", NOW_MS), -1);
	assert_int_equal(token_lifetime_ms(60, "a.b.c.d.e", NOW_MS), 60000);	/* JWE */

	t = make_jwt("{\"sub\":\"w\"}");		/* no exp */
	assert_int_equal(token_lifetime_ms(10, t, NOW_MS), 10000);
	assert_int_equal(token_lifetime_ms(-1, t, NOW_MS), -1);
	free(t);
	snprintf(payload, sizeof payload, "{\"exp\":\"%lld\"}", now_s + 5);
	t = make_jwt(payload);				/* exp as a string: not a NumericDate */
	assert_int_equal(token_lifetime_ms(-1, t, NOW_MS), -1);
	free(t);
	snprintf(payload, sizeof payload, "{\"exp\":%lld.5}", now_s + 5);
	t = make_jwt(payload);				/* fractional exp */
	assert_int_equal(token_lifetime_ms(-1, t, NOW_MS), 4877);
	free(t);
	t = make_jwt("[1,2]");				/* payload not an object */
	assert_int_equal(token_lifetime_ms(-1, t, NOW_MS), -1);
	free(t);
	t = make_jwt("not json");
	assert_int_equal(token_lifetime_ms(7, t, NOW_MS), 7000);
	free(t);
}


static void
test_refresh_at_bounds(void **state)
{
	const int64_t lifetimes[] = {1, 2, 19, 1000, 2000, 3600000};
	const double ratios[] = {0.75, 0.5, 0.99, 0, 1, 2, -1, NAN};
	const int64_t t0 = NOW_MS;

	(void)state;
	for (size_t l = 0; l < sizeof lifetimes / sizeof lifetimes[0]; l++)
		for (size_t r = 0; r < sizeof ratios / sizeof ratios[0]; r++)
			for (uint64_t i = 0; i < 20000; i++) {
				int64_t at = token_refresh_at_ms(t0, lifetimes[l], ratios[r], mix(i));
				assert_true(at >= t0);
				assert_true(at < t0 + lifetimes[l]);
			}

	/* 0.75 of an hour, minus at most 5 % of it. */
	int64_t lo = INT64_MAX, hi = INT64_MIN, life = 3600000;
	for (uint64_t i = 0; i < 100000; i++) {
		int64_t at = token_refresh_at_ms(t0, life, 0.75, mix(i)) - t0;
		lo = at < lo ? at : lo;
		hi = at > hi ? at : hi;
	}
	assert_true(hi <= 2700000);
	assert_true(lo >= 2700000 - 180000);
	assert_true(hi - lo > 170000);	/* the jitter is spread, not constant */
	assert_int_equal(token_refresh_at_ms(t0, life, 0.75, 0), t0 + 2700000);
	assert_int_equal(token_refresh_at_ms(t0, life, 0.75, 180000), t0 + 2700000 - 180000);
	assert_int_equal(token_refresh_at_ms(t0, life, 0.75, 180001), t0 + 2700000);
	assert_int_equal(token_refresh_at_ms(t0, 0, 0.75, 5), t0);
}

/* R6: remaining life must exceed timeout + 1 s, strictly. */
static void
test_usable_boundary(void **state)
{
	(void)state;
	assert_int_equal(token_usable(NOW_MS + 5000 + 1000, NOW_MS, 5000), 0);
	assert_int_equal(token_usable(NOW_MS + 5000 + 1001, NOW_MS, 5000), 1);
	assert_int_equal(token_usable(NOW_MS + 1000, NOW_MS, 0), 0);
	assert_int_equal(token_usable(NOW_MS + 1001, NOW_MS, 0), 1);
	assert_int_equal(token_usable(NOW_MS - 1, NOW_MS, 0), 0);
	assert_int_equal(token_usable(0, NOW_MS, 0), 0);
}


/* R20: the Redis credential's state that stops reading new entries. */
static void
test_redis_blocks_reading(void **state)
{
	struct token_redis_view none = {0, 0, 0}, pw = {1, 1, 0};
	struct token_redis_view tok = {1, 0, NOW_MS + TOKEN_SAFETY_MS + 1};

	(void)state;
	assert_int_equal(token_redis_blocks_reading(&none, NOW_MS), 0);	/* no source */
	assert_int_equal(token_redis_blocks_reading(&pw, NOW_MS), 0);	/* a password */
	assert_int_equal(token_redis_blocks_reading(&tok, NOW_MS), 0);	/* lives long enough */
	tok.expires_at_ms = NOW_MS + TOKEN_SAFETY_MS;			/* the boundary */
	assert_int_equal(token_redis_blocks_reading(&tok, NOW_MS), 1);
	tok.expires_at_ms = NOW_MS - 1;					/* dead */
	assert_int_equal(token_redis_blocks_reading(&tok, NOW_MS), 1);
	tok.expires_at_ms = 0;						/* none held */
	assert_int_equal(token_redis_blocks_reading(&tok, NOW_MS), 1);
	tok.expires_at_ms = 0;	/* none held, on a clock still near 0 */
	assert_int_equal(token_redis_blocks_reading(&tok, 0), 1);
}
/* R20: a refusal blames the token held only when the connections had it. */
static void
test_redis_refusal_blames(void **state)
{
	(void)state;
	assert_int_equal(token_redis_refusal_blames(0, 0), 1);	/* a password: gen 0 */
	assert_int_equal(token_redis_refusal_blames(3, 3), 1);	/* the token they have */
	assert_int_equal(token_redis_refusal_blames(3, 4), 0);	/* a newer one is on its way */
	assert_int_equal(token_redis_refusal_blames(0, 1), 0);	/* the first, not yet given */
}

static void
test_form_encode(void **state)
{
	const char *const pairs[] = {"grant_type", "client_credentials", "scope", "read write",
	    "x", "+ % : \xc3\xa9", "keep", "-._~Az09", "enc", "*/&=?#", NULL};
	const char *const none[] = {NULL};
	char *s;

	(void)state;
	s = token_form_encode(pairs);
	assert_string_equal(s, "grant_type=client_credentials&scope=read+write"
	    "&x=%2B+%25+%3A+%C3%A9&keep=-._~Az09&enc=%2A%2F%26%3D%3F%23");
	free(s);
	s = token_form_encode(none);
	assert_string_equal(s, "");
	free(s);
}

static void
test_basic_userpwd(void **state)
{
	char *s;

	(void)state;
	s = token_basic_userpwd("my client", "p+ss%:w rd\xc3\xa9");
	assert_string_equal(s, "my+client:p%2Bss%25%3Aw+rd%C3%A9");
	free(s);
	s = token_basic_userpwd("a:b", "");
	assert_string_equal(s, "a%3Ab:");	/* the client id's ':' cannot split the pair */
	free(s);
}

static int
parse(const char *body, char **tok, long long *exp, char *err, size_t errlen)
{
	return token_parse_response(body, body ? strlen(body) : 0, tok, exp, err, errlen);
}

static void
assert_parses(const char *body, const char *want_token, long long want_expires)
{
	char err[256] = "", *tok = NULL;
	long long exp = -2;

	if (parse(body, &tok, &exp, err, sizeof err) != 0)
		fail_msg("%s: %s", body, err);
	assert_string_equal(tok, want_token);
	assert_int_equal(exp, want_expires);
	free(tok);
}

static void
assert_refused(const char *body, const char *want_err)
{
	char err[256] = "", *tok = (char *)"untouched";
	long long exp = -2;

	assert_int_equal(parse(body, &tok, &exp, err, sizeof err), -1);
	assert_null(tok);
	assert_string_equal(err, want_err);
}

static void
test_parse_ok(void **state)
{
	(void)state;
	assert_parses("{\"access_token\":\"abc.def\",\"token_type\":\"Bearer\",\"expires_in\":3600}",
	    "abc.def", 3600);
	assert_parses("{\"access_token\":\"t\",\"token_type\":\"bEaReR\",\"expires_in\":\"120\"}",
	    "t", 120);
	assert_parses("{\"access_token\":\"t\"}", "t", -1);
	assert_parses("{\"access_token\":\"t\",\"expires_in\":null}", "t", -1);
	assert_parses("{\"access_token\":\"t\",\"expires_in\":12.7,\"scope\":\"a b\"}", "t", 12);
	assert_parses("{\"access_token\":\"t\",\"expires_in\":0}", "t", 0);
	/* an Entra-ID-sized token (8 KiB) and the longest accepted one */
	for (size_t n = 8192; n <= TOKEN_MAX_BYTES; n += TOKEN_MAX_BYTES - 8192) {
		char *body = malloc(n + 64), *tok = malloc(n + 1);
		memset(tok, 'a', n);
		tok[n] = '\0';
		snprintf(body, n + 64, "{\"access_token\":\"%s\",\"expires_in\":60}", tok);
		assert_parses(body, tok, 60);
		free(body);
		free(tok);
	}
}

static void
test_parse_refused(void **state)
{
	(void)state;
	assert_refused("{\"token_type\":\"Bearer\",\"expires_in\":3600}",
	    "token response has no access_token");
	assert_refused("{\"access_token\":\"\"}", "token response has no access_token");
	assert_refused("{\"access_token\":42}", "token response has no access_token");
	assert_refused("{\"access_token\":\"a b\"}",
	    "access_token holds characters a header cannot carry");
	assert_refused("{\"access_token\":\"a\\r\\nX-Evil: 1\"}",
	    "access_token holds characters a header cannot carry");
	assert_refused("{\"access_token\":\"t\",\"token_type\":\"mac\"}", "token_type is not Bearer");
	assert_refused("{\"access_token\":\"t\",\"token_type\":1}", "token_type is not Bearer");
	assert_refused("{\"access_token\":\"t\",\"expires_in\":-1}",
	    "expires_in is not a non-negative number");
	assert_refused("{\"access_token\":\"t\",\"expires_in\":\"soon\"}",
	    "expires_in is not a non-negative number");
	assert_refused("{\"access_token\":\"t\",\"expires_in\":\"-5\"}",
	    "expires_in is not a non-negative number");
	assert_refused("{\"access_token\":\"t\",\"expires_in\":true}",
	    "expires_in is not a non-negative number");
	/* longer than any server takes in one header: refused, never cut */
	char *big = malloc(TOKEN_MAX_BYTES + 64);
	memset(big, 'a', TOKEN_MAX_BYTES + 32);
	memcpy(big, "{\"access_token\":\"", 17);
	memcpy(big + TOKEN_MAX_BYTES + 18, "\"}", 3);
	assert_refused(big, "access_token is longer than 16384 bytes");
	free(big);
	assert_refused("<html>503</html>", "token response is not a JSON object");
	assert_refused("[\"access_token\"]", "token response is not a JSON object");
	assert_refused("", "token response is not a JSON object");
	assert_refused(NULL, "token response is not a JSON object");
}

static void
test_parse_error_bodies(void **state)
{
	char err[16], *tok;
	long long exp;

	(void)state;
	assert_refused("{\"error\":\"invalid_client\",\"error_description\":\"bad secret\"}",
	    "idp error: invalid_client: bad secret");
	assert_refused("{\"error\":\"invalid_scope\"}", "idp error: invalid_scope");
	assert_refused("{\"error\":7}", "idp error: (not a string)");
	/* An error wins over a token, which never reaches the message. */
	assert_refused("{\"error\":\"server_error\",\"access_token\":\"SECRET-TOKEN\"}",
	    "idp error: server_error");
	/* Truncated to the buffer, always terminated. */
	assert_int_equal(parse("{\"error\":\"invalid_client\",\"error_description\":\"x\"}",
	    &tok, &exp, err, sizeof err), -1);
	assert_string_equal(err, "idp error: inva");
}


/* R9: refreshes that refusals cause are spaced by min_refresh_interval_ms,
 * and a token refused again right after a refresh backs off, to 60 s. */
static void
test_refused_fetch_spacing(void **state)
{
	(void)state;
	const int64_t t0 = 1000000;

	assert_int_equal(token_refused_fetch_at_ms(t0, 1000, 1), t0 + 1000);
	assert_int_equal(token_refused_fetch_at_ms(t0, 0, 1), t0);
	assert_int_equal(token_refused_fetch_at_ms(t0, 1000, 2), t0 + 1000);
	assert_int_equal(token_refused_fetch_at_ms(t0, 1000, 3), t0 + 2000);
	assert_int_equal(token_refused_fetch_at_ms(t0, 1000, 4), t0 + 4000);
	assert_int_equal(token_refused_fetch_at_ms(t0, 1000, 8), t0 + 60000);
	assert_int_equal(token_refused_fetch_at_ms(t0, 1000, 1000), t0 + 60000);
	/* with no spacing asked for, a second refusal still backs off */
	assert_int_equal(token_refused_fetch_at_ms(t0, 0, 2), t0 + TOKEN_RETRY_BASE_MS);
	assert_int_equal(token_refused_fetch_at_ms(t0, 0, 3), t0 + 2 * TOKEN_RETRY_BASE_MS);
	/* a spacing above the cap is kept as asked */
	assert_int_equal(token_refused_fetch_at_ms(t0, 90000, 1), t0 + 90000);
	/* never earlier than the ordinary spacing, always growing to the cap */
	int64_t prev = 0;
	for (int n = 1; n < 40; n++) {
		int64_t at = token_refused_fetch_at_ms(0, 250, n);
		assert_true(at >= 250 && at >= prev && at <= TOKEN_REFUSED_CAP_MS);
		prev = at;
	}
	assert_int_equal(prev, TOKEN_REFUSED_CAP_MS);
}

/* warrantd(7) §9: a Redis token is refreshed lead_ms before it dies at the latest. */
static void
test_refresh_before(void **state)
{
	(void)state;
	/* 5 s token, ratio 0.75, no jitter (rnd 0): 3750 ms; lead 3000: 2000 */
	assert_int_equal(token_refresh_before_ms(1000, 5000, 0.75, 0, 0), 1000 + 3750);
	assert_int_equal(token_refresh_before_ms(1000, 5000, 0.75, 0, 3000), 1000 + 2000);
	assert_int_equal(token_refresh_before_ms(1000, 5000, 0.75, 0, 1000), 1000 + 3750);
	/* a token living no longer than lead keeps the ratio's time */
	assert_int_equal(token_refresh_before_ms(1000, 5000, 0.75, 0, 5000), 1000 + 3750);
	assert_int_equal(token_refresh_before_ms(1000, 5000, 0.75, 0, 9000), 1000 + 3750);
	/* an hour's token, block_ms 5000 + 2000: the ratio is earlier */
	assert_int_equal(token_refresh_before_ms(0, 3600000, 0.75, 0, 7000), 2700000);
}

static void
expect_argv(const char *cmd, const char *const *want)
{
	char why[160] = "";
	char **argv = token_command_argv(cmd, why, sizeof why);
	size_t i = 0;

	if (argv == NULL)
		fail_msg("%s: %s", cmd, why);
	for (; want[i]; i++) {
		assert_non_null(argv[i]);
		assert_string_equal(argv[i], want[i]);
	}
	assert_null(argv[i]);
	token_command_argv_free(argv);
}

static void
expect_argv_error(const char *cmd, const char *why_want)
{
	char why[160] = "";

	assert_null(token_command_argv(cmd, why, sizeof why));
	assert_string_equal(why, why_want);
}

static void
test_command_argv(void **state)
{
	(void)state;
	expect_argv("/bin/tok", (const char *[]){"/bin/tok", NULL});
	expect_argv("  /bin/tok\t-a  b ", (const char *[]){"/bin/tok", "-a", "b", NULL});
	expect_argv("/bin/tok 'a b' \"c\\\"d\\\\e\" x'y z'w ''",
	    (const char *[]){"/bin/tok", "a b", "c\"d\\e", "xy zw", "", NULL});
	/* no shell: $, ;, | and globs are plain bytes */
	expect_argv("/bin/tok $HOME;rm|x *", (const char *[]){"/bin/tok", "$HOME;rm|x", "*", NULL});
	expect_argv("/bin/tok 'a\\b'", (const char *[]){"/bin/tok", "a\\b", NULL});
	expect_argv("/a b c d e f g h", (const char *[]){"/a", "b", "c", "d", "e", "f", "g", "h",
	    NULL});
	expect_argv_error("", "empty command");
	expect_argv_error("   ", "empty command");
	expect_argv_error("tok -a", "the program must be an absolute path (no PATH lookup, no shell)");
	expect_argv_error("/bin/tok 'a", "unclosed single quote");
	expect_argv_error("/bin/tok \"a\\\"", "unclosed double quote");
}

static void
expect_parse_error(const char *out, const char *why_want)
{
	char err[200] = "", *tok = (char *)"x";
	long long exp = 7;

	assert_int_equal(token_command_parse(out, strlen(out), &tok, &exp, err, sizeof err), -1);
	assert_null(tok);
	assert_string_equal(err, why_want);
	assert_null(strstr(err, "s3cr3t"));	/* never the token or the output */
}

static void
test_command_parse(void **state)
{
	(void)state;
	char err[200], *tok;
	long long exp;
	const char *ok = "{\"token\": \"abc.def\", \"expires_in\": 900}\n";

	assert_int_equal(token_command_parse(ok, strlen(ok), &tok, &exp, err, sizeof err), 0);
	assert_string_equal(tok, "abc.def");
	assert_int_equal(exp, 900);
	free(tok);
	ok = "{\"token\": \"t\", \"expires_in\": \"60\"}";
	assert_int_equal(token_command_parse(ok, strlen(ok), &tok, &exp, err, sizeof err), 0);
	assert_int_equal(exp, 60);
	free(tok);
	ok = "{\"token\": \"t\"}";
	assert_int_equal(token_command_parse(ok, strlen(ok), &tok, &exp, err, sizeof err), 0);
	assert_int_equal(exp, -1);	/* the JWT's exp must tell */
	free(tok);
	expect_parse_error("s3cr3t", "the output is not a JSON object");
	expect_parse_error("", "the output is not a JSON object");
	expect_parse_error("{\"access_token\": \"s3cr3t\"}", "the output has no \"token\" string");
	expect_parse_error("{\"token\": 5}", "the output has no \"token\" string");
	expect_parse_error("{\"token\": \"s3cr3t x\"}",
	    "the token holds characters other than visible ASCII");
	expect_parse_error("{\"token\": \"s3cr3t\", \"expires_in\": -1}",
	    "expires_in is not a non-negative number");
	char *big = malloc(TOKEN_MAX_BYTES + 64);
	assert_non_null(big);
	strcpy(big, "{\"token\": \"");
	memset(big + 11, 'a', TOKEN_MAX_BYTES + 1);
	strcpy(big + 11 + TOKEN_MAX_BYTES + 1, "\"}");
	expect_parse_error(big, "the token is longer than " TOKEN_MAX_STR " bytes");
	free(big);
}

/* §9 (issue 26): one meaning per IdP answer, for every token mode. */
static void
test_idp_classify(void **state)
{
	static const struct {
		long status;
		const char *detail;
		enum token_idp_error want;
		const char *code;
	} cases[] = {
		{0, "timeout", TOKEN_IDP_TRANSIENT, ""},
		{503, "http 503", TOKEN_IDP_TRANSIENT, ""},
		{429, "http 429", TOKEN_IDP_TRANSIENT, ""},
		{200, "token response has no access_token", TOKEN_IDP_TRANSIENT, ""},
		{400, "idp error: temporarily_unavailable", TOKEN_IDP_TRANSIENT,
		    "temporarily_unavailable"},
		{401, "idp error: invalid_client: bad secret", TOKEN_IDP_REFRESH, "invalid_client"},
		{400, "idp error: invalid_client", TOKEN_IDP_REFRESH, "invalid_client"},
		{401, "http 401", TOKEN_IDP_REFRESH, ""},
		{400, "idp error: invalid_grant: revoked", TOKEN_IDP_REFUSED, "invalid_grant"},
		{400, "idp error: unauthorized_client", TOKEN_IDP_REFUSED, "unauthorized_client"},
		{403, "idp error: access_denied", TOKEN_IDP_REFUSED, "access_denied"},
		{400, "idp error: invalid_request: actor_token", TOKEN_IDP_REFUSED,
		    "invalid_request"},
		{400, "http 400", TOKEN_IDP_REFUSED, ""},
		{400, "idp error: invalid_scope", TOKEN_IDP_FATAL, "invalid_scope"},
		{400, "idp error: invalid_target: no such", TOKEN_IDP_FATAL, "invalid_target"},
		{400, "idp error: invalid_authorization_details", TOKEN_IDP_FATAL,
		    "invalid_authorization_details"},
		{400, "idp error: unsupported_grant_type", TOKEN_IDP_FATAL,
		    "unsupported_grant_type"},
		/* a code is a whole word of [a-z_]; anything else is no code */
		{400, "idp error: invalid_grant2", TOKEN_IDP_REFUSED, ""},
		{400, "idp error: Invalid_Scope", TOKEN_IDP_REFUSED, ""},
		{400, "idp error: (not a string)", TOKEN_IDP_REFUSED, ""},
	};
	char code[64];

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		enum token_idp_error e = token_idp_classify(cases[i].status, cases[i].detail, code,
		    sizeof code);
		if (e != cases[i].want || strcmp(code, cases[i].code) != 0)
			fail_msg("case %zu (%ld %s): %s \"%s\"", i, cases[i].status,
			    cases[i].detail, token_idp_error_name(e), code);
	}
	/* a short buffer cuts the code to nothing rather than to another code */
	char small[8];
	(void)token_idp_classify(400, "idp error: invalid_scope", small, sizeof small);
	assert_string_equal(small, "");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lifetime_min_of_both),
		cmocka_unit_test(test_lifetime_jwt_forms),
		cmocka_unit_test(test_lifetime_skew),
		cmocka_unit_test(test_refresh_at_bounds),
		cmocka_unit_test(test_refresh_before),
		cmocka_unit_test(test_command_argv),
		cmocka_unit_test(test_command_parse),
		cmocka_unit_test(test_usable_boundary),
		cmocka_unit_test(test_redis_blocks_reading),
		cmocka_unit_test(test_redis_refusal_blames),
		cmocka_unit_test(test_refused_fetch_spacing),
		cmocka_unit_test(test_form_encode),
		cmocka_unit_test(test_basic_userpwd),
		cmocka_unit_test(test_parse_ok),
		cmocka_unit_test(test_parse_refused),
		cmocka_unit_test(test_parse_error_bodies),
		cmocka_unit_test(test_idp_classify),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
