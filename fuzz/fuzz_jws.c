/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_jws: the JWS parser and verifier of record_load (warrantd(7) §3.2), with a
 * parsed ES256 key, a raw RS256 key and an HS256 secret: the input is the
 * hash's `record` value.
 *
 * Besides "no crash", an OK must be earned: the harness takes the token apart
 * itself and aborts unless its header is a JSON object (no duplicate member)
 * with `alg` the configured algorithm and `typ` exactly "decision+jwt", and
 * its signature verifies under OpenSSL, called here directly with keys the
 * harness loaded itself (src/core/record.c's verifier is not asked twice). The
 * keys record_key_new accepted are checked the same way at start: each must
 * verify a signature the harness made. */
#include "fuzz.h"
#include "core/record.h"

#include <jansson.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

static struct record_key *es, *hs;
static unsigned char *rs_pem, *hs_secret;
static size_t rs_len, hs_len;
static EVP_PKEY *es_pub, *rs_pub;	/* the harness's own copies */

static EVP_PKEY *
pubkey_of(const unsigned char *pem, size_t len, int type)
{
	BIO *b = BIO_new_mem_buf(pem, (int)len);
	EVP_PKEY *k = b ? PEM_read_bio_PUBKEY(b, NULL, NULL, NULL) : NULL;

	BIO_free(b);
	if (k == NULL || EVP_PKEY_get_base_id(k) != type)
		abort();
	return k;
}

/* RFC 7518 §3.4: ES256's signature is R || S, 32 bytes each; OpenSSL wants DER. */
static int
es256_verifies(const unsigned char *sig, size_t n, const char *in, size_t in_len)
{
	unsigned char *der = NULL;
	int der_len, ok = 0;

	if (n != 64)
		return 0;
	ECDSA_SIG *s = ECDSA_SIG_new();
	BIGNUM *r = BN_bin2bn(sig, 32, NULL), *sv = BN_bin2bn(sig + 32, 32, NULL);
	if (s == NULL || r == NULL || sv == NULL || ECDSA_SIG_set0(s, r, sv) != 1)
		abort();	/* out of memory */
	if ((der_len = i2d_ECDSA_SIG(s, &der)) > 0) {
		EVP_MD_CTX *c = EVP_MD_CTX_new();
		ok = c && EVP_DigestVerifyInit(c, NULL, EVP_sha256(), NULL, es_pub) == 1 &&
		    EVP_DigestVerify(c, der, (size_t)der_len, (const unsigned char *)in, in_len) == 1;
		EVP_MD_CTX_free(c);
	}
	OPENSSL_free(der);
	ECDSA_SIG_free(s);
	return ok;
}

static int
rs256_verifies(const unsigned char *sig, size_t n, const char *in, size_t in_len)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	int ok = c && EVP_DigestVerifyInit(c, NULL, EVP_sha256(), NULL, rs_pub) == 1 &&
	    EVP_DigestVerify(c, sig, n, (const unsigned char *)in, in_len) == 1;

	EVP_MD_CTX_free(c);
	return ok;
}

static int
hs256_verifies(const unsigned char *sig, size_t n, const char *in, size_t in_len)
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned mac_len = 0;

	return HMAC(EVP_sha256(), hs_secret, (int)hs_len, (const unsigned char *)in, in_len, mac,
	    &mac_len) != NULL && n == mac_len && CRYPTO_memcmp(sig, mac, n) == 0;
}

/* 1 when `tok` is what an OK under `alg` promises, judged without record.c. */
static int
earned(enum jwa_alg alg, const char *tok)
{
	size_t d1, d2, hlen, slen;
	unsigned char *hdr, *sig;
	json_t *h;
	int ok = 0;

	if (fuzz_jws_split(tok, &d1, &d2) != 0 ||
	    (hdr = fuzz_b64url_decode(tok, d1, 0, &hlen)) == NULL)
		return 0;
	h = json_loadb((const char *)hdr, hlen, JSON_REJECT_DUPLICATES, NULL);
	free(hdr);
	const char *a = json_string_value(json_object_get(h, "alg"));
	const char *t = json_string_value(json_object_get(h, "typ"));
	if (json_is_object(h) && a && t && strcmp(a, jwa_name(alg)) == 0 &&
	    strcmp(t, "decision+jwt") == 0 &&
	    (sig = fuzz_b64url_decode(tok + d2 + 1, strlen(tok + d2 + 1), 0, &slen)) != NULL) {
		ok = alg == JWA_ES256 ? es256_verifies(sig, slen, tok, d2) :
		    alg == JWA_RS256 ? rs256_verifies(sig, slen, tok, d2) :
		    alg == JWA_HS256 && hs256_verifies(sig, slen, tok, d2);
		free(sig);
	}
	json_decref(h);
	return ok;
}

