/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for the gate (gate.h): pauses, max_in_flight, rate_per_s and
 * the circuit breaker of warrantd(7) §13, with `now` driven by the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "core/gate.h"

static struct gate *
gate_one(struct gate_limits lim)
{
	const char *names[] = {"gate.open", "gate.close"};
	struct gate_limits l[] = {lim, {0, 0, 0, 0}};
	struct gate *g = gate_new();

	assert_non_null(g);
	assert_int_equal(gate_configure(g, names, l, 2), 0);
	return g;
}

static void
test_no_limits(void **state)
{
	(void)state;
	struct gate *g = gate_one((struct gate_limits){0, 0, 0, 0});
	int64_t at = 0;

	for (int i = 0; i < 1000; i++) {
		assert_int_equal(gate_check(g, "gate.open", 5, &at), GATE_GO);
		assert_int_equal(gate_take(g, "gate.open", 5), 0);
	}
	assert_true(at == INT64_MAX);
	/* an action it does not know has only the pauses */
	assert_int_equal(gate_check(g, "other", 5, NULL), GATE_GO);
	assert_int_equal(gate_take(g, "other", 5), 0);
	gate_done(g, "other", 0, GATE_CALL_FAILED, 5);
	gate_free(g);
	gate_free(NULL);
}

static void
test_pause(void **state)
{
	(void)state;
	struct gate *g = gate_one((struct gate_limits){0, 0, 0, 0});
	const char *one[] = {"gate.open"}, *all[] = {"*", "gate.open"};
	char buf[64];

	assert_int_equal(gate_set_paused(g, NULL, 0), 0);
	assert_int_equal(gate_set_paused(g, one, 1), 1);
	assert_int_equal(gate_set_paused(g, one, 1), 0);	/* the same: no news */
	assert_int_equal(gate_check(g, "gate.open", 0, NULL), GATE_PAUSED);
	assert_int_equal(gate_check(g, "gate.close", 0, NULL), GATE_GO);
	assert_true(gate_paused(g, "gate.open"));
	assert_false(gate_paused(g, NULL));
	assert_int_equal(gate_set_paused(g, all, 2), 1);
	assert_int_equal(gate_check(g, "gate.close", 0, NULL), GATE_PAUSED);
	assert_int_equal(gate_check(g, "unknown", 0, NULL), GATE_PAUSED);
	assert_true(gate_paused(g, NULL));
	gate_paused_list(g, buf, sizeof buf);
	assert_string_equal(buf, "*,gate.open");
	gate_paused_list(g, buf, 6);
	assert_string_equal(buf, "*...");
	struct gate_view v;
	gate_view(g, 1, 0, &v);
	assert_string_equal(v.action, "gate.close");
	assert_true(v.paused);
	/* resume: same length, other names are news too */
	const char *other[] = {"x", "y"};
	assert_int_equal(gate_set_paused(g, other, 2), 1);
	assert_int_equal(gate_set_paused(g, NULL, 0), 1);
	assert_int_equal(gate_check(g, "gate.open", 0, NULL), GATE_GO);
	gate_paused_list(g, buf, sizeof buf);
	assert_string_equal(buf, "");
	gate_free(g);
}

static void
test_max_in_flight(void **state)
{
	(void)state;
	struct gate *g = gate_one((struct gate_limits){2, 0, 0, 0});
	int64_t at = 0;

	assert_int_equal(gate_check(g, "gate.open", 0, NULL), GATE_GO);
	gate_take(g, "gate.open", 0);
	gate_take(g, "gate.open", 0);
	assert_int_equal(gate_check(g, "gate.open", 0, &at), GATE_FULL);
	assert_true(at == INT64_MAX);	/* only a place given back opens it */
	assert_int_equal(gate_check(g, "gate.close", 0, NULL), GATE_GO);
	struct gate_view v;
	gate_view(g, 0, 0, &v);
	assert_int_equal(v.in_flight, 2);
	assert_int_equal(v.max_in_flight, 2);
	gate_done(g, "gate.open", 0, GATE_NO_CALL, 1);
	assert_int_equal(gate_check(g, "gate.open", 1, NULL), GATE_GO);
	/* a reload keeps the places taken; a new limit applies at once */
	const char *names[] = {"gate.open"};
	struct gate_limits l[] = {{1, 0, 0, 0}};
	assert_int_equal(gate_configure(g, names, l, 1), 0);
	assert_int_equal(gate_check(g, "gate.open", 1, NULL), GATE_FULL);
	gate_done(g, "gate.open", 0, GATE_CALL_OK, 1);
	gate_done(g, "gate.open", 0, GATE_CALL_OK, 1);	/* one too many: stays 0 */
	gate_view(g, 0, 0, &v);
	assert_int_equal(v.in_flight, 0);
	assert_int_equal(gate_count(g), 1);
	gate_free(g);
}

