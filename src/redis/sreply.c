/* SPDX-License-Identifier: BSD-2-Clause */
/* sreply: the shapes of XREADGROUP, the claim, renew, load and transition scripts,
 * XINFO and the plain replies the consumer reads. */
#include "redis/sreply.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "core/lag.h"

/* A struct sreply is never defined: a pointer to one is a pointer to the
 * redisReply it views, converted back only here. */
const struct sreply *
sreply_of(const struct redisReply *r)
{
	return (const struct sreply *)(const void *)r;
}

static const redisReply *
tree(const struct sreply *r)
{
	return (const redisReply *)(const void *)r;
}

static const redisReply *
elem(const redisReply *r, size_t i, int type)
{
	if (r == NULL || r->type != REDIS_REPLY_ARRAY || i >= r->elements ||
	    r->element == NULL || r->element[i] == NULL || r->element[i]->type != type)
		return NULL;
	return r->element[i];
}

/* A string reply as a C string, or NULL when it holds a NUL byte (issue 37
 * item 6): every value is length-delimited on the wire, and a C string cut
 * at an embedded NUL would name another record ("e-nul\0x" as "e-nul"). So
 * nothing read from a reply becomes a C string but through here. */
static const char *
whole(const redisReply *r)
{
	if (r == NULL || r->str == NULL || memchr(r->str, '\0', r->len) != NULL)
		return NULL;
	return r->str;
}

/* 1 when the string reply r is exactly name (length included). */
static int
is_name(const redisReply *r, const char *name)
{
	const char *s = whole(r);
	return s != NULL && strcmp(s, name) == 0;
}

static int
is_array(const redisReply *r)
{
	return r != NULL && r->type == REDIS_REPLY_ARRAY;
}

static const char *
field(const redisReply *arr, const char *name)
{
	for (size_t i = 0; is_array(arr) && i + 1 < arr->elements; i += 2) {
		const redisReply *k = elem(arr, i, REDIS_REPLY_STRING);
		const redisReply *v = elem(arr, i + 1, REDIS_REPLY_STRING);
		if (is_name(k, name))
			return whole(v);
	}
	return NULL;
}

#define DELIVERIES_MAX 1000000000

/* An entry's `priorDeliveries` (lua/handback.lua): 1 to 9 digits, else 0
 * -- the same rule as the scripts' pattern, so both count alike. */
static int
prior_deliveries(const char *v)
{
	int n = 0;
	size_t len = 0;

	if (v == NULL)
		return 0;
	for (; v[len] != '\0'; len++) {
		if (v[len] < '0' || v[len] > '9' || len == 9)
			return 0;
		n = n * 10 + (v[len] - '0');
	}
	return n;
}

int
sreply_stream_id_ok(const char *s)
{
	return lag_stream_id_ok(s);
}

/* [stream_id, fields] or [stream_id, fields, deliveries]: 0, or -1. A stream
 * id that is not MS-SEQ is refused here, at the edge: it is logged bare and
 * passed back to Redis, so a hostile server cannot inject through it. */
static int
entry_of(const redisReply *e, struct sreply_entry *out)
{
	const redisReply *sid = elem(e, 0, REDIS_REPLY_STRING);
	const redisReply *n = elem(e, 2, REDIS_REPLY_INTEGER);
	long long count = 1;

	if (whole(sid) == NULL || e->elements < 2 || !sreply_stream_id_ok(sid->str))
		return -1;
	out->stream = NULL;
	out->stream_id = sid->str;
	out->id = field(e->element[1], "id");
	out->traceparent = field(e->element[1], "traceparent");
	if (n != NULL && n->integer > 0)
		count = n->integer > DELIVERIES_MAX ? DELIVERIES_MAX : n->integer;
	/* R12 across a hand-back: the count the record had reached before */
	count += prior_deliveries(field(e->element[1], "priorDeliveries"));
	out->deliveries = count > DELIVERIES_MAX ? DELIVERIES_MAX : (int)count;
	return 0;
}

/* stream: the key the entries were read from (XREADGROUP), or NULL. */
static int
each_entry(const redisReply *entries, const char *stream, sreply_entry_cb *cb, void *arg)
{
	int count = 0;

	for (size_t i = 0; is_array(entries) && i < entries->elements; i++) {
		struct sreply_entry e;
		if (entry_of(entries->element[i], &e) == 0) {
			e.stream = stream;
			cb(arg, &e);
			count++;
		}
	}
	return count;
}

