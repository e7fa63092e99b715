/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for src/core/consumer.c, the consumer core. Section 1: what a Redis
 * error reply means (R17) and whether a step that met one is retried or the
 * entry given up. The reply texts are redis-server 7.0.15's, as it sent
 * them (to a command, and to the same command inside a script, which adds
 * the " script: <sha>, on @user_script:N." tail). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/consumer.h"

#define TAIL " script: 7184caf6f6b2a3fc3f8081bb21aaac7a3e0c901b, on @user_script:58."

static const struct {
	const char *text;
	enum consumer_err c;
} replies[] = {
	/* transient for the worker */
	{"LOADING Redis is loading the dataset in memory", CONSUMER_ERR_TRANSIENT},
	{"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
	    CONSUMER_ERR_TRANSIENT},
	{"BUSY Redis is busy running a module command.", CONSUMER_ERR_TRANSIENT},
	{"MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist "
	    "to disk. Writable scripts are blocked. Use 'no-writes' flag for read only scripts.",
	    CONSUMER_ERR_TRANSIENT},
	{"MISCONF Errors writing to the AOF file: No space left on device", CONSUMER_ERR_TRANSIENT},
	{"NOREPLICAS Not enough good replicas to write.", CONSUMER_ERR_TRANSIENT},
	{"NOREPLICAS Not enough good replicas to write." TAIL, CONSUMER_ERR_TRANSIENT},
	{"OOM command not allowed when used memory > 'maxmemory'.", CONSUMER_ERR_TRANSIENT},
	{"OOM command not allowed when used memory > 'maxmemory'." TAIL, CONSUMER_ERR_TRANSIENT},
	{"CLUSTERDOWN The cluster is down", CONSUMER_ERR_TRANSIENT},
	{"CLUSTERDOWN Hash slot not served", CONSUMER_ERR_TRANSIENT},
	{"TRYAGAIN Multiple keys request during rehashing of slot", CONSUMER_ERR_TRANSIENT},
	{"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
	    CONSUMER_ERR_TRANSIENT},
	{"MOVED 3999 127.0.0.1:6381", CONSUMER_ERR_TRANSIENT},
	{"ASK 3999 127.0.0.1:6381", CONSUMER_ERR_TRANSIENT},
	{"UNKILLABLE Sorry the script already executed write commands against the dataset. You "
	    "can either wait the script termination or kill the server in a hard way using the "
	    "SHUTDOWN NOSAVE command.", CONSUMER_ERR_TRANSIENT},
	{"NOSCRIPT No matching script. Please use EVAL.", CONSUMER_ERR_TRANSIENT},
	{"ERR Script killed by user with SCRIPT KILL..." TAIL, CONSUMER_ERR_TRANSIENT},
	/* a replica: find the primary */
	{"READONLY You can't write against a read only replica.", CONSUMER_ERR_READONLY},
	{"READONLY You can't write against a read only replica." TAIL, CONSUMER_ERR_READONLY},
	/* the group is gone */
	{"NOGROUP No such key 'st' or consumer group 'nog' in XREADGROUP with GROUP option",
	    CONSUMER_ERR_NOGROUP},
	{"NOGROUP No such key 'st' or consumer group 'nog'" TAIL, CONSUMER_ERR_NOGROUP},
	/* the credential */
	{"NOAUTH Authentication required.", CONSUMER_ERR_AUTH},
	{"WRONGPASS invalid username-password pair or user is disabled.", CONSUMER_ERR_AUTH},
	{"NOPERM this user has no permissions to run the 'hgetall' command", CONSUMER_ERR_AUTH},
	{"NOPERM this user has no permissions to access one of the keys used as arguments",
	    CONSUMER_ERR_AUTH},
	{"ERR The user executing the script can't run this command or subcommand" TAIL,
	    CONSUMER_ERR_AUTH},
	{"ERR The user executing the script can't access at least one of the keys mentioned in "
	    "the command arguments" TAIL, CONSUMER_ERR_AUTH},
	/* the entry's own data */
	{"WRONGTYPE Operation against a key holding the wrong kind of value", CONSUMER_ERR_ENTRY},
	{"WRONGTYPE Operation against a key holding the wrong kind of value" TAIL,
	    CONSUMER_ERR_ENTRY},
	{"ERR hash value is not an integer", CONSUMER_ERR_ENTRY},
	{"ERR hash value is not an integer" TAIL, CONSUMER_ERR_ENTRY},
	{"ERR hash value is not a float", CONSUMER_ERR_ENTRY},
	{"ERR value is not a valid float", CONSUMER_ERR_ENTRY},
	{"ERR value is not an integer or out of range", CONSUMER_ERR_ENTRY},
	{"ERR increment or decrement would overflow", CONSUMER_ERR_ENTRY},
	{"ERR user_script:1: attempt to perform arithmetic on a nil value" TAIL,
	    CONSUMER_ERR_ENTRY},
	{"ERR user_script:12: attempt to index local 'x' (a nil value)" TAIL, CONSUMER_ERR_ENTRY},
	/* the same from a function of the library (warrantd(7) §2.1) */
	{"ERR user_function:640: attempt to compare nil with number script: warrantd_transition, "
	 "on @user_function:640.", CONSUMER_ERR_ENTRY},
	{"ERR Function not found", CONSUMER_ERR_TRANSIENT},
	/* nothing we know: transient, never the entry's */
	{"ERR unknown command 'HGETALL', with args beginning with: 'x' ", CONSUMER_ERR_OTHER},
	{"ERR AUTH <password> called without any password configured for the default user. Are "
	    "you sure your configuration is correct?", CONSUMER_ERR_OTHER},
	{"ERR syntax error" TAIL, CONSUMER_ERR_OTHER},
	{"ERR Error running script, user_script:3: odd", CONSUMER_ERR_OTHER},
	{"LOADINGX what", CONSUMER_ERR_OTHER},
	{"Loading lower case", CONSUMER_ERR_OTHER},
	{"", CONSUMER_ERR_OTHER},
	{"ERR", CONSUMER_ERR_OTHER},
	{"WRONGTYPE", CONSUMER_ERR_ENTRY},
	/* XGROUP CREATE's answer when the group is there */
	{"BUSYGROUP Consumer Group name already exists", CONSUMER_ERR_EXISTS},
};