/* rate_per_s: starts spaced ceil(1e6 / rate) us apart, so no window of a
 * second holds more than rate of them. */
static void
test_rate(void **state)
{
	(void)state;
	struct gate *g = gate_one((struct gate_limits){0, 3, 0, 0});
	int64_t at = 0, now = 1000, starts[10];
	int n = 0;

	while (n < 10) {
		if (gate_check(g, "gate.open", now, &at) == GATE_GO) {
			gate_take(g, "gate.open", now);
			starts[n++] = now;
		} else {
			assert_true(at > now && at != INT64_MAX);
			now = at;	/* the shell's timer */
		}
	}
	assert_int_equal(starts[1] - starts[0], 334);
	for (int i = 3; i < 10; i++)
		assert_true(starts[i] - starts[i - 3] >= 1000);
	/* an idle bucket holds no burst: one start, then the spacing again */
	now += 10000;
	assert_int_equal(gate_check(g, "gate.open", now, NULL), GATE_GO);
	gate_take(g, "gate.open", now);
	assert_int_equal(gate_check(g, "gate.open", now + 333, NULL), GATE_RATE);
	assert_int_equal(gate_check(g, "gate.open", now + 334, NULL), GATE_GO);
	gate_free(g);
}

static void
test_breaker(void **state)
{
	(void)state;
	struct gate *g = gate_one((struct gate_limits){0, 0, 3, 1000});
	int64_t at = 0;
	struct gate_view v;

	/* a success in between resets the count */
	for (int i = 0; i < 2; i++)
		assert_int_equal(gate_take(g, "gate.open", 0), 0);
	gate_done(g, "gate.open", 0, GATE_CALL_FAILED, 0);
	gate_done(g, "gate.open", 0, GATE_CALL_OK, 0);
	/* no call at all counts for nothing */
	gate_take(g, "gate.open", 0);
	gate_done(g, "gate.open", 0, GATE_NO_CALL, 0);
	for (int i = 0; i < 2; i++) {
		gate_take(g, "gate.open", 0);
		gate_done(g, "gate.open", 0, GATE_CALL_FAILED, 0);
	}
	assert_int_equal(gate_check(g, "gate.open", 0, NULL), GATE_GO);
	/* the third in a row opens it, with a call still out */
	gate_take(g, "gate.open", 10);
	gate_take(g, "gate.open", 10);
	gate_done(g, "gate.open", 0, GATE_CALL_FAILED, 10);
	assert_int_equal(gate_check(g, "gate.open", 10, &at), GATE_OPEN);
	assert_int_equal(at, 1010);
	gate_view(g, 0, 10, &v);
	assert_int_equal(v.breaker, GATE_BROKEN);
	assert_string_equal(gate_breaker_name(v.breaker), "open");
	/* the call from before the opening: its success closes nothing */
	gate_done(g, "gate.open", 0, GATE_CALL_OK, 20);
	assert_int_equal(gate_check(g, "gate.open", 1009, NULL), GATE_OPEN);
	/* half-open: one probe, and nothing else while it is out */
	gate_view(g, 0, 1010, &v);
	assert_int_equal(v.breaker, GATE_HALF_OPEN);
	assert_int_equal(gate_check(g, "gate.open", 1010, NULL), GATE_GO);
	assert_int_equal(gate_take(g, "gate.open", 1010), 1);
	assert_int_equal(gate_check(g, "gate.open", 1010, &at), GATE_OPEN);
	assert_true(at == INT64_MAX);
	/* the probe fails: open again for a whole interval */
	gate_done(g, "gate.open", 1, GATE_CALL_FAILED, 1500);
	assert_int_equal(gate_check(g, "gate.open", 2499, &at), GATE_OPEN);
	assert_int_equal(at, 2500);
	/* a probe that made no call leaves it half-open for the next */
	assert_int_equal(gate_take(g, "gate.open", 2500), 1);
	gate_done(g, "gate.open", 1, GATE_NO_CALL, 2600);
	assert_int_equal(gate_check(g, "gate.open", 2600, NULL), GATE_GO);
	assert_int_equal(gate_take(g, "gate.open", 2600), 1);
	/* the probe succeeds: closed, calls flow */
	gate_done(g, "gate.open", 1, GATE_CALL_OK, 2700);
	gate_view(g, 0, 2700, &v);
	assert_int_equal(v.breaker, GATE_CLOSED);
	assert_int_equal(v.in_flight, 0);
	assert_int_equal(gate_take(g, "gate.open", 2700), 0);
	assert_int_equal(gate_take(g, "gate.open", 2700), 0);
	/* the other action never had a breaker */
	for (int i = 0; i < 10; i++) {
		gate_take(g, "gate.close", 0);
		gate_done(g, "gate.close", 0, GATE_CALL_FAILED, 0);
	}
	assert_int_equal(gate_check(g, "gate.close", 0, NULL), GATE_GO);
	gate_free(g);
}