static void
each_id(const redisReply *ids, sreply_id_cb *cb, void *arg)
{
	for (size_t i = 0; is_array(ids) && i < ids->elements; i++) {
		const redisReply *id = elem(ids, i, REDIS_REPLY_STRING);
		if (whole(id) != NULL && sreply_stream_id_ok(id->str))
			cb(arg, id->str);
	}
}

const char *
sreply_field(const struct sreply *arr, const char *name)
{
	return field(tree(arr), name);
}

int
sreply_read(const struct sreply *reply, sreply_entry_cb *cb, void *arg)
{
	const redisReply *r = tree(reply);
	int count = 0;

	if (r != NULL && r->type == REDIS_REPLY_NIL)
		return 0;
	if (!is_array(r))
		return -1;
	for (size_t i = 0; i < r->elements; i++) {
		const redisReply *s = elem(r, i, REDIS_REPLY_ARRAY);
		const redisReply *key = elem(s, 0, REDIS_REPLY_STRING);
		if (s != NULL && s->elements == 2 && whole(key) != NULL)
			count += each_entry(elem(s, 1, REDIS_REPLY_ARRAY), key->str, cb, arg);
	}
	return count;
}

int
sreply_claim(const struct sreply *reply, char *next, size_t n, sreply_entry_cb *entry,
	     sreply_id_cb *deleted, void *arg)
{
	const redisReply *r = tree(reply);
	const redisReply *nx = elem(r, 0, REDIS_REPLY_STRING);

	if (n > 0)
		snprintf(next, n, "0-0");
	if (!is_array(r) || r->elements != 3)
		return -1;
	if (whole(nx) != NULL && n > 0 && strlen(nx->str) < n)
		snprintf(next, n, "%s", nx->str);
	int count = each_entry(elem(r, 1, REDIS_REPLY_ARRAY), NULL, entry, arg);
	each_id(elem(r, 2, REDIS_REPLY_ARRAY), deleted, arg);
	return count;
}

int
sreply_handback(const struct sreply *reply, char *buf, size_t n)
{
	const redisReply *r = tree(reply);
	const redisReply *ok = elem(r, 0, REDIS_REPLY_INTEGER);
	const redisReply *sid = elem(r, 1, REDIS_REPLY_STRING);

	if (ok == NULL)
		return -1;
	if (ok->integer == 0)
		return 0;
	if (ok->integer != 1 || whole(sid) == NULL || strlen(sid->str) >= n)
		return -1;
	memcpy(buf, sid->str, strlen(sid->str) + 1);
	return 1;
}

int
sreply_renew(const struct sreply *reply, sreply_id_cb *lost, sreply_id_cb *gone, void *arg)
{
	const redisReply *r = tree(reply);

	if (!is_array(r) || r->elements != 2)
		return -1;
	each_id(elem(r, 0, REDIS_REPLY_ARRAY), lost, arg);
	each_id(elem(r, 1, REDIS_REPLY_ARRAY), gone, arg);
	return 0;
}

long long
sreply_group_lag(const struct sreply *reply, const char *group)
{
	const redisReply *r = tree(reply);

	for (size_t i = 0; is_array(r) && i < r->elements; i++) {
		const redisReply *g = elem(r, i, REDIS_REPLY_ARRAY);
		const char *name = field(g, "name");
		if (name == NULL || strcmp(name, group) != 0)
			continue;
		for (size_t k = 0; k + 1 < g->elements; k += 2) {
			const redisReply *key = elem(g, k, REDIS_REPLY_STRING);
			const redisReply *v = elem(g, k + 1, REDIS_REPLY_INTEGER);
			if (is_name(key, "lag"))
				return v ? v->integer : -1;
		}
		return -1;
	}
	return -1;
}

int
sreply_redis_version(const struct sreply *reply, int *major, int *minor)
{
	const redisReply *r = tree(reply);

	if (r != NULL && (r->type == REDIS_REPLY_NIL ||
	    (r->type == REDIS_REPLY_STRING && r->len == 0)))
		return 1;
	if (r == NULL || r->type != REDIS_REPLY_STRING || whole(r) == NULL)
		return -1;
	char *end;
	long ma = strtol(r->str, &end, 10);
	if (end == r->str || *end != '.' || ma < 0 || ma > 999)
		return -1;
	const char *m2 = end + 1;
	long mi = strtol(m2, &end, 10);
	if (end == m2 || mi < 0 || mi > 999)
		return -1;
	*major = (int)ma;
	*minor = (int)mi;
	return 0;
}

