/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wtime: wall-clock times as int64 milliseconds since the Unix epoch (UTC),
 * parsed and formatted without the local time zone or locale.
 */
#ifndef WARRANTD_WTIME_H
#define WARRANTD_WTIME_H

#include <stddef.h>
#include <stdint.h>

#define WTIME_RFC3339_LEN 32 /* "2026-11-30T04:00:00.123Z" + NUL, with room */

/* RFC 3339 in UTC only: "YYYY-MM-DDTHH:MM:SS[.frac]Z" (T and Z also in lower
 * case; the fraction is truncated to milliseconds). Offsets other than Z are
 * refused: the record format requires UTC. 0 or -1. */
int wtime_parse_rfc3339(const char *s, int64_t *out_ms)
	__attribute__((warn_unused_result));

/* Writes "YYYY-MM-DDTHH:MM:SS.mmmZ" into buf (at least WTIME_RFC3339_LEN). */
const char *wtime_format_rfc3339(int64_t ms, char *buf, size_t n);

/* IMF-fixdate of RFC 9110, "Sun, 06 Nov 1994 08:49:37 GMT". 0 or -1. */
int wtime_parse_http_date(const char *s, int64_t *out_ms)
	__attribute__((warn_unused_result));

/* Days since 1970-01-01 of a proleptic Gregorian date (no range checks). */
int64_t wtime_days_from_civil(int64_t y, unsigned m, unsigned d);

/* The real clock, for the imperative shell only: the core takes `now`.
 * Wall clock: for record deadlines and times written to Redis. */
int64_t wtime_now_ms(void);

/* A monotonic clock that also counts a suspend (CLOCK_BOOTTIME), in ms from
 * an arbitrary origin: for token lifetimes and anything timed by timers. A
 * step of the wall clock never moves it. */
int64_t wtime_mono_ms(void);

#endif
