/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lag: the group's lag counted from ids, not from Redis' entries-read
 * counter (see core/lag.h). Pure.
 */
#include <stdio.h>
#include <string.h>

#include "core/lag.h"

int
lag_stream_id_ok(const char *s)
{
	size_t ms = strspn(s, "0123456789");

	if (ms == 0 || ms > 20 || s[ms] != '-')
		return 0;
	size_t seq = strspn(s + ms + 1, "0123456789");
	return seq > 0 && seq <= 20 && s[ms + 1 + seq] == '\0';
}

/* "0-0", "00-0", ...: the id a group made at 0 starts from. */
static int
is_zero_id(const char *s)
{
	return strspn(s, "0-") == strlen(s);
}

int
lag_query_for(const char *last_delivered, char start[LAG_START_MAX])
{
	start[0] = '\0';
	if (last_delivered == NULL)
		return LAG_XLEN;
	if (!lag_stream_id_ok(last_delivered))
		return -1;
	if (is_zero_id(last_delivered))
		return LAG_XLEN;
	snprintf(start, LAG_START_MAX, "(%s", last_delivered);
	return LAG_XRANGE;
}

struct lag
lag_from_count(enum lag_query q, long long count)
{
	struct lag l = {.n = count > 0 ? count : 0, .at_least = 0};

	/* XLEN is exact; XRANGE stopped at COUNT: there may be more */
	if (q == LAG_XRANGE && l.n >= LAG_CAP) {
		l.n = LAG_CAP;
		l.at_least = 1;
	}
	return l;
}

const char *
lag_text(struct lag l, char *buf, size_t n)
{
	snprintf(buf, n, "%s%lld", l.at_least ? "\u2265" : "", l.n);
	return buf;
}