const char *
sreply_error_text(const struct sreply *reply)
{
	const redisReply *r = tree(reply);

	if (r == NULL || r->type != REDIS_REPLY_ERROR)
		return NULL;
	if (r->str == NULL)
		return "";
	return whole(r) != NULL ? r->str : "(an error text holding a NUL byte)";
}

const struct sreply *
sreply_batch_item(const struct sreply *reply, size_t n, size_t i)
{
	const redisReply *r = tree(reply);

	if (r != NULL && r->type == REDIS_REPLY_ERROR)
		return reply;
	if (!is_array(r) || r->elements != n || i >= n || r->element == NULL)
		return NULL;
	return sreply_of(r->element[i]);
}

int
sreply_error(const struct sreply *reply, const char *prefix)
{
	const redisReply *r = tree(reply);

	if (r == NULL || r->type != REDIS_REPLY_ERROR)
		return 0;
	return prefix == NULL ||
	    (r->str != NULL && strncmp(r->str, prefix, strlen(prefix)) == 0);
}

int
sreply_integer(const struct sreply *reply, long long *out)
{
	const redisReply *r = tree(reply);

	if (r == NULL || r->type != REDIS_REPLY_INTEGER)
		return -1;
	*out = r->integer;
	return 0;
}

int
sreply_array_len(const struct sreply *reply, size_t *n)
{
	const redisReply *r = tree(reply);

	if (!is_array(r))
		return -1;
	*n = r->elements;
	return 0;
}

void
sreply_transition(const struct sreply *reply, struct sreply_transition *t)
{
	const redisReply *r = tree(reply);
	const redisReply *ok = elem(r, 0, REDIS_REPLY_INTEGER);
	const redisReply *why = elem(r, 1, REDIS_REPLY_STRING);
	const redisReply *fence = elem(r, 3, REDIS_REPLY_STRING);

	t->written = ok != NULL && ok->integer == 1;
	t->why = whole(why);
	t->fence = whole(fence) != NULL ? strtoll(fence->str, NULL, 10) : -1;
}

/* Element i as a C string: NULL when it is not a string (nil: absent); -1
 * in *bad when it is one with a NUL byte in it (a malformed reply). */
static const char *
str_or_null(const redisReply *r, size_t i, int *bad)
{
	const redisReply *e = elem(r, i, REDIS_REPLY_STRING);

	if (e != NULL && whole(e) == NULL)
		*bad = -1;
	return whole(e);
}

int
sreply_load(const struct sreply *reply, struct sreply_load *out)
{
	const redisReply *r = tree(reply);
	const redisReply *exists = elem(r, 0, REDIS_REPLY_INTEGER);
	const redisReply *withheld = elem(r, 1, REDIS_REPLY_INTEGER);

	memset(out, 0, sizeof *out);
	/* 6 since attemptsBase (§11); 5 from a script loaded before it */
	if (exists == NULL || withheld == NULL || (r->elements != 5 && r->elements != 6) ||
	    withheld->integer < 0)
		return -1;
	int bad = 0;
	out->exists = exists->integer == 1;
	out->withheld = withheld->integer;
	out->state = str_or_null(r, 2, &bad);
	out->attempts = str_or_null(r, 3, &bad);
	out->record = str_or_null(r, 4, &bad);
	out->attempts_base = r->elements > 5 ? str_or_null(r, 5, &bad) : NULL;
	/* a record either fits or is withheld, never both */
	if (bad < 0 || (out->withheld > 0 && out->record != NULL)) {
		memset(out, 0, sizeof *out);
		return -1;
	}
	return 0;
}

const struct sreply *
sreply_element(const struct sreply *reply, size_t i)
{
	const redisReply *r = tree(reply);

	if (!is_array(r) || i >= r->elements || r->element == NULL)
		return NULL;
	return sreply_of(r->element[i]);
}

const char *
sreply_string(const struct sreply *reply)
{
	const redisReply *r = tree(reply);

	return r != NULL && r->type == REDIS_REPLY_STRING ? whole(r) : NULL;
}

const struct sreply *
sreply_field_reply(const struct sreply *arr, const char *name)
{
	const redisReply *r = tree(arr);

	for (size_t i = 0; is_array(r) && i + 1 < r->elements; i += 2) {
		const redisReply *k = elem(r, i, REDIS_REPLY_STRING);
		if (is_name(k, name))
			return sreply_of(r->element[i + 1]);
	}
	return NULL;
}
