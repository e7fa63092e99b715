/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for the Redis Cluster routing (cluster.h): CRC16 and the slot
 * of a key (the cluster spec's vectors and slots redis-server 7.0 itself
 * computed with CLUSTER KEYSLOT), the shard of a recordId, the slot map
 * from CLUSTER SHARDS, and MOVED / ASK. */
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "redis/cluster.h"
#include "testlib.h"

static unsigned
slot(const char *k)
{
	return cluster_key_slot(k, strlen(k));
}

static void
test_crc16(void **state)
{
	(void)state;
	/* the cluster spec's reference: CRC16 of "123456789" is 0x31C3 */
	assert_int_equal(cluster_crc16("123456789", 9), 0x31C3);
	assert_int_equal(cluster_crc16("", 0), 0);
	assert_int_equal(slot("123456789"), 0x31C3 & 16383);
}

static void
test_key_slot(void **state)
{
	(void)state;
	/* CLUSTER KEYSLOT on redis-server 7.0.15 */
	assert_int_equal(slot("foo"), 12182);
	assert_int_equal(slot("bar"), 5061);
	assert_int_equal(slot("hello"), 866);
	assert_int_equal(slot("123456789"), 12739);
	assert_int_equal(slot(""), 0);
	/* the spec's hash-tag examples */
	assert_int_equal(slot("{user1000}.following"), 3443);
	assert_int_equal(slot("{user1000}.followers"), 3443);
	assert_int_equal(slot("foo{}{bar}"), 8363);		/* "{}": the whole key */
	assert_int_equal(slot("foo{{bar}}zap"), 4015);		/* the tag is "{bar" */
	assert_int_equal(slot("foo{bar}{zap}"), slot("bar"));	/* the first tag only */
	assert_int_equal(slot("foo{bar"), cluster_crc16("foo{bar", 7) & 16383);
	/* our own key names */
	assert_int_equal(slot("{warrant}:jobs"), 3048);
	assert_int_equal(slot("{warrant:0}:jobs"), 10885);
	assert_int_equal(slot("{warrant:5}:rec:x"), 14880);
	assert_int_equal(slot("{warrant}:decision:abc"), slot("{warrant}:scheduled"));

	assert_true(shard_has_tag("{warrant}"));
	assert_true(shard_has_tag("x{a}"));
	assert_false(shard_has_tag("warrant"));
	assert_false(shard_has_tag("{}warrant"));
	assert_false(shard_has_tag("{warrant"));
}

static void
test_shard(void **state)
{
	char p[64];

	(void)state;
	/* FNV-1a 32's published vectors */
	assert_int_equal(cluster_fnv1a("", 0), 0x811c9dc5u);
	assert_int_equal(cluster_fnv1a("a", 1), 0xe40c292cu);
	assert_int_equal(cluster_fnv1a("foobar", 6), 0xbf9cf968u);
	assert_int_equal(cluster_shard_of("foobar", 6, 6), 0xbf9cf968u % 6);
	assert_int_equal(cluster_shard_of("anything", 8, 1), 0);
	/* every shard gets some of 6000 ids */
	unsigned count[6] = {0};
	for (int i = 0; i < 6000; i++) {
		char id[32];
		int n = snprintf(id, sizeof id, "job-%d", i);
		count[cluster_shard_of(id, (size_t)n, 6)]++;
	}
	for (int i = 0; i < 6; i++)
		assert_true(count[i] > 800 && count[i] < 1200);

	assert_int_equal(cluster_shard_prefix(p, sizeof p, "warrant", 3, 6), 0);
	assert_string_equal(p, "{warrant:3}");
	assert_int_equal(cluster_shard_prefix(p, sizeof p, "warrant", 0, 0), 0);
	assert_string_equal(p, "warrant");	/* shards unset: today's names */
	assert_int_equal(cluster_shard_prefix(p, 8, "warrant", 3, 6), -1);
}

/* One node of CLUSTER SHARDS as redis-server 7.0 writes it. */
static redisReply *
cnode(const char *ip, const char *endpoint, long long port, const char *role)
{
	return arr(12, str("id"), str("e1387a65c1b846df3fb5f87d1c613f2f18f8ca9e"), str("port"),
	    num(port), str("ip"), str(ip), str("endpoint"), str(endpoint), str("role"), str(role),
	    str("health"), str("online"));
}

static redisReply *
shards3(void)
{
	return arr(3,
	    arr(4, str("slots"), arr(2, num(0), num(5460)), str("nodes"),
	        arr(2, cnode("127.0.0.1", "127.0.0.1", 7001, "master"),
	            cnode("127.0.0.1", "127.0.0.1", 7004, "replica"))),
	    arr(4, str("slots"), arr(4, num(5461), num(10000), num(10002), num(10922)),
	        str("nodes"),
	        arr(2, cnode("127.0.0.1", "127.0.0.1", 7005, "replica"),
	            cnode("10.0.0.2", "?", 7002, "master"))),
	    arr(4, str("slots"), arr(4, num(10001), num(10001), num(10923), num(16383)),
	        str("nodes"), arr(1, cnode("", "", 7003, "master"))));
}