static void
test_classify_real_replies(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof replies / sizeof replies[0]; i++) {
		enum consumer_err got = consumer_err_classify(replies[i].text);
		if (got != replies[i].c)
			fail_msg("\"%s\": %s, want %s", replies[i].text, consumer_err_name(got),
			    consumer_err_name(replies[i].c));
	}
	assert_int_equal(consumer_err_classify(NULL), CONSUMER_ERR_LOST);
}

/* Every class has one name, none shared; NONE and out of range have "". */
static void
test_err_names(void **state)
{
	(void)state;
	assert_string_equal(consumer_err_name(CONSUMER_ERR_NONE), "");
	assert_string_equal(consumer_err_name(CONSUMER_ERR_COUNT), "");
	assert_string_equal(consumer_err_name((enum consumer_err)-1), "");
	for (int i = 1; i < CONSUMER_ERR_COUNT; i++) {
		assert_true(consumer_err_name((enum consumer_err)i)[0] != '\0');
		for (int k = 1; k < i; k++)
			assert_string_not_equal(consumer_err_name((enum consumer_err)i),
			    consumer_err_name((enum consumer_err)k));
	}
}

static void
test_err_line(void **state)
{
	char buf[16], big[160];
	(void)state;

	assert_string_equal(consumer_err_line(NULL, big, sizeof big), "no reply");
	assert_string_equal(consumer_err_line("ERR x", big, sizeof big), "ERR x");
	/* one line: control characters are blanks */
	assert_string_equal(consumer_err_line("ERR a\r\nb\tc\x7f", big, sizeof big),
	    "ERR a  b c ");
	/* exactly as long as fits: kept whole */
	assert_string_equal(consumer_err_line("0123456789abcde", buf, sizeof buf),
	    "0123456789abcde");
	/* longer: cut and marked */
	assert_string_equal(consumer_err_line("0123456789abcdef", buf, sizeof buf),
	    "0123456789ab...");
	/* never inside a character: "é" is two bytes at 11-12, "€" three */
	assert_string_equal(consumer_err_line("0123456789a\xc3\xa9xyz", buf, sizeof buf),
	    "0123456789a...");
	assert_string_equal(consumer_err_line("0123456789a\xe2\x82\xacxyz", buf, sizeof buf),
	    "0123456789a...");
	/* a whole character that fits is kept */
	assert_string_equal(consumer_err_line("0123456789ab\xe2\x82\xac", buf, sizeof buf),
	    "0123456789ab\xe2\x82\xac");
	/* a real reply fits the job's detail */
	const char *r = "ERR hash value is not an integer" TAIL;
	assert_string_equal(consumer_err_line(r, big, sizeof big), r);
}

/* The backoff of a retry: [min, min(max, min * 2^(tries-1))]. */
static void
assert_delay(struct consumer_err_step st, unsigned tries)
{
	int64_t ceil = CONSUMER_ERR_RETRY_MIN_MS;

	for (unsigned i = 1; i < tries && ceil < CONSUMER_ERR_RETRY_MAX_MS; i++)
		ceil *= 2;
	if (ceil > CONSUMER_ERR_RETRY_MAX_MS)
		ceil = CONSUMER_ERR_RETRY_MAX_MS;
	assert_int_equal(st.verdict, CONSUMER_RETRY);
	assert_true(st.delay_ms >= CONSUMER_ERR_RETRY_MIN_MS);
	assert_true(st.delay_ms <= ceil);
}

/* Three per-entry errors of a step on the entry's data: retry, retry, give
 * up -- once; after that even the same error is retried. */
static void
test_entry_error_gives_up_at_three(void **state)
{
	struct consumer_errs e = {0};
	(void)state;

	assert_int_equal(CONSUMER_ERR_ENTRY_TRIES, 3);
	assert_delay(consumer_err_next(&e, CONSUMER_ERR_ENTRY, 1, 7), 1);
	assert_delay(consumer_err_next(&e, CONSUMER_ERR_ENTRY, 1, 7), 2);
	assert_int_equal(consumer_err_next(&e, CONSUMER_ERR_ENTRY, 1, 7).verdict,
	    CONSUMER_GIVE_UP);
	/* the dead letter's own write meets it again: retried, for ever */
	for (int i = 0; i < 100; i++)
		assert_int_equal(consumer_err_next(&e, CONSUMER_ERR_ENTRY, 1, (uint64_t)i).verdict,
		    CONSUMER_RETRY);
}

