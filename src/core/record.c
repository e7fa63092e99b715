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
#include "core/record.h"

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

#include "base/jread.h"
#include "jose/jws.h"
#include "base/wtime.h"

#define RECORD_TYP	"decision+jwt"
#define TEXT_FIELD_MAX	1024	/* onBehalfOf, basis: §3.1 */

/* One key of a set: exactly one of pk (ES256, RS256) and secret (HS256)
 * is set. */
struct member {
	char *kid;		/* NULL: none (a PEM file, a JWK without one) */
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
};

/* The keys of [records] verify_key_file, all for one algorithm; a record's
 * kid picks one (pick_key). */
struct record_key {
	enum jwa_alg alg;
	size_t n;		/* at least 1 */
	struct member *keys;
	/* Owners (record_key_ref): a verifying thread keeps the key alive
	 * across a reload that lets go of the loop's own. */
	atomic_int refs;
};

/* Another thread's verify contexts, one per key of the set it holds an
 * owner of (made when first used). */
struct record_verifier {
	struct record_key *key;
	EVP_PKEY_CTX **ctx;	/* key->n of them */
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
		ctx = NULL;
	}
	ERR_clear_error();
	return ctx;
}

static void
keys_free(struct record_key *k)
{
	for (size_t i = 0; i < k->n; i++) {
		struct member *m = &k->keys[i];
		EVP_PKEY_CTX_free(m->ctx);
		EVP_PKEY_free(m->pk);
		EVP_MAC_CTX_free(m->mac);	/* cleanses the key it holds */
		if (m->secret != NULL)
			OPENSSL_clear_free(m->secret, m->secret_len);
		free(m->kid);
	}
	free(k->keys);
	free(k);
}

/* jws_vkeys_read parses (so warrantctl, -t and the daemon accept the same
 * files); each key gets the context it verifies with here. */
