/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for the reply shapes the consumer reads (sreply.h), with reply
 * trees built by hand: every shape Redis sends, and the wrong ones. */
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "redis/sreply.h"
#include "testlib.h"

/* ---- what the callbacks saw ---- */

static struct {
	char seen[512];
	int n;
} got;

static void
on_entry(void *arg, const struct sreply_entry *e)
{
	size_t used = strlen(got.seen);

	(void)arg;
	snprintf(got.seen + used, sizeof got.seen - used, "%s%s=%s/%d", used ? " " : "",
	    e->stream_id, e->id ? e->id : "(none)", e->deliveries);
	got.n++;
}

/* Like on_entry, with the stream key of each entry ("-" when none). */
static void
on_stream_entry(void *arg, const struct sreply_entry *e)
{
	size_t used = strlen(got.seen);

	(void)arg;
	snprintf(got.seen + used, sizeof got.seen - used, "%s%s>%s=%s", used ? " " : "",
	    e->stream ? e->stream : "-", e->stream_id, e->id ? e->id : "(none)");
	got.n++;
}

static void
on_id(void *arg, const char *id)
{
	size_t used = strlen(got.seen);

	snprintf(got.seen + used, sizeof got.seen - used, "%s%s:%s", used ? " " : "",
	    (const char *)arg, id);
}

static void
reset(void)
{
	memset(&got, 0, sizeof got);
}

/* Issue 37 item 6: an id is the whole id. A string with a NUL byte is never
 * cut into a shorter C string, which would name another record. */
static void
test_nul_bytes(void **state)
{
	(void)state;
	reset();
	redisReply *r = arr(1, arr(2, str("warrant:jobs"), arr(3,
	    arr(2, str("1-0"), arr(2, str("id"), strn("e-nul\0x", 7))),
	    arr(2, str("2-0"), arr(2, strn("id\0x", 4), str("gate-15"))),
	    arr(2, strn("3-0\0", 4), arr(2, str("id"), str("gate-16"))))));
	/* 1-0 has no usable id (no-id, named by its stream id); 2-0's field is
	 * not "id"; 3-0's stream id is not MS-SEQ and never gets past the edge */
	assert_int_equal(sreply_read(sreply_of(r), on_entry, NULL), 2);
	assert_string_equal(got.seen, "1-0=(none)/1 2-0=(none)/1");
	tree_free(r);

	struct sreply_load l;
	redisReply *load = arr(5, num(1), num(0), str("queued"), str("1"), strn("eyJ\0.x", 6));
	assert_int_equal(sreply_load(sreply_of(load), &l), -1);
	tree_free(load);

	redisReply *s = strn("gate\0-14", 8);
	assert_null(sreply_string(sreply_of(s)));
	tree_free(s);

	char next[32];
	reset();
	redisReply *c = arr(3, strn("9-0\0", 4), arr(0), arr(1, strn("5-0\0", 4)));
	assert_int_equal(sreply_claim(sreply_of(c), next, sizeof next, on_entry, on_id,
	    (void *)"del"), 0);
	assert_string_equal(next, "0-0");
	assert_string_equal(got.seen, "");
	tree_free(c);
}