/* Every other class is transient for the entry: retried however often,
 * with a delay that grows to the cap and never below the floor. */
static void
test_transient_never_gives_up(void **state)
{
	static const enum consumer_err cls[] = {CONSUMER_ERR_LOST, CONSUMER_ERR_TRANSIENT,
	    CONSUMER_ERR_READONLY, CONSUMER_ERR_NOGROUP, CONSUMER_ERR_AUTH, CONSUMER_ERR_OTHER};
	(void)state;

	for (size_t c = 0; c < sizeof cls / sizeof cls[0]; c++) {
		struct consumer_errs e = {0};
		for (unsigned i = 1; i <= 200; i++) {
			struct consumer_err_step st = consumer_err_next(&e, cls[c], 1, UINT64_MAX - i);
			assert_delay(st, i);
		}
		assert_int_equal(e.entry, 0);
	}
	/* at the cap, the whole range is drawn from */
	struct consumer_errs e = {.tries = 40};
	assert_int_equal(consumer_err_next(&e, CONSUMER_ERR_LOST, 0,
	    CONSUMER_ERR_RETRY_MAX_MS - CONSUMER_ERR_RETRY_MIN_MS).delay_ms,
	    CONSUMER_ERR_RETRY_MAX_MS);
}

/* A step that does not touch the entry's data (a re-dispatch, a dead
 * letter written without the hash): its WRONGTYPE is some shared key's,
 * never the entry's -- retried, never given up. */
static void
test_entry_error_off_its_data_retried(void **state)
{
	struct consumer_errs e = {0};
	(void)state;

	for (int i = 0; i < 10; i++)
		assert_int_equal(consumer_err_next(&e, CONSUMER_ERR_ENTRY, 0, 1).verdict,
		    CONSUMER_RETRY);
	assert_int_equal(e.entry, 0);
	assert_int_equal(e.gave_up, 0);
}

/* "In a row": transient errors between the entry's own neither count nor
 * end the run; a reply that is no error ends it; Redis coming back starts
 * the backoff again but keeps the entry's count. */
static void
test_entry_run(void **state)
{
	struct consumer_errs e = {0};
	(void)state;

	assert_int_equal(consumer_err_next(&e, CONSUMER_ERR_ENTRY, 1, 0).verdict, CONSUMER_RETRY);
	assert_int_equal(consumer_err_next(&e, CONSUMER_ERR_LOST, 1, 0).verdict, CONSUMER_RETRY);
	assert_int_equal(consumer_err_next(&e, CONSUMER_ERR_TRANSIENT, 1, 0).verdict,
	    CONSUMER_RETRY);
	assert_int_equal(consumer_err_next(&e, CONSUMER_ERR_ENTRY, 1, 0).verdict, CONSUMER_RETRY);
	assert_int_equal(e.tries, 4);
	consumer_err_redis_up(&e);
	assert_int_equal(e.tries, 0);
	assert_int_equal(e.entry, 2);
	assert_int_equal(consumer_err_next(&e, CONSUMER_ERR_ENTRY, 1, 0).verdict,
	    CONSUMER_GIVE_UP);

	/* a success between: the count starts again */
	memset(&e, 0, sizeof e);
	assert_int_equal(consumer_err_next(&e, CONSUMER_ERR_ENTRY, 1, 0).verdict, CONSUMER_RETRY);
	assert_int_equal(consumer_err_next(&e, CONSUMER_ERR_ENTRY, 1, 0).verdict, CONSUMER_RETRY);
	consumer_err_ok(&e);
	assert_int_equal(e.tries, 0);
	assert_int_equal(consumer_err_next(&e, CONSUMER_ERR_ENTRY, 1, 0).verdict, CONSUMER_RETRY);
	assert_int_equal(consumer_err_next(&e, CONSUMER_ERR_ENTRY, 1, 0).verdict, CONSUMER_RETRY);
	assert_int_equal(consumer_err_next(&e, CONSUMER_ERR_ENTRY, 1, 0).verdict,
	    CONSUMER_GIVE_UP);
}

/* From the text to the verdict, as ejob goes: the real replies of the
 * poisoned entries of issue 22 end in GIVE_UP at the third; LOADING never. */
static void
test_reply_to_verdict(void **state)
{
	static const char *const poison[] = {
		"WRONGTYPE Operation against a key holding the wrong kind of value",
		"ERR hash value is not an integer" TAIL,
	};
	(void)state;

	for (size_t i = 0; i < sizeof poison / sizeof poison[0]; i++) {
		struct consumer_errs e = {0};
		enum consumer_err c = consumer_err_classify(poison[i]);
		assert_int_equal(consumer_err_next(&e, c, 1, 3).verdict, CONSUMER_RETRY);
		assert_int_equal(consumer_err_next(&e, c, 1, 3).verdict, CONSUMER_RETRY);
		assert_int_equal(consumer_err_next(&e, c, 1, 3).verdict, CONSUMER_GIVE_UP);
	}
	struct consumer_errs e = {0};
	for (int i = 0; i < 50; i++)
		assert_int_equal(consumer_err_next(&e, consumer_err_classify("LOADING Redis is "
		    "loading the dataset in memory"), 1, 3).verdict, CONSUMER_RETRY);
}

