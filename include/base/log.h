/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * log: logfmt lines on stderr, one line per event.
 *
 *   ts=2026-11-30T04:00:00.123Z level=info event=job.done id=gate-14 ms=38
 *
 * The caller writes the key=value pairs after `event` with a printf format.
 * A value that may hold spaces, quotes or control characters must go through
 * log_quote(). The module replaces any control character left in the final
 * line, so one event is always one line. Never pass a token, a secret, an
 * assertion or a signature: nothing here can tell them apart from text.
 */
#ifndef WARRANTD_LOG_H
#define WARRANTD_LOG_H

#include <stddef.h>

enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* `prog` must outlive every later call (a string literal). Looks once at
 * stderr: when it is the journal's stream ($JOURNAL_STREAM names its device
 * and inode), every line starts with its syslog priority ("<3>" error,
 * "<4>" warn, "<6>" info, "<7>" debug), so `journalctl -p err` finds the
 * errors. */
void log_init(const char *prog);

enum log_format { LOG_LOGFMT = 0, LOG_JSON };

/* LOG_JSON: each line one JSON object instead of logfmt, the same keys in
 * the same order ({"ts":...,"level":...,"event":...,"id":...}), every value a
 * string, for log pipelines. */
void log_set_format(enum log_format format);
void log_set_level(enum log_level level);
enum log_level log_get_level(void);

/* "error", "warn", "info", "debug" -> 0; anything else -> -1. */
int log_level_parse(const char *s, enum log_level *out)
	__attribute__((warn_unused_result));
const char *log_level_name(enum log_level level);

/* Writes the line when `level` is enabled. `fmt` holds the pairs after
 * event=..., or is "" for none. */
void log_msg(enum log_level level, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Formats `s` as one logfmt value into dst (size n, always terminated):
 * bare when it is non-empty and has no space, '=', '"' or '\', else quoted
 * with '"' and '\' escaped and control characters written as \n, \t or \xNN.
 * A value that does not fit is quoted and cut after a whole escape, with the
 * marker "...(N bytes)" (N its full length) before the closing quote (when n
 * has room for the marker at all: LOG_VAL_MAX has). Returns dst, so it can stand as a printf argument. */
const char *log_quote(char *dst, size_t n, const char *s);

/* The room one value from outside gets in a line: a 3,000-byte resource is
 * cut to this, so the keys after it (reason=, detail=) are still written. */
#define LOG_VAL_MAX 256

/* log_quote into a buffer of LOG_VAL_MAX that lives until the end of the
 * enclosing block (a compound literal): for printf arguments, e.g.
 *   log_info("job.call", "resource=%s attempt=%d", LOG_Q(rec->resource), n);
 * Every value that comes from outside (a record field, a reply, a header)
 * goes through it. */
#define LOG_Q(s) log_quote((char[LOG_VAL_MAX]){0}, LOG_VAL_MAX, (s))

/* Formatting into a caller buffer without writing: used by tests and by
 * log_msg itself. Returns the length written (truncated to n - 1). */
size_t log_format(char *dst, size_t n, long long now_ms, enum log_level level,
		  const char *event, const char *pairs);

/* A logfmt line (as log_format writes it) as one JSON object into dst (size
 * n); the length, or 0 when it does not fit or is not logfmt (the caller
 * writes the logfmt line then). */
size_t log_logfmt_to_json(char *dst, size_t n, const char *line, size_t len);

/* The level is checked before the arguments are evaluated: a LOG_Q or a
 * log_quote below the level would otherwise format values for nothing on
 * every job. */
#define LOG_AT(lvl, ev, ...) do { \
	if ((lvl) <= log_get_level()) \
		log_msg(lvl, ev, __VA_ARGS__); \
} while (0)
#define log_error(ev, ...) LOG_AT(LOG_ERROR, ev, __VA_ARGS__)
#define log_warn(ev, ...)  LOG_AT(LOG_WARN, ev, __VA_ARGS__)
#define log_info(ev, ...)  LOG_AT(LOG_INFO, ev, __VA_ARGS__)
#define log_debug(ev, ...) LOG_AT(LOG_DEBUG, ev, __VA_ARGS__)

#endif
