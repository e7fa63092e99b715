/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for src/jose/jws.c: what it signs is checked by two other
 * implementations, libjwt and OpenSSL called here by hand, never by jws.c
 * itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jwt.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "jose/b64url.h"
#include "jose/jwks.h"
#include "jose/jws.h"
#include "testlib.h"

struct blob {
	unsigned char *data;
	size_t len;
};

static struct blob es_key, es_pub, rs_key, rs_pub, hs_secret;

static struct blob
blob_of(const char *path)
{
	struct blob b;

	b.data = read_whole(path, &b.len);
	return b;
}

static int
setup(void **state)
{
	(void)state;
	es_key = blob_of("tests/data/test-es256.key");
	es_pub = blob_of("tests/data/test-es256.pub");
	rs_key = blob_of("tests/data/test-rs256.key");
	rs_pub = blob_of("tests/data/test-rs256.pub");
	hs_secret = blob_of("tests/data/test-hs256.secret");
	return es_key.len && es_pub.len && rs_key.len && rs_pub.len && hs_secret.len ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	free(es_key.data);
	free(es_pub.data);
	free(rs_key.data);
	free(rs_pub.data);
	free(hs_secret.data);
	return 0;
}

static struct jws_key *
key_for(enum jwa_alg alg, struct blob b)
{
	char err[160];
	struct jws_key *k = jws_key_new(alg, b.data, b.len, err, sizeof err);

	if (k == NULL)
		fail_msg("jws_key_new: %s", err);
	assert_int_equal(jws_key_alg(k), alg);
	return k;
}

/* A token like the client assertion: typ JWT, a kid, a few claims. */
static char *
sign_sample(enum jwa_alg alg, struct blob key)
{
	struct jws_key *k = key_for(alg, key);
	json_t *h = json_pack("{s:s, s:s}", "typ", "JWT", "kid", "k-1");
	json_t *p = json_pack("{s:s, s:I, s:s}", "iss", "worker-1", "exp", (json_int_t)4102444800,
	    "jti", "0123abcd");
	char *tok = jws_sign(k, h, p);

	json_decref(h);
	json_decref(p);
	jws_key_free(k);
	assert_non_null(tok);
	return tok;
}

/* libjwt 1.10 decodes and verifies it with the public key or the secret. */
static void
expect_libjwt_verifies(enum jwa_alg alg, struct blob priv, struct blob verify_with,
		       jwt_alg_t want)
{
	char *tok = sign_sample(alg, priv);
	jwt_t *jwt = NULL;

	assert_int_equal(jwt_decode(&jwt, tok, verify_with.data, (int)verify_with.len), 0);
	assert_int_equal(jwt_get_alg(jwt), want);
	assert_string_equal(jwt_get_header(jwt, "kid"), "k-1");
	assert_string_equal(jwt_get_grant(jwt, "iss"), "worker-1");
	assert_int_equal(jwt_get_grant_int(jwt, "exp"), 4102444800L);
	jwt_free(jwt);

	/* One bit of the payload changed: libjwt refuses it. */
	char *dot = strchr(tok, '.');
	dot[1] = dot[1] == 'A' ? 'B' : 'A';
	assert_int_not_equal(jwt_decode(&jwt, tok, verify_with.data, (int)verify_with.len), 0);
	free(tok);
}

static void
test_libjwt_verifies_each_alg(void **state)
{
	(void)state;
	expect_libjwt_verifies(JWA_ES256, es_key, es_pub, JWT_ALG_ES256);
	expect_libjwt_verifies(JWA_RS256, rs_key, rs_pub, JWT_ALG_RS256);
	expect_libjwt_verifies(JWA_HS256, hs_secret, hs_secret, JWT_ALG_HS256);
}

/* The signature segment decoded. */
static struct blob
sig_of(const char *tok, size_t *input_len)
{
	const char *dot2 = strrchr(tok, '.');
	struct blob b = {NULL, 0};

	assert_non_null(dot2);
	*input_len = (size_t)(dot2 - tok);
	assert_int_equal(b64url_decode(dot2 + 1, strlen(dot2 + 1), &b.data, &b.len), 0);
	return b;
}

/* ES256 is R || S, 64 bytes (RFC 7518 §3.4): OpenSSL verifies it once it is
 * made DER here, by hand. */
static void
test_es256_is_r_s_not_der(void **state)
{
	char *tok = sign_sample(JWA_ES256, es_key);
	size_t input_len;
	struct blob sig = sig_of(tok, &input_len);
	EVP_PKEY *pk = jws_pem_read(es_pub.data, es_pub.len, 0);
	ECDSA_SIG *es = ECDSA_SIG_new();
	unsigned char *der = NULL;
	EVP_MD_CTX *md = EVP_MD_CTX_new();

	(void)state;
	assert_int_equal(sig.len, 64);
	assert_non_null(pk);
	assert_int_equal(ECDSA_SIG_set0(es, BN_bin2bn(sig.data, 32, NULL),
	    BN_bin2bn(sig.data + 32, 32, NULL)), 1);
	int der_len = i2d_ECDSA_SIG(es, &der);
	assert_true(der_len > 0);
	assert_int_equal(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, pk), 1);
	assert_int_equal(EVP_DigestVerify(md, der, (size_t)der_len, (unsigned char *)tok,
	    input_len), 1);
	EVP_MD_CTX_free(md);
	OPENSSL_free(der);
	ECDSA_SIG_free(es);
	EVP_PKEY_free(pk);
	free(sig.data);
	free(tok);

	tok = sign_sample(JWA_RS256, rs_key);
	sig = sig_of(tok, &input_len);
	assert_int_equal(sig.len, 256);
	free(sig.data);
	free(tok);
}