/* ---- section 2: reading and claiming ---- */

/* A healthy shard of a worker with room: it may read, and claims on a tick. */
static struct consumer_view
healthy(void)
{
	return (struct consumer_view){
		.max_in_flight = 256, .batch = 64, .in_hand = 0, .tokens_usable = 1,
		.group_ready = 1, .own_done = 1, .cmd_up = 1, .blk_up = 1,
	};
}

static void
test_room_and_read_count(void **state)
{
	(void)state;
	struct consumer_view v = healthy();

	assert_int_equal(consumer_room(&v), 64);		/* one batch at most */
	assert_int_equal(consumer_read_count(&v, 1), 64);
	v.in_hand = 230;
	assert_int_equal(consumer_room(&v), 26);
	assert_int_equal(consumer_read_count(&v, 1), 26);
	/* R18: four streams read at once share the room: 26 / 4 */
	assert_int_equal(consumer_read_count(&v, 4), 6);
	/* ... but each asks for at least one while there is room */
	v.in_hand = 254;
	assert_int_equal(consumer_read_count(&v, 4), 1);
	v.in_hand = 256;
	assert_true(consumer_room(&v) <= 0);
	assert_false(consumer_may_read(&v));
	v.in_hand = 300;	/* a reload lowered max_in_flight under what is in hand */
	assert_true(consumer_room(&v) < 0);
}

/* R6, R14, R15, R17: every reason not to read, one at a time. */
static void
test_may_read(void **state)
{
	(void)state;
	struct consumer_view v = healthy();

	assert_true(consumer_may_read(&v));
#define WITHOUT(field, value) do { \
	struct consumer_view w = healthy(); \
	w.field = value; \
	assert_false(consumer_may_read(&w)); \
} while (0)
	WITHOUT(group_ready, 0);
	WITHOUT(own_done, 0);		/* R14: own PEL first */
	WITHOUT(draining, 1);		/* R15 */
	WITHOUT(reading, 1);
	WITHOUT(blk_up, 0);		/* R17: either connection down */
	WITHOUT(cmd_up, 0);
	WITHOUT(backing_off, 1);	/* R17: an error reply waits */
	WITHOUT(tokens_usable, 0);	/* R6 */
	WITHOUT(queue_paused, 1);	/* §13: the whole queue paused */
	WITHOUT(held, v.max_in_flight / 2 + 1);	/* §13, R6: more than half held back */
#undef WITHOUT
	/* held back, R6's share at most: still reading for the others (a
	 * pause's further entries are parked) */
	v.held = v.max_in_flight / 2;
	assert_true(consumer_may_read(&v));
}

/* R6: the share of the hand held entries keep, and when one parks. */
static void
test_parks(void **state)
{
	(void)state;
	assert_int_equal(consumer_held_max(16), 8);
	assert_int_equal(consumer_held_max(3), 1);
	assert_int_equal(consumer_held_max(1), 1);	/* at least one */
	assert_int_equal(consumer_held_max(0), 1);
	assert_false(consumer_parks(7, 16));	/* kept: 8 with it */
	assert_true(consumer_parks(8, 16));	/* the share is full */
	assert_true(consumer_parks(9, 16));
	assert_false(consumer_parks(0, 1));
	assert_true(consumer_parks(1, 1));
}

/* R6: an entry waiting for its scope's token parks once others waiting for
 * one fill the share; one with a token, or that needs none, never does; and
 * parked entries stay parked while their scope has no usable token. */
static void
test_token_parks(void **state)
{
	(void)state;
	assert_false(consumer_token_parks(1, 0, 7, 16));
	assert_true(consumer_token_parks(1, 0, 8, 16));	/* the share is full */
	assert_true(consumer_token_parks(1, 0, 9, 16));
	assert_false(consumer_token_parks(1, 1, 8, 16));	/* it has a token */
	assert_false(consumer_token_parks(0, 0, 8, 16));	/* it needs none */
	assert_true(consumer_token_parks(1, 0, 1, 1));
	assert_false(consumer_keeps_parked(0, 0, 0));
	assert_false(consumer_keeps_parked(0, 1, 1));	/* the token came */
	assert_true(consumer_keeps_parked(0, 1, 0));	/* still none */
	assert_true(consumer_keeps_parked(1, 1, 1));	/* the gate holds them */
	assert_true(consumer_keeps_parked(1, 0, 0));
}

/* R6, R1: parked entries go on when their hold ends, and those whose
 * deadline came while it lasts; never while stopping. */
static void
test_unpark_next(void **state)
{
	(void)state;
	assert_int_equal(consumer_unpark_next(0, 5000, 1000, 0), CONSUMER_UNPARK_ALL);
	assert_int_equal(consumer_unpark_next(0, 500, 1000, 0), CONSUMER_UNPARK_ALL);
	assert_int_equal(consumer_unpark_next(1, 5000, 1000, 0), CONSUMER_UNPARK_NONE);
	assert_int_equal(consumer_unpark_next(1, 1000, 1000, 0), CONSUMER_UNPARK_DUE);
	assert_int_equal(consumer_unpark_next(1, 999, 1000, 0), CONSUMER_UNPARK_DUE);
	assert_int_equal(consumer_unpark_next(0, 5000, 1000, 1), CONSUMER_UNPARK_NONE);
	assert_int_equal(consumer_unpark_next(1, 500, 1000, 1), CONSUMER_UNPARK_NONE);
}

