/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_callfail: an action call that gets no answer names its cause
 * (issue 38 item 5), with the real warrantd, a real redis-server and the
 * fakes. One daemon serves metrics and has an action for each cause:
 *
 *   - cf.refused: a loopback port bound but not listening -> connect-refused;
 *   - cf.dns: a host under .invalid (RFC 6761: never resolves) -> dns;
 *   - cf.tls: `openssl s_server` with a self-signed certificate -> tls-verify;
 *   - cf.slow: fake_target answering after the action's timeout -> read-timeout.
 *
 * Each test decides a record for its action and waits for the daemon's
 * `http.failed ... class=CLASS detail="..."` line (curl's message), for the
 * job's state line naming the class, and for
 * warrantd_call_failures_total{class="CLASS"} >= 1 on /metrics.
 * Waits are on conditions with a timeout, never fixed sleeps.
 */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

#define PREFIX "cf"

static struct h_stack S;
static struct h_daemon D;
static int closed_fd = -1, metrics_port;
static pid_t tls_pid;

/* A loopback port bound but not listening: a connect to it is refused. */
static int
closed_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof sa;

	closed_fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(closed_fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(closed_fd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(getsockname(closed_fd, (struct sockaddr *)&sa, &len), 0);
	return ntohs(sa.sin_port);
}

static int
port_listens(void *arg)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)*(int *)arg)};
	int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

/* openssl s_server on a free port with tests/data's self-signed certificate,
 * which no CA the daemon trusts has signed. */
static int
tls_server_up(void)
{
	static char accept_arg[32];
	char log[512];
	int port = h_free_port();

	assert_true(port > 0);
	snprintf(accept_arg, sizeof accept_arg, "127.0.0.1:%d", port);
	snprintf(log, sizeof log, "%s/s_server.log", h_tmpdir());
	char *openssl = h_which("openssl");
	if (openssl == NULL)
		h_skip("itest_callfail: no openssl(1) for the TLS target");
	char *argv[] = {openssl, (char *)"s_server", (char *)"-quiet", (char *)"-www",
	    (char *)"-accept", accept_arg, (char *)"-cert", (char *)h_data("test-rs256.crt"),
	    (char *)"-key", (char *)h_data("test-rs256.key"), NULL};
	tls_pid = h_spawn(log, argv);
	free(openssl);
	assert_true(tls_pid > 0);
	assert_int_equal(h_wait_until(port_listens, &port, H_WAIT_MS), 0);
	return port;
}

static int
group_setup(void **state)
{
	char sections[2048];

	(void)state;
	if (h_stack_start(&S) != 0)
		return -1;
	int refused = closed_port(), tls = tls_server_up();
	metrics_port = h_free_port();
	snprintf(sections, sizeof sections,
	    "[metrics]\nlisten = 127.0.0.1:%d\n"
	    "[action cf.refused]\nurl = http://127.0.0.1:%d/x\nauth = none\ntimeout_ms = 2000\n"
	    "[action cf.dns]\nurl = https://warrantd-callfail.invalid/x\nauth = none\n"
	    "timeout_ms = 2000\n"
	    "[action cf.tls]\nurl = https://127.0.0.1:%d/x\nauth = none\ntimeout_ms = 2000\n"
	    "[action cf.slow]\nurl = %s/slow/{resource}\nauth = none\ntimeout_ms = 300\n",
	    metrics_port, refused, tls, S.target.url);
	struct h_daemon_opts o = {.redis_sock = S.redis.sock, .target_url = S.target.url,
	    .prefix = PREFIX, .max_attempts = 2, .sections = sections};
	char *ini = h_daemon_ini(&o);
	int rc = ini != NULL ? h_daemon_start(&D, ini) : -1;

	free(ini);
	if (rc != 0)
		fprintf(stderr, "itest_callfail: warrantd did not start; log %s\n", D.log);
	return rc;
}

