/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_keys: a key rotation end to end (warrantd(7) §3.2, R16; issue 23
 * item 4) -- the real warrantd and warrantctl against a real redis-server
 * and fake_target, with [records] verify_key_file a JWKS that the test
 * rewrites and reloads with SIGHUP.
 *
 * The steps README.md gives an operator: the new key is published beside
 * the old one and the workers reload; the decider signs with the new kid
 * while records signed with the old one are still in flight, and both are
 * done; the old key is removed and the workers reload, and a record that
 * still names the old kid is dead with bad-signature. Also: `warrantd -t`
 * names a JWK that does not fit the algorithm with file:line, and a reload
 * to such a file keeps the running set; with two keys [records] issuer is
 * required (issue 37 item 7). And records bound to a deployment: with
 * [records] audience, a record signed with the trusted key for another
 * audience is dead with wrong-audience and never called.
 */
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "jose/b64url.h"
#include "harness.h"
#include "core/record.h"

#define PREFIX		"rot"
#define OLD_KID		"decider-2026-06"
#define NEW_KID		"decider-2026-12"

static struct h_stack *const S = &h_group;	/* redis, fake_target, client */
static struct h_daemon D;

static int
test_teardown(void **state)
{
	(void)state;
	if (D.pid > 0) {
		fprintf(stderr, "itest_keys: killing leftover warrantd; log %s\n", D.log);
		h_daemon_kill(&D);
	}
	return 0;
}

/* ---- keys ---- */

/* Coordinate `name` of the EC public key in tests/data/`pub`, base64url. */
static char *
coordinate(EVP_PKEY *pk, const char *name)
{
	BIGNUM *bn = NULL;
	unsigned char buf[32];
	char *s;

	assert_int_equal(EVP_PKEY_get_bn_param(pk, name, &bn), 1);
	assert_int_equal(BN_bn2binpad(bn, buf, sizeof buf), (int)sizeof buf);
	BN_free(bn);
	s = b64url_encode(buf, sizeof buf);
	assert_non_null(s);
	return s;
}

/* The JWK (RFC 7517, 7518 §6.2) of tests/data/`pub`, an ES256 public key,
 * with `kid`; `extra` (NULL: none) is merged into it. Caller decrefs. */
static json_t *
jwk(const char *pub, const char *kid, const char *extra)
{
	char *pem = h_read_file(h_data(pub));
	BIO *bio;
	EVP_PKEY *pk;

	assert_non_null(pem);
	bio = BIO_new_mem_buf(pem, (int)strlen(pem));
	pk = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
	assert_non_null(pk);
	char *x = coordinate(pk, OSSL_PKEY_PARAM_EC_PUB_X);
	char *y = coordinate(pk, OSSL_PKEY_PARAM_EC_PUB_Y);
	json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "kty", "EC", "crv", "P-256",
	    "x", x, "y", y, "kid", kid, "use", "sig", "alg", "ES256");
	assert_non_null(j);
	if (extra != NULL) {
		json_t *e = json_loads(extra, 0, NULL);
		assert_non_null(e);
		assert_int_equal(json_object_update(j, e), 0);
		json_decref(e);
	}
	free(x);
	free(y);
	EVP_PKEY_free(pk);
	BIO_free(bio);
	free(pem);
	return j;
}

/* Writes {"keys": [jwks...]} (consumed; NULL ends them) to h_tmpdir()/name,
 * mode 0600 as a file that decides trust must be; its path (interned). */
static const char *
write_jwks(const char *name, json_t *first, ...)
{
	json_t *keys = json_array(), *k;
	va_list ap;

	va_start(ap, first);
	for (k = first; k != NULL; k = va_arg(ap, json_t *))
		assert_int_equal(json_array_append_new(keys, k), 0);
	va_end(ap);
	json_t *doc = json_pack("{s:o}", "keys", keys);
	char *text = json_dumps(doc, JSON_INDENT(2));
	assert_non_null(text);
	char *path = h_write_file(name, text);
	assert_non_null(path);
	const char *p = h_data(path);	/* interned: an absolute name is itself */
	free(path);
	free(text);
	json_decref(doc);
	return p;
}

