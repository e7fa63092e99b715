/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for the job state machine (warrantd(7) §3.3, R1-R6, R8, R9, R12). */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "base/backoff.h"
#include "core/job.h"
#include "base/wtime.h"

#define NOW	INT64_C(1800000000000)	/* 2027-01-15T08:00:00Z */
#define WINDOW	INT64_C(600000)		/* deadline 10 min after NOW */

static struct record rec;

static struct job_policy
policy(void)
{
	struct job_policy p = {
		.retry_base_ms = 100, .retry_cap_ms = 10000, .max_attempts = 3,
		.max_deliveries = 5, .authz_enabled = 0, .token_needed = 1,
		.auth_wait_max_ms = 30000,
	};
	return p;
}

static void
reset_record(void)
{
	memset(&rec, 0, sizeof rec);
	strcpy(rec.id, "gate-14");
	rec.decided_at_ms = NOW - 1000;
	rec.expires_at_ms = NOW + WINDOW;
	rec.not_before_ms = 0;
}

static int
setup(void **state)
{
	(void)state;
	reset_record();
	return 0;
}

static struct job_event
ev_of(enum job_event_kind k)
{
	struct job_event ev;

	memset(&ev, 0, sizeof ev);
	ev.kind = k;
	ev.token_ok = 1;
	ev.retry_after_ms = -1;
	return ev;
}

static struct job_event
ev_loaded(void)
{
	struct job_event ev = ev_of(JOB_EV_LOADED);

	ev.hash_exists = 1;
	ev.stored_state = JOB_QUEUED;
	ev.record_status = RECORD_OK;
	ev.record = &rec;
	ev.deliveries = 1;
	return ev;
}

static struct job_event
ev_http(int status)
{
	struct job_event ev = ev_of(JOB_EV_HTTP);

	ev.http_status = status;
	return ev;
}

static struct job_event
ev_authz(enum job_authz a)
{
	struct job_event ev = ev_of(JOB_EV_AUTHZ);

	ev.authz = a;
	return ev;
}

static struct job_step
step(const struct job_policy *p, struct job *j, struct job_event ev, int64_t now)
{
	return job_next(p, j, &ev, now);
}

/* A fresh job loaded at NOW and calling the action (authz off). */
static struct job_step
load_running(const struct job_policy *p, struct job *j)
{
	memset(j, 0, sizeof *j);
	struct job_step s = step(p, j, ev_loaded(), NOW);
	assert_int_equal(s.next, JOB_RUNNING);
	return s;
}

#define FX_TERMINAL_NOTIFY (JOB_FX_WRITE_STATE | JOB_FX_NOTIFY | JOB_FX_ACK | JOB_FX_END)
#define FX_DEAD (JOB_FX_WRITE_STATE | JOB_FX_DEAD_LETTER | JOB_FX_NOTIFY | JOB_FX_ACK | JOB_FX_END)

/* ---- names ---- */

static void
test_state_names(void **state)
{
	(void)state;
	static const char *const names[] = {"", "queued", "running", "retrying", "auth_wait",
	    "done", "expired", "denied", "failed", "dead", "cancelled"};
	for (int i = JOB_NONE; i <= JOB_CANCELLED; i++) {
		enum job_state st;
		assert_string_equal(job_state_name((enum job_state)i), names[i]);
		assert_int_equal(job_state_parse(names[i], &st), 0);
		assert_int_equal(st, i);
		assert_int_equal(job_state_terminal((enum job_state)i), i >= JOB_DONE);
	}
	enum job_state st = JOB_RUNNING;
	assert_int_equal(job_state_parse("Running", &st), -1);
	assert_int_equal(job_state_parse("auth-wait", &st), -1);
	assert_int_equal(job_state_parse(NULL, &st), -1);
	assert_int_equal(st, JOB_RUNNING);
	assert_string_equal(job_state_name((enum job_state)99), "");
	assert_int_equal(job_state_terminal((enum job_state)99), 0);
}

/* The list the Lua transition gets: the terminal states of the table. */
static void
test_terminal_list(void **state)
{
	char buf[64], small[8];

	(void)state;
	assert_int_equal(job_terminal_list(buf, sizeof buf), 0);
	assert_string_equal(buf, "done expired denied failed dead cancelled");
	assert_int_equal(job_terminal_list(small, sizeof small), -1);
}

/* ---- LOADED ---- */

static void
test_loaded_no_hash(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j = {0};
	struct job_event ev = ev_loaded();
	ev.hash_exists = 0;
	ev.stored_state = JOB_NONE;
	ev.record_status = RECORD_INVALID;
	ev.record = NULL;
	struct job_step s = step(&p, &j, ev, NOW);
	assert_int_equal(s.effects, JOB_FX_DEAD_LETTER | JOB_FX_ACK | JOB_FX_END);
	assert_int_equal(s.next, JOB_NONE);
	assert_int_equal(s.reason, REASON_RECORD_MISSING);
	assert_string_equal(reason_name(s.reason), "record-missing");
	assert_true(s.detail[0] != '\0');
}

/* R4: terminal -> ack only, whatever else is wrong (even past the deadline). */
static void
test_loaded_terminal_acked_only(void **state)
{
	(void)state;
	struct job_policy p = policy();
	for (int st = JOB_DONE; st <= JOB_CANCELLED; st++) {
		for (int variant = 0; variant < 4; variant++) {
			struct job j = {0};
			struct job_event ev = ev_loaded();
			int64_t now = NOW;
			ev.stored_state = (enum job_state)st;
			if (variant == 1)
				now = rec.expires_at_ms + 1000;	/* expired too */
			if (variant == 2) {
				ev.record_status = RECORD_BAD_SIGNATURE;
				ev.record = NULL;
			}
			if (variant == 3)
				ev.deliveries = p.max_deliveries + 10;
			struct job_step s = step(&p, &j, ev, now);
			assert_int_equal(s.effects, JOB_FX_ACK | JOB_FX_END);
			assert_int_equal(s.next, st);
			assert_int_equal(j.state, st);
			assert_int_equal(j.calls, 0);
		}
	}
}

static void
test_loaded_record_status_dead(void **state)
{
	(void)state;
	static const struct {
		enum record_status st;
		const char *code;
	} cases[] = {
		{RECORD_BAD_SIGNATURE, "bad-signature"},
		{RECORD_INVALID, "record-invalid"},
		{RECORD_UNKNOWN_ACTION, "unknown-action"},
	};
	struct job_policy p = policy();
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct job j = {0};
		struct job_event ev = ev_loaded();
		ev.record_status = cases[i].st;
		ev.record = NULL;
		struct job_step s = step(&p, &j, ev, NOW);
		assert_int_equal(s.next, JOB_DEAD);
		assert_int_equal(s.effects, FX_DEAD);
		assert_string_equal(reason_name(s.reason), cases[i].code);
		assert_string_equal(reason_name(s.reason), record_status_code(cases[i].st));
		assert_int_equal(j.calls, 0);
	}
}

/* R12: more than max_deliveries -> dead; exactly max is still processed. */
static void
test_loaded_deliveries(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j = {0};
	struct job_event ev = ev_loaded();

	ev.deliveries = p.max_deliveries;
	struct job_step s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_RUNNING);
	assert_true(s.effects & JOB_FX_CALL);

	memset(&j, 0, sizeof j);
	ev.deliveries = p.max_deliveries + 1;
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_DEAD);
	assert_int_equal(s.effects, FX_DEAD);
	assert_string_equal(reason_name(s.reason), "too-many-deliveries");
	assert_int_equal(j.calls, 0);
}

/* R2/§5: a future notBefore goes back on P:scheduled. */
static void
test_loaded_not_before(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j = {0};

	rec.not_before_ms = NOW + 1;
	struct job_step s = step(&p, &j, ev_loaded(), NOW);
	assert_int_equal(s.next, JOB_QUEUED);
	assert_int_equal(s.effects, JOB_FX_WRITE_STATE | JOB_FX_RESCHEDULE | JOB_FX_END);
	assert_int_equal(s.at_ms, NOW + 1);
	assert_int_equal(j.calls, 0);

	/* due now, or in the past: runs */
	rec.not_before_ms = NOW;
	memset(&j, 0, sizeof j);
	s = step(&p, &j, ev_loaded(), NOW);
	assert_int_equal(s.next, JOB_RUNNING);
	assert_true(s.effects & JOB_FX_CALL);
	rec.not_before_ms = NOW - 5000;
	memset(&j, 0, sizeof j);
	s = step(&p, &j, ev_loaded(), NOW);
	assert_int_equal(s.next, JOB_RUNNING);
}

/* R1 at the first attempt: exactly at expiresAt is expired; 1 ms before is not. */
static void
test_deadline_first_attempt(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j = {0};
	char dl[WTIME_RFC3339_LEN];

	struct job_step s = step(&p, &j, ev_loaded(), rec.expires_at_ms);
	assert_int_equal(s.next, JOB_EXPIRED);
	assert_int_equal(s.effects, FX_TERMINAL_NOTIFY);
	assert_string_equal(reason_name(s.reason), "deadline-passed");
	assert_int_equal(j.calls, 0);
	assert_non_null(strstr(s.detail, wtime_format_rfc3339(rec.expires_at_ms, dl, sizeof dl)));

	memset(&j, 0, sizeof j);
	s = step(&p, &j, ev_loaded(), rec.expires_at_ms - 1);
	assert_int_equal(s.next, JOB_RUNNING);
	assert_int_equal(s.effects, JOB_FX_START_ATTEMPT | JOB_FX_WRITE_STATE | JOB_FX_CALL);
	assert_int_equal(j.calls, 1);
	assert_int_equal(j.expires_at_ms, rec.expires_at_ms);
}

/* R6: no token -> auth_wait without calling; token ready -> the attempt. */
static void
test_token_missing_waits(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j = {0};
	struct job_event ev = ev_loaded();

	ev.token_ok = 0;
	struct job_step s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_AUTH_WAIT);
	assert_int_equal(s.effects, JOB_FX_WRITE_STATE | JOB_FX_WAIT_TOKEN);
	assert_int_equal(j.calls, 0);
	assert_int_equal(j.redispatch, 0);

	s = step(&p, &j, ev_of(JOB_EV_TOKEN_READY), NOW + 10);
	assert_int_equal(s.next, JOB_RUNNING);
	assert_int_equal(s.effects, JOB_FX_START_ATTEMPT | JOB_FX_WRITE_STATE | JOB_FX_CALL);
	assert_int_equal(j.calls, 1);

	/* a token that comes after the deadline: R1 first */
	memset(&j, 0, sizeof j);
	s = step(&p, &j, ev, NOW);
	s = step(&p, &j, ev_of(JOB_EV_TOKEN_READY), rec.expires_at_ms);
	assert_int_equal(s.next, JOB_EXPIRED);
	assert_int_equal(j.calls, 0);

	/* an action without OAuth does not wait */
	p.token_needed = 0;
	memset(&j, 0, sizeof j);
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_RUNNING);
	assert_true(s.effects & JOB_FX_CALL);
}

/* R9: no token within auth_wait_max_ms (the deadline later) -> the entry is
 * handed back: nothing written, the state kept; once the script has added
 * the new entry and acked ours, it leaves the hand. */
