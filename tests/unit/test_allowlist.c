/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for [redis] allow_hosts (allowlist.h): the pure matcher, the
 * list's syntax, the default of warrantd(7) §10, and the shell's count. */
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "core/allowlist.h"
#include "testlib.h"

static struct allowlist *
list_of(const char *s)
{
	struct allowlist *a = allowlist_new();
	char err[160];

	assert_non_null(a);
	assert_int_equal(allowlist_add_list(a, s, err, sizeof err), 0);
	return a;
}

static void
test_match(void **state)
{
	(void)state;
	struct allowlist *a = list_of("10.0.0.0/24, 192.168.7.9, redis-1.Internal., fd00:1::/64");

	assert_true(allowlist_match(a, "10.0.0.1", 6379));
	assert_true(allowlist_match(a, "10.0.0.255", 6379));
	assert_false(allowlist_match(a, "10.0.1.0", 6379));
	assert_false(allowlist_match(a, "11.0.0.1", 6379));
	assert_true(allowlist_match(a, "192.168.7.9", 6379));
	assert_false(allowlist_match(a, "192.168.7.8", 6379));
	assert_true(allowlist_match(a, "::ffff:10.0.0.7", 6379));	/* mapped: as IPv4 */
	assert_true(allowlist_match(a, "REDIS-1.internal", 6379));
	assert_true(allowlist_match(a, "redis-1.internal.", 6379));
	assert_false(allowlist_match(a, "redis-2.internal", 6379));
	assert_false(allowlist_match(a, "evil.redis-1.internal", 6379));
	assert_true(allowlist_match(a, "fd00:1::5", 6379));
	assert_true(allowlist_match(a, "[fd00:1::5]", 6379));	/* as a redirect may write it */
	assert_false(allowlist_match(a, "[redis-1.internal]", 6379));
	assert_true(allowlist_match(a, "fd00:1:0:0:ffff::1", 6379));
	assert_false(allowlist_match(a, "fd00:2::5", 6379));
	/* a name that spells an address is not the address, nor the reverse */
	assert_false(allowlist_match(a, "10.0.0.1.nip.io", 6379));
	assert_false(allowlist_match(a, NULL, 6379));
	assert_false(allowlist_match(a, "", 6379));
	assert_false(allowlist_match(a, "10.0.0.1/8", 6379));	/* not a host */
	assert_false(allowlist_match(NULL, "10.0.0.1", 6379));
	allowlist_free(a);

	a = list_of("0.0.0.0/0");
	assert_true(allowlist_match(a, "203.0.113.7", 6379));
	assert_false(allowlist_match(a, "2001:db8::1", 6379));	/* IPv4 blocks hold no IPv6 */
	allowlist_free(a);
	a = list_of("10.1.2.3/23");
	assert_true(allowlist_match(a, "10.1.3.200", 6379));
	assert_false(allowlist_match(a, "10.1.4.0", 6379));
	allowlist_free(a);
}

static void
test_syntax(void **state)
{
	const char *const bad[] = {"", "10.0.0.0/33", "10.0.0.0/", "::1/129", "a b", "host:0",
	    "10.0.0.0/24,,x", "x/8", "10.0.0.0/2x", "h\xc3\xa9", "host:65536", "host:",
	    "host:63x", "host:+1", "[::1", "[::1]6379", "[host]:1", "[10.0.0.1]:1", "[]:1",
	    "::1:x", "h:1:2:", "10.0.0.0/33:1", "[::1]:0"};
	char err[160];

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct allowlist *a = allowlist_new();
		assert_non_null(a);
		if (allowlist_add_list(a, bad[i], err, sizeof err) == 0)
			fail_msg("'%s' was accepted", bad[i]);
		allowlist_free(a);
	}
	allowlist_free(NULL);
}

/* Issue 37 item 2: an entry's port binds it; no port is any port. */
static void
test_ports(void **state)
{
	(void)state;
	struct allowlist *a = list_of("10.0.0.0/24:6379, redis-1.internal:7000, [fd00::1]:6380, "
	    "[fd00:2::/64]:6381, 192.0.2.1, fd00:3::1");

	assert_true(allowlist_match(a, "10.0.0.9", 6379));
	assert_false(allowlist_match(a, "10.0.0.9", 6380));
	assert_true(allowlist_match(a, "REDIS-1.internal", 7000));
	assert_false(allowlist_match(a, "redis-1.internal", 6379));
	assert_true(allowlist_match(a, "fd00::1", 6380));
	assert_true(allowlist_match(a, "[fd00::1]", 6380));
	assert_false(allowlist_match(a, "fd00::1", 6379));
	assert_true(allowlist_match(a, "fd00:2::77", 6381));
	assert_false(allowlist_match(a, "fd00:2::77", 16381));
	assert_true(allowlist_match(a, "192.0.2.1", 1));	/* no port: any */
	assert_true(allowlist_match(a, "192.0.2.1", 65535));
	assert_true(allowlist_match(a, "fd00:3::1", 16999));
	assert_false(allowlist_match(a, "192.0.2.1", 0));	/* not a port */
	assert_false(allowlist_match(a, "192.0.2.1", 65536));
	allowlist_free(a);
}

