/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_keygen: `warrantctl keygen` (warrantctl(1); issue 38 item 7) -- the
 * real warrantctl makes the decider's key for each algorithm; the files'
 * modes, the JWKS and its kid (the RFC 7638 thumbprint, computed here on
 * its own from the public PEM), the refusal to overwrite any file; and a
 * record that `warrantctl decide` signs with the generated key is verified
 * by a real warrantd whose verify_key_file is the generated public key or
 * JWKS, and runs to done.
 */
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "jose/b64url.h"
#include "harness.h"

#define PREFIX	"kg"

static struct h_stack *const S = &h_group;	/* redis, fake_target, client */
static struct h_daemon D;

static int
test_teardown(void **state)
{
	(void)state;
	if (D.pid > 0) {
		fprintf(stderr, "itest_keygen: killing leftover warrantd; log %s\n", D.log);
		h_daemon_kill(&D);
	}
	return 0;
}

/* ---- helpers ---- */

/* h_tmpdir()/name + suffix, interned in a ring of buffers. */
static const char *
tmp_path(const char *name, const char *suffix)
{
	static char ring[16][512];
	static unsigned next;
	char *p = ring[next++ % 16];

	snprintf(p, sizeof ring[0], "%s/%s%s", h_tmpdir(), name, suffix);
	return p;
}

/* warrantctl keygen [--alg alg] [--kid kid] --out h_tmpdir()/name: its
 * exit code; *out its output (caller frees). */
static int
keygen(const char *alg, const char *kid, const char *name, char **out)
{
	char *argv[12];
	int n = 0;

	argv[n++] = (char *)h_bin("warrantctl");
	argv[n++] = "keygen";
	if (alg != NULL) {
		argv[n++] = "--alg";
		argv[n++] = (char *)alg;
	}
	if (kid != NULL) {
		argv[n++] = "--kid";
		argv[n++] = (char *)kid;
	}
	argv[n++] = "--out";
	argv[n++] = (char *)tmp_path(name, "");
	argv[n] = NULL;
	return h_run(argv, 60000, out);
}

/* keygen that must succeed: the kid it printed (caller frees). */
static char *
keygen_ok(const char *alg, const char *kid, const char *name)
{
	char *out = NULL;
	int rc = keygen(alg, kid, name, &out);

	if (rc != 0)
		fail_msg("warrantctl keygen --alg %s exited %d: %s", alg ? alg : "-", rc, out);
	char *nl = strchr(out, '\n');
	assert_non_null(nl);
	assert_null(strchr(nl + 1, '\n'));	/* one line: the kid */
	*nl = '\0';
	return out;
}

static int
mode_of(const char *path)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return -1;
	assert_true(S_ISREG(st.st_mode));
	return (int)(st.st_mode & 07777);
}

/* The one JWK of the JWKS at path (new reference). */
static json_t *
only_jwk(const char *path)
{
	json_error_t je;
	json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);

	if (doc == NULL)
		fail_msg("%s: not JSON: %s", path, je.text);
	json_t *keys = json_object_get(doc, "keys");
	assert_int_equal(json_array_size(keys), 1);
	json_t *k = json_incref(json_array_get(keys, 0));
	json_decref(doc);
	return k;
}

static const char *
member(const json_t *jwk, const char *name)
{
	const char *s = json_string_value(json_object_get(jwk, name));

	if (s == NULL)
		fail_msg("the JWK has no string \"%s\"", name);
	return s;
}

/* RFC 7638 §3.2: SHA-256 of the required members, lexicographic, no
 * white space, base64url -- written out here by hand, not by the code
 * under test (caller frees). */
static char *
thumbprint(const char *canonical)
{
	unsigned char md[32];
	unsigned len = 0;

	assert_int_equal(EVP_Digest(canonical, strlen(canonical), md, &len, EVP_sha256(), NULL), 1);
	assert_int_equal(len, sizeof md);
	return b64url_encode(md, sizeof md);
}

/* A BIGNUM parameter of pk as base64url of `pad` bytes (0: minimal). */
static char *
param_b64(EVP_PKEY *pk, const char *name, int pad)
{
	BIGNUM *bn = NULL;
	unsigned char buf[1024];
	int len;

	assert_int_equal(EVP_PKEY_get_bn_param(pk, name, &bn), 1);
	len = pad > 0 ? pad : BN_num_bytes(bn);
	assert_int_equal(BN_bn2binpad(bn, buf, len), len);
	BN_free(bn);
	return b64url_encode(buf, (size_t)len);
}

static EVP_PKEY *
read_pub(const char *path)
{
	char *pem = h_read_file(path);
	BIO *bio;
	EVP_PKEY *pk;

	assert_non_null(pem);
	assert_non_null(strstr(pem, "-----BEGIN PUBLIC KEY-----"));
	bio = BIO_new_mem_buf(pem, (int)strlen(pem));
	pk = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
	assert_non_null(pk);
	BIO_free(bio);
	free(pem);
	return pk;
}