static void
test_token_wait_hands_back(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j = {0};
	struct job_event ev = ev_loaded();

	ev.token_ok = 0;
	struct job_step s = step(&p, &j, ev, NOW);
	assert_int_equal(s.effects, JOB_FX_WRITE_STATE | JOB_FX_WAIT_TOKEN);
	assert_int_equal(s.at_ms, NOW + 30000);	/* the deadline is later */

	/* a timer that fires early (the loop's clock is not the wall's) is
	 * armed again for the same end */
	s = step(&p, &j, ev_of(JOB_EV_TOKEN_TIMEOUT), NOW + 29999);
	assert_int_equal(s.effects, JOB_FX_WAIT_TOKEN);
	assert_int_equal(s.at_ms, NOW + 30000);
	assert_int_equal(j.state, JOB_AUTH_WAIT);

	s = step(&p, &j, ev_of(JOB_EV_TOKEN_TIMEOUT), NOW + 30000);
	assert_int_equal(s.effects, JOB_FX_HANDBACK);
	assert_int_equal(s.next, JOB_AUTH_WAIT);
	assert_string_equal(s.detail, "no token within 30000 ms; handing the entry back");
	/* while the script runs, a token or another timeout changes nothing */
	assert_int_equal(step(&p, &j, ev_of(JOB_EV_TOKEN_READY), NOW + 30001).effects, 0);
	assert_int_equal(step(&p, &j, ev_of(JOB_EV_TOKEN_TIMEOUT), NOW + 30001).effects, 0);
	assert_int_equal(step(&p, &j, ev_of(JOB_EV_REDISPATCHED), NOW + 30001).effects, 0);
	s = step(&p, &j, ev_of(JOB_EV_HANDED_BACK), NOW + 30002);
	assert_int_equal(s.effects, JOB_FX_END);
	assert_int_equal(j.calls, 0);
	/* no longer ours by then: let go like any lost lease */
	memset(&j, 0, sizeof j);
	(void)step(&p, &j, ev, NOW);
	(void)step(&p, &j, ev_of(JOB_EV_TOKEN_TIMEOUT), NOW + 30000);
	assert_int_equal(step(&p, &j, ev_of(JOB_EV_LEASE_LOST), NOW + 30001).effects,
	    JOB_FX_RELEASE);
	/* a hand-back nobody asked for */
	memset(&j, 0, sizeof j);
	(void)step(&p, &j, ev, NOW);
	assert_int_equal(step(&p, &j, ev_of(JOB_EV_HANDED_BACK), NOW).effects, 0);

	/* the wait goes on from where it began: a token gone again (a call that
	 * could not start) does not start a new auth_wait_max_ms */
	memset(&j, 0, sizeof j);
	(void)step(&p, &j, ev, NOW);
	s = step(&p, &j, ev_of(JOB_EV_TOKEN_READY), NOW + 1000);
	assert_int_equal(s.next, JOB_RUNNING);
	struct job_event gone = ev_of(JOB_EV_CANNOT_CALL);
	gone.no_call = JOB_NOCALL_TOKEN_GONE;
	s = step(&p, &j, gone, NOW + 2000);
	assert_int_equal(s.at_ms, NOW + 2000 + 30000);	/* left auth_wait: a new wait */
	/* re-dispatched with the token gone again: still the 401's wait */
	load_running(&p, &j);
	(void)step(&p, &j, ev_http(401), NOW + 100);
	(void)step(&p, &j, ev_of(JOB_EV_TOKEN_READY), NOW + 5000);
	ev = ev_of(JOB_EV_REDISPATCHED);
	ev.token_ok = 0;
	s = step(&p, &j, ev, NOW + 6000);
	assert_int_equal(s.next, JOB_AUTH_WAIT);
	assert_int_equal(s.at_ms, NOW + 100 + 30000);
}

/* R1, R9: a wait for a token ends at the deadline when that comes first:
 * expired, notified and acked, never handed back or released. */
static void
test_token_wait_ends_at_deadline(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j = {0};
	struct job_event ev = ev_loaded();
	char dl[WTIME_RFC3339_LEN];

	rec.expires_at_ms = NOW + 10000;
	ev.token_ok = 0;
	struct job_step s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_AUTH_WAIT);
	assert_int_equal(s.at_ms, NOW + 10000);
	s = step(&p, &j, ev_of(JOB_EV_TOKEN_TIMEOUT), NOW + 10000);
	assert_int_equal(s.next, JOB_EXPIRED);
	assert_int_equal(s.effects, FX_TERMINAL_NOTIFY);
	assert_string_equal(reason_name(s.reason), "deadline-passed");
	assert_non_null(strstr(s.detail, wtime_format_rfc3339(rec.expires_at_ms, dl, sizeof dl)));

	/* the same after a 401: the re-dispatch's wait ends at the deadline */
	load_running(&p, &j);
	s = step(&p, &j, ev_http(401), NOW + 100);
	assert_int_equal(s.next, JOB_AUTH_WAIT);
	assert_int_equal(s.at_ms, NOW + 10000);
	s = step(&p, &j, ev_of(JOB_EV_TOKEN_TIMEOUT), NOW + 10001);
	assert_int_equal(s.next, JOB_EXPIRED);
	assert_int_equal(s.effects, FX_TERMINAL_NOTIFY);
	assert_int_equal(j.calls, 1);

	/* a 401 at or past the deadline starts no wait: expired, and the
	 * token is refused all the same */
	load_running(&p, &j);
	s = step(&p, &j, ev_http(401), NOW + 10000);
	assert_int_equal(s.next, JOB_EXPIRED);
	assert_int_equal(s.effects, FX_TERMINAL_NOTIFY | JOB_FX_DROP_TOKEN);
	assert_int_equal(j.redispatch, 0);

	/* auth_wait_max_ms shorter than the time left: the hand-back first */
	p.auth_wait_max_ms = 4000;
	memset(&j, 0, sizeof j);
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.at_ms, NOW + 4000);
	assert_int_equal(step(&p, &j, ev_of(JOB_EV_TOKEN_TIMEOUT), NOW + 4000).effects,
	    JOB_FX_HANDBACK);
}

/* ---- the call's outcomes (R8) ---- */

static void
test_http_2xx_done(void **state)
{
	(void)state;
	struct job_policy p = policy();
	static const int ok[] = {200, 201, 204, 299};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		struct job j;
		load_running(&p, &j);
		struct job_step s = step(&p, &j, ev_http(ok[i]), NOW + 50);
		assert_int_equal(s.next, JOB_DONE);
		assert_int_equal(s.effects, JOB_FX_WRITE_STATE | JOB_FX_ACK | JOB_FX_END);
		assert_string_equal(reason_name(s.reason), "ok");
	}
}

static void
test_http_503_503_200(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j;
	struct job_step s;
	int64_t now = NOW;

	p.max_attempts = 5;
	load_running(&p, &j);
	for (int i = 1; i <= 2; i++) {
		s = step(&p, &j, ev_http(503), now);
		assert_int_equal(s.next, JOB_RETRYING);
		assert_int_equal(s.effects, JOB_FX_WRITE_STATE | JOB_FX_RETRY_AT);
		assert_true(s.at_ms >= now);
		assert_non_null(strstr(s.detail, "503"));
		assert_int_equal(j.calls, i);
		now = s.at_ms;
		s = step(&p, &j, ev_of(JOB_EV_TIMER), now);
		assert_int_equal(s.next, JOB_RUNNING);
		assert_int_equal(s.effects, JOB_FX_START_ATTEMPT | JOB_FX_WRITE_STATE |
		    JOB_FX_CALL);
	}
	s = step(&p, &j, ev_http(200), now);
	assert_int_equal(s.next, JOB_DONE);
	assert_int_equal(j.calls, 3);
	assert_string_equal(s.detail, "200 from target after 3 call(s)");
}

/* The details every job writes (built by appends, not vsnprintf): the
 * attempt's and the 2xx's, with numbers of every width. */
static void
test_details_of_every_job(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j;

	p.max_attempts = 1234567;
	struct job_step s = load_running(&p, &j);
	assert_string_equal(s.detail, "call 1 of 1234567");
	s = step(&p, &j, ev_http(204), NOW + 1);
	assert_int_equal(s.next, JOB_DONE);
	assert_string_equal(s.detail, "204 from target after 1 call(s)");
	p.max_attempts = 0;
	s = load_running(&p, &j);
	assert_string_equal(s.detail, "call 1 of 0");
	j.calls = 10;
	s = step(&p, &j, ev_http(299), NOW + 1);
	assert_string_equal(s.detail, "299 from target after 10 call(s)");
}

static void
test_http_max_attempts_dead(void **state)
{
	(void)state;
	struct job_policy p = policy();	/* max_attempts 3 */
	struct job j;
	struct job_step s;

	load_running(&p, &j);
	for (int i = 1; i < p.max_attempts; i++) {
		s = step(&p, &j, ev_http(500), NOW);
		assert_int_equal(s.next, JOB_RETRYING);
		s = step(&p, &j, ev_of(JOB_EV_TIMER), s.at_ms);
		assert_int_equal(s.next, JOB_RUNNING);
	}
	assert_int_equal(j.calls, 3);
	s = step(&p, &j, ev_http(0), NOW);
	assert_int_equal(s.next, JOB_DEAD);
	assert_int_equal(s.effects, FX_DEAD);
	assert_string_equal(reason_name(s.reason), "max-attempts");

	/* max_attempts 1: the first failure is the last */
	p.max_attempts = 1;
	load_running(&p, &j);
	s = step(&p, &j, ev_http(429), NOW);
	assert_int_equal(s.next, JOB_DEAD);
	assert_string_equal(reason_name(s.reason), "max-attempts");
}

/* §11: warrantctl retry set attemptsBase to attempts; R8 counts the calls
 * since, and `calls` (the fence) goes on from attempts, never down. */
static void
test_attempts_base_fresh_budget(void **state)
{
	(void)state;
	struct job_policy p = policy();	/* max_attempts 3 */
	struct job j = {0};
	struct job_event ev = ev_loaded();
	ev.attempts = 3;

	/* without a base: 3 of 3 calls made, dead before any call */
	struct job_step s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_DEAD);
	assert_string_equal(reason_name(s.reason), "max-attempts");

	/* with attemptsBase 3: three more calls, fenced from 3 up */
	memset(&j, 0, sizeof j);
	ev.attempts_base = 3;
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_RUNNING);
	assert_true(s.effects & JOB_FX_CALL);
	assert_int_equal(j.calls, 4);
	assert_int_equal(s.write.fence_attempts, 3);
	assert_string_equal(s.detail, "call 1 of 3");
	for (int i = 2; i <= 3; i++) {
		job_written(&j, &s, j.calls);
		s = step(&p, &j, ev_http(503), NOW);
		assert_int_equal(s.next, JOB_RETRYING);
		s = step(&p, &j, ev_of(JOB_EV_TIMER), s.at_ms);
		assert_int_equal(s.next, JOB_RUNNING);
		assert_int_equal(s.write.fence_attempts, 3 + i - 1);
	}
	assert_int_equal(j.calls, 6);
	job_written(&j, &s, j.calls);
	s = step(&p, &j, ev_http(503), NOW);
	assert_int_equal(s.next, JOB_DEAD);
	assert_string_equal(reason_name(s.reason), "max-attempts");
	assert_non_null(strstr(s.detail, "3 of 3 calls made"));

	/* a base above attempts (a hash edited by hand) is no budget of its own */
	memset(&j, 0, sizeof j);
	ev.attempts = 1;
	ev.attempts_base = 9;
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_RUNNING);
	assert_string_equal(s.detail, "call 1 of 3");
}