/* Issue 37 item 6: a node's address with a NUL byte is no address (its C
 * string would name another host than the one sent). */
static void
test_map_nul_address(void **state)
{
	struct cluster_map *m = cluster_map_new();

	(void)state;
	assert_non_null(m);
	redisReply *r = arr(1, arr(4, str("slots"), arr(2, num(0), num(16383)), str("nodes"),
	    arr(1, arr(12, str("id"), str("e1387a65c1b846df3fb5f87d1c613f2f18f8ca9e"),
	        str("port"), num(7001), str("ip"), strn("127.0.0.1\0.x", 12), str("endpoint"),
	        strn("127.0.0.1\0.x", 12), str("role"), str("master"), str("health"),
	        str("online")))));
	assert_int_equal(cluster_map_parse_shards(m, r, "seed.example"), 0);
	tree_free(r);
	/* the seed's own name stands in for an unusable address (as for ""),
	 * never the cut one */
	assert_string_equal(cluster_map_owner(m, 0)->host, "seed.example");
	cluster_map_free(m);
}

static void
test_map(void **state)
{
	struct cluster_map *m = cluster_map_new();
	struct cluster_node nodes[CLUSTER_NODES_MAX];

	(void)state;
	assert_non_null(m);
	assert_null(cluster_map_owner(m, 0));
	redisReply *r = shards3();
	assert_int_equal(cluster_map_parse_shards(m, r, "seed.example"), 0);
	tree_free(r);
	assert_int_equal(cluster_map_owner(m, 0)->port, 7001);
	assert_int_equal(cluster_map_owner(m, 5460)->port, 7001);
	assert_int_equal(cluster_map_owner(m, 5461)->port, 7002);
	assert_string_equal(cluster_map_owner(m, 5461)->host, "10.0.0.2");	/* "?": the ip */
	assert_int_equal(cluster_map_owner(m, 10001)->port, 7003);
	assert_string_equal(cluster_map_owner(m, 10001)->host, "seed.example");	/* none */
	assert_int_equal(cluster_map_owner(m, 10002)->port, 7002);
	assert_int_equal(cluster_map_owner(m, 16383)->port, 7003);
	assert_null(cluster_map_owner(m, 16384));
	assert_int_equal(cluster_map_nodes(m, nodes, CLUSTER_NODES_MAX), 3);
	assert_int_equal(cluster_map_nodes(m, nodes, 1), 1);

	/* a malformed reply leaves the map as it was */
	redisReply *bad[] = {
	    str("x"), err("ERR unknown command"),
	    arr(1, arr(4, str("slots"), arr(1, num(0)), str("nodes"), arr(0))),
	    arr(1, arr(4, str("slots"), arr(2, num(5), num(4)), str("nodes"),
	        arr(1, cnode("h", "h", 1, "master")))),
	    arr(1, arr(4, str("slots"), arr(2, num(0), num(16384)), str("nodes"),
	        arr(1, cnode("h", "h", 1, "master")))),
	    arr(1, arr(2, str("nodes"), arr(0))),
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(cluster_map_parse_shards(m, bad[i], "h"), -1);
		tree_free(bad[i]);
	}
	assert_int_equal(cluster_map_owner(m, 0)->port, 7001);
	assert_int_equal(cluster_map_parse_shards(m, NULL, "h"), -1);

	/* a shard with no primary (mid-failover): its slots are unknown */
	r = arr(1, arr(4, str("slots"), arr(2, num(0), num(99)), str("nodes"),
	    arr(1, cnode("h", "h", 1, "replica"))));
	assert_int_equal(cluster_map_parse_shards(m, r, "h"), 0);
	tree_free(r);
	assert_null(cluster_map_owner(m, 0));
	assert_null(cluster_map_owner(m, 100));
	cluster_map_free(m);
	cluster_map_free(NULL);
}

/* allow_hosts on a CLUSTER SHARDS reply: the refused node's slots become
 * unknown and it is no longer asked for the next map. */
static int
not_10(void *arg, const struct cluster_node *n)
{
	(*(int *)arg)++;
	return strncmp(n->host, "10.", 3) != 0;
}

/* [redis] tls: a node with tls-cluster reports "port" (plain) and
 * "tls-port"; with TLS the map names the TLS one, without it the plain one,
 * and a node without "tls-port" keeps its "port". */