/* The canonical RFC 7638 text of the public key in .pub, from OpenSSL's
 * parse of the PEM; checks the JWK's members are those. */
static char *
canonical_of_pub(const char *name, const json_t *jwk, int ec)
{
	EVP_PKEY *pk = read_pub(tmp_path(name, ".pub"));
	char *a = param_b64(pk, ec ? OSSL_PKEY_PARAM_EC_PUB_X : OSSL_PKEY_PARAM_RSA_E, ec ? 32 : 0);
	char *b = param_b64(pk, ec ? OSSL_PKEY_PARAM_EC_PUB_Y : OSSL_PKEY_PARAM_RSA_N, ec ? 32 : 0);
	char buf[2048];

	if (ec) {
		assert_string_equal(member(jwk, "x"), a);
		assert_string_equal(member(jwk, "y"), b);
		assert_string_equal(member(jwk, "crv"), "P-256");
		snprintf(buf, sizeof buf, "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"%s\","
		    "\"y\":\"%s\"}", a, b);
	} else {
		assert_string_equal(member(jwk, "e"), a);
		assert_string_equal(member(jwk, "n"), b);
		assert_true(EVP_PKEY_get_bits(pk) >= 2048);
		snprintf(buf, sizeof buf, "{\"e\":\"%s\",\"kty\":\"RSA\",\"n\":\"%s\"}", a, b);
	}
	free(a);
	free(b);
	EVP_PKEY_free(pk);
	return strdup(buf);
}

/* ---- the files ---- */

static void
check_pair(const char *alg, const char *name, int ec)
{
	char *kid = keygen_ok(alg, NULL, name);

	assert_int_equal(mode_of(tmp_path(name, ".key")), 0600);
	assert_int_equal(mode_of(tmp_path(name, ".pub")), 0644);
	assert_int_equal(mode_of(tmp_path(name, ".jwks")), 0644);
	char *priv = h_read_file(tmp_path(name, ".key"));
	assert_non_null(strstr(priv, "-----BEGIN PRIVATE KEY-----"));
	free(priv);

	json_t *jwk = only_jwk(tmp_path(name, ".jwks"));
	assert_string_equal(member(jwk, "kty"), ec ? "EC" : "RSA");
	assert_string_equal(member(jwk, "alg"), alg != NULL ? alg : "ES256");
	assert_string_equal(member(jwk, "use"), "sig");
	assert_null(json_object_get(jwk, "d"));	/* public only */
	char *canon = canonical_of_pub(name, jwk, ec), *want = thumbprint(canon);
	assert_string_equal(member(jwk, "kid"), want);
	assert_string_equal(kid, want);	/* what it printed, for decide --kid */
	free(want);
	free(canon);
	free(kid);
	json_decref(jwk);
}

static void
test_es256_default(void **state)
{
	(void)state;
	check_pair(NULL, "es-default", 1);
}

static void
test_rs256(void **state)
{
	(void)state;
	check_pair("RS256", "rs", 0);
}

static void
test_hs256(void **state)
{
	(void)state;
	char *kid = keygen_ok("HS256", NULL, "hs");

	assert_int_equal(mode_of(tmp_path("hs", ".key")), 0600);
	assert_int_equal(mode_of(tmp_path("hs", ".jwks")), 0600);	/* it holds the secret */
	assert_int_equal(mode_of(tmp_path("hs", ".pub")), -1);	/* no public half */
	char *secret = h_read_file(tmp_path("hs", ".key"));
	size_t n = strcspn(secret, "\n");
	assert_true(n >= 43);	/* 256 bits as base64url */
	secret[n] = '\0';

	json_t *jwk = only_jwk(tmp_path("hs", ".jwks"));
	assert_string_equal(member(jwk, "kty"), "oct");
	assert_string_equal(member(jwk, "alg"), "HS256");
	assert_string_equal(member(jwk, "use"), "sig");
	char *k = b64url_encode((unsigned char *)secret, n), canon[256];
	assert_string_equal(member(jwk, "k"), k);	/* the file's bytes are the key */
	snprintf(canon, sizeof canon, "{\"k\":\"%s\",\"kty\":\"oct\"}", k);
	char *want = thumbprint(canon);
	assert_string_equal(member(jwk, "kid"), want);
	assert_string_equal(kid, want);
	free(want);
	free(k);
	free(secret);
	free(kid);
	json_decref(jwk);
}

static void
test_kid_given(void **state)
{
	(void)state;
	char *kid = keygen_ok("ES256", "decider-2026-12", "named");
	json_t *jwk = only_jwk(tmp_path("named", ".jwks"));

	assert_string_equal(kid, "decider-2026-12");
	assert_string_equal(member(jwk, "kid"), "decider-2026-12");
	json_decref(jwk);
	free(kid);
}