/* §11 cancel: a call's answer is marked as one, so that the script keeps it
 * as lateOutcome when the record was cancelled while it was out; no other
 * step is. */
static void
test_call_result_marked(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j;
	static const int statuses[] = {200, 503, 400, 401};

	for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++) {
		struct job_step s = load_running(&p, &j);
		assert_int_equal(s.write.call_result, 0);	/* the call step itself */
		job_written(&j, &s, j.calls);
		s = step(&p, &j, ev_http(statuses[i]), NOW);
		assert_true(job_step_writes(&s));
		assert_int_equal(s.write.call_result, 1);
		if (s.next == JOB_RETRYING) {
			s = step(&p, &j, ev_of(JOB_EV_TIMER), s.at_ms);
			assert_int_equal(s.write.call_result, 0);
		}
	}
	/* the PDP's answer is not the action's */
	p.authz_enabled = 1;
	memset(&j, 0, sizeof j);
	struct job_step s = step(&p, &j, ev_loaded(), NOW);
	s = step(&p, &j, ev_authz(JOB_AUTHZ_DENY), NOW);
	assert_int_equal(s.next, JOB_DENIED);
	assert_int_equal(s.write.call_result, 0);
}

/* issue 23 item 8: a call that never left the host (EMFILE) is retried and
 * spends no attempt, however often it happens; a transport error that did
 * leave still does. */
static void
test_http_no_descriptor_spends_no_attempt(void **state)
{
	(void)state;
	struct job_policy p = policy();	/* max_attempts 3 */
	struct job j;
	struct job_step s;
	struct job_event nofd = ev_http(0);

	nofd.no_descriptor = 1;
	load_running(&p, &j);
	for (int i = 0; i < 5 * p.max_attempts; i++) {
		s = step(&p, &j, nofd, NOW);
		assert_int_equal(s.next, JOB_RETRYING);
		assert_non_null(strstr(s.detail, "not sent: no descriptor left"));
		s = step(&p, &j, ev_of(JOB_EV_TIMER), s.at_ms);
		assert_int_equal(s.next, JOB_RUNNING);
	}
	for (int i = 1; i < p.max_attempts; i++) {
		s = step(&p, &j, ev_http(0), NOW);
		assert_int_equal(s.next, JOB_RETRYING);
		s = step(&p, &j, ev_of(JOB_EV_TIMER), s.at_ms);
	}
	s = step(&p, &j, ev_http(0), NOW);
	assert_int_equal(s.next, JOB_DEAD);
	assert_string_equal(reason_name(s.reason), "max-attempts");
	/* past the deadline it expires, not sent or not */
	load_running(&p, &j);
	s = step(&p, &j, nofd, j.expires_at_ms);
	assert_int_equal(s.next, JOB_EXPIRED);
}

static void
test_http_retryable_statuses(void **state)
{
	(void)state;
	struct job_policy p = policy();
	static const int retry[] = {0, 408, 425, 429, 500, 502, 503, 504, 599};
	for (size_t i = 0; i < sizeof retry / sizeof retry[0]; i++) {
		struct job j;
		load_running(&p, &j);
		struct job_step s = step(&p, &j, ev_http(retry[i]), NOW);
		assert_int_equal(s.next, JOB_RETRYING);
		assert_int_equal(s.effects, JOB_FX_WRITE_STATE | JOB_FX_RETRY_AT);
		assert_string_equal(reason_name(s.reason), "");
	}
}

static void
test_http_permanent_failed(void **state)
{
	(void)state;
	struct job_policy p = policy();
	static const int perm[] = {400, 402, 403, 404, 405, 409, 410, 422, 499, 301, 302, 304,
	    100, 600};
	for (size_t i = 0; i < sizeof perm / sizeof perm[0]; i++) {
		struct job j;
		char num[8];
		load_running(&p, &j);
		struct job_step s = step(&p, &j, ev_http(perm[i]), NOW);
		assert_int_equal(s.next, JOB_FAILED);
		assert_int_equal(s.effects, FX_TERMINAL_NOTIFY);
		assert_string_equal(reason_name(s.reason), "http-4xx");
		snprintf(num, sizeof num, "%d", perm[i]);
		assert_non_null(strstr(s.detail, num));
	}
}

/* The computed delay: full jitter from the event's random word. */
static void
test_http_retry_uses_backoff(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j;

	load_running(&p, &j);
	struct job_event ev = ev_http(503);
	ev.rnd = 77;	/* ceiling for n=1 is 100: 77 % 101 = 77 */
	struct job_step s = step(&p, &j, ev, NOW);
	assert_int_equal(s.at_ms, NOW + 77);
	assert_int_equal(s.at_ms, NOW + backoff_ms(0, 100, 10000, 1, 77));
}

/* Retry-After wins over the computed backoff, larger or smaller. */
static void
test_http_retry_after_wins(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j;
	static const int64_t ra[] = {5000, 1, 0};
	for (size_t i = 0; i < sizeof ra / sizeof ra[0]; i++) {
		load_running(&p, &j);
		struct job_event ev = ev_http(429);
		ev.rnd = 50;	/* the backoff would be 50 ms */
		ev.retry_after_ms = ra[i];
		struct job_step s = step(&p, &j, ev, NOW);
		assert_int_equal(s.next, JOB_RETRYING);
		assert_int_equal(s.at_ms, NOW + ra[i]);
	}
	/* above the cap, it still wins */
	load_running(&p, &j);
	struct job_event ev = ev_http(503);
	ev.retry_after_ms = p.retry_cap_ms * 3;
	struct job_step s = step(&p, &j, ev, NOW);
	assert_int_equal(s.at_ms, NOW + p.retry_cap_ms * 3);
}

/* R1/R8: a retry whose timer would fire at or past the deadline expires now. */
static void
test_http_retry_past_deadline_expires(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j;
	struct job_step s;

	/* Retry-After lands exactly on the deadline */
	load_running(&p, &j);
	struct job_event ev = ev_http(503);
	ev.retry_after_ms = WINDOW;
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_EXPIRED);
	assert_int_equal(s.effects, FX_TERMINAL_NOTIFY);
	assert_string_equal(reason_name(s.reason), "deadline-passed");
	assert_non_null(strstr(s.detail, "deadline"));

	/* one ms before: still a retry */
	load_running(&p, &j);
	ev.retry_after_ms = WINDOW - 1;
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_RETRYING);
	assert_int_equal(s.at_ms, rec.expires_at_ms - 1);

	/* a huge Retry-After never wraps round into the past */
	load_running(&p, &j);
	ev.retry_after_ms = INT64_MAX;
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_EXPIRED);

	/* the computed backoff past the deadline, too */
	p.retry_base_ms = p.retry_cap_ms = WINDOW * 2;
	load_running(&p, &j);
	ev = ev_http(502);
	ev.rnd = (uint64_t)WINDOW * 2;	/* = the ceiling */
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_EXPIRED);
	assert_int_equal(s.effects, FX_TERMINAL_NOTIFY);
}

/* R1 on a retry: the timer fires at/after the deadline -> expired, no call. */
static void
test_timer_after_deadline_expires(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j;

	load_running(&p, &j);
	struct job_step s = step(&p, &j, ev_http(503), NOW);
	assert_int_equal(s.next, JOB_RETRYING);
	s = step(&p, &j, ev_of(JOB_EV_TIMER), rec.expires_at_ms);
	assert_int_equal(s.next, JOB_EXPIRED);
	assert_int_equal(s.effects, FX_TERMINAL_NOTIFY);
	assert_int_equal(j.calls, 1);
}

/* A timer that finds no token: wait for one (no call). */
static void
test_timer_without_token_waits(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j;

	load_running(&p, &j);
	(void)step(&p, &j, ev_http(503), NOW);
	struct job_event ev = ev_of(JOB_EV_TIMER);
	ev.token_ok = 0;
	struct job_step s = step(&p, &j, ev, NOW + 200);
	assert_int_equal(s.next, JOB_AUTH_WAIT);
	assert_int_equal(s.effects, JOB_FX_WRITE_STATE | JOB_FX_WAIT_TOKEN);
	assert_int_equal(j.calls, 1);
}

/* R9: 401 -> drop the token and wait; token -> re-dispatch; then R1 -> run. */
static void
test_http_401_redispatch(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j;
	struct job_step s;

	load_running(&p, &j);
	s = step(&p, &j, ev_http(401), NOW);
	assert_int_equal(s.next, JOB_AUTH_WAIT);
	assert_int_equal(s.effects, JOB_FX_WRITE_STATE | JOB_FX_DROP_TOKEN | JOB_FX_WAIT_TOKEN);
	assert_int_equal(j.redispatch, 1);
	assert_int_equal(j.calls, 1);

	s = step(&p, &j, ev_of(JOB_EV_TOKEN_READY), NOW + 100);
	assert_int_equal(s.effects, JOB_FX_REDISPATCH);
	assert_int_equal(s.next, JOB_AUTH_WAIT);
	assert_int_equal(j.calls, 1);
	assert_int_not_equal(j.redispatch, 0);

	s = step(&p, &j, ev_of(JOB_EV_REDISPATCHED), NOW + 120);
	assert_int_equal(s.next, JOB_RUNNING);
	assert_int_equal(s.effects, JOB_FX_START_ATTEMPT | JOB_FX_WRITE_STATE | JOB_FX_CALL);
	assert_int_equal(j.redispatch, 0);
	assert_int_equal(j.calls, 2);

	s = step(&p, &j, ev_http(200), NOW + 150);
	assert_int_equal(s.next, JOB_DONE);
}

static void
test_http_401_redispatch_after_deadline(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j;
	struct job_step s;

	load_running(&p, &j);
	(void)step(&p, &j, ev_http(401), NOW);
	(void)step(&p, &j, ev_of(JOB_EV_TOKEN_READY), rec.expires_at_ms - 10);
	s = step(&p, &j, ev_of(JOB_EV_REDISPATCHED), rec.expires_at_ms);
	assert_int_equal(s.next, JOB_EXPIRED);
	assert_int_equal(s.effects, FX_TERMINAL_NOTIFY);
	assert_int_equal(j.calls, 1);

	/* re-dispatched, but the token is gone again: wait, no call */
	load_running(&p, &j);
	(void)step(&p, &j, ev_http(401), NOW);
	(void)step(&p, &j, ev_of(JOB_EV_TOKEN_READY), NOW + 1);
	struct job_event ev = ev_of(JOB_EV_REDISPATCHED);
	ev.token_ok = 0;
	s = step(&p, &j, ev, NOW + 2);
	assert_int_equal(s.next, JOB_AUTH_WAIT);
	assert_true(s.effects & JOB_FX_WAIT_TOKEN);
	assert_false(s.effects & JOB_FX_CALL);
	assert_int_equal(j.calls, 1);
}

/* 403 with error="invalid_token" is R9; a plain 403 is permanent. */
static void
test_http_403(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j;

	load_running(&p, &j);
	struct job_event ev = ev_http(403);
	ev.invalid_token = 1;
	struct job_step s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_AUTH_WAIT);
	assert_true(s.effects & JOB_FX_DROP_TOKEN);
	assert_int_equal(j.redispatch, 1);

	load_running(&p, &j);
	s = step(&p, &j, ev_http(403), NOW);
	assert_int_equal(s.next, JOB_FAILED);
	assert_false(s.effects & JOB_FX_DROP_TOKEN);
}

