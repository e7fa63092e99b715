/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * record: verifying (§3.2) and validating (§3.1) the decision record.
 *
 * The JWS is checked here, with OpenSSL doing the cryptography (record_key.c:
 * the key sets and contexts; jws.c taking the JWS apart and signing, jwks.c
 * parsing keys), instead of by libjwt:
 * libjwt 1.10's jwt_decode refuses any typ but "JWT" and lets the token's
 * own alg pick the check, and its jwt_encode always writes typ=JWT. Here the
 * check is chosen by the configured algorithm alone; the header's alg only
 * has to agree with it.
 */
#define _POSIX_C_SOURCE 200809L
#include "core/record.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jread.h"
#include "core/record_key.h"
#include "jose/jws.h"
#include "base/wtime.h"

#define RECORD_TYP	"decision+jwt"
#define TEXT_FIELD_MAX	1024	/* onBehalfOf, basis: §3.1 */

/* The members of §3.1, in the order of field_names. */
enum field {
	F_ID, F_ON_BEHALF_OF, F_ACTION, F_RESOURCE, F_PARAMETERS, F_BASIS, F_DECIDED_AT,
	F_NOT_BEFORE, F_EXPIRES_AT, F_NOTIFY, F_ISS, F_AUD, F_COUNT
};

static const char *const field_names[F_COUNT] = {
	"recordId", "onBehalfOf", "action", "resource", "parameters", "basis", "decidedAt",
	"notBefore", "expiresAt", "notifyOnDenial", "iss", "aud",
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
	case RECORD_WRONG_AUDIENCE:
		return REASON_WRONG_AUDIENCE;
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

	if (k == NULL) {
		k = tmp = record_key_new(pol->algorithm, pol->key, pol->key_len, why, sizeof why);
		v = NULL;
	}
	size_t nkeys = k != NULL ? record_key_count(k) : 0;
	int rc = k == NULL ? RECORD_KEY_UNUSABLE :
	    record_key_verify(k, pol->algorithm, v, raw, j, kid);
	record_key_free(tmp);
	switch (rc) {
	case RECORD_KEY_VERIFIED:
		return RECORD_OK;
	case RECORD_KEY_NO_KID:
		return fail(RECORD_BAD_SIGNATURE, detail, n, "signature: no kid, and "
		    "verify_key_file holds %zu keys", nkeys);
	case RECORD_KEY_UNKNOWN_KID:	/* the kid is the attacker's text: not repeated */
		return fail(RECORD_BAD_SIGNATURE, detail, n,
		    "signature: the kid names no key of verify_key_file");
	case RECORD_KEY_UNUSABLE:
		return fail(RECORD_BAD_SIGNATURE, detail, n,
		    "signature: the verification key is not a usable %s key",
		    jwa_name(pol->algorithm));
	}
	return fail(RECORD_BAD_SIGNATURE, detail, n, "signature: does not verify");
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

/* 1 when the JSON array text `text` (len bytes, valid JSON) holds the
 * string `want`; 0 when not; -1 when a member is not a string. Read by
 * jansson: only records that carry an array come here. */
static int
array_holds(const char *text, size_t len, const char *want)
{
	json_t *a = json_loadb(text, len, 0, NULL), *v;
	size_t i;
	int found = 0;

	if (!json_is_array(a)) {
		json_decref(a);
		return -1;
	}
	json_array_foreach(a, i, v) {
		if (!json_is_string(v)) {
			found = -1;
			break;
		}
		if (strlen(json_string_value(v)) == json_string_length(v) &&
		    strcmp(json_string_value(v), want) == 0)
			found = 1;
	}
	json_decref(a);
	return found;
}

/* RFC 7519 §4.1.3: aud is a string or an array of strings; a principal
 * that does not find itself in it must refuse the record, and a worker
 * with no [records] audience identifies as nothing. */
static enum record_status
check_audience(const struct record_policy *pol, struct doc *d, char *detail, size_t n)
{
	const struct jread_member *m = &d->m[F_AUD];
	const char *aud;
	int r;

	if (m->type == JREAD_NONE && pol->audience == NULL)
		return RECORD_OK;
	if (m->type == JREAD_NONE)
		return fail(RECORD_WRONG_AUDIENCE, detail, n,
		    "aud: missing, and [records] audience is set");
	if (m->type == JREAD_STRING) {
		(void)string_field(d, F_AUD, &aud);
		r = pol->audience != NULL && strcmp(aud, pol->audience) == 0;
	} else if (m->type == JREAD_ARRAY)
		r = array_holds(m->value, m->len, pol->audience != NULL ? pol->audience : "");
	else
		r = -1;
	if (r < 0)
		return fail(RECORD_INVALID, detail, n, "aud: not a string or an array of strings");
	if (pol->audience == NULL)
		return fail(RECORD_WRONG_AUDIENCE, detail, n,
		    "aud: names an audience, and [records] audience is not set");
	if (r == 0)
		return fail(RECORD_WRONG_AUDIENCE, detail, n,
		    "aud: not this deployment's ([records] audience)");
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
	return check_audience(pol, d, detail, n);
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