/* Any existing file refuses the run with exit 1, and nothing is written. */
static void
test_refuses_to_overwrite(void **state)
{
	(void)state;
	char *kid = keygen_ok(NULL, NULL, "once"), *out = NULL;
	char *before = h_read_file(tmp_path("once", ".key"));

	assert_int_equal(keygen(NULL, NULL, "once", &out), 1);
	assert_non_null(strstr(out, "exists: refusing to overwrite it"));
	free(out);
	char *after = h_read_file(tmp_path("once", ".key"));
	assert_string_equal(before, after);
	free(before);
	free(after);
	free(kid);

	/* Only the JWKS there: no key is made beside it. */
	char *p = h_write_file("lone.jwks", "{\"keys\": []}\n");
	assert_non_null(p);
	free(p);
	assert_int_equal(keygen("RS256", NULL, "lone", &out), 1);
	free(out);
	assert_int_equal(mode_of(tmp_path("lone", ".key")), -1);
	assert_int_equal(mode_of(tmp_path("lone", ".pub")), -1);

	/* Nor through a symlink the name points at. */
	assert_int_equal(symlink(tmp_path("elsewhere", ""), tmp_path("link", ".key")), 0);
	assert_int_equal(keygen(NULL, NULL, "link", &out), 1);
	free(out);
	assert_int_equal(mode_of(tmp_path("elsewhere", "")), -1);
	assert_int_equal(mode_of(tmp_path("link", ".pub")), -1);

	/* Usage errors are 64. */
	assert_int_equal(keygen("ES512", NULL, "bad", &out), 64);
	free(out);
	char *argv[] = {(char *)h_bin("warrantctl"), "keygen", NULL};
	assert_int_equal(h_run(argv, 30000, &out), 64);
	free(out);
}

/* ---- end to end: decide signs, a worker verifies ---- */

/* The test config with [records] algorithm = alg, verify_key_file = vk. */
static char *
ini_for(const char *alg, const char *vk)
{
	struct h_daemon_opts o = {
		.redis_sock = S->redis.sock, .target_url = S->target.url, .prefix = PREFIX,
		.verify_key = vk,
	};
	char *ini = h_daemon_ini(&o), *at;

	assert_non_null(ini);
	at = strstr(ini, "algorithm = ES256");
	assert_non_null(at);
	memcpy(at + strlen("algorithm = "), alg, 5);
	return ini;
}

static void
decided_record_runs(const char *alg, const char *name, const char *vk_suffix, const char *id)
{
	char *kid = keygen_ok(alg, NULL, name), *out = NULL;
	char *ini = ini_for(alg, tmp_path(name, vk_suffix));

	if (h_daemon_start(&D, ini) != 0)
		fail_msg("warrantd with %s verify_key_file %s did not get ready (log %s)", alg,
		    vk_suffix, D.log);
	char *argv[] = {(char *)h_bin("warrantctl"), "-c", D.ini, "decide",
	    "--on-behalf-of", "operator:4417", "--action", "gate.open", "--resource",
	    "canal/gate-14", "--basis", "role:gatekeeper", "--expires", "+10m", "--id",
	    (char *)id, "--key", (char *)tmp_path(name, ".key"), "--kid", kid, NULL};
	int rc = h_run(argv, 30000, &out);
	if (rc != 0)
		fail_msg("warrantctl decide --key %s.key exited %d: %s", name, rc, out);
	free(out);
	h_wait_hash_field(S->c, h_key(PREFIX, "decision:%s", id), "state", "done", H_WAIT_MS);
	assert_int_equal(h_count_calls(&S->target, id), 1);
	h_daemon_down(&D);
	free(ini);
	free(kid);
}

static void
test_es256_pub_verifies(void **state)
{
	(void)state;
	decided_record_runs("ES256", "e2e-es", ".pub", "kg-es-pub");
}

static void
test_es256_jwks_verifies(void **state)
{
	(void)state;
	decided_record_runs("ES256", "e2e-esj", ".jwks", "kg-es-jwks");
}

static void
test_rs256_jwks_verifies(void **state)
{
	(void)state;
	decided_record_runs("RS256", "e2e-rs", ".jwks", "kg-rs-jwks");
}

static void
test_hs256_jwks_verifies(void **state)
{
	(void)state;
	decided_record_runs("HS256", "e2e-hs", ".jwks", "kg-hs-jwks");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_es256_default, test_teardown),
		cmocka_unit_test_teardown(test_rs256, test_teardown),
		cmocka_unit_test_teardown(test_hs256, test_teardown),
		cmocka_unit_test_teardown(test_kid_given, test_teardown),
		cmocka_unit_test_teardown(test_refuses_to_overwrite, test_teardown),
		cmocka_unit_test_teardown(test_es256_pub_verifies, test_teardown),
		cmocka_unit_test_teardown(test_es256_jwks_verifies, test_teardown),
		cmocka_unit_test_teardown(test_rs256_jwks_verifies, test_teardown),
		cmocka_unit_test_teardown(test_hs256_jwks_verifies, test_teardown),
	};

	umask(022);	/* the modes asserted are those keygen asks for */
	return cmocka_run_group_tests(tests, h_group_setup, h_group_teardown);
}