/* R14 before R11: the own PEL, at any time; another's entries only on a
 * claim tick, and nothing without room, a token or the command connection. */
static void
test_next_claim(void **state)
{
	(void)state;
	struct consumer_view v = healthy();

	assert_int_equal(consumer_next_claim(&v, 0), CONSUMER_CLAIM_NONE);
	assert_int_equal(consumer_next_claim(&v, 1), CONSUMER_CLAIM_AUTO);
	v.own_done = 0;
	assert_int_equal(consumer_next_claim(&v, 0), CONSUMER_CLAIM_OWN);
	assert_int_equal(consumer_next_claim(&v, 1), CONSUMER_CLAIM_OWN);
	v.backing_off = 1;	/* the own scan is on the read path: it waits */
	assert_int_equal(consumer_next_claim(&v, 1), CONSUMER_CLAIM_NONE);
	v = healthy();
	v.backing_off = 1;	/* a claim is not: it goes on while reads wait */
	assert_int_equal(consumer_next_claim(&v, 1), CONSUMER_CLAIM_AUTO);
#define NONE_WITH(field, value) do { \
	struct consumer_view w = healthy(); \
	w.field = value; \
	assert_int_equal(consumer_next_claim(&w, 1), CONSUMER_CLAIM_NONE); \
	w.own_done = 0; \
	assert_int_equal(consumer_next_claim(&w, 1), CONSUMER_CLAIM_NONE); \
} while (0)
	NONE_WITH(group_ready, 0);
	NONE_WITH(cmd_up, 0);
	NONE_WITH(draining, 1);
	NONE_WITH(claiming, 1);		/* one claim at a time */
	NONE_WITH(in_hand, 256);
	/* R6: never another's entries without a token; our own PEL is ours */
	v = healthy();
	v.tokens_usable = 0;
	assert_int_equal(consumer_next_claim(&v, 1), CONSUMER_CLAIM_NONE);
	v.own_done = 0;
	assert_int_equal(consumer_next_claim(&v, 1), CONSUMER_CLAIM_OWN);
#undef NONE_WITH
	/* the blocking connection is not the claim's */
	v = healthy();
	v.blk_up = 0;
	assert_int_equal(consumer_next_claim(&v, 1), CONSUMER_CLAIM_AUTO);
}

static void
test_claim_calls(void **state)
{
	(void)state;
	assert_int_equal(consumer_claim_calls(1), CONSUMER_CLAIM_SCAN);
	assert_int_equal(consumer_claim_calls(2), CONSUMER_CLAIM_SCAN / 2);
	assert_int_equal(consumer_claim_calls(64), 1);
	assert_int_equal(consumer_claim_calls(500), 1);
	assert_int_equal(consumer_claim_calls(0), 1);
}

/* R10, R17: full jitter under a ceiling that doubles from 100 ms to 5 s. */
static void
test_retry_ms(void **state)
{
	(void)state;
	for (unsigned f = 1; f <= 70; f++) {
		int64_t ceiling = 100LL << (f - 1 < 6 ? f - 1 : 6);
		if (ceiling > CONSUMER_ERR_RETRY_MAX_MS)
			ceiling = CONSUMER_ERR_RETRY_MAX_MS;
		for (uint64_t rnd = 0; rnd < 4; rnd++) {
			int64_t d = consumer_retry_ms(f, rnd * 0x4000000000000000ULL);
			assert_true(d >= CONSUMER_ERR_RETRY_MIN_MS);
			assert_true(d <= ceiling);
		}
	}
	/* the ceiling is reached, and stays at 5 s */
	assert_int_equal(consumer_retry_ms(70, 4900), CONSUMER_ERR_RETRY_MAX_MS);
	assert_int_equal(consumer_retry_ms(1, 0), CONSUMER_ERR_RETRY_MIN_MS);
}

/* R20: a write refused for the credential is held while it is lost, and
 * reclaimed at once when the refusal met a token already replaced; other
 * failures stay R17's. */
static void
test_auth_write(void **state)
{
	(void)state;
	assert_int_equal(consumer_auth_write(CONSUMER_ERR_AUTH, 1), CONSUMER_AUTH_HOLD);
	/* the connection closed as its token died: no reply, still R20 */
	assert_int_equal(consumer_auth_write(CONSUMER_ERR_LOST, 1), CONSUMER_AUTH_HOLD);
	assert_int_equal(consumer_auth_write(CONSUMER_ERR_AUTH, 0), CONSUMER_AUTH_RECLAIM);
	assert_int_equal(consumer_auth_write(CONSUMER_ERR_LOST, 0), CONSUMER_AUTH_R17);
	for (int c = CONSUMER_ERR_TRANSIENT; c < CONSUMER_ERR_COUNT; c++) {
		if (c == CONSUMER_ERR_AUTH)
			continue;
		assert_int_equal(consumer_auth_write((enum consumer_err)c, 1), CONSUMER_AUTH_R17);
		assert_int_equal(consumer_auth_write((enum consumer_err)c, 0), CONSUMER_AUTH_R17);
	}
	/* the replies Redis writes are classed so */
	assert_int_equal(consumer_auth_write(consumer_err_classify("NOAUTH Authentication "
	    "required."), 1), CONSUMER_AUTH_HOLD);
	assert_int_equal(consumer_auth_write(consumer_err_classify("WRONGPASS invalid "
	    "username-password pair or user is disabled."), 1), CONSUMER_AUTH_HOLD);
	assert_int_equal(consumer_auth_write(consumer_err_classify(NULL), 1), CONSUMER_AUTH_HOLD);
}

