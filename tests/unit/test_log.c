/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for logfmt lines: quoting, layout, one event per line. */
#define _DEFAULT_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/log.h"

#define TS_MS	1784800000123LL	/* 2026-07-23T09:46:40.123Z */

static void
assert_quote(const char *in, const char *want)
{
	char buf[128];

	memset(buf, 'Z', sizeof buf);
	assert_ptr_equal(log_quote(buf, sizeof buf, in), buf);
	assert_string_equal(buf, want);
}

static void
test_quote_bare(void **state)
{
	(void)state;
	assert_quote("abc", "abc");
	assert_quote("gate-14", "gate-14");
	assert_quote("canal/lateral-3", "canal/lateral-3");
	assert_quote("operator:4417", "operator:4417");
	assert_quote("caf\xc3\xa9", "caf\xc3\xa9");
}

static void
test_quote_quoted(void **state)
{
	(void)state;
	assert_quote("a b", "\"a b\"");
	assert_quote("k=v", "\"k=v\"");
	assert_quote("say \"hi\"", "\"say \\\"hi\\\"\"");
	assert_quote("a\"b", "\"a\\\"b\"");
	assert_quote("a\\b", "\"a\\\\b\"");
	assert_quote("a\nb", "\"a\\nb\"");
	assert_quote("a\tb", "\"a\\tb\"");
	assert_quote("a\rb", "\"a\\x0db\"");
	assert_quote("\x01\x1f\x7f", "\"\\x01\\x1f\\x7f\"");
	assert_quote("\x1b[31mred", "\"\\x1b[31mred\"");
	assert_quote("", "\"\"");
	assert_quote(NULL, "\"\"");
	assert_quote(" ", "\" \"");
}

/* Reads a quoted log_quote result back; -1 when it is malformed. */
static int
unquote(const char *q, char *out, size_t n)
{
	size_t len = 0, ql = strlen(q);

	if (ql < 2 || q[0] != '"' || q[ql - 1] != '"')
		return -1;
	for (size_t i = 1; i + 1 < ql; i++) {
		char c = q[i];
		if (c == '\\') {
			char e = q[++i];
			if (i + 1 >= ql)
				return -1;	/* an escape cut in half */
			if (e == 'n')
				c = '\n';
			else if (e == 't')
				c = '\t';
			else if (e == '"' || e == '\\')
				c = e;
			else if (e == 'x') {
				unsigned v;
				if (i + 3 >= ql || sscanf(q + i + 1, "%2x", &v) != 1)
					return -1;
				c = (char)v;
				i += 2;
			} else
				return -1;
		} else if (c == '"' || (unsigned char)c < ' ') {
			return -1;
		}
		if (len + 1 >= n)
			return -1;
		out[len++] = c;
	}
	out[len] = '\0';
	return 0;
}

/* Truncation never writes past n, never cuts an escape, always closes. */
static void
test_quote_truncation(void **state)
{
	(void)state;
	static const char in[] = "ab \"c\"\n\x01 d\\e tail";
	char buf[64], back[64];

	for (size_t n = 0; n <= 48; n++) {
		memset(buf, 'Z', sizeof buf);
		log_quote(buf, n, in);
		for (size_t i = n; i < sizeof buf; i++)
			assert_int_equal(buf[i], 'Z');
		if (n == 0)
			continue;
		size_t len = strlen(buf);
		assert_true(len < n);
		if (n < 3) {
			assert_int_equal(len, 0);
			continue;
		}
		assert_int_equal(unquote(buf, back, sizeof back), 0);
		char *mark = strstr(back, "...(17 bytes)");
		if (mark != NULL)
			*mark = '\0';	/* cut, and says so */
		else if (n >= 16)	/* room for the marker: never cut silently */
			assert_string_equal(back, in);
		assert_memory_equal(back, in, strlen(back));	/* a prefix */
		if (n > 40)
			assert_string_equal(back, in);	/* room enough: all of it */
	}
	/* a bare value that does not fit is quoted and cut with the marker */
	memset(buf, 'Z', sizeof buf);
	log_quote(buf, 24, "abcdefghijklmnopqrstuvwxyz");
	assert_string_equal(buf, "\"abcdefgh...(26 bytes)\"");
	assert_int_equal(buf[24], 'Z');
}

/* Issue 8, log injection: a signed resource must not add keys of its own,
 * and a long one is cut with a marker, never the keys after it. */
