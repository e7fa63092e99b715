/* SPDX-License-Identifier: BSD-2-Clause */
/* wread_jobs: the jobs lists and one job's page (wread.h, wread_int.h). */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/record.h"
#include "ctl/ctl.h"
#include "redis/cluster.h"
#include "wjob.h"
#include "wread_int.h"

/* ---- jobs ---- */

struct jobs {
	struct wread *r;
	const struct wroute_jobq *q;
	int64_t now_ms;
	json_t *seen, *out;
	long skip;		/* matches still to pass over (earlier pages) */
	int more;
	char *err;
	size_t errlen;
};

static int
jobs_full(const struct jobs *j)
{
	return (long)json_array_size(j->out) >= WROUTE_PAGE;
}

/* The verified record's fields into o; "verified": false when it fails. */
static void
record_fields(const struct wread *r, json_t *o, const char *id, const char *raw,
	      int64_t now_ms)
{
	struct record_policy pol;
	struct record *rec;
	char detail[256];

	ctl_policy_init(&pol, r->cfg, (const unsigned char *)r->key, r->key_len);
	if (raw != NULL && record_load(&pol, id, raw, now_ms, &rec, NULL, detail,
	    sizeof detail) == RECORD_OK) {
		json_object_set_new(o, "action", json_string(rec->action));
		json_object_set_new(o, "resource", json_string(rec->resource));
		json_object_set_new(o, "onBehalfOf", json_string(rec->on_behalf_of));
		record_free(rec);
	} else
		json_object_set_new(o, "verified", json_false());
}

static int
text_match(const char *want, const json_t *v)
{
	const char *s = json_string_value(v);

	return want[0] == '\0' || (s != NULL && strcmp(s, want) == 0);
}

/* One recordId found in `where`: its hash says its state now (else the
 * source's `fallback`); listed when it passes the filters. */
static int
jobs_consider(struct jobs *j, const char *id, const char *where, const char *fallback)
{
	char hash[STORE_KEY_MAX + RECORD_ID_MAX + 8];
	redisReply *h = NULL;
	const struct wroute_jobq *q = j->q;

	if (id == NULL || json_object_get(j->seen, id) != NULL || j->more)
		return 0;
	json_object_set_new(j->seen, id, json_true());
	if (q->id[0] && strcmp(q->id, id) != 0)
		return 0;
	if (record_id_valid(id) && store_decision_key(&j->r->keys, id, hash, sizeof hash) == 0 &&
	    (h = wread_cmd(j->r, j->err, j->errlen, "HGETALL", hash, (char *)NULL)) == NULL)
		return -1;
	const char *state = h ? sreply_field(sreply_of(h), "state") : NULL;
	/* decide writes "queued" for a record it schedules: the schedule says
	 * what it waits for */
	if (strcmp(where, "scheduled") == 0 && (state == NULL || strcmp(state, "queued") == 0))
		state = "scheduled";
	json_t *o = json_pack("{s:s, s:s, s:s}", "id", id, "state", state ? state : fallback,
	    "source", where);
	if (o == NULL) {	/* not UTF-8: a hand-made entry */
		freeReplyObject(h);
		return 0;
	}
	if (h != NULL) {
		static const char *const shown[] = {"attempts", "owner", "updatedAt", "outcome",
		    NULL};
		record_fields(j->r, o, id, sreply_field(sreply_of(h), "record"), j->now_ms);
		for (const char *const *k = shown; *k; k++) {
			const struct sreply *v = sreply_field_reply(sreply_of(h), *k);
			if (v != NULL && sreply_string(v) != NULL)
				json_object_set_new(o, *k, wread_reply_json(v));
		}
	}
	freeReplyObject(h);
	int want = text_match(q->state, json_object_get(o, "state")) ||
	    (strcmp(q->state, "pending") == 0 && strcmp(where, "pending") == 0) ||
	    (strcmp(q->state, "scheduled") == 0 && strcmp(where, "scheduled") == 0);
	want = want && text_match(q->action, json_object_get(o, "action")) &&
	    text_match(q->resource, json_object_get(o, "resource")) &&
	    text_match(q->subject, json_object_get(o, "onBehalfOf"));
	if (want && j->skip > 0)
		j->skip--;
	else if (want && jobs_full(j))
		j->more = 1;
	else if (want)
		json_array_append(j->out, o);
	json_decref(o);
	return 0;
}

/* Each entry of a stream range reply: its field `field` (NULL: the
 * "id" field) considered. */