static void
test_read(void **state)
{
	(void)state;
	reset();
	redisReply *r = arr(1, arr(2, str("warrant:jobs"), arr(3,
	    arr(2, str("1-0"), arr(2, str("id"), str("gate-14"))),
	    arr(2, str("2-0"), arr(4, str("x"), str("y"), str("id"), str("gate-15"))),
	    arr(2, str("3-0"), arr(2, str("foo"), str("bar"))))));
	assert_int_equal(sreply_read(sreply_of(r), on_entry, NULL), 3);
	assert_string_equal(got.seen, "1-0=gate-14/1 2-0=gate-15/1 3-0=(none)/1");
	tree_free(r);

	reset();
	redisReply *nil = node(REDIS_REPLY_NIL);
	assert_int_equal(sreply_read(sreply_of(nil), on_entry, NULL), 0);
	tree_free(nil);
	assert_int_equal(got.n, 0);

	/* issue 23: a stream id that is not MS-SEQ never gets past the edge
	 * (it would be logged bare and sent back to Redis) */
	reset();
	r = arr(1, arr(2, str("warrant:jobs"), arr(2,
	    arr(2, str("1-0 level=error event=forged"), arr(2, str("id"), str("x"))),
	    arr(2, str("4-1"), arr(2, str("id"), str("gate-16"))))));
	assert_int_equal(sreply_read(sreply_of(r), on_entry, NULL), 1);
	assert_string_equal(got.seen, "4-1=gate-16/1");
	tree_free(r);
	assert_true(sreply_stream_id_ok("1700000000000-0"));
	assert_true(sreply_stream_id_ok("0-1"));
	static const char *const bad[] = {"", "-", "1-", "-1", "1", "1-0-0", "a-0", "1-0 ",
	    "123456789012345678901-0"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_false(sreply_stream_id_ok(bad[i]));
}

/* One read over several shards' streams: each entry says which stream it
 * came from, so that it goes to that shard; a stream with nothing new is
 * absent (or, in some versions, present with no entries). */
static void
test_read_streams(void **state)
{
	(void)state;
	reset();
	redisReply *r = arr(4,
	    arr(2, str("{w:0}:jobs"), arr(1, arr(2, str("1-0"), arr(2, str("id"), str("a"))))),
	    arr(2, str("{w:2}:jobs"), arr(2,
		arr(2, str("1-0"), arr(2, str("id"), str("b"))),
		arr(2, str("5-0"), arr(2, str("id"), str("c"))))),
	    arr(2, str("{w:3}:jobs"), arr(0)),
	    arr(2, num(1), arr(1, arr(2, str("9-0"), arr(2, str("id"), str("x"))))));
	assert_int_equal(sreply_read(sreply_of(r), on_stream_entry, NULL), 3);
	assert_string_equal(got.seen, "{w:0}:jobs>1-0=a {w:2}:jobs>1-0=b {w:2}:jobs>5-0=c");
	tree_free(r);

	/* the claim script's entries name no stream */
	char next[48];
	reset();
	r = arr(3, str("0-0"), arr(1, arr(3, str("4-0"), arr(2, str("id"), str("d")), num(2))),
	    arr(0));
	assert_int_equal(sreply_claim(sreply_of(r), next, sizeof next, on_stream_entry, on_id,
	    (void *)"del"), 1);
	assert_string_equal(got.seen, "->4-0=d");
	tree_free(r);
}

/* Nothing in a malformed reply is dereferenced blindly. */
static void
test_read_malformed(void **state)
{
	(void)state;
	redisReply *cases[] = {
		err("LOADING Redis is loading the dataset in memory"),
		num(3), str("x"), NULL,
		arr(1, num(1)),
		arr(1, arr(1, str("warrant:jobs"))),
		arr(1, arr(2, num(1), arr(0))),
		arr(1, arr(2, str("k"), str("not entries"))),
		arr(1, arr(2, str("k"), arr(2, num(5), arr(1, str("id"))))),
		arr(1, arr(2, str("k"), arr(1, arr(1, str("1-0"))))),
		arr(1, arr(2, str("k"), arr(1, arr(2, str("1-0"), node(REDIS_REPLY_NIL))))),
		arr(1, arr(2, str("k"), arr(1, arr(2, str("1-0"), arr(3, str("id"), str("a"),
		    str("b")))))),
		arr(1, arr(2, str("k"), arr(1, arr(2, str("1-0"), arr(2, str("id"), num(7)))))),
	};
	const int want[] = {-1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 1, 1, 1};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		reset();
		assert_int_equal(sreply_read(sreply_of(cases[i]), on_entry, NULL), want[i]);
		tree_free(cases[i]);
	}
	/* the last three: an entry whose id is missing or not a string */
	assert_string_equal(got.seen, "1-0=(none)/1");
}

