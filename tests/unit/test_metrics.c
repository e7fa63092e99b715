/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for the metrics core: listen addresses, the histograms and the
 * exposition text. (What the server answers to which request is hsrv's and
 * libmicrohttpd's: itest_metrics test_http_edges.) */
#define _DEFAULT_SOURCE
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <cmocka.h>

#include "worker/metrics.h"

static void
assert_listen_ok(const char *s, int allow_remote, int family, int loopback)
{
	struct listen_addr a;
	char err[256] = "";

	if (listen_parse(s, allow_remote, &a, err, sizeof err) != 0)
		fail_msg("%s: %s", s, err);
	assert_int_equal(a.sa.ss_family, family);
	assert_int_equal(a.is_loopback, loopback);
}

static void
assert_listen_bad(const char *s, int allow_remote, const char *want)
{
	struct listen_addr a;
	char err[256] = "";

	assert_int_equal(listen_parse(s, allow_remote, &a, err, sizeof err), -1);
	if (!strstr(err, want))
		fail_msg("%s: '%s' lacks '%s'", s, err, want);
}

static void
test_listen(void **state)
{
	(void)state;
	assert_listen_ok("127.0.0.1:9464", 0, AF_INET, 1);
	assert_listen_ok("127.3.2.1:1", 0, AF_INET, 1);
	assert_listen_ok("[::1]:9464", 0, AF_INET6, 1);
	assert_listen_ok("unix:/run/warrantd/metrics.sock", 0, AF_UNIX, 1);
	assert_listen_ok("0.0.0.0:9464", 1, AF_INET, 0);
	assert_listen_ok("[::]:9464", 1, AF_INET6, 0);
	assert_listen_ok("192.0.2.7:65535", 1, AF_INET, 0);

	assert_listen_bad("0.0.0.0:9464", 0, "allow_remote = yes");
	assert_listen_bad("[::]:9464", 0, "allow_remote = yes");
	assert_listen_bad("10.1.2.3:9464", 0, "not a loopback");
	assert_listen_bad("localhost:9464", 1, "is not IPV4:PORT");	/* no names */
	assert_listen_bad("127.0.0.1", 0, "is not");
	assert_listen_bad("127.0.0.1:0", 0, "is not");
	assert_listen_bad("127.0.0.1:65536", 0, "is not");
	assert_listen_bad("127.0.0.1:94a", 0, "is not");
	assert_listen_bad("::1:9464", 0, "is not");		/* brackets needed */
	assert_listen_bad("[127.0.0.1]:9464", 0, "is not");
	assert_listen_bad("[::1]9464", 0, "is not");
	assert_listen_bad("unix:relative.sock", 0, "absolute path");
	char longp[200];
	memset(longp, 'a', sizeof longp);
	memcpy(longp, "unix:/", 6);
	longp[sizeof longp - 1] = '\0';
	assert_listen_bad(longp, 0, "absolute path");
}

static void
test_snake_case(void **state)
{
	char out[32];
	(void)state;

	assert_int_equal(metrics_snake_case("authFailures", out, sizeof out), 0);
	assert_string_equal(out, "auth_failures");
	assert_int_equal(metrics_snake_case("done", out, sizeof out), 0);
	assert_string_equal(out, "done");
	assert_int_equal(metrics_snake_case("redisOutages", out, sizeof out), 0);
	assert_string_equal(out, "redis_outages");
	assert_int_equal(metrics_snake_case("abc", out, 4), 0);
	assert_int_equal(metrics_snake_case("abcd", out, 4), -1);
	assert_int_equal(metrics_snake_case("aB", out, 4), 0);	/* a_b */
	assert_int_equal(metrics_snake_case("aBc", out, 4), -1);
}

/* Counter i of counters.h's table gets 100 + i. */
static struct metrics_sample
sample(void)
{
	struct metrics_sample s = {.in_flight = 3, .token_state = "refreshing",
	    .token_expires_in_s = 42, .redis_up = 1, .version = "0.1.0",
	    .start_time_s = 1784800000, .cpu_s = 12.345, .rss_bytes = 9437184, .open_fds = 17,
	    .max_fds = -1};
	int i = 0;

	for (const struct counter_field *f = counter_fields; f->name; f++, i++)
		*(long long *)((char *)&s.n + f->offset) = 100 + i;
	return s;
}

static void
assert_has(const char *text, const char *line)
{
	if (!strstr(text, line))
		fail_msg("missing: %s\n--- in:\n%s", line, text);
}

static void
test_format_sample(void **state)
{
	struct metrics_sample s = sample();
	size_t len = 0;
	char *t = metrics_format(&s, NULL, &len);
	(void)state;

	assert_non_null(t);
	assert_int_equal(strlen(t), len);
	assert_int_equal(t[len - 1], '\n');
	assert_has(t, "# TYPE warrantd_done_total counter\n");
	assert_has(t, "\nwarrantd_auth_failures_total ");
	assert_has(t, "\nwarrantd_redis_outages_total ");
	assert_has(t, "# TYPE warrantd_in_flight gauge\nwarrantd_in_flight 3\n");
	assert_has(t, "warrantd_token_state{state=\"refreshing\"} 1\n");
	assert_has(t, "warrantd_token_state{state=\"valid\"} 0\n");
	assert_has(t, "warrantd_token_expires_in_seconds 42\n");
	assert_has(t, "warrantd_redis_up 1\n");
	assert_has(t, "warrantd_build_info{version=\"0.1.0\"} 1\n");
	assert_has(t, "# TYPE warrantd_call_duration_seconds histogram\n");
	assert_has(t, "# TYPE warrantd_queue_delay_seconds histogram\n");
	int i = 0;
	for (const struct counter_field *f = counter_fields; f->name; f++, i++) {
		char want[256], name[64];
		assert_int_equal(metrics_snake_case(f->name, name, sizeof name), 0);
		snprintf(want, sizeof want, "\n# TYPE warrantd_%s_total counter\n"
		    "warrantd_%s_total %d\n", name, name, 100 + i);
		assert_has(t, want);
	}
	assert_true(i >= 12);
	assert_null(strstr(t, "scope_token"));	/* no narrowed token: no family */
	free(t);

	/* issue 26 item 5: each action's own token under its scope's label */
	s.nscopes = 2;
	s.scopes[0] = (struct metrics_scope){"gates.close", "error", 0};
	s.scopes[1] = (struct metrics_scope){"a\"b", "valid", 30};
	t = metrics_format(&s, NULL, &len);
	assert_has(t, "# TYPE warrantd_scope_token_state gauge\n");
	assert_has(t, "warrantd_scope_token_state{scope=\"gates.close\",state=\"error\"} 1\n");
	assert_has(t, "warrantd_scope_token_state{scope=\"gates.close\",state=\"valid\"} 0\n");
	assert_has(t, "warrantd_scope_token_state{scope=\"a\\\"b\",state=\"valid\"} 1\n");
	assert_has(t, "warrantd_scope_token_expires_in_seconds{scope=\"a\\\"b\"} 30\n");
	assert_has(t, "warrantd_token_state{state=\"refreshing\"} 1\n");	/* the worker's own */
	free(t);
}

static void
test_format_hist(void **state)
{
	struct metrics_sample s = sample();
	struct metrics_hist *h = metrics_hist_new();
	size_t len;
	(void)state;

	assert_non_null(h);
	assert_int_equal(metrics_hist_observe(h, "gate.open", 200, 3, 50), 0);
	assert_int_equal(metrics_hist_observe(h, "gate.open", 204, 7, 700), 0);
	assert_int_equal(metrics_hist_observe(h, "gate.open", 299, 70000, -5), 0);	/* skew: 0 */
	assert_int_equal(metrics_hist_observe(h, "odd\"na\\me", 200, 10, 100000000), 0);
	/* by status class: 5xx, no answer (0), 4xx; the delay by action alone */
	assert_int_equal(metrics_hist_observe(h, "gate.open", 503, 20, 50), 0);
	assert_int_equal(metrics_hist_observe(h, "gate.open", 0, 30000, 50), 0);
	assert_int_equal(metrics_hist_observe(h, "gate.open", 404, 4, 50), 0);
	char *t = metrics_format(&s, h, &len);
	assert_non_null(t);
	assert_has(t, "warrantd_call_duration_seconds_bucket{action=\"gate.open\",status=\"2xx\",le=\"0.005\"} 1\n");
	assert_has(t, "warrantd_call_duration_seconds_bucket{action=\"gate.open\",status=\"2xx\",le=\"0.01\"} 2\n");
	assert_has(t, "warrantd_call_duration_seconds_bucket{action=\"gate.open\",status=\"2xx\",le=\"60\"} 2\n");
	assert_has(t, "warrantd_call_duration_seconds_bucket{action=\"gate.open\",status=\"2xx\",le=\"+Inf\"} 3\n");
	assert_has(t, "warrantd_call_duration_seconds_sum{action=\"gate.open\",status=\"2xx\"} 70.010\n");
	assert_has(t, "warrantd_call_duration_seconds_count{action=\"gate.open\",status=\"2xx\"} 3\n");
	assert_has(t, "warrantd_call_duration_seconds_count{action=\"gate.open\",status=\"5xx\"} 1\n");
	assert_has(t, "warrantd_call_duration_seconds_sum{action=\"gate.open\",status=\"error\"} 30.000\n");
	assert_has(t, "warrantd_call_duration_seconds_count{action=\"gate.open\",status=\"4xx\"} 1\n");
	assert_null(strstr(t, "status=\"3xx\""));	/* no call, no series */
	assert_has(t, "warrantd_queue_delay_seconds_count{action=\"gate.open\"} 6\n");
	assert_string_equal(metrics_status_class(100), "1xx");
	assert_string_equal(metrics_status_class(399), "3xx");
	assert_string_equal(metrics_status_class(599), "5xx");
	assert_string_equal(metrics_status_class(600), "error");
	assert_string_equal(metrics_status_class(99), "error");
	assert_string_equal(metrics_status_class(-1), "error");
	assert_has(t, "warrantd_queue_delay_seconds_bucket{action=\"gate.open\",le=\"0.1\"} 5\n");
	assert_has(t, "warrantd_queue_delay_seconds_bucket{action=\"gate.open\",le=\"1\"} 6\n");
	assert_has(t, "warrantd_queue_delay_seconds_sum{action=\"gate.open\"} 0.900\n");
	assert_has(t, "warrantd_queue_delay_seconds_bucket{action=\"odd\\\"na\\\\me\",le=\"86400\"} 0\n");
	assert_has(t, "warrantd_queue_delay_seconds_bucket{action=\"odd\\\"na\\\\me\",le=\"+Inf\"} 1\n");
	free(t);
	metrics_hist_free(h);
	metrics_hist_free(NULL);
}

/* issue 25: outcomes by action and dead letters by reason, for alerts
 * like "is gate.close failing" and "is bad-signature spiking". */
static void
test_outcomes(void **state)
{
	struct metrics_sample s = sample();
	struct metrics_hist *h = metrics_hist_new();
	size_t len;
	(void)state;

	assert_non_null(h);
	assert_int_equal(metrics_hist_outcome(h, "gate.open", "done", "ok"), 0);
	assert_int_equal(metrics_hist_outcome(h, "gate.open", "done", "ok"), 0);
	assert_int_equal(metrics_hist_outcome(h, "gate.close", "dead", "max-attempts"), 0);
	assert_int_equal(metrics_hist_outcome(h, "", "dead", "no-id"), 0);
	assert_int_equal(metrics_hist_outcome(h, "", "dead", "no-id"), 0);
	assert_int_equal(metrics_hist_outcome(h, "gate.open", "retrying", "http-5xx"), 0);
	char *t = metrics_format(&s, h, &len);
	assert_non_null(t);
	assert_has(t, "# TYPE warrantd_jobs_total counter\n");
	assert_has(t, "warrantd_jobs_total{action=\"gate.open\",outcome=\"done\"} 2\n");
	assert_has(t, "warrantd_jobs_total{action=\"gate.open\",outcome=\"failed\"} 0\n");
	assert_has(t, "warrantd_jobs_total{action=\"gate.close\",outcome=\"dead\"} 1\n");
	assert_has(t, "warrantd_jobs_total{action=\"\",outcome=\"dead\"} 2\n");
	assert_has(t, "warrantd_dead_letters_total{reason=\"no-id\"} 2\n");
	assert_has(t, "warrantd_dead_letters_total{reason=\"max-attempts\"} 1\n");
	/* an action with outcomes and no call has no empty histogram */
	assert_null(strstr(t, "warrantd_call_duration_seconds_count{action=\"gate.close\""));
	free(t);
	metrics_hist_free(h);
}

/* The standard process_* metrics; one that cannot be read (-1) is left out. */
/* §13: the pauses, the breakers and the limits of the gate, per action. */
static void
test_format_gate(void **state)
{
	struct metrics_sample s = sample();
	struct gate *g = gate_new();
	const char *names[] = {"gate.open", "gate.close"}, *paused[] = {"gate.close"};
	struct gate_limits lim[] = {{4, 0, 1, 1000}, {0, 0, 0, 0}};
	size_t len;
	(void)state;

	char *t = metrics_format(&s, NULL, &len);	/* no gate: the queue's pause only */
	assert_has(t, "# TYPE warrantd_queue_paused gauge\nwarrantd_queue_paused 0\n");
	assert_null(strstr(t, "warrantd_breaker_state"));
	free(t);
	assert_non_null(g);
	assert_int_equal(gate_configure(g, names, lim, 2), 0);
	assert_int_equal(gate_set_paused(g, paused, 1), 1);
	gate_take(g, "gate.open", 1000);
	gate_done(g, "gate.open", 0, GATE_CALL_FAILED, 1000);	/* opens it */
	gate_take(g, "gate.close", 1000);
	s.gate = g;
	s.now_ms = 1500;
	t = metrics_format(&s, NULL, &len);
	assert_has(t, "\nwarrantd_queue_paused 0\n");
	assert_has(t, "\nwarrantd_action_paused{action=\"gate.open\"} 0\n");
	assert_has(t, "\nwarrantd_action_paused{action=\"gate.close\"} 1\n");
	assert_has(t, "# TYPE warrantd_breaker_state gauge\n");
	assert_has(t, "\nwarrantd_breaker_state{action=\"gate.open\",state=\"open\"} 1\n");
	assert_has(t, "\nwarrantd_breaker_state{action=\"gate.open\",state=\"closed\"} 0\n");
	assert_has(t, "\nwarrantd_breaker_state{action=\"gate.close\",state=\"closed\"} 1\n");
	assert_has(t, "\nwarrantd_action_max_in_flight{action=\"gate.open\"} 4\n");
	assert_has(t, "\nwarrantd_action_max_in_flight{action=\"gate.close\"} 0\n");
	assert_has(t, "\nwarrantd_action_in_flight{action=\"gate.close\"} 1\n");
	free(t);
	s.now_ms = 2000;	/* the open interval ran out */
	t = metrics_format(&s, NULL, &len);
	assert_has(t, "\nwarrantd_breaker_state{action=\"gate.open\",state=\"half-open\"} 1\n");
	free(t);
	gate_free(g);
}

static void
test_process_metrics(void **state)
{
	struct metrics_sample s = sample();
	size_t len;
	(void)state;

	char *t = metrics_format(&s, NULL, &len);
	assert_non_null(t);
	assert_has(t, "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 12.345\n");
	assert_has(t, "\nprocess_resident_memory_bytes 9437184\n");
	assert_has(t, "\nprocess_open_fds 17\n");
	assert_has(t, "\nprocess_start_time_seconds 1784800000\n");
	assert_null(strstr(t, "process_max_fds"));
	assert_has(t, "\nwarrantd_config_reloads_total{result=\"ok\"} 0\n");
	free(t);
}

static void
test_hist_bounded(void **state)
{
	struct metrics_hist *h = metrics_hist_new();
	char name[32];
	(void)state;

	for (int i = 0; i < METRICS_ACTIONS_MAX; i++) {
		snprintf(name, sizeof name, "a%d", i);
		assert_int_equal(metrics_hist_observe(h, name, 200, 1, 1), 0);
	}
	assert_int_equal(metrics_hist_observe(h, "one.more", 200, 1, 1), -1);
	assert_int_equal(metrics_hist_observe(h, "a0", 500, 1, 1), 0);	/* known: counted */
	metrics_hist_free(h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_listen),
		cmocka_unit_test(test_outcomes),
		cmocka_unit_test(test_process_metrics),
		cmocka_unit_test(test_snake_case),
		cmocka_unit_test(test_format_sample),
		cmocka_unit_test(test_format_hist),
		cmocka_unit_test(test_format_gate),
		cmocka_unit_test(test_hist_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