/* Signs a token's input with tests/data's RS256 and ES256 private keys and
 * requires the harness's verifiers to accept it: the keys and code it
 * judges with are right. */
static void
check_own_keys(void)
{
	static const char in[] = "eyJ4IjoxfQ.eyJ5IjoyfQ";
	unsigned char sig[512], rs[64];
	size_t len = sizeof sig, klen;
	unsigned char *pem = fuzz_data_file("test-rs256.key", &klen);
	BIO *b = BIO_new_mem_buf(pem, (int)klen);
	EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
	EVP_MD_CTX *c = EVP_MD_CTX_new();

	if (k == NULL || c == NULL || EVP_DigestSignInit(c, NULL, EVP_sha256(), NULL, k) != 1 ||
	    EVP_DigestSign(c, sig, &len, (const unsigned char *)in, strlen(in)) != 1 ||
	    !rs256_verifies(sig, len, in, strlen(in)))
		abort();
	EVP_MD_CTX_free(c);
	EVP_PKEY_free(k);
	BIO_free(b);
	free(pem);

	pem = fuzz_data_file("test-es256.key", &klen);
	b = BIO_new_mem_buf(pem, (int)klen);
	k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
	c = EVP_MD_CTX_new();
	len = sizeof sig;
	const unsigned char *p = sig;
	ECDSA_SIG *s;
	if (k == NULL || c == NULL || EVP_DigestSignInit(c, NULL, EVP_sha256(), NULL, k) != 1 ||
	    EVP_DigestSign(c, sig, &len, (const unsigned char *)in, strlen(in)) != 1 ||
	    (s = d2i_ECDSA_SIG(NULL, &p, (long)len)) == NULL)
		abort();
	if (BN_bn2binpad(ECDSA_SIG_get0_r(s), rs, 32) != 32 ||
	    BN_bn2binpad(ECDSA_SIG_get0_s(s), rs + 32, 32) != 32 ||
	    !es256_verifies(rs, 64, in, strlen(in)))
		abort();
	ECDSA_SIG_free(s);
	EVP_MD_CTX_free(c);
	EVP_PKEY_free(k);
	BIO_free(b);
	free(pem);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char err[256];
	size_t len;
	unsigned char *pem = fuzz_data_file("test-es256.pub", &len);

	(void)argc, (void)argv;
	es = record_key_new(JWA_ES256, pem, len, err, sizeof err);
	es_pub = pubkey_of(pem, len, EVP_PKEY_EC);
	free(pem);
	hs_secret = fuzz_data_file("test-hs256.secret", &hs_len);
	while (hs_len > 0 && (hs_secret[hs_len - 1] == '\n' || hs_secret[hs_len - 1] == ' '))
		hs_len--;
	hs = record_key_new(JWA_HS256, hs_secret, hs_len, err, sizeof err);
	rs_pem = fuzz_data_file("test-rs256.pub", &rs_len);
	rs_pub = pubkey_of(rs_pem, rs_len, EVP_PKEY_RSA);
	if (es == NULL || hs == NULL || hs_len < 32)
		abort();
	check_own_keys();
	return 0;
}

static void
load(const struct record_policy *pol, const char *raw)
{
	struct record *rec = NULL;
	char *owner = NULL, detail[256];
	enum record_status st = record_load(pol, "gate-14", raw, 1796011200000LL, &rec, &owner,
	    detail, sizeof detail);

	if ((st == RECORD_OK) != (rec != NULL) || strlen(detail) >= sizeof detail)
		abort();
	if (st == RECORD_OK && !earned(pol->algorithm, raw)) {
		fprintf(stderr, "fuzz_jws: %s accepted a record whose alg, typ or signature "
		    "does not hold\n", jwa_name(pol->algorithm));
		abort();
	}
	record_free(rec);
	free(owner);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *raw = fuzz_cstr(data, size);
	struct record_policy pol = {
		.signature_required = 1, .algorithm = JWA_ES256, .parsed_key = es,
		.max_window_ms = 604800000LL, .clock_skew_ms = 60000, .max_bytes = 16384,
	};

	load(&pol, raw);
	pol.algorithm = JWA_HS256;
	pol.parsed_key = hs;
	load(&pol, raw);
	pol.algorithm = JWA_RS256;
	pol.parsed_key = NULL;
	pol.key = rs_pem;
	pol.key_len = rs_len;
	load(&pol, raw);
	free(raw);
	return 0;
}