static void
test_claim(void **state)
{
	char next[48];
	(void)state;

	reset();
	redisReply *r = arr(3, str("7-0"), arr(2,
	    arr(3, str("1-0"), arr(2, str("id"), str("a")), num(4)),
	    arr(3, str("2-0"), node(REDIS_REPLY_NIL), num(0))),
	    arr(2, str("5-0"), num(9)));
	assert_int_equal(sreply_claim(sreply_of(r), next, sizeof next, on_entry, on_id, "deleted"), 2);
	assert_string_equal(next, "7-0");
	assert_string_equal(got.seen, "1-0=a/4 2-0=(none)/1 deleted:5-0");
	tree_free(r);

	/* a next that is not a string, or too long: the scan is complete */
	r = arr(3, num(0), arr(0), arr(0));
	assert_int_equal(sreply_claim(sreply_of(r), next, sizeof next, on_entry, on_id, "d"), 0);
	assert_string_equal(next, "0-0");
	tree_free(r);
	r = arr(3, str("123456789-123456789-123456789-123456789-123456789"), arr(0), arr(0));
	assert_int_equal(sreply_claim(sreply_of(r), next, sizeof next, on_entry, on_id, "d"), 0);
	assert_string_equal(next, "0-0");
	tree_free(r);

	redisReply *bad[] = {err("NOGROUP No such key"), arr(2, str("0-0"), arr(0)), num(1), NULL};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(next, sizeof next, "x");
		assert_int_equal(sreply_claim(sreply_of(bad[i]), next, sizeof next, on_entry, on_id, "d"), -1);
		assert_string_equal(next, "0-0");
		tree_free(bad[i]);
	}
}

/* R12 across a hand-back (lua/handback.lua): an entry's priorDeliveries
 * adds to Redis' count, read or claimed alike; a value that is not 1 to 9
 * digits counts as 0, as in the scripts. */
static void
test_prior_deliveries(void **state)
{
	char next[48];
	(void)state;

	reset();
	redisReply *r = arr(1, arr(2, str("warrant:jobs"), arr(6,
	    arr(2, str("1-0"), arr(4, str("id"), str("a"), str("priorDeliveries"), str("3"))),
	    arr(2, str("2-0"), arr(4, str("priorDeliveries"), str("-3"), str("id"), str("b"))),
	    arr(2, str("3-0"), arr(4, str("id"), str("c"), str("priorDeliveries"), str("1e3"))),
	    arr(2, str("4-0"), arr(4, str("id"), str("d"), str("priorDeliveries"), str(""))),
	    arr(2, str("5-0"), arr(4, str("id"), str("e"), str("priorDeliveries"),
		str("1234567890"))),
	    arr(2, str("6-0"), arr(4, str("id"), str("f"), str("priorDeliveries"),
		str("999999999"))))));
	assert_int_equal(sreply_read(sreply_of(r), on_entry, NULL), 6);
	assert_string_equal(got.seen, "1-0=a/4 2-0=b/1 3-0=c/1 4-0=d/1 5-0=e/1 6-0=f/1000000000");
	tree_free(r);

	reset();
	r = arr(3, str("0-0"), arr(1, arr(3, str("4-0"), arr(4, str("id"), str("d"),
	    str("priorDeliveries"), str("15")), num(2))), arr(0));
	assert_int_equal(sreply_claim(sreply_of(r), next, sizeof next, on_entry, on_id, "d"), 1);
	assert_string_equal(got.seen, "4-0=d/17");
	tree_free(r);
}

/* The hand-back script's reply: {1, new id, prior}, {0}, or anything else. */
static void
test_handback(void **state)
{
	char sid[48];
	(void)state;

	redisReply *r = arr(3, num(1), str("1700000000000-3"), str("2"));
	assert_int_equal(sreply_handback(sreply_of(r), sid, sizeof sid), 1);
	assert_string_equal(sid, "1700000000000-3");
	assert_int_equal(sreply_handback(sreply_of(r), sid, 8), -1);	/* does not fit */
	tree_free(r);
	r = arr(1, num(0));
	assert_int_equal(sreply_handback(sreply_of(r), sid, sizeof sid), 0);
	tree_free(r);
	redisReply *bad[] = {err("NOSCRIPT"), arr(2, num(1), num(5)), arr(1, num(2)), num(1),
	    arr(0), NULL};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(sreply_handback(sreply_of(bad[i]), sid, sizeof sid), -1);
		tree_free(bad[i]);
	}
}

static void
test_renew(void **state)
{
	(void)state;
	reset();
	redisReply *r = arr(2, arr(2, str("1-0"), num(3)), arr(1, str("2-0")));
	assert_int_equal(sreply_renew(sreply_of(r), on_id, on_id, "x"), 0);
	assert_string_equal(got.seen, "x:1-0 x:2-0");
	tree_free(r);
	r = arr(1, arr(0));
	assert_int_equal(sreply_renew(sreply_of(r), on_id, on_id, "x"), -1);
	tree_free(r);
	assert_int_equal(sreply_renew(NULL, on_id, on_id, "x"), -1);
}

