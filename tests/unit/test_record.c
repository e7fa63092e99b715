/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for src/core/record.c: warrantd(7) §3.1 (content), §3.2 (integrity), R3 codes.
 * Run from the repository root: the test keys are read from tests/data/. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jwt.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "core/record.h"
#include "testlib.h"

#define NOW_MS		1796011200000LL	/* 2026-11-30T04:00:00Z */
#define DECIDED_MS	1796011140000LL	/* 2026-11-30T03:59:00Z */
#define WINDOW_MS	(604800LL * 1000)
#define SKEW_MS		(60LL * 1000)
#define OWNER		"ops@example.test"

struct blob {
	unsigned char *data;
	size_t len;
};

static struct blob es_key, es_pub, es_other_key, es_other_pub, rs_key, rs_pub, hs_secret;

/* ---- helpers ---- */

static struct blob
read_blob(const char *path)
{
	struct blob b = {NULL, 0};

	if ((b.data = read_whole(path, &b.len)) == NULL)
		fprintf(stderr, "cannot open %s (run from the repository root)\n", path);
	return b;
}

static int
setup_keys(void **state)
{
	(void)state;
	es_key = read_blob("tests/data/test-es256.key");
	es_pub = read_blob("tests/data/test-es256.pub");
	es_other_key = read_blob("tests/data/test-es256-other.key");
	es_other_pub = read_blob("tests/data/test-es256-other.pub");
	rs_key = read_blob("tests/data/test-rs256.key");
	rs_pub = read_blob("tests/data/test-rs256.pub");
	hs_secret = read_blob("tests/data/test-hs256.secret");
	return es_key.len && es_pub.len && es_other_key.len && es_other_pub.len && rs_key.len &&
	    rs_pub.len && hs_secret.len >= 32 ? 0 : -1;
}

static int
teardown_keys(void **state)
{
	(void)state;
	free(es_key.data);
	free(es_pub.data);
	free(es_other_key.data);
	free(es_other_pub.data);
	free(rs_key.data);
	free(rs_pub.data);
	free(hs_secret.data);
	return 0;
}

static char *
b64url(const unsigned char *in, size_t n)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	char *out = malloc(n / 3 * 4 + 4);
	size_t len = 0;
	unsigned acc = 0;
	int bits = 0;

	assert_non_null(out);
	for (size_t i = 0; i < n; i++) {
		acc = (acc << 8) | in[i];
		for (bits += 8; bits >= 6; bits -= 6)
			out[len++] = a[(acc >> (bits - 6)) & 63];
	}
	if (bits > 0)
		out[len++] = a[(acc << (6 - bits)) & 63];
	out[len] = '\0';
	return out;
}

/* Decodes n characters of base64url; returns a NUL-terminated malloc'd buffer. */
static unsigned char *
unb64url(const char *s, size_t n, size_t *out_len)
{
	unsigned char *out = malloc(n + 1);
	unsigned acc = 0;
	int bits = 0;
	size_t len = 0;

	assert_non_null(out);
	for (size_t i = 0; i < n; i++) {
		const char *a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
		const char *p = strchr(a, s[i]);
		assert_non_null(p);
		acc = (acc << 6) | (unsigned)(p - a);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[len++] = (unsigned char)(acc >> bits);
		}
	}
	out[len] = '\0';
	*out_len = len;
	return out;
}

static char *
concat3(const char *a, const char *b, const char *c)
{
	size_t n = strlen(a) + strlen(b) + strlen(c) + 3;
	char *s = malloc(n);

	assert_non_null(s);
	snprintf(s, n, "%s.%s.%s", a, b, c);
	return s;
}

/* A JWS made by hand with any header: HMAC-SHA256 with `key`, or an empty
 * signature when key is NULL. Lets a test reach one header rule with a
 * signature that is otherwise right. */
static char *
hand_token(const char *header, const char *payload, const unsigned char *key, size_t key_len)
{
	char *h = b64url((const unsigned char *)header, strlen(header));
	char *p = b64url((const unsigned char *)payload, strlen(payload));
	char *input = concat3(h, p, ""), *sig, *tok;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned md_len = 0;

	input[strlen(input) - 1] = '\0';
	if (key != NULL) {
		assert_non_null(HMAC(EVP_sha256(), key, (int)key_len, (unsigned char *)input,
		    strlen(input), md, &md_len));
		sig = b64url(md, md_len);
	} else {
		sig = b64url(md, 0);
	}
	tok = concat3(h, p, sig);
	free(h);
	free(p);
	free(input);
	free(sig);
	return tok;
}

/* The three segments of a token as offsets. */
static void
segments(const char *tok, size_t *dot1, size_t *dot2)
{
	const char *a = strchr(tok, '.'), *b;

	assert_non_null(a);
	b = strchr(a + 1, '.');
	assert_non_null(b);
	*dot1 = (size_t)(a - tok);
	*dot2 = (size_t)(b - tok);
}

static json_t *
header_of(const char *tok)
{
	size_t d1, d2, len;
	unsigned char *h;
	json_t *j;

	segments(tok, &d1, &d2);
	h = unb64url(tok, d1, &len);
	j = json_loadb((char *)h, len, 0, NULL);
	free(h);
	assert_non_null(j);
	return j;
}

static size_t
sig_len_of(const char *tok)
{
	size_t d1, d2, len;
	unsigned char *s;

	segments(tok, &d1, &d2);
	s = unb64url(tok + d2 + 1, strlen(tok + d2 + 1), &len);
	free(s);
	return len;
}

static int
known_action(void *ctx, const char *action)
{
	(void)ctx;
	return strcmp(action, "gate.open") == 0 || strcmp(action, "door.unlock") == 0;
}

static struct record_policy
policy(int signed_, enum jwa_alg alg, struct blob key)
{
	struct record_policy p = {
		.signature_required = signed_,
		.algorithm = alg,
		.key = key.data,
		.key_len = key.len,
		.issuer = NULL,
		.max_window_ms = WINDOW_MS,
		.clock_skew_ms = SKEW_MS,
		.action_known = known_action,
		.action_ctx = NULL,
	};
	return p;
}

static struct record_policy
plain_policy(void)
{
	struct blob none = {NULL, 0};
	return policy(0, JWA_ES256, none);
}

/* A record that passes every rule; each test breaks one thing. */
static json_t *
good_content(void)
{
	json_t *c = json_pack("{s:s, s:s, s:s, s:s, s:{s:i, s:s}, s:s, s:s, s:s, s:s, s:s}",
	    "recordId", "gate-14",
	    "onBehalfOf", "operator:4417",
	    "action", "gate.open",
	    "resource", "sites/berlin/gates/3",
	    "parameters", "hold_s", 30, "note", "night shift",
	    "basis", "role:site-operator",
	    "decidedAt", "2026-11-30T03:59:00Z",
	    "expiresAt", "2026-11-30T12:00:00Z",
	    "notifyOnDenial", OWNER,
	    "iss", "decider-1");
	assert_non_null(c);
	return c;
}

static void
set_str(json_t *c, const char *field, const char *value)
{
	assert_int_equal(json_object_set_new(c, field, json_string(value)), 0);
}

static void
set_int(json_t *c, const char *field, long long value)
{
	assert_int_equal(json_object_set_new(c, field, json_integer(value)), 0);
}

/* Loads `raw` and frees whatever came back; returns the status, with the
 * detail in `detail` and whether an owner was handed back in *owner. */
static enum record_status
load_raw(const struct record_policy *pol, const char *raw, char *detail, size_t n, char **owner)
{
	struct record *rec = (struct record *)0x1;
	char *own = (char *)0x1;
	enum record_status st = record_load(pol, "gate-14", raw, NOW_MS, &rec, &own, detail, n);

	if (st == RECORD_OK) {
		assert_non_null(rec);
		assert_string_equal(detail, "");
	} else {
		assert_null(rec);
		assert_true(detail[0] != '\0');
	}
	record_free(rec);
	if (owner != NULL)
		*owner = own;
	else
		free(own);
	return st;
}

/* Takes `content` (consumed) in plain mode. */
static enum record_status
load_plain(json_t *content, char *detail, size_t n)
{
	struct record_policy pol = plain_policy();
	char *raw = json_dumps(content, JSON_COMPACT);
	enum record_status st;

	json_decref(content);
	assert_non_null(raw);
	st = load_raw(&pol, raw, detail, n, NULL);
	free(raw);
	return st;
}

static void
expect_plain(json_t *content, enum record_status want, const char *detail_has)
{
	char detail[256];
	enum record_status st = load_plain(content, detail, sizeof detail);

	if (st != want)
		fail_msg("status %s, want %s (detail: %s)", record_status_code(st),
		    record_status_code(want), detail);
	if (detail_has != NULL && strstr(detail, detail_has) == NULL)
		fail_msg("detail \"%s\" lacks \"%s\"", detail, detail_has);
}

static char *
sign_es(const json_t *content)
{
	char *tok = record_sign(JWA_ES256, es_key.data, es_key.len, NULL, content);
	assert_non_null(tok);
	return tok;
}

/* ---- reason codes and ids ---- */

static void
test_status_codes(void **state)
{
	(void)state;
	assert_string_equal(record_status_code(RECORD_OK), "");
	assert_string_equal(record_status_code(RECORD_BAD_SIGNATURE), "bad-signature");
	assert_string_equal(record_status_code(RECORD_INVALID), "record-invalid");
	assert_string_equal(record_status_code(RECORD_UNKNOWN_ACTION), "unknown-action");
}

static void
test_id_syntax(void **state)
{
	char id[RECORD_ID_MAX + 2];

	(void)state;
	memset(id, 'a', sizeof id);
	id[RECORD_ID_MAX] = '\0';
	assert_true(record_id_valid(id));		/* 64 */
	id[RECORD_ID_MAX] = 'a';
	id[RECORD_ID_MAX + 1] = '\0';
	assert_false(record_id_valid(id));		/* 65 */
	assert_true(record_id_valid("a"));
	assert_true(record_id_valid("Gate_14.v2-x"));
	assert_false(record_id_valid(""));
	assert_false(record_id_valid(NULL));
	assert_false(record_id_valid("gate 14"));
	assert_false(record_id_valid("gate/14"));
	assert_false(record_id_valid("gate:14"));
	assert_false(record_id_valid("gate\xc3\xa9" "14"));
}

/* ---- verification (§3.2) ---- */

static void
check_good_record(const struct record *rec, const json_t *content)
{
	assert_string_equal(rec->id, "gate-14");
	assert_string_equal(rec->on_behalf_of, "operator:4417");
	assert_string_equal(rec->action, "gate.open");
	assert_string_equal(rec->resource, "sites/berlin/gates/3");
	assert_string_equal(rec->basis, "role:site-operator");
	assert_string_equal(rec->notify_on_denial, OWNER);
	assert_string_equal(rec->iss, "decider-1");
	assert_int_equal(rec->decided_at_ms, DECIDED_MS);
	assert_int_equal(rec->expires_at_ms, NOW_MS + 8 * 3600 * 1000LL);
	assert_int_equal(rec->not_before_ms, 0);
	json_t *got = record_content(rec);
	json_t *params = json_object_get(got, "parameters");
	assert_true(json_is_object(params));
	assert_int_equal(json_integer_value(json_object_get(params, "hold_s")), 30);
	assert_true(json_equal(got, content));
	json_decref(got);
}

static void
load_signed_ok(enum jwa_alg alg, struct blob priv, struct blob verify)
{
	json_t *content = good_content();
	char *tok = record_sign(alg, priv.data, priv.len, NULL, content);
	struct record_policy pol = policy(1, alg, verify);
	struct record *rec = NULL;
	char *owner = (char *)0x1, detail[256];
	enum record_status st;

	assert_non_null(tok);
	st = record_load(&pol, "gate-14", tok, NOW_MS, &rec, &owner, detail, sizeof detail);
	if (st != RECORD_OK)
		fail_msg("%s: %s", jwa_name(alg), detail);
	assert_null(owner);
	check_good_record(rec, content);
	record_free(rec);
	free(tok);
	json_decref(content);
}

static void
test_es256_valid(void **state)
{
	(void)state;
	load_signed_ok(JWA_ES256, es_key, es_pub);
}

static void
test_rs256_valid(void **state)
{
	(void)state;
	load_signed_ok(JWA_RS256, rs_key, rs_pub);
}

static void
test_hs256_valid(void **state)
{
	(void)state;
	load_signed_ok(JWA_HS256, hs_secret, hs_secret);
}

