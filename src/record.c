/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * record: verifying (§3.2) and validating (§3.1) the decision record.
 *
 * The JWS is checked here, with OpenSSL doing the cryptography (and jws.c
 * taking the JWS apart, parsing keys and signing), instead of by libjwt:
 * libjwt 1.10's jwt_decode refuses any typ but "JWT" and lets the token's
 * own alg pick the check, and its jwt_encode always writes typ=JWT. Here the
 * check is chosen by the configured algorithm alone; the header's alg only
 * has to agree with it.
 */
#define _POSIX_C_SOURCE 200809L
#include "record.h"

#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/sha.h>

#include "jread.h"
#include "jws.h"
#include "wtime.h"

#define RECORD_TYP	"decision+jwt"
#define TEXT_FIELD_MAX	1024	/* onBehalfOf, basis: §3.1 */

/* Exactly one of pk (ES256, RS256) and secret (HS256) is set. */
struct record_key {
	enum jwa_alg alg;
	EVP_PKEY *pk;
	unsigned char *secret;
	size_t secret_len;
	/* HS256: an HMAC-SHA256 context keyed once, re-initialised per record
	 * (HMAC() fetched the algorithm and keyed a new context every time:
	 * 30,000 instructions a record). NULL: the one-shot HMAC is used. */
	EVP_MAC_CTX *mac;
	/* ES256, RS256: a verify context for pk, kept for the next record
	 * (EVP_DigestVerifyInit made one and fetched its algorithms per
	 * record: about 25,000 instructions). For one thread at a time: the
	 * others bring their own (struct record_verifier). */
	EVP_PKEY_CTX *ctx;
	/* Owners (record_key_ref): a verifying thread keeps the key alive
	 * across a reload that lets go of the loop's own. */
	atomic_int refs;
};

/* Another thread's verify context, with an owner of the key it is for. */
struct record_verifier {
	struct record_key *key;
	EVP_PKEY_CTX *ctx;
};

/* The members of §3.1, in the order of field_names. */
enum field {
	F_ID, F_ON_BEHALF_OF, F_ACTION, F_RESOURCE, F_PARAMETERS, F_BASIS, F_DECIDED_AT,
	F_NOT_BEFORE, F_EXPIRES_AT, F_NOTIFY, F_ISS, F_COUNT
};

static const char *const field_names[F_COUNT] = {
	"recordId", "onBehalfOf", "action", "resource", "parameters", "basis", "decidedAt",
	"notBefore", "expiresAt", "notifyOnDenial", "iss",
};

/* The fields of §3.1, unescaped into the payload's block while it is checked. */
struct fields {
	const char *id, *on_behalf_of, *action, *resource, *basis, *notify, *iss;
	int64_t decided_at, expires_at, not_before;
};

static enum record_status fail(enum record_status st, char *detail, size_t n,
			       const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

enum reason
record_status_reason(enum record_status st)
{
	switch (st) {
	case RECORD_OK:
		return REASON_NONE;
	case RECORD_BAD_SIGNATURE:
		return REASON_BAD_SIGNATURE;
	case RECORD_INVALID:
		return REASON_RECORD_INVALID;
	case RECORD_UNKNOWN_ACTION:
		return REASON_UNKNOWN_ACTION;
	}
	return REASON_RECORD_INVALID;
}

const char *
record_status_code(enum record_status st)
{
	return reason_name(record_status_reason(st));
}

static int
id_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	    c == '.' || c == '_' || c == '-';
}

/* "." and ".." would name a directory, not a record, wherever an id is
 * used as a path segment ({recordId} in a URL, a file name). */