/* R8 + R12: a target that refuses every token is bounded. Each 401 is a call
 * (the hash's attempts), each re-dispatch a delivery counted once, from the
 * count Redis reports after the XCLAIM. */
static void
test_http_401_bounded(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j;
	struct job_step s;

	p.max_attempts = 100;	/* R12 first */
	load_running(&p, &j);
	for (int d = 2; ; d++) {
		s = step(&p, &j, ev_http(401), NOW + d);
		assert_int_equal(s.next, JOB_AUTH_WAIT);
		(void)step(&p, &j, ev_of(JOB_EV_TOKEN_READY), NOW + d);
		struct job_event ev = ev_of(JOB_EV_REDISPATCHED);
		ev.deliveries = d;
		s = step(&p, &j, ev, NOW + d);
		assert_int_equal(j.deliveries, d);	/* not d + 1: counted once */
		if (d > p.max_deliveries)
			break;
		assert_int_equal(s.next, JOB_RUNNING);
		assert_true(d < 100);
	}
	assert_int_equal(s.next, JOB_DEAD);
	assert_int_equal(s.effects, FX_DEAD);
	assert_string_equal(reason_name(s.reason), "too-many-deliveries");
	assert_int_equal(j.calls, p.max_deliveries);

	/* and by max_attempts when that is lower */
	p.max_attempts = 2;
	load_running(&p, &j);
	(void)step(&p, &j, ev_http(401), NOW);
	(void)step(&p, &j, ev_of(JOB_EV_TOKEN_READY), NOW);
	struct job_event ev = ev_of(JOB_EV_REDISPATCHED);
	ev.deliveries = 2;
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_RUNNING);
	(void)step(&p, &j, ev_http(401), NOW);
	(void)step(&p, &j, ev_of(JOB_EV_TOKEN_READY), NOW);
	ev.deliveries = 3;
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_DEAD);
	assert_string_equal(reason_name(s.reason), "max-attempts");
	assert_false(s.effects & JOB_FX_CALL);
}

/* R8: max_attempts counts the hash's attempts, so calls made by a consumer
 * that crashed before writing a result count too. */
static void
test_attempts_from_hash(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j = {0};
	struct job_step s;

	struct job_event ev = ev_loaded();
	ev.attempts = p.max_attempts;
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_DEAD);
	assert_string_equal(reason_name(s.reason), "max-attempts");
	assert_false(s.effects & JOB_FX_CALL);

	memset(&j, 0, sizeof j);
	ev.attempts = p.max_attempts - 1;
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_RUNNING);
	assert_true(s.effects & JOB_FX_CALL);
	assert_int_equal(j.calls, p.max_attempts);
	s = step(&p, &j, ev_http(503), NOW);
	assert_int_equal(s.next, JOB_DEAD);
	assert_string_equal(reason_name(s.reason), "max-attempts");
}

/* R1 when the request leaves: a request's timeout is its own limit or the
 * time left before the deadline, whichever is less; nothing when none is
 * left; its own limit before a record is loaded. */
static void
test_time_left(void **state)
{
	(void)state;
	struct job j = {0};

	assert_int_equal(job_time_left(&j, 10000, NOW), 10000);
	j.expires_at_ms = NOW + 2500;
	assert_int_equal(job_time_left(&j, 10000, NOW), 2500);
	assert_int_equal(job_time_left(&j, 2000, NOW), 2000);
	assert_int_equal(job_time_left(&j, 10000, NOW + 2499), 1);
	assert_int_equal(job_time_left(&j, 10000, NOW + 2500), 0);
	assert_int_equal(job_time_left(&j, 10000, NOW + 99999), 0);
	j.expires_at_ms = INT64_MAX;
	assert_int_equal(job_time_left(&j, 10000, NOW), 10000);
}

/* §3.3: a terminal hash is kept retain past the later of its deadline
 * (plus the skew) and now; retain alone without a deadline; never 0, never
 * an overflow. */
static void
test_retain(void **state)
{
	(void)state;
	struct job j = {0};

	assert_int_equal(job_retain_ms(&j, 60000, 1000, NOW), 1000);
	j.expires_at_ms = NOW + 3600000;
	assert_int_equal(job_retain_ms(&j, 60000, 1000, NOW), 3600000 + 60000 + 1000);
	assert_int_equal(job_retain_ms(&j, 60000, 1000, NOW + 3600000), 60000 + 1000);
	assert_int_equal(job_retain_ms(&j, 60000, 1000, NOW + 3660000), 1000);
	assert_int_equal(job_retain_ms(&j, 60000, 1000, NOW + 99999999), 1000);
	assert_int_equal(job_retain_ms(&j, 0, 0, NOW + 99999999), 1);
	j.expires_at_ms = INT64_MAX;
	assert_true(job_retain_ms(&j, INT64_MAX, INT64_MAX, 0) > 0);
	j.expires_at_ms = NOW + 1000;
	assert_true(job_retain_ms(&j, INT64_MAX, INT64_MAX, NOW) > 0);
}

/* Issue 38 item 5: a call with no answer says why in the step's detail
 * (the class http gave it), retried as before; each class has a name of
 * its own, and none for "an answer came". */
static void
test_no_answer_names_class(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j;
	struct job_event ev = ev_http(0);

	load_running(&p, &j);
	ev.call_fail = CALLFAIL_CONNECT_REFUSED;
	struct job_step s = step(&p, &j, ev, NOW + 10);
	assert_int_equal(s.next, JOB_RETRYING);
	assert_non_null(strstr(s.detail, "no answer from target (connect-refused)"));
	assert_string_equal(callfail_name(CALLFAIL_NONE), "");
	assert_string_equal(callfail_name(CALLFAIL_COUNT), "");
	for (int a = CALLFAIL_NONE + 1; a < CALLFAIL_COUNT; a++) {
		assert_true(callfail_name((enum callfail)a)[0] != '\0');
		for (int b = a + 1; b < CALLFAIL_COUNT; b++)
			assert_string_not_equal(callfail_name((enum callfail)a),
			    callfail_name((enum callfail)b));
	}
}

/* R1: a call, a PDP question or an exchange cut at the deadline ends the
 * job as expired -- not retried, and not dead for its last attempt -- and
 * one that has no time left at all is not sent (JOB_NOCALL_DEADLINE). */
static void
test_call_cut_at_deadline(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j;
	struct job_step s;

	p.max_attempts = 1;
	load_running(&p, &j);
	s = step(&p, &j, ev_http(0), rec.expires_at_ms);
	assert_int_equal(s.next, JOB_EXPIRED);
	assert_int_equal(s.effects, FX_TERMINAL_NOTIFY);
	assert_string_equal(reason_name(s.reason), "deadline-passed");
	assert_non_null(strstr(s.detail, "no answer from target"));
	/* a millisecond before it, the last attempt's failure is dead as before */
	load_running(&p, &j);
	s = step(&p, &j, ev_http(0), rec.expires_at_ms - 1);
	assert_int_equal(s.next, JOB_DEAD);

	/* the PDP's question: no time left, nothing asked */
	p.authz_enabled = 1;
	memset(&j, 0, sizeof j);
	s = step(&p, &j, ev_loaded(), NOW);
	assert_int_equal(s.effects, JOB_FX_START_ATTEMPT | JOB_FX_WRITE_STATE | JOB_FX_AUTHZ);
	struct job_event ev = ev_of(JOB_EV_CANNOT_CALL);
	ev.no_call = JOB_NOCALL_DEADLINE;
	s = step(&p, &j, ev, rec.expires_at_ms);
	assert_int_equal(s.next, JOB_EXPIRED);
	assert_int_equal(s.effects, FX_TERMINAL_NOTIFY);
	/* cut at the deadline: unavailable, and no retry past it */
	memset(&j, 0, sizeof j);
	(void)step(&p, &j, ev_loaded(), NOW);
	s = step(&p, &j, ev_authz(JOB_AUTHZ_UNAVAILABLE), rec.expires_at_ms);
	assert_int_equal(s.next, JOB_EXPIRED);
}

/* R17: an error of the entry's own data that retrying gave up on is dead
 * `redis-error` with the reply as detail: a dead letter and XACK, never
 * a write of the hash (no JOB_FX_WRITE_STATE), in any state -- before the
 * load, while running, and when the write that failed was a terminal
 * one -- and once only. */
static void
test_redis_error_dead(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j = {0};
	struct job_event ev = ev_of(JOB_EV_REDIS_ERROR);
	struct job_step s;

	ev.redis_error = "WRONGTYPE Operation against a key holding the wrong kind of value";
	s = step(&p, &j, ev, NOW);	/* the load failed */
	assert_int_equal(s.next, JOB_DEAD);
	assert_int_equal(s.effects, JOB_FX_DEAD_LETTER | JOB_FX_ACK | JOB_FX_END);
	assert_string_equal(reason_name(s.reason), "redis-error");
	assert_string_equal(s.detail, ev.redis_error);
	assert_true(j.redis_broken);
	/* its own dead letter failing changes nothing more */
	assert_int_equal(step(&p, &j, ev, NOW).effects, 0);

	memset(&j, 0, sizeof j);
	load_running(&p, &j);	/* the call step failed */
	ev.redis_error = "ERR hash value is not an integer script: 7184caf6f6b2a3fc3f8081bb21aaac"
	    "7a3e0c901b, on @user_script:58.";
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_DEAD);
	assert_int_equal(s.effects, JOB_FX_DEAD_LETTER | JOB_FX_ACK | JOB_FX_END);
	assert_string_equal(s.detail, ev.redis_error);

	memset(&j, 0, sizeof j);
	load_running(&p, &j);
	s = step(&p, &j, ev_http(200), NOW);	/* done, and its write failed */
	assert_int_equal(s.next, JOB_DONE);
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_DEAD);
	assert_int_equal(s.effects & JOB_FX_WRITE_STATE, 0);
	assert_string_equal(reason_name(s.reason), "redis-error");
}

/* Decisions the shell used to make: a missing id, a deleted entry, a call
 * that cannot be sent. */
