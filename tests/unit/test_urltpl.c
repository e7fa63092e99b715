/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for the action URL templates (warrantd(7) R7). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/urltpl.h"

static char *
expand(const char *tpl, const char *resource, const char *action, const char *record_id,
       const char *on_behalf_of)
{
	struct urltpl_vars v = {.resource = resource, .action = action, .record_id = record_id,
	    .on_behalf_of = on_behalf_of};
	char err[128] = "";
	char *url = urltpl_expand(tpl, &v, err, sizeof err);

	if (url == NULL)
		fail_msg("expand %s: %s", tpl, err);
	return url;
}

static void
assert_expands(const char *tpl, const char *resource, const char *want)
{
	char *url = expand(tpl, resource, "gate.open", "gate-14", "operator:4417");

	assert_string_equal(url, want);
	free(url);
}

static void
test_resource_segments_kept(void **state)
{
	(void)state;
	assert_expands("http://h/gates/{resource}/open", "canal/lateral-3/gate-14",
	    "http://h/gates/canal/lateral-3/gate-14/open");
	assert_expands("http://h/{resource}", "a.b_c~d-e", "http://h/a.b_c~d-e");
}

/* Hostile input stays inside its own segments. */
static void
test_resource_hostile(void **state)
{
	(void)state;
	assert_expands("http://h/gates/{resource}/open", "a b", "http://h/gates/a%20b/open");
	assert_expands("http://h/gates/{resource}/open", "100%", "http://h/gates/100%25/open");
	assert_expands("http://h/gates/{resource}/open", "caf\xc3\xa9",
	    "http://h/gates/caf%C3%A9/open");
	assert_expands("http://h/gates/{resource}/open", "x?admin=1#frag",
	    "http://h/gates/x%3Fadmin%3D1%23frag/open");
	assert_expands("http://h/gates/{resource}/open", "a&b+c",
	    "http://h/gates/a%26b%2Bc/open");
	assert_expands("http://h/gates/{resource}/open", "a\\b\"c<d>",
	    "http://h/gates/a%5Cb%22c%3Cd%3E/open");
	/* dot segments would be resolved away (RFC 3986 §5.2.4): encoded */
	assert_expands("http://h/gates/{resource}/open", "canal/../../admin",
	    "http://h/gates/canal/%2E%2E/%2E%2E/admin/open");
	assert_expands("http://h/gates/{resource}/open", "./x/.",
	    "http://h/gates/%2E/x/%2E/open");
	assert_expands("http://h/gates/{resource}/open", "..",
	    "http://h/gates/%2E%2E/open");
	/* dots inside a segment are plain data */
	assert_expands("http://h/gates/{resource}/open", "a..b/.../.x/x.",
	    "http://h/gates/a..b/.../.x/x./open");
	/* all together */
	assert_expands("http://h/{resource}", "../%/a b/\xc3\xa9/?/#/&/+",
	    "http://h/%2E%2E/%25/a%20b/%C3%A9/%3F/%23/%26/%2B");
}

static void
test_whole_values(void **state)
{
	(void)state;
	char *url = expand("http://h/x?by={onBehalfOf}&id={recordId}&a={action}", "r",
	    "gate.open", "gate-14.v2_x", "operator:4417");
	assert_string_equal(url, "http://h/x?by=operator%3A4417&id=gate-14.v2_x&a=gate.open");
	free(url);

	/* a '/' in a whole value does not open a segment */
	url = expand("http://h/{onBehalfOf}/{action}", "r", "a/b", "id", "team/ops:1 x");
	assert_string_equal(url, "http://h/team%2Fops%3A1%20x/a%2Fb");
	free(url);

	/* a recordId of dots is valid syntax but must not climb */
	url = expand("http://h/jobs/{recordId}/run", "r", "a", "..", "o");
	assert_string_equal(url, "http://h/jobs/%2E%2E/run");
	free(url);

	/* absent values expand to nothing */
	url = expand("http://h/{action}/{recordId}", "r", NULL, NULL, NULL);
	assert_string_equal(url, "http://h//");
	free(url);

	/* text outside braces is copied as written */
	url = expand("https://h:8443/p%20q?x=1", "r", "a", "b", "c");
	assert_string_equal(url, "https://h:8443/p%20q?x=1");
	free(url);
}

/* check and expand both refuse each template, with a message that holds
 * err_has (NULL: any message). */
static void
expect_refused(const char *const *bad, size_t n, const char *err_has)
{
	struct urltpl_vars v = {.resource = "evil.example/x", .action = "a", .record_id = "i",
	    .on_behalf_of = "o"};
	char err[160];

	for (size_t i = 0; i < n; i++) {
		err[0] = '\0';
		if (urltpl_check(bad[i], err, sizeof err) != -1)
			fail_msg("check accepted %s", bad[i]);
		if (err[0] == '\0' || (err_has != NULL && strstr(err, err_has) == NULL))
			fail_msg("check of %s: \"%s\" lacks \"%s\"", bad[i], err, err_has);
		err[0] = '\0';
		char *url = urltpl_expand(bad[i], &v, err, sizeof err);
		if (url != NULL)
			fail_msg("expand accepted %s: %s", bad[i], url);
		assert_true(err[0] != '\0');
	}
}

