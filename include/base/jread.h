/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * jread: a strict, allocation-light JSON reader for the record's hot path.
 *
 * It checks one whole document by RFC 8259 with exactly the rules of
 * jansson's json_loadb(..., JSON_REJECT_DUPLICATES, ...) (a document jansson
 * refuses, this refuses; fuzz/fuzz_jread.c holds them to it) and hands back
 * where a few named members of the top-level object are, without building a
 * value per field: jansson read the record one character at a time through
 * its stream and cost a fifth of a job (bench/README.md, lever 9).
 *
 * The rules: UTF-8 only (no overlong form, no surrogate, nothing above
 * U+10FFFF); no control character in a string; only the escapes of RFC 8259,
 * a \u surrogate only as a high-low pair, no \u0000; no leading zero, an
 * integer within int64_t and a number that is finite as a double (jansson
 * keeps them so); no duplicate name in any object, at any depth (compared
 * after unescaping); at most JREAD_MAX_DEPTH values nested (jansson's own
 * limit, counted as it counts); whitespace only after the value; no NUL byte
 * anywhere (the one place where this is stricter: jansson's stream loses a
 * NUL it looked ahead at after a number or a word). Pure.
 */
#ifndef WARRANTD_JREAD_H
#define WARRANTD_JREAD_H

#include <stddef.h>

/* Values nested in one another, the document's own value counting 1. */
#define JREAD_MAX_DEPTH 2048

enum jread_type {
	JREAD_NONE = 0,		/* not JSON, or no such member */
	JREAD_OBJECT,
	JREAD_ARRAY,
	JREAD_STRING,
	JREAD_NUMBER,
	JREAD_TRUE,
	JREAD_FALSE,
	JREAD_NULL,
};

/* One member of the top-level object that the caller asks for. */
struct jread_member {
	const char *name;	/* in: ASCII, compared with the unescaped name */
	enum jread_type type;	/* out: JREAD_NONE when the object has no such member */
	const char *value;	/* out: the value's first byte in the text (borrowed) */
	size_t len;		/* out: its bytes, a string's quotes included */
};

/*
 * Reads the `len` bytes at `text` (no NUL needed) as one JSON document.
 * Returns the type of its value, or JREAD_NONE when it is not JSON, with one
 * line for people in `err` (`errlen` bytes; may be NULL). When the value is
 * an object, each of the `n` members m[] is filled in (m may be NULL when n
 * is 0); otherwise they are all JREAD_NONE. m[].value points into `text`.
 */
enum jread_type jread_doc(const char *text, size_t len, struct jread_member *m, size_t n,
			  char *err, size_t errlen)
	__attribute__((warn_unused_result));

/*
 * Unescapes the string member `m` (type JREAD_STRING, from jread_doc) into
 * `out`, which has room for m->len bytes, and ends it with a NUL; returns
 * its length. It holds no NUL of its own (\u0000 is refused).
 */
size_t jread_unescape(const struct jread_member *m, char *out);

/* 1 when `m` is a string member equal, unescaped, to the ASCII string `s`. */
int jread_string_is(const struct jread_member *m, const char *s);

#endif
