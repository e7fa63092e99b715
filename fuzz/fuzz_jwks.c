/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_jwks: [records] verify_key_file as record_key_new reads it for each
 * algorithm (a JWKS, RFC 7517, or one PEM key or HS256 secret), and the key
 * a record's kid picks from what it accepted (warrantd(7) §3.2).
 *
 * Besides "no crash", an accepted set must be what the rules promise, judged
 * by jansson here: for a text that starts with '{' a JSON object whose
 * "keys" array holds as many JWKs as the set, each with the kty of the
 * algorithm, the kids unique and all present when there are several;
 * otherwise one key without a kid. And an OK must be earned: a record
 * signed with tests/data/test-es256.key under kid "k1" verifies only when
 * the input holds that key (its x) as "k1", or as the one key without a kid,
 * or is its PEM. */
#include "fuzz.h"
#include "core/record.h"

#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

static char *token;		/* a record signed by test-es256.key, kid "k1" */
static char x_b64[64];		/* that key's x, base64url */
static unsigned char *pem;
static size_t pem_len;

static void
b64url(const unsigned char *in, size_t n, char *out)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	unsigned acc = 0;
	int bits = 0;

	for (size_t i = 0; i < n; i++) {
		acc = (acc << 8) | in[i];
		for (bits += 8; bits >= 6; bits -= 6)
			*out++ = a[(acc >> (bits - 6)) & 63];
	}
	if (bits > 0)
		*out++ = a[(acc << (6 - bits)) & 63];
	*out = '\0';
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	size_t klen;
	unsigned char *key = fuzz_data_file("test-es256.key", &klen), buf[32];
	json_t *c = json_pack("{s:s, s:s, s:s, s:s, s:{}, s:s, s:s, s:s}", "recordId", "gate-14",
	    "onBehalfOf", "op", "action", "gate.open", "resource", "gate-14", "parameters",
	    "basis", "b", "decidedAt", "2026-11-30T03:59:00Z", "expiresAt", "2026-11-30T05:00:00Z");
	BIGNUM *x = NULL;

	(void)argc, (void)argv;
	token = record_sign(JWA_ES256, key, klen, "k1", c);
	json_decref(c);
	free(key);
	pem = fuzz_data_file("test-es256.pub", &pem_len);
	BIO *b = BIO_new_mem_buf(pem, (int)pem_len);
	EVP_PKEY *pk = PEM_read_bio_PUBKEY(b, NULL, NULL, NULL);
	if (token == NULL || pk == NULL || EVP_PKEY_get_bn_param(pk, OSSL_PKEY_PARAM_EC_PUB_X,
	    &x) != 1 || BN_bn2binpad(x, buf, 32) != 32)
		abort();
	b64url(buf, 32, x_b64);
	BN_free(x);
	EVP_PKEY_free(pk);
	BIO_free(b);
	return 0;
}

static const char *
kty_of(enum jwa_alg alg)
{
	return alg == JWA_ES256 ? "EC" : alg == JWA_RS256 ? "RSA" : "oct";
}

static int
starts_json(const uint8_t *d, size_t n)
{
	size_t i = 0;

	while (i < n && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r'))
		i++;
	return i < n && d[i] == '{';
}

static void
bad(const char *what, enum jwa_alg alg)
{
	fprintf(stderr, "fuzz_jwks: %s: %s\n", jwa_name(alg), what);
	abort();
}

/* The accepted set `k` against the text, as jansson reads it. */
static void
check_set(const struct record_key *k, enum jwa_alg alg, const uint8_t *d, size_t n)
{
	size_t count = record_key_count(k);

	if (count < 1 || count > 32)
		bad("a set of no keys or too many", alg);
	if (!starts_json(d, n)) {
		if (count != 1 || record_key_kid(k, 0) != NULL)
			bad("a PEM or secret gave more than one key, or a kid", alg);
		return;
	}
	json_t *doc = json_loadb((const char *)d, n, JSON_REJECT_DUPLICATES, NULL);
	json_t *keys = json_object_get(doc, "keys");
	if (!json_is_array(keys) || json_array_size(keys) != count)
		bad("the set is not the JWKS's keys array", alg);
	for (size_t i = 0; i < count; i++) {
		json_t *jwk = json_array_get(keys, i);
		const char *kty = json_string_value(json_object_get(jwk, "kty"));
		const char *kid = json_string_value(json_object_get(jwk, "kid"));
		const char *got = record_key_kid(k, i);
		if (kty == NULL || strcmp(kty, kty_of(alg)) != 0)
			bad("a JWK of another kty was accepted", alg);
		if ((kid == NULL) != (got == NULL) || (kid != NULL && strcmp(kid, got) != 0))
			bad("the kid is not the JWK's", alg);
		if (count > 1 && got == NULL)
			bad("a key without kid among several", alg);
		for (size_t j = 0; j < i; j++)
			if (got != NULL && strcmp(got, record_key_kid(k, j)) == 0)
				bad("a kid twice", alg);
		if (json_object_get(jwk, "d") != NULL && alg != JWA_HS256)
			bad("a private key was accepted", alg);
	}
	json_decref(doc);
}

/* The text holds test-es256.pub where kid "k1" finds it. */
static int
holds_test_key(const struct record_key *k, const uint8_t *d, size_t n)
{
	if (!starts_json(d, n))
		return 1;	/* one key and no kid: the PEM verified, so it is that key */
	json_t *doc = json_loadb((const char *)d, n, JSON_REJECT_DUPLICATES, NULL);
	json_t *keys = json_object_get(doc, "keys");
	int found = 0;

	for (size_t i = 0; i < json_array_size(keys) && !found; i++) {
		json_t *jwk = json_array_get(keys, i);
		const char *x = json_string_value(json_object_get(jwk, "x"));
		const char *kid = json_string_value(json_object_get(jwk, "kid"));
		found = x != NULL && strcmp(x, x_b64) == 0 &&
		    ((kid != NULL && strcmp(kid, "k1") == 0) ||
		    (kid == NULL && record_key_count(k) == 1));
	}
	json_decref(doc);
	return found;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum jwa_alg algs[] = {JWA_ES256, JWA_RS256, JWA_HS256};
	char err[256];

	for (size_t a = 0; a < sizeof algs / sizeof algs[0]; a++) {
		memset(err, 0x55, sizeof err);
		err[sizeof err - 1] = '\0';
		struct record_key *k = record_key_new(algs[a], data, size, err, sizeof err);
		if (k == NULL && (err[0] == '\0' || err[0] == 0x55))
			bad("refused without saying why", algs[a]);
		if (k == NULL)
			continue;
		check_set(k, algs[a], data, size);
		if (algs[a] == JWA_ES256) {
			struct record_policy pol = {
				.signature_required = 1, .algorithm = JWA_ES256, .parsed_key = k,
				.max_window_ms = 604800000LL, .clock_skew_ms = 60000,
			};
			struct record *rec = NULL;
			char detail[256];
			enum record_status st = record_load(&pol, "gate-14", token, 1796011200000LL,
			    &rec, NULL, detail, sizeof detail);
			if (st == RECORD_OK && !holds_test_key(k, data, size))
				bad("a record verified with a key the input does not hold", algs[a]);
			record_free(rec);
		}
		record_key_free(k);
	}
	return 0;
}
