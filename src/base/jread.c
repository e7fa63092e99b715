/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * jread: a strict JSON reader that checks a whole document in one pass over
 * its bytes and remembers only where the asked-for top-level members are.
 * The rules are jansson's with JSON_REJECT_DUPLICATES (see jread.h); where
 * jansson's limits are not RFC 8259's (int64_t integers, finite doubles,
 * no \u0000, 2048 levels) they are copied, so that a record this accepts
 * is one that jansson, which still reads it off the hot path, accepts too.
 */
#include "base/jread.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEYS_INLINE	64	/* names held without malloc: a record has a dozen */
#define PAIRWISE_MAX	16	/* up to this many names pair by pair: a record has 11 */
#define NUM_INLINE	64	/* a real number this long is copied to the stack for strtod */
#define FNV_OFFSET	14695981039346656037ULL
#define FNV_PRIME	1099511628211ULL

/* A name of an object still open: its first byte after the opening quote,
 * and a hash of its code points, so that "a" and "\u0061" meet. */
struct key {
	const unsigned char *lit;
	uint64_t hash;
};

struct jr {
	const unsigned char *p, *end, *start;
	const char *why;		/* the first error */
	struct key *keys;		/* the names of the open objects, innermost last */
	size_t nkeys, cap;
	struct jread_member *m;		/* asked for: the top-level object's members */
	size_t nm;
	struct key inline_keys[KEYS_INLINE];
};

static enum jread_type value(struct jr *r, unsigned depth);

static int
bad(struct jr *r, const char *why)
{
	r->why = why;
	return -1;
}

static void
skip_ws(struct jr *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
		r->p++;
}

/* 1 when the next byte is `c`, and then steps past it. */
static int
take(struct jr *r, unsigned char c)
{
	if (r->p < r->end && *r->p == c) {
		r->p++;
		return 1;
	}
	return 0;
}

static int
is_digit(const struct jr *r)
{
	return r->p < r->end && *r->p >= '0' && *r->p <= '9';
}

/* ---- strings ---- */

/* The code point of the UTF-8 character at p (at most `left` bytes) and its
 * length in *n; -1 for an overlong form, a surrogate, more than U+10FFFF, a
 * stray continuation byte or a cut-off sequence: RFC 3629, as jansson. */
