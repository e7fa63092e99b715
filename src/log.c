/* log: logfmt to stderr. One write(2) per line, so lines never interleave. */
#define _POSIX_C_SOURCE 200809L
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "wtime.h"

static enum log_level cur_level = LOG_INFO;
static const char *prog_name = "warrantd";

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void
log_init(const char *prog)
{
	prog_name = prog;
}

void
log_set_level(enum log_level level)
{
	cur_level = level;
}

enum log_level
log_get_level(void)
{
	return cur_level;
}

int
log_level_parse(const char *s, enum log_level *out)
{
	if (s == NULL)
		return -1;
	for (int i = LOG_ERROR; i <= LOG_DEBUG; i++)
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	return -1;
}

const char *
log_level_name(enum log_level level)
{
	return level >= LOG_ERROR && level <= LOG_DEBUG ? level_names[level] : "?";
}

const char *
log_quote(char *dst, size_t n, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t len = 0;
	int bare = s != NULL && *s != '\0';

	if (n == 0)
		return dst;
	if (s == NULL)
		s = "";
	for (const unsigned char *p = (const unsigned char *)s; bare && *p; p++)
		if (*p <= ' ' || *p == '=' || *p == '"' || *p == '\\' || *p == 0x7f)
			bare = 0;
	if (!bare && n < 3) {
		/* Not even "" fits; the closing quote below would overrun. */
		dst[0] = '\0';
		return dst;
	}
	if (bare) {
		snprintf(dst, n, "%s", s);
		return dst;
	}
	/* Reserve room for the closing quote and the NUL. */
#define PUT(c) do { if (len + 2 < n) dst[len++] = (c); } while (0)
	PUT('"');
	for (const unsigned char *p = (const unsigned char *)s; *p && len + 2 < n; p++) {
		if (*p == '"' || *p == '\\') {
			if (len + 4 >= n)
				break;
			PUT('\\');
			PUT((char)*p);
		} else if (*p == '\n' || *p == '\t') {
			if (len + 4 >= n)
				break;
			PUT('\\');
			PUT(*p == '\n' ? 'n' : 't');
		} else if (*p < ' ' || *p == 0x7f) {
			if (len + 6 >= n)
				break;
			PUT('\\');
			PUT('x');
			PUT(hex[*p >> 4]);
			PUT(hex[*p & 15]);
		} else {
			PUT((char)*p);
		}
	}
#undef PUT
	dst[len++] = '"';
	dst[len] = '\0';
	return dst;
}

size_t
log_format(char *dst, size_t n, long long now_ms, enum log_level level,
	   const char *event, const char *pairs)
{
	char ts[WTIME_RFC3339_LEN];
	int w;

	if (n == 0)
		return 0;
	if (event == NULL)
		event = "";
	if (pairs == NULL)
		pairs = "";
	wtime_format_rfc3339(now_ms, ts, sizeof ts);
	w = snprintf(dst, n, "ts=%s level=%s event=%s%s%s", ts, log_level_name(level),
	    event, pairs[0] ? " " : "", pairs);
	size_t len = w < 0 ? 0 : (size_t)w >= n ? n - 1 : (size_t)w;
	/* One event, one line: nothing a caller let through may break it. */
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)dst[i] < ' ' || dst[i] == 0x7f)
			dst[i] = '?';
	return len;
}

void
log_msg(enum log_level level, const char *event, const char *fmt, ...)
{
	char pairs[3072], line[4096];
	va_list ap;

	if (level > cur_level)
		return;
	va_start(ap, fmt);
	vsnprintf(pairs, sizeof pairs, fmt, ap);
	va_end(ap);
	size_t len = log_format(line, sizeof line - 1, (long long)wtime_now_ms(), level, event, pairs);
	line[len++] = '\n';
	ssize_t w = write(STDERR_FILENO, line, len);
	(void)w;	/* nowhere left to report a failed log write */
	(void)prog_name;
}