/* ---- records ---- */

/* A record for `id`, decided a second ago, due in a minute, signed with
 * tests/data/`key` under `kid` (NULL: no kid) by record_sign. */
static char *
signed_record_aud(const char *id, const char *key, const char *kid, const char *aud)
{
	long long now = h_now_ms();
	char *json = h_record_json(id, "gate.open", "canal/gate-14", now - 1000, now + 60000, 0,
	    NULL);
	char *pem = h_read_file(h_data(key));
	json_t *content = json != NULL ? json_loads(json, 0, NULL) : NULL;
	char *tok;

	assert_non_null(content);
	assert_non_null(pem);
	if (aud != NULL)
		assert_int_equal(json_object_set_new(content, "aud", json_string(aud)), 0);
	tok = record_sign(JWA_ES256, (unsigned char *)pem, strlen(pem), kid, content);
	assert_non_null(tok);
	json_decref(content);
	free(pem);
	free(json);
	return tok;
}

static char *
signed_record(const char *id, const char *key, const char *kid)
{
	return signed_record_aud(id, key, kid, NULL);
}

static void
enqueue_signed(const char *id, const char *key, const char *kid)
{
	char *tok = signed_record(id, key, kid);

	assert_int_equal(h_store_record(S->c, PREFIX, id, tok, 1), 0);
	free(tok);
}

/* warrantctl -c ini decide ... --id id --key tests/data/key --kid kid: its
 * exit code and output (caller frees). */
static int
ctl_decide(const char *ini, const char *id, const char *key, const char *kid, char **out)
{
	char *argv[] = {(char *)h_bin("warrantctl"), "-c", (char *)ini, "decide",
	    "--on-behalf-of", "operator:4417", "--action", "gate.open", "--resource",
	    "canal/gate-14", "--basis", "role:gatekeeper", "--expires", "+10m", "--id",
	    (char *)id, "--key", (char *)h_data(key), "--kid", (char *)kid, NULL};

	return h_run(argv, 30000, out);
}

/* The kid in the protected header of P:decision:<id>'s record. */
static char *
stored_kid(const char *id)
{
	char *rec = h_record_field(S->c, PREFIX, id, "record"), *dot;
	unsigned char *hdr = NULL;
	size_t len = 0;

	assert_non_null(rec);
	dot = strchr(rec, '.');
	assert_non_null(dot);
	assert_int_equal(b64url_decode(rec, (size_t)(dot - rec), &hdr, &len), 0);
	json_t *h = json_loadb((char *)hdr, len, 0, NULL);
	const char *kid = json_string_value(json_object_get(h, "kid"));
	char *out = kid != NULL ? strdup(kid) : NULL;
	json_decref(h);
	free(hdr);
	free(rec);
	return out;
}

static void
wait_outcome(const char *id, const char *state, const char *outcome)
{
	h_wait_hash_field(S->c, h_key(PREFIX, "decision:%s", id), "state", state, H_WAIT_MS);
	if (outcome != NULL)
		h_assert_record_field(S->c, PREFIX, id, "outcome", outcome);
}

/* The daemon's log has `needle` on `n` or more lines. */
struct log_count {
	const char *needle;
	int n;
};

static int
log_has_n(void *arg)
{
	const struct log_count *w = arg;
	char *text = h_read_file(D.log);
	int n = 0;

	for (const char *p = text; p != NULL && (p = strstr(p, w->needle)) != NULL; p++)
		n++;
	free(text);
	return n >= w->n;
}

/* SIGHUP, and the `nth` reload (counting from 1) logged as done. */
static void
reload(int nth)
{
	struct log_count w = {"event=config.reloaded", nth};

	assert_int_equal(kill(D.pid, SIGHUP), 0);
	h_wait_for(log_has_n, &w, H_WAIT_MS, "config.reloaded");
}

