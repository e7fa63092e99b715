/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * lag: how many entries of the jobs stream the group has not been given
 * yet, counted from ids (issue 38 item 2). Redis 7.0's own `lag` comes
 * from the group's entries-read counter, which a restart does not restore
 * from the AOF (redis/redis#10569): after every restart it names entries
 * that were delivered long ago. The group's last-delivered id is restored,
 * so warrantd counts the entries after it instead, up to LAG_CAP. Pure:
 * it says what to ask Redis and reads the count back; `warrantctl status`,
 * `warrantctl metrics` and the worker's stall check ask.
 */
#ifndef WARRANTD_LAG_H
#define WARRANTD_LAG_H

#include <stddef.h>

/* Entries counted at most: past it the lag is shown as "≥LAG_CAP". A
 * stream entry is only "id <recordId>", so one XRANGE of this many is
 * small. */
#define LAG_CAP		10000
#define LAG_CAP_S	"10000"
/* Room for "(" and an id "<ms>-<seq>" of two 20-digit numbers. */
#define LAG_START_MAX	48

/* What to ask Redis. */
enum lag_query {
	LAG_XLEN,	/* nothing delivered yet (0-0 or no group): XLEN is the lag */
	LAG_XRANGE,	/* XRANGE <stream> <start> + COUNT LAG_CAP_S: its length is */
};

/* Plain data: the lag as shown. n is at most LAG_CAP when at_least. */
struct lag {
	long long n;
	int at_least;	/* 1: there are n or more */
};

/* 1 when s is a whole stream id, "<ms>-<seq>" (two runs of 1 to 20 digits),
 * else 0: the one syntax check, used by sreply at the edge too. */
int lag_stream_id_ok(const char *s);

/* The query for a group whose last-delivered id is `last_delivered` (NULL:
 * no group yet). For LAG_XRANGE, start gets "(<id>" (exclusive); for
 * LAG_XLEN, "". An id that is not "<ms>-<seq>" counts as never delivered
 * (-1 then, start ""): Redis' own counter is no better. Returns the query,
 * or -1. */
int lag_query_for(const char *last_delivered, char start[LAG_START_MAX])
	__attribute__((warn_unused_result));

/* The lag from what the query returned: XLEN's value, or the number of
 * entries XRANGE gave (a negative count, Redis' error, is 0 entries
 * known: n 0). */
struct lag lag_from_count(enum lag_query q, long long count);

/* "3", or "≥10000" when at_least: into buf (n ≥ 24), returned. */
const char *lag_text(struct lag l, char *buf, size_t n);

#endif