/* R20, R10: the held write goes out only after the entry was found ours
 * (or nobody's); another's is abandoned; a failed reclaim never writes. */
static void
test_reclaim_next(void **state)
{
	(void)state;
	for (int lost = 0; lost <= 1; lost++) {
		assert_int_equal(consumer_reclaim_next(CONSUMER_RECLAIM_OURS, CONSUMER_ERR_NONE,
		    lost), CONSUMER_RS_WRITE);
		assert_int_equal(consumer_reclaim_next(CONSUMER_RECLAIM_GONE, CONSUMER_ERR_NONE,
		    lost), CONSUMER_RS_WRITE_UNPENDING);
		assert_int_equal(consumer_reclaim_next(CONSUMER_RECLAIM_LOST, CONSUMER_ERR_NONE,
		    lost), CONSUMER_RS_ABANDON);
		for (int c = CONSUMER_ERR_LOST; c < CONSUMER_ERR_COUNT; c++) {
			enum consumer_reclaim_step st = consumer_reclaim_next(
			    CONSUMER_RECLAIM_FAILED, (enum consumer_err)c, lost);
			assert_true(st == CONSUMER_RS_HOLD || st == CONSUMER_RS_RETRY);
		}
	}
	assert_int_equal(consumer_reclaim_next(CONSUMER_RECLAIM_FAILED, CONSUMER_ERR_AUTH, 1),
	    CONSUMER_RS_HOLD);
	assert_int_equal(consumer_reclaim_next(CONSUMER_RECLAIM_FAILED, CONSUMER_ERR_LOST, 1),
	    CONSUMER_RS_HOLD);
	assert_int_equal(consumer_reclaim_next(CONSUMER_RECLAIM_FAILED, CONSUMER_ERR_AUTH, 0),
	    CONSUMER_RS_RETRY);
	assert_int_equal(consumer_reclaim_next(CONSUMER_RECLAIM_FAILED, CONSUMER_ERR_TRANSIENT, 1),
	    CONSUMER_RS_RETRY);
}

/* R14: the key a NOGROUP names, as Redis 7.0 writes it; nothing else. */
static void
test_nogroup_key(void **state)
{
	size_t n = 0;
	const char *k;

	(void)state;
	k = consumer_nogroup_key("NOGROUP No such key 'q{1}:jobs' or consumer group 'g' in "
	    "XREADGROUP with GROUP option", &n);
	assert_non_null(k);
	assert_int_equal(n, 9);
	assert_memory_equal(k, "q{1}:jobs", 9);
	assert_null(consumer_nogroup_key("NOGROUP something else", &n));
	assert_null(consumer_nogroup_key(NULL, &n));
	assert_null(consumer_nogroup_key("ERR No such key 'k' or consumer group 'g'", &n));
	assert_null(consumer_nogroup_key("NOGROUP No such key 'k", &n));
}

/* R6: entries waiting for a token stop new reads beyond R6's share, half
 * of max_in_flight (at least one): with the share held the worker reads on
 * (the further ones are parked); an unusable credential stops them at once. */
static void
test_tokens_let_read(void **state)
{
	struct consumer_view v = {.max_in_flight = 10, .tokens_usable = 1};

	(void)state;
	assert_true(consumer_tokens_let_read(&v));
	v.waiting_token = 5;
	assert_true(consumer_tokens_let_read(&v));
	v.waiting_token = 6;
	assert_false(consumer_tokens_let_read(&v));
	v.waiting_token = 0;
	v.tokens_usable = 0;
	assert_false(consumer_tokens_let_read(&v));
	v = (struct consumer_view){.max_in_flight = 1, .tokens_usable = 1};
	assert_true(consumer_tokens_let_read(&v));
	v.waiting_token = 2;
	assert_false(consumer_tokens_let_read(&v));
	/* and the read follows it */
	v = (struct consumer_view){.max_in_flight = 10, .batch = 5, .tokens_usable = 1,
	    .group_ready = 1, .own_done = 1, .cmd_up = 1, .blk_up = 1};
	assert_true(consumer_may_read(&v));
	v.waiting_token = 5;
	assert_true(consumer_may_read(&v));
	v.waiting_token = 6;
	assert_false(consumer_may_read(&v));
	v.own_done = 0;
	v.tokens_usable = 0;
	assert_int_equal(consumer_next_claim(&v, 1), CONSUMER_CLAIM_OWN);
	v.own_done = 1;
	v.tokens_usable = 1;
	assert_int_equal(consumer_next_claim(&v, 1), CONSUMER_CLAIM_NONE);
	v.waiting_token = 0;
	assert_int_equal(consumer_next_claim(&v, 1), CONSUMER_CLAIM_AUTO);
}