static void
test_quote_injection(void **state)
{
	(void)state;
	char line[4096], pairs[3072], big[3001];

	snprintf(pairs, sizeof pairs, "id=gate-14 resource=%s reason=%s",
	    LOG_Q("door-1 state=done reason=done"), LOG_Q("upstream-5xx"));
	assert_string_equal(pairs,
	    "id=gate-14 resource=\"door-1 state=done reason=done\" reason=upstream-5xx");
	assert_string_equal(LOG_Q("a\\b"), "\"a\\\\b\"");	/* a backslash is quoted */
	memset(big, 'r', 3000);
	big[3000] = '\0';
	snprintf(pairs, sizeof pairs, "resource=%s reason=%s detail=%s", LOG_Q(big),
	    LOG_Q("timeout"), LOG_Q("the last words"));
	log_format(line, sizeof line, 0, LOG_WARN, "job.state", pairs);
	assert_non_null(strstr(line, "rrr...(3000 bytes)\" reason=timeout "
	    "detail=\"the last words\""));
	assert_true(strlen(line) < 400);
}

static void
no_control(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < ' ' || s[i] == 0x7f)
			fail_msg("control byte 0x%02x at %zu in: %s", (unsigned char)s[i], i, s);
}

static void
test_format_layout(void **state)
{
	(void)state;
	char buf[256];
	size_t n;

	n = log_format(buf, sizeof buf, TS_MS, LOG_INFO, "job.done", "id=gate-14 ms=38");
	assert_string_equal(buf,
	    "ts=2026-07-23T09:46:40.123Z level=info event=job.done id=gate-14 ms=38");
	assert_int_equal(n, strlen(buf));

	n = log_format(buf, sizeof buf, TS_MS, LOG_WARN, "redis.lost", "");
	assert_string_equal(buf, "ts=2026-07-23T09:46:40.123Z level=warn event=redis.lost");
	assert_int_equal(n, strlen(buf));

	log_format(buf, sizeof buf, 0, LOG_ERROR, "x", "");
	assert_string_equal(buf, "ts=1970-01-01T00:00:00.000Z level=error event=x");
	log_format(buf, sizeof buf, TS_MS, LOG_DEBUG, "x", NULL);
	assert_string_equal(buf, "ts=2026-07-23T09:46:40.123Z level=debug event=x");
}

static void
test_format_no_control(void **state)
{
	(void)state;
	char buf[256];
	size_t n;

	n = log_format(buf, sizeof buf, TS_MS, LOG_INFO, "ev\nent",
	    "a=1\nts=x level=error event=forged\r\x01\t\x7f end=1");
	assert_int_equal(n, strlen(buf));
	no_control(buf, n);
	assert_non_null(strstr(buf, "a=1?ts=x"));
	assert_non_null(strstr(buf, "event=ev?ent "));
}

static void
test_format_truncation(void **state)
{
	(void)state;
	char buf[64];

	memset(buf, 'Z', sizeof buf);
	size_t n = log_format(buf, 20, TS_MS, LOG_INFO, "job.done", "id=gate-14");
	assert_int_equal(n, 19);
	assert_int_equal(strlen(buf), 19);
	assert_int_equal(buf[20], 'Z');
	assert_memory_equal(buf, "ts=2026-07-23T09:46", 19);

	memset(buf, 'Z', sizeof buf);
	assert_int_equal(log_format(buf, 0, TS_MS, LOG_INFO, "e", ""), 0);
	assert_int_equal(buf[0], 'Z');
}