static int
dot_name(const char *s, size_t n)
{
	return (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.');
}

int
record_id_valid(const char *id)
{
	size_t n;

	if (id == NULL)
		return 0;
	for (n = 0; id[n] != '\0'; n++)
		if (n >= RECORD_ID_MAX || !id_char((unsigned char)id[n]))
			return 0;
	return n > 0 && !dot_name(id, n);
}

/* Writes the line for people and passes `st` through, so callers can
 * `return fail(...)`. */
static enum record_status
fail(enum record_status st, char *detail, size_t n, const char *fmt, ...)
{
	va_list ap;

	if (detail != NULL && n > 0) {
		va_start(ap, fmt);
		vsnprintf(detail, n, fmt, ap);
		va_end(ap);
	}
	return st;
}

static int
alg_supported(enum jwa_alg alg)
{
	return alg == JWA_ES256 || alg == JWA_RS256 || alg == JWA_HS256;
}

/* ---- keys and signatures ---- */

/* A public key for `alg`, or NULL: none, or one of another type. */
static EVP_PKEY *
pem_key(const unsigned char *pem, size_t len, enum jwa_alg alg)
{
	EVP_PKEY *pk = jws_pem_read(pem, len, 0);

	if (pk != NULL && !jws_pkey_fits(pk, alg)) {
		EVP_PKEY_free(pk);
		pk = NULL;
	}
	return pk;
}

/* An HMAC-SHA256 context holding `key`, or NULL. */
static EVP_MAC_CTX *
hmac_keyed(const unsigned char *key, size_t key_len)
{
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	EVP_MAC_CTX *ctx = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
		OSSL_PARAM_construct_end(),
	};

	EVP_MAC_free(mac);	/* the context keeps its own reference */
	if (ctx != NULL && EVP_MAC_init(ctx, key, key_len, params) != 1) {
		EVP_MAC_CTX_free(ctx);
		ctx = NULL;
	}
	ERR_clear_error();
	return ctx;
}

/* A context that verifies a SHA-256 digest with pk; NULL when out of
 * memory. Caller frees (EVP_PKEY_CTX_free). */