static void
test_shell_events(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j = {0};
	struct job_step s;

	s = step(&p, &j, ev_of(JOB_EV_NO_ID), NOW);
	assert_int_equal(s.next, JOB_NONE);
	assert_int_equal(s.effects, JOB_FX_DEAD_LETTER | JOB_FX_ACK | JOB_FX_END);
	assert_string_equal(reason_name(s.reason), "no-id");

	memset(&j, 0, sizeof j);
	s = step(&p, &j, ev_of(JOB_EV_ENTRY_DELETED), NOW);
	assert_int_equal(s.effects, JOB_FX_DEAD_LETTER | JOB_FX_END);
	assert_string_equal(reason_name(s.reason), "entry-deleted");
	/* a loaded entry is not "deleted" behind its back */
	load_running(&p, &j);
	assert_int_equal(step(&p, &j, ev_of(JOB_EV_ENTRY_DELETED), NOW).effects, 0);

	struct job_event ev = ev_of(JOB_EV_CANNOT_CALL);
	ev.no_call = JOB_NOCALL_ACTION_GONE;
	load_running(&p, &j);
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_DEAD);
	assert_int_equal(s.effects, FX_DEAD);
	assert_string_equal(reason_name(s.reason), "unknown-action");

	ev.no_call = JOB_NOCALL_BAD_REQUEST;
	load_running(&p, &j);
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_DEAD);
	assert_string_equal(reason_name(s.reason), "request-invalid");

	/* R1 at the last moment: the deadline passed while the call's write
	 * was on its way (a frozen Redis) */
	load_running(&p, &j);
	assert_int_equal(job_time_left(&j, 1, rec.expires_at_ms - 1), 1);
	assert_int_equal(job_time_left(&j, 1, rec.expires_at_ms), 0);
	ev.no_call = JOB_NOCALL_DEADLINE;
	s = step(&p, &j, ev, rec.expires_at_ms);
	assert_int_equal(s.next, JOB_EXPIRED);
	assert_int_equal(s.effects, FX_TERMINAL_NOTIFY);
	assert_string_equal(reason_name(s.reason), "deadline-passed");

	ev.no_call = JOB_NOCALL_TOKEN_GONE;
	load_running(&p, &j);
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_AUTH_WAIT);
	assert_int_equal(s.effects, JOB_FX_WRITE_STATE | JOB_FX_WAIT_TOKEN);
	assert_int_equal(j.redispatch, 0);
	/* not while waiting on a timer */
	(void)step(&p, &j, ev_of(JOB_EV_TOKEN_READY), NOW);
	(void)step(&p, &j, ev_http(503), NOW);
	assert_int_equal(step(&p, &j, ev, NOW).effects, 0);
}

/* Without an OAuth token there is nothing to refresh: 401 is permanent. */
static void
test_http_401_without_oauth_fails(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j;

	p.token_needed = 0;
	load_running(&p, &j);
	struct job_step s = step(&p, &j, ev_http(401), NOW);
	assert_int_equal(s.next, JOB_FAILED);
	assert_string_equal(reason_name(s.reason), "http-4xx");
	assert_int_equal(j.redispatch, 0);
}

/* ---- current authority (R5) ---- */

static void
test_authz_allow_deny(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j = {0};
	struct job_step s;

	p.authz_enabled = 1;
	s = step(&p, &j, ev_loaded(), NOW);
	assert_int_equal(s.next, JOB_RUNNING);
	assert_int_equal(s.effects, JOB_FX_START_ATTEMPT | JOB_FX_WRITE_STATE | JOB_FX_AUTHZ);
	assert_int_equal(j.calls, 0);

	/* the call's answer is not what is awaited */
	s = step(&p, &j, ev_http(200), NOW);
	assert_int_equal(s.effects, 0);
	assert_int_equal(j.state, JOB_RUNNING);

	s = step(&p, &j, ev_authz(JOB_AUTHZ_ALLOW), NOW + 5);
	assert_int_equal(s.effects, JOB_FX_CALL);
	assert_int_equal(s.next, JOB_RUNNING);
	assert_int_equal(j.calls, 1);

	/* a second PDP answer is not awaited any more */
	s = step(&p, &j, ev_authz(JOB_AUTHZ_DENY), NOW + 6);
	assert_int_equal(s.effects, 0);
	assert_int_equal(j.state, JOB_RUNNING);

	memset(&j, 0, sizeof j);
	(void)step(&p, &j, ev_loaded(), NOW);
	s = step(&p, &j, ev_authz(JOB_AUTHZ_DENY), NOW + 5);
	assert_int_equal(s.next, JOB_DENIED);
	assert_int_equal(s.effects, FX_TERMINAL_NOTIFY);
	assert_string_equal(reason_name(s.reason), "authority-denied");
	assert_int_equal(j.calls, 0);
}

static void
test_authz_allow_token_gone(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j = {0};

	p.authz_enabled = 1;
	(void)step(&p, &j, ev_loaded(), NOW);
	struct job_event ev = ev_authz(JOB_AUTHZ_ALLOW);
	ev.token_ok = 0;
	struct job_step s = step(&p, &j, ev, NOW + 5);
	assert_int_equal(s.next, JOB_AUTH_WAIT);
	assert_int_equal(s.effects, JOB_FX_WRITE_STATE | JOB_FX_WAIT_TOKEN);
	assert_int_equal(j.calls, 0);
}

/* PDP unavailable: retried with backoff from `waits`, never counted as a
 * call, and bounded by the deadline alone. */
static void
test_authz_unavailable(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j = {0};
	struct job_step s;
	int64_t now = NOW;
	int rounds = 0;

	p.authz_enabled = 1;
	p.max_attempts = 1;
	s = step(&p, &j, ev_loaded(), now);
	for (;;) {
		struct job_event ev = ev_authz(JOB_AUTHZ_UNAVAILABLE);
		ev.rnd = UINT64_MAX;
		int waits = j.waits;
		s = step(&p, &j, ev, now);
		assert_int_equal(j.waits, waits + 1);
		assert_int_equal(j.calls, 0);
		if (s.next == JOB_EXPIRED)
			break;
		assert_int_equal(s.next, JOB_RETRYING);
		/* §6: one audit entry when the wait begins, none per try */
		assert_int_equal(s.effects, (j.waits == 1 ? JOB_FX_WRITE_STATE : 0) |
		    JOB_FX_RETRY_AT);
		assert_int_equal(s.at_ms, now + backoff_ms(0, p.retry_base_ms, p.retry_cap_ms,
		    j.waits, UINT64_MAX));
		assert_true(s.at_ms < rec.expires_at_ms);
		now = s.at_ms;
		s = step(&p, &j, ev_of(JOB_EV_TIMER), now);
		assert_int_equal(s.next, JOB_RUNNING);
		assert_int_equal(s.effects, JOB_FX_AUTHZ);	/* nothing written */
		assert_true(++rounds < 1000);
	}
	assert_true(rounds > p.max_attempts);	/* more waits than calls allowed */
	assert_int_equal(s.effects, FX_TERMINAL_NOTIFY);
	assert_string_equal(reason_name(s.reason), "deadline-passed");
	assert_true(now < rec.expires_at_ms);	/* expired before the deadline came */
}

/* §6: a PDP outage writes `retrying` once; the answer that ends it writes
 * `running` (with the call) once. */
static void
test_authz_wait_ends_written(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j = {0};
	struct job_step s;

	p.authz_enabled = 1;
	(void)step(&p, &j, ev_loaded(), NOW);
	for (int i = 0; i < 3; i++) {
		(void)step(&p, &j, ev_authz(JOB_AUTHZ_UNAVAILABLE), NOW);
		(void)step(&p, &j, ev_of(JOB_EV_TIMER), NOW);
	}
	s = step(&p, &j, ev_authz(JOB_AUTHZ_ALLOW), NOW);
	assert_int_equal(s.next, JOB_RUNNING);
	assert_int_equal(s.effects, JOB_FX_WRITE_STATE | JOB_FX_CALL);
	assert_int_equal(j.waits, 0);
	/* the next retry of the call is written as usual */
	s = step(&p, &j, ev_http(503), NOW);
	assert_int_equal(s.effects, JOB_FX_WRITE_STATE | JOB_FX_RETRY_AT);
	s = step(&p, &j, ev_of(JOB_EV_TIMER), NOW + 60000);
	assert_int_equal(s.effects, JOB_FX_START_ATTEMPT | JOB_FX_WRITE_STATE | JOB_FX_AUTHZ);
}

/* ---- token exchange (RFC 8693) ---- */

static struct job_event
ev_exchanged(enum job_exchange x)
{
	struct job_event ev = ev_of(JOB_EV_EXCHANGED);

	ev.exchange = x;
	return ev;
}

/* R5 first, then the job's own token, then the call; a refusal is R9 once,
 * then failed and told (§9); an IdP that is down is waited for within the deadline, written
 * once when the wait begins and once when it ends, and never counts as a call. */
static void
test_exchange(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j = {0};
	struct job_step s;

	p.authz_enabled = 1;
	p.exchange_needed = 1;
	s = step(&p, &j, ev_loaded(), NOW);
	assert_int_equal(s.effects, JOB_FX_START_ATTEMPT | JOB_FX_WRITE_STATE | JOB_FX_AUTHZ);
	s = step(&p, &j, ev_authz(JOB_AUTHZ_ALLOW), NOW);
	assert_int_equal(s.effects, JOB_FX_EXCHANGE);
	assert_int_equal(j.calls, 0);
	/* an HTTP answer is not what it waits for */
	assert_int_equal(step(&p, &j, ev_http(200), NOW).effects, 0);
	s = step(&p, &j, ev_exchanged(JOB_XCH_OK), NOW);
	assert_int_equal(s.effects, JOB_FX_CALL);
	assert_int_equal(j.calls, 1);
	s = step(&p, &j, ev_http(200), NOW);
	assert_int_equal(s.next, JOB_DONE);

	/* §9 (issue 26): a refusal is no denial. The first refresh and
	 * re-dispatch (R9); the same refusal again: failed with the IdP's
	 * code as the reason, and told; no call */
	memset(&j, 0, sizeof j);
	p.authz_enabled = 0;
	s = step(&p, &j, ev_loaded(), NOW);
	assert_int_equal(s.effects, JOB_FX_START_ATTEMPT | JOB_FX_WRITE_STATE | JOB_FX_EXCHANGE);
	struct job_event rf = ev_exchanged(JOB_XCH_REFUSED);
	rf.idp_reason = REASON_IDP_INVALID_GRANT;
	s = step(&p, &j, rf, NOW);
	assert_int_equal(s.next, JOB_AUTH_WAIT);
	assert_int_equal(s.effects, JOB_FX_WRITE_STATE | JOB_FX_DROP_TOKEN | JOB_FX_WAIT_TOKEN);
	s = step(&p, &j, ev_of(JOB_EV_TOKEN_READY), NOW + 10);
	assert_int_equal(s.effects, JOB_FX_REDISPATCH);
	struct job_event rd = ev_of(JOB_EV_REDISPATCHED);
	rd.deliveries = 2;
	rd.token_ok = 1;
	s = step(&p, &j, rd, NOW + 20);
	assert_true(s.effects & JOB_FX_EXCHANGE);
	s = step(&p, &j, rf, NOW + 30);
	assert_int_equal(s.next, JOB_FAILED);
	assert_int_equal(s.effects, FX_TERMINAL_NOTIFY);
	assert_string_equal(reason_name(s.reason), "invalid_grant");
	assert_int_equal(j.calls, 0);

	/* invalid_client: R9 every time, never failed by itself */
	memset(&j, 0, sizeof j);
	(void)step(&p, &j, ev_loaded(), NOW);
	for (int i = 0; i < 3; i++) {
		s = step(&p, &j, ev_exchanged(JOB_XCH_REFRESH), NOW + i * 100);
		assert_int_equal(s.next, JOB_AUTH_WAIT);
		assert_true(s.effects & JOB_FX_DROP_TOKEN);
		(void)step(&p, &j, ev_of(JOB_EV_TOKEN_READY), NOW + i * 100 + 10);
		rd.deliveries = 2 + i;
		s = step(&p, &j, rd, NOW + i * 100 + 20);
		assert_true(s.effects & JOB_FX_EXCHANGE);
	}

	/* invalid_scope, invalid_authorization_details: failed at once */
	memset(&j, 0, sizeof j);
	(void)step(&p, &j, ev_loaded(), NOW);
	struct job_event fe = ev_exchanged(JOB_XCH_FAILED);
	fe.idp_reason = REASON_IDP_INVALID_AUTHORIZATION_DETAILS;
	s = step(&p, &j, fe, NOW);
	assert_int_equal(s.next, JOB_FAILED);
	assert_int_equal(s.effects, FX_TERMINAL_NOTIFY);
	assert_string_equal(reason_name(s.reason), "invalid_authorization_details");

	/* unavailable: retried, written once, then the call */
	memset(&j, 0, sizeof j);
	(void)step(&p, &j, ev_loaded(), NOW);
	int64_t now = NOW;
	for (int i = 1; i <= 3; i++) {
		s = step(&p, &j, ev_exchanged(JOB_XCH_UNAVAILABLE), now);
		assert_int_equal(s.next, JOB_RETRYING);
		assert_int_equal(s.effects, (i == 1 ? JOB_FX_WRITE_STATE : 0) | JOB_FX_RETRY_AT);
		now = s.at_ms;
		s = step(&p, &j, ev_of(JOB_EV_TIMER), now);
		assert_int_equal(s.effects, JOB_FX_EXCHANGE);
	}
	s = step(&p, &j, ev_exchanged(JOB_XCH_OK), now);
	assert_int_equal(s.effects, JOB_FX_WRITE_STATE | JOB_FX_CALL);
	assert_int_equal(j.calls, 1);

	/* and the deadline bounds the wait */
	memset(&j, 0, sizeof j);
	(void)step(&p, &j, ev_loaded(), NOW);
	struct job_event ev = ev_exchanged(JOB_XCH_UNAVAILABLE);
	ev.rnd = UINT64_MAX;
	s = step(&p, &j, ev, rec.expires_at_ms - 1);
	assert_int_equal(s.next, JOB_EXPIRED);
}