static void
expect_bad_sig(const struct record_policy *pol, const char *tok, const char *detail_has)
{
	char detail[256], *owner = NULL;
	enum record_status st = load_raw(pol, tok, detail, sizeof detail, &owner);

	if (st != RECORD_BAD_SIGNATURE)
		fail_msg("status %s, want bad-signature (detail: %s)", record_status_code(st),
		    detail);
	/* A forgery's notifyOnDenial is not the owner's word. */
	assert_null(owner);
	if (detail_has != NULL && strstr(detail, detail_has) == NULL)
		fail_msg("detail \"%s\" lacks \"%s\"", detail, detail_has);
}

static void
test_wrong_key(void **state)
{
	json_t *content = good_content();
	char *es = sign_es(content);
	char *hs = record_sign(JWA_HS256, (const unsigned char *)"another-secret-of-32-bytes-or-more",
	    34, NULL, content);
	struct record_policy es_other = policy(1, JWA_ES256, es_other_pub);
	struct record_policy hs_pol = policy(1, JWA_HS256, hs_secret);
	struct record_policy es_pol = policy(1, JWA_ES256, es_pub);
	char *other = record_sign(JWA_ES256, es_other_key.data, es_other_key.len, NULL,
	    content);
	size_t d1, d2;

	(void)state;
	assert_non_null(hs);
	assert_non_null(other);
	expect_bad_sig(&es_other, es, "signature: does not verify");
	expect_bad_sig(&es_pol, other, "signature: does not verify");
	expect_bad_sig(&hs_pol, hs, "signature: does not verify");
	/* The detail never carries the signature. */
	{
		char detail[256];
		segments(es, &d1, &d2);
		assert_int_equal(load_raw(&es_other, es, detail, sizeof detail, NULL),
		    RECORD_BAD_SIGNATURE);
		assert_null(strstr(detail, es + d2 + 1));
	}
	free(es);
	free(hs);
	free(other);
	json_decref(content);
}

/* A parsed key keeps its verify contexts for the next record: a context
 * that saw a forgery, or a record of another key, still verifies the next
 * good record, and never lets a bad one through. More rounds than the
 * contexts a key keeps. */
static void
check_parsed_key_reuse(enum jwa_alg alg, struct blob priv, struct blob pub)
{
	json_t *content = good_content();
	char *good = record_sign(alg, priv.data, priv.len, NULL, content);
	char *other = record_sign(JWA_ES256, es_other_key.data, es_other_key.len, NULL, content);
	char err[128], detail[256];
	struct record_key *k = record_key_new(alg, pub.data, pub.len, err, sizeof err);
	struct record_policy pol = policy(1, alg, pub);

	assert_non_null(good);
	assert_non_null(other);
	assert_non_null(k);
	pol.parsed_key = k;
	char *forged = strdup(good);
	assert_non_null(forged);
	forged[strlen(forged) - 2] ^= 0x01;	/* one bit of the signature */
	for (int round = 0; round < 10; round++) {
		assert_int_equal(load_raw(&pol, good, detail, sizeof detail, NULL), RECORD_OK);
		expect_bad_sig(&pol, forged, NULL);
		if (alg == JWA_ES256)
			expect_bad_sig(&pol, other, "signature: does not verify");
	}
	record_key_free(k);
	free(forged);
	free(good);
	free(other);
	json_decref(content);
}

static void
test_parsed_key_reuse(void **state)
{
	(void)state;
	check_parsed_key_reuse(JWA_ES256, es_key, es_pub);
	check_parsed_key_reuse(JWA_RS256, rs_key, rs_pub);
}

/* A verifier (another thread's context) follows the policy's key: it
 * switches when the key does, and holds an owner of the key it is set up
 * for, so the loop may let go of its own (ASan sees both keys freed). */
static void
test_verifier_follows_key(void **state)
{
	json_t *content = good_content();
	char *by_a = record_sign(JWA_ES256, es_key.data, es_key.len, NULL, content);
	char *by_b = record_sign(JWA_ES256, es_other_key.data, es_other_key.len, NULL, content);
	char err[128], detail[256];
	struct record_key *a = record_key_new(JWA_ES256, es_pub.data, es_pub.len, err, sizeof err);
	struct record_key *b = record_key_new(JWA_ES256, es_other_pub.data, es_other_pub.len, err,
	    sizeof err);
	struct record_verifier *v = record_verifier_new();
	struct record_policy pol = policy(1, JWA_ES256, es_pub);

	(void)state;
	assert_non_null(by_a);
	assert_non_null(by_b);
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(v);
	pol.verifier = v;
	for (int round = 0; round < 3; round++) {
		pol.parsed_key = a;
		assert_int_equal(load_raw(&pol, by_a, detail, sizeof detail, NULL), RECORD_OK);
		expect_bad_sig(&pol, by_b, "signature: does not verify");
		pol.parsed_key = b;
		assert_int_equal(load_raw(&pol, by_b, detail, sizeof detail, NULL), RECORD_OK);
		expect_bad_sig(&pol, by_a, "signature: does not verify");
	}
	record_key_free(a);	/* the verifier is at b: a goes now */
	record_key_free(b);	/* the verifier's owner keeps b... */
	record_verifier_free(v);	/* ...until here */
	record_verifier_free(NULL);
	free(by_a);
	free(by_b);
	json_decref(content);
}

static void
test_tampered_payload(void **state)
{
	json_t *content = good_content();
	char *tok = sign_es(content), *forged, *p64, *head;
	unsigned char *payload;
	struct record_policy pol = policy(1, JWA_ES256, es_pub);
	char *berlin;
	size_t d1, d2, len;

	(void)state;
	segments(tok, &d1, &d2);
	payload = unb64url(tok + d1 + 1, d2 - d1 - 1, &len);
	berlin = strstr((char *)payload, "berlin");
	assert_non_null(berlin);
	berlin[0] ^= 0x20;	/* "Berlin": still valid JSON, only the signature breaks */
	p64 = b64url(payload, len);
	head = strndup(tok, d1);
	forged = concat3(head, p64, tok + d2 + 1);
	expect_bad_sig(&pol, forged, "signature: does not verify");
	free(payload);
	free(p64);
	free(head);
	free(forged);
	free(tok);
	json_decref(content);
}

static void
test_signature_stripped_or_cut(void **state)
{
	json_t *content = good_content();
	char *tok = sign_es(content), *sig64, *cut;
	struct record_policy pol = policy(1, JWA_ES256, es_pub);
	unsigned char *sig;
	size_t d1, d2, len;

	(void)state;
	segments(tok, &d1, &d2);
	tok[d2 + 1] = '\0';			/* "header.payload." */
	expect_bad_sig(&pol, tok, "signature: missing");
	free(tok);

	/* The first 63 of the 64 signature bytes, and 64 zero bytes. */
	tok = sign_es(content);
	segments(tok, &d1, &d2);
	sig = unb64url(tok + d2 + 1, strlen(tok + d2 + 1), &len);
	assert_int_equal(len, 64);
	tok[d2] = '\0';
	sig64 = b64url(sig, 63);
	cut = concat3(tok, "", sig64);
	memmove(cut + d2, cut + d2 + 1, strlen(cut + d2));	/* "h.p..s" -> "h.p.s" */
	expect_bad_sig(&pol, cut, "signature: does not verify");
	free(sig64);
	free(cut);
	memset(sig, 0, 64);
	sig64 = b64url(sig, 64);
	cut = concat3(tok, "", sig64);
	memmove(cut + d2, cut + d2 + 1, strlen(cut + d2));
	expect_bad_sig(&pol, cut, "signature: does not verify");
	free(sig64);
	free(cut);
	free(sig);
	free(tok);

	tok = sign_es(content);
	segments(tok, &d1, &d2);
	tok[d2] = '\0';				/* "header.payload" */
	expect_bad_sig(&pol, tok, "not a JWS");
	free(tok);
	json_decref(content);
}

static void
test_alg_none(void **state)
{
	json_t *content = good_content();
	char *payload = json_dumps(content, JSON_COMPACT);
	char *none = hand_token("{\"alg\":\"none\",\"typ\":\"decision+jwt\"}", payload, NULL, 0);
	char *none_sig = hand_token("{\"alg\":\"none\",\"typ\":\"decision+jwt\"}", payload,
	    hs_secret.data, hs_secret.len);
	char *none_cap = hand_token("{\"alg\":\"NONE\",\"typ\":\"decision+jwt\"}", payload, NULL, 0);
	struct record_policy es = policy(1, JWA_ES256, es_pub);
	struct record_policy hs = policy(1, JWA_HS256, hs_secret);

	(void)state;
	expect_bad_sig(&es, none, "alg is not ES256");
	expect_bad_sig(&hs, none, "alg is not HS256");
	expect_bad_sig(&hs, none_sig, "alg is not HS256");
	expect_bad_sig(&hs, none_cap, "alg is not HS256");
	free(none);
	free(none_sig);
	free(none_cap);
	free(payload);
	json_decref(content);
}

/* The classic confusion: the attacker knows the ES256 public key and uses its
 * PEM text as an HMAC secret. */
static void
test_alg_confusion(void **state)
{
	json_t *content = good_content();
	char *payload = json_dumps(content, JSON_COMPACT);
	char *forged = hand_token("{\"alg\":\"HS256\",\"typ\":\"decision+jwt\"}", payload,
	    es_pub.data, es_pub.len);
	struct record_policy es = policy(1, JWA_ES256, es_pub);
	struct record_policy as_hmac = policy(1, JWA_HS256, es_pub);

	(void)state;
	/* The forgery is a correct HS256 MAC under the PEM: the binding of the
	 * check to the configured algorithm stops it, and so does the refusal
	 * of a PEM document as an HMAC secret. */
	expect_bad_sig(&as_hmac, forged, "not a usable HS256 key");
	expect_bad_sig(&es, forged, "alg is not ES256");
	free(forged);
	free(payload);

	/* An RS256 token where ES256 is configured, and the reverse. */
	forged = record_sign(JWA_RS256, rs_key.data, rs_key.len, NULL, content);
	assert_non_null(forged);
	expect_bad_sig(&es, forged, "alg is not ES256");
	free(forged);
	forged = sign_es(content);
	es = policy(1, JWA_RS256, rs_pub);
	expect_bad_sig(&es, forged, "alg is not RS256");
	free(forged);
	json_decref(content);
}

/* A verification key of the wrong type is refused, not used some other way. */
static void
test_key_type_mismatch(void **state)
{
	json_t *content = good_content();
	char *tok = sign_es(content);
	struct record_policy pol = policy(1, JWA_ES256, rs_pub);
	struct blob none = {NULL, 0};

	(void)state;
	expect_bad_sig(&pol, tok, "not a usable ES256 key");
	pol = policy(1, JWA_ES256, hs_secret);
	expect_bad_sig(&pol, tok, "not a usable ES256 key");
	pol = policy(1, JWA_ES256, none);
	expect_bad_sig(&pol, tok, "no verification key");
	pol = policy(1, JWA_NONE, es_pub);
	expect_bad_sig(&pol, tok, "configured algorithm");
	free(tok);
	json_decref(content);
}

static void
test_typ_rules(void **state)
{
	json_t *content = good_content();
	char *payload = json_dumps(content, JSON_COMPACT);
	struct record_policy hs = policy(1, JWA_HS256, hs_secret);
	struct record_policy es = policy(1, JWA_ES256, es_pub);
	char *tok, detail[256];
	jwt_t *jwt = NULL;

	(void)state;
	/* The hand-made signer itself is right: with the right typ it passes. */
	tok = hand_token("{\"alg\":\"HS256\",\"typ\":\"decision+jwt\",\"kid\":\"k\"}", payload,
	    hs_secret.data, hs_secret.len);
	assert_int_equal(load_raw(&hs, tok, detail, sizeof detail, NULL), RECORD_OK);
	free(tok);

	tok = hand_token("{\"alg\":\"HS256\"}", payload, hs_secret.data, hs_secret.len);
	expect_bad_sig(&hs, tok, "typ missing");
	free(tok);
	tok = hand_token("{\"alg\":\"HS256\",\"typ\":\"JWT\"}", payload, hs_secret.data,
	    hs_secret.len);
	expect_bad_sig(&hs, tok, "typ is not decision+jwt");
	free(tok);
	tok = hand_token("{\"alg\":\"HS256\",\"typ\":\"Decision+JWT\"}", payload, hs_secret.data,
	    hs_secret.len);
	expect_bad_sig(&hs, tok, "typ is not decision+jwt");
	free(tok);
	tok = hand_token("{\"alg\":\"HS256\",\"typ\":7}", payload, hs_secret.data, hs_secret.len);
	expect_bad_sig(&hs, tok, "typ missing");
	free(tok);
	/* Two alg members: ambiguous, so refused. */
	tok = hand_token("{\"alg\":\"HS256\",\"typ\":\"decision+jwt\",\"alg\":\"HS256\"}", payload,
	    hs_secret.data, hs_secret.len);
	expect_bad_sig(&hs, tok, "header: not a JSON object");
	free(tok);
	tok = hand_token("{\"alg\":\"HS256\",\"typ\":\"decision+jwt\",\"crit\":[\"x\"]}", payload,
	    hs_secret.data, hs_secret.len);
	expect_bad_sig(&hs, tok, "crit");
	free(tok);
	tok = hand_token("[\"HS256\"]", payload, hs_secret.data, hs_secret.len);
	expect_bad_sig(&hs, tok, "header: not a JSON object");
	free(tok);

	/* A token as libjwt signs it (typ JWT, correct ES256 signature). */
	assert_int_equal(jwt_new(&jwt), 0);
	assert_int_equal(jwt_add_grants_json(jwt, payload), 0);
	assert_int_equal(jwt_set_alg(jwt, JWT_ALG_ES256, es_key.data, (int)es_key.len), 0);
	tok = jwt_encode_str(jwt);
	assert_non_null(tok);
	expect_bad_sig(&es, tok, "typ is not decision+jwt");
	free(tok);
	jwt_free(jwt);
	free(payload);
	json_decref(content);
}

