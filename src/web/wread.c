/* SPDX-License-Identifier: BSD-2-Clause */
/* wread: the connection, the overview, the dead letters and the charts' buckets
 * (wread.h); the jobs and one job are wread_jobs.c's. */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "redis/cluster.h"
#include "ctl/cli.h"
#include "ctl/clir.h"
#include "ctl/ctl.h"
#include "core/record.h"
#include "conf/secrets.h"
#include "redis/rtls.h"
#include "redis/sreply.h"
#include "core/store.h"
#include "worker/wstats.h"
#include "wjob.h"
#include "wread.h"
#include "wread_int.h"
#include "base/wtime.h"

#define WREAD_MAX_ARGS	16
#define STATS_KEY_MAX	(STORE_KEY_MAX + 32)	/* a bucket's key */


struct wread *
wread_new(struct cfg *cfg, char *err, size_t errlen)
{
	const struct cfg_role *mon = &cfg->roles[CFG_ROLE_MONITOR];
	struct wread *r;

	/* No refusal of [redis] sentinels, cluster or tls: clir follows them
	 * (one discovery, allow_hosts and the clear-text rule, one TLS path). */
	if ((r = calloc(1, sizeof *r)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r->cfg = cfg;
	r->nshards = cfg->redis.shards > 0 ? (unsigned)cfg->redis.shards : 1;
	/* as warrantctl --as monitor would set it up (cli_load_config); without
	 * [redis.monitor], [redis]'s user, as warrantctl without --as */
	r->c.cfg = cfg;
	r->c.shard_opt = -1;
	if (mon->username != NULL) {
		r->c.as = "monitor";
		r->c.username = mon->username;
		r->c.password_file = mon->password_file;
		snprintf(r->c.user_section, sizeof r->c.user_section, "redis.%s", r->c.as);
	} else {
		r->c.username = cfg->redis.username;
		r->c.password_file = cfg->redis.password_file;
		snprintf(r->c.user_section, sizeof r->c.user_section, "redis");
	}
	if (wread_use_shard(r, 0, err, errlen) != 0)
		goto fail;
	/* [redis] tls made now, not at the first read, so that -t and the start
	 * check its files; clir_connect uses it (and clir_close frees it) */
	if (cfg->redis.tls && (r->c.tls = rtls_ctx_new(cfg, err, errlen)) == NULL)
		goto fail;
	if (cfg->records.signature_required &&
	    secrets_read_verify_key(cfg, &r->key, &r->key_len, err, errlen) != 0)
		goto fail;
	return r;
fail:
	wread_free(r);
	return NULL;
}

void
wread_free(struct wread *r)
{
	if (r == NULL)
		return;
	clir_close(&r->c);
	if (r->key)
		secrets_free(r->key, r->key_len);
	free(r);
}

int
wread_use_shard(struct wread *r, unsigned i, char *err, size_t errlen)
{
	if (cluster_shard_prefix(r->prefix, sizeof r->prefix, r->cfg->redis.prefix, i,
	    (unsigned)r->cfg->redis.shards) != 0 ||
	    store_keys_init(&r->keys, r->prefix, "warrantd-web") != 0 ||
	    cli_use_shard(&r->c, i) != 0) {
		snprintf(err, errlen, "[redis] prefix is too long");
		return -1;
	}
	r->shard = i;
	return 0;
}

/* One command on clir's handle (the shard's node, following one -ASK); a
 * connection lost on the way is made again once: clir_asking's NULL, then
 * clir_drop, and clir_connect makes a new one. The reply (caller frees
 * with freeReplyObject), an error reply included, or NULL with err (clir
 * said the cause on stderr). */
redisReply *
wread_cmdv(struct wread *r, int argc, const char **argv, char *err, size_t errlen)
{
	for (int tries = 0; tries < 2; tries++) {
		if (clir_connect(&r->c) != 0) {
			snprintf(err, errlen, "cannot connect to Redis (as [%s])", r->c.user_section);
			return NULL;
		}
		redisReply *rep = clir_asking(&r->c, argc, argv, NULL);
		if (rep != NULL)
			return rep;
		snprintf(err, errlen, "redis: %s: no reply (connection lost)", argv[0]);
		clir_drop(&r->c);
	}
	return NULL;
}

/* cmdv of the NULL-terminated strings; an error reply is an error here. */
redisReply *
wread_cmd(struct wread *r, char *err, size_t errlen, const char *first, ...)
{
	const char *argv[WREAD_MAX_ARGS];
	int argc = 0;
	va_list ap;

	argv[argc++] = first;
	va_start(ap, first);
	while (argc < WREAD_MAX_ARGS && (argv[argc] = va_arg(ap, const char *)) != NULL)
		argc++;
	va_end(ap);
	redisReply *rep = wread_cmdv(r, argc, argv, err, errlen);
	const char *why = rep ? sreply_error_text(sreply_of(rep)) : NULL;
	if (why != NULL) {
		snprintf(err, errlen, "redis: %s: %s", first, why);
		freeReplyObject(rep);
		return NULL;
	}
	return rep;
}

/* A reply as JSON: strings through ctl_scalar (integers as numbers, as
 * warrantctl shows them), arrays element by element. */
json_t *
wread_reply_json(const struct sreply *v)
{
	long long n;
	size_t len;
	const char *s;

	if (v == NULL)
		return json_null();
	if (sreply_integer(v, &n) == 0)
		return json_integer(n);
	if ((s = sreply_string(v)) != NULL) {
		json_t *j = ctl_scalar(s);
		return j ? j : json_null();
	}
	if (sreply_array_len(v, &len) == 0) {
		json_t *a = json_array();
		for (size_t i = 0; i < len; i++)
			json_array_append_new(a, wread_reply_json(sreply_element(v, i)));
		return a;
	}
	return json_null();
}

/* A flat field/value array (HGETALL, a stream entry's fields) into o,
 * without `skip`. */
void
wread_add_flat(json_t *o, const struct sreply *arr, const char *skip)
{
	size_t n = 0;

	if (sreply_array_len(arr, &n) != 0)
		return;
	for (size_t i = 0; i + 1 < n; i += 2) {
		const char *k = sreply_string(sreply_element(arr, i));
		if (k != NULL && (skip == NULL || strcmp(k, skip) != 0))
			json_object_set_new(o, k, wread_reply_json(sreply_element(arr, i + 1)));
	}
}

static int
length_of(struct wread *r, const char *c, const char *key, json_t *o, const char *name,
	  char *err, size_t errlen)
{
	redisReply *rep = wread_cmd(r, err, errlen, c, key, (char *)NULL);
	long long n = 0;

	if (rep == NULL)
		return -1;
	if (sreply_integer(sreply_of(rep), &n) != 0)
		n = 0;
	json_object_set_new(o, name, json_integer(n));
	freeReplyObject(rep);
	return 0;
}

/* XINFO GROUPS' entry of our group into st (warrantctl status's fields).
 * 1 when the group exists, 0 when not, -1 on error. */
static int
group_fields(struct wread *r, json_t *st, char *err, size_t errlen)
{
	const char *argv[] = {"XINFO", "GROUPS", r->keys.jobs};
	redisReply *rep = wread_cmdv(r, 3, argv, err, errlen);
	const char *why = rep ? sreply_error_text(sreply_of(rep)) : NULL;
	const struct sreply *g = NULL;
	size_t n = 0;

	if (rep == NULL)
		return -1;
	if (why != NULL && strstr(why, "no such key") == NULL) {
		snprintf(err, errlen, "redis: XINFO GROUPS: %s", why);
		freeReplyObject(rep);
		return -1;
	}
	if (why == NULL && sreply_array_len(sreply_of(rep), &n) != 0)
		n = 0;
	for (size_t i = 0; i < n; i++) {
		const struct sreply *e = sreply_element(sreply_of(rep), i);
		const char *name = sreply_field(e, "name");
		if (name && strcmp(name, r->cfg->redis.group) == 0)
			g = e;
	}
	json_object_set_new(st, "groupExists", json_boolean(g != NULL));
	if (g == NULL) {
		/* created at id 0 by the first worker (R14): all of it is lag */
		json_object_set_new(st, "lag", json_deep_copy(json_object_get(st,
		    "streamLength")));
		json_object_set_new(st, "lastDeliveredId", json_string("0-0"));
	} else {
		json_object_set_new(st, "lag", wread_reply_json(sreply_field_reply(g, "lag")));
		json_object_set_new(st, "entriesRead", wread_reply_json(sreply_field_reply(g,
		    "entries-read")));
		json_object_set_new(st, "lastDeliveredId", wread_reply_json(sreply_field_reply(g,
		    "last-delivered-id")));
	}
	freeReplyObject(rep);
	return g != NULL;
}

static int
pending_fields(struct wread *r, json_t *st, int have_group, char *err, size_t errlen)
{
	const char *group = r->cfg->redis.group;
	long long count = 0;
	redisReply *rep;

	if (have_group) {
		if ((rep = wread_cmd(r, err, errlen, "XPENDING", r->keys.jobs, group, (char *)NULL)) == NULL)
			return -1;
		if (sreply_integer(sreply_element(sreply_of(rep), 0), &count) != 0)
			count = 0;
		freeReplyObject(rep);
	}
	json_object_set_new(st, "pending", json_integer(count));
	json_object_set_new(st, "oldestPendingId", json_null());
	json_object_set_new(st, "oldestPendingIdleMs", json_null());
	if (count == 0)
		return 0;
	if ((rep = wread_cmd(r, err, errlen, "XPENDING", r->keys.jobs, group, "-", "+", "1",
	    (char *)NULL)) == NULL)
		return -1;
	const struct sreply *e = sreply_element(sreply_of(rep), 0);
	size_t n = 0;
	if (sreply_array_len(e, &n) == 0 && n >= 4) {
		json_object_set_new(st, "oldestPendingId", wread_reply_json(sreply_element(e, 0)));
		json_object_set_new(st, "oldestPendingIdleMs", wread_reply_json(sreply_element(e, 2)));
	}
	freeReplyObject(rep);
	return 0;
}

static json_t *
consumer_entry(json_t *consumers, const char *name)
{
	json_t *o = json_object_get(consumers, name);

	if (o == NULL) {
		o = json_pack("{s:b, s:i, s:n}", "inGroup", 0, "pending", 0, "idleMs");
		json_object_set_new(consumers, name, o);
	}
	return o;
}

/* The prefix as a SCAN MATCH pattern that matches it literally. */
static void
glob_escape(char *dst, size_t n, const char *s)
{
	size_t j = 0;

	for (; *s && j + 2 < n; s++) {
		if (strchr("*?[]\\", *s) != NULL)
			dst[j++] = '\\';
		dst[j++] = *s;
	}
	dst[j] = '\0';
}

static int
consumer_fields(struct wread *r, json_t *st, int have_group, int64_t now_ms, char *err,
		size_t errlen)
{
	json_t *consumers = json_object(), *o;
	char pattern[2 * STORE_KEY_MAX + 16], esc[2 * STORE_KEY_MAX], cursor[32] = "0";
	char key[2 * STORE_KEY_MAX];
	size_t plen = strlen(r->prefix) + strlen(":consumer:"), n = 0, alive = 0;
	const char *name;
	redisReply *rep;

	json_object_set_new(st, "consumers", consumers);
	if (have_group) {
		if ((rep = wread_cmd(r, err, errlen, "XINFO", "CONSUMERS", r->keys.jobs,
		    r->cfg->redis.group, (char *)NULL)) == NULL)
			return -1;
		if (sreply_array_len(sreply_of(rep), &n) != 0)
			n = 0;
		for (size_t i = 0; i < n; i++) {
			const struct sreply *info = sreply_element(sreply_of(rep), i);
			const char *cn = sreply_field(info, "name");
			if (cn == NULL)
				continue;
			o = consumer_entry(consumers, cn);
			json_object_set_new(o, "inGroup", json_true());
			json_object_set_new(o, "pending", wread_reply_json(sreply_field_reply(info,
			    "pending")));
			json_object_set_new(o, "idleMs", wread_reply_json(sreply_field_reply(info,
			    "idle")));
		}
		freeReplyObject(rep);
	}
	/* a consumer that has not read yet is in no group: its heartbeat says it */
	glob_escape(esc, sizeof esc, r->prefix);
	snprintf(pattern, sizeof pattern, "%s:consumer:*", esc);
	do {
		if ((rep = wread_cmd(r, err, errlen, "SCAN", cursor, "MATCH", pattern, "COUNT", "1000",
		    (char *)NULL)) == NULL)
			return -1;
		const struct sreply *keys = sreply_element(sreply_of(rep), 1);
		const char *next = sreply_string(sreply_element(sreply_of(rep), 0));
		size_t nk = 0;
		if (next == NULL || sreply_array_len(keys, &nk) != 0) {
			freeReplyObject(rep);
			break;
		}
		snprintf(cursor, sizeof cursor, "%s", next);
		for (size_t i = 0; i < nk; i++) {
			const char *k = sreply_string(sreply_element(keys, i));
			if (k != NULL && strlen(k) > plen)
				consumer_entry(consumers, k + plen);
		}
		freeReplyObject(rep);
	} while (strcmp(cursor, "0") != 0);
	json_object_foreach(consumers, name, o) {
		snprintf(key, sizeof key, "%s:consumer:%s", r->prefix, name);
		if ((rep = wread_cmd(r, err, errlen, "HGETALL", key, (char *)NULL)) == NULL)
			return -1;
		int live = sreply_array_len(sreply_of(rep), &n) == 0 && n > 0;
		json_object_set_new(o, "alive", json_boolean(live));
		wread_add_flat(o, sreply_of(rep), NULL);
		freeReplyObject(rep);
		const char *at = json_string_value(json_object_get(o, "heartbeatAt"));
		int64_t at_ms;
		if (at && wtime_parse_rfc3339(at, &at_ms) == 0)
			json_object_set_new(o, "heartbeatAgeMs", json_integer(now_ms - at_ms));
		alive += (size_t)live;
	}
	json_object_set_new(st, "alive", json_integer((json_int_t)alive));
	return 0;
}

static int
stream_status(struct wread *r, json_t *st, int64_t now_ms, char *err, size_t errlen)
{
	int g;
	char from[80];
	redisReply *rep;

	json_object_set_new(st, "stream", json_string(r->keys.jobs));
	json_object_set_new(st, "group", json_string(r->cfg->redis.group));
	if (length_of(r, "XLEN", r->keys.jobs, st, "streamLength", err, errlen) < 0 ||
	    (g = group_fields(r, st, err, errlen)) < 0 ||
	    pending_fields(r, st, g, err, errlen) < 0)
		return -1;
	const char *last = json_string_value(json_object_get(st, "lastDeliveredId"));
	snprintf(from, sizeof from, "(%s", last ? last : "0-0");
	if ((rep = wread_cmd(r, err, errlen, "XRANGE", r->keys.jobs, from, "+", "COUNT", "1",
	    (char *)NULL)) == NULL)
		return -1;
	json_object_set_new(st, "oldestUndelivered", wread_reply_json(sreply_element(sreply_element(
	    sreply_of(rep), 0), 0)));
	freeReplyObject(rep);
	if (length_of(r, "ZCARD", r->keys.scheduled, st, "scheduled", err, errlen) < 0 ||
	    length_of(r, "XLEN", r->keys.dead, st, "dead", err, errlen) < 0 ||
	    length_of(r, "XLEN", r->keys.notify, st, "notify", err, errlen) < 0)
		return -1;
	return consumer_fields(r, st, g, now_ms, err, errlen);
}

/* P:paused into o: shard 0's, where pauses are written for every worker. */
int
wread_add_paused(struct wread *r, json_t *o, char *err, size_t errlen)
{
	redisReply *rep;

	if (wread_use_shard(r, 0, err, errlen) < 0 ||
	    (rep = wread_cmd(r, err, errlen, "HGETALL", r->keys.paused, (char *)NULL)) == NULL)
		return -1;
	wread_add_flat(o, sreply_of(rep), NULL);
	freeReplyObject(rep);
	return 0;
}

json_t *
wread_overview(struct wread *r, int64_t now_ms, char *err, size_t errlen)
{
	json_t *ov = json_object(), *streams = json_array(), *paused = json_object();

	json_object_set_new(ov, "now", json_integer(now_ms));
	json_object_set_new(ov, "streams", streams);
	json_object_set_new(ov, "paused", paused);
	for (unsigned i = 0; i < r->nshards; i++) {
		json_t *st = json_object();
		json_array_append_new(streams, st);
		if (wread_use_shard(r, i, err, errlen) < 0 || stream_status(r, st, now_ms, err,
		    errlen) < 0)
			goto fail;
		if (i == 0 && wread_add_paused(r, paused, err, errlen) < 0)
			goto fail;
	}
	return ov;
fail:
	json_decref(ov);
	return NULL;
}

json_t *
wread_dead(struct wread *r, char *err, size_t errlen)
{
	json_t *by = json_object();
	json_int_t total = 0;
	char cursor[64];

	for (unsigned i = 0; i < r->nshards; i++) {
		if (wread_use_shard(r, i, err, errlen) < 0)
			goto fail;
		snprintf(cursor, sizeof cursor, "-");
		for (;;) {
			redisReply *rep = wread_cmd(r, err, errlen, "XRANGE", r->keys.dead, cursor, "+",
			    "COUNT", "1000", (char *)NULL);
			size_t n = 0;
			if (rep == NULL)
				goto fail;
			if (sreply_array_len(sreply_of(rep), &n) != 0)
				n = 0;
			for (size_t k = 0; k < n; k++) {
				const struct sreply *e = sreply_element(sreply_of(rep), k);
				const char *reason = sreply_field(sreply_element(e, 1),
				    store_dead_fields[STORE_DEAD_REASON]);
				json_t *c = json_object_get(by, reason ? reason : "?");
				json_object_set_new(by, reason ? reason : "?", json_integer(c ?
				    json_integer_value(c) + 1 : 1));
				total++;
			}
			const char *last = n ? sreply_string(sreply_element(sreply_element(
			    sreply_of(rep), n - 1), 0)) : NULL;
			if (last != NULL)
				snprintf(cursor, sizeof cursor, "(%s", last);
			freeReplyObject(rep);
			if (n < 1000 || last == NULL)
				break;
		}
	}
	return json_pack("{s:o, s:I}", "reasons", by, "total", total);
fail:
	json_decref(by);
	return NULL;
}

/* A bucket's flat HGETALL reply as {field: n}. */
static json_t *
bucket_of(const struct sreply *rep)
{
	json_t *o = json_object();
	size_t n = 0;

	if (sreply_array_len(rep, &n) != 0)
		n = 0;
	for (size_t i = 0; i + 1 < n; i += 2) {
		const char *f = sreply_string(sreply_element(rep, i));
		const char *v = sreply_string(sreply_element(rep, i + 1));
		if (f != NULL && v != NULL)
			json_object_set_new(o, f, json_integer(strtoll(v, NULL, 10)));
	}
	return o;
}

json_t *
wread_stats(struct wread *r, int64_t now_ms, long minutes, char *err, size_t errlen)
{
	long long last = now_ms / 60000, first = last - minutes + 1;
	json_t *buckets = json_array();
	char (*keys)[STATS_KEY_MAX] = NULL;
	const char **argv = NULL;
	redisReply **reps = NULL;
	size_t n = 0, cap = minutes > 0 ? (size_t)minutes : 1;

	if ((keys = calloc(cap, STATS_KEY_MAX)) == NULL ||
	    (argv = calloc(2 * cap, sizeof *argv)) == NULL ||
	    (reps = calloc(cap, sizeof(redisReply *))) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (wread_use_shard(r, 0, err, errlen) < 0)
		goto fail;
	for (long long m = first; m <= last; m++, n++) {
		if (wstats_key(r->keys.paused, m * 60000, keys[n], STATS_KEY_MAX) != 0)
			break;
		argv[2 * n] = "HGETALL";
		argv[2 * n + 1] = keys[n];
	}
	/* one pipeline of HGETALLs: a day is 1440 small hashes, one round
	 * trip; a connection lost on the way is made again once */
	for (int tries = 0;; tries++) {
		if (clir_connect(&r->c) != 0) {
			snprintf(err, errlen, "cannot connect to Redis (as [%s])", r->c.user_section);
			goto fail;
		}
		if (clir_pipeline(&r->c, n, 2, argv, reps) == 0)
			break;
		clir_drop(&r->c);
		if (tries == 1) {
			snprintf(err, errlen, "redis: HGETALL: no reply (connection lost)");
			goto fail;
		}
	}
	for (size_t i = 0; i < n; i++) {
		json_array_append_new(buckets, bucket_of(sreply_of(reps[i])));
		freeReplyObject(reps[i]);
	}
	free(reps);
	free(argv);
	free(keys);
	return json_pack("{s:I, s:o}", "first", (json_int_t)first, "buckets", buckets);
fail:
	free(reps);
	free(argv);
	free(keys);
	json_decref(buckets);
	return NULL;
}