static void
test_redis_version(void **state)
{
	(void)state;
	int major = -1, minor = -1;
	redisReply *r = str("7.0.15");

	assert_int_equal(sreply_redis_version(sreply_of(r), &major, &minor), 0);
	assert_int_equal(major, 7);
	assert_int_equal(minor, 0);
	tree_free(r);
	r = str("10.2.1");
	assert_int_equal(sreply_redis_version(sreply_of(r), &major, &minor), 0);
	assert_int_equal(major, 10);
	assert_int_equal(minor, 2);
	tree_free(r);
	/* Redis 6's Lua has no redis.REDIS_VERSION */
	r = str("");
	assert_int_equal(sreply_redis_version(sreply_of(r), &major, &minor), 1);
	tree_free(r);
	r = node(REDIS_REPLY_NIL);
	assert_int_equal(sreply_redis_version(sreply_of(r), &major, &minor), 1);
	tree_free(r);
	r = node(REDIS_REPLY_ERROR);
	assert_int_equal(sreply_redis_version(sreply_of(r), &major, &minor), -1);
	tree_free(r);
	r = str("seven");
	assert_int_equal(sreply_redis_version(sreply_of(r), &major, &minor), -1);
	tree_free(r);
	assert_int_equal(sreply_redis_version(NULL, &major, &minor), -1);
}

static void
test_group_lag(void **state)
{
	(void)state;
	redisReply *r = arr(2,
	    arr(6, str("name"), str("other"), str("pending"), num(1), str("lag"), num(9)),
	    arr(6, str("name"), str("workers"), str("pending"), num(0), str("lag"), num(42)));
	assert_int_equal(sreply_group_lag(sreply_of(r), "workers"), 42);
	assert_int_equal(sreply_group_lag(sreply_of(r), "other"), 9);
	assert_int_equal(sreply_group_lag(sreply_of(r), "none"), -1);
	tree_free(r);
	r = arr(1, arr(4, str("name"), str("workers"), str("lag"), node(REDIS_REPLY_NIL)));
	assert_int_equal(sreply_group_lag(sreply_of(r), "workers"), -1);
	tree_free(r);
	r = arr(1, arr(3, str("name"), str("workers"), str("lag")));
	assert_int_equal(sreply_group_lag(sreply_of(r), "workers"), -1);
	tree_free(r);
	assert_int_equal(sreply_group_lag(NULL, "workers"), -1);
	assert_null(sreply_field(NULL, "x"));
}