/* The shared read: a stream goes in when its shard is ready; one on its way
 * is waited for; one down or backing off is neither. */
static void
test_stream_ready_coming(void **state)
{
	struct consumer_view v = {.group_ready = 1, .own_done = 1, .cmd_up = 1};

	(void)state;
	assert_true(consumer_stream_ready(&v));
	assert_false(consumer_stream_coming(&v));
	v.own_done = 0;
	assert_false(consumer_stream_ready(&v));
	assert_true(consumer_stream_coming(&v));
	v.own_done = 1;
	v.group_ready = 0;
	assert_false(consumer_stream_ready(&v));
	assert_true(consumer_stream_coming(&v));
	v.backing_off = 1;
	assert_false(consumer_stream_ready(&v));
	assert_false(consumer_stream_coming(&v));
	v = (struct consumer_view){.group_ready = 1, .own_done = 1};
	assert_false(consumer_stream_ready(&v));
	assert_false(consumer_stream_coming(&v));
}

/* §8: the stall check waits 3 x block_ms + heartbeat_ms of quiet. */
static void
test_check_stall(void **state)
{
	struct consumer_view v = {.max_in_flight = 10, .batch = 5, .tokens_usable = 1,
	    .own_done = 1};

	(void)state;
	assert_false(consumer_check_stall(&v, 3 * 1000 + 500 - 1, 1000, 500));
	assert_true(consumer_check_stall(&v, 3 * 1000 + 500, 1000, 500));
	v.draining = 1;
	assert_false(consumer_check_stall(&v, 100000, 1000, 500));
	v.draining = 0;
	v.own_done = 0;
	assert_false(consumer_check_stall(&v, 100000, 1000, 500));
	v.own_done = 1;
	v.tokens_usable = 0;
	assert_false(consumer_check_stall(&v, 100000, 1000, 500));
	v.tokens_usable = 1;
	v.in_hand = 10;
	assert_false(consumer_check_stall(&v, 100000, 1000, 500));
	assert_int_equal(consumer_forgotten_ms(3000), 6000);
}

/* What each step does with each kind of reply. */
static void
test_reply_next(void **state)
{
	(void)state;
	for (int s = CONSUMER_STEP_READ; s <= CONSUMER_STEP_BEAT; s++)
		assert_int_equal(consumer_reply_next((enum consumer_step)s, CONSUMER_ERR_LOST, 0),
		    0);
	/* the read and our own PEL: NOGROUP makes the group, errors back off */
	for (int s = CONSUMER_STEP_READ; s <= CONSUMER_STEP_OWN; s++) {
		assert_int_equal(consumer_reply_next((enum consumer_step)s, CONSUMER_ERR_NONE, 1),
		    CONSUMER_DO_OK);
		assert_int_equal(consumer_reply_next((enum consumer_step)s, CONSUMER_ERR_NONE, 0),
		    CONSUMER_DO_BACKOFF);
		assert_int_equal(consumer_reply_next((enum consumer_step)s, CONSUMER_ERR_NOGROUP,
		    0), CONSUMER_DO_GROUP);
		assert_int_equal(consumer_reply_next((enum consumer_step)s,
		    CONSUMER_ERR_TRANSIENT, 0), CONSUMER_DO_BACKOFF);
		assert_int_equal(consumer_reply_next((enum consumer_step)s,
		    CONSUMER_ERR_READONLY, 0), CONSUMER_DO_BACKOFF);
	}
	/* another's entries: the next tick, no backoff */
	assert_int_equal(consumer_reply_next(CONSUMER_STEP_AUTO, CONSUMER_ERR_NONE, 1),
	    CONSUMER_DO_OK);
	assert_int_equal(consumer_reply_next(CONSUMER_STEP_AUTO, CONSUMER_ERR_NOGROUP, 0),
	    CONSUMER_DO_GROUP);
	assert_int_equal(consumer_reply_next(CONSUMER_STEP_AUTO, CONSUMER_ERR_TRANSIENT, 0), 0);
	/* the renewal: the group and the backoff both */
	assert_int_equal(consumer_reply_next(CONSUMER_STEP_RENEW, CONSUMER_ERR_NONE, 1),
	    CONSUMER_DO_OK);
	assert_int_equal(consumer_reply_next(CONSUMER_STEP_RENEW, CONSUMER_ERR_NOGROUP, 0),
	    CONSUMER_DO_GROUP | CONSUMER_DO_BACKOFF);
	assert_int_equal(consumer_reply_next(CONSUMER_STEP_RENEW, CONSUMER_ERR_TRANSIENT, 0),
	    CONSUMER_DO_BACKOFF);
	/* XGROUP CREATE: BUSYGROUP is as good as made */
	assert_int_equal(consumer_reply_next(CONSUMER_STEP_GROUP, CONSUMER_ERR_NONE, 1),
	    CONSUMER_DO_OK);
	assert_int_equal(consumer_reply_next(CONSUMER_STEP_GROUP,
	    consumer_err_classify("BUSYGROUP Consumer Group name already exists"), 1),
	    CONSUMER_DO_OK);
	assert_int_equal(consumer_reply_next(CONSUMER_STEP_GROUP, CONSUMER_ERR_OTHER, 1),
	    CONSUMER_DO_BACKOFF);
	/* the heartbeat: any error backs off */
	assert_int_equal(consumer_reply_next(CONSUMER_STEP_BEAT, CONSUMER_ERR_NONE, 1),
	    CONSUMER_DO_OK);
	assert_int_equal(consumer_reply_next(CONSUMER_STEP_BEAT, CONSUMER_ERR_NOGROUP, 1),
	    CONSUMER_DO_BACKOFF);
}