/* A reload that turns the breaker off lets calls through at once. */
static void
test_breaker_off_by_reload(void **state)
{
	(void)state;
	struct gate *g = gate_one((struct gate_limits){0, 0, 1, 60000});
	const char *names[] = {"gate.open"};
	struct gate_limits off[] = {{0, 0, 0, 0}};

	gate_take(g, "gate.open", 0);
	gate_done(g, "gate.open", 0, GATE_CALL_FAILED, 0);
	assert_int_equal(gate_check(g, "gate.open", 1, NULL), GATE_OPEN);
	assert_int_equal(gate_configure(g, names, off, 1), 0);
	assert_int_equal(gate_check(g, "gate.open", 1, NULL), GATE_GO);
	/* an action removed is forgotten; its places given back do nothing */
	assert_int_equal(gate_configure(g, NULL, NULL, 0), 0);
	gate_done(g, "gate.open", 0, GATE_CALL_FAILED, 1);
	assert_int_equal(gate_count(g), 0);
	gate_free(g);
}

/* Pause before the breaker before the limits: the first reason shown. */
static void
test_order_and_names(void **state)
{
	(void)state;
	struct gate *g = gate_one((struct gate_limits){1, 1, 1, 1000});
	const char *one[] = {"gate.open"};

	gate_take(g, "gate.open", 0);
	assert_int_equal(gate_check(g, "gate.open", 0, NULL), GATE_FULL);
	gate_done(g, "gate.open", 0, GATE_CALL_FAILED, 0);
	assert_int_equal(gate_check(g, "gate.open", 0, NULL), GATE_OPEN);
	assert_int_equal(gate_set_paused(g, one, 1), 1);
	assert_int_equal(gate_check(g, "gate.open", 0, NULL), GATE_PAUSED);
	assert_string_equal(gate_verdict_name(GATE_GO), "go");
	assert_string_equal(gate_verdict_name(GATE_PAUSED), "paused");
	assert_string_equal(gate_verdict_name(GATE_OPEN), "breaker-open");
	assert_string_equal(gate_verdict_name(GATE_FULL), "full");
	assert_string_equal(gate_verdict_name(GATE_RATE), "rate");
	assert_string_equal(gate_breaker_name(GATE_CLOSED), "closed");
	assert_string_equal(gate_breaker_name(GATE_HALF_OPEN), "half-open");
	gate_free(g);
}

/* A held job looks again at the gate's own time, the deadline or after
 * GATE_POLL_MS, whichever is first. */
static void
test_hold_until(void **state)
{
	(void)state;
	struct gate *g = gate_one((struct gate_limits){0, 1, 0, 0});
	const char *one[] = {"gate.open"};
	enum gate_verdict why = GATE_GO;

	assert_int_equal(gate_hold_until(NULL, "x", 100, 50000, &why), 100 + GATE_POLL_MS);
	assert_int_equal(why, GATE_GO);
	assert_int_equal(gate_hold_until(NULL, "x", 100, 300, NULL), 300);
	assert_int_equal(gate_take(g, "gate.open", 0), 0);
	/* rate_per_s 1: the next start is due at 1000 */
	assert_int_equal(gate_hold_until(g, "gate.open", 10, 50000, &why), 1000);
	assert_int_equal(why, GATE_RATE);
	assert_int_equal(gate_hold_until(g, "gate.open", 10, 500, &why), 500);
	/* the gate's time past GATE_POLL_MS from now: the poll comes first */
	assert_int_equal(gate_hold_until(g, "gate.open", -500, 50000, &why), -500 + GATE_POLL_MS);
	/* a pause has no time of its own: the poll */
	assert_int_equal(gate_set_paused(g, one, 1), 1);
	assert_int_equal(gate_hold_until(g, "gate.open", 2000, 50000, &why), 2000 + GATE_POLL_MS);
	assert_int_equal(why, GATE_PAUSED);
	gate_free(g);
}