/* What the daemon reads of a plain reply: which error, a number, a hash. */
static void
test_plain_replies(void **state)
{
	(void)state;
	redisReply *e = err("NOGROUP No such key 'q' or consumer group 'g'");
	redisReply *n = num(7), *a = arr(2, str("k"), str("v")), *s = str("NOGROUP");
	long long v = 0;
	size_t len = 9;

	assert_int_equal(sreply_error(sreply_of(e), NULL), 1);
	assert_int_equal(sreply_error(sreply_of(e), "NOGROUP"), 1);
	assert_int_equal(sreply_error(sreply_of(e), "BUSYGROUP"), 0);
	assert_int_equal(sreply_error(sreply_of(s), "NOGROUP"), 0);	/* a string is no error */
	assert_int_equal(sreply_error(sreply_of(n), NULL), 0);
	assert_int_equal(sreply_error(NULL, NULL), 0);
	e->str[0] = '\0';
	assert_int_equal(sreply_error(sreply_of(e), "NOGROUP"), 0);

	assert_int_equal(sreply_integer(sreply_of(n), &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(sreply_integer(sreply_of(s), &v), -1);
	assert_int_equal(sreply_integer(NULL, &v), -1);
	assert_int_equal(v, 7);

	assert_int_equal(sreply_array_len(sreply_of(a), &len), 0);
	assert_int_equal(len, 2);
	assert_string_equal(sreply_field(sreply_of(a), "k"), "v");
	assert_int_equal(sreply_array_len(sreply_of(e), &len), -1);
	assert_int_equal(sreply_array_len(NULL, &len), -1);
	assert_int_equal(len, 2);
	tree_free(e);
	tree_free(n);
	tree_free(a);
	tree_free(s);
}

/* lua/transition.lua: {1, 'ok', from, attempts} or {0, why, from}. */
static void
test_transition(void **state)
{
	(void)state;
	struct sreply_transition t;
	redisReply *ok = arr(4, num(1), str("ok"), str("queued"), str("3"));
	redisReply *no = arr(3, num(0), str("terminal"), str("done"));
	redisReply *odd[] = {arr(2, str("1"), str("ok")), arr(1, num(2)), num(1), err("BUSY")};

	sreply_transition(sreply_of(ok), &t);
	assert_int_equal(t.written, 1);
	assert_string_equal(t.why, "ok");
	assert_int_equal(t.fence, 3);
	sreply_transition(sreply_of(no), &t);
	assert_int_equal(t.written, 0);
	assert_string_equal(t.why, "terminal");
	assert_int_equal(t.fence, -1);
	for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
		sreply_transition(sreply_of(odd[i]), &t);
		assert_int_equal(t.written, 0);
		assert_int_equal(t.fence, -1);
		tree_free(odd[i]);
	}
	sreply_transition(NULL, &t);
	assert_int_equal(t.written, 0);
	assert_null(t.why);
	tree_free(ok);
	tree_free(no);
}

/* lua/load.lua's reply: the fields as strings, nil (or anything but a
 * string) as NULL; a withheld record is only its length, and a reply that
 * says both is refused. */
static void
test_load(void **state)
{
	(void)state;
	struct sreply_load l;
	redisReply *ok = arr(5, num(1), num(0), str("queued"), node(REDIS_REPLY_NIL),
	    str("eyJ"));
	redisReply *big = arr(5, num(1), num(8388608), str("queued"), str("2"),
	    num(0));
	redisReply *none = arr(5, num(0), num(0), node(REDIS_REPLY_NIL),
	    node(REDIS_REPLY_NIL), node(REDIS_REPLY_NIL));
	redisReply *odd[] = {arr(5, num(1), num(9), str("queued"), str("2"), str("eyJ")),
	    arr(4, num(1), num(0), str("queued"), str("2")), arr(5, num(1), num(-1),
	    str("a"), str("b"), str("c")), arr(5, str("1"), num(0), str("a"), str("b"), str("c")),
	    num(1), err("WRONGTYPE Operation against a key holding the wrong kind of value")};

	assert_int_equal(sreply_load(sreply_of(ok), &l), 0);
	assert_true(l.exists);
	assert_int_equal(l.withheld, 0);
	assert_string_equal(l.state, "queued");
	assert_null(l.attempts);
	assert_string_equal(l.record, "eyJ");
	assert_int_equal(sreply_load(sreply_of(big), &l), 0);
	assert_true(l.exists);
	assert_int_equal(l.withheld, 8388608);
	assert_string_equal(l.attempts, "2");
	assert_null(l.record);
	assert_int_equal(sreply_load(sreply_of(none), &l), 0);
	assert_false(l.exists);
	assert_null(l.state);
	assert_null(l.record);
	for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
		assert_int_equal(sreply_load(sreply_of(odd[i]), &l), -1);
		assert_null(l.record);
		tree_free(odd[i]);
	}
	assert_int_equal(sreply_load(NULL, &l), -1);
	assert_null(l.attempts_base);
	/* since attemptsBase (§11): a sixth element, read the same way */
	redisReply *based = arr(6, num(1), num(0), str("queued"), str("12"), str("eyJ"),
	    str("10"));
	assert_int_equal(sreply_load(sreply_of(based), &l), 0);
	assert_string_equal(l.attempts, "12");
	assert_string_equal(l.attempts_base, "10");
	assert_string_equal(l.record, "eyJ");
	assert_int_equal(sreply_load(sreply_of(ok), &l), 0);
	assert_null(l.attempts_base);
	tree_free(based);
	tree_free(ok);
	tree_free(big);
	tree_free(none);
}

/* A batch's reply (store.h): item i gets element i of an array of exactly
 * n, every item the error of a failed call, and NULL (tried again) for any
 * other shape -- never a neighbour's element. */