static void
test_not_a_jws(void **state)
{
	json_t *content = good_content();
	char *plain = json_dumps(content, JSON_COMPACT);
	char *tok = sign_es(content), *four;
	struct record_policy pol = policy(1, JWA_ES256, es_pub);
	const char *junk[] = {
		"", "garbage", "a.b", "a.b.c.d.e", "....", "!!!.abc.def",
		"eyJ=.eyJ.abc", "a b.c.d", "{\"a\":1}.{}.x", "e.e.e",
	};

	(void)state;
	expect_bad_sig(&pol, plain, "not a JWS");
	for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++)
		expect_bad_sig(&pol, junk[i], NULL);
	four = malloc(strlen(tok) + 3);
	assert_non_null(four);
	sprintf(four, "%s.x", tok);
	expect_bad_sig(&pol, four, "not a JWS");
	/* A space or newline around an otherwise good token. */
	sprintf(four, "%s\n", tok);
	expect_bad_sig(&pol, four, "not a JWS");
	free(four);
	/* A second spelling of the same signature: the last character of an
	 * 86-character segment carries 4 unused bits, which must be zero. */
	{
		const char *a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
		char *last = tok + strlen(tok) - 1;
		size_t v = (size_t)(strchr(a, *last) - a);

		assert_int_equal(v & 15, 0);
		*last = a[v | 1];
		expect_bad_sig(&pol, tok, "not a JWS");
	}
	free(tok);
	free(plain);
	json_decref(content);
}

/* Signed, verified, but the payload is not an object: content, not signature. */
static void
test_signed_payload_not_object(void **state)
{
	struct record_policy hs = policy(1, JWA_HS256, hs_secret);
	char *tok = hand_token("{\"alg\":\"HS256\",\"typ\":\"decision+jwt\"}", "[1,2]",
	    hs_secret.data, hs_secret.len);
	char detail[256];

	(void)state;
	assert_int_equal(load_raw(&hs, tok, detail, sizeof detail, NULL), RECORD_INVALID);
	assert_non_null(strstr(detail, "not a JSON object"));
	free(tok);
	tok = hand_token("{\"alg\":\"HS256\",\"typ\":\"decision+jwt\"}", "{\"recordId\":",
	    hs_secret.data, hs_secret.len);
	assert_int_equal(load_raw(&hs, tok, detail, sizeof detail, NULL), RECORD_INVALID);
	free(tok);
}

static void
test_signature_off(void **state)
{
	struct record_policy pol = plain_policy();
	json_t *content = good_content();
	char *plain = json_dumps(content, JSON_COMPACT), *tok = sign_es(content);
	struct record *rec = NULL;
	char detail[256];

	(void)state;
	assert_int_equal(record_load(&pol, "gate-14", plain, NOW_MS, &rec, NULL, detail,
	    sizeof detail), RECORD_OK);
	check_good_record(rec, content);
	record_free(rec);
	assert_int_equal(load_raw(&pol, "[1,2]", detail, sizeof detail, NULL), RECORD_INVALID);
	assert_non_null(strstr(detail, "not a JSON object"));
	assert_int_equal(load_raw(&pol, "\"text\"", detail, sizeof detail, NULL), RECORD_INVALID);
	assert_int_equal(load_raw(&pol, "42", detail, sizeof detail, NULL), RECORD_INVALID);
	assert_int_equal(load_raw(&pol, "{\"recordId\":", detail, sizeof detail, NULL),
	    RECORD_INVALID);
	assert_int_equal(load_raw(&pol, tok, detail, sizeof detail, NULL), RECORD_INVALID);
	assert_int_equal(load_raw(&pol, NULL, detail, sizeof detail, NULL), RECORD_INVALID);
	free(plain);
	free(tok);
	json_decref(content);
}

/* ---- validation (§3.1) ---- */

/* Each rule: an outcome, and the edits of the good record that must each
 * give it on their own. An edit is "-field" (delete it), "field=text" (set
 * it to that string) or "field:=json" (set it to that JSON value); the
 * detail must hold "field: <detail>" (NULL: the detail is not checked). */
struct rule {
	enum record_status want;
	const char *detail;
	const char *edits[20];
};

static const struct rule rules[] = {
	{RECORD_INVALID, "missing", {"-recordId", "-onBehalfOf", "-action", "-resource",
	    "-parameters", "-basis", "-decidedAt", "-expiresAt"}},
	{RECORD_INVALID, "not a string", {"recordId:=14", "onBehalfOf:=4417", "onBehalfOf:=null",
	    "action:=1", "resource:=[\"a\"]", "basis:=true", "decidedAt:=1796011140000",
	    "notBefore:=1796011200000", "expiresAt:=1796011200000", "notifyOnDenial:=5", "iss:=1"}},
	{RECORD_INVALID, "empty", {"recordId=", "onBehalfOf=", "action=", "resource=", "basis="}},
	{RECORD_INVALID, "not 1-64", {
	    "recordId=a1234567890123456789012345678901234567890123456789012345678901234",
	    "recordId=gate 14", "recordId=gate/14", "recordId=.", "recordId=.."}},
	{RECORD_INVALID, "not the id", {"recordId=gate-15",
	    "recordId=a123456789012345678901234567890123456789012345678901234567890123"}},
	{RECORD_INVALID, "contains '*'", {"action=gate.*", "action=*"}},
	{RECORD_UNKNOWN_ACTION, "no [action gate.close]", {"action=gate.close"}},
	{RECORD_INVALID, "a segment", {"resource=a//b", "resource=/a", "resource=a/",
	    "resource=/", "resource=a/*/b", "resource=*", "resource=a/*",
	    "resource=tenant-a/../tenant-b/door-1", "resource=a/./b", "resource=../b",
	    "resource=a/.", "resource=.."}},
	{RECORD_INVALID, "contains", {"resource=a/..\\b", "resource=door-1\nstate=done",
	    "resource=a\tb", "resource=a\x7f"}},
	{RECORD_INVALID, "longer than 1024 bytes or has a control character", {
	    "onBehalfOf=op\r\nX-Evil: 1", "basis=rule\x01"}},
	{RECORD_INVALID, "not an object", {"parameters={}", "parameters:=[]", "parameters:=null"}},
	{RECORD_INVALID, "not an RFC 3339", {"decidedAt=30 Nov 2026 03:59",
	    "decidedAt=2026-11-30T05:59:00+02:00", "decidedAt=2026-11-30T03:59:00",
	    "notBefore=tomorrow", "notBefore=2026-11-30T06:00:00+02:00", "notBefore=",
	    "expiresAt=2026-11-31T00:00:00Z", "expiresAt=2026-11-30T14:00:00+02:00"}},
	{RECORD_INVALID, "more than clock_skew_s in the future", {
	    "decidedAt=2026-11-30T04:01:00.001Z"}},
	{RECORD_INVALID, "not later than decidedAt", {"expiresAt=2026-11-30T03:59:00Z",
	    "expiresAt=2026-11-30T03:58:59.999Z"}},
	{RECORD_INVALID, "more than max_window_s after decidedAt", {
	    "expiresAt=2026-12-07T03:59:01Z", "expiresAt=2026-12-07T03:59:00.001Z"}},
	{RECORD_OK, NULL, {"parameters:={}", "decidedAt=2026-11-30T04:01:00Z",
	    "decidedAt=2026-11-30t03:59:00.5z", "expiresAt=2026-12-07T03:59:00Z",
	    "expiresAt=2026-11-30T03:59:00.001Z", "notBefore=2026-11-30T06:00:00Z",
	    "notBefore=2026-12-01T00:00:00Z", "-notifyOnDenial", "notifyOnDenial=", "-iss",
	    "iss=someone-else", "iss=", "extra:={\"x\":[1,2]}", "resource=gate-3",
	    "resource=a/b*/c", "resource=a/...b/.c/d..", "resource=a/.../b",
	    "resource=caf\xc3\xa9/t\xc3\xbcr", "action=door.unlock"}},
};

/* The i-th edit of all the rules and, in *rule, its rule; NULL past the last. */
static const char *
edit_at(size_t i, const struct rule **rule)
{
	for (size_t r = 0; r < sizeof rules / sizeof rules[0]; r++)
		for (size_t e = 0; e < sizeof rules[r].edits / sizeof rules[r].edits[0] &&
		    rules[r].edits[e] != NULL; e++)
			if (i-- == 0) {
				*rule = &rules[r];
				return rules[r].edits[e];
			}
	return NULL;
}

/* `edit` made to the object `c`; *field gets the member it names. */
static void
apply_edit(json_t *c, const char *edit, char *field, size_t n)
{
	json_t *v;
	const char *eq = strchr(edit, '=');

	if (edit[0] == '-') {
		snprintf(field, n, "%s", edit + 1);
		json_object_del(c, field);
		return;
	}
	assert_non_null(eq);
	int json = eq > edit && eq[-1] == ':';
	snprintf(field, n, "%.*s", (int)(eq - edit) - json, edit);
	if (json) {
		v = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
		assert_non_null(v);
	} else {
		v = json_string(eq + 1);
	}
	assert_int_equal(json_object_set_new(c, field, v), 0);
}

/* The good record with `edit` made; *field gets the field it names. */
static json_t *
mutate(const char *edit, char *field, size_t n)
{
	json_t *c = good_content();

	apply_edit(c, edit, field, n);
	return c;
}

static void
test_field_rules(void **state)
{
	const struct rule *r;
	const char *edit;
	char detail[256], field[64];

	(void)state;
	expect_plain(good_content(), RECORD_OK, NULL);
	for (size_t i = 0; (edit = edit_at(i, &r)) != NULL; i++) {
		enum record_status st = load_plain(mutate(edit, field, sizeof field), detail,
		    sizeof detail);
		char want[256];

		if (st != r->want)
			fail_msg("%s: status %s, want %s (detail: %s)", edit,
			    record_status_code(st), record_status_code(r->want), detail);
		snprintf(want, sizeof want, "%s: %s", field, r->detail ? r->detail : "");
		if (r->detail != NULL && strstr(detail, want) == NULL)
			fail_msg("%s: detail \"%s\" lacks \"%s\"", edit, detail, want);
	}
}

/* The good record's compact JSON with its first `from` written `to`. */
static char *
good_text_with(const char *from, const char *to)
{
	json_t *c = good_content();
	char *raw = json_dumps(c, JSON_COMPACT), *at, *out;

	json_decref(c);
	assert_non_null(raw);
	at = strstr(raw, from);
	assert_non_null(at);
	out = malloc(strlen(raw) - strlen(from) + strlen(to) + 1);
	assert_non_null(out);
	sprintf(out, "%.*s%s%s", (int)(at - raw), raw, to, at + strlen(from));
	free(raw);
	return out;
}

/* The payload is strict JSON (jread, jansson's rules): a duplicate name at
 * any depth or a \u0000 is not JSON, and an escape means what it stands for,
 * in a name as in a value; the body keeps the bytes as they came. */
