/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_jread: jread against jansson, differentially. Every input is read by
 * both, jansson as the record was read before jread (JSON_REJECT_DUPLICATES;
 * with JSON_DECODE_ANY, so that a document of any type is compared too), and
 * the target aborts when they disagree on accepting it, on its type, on the
 * type of an asked-for top-level member, or on a string member's value.
 * One known difference, where jread is the stricter: jansson's stream loses
 * a NUL byte it looked ahead at and put back (after a number or a word:
 * `{"a":1<NUL>}` loads), so an input with a NUL only has to be refused by
 * jread (RFC 8259 has no place for one). */
#include "fuzz.h"
#include "base/jread.h"

#include <jansson.h>

static const char *const names[] = {"recordId", "parameters", "a", "", "b"};
#define NNAMES (sizeof names / sizeof names[0])

static enum jread_type
type_of(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return JREAD_OBJECT;
	case JSON_ARRAY: return JREAD_ARRAY;
	case JSON_STRING: return JREAD_STRING;
	case JSON_INTEGER: case JSON_REAL: return JREAD_NUMBER;
	case JSON_TRUE: return JREAD_TRUE;
	case JSON_FALSE: return JREAD_FALSE;
	case JSON_NULL: return JREAD_NULL;
	}
	return JREAD_NONE;
}

static int
ascii(const char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s >= 0x80)
			return 0;
	return 1;
}

static void
disagree(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_jread: jread and jansson disagree: %s (%s)\n", what, detail);
	abort();
}

/* A member as jread found it against the same member in jansson's object. */
static void
check_member(const struct jread_member *m, const json_t *v)
{
	char *s;
	size_t n;

	if (v == NULL ? m->type != JREAD_NONE : m->type != type_of(v))
		disagree("a member's type", m->name);
	if (m->type == JREAD_NONE)
		return;
	/* The span is exactly the value: read alone it is of the same type. */
	if (jread_doc(m->value, m->len, NULL, 0, NULL, 0) != m->type)
		disagree("a member's span", m->name);
	if (m->type != JREAD_STRING)
		return;
	if ((s = malloc(m->len)) == NULL)
		abort();
	n = jread_unescape(m, s);
	if (n != json_string_length(v) || memcmp(s, json_string_value(v), n) != 0)
		disagree("a string member's value", m->name);
	if (ascii(s) && !jread_string_is(m, json_string_value(v)))
		disagree("jread_string_is", m->name);
	free(s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jread_member m[NNAMES];
	char err[128];
	json_error_t jerr;
	enum jread_type t;
	json_t *j;

	for (size_t i = 0; i < NNAMES; i++)
		m[i].name = names[i];
	t = jread_doc((const char *)data, size, m, NNAMES, err, sizeof err);
	if (memchr(data, '\0', size) != NULL) {
		if (t != JREAD_NONE)
			disagree("jread accepts a NUL byte", "");
		return 0;
	}
	j = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
	if (j == NULL ? t != JREAD_NONE : t != type_of(j))
		disagree(j == NULL ? "jread accepts" : "jread refuses or types differently",
		    j == NULL ? jerr.text : err);
	for (size_t i = 0; i < NNAMES; i++)
		check_member(&m[i], json_is_object(j) ? json_object_get(j, names[i]) : NULL);
	json_decref(j);
	return 0;
}