static void
test_batch_item(void **state)
{
	(void)state;
	redisReply *r = arr(3, arr(4, num(1), str("ok"), str("queued"), str("1")),
	    err("ERR hash value is not an integer"), arr(3, num(0), str("attempts"), str("running")));
	const struct sreply *whole = sreply_of(r);
	struct sreply_transition t;

	sreply_transition(sreply_batch_item(whole, 3, 0), &t);
	assert_int_equal(t.written, 1);
	assert_int_equal(t.fence, 1);
	assert_int_equal(sreply_error(sreply_batch_item(whole, 3, 1), "ERR hash value"), 1);
	assert_string_equal(sreply_error_text(sreply_batch_item(whole, 3, 1)),
	    "ERR hash value is not an integer");
	sreply_transition(sreply_batch_item(whole, 3, 2), &t);
	assert_int_equal(t.written, 0);
	assert_string_equal(t.why, "attempts");
	assert_null(sreply_error_text(sreply_batch_item(whole, 3, 0)));
	/* a count that is not the batch's, an index past it: nobody's reply */
	assert_null(sreply_batch_item(whole, 2, 0));
	assert_null(sreply_batch_item(whole, 4, 0));
	assert_null(sreply_batch_item(whole, 3, 3));
	tree_free(r);

	redisReply *busy = err("BUSY Redis is busy running a script");
	for (size_t i = 0; i < 3; i++)
		assert_ptr_equal(sreply_batch_item(sreply_of(busy), 3, i), sreply_of(busy));
	tree_free(busy);
	redisReply *odd[] = {num(1), str("ok"), node(REDIS_REPLY_NIL)};
	for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
		assert_null(sreply_batch_item(sreply_of(odd[i]), 1, 0));
		tree_free(odd[i]);
	}
	assert_null(sreply_batch_item(NULL, 1, 0));
	assert_null(sreply_error_text(NULL));
}

/* What warrantctl shows whole: elements, strings and field values of any
 * type, each refused for a wrong shape instead of dereferenced. */
static void
test_any_reply(void **state)
{
	(void)state;
	redisReply *h = arr(6, str("state"), str("done"), num(3), str("x"), str("n"), num(5));
	redisReply *s = str("v"), *e = err("ERR x"), *nil = node(REDIS_REPLY_NIL);
	redisReply *st = node(REDIS_REPLY_STATUS);
	long long v = 0;

	assert_ptr_equal(sreply_element(sreply_of(h), 0), sreply_of(h->element[0]));
	assert_ptr_equal(sreply_element(sreply_of(h), 5), sreply_of(h->element[5]));
	assert_null(sreply_element(sreply_of(h), 6));
	assert_null(sreply_element(sreply_of(s), 0));
	assert_null(sreply_element(NULL, 0));

	assert_string_equal(sreply_string(sreply_of(s)), "v");
	assert_null(sreply_string(sreply_of(e)));
	assert_null(sreply_string(sreply_of(nil)));
	assert_null(sreply_string(sreply_of(st)));
	assert_null(sreply_string(sreply_of(h)));
	assert_null(sreply_string(NULL));

	assert_string_equal(sreply_string(sreply_field_reply(sreply_of(h), "state")), "done");
	assert_int_equal(sreply_integer(sreply_field_reply(sreply_of(h), "n"), &v), 0);
	assert_int_equal(v, 5);
	/* A value is never taken for a key: "x" is at an odd index. */
	assert_null(sreply_field_reply(sreply_of(h), "x"));
	assert_null(sreply_field_reply(sreply_of(h), "none"));
	assert_null(sreply_field_reply(sreply_of(s), "state"));
	assert_null(sreply_field_reply(NULL, "state"));
	tree_free(h);
	tree_free(s);
	tree_free(e);
	tree_free(nil);
	tree_free(st);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read),
		cmocka_unit_test(test_nul_bytes),
		cmocka_unit_test(test_read_streams),
		cmocka_unit_test(test_read_malformed),
		cmocka_unit_test(test_claim),
		cmocka_unit_test(test_prior_deliveries),
		cmocka_unit_test(test_handback),
		cmocka_unit_test(test_renew),
		cmocka_unit_test(test_group_lag),
		cmocka_unit_test(test_redis_version),
		cmocka_unit_test(test_plain_replies),
		cmocka_unit_test(test_transition),
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_batch_item),
		cmocka_unit_test(test_any_reply),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