static void
test_json_rules(void **state)
{
	static const struct {
		const char *from, *to, *detail_has;
	} bad[] = {
		{"\"iss\"", "\"action\":\"gate.open\",\"iss\"", "duplicate"},
		{"\"iss\"", "\"\\u0061ction\":\"gate.open\",\"iss\"", "duplicate"},
		{"\"parameters\":{", "\"parameters\":{\"x\":1,\"x\":2,", "duplicate"},
		{"\"parameters\":{", "\"parameters\":{\"x\":[{\"y\":1,\"y\":1}],", "duplicate"},
		{"role:site-operator", "role:site\\u0000operator", "not JSON"},
		{"\"hold_s\":30", "\"hold_s\":030", "not JSON"},
		{"gate.open", "gate\\uD800open", "not JSON"},
		{"gate.open", "gate\xc0\xaeopen", "not JSON"},
	};
	struct record_policy pol = plain_policy();
	struct record *rec = NULL;
	char detail[256], *raw;

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		raw = good_text_with(bad[i].from, bad[i].to);
		assert_int_equal(load_raw(&pol, raw, detail, sizeof detail, NULL), RECORD_INVALID);
		if (strstr(detail, bad[i].detail_has) == NULL)
			fail_msg("%s: detail \"%s\" lacks \"%s\"", raw, detail, bad[i].detail_has);
		free(raw);
	}
	raw = good_text_with("\"recordId\":\"gate-14\"", "\"re\\u0063ordId\":\"gate\\u002d14\"");
	assert_int_equal(record_load(&pol, "gate-14", raw, NOW_MS, &rec, NULL, detail,
	    sizeof detail), RECORD_OK);
	assert_string_equal(rec->id, "gate-14");
	assert_string_equal(rec->body, raw);
	assert_int_equal(rec->body_len, strlen(raw));
	record_free(rec);
	free(raw);
}

/* The same rules hold for a signed record: a verified but invalid record is
 * record-invalid, not bad-signature. */
static void
test_field_rules_signed(void **state)
{
	struct record_policy pol = policy(1, JWA_ES256, es_pub);
	const struct rule *r;
	const char *edit;
	char detail[256], field[64];

	(void)state;
	for (size_t i = 0; (edit = edit_at(i, &r)) != NULL; i++) {
		json_t *c = mutate(edit, field, sizeof field);
		char *tok = sign_es(c);
		enum record_status st = load_raw(&pol, tok, detail, sizeof detail, NULL);

		if (st != r->want)
			fail_msg("%s: status %s, want %s (detail: %s)", edit,
			    record_status_code(st), record_status_code(r->want), detail);
		free(tok);
		json_decref(c);
	}
}

/* onBehalfOf and basis: at most 1024 bytes. */
static void
test_text_field_length(void **state)
{
	char big[1026], detail[256];
	const char *fields[] = {"onBehalfOf", "basis"};

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		json_t *c = good_content();
		memset(big, 'x', 1024);
		big[1024] = '\0';
		set_str(c, fields[i], big);
		expect_plain(c, RECORD_OK, NULL);
		c = good_content();
		big[1024] = 'x';
		big[1025] = '\0';
		set_str(c, fields[i], big);
		assert_int_equal(load_plain(c, detail, sizeof detail), RECORD_INVALID);
		assert_non_null(strstr(detail, fields[i]));
	}
}

/* [records] max_bytes: a longer value is record-invalid before it is
 * decoded, signed or not; exactly max_bytes passes. */
static void
test_max_bytes(void **state)
{
	json_t *c = good_content();
	char *plain = json_dumps(c, JSON_COMPACT), *tok = sign_es(c), detail[256];
	struct record_policy pol = plain_policy(), spol = policy(1, JWA_ES256, es_pub);

	(void)state;
	pol.max_bytes = strlen(plain);
	assert_int_equal(load_raw(&pol, plain, detail, sizeof detail, NULL), RECORD_OK);
	pol.max_bytes = strlen(plain) - 1;
	assert_int_equal(load_raw(&pol, plain, detail, sizeof detail, NULL), RECORD_INVALID);
	assert_non_null(strstr(detail, "max_bytes"));
	spol.max_bytes = strlen(tok) - 1;
	assert_int_equal(load_raw(&spol, tok, detail, sizeof detail, NULL), RECORD_INVALID);
	assert_non_null(strstr(detail, "max_bytes"));
	/* A value that is not even a JWS is refused for its size, not its form. */
	char *junk = malloc(100001);
	assert_non_null(junk);
	memset(junk, 'A', 100000);
	junk[100000] = '\0';
	spol.max_bytes = 16384;
	assert_int_equal(load_raw(&spol, junk, detail, sizeof detail, NULL), RECORD_INVALID);
	assert_non_null(strstr(detail, "max_bytes"));
	free(junk);
	free(plain);
	free(tok);
	json_decref(c);
}

static void
test_parsed_times(void **state)
{
	struct record_policy pol = plain_policy();
	json_t *c = good_content();
	struct record *rec = NULL;
	char *raw, detail[256];

	(void)state;
	set_str(c, "notBefore", "2026-11-30T06:00:00.250Z");
	set_str(c, "notifyOnDenial", "");
	json_object_del(c, "iss");
	raw = json_dumps(c, JSON_COMPACT);
	assert_int_equal(record_load(&pol, "gate-14", raw, NOW_MS, &rec, NULL, detail,
	    sizeof detail), RECORD_OK);
	assert_int_equal(rec->not_before_ms, NOW_MS + 2 * 3600 * 1000LL + 250);
	assert_null(rec->notify_on_denial);
	assert_null(rec->iss);
	record_free(rec);
	free(raw);
	json_decref(c);
}

static void
test_issuer(void **state)
{
	struct record_policy pol = plain_policy();
	json_t *c = good_content();
	char *raw = json_dumps(c, JSON_COMPACT), detail[256];

	(void)state;
	pol.issuer = "decider-1";
	assert_int_equal(load_raw(&pol, raw, detail, sizeof detail, NULL), RECORD_OK);
	pol.issuer = "decider-2";
	assert_int_equal(load_raw(&pol, raw, detail, sizeof detail, NULL), RECORD_INVALID);
	assert_non_null(strstr(detail, "iss: not the configured issuer"));
	free(raw);
	json_object_del(c, "iss");
	raw = json_dumps(c, JSON_COMPACT);
	assert_int_equal(load_raw(&pol, raw, detail, sizeof detail, NULL), RECORD_INVALID);
	assert_non_null(strstr(detail, "iss: missing"));
	pol.issuer = NULL;
	assert_int_equal(load_raw(&pol, raw, detail, sizeof detail, NULL), RECORD_OK);
	free(raw);
	json_decref(c);
}

/* RFC 7519 §4.1.3 and [records] audience (issue 37 item 7): aud equal to
 * it, or an array holding it; missing, another, or an aud where no audience
 * is set is wrong-audience, its own reason. */
static void
expect_aud(const struct record_policy *pol, json_t *aud, enum record_status want,
	   const char *detail_has)
{
	json_t *c = good_content();
	char *raw, detail[256];

	if (aud != NULL)
		assert_int_equal(json_object_set_new(c, "aud", aud), 0);
	raw = json_dumps(c, JSON_COMPACT);
	enum record_status st = load_raw(pol, raw, detail, sizeof detail, NULL);
	if (st != want)
		fail_msg("aud case: status %s, want %s (detail: %s)", record_status_code(st),
		    record_status_code(want), detail);
	if (detail_has != NULL && strstr(detail, detail_has) == NULL)
		fail_msg("detail \"%s\" lacks \"%s\"", detail, detail_has);
	free(raw);
	json_decref(c);
}

static void
test_audience(void **state)
{
	struct record_policy pol = plain_policy();

	(void)state;
	assert_string_equal(record_status_code(RECORD_WRONG_AUDIENCE), "wrong-audience");
	pol.audience = "canal-prod";
	expect_aud(&pol, json_string("canal-prod"), RECORD_OK, NULL);
	expect_aud(&pol, json_pack("[s,s]", "canal-test", "canal-prod"), RECORD_OK, NULL);
	expect_aud(&pol, json_pack("[s]", "canal-prod"), RECORD_OK, NULL);
	expect_aud(&pol, NULL, RECORD_WRONG_AUDIENCE, "aud: missing, and [records] audience");
	expect_aud(&pol, json_string("canal-test"), RECORD_WRONG_AUDIENCE,
	    "aud: not this deployment's");
	expect_aud(&pol, json_string("canal-prod "), RECORD_WRONG_AUDIENCE, NULL);
	expect_aud(&pol, json_string("Canal-prod"), RECORD_WRONG_AUDIENCE, NULL);
	expect_aud(&pol, json_pack("[s,s]", "canal-test", "canal-dev"), RECORD_WRONG_AUDIENCE,
	    "aud: not this deployment's");
	expect_aud(&pol, json_array(), RECORD_WRONG_AUDIENCE, NULL);
	expect_aud(&pol, json_pack("[s,i]", "canal-prod", 1), RECORD_INVALID,
	    "aud: not a string or an array of strings");
	expect_aud(&pol, json_integer(7), RECORD_INVALID, "aud: not a string or an array");
	expect_aud(&pol, json_pack("{s:s}", "a", "canal-prod"), RECORD_INVALID, NULL);
	/* No audience configured: a record bound to one is another deployment's. */
	pol.audience = NULL;
	expect_aud(&pol, NULL, RECORD_OK, NULL);
	expect_aud(&pol, json_string("canal-prod"), RECORD_WRONG_AUDIENCE,
	    "[records] audience is not set");
	expect_aud(&pol, json_pack("[s]", "canal-prod"), RECORD_WRONG_AUDIENCE, NULL);
}

/* Signed: the audience is checked after the signature, and a record signed
 * for another deployment with the same key is refused. */
static void
test_audience_signed(void **state)
{
	struct record_policy pol = policy(1, JWA_ES256, es_pub);
	json_t *c = good_content();
	char detail[256];

	(void)state;
	pol.audience = "canal-prod";
	set_str(c, "aud", "canal-test");
	char *tok = sign_es(c);
	assert_int_equal(load_raw(&pol, tok, detail, sizeof detail, NULL), RECORD_WRONG_AUDIENCE);
	free(tok);
	set_str(c, "aud", "canal-prod");
	tok = sign_es(c);
	assert_int_equal(load_raw(&pol, tok, detail, sizeof detail, NULL), RECORD_OK);
	free(tok);
	json_decref(c);
}

static void
test_skew_and_window_follow_policy(void **state)
{
	struct record_policy pol = plain_policy();
	json_t *c = good_content();
	char *raw, detail[256];

	(void)state;
	set_str(c, "decidedAt", "2026-11-30T04:00:30Z");	/* now + 30 s */
	set_str(c, "expiresAt", "2026-11-30T05:00:30Z");	/* + 1 h */
	raw = json_dumps(c, JSON_COMPACT);
	assert_int_equal(load_raw(&pol, raw, detail, sizeof detail, NULL), RECORD_OK);
	pol.clock_skew_ms = 30000;
	assert_int_equal(load_raw(&pol, raw, detail, sizeof detail, NULL), RECORD_OK);
	pol.clock_skew_ms = 29999;
	assert_int_equal(load_raw(&pol, raw, detail, sizeof detail, NULL), RECORD_INVALID);
	pol.clock_skew_ms = 0;
	assert_int_equal(load_raw(&pol, raw, detail, sizeof detail, NULL), RECORD_INVALID);
	pol.clock_skew_ms = SKEW_MS;
	pol.max_window_ms = 3600 * 1000;
	assert_int_equal(load_raw(&pol, raw, detail, sizeof detail, NULL), RECORD_OK);
	pol.max_window_ms = 3600 * 1000 - 1;
	assert_int_equal(load_raw(&pol, raw, detail, sizeof detail, NULL), RECORD_INVALID);
	assert_non_null(strstr(detail, "max_window_s"));
	free(raw);
	json_decref(c);
}

/* A malformed record reports record-invalid even when its action is unknown;
 * without an action_known hook no action is refused. */
static void
test_unknown_action_order(void **state)
{
	struct record_policy pol = plain_policy();
	json_t *c = good_content();
	char *raw, detail[256];

	(void)state;
	set_str(c, "action", "gate.close");
	set_str(c, "basis", "");
	raw = json_dumps(c, JSON_COMPACT);
	assert_int_equal(load_raw(&pol, raw, detail, sizeof detail, NULL), RECORD_INVALID);
	free(raw);
	set_str(c, "basis", "role:x");
	raw = json_dumps(c, JSON_COMPACT);
	assert_int_equal(load_raw(&pol, raw, detail, sizeof detail, NULL),
	    RECORD_UNKNOWN_ACTION);
	pol.action_known = NULL;
	assert_int_equal(load_raw(&pol, raw, detail, sizeof detail, NULL), RECORD_OK);
	free(raw);
	json_decref(c);
}