static void
test_map_tls(void **state)
{
	struct cluster_map *m = cluster_map_new();

	(void)state;
	assert_non_null(m);
	for (int tls = 0; tls <= 1; tls++) {
		redisReply *r = arr(2,
		    arr(4, str("slots"), arr(2, num(0), num(8000)), str("nodes"),
			arr(1, arr(14, str("id"), str("a"), str("port"), num(7001), str("tls-port"),
			    num(8001), str("ip"), str("10.0.0.1"), str("endpoint"), str("10.0.0.1"),
			    str("role"), str("master"), str("health"), str("online")))),
		    arr(4, str("slots"), arr(2, num(8001), num(16383)), str("nodes"),
			arr(1, cnode("10.0.0.2", "10.0.0.2", 7002, "master"))));
		cluster_map_use_tls(m, tls);
		assert_int_equal(cluster_map_parse_shards(m, r, "seed"), 0);
		tree_free(r);
		assert_int_equal(cluster_map_owner(m, 0)->port, tls ? 8001 : 7001);
		assert_int_equal(cluster_map_owner(m, 9000)->port, 7002);
	}
	cluster_map_free(m);
}

static void
test_keep(void **state)
{
	struct cluster_map *m = cluster_map_new();
	struct cluster_node nodes[CLUSTER_NODES_MAX];
	int asked = 0;

	(void)state;
	assert_non_null(m);
	redisReply *r = shards3();
	assert_int_equal(cluster_map_parse_shards(m, r, "seed.example"), 0);
	tree_free(r);
	assert_int_equal(cluster_map_keep(m, not_10, &asked), 1);
	assert_int_equal(asked, 3);
	assert_null(cluster_map_owner(m, 5461));	/* 10.0.0.2's */
	assert_null(cluster_map_owner(m, 10002));
	assert_int_equal(cluster_map_owner(m, 0)->port, 7001);
	assert_int_equal(cluster_map_owner(m, 10001)->port, 7003);	/* renumbered */
	assert_int_equal(cluster_map_owner(m, 16383)->port, 7003);
	assert_int_equal(cluster_map_nodes(m, nodes, CLUSTER_NODES_MAX), 2);
	assert_int_equal(nodes[0].port, 7001);
	assert_int_equal(nodes[1].port, 7003);
	assert_int_equal(cluster_map_keep(m, not_10, &asked), 0);
	cluster_map_free(m);
}

static void
test_redirect(void **state)
{
	struct cluster_redirect rd;
	struct cluster_map *m = cluster_map_new();

	(void)state;
	assert_non_null(m);
	redisReply *r = shards3();
	assert_int_equal(cluster_map_parse_shards(m, r, "h"), 0);
	tree_free(r);

	assert_int_equal(cluster_parse_redirect("MOVED 3048 127.0.0.1:7003", &rd), CLUSTER_MOVED);
	assert_int_equal(rd.slot, 3048);
	assert_string_equal(rd.to.host, "127.0.0.1");
	assert_int_equal(rd.to.port, 7003);
	/* MOVED: the slot is the target's until the next refresh */
	assert_int_equal(cluster_map_owner(m, 3048)->port, 7001);
	assert_int_equal(cluster_map_apply(m, &rd), 1);
	assert_int_equal(cluster_map_owner(m, 3048)->port, 7003);
	assert_int_equal(cluster_map_owner(m, 3047)->port, 7001);
	assert_int_equal(cluster_map_apply(m, &rd), 0);	/* already so */

	/* ASK changes nothing */
	assert_int_equal(cluster_parse_redirect("ASK 3047 [::1]:7002", &rd), CLUSTER_ASK);
	assert_string_equal(rd.to.host, "[::1]");
	assert_int_equal(cluster_parse_redirect("ASK 3047 ::1:7002", &rd), CLUSTER_ASK);
	assert_string_equal(rd.to.host, "::1");
	assert_int_equal(rd.to.port, 7002);
	assert_int_equal(cluster_map_apply(m, &rd), 0);
	assert_int_equal(cluster_map_owner(m, 3047)->port, 7001);

	/* a MOVED to a node not named: the map keeps its owner */
	assert_int_equal(cluster_parse_redirect("MOVED 3047 :7002", &rd), CLUSTER_MOVED);
	assert_string_equal(rd.to.host, "");
	assert_int_equal(cluster_map_apply(m, &rd), 0);

	const char *const not[] = {"MOVED", "MOVED 1", "MOVED 1 h", "MOVED 16384 h:1",
	    "MOVED x h:1", "MOVED 1 h:0", "MOVED 1 h:65536", "MOVED 1 h:1x", "ASK -1 h:1",
	    "READONLY You can't write against a read only replica.", "moved 1 h:1",
	    "CLUSTERDOWN The cluster is down", "TRYAGAIN Multiple keys request during rehashing"};
	for (size_t i = 0; i < sizeof not / sizeof not[0]; i++)
		if (cluster_parse_redirect(not[i], &rd) != CLUSTER_NO_REDIRECT)
			fail_msg("'%s' taken for a redirect", not[i]);
	assert_int_equal(cluster_parse_redirect(NULL, &rd), CLUSTER_NO_REDIRECT);
	cluster_map_free(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc16),
		cmocka_unit_test(test_key_slot),
		cmocka_unit_test(test_shard),
		cmocka_unit_test(test_map),
		cmocka_unit_test(test_map_nul_address),
		cmocka_unit_test(test_map_tls),
		cmocka_unit_test(test_keep),
		cmocka_unit_test(test_redirect),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