static void
test_bad_templates(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"http://h/{foo}",
		"http://h/{Resource}",
		"http://h/{}",
		"http://h/{resource",
		"http://h/resource}",
		"http://h/}{resource}",
		"http://h/{{resource}}",
		"http://h/{resource}}",
		"http://h/{res{ource}",
		"{",
		"}",
	};
	expect_refused(bad, sizeof bad / sizeof bad[0], NULL);

	char err[128];
	assert_int_equal(urltpl_check("http://h/{foo}", err, sizeof err), -1);
	assert_non_null(strstr(err, "foo"));
}

static void
test_good_templates(void **state)
{
	(void)state;
	char err[64];

	assert_int_equal(urltpl_check("http://h/{resource}/{action}/{recordId}/{onBehalfOf}",
	    err, sizeof err), 0);
	assert_int_equal(urltpl_check("http://h/plain", err, sizeof err), 0);
	assert_int_equal(urltpl_check("", err, sizeof err), 0);
}

/* R7: a placeholder in the scheme, host, port (or the unsent fragment)
 * would let a record choose where the token goes. */
static void
test_placeholder_only_in_path_and_query(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"https://{resource}.svc.internal/open",
		"https://gates.{action}/open",
		"https://h:{recordId}/open",
		"https://{onBehalfOf}@h/open",
		"{resource}://h/open",
		"http{action}://h/open",
		"https://h/open#{resource}",
		"https://{resource}",
		/* found by fuzz_urltpl: no "://", so an empty value would make
		 * "https://ope", a new host */
		"https:/{resource}/ope",
		"h/{resource}",
	};
	char err[160];

	expect_refused(bad, sizeof bad / sizeof bad[0], "placeholder");
	assert_int_equal(urltpl_check("https://h/{resource}?who={onBehalfOf}&id={recordId}",
	    err, sizeof err), 0);
	assert_int_equal(urltpl_check("https://h:8443/a/{action}#top", err, sizeof err), 0);
	assert_int_equal(urltpl_check("https://h?x={resource}", err, sizeof err), 0);
}

/* Many placeholders with long worst-case values: nothing is cut. */
static void
test_many_long(void **state)
{
	(void)state;
	enum { REPS = 60, VLEN = 2000 };
	char *tpl = malloc(REPS * 24 + 16);
	char *val = malloc(VLEN + 1);
	char *want = malloc(REPS * (VLEN * 3 + 16) + 16);
	assert_non_null(tpl);
	assert_non_null(val);
	assert_non_null(want);

	/* "é" is two bytes, each encoded as three characters: the worst case */
	for (int i = 0; i < VLEN; i += 2)
		memcpy(val + i, "\xc3\xa9", 2);
	val[VLEN] = '\0';
	strcpy(tpl, "http://h");
	char *w = want + strlen(strcpy(want, "http://h"));
	for (int i = 0; i < REPS; i++) {
		strcat(tpl, i % 2 ? "/{resource}" : "/{onBehalfOf}");
		*w++ = '/';
		for (int k = 0; k < VLEN / 2; k++, w += 6)
			memcpy(w, "%C3%A9", 6);
	}
	*w = '\0';
	char *url = expand(tpl, val, "a", "b", val);
	assert_int_equal(strlen(url), strlen(want));
	assert_string_equal(url, want);
	free(url);
	free(tpl);
	free(val);
	free(want);
}

static void
test_encode_bounds(void **state)
{
	(void)state;
	char buf[8];
	size_t len;

	memset(buf, 'z', sizeof buf);
	len = 0;
	assert_int_equal(urltpl_encode(buf, sizeof buf, &len, "abcdefg", 0), 0);
	assert_string_equal(buf, "abcdefg");
	len = 0;
	assert_int_equal(urltpl_encode(buf, sizeof buf, &len, "abcdefgh", 0), -1);
	len = 4;
	assert_int_equal(urltpl_encode(buf, sizeof buf, &len, " ", 0), 0);
	assert_string_equal(buf, "abcd%20");
	len = 5;
	assert_int_equal(urltpl_encode(buf, sizeof buf, &len, " ", 0), -1);
	/* a full or empty buffer is refused, not written past */
	len = sizeof buf;
	assert_int_equal(urltpl_encode(buf, sizeof buf, &len, "", 0), -1);
	len = 0;
	assert_int_equal(urltpl_encode(buf, 0, &len, "", 0), -1);
	len = 0;
	assert_int_equal(urltpl_encode(buf, sizeof buf, &len, "", 0), 0);
	assert_string_equal(buf, "");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resource_segments_kept),
		cmocka_unit_test(test_resource_hostile),
		cmocka_unit_test(test_whole_values),
		cmocka_unit_test(test_bad_templates),
		cmocka_unit_test(test_good_templates),
		cmocka_unit_test(test_placeholder_only_in_path_and_query),
		cmocka_unit_test(test_many_long),
		cmocka_unit_test(test_encode_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
