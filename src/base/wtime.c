/* SPDX-License-Identifier: BSD-2-Clause */
/* wtime: UTC time arithmetic without the C library's time zone machinery. */
#define _POSIX_C_SOURCE 200809L
#include "base/wtime.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* Howard Hinnant's days_from_civil: exact for every proleptic date. */
int64_t
wtime_days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static void
civil_from_days(int64_t z, int *y, unsigned *m, unsigned *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int)(yoe + era * 400 + (*m <= 2));
}

static int
is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static unsigned
days_in_month(int y, unsigned m)
{
	static const unsigned dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	return m == 2 && is_leap(y) ? 29 : dim[m - 1];
}

/* Reads exactly `width` digits. */
static int
digits(const char **p, int width, int *out)
{
	int v = 0;
	for (int i = 0; i < width; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return -1;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += width;
	*out = v;
	return 0;
}

static int
expect(const char **p, char c)
{
	if (**p != c)
		return -1;
	(*p)++;
	return 0;
}

static int
valid_civil(int y, int mo, int d, int h, int mi, int s)
{
	return y >= 1970 && mo >= 1 && mo <= 12 && d >= 1 &&
	    (unsigned)d <= days_in_month(y, (unsigned)mo) && h <= 23 && mi <= 59 && s <= 59;
}

static int64_t
to_ms(int y, int mo, int d, int h, int mi, int s)
{
	int64_t days = wtime_days_from_civil(y, (unsigned)mo, (unsigned)d);
	return ((days * 24 + h) * 60 + mi) * 60000 + (int64_t)s * 1000;
}

int
wtime_parse_rfc3339(const char *s, int64_t *out_ms)
{
	int y, mo, d, h, mi, sec, ms = 0;
	const char *p = s;

	if (s == NULL)
		return -1;
	if (digits(&p, 4, &y) || expect(&p, '-') || digits(&p, 2, &mo) ||
	    expect(&p, '-') || digits(&p, 2, &d))
		return -1;
	if (*p != 'T' && *p != 't')
		return -1;
	p++;
	if (digits(&p, 2, &h) || expect(&p, ':') || digits(&p, 2, &mi) ||
	    expect(&p, ':') || digits(&p, 2, &sec))
		return -1;
	if (*p == '.') {
		int n = 0;
		p++;
		for (; isdigit((unsigned char)*p); p++, n++)
			if (n < 3)
				ms = ms * 10 + (*p - '0');
		if (n == 0)
			return -1;
		for (; n < 3; n++)
			ms *= 10;
	}
	if ((*p != 'Z' && *p != 'z') || p[1] != '\0')
		return -1;
	if (!valid_civil(y, mo, d, h, mi, sec))
		return -1;
	*out_ms = to_ms(y, mo, d, h, mi, sec) + ms;
	return 0;
}

/* v (0 <= v < 10^k) as k decimal digits, zero-padded. */
static void
put_digits(char *p, int v, int k)
{
	while (k-- > 0) {
		p[k] = (char)('0' + v % 10);
		v /= 10;
	}
}

const char *
wtime_format_rfc3339(int64_t ms, char *buf, size_t n)
{
	int64_t secs = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
	int64_t frac = ms - secs * 1000;
	int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
	int64_t rem = secs - days * 86400;
	int y;
	unsigned m, d;

	civil_from_days(days, &y, &m, &d);
	if (y < 0 || y > 9999 || n < WTIME_RFC3339_LEN) {
		snprintf(buf, n, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", y, m, d,
		    (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60), (int)frac);
		return buf;
	}
	/* digits by hand: two of these go into every job's transitions */
	put_digits(buf, y, 4);
	buf[4] = '-';
	put_digits(buf + 5, (int)m, 2);
	buf[7] = '-';
	put_digits(buf + 8, (int)d, 2);
	buf[10] = 'T';
	put_digits(buf + 11, (int)(rem / 3600), 2);
	buf[13] = ':';
	put_digits(buf + 14, (int)(rem / 60 % 60), 2);
	buf[16] = ':';
	put_digits(buf + 17, (int)(rem % 60), 2);
	buf[19] = '.';
	put_digits(buf + 20, (int)frac, 3);
	buf[23] = 'Z';
	buf[24] = '\0';
	return buf;
}

int
wtime_parse_http_date(const char *s, int64_t *out_ms)
{
	static const char *const mon[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
	    "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
	static const char days[] = "Mon Tue Wed Thu Fri Sat Sun ";
	int y, mo = 0, d, h, mi, sec;
	const char *p = s;

	if (s == NULL || strlen(s) != 29 || s[3] != ',' || s[4] != ' ')
		return -1;
	/* A day name, not any three bytes (fuzz_httpdate found " \r\r, 06 Nov ...") */
	const char *day = strstr(days, (char[4]){s[0], s[1], s[2], '\0'});
	if (day == NULL || (day - days) % 4 != 0)
		return -1;
	p += 5;
	if (digits(&p, 2, &d) || expect(&p, ' '))
		return -1;
	for (; mo < 12; mo++)
		if (strncmp(p, mon[mo], 3) == 0)
			break;
	if (mo == 12)
		return -1;
	p += 3;
	if (expect(&p, ' ') || digits(&p, 4, &y) || expect(&p, ' ') ||
	    digits(&p, 2, &h) || expect(&p, ':') || digits(&p, 2, &mi) ||
	    expect(&p, ':') || digits(&p, 2, &sec) || strcmp(p, " GMT") != 0)
		return -1;
	if (!valid_civil(y, mo + 1, d, h, mi, sec))
		return -1;
	*out_ms = to_ms(y, mo + 1, d, h, mi, sec);
	return 0;
}

int64_t
wtime_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
wtime_mono_ms(void)
{
	struct timespec ts;
	/* BOOTTIME: monotonic, and it counts a suspend, so a token's life
	 * keeps running while a VM sleeps. */
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