static long
utf8_char(const unsigned char *p, size_t left, size_t *n)
{
	unsigned c = p[0];
	size_t len;
	long cp, min;

	if (c < 0x80) {
		*n = 1;
		return (long)c;
	}
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2, cp = c & 0x1F, min = 0x80;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3, cp = c & 0x0F, min = 0x800;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4, cp = c & 0x07, min = 0x10000;
	} else {
		return -1;
	}
	if (left < len)
		return -1;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return -1;
		cp = (cp << 6) | (p[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return -1;
	*n = len;
	return cp;
}

static size_t
utf8_put(long cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xC0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xE0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	out[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/* The four hex digits at p as a number, or -1. */
static long
hex4(const unsigned char *p)
{
	long v = 0;

	for (int i = 0; i < 4; i++) {
		unsigned char c = p[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
		    c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;

		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

/* What the one-letter escape \c stands for, or -1 when RFC 8259 has none. */
static long
simple_escape(unsigned char c)
{
	switch (c) {
	case '"': case '\\': case '/': return c;
	case 'b': return '\b';
	case 'f': return '\f';
	case 'n': return '\n';
	case 'r': return '\r';
	case 't': return '\t';
	default: return -1;
	}
}

static int
high_surrogate(long cp)
{
	return cp >= 0xD800 && cp <= 0xDBFF;
}

static int
low_surrogate(long cp)
{
	return cp >= 0xDC00 && cp <= 0xDFFF;
}

/* The escape at r->p (a backslash), stepped past: its code point, or -1.
 * A high surrogate takes the low one's escape after it along. */
static long
scan_escape(struct jr *r)
{
	const unsigned char *p = r->p;
	long cp, lo;

	if (r->end - p >= 2 && (cp = simple_escape(p[1])) >= 0) {
		r->p += 2;
		return cp;
	}
	if (r->end - p < 6 || p[1] != 'u' || (cp = hex4(p + 2)) < 0)
		return bad(r, "invalid escape");
	if (cp == 0)	/* jansson without JSON_ALLOW_NUL; C strings could not hold it */
		return bad(r, "\\u0000 is not allowed");
	if (low_surrogate(cp))
		return bad(r, "unpaired surrogate escape");
	r->p += 6;
	if (!high_surrogate(cp))
		return cp;
	p = r->p;
	if (r->end - p < 6 || p[0] != '\\' || p[1] != 'u' || (lo = hex4(p + 2)) < 0 ||
	    !low_surrogate(lo))
		return bad(r, "unpaired surrogate escape");
	r->p += 6;
	return 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
}

/* At an opening quote: checks the string, steps past its closing quote and
 * hashes its code points into *hash; *esc is 1 when it has an escape. */
static int
scan_string(struct jr *r, uint64_t *hash, int *esc)
{
	uint64_t h = FNV_OFFSET;
	long cp;
	size_t n;

	*esc = 0;
	r->p++;
	for (;;) {
		if (r->p >= r->end)
			return bad(r, "unterminated string");
		unsigned char c = *r->p;
		if (c == '"')
			break;
		if (c < 0x20)
			return bad(r, "control character in a string");
		if (c == '\\') {
			*esc = 1;
			if ((cp = scan_escape(r)) < 0)
				return -1;
		} else if (c < 0x80) {
			cp = c;
			r->p++;
		} else if ((cp = utf8_char(r->p, (size_t)(r->end - r->p), &n)) >= 0) {
			r->p += n;
		} else {
			return bad(r, "invalid UTF-8");
		}
		h = (h ^ (uint64_t)cp) * FNV_PRIME;
	}
	r->p++;
	*hash = h;
	return 0;
}

/* The escape at p of a string already checked, stepped past. */
static long
unescape(const unsigned char **pp)
{
	const unsigned char *p = *pp;
	long cp = simple_escape(p[1]);

	if (cp >= 0) {
		*pp = p + 2;
		return cp;
	}
	cp = hex4(p + 2);
	if (!high_surrogate(cp)) {
		*pp = p + 6;
		return cp;
	}
	*pp = p + 12;
	return 0x10000 + ((cp - 0xD800) << 10) + (hex4(p + 8) - 0xDC00);
}

/* The next code point of a string already checked, stepped past; -1 at its
 * closing quote. */
static long
cp_next(const unsigned char **pp)
{
	const unsigned char *p = *pp;
	size_t n = 1;
	long cp;

	if (*p == '"')
		return -1;
	if (*p == '\\')
		return unescape(pp);
	cp = utf8_char(p, 4, &n);	/* checked: never past the closing quote */
	*pp = p + n;
	return cp;
}

/* Orders two checked strings (after the opening quote) by code points. */
static int
lit_cmp(const unsigned char *a, const unsigned char *b)
{
	for (;;) {
		long x = cp_next(&a), y = cp_next(&b);

		if (x != y)
			return x < y ? -1 : 1;
		if (x < 0)
			return 0;
	}
}

/* 1 when the checked string `lit` (after its opening quote, `raw` bytes to
 * the closing one) is, unescaped, the ASCII string `s`. */
static int
lit_is(const unsigned char *lit, size_t raw, int esc, const char *s)
{
	long cp;

	if (!esc)	/* raw bytes, and lit holds no NUL: strncmp stops in s alone */
		return (raw == 0 || lit[0] == (unsigned char)s[0]) &&
		    strncmp((const char *)lit, s, raw) == 0 && s[raw] == '\0';
	for (;; s++) {
		if ((cp = cp_next(&lit)) < 0)
			return *s == '\0';
		if (*s == '\0' || cp != (unsigned char)*s)
			return 0;
	}
}

/* ---- numbers and words ---- */

/* jansson reads an integer with strtoll and refuses one out of range. */
static int
int_fits(struct jr *r, const unsigned char *s, const unsigned char *e)
{
	int neg = *s == '-';
	size_t n = (size_t)(e - s) - (size_t)neg;

	if (n < 19 || (n == 19 && memcmp(s + neg, neg ? "9223372036854775808" :
	    "9223372036854775807", 19) <= 0))
		return 0;
	return bad(r, "integer out of range");
}

/* jansson reads a real with strtod and refuses one that overflows. The
 * daemon never calls setlocale: the decimal point is '.'. */
static int
real_fits(struct jr *r, const unsigned char *s, const unsigned char *e)
{
	char buf[NUM_INLINE], *t = buf;
	size_t n = (size_t)(e - s);
	double v;

	if (n >= sizeof buf && (t = malloc(n + 1)) == NULL)
		return bad(r, "out of memory");
	memcpy(t, s, n);
	t[n] = '\0';
	errno = 0;
	v = strtod(t, NULL);
	if (t != buf)
		free(t);
	if (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL))
		return bad(r, "real number overflow");
	return 0;
}

static void
skip_digits(struct jr *r)
{
	while (is_digit(r))
		r->p++;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int
scan_number(struct jr *r)
{
	const unsigned char *s = r->p;
	int real = 0;

	(void)take(r, '-');
	if (!take(r, '0')) {
		if (!is_digit(r))
			return bad(r, "invalid number");
		skip_digits(r);
	}
	if (take(r, '.')) {
		real = 1;
		if (!is_digit(r))
			return bad(r, "invalid number");
		skip_digits(r);
	}
	if (take(r, 'e') || take(r, 'E')) {
		real = 1;
		if (!take(r, '+'))
			(void)take(r, '-');
		if (!is_digit(r))
			return bad(r, "invalid number");
		skip_digits(r);
	}
	return real ? real_fits(r, s, r->p) : int_fits(r, s, r->p);
}

static int
scan_word(struct jr *r, const char *w, size_t n)
{
	if ((size_t)(r->end - r->p) < n || memcmp(r->p, w, n) != 0)
		return bad(r, "invalid literal");
	r->p += n;
	return 0;
}

/* ---- containers ---- */

static int
push_key(struct jr *r, const unsigned char *lit, uint64_t hash)
{
	if (r->nkeys == r->cap) {
		size_t cap = r->cap * 2;
		struct key *k = r->keys == r->inline_keys ? malloc(cap * sizeof *k) :
		    realloc(r->keys, cap * sizeof *k);

		if (k == NULL)
			return bad(r, "out of memory");
		if (r->keys == r->inline_keys)
			memcpy(k, r->inline_keys, sizeof r->inline_keys);
		r->keys = k;
		r->cap = cap;
	}
	r->keys[r->nkeys].lit = lit;
	r->keys[r->nkeys].hash = hash;
	r->nkeys++;
	return 0;
}

static int
key_order(const void *a, const void *b)
{
	const struct key *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return lit_cmp(x->lit, y->lit);
}

/* Sorted past a few names, so that an object of many names costs
 * n log n comparisons, whatever hashes an attacker picks. */
static int
has_duplicate(struct key *k, size_t n)
{
	if (n <= PAIRWISE_MAX) {
		for (size_t i = 0; i < n; i++)
			for (size_t j = i + 1; j < n; j++)
				if (k[i].hash == k[j].hash && lit_cmp(k[i].lit, k[j].lit) == 0)
					return 1;
		return 0;
	}
	qsort(k, n, sizeof *k, key_order);
	for (size_t i = 1; i < n; i++)
		if (key_order(&k[i - 1], &k[i]) == 0)
			return 1;
	return 0;
}

/* A member of the top-level object: fills in the asked-for one it names. */
static void
note_member(struct jr *r, const unsigned char *name, size_t raw, int esc, enum jread_type t,
	    const unsigned char *v)
{
	for (size_t i = 0; i < r->nm; i++) {
		struct jread_member *m = &r->m[i];

		if (m->type == JREAD_NONE && lit_is(name + 1, raw, esc, m->name)) {
			m->type = t;
			m->value = (const char *)v;
			m->len = (size_t)(r->p - v);
			return;
		}
	}
}

/* The members of an object, its '{' at r->p; `depth` is the object's. */
static int
members(struct jr *r, unsigned depth)
{
	const unsigned char *name, *v;
	enum jread_type t;
	uint64_t hash;
	size_t raw;
	int esc;

	r->p++;
	skip_ws(r);
	if (take(r, '}'))
		return 0;
	for (;;) {
		skip_ws(r);
		if (r->p >= r->end || *r->p != '"')
			return bad(r, "string or '}' expected");
		name = r->p;
		if (scan_string(r, &hash, &esc) != 0 || push_key(r, name + 1, hash) != 0)
			return -1;
		raw = (size_t)(r->p - name) - 2;
		skip_ws(r);
		if (!take(r, ':'))
			return bad(r, "':' expected");
		skip_ws(r);
		v = r->p;
		if ((t = value(r, depth + 1)) == JREAD_NONE)
			return -1;
		if (depth == 1)
			note_member(r, name, raw, esc, t, v);
		skip_ws(r);
		if (take(r, '}'))
			return 0;
		if (!take(r, ','))
			return bad(r, "',' or '}' expected");
	}
}

static int
object(struct jr *r, unsigned depth)
{
	size_t base = r->nkeys;
	int rc = members(r, depth);

	if (rc == 0 && has_duplicate(r->keys + base, r->nkeys - base))
		rc = bad(r, "duplicate object key");
	r->nkeys = base;
	return rc;
}

static int
array(struct jr *r, unsigned depth)
{
	r->p++;
	skip_ws(r);
	if (take(r, ']'))
		return 0;
	for (;;) {
		if (value(r, depth + 1) == JREAD_NONE)
			return -1;
		skip_ws(r);
		if (take(r, ']'))
			return 0;
		if (!take(r, ','))
			return bad(r, "',' or ']' expected");
	}
}

/* jansson counts every value on the way down, a scalar too. */
static enum jread_type
value(struct jr *r, unsigned depth)
{
	uint64_t hash;
	int esc;

	if (depth > JREAD_MAX_DEPTH) {
		(void)bad(r, "maximum parsing depth reached");
		return JREAD_NONE;
	}
	skip_ws(r);
	if (r->p >= r->end) {
		(void)bad(r, "unexpected end of text");
		return JREAD_NONE;
	}
	switch (*r->p) {
	case '{':
		return object(r, depth) == 0 ? JREAD_OBJECT : JREAD_NONE;
	case '[':
		return array(r, depth) == 0 ? JREAD_ARRAY : JREAD_NONE;
	case '"':
		return scan_string(r, &hash, &esc) == 0 ? JREAD_STRING : JREAD_NONE;
	case 't':
		return scan_word(r, "true", 4) == 0 ? JREAD_TRUE : JREAD_NONE;
	case 'f':
		return scan_word(r, "false", 5) == 0 ? JREAD_FALSE : JREAD_NONE;
	case 'n':
		return scan_word(r, "null", 4) == 0 ? JREAD_NULL : JREAD_NONE;
	default:
		return scan_number(r) == 0 ? JREAD_NUMBER : JREAD_NONE;
	}
}

static void
clear_members(struct jread_member *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		m[i].type = JREAD_NONE;
		m[i].value = NULL;
		m[i].len = 0;
	}
}

enum jread_type
jread_doc(const char *text, size_t len, struct jread_member *m, size_t n, char *err,
	  size_t errlen)
{
	struct jr r;
	enum jread_type t;

	r.p = r.start = (const unsigned char *)text;
	r.end = r.p + len;
	r.why = NULL;
	r.keys = r.inline_keys;
	r.nkeys = 0;
	r.cap = KEYS_INLINE;
	r.m = m;
	r.nm = n;
	clear_members(m, n);
	t = value(&r, 1);
	skip_ws(&r);
	if (t != JREAD_NONE && r.p != r.end) {
		(void)bad(&r, "end of text expected");
		t = JREAD_NONE;
	}
	if (r.keys != r.inline_keys)
		free(r.keys);
	if (t == JREAD_NONE) {
		clear_members(m, n);
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "%s at byte %zu", r.why, (size_t)(r.p - r.start));
	}
	return t;
}

size_t
jread_unescape(const struct jread_member *m, char *out)
{
	const unsigned char *p = (const unsigned char *)m->value + 1;
	const unsigned char *end = p + m->len - 2, *q;
	size_t n = 0;

	while (p < end) {
		if ((q = memchr(p, '\\', (size_t)(end - p))) == NULL)
			q = end;
		memcpy(out + n, p, (size_t)(q - p));
		n += (size_t)(q - p);
		p = q;
		if (p < end)
			n += utf8_put(unescape(&p), out + n);
	}
	out[n] = '\0';
	return n;
}

int
jread_string_is(const struct jread_member *m, const char *s)
{
	return m->type == JREAD_STRING &&
	    lit_is((const unsigned char *)m->value + 1, m->len - 2, 1, s);
}
