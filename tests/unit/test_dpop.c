/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for src/jose/dpop.c and the JWK export of src/jose/jws.c (RFC 9449,
 * RFC 7638): a proof is checked with OpenSSL called here by hand and the
 * public key file, never with dpop.c itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>

#include "jose/b64url.h"
#include "jose/dpop.h"
#include "jose/jws.h"
#include "testlib.h"

#define NOW 1795000000000LL

static unsigned char *es_key, *es_pub, *rs_key;
static size_t es_key_len, es_pub_len, rs_key_len;

static int
setup(void **state)
{
	(void)state;
	es_key = read_whole("tests/data/test-es256.key", &es_key_len);
	es_pub = read_whole("tests/data/test-es256.pub", &es_pub_len);
	rs_key = read_whole("tests/data/test-rs256.key", &rs_key_len);
	return es_key && es_pub && rs_key ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	free(es_key);
	free(es_pub);
	free(rs_key);
	return 0;
}

/* A segment of a compact JWS as JSON. */
static json_t *
segment(const char *jws, int which)
{
	const char *p = jws, *end;
	unsigned char *raw;
	size_t n;

	for (int i = 0; i < which; i++)
		p = strchr(p, '.') + 1;
	end = strchr(p, '.');
	assert_non_null(end);
	assert_int_equal(b64url_decode(p, (size_t)(end - p), &raw, &n), 0);
	json_t *j = json_loadb((const char *)raw, n, 0, NULL);
	free(raw);
	assert_non_null(j);
	return j;
}

/* The ES256 signature of a compact JWS verifies with the PEM public key. */
static int
verifies(const char *jws)
{
	BIO *bio = BIO_new_mem_buf(es_pub, (int)es_pub_len);
	EVP_PKEY *pk = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
	const char *dot2 = strrchr(jws, '.');
	unsigned char *sig, *der = NULL;
	size_t sig_len;
	int der_len, ok = 0;

	assert_non_null(pk);
	assert_int_equal(b64url_decode(dot2 + 1, strlen(dot2 + 1), &sig, &sig_len), 0);
	if (jws_es256_to_der(sig, sig_len, &der, &der_len) == 0) {
		EVP_MD_CTX *ctx = EVP_MD_CTX_new();
		ok = EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, pk) == 1 &&
		    EVP_DigestVerify(ctx, der, (size_t)der_len, (const unsigned char *)jws,
		    (size_t)(dot2 - jws)) == 1;
		EVP_MD_CTX_free(ctx);
	}
	OPENSSL_free(der);
	free(sig);
	EVP_PKEY_free(pk);
	BIO_free(bio);
	return ok;
}

/* RFC 7638 §3.1's own example: the thumbprint of the RFC 7517 RSA key. */
static void
test_thumbprint_rfc7638(void **state)
{
	(void)state;
	json_t *jwk = json_pack("{s:s, s:s, s:s, s:s}", "kty", "RSA", "e", "AQAB", "alg", "RS256",
	    "n", "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhD"
	    "R1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4Q"
	    "yQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbI"
	    "SD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kE"
	    "gU8awapJzKnqDKgw");
	char *t = jws_jwk_thumbprint(jwk);
	assert_string_equal(t, "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs");
	free(t);
	json_object_del(jwk, "e");
	assert_null(jws_jwk_thumbprint(jwk));	/* a required member missing */
	json_decref(jwk);
}

/* The key is P-256 only; its JWK holds the public key file's coordinates
 * and no private member; jkt is its thumbprint. */
