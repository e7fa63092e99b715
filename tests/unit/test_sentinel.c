/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for finding the primary through Redis Sentinel (sentinel.h):
 * the address list, the sentinel's answer, ROLE. */
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "redis/sentinel.h"
#include "testlib.h"

static void
test_list(void **state)
{
	struct hostport a[HOSTPORT_MAX];
	char err[160];
	size_t n;

	(void)state;
	assert_int_equal(hostport_parse_list("127.0.0.1:26379", a, &n, err, sizeof err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(a[0].host, "127.0.0.1");
	assert_int_equal(a[0].port, 26379);
	assert_int_equal(hostport_parse_list(" s1.example:1 ,s2:65535,\t[::1]:26380 ", a, &n,
	    err, sizeof err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(a[0].host, "s1.example");
	assert_int_equal(a[1].port, 65535);
	assert_string_equal(a[2].host, "::1");
	assert_int_equal(a[2].port, 26380);

	const char *const bad[] = {"", " , ", "host", "host:", ":26379", "h:0", "h:65536",
	    "h:12x", "[::1]26379", "[::1]", "h:1,,h:2", "a:1,b:2,c:3,d:4,e:5,f:6,g:7,h:8,i:9"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (hostport_parse_list(bad[i], a, &n, err, sizeof err) == 0)
			fail_msg("'%s' was accepted", bad[i]);
	assert_int_equal(hostport_parse_list("h:1,,h:2", a, &n, err, sizeof err), -1);
	assert_string_equal(err, "'' is not host:port");
}

static void
test_reply(void **state)
{
	char host[64];
	int port = 0;

	(void)state;
	redisReply *r = arr(2, str("10.0.0.7"), str("6380"));
	assert_int_equal(sentinel_parse_reply(r, host, sizeof host, &port), 0);
	assert_string_equal(host, "10.0.0.7");
	assert_int_equal(port, 6380);
	tree_free(r);
	redisReply *bad[] = {arr(2, str("h"), str("0")), arr(2, str("h"), str("70000")),
	    arr(2, str(""), str("1")), arr(2, str("h"), str("1x")), str("h:1"),
	    /* issue 37 item 6: a NUL inside would name another host or port */
	    arr(2, strn("127.0.0.1\0.evil", 15), str("6380")),
	    arr(2, str("10.0.0.7"), strn("6380\0", 5))};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(sentinel_parse_reply(bad[i], host, sizeof host, &port), -1);
		tree_free(bad[i]);
	}
	redisReply nil = {.type = REDIS_REPLY_NIL};
	assert_int_equal(sentinel_parse_reply(&nil, host, sizeof host, &port), -1);
	assert_int_equal(sentinel_parse_reply(NULL, host, sizeof host, &port), -1);

	r = arr(2, str("master"), str("0"));
	assert_true(sentinel_is_master(r));
	tree_free(r);
	r = arr(2, str("slave"), str("127.0.0.1"));
	assert_false(sentinel_is_master(r));
	tree_free(r);
	assert_false(sentinel_is_master(NULL));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_reply),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