/* Loaded without action_known, then record_check_action: the status, detail
 * and owner of one record_load with it (how vpool's callers load). */
static void
expect_action_checked_later(const char *raw)
{
	struct record_policy with = plain_policy(), without = with;
	struct record *r1 = NULL, *r2 = NULL;
	char d1[256], d2[256], *o1 = NULL, *o2 = NULL;

	without.action_known = NULL;
	enum record_status s1 = record_load(&with, "gate-14", raw, NOW_MS, &r1, &o1, d1,
	    sizeof d1);
	enum record_status s2 = record_load(&without, "gate-14", raw, NOW_MS, &r2, &o2, d2,
	    sizeof d2);
	if (s2 == RECORD_OK)
		s2 = record_check_action(&with, &r2, &o2, d2, sizeof d2);
	assert_int_equal(s1, s2);
	assert_string_equal(d1, d2);
	assert_int_equal(r1 == NULL, r2 == NULL);
	assert_int_equal(o1 == NULL, o2 == NULL);
	if (o1 != NULL)
		assert_string_equal(o1, o2);
	record_free(r1);
	record_free(r2);
	free(o1);
	free(o2);
}

static void
test_action_checked_later(void **state)
{
	json_t *c = good_content();
	char *raw;

	(void)state;
	for (int i = 0; i < 4; i++) {
		set_str(c, "action", i % 2 ? "gate.close" : "gate.open");
		if (i == 2)
			set_str(c, "notifyOnDenial", "");
		if (i == 3)
			set_str(c, "basis", "");
		raw = json_dumps(c, JSON_COMPACT);
		expect_action_checked_later(raw);
		free(raw);
	}
	json_decref(c);
}

/* ---- owner_out ---- */

static void
expect_owner(const struct record_policy *pol, const char *raw, enum record_status want,
	     const char *owner_want)
{
	char detail[256], *owner = NULL;

	assert_int_equal(load_raw(pol, raw, detail, sizeof detail, &owner), want);
	if (owner_want == NULL)
		assert_null(owner);
	else
		assert_string_equal(owner, owner_want);
	free(owner);
}

static void
test_owner_out(void **state)
{
	struct record_policy es = policy(1, JWA_ES256, es_pub);
	struct record_policy other = policy(1, JWA_ES256, es_other_pub);
	struct record_policy plain = plain_policy();
	json_t *c = good_content();
	char *tok, *raw;

	(void)state;
	set_str(c, "resource", "a//b");
	tok = sign_es(c);
	expect_owner(&es, tok, RECORD_INVALID, OWNER);
	expect_owner(&other, tok, RECORD_BAD_SIGNATURE, NULL);
	free(tok);
	raw = json_dumps(c, JSON_COMPACT);
	expect_owner(&plain, raw, RECORD_INVALID, OWNER);
	free(raw);

	set_str(c, "resource", "a/b");
	set_str(c, "action", "gate.close");
	tok = sign_es(c);
	expect_owner(&es, tok, RECORD_UNKNOWN_ACTION, OWNER);
	free(tok);

	set_str(c, "notifyOnDenial", "");
	tok = sign_es(c);
	expect_owner(&es, tok, RECORD_UNKNOWN_ACTION, NULL);
	free(tok);
	set_int(c, "notifyOnDenial", 3);
	tok = sign_es(c);
	expect_owner(&es, tok, RECORD_INVALID, NULL);
	free(tok);
	json_object_del(c, "notifyOnDenial");
	tok = sign_es(c);
	expect_owner(&es, tok, RECORD_UNKNOWN_ACTION, NULL);
	free(tok);
	json_decref(c);

	/* A valid record hands back no owner. */
	c = good_content();
	tok = sign_es(c);
	expect_owner(&es, tok, RECORD_OK, NULL);
	free(tok);
	json_decref(c);
}

/* ---- record_sign ---- */

static void
test_sign_header_and_kid(void **state)
{
	json_t *c = good_content(), *h, *want;
	char *tok = record_sign(JWA_ES256, es_key.data, es_key.len, "decider-key-7", c);
	struct record_policy pol = policy(1, JWA_ES256, es_pub);
	struct record *rec = NULL;
	char detail[256];

	(void)state;
	assert_non_null(tok);
	h = header_of(tok);
	want = json_pack("{s:s, s:s, s:s}", "alg", "ES256", "typ", "decision+jwt", "kid",
	    "decider-key-7");
	assert_true(json_equal(h, want));
	json_decref(h);
	json_decref(want);
	assert_int_equal(sig_len_of(tok), 64);		/* R || S, not DER */
	assert_int_equal(record_load(&pol, "gate-14", tok, NOW_MS, &rec, NULL, detail,
	    sizeof detail), RECORD_OK);
	check_good_record(rec, c);
	record_free(rec);
	free(tok);

	tok = record_sign(JWA_RS256, rs_key.data, rs_key.len, NULL, c);
	assert_non_null(tok);
	h = header_of(tok);
	want = json_pack("{s:s, s:s}", "alg", "RS256", "typ", "decision+jwt");
	assert_true(json_equal(h, want));
	json_decref(h);
	json_decref(want);
	assert_int_equal(sig_len_of(tok), 256);
	free(tok);

	tok = record_sign(JWA_HS256, hs_secret.data, hs_secret.len, "", c);
	assert_non_null(tok);
	h = header_of(tok);
	assert_string_equal(json_string_value(json_object_get(h, "kid")), "");
	json_decref(h);
	assert_int_equal(sig_len_of(tok), 32);
	free(tok);
	json_decref(c);
}

static void
test_sign_refuses(void **state)
{
	json_t *c = good_content(), *arr = json_array();
	const unsigned char short_secret[] = "only-31-bytes-of-secret-xxxxxxx";

	(void)state;
	assert_null(record_sign(JWA_NONE, es_key.data, es_key.len, NULL, c));
	assert_null(record_sign(JWA_COUNT, es_key.data, es_key.len, NULL, c));
	assert_null(record_sign(JWA_ES256, es_key.data, es_key.len, NULL, arr));
	assert_null(record_sign(JWA_ES256, es_key.data, es_key.len, NULL, NULL));
	assert_null(record_sign(JWA_ES256, es_pub.data, es_pub.len, NULL, c));
	assert_null(record_sign(JWA_ES256, rs_key.data, rs_key.len, NULL, c));
	assert_null(record_sign(JWA_RS256, es_key.data, es_key.len, NULL, c));
	assert_null(record_sign(JWA_ES256, NULL, 0, NULL, c));
	assert_null(record_sign(JWA_HS256, short_secret, sizeof short_secret - 1, NULL, c));
	assert_null(record_sign(JWA_ES256, es_key.data, es_key.len, "bad\xff", c));
	json_decref(arr);
	json_decref(c);
}

/* ---- record_key: parsed once, same rules as raw bytes ---- */

/* The PEM public half of `pk` (consumed). */
static struct blob
public_pem(EVP_PKEY *pk)
{
	BIO *bio = BIO_new(BIO_s_mem());
	struct blob b;
	char *data;
	long n;

	assert_non_null(pk);
	assert_non_null(bio);
	assert_int_equal(PEM_write_bio_PUBKEY(bio, pk), 1);
	n = BIO_get_mem_data(bio, &data);
	assert_true(n > 0);
	b.data = malloc((size_t)n + 1);
	assert_non_null(b.data);
	memcpy(b.data, data, (size_t)n);
	b.data[n] = '\0';
	b.len = (size_t)n;
	BIO_free(bio);
	EVP_PKEY_free(pk);
	return b;
}

static void
expect_key_ok(enum jwa_alg alg, struct blob key)
{
	char err[256] = "";
	struct record_key *k = record_key_new(alg, key.data, key.len, err, sizeof err);

	if (k == NULL)
		fail_msg("%s: refused: %s", jwa_name(alg), err);
	record_key_free(k);
}

static void
expect_key_refused(enum jwa_alg alg, struct blob key, const char *err_has)
{
	char err[256] = "";
	struct record_key *k = record_key_new(alg, key.data, key.len, err, sizeof err);

	if (k != NULL)
		fail_msg("%s: accepted a key it should refuse (%s)", jwa_name(alg), err_has);
	if (strstr(err, err_has) == NULL)
		fail_msg("%s: error \"%s\" lacks \"%s\"", jwa_name(alg), err, err_has);
}

/* A second owner keeps the key: it still verifies after the first lets go. */
static void
test_key_ref(void **state)
{
	char err[256];
	struct record_key *k = record_key_new(JWA_ES256, es_pub.data, es_pub.len, err,
	    sizeof err);

	(void)state;
	assert_non_null(k);
	assert_ptr_equal(record_key_ref(k), k);
	record_key_free(k);	/* the first owner: ASan sees any use after a free */
	struct blob none = {NULL, 0};
	struct record_policy pol = policy(1, JWA_ES256, none);
	json_t *c = good_content();
	char *tok = sign_es(c), detail[256];
	pol.parsed_key = k;
	assert_int_equal(load_raw(&pol, tok, detail, sizeof detail, NULL), RECORD_OK);
	free(tok);
	json_decref(c);
	record_key_free(k);
}

static void
test_key_new_accepts(void **state)
{
	struct blob exactly32 = {(unsigned char *)"0123456789abcdef0123456789ABCDEF", 32};

	(void)state;
	expect_key_ok(JWA_ES256, es_pub);
	expect_key_ok(JWA_ES256, es_other_pub);
	expect_key_ok(JWA_RS256, rs_pub);
	expect_key_ok(JWA_HS256, hs_secret);
	expect_key_ok(JWA_HS256, exactly32);
}

/* warrantd(7) §3.2, RFC 7518 §3.2: an HS256 secret under 32 bytes, or a PEM
 * document (the decider's public key, which anyone may hold), is refused
 * when parsed, and raw bytes like it verify nothing. */
static void
test_hs256_weak_secrets(void **state)
{
	struct blob short_secret = {(unsigned char *)"x", 1};
	struct blob b31 = {(unsigned char *)"0123456789abcdef0123456789ABCDE", 31};
	json_t *c = good_content();
	char detail[256];

	(void)state;
	expect_key_refused(JWA_HS256, short_secret, "shorter than 32 bytes");
	expect_key_refused(JWA_HS256, b31, "shorter than 32 bytes");
	expect_key_refused(JWA_HS256, es_pub, "PEM");
	expect_key_refused(JWA_HS256, rs_pub, "PEM");
	/* A record HMAC'd with the public PEM: the forgery the rule stops. */
	json_object_set_new(c, "x", json_true());
	char *payload = json_dumps(c, JSON_COMPACT);
	char *forged = hand_token("{\"alg\":\"HS256\",\"typ\":\"decision+jwt\"}", payload,
	    es_pub.data, es_pub.len);
	struct record_policy pol = policy(1, JWA_HS256, es_pub);
	assert_int_equal(load_raw(&pol, forged, detail, sizeof detail, NULL),
	    RECORD_BAD_SIGNATURE);
	char *weak = hand_token("{\"alg\":\"HS256\",\"typ\":\"decision+jwt\"}", payload,
	    short_secret.data, short_secret.len);
	pol = policy(1, JWA_HS256, short_secret);
	assert_int_equal(load_raw(&pol, weak, detail, sizeof detail, NULL), RECORD_BAD_SIGNATURE);
	/* and nobody signs with one */
	assert_null(record_sign(JWA_HS256, es_pub.data, es_pub.len, NULL, c));
	free(payload);
	free(forged);
	free(weak);
	json_decref(c);
}

