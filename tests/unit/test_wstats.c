/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * worker/wstats.h: the charts' counts between two heartbeats, the bucket's
 * key, and the observers it forwards to (metrics must see every event it
 * saw before wstats sat in front of it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "worker/wstats.h"

static int calls, outcomes;
static long long last_ms;
static const char *last_state;

static void
next_call(void *arg, const char *action, long status, long long ms, long long delay)
{
	(void)action, (void)status, (void)delay;
	assert_ptr_equal(arg, &calls);
	calls++;
	last_ms = ms;
}

static void
next_outcome(void *arg, const char *action, const char *state, const char *reason)
{
	(void)action, (void)reason;
	assert_ptr_equal(arg, &calls);
	outcomes++;
	last_state = state;
}

static void
test_key(void **state)
{
	(void)state;
	char k[64];

	/* minute = ms / 60000, under the shard's own prefix (its hash tag) */
	assert_int_equal(wstats_key("warrant:paused", 1796000000000LL, k, sizeof k), 0);
	assert_string_equal(k, "warrant:stats:29933333");
	assert_int_equal(wstats_key("{warrant:0}:paused", 60000, k, sizeof k), 0);
	assert_string_equal(k, "{warrant:0}:stats:1");
	assert_int_equal(wstats_key("warrant:jobs", 0, k, sizeof k), -1);
	assert_int_equal(wstats_key("warrant:paused", 0, k, 8), -1);
}

static void
test_forwards(void **state)
{
	(void)state;
	struct wstats *s = wstats_new();

	assert_non_null(s);
	/* no next observer: counted, nothing else */
	wstats_on_call(s, "gate.open", 204, 12, 3);
	wstats_on_outcome(s, "gate.open", "done", "ok");
	assert_int_equal(calls + outcomes, 0);
	wstats_set_next_call(s, next_call, &calls);
	wstats_set_next_outcome(s, next_outcome);
	wstats_on_call(s, "gate.open", 204, 15, 3);
	wstats_on_outcome(s, "gate.open", "dead", "max-attempts");
	assert_int_equal(calls, 1);
	assert_int_equal(last_ms, 15);
	assert_int_equal(outcomes, 1);
	assert_string_equal(last_state, "dead");
	/* a flush without a connection keeps the counts */
	wstats_flush(s, NULL, NULL, "warrant:paused", 0);
	wstats_free(s);
	wstats_free(NULL);
}

/* What a flush sends, and that an unsent command's count waits for the
 * next flush rather than being lost or sent twice. */
static char sent[1024];
static int refuse_after = -1;	/* commands accepted before -1; -1: all */

static int
fake_send(void *arg, int argc, const char **argv)
{
	assert_ptr_equal(arg, sent);
	if (refuse_after == 0)
		return -1;
	if (refuse_after > 0)
		refuse_after--;
	for (int i = 0; i < argc; i++) {
		strcat(sent, argv[i]);
		strcat(sent, i + 1 < argc ? " " : "\n");
	}
	return 0;
}

static void
test_flush(void **state)
{
	(void)state;
	struct wstats *s = wstats_new();

	assert_non_null(s);
	wstats_on_call(s, "gate.open", 204, 12, 3);
	wstats_on_call(s, "gate.open", 204, 30, 3);
	wstats_on_outcome(s, "gate.open", "dead", "max-attempts");
	sent[0] = '\0';
	refuse_after = 1;	/* Redis goes away after the first command */
	wstats_flush(s, fake_send, sent, "warrant:paused", 60000);
	assert_string_equal(sent, "HINCRBY warrant:stats:1 c.gate.open 2\n");
	sent[0] = '\0';
	refuse_after = -1;
	wstats_flush(s, fake_send, sent, "warrant:paused", 120000);
	assert_string_equal(sent, "HINCRBY warrant:stats:2 ms.gate.open 42\n"
	    "HINCRBY warrant:stats:2 o.dead 1\n"
	    "HINCRBY warrant:stats:2 d.max-attempts 1\n"
	    "PEXPIRE warrant:stats:2 93600000\n");
	sent[0] = '\0';
	wstats_flush(s, fake_send, sent, "warrant:paused", 180000);
	assert_string_equal(sent, "");	/* nothing new: nothing sent */
	wstats_free(s);
}

/* Fields that share a prefix stay apart; a name that does not fit is not
 * stored cut short (it would add to another field's count). */
static void
test_fields_apart(void **state)
{
	(void)state;
	struct wstats *s = wstats_new();
	char longname[200];

	assert_non_null(s);
	memset(longname, 'a', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	wstats_on_call(s, "gate.open", 204, 5, 0);
	wstats_on_call(s, "gate.open2", 204, 7, 0);
	wstats_on_call(s, "gate", 204, 11, 0);
	wstats_on_call(s, longname, 204, 13, 0);
	sent[0] = '\0';
	refuse_after = -1;
	wstats_flush(s, fake_send, sent, "warrant:paused", 60000);
	assert_string_equal(sent, "HINCRBY warrant:stats:1 c.gate.open 1\n"
	    "HINCRBY warrant:stats:1 ms.gate.open 5\n"
	    "HINCRBY warrant:stats:1 c.gate.open2 1\n"
	    "HINCRBY warrant:stats:1 ms.gate.open2 7\n"
	    "HINCRBY warrant:stats:1 c.gate 1\n"
	    "HINCRBY warrant:stats:1 ms.gate 11\n"
	    "PEXPIRE warrant:stats:1 93600000\n");
	wstats_free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key),
		cmocka_unit_test(test_forwards),
		cmocka_unit_test(test_flush),
		cmocka_unit_test(test_fields_apart),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