/* ---- the rotation ---- */

static void
test_rotation(void **state)
{
	(void)state;
	/* Before: the workers hold the old key only, as a JWKS of one. */
	const char *set = write_jwks("verify.jwks", jwk("test-es256.pub", OLD_KID, NULL), NULL);
	struct h_daemon_opts o = {
		.redis_sock = S->redis.sock, .target_url = S->target.url, .prefix = PREFIX,
		.verify_key = set, .records_extra = "issuer = decider-test\n",
	};
	h_daemon_up(&D, &o);
	assert_true(h_daemon_log_has(&D, "event=records.keys count=1 kids=" OLD_KID));
	enqueue_signed("before-1", "test-es256.key", OLD_KID);
	enqueue_signed("before-nokid", "test-es256.key", NULL);	/* one key: no kid needed */
	wait_outcome("before-1", "done", NULL);
	wait_outcome("before-nokid", "done", NULL);
	/* A decider already on the new key is refused by the workers. */
	enqueue_signed("early-new", "test-es256-other.key", NEW_KID);
	wait_outcome("early-new", "dead", "bad-signature");

	/* 1. The new key is published beside the old; the workers reload. */
	write_jwks("verify.jwks", jwk("test-es256.pub", OLD_KID, NULL),
	    jwk("test-es256-other.pub", NEW_KID, NULL), NULL);
	reload(1);
	assert_true(h_daemon_log_has(&D, "event=records.keys count=2 kids=" OLD_KID ","
	    NEW_KID));
	/* A record signed with the old key before the switch, still in flight. */
	char *in_flight = signed_record("flight-old", "test-es256.key", OLD_KID);

	/* 2. The decider switches to the new kid (warrantctl decide --kid);
	 * records of both keys are done while the set holds both. */
	char *out = NULL;
	int rc = ctl_decide(D.ini, "both-new", "test-es256-other.key", NEW_KID, &out);
	if (rc != 0)
		fail_msg("warrantctl decide --kid " NEW_KID " exited %d: %s", rc, out);
	free(out);
	rc = ctl_decide(D.ini, "both-old", "test-es256.key", OLD_KID, &out);
	if (rc != 0)
		fail_msg("warrantctl decide --kid " OLD_KID " exited %d: %s", rc, out);
	free(out);
	char *kid = stored_kid("both-new");
	assert_non_null(kid);
	assert_string_equal(kid, NEW_KID);
	free(kid);
	kid = stored_kid("both-old");
	assert_string_equal(kid, OLD_KID);
	free(kid);
	wait_outcome("both-new", "done", NULL);
	wait_outcome("both-old", "done", NULL);
	/* With two keys a record must name one, and name it right. */
	enqueue_signed("both-nokid", "test-es256.key", NULL);
	enqueue_signed("both-wrongkid", "test-es256.key", NEW_KID);
	enqueue_signed("both-unknown", "test-es256.key", "decider-2025-12");
	wait_outcome("both-nokid", "dead", "bad-signature");
	wait_outcome("both-wrongkid", "dead", "bad-signature");
	wait_outcome("both-unknown", "dead", "bad-signature");

	/* A reload to a set with a key that does not fit ES256 fails and the
	 * running set is kept. */
	write_jwks("verify.jwks", jwk("test-es256.pub", OLD_KID, "{\"use\": \"enc\"}"),
	    jwk("test-es256-other.pub", NEW_KID, NULL), NULL);
	struct log_count failed = {"event=config.reload_failed", 1};
	assert_int_equal(kill(D.pid, SIGHUP), 0);
	h_wait_for(log_has_n, &failed, H_WAIT_MS, "config.reload_failed");
	assert_true(h_daemon_log_has(&D, "use is not"));
	enqueue_signed("kept-old", "test-es256.key", OLD_KID);
	wait_outcome("kept-old", "done", NULL);

	/* 3. After max_window_s the old key is removed; the workers reload. */
	write_jwks("verify.jwks", jwk("test-es256-other.pub", NEW_KID, NULL), NULL);
	reload(2);
	assert_true(h_daemon_log_has(&D, "event=records.keys count=1 kids=" NEW_KID));
	/* What still names the old key is dead, never executed. */
	assert_int_equal(h_store_record(S->c, PREFIX, "flight-old", in_flight, 1), 0);
	free(in_flight);
	enqueue_signed("after-new", "test-es256-other.key", NEW_KID);
	enqueue_signed("after-nokid", "test-es256-other.key", NULL);
	wait_outcome("flight-old", "dead", "bad-signature");
	wait_outcome("after-new", "done", NULL);
	wait_outcome("after-nokid", "done", NULL);
	assert_int_equal(h_count_calls(&S->target, "flight-old"), 0);
	assert_int_equal(h_count_calls(&S->target, "both-nokid"), 0);
	assert_int_equal(h_count_calls(&S->target, "both-old"), 1);
	/* warrantctl checks a new record against the set as the workers will. */
	rc = ctl_decide(D.ini, "late-old", "test-es256.key", OLD_KID, &out);
	assert_int_not_equal(rc, 0);
	if (strstr(out, "the kid names no key") == NULL)
		fail_msg("warrantctl decide --kid " OLD_KID ": %s", out);
	free(out);
	h_daemon_down(&D);
}