static void
test_key(void **state)
{
	char err[200];
	(void)state;

	assert_null(dpop_new(rs_key, rs_key_len, err, sizeof err));
	assert_non_null(strstr(err, "dpop_key_file"));
	assert_null(dpop_new((const unsigned char *)"x", 1, err, sizeof err));

	struct dpop *d = dpop_new(es_key, es_key_len, err, sizeof err);
	assert_non_null(d);
	char *proof = dpop_proof(d, "POST", "https://idp.example/token", NULL, NOW);
	json_t *h = segment(proof, 0);
	assert_string_equal(json_string_value(json_object_get(h, "typ")), "dpop+jwt");
	assert_string_equal(json_string_value(json_object_get(h, "alg")), "ES256");
	json_t *jwk = json_object_get(h, "jwk");
	assert_string_equal(json_string_value(json_object_get(jwk, "kty")), "EC");
	assert_string_equal(json_string_value(json_object_get(jwk, "crv")), "P-256");
	assert_null(json_object_get(jwk, "d"));
	/* x, y are the .pub file's, by OpenSSL's own export */
	BIO *bio = BIO_new_mem_buf(es_pub, (int)es_pub_len);
	EVP_PKEY *pk = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
	unsigned char pt[65];
	size_t ptlen = 0;
	assert_int_equal(EVP_PKEY_get_octet_string_param(pk, "encoded-pub-key", pt, sizeof pt,
	    &ptlen), 1);
	assert_int_equal(ptlen, 65);
	char *x = b64url_encode(pt + 1, 32), *y = b64url_encode(pt + 33, 32);
	assert_string_equal(json_string_value(json_object_get(jwk, "x")), x);
	assert_string_equal(json_string_value(json_object_get(jwk, "y")), y);
	/* jkt: RFC 7638 over exactly these members, computed here by hand */
	char canon[256];
	unsigned char md[32];
	snprintf(canon, sizeof canon, "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"%s\",\"y\":\"%s\"}",
	    x, y);
	SHA256((const unsigned char *)canon, strlen(canon), md);
	char *want = b64url_encode(md, sizeof md);
	assert_string_equal(dpop_jkt(d), want);
	free(want);
	free(x);
	free(y);
	EVP_PKEY_free(pk);
	BIO_free(bio);
	json_decref(h);
	dpop_proof_free(proof);
	dpop_free(d);
	dpop_free(NULL);
}

/* RFC 9449 §4.2: htm, htu without query and fragment, iat, a unique jti,
 * ath only with a token, the nonce of the URL's origin only; signed. */
static void
test_proof_claims(void **state)
{
	char err[200];
	(void)state;
	struct dpop *d = dpop_new(es_key, es_key_len, err, sizeof err);
	assert_non_null(d);

	char *p1 = dpop_proof(d, "POST", "https://api.example:8443/gate/open?x=1#f", "tok-123", NOW);
	char *p2 = dpop_proof(d, "POST", "https://api.example:8443/gate/open?x=1#f", "tok-123", NOW);
	assert_non_null(p1);
	assert_true(verifies(p1));
	json_t *c1 = segment(p1, 1), *c2 = segment(p2, 1);
	assert_string_equal(json_string_value(json_object_get(c1, "htm")), "POST");
	assert_string_equal(json_string_value(json_object_get(c1, "htu")),
	    "https://api.example:8443/gate/open");
	assert_int_equal(json_integer_value(json_object_get(c1, "iat")), NOW / 1000);
	assert_string_not_equal(json_string_value(json_object_get(c1, "jti")),
	    json_string_value(json_object_get(c2, "jti")));
	char *ath = dpop_ath("tok-123");
	assert_string_equal(json_string_value(json_object_get(c1, "ath")), ath);
	/* sha256("tok-123"), independently: 43 characters of base64url */
	assert_int_equal(strlen(ath), 43);
	free(ath);
	assert_null(json_object_get(c1, "nonce"));
	json_decref(c1);
	json_decref(c2);
	dpop_proof_free(p1);
	dpop_proof_free(p2);

	/* a nonce is per origin, the latest wins */
	assert_int_equal(dpop_nonce_keep(d, "https://API.example:8443/other", "n-1"), 0);
	assert_int_equal(dpop_nonce_keep(d, "https://api.example:8443/x", "n-2"), 0);
	assert_int_equal(dpop_nonce_keep(d, "https://api.example:8443/x", "bad nonce"), -1);
	assert_int_equal(dpop_nonce_keep(d, "https://api.example:8443/x", ""), -1);
	p1 = dpop_proof(d, "GET", "https://api.example:8443/y", NULL, NOW);
	p2 = dpop_proof(d, "GET", "https://api.example/y", NULL, NOW);
	c1 = segment(p1, 1);
	c2 = segment(p2, 1);
	assert_string_equal(json_string_value(json_object_get(c1, "nonce")), "n-2");
	assert_null(json_object_get(c1, "ath"));
	assert_null(json_object_get(c2, "nonce"));	/* another origin */
	json_decref(c1);
	json_decref(c2);
	dpop_proof_free(p1);
	dpop_proof_free(p2);

	/* more origins than slots: the least recently set goes */
	char url[64], n[16];
	for (int i = 0; i < DPOP_NONCES_MAX; i++) {
		snprintf(url, sizeof url, "http://h%d.example/", i);
		snprintf(n, sizeof n, "v%d", i);
		assert_int_equal(dpop_nonce_keep(d, url, n), 0);
	}
	p1 = dpop_proof(d, "GET", "https://api.example:8443/y", NULL, NOW);
	c1 = segment(p1, 1);
	assert_null(json_object_get(c1, "nonce"));
	json_decref(c1);
	dpop_proof_free(p1);
	assert_null(dpop_proof(d, "GET", "ftp://x/", NULL, NOW));
	dpop_free(d);
}

