/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for tokhold (tokhold.h), the one holder of a token's life,
 * driven through a fake source on a private loop: one fetch at a time, the
 * listener called once per change and never from inside the call that
 * caused it, R9's spacing of the refreshes refusals cause, the states, a
 * refusal of an old generation ignored, a cancel at free. Waits are on
 * conditions with a deadline; nothing timed is measured.
 */
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <ev.h>

#include "auth/tokhold.h"
#include "base/wtime.h"

struct fake {
	int fetches, cancels, fail_start;
	int heard;			/* listener calls */
	char last[32];			/* the token it was given, "" for none */
	int64_t last_exp;
	int in_call;			/* 1 while the test is inside a tokhold_* call */
	int heard_inside;		/* the listener ran inside one */
};

static int
fake_fetch(void *src, int64_t *sent, char *why, size_t whylen)
{
	struct fake *f = src;

	if (f->fail_start) {
		snprintf(why, whylen, "cannot start");
		return -1;
	}
	f->fetches++;
	*sent = wtime_mono_ms();
	return 0;
}

static void
fake_cancel(void *src)
{
	((struct fake *)src)->cancels++;
}

static const struct tokhold_ops ops = {
	.fetch = fake_fetch, .cancel = fake_cancel, .source = "test", .start_fail_status = -1,
	.ev_request = "test.request", .ev_refreshed = "test.refreshed", .ev_error = "test.error",
	.ev_expired = "test.expired", .ev_refused = "test.refused", .ev_short = NULL,
};

static void
on_news(void *arg, const char *token, int64_t expires_at_ms)
{
	struct fake *f = arg;

	f->heard++;
	f->heard_inside |= f->in_call;
	snprintf(f->last, sizeof f->last, "%s", token ? token : "");
	f->last_exp = expires_at_ms;
}

struct world {
	struct ev_loop *loop;
	struct tokhold *h;
	struct fake f;
};

static int
setup(void **state)
{
	struct world *w = calloc(1, sizeof *w);
	struct tokhold_params p = {0.75, 0, 0};

	assert_non_null(w);
	w->loop = ev_loop_new(EVFLAG_AUTO);
	assert_non_null(w->loop);
	w->h = tokhold_new(w->loop, &ops, &w->f, &p);
	assert_non_null(w->h);
	tokhold_set_listener(w->h, on_news, &w->f);
	*state = w;
	return 0;
}

static int
teardown(void **state)
{
	struct world *w = *state;

	tokhold_free(w->h);
	ev_loop_destroy(w->loop);
	free(w);
	return 0;
}

static void
on_guard(struct ev_loop *loop, ev_timer *t, int revents)
{
	(void)loop, (void)t, (void)revents;
}

/* Runs the loop until *what reaches want, or 5 s pass (then fails). */
static void
run_until(struct world *w, const int *what, int want)
{
	ev_timer guard;
	int64_t end = wtime_mono_ms() + 5000;

	ev_timer_init(&guard, on_guard, 0.01, 0.01);
	ev_timer_start(w->loop, &guard);
	while (*what < want && wtime_mono_ms() < end)
		ev_run(w->loop, EVRUN_ONCE);
	ev_timer_stop(w->loop, &guard);
	assert_int_equal(*what, want);
}

/* A token arrives for the fetch in flight; the listener hears of it later. */
static void
deliver(struct world *w, const char *tok, int64_t life_ms)
{
	int before = w->f.heard;

	w->f.in_call = 1;
	tokhold_fetched(w->h, strdup(tok), life_ms);
	w->f.in_call = 0;
	assert_int_equal(w->f.heard, before);	/* not from inside the call */
	run_until(w, &w->f.heard, before + 1);
	assert_string_equal(w->f.last, tok);
}

/* One fetch at a time, the first at start only; news from the loop, once. */
static void
test_start_single_flight(void **state)
{
	struct world *w = *state;

	assert_string_equal(tokhold_state_name(w->h), "none");
	assert_int_equal(w->f.fetches, 0);	/* nothing before start */
	tokhold_start(w->h);
	tokhold_start(w->h);
	assert_int_equal(w->f.fetches, 1);
	assert_string_equal(tokhold_state_name(w->h), "refreshing");
	assert_null(tokhold_token(w->h, wtime_mono_ms(), 0));
	deliver(w, "t1", 60000);
	assert_string_equal(tokhold_state_name(w->h), "valid");
	assert_int_equal(tokhold_generation(w->h), 1);
	assert_int_equal(tokhold_refreshes(w->h), 1);
	assert_string_equal(tokhold_token(w->h, wtime_mono_ms(), 0), "t1");
	/* R6: not for an action that would outlive it */
	assert_null(tokhold_token(w->h, wtime_mono_ms(), 60000));
	assert_int_equal(w->f.heard_inside, 0);
	/* a refusal drops it and starts one fetch; a second one, while that
	 * fetch is in flight, neither doubles it nor is heard twice */
	w->f.in_call = 1;
	tokhold_refused(w->h, 1);
	tokhold_refused(w->h, 1);
	w->f.in_call = 0;
	assert_int_equal(w->f.fetches, 2);
	assert_null(tokhold_token(w->h, wtime_mono_ms(), 0));
	run_until(w, &w->f.heard, 2);
	assert_string_equal(w->f.last, "");
	assert_int_equal(w->f.heard_inside, 0);
	assert_int_equal(tokhold_expires_at_ms(w->h), 0);
}