struct record_key *
record_key_new(enum jwa_alg alg, const unsigned char *key, size_t key_len, char *err,
	       size_t errlen)
{
	struct jws_vkey *v;
	struct record_key *k;
	int n = jws_vkeys_read(key, key_len, alg, &v, err, errlen);

	if (n <= 0)
		return NULL;
	if ((k = calloc(1, sizeof *k)) == NULL ||
	    (k->keys = calloc((size_t)n, sizeof *k->keys)) == NULL) {
		free(k);
		jws_vkeys_free(v, (size_t)n);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	k->alg = alg;
	k->n = (size_t)n;
	atomic_init(&k->refs, 1);
	for (size_t i = 0; i < k->n; i++) {	/* the keys move from v to k */
		struct member *m = &k->keys[i];
		m->kid = v[i].kid;
		m->pk = v[i].pk;
		m->secret = v[i].secret;
		m->secret_len = v[i].secret_len;
		memset(&v[i], 0, sizeof v[i]);
	}
	jws_vkeys_free(v, k->n);
	for (size_t i = 0; i < k->n; i++) {
		struct member *m = &k->keys[i];
		if (m->secret != NULL)
			m->mac = hmac_keyed(m->secret, m->secret_len);
		else if ((m->ctx = verify_ctx_new(m->pk)) == NULL) {
			snprintf(err, errlen, "out of memory");
			keys_free(k);
			return NULL;
		}
	}
	return k;
}

size_t
record_key_count(const struct record_key *k)
{
	return k->n;
}

const char *
record_key_kid(const struct record_key *k, size_t i)
{
	return i < k->n ? k->keys[i].kid : NULL;
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
	keys_free(k);
}

struct record_verifier *
record_verifier_new(void)
{
	return calloc(1, sizeof(struct record_verifier));
}

/* Drops v's contexts and its owner of a key set. */
static void
verifier_clear(struct record_verifier *v)
{
	if (v->key != NULL)
		for (size_t i = 0; i < v->key->n; i++)
			EVP_PKEY_CTX_free(v->ctx[i]);
	free(v->ctx);
	record_key_free(v->key);
	v->ctx = NULL;
	v->key = NULL;
}

void
record_verifier_free(struct record_verifier *v)
{
	if (v == NULL)
		return;
	verifier_clear(v);
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

/* Key i of k, with v's context for it when v is set (made on first use:
 * v holds an owner of its set, so no other set can be at k). */
static int
verify_member(const struct record_key *k, size_t i, struct record_verifier *v,
	      const char *raw, const struct jws_parts *j)
{
	const struct member *m = &k->keys[i];

	if (k->alg == JWA_HS256 && m->mac != NULL)
		return verify_hmac(m->mac, raw, j);
	if (k->alg == JWA_HS256)
		return verify_hs256(m->secret, m->secret_len, raw, j);
	if (v == NULL)
		return verify_pkey(m->ctx, k->alg, raw, j);
	if (v->key != k) {
		verifier_clear(v);
		if ((v->ctx = calloc(k->n, sizeof(EVP_PKEY_CTX *))) == NULL)
			return VERIFY_NO_KEY;
		v->key = record_key_ref((struct record_key *)k);
	}
	if (v->ctx[i] == NULL)
		v->ctx[i] = verify_ctx_new(m->pk);
	return verify_pkey(v->ctx[i], k->alg, raw, j);
}

/* The header's kid (JREAD_NONE when it has none) as a NUL-terminated
 * string in buf: 0, or -1 when it is longer than any kid a set holds. */
static int
header_kid(const struct jread_member *kid, char *buf, size_t bufsize)
{
	if (kid->len > bufsize)	/* its quotes count: the text is shorter */
		return -1;
	jread_unescape(kid, buf);
	return 0;
}

/*
 * warrantd(7) §3.2: with several keys the record names one by kid; with
 * one, a record without a kid uses it, and so does one that names any kid
 * when the key has none (a PEM file: nothing to tell them apart by, as
 * before key sets). Index of the key, or -1: the record names no key of k.
 */
static long
pick_key(const struct record_key *k, const struct jread_member *kid)
{
	char name[6 * JWS_KID_MAX + 2];	/* \uXXXX is 6 bytes of text for 1 to 3 */

	if (k->n == 1 && (kid->type == JREAD_NONE || k->keys[0].kid == NULL))
		return 0;
	if (kid->type != JREAD_STRING || header_kid(kid, name, sizeof name) != 0)
		return -1;
	for (size_t i = 0; i < k->n; i++)
		if (k->keys[i].kid != NULL && strcmp(k->keys[i].kid, name) == 0)
			return (long)i;
	return -1;
}

/* The check is picked by pol->algorithm, never by the token; the key by its
 * kid. Raw bytes are parsed here as record_key_new parses them: the same
 * files are accepted and the same keys picked. */
static enum record_status
verify_signature(const struct record_policy *pol, const char *raw, const struct jws_parts *j,
		 const struct jread_member *kid, char *detail, size_t n)
{
	struct record_key *tmp = NULL;
	const struct record_key *k = pol->parsed_key;
	struct record_verifier *v = pol->verifier;
	char why[160];
	long i;
	int rc;

	if (k == NULL) {
		k = tmp = record_key_new(pol->algorithm, pol->key, pol->key_len, why, sizeof why);
		v = NULL;
	}
	if (k == NULL || k->alg != pol->algorithm)
		rc = VERIFY_NO_KEY;
	else if ((i = pick_key(k, kid)) < 0) {
		size_t nkeys = k->n;

		record_key_free(tmp);
		/* The kid is the attacker's text: not repeated here. */
		if (kid->type == JREAD_NONE)
			return fail(RECORD_BAD_SIGNATURE, detail, n, "signature: no kid, and "
			    "verify_key_file holds %zu keys", nkeys);
		return fail(RECORD_BAD_SIGNATURE, detail, n,
		    "signature: the kid names no key of verify_key_file");
	} else
		rc = verify_member(k, (size_t)i, v, raw, j);
	record_key_free(tmp);
	if (rc == VERIFY_NO_KEY)
		return fail(RECORD_BAD_SIGNATURE, detail, n,
		    "signature: the verification key is not a usable %s key",
		    jwa_name(pol->algorithm));
	if (rc != VERIFY_OK)
		return fail(RECORD_BAD_SIGNATURE, detail, n, "signature: does not verify");
	return RECORD_OK;
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

/* The header is the attacker's text: nothing of it goes into the detail.
 * *kid gets its kid member (JREAD_NONE when absent). */
static enum record_status
check_header(const struct record_policy *pol, const struct jws_parts *j,
	     struct jread_member *kid, char *detail, size_t n)
{
	const char *want = jwa_name(pol->algorithm);
	struct jread_member h[] = {{.name = "alg"}, {.name = "typ"}, {.name = "crit"},
	    {.name = "kid"}};
	enum jread_type t = jread_doc((const char *)j->header, j->header_len, h, 4, NULL, 0);

	*kid = h[3];
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
	if (h[3].type != JREAD_NONE && h[3].type != JREAD_STRING)
		return fail(RECORD_BAD_SIGNATURE, detail, n, "header: kid is not a string");
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
	struct jread_member kid;
	enum record_status st;

	if (!alg_supported(pol->algorithm))
		return fail(RECORD_BAD_SIGNATURE, detail, n,
		    "signature: the configured algorithm is not ES256, RS256 or HS256");
	/* Never take a record apart without a key to check it with. */
	if (pol->parsed_key == NULL && (pol->key == NULL || pol->key_len == 0))
		return fail(RECORD_BAD_SIGNATURE, detail, n, "signature: no verification key");
	if (jws_split(raw, &j) != 0)
		return fail(RECORD_BAD_SIGNATURE, detail, n,
		    "record: not a JWS compact serialization");
	st = check_header(pol, &j, &kid, detail, n);
	if (st == RECORD_OK && j.sig_len == 0)
		st = fail(RECORD_BAD_SIGNATURE, detail, n, "signature: missing");
	if (st == RECORD_OK)
		st = verify_signature(pol, raw, &j, &kid, detail, n);
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