static void
test_key_new_refuses(void **state)
{
	struct blob none = {NULL, 0}, empty = {hs_secret.data, 0};
	struct blob p384 = public_pem(EVP_EC_gen("secp384r1"));
	struct blob rsa2047 = public_pem(EVP_RSA_gen(2047));
	struct blob ed25519 = public_pem(EVP_PKEY_Q_keygen(NULL, NULL, "ED25519"));
	struct blob crt = read_blob("tests/data/test-rs256.crt");
	char err[256], head[9];

	(void)state;
	assert_true(crt.len > 0);
	/* A key of another type or size than the algorithm's. */
	expect_key_refused(JWA_ES256, rs_pub, "not a usable ES256 key");
	expect_key_refused(JWA_ES256, p384, "not a usable ES256 key");
	expect_key_refused(JWA_ES256, ed25519, "not a usable ES256 key");
	expect_key_refused(JWA_RS256, es_pub, "not a usable RS256 key");
	expect_key_refused(JWA_RS256, rsa2047, "not a usable RS256 key");
	expect_key_refused(JWA_RS256, ed25519, "not a usable RS256 key");
	/* Not a PEM public key: a secret, a private key, a certificate. */
	expect_key_refused(JWA_ES256, hs_secret, "not a PEM public key");
	expect_key_refused(JWA_ES256, es_key, "not a PEM public key");
	expect_key_refused(JWA_RS256, rs_key, "not a PEM public key");
	expect_key_refused(JWA_RS256, crt, "not a PEM public key");
	/* No key, and an algorithm the record does not speak. */
	expect_key_refused(JWA_HS256, none, "empty");
	expect_key_refused(JWA_HS256, empty, "empty");
	expect_key_refused(JWA_ES256, none, "empty");
	expect_key_refused(JWA_NONE, es_pub, "not ES256, RS256 or HS256");
	expect_key_refused(JWA_COUNT, es_pub, "not ES256, RS256 or HS256");
	expect_key_refused((enum jwa_alg)-1, hs_secret, "not ES256, RS256 or HS256");
	/* The error never carries the key's bytes. */
	memcpy(head, hs_secret.data, sizeof head - 1);
	head[sizeof head - 1] = '\0';
	assert_null(record_key_new(JWA_ES256, hs_secret.data, hs_secret.len, err, sizeof err));
	assert_true(err[0] != '\0');
	assert_null(strstr(err, head));
	record_key_free(NULL);
	free(p384.data);
	free(rsa2047.data);
	free(ed25519.data);
	free(crt.data);
}

/* One load with `key` as raw bytes, one with it parsed for `key_alg`; both
 * must give the same status, detail, owner and record. The parsed policy
 * has no raw key, so it can only have used the parsed one. */
static void
expect_same(enum jwa_alg alg, struct blob key, enum jwa_alg key_alg, const char *tok,
	    const char *what)
{
	struct record_policy raw = policy(1, alg, key), parsed = raw;
	struct record *rec_raw = NULL, *rec_parsed = NULL;
	char d_raw[256], d_parsed[256], err[256], *o_raw = NULL, *o_parsed = NULL;
	struct record_key *k = record_key_new(key_alg, key.data, key.len, err, sizeof err);
	enum record_status s_raw, s_parsed;

	if (k == NULL)
		fail_msg("%s: record_key_new: %s", what, err);
	parsed.parsed_key = k;
	parsed.key = NULL;
	parsed.key_len = 0;
	s_raw = record_load(&raw, "gate-14", tok, NOW_MS, &rec_raw, &o_raw, d_raw, sizeof d_raw);
	s_parsed = record_load(&parsed, "gate-14", tok, NOW_MS, &rec_parsed, &o_parsed, d_parsed,
	    sizeof d_parsed);
	if (s_raw != s_parsed || strcmp(d_raw, d_parsed) != 0)
		fail_msg("%s: raw %s \"%s\", parsed %s \"%s\"", what, record_status_code(s_raw),
		    d_raw, record_status_code(s_parsed), d_parsed);
	if ((o_raw == NULL) != (o_parsed == NULL) ||
	    (o_raw != NULL && strcmp(o_raw, o_parsed) != 0))
		fail_msg("%s: the owners differ", what);
	assert_int_equal(rec_raw == NULL, rec_parsed == NULL);
	if (rec_raw != NULL)
		assert_string_equal(rec_raw->body, rec_parsed->body);
	record_free(rec_raw);
	record_free(rec_parsed);
	free(o_raw);
	free(o_parsed);
	record_key_free(k);
}

/* Like expect_same, and the status is `want`: the vector means something. */
static void
expect_same_is(enum jwa_alg alg, struct blob key, const char *tok, enum record_status want,
	       const char *what)
{
	struct record_policy pol = policy(1, alg, key);
	char detail[256];

	expect_same(alg, key, alg, tok, what);
	if (load_raw(&pol, tok, detail, sizeof detail, NULL) != want)
		fail_msg("%s: not %s: %s", what, record_status_code(want), detail);
}

static void
test_parsed_key_same_results(void **state)
{
	json_t *c = good_content();
	char *payload = json_dumps(c, JSON_COMPACT);
	char *es = sign_es(c);
	char *rs = record_sign(JWA_RS256, rs_key.data, rs_key.len, NULL, c);
	char *hs = record_sign(JWA_HS256, hs_secret.data, hs_secret.len, NULL, c);
	char *es_other = record_sign(JWA_ES256, es_other_key.data, es_other_key.len, NULL, c);
	char *hs_other = record_sign(JWA_HS256,
	    (const unsigned char *)"another-secret-of-32-bytes-or-more", 34, NULL, c);
	char *confused = hand_token("{\"alg\":\"HS256\",\"typ\":\"decision+jwt\"}", payload,
	    es_pub.data, es_pub.len);
	char *none = hand_token("{\"alg\":\"none\",\"typ\":\"decision+jwt\"}", payload, NULL, 0);
	char *hs_jwt = hand_token("{\"alg\":\"HS256\",\"typ\":\"JWT\"}", payload, hs_secret.data,
	    hs_secret.len);
	char *stripped = strdup(es);
	size_t d1, d2;

	(void)state;
	assert_non_null(rs);
	assert_non_null(hs);
	assert_non_null(es_other);
	assert_non_null(hs_other);
	assert_non_null(confused);
	assert_non_null(stripped);
	segments(stripped, &d1, &d2);
	stripped[d2 + 1] = '\0';

	expect_same_is(JWA_ES256, es_pub, es, RECORD_OK, "ES256 valid");
	expect_same_is(JWA_RS256, rs_pub, rs, RECORD_OK, "RS256 valid");
	expect_same_is(JWA_HS256, hs_secret, hs, RECORD_OK, "HS256 valid");
	expect_same_is(JWA_ES256, es_other_pub, es, RECORD_BAD_SIGNATURE, "ES256 wrong key");
	expect_same_is(JWA_ES256, es_pub, es_other, RECORD_BAD_SIGNATURE, "ES256 other signer");
	expect_same_is(JWA_RS256, rs_pub, es, RECORD_BAD_SIGNATURE, "ES256 token, RS256 key");
	expect_same_is(JWA_HS256, hs_secret, hs_other, RECORD_BAD_SIGNATURE, "HS256 wrong key");
	expect_same_is(JWA_ES256, es_pub, confused, RECORD_BAD_SIGNATURE, "alg confusion");
	expect_same_is(JWA_ES256, es_pub, rs, RECORD_BAD_SIGNATURE, "RS256 token, ES256 key");
	expect_same_is(JWA_ES256, es_pub, none, RECORD_BAD_SIGNATURE, "alg none");
	expect_same_is(JWA_HS256, hs_secret, hs_jwt, RECORD_BAD_SIGNATURE, "typ JWT");
	expect_same_is(JWA_ES256, es_pub, stripped, RECORD_BAD_SIGNATURE, "no signature");
	expect_same_is(JWA_ES256, es_pub, "garbage", RECORD_BAD_SIGNATURE, "not a JWS");
	/* A key parsed for another algorithm fails like raw bytes of that type. */
	expect_same(JWA_RS256, es_pub, JWA_ES256, rs, "ES256 key, RS256 configured");
	expect_same(JWA_ES256, hs_secret, JWA_HS256, es, "HS256 key, ES256 configured");
	{
		struct record_key *k = record_key_new(JWA_ES256, es_pub.data, es_pub.len, NULL,
		    0);
		struct record_policy pol = policy(1, JWA_RS256, rs_pub);
		pol.parsed_key = k;
		assert_non_null(k);
		expect_bad_sig(&pol, rs, "not a usable RS256 key");
		record_key_free(k);
	}
	/* Every content rule, on records whose signature verifies. */
	const struct rule *r;
	const char *edit;
	char field[64];

	for (size_t i = 0; (edit = edit_at(i, &r)) != NULL; i++) {
		json_t *m = mutate(edit, field, sizeof field);
		char *tok = sign_es(m);

		expect_same_is(JWA_ES256, es_pub, tok, r->want, edit);
		free(tok);
		json_decref(m);
	}
	free(es);
	free(rs);
	free(hs);
	free(es_other);
	free(hs_other);
	free(confused);
	free(none);
	free(hs_jwt);
	free(stripped);
	free(payload);
	json_decref(c);
}

/* With a parsed key, the raw bytes are not looked at. */
static void
test_parsed_key_wins(void **state)
{
	json_t *c = good_content();
	char *tok = sign_es(c), detail[256];
	struct record_key *k = record_key_new(JWA_ES256, es_pub.data, es_pub.len, detail,
	    sizeof detail);
	struct record_policy pol = policy(1, JWA_ES256, es_other_pub);

	(void)state;
	assert_non_null(k);
	expect_bad_sig(&pol, tok, "signature: does not verify");
	pol.parsed_key = k;
	assert_int_equal(load_raw(&pol, tok, detail, sizeof detail, NULL), RECORD_OK);
	pol.key = NULL;
	pol.key_len = 0;
	assert_int_equal(load_raw(&pol, tok, detail, sizeof detail, NULL), RECORD_OK);
	pol.parsed_key = NULL;
	expect_bad_sig(&pol, tok, "no verification key");
	record_key_free(k);
	free(tok);
	json_decref(c);
}

/* ---- key sets: a JWKS in verify_key_file (warrantd(7) §3.2, RFC 7517) ---- */

/* Big-endian bytes of a BIGNUM parameter of pk, base64url; `pad` > 0 pads
 * to that many bytes (an EC coordinate), 0 is the minimum (an RSA number). */
static char *
bn_param_b64(const EVP_PKEY *pk, const char *name, int pad)
{
	BIGNUM *bn = NULL;
	unsigned char buf[1024];
	int n;

	assert_int_equal(EVP_PKEY_get_bn_param(pk, name, &bn), 1);
	n = pad > 0 ? BN_bn2binpad(bn, buf, pad) : BN_bn2bin(bn, buf);
	assert_true(n > 0);
	BN_free(bn);
	return b64url(buf, (size_t)n);
}

/* The JWK of a PEM public key (ES256, RS256) or HS256 secret, with `kid`
 * when not NULL. Caller decrefs. */
static json_t *
jwk_of(enum jwa_alg alg, struct blob key, const char *kid)
{
	json_t *j;
	char *a, *b;

	if (alg == JWA_HS256) {
		a = b64url(key.data, key.len);
		j = json_pack("{s:s, s:s}", "kty", "oct", "k", a);
		free(a);
	} else {
		BIO *bio = BIO_new_mem_buf(key.data, (int)key.len);
		EVP_PKEY *pk = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
		assert_non_null(pk);
		if (alg == JWA_ES256) {
			a = bn_param_b64(pk, OSSL_PKEY_PARAM_EC_PUB_X, 32);
			b = bn_param_b64(pk, OSSL_PKEY_PARAM_EC_PUB_Y, 32);
			j = json_pack("{s:s, s:s, s:s, s:s}", "kty", "EC", "crv", "P-256", "x", a,
			    "y", b);
		} else {
			a = bn_param_b64(pk, OSSL_PKEY_PARAM_RSA_N, 0);
			b = bn_param_b64(pk, OSSL_PKEY_PARAM_RSA_E, 0);
			j = json_pack("{s:s, s:s, s:s}", "kty", "RSA", "n", a, "e", b);
		}
		free(a);
		free(b);
		EVP_PKEY_free(pk);
		BIO_free(bio);
	}
	assert_non_null(j);
	if (kid != NULL)
		assert_int_equal(json_object_set_new(j, "kid", json_string(kid)), 0);
	return j;
}

/* {"keys": [jwks...]} as text (consumes the JWKs; NULL ends the list). */
static struct blob
jwks_of(json_t *first, ...)
{
	json_t *keys = json_array(), *k;
	va_list ap;
	struct blob b;

	va_start(ap, first);
	for (k = first; k != NULL; k = va_arg(ap, json_t *))
		assert_int_equal(json_array_append_new(keys, k), 0);
	va_end(ap);
	json_t *doc = json_pack("{s:o}", "keys", keys);
	b.data = (unsigned char *)json_dumps(doc, JSON_INDENT(2));
	assert_non_null(b.data);
	b.len = strlen((char *)b.data);
	json_decref(doc);
	return b;
}

/* What `alg` keys its one-key JWKS on, in the rows below. */
static struct blob
row_key(enum jwa_alg alg)
{
	return alg == JWA_ES256 ? es_pub : alg == JWA_RS256 ? rs_pub : hs_secret;
}

/* Each edit (the language of `rules`) is made to the one JWK of a JWKS
 * that holds the test key of `alg`; err NULL: the set is accepted, else
 * record_key_new refuses it with `err` in its message. */
struct jwk_rule {
	enum jwa_alg alg;
	const char *err;
	const char *edits[12];
};