/* §9 (issue 26): no token because the IdP refused it for good
 * (invalid_scope...): failed at once with that code, not a wait; a job
 * already waiting fails at its wait's timer; a refusal that is not known
 * to be for good keeps the wait. */
static void
test_token_refused_for_good(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j = {0};
	struct job_event ev = ev_loaded();
	struct job_step s;

	ev.token_ok = 0;
	ev.token_refused = REASON_IDP_INVALID_SCOPE;
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_FAILED);
	assert_int_equal(s.effects, FX_TERMINAL_NOTIFY);
	assert_string_equal(reason_name(s.reason), "invalid_scope");

	memset(&j, 0, sizeof j);
	ev.token_refused = REASON_NONE;
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_AUTH_WAIT);
	struct job_event to = ev_of(JOB_EV_TOKEN_TIMEOUT);
	to.token_ok = 0;
	to.token_refused = REASON_IDP_INVALID_TARGET;
	s = step(&p, &j, to, NOW + 10);
	assert_int_equal(s.next, JOB_FAILED);
	assert_string_equal(reason_name(s.reason), "invalid_target");
}

/* ---- releases and nonsense ---- */

static void
test_lease_lost(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j;

	load_running(&p, &j);
	struct job_step s = step(&p, &j, ev_of(JOB_EV_LEASE_LOST), NOW);
	assert_int_equal(s.effects, JOB_FX_RELEASE);
	assert_int_equal(s.next, JOB_RUNNING);
	/* the abandoned call's answer changes nothing */
	s = step(&p, &j, ev_http(200), NOW);
	assert_int_equal(s.effects, 0);
	assert_int_equal(j.state, JOB_RUNNING);
}

static void
test_nonsense_events_ignored(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j;
	struct job_step s;

	/* HTTP while retrying */
	load_running(&p, &j);
	(void)step(&p, &j, ev_http(503), NOW);
	int calls = j.calls;
	s = step(&p, &j, ev_http(200), NOW);
	assert_int_equal(s.effects, 0);
	assert_int_equal(s.next, JOB_RETRYING);
	assert_int_equal(j.state, JOB_RETRYING);
	assert_int_equal(j.calls, calls);
	assert_true(s.detail[0] != '\0');
	/* token events while retrying, authz without authz asked */
	assert_int_equal(step(&p, &j, ev_of(JOB_EV_TOKEN_READY), NOW).effects, 0);
	assert_int_equal(step(&p, &j, ev_of(JOB_EV_TOKEN_TIMEOUT), NOW).effects, 0);
	assert_int_equal(step(&p, &j, ev_of(JOB_EV_REDISPATCHED), NOW).effects, 0);
	assert_int_equal(step(&p, &j, ev_authz(JOB_AUTHZ_DENY), NOW).effects, 0);
	assert_int_equal(step(&p, &j, ev_loaded(), NOW).effects, 0);
	assert_int_equal(j.state, JOB_RETRYING);

	/* timer while running */
	load_running(&p, &j);
	s = step(&p, &j, ev_of(JOB_EV_TIMER), NOW);
	assert_int_equal(s.effects, 0);
	assert_int_equal(j.calls, 1);

	/* re-dispatched without a re-dispatch asked */
	struct job_event ev = ev_loaded();
	ev.token_ok = 0;
	memset(&j, 0, sizeof j);
	(void)step(&p, &j, ev, NOW);
	s = step(&p, &j, ev_of(JOB_EV_REDISPATCHED), NOW);
	assert_int_equal(s.effects, 0);
	assert_int_equal(j.state, JOB_AUTH_WAIT);

	/* anything after a terminal state */
	load_running(&p, &j);
	(void)step(&p, &j, ev_http(200), NOW);
	for (int k = JOB_EV_LOADED; k <= JOB_EV_HANDED_BACK; k++) {
		struct job_event e = k == JOB_EV_LOADED ? ev_loaded() : ev_of((enum job_event_kind)k);
		s = step(&p, &j, e, NOW);
		assert_int_equal(s.effects, 0);
		assert_int_equal(s.next, JOB_DONE);
		assert_int_equal(j.state, JOB_DONE);
		assert_true(s.detail[0] != '\0');
	}
	/* an unknown event kind */
	s = step(&p, &j, ev_of((enum job_event_kind)42), NOW);
	assert_int_equal(s.effects, 0);
}

static void
test_loaded_without_record_ignored(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j = {0};
	struct job_event ev = ev_loaded();

	ev.record = NULL;
	struct job_step s = step(&p, &j, ev, NOW);
	assert_int_equal(s.effects, 0);
	assert_true(s.detail[0] != '\0');
}

/* ---- Retry-After ---- */

static void
test_retry_after(void **state)
{
	(void)state;
	int64_t now = INT64_C(1784800000000);	/* 2026-07-23T09:46:40Z */
	char date[40];

	assert_int_equal(job_retry_after_ms("120", now), 120000);
	assert_int_equal(job_retry_after_ms("0", now), 0);
	/* surrounding blanks are not part of the value: accepted */
	assert_int_equal(job_retry_after_ms(" 5", now), 5000);
	assert_int_equal(job_retry_after_ms("5\r\n", now), 5000);
	assert_int_equal(job_retry_after_ms("-1", now), -1);
	assert_int_equal(job_retry_after_ms("+5", now), -1);
	assert_int_equal(job_retry_after_ms("1.5", now), -1);
	assert_int_equal(job_retry_after_ms("5s", now), -1);
	assert_int_equal(job_retry_after_ms("5 5", now), -1);
	assert_int_equal(job_retry_after_ms("abc", now), -1);
	assert_int_equal(job_retry_after_ms("", now), -1);
	assert_int_equal(job_retry_after_ms("   ", now), -1);
	assert_int_equal(job_retry_after_ms(NULL, now), -1);
	/* capped at a day, never overflowing */
	assert_int_equal(job_retry_after_ms("86401", now), 86400000);
	assert_int_equal(job_retry_after_ms("99999999999999999999999999", now), 86400000);

	/* an IMF-fixdate 90 s ahead, and one in the past */
	int64_t at;
	assert_int_equal(wtime_parse_http_date("Thu, 23 Jul 2026 09:48:10 GMT", &at), 0);
	assert_int_equal(at - now, 90000);
	assert_int_equal(job_retry_after_ms("Thu, 23 Jul 2026 09:48:10 GMT", now), 90000);
	assert_int_equal(job_retry_after_ms(" Thu, 23 Jul 2026 09:48:10 GMT\r\n", now), 90000);
	assert_int_equal(job_retry_after_ms("Sun, 06 Nov 1994 08:49:37 GMT", now), 0);
	assert_int_equal(job_retry_after_ms("Thu, 23 Jul 2026 09:46:40 GMT", now), 0);
	assert_int_equal(job_retry_after_ms("Thu, 23 Jul 2026 09:48:10 UTC", now), -1);
	assert_int_equal(job_retry_after_ms("Thursday, 23-Jul-26 09:48:10 GMT", now), -1);
	memset(date, 'x', sizeof date - 1);
	date[sizeof date - 1] = '\0';
	assert_int_equal(job_retry_after_ms(date, now), -1);
}

/* ---- WWW-Authenticate ---- */

static void
test_www_auth(void **state)
{
	(void)state;
	static const char *const yes[] = {
		"Bearer error=\"invalid_token\"",
		"Bearer realm=\"example\", error=\"invalid_token\", "
		    "error_description=\"The access token expired\"",
		"bearer ERROR=\"invalid_token\"",
		"BEARER error=invalid_token",
		"Bearer realm=\"x\",error = \"invalid_token\"",
		"Basic realm=\"simple\", Bearer error=\"invalid_token\"",
		"Bearer error_description=\"no\", error=\"invalid_token\"",
	};
	static const char *const no[] = {
		"",
		"Bearer",
		"Bearer realm=\"example\"",
		"Bearer error=\"insufficient_scope\"",
		"Bearer error_description=\"invalid_token\"",
		"Bearer error=\"invalid_token_x\"",
		"Bearer error=invalid_token_x",
		"Bearer error=\"xinvalid_token\"",
		"Bearer xerror=\"invalid_token\"",
		"Bearer realm=\"error=\\\"invalid_token\\\"\"",
		"Bearer realm=\"error=invalid_token\"",
		"Basic error=\"invalid_token\"",
		"Bearerx error=\"invalid_token\"",
		"DPoP error=\"invalid_token\", Bearer realm=\"x\"",
		"Bearer error=\"INVALID_TOKEN\"",
		"Bearer error=",
		"Bearer abc==, error",
		"\"Bearer error=invalid_token\"",
	};
	for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
		if (!job_www_auth_invalid_token(yes[i]))
			fail_msg("expected a match: %s", yes[i]);
	for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
		if (job_www_auth_invalid_token(no[i]))
			fail_msg("expected no match: %s", no[i]);
	/* an unterminated quote still holds the whole value: accepted */
	assert_int_equal(job_www_auth_invalid_token("Bearer error=\"invalid_token"), 1);
	assert_int_equal(job_www_auth_invalid_token(NULL), 0);
}

/* ---- the write's fencing (struct job_write) ---- */

/* Each step of one attempt carries its fence: the call step increments
 * `attempts` from what it was decided on, sets no owner check the first
 * time, and the steps after it are fenced by what the call step wrote. */
