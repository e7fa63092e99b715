/*
 * sreply: the Redis replies the consumer reads, taken apart into plain data.
 * Pure: each function walks a redisReply tree -- built by hiredis, or by a
 * test or a fuzzer -- and trusts nothing about its shape: a wrong type,
 * a missing element or a string where a number should be is refused, never
 * dereferenced.
 *
 * Strings handed to the callbacks point into the reply: valid only during
 * the callback (the reply is freed once the rconn callback returns).
 */
#ifndef WARRANTD_SREPLY_H
#define WARRANTD_SREPLY_H

#include <stddef.h>

#include <hiredis/hiredis.h>

/* One stream entry delivered to this consumer. */
struct sreply_entry {
	const char *stream_id;
	const char *id;		/* its `id` field; NULL when missing or not a string */
	int deliveries;		/* the delivery count; 1 when the reply does not say */
};

typedef void sreply_entry_cb(void *arg, const struct sreply_entry *e);
typedef void sreply_id_cb(void *arg, const char *stream_id);

/*
 * XREADGROUP ... STREAMS key >: nil (nothing new) or
 * [[stream, [[stream_id, [field, value, ...]], ...]], ...]. Calls cb for each
 * well-formed entry (malformed ones are skipped). Returns how many, or -1
 * when r is not one of those shapes (an error reply included).
 */
int sreply_read(const redisReply *r, sreply_entry_cb *cb, void *arg);

/*
 * The claim script (store.c, both modes): {next, {{stream_id, fields or nil,
 * deliveries}, ...}, {deleted stream_id, ...}}. Writes next into buf (size
 * n, "0-0" when the scan is complete or next is not a string), calls entry
 * and deleted. Returns the number of entries, or -1 for another shape.
 */
int sreply_claim(const redisReply *r, char *next, size_t n, sreply_entry_cb *entry,
		 sreply_id_cb *deleted, void *arg);

/* The renew script: {{lost stream_id...}, {gone stream_id...}}. 0 or -1. */
int sreply_renew(const redisReply *r, sreply_id_cb *lost, sreply_id_cb *gone, void *arg);

/* XINFO GROUPS key: the `lag` of `group`; -1 when the group is not there or
 * Redis does not know its lag (nil). */
long long sreply_group_lag(const redisReply *r, const char *group);

/* The value of `name` in a flat field/value array reply (HGETALL, a stream
 * entry's fields, an XINFO group), or NULL. */
const char *sreply_field(const redisReply *arr, const char *name);

#endif