#define ZERO32 "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"	/* 32 zero bytes */

static const struct jwk_rule jwk_rules[] = {
	{JWA_ES256, NULL, {"kid=2026-12", "use=sig", "alg=ES256", "key_ops:=[\"verify\"]",
	    "key_ops:=[\"sign\",\"verify\"]", "x5c:=[]", "ext:=true", "kid=caf\xc3\xa9",
	    "-kid"}},
	{JWA_RS256, NULL, {"kid=r1", "alg=RS256", "use=sig"}},
	{JWA_HS256, NULL, {"kid=h1", "alg=HS256", "use=sig"}},
	{JWA_ES256, "kty is not \"EC\", which [records] algorithm ES256 needs", {"kty=RSA",
	    "kty=oct", "kty=ec", "-kty", "kty:=1"}},
	{JWA_RS256, "kty is not \"RSA\"", {"kty=EC", "kty=oct"}},
	{JWA_HS256, "kty is not \"oct\"", {"kty=EC", "kty=RSA"}},
	{JWA_ES256, "crv is not \"P-256\"", {"crv=P-384", "crv=P-521", "crv=secp256k1", "-crv",
	    "crv:=null"}},
	{JWA_ES256, "\"x\" missing", {"-x"}},
	{JWA_ES256, "\"y\" missing", {"-y"}},
	{JWA_RS256, "\"n\" missing", {"-n"}},
	{JWA_RS256, "\"e\" missing", {"-e"}},
	{JWA_HS256, "\"k\" missing", {"-k"}},
	{JWA_ES256, "is not base64url without padding", {"x=" ZERO32 "=", "x:=5", "y=a+b/",
	    "x=A", "x=" "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB"}},
	{JWA_ES256, "x and y must be 32 bytes each", {"x=AAAA", "y=" ZERO32 "A", "y="}},
	{JWA_ES256, "not a point on P-256", {"x=" ZERO32, "y=" ZERO32}},
	{JWA_RS256, "leading zero byte", {"n=AAEB", "e=AAEAAQ", "e=" ZERO32}},
	{JWA_RS256, "not an RSA public key", {"e=AQ", "e=Ag"}},
	{JWA_RS256, "shorter than 2048 bits", {"n=wAAAAAAB"}},
	{JWA_HS256, "k: the HS256 secret is shorter than 32 bytes", {"k=c2hvcnQ"}},
	{JWA_HS256, "k: the HS256 secret is empty", {"k="}},
	{JWA_HS256, "a PEM document", {
	    "k=LS0tLS1CRUdJTiBQVUJMSUMgS0VZLS0tLS0KMDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY"}},
	{JWA_ES256, "use is not \"sig\"", {"use=enc", "use=SIG", "use:=true"}},
	{JWA_HS256, "use is not \"sig\"", {"use=enc"}},
	{JWA_ES256, "key_ops does not hold \"verify\"", {"key_ops:=[\"sign\"]", "key_ops:=[]",
	    "key_ops=verify"}},
	{JWA_ES256, "alg is not ES256", {"alg=ES384", "alg=RS256", "alg=HS256", "alg=none",
	    "alg:=1"}},
	{JWA_RS256, "alg is not RS256", {"alg=PS256", "alg=RS512"}},
	{JWA_HS256, "alg is not HS256", {"alg=HS512", "alg=ES256"}},
	{JWA_ES256, "a private key (\"d\")", {"d=" ZERO32}},
	{JWA_RS256, "a private key (\"d\")", {"d=AQAB"}},
	{JWA_ES256, "kid is not a string of 1 to 256 bytes", {"kid:=1", "kid=", "kid=a\x01" "b",
	    "kid=a\nb", "kid:=null",
	    "kid=x123456789012345678901234567890123456789012345678901234567890123"
	    "456789012345678901234567890123456789012345678901234567890123456789012345"
	    "678901234567890123456789012345678901234567890123456789012345678901234567"
	    "8901234567890123456789012345678901234567890123456789"}},
};

/* The i-th edit of jwk_rules and, in *rule, its rule; NULL past the last. */
static const char *
jwk_edit_at(size_t i, const struct jwk_rule **rule)
{
	for (size_t r = 0; r < sizeof jwk_rules / sizeof jwk_rules[0]; r++)
		for (size_t e = 0; e < sizeof jwk_rules[r].edits / sizeof jwk_rules[r].edits[0] &&
		    jwk_rules[r].edits[e] != NULL; e++)
			if (i-- == 0) {
				*rule = &jwk_rules[r];
				return jwk_rules[r].edits[e];
			}
	return NULL;
}

static void
test_jwk_rules(void **state)
{
	const struct jwk_rule *r;
	const char *edit;
	char err[256], field[64];

	(void)state;
	for (size_t i = 0; (edit = jwk_edit_at(i, &r)) != NULL; i++) {
		json_t *jwk = jwk_of(r->alg, row_key(r->alg), "k1");
		apply_edit(jwk, edit, field, sizeof field);
		struct blob set = jwks_of(jwk, NULL);
		err[0] = '\0';
		struct record_key *k = record_key_new(r->alg, set.data, set.len, err, sizeof err);

		if (r->err == NULL && k == NULL)
			fail_msg("%s %s: refused: %s", jwa_name(r->alg), edit, err);
		if (r->err != NULL && k != NULL)
			fail_msg("%s %s: accepted, want \"%s\"", jwa_name(r->alg), edit, r->err);
		if (r->err != NULL && (strstr(err, r->err) == NULL ||
		    strstr(err, "JWKS keys[0]") == NULL))
			fail_msg("%s %s: error \"%s\" lacks \"JWKS keys[0]\" or \"%s\"",
			    jwa_name(r->alg), edit, err, r->err);
		if (k != NULL)
			assert_int_equal(record_key_count(k), 1);
		record_key_free(k);
		free(set.data);
	}
}

/* A JWKS as a whole: its JSON, its "keys", and the kids across keys. */
static void
test_jwks_doc_rules(void **state)
{
	struct {
		enum jwa_alg alg;
		const char *text, *err;
	} docs[] = {
		{JWA_ES256, "{", "not a JWKS: line 1"},
		{JWA_ES256, "  \n{\"keys\": [}", "not a JWKS: line 2"},
		{JWA_ES256, "{}", "no \"keys\" array"},
		{JWA_ES256, "{\"keys\": []}", "no \"keys\" array"},
		{JWA_ES256, "{\"keys\": {}}", "no \"keys\" array"},
		{JWA_ES256, "{\"keys\": [1]}", "JWKS keys[0]: not a JSON object"},
		{JWA_ES256, "{\"keys\": [], \"keys\": []}", "not a JWKS"},
		{JWA_ES256, "{\"keys\": [{\"kty\": \"EC\", \"kty\": \"EC\"}]}", "not a JWKS"},
		{JWA_ES256, "{\"kty\": \"EC\", \"crv\": \"P-256\"}", "a single JWK goes inside"},
		{JWA_HS256, "{\"keys\": [{\"kty\": \"oct\" \"k\": \"c2VjcmV0LXRoYXQtaXMtbG9uZy1lbm91Z2gtdG8tcGFzcw\"}]}",
		    "not a JWKS: line 1"},
	};
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
		err[0] = '\0';
		struct record_key *k = record_key_new(docs[i].alg, (const unsigned char *)docs[i].text,
		    strlen(docs[i].text), err, sizeof err);
		if (k != NULL || strstr(err, docs[i].err) == NULL)
			fail_msg("%s: %s \"%s\", want \"%s\"", docs[i].text,
			    k != NULL ? "accepted" : "error", err, docs[i].err);
		/* jansson's "near '...'" would quote the secret. */
		assert_null(strstr(err, "c2Vjcm"));
		assert_null(strstr(err, "near"));
	}

	/* The kids across keys: each named when there are several, none twice. */
	struct blob dup = jwks_of(jwk_of(JWA_ES256, es_pub, "k1"),
	    jwk_of(JWA_ES256, es_other_pub, "k1"), NULL);
	expect_key_refused(JWA_ES256, dup, "JWKS keys[1] (kid \"k1\"): the kid of keys[0] again");
	struct blob unnamed = jwks_of(jwk_of(JWA_ES256, es_pub, "k1"),
	    jwk_of(JWA_ES256, es_other_pub, NULL), NULL);
	expect_key_refused(JWA_ES256, unnamed, "JWKS keys[1]: no kid: with several keys");
	/* A bad key after a good one is found too. */
	struct blob mixed = jwks_of(jwk_of(JWA_ES256, es_pub, "k1"),
	    jwk_of(JWA_RS256, rs_pub, "k2"), NULL);
	expect_key_refused(JWA_ES256, mixed, "JWKS keys[1] (kid \"k2\"): kty is not \"EC\"");
	/* A JWKS for RS256 whose key is too short. */
	struct blob rsa2047 = public_pem(EVP_RSA_gen(2047));
	struct blob short_rsa = jwks_of(jwk_of(JWA_RS256, rsa2047, NULL), NULL);
	expect_key_refused(JWA_RS256, short_rsa, "shorter than 2048 bits");
	/* At most JWKS_KEYS_MAX keys. */
	json_t *many = json_array();
	for (int i = 0; i < 33; i++) {
		char kid[16];
		snprintf(kid, sizeof kid, "k%d", i);
		json_array_append_new(many, jwk_of(JWA_ES256, es_pub, kid));
	}
	json_t *doc = json_pack("{s:o}", "keys", many);
	struct blob too_many = {(unsigned char *)json_dumps(doc, 0), 0};
	too_many.len = strlen((char *)too_many.data);
	expect_key_refused(JWA_ES256, too_many, "holds 33 keys, more than 32");
	json_decref(doc);

	/* Good sets: two keys, the kids told back for the log. */
	struct blob two = jwks_of(jwk_of(JWA_ES256, es_pub, "old"),
	    jwk_of(JWA_ES256, es_other_pub, "new"), NULL);
	struct record_key *k = record_key_new(JWA_ES256, two.data, two.len, err, sizeof err);
	assert_non_null(k);
	assert_int_equal(record_key_count(k), 2);
	assert_string_equal(record_key_kid(k, 0), "old");
	assert_string_equal(record_key_kid(k, 1), "new");
	assert_null(record_key_kid(k, 2));
	record_key_free(k);
	k = record_key_new(JWA_ES256, es_pub.data, es_pub.len, err, sizeof err);
	assert_non_null(k);
	assert_int_equal(record_key_count(k), 1);
	assert_null(record_key_kid(k, 0));
	record_key_free(k);
	/* A JWKS is a JWKS for HS256 too, not a secret that starts with '{'. */
	struct blob hs_two = jwks_of(jwk_of(JWA_HS256, hs_secret, "a"),
	    jwk_of(JWA_HS256, es_pub, "b"), NULL);
	expect_key_refused(JWA_HS256, hs_two, "JWKS keys[1] (kid \"b\"): k: the HS256 secret "
	    "is a PEM document");
	free(dup.data);
	free(unnamed.data);
	free(mixed.data);
	free(rsa2047.data);
	free(short_rsa.data);
	free(too_many.data);
	free(two.data);
	free(hs_two.data);
}

/* Which key a record's kid picks (warrantd(7) §3.2). Sets: "both" holds
 * test-es256 as kid "old" and test-es256-other as "new"; "old" only the
 * first as "old"; "nokid" the first in a JWKS without a kid; "pem" its PEM
 * file. Signer 0 is test-es256.key, 1 test-es256-other.key; kid NULL: the
 * header has none. Every row is loaded with the bytes, the parsed set, and
 * the parsed set through a verifier (another thread's): the same result. */
struct kid_rule {
	const char *set, *kid;
	int signer;
	enum record_status want;
	const char *detail;
};

static const struct kid_rule kid_rules[] = {
	{"both", "old", 0, RECORD_OK, NULL},
	{"both", "new", 1, RECORD_OK, NULL},
	{"both", "new", 0, RECORD_BAD_SIGNATURE, "signature: does not verify"},
	{"both", "old", 1, RECORD_BAD_SIGNATURE, "signature: does not verify"},
	{"both", NULL, 0, RECORD_BAD_SIGNATURE, "no kid, and verify_key_file holds 2 keys"},
	{"both", "retired", 0, RECORD_BAD_SIGNATURE, "the kid names no key"},
	{"both", "", 0, RECORD_BAD_SIGNATURE, "the kid names no key"},
	{"both", "OLD", 0, RECORD_BAD_SIGNATURE, "the kid names no key"},
	{"both", "old ", 0, RECORD_BAD_SIGNATURE, "the kid names no key"},
	{"old", "old", 0, RECORD_OK, NULL},
	{"old", NULL, 0, RECORD_OK, NULL},
	{"old", "new", 0, RECORD_BAD_SIGNATURE, "the kid names no key"},
	{"old", "new", 1, RECORD_BAD_SIGNATURE, "the kid names no key"},
	{"old", NULL, 1, RECORD_BAD_SIGNATURE, "signature: does not verify"},
	{"nokid", NULL, 0, RECORD_OK, NULL},
	{"nokid", "anything", 0, RECORD_OK, NULL},
	{"nokid", "anything", 1, RECORD_BAD_SIGNATURE, "signature: does not verify"},
	{"pem", "decider-key-7", 0, RECORD_OK, NULL},
	{"pem", NULL, 0, RECORD_OK, NULL},
};