/* R20: what a refusal of Redis' credential makes the engine do. */
static void
test_auth_seen(void **state)
{
	(void)state;
	assert_int_equal(consumer_auth_seen(1, "NOAUTH", 0), CONSUMER_AS_NONE);
	assert_int_equal(consumer_auth_seen(1, "NOAUTH", 1), CONSUMER_AS_NONE);
	assert_int_equal(consumer_auth_seen(0, "NOPERM", 1), CONSUMER_AS_NONE);
	assert_int_equal(consumer_auth_seen(0, "NOAUTH", 1), CONSUMER_AS_NOTE);
	assert_int_equal(consumer_auth_seen(-1, "WRONGPASS", 1), CONSUMER_AS_NOTE);
	assert_int_equal(consumer_auth_seen(0, "NOPERM", 0), CONSUMER_AS_RENEW);
	assert_int_equal(consumer_auth_seen(0, "WRONGPASS", 0), CONSUMER_AS_RENEW);
	assert_int_equal(consumer_auth_seen(-1, "NOAUTH", 0), CONSUMER_AS_STALE);
}

/* Issue 38 item 5: an outage is said at warn at its start, then once a
 * minute at most, whatever the number of attempts between. */
static void
test_down_warn(void **state)
{
	(void)state;
	assert_true(consumer_down_warn(0, 5));
	assert_false(consumer_down_warn(1000, 1000));
	assert_false(consumer_down_warn(1000, 1000 + CONSUMER_DOWN_REMIND_MS - 1));
	assert_true(consumer_down_warn(1000, 1000 + CONSUMER_DOWN_REMIND_MS));
	assert_int_equal(CONSUMER_DOWN_REMIND_MS, 60000);
	/* an 18.8 s outage with attempts every 100 ms to 5 s: one warning */
	int64_t said = 0;
	int warned = 0;
	for (int64_t t = 1; t <= 18800; t += 700)
		if (consumer_down_warn(said, t)) {
			said = t;
			warned++;
		}
	assert_int_equal(warned, 1);
}

/* Issue 38 item 1: one name, one live process. A claim that moved on
 * since first seen is a live holder's; one that did not may be dead. */
static void
test_name_next(void **state)
{
	(void)state;
	assert_int_equal(consumer_name_next(0, 1, 1, NULL, ""), CONSUMER_NAME_OURS);
	assert_int_equal(consumer_name_next(1, 1, 1, NULL, ""), CONSUMER_NAME_OURS);
	assert_int_equal(consumer_name_next(0, 1, 0, "a 1", ""), CONSUMER_NAME_WAIT);
	assert_int_equal(consumer_name_next(0, 1, 0, "a 1", "a 1"), CONSUMER_NAME_WAIT);
	assert_int_equal(consumer_name_next(0, 1, 0, "a 2", "a 1"), CONSUMER_NAME_TAKEN);
	assert_int_equal(consumer_name_next(0, 1, 0, "b 1", "a 1"), CONSUMER_NAME_TAKEN);
	assert_int_equal(consumer_name_next(1, 1, 0, "b 1", ""), CONSUMER_NAME_LOST);
	assert_int_equal(consumer_name_next(1, 0, 0, NULL, ""), CONSUMER_NAME_RETRY);
	assert_int_equal(consumer_name_next(0, 0, 0, NULL, "a 1"), CONSUMER_NAME_RETRY);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name_next),
		cmocka_unit_test(test_classify_real_replies),
		cmocka_unit_test(test_err_names),
		cmocka_unit_test(test_parks),
		cmocka_unit_test(test_unpark_next),
		cmocka_unit_test(test_err_line),
		cmocka_unit_test(test_entry_error_gives_up_at_three),
		cmocka_unit_test(test_transient_never_gives_up),
		cmocka_unit_test(test_entry_error_off_its_data_retried),
		cmocka_unit_test(test_entry_run),
		cmocka_unit_test(test_reply_to_verdict),
		cmocka_unit_test(test_room_and_read_count),
		cmocka_unit_test(test_may_read),
		cmocka_unit_test(test_next_claim),
		cmocka_unit_test(test_claim_calls),
		cmocka_unit_test(test_retry_ms),
		cmocka_unit_test(test_auth_write),
		cmocka_unit_test(test_reclaim_next),
		cmocka_unit_test(test_nogroup_key),
		cmocka_unit_test(test_tokens_let_read),
		cmocka_unit_test(test_token_parks),
		cmocka_unit_test(test_stream_ready_coming),
		cmocka_unit_test(test_check_stall),
		cmocka_unit_test(test_reply_next),
		cmocka_unit_test(test_auth_seen),
		cmocka_unit_test(test_down_warn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