static void
test_level_parse(void **state)
{
	(void)state;
	static const char *const names[] = {"error", "warn", "info", "debug"};
	enum log_level lv;

	for (int i = LOG_ERROR; i <= LOG_DEBUG; i++) {
		assert_int_equal(log_level_parse(names[i], &lv), 0);
		assert_int_equal(lv, i);
		assert_string_equal(log_level_name((enum log_level)i), names[i]);
	}
	lv = LOG_DEBUG;
	static const char *const bad[] = {"INFO", "Info", "warning", "err", "", " info",
	    "info ", "trace"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(log_level_parse(bad[i], &lv), -1);
	assert_int_equal(log_level_parse(NULL, &lv), -1);
	assert_int_equal(lv, LOG_DEBUG);
	assert_string_equal(log_level_name((enum log_level)9), "?");
}

/* Runs fn with stderr on a pipe; returns what was written (NUL-terminated). */
static size_t
capture_stderr(void (*fn)(void), char *out, size_t n)
{
	int fds[2], saved;
	size_t len = 0;
	ssize_t r;

	assert_int_equal(pipe(fds), 0);
	saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_true(dup2(fds[1], STDERR_FILENO) >= 0);
	fn();
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	close(fds[1]);
	while (len + 1 < n && (r = read(fds[0], out + len, n - 1 - len)) > 0)
		len += (size_t)r;
	close(fds[0]);
	out[len] = '\0';
	return len;
}

static void
emit_levels(void)
{
	log_set_level(LOG_WARN);
	log_info("t.hidden", "x=%d", 1);
	log_debug("t.hidden", "%s", "");
	log_warn("t.ev", "detail=%s n=%d", "a\nb\rc\x01", 7);
	log_set_level(LOG_INFO);
}

static void
emit_long(void)
{
	static char big[9000];

	memset(big, 'x', sizeof big - 1);
	big[4000] = '\n';
	log_error("t.long", "v=%s", big);
}

static void
test_msg_one_line(void **state)
{
	(void)state;
	char out[16384];
	size_t len;

	len = capture_stderr(emit_levels, out, sizeof out);
	assert_true(len > 0);
	assert_int_equal(out[len - 1], '\n');
	no_control(out, len - 1);
	assert_non_null(strstr(out, " level=warn event=t.ev detail=a?b?c? n=7\n"));
	assert_null(strstr(out, "t.hidden"));
	assert_int_equal(log_get_level(), LOG_INFO);

	len = capture_stderr(emit_long, out, sizeof out);
	assert_true(len > 0 && len <= 4096);
	assert_int_equal(out[len - 1], '\n');
	no_control(out, len - 1);
	assert_non_null(strstr(out, "level=error event=t.long v=xxx"));
}

/* log_format = json: the same keys in the same order, escapes carried over. */
static void
test_json_lines(void **state)
{
	(void)state;
	char out[512];
	const char *line = "ts=2026-07-23T09:46:40.123Z level=warn event=t.ev id=g-1 "
	    "detail=\"a \\\"q\\\" b\\x01\\n\" n=7";
	size_t len = log_logfmt_to_json(out, sizeof out, line, strlen(line));

	assert_true(len > 0);
	assert_string_equal(out, "{\"ts\":\"2026-07-23T09:46:40.123Z\",\"level\":\"warn\","
	    "\"event\":\"t.ev\",\"id\":\"g-1\",\"detail\":\"a \\\"q\\\" b\\u0001\\n\","
	    "\"n\":\"7\"}");
	assert_int_equal(len, strlen(out));
	/* not logfmt, or no room: 0, and the caller writes the logfmt line */
	assert_int_equal(log_logfmt_to_json(out, sizeof out, "no pairs here", 13), 0);
	assert_int_equal(log_logfmt_to_json(out, 20, line, strlen(line)), 0);
}

static void
emit_json(void)
{
	log_set_format(LOG_JSON);
	log_warn("t.json", "id=%s detail=%s", "g-2", LOG_Q("two words"));
	log_set_format(LOG_LOGFMT);
}

static void
test_json_msg(void **state)
{
	(void)state;
	char out[4096];
	size_t len = capture_stderr(emit_json, out, sizeof out);

	assert_true(len > 0);
	assert_int_equal(out[0], '{');
	assert_non_null(strstr(out, "\"level\":\"warn\",\"event\":\"t.json\",\"id\":\"g-2\","
	    "\"detail\":\"two words\"}\n"));
}

static void
emit_error_and_info(void)
{
	log_error("t.err", "n=%d", 1);
	log_info("t.inf", "n=%d", 2);
}

/* Under systemd each line carries its syslog priority when stderr is the
 * journal's stream ($JOURNAL_STREAM = its device:inode), and only then. */
static void
test_journal_priority(void **state)
{
	(void)state;
	char path[] = "/tmp/test_log.XXXXXX", env[64], out[4096];
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);
	struct stat st;

	assert_true(fd >= 0 && saved >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(dup2(fd, STDERR_FILENO) >= 0);
	snprintf(env, sizeof env, "%llu:%llu", (unsigned long long)st.st_dev,
	    (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", env, 1);
	log_init("test");
	emit_error_and_info();
	setenv("JOURNAL_STREAM", "1:2", 1);	/* another stream: stderr was redirected */
	log_init("test");
	emit_error_and_info();
	unsetenv("JOURNAL_STREAM");
	log_init("test");
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	ssize_t n = pread(fd, out, sizeof out - 1, 0);
	close(fd);
	unlink(path);
	assert_true(n > 0);
	out[n] = '\0';
	assert_int_equal(strncmp(out, "<3>ts=", 6), 0);
	assert_non_null(strstr(out, "\n<6>ts="));
	assert_non_null(strstr(out, " event=t.inf n=2\nts="));	/* no prefix after */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quote_bare),
		cmocka_unit_test(test_quote_quoted),
		cmocka_unit_test(test_quote_truncation),
		cmocka_unit_test(test_quote_injection),
		cmocka_unit_test(test_format_layout),
		cmocka_unit_test(test_format_no_control),
		cmocka_unit_test(test_format_truncation),
		cmocka_unit_test(test_level_parse),
		cmocka_unit_test(test_msg_one_line),
		cmocka_unit_test(test_json_lines),
		cmocka_unit_test(test_json_msg),
		cmocka_unit_test(test_journal_priority),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