static int
group_teardown(void **state)
{
	int rc = 0;

	(void)state;
	if (D.pid > 0 && !h_daemon_stop_clean(&D))
		rc = -1;	/* an exit status or a sanitizer report: said by the harness */
	if (tls_pid > 0)
		(void)h_stop(tls_pid, SIGTERM, 5000);
	if (closed_fd >= 0)
		close(closed_fd);
	h_stack_stop(&S);
	return rc;
}

/* The value of warrantd_call_failures_total{class="cls"}, -1 when absent. */
static long long
metric_of(const char *cls)
{
	char url[64], needle[96];
	long status = 0;
	long long v = -1;

	snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", metrics_port);
	snprintf(needle, sizeof needle, "warrantd_call_failures_total{class=\"%s\"} ", cls);
	char *text = h_http("GET", url, NULL, &status);
	const char *at = text != NULL && status == 200 ? strstr(text, needle) : NULL;
	if (at != NULL)
		v = strtoll(at + strlen(needle), NULL, 10);
	free(text);
	return v;
}

struct line_wait {
	const char *id, *cls;
	char line[1024];	/* the line found */
};

/* Whether the log holds a line "event=http.failed id=ID ... class=CLS
 * detail=..." (a job's line names its traceparent after its id). */
static int
failed_line(void *arg)
{
	struct line_wait *w = arg;
	char head[128], cls[64];
	char *text = h_read_file(D.log), *save = NULL;
	int found = 0;

	snprintf(head, sizeof head, "event=http.failed id=%s ", w->id);
	snprintf(cls, sizeof cls, " class=%s detail=", w->cls);
	for (char *l = text ? strtok_r(text, "\n", &save) : NULL; l && !found;
	    l = strtok_r(NULL, "\n", &save))
		if (strstr(l, head) != NULL && strstr(l, cls) != NULL) {
			snprintf(w->line, sizeof w->line, "%s", l);
			found = 1;
		}
	free(text);
	return found;
}

/* One record for `action`; waits for its http.failed line of class cls,
 * curl's message in it containing `detail`, the job's line naming the
 * class, and the class's counter. */
static void
expect_class(const char *id, const char *action, const char *cls, const char *detail)
{
	long long now = h_now_ms();
	char needle[256];
	char *json = h_record_json(id, action, "canal/gate-1", now - 1000, now + 60000, 0, NULL);
	struct line_wait w = {.id = id, .cls = cls};

	assert_non_null(json);
	assert_int_equal(h_decide(S.c, PREFIX, id, json, 1), 0);
	free(json);
	if (h_wait_until(failed_line, &w, H_WAIT_MS) != 0)
		fail_msg("no http.failed line for %s of class %s in %s", id, cls, D.log);
	if (strstr(w.line, detail) == NULL)
		fail_msg("curl's message \"%s\" is not in: %s", detail, w.line);
	snprintf(needle, sizeof needle, "no answer from target (%s)", cls);
	if (h_daemon_wait_log(&D, needle, H_WAIT_MS) != 0)
		fail_msg("no \"%s\" in %s", needle, D.log);
	long long n = metric_of(cls);
	if (n < 1)
		fail_msg("warrantd_call_failures_total{class=\"%s\"} is %lld", cls, n);
}

static void
test_connect_refused(void **state)
{
	(void)state;
	expect_class("cf-refused", "cf.refused", "connect-refused", "onnect");
}

static void
test_dns(void **state)
{
	(void)state;
	expect_class("cf-dns", "cf.dns", "dns", "warrantd-callfail.invalid");
}

static void
test_tls_verify(void **state)
{
	(void)state;
	expect_class("cf-tls", "cf.tls", "tls-verify", "certificate");
}

static void
test_read_timeout(void **state)
{
	(void)state;
	assert_int_equal(h_fake_script(&S.target, "{\"default\": {\"status\": 200, "
	    "\"delay_ms\": 3000}}"), 0);
	expect_class("cf-slow", "cf.slow", "read-timeout", "timed out");
	/* every class is served, a zero too */
	assert_int_equal(metric_of("send"), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connect_refused),
		cmocka_unit_test(test_dns),
		cmocka_unit_test(test_tls_verify),
		cmocka_unit_test(test_read_timeout),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