static EVP_PKEY_CTX *
verify_ctx_new(EVP_PKEY *pk)
{
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, pk, NULL);

	if (ctx == NULL || EVP_PKEY_verify_init(ctx) != 1 ||
	    EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) != 1) {
		EVP_PKEY_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

/* The same acceptance rules as hs256() and pem_key(), which record_load
 * applies to raw bytes: a parsed key is never looser or stricter. */
struct record_key *
record_key_new(enum jwa_alg alg, const unsigned char *key, size_t key_len, char *err,
	       size_t errlen)
{
	struct record_key *k;

	if (!alg_supported(alg)) {
		snprintf(err, errlen, "the algorithm is not ES256, RS256 or HS256");
		return NULL;
	}
	if (key == NULL || key_len == 0 || key_len > INT_MAX) {
		snprintf(err, errlen, "the key is %s", key_len > INT_MAX ? "too large" : "empty");
		return NULL;
	}
	if ((k = calloc(1, sizeof *k)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	k->alg = alg;
	atomic_init(&k->refs, 1);
	if (alg == JWA_HS256) {
		const char *why = jws_hs256_problem(key, key_len);
		if (why != NULL) {
			snprintf(err, errlen, "%s", why);
			free(k);
			return NULL;
		}
		if ((k->secret = malloc(key_len)) == NULL) {
			snprintf(err, errlen, "out of memory");
			free(k);
			return NULL;
		}
		memcpy(k->secret, key, key_len);
		k->secret_len = key_len;
		k->mac = hmac_keyed(key, key_len);
		return k;
	}
	if ((k->pk = jws_pem_read(key, key_len, 0)) != NULL && jws_pkey_fits(k->pk, alg) &&
	    (k->ctx = verify_ctx_new(k->pk)) != NULL) {
		ERR_clear_error();
		return k;
	}
	if (k->pk != NULL && jws_pkey_fits(k->pk, alg))
		snprintf(err, errlen, "out of memory");
	else if (k->pk == NULL)
		snprintf(err, errlen, "not a PEM public key (BEGIN PUBLIC KEY)");
	else
		snprintf(err, errlen, "not a usable %s key: want %s", jwa_name(alg),
		    alg == JWA_ES256 ? "an EC P-256 public key" :
		    "an RSA public key of at least 2048 bits");
	ERR_clear_error();
	record_key_free(k);
	return NULL;
}

struct record_key *
record_key_ref(struct record_key *k)
{
	atomic_fetch_add(&k->refs, 1);
	return k;
}

void
record_key_free(struct record_key *k)
{
	if (k == NULL || atomic_fetch_sub(&k->refs, 1) > 1)
		return;
	EVP_PKEY_CTX_free(k->ctx);
	EVP_PKEY_free(k->pk);
	EVP_MAC_CTX_free(k->mac);	/* cleanses the key it holds */
	if (k->secret != NULL)
		OPENSSL_clear_free(k->secret, k->secret_len);
	free(k);
}

struct record_verifier *
record_verifier_new(void)
{
	return calloc(1, sizeof(struct record_verifier));
}

void
record_verifier_free(struct record_verifier *v)
{
	if (v == NULL)
		return;
	EVP_PKEY_CTX_free(v->ctx);
	record_key_free(v->key);
	free(v);
}

/* The signature over SHA-256(input); a context verifies any number of them. */
static int
digest_verify(EVP_PKEY_CTX *ctx, const char *input, size_t len, const unsigned char *sig,
	      size_t sig_len)
{
	unsigned char md[SHA256_DIGEST_LENGTH];

	SHA256((const unsigned char *)input, len, md);
	return EVP_PKEY_verify(ctx, sig, sig_len, md, sizeof md) == 1 ? 0 : -1;
}

enum { VERIFY_OK = 0, VERIFY_BAD = -1, VERIFY_NO_KEY = -2 };

static int
verify_hs256(const unsigned char *secret, size_t secret_len, const char *raw,
	     const struct jws_parts *j)
{
	unsigned char md[JWS_HS256_LEN];
	int ok;

	if (jws_hs256(secret, secret_len, (const unsigned char *)raw, j->input_len, md) != 0)
		return VERIFY_NO_KEY;
	ok = j->sig_len == sizeof md && CRYPTO_memcmp(md, j->sig, sizeof md) == 0;
	OPENSSL_cleanse(md, sizeof md);
	return ok ? VERIFY_OK : VERIFY_BAD;
}

/* HS256 with the context record_key_new keyed: EVP_MAC_init without a key
 * starts again with the same one. */
static int
verify_hmac(EVP_MAC_CTX *mac, const char *raw, const struct jws_parts *j)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	size_t md_len = 0;

	if (EVP_MAC_init(mac, NULL, 0, NULL) != 1 ||
	    EVP_MAC_update(mac, (const unsigned char *)raw, j->input_len) != 1 ||
	    EVP_MAC_final(mac, md, &md_len, sizeof md) != 1) {
		ERR_clear_error();
		return VERIFY_NO_KEY;
	}
	int ok = j->sig_len == md_len && CRYPTO_memcmp(md, j->sig, md_len) == 0;
	OPENSSL_cleanse(md, sizeof md);
	return ok ? VERIFY_OK : VERIFY_BAD;
}

/* ctx verifies with a key that fits `alg` (ES256 or RS256). */
static int
verify_pkey(EVP_PKEY_CTX *ctx, enum jwa_alg alg, const char *raw, const struct jws_parts *j)
{
	unsigned char *der = NULL;
	int der_len = 0, rc = VERIFY_BAD;

	if (ctx == NULL)
		rc = VERIFY_NO_KEY;
	else if (alg == JWA_RS256)
		rc = digest_verify(ctx, raw, j->input_len, j->sig, j->sig_len);
	else if (jws_es256_to_der(j->sig, j->sig_len, &der, &der_len) == 0)
		rc = digest_verify(ctx, raw, j->input_len, der, (size_t)der_len);
	OPENSSL_free(der);
	ERR_clear_error();
	return rc == 0 ? VERIFY_OK : rc == VERIFY_NO_KEY ? VERIFY_NO_KEY : VERIFY_BAD;
}

/* A key parsed for another algorithm is treated like raw bytes of the wrong
 * type: the configured algorithm still picks the check. */
static int
verify_parsed(const struct record_key *k, struct record_verifier *v, enum jwa_alg alg,
	      const char *raw, const struct jws_parts *j)
{
	if (k->alg != alg)
		return VERIFY_NO_KEY;
	if (alg == JWA_HS256 && k->mac != NULL)
		return verify_hmac(k->mac, raw, j);
	if (alg == JWA_HS256)
		return verify_hs256(k->secret, k->secret_len, raw, j);
	if (v == NULL)
		return verify_pkey(k->ctx, alg, raw, j);
	if (v->key != k) {	/* v holds an owner of its key: no other can be at k */
		EVP_PKEY_CTX_free(v->ctx);
		record_key_free(v->key);
		v->key = record_key_ref((struct record_key *)k);
		v->ctx = NULL;
	}
	if (v->ctx == NULL)
		v->ctx = verify_ctx_new(k->pk);
	return verify_pkey(v->ctx, alg, raw, j);
}

/* The check is picked by pol->algorithm, never by the token. */
static int
verify_signature(const struct record_policy *pol, const char *raw, const struct jws_parts *j)
{
	EVP_PKEY *pk;
	int rc;

	if (pol->parsed_key != NULL)
		return verify_parsed(pol->parsed_key, pol->verifier, pol->algorithm, raw, j);
	if (pol->algorithm == JWA_HS256)
		return verify_hs256(pol->key, pol->key_len, raw, j);
	if ((pk = pem_key(pol->key, pol->key_len, pol->algorithm)) == NULL)
		return VERIFY_NO_KEY;
	EVP_PKEY_CTX *ctx = verify_ctx_new(pk);
	rc = verify_pkey(ctx, pol->algorithm, raw, j);
	EVP_PKEY_CTX_free(ctx);
	EVP_PKEY_free(pk);
	return rc;
}

char *
record_sign(enum jwa_alg alg, const unsigned char *key, size_t key_len, const char *kid,
	    const json_t *content)
{
	char why[160];
	struct jws_key *k;
	json_t *header;
	char *out = NULL;

	if (!json_is_object(content) || (k = jws_key_new(alg, key, key_len, why, sizeof why)) == NULL)
		return NULL;
	header = json_pack("{s:s}", "typ", RECORD_TYP);
	if (header != NULL &&
	    (kid == NULL || json_object_set_new(header, "kid", json_string(kid)) == 0))
		out = jws_sign(k, header, content);
	json_decref(header);
	jws_key_free(k);
	return out;
}

/* ---- the JWS ---- */

/* The header is the attacker's text: nothing of it goes into the detail. */
static enum record_status
check_header(const struct record_policy *pol, const struct jws_parts *j, char *detail, size_t n)
{
	const char *want = jwa_name(pol->algorithm);
	struct jread_member h[] = {{.name = "alg"}, {.name = "typ"}, {.name = "crit"}};
	enum jread_type t = jread_doc((const char *)j->header, j->header_len, h, 3, NULL, 0);

	if (t != JREAD_OBJECT)
		return fail(RECORD_BAD_SIGNATURE, detail, n, "header: not a JSON object");
	if (h[0].type != JREAD_STRING)
		return fail(RECORD_BAD_SIGNATURE, detail, n, "header: alg missing or not a string");
	if (!jread_string_is(&h[0], want))
		return fail(RECORD_BAD_SIGNATURE, detail, n, "header: alg is not %s", want);
	if (h[1].type != JREAD_STRING)
		return fail(RECORD_BAD_SIGNATURE, detail, n, "header: typ missing or not a string");
	if (!jread_string_is(&h[1], RECORD_TYP))
		return fail(RECORD_BAD_SIGNATURE, detail, n, "header: typ is not " RECORD_TYP);
	/* RFC 7515 §4.1.11: unknown critical extensions must be refused. */
	if (h[2].type != JREAD_NONE)
		return fail(RECORD_BAD_SIGNATURE, detail, n, "header: crit is not supported");
	return RECORD_OK;
}

/* The payload object as jread found it. `block` holds the verified bytes
 * (the R7 body, NUL-terminated) and after them room for the unescaped
 * strings: each is at most its quoted length less one, so `len` + 1 bytes
 * hold them all. The block goes to the record, or is freed. */
struct doc {
	struct jread_member m[F_COUNT];
	char *str[F_COUNT];	/* unescaped into the block on first use */
	char *block;
	size_t len, used;
};

/* `d` comes zeroed. */
static enum record_status
parse_object(const char *text, size_t len, struct doc *d, char *detail, size_t n)
{
	char why[128];
	enum jread_type t;

	for (int i = 0; i < F_COUNT; i++)
		d->m[i].name = field_names[i];
	if (len > (SIZE_MAX - 2) / 2 || (d->block = malloc(2 * len + 2)) == NULL)
		return fail(RECORD_INVALID, detail, n, "record: out of memory");
	memcpy(d->block, text, len);
	d->block[len] = '\0';
	d->len = len;
	t = jread_doc(d->block, len, d->m, F_COUNT, why, sizeof why);
	if (t == JREAD_OBJECT)
		return RECORD_OK;
	free(d->block);
	d->block = NULL;
	if (t == JREAD_NONE)
		return fail(RECORD_INVALID, detail, n, "record: not JSON: %s", why);
	return fail(RECORD_INVALID, detail, n, "record: not a JSON object");
}

static enum record_status
load_signed(const struct record_policy *pol, const char *raw, struct doc *d, char *detail,
	    size_t n)
{
	struct jws_parts j;
	enum record_status st;
	int rc;

	if (!alg_supported(pol->algorithm))
		return fail(RECORD_BAD_SIGNATURE, detail, n,
		    "signature: the configured algorithm is not ES256, RS256 or HS256");
	/* Never take a record apart without a key to check it with. */
	if (pol->parsed_key == NULL && (pol->key == NULL || pol->key_len == 0))
		return fail(RECORD_BAD_SIGNATURE, detail, n, "signature: no verification key");
	if (jws_split(raw, &j) != 0)
		return fail(RECORD_BAD_SIGNATURE, detail, n,
		    "record: not a JWS compact serialization");
	st = check_header(pol, &j, detail, n);
	if (st == RECORD_OK && j.sig_len == 0)
		st = fail(RECORD_BAD_SIGNATURE, detail, n, "signature: missing");
	if (st == RECORD_OK) {
		rc = verify_signature(pol, raw, &j);
		if (rc == VERIFY_NO_KEY)
			st = fail(RECORD_BAD_SIGNATURE, detail, n,
			    "signature: the verification key is not a usable %s key",
			    jwa_name(pol->algorithm));
		else if (rc != VERIFY_OK)
			st = fail(RECORD_BAD_SIGNATURE, detail, n, "signature: does not verify");
	}
	if (st == RECORD_OK)
		st = parse_object((const char *)j.payload, j.payload_len, d, detail, n);
	jws_parts_clear(&j);
	return st;
}

/* ---- §3.1 ---- */

/* Member i: 1 a string (unescaped into *out), 0 absent, -1 present but not
 * a string. */
static int
string_field(struct doc *d, enum field i, const char **out)
{
	*out = NULL;
	if (d->m[i].type == JREAD_NONE)
		return 0;
	if (d->m[i].type != JREAD_STRING)
		return -1;
	if (d->str[i] == NULL) {
		d->str[i] = d->block + d->len + 1 + d->used;
		d->used += jread_unescape(&d->m[i], d->str[i]) + 1;
	}
	*out = d->str[i];
	return 1;
}

static int
need_string(struct doc *d, enum field i, const char **out, char *detail, size_t n)
{
	int r = string_field(d, i, out);

	if (r == 0)
		fail(RECORD_INVALID, detail, n, "%s: missing", field_names[i]);
	else if (r < 0)
		fail(RECORD_INVALID, detail, n, "%s: not a string", field_names[i]);
	else if (**out == '\0')
		fail(RECORD_INVALID, detail, n, "%s: empty", field_names[i]);
	return r == 1 && **out != '\0' ? 0 : -1;
}

static int
optional_string(struct doc *d, enum field i, const char **out, char *detail, size_t n)
{
	if (string_field(d, i, out) >= 0)
		return 0;
	fail(RECORD_INVALID, detail, n, "%s: not a string", field_names[i]);
	return -1;
}

/* *out is 0 when an optional time is absent. */
static int
need_time(struct doc *d, enum field i, int required, int64_t *out, char *detail, size_t n)
{
	const char *s;
	int r = string_field(d, i, &s);

	*out = 0;
	if (r == 0 && !required)
		return 0;
	if (r == 0)
		fail(RECORD_INVALID, detail, n, "%s: missing", field_names[i]);
	else if (r < 0)
		fail(RECORD_INVALID, detail, n, "%s: not a string", field_names[i]);
	else if (wtime_parse_rfc3339(s, out) != 0)
		fail(RECORD_INVALID, detail, n,
		    "%s: not an RFC 3339 time in UTC (YYYY-MM-DDTHH:MM:SS[.frac]Z)",
		    field_names[i]);
	else
		return 0;
	return -1;
}

static int
control_char(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

/* No segment between '/' is empty, "*", "." or "..": so no leading, trailing
 * or double slash, no wildcard that would stand for many resources, and
 * nothing a server or proxy that normalises the path (even after decoding
 * %2E) could climb with. No '\' (a separator to some servers) and no control
 * character. NULL when valid, else the rule broken. */
static const char *
resource_problem(const char *r)
{
	for (const char *p = r; *p != '\0'; p++)
		if (*p == '\\' || control_char((unsigned char)*p))
			return "resource: contains '\\' or a control character";
	for (;;) {
		const char *end = strchr(r, '/');
		size_t len = end != NULL ? (size_t)(end - r) : strlen(r);

		if (len == 0 || (len == 1 && r[0] == '*') || dot_name(r, len))
			return "resource: a segment between '/' is empty, '*', '.' or '..'";
		if (end == NULL)
			return NULL;
		r = end + 1;
	}
}

/* onBehalfOf and basis go into headers and logs: bounded, one line. */
static int
text_field_ok(const char *s)
{
	size_t n = 0;

	for (; s[n] != '\0'; n++)
		if (n >= TEXT_FIELD_MAX || control_char((unsigned char)s[n]))
			return 0;
	return 1;
}

static enum record_status
check_names(const char *expected_id, struct doc *d, struct fields *f, char *detail, size_t n)
{
	const char *why;

	if (need_string(d, F_ID, &f->id, detail, n) != 0)
		return RECORD_INVALID;
	if (!record_id_valid(f->id))
		return fail(RECORD_INVALID, detail, n,
		    "recordId: not 1-64 of [A-Za-z0-9._-], or '.' or '..'");
	if (expected_id == NULL || strcmp(f->id, expected_id) != 0)
		return fail(RECORD_INVALID, detail, n, "recordId: not the id it was queued under");
	if (need_string(d, F_ON_BEHALF_OF, &f->on_behalf_of, detail, n) != 0 ||
	    need_string(d, F_ACTION, &f->action, detail, n) != 0)
		return RECORD_INVALID;
	if (!text_field_ok(f->on_behalf_of))
		return fail(RECORD_INVALID, detail, n,
		    "onBehalfOf: longer than 1024 bytes or has a control character");
	if (strchr(f->action, '*') != NULL)
		return fail(RECORD_INVALID, detail, n, "action: contains '*'");
	if (need_string(d, F_RESOURCE, &f->resource, detail, n) != 0)
		return RECORD_INVALID;
	if ((why = resource_problem(f->resource)) != NULL)
		return fail(RECORD_INVALID, detail, n, "%s", why);
	if (d->m[F_PARAMETERS].type == JREAD_NONE)
		return fail(RECORD_INVALID, detail, n, "parameters: missing");
	if (d->m[F_PARAMETERS].type != JREAD_OBJECT)
		return fail(RECORD_INVALID, detail, n, "parameters: not an object");
	if (need_string(d, F_BASIS, &f->basis, detail, n) != 0)
		return RECORD_INVALID;
	if (!text_field_ok(f->basis))
		return fail(RECORD_INVALID, detail, n,
		    "basis: longer than 1024 bytes or has a control character");
	return RECORD_OK;
}

/* An expired record passes: the deadline is for the job to act on (R1). */
static enum record_status
check_times(const struct record_policy *pol, struct doc *d, int64_t now, struct fields *f,
	    char *detail, size_t n)
{
	if (need_time(d, F_DECIDED_AT, 1, &f->decided_at, detail, n) != 0)
		return RECORD_INVALID;
	if (f->decided_at > now && f->decided_at - now > pol->clock_skew_ms)
		return fail(RECORD_INVALID, detail, n,
		    "decidedAt: more than clock_skew_s in the future");
	if (need_time(d, F_NOT_BEFORE, 0, &f->not_before, detail, n) != 0 ||
	    need_time(d, F_EXPIRES_AT, 1, &f->expires_at, detail, n) != 0)
		return RECORD_INVALID;
	if (f->expires_at <= f->decided_at)
		return fail(RECORD_INVALID, detail, n, "expiresAt: not later than decidedAt");
	if (f->expires_at - f->decided_at > pol->max_window_ms)
		return fail(RECORD_INVALID, detail, n,
		    "expiresAt: more than max_window_s after decidedAt");
	return RECORD_OK;
}

static enum record_status
validate(const struct record_policy *pol, const char *expected_id, struct doc *d, int64_t now,
	 struct fields *f, char *detail, size_t n)
{
	enum record_status st;

	if ((st = check_names(expected_id, d, f, detail, n)) != RECORD_OK ||
	    (st = check_times(pol, d, now, f, detail, n)) != RECORD_OK)
		return st;
	if (optional_string(d, F_NOTIFY, &f->notify, detail, n) != 0 ||
	    optional_string(d, F_ISS, &f->iss, detail, n) != 0)
		return RECORD_INVALID;
	if (pol->issuer != NULL && f->iss == NULL)
		return fail(RECORD_INVALID, detail, n, "iss: missing, and [records] issuer is set");
	if (pol->issuer != NULL && strcmp(f->iss, pol->issuer) != 0)
		return fail(RECORD_INVALID, detail, n, "iss: not the configured issuer");
	return RECORD_OK;
}

static char *
dup_or_null(const char *s)
{
	return s != NULL && *s != '\0' ? strdup(s) : NULL;
}

/* The strings stay in d's block, which the record takes. */
static struct record *
record_build(const struct fields *f, struct doc *d)
{
	struct record *rec = calloc(1, sizeof *rec);

	if (rec == NULL)
		return NULL;
	memcpy(rec->id, f->id, strlen(f->id) + 1);
	rec->on_behalf_of = (char *)f->on_behalf_of;
	rec->action = (char *)f->action;
	rec->resource = (char *)f->resource;
	rec->basis = (char *)f->basis;
	rec->notify_on_denial = f->notify != NULL && *f->notify != '\0' ? (char *)f->notify : NULL;
	rec->iss = (char *)f->iss;
	rec->decided_at_ms = f->decided_at;
	rec->expires_at_ms = f->expires_at;
	rec->not_before_ms = f->not_before;
	rec->body = d->block;
	rec->body_len = d->len;
	d->block = NULL;
	return rec;
}

/* notifyOnDenial when it is a usable string, whatever else is wrong. */
static char *
owner_of(struct doc *d)
{
	const char *s;

	return string_field(d, F_NOTIFY, &s) == 1 ? dup_or_null(s) : NULL;
}

enum record_status
record_load(const struct record_policy *pol, const char *expected_id, const char *raw,
	    int64_t now_ms, struct record **out, char **owner_out, char *detail,
	    size_t detail_len)
{
	struct fields f;
	struct doc d;
	enum record_status st;

	*out = NULL;
	if (owner_out != NULL)
		*owner_out = NULL;
	if (detail != NULL && detail_len > 0)
		detail[0] = '\0';
	/* Before anything is decoded or hashed: a huge value costs nothing more. */
	if (raw != NULL && pol->max_bytes > 0 && strnlen(raw, pol->max_bytes + 1) > pol->max_bytes)
		return fail(RECORD_INVALID, detail, detail_len,
		    "record: longer than [records] max_bytes (%zu)", pol->max_bytes);
	memset(&d, 0, sizeof d);
	if (pol->signature_required)
		st = load_signed(pol, raw, &d, detail, detail_len);
	else if (raw == NULL)
		st = fail(RECORD_INVALID, detail, detail_len, "record: missing");
	else
		st = parse_object(raw, strlen(raw), &d, detail, detail_len);
	if (st != RECORD_OK)
		return st;
	memset(&f, 0, sizeof f);
	st = validate(pol, expected_id, &d, now_ms, &f, detail, detail_len);
	if (st == RECORD_OK && (*out = record_build(&f, &d)) == NULL)
		st = fail(RECORD_INVALID, detail, detail_len, "record: out of memory");
	else if (st != RECORD_OK && owner_out != NULL)
		*owner_out = owner_of(&d);
	free(d.block);
	if (*out != NULL)
		st = record_check_action(pol, out, owner_out, detail, detail_len);
	return st;
}

/* Last, so a record that is also malformed reports record-invalid. */
enum record_status
record_check_action(const struct record_policy *pol, struct record **rec, char **owner_out,
		    char *detail, size_t detail_len)
{
	if (pol->action_known == NULL || pol->action_known(pol->action_ctx, (*rec)->action))
		return RECORD_OK;
	enum record_status st = fail(RECORD_UNKNOWN_ACTION, detail, detail_len,
	    "action: no [action %.64s] configured", (*rec)->action);
	if (owner_out != NULL)	/* owner_of(): the same usable notifyOnDenial */
		*owner_out = dup_or_null((*rec)->notify_on_denial);
	record_free(*rec);
	*rec = NULL;
	return st;
}

void
record_free(struct record *rec)
{
	if (rec == NULL)
		return;
	free(rec->body);	/* and the strings after it */
	free(rec);
}

json_t *
record_content(const struct record *rec)
{
	if (rec->body == NULL)
		return NULL;
	return json_loadb(rec->body, rec->body_len, JSON_REJECT_DUPLICATES, NULL);
}
