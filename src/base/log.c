/* SPDX-License-Identifier: BSD-2-Clause */
/* log: logfmt to stderr. One write(2) per line, so lines never interleave. */
#define _POSIX_C_SOURCE 200809L
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/wtime.h"

static enum log_level cur_level = LOG_INFO;
static const char *prog_name = "warrantd";
static int to_journal;		/* stderr is the journal's: "<N>" prefixes */
static enum log_format cur_format = LOG_LOGFMT;

#define LOG_LINE_CUT " log_cut=1"

static const char *const level_names[] = {"error", "warn", "info", "debug"};

/* systemd sets $JOURNAL_STREAM to "DEV:INODE" of the stream it connected
 * stderr to; a redirect since (a pipe, a file) no longer matches. */
static int
stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	char *end;
	struct stat st;

	if (js == NULL || fstat(STDERR_FILENO, &st) != 0)
		return 0;
	unsigned long long dev = strtoull(js, &end, 10);
	if (end == js || *end != ':')
		return 0;
	const char *i = end + 1;
	unsigned long long ino = strtoull(i, &end, 10);
	return end != i && *end == '\0' && (unsigned long long)st.st_dev == dev &&
	    (unsigned long long)st.st_ino == ino;
}

void
log_init(const char *prog)
{
	prog_name = prog;
	to_journal = stderr_is_journal();
}

void
log_set_format(enum log_format format)
{
	cur_format = format;
}

/* One logfmt value at *p (bare, or quoted with log_quote's escapes) as a
 * JSON string at out; advances *p past it. 0 when out of room. */
static int
json_value(const char **p, char **out, const char *end)
{
	const char *s = *p;
	char *o = *out;
	int quoted = *s == '"';

#define PUT(c) do { if (o >= end) return 0; *o++ = (c); } while (0)
	PUT('"');
	if (quoted)
		s++;
	while (*s && (quoted ? *s != '"' : *s != ' ')) {
		if (quoted && *s == '\\' && s[1] == 'x' && s[2] && s[3]) {
			if (end - o < 6)
				return 0;
			o[0] = '\\';
			o[1] = 'u';
			o[2] = '0';
			o[3] = '0';
			o[4] = s[2];
			o[5] = s[3];
			o += 6;
			s += 4;
		} else if (quoted && *s == '\\' && s[1]) {
			PUT('\\');	/* \\, \", \n, \t: the same in JSON */
			PUT(s[1]);
			s += 2;
		} else if (*s == '"' || *s == '\\') {
			PUT('\\');
			PUT(*s++);
		} else {
			PUT(*s++);
		}
	}
	if (quoted && *s == '"')
		s++;
	PUT('"');
#undef PUT
	*p = s;
	*out = o;
	return 1;
}

size_t
log_logfmt_to_json(char *dst, size_t n, const char *line, size_t len)
{
	const char *p = line, *stop = line + len;
	char *o = dst, *end = dst + n - 1;	/* room for the NUL */

	if (n < 3)
		return 0;
	*o++ = '{';
	while (p < stop && *p) {
		const char *eq = strchr(p, '=');
		if (eq == NULL || eq == p || eq >= stop || memchr(p, ' ', (size_t)(eq - p)))
			return 0;
		size_t klen = (size_t)(eq - p);
		if ((size_t)(end - o) < klen + 4)
			return 0;
		if (o[-1] != '{')
			*o++ = ',';
		*o++ = '"';
		memcpy(o, p, klen);
		o += klen;
		*o++ = '"';
		*o++ = ':';
		p = eq + 1;
		if (!json_value(&p, &o, end))
			return 0;
		while (p < stop && *p == ' ')
			p++;
	}
	if (o >= end)
		return 0;
	*o++ = '}';
	*o = '\0';
	return (size_t)(o - dst);
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

/* The escaped form of one byte of a quoted value; returns its length. */
static size_t
escape(unsigned char c, char out[4])
{
	static const char hex[] = "0123456789abcdef";

	if (c == '"' || c == '\\' || c == '\n' || c == '\t') {
		out[0] = '\\';
		out[1] = c == '\n' ? 'n' : c == '\t' ? 't' : (char)c;
		return 2;
	}
	if (c < ' ' || c == 0x7f) {
		out[0] = '\\';
		out[1] = 'x';
		out[2] = hex[c >> 4];
		out[3] = hex[c & 15];
		return 4;
	}
	out[0] = (char)c;
	return 1;
}

static int
needs_quotes(const char *s)
{
	if (*s == '\0')
		return 1;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p <= ' ' || *p == '=' || *p == '"' || *p == '\\' || *p == 0x7f)
			return 1;
	return 0;
}

/* Writes s quoted into dst (n >= 3), as many whole escapes as leave room for
 * `tail`, the closing quote and the NUL. Returns 1 when all of s fitted. */
static int
put_quoted(char *dst, size_t n, const char *s, const char *tail)
{
	size_t len = 0, room = n - 2 - strlen(tail);
	char e[4];

	dst[len++] = '"';
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		size_t k = escape(*p, e);
		if (len + k > room) {
			dst[len] = '\0';
			return 0;
		}
		memcpy(dst + len, e, k);
		len += k;
	}
	dst[len] = '\0';
	return 1;
}

const char *
log_quote(char *dst, size_t n, const char *s)
{
	char mark[40];

	if (n == 0)
		return dst;
	if (s == NULL)
		s = "";
	if (!needs_quotes(s) && strlen(s) < n) {
		memcpy(dst, s, strlen(s) + 1);
		return dst;
	}
	if (n < 3) {	/* not even "" fits */
		dst[0] = '\0';
		return dst;
	}
	/* A value that does not fit is cut where an escape ends and says so:
	 * the reader sees that it was cut and how long it was. */
	snprintf(mark, sizeof mark, "...(%zu bytes)", strlen(s));
	if (!put_quoted(dst, n, s, "") && n >= strlen(mark) + 3) {
		(void)put_quoted(dst, n, s, mark);
		memcpy(dst + strlen(dst), mark, strlen(mark) + 1);	/* room was left */
	}
	size_t len = strlen(dst);	/* put_quoted left room for the quote */
	dst[len] = '"';
	dst[len + 1] = '\0';
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
	int pw = vsnprintf(pairs, sizeof pairs, fmt, ap);
	va_end(ap);
	/* Values are quoted and capped one by one (LOG_Q); should the whole still
	 * not fit, the line says it was cut instead of ending mid-value. */
	if (pw >= (int)sizeof pairs)
		memcpy(pairs + sizeof pairs - sizeof LOG_LINE_CUT, LOG_LINE_CUT, sizeof LOG_LINE_CUT);
	static const char *const prio[] = {"<3>", "<4>", "<6>", "<7>"};
	char out[8192];
	size_t at = 0;
	if (to_journal) {
		memcpy(out, prio[level], 3);
		at = 3;
	}
	size_t len = log_format(line, sizeof line - 1, (long long)wtime_now_ms(), level, event, pairs);
	size_t json = cur_format == LOG_JSON ?
	    log_logfmt_to_json(out + at, sizeof out - at - 1, line, len) : 0;
	if (json == 0) {
		memcpy(out + at, line, len);
		json = len;
	}
	at += json;
	out[at++] = '\n';
	ssize_t w = write(STDERR_FILENO, out, at);
	(void)w;	/* nowhere left to report a failed log write */
	(void)prog_name;
}