static void
test_helpers(void **state)
{
	char out[128];
	(void)state;

	assert_int_equal(dpop_htu("http://127.0.0.1:8080/a/b?q#f", out, sizeof out), 0);
	assert_string_equal(out, "http://127.0.0.1:8080/a/b");
	assert_int_equal(dpop_htu("https://h?q", out, sizeof out), 0);
	assert_string_equal(out, "https://h");
	assert_int_equal(dpop_origin("HTTPS://Host.Example:1/p", out, sizeof out), 0);
	assert_string_equal(out, "https://host.example:1");
	assert_int_equal(dpop_origin("https:///p", out, sizeof out), -1);
	assert_int_equal(dpop_origin("mailto:x", out, sizeof out), -1);
	assert_int_equal(dpop_htu("https://h/p", out, 5), -1);
	/* issue 37 item 5: userinfo is never part of a proof or an origin */
	assert_int_equal(dpop_htu("https://user:s3cret@h.example:8443/a?q", out, sizeof out), 0);
	assert_string_equal(out, "https://h.example:8443/a");
	assert_int_equal(dpop_origin("https://u:p@x@H.example/a", out, sizeof out), 0);
	assert_string_equal(out, "https://h.example");
	assert_int_equal(dpop_htu("https://user@/a", out, sizeof out), -1);

	assert_int_equal(dpop_challenge_error("DPoP error=\"use_dpop_nonce\", "
	    "error_description=\"Resource server requires nonce in DPoP proof\"", out,
	    sizeof out), 0);
	assert_string_equal(out, "use_dpop_nonce");
	assert_int_equal(dpop_challenge_error("Bearer realm=\"x\", error=\"invalid_token\", "
	    "DPoP algs=\"ES256\", error=invalid_dpop_proof", out, sizeof out), 0);
	assert_string_equal(out, "invalid_dpop_proof");
	assert_int_equal(dpop_challenge_error("Bearer error=\"use_dpop_nonce\"", out,
	    sizeof out), -1);
	assert_int_equal(dpop_challenge_error("DPoP algs=\"ES256\"", out, sizeof out), -1);
	assert_int_equal(dpop_challenge_error(NULL, out, sizeof out), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_thumbprint_rfc7638),
		cmocka_unit_test(test_key),
		cmocka_unit_test(test_proof_claims),
		cmocka_unit_test(test_helpers),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