static void
test_write_fencing_of_an_attempt(void **state)
{
	struct job_policy p = policy();
	struct job j;
	(void)state;

	struct job_step s = load_running(&p, &j);
	assert_true(job_step_writes(&s));
	assert_int_equal(s.write.fence_attempts, 0);
	assert_int_equal(s.write.incr_attempts, 1);
	assert_int_equal(s.write.require_owner, 0);
	assert_int_equal(s.write.ack, 0);
	assert_int_equal(s.write.keep_unpending, 0);
	assert_int_equal(s.write.skip_lease, 0);
	job_written(&j, &s, 1);
	assert_int_equal(j.owner_set, 1);

	/* 503: retrying, fenced by the call's `attempts`, no ack */
	s = step(&p, &j, ev_http(503), NOW);
	assert_int_equal(s.next, JOB_RETRYING);
	assert_int_equal(s.write.fence_attempts, 1);
	assert_int_equal(s.write.incr_attempts, 0);
	assert_int_equal(s.write.require_owner, 1);
	assert_int_equal(s.write.ack, 0);
	assert_int_equal(s.write.keep_unpending, 0);
	job_written(&j, &s, 1);

	/* the retry: a call step again, from the value the last one wrote */
	s = step(&p, &j, ev_of(JOB_EV_TIMER), s.at_ms);
	assert_true(s.effects & JOB_FX_CALL);
	assert_int_equal(s.write.fence_attempts, 1);
	assert_int_equal(s.write.incr_attempts, 1);
	assert_int_equal(s.write.require_owner, 1);
	job_written(&j, &s, 2);

	/* done: acked with the write, kept when the PEL forgot the entry */
	s = step(&p, &j, ev_http(204), NOW);
	assert_int_equal(s.next, JOB_DONE);
	assert_int_equal(s.write.fence_attempts, 2);
	assert_int_equal(s.write.ack, 1);
	assert_int_equal(s.write.keep_unpending, 1);
	assert_int_equal(s.write.require_owner, 1);
}

/* A call step whose reply is lost is decided once: the step sent again is
 * the same step, with the same fence (job_written not called in between). */
static void
test_write_fence_kept_for_a_resend(void **state)
{
	struct job_policy p = policy();
	struct job j;
	(void)state;

	struct job_step s = load_running(&p, &j);
	struct job_write first = s.write;
	/* the reply was lost: nothing written, nothing decided again */
	assert_int_equal(first.fence_attempts, 0);
	job_written(&j, &s, 1);	/* the resend answered "again", attempts 1 */
	assert_int_equal(j.fenced, 1);
	assert_int_equal(j.fence, 1);
	/* a call step whose reply did not say the attempts: no fence */
	job_written(&j, &s, -1);
	assert_int_equal(j.fenced, 0);
	s = step(&p, &j, ev_http(204), NOW);
	assert_int_equal(s.write.fence_attempts, -1);
	assert_int_equal(s.write.keep_unpending, 0);
}

/* Dead letters without a call: no fence, no owner; an entry deleted from
 * the stream is written without the lease check. */
static void
test_write_fencing_without_a_call(void **state)
{
	struct job_policy p = policy();
	struct job j = {0};
	(void)state;

	struct job_step s = step(&p, &j, ev_of(JOB_EV_NO_ID), NOW);
	assert_true(job_step_writes(&s));
	assert_int_equal(s.write.fence_attempts, -1);
	assert_int_equal(s.write.ack, 1);
	assert_int_equal(s.write.skip_lease, 0);
	assert_int_equal(s.write.keep_unpending, 0);

	memset(&j, 0, sizeof j);
	s = step(&p, &j, ev_of(JOB_EV_ENTRY_DELETED), NOW);
	assert_int_equal(s.write.skip_lease, 1);
	assert_int_equal(s.write.ack, 0);
	assert_int_equal(j.deleted, 1);

	/* a record not yet due: rescheduled, which acks */
	memset(&j, 0, sizeof j);
	struct job_event ev = ev_loaded();
	rec.not_before_ms = NOW + 5000;
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_QUEUED);
	assert_int_equal(s.write.ack, 1);
	assert_int_equal(s.write.incr_attempts, 0);

	/* a lease lost writes nothing */
	s = step(&p, &j, ev_of(JOB_EV_LEASE_LOST), NOW);
	assert_false(job_step_writes(&s));
}


/* ---- R19: WAIT after the writes a failover must not lose ---- */

/* The call step and every final write carry the WAIT; a retrying or
 * running write does not; wait_replicas 0 means none anywhere. */
static void
test_wait_replicas_steps(void **state)
{
	struct job_policy p = policy();
	struct job j;
	(void)state;

	p.wait_replicas = 2;
	struct job_step s = load_running(&p, &j);
	assert_true(s.effects & JOB_FX_CALL);
	assert_true(s.effects & JOB_FX_WAIT_REPLICAS);
	assert_int_equal(s.write.wait_replicas, 2);
	job_written(&j, &s, 1);
	s = step(&p, &j, ev_http(503), NOW);
	assert_int_equal(s.next, JOB_RETRYING);
	assert_false(s.effects & JOB_FX_WAIT_REPLICAS);
	job_written(&j, &s, 1);
	s = step(&p, &j, ev_of(JOB_EV_TIMER), s.at_ms);
	assert_true(s.effects & JOB_FX_WAIT_REPLICAS);
	job_written(&j, &s, 2);
	s = step(&p, &j, ev_http(204), NOW);
	assert_int_equal(s.next, JOB_DONE);
	assert_int_equal(s.effects, JOB_FX_WRITE_STATE | JOB_FX_ACK | JOB_FX_END |
	    JOB_FX_WAIT_REPLICAS);
	assert_int_equal(s.write.wait_replicas, 2);

	/* with the PDP: `running` goes unwaited, the call step after it waits */
	p.authz_enabled = 1;
	memset(&j, 0, sizeof j);
	s = step(&p, &j, ev_loaded(), NOW);
	assert_true(s.effects & JOB_FX_AUTHZ);
	assert_false(s.effects & JOB_FX_WAIT_REPLICAS);
	s = step(&p, &j, ev_authz(JOB_AUTHZ_ALLOW), NOW);
	assert_true(s.effects & JOB_FX_CALL);
	assert_true(s.effects & JOB_FX_WAIT_REPLICAS);
	s = step(&p, &j, ev_http(404), NOW);
	assert_int_equal(s.next, JOB_FAILED);
	assert_true(s.effects & JOB_FX_WAIT_REPLICAS);

	/* a dead letter without a hash is a final write too */
	memset(&j, 0, sizeof j);
	s = step(&p, &j, ev_of(JOB_EV_NO_ID), NOW);
	assert_true(s.effects & JOB_FX_DEAD_LETTER);
	assert_true(s.effects & JOB_FX_WAIT_REPLICAS);

	/* none asked: no WAIT */
	p.wait_replicas = 0;
	p.authz_enabled = 0;
	s = load_running(&p, &j);
	assert_false(s.effects & JOB_FX_WAIT_REPLICAS);
	assert_int_equal(job_replicated(&s, -1), JOB_REPL_GO);
	s = step(&p, &j, ev_http(200), NOW);
	assert_false(s.effects & JOB_FX_WAIT_REPLICAS);
}

/* What the WAIT's answer decides: a call only on enough replicas (a WAIT
 * without an answer is not enough); a final state notified either way. */
static void
test_replicated(void **state)
{
	struct job_policy p = policy();
	struct job j;
	(void)state;

	p.wait_replicas = 2;
	struct job_step s = load_running(&p, &j);
	assert_int_equal(job_replicated(&s, 2), JOB_REPL_GO);
	assert_int_equal(job_replicated(&s, 3), JOB_REPL_GO);
	assert_int_equal(job_replicated(&s, 1), JOB_REPL_NO_CALL);
	assert_int_equal(job_replicated(&s, 0), JOB_REPL_NO_CALL);
	assert_int_equal(job_replicated(&s, -1), JOB_REPL_NO_CALL);
	s = step(&p, &j, ev_http(200), NOW);
	assert_int_equal(job_replicated(&s, 2), JOB_REPL_GO);
	assert_int_equal(job_replicated(&s, 1), JOB_REPL_SHORT);
	assert_int_equal(job_replicated(&s, -1), JOB_REPL_SHORT);
}

/* Too few replicas had the call step: no call, the attempt spent (R13
 * counted it), a retry with backoff fenced by that step; then dead at
 * max_attempts, or expired past the deadline. */
static void
test_unreplicated_retries(void **state)
{
	struct job_policy p = policy();
	struct job j;
	(void)state;

	p.wait_replicas = 1;
	struct job_step s = load_running(&p, &j);
	job_written(&j, &s, 1);
	struct job_event ev = ev_of(JOB_EV_UNREPLICATED);
	ev.replicas = 0;
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_RETRYING);
	assert_int_equal(s.effects, JOB_FX_WRITE_STATE | JOB_FX_RETRY_AT);
	assert_int_equal(s.at_ms, NOW + backoff_ms(0, p.retry_base_ms, p.retry_cap_ms, 1, 0));
	assert_int_equal(j.calls, 1);
	assert_int_equal(s.write.fence_attempts, 1);
	assert_int_equal(s.write.incr_attempts, 0);
	assert_non_null(strstr(s.detail, "0 of 1 replica(s)"));
	/* not awaiting a call any more: a second one means nothing */
	assert_int_equal(step(&p, &j, ev, NOW).effects, 0);

	/* the last attempt: dead */
	s = step(&p, &j, ev_of(JOB_EV_TIMER), s.at_ms);
	job_written(&j, &s, 2);
	s = step(&p, &j, ev_of(JOB_EV_TIMER), NOW);	/* retrying only */
	assert_int_equal(s.effects, 0);
	ev.replicas = -1;
	s = step(&p, &j, ev, NOW);
	job_written(&j, &s, 2);
	s = step(&p, &j, ev_of(JOB_EV_TIMER), s.at_ms);
	assert_int_equal(j.calls, 3);
	job_written(&j, &s, 3);
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_DEAD);
	assert_int_equal(s.reason, REASON_MAX_ATTEMPTS);
	assert_true(s.effects & JOB_FX_WAIT_REPLICAS);

	/* past the deadline: expired */
	s = load_running(&p, &j);
	job_written(&j, &s, 1);
	s = step(&p, &j, ev, NOW + WINDOW);
	assert_int_equal(s.next, JOB_EXPIRED);
}

/* R15: who runs on at a stop. */
static void
test_runs_on_at_stop(void **state)
{
	struct job_policy p = policy();
	struct job j;
	(void)state;

	struct job_step s = load_running(&p, &j);
	/* a transition out, or a call in flight: on */
	assert_int_equal(job_runs_on_at_stop(&j, &s, JOB_DOING_WRITE), 1);
	assert_int_equal(job_runs_on_at_stop(&j, &s, JOB_DOING_CALL), 1);
	/* waiting on anything else: let go */
	assert_int_equal(job_runs_on_at_stop(&j, &s, JOB_DOING_NOTHING), 0);
	/* the call step waiting to be sent again: no call made yet, let go */
	assert_int_equal(job_runs_on_at_stop(&j, &s, JOB_DOING_WRITE_AGAIN), 0);
	job_written(&j, &s, 1);

	/* a 503's retrying write waiting on its backoff: let go */
	struct job_step r = step(&p, &j, ev_http(503), NOW);
	assert_int_equal(job_runs_on_at_stop(&j, &r, JOB_DOING_WRITE_AGAIN), 0);
	assert_int_equal(job_runs_on_at_stop(&j, &r, JOB_DOING_NOTHING), 0);

	/* the result of a call made by this hand, waiting to be written: on */
	struct job j2;
	s = load_running(&p, &j2);
	job_written(&j2, &s, 1);
	s = step(&p, &j2, ev_http(204), NOW);
	assert_int_equal(job_runs_on_at_stop(&j2, &s, JOB_DOING_WRITE_AGAIN), 1);
	/* ...but not when this hand made no call (a dead letter of a load) */
	struct job j3 = {0};
	s = step(&p, &j3, ev_of(JOB_EV_NO_ID), NOW);
	assert_int_equal(job_runs_on_at_stop(&j3, &s, JOB_DOING_WRITE_AGAIN), 0);
}