/* The default (disc.c): each configured host at its port, nothing around
 * it, no loopback; a seed's announcements replaced by its next answer. */
static void
test_default(void **state)
{
	struct allowlist *a = allowlist_new();

	(void)state;
	assert_non_null(a);
	assert_int_equal(allowlist_add_host(a, "10.9.8.7", 26379), 0);
	assert_int_equal(allowlist_add_host(a, "2001:db8:1:2::9", 7000), 0);
	assert_int_equal(allowlist_add_host(a, "localhost", 6379), 0);
	assert_true(allowlist_match(a, "10.9.8.7", 26379));
	assert_false(allowlist_match(a, "10.9.8.7", 6379));
	assert_false(allowlist_match(a, "10.9.8.200", 26379));	/* no /24 */
	assert_true(allowlist_match(a, "2001:db8:1:2::9", 7000));
	assert_false(allowlist_match(a, "2001:db8:1:2::a", 7000));	/* no /64 */
	assert_true(allowlist_match(a, "localhost", 6379));
	assert_true(allowlist_match(a, "127.0.0.1", 6379));	/* what localhost resolves to */
	assert_false(allowlist_match(a, "127.0.0.1", 16999));	/* never all of loopback */
	assert_false(allowlist_match(a, "127.0.0.2", 6379));
	assert_false(allowlist_match(a, "::1", 16999));

	assert_int_equal(allowlist_announce(a, "10.1.1.1", 7001), 0);
	assert_int_equal(allowlist_announce(a, "[fd00::9]", 7002), 0);
	assert_int_equal(allowlist_announce(a, "10.0.0.0/8", 7003), 0);	/* no block: ignored */
	assert_true(allowlist_match(a, "10.1.1.1", 7001));
	assert_false(allowlist_match(a, "10.1.1.1", 7002));
	assert_true(allowlist_match(a, "fd00::9", 7002));
	assert_false(allowlist_match(a, "10.1.1.2", 7003));
	allowlist_announce_clear(a);
	assert_false(allowlist_match(a, "10.1.1.1", 7001));
	assert_true(allowlist_match(a, "10.9.8.7", 26379));	/* the configured stay */
	int rc = 0;
	for (int i = 0; i < 1100 && rc == 0; i++)
		rc = allowlist_announce(a, "10.2.2.2", 1 + i);
	assert_int_equal(rc, -1);	/* bounded */
	allowlist_announce_clear(a);
	allowlist_announce_clear(NULL);
	allowlist_free(a);
}

/* What -t checks clear text against: the first entry beyond loopback. */
static void
test_first_remote(void **state)
{
	char buf[80];

	(void)state;
	struct allowlist *a = list_of("127.0.0.1:6379, 127.0.0.0/8, ::1, [::1]:7000, localhost:1");
	assert_int_equal(allowlist_first_remote(a, buf, sizeof buf), 0);
	allowlist_free(a);
	const char *remote[][2] = {{"127.0.0.1, 10.0.0.0/24:6379", "10.0.0.0/24"},
	    {"0.0.0.0/0", "0.0.0.0/0"}, {"redis.internal:6379", "redis.internal"},
	    {"[fd00::1]:6379", "fd00::1"}, {"::1/127", "::1/127"}, {"127.0.0.0/7", "127.0.0.0/7"}};
	for (size_t i = 0; i < sizeof remote / sizeof remote[0]; i++) {
		a = list_of(remote[i][0]);
		assert_int_equal(allowlist_first_remote(a, buf, sizeof buf), 1);
		assert_string_equal(buf, remote[i][1]);
		allowlist_free(a);
	}
	assert_int_equal(allowlist_first_remote(NULL, buf, sizeof buf), 0);
}

static void
test_check_counts(void **state)
{
	struct allowlist *a = list_of("10.0.0.0/24");
	long long refused = 0;

	(void)state;
	allowlist_count_in(a, &refused);
	assert_int_equal(allowlist_check(a, "10.0.0.3", 6379, "moved"), 1);
	assert_int_equal(refused, 0);
	assert_int_equal(allowlist_check(a, "203.0.113.9", 6379, "moved"), 0);
	assert_int_equal(allowlist_check(a, "203.0.113.9", 6379, "ask"), 0);
	assert_int_equal(allowlist_check(a, NULL, 6379, "sentinel"), 0);
	assert_int_equal(refused, 3);	/* logged once per host:port, counted each time */
	assert_int_equal(allowlist_check(NULL, "203.0.113.9", 6379, "connect"), 1);
	allowlist_free(a);
}

/* Issue 37 item 1: the one rule of clear text. A credential goes over TLS
 * or a unix socket anywhere, to loopback in clear text, elsewhere only with
 * allow_plaintext. */