static int
jobs_entries(struct jobs *j, const struct sreply *arr, const char *where, const char *fallback,
	     const char *field)
{
	size_t n = 0;

	if (sreply_array_len(arr, &n) != 0)
		return 0;
	for (size_t i = 0; i < n && !j->more; i++) {
		const struct sreply *fields = sreply_element(sreply_element(arr, i), 1);
		const char *id = sreply_field(fields, field);
		const char *to = fallback ? fallback : sreply_field(fields, "to");
		if (jobs_consider(j, id, where, to ? to : "") < 0)
			return -1;
	}
	return 0;
}

static int
jobs_of_shard(struct jobs *j)
{
	struct wread *r = j->r;
	const char *group = r->cfg->redis.group;
	char count[16];
	redisReply *rep;
	size_t n = 0;

	snprintf(count, sizeof count, "%d", WREAD_SCAN_MAX);
	/* the PEL: running, retrying, auth_wait, or held by a dead consumer */
	const char *xp[] = {"XPENDING", r->keys.jobs, group, "-", "+", count};
	if ((rep = wread_cmdv(r, 6, xp, j->err, j->errlen)) == NULL)
		return -1;
	if (sreply_error_text(sreply_of(rep)) == NULL) {
		/* the entries' ids are stream ids: their recordIds are in the stream */
		if (sreply_array_len(sreply_of(rep), &n) != 0)
			n = 0;
		for (size_t i = 0; i < n && !j->more; i++) {
			const char *eid = sreply_string(sreply_element(sreply_element(
			    sreply_of(rep), i), 0));
			redisReply *e = eid ? wread_cmd(r, j->err, j->errlen, "XRANGE", r->keys.jobs, eid,
			    eid, (char *)NULL) : NULL;
			if (eid && e == NULL) {
				freeReplyObject(rep);
				return -1;
			}
			int rc = e ? jobs_entries(j, sreply_of(e), "pending", "pending", "id") : 0;
			freeReplyObject(e);
			if (rc < 0) {
				freeReplyObject(rep);
				return -1;
			}
		}
	}
	freeReplyObject(rep);
	/* the stream (undelivered entries and delivered ones not yet acked) */
	if ((rep = wread_cmd(r, j->err, j->errlen, "XREVRANGE", r->keys.jobs, "+", "-", "COUNT", count,
	    (char *)NULL)) == NULL || jobs_entries(j, sreply_of(rep), "stream", "queued",
	    "id") < 0) {
		freeReplyObject(rep);
		return -1;
	}
	freeReplyObject(rep);
	if ((rep = wread_cmd(r, j->err, j->errlen, "ZRANGE", r->keys.scheduled, "0", "-1",
	    (char *)NULL)) == NULL)
		return -1;
	if (sreply_array_len(sreply_of(rep), &n) != 0)
		n = 0;
	for (size_t i = 0; i < n && !j->more; i++)
		if (jobs_consider(j, sreply_string(sreply_element(sreply_of(rep), i)), "scheduled",
		    "scheduled") < 0) {
			freeReplyObject(rep);
			return -1;
		}
	freeReplyObject(rep);
	if ((rep = wread_cmd(r, j->err, j->errlen, "XREVRANGE", r->keys.dead, "+", "-", "COUNT", count,
	    (char *)NULL)) == NULL || jobs_entries(j, sreply_of(rep), "dead", "dead", "id") < 0) {
		freeReplyObject(rep);
		return -1;
	}
	freeReplyObject(rep);
	if ((rep = wread_cmd(r, j->err, j->errlen, "XREVRANGE", r->keys.audit, "+", "-", "COUNT", count,
	    (char *)NULL)) == NULL || jobs_entries(j, sreply_of(rep), "audit", NULL, "id") < 0) {
		freeReplyObject(rep);
		return -1;
	}
	freeReplyObject(rep);
	return 0;
}

json_t *
wread_jobs(struct wread *r, const struct wroute_jobq *q, int64_t now_ms, char *err,
	   size_t errlen)
{
	struct jobs j = {r, q, now_ms, json_object(), json_array(), q->page * WROUTE_PAGE, 0,
	    err, errlen};
	json_t *out = NULL;
	unsigned first = 0, end = r->nshards;

	if (q->id[0]) {	/* a record id has one shard */
		first = cluster_shard_of(q->id, strlen(q->id), (unsigned)r->cfg->redis.shards);
		end = first + 1;
	}
	for (unsigned i = first; i < end && !j.more; i++)
		if (wread_use_shard(r, i, err, errlen) < 0 || jobs_of_shard(&j) < 0)
			goto done;
	out = json_pack("{s:O, s:b, s:{}}", "jobs", j.out, "more", j.more, "paused");
	if (out != NULL && wread_add_paused(r, json_object_get(out, "paused"), err, errlen) < 0) {
		json_decref(out);
		out = NULL;
	}
done:
	json_decref(j.seen);
	json_decref(j.out);
	return out;
}

