/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for src/base/jread.c: what it accepts and refuses, each case also
 * put to jansson (JSON_REJECT_DUPLICATES | JSON_DECODE_ANY), the reader the
 * record used before and still uses off the hot path: they must agree,
 * except on a NUL byte (jread.h, fuzz/fuzz_jread.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "base/jread.h"

struct text {
	const char *s;
	size_t len;
};

/* Literals with their length: some hold a NUL. */
#define T(x) {x, sizeof x - 1}

static enum jread_type
read_type(const char *s, size_t len)
{
	char err[128];

	return jread_doc(s, len, NULL, 0, err, sizeof err);
}

/* jread's answer, and jansson's the same unless the text holds a NUL. */
static void
expect(struct text t, enum jread_type want)
{
	enum jread_type got = read_type(t.s, t.len);
	json_t *j;

	if (got != want)
		fail_msg("jread: type %d, want %d: %.*s", got, want, (int)t.len, t.s);
	if (memchr(t.s, '\0', t.len) != NULL)
		return;
	j = json_loadb(t.s, t.len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL);
	if ((j == NULL) != (want == JREAD_NONE))
		fail_msg("jansson %s: %.*s", j == NULL ? "refuses" : "accepts", (int)t.len, t.s);
	json_decref(j);
}

static void
expect_all(const struct text *t, size_t n, enum jread_type want)
{
	for (size_t i = 0; i < n; i++)
		expect(t[i], want);
}

#define EXPECT_ALL(arr, want) expect_all(arr, sizeof arr / sizeof arr[0], want)

static void
test_valid(void **state)
{
	static const struct text objects[] = {
		T("{}"), T("{\"a\":1}"), T(" \t\r\n{ \"a\" : [ 1 , 2.5 ] , \"b\" : { } } \n"),
		T("{\"\":0}"), T("{\"a\":{\"x\":1},\"b\":{\"x\":1}}"),
		T("{\"a\":[true,false,null,{},[],\"\"]}"),
		T("{\"a\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"}"),
		T("{\"a\":\"\\u00e9\\uD83D\\uDE00\\uffff\\u0001\"}"),
		T("{\"a\":\"\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbf\xf4\x8f\xbf\xbf\x7f\"}"),
		T("{\"x\":{\"a\":1},\"y\":[{\"a\":1},{\"a\":2}]}"),
	};

	(void)state;
	EXPECT_ALL(objects, JREAD_OBJECT);
	expect((struct text)T("[]"), JREAD_ARRAY);
	expect((struct text)T(" [1,[2,[3]]] "), JREAD_ARRAY);
	expect((struct text)T("\"x\""), JREAD_STRING);
	expect((struct text)T("-0"), JREAD_NUMBER);
	expect((struct text)T("true"), JREAD_TRUE);
	expect((struct text)T("false"), JREAD_FALSE);
	expect((struct text)T("null"), JREAD_NULL);
}

static void
test_numbers(void **state)
{
	static const struct text good[] = {
		T("0"), T("-0"), T("7"), T("-12"), T("1.5"), T("-0.0"), T("0e0"), T("1E+2"),
		T("1e-2"), T("1e-400"), T("9223372036854775807"), T("-9223372036854775808"),
		T("123456789012345678"), T("1.7976931348623157e308"),
		T("-1.7976931348623157e308"), T("12345678901234567890.5"),
		T("1.00000000000000000000000000000000000000000000000000000000000000000000001"),
	};
	static const struct text bad[] = {
		T("01"), T("-01"), T("00"), T("-"), T("+1"), T("1."), T(".5"), T("1e"), T("1e+"),
		T("0x10"), T("1.e5"), T("- 1"), T("NaN"), T("Infinity"), T("-Infinity"),
		T("9223372036854775808"), T("-9223372036854775809"), T("99999999999999999999"),
		T("1e309"), T("-1e309"), T("1.8e308"),
	};

	(void)state;
	EXPECT_ALL(good, JREAD_NUMBER);
	EXPECT_ALL(bad, JREAD_NONE);
}

static void
test_syntax_refused(void **state)
{
	static const struct text bad[] = {
		T(""), T(" "), T("{"), T("}"), T("{\"a\"}"), T("{\"a\":}"), T("{\"a\":1,}"),
		T("[1,]"), T("[,1]"), T("{a:1}"), T("{'a':1}"), T("{\"a\":1}x"), T("{\"a\":1}{}"),
		T("{\"a\":1 \"b\":2}"), T("{\"a\" 1}"), T("{1:1}"), T("{\"a\":tru}"),
		T("{\"a\":True}"), T("{\"a\":nul}"), T("{\"a\":truex}"), T("{\"a\":\"x}"),
		T("\"abc"), T("\xef\xbb\xbf{}"), T("{\"a\":1}\xc3\xa9"), T("{\"a\":1}\f"),
		T("[1]]"), T("{\"a\":[}"), T("/*c*/{}"),
	};

	(void)state;
	EXPECT_ALL(bad, JREAD_NONE);
}

static void
test_strings_refused(void **state)
{
	static const struct text bad[] = {
		/* escapes */
		T("\"\\x\""), T("\"\\'\""), T("\"\\U0041\""), T("\"\\u12\""), T("\"\\u12G4\""),
		T("\"\\\""), T("\"\\"),
		/* surrogates in escapes: only a high-low pair */
		T("\"\\uD800\""), T("\"\\uDC00\""), T("\"\\uDFFF\""), T("\"\\uD800\\u0041\""),
		T("\"\\uD800x\""), T("\"\\uDBFF\\uDBFF\""), T("\"\\uDC00\\uD800\""),
		T("\"\\uD800\\uZZZZ\""), T("\"\\uD800\\\""),
		/* NUL and control characters */
		T("\"\\u0000\""), T("{\"\\u0000\":1}"), T("\"a\\u0000b\""), T("\"\x01\""),
		T("\"\n\""), T("\"\t\""), T("\"\x1f\""),
		/* UTF-8: overlong, surrogates, above U+10FFFF, stray, cut off */
		T("\"\xc0\xaf\""), T("\"\xc1\xbf\""), T("\"\xe0\x80\xaf\""),
		T("\"\xe0\x9f\xbf\""), T("\"\xf0\x80\x80\xaf\""), T("\"\xf0\x8f\xbf\xbf\""),
		T("\"\xed\xa0\x80\""), T("\"\xed\xbf\xbf\""), T("\"\xf4\x90\x80\x80\""),
		T("\"\xf5\x80\x80\x80\""), T("\"\xf8\x88\x80\x80\x80\""), T("\"\xff\""),
		T("\"\x80\""), T("\"\xbf\""), T("\"\xe2\x82\""), T("\"\xe2\x82"),
		T("\"\xc3\x28\""), T("\"\xf0\x9f\x98\""),
	};

	(void)state;
	EXPECT_ALL(bad, JREAD_NONE);
}

/* A NUL byte is refused wherever it is. jansson loses one that follows a
 * number or a word (its stream's put-back), so those differ on purpose. */
static void
test_nul(void **state)
{
	static const struct text bad[] = {
		T("{\"a\":1\0}"), T("{\"a\":true\0}"), T("1\0"), T("{\"a\":\"\0\"}"), T("\0{}"),
		T("{}\0"), T("{\"a\0\":1}"),
	};

	(void)state;
	EXPECT_ALL(bad, JREAD_NONE);
	/* the difference, so that this test notices when jansson changes */
	json_t *j = json_loadb("{\"a\":1\0}", 8, JSON_REJECT_DUPLICATES, NULL);
	assert_non_null(j);
	json_decref(j);
}

static void
test_duplicates(void **state)
{
	static const struct text bad[] = {
		T("{\"a\":1,\"a\":2}"), T("{\"a\":1,\"\\u0061\":1}"),
		T("{\"\\u00e9\":1,\"\xc3\xa9\":1}"),
		T("{\"\\uD83D\\uDE00\":1,\"\xf0\x9f\x98\x80\":2}"), T("{\"\":1,\"\":2}"),
		T("{\"x\":{\"a\":1,\"a\":2}}"), T("[{\"a\":1,\"a\":1}]"),
		T("{\"x\":[{\"y\":{\"b\":1,\"c\":{},\"b\":1}}]}"),
		T("{\"k0\":0,\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,"
		    "\"k8\":8,\"k9\":9,\"k3\":0}"),
	};
	static const struct text good[] = {
		T("{\"a\":1,\"A\":2,\"a \":3,\"\\u0062\":4}"), T("{\"a\":{\"a\":{\"a\":1}}}"),
		T("{\"k0\":0,\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,"
		    "\"k8\":8,\"k9\":9,\"k10\":0}"),
	};
	char err[128];

	(void)state;
	EXPECT_ALL(bad, JREAD_NONE);
	EXPECT_ALL(good, JREAD_OBJECT);
	assert_int_equal(jread_doc("{\"a\":1,\"a\":2}", 13, NULL, 0, err, sizeof err), JREAD_NONE);
	assert_non_null(strstr(err, "duplicate"));
	assert_non_null(strstr(err, "at byte"));
}

/* More names than are held without malloc, and more than are compared
 * pair by pair: a duplicate among them, first or last, is found. */
static void
test_many_names(void **state)
{
	char *s = malloc(20000);
	size_t n = 0;

	(void)state;
	assert_non_null(s);
	s[n++] = '{';
	for (int i = 0; i < 1000; i++)
		n += (size_t)sprintf(s + n, "%s\"name%d\":{\"x\":%d}", i ? "," : "", i, i);
	s[n] = '}';
	expect((struct text){s, n + 1}, JREAD_OBJECT);
	n += (size_t)sprintf(s + n, ",\"name0\":1}");
	expect((struct text){s, n}, JREAD_NONE);
	memcpy(s + n - 11, ",\"name999\":1}", 13);
	expect((struct text){s, n + 2}, JREAD_NONE);
	free(s);
}

/* jansson's limit, counted as jansson counts it: every value on the way
 * down, the innermost scalar too. */
static void
test_depth(void **state)
{
	char *s = malloc(2 * JREAD_MAX_DEPTH + 8);
	size_t n;

	(void)state;
	assert_non_null(s);
	for (int levels = JREAD_MAX_DEPTH - 1; levels <= JREAD_MAX_DEPTH + 1; levels++) {
		/* `levels` arrays, empty innermost */
		memset(s, '[', (size_t)levels);
		memset(s + levels, ']', (size_t)levels);
		expect((struct text){s, 2 * (size_t)levels},
		    levels <= JREAD_MAX_DEPTH ? JREAD_ARRAY : JREAD_NONE);
		/* with a number inside: one value deeper */
		n = (size_t)levels;
		s[n++] = '1';
		memset(s + n, ']', (size_t)levels);
		expect((struct text){s, n + (size_t)levels},
		    levels < JREAD_MAX_DEPTH ? JREAD_ARRAY : JREAD_NONE);
	}
	free(s);
}

enum { M_ID, M_PARAMS, M_ALG, M_NUM, M_NESTED, M_ABSENT, M_COUNT };

static void
members_init(struct jread_member *m)
{
	static const char *const names[M_COUNT] = {
		"recordId", "parameters", "alg", "n", "inner", "absent",
	};

	for (int i = 0; i < M_COUNT; i++)
		m[i].name = names[i];
}

static void
test_members(void **state)
{
	static const char doc[] = "{\"re\\u0063ordId\" : \"gate-14\", \"parameters\":{\"inner\":1},"
	    "\"alg\":\"HS\\u0032\\u00356\",\"n\": -2.5e1 ,\"x\":[{\"absent\":1}]}";
	struct jread_member m[M_COUNT];
	char buf[64];

	(void)state;
	members_init(m);
	assert_int_equal(jread_doc(doc, strlen(doc), m, M_COUNT, NULL, 0), JREAD_OBJECT);
	/* an escaped name is the name unescaped */
	assert_int_equal(m[M_ID].type, JREAD_STRING);
	assert_int_equal(m[M_ID].len, strlen("\"gate-14\""));
	assert_memory_equal(m[M_ID].value, "\"gate-14\"", m[M_ID].len);
	assert_int_equal(jread_unescape(&m[M_ID], buf), 7);
	assert_string_equal(buf, "gate-14");
	assert_int_equal(m[M_PARAMS].type, JREAD_OBJECT);
	assert_memory_equal(m[M_PARAMS].value, "{\"inner\":1}", m[M_PARAMS].len);
	assert_int_equal(m[M_NUM].type, JREAD_NUMBER);
	assert_memory_equal(m[M_NUM].value, "-2.5e1", m[M_NUM].len);
	assert_true(jread_string_is(&m[M_ALG], "HS256"));
	assert_false(jread_string_is(&m[M_ALG], "HS25"));
	assert_false(jread_string_is(&m[M_ALG], "HS2567"));
	assert_false(jread_string_is(&m[M_NUM], "-2.5e1"));
	/* only the top level's members */
	assert_int_equal(m[M_NESTED].type, JREAD_NONE);
	assert_int_equal(m[M_ABSENT].type, JREAD_NONE);
	assert_null(m[M_ABSENT].value);
	/* not an object, or not JSON: nothing found */
	assert_int_equal(jread_doc("[{\"alg\":\"x\"}]", 13, m, M_COUNT, NULL, 0), JREAD_ARRAY);
	assert_int_equal(m[M_ALG].type, JREAD_NONE);
	assert_int_equal(jread_doc("{\"alg\":\"x\",}", 12, m, M_COUNT, NULL, 0), JREAD_NONE);
	assert_int_equal(m[M_ALG].type, JREAD_NONE);
}

/* The empty name is a name like any other, and a prefix is not a match. */
static void
test_member_names(void **state)
{
	struct jread_member m[] = {{.name = ""}, {.name = "ab"}, {.name = "a"}};

	(void)state;
	assert_int_equal(jread_doc("{\"a\":1,\"\":true,\"abc\":2}", 23, m, 3, NULL, 0),
	    JREAD_OBJECT);
	assert_int_equal(m[0].type, JREAD_TRUE);
	assert_int_equal(m[1].type, JREAD_NONE);
	assert_int_equal(m[2].type, JREAD_NUMBER);
	assert_int_equal(jread_doc("{\"\\u0061b\":[]}", 14, m, 3, NULL, 0), JREAD_OBJECT);
	assert_int_equal(m[0].type, JREAD_NONE);
	assert_int_equal(m[1].type, JREAD_ARRAY);
	assert_int_equal(m[2].type, JREAD_NONE);
}

static void
test_unescape(void **state)
{
	static const char doc[] =
	    "{\"recordId\":\"a\\u00e9\\uD83D\\uDE00\\n\\\"\\\\\\/\\t\xc3\xa9z\"}";
	static const char want[] = "a\xc3\xa9\xf0\x9f\x98\x80\n\"\\/\t\xc3\xa9z";
	struct jread_member m[M_COUNT];
	char buf[64];
	json_t *j = json_loads(doc, JSON_REJECT_DUPLICATES, NULL);

	(void)state;
	members_init(m);
	assert_int_equal(jread_doc(doc, strlen(doc), m, M_COUNT, NULL, 0), JREAD_OBJECT);
	assert_true(m[M_ID].len <= sizeof buf);
	assert_int_equal(jread_unescape(&m[M_ID], buf), strlen(want));
	assert_string_equal(buf, want);
	assert_string_equal(buf, json_string_value(json_object_get(j, "recordId")));
	json_decref(j);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_syntax_refused),
		cmocka_unit_test(test_strings_refused),
		cmocka_unit_test(test_nul),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_many_names),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_members),
		cmocka_unit_test(test_member_names),
		cmocka_unit_test(test_unescape),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