static struct blob
kid_set(const char *name)
{
	if (strcmp(name, "both") == 0)
		return jwks_of(jwk_of(JWA_ES256, es_pub, "old"),
		    jwk_of(JWA_ES256, es_other_pub, "new"), NULL);
	if (strcmp(name, "old") == 0)
		return jwks_of(jwk_of(JWA_ES256, es_pub, "old"), NULL);
	if (strcmp(name, "nokid") == 0)
		return jwks_of(jwk_of(JWA_ES256, es_pub, NULL), NULL);
	struct blob b = {(unsigned char *)strdup((char *)es_pub.data), es_pub.len};
	assert_non_null(b.data);
	return b;
}

static void
expect_kid_rule(const struct kid_rule *r, const struct record_policy *pol, const char *tok,
		const char *how)
{
	char detail[256];
	enum record_status st = load_raw(pol, tok, detail, sizeof detail, NULL);

	if (st != r->want || (r->detail != NULL && strstr(detail, r->detail) == NULL))
		fail_msg("set %s, kid %s, signer %d (%s): %s \"%s\", want %s \"%s\"", r->set,
		    r->kid ? r->kid : "(none)", r->signer, how, record_status_code(st), detail,
		    record_status_code(r->want), r->detail ? r->detail : "");
	/* The header's kid is the attacker's text: never in the detail. */
	if (r->kid != NULL && strlen(r->kid) > 3)
		assert_null(strstr(detail, r->kid));
}

static void
test_kid_picks_key(void **state)
{
	json_t *c = good_content();
	struct record_verifier *v = record_verifier_new();
	char err[256];

	(void)state;
	assert_non_null(v);
	for (size_t i = 0; i < sizeof kid_rules / sizeof kid_rules[0]; i++) {
		const struct kid_rule *r = &kid_rules[i];
		struct blob priv = r->signer ? es_other_key : es_key, set = kid_set(r->set);
		char *tok = record_sign(JWA_ES256, priv.data, priv.len, r->kid, c);
		struct record_policy pol = policy(1, JWA_ES256, set);
		struct record_key *k = record_key_new(JWA_ES256, set.data, set.len, err,
		    sizeof err);

		assert_non_null(tok);
		if (k == NULL)
			fail_msg("set %s: %s", r->set, err);
		expect_kid_rule(r, &pol, tok, "bytes");
		pol.parsed_key = k;
		pol.key = NULL;
		pol.key_len = 0;
		expect_kid_rule(r, &pol, tok, "parsed");
		pol.verifier = v;
		expect_kid_rule(r, &pol, tok, "verifier");
		expect_kid_rule(r, &pol, tok, "verifier again");
		record_key_free(k);
		free(tok);
		free(set.data);
	}
	record_verifier_free(v);
	json_decref(c);
}

/* The header's kid as JSON: compared after unescaping, and only a string. */
static void
test_kid_header_forms(void **state)
{
	json_t *c = good_content();
	char *payload = json_dumps(c, JSON_COMPACT);
	struct blob set = jwks_of(jwk_of(JWA_HS256, hs_secret, "old"),
	    jwk_of(JWA_HS256, (struct blob){(unsigned char *)"another-secret-of-32-bytes-or-more",
	    34}, "new"), NULL);
	struct record_policy pol = policy(1, JWA_HS256, set);
	const struct {
		const char *header;
		enum record_status want;
		const char *detail;
	} forms[] = {
		{"{\"alg\":\"HS256\",\"typ\":\"decision+jwt\",\"kid\":\"old\"}", RECORD_OK, NULL},
		{"{\"alg\":\"HS256\",\"typ\":\"decision+jwt\",\"kid\":\"\\u006fld\"}", RECORD_OK,
		    NULL},
		{"{\"kid\":\"old\",\"alg\":\"HS256\",\"typ\":\"decision+jwt\"}", RECORD_OK, NULL},
		{"{\"alg\":\"HS256\",\"typ\":\"decision+jwt\",\"kid\":5}", RECORD_BAD_SIGNATURE,
		    "header: kid is not a string"},
		{"{\"alg\":\"HS256\",\"typ\":\"decision+jwt\",\"kid\":null}", RECORD_BAD_SIGNATURE,
		    "header: kid is not a string"},
		{"{\"alg\":\"HS256\",\"typ\":\"decision+jwt\",\"kid\":[\"old\"]}",
		    RECORD_BAD_SIGNATURE, "header: kid is not a string"},
		{"{\"alg\":\"HS256\",\"typ\":\"decision+jwt\",\"kid\":\"old\",\"kid\":\"new\"}",
		    RECORD_BAD_SIGNATURE, "header: not a JSON object"},
		{"{\"alg\":\"HS256\",\"typ\":\"decision+jwt\",\"kid\":\"new\"}", RECORD_BAD_SIGNATURE,
		    "signature: does not verify"},
		{"{\"alg\":\"HS256\",\"typ\":\"decision+jwt\",\"kid\":\"old\\u0000\"}",
		    RECORD_BAD_SIGNATURE, "header: not a JSON object"},
	};
	char detail[256];

	(void)state;
	assert_non_null(payload);
	for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
		char *tok = hand_token(forms[i].header, payload, hs_secret.data, hs_secret.len);
		enum record_status st = load_raw(&pol, tok, detail, sizeof detail, NULL);
		if (st != forms[i].want ||
		    (forms[i].detail != NULL && strstr(detail, forms[i].detail) == NULL))
			fail_msg("%s: %s \"%s\"", forms[i].header, record_status_code(st), detail);
		free(tok);
	}
	/* A kid longer than any a set may hold names no key (and is not read). */
	char header[8192];
	int n = snprintf(header, sizeof header, "{\"alg\":\"HS256\",\"typ\":\"decision+jwt\","
	    "\"kid\":\"");
	memset(header + n, 'a', 4000);
	snprintf(header + n + 4000, sizeof header - (size_t)n - 4000, "\"}");
	char *tok = hand_token(header, payload, hs_secret.data, hs_secret.len);
	expect_bad_sig(&pol, tok, "the kid names no key");
	free(tok);
	free(payload);
	free(set.data);
	json_decref(c);
}

/* A rotation as a verifying thread sees it: one verifier over the set with
 * both keys (contexts per key, kept across records of either), then over
 * the set that dropped the old key, whose records are bad-signature. */
static void
test_verifier_rotation(void **state)
{
	json_t *c = good_content();
	char *by_old = record_sign(JWA_ES256, es_key.data, es_key.len, "old", c);
	char *by_new = record_sign(JWA_ES256, es_other_key.data, es_other_key.len, "new", c);
	struct blob both = kid_set("both");
	struct blob only_new = jwks_of(jwk_of(JWA_ES256, es_other_pub, "new"), NULL);
	char err[256], detail[256];
	struct record_key *a = record_key_new(JWA_ES256, both.data, both.len, err, sizeof err);
	struct record_key *b = record_key_new(JWA_ES256, only_new.data, only_new.len, err,
	    sizeof err);
	struct record_verifier *v = record_verifier_new();
	struct record_policy pol = policy(1, JWA_ES256, both);

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(v);
	pol.key = NULL;
	pol.key_len = 0;
	pol.verifier = v;
	pol.parsed_key = a;
	for (int round = 0; round < 3; round++) {
		assert_int_equal(load_raw(&pol, by_old, detail, sizeof detail, NULL), RECORD_OK);
		assert_int_equal(load_raw(&pol, by_new, detail, sizeof detail, NULL), RECORD_OK);
	}
	record_key_free(a);	/* the reload lets go: the verifier's owner keeps it */
	assert_int_equal(load_raw(&pol, by_new, detail, sizeof detail, NULL), RECORD_OK);
	pol.parsed_key = b;
	assert_int_equal(load_raw(&pol, by_new, detail, sizeof detail, NULL), RECORD_OK);
	expect_bad_sig(&pol, by_old, "the kid names no key");
	record_key_free(b);
	record_verifier_free(v);
	free(by_old);
	free(by_new);
	free(both.data);
	free(only_new.data);
	json_decref(c);
}

static void
test_free_null(void **state)
{
	(void)state;
	record_free(NULL);
}

/* More than one key: issuer required (warrantd(7) §3.2). */
static void
test_issuer_required_with_two_keys(void **state)
{
	char err[256];

	(void)state;
	struct blob two = jwks_of(jwk_of(JWA_ES256, es_pub, "a"),
	    jwk_of(JWA_ES256, es_other_pub, "b"), NULL);
	struct record_key *k = record_key_new(JWA_ES256, two.data, two.len, err, sizeof err);
	assert_non_null(k);
	const char *why = record_key_issuer_problem(k, NULL);
	assert_non_null(why);
	assert_non_null(strstr(why, "[records] issuer is required"));
	assert_non_null(record_key_issuer_problem(k, ""));
	assert_null(record_key_issuer_problem(k, "decider-1"));
	record_key_free(k);
	free(two.data);
	struct blob one = jwks_of(jwk_of(JWA_ES256, es_pub, "a"), NULL);
	k = record_key_new(JWA_ES256, one.data, one.len, err, sizeof err);
	assert_non_null(k);
	assert_null(record_key_issuer_problem(k, NULL));
	record_key_free(k);
	free(one.data);
	k = record_key_new(JWA_ES256, es_pub.data, es_pub.len, err, sizeof err);
	assert_null(record_key_issuer_problem(k, NULL));	/* a PEM file: one key */
	record_key_free(k);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status_codes),
		cmocka_unit_test(test_id_syntax),
		cmocka_unit_test(test_es256_valid),
		cmocka_unit_test(test_rs256_valid),
		cmocka_unit_test(test_hs256_valid),
		cmocka_unit_test(test_wrong_key),
		cmocka_unit_test(test_parsed_key_reuse),
		cmocka_unit_test(test_verifier_follows_key),
		cmocka_unit_test(test_tampered_payload),
		cmocka_unit_test(test_signature_stripped_or_cut),
		cmocka_unit_test(test_alg_none),
		cmocka_unit_test(test_alg_confusion),
		cmocka_unit_test(test_key_type_mismatch),
		cmocka_unit_test(test_typ_rules),
		cmocka_unit_test(test_not_a_jws),
		cmocka_unit_test(test_signed_payload_not_object),
		cmocka_unit_test(test_signature_off),
		cmocka_unit_test(test_json_rules),
		cmocka_unit_test(test_field_rules),
		cmocka_unit_test(test_field_rules_signed),
		cmocka_unit_test(test_parsed_times),
		cmocka_unit_test(test_issuer),
		cmocka_unit_test(test_audience),
		cmocka_unit_test(test_audience_signed),
		cmocka_unit_test(test_issuer_required_with_two_keys),
		cmocka_unit_test(test_skew_and_window_follow_policy),
		cmocka_unit_test(test_unknown_action_order),
		cmocka_unit_test(test_action_checked_later),
		cmocka_unit_test(test_key_ref),
		cmocka_unit_test(test_owner_out),
		cmocka_unit_test(test_sign_header_and_kid),
		cmocka_unit_test(test_sign_refuses),
		cmocka_unit_test(test_key_new_accepts),
		cmocka_unit_test(test_key_new_refuses),
		cmocka_unit_test(test_hs256_weak_secrets),
		cmocka_unit_test(test_text_field_length),
		cmocka_unit_test(test_max_bytes),
		cmocka_unit_test(test_parsed_key_same_results),
		cmocka_unit_test(test_parsed_key_wins),
		cmocka_unit_test(test_jwk_rules),
		cmocka_unit_test(test_jwks_doc_rules),
		cmocka_unit_test(test_kid_picks_key),
		cmocka_unit_test(test_kid_header_forms),
		cmocka_unit_test(test_verifier_rotation),
		cmocka_unit_test(test_free_null),
	};

	return cmocka_run_group_tests(tests, setup_keys, teardown_keys);
}