/* R9: the refresh after a refused token that was itself fetched after a
 * refusal waits (here TOKEN_RETRY_BASE_MS after the previous request): not
 * at once. A refusal of a generation no longer held is ignored. */
static void
test_refusal_streak_spaced(void **state)
{
	struct world *w = *state;

	tokhold_start(w->h);
	deliver(w, "t1", 60000);
	tokhold_refused(w->h, 1);		/* the first: at once (min interval 0) */
	assert_int_equal(w->f.fetches, 2);
	deliver(w, "t2", 60000);
	tokhold_refused(w->h, 1);		/* an old generation: nothing */
	assert_string_equal(tokhold_token(w->h, wtime_mono_ms(), 0), "t2");
	tokhold_refused(w->h, 2);		/* t2 came after a refusal: spaced */
	assert_int_equal(w->f.fetches, 2);
	assert_string_equal(tokhold_state_name(w->h), "refreshing");
	run_until(w, &w->f.fetches, 3);		/* it does go, later */
	deliver(w, "t3", 60000);
	tokhold_accepted(w->h, 3);		/* the streak ends */
	tokhold_refused(w->h, 3);
	assert_int_equal(w->f.fetches, 4);	/* at once again */
}

/* A failed fetch: state error, its code kept while no token is held,
 * counted, retried; a fetch that cannot start is a failure too. */
static void
test_failure_retried(void **state)
{
	struct world *w = *state;
	long long failed = 0;

	tokhold_count_failures_into(w->h, &failed);
	tokhold_start(w->h);
	tokhold_failed(w->h, 400, "idp error: invalid_scope", "invalid_scope");
	assert_string_equal(tokhold_state_name(w->h), "error");
	assert_string_equal(tokhold_refused_code(w->h), "invalid_scope");
	assert_string_equal(tokhold_last_error(w->h), "idp error: invalid_scope");
	assert_int_equal(failed, 1);
	assert_int_equal(w->f.heard, 0);	/* nothing changed for the listener */
	run_until(w, &w->f.fetches, 2);		/* the retry */
	deliver(w, "t1", 60000);
	assert_null(tokhold_refused_code(w->h));
	w->f.fail_start = 1;
	tokhold_refused(w->h, 1);		/* its fetch cannot start */
	assert_int_equal(failed, 2);
	assert_string_equal(tokhold_last_error(w->h), "cannot start");
	assert_string_equal(tokhold_state_name(w->h), "error");
}

/* A token that dies is dropped and heard of; a new fetch starts. */
static void
test_expiry(void **state)
{
	struct world *w = *state;

	tokhold_start(w->h);
	tokhold_failed(w->h, 0, "timeout", NULL);	/* so no refresh is due early */
	run_until(w, &w->f.fetches, 2);
	deliver(w, "short", 50);
	run_until(w, &w->f.heard, 2);		/* it died */
	assert_string_equal(w->f.last, "");
	assert_int_equal(w->f.last_exp, 0);
	assert_true(w->f.fetches >= 3);		/* refreshed before or at its end */
}

/* A refusal while a refresh is in flight drops the token and waits for
 * that refresh: the source still sees one request. */
static void
test_refused_during_refresh(void **state)
{
	struct world *w = *state;

	tokhold_start(w->h);
	deliver(w, "t1", 4000);
	run_until(w, &w->f.fetches, 2);		/* the refresh, at 3/4 of its life */
	tokhold_refused(w->h, 1);
	assert_int_equal(w->f.fetches, 2);
	assert_null(tokhold_token(w->h, wtime_mono_ms(), 0));
	assert_string_equal(tokhold_state_name(w->h), "refreshing");
	deliver(w, "t2", 60000);
	assert_int_equal(w->f.fetches, 2);
}

/* Freed with a fetch in flight: the source is told to cancel, once. */
static void
test_free_cancels(void **state)
{
	struct world *w = *state;

	tokhold_start(w->h);
	tokhold_free(w->h);
	w->h = NULL;
	assert_int_equal(w->f.cancels, 1);
	tokhold_free(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_start_single_flight, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusal_streak_spaced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failure_retried, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expiry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_during_refresh, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_cancels, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