/* ---- §13: the gate (a pause, a limit, an open breaker) ---- */

static struct job_event
shut(struct job_event ev)
{
	ev.gate_shut = 1;
	return ev;
}

/* Held at the gate: no state written, no attempt counted, only the gate's
 * event (or a lost lease) moves it, and R1 still ends it. */
static void
test_gate_holds(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j;

	memset(&j, 0, sizeof j);
	struct job_step s = step(&p, &j, shut(ev_loaded()), NOW);
	assert_int_equal(s.effects, JOB_FX_GATE_WAIT);
	assert_false(job_step_writes(&s));
	assert_int_equal(s.at_ms, NOW + WINDOW);	/* the wait ends at the deadline */
	assert_int_equal(s.next, JOB_NONE);		/* no state change */
	assert_int_equal(j.calls, 0);
	/* only the gate moves it: a timer or a token is not its business */
	assert_int_equal(step(&p, &j, ev_of(JOB_EV_TIMER), NOW).effects, 0);
	assert_int_equal(step(&p, &j, ev_of(JOB_EV_TOKEN_READY), NOW).effects, 0);
	assert_int_equal(step(&p, &j, ev_loaded(), NOW).effects, 0);
	/* still shut: held again, quietly */
	s = step(&p, &j, shut(ev_of(JOB_EV_GATE)), NOW + 1000);
	assert_int_equal(s.effects, JOB_FX_GATE_WAIT);
	assert_int_equal(j.calls, 0);
	/* open: the attempt starts as it would have */
	s = step(&p, &j, ev_of(JOB_EV_GATE), NOW + 2000);
	assert_int_equal(s.next, JOB_RUNNING);
	assert_int_equal(s.effects, JOB_FX_START_ATTEMPT | JOB_FX_WRITE_STATE | JOB_FX_CALL);
	assert_int_equal(j.calls, 1);
	/* the gate's event means nothing to a job it does not hold */
	assert_int_equal(step(&p, &j, ev_of(JOB_EV_GATE), NOW + 2000).effects, 0);
}

static void
test_gate_hold_ends_at_deadline(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j;

	load_running(&p, &j);
	/* a retryable failure; its retry meets an open breaker */
	struct job_step s = step(&p, &j, ev_http(503), NOW + 10);
	assert_int_equal(s.next, JOB_RETRYING);
	s = step(&p, &j, shut(ev_of(JOB_EV_TIMER)), NOW + 5000);
	assert_int_equal(s.effects, JOB_FX_GATE_WAIT);
	assert_int_equal(s.next, JOB_RETRYING);	/* the hash keeps saying so */
	assert_int_equal(j.calls, 1);		/* no attempt spent */
	/* the deadline passes while held: expired (R1), whatever the gate says */
	s = step(&p, &j, shut(ev_of(JOB_EV_GATE)), NOW + WINDOW);
	assert_int_equal(s.next, JOB_EXPIRED);
	assert_int_equal(s.effects, FX_TERMINAL_NOTIFY);
	assert_int_equal(s.reason, REASON_DEADLINE_PASSED);
	assert_int_equal(j.calls, 1);
}

/* R6: a job held at the gate that was parked leaves the hand, nothing
 * written, its attempts and deadline as they were; parked means nothing to
 * a job the gate does not hold. */
static void
test_gate_hold_parked(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j;

	memset(&j, 0, sizeof j);
	(void)step(&p, &j, shut(ev_loaded()), NOW);
	struct job_step s = step(&p, &j, ev_of(JOB_EV_PARKED), NOW + 10);
	assert_int_equal(s.effects, JOB_FX_END);
	assert_false(job_step_writes(&s));
	assert_int_equal(s.next, JOB_NONE);
	assert_int_equal(j.calls, 0);
	assert_int_equal(j.expires_at_ms, NOW + WINDOW);
	/* not held: ignored */
	memset(&j, 0, sizeof j);
	(void)load_running(&p, &j);
	assert_int_equal(step(&p, &j, ev_of(JOB_EV_PARKED), NOW).effects, 0);
	memset(&j, 0, sizeof j);
	assert_int_equal(step(&p, &j, ev_of(JOB_EV_PARKED), NOW).effects, 0);
}

/* R6: a job waiting in auth_wait for its scope's token that was parked
 * leaves the hand, nothing written, its state, attempts and deadline as
 * they were; one whose hand-back is on its way is not parked. */
static void
test_token_wait_parked(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j = {0};
	struct job_event ev = ev_loaded();

	ev.token_ok = 0;
	struct job_step s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_AUTH_WAIT);
	s = step(&p, &j, ev_of(JOB_EV_PARKED), NOW + 10);
	assert_int_equal(s.effects, JOB_FX_END);
	assert_false(job_step_writes(&s));
	assert_int_equal(s.next, JOB_AUTH_WAIT);
	assert_int_equal(j.calls, 0);
	assert_int_equal(j.expires_at_ms, rec.expires_at_ms);
	/* the hand-back is on its way: parked means nothing then */
	memset(&j, 0, sizeof j);
	(void)step(&p, &j, ev, NOW);
	s = step(&p, &j, ev_of(JOB_EV_TOKEN_TIMEOUT), NOW + p.auth_wait_max_ms);
	assert_int_equal(s.effects & JOB_FX_HANDBACK, JOB_FX_HANDBACK);
	assert_int_equal(step(&p, &j, ev_of(JOB_EV_PARKED), NOW + p.auth_wait_max_ms).effects, 0);
}

static void
test_gate_hold_and_lease_lost(void **state)
{
	(void)state;
	struct job_policy p = policy();
	struct job j;

	memset(&j, 0, sizeof j);
	(void)step(&p, &j, shut(ev_loaded()), NOW);
	struct job_step s = step(&p, &j, ev_of(JOB_EV_LEASE_LOST), NOW);
	assert_int_equal(s.effects, JOB_FX_RELEASE);
	/* the gate checks before the token: a paused job does not go
	 * auth_wait (nothing written while held) */
	memset(&j, 0, sizeof j);
	struct job_event ev = shut(ev_loaded());
	ev.token_ok = 0;
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.effects, JOB_FX_GATE_WAIT);
	ev = ev_of(JOB_EV_GATE);
	ev.token_ok = 0;
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.next, JOB_AUTH_WAIT);
	/* R8's budget comes first: a job with no calls left is dead, not held */
	memset(&j, 0, sizeof j);
	ev = shut(ev_loaded());
	ev.attempts = p.max_attempts;
	s = step(&p, &j, ev, NOW);
	assert_int_equal(s.effects, FX_DEAD);
	assert_int_equal(job_status_retryable(503), 1);
	assert_int_equal(job_status_retryable(0), 1);
	assert_int_equal(job_status_retryable(404), 0);
	assert_int_equal(job_status_retryable(401), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_names),
		cmocka_unit_test(test_terminal_list),
		cmocka_unit_test_setup(test_loaded_no_hash, setup),
		cmocka_unit_test_setup(test_loaded_terminal_acked_only, setup),
		cmocka_unit_test_setup(test_loaded_record_status_dead, setup),
		cmocka_unit_test_setup(test_loaded_deliveries, setup),
		cmocka_unit_test_setup(test_loaded_not_before, setup),
		cmocka_unit_test_setup(test_loaded_without_record_ignored, setup),
		cmocka_unit_test_setup(test_deadline_first_attempt, setup),
		cmocka_unit_test_setup(test_token_missing_waits, setup),
		cmocka_unit_test_setup(test_token_wait_hands_back, setup),
		cmocka_unit_test_setup(test_token_wait_ends_at_deadline, setup),
		cmocka_unit_test(test_time_left),
		cmocka_unit_test(test_retain),
		cmocka_unit_test_setup(test_call_cut_at_deadline, setup),
		cmocka_unit_test_setup(test_no_answer_names_class, setup),
		cmocka_unit_test_setup(test_http_2xx_done, setup),
		cmocka_unit_test_setup(test_http_503_503_200, setup),
		cmocka_unit_test_setup(test_details_of_every_job, setup),
		cmocka_unit_test_setup(test_http_max_attempts_dead, setup),
		cmocka_unit_test_setup(test_http_no_descriptor_spends_no_attempt, setup),
		cmocka_unit_test_setup(test_attempts_base_fresh_budget, setup),
		cmocka_unit_test_setup(test_call_result_marked, setup),
		cmocka_unit_test_setup(test_http_retryable_statuses, setup),
		cmocka_unit_test_setup(test_http_permanent_failed, setup),
		cmocka_unit_test_setup(test_http_retry_uses_backoff, setup),
		cmocka_unit_test_setup(test_http_retry_after_wins, setup),
		cmocka_unit_test_setup(test_http_retry_past_deadline_expires, setup),
		cmocka_unit_test_setup(test_timer_after_deadline_expires, setup),
		cmocka_unit_test_setup(test_timer_without_token_waits, setup),
		cmocka_unit_test_setup(test_http_401_redispatch, setup),
		cmocka_unit_test_setup(test_http_401_redispatch_after_deadline, setup),
		cmocka_unit_test_setup(test_http_403, setup),
		cmocka_unit_test_setup(test_http_401_bounded, setup),
		cmocka_unit_test_setup(test_attempts_from_hash, setup),
		cmocka_unit_test_setup(test_shell_events, setup),
		cmocka_unit_test_setup(test_authz_wait_ends_written, setup),
		cmocka_unit_test_setup(test_exchange, setup),
		cmocka_unit_test_setup(test_token_refused_for_good, setup),
		cmocka_unit_test_setup(test_http_401_without_oauth_fails, setup),
		cmocka_unit_test_setup(test_authz_allow_deny, setup),
		cmocka_unit_test_setup(test_authz_allow_token_gone, setup),
		cmocka_unit_test_setup(test_authz_unavailable, setup),
		cmocka_unit_test_setup(test_lease_lost, setup),
		cmocka_unit_test_setup(test_nonsense_events_ignored, setup),
		cmocka_unit_test_setup(test_redis_error_dead, setup),
		cmocka_unit_test(test_retry_after),
		cmocka_unit_test(test_www_auth),
		cmocka_unit_test_setup(test_write_fencing_of_an_attempt, setup),
		cmocka_unit_test_setup(test_write_fence_kept_for_a_resend, setup),
		cmocka_unit_test_setup(test_write_fencing_without_a_call, setup),
		cmocka_unit_test_setup(test_runs_on_at_stop, setup),
		cmocka_unit_test_setup(test_gate_holds, setup),
		cmocka_unit_test_setup(test_gate_hold_ends_at_deadline, setup),
		cmocka_unit_test_setup(test_gate_hold_and_lease_lost, setup),
		cmocka_unit_test_setup(test_gate_hold_parked, setup),
		cmocka_unit_test_setup(test_token_wait_parked, setup),
		cmocka_unit_test_setup(test_wait_replicas_steps, setup),
		cmocka_unit_test_setup(test_replicated, setup),
		cmocka_unit_test_setup(test_unreplicated_retries, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
