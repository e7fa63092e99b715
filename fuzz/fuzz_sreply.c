/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_sreply: the Redis replies the consumer interprets -- XREADGROUP, the
 * claim, renew and transition scripts (XAUTOCLAIM, XPENDING shapes), XINFO
 * GROUPS, the plain replies (errors, integers, hashes), the sentinel's and
 * ROLE's answers, and a cluster's CLUSTER SHARDS and MOVED / ASK -- built
 * as redisReply trees from the fuzz bytes. None may crash, read out of
 * bounds or hand a callback a NULL stream id, every count must match the
 * callbacks made, and a slot map must name real ports. Every C string
 * handed out that points into the tree is the whole of its reply string:
 * none is cut at an embedded NUL byte (issue 37 item 6, "e-nul\0x"). */
#include "redis/cluster.h"
#include "fuzz.h"
#include "redis/sentinel.h"
#include "redis/sreply.h"

#define MAX_DEPTH	6
#define MAX_ELEMS	8

struct in {
	const uint8_t *p;
	size_t n;
};

static uint8_t
take(struct in *in)
{
	if (in->n == 0)
		return 0;
	in->n--;
	return *in->p++;
}

/* A string of up to 31 bytes, taken from the input. */
static redisReply *
leaf(struct in *in, int type)
{
	redisReply *r = calloc(1, sizeof *r);
	size_t len = take(in) % 32;

	if (r == NULL || (r->str = malloc(len + 1)) == NULL)
		abort();
	for (size_t i = 0; i < len; i++)
		r->str[i] = (char)take(in);
	r->str[len] = '\0';
	r->len = len;
	r->type = type;
	return r;
}

static redisReply *
tree(struct in *in, int depth)
{
	uint8_t t = take(in) % 6;
	redisReply *r;

	if (t == 0 || t == 5)
		return leaf(in, t == 0 ? REDIS_REPLY_STRING : REDIS_REPLY_ERROR);
	if (t == 1 || t == 2 || depth >= MAX_DEPTH) {
		if ((r = calloc(1, sizeof *r)) == NULL)
			abort();
		r->type = t == 2 ? REDIS_REPLY_NIL : REDIS_REPLY_INTEGER;
		r->integer = (long long)take(in) - 64;
		return r;
	}
	if ((r = calloc(1, sizeof *r)) == NULL)
		abort();
	r->type = REDIS_REPLY_ARRAY;
	r->elements = take(in) % (MAX_ELEMS + 1);
	if ((r->element = calloc(r->elements + 1, sizeof *r->element)) == NULL)
		abort();
	for (size_t i = 0; i < r->elements; i++)
		r->element[i] = tree(in, depth + 1);
	return r;
}

static void
tree_free(redisReply *r)
{
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++)
		tree_free(r->element[i]);
	free(r->element);
	free(r->str);
	free(r);
}

static int calls;
static size_t stream_bytes;
static const redisReply *root;

/* -1 when s points at the start of a leaf of r whose bytes hold a NUL (a
 * string cut short), 1 when it is a whole leaf, 0 when no leaf starts there. */
static int
leaf_at(const redisReply *r, const char *s)
{
	if (r->str == s)
		return memchr(r->str, '\0', r->len) != NULL ? -1 : 1;
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
		int k = leaf_at(r->element[i], s);
		if (k != 0)
			return k;
	}
	return 0;
}

static void
whole_or_abort(const char *s)
{
	if (s != NULL && root != NULL && leaf_at(root, s) < 0)
		abort();
}

static void
on_entry(void *arg, const struct sreply_entry *e)
{
	(void)arg;
	if (e->stream_id == NULL || e->deliveries < 1)
		abort();
	whole_or_abort(e->stream_id);
	whole_or_abort(e->id);
	whole_or_abort(e->traceparent);
	whole_or_abort(e->stream);
	/* the stream key points into the reply: read it all (ASan checks) */
	if (e->stream != NULL)
		stream_bytes += strlen(e->stream);
	calls++;
}

static void
on_id(void *arg, const char *id)
{
	(void)arg;
	if (id == NULL)
		abort();
	whole_or_abort(id);
}

/* The map from the reply (when it parses) names only ports in range, and a
 * redirect only slots and ports in range. */
static void
check_cluster(const redisReply *r)
{
	static struct cluster_map *m;
	struct cluster_redirect rd = {CLUSTER_NO_REDIRECT, 0, {"", 0}};

	if (m == NULL && (m = cluster_map_new()) == NULL)
		abort();
	if (cluster_map_parse_shards(m, r, "asked") == 0)
		for (unsigned s = 0; s < CLUSTER_SLOTS; s += 97) {
			const struct cluster_node *o = cluster_map_owner(m, s);
			if (o != NULL && (o->port < 1 || o->port > 65535))
				abort();
		}
	/* rconn hands error_seen the text of an error reply */
	if (cluster_parse_redirect(r->type == REDIS_REPLY_ERROR ? r->str : NULL, &rd) !=
	    CLUSTER_NO_REDIRECT &&
	    (rd.slot >= CLUSTER_SLOTS || rd.to.port < 1 || rd.to.port > 65535))
		abort();
	(void)cluster_map_apply(m, &rd);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = {data, size};
	redisReply *r = tree(&in, 0);
	char next[48], host[HOSTPORT_HOST_MAX];
	int port, n;

	root = r;
	calls = 0;
	n = sreply_read(sreply_of(r), on_entry, NULL);
	if (n >= 0 && n != calls)
		abort();
	calls = 0;
	n = sreply_claim(sreply_of(r), next, sizeof next, on_entry, on_id, NULL);
	if ((n >= 0 && n != calls) || strlen(next) >= sizeof next)
		abort();
	(void)sreply_renew(sreply_of(r), on_id, on_id, NULL);
	(void)sreply_group_lag(sreply_of(r), "workers");
	whole_or_abort(sreply_field(sreply_of(r), "id"));
	whole_or_abort(sreply_string(sreply_of(r)));
	struct sreply_load l;
	if (sreply_load(sreply_of(r), &l) == 0) {
		if (l.withheld > 0 && l.record != NULL)
			abort();
		whole_or_abort(l.state);
		whole_or_abort(l.attempts);
		whole_or_abort(l.record);
		whole_or_abort(l.attempts_base);
	}
	struct sreply_transition t;
	long long v;
	size_t len;
	sreply_transition(sreply_of(r), &t);
	if (t.written && sreply_error(sreply_of(r), NULL))
		abort();	/* an error reply never wrote a step */
	if (sreply_integer(sreply_of(r), &v) == 0 && sreply_array_len(sreply_of(r), &len) == 0)
		abort();	/* one type per reply */
	if (sreply_error(sreply_of(r), "NOGROUP") && !sreply_error(sreply_of(r), NULL))
		abort();
	if (sentinel_parse_reply(r, host, sizeof host, &port) == 0 && (port < 1 || port > 65535))
		abort();
	(void)sentinel_is_master(r);
	check_cluster(r);
	root = NULL;
	tree_free(r);
	return 0;
}