/* ---- one job ---- */

/* The entries of stream `key` whose "id" is id, oldest first, into arr. */
static int
entries_of(struct wread *r, const char *key, const char *id, json_t *arr, char *err,
	   size_t errlen)
{
	char count[16];
	redisReply *rep;
	size_t n = 0;

	snprintf(count, sizeof count, "%d", 10 * WREAD_AUDIT_MAX);
	if ((rep = wread_cmd(r, err, errlen, "XREVRANGE", key, "+", "-", "COUNT", count,
	    (char *)NULL)) == NULL)
		return -1;
	if (sreply_array_len(sreply_of(rep), &n) != 0)
		n = 0;
	for (size_t i = n; i-- > 0 && json_array_size(arr) < WREAD_AUDIT_MAX;) {
		const struct sreply *e = sreply_element(sreply_of(rep), i);
		const char *eid = sreply_field(sreply_element(e, 1), "id");
		if (eid == NULL || strcmp(eid, id) != 0)
			continue;
		json_t *o = json_object();
		json_object_set_new(o, "entry", wread_reply_json(sreply_element(e, 0)));
		wread_add_flat(o, sreply_element(e, 1), NULL);
		json_array_append_new(arr, o);
	}
	freeReplyObject(rep);
	return 0;
}

json_t *
wread_job(struct wread *r, const char *id, int64_t now_ms, char *err, size_t errlen)
{
	char hash[STORE_KEY_MAX + RECORD_ID_MAX + 8];
	json_t *job = json_object(), *audit = json_array(), *dead = json_array();
	redisReply *h;
	size_t n = 0;

	json_object_set_new(job, "audit", audit);
	json_object_set_new(job, "deadLetters", dead);
	if (!record_id_valid(id)) {
		snprintf(err, errlen, "not found");
		goto fail;
	}
	json_object_set_new(job, "id", json_string(id));
	if (wread_use_shard(r, cluster_shard_of(id, strlen(id), (unsigned)r->cfg->redis.shards), err,
	    errlen) < 0 || store_decision_key(&r->keys, id, hash, sizeof hash) != 0 ||
	    (h = wread_cmd(r, err, errlen, "HGETALL", hash, (char *)NULL)) == NULL)
		goto fail;
	if (sreply_array_len(sreply_of(h), &n) == 0 && n > 0) {
		json_t *state = json_object();
		wread_add_flat(state, sreply_of(h), "record");
		json_object_set_new(job, "state", state);
		const char *raw = sreply_field(sreply_of(h), "record");
		struct record_policy pol;
		struct record *rec;
		char detail[256];
		enum record_status rs = RECORD_BAD_SIGNATURE;
		ctl_policy_init(&pol, r->cfg, (const unsigned char *)r->key, r->key_len);
		wjob_header(job, raw);
		if (raw != NULL && (rs = record_load(&pol, id, raw, now_ms, &rec, NULL, detail,
		    sizeof detail)) == RECORD_OK) {
			json_object_set_new(job, "record", record_content(rec));
			json_object_set_new(job, "signature", json_string(r->cfg->records.
			    signature_required ? "verified" : "not checked ([records] signature = off)"));
			record_free(rec);
		} else
			json_object_set_new(job, "recordError", json_pack("s+s+s", raw ?
			    record_status_code(rs) : "record-missing", raw ? ": " : "",
			    raw ? detail : ""));
	}
	freeReplyObject(h);
	if (entries_of(r, r->keys.audit, id, audit, err, errlen) < 0 ||
	    entries_of(r, r->keys.dead, id, dead, err, errlen) < 0)
		goto fail;
	if (n == 0 && json_array_size(audit) == 0 && json_array_size(dead) == 0) {
		snprintf(err, errlen, "not found");
		goto fail;
	}
	json_object_set_new(job, "paused", json_object());
	if (wread_add_paused(r, json_object_get(job, "paused"), err, errlen) < 0)
		goto fail;
	return job;
fail:
	json_decref(job);
	return NULL;
}