static void
test_cleartext_rule(void **state)
{
	(void)state;
	const char *loop[] = {"127.0.0.1", "127.9.8.7", "::1", "[::1]", "localhost",
	    "LOCALHOST", "::ffff:127.0.0.1"};
	for (size_t i = 0; i < sizeof loop / sizeof loop[0]; i++)
		assert_int_equal(allowlist_cleartext_ok(loop[i], 0, 0, 0), 1);
	const char *far[] = {"10.9.8.7", "128.0.0.1", "192.0.2.1", "::2", "redis.example",
	    "localhost.example", "126.0.0.1", NULL};
	for (size_t i = 0; i < sizeof far / sizeof far[0]; i++) {
		assert_int_equal(allowlist_cleartext_ok(far[i], 0, 0, 0), 0);
		assert_int_equal(allowlist_cleartext_ok(far[i], 1, 0, 0), 1);	/* unix */
		assert_int_equal(allowlist_cleartext_ok(far[i], 0, 1, 0), 1);	/* TLS */
		assert_int_equal(allowlist_cleartext_ok(far[i], 0, 0, 1), 1);	/* allowed */
	}
}

/* The shell: a refusal counted each time, logged once per host:port. */
static void
test_check_credential(void **state)
{
	long long n = 0;
	(void)state;

	assert_int_equal(allowlist_check_credential(NULL, "10.9.8.7", 6379, 0), 1);
	struct allowlist *a = allowlist_new();
	assert_non_null(a);
	allowlist_count_in(a, &n);
	assert_int_equal(allowlist_check_credential(a, "127.0.0.1", 6379, 0), 1);
	assert_int_equal(allowlist_check_credential(a, "10.9.8.7", 6379, 1), 1);
	assert_int_equal(allowlist_check_credential(a, "10.9.8.7", 6379, 0), 0);
	assert_int_equal(allowlist_check_credential(a, "10.9.8.7", 6379, 0), 0);
	assert_int_equal(n, 2);
	allowlist_allow_plaintext(a, 1);
	assert_int_equal(allowlist_check_credential(a, "10.9.8.7", 6379, 0), 1);
	assert_int_equal(n, 2);
	allowlist_free(a);
}

/* tests/data/allow_hosts.json: the cases the decider libraries' tests read
 * too (clients/python, clients/node), so the three agree on every one. */
static void
check_cases(const struct allowlist *a, const json_t *cases, const char *what)
{
	size_t i;
	json_t *c;

	json_array_foreach(cases, i, c) {
		const char *host = json_string_value(json_array_get(c, 0));
		int port = (int)json_integer_value(json_array_get(c, 1));
		int want = json_is_true(json_array_get(c, 2));
		if (allowlist_match(a, host, port) != want)
			fail_msg("%s: %s port %d: want %s", what, host, port, want ? "match" : "none");
	}
}

static void
test_shared_vectors(void **state)
{
	json_error_t jerr;
	json_t *v = json_load_file("tests/data/allow_hosts.json", 0, &jerr), *x;
	char err[160];
	size_t i, n = 0;

	(void)state;
	if (v == NULL)
		fail_msg("tests/data/allow_hosts.json: %s", jerr.text);
	json_array_foreach(json_object_get(v, "match"), i, x) {
		struct allowlist *a = list_of(json_string_value(json_object_get(x, "list")));
		check_cases(a, json_object_get(x, "cases"), json_string_value(json_object_get(x,
		    "list")));
		n += json_array_size(json_object_get(x, "cases"));
		allowlist_free(a);
	}
	json_array_foreach(json_object_get(v, "invalid"), i, x) {
		struct allowlist *a = allowlist_new();
		assert_non_null(a);
		if (allowlist_add_list(a, json_string_value(x), err, sizeof err) == 0)
			fail_msg("invalid '%s' was accepted", json_string_value(x));
		allowlist_free(a);
		n++;
	}
	json_array_foreach(json_object_get(v, "default"), i, x) {
		struct allowlist *a = allowlist_new();
		size_t k;
		json_t *h;
		assert_non_null(a);
		json_array_foreach(json_object_get(x, "hosts"), k, h)
			assert_int_equal(allowlist_add_host(a, json_string_value(json_array_get(h, 0)),
			    (int)json_integer_value(json_array_get(h, 1))), 0);
		check_cases(a, json_object_get(x, "cases"), "default");
		n += json_array_size(json_object_get(x, "cases"));
		allowlist_free(a);
	}
	json_array_foreach(json_object_get(v, "cleartext"), i, x) {
		const char *host = json_string_value(json_array_get(x, 0));
		int ok = allowlist_cleartext_ok(host, json_is_true(json_array_get(x, 1)),
		    json_is_true(json_array_get(x, 2)), json_is_true(json_array_get(x, 3)));
		if (ok != json_is_true(json_array_get(x, 4)))
			fail_msg("cleartext %s: want %d", host, !ok);
		n++;
	}
	assert_true(n > 80);
	json_decref(v);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_syntax),
		cmocka_unit_test(test_ports),
		cmocka_unit_test(test_default),
		cmocka_unit_test(test_first_remote),
		cmocka_unit_test(test_check_counts),
		cmocka_unit_test(test_cleartext_rule),
		cmocka_unit_test(test_check_credential),
		cmocka_unit_test(test_shared_vectors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