/* warrantd -t: a JWK that does not fit [records] algorithm is a
 * configuration error at the verify_key_file line (warrantd(7) §10). */
static void
test_check_names_the_jwk(void **state)
{
	(void)state;
	const struct {
		const char *extra, *err;
	} bad[] = {
		{"{\"kty\": \"RSA\"}", "kty is not \"EC\""},
		{"{\"crv\": \"P-384\"}", "crv is not"},
		{"{\"use\": \"enc\"}", "use is not"},
		{"{\"alg\": \"RS256\"}", "alg is not ES256"},
	};

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const char *set = write_jwks("check.jwks", jwk("test-es256.pub", OLD_KID, NULL),
		    jwk("test-es256-other.pub", NEW_KID, bad[i].extra), NULL);
		struct h_daemon_opts o = {
			.redis_sock = S->redis.sock, .target_url = S->target.url,
			.prefix = PREFIX, .verify_key = set,
		};
		char *ini_text = h_daemon_ini(&o), *ini = h_write_file("check.ini", ini_text);
		char *argv[] = {(char *)h_bin("warrantd"), "-t", "-c", ini, NULL};
		char *out = NULL, where[512];
		int rc = h_run(argv, 30000, &out);

		assert_int_equal(rc, 78);
		snprintf(where, sizeof where, "%s:", ini);
		if (strstr(out, where) == NULL || strstr(out, "keys[1] (kid \"" NEW_KID "\")") ==
		    NULL || strstr(out, bad[i].err) == NULL)
			fail_msg("warrantd -t with %s: %s", bad[i].extra, out);
		free(out);
		free(ini);
		free(ini_text);
	}
}

/* warrantd -t with two keys and no [records] issuer: refused at the
 * verify_key_file line; with an issuer, accepted. */
static void
test_check_wants_issuer_with_two_keys(void **state)
{
	(void)state;
	const char *set = write_jwks("two.jwks", jwk("test-es256.pub", OLD_KID, NULL),
	    jwk("test-es256-other.pub", NEW_KID, NULL), NULL);

	for (int with_issuer = 0; with_issuer < 2; with_issuer++) {
		struct h_daemon_opts o = {
			.redis_sock = S->redis.sock, .target_url = S->target.url,
			.prefix = PREFIX, .verify_key = set,
			.records_extra = with_issuer ? "issuer = decider-test\n" : NULL,
		};
		char *ini_text = h_daemon_ini(&o), *ini = h_write_file("two.ini", ini_text);
		char *argv[] = {(char *)h_bin("warrantd"), "-t", "-c", ini, NULL};
		char *out = NULL, where[512];
		int rc = h_run(argv, 30000, &out);

		snprintf(where, sizeof where, "%s:", ini);
		if (with_issuer && (rc != 0 || strstr(out, "configuration OK") == NULL))
			fail_msg("warrantd -t with two keys and an issuer: %d %s", rc, out);
		if (!with_issuer && (rc != 78 || strstr(out, where) == NULL ||
		    strstr(out, "[records] issuer is required") == NULL))
			fail_msg("warrantd -t with two keys and no issuer: %d %s", rc, out);
		free(out);
		free(ini);
		free(ini_text);
	}
}

