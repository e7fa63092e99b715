/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sreply: the Redis replies the consumer reads (and warrantctl shows),
 * taken apart into plain data.
 * Pure: each function walks a reply tree -- built by hiredis, or by a test
 * or a fuzzer -- and trusts nothing about its shape: a wrong type, a missing
 * element or a string where a number should be is refused, never
 * dereferenced. NULL (no reply: the connection went) is refused like any
 * other wrong shape.
 *
 * A struct sreply is opaque: the replies rconn hands to its callbacks are
 * read only through these functions, so no caller of rconn depends on
 * hiredis's reply layout. Strings returned or handed to the callbacks point
 * into the reply: valid only as long as it (during the rconn callback).
 */
#ifndef WARRANTD_SREPLY_H
#define WARRANTD_SREPLY_H

#include <stddef.h>

struct redisReply;	/* hiredis's */
struct sreply;

/* The reply tree r seen through sreply: no copy, valid as long as r. For
 * rconn, and for tests and fuzzers that build trees by hand. */
const struct sreply *sreply_of(const struct redisReply *r);

/* 1 when r is an error reply whose text starts with `prefix` ("NOGROUP",
 * "BUSYGROUP"; NULL: any error reply), else 0. */
int sreply_error(const struct sreply *r, const char *prefix);

/* The text of an error reply ("" when it has none), or NULL when r is not one. */
const char *sreply_error_text(const struct sreply *r);

/*
 * Item i's reply in the reply r to a batch of n items (store.h: a batch
 * form returns one element per item, in order): element i of an array of
 * exactly n elements; r itself when r is an error reply (the whole call
 * failed: every item gets its error); NULL for any other shape (as when
 * the connection went: the item is tried again).
 */
const struct sreply *sreply_batch_item(const struct sreply *r, size_t n, size_t i);

/* An integer reply: 0 and *out, or -1 for anything else. */
int sreply_integer(const struct sreply *r, long long *out) __attribute__((warn_unused_result));

/* An array reply (HGETALL's, nil never): 0 and its number of elements in
 * *n, or -1 for anything else. */
int sreply_array_len(const struct sreply *r, size_t *n) __attribute__((warn_unused_result));

/* The transition script's reply (lua/transition.lua): {1, 'ok', from,
 * attempts} when the step was written, else {0, why, from}; the attempts it
 * wrote are the fence of the call that follows. */
struct sreply_transition {
	int written;		/* element 1 is the integer 1 */
	const char *why;	/* element 2 when a string, else NULL */
	long long fence;	/* element 4 (a string) as a number, else -1 */
};

/* Fills *t from r; any shape gives a result (written 0 for a wrong one). */
void sreply_transition(const struct sreply *r, struct sreply_transition *t);

/* The load script's reply (lua/load.lua): {exists, withheld, state,
 * attempts, record, attemptsBase}. */
struct sreply_load {
	int exists;		/* element 1 is the integer 1 */
	long long withheld;	/* element 2: the length of a record longer than
				   max_bytes, which was not sent; else 0 */
	const char *state, *attempts, *record;	/* elements 3-5; NULL when not
						   a string (nil: absent) */
	const char *attempts_base;	/* element 6, the same way */
};

/* Fills *out from r: 0, or -1 when r is not that shape (an error reply, no
 * reply, a withheld record sent all the same). */
int sreply_load(const struct sreply *r, struct sreply_load *out)
	__attribute__((warn_unused_result));

/* One stream entry delivered to this consumer. */
struct sreply_entry {
	const char *stream;	/* XREADGROUP: the stream key it came from; else NULL */
	const char *stream_id;
	const char *id;		/* its `id` field; NULL when missing or not a string */
	const char *traceparent;	/* its `traceparent` field as it is (trace.h
					   checks it); NULL when missing */
	/* The record's delivery count (R12): Redis' count for this entry (1
	 * when the reply does not say) plus the entry's `priorDeliveries`
	 * field, the count an entry handed back (lua/handback.lua) had
	 * reached; a field that is not 1 to 9 digits counts as 0. */
	int deliveries;
};

typedef void sreply_entry_cb(void *arg, const struct sreply_entry *e);
typedef void sreply_id_cb(void *arg, const char *stream_id);

/*
 * XREADGROUP ... STREAMS key >: nil (nothing new) or
 * [[stream, [[stream_id, [field, value, ...]], ...]], ...] -- one pair per
 * stream read, when one read names several. Calls cb for each well-formed
 * entry (malformed ones are skipped), with e->stream the key of its pair.
 * Returns how many, or -1 when r is not one of those shapes (an error reply
 * included).
 */
int sreply_read(const struct sreply *r, sreply_entry_cb *cb, void *arg);

/*
 * The claim script (store.c, both modes): {next, {{stream_id, fields or nil,
 * deliveries}, ...}, {deleted stream_id, ...}}. Writes next into buf (size
 * n, "0-0" when the scan is complete or next is not a string), calls entry
 * and deleted. Returns the number of entries, or -1 for another shape.
 */
int sreply_claim(const struct sreply *r, char *next, size_t n, sreply_entry_cb *entry,
		 sreply_id_cb *deleted, void *arg);

/* The hand-back script (lua/handback.lua): {1, new stream id,
 * priorDeliveries} -> 1, the id into buf (size n); {0} (no longer ours) ->
 * 0; any other shape (an error reply, no reply) -> -1. */
int sreply_handback(const struct sreply *r, char *buf, size_t n)
	__attribute__((warn_unused_result));

/* The renew script: {{lost stream_id...}, {gone stream_id...}}. 0 or -1. */
int sreply_renew(const struct sreply *r, sreply_id_cb *lost, sreply_id_cb *gone, void *arg);

/* XINFO GROUPS key: the `lag` of `group`; -1 when the group is not there or
 * Redis does not know its lag (nil). */
long long sreply_group_lag(const struct sreply *r, const char *group);

/* The server's version from the reply to
 * EVAL "return redis.REDIS_VERSION" 0 (a Lua global since Redis 7.0, and
 * allowed to a user who may EVAL, unlike INFO): 0 with *major and *minor
 * set ("7.0.15"); 1 for nil or "", a Redis older than 7.0; -1 otherwise
 * (an error reply). */
int sreply_redis_version(const struct sreply *r, int *major, int *minor)
	__attribute__((warn_unused_result));

/* 1 when s is a stream id, MS-SEQ in decimal (each 1 to 20 digits). Entries
 * and ids whose stream id is not are refused by the readers above. */
int sreply_stream_id_ok(const char *s);

/* The value of `name` in a flat field/value array reply (HGETALL, a stream
 * entry's fields, an XINFO group), or NULL. */
const char *sreply_field(const struct sreply *arr, const char *name);

/* ---- any reply, for what shows replies whole (warrantctl) ---- */

/* Element i of an array reply; NULL when r is not an array or has no
 * element i. */
const struct sreply *sreply_element(const struct sreply *r, size_t i);

/* The text of a (bulk) string reply; NULL for any other reply. */
const char *sreply_string(const struct sreply *r);

/* As sreply_field, the reply itself, of whatever type: the value after
 * the first string element equal to `name` at an even index; NULL when
 * there is none or arr is not an array. */
const struct sreply *sreply_field_reply(const struct sreply *arr, const char *name);

#endif