/* The header segment as text. */
static char *
header_text(const char *tok)
{
	unsigned char *h = NULL;
	size_t n = 0;

	assert_int_equal(b64url_decode(tok, (size_t)(strchr(tok, '.') - tok), &h, &n), 0);
	return (char *)h;
}

static void
test_header_alg_first_then_callers(void **state)
{
	struct jws_key *k = key_for(JWA_HS256, hs_secret);
	json_t *p = json_pack("{s:i}", "n", 1);
	json_t *h = json_pack("{s:s, s:s}", "typ", "dpop+jwt", "kid", "k");
	json_t *same = json_pack("{s:s, s:s}", "typ", "x", "alg", "HS256");
	json_t *other = json_pack("{s:s}", "alg", "RS256");
	json_t *not_str = json_pack("{s:i}", "alg", 1);
	json_t *arr = json_array();
	char *tok, *text;

	(void)state;
	tok = jws_sign(k, h, p);
	text = header_text(tok);
	assert_string_equal(text, "{\"alg\":\"HS256\",\"typ\":\"dpop+jwt\",\"kid\":\"k\"}");
	free(text);
	free(tok);

	tok = jws_sign(k, NULL, p);
	text = header_text(tok);
	assert_string_equal(text, "{\"alg\":\"HS256\"}");
	free(text);
	free(tok);

	tok = jws_sign(k, same, p);	/* an alg that agrees is kept in place */
	text = header_text(tok);
	assert_string_equal(text, "{\"alg\":\"HS256\",\"typ\":\"x\"}");
	free(text);
	free(tok);

	assert_null(jws_sign(k, other, p));
	assert_null(jws_sign(k, not_str, p));
	assert_null(jws_sign(k, arr, p));
	assert_null(jws_sign(k, h, NULL));
	assert_null(jws_sign(NULL, h, p));
	json_decref(p);
	json_decref(h);
	json_decref(same);
	json_decref(other);
	json_decref(not_str);
	json_decref(arr);
	jws_key_free(k);
}

static void
expect_refused(enum jwa_alg alg, const void *key, size_t len, const char *why)
{
	char err[160] = "";

	assert_null(jws_key_new(alg, key, len, err, sizeof err));
	if (strstr(err, why) == NULL)
		fail_msg("want \"%s\" in \"%s\"", why, err);
}

static void
test_keys_refused(void **state)
{
	static const char short_secret[] = "only-31-bytes-of-secret-xxxxxxx";

	(void)state;
	expect_refused(JWA_NONE, es_key.data, es_key.len, "not ES256, RS256 or HS256");
	expect_refused(JWA_COUNT, es_key.data, es_key.len, "not ES256, RS256 or HS256");
	expect_refused(JWA_ES256, NULL, 0, "empty");
	expect_refused(JWA_ES256, es_pub.data, es_pub.len, "not an unencrypted PEM private key");
	expect_refused(JWA_ES256, rs_key.data, rs_key.len, "want an EC P-256 private key");
	expect_refused(JWA_RS256, es_key.data, es_key.len, "want an RSA private key");
	expect_refused(JWA_HS256, short_secret, sizeof short_secret - 1, "shorter than 32");
	expect_refused(JWA_HS256, es_pub.data, es_pub.len, "PEM document");
	jws_key_free(NULL);
}

static void
test_split(void **state)
{
	struct jws_parts p;
	char *tok = sign_sample(JWA_HS256, hs_secret);

	(void)state;
	assert_int_equal(jws_split(tok, &p), 0);
	assert_int_equal(p.sig_len, JWS_HS256_LEN);
	assert_int_equal(p.input_len, (size_t)(strrchr(tok, '.') - tok));
	assert_memory_equal(p.header, "{\"alg\":\"HS256\"", 14);
	jws_parts_clear(&p);
	assert_null(p.header);
	free(tok);

	assert_int_equal(jws_split(NULL, &p), -1);
	assert_int_equal(jws_split("e30.e30", &p), -1);
	assert_int_equal(jws_split("e30.e30.e30.e30", &p), -1);
	assert_int_equal(jws_split("e30.e3=.", &p), -1);
	assert_null(p.header);
	assert_int_equal(jws_split("e30.e30.", &p), 0);	/* empty signature: the caller's call */
	assert_int_equal(p.sig_len, 0);
	jws_parts_clear(&p);
}