/* [records] audience: a record signed with the trusted key but for another
 * deployment is dead with wrong-audience and never called; one for this
 * deployment (alone or in an array) is done; -t warns without an audience. */
static void
test_audience(void **state)
{
	(void)state;
	struct h_daemon_opts o = {
		.redis_sock = S->redis.sock, .target_url = S->target.url, .prefix = PREFIX,
		.verify_key = h_data("test-es256.pub"), .records_extra = "audience = canal-prod\n",
	};
	h_daemon_up(&D, &o);
	const struct {
		const char *id, *aud;
	} cases[] = {{"aud-other", "canal-test"}, {"aud-none", NULL}, {"aud-ours", "canal-prod"}};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *tok = signed_record_aud(cases[i].id, "test-es256.key", NULL, cases[i].aud);
		assert_int_equal(h_store_record(S->c, PREFIX, cases[i].id, tok, 1), 0);
		free(tok);
	}
	char *in_array = NULL;
	{
		long long now = h_now_ms();
		char *json = h_record_json("aud-array", "gate.open", "canal/gate-14", now - 1000,
		    now + 60000, 0, NULL);
		json_t *c = json_loads(json, 0, NULL);
		char *pem = h_read_file(h_data("test-es256.key"));
		assert_non_null(c);
		assert_int_equal(json_object_set_new(c, "aud", json_pack("[s,s]", "canal-test",
		    "canal-prod")), 0);
		in_array = record_sign(JWA_ES256, (unsigned char *)pem, strlen(pem), NULL, c);
		assert_non_null(in_array);
		json_decref(c);
		free(pem);
		free(json);
	}
	assert_int_equal(h_store_record(S->c, PREFIX, "aud-array", in_array, 1), 0);
	free(in_array);
	wait_outcome("aud-other", "dead", "wrong-audience");
	wait_outcome("aud-none", "dead", "wrong-audience");
	wait_outcome("aud-ours", "done", NULL);
	wait_outcome("aud-array", "done", NULL);
	assert_int_equal(h_count_calls(&S->target, "aud-other"), 0);
	assert_int_equal(h_count_calls(&S->target, "aud-none"), 0);
	assert_int_equal(h_count_calls(&S->target, "aud-ours"), 1);
	h_daemon_down(&D);

	/* Without [records] audience: -t warns. */
	o.records_extra = NULL;
	char *ini_text = h_daemon_ini(&o), *ini = h_write_file("noaud.ini", ini_text);
	char *argv[] = {(char *)h_bin("warrantd"), "-t", "-c", ini, NULL};
	char *out = NULL;
	int rc = h_run(argv, 30000, &out);
	if (rc != 0 || strstr(out, "warning: [records] audience is unset") == NULL)
		fail_msg("warrantd -t without an audience: %d %s", rc, out);
	free(out);
	free(ini);
	free(ini_text);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_check_names_the_jwk, test_teardown),
		cmocka_unit_test_teardown(test_rotation, test_teardown),
		cmocka_unit_test_teardown(test_check_wants_issuer_with_two_keys, test_teardown),
		cmocka_unit_test_teardown(test_audience, test_teardown),
	};

	return cmocka_run_group_tests(tests, h_group_setup, h_group_teardown);
}