/* What an answer gives the place back as, and when a place is taken or
 * given back. */
static void
test_place(void **state)
{
	(void)state;
	assert_int_equal(gate_result_of(1, 1), GATE_NO_CALL);
	assert_int_equal(gate_result_of(1, 0), GATE_NO_CALL);
	assert_int_equal(gate_result_of(0, 1), GATE_CALL_FAILED);
	assert_int_equal(gate_result_of(0, 0), GATE_CALL_OK);
	assert_int_equal(gate_place_next(0, 0), GATE_PLACE_KEEP);
	assert_int_equal(gate_place_next(1, 1), GATE_PLACE_KEEP);
	assert_int_equal(gate_place_next(0, 1), GATE_PLACE_TAKE);
	assert_int_equal(gate_place_next(1, 0), GATE_PLACE_GIVE);
}

/* A held job is woken when it waits there, nothing woke it yet, and the
 * gate lets it start. */
static void
test_may_wake(void **state)
{
	(void)state;
	struct gate *g = gate_one((struct gate_limits){1, 0, 0, 0});

	assert_true(gate_may_wake(g, "gate.open", 0, 1, 0));
	assert_false(gate_may_wake(g, "gate.open", 0, 0, 0));
	assert_false(gate_may_wake(g, "gate.open", 0, 1, 1));
	assert_int_equal(gate_take(g, "gate.open", 0), 0);
	assert_false(gate_may_wake(g, "gate.open", 0, 1, 0));	/* full */
	assert_true(gate_may_wake(g, "gate.close", 0, 1, 0));
	gate_done(g, "gate.open", 0, GATE_CALL_OK, 1);
	assert_true(gate_may_wake(g, "gate.open", 1, 1, 0));
	assert_true(gate_may_wake(NULL, "gate.open", 1, 1, 0));
	gate_free(g);
}

/* R6: a pause parks what it holds beyond the share; a limit or an open
 * breaker is waited out in hand. */
static void
test_parks(void **state)
{
	(void)state;
	assert_true(gate_parks(GATE_PAUSED));
	assert_false(gate_parks(GATE_GO));
	assert_false(gate_parks(GATE_FULL));
	assert_false(gate_parks(GATE_RATE));
	assert_true(gate_parks(GATE_OPEN));
}

/* R6: parked entries stay parked while paused or while the breaker is not
 * closed, half-open included (its probe decides). */
static void
test_keeps_parked(void **state)
{
	(void)state;
	struct gate *g = gate_one((struct gate_limits){0, 0, 1, 1000});
	const char *paused[] = {"gate.open"};

	assert_false(gate_keeps_parked(g, "gate.open", 0));
	assert_int_equal(gate_set_paused(g, paused, 1), 1);
	assert_true(gate_keeps_parked(g, "gate.open", 0));
	assert_false(gate_keeps_parked(g, "gate.close", 0));
	assert_int_equal(gate_set_paused(g, NULL, 0), 1);
	assert_false(gate_keeps_parked(g, "gate.open", 0));
	/* one failure opens it: parked until the probe closes it */
	int probe = gate_take(g, "gate.open", 0);
	gate_done(g, "gate.open", probe, GATE_CALL_FAILED, 10);
	assert_true(gate_keeps_parked(g, "gate.open", 20));
	assert_true(gate_keeps_parked(g, "gate.open", 2000));	/* half-open */
	probe = gate_take(g, "gate.open", 2000);
	assert_int_equal(probe, 1);
	gate_done(g, "gate.open", probe, GATE_CALL_OK, 2010);
	assert_false(gate_keeps_parked(g, "gate.open", 2020));
	gate_free(g);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_limits),
		cmocka_unit_test(test_pause),
		cmocka_unit_test(test_max_in_flight),
		cmocka_unit_test(test_rate),
		cmocka_unit_test(test_breaker),
		cmocka_unit_test(test_breaker_off_by_reload),
		cmocka_unit_test(test_order_and_names),
		cmocka_unit_test(test_hold_until),
		cmocka_unit_test(test_place),
		cmocka_unit_test(test_may_wake),
		cmocka_unit_test(test_parks),
		cmocka_unit_test(test_keeps_parked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