/* The one splitter under jws_split and token_lifetime_ms: exactly two dots,
 * each segment a span of the string, nothing decoded. */
static void
test_segments(void **state)
{
	struct jws_segments s;
	const char *t = "aa.b.cccc";

	(void)state;
	assert_int_equal(jws_segments(t, &s), 0);
	assert_ptr_equal(s.at[0], t);
	assert_int_equal(s.len[0], 2);
	assert_ptr_equal(s.at[1], t + 3);
	assert_int_equal(s.len[1], 1);
	assert_ptr_equal(s.at[2], t + 5);
	assert_int_equal(s.len[2], 4);
	assert_int_equal(jws_segments("..", &s), 0);	/* empty segments: the caller's call */
	assert_int_equal(s.len[0] + s.len[1] + s.len[2], 0);
	assert_int_equal(jws_segments(NULL, &s), -1);
	assert_int_equal(jws_segments("opaque", &s), -1);
	assert_int_equal(jws_segments("a.b", &s), -1);
	assert_int_equal(jws_segments("a.b.c.d.e", &s), -1);	/* a JWE */
}

/* ---- verification keys: the JWK of a PEM key is that key ---- */

/* The JWK members of the public key in `pem` (ES256: crv, x, y; RS256: n,
 * e), written by OpenSSL's own numbers, and the parsed key. */
static json_t *
jwk_from_pem(enum jwa_alg alg, struct blob pem, EVP_PKEY **pk)
{
	BIO *bio = BIO_new_mem_buf(pem.data, (int)pem.len);
	const char *names[2] = {alg == JWA_ES256 ? "qx" : "n", alg == JWA_ES256 ? "qy" : "e"};
	json_t *j = json_pack("{s:s}", "kty", alg == JWA_ES256 ? "EC" : "RSA");

	*pk = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
	BIO_free(bio);
	assert_non_null(*pk);
	if (alg == JWA_ES256)
		json_object_set_new(j, "crv", json_string("P-256"));
	for (int i = 0; i < 2; i++) {
		BIGNUM *bn = NULL;
		unsigned char buf[512];
		assert_int_equal(EVP_PKEY_get_bn_param(*pk, names[i], &bn), 1);
		int n = alg == JWA_ES256 ? BN_bn2binpad(bn, buf, 32) : BN_bn2bin(bn, buf);
		BN_free(bn);
		char *b = b64url_encode(buf, (size_t)n);
		json_object_set_new(j, alg == JWA_ES256 ? (i ? "y" : "x") : names[i], json_string(b));
		free(b);
	}
	return j;
}

static void
test_vkeys_jwk_is_the_key(void **state)
{
	const enum jwa_alg algs[] = {JWA_ES256, JWA_RS256};
	const struct blob pems[] = {es_pub, rs_pub};
	struct jwks_key *v;
	char err[256];

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		EVP_PKEY *pk;
		json_t *doc = json_pack("{s:[o]}", "keys", jwk_from_pem(algs[i], pems[i], &pk));
		char *text = json_dumps(doc, 0);
		int n = jwks_read((unsigned char *)text, strlen(text), algs[i], &v, err,
		    sizeof err);
		if (n != 1)
			fail_msg("%s: %s", jwa_name(algs[i]), err);
		assert_null(v[0].kid);
		assert_null(v[0].secret);
		assert_int_equal(EVP_PKEY_eq(v[0].pk, pk), 1);	/* OpenSSL's word */
		jwks_free(v, 1);
		/* The PEM itself: one key, no kid, the same one. */
		assert_int_equal(jwks_read(pems[i].data, pems[i].len, algs[i], &v, err,
		    sizeof err), 1);
		assert_int_equal(EVP_PKEY_eq(v[0].pk, pk), 1);
		jwks_free(v, 1);
		EVP_PKEY_free(pk);
		free(text);
		json_decref(doc);
	}
	/* HS256: k is the secret's bytes, whatever the file's white space. */
	size_t len = hs_secret.len;
	while (len > 0 && (hs_secret.data[len - 1] == '\n' || hs_secret.data[len - 1] == ' '))
		len--;
	char *k = b64url_encode(hs_secret.data, len), text[512];
	snprintf(text, sizeof text, "\n {\"keys\": [{\"kty\": \"oct\", \"kid\": \"h\", \"k\": \"%s\"}]}",
	    k);
	assert_int_equal(jwks_read((unsigned char *)text, strlen(text), JWA_HS256, &v, err,
	    sizeof err), 1);
	assert_string_equal(v[0].kid, "h");
	assert_int_equal(v[0].secret_len, len);
	assert_memory_equal(v[0].secret, hs_secret.data, len);
	jwks_free(v, 1);
	jwks_free(NULL, 0);
	free(k);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_libjwt_verifies_each_alg),
		cmocka_unit_test(test_es256_is_r_s_not_der),
		cmocka_unit_test(test_header_alg_first_then_callers),
		cmocka_unit_test(test_keys_refused),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_segments),
		cmocka_unit_test(test_vkeys_jwk_is_the_key),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
