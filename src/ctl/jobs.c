/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * warrantctl inspect and jobs: one record's state, verified record and audit
 * trail; records by state (warrantd(7) §11).
 */
#define _DEFAULT_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "base/wtime.h"
#include "conf/config.h"
#include "conf/secrets.h"
#include "core/job.h"
#include "core/record.h"
#include "ctl/clir.h"
#include "ctl/cmds.h"
#include "ctl/ctl.h"

/* P:paused of shard 0, where `pause` writes it for every worker, as an
 * object (empty when it cannot be read: nothing is shown held); the shard
 * in use is kept. */
static json_t *
paused_now(struct cli *c)
{
	unsigned shard = c->shard;
	json_t *o = json_object();
	redisReply *r = NULL;

	if (o != NULL && cli_use_shard(c, 0) == 0 && clir_connect(c) == 0) {
		const char *argv[] = {"HGETALL", c->keys.paused};
		r = clir_argv(c, 2, argv);
		if (r != NULL && r->type == REDIS_REPLY_ARRAY)
			cli_add_flat(o, sreply_of(r), NULL, NULL);
	}
	freeReplyObject(r);
	if (cli_use_shard(c, shard) != 0 || clir_connect(c) != 0) {	/* its node again */
		json_decref(o);
		return NULL;
	}
	return o;
}

/* "held": "paused" beside the state, when a pause holds its calls. */
static void
mark_held(json_t *o, const json_t *paused, const char *action)
{
	const char *held = ctl_held(paused, action, json_string_value(json_object_get(o,
	    "state")));

	if (held != NULL)
		json_object_set_new(o, "held", json_string(held));
}

/* ---- inspect ---- */

/* Verification (§3) with the configured key: "verified", and "record" or
 * "verifyReason" + "verifyDetail". */
static void
verify_into(struct cli *c, json_t *out, const char *id, const char *raw, const char *key,
	    size_t key_len, int64_t now)
{
	struct record_policy pol;
	struct record *rec;
	char detail[DETAIL_MAX];
	enum record_status st;

	if (raw == NULL) {
		json_object_set_new(out, "verified", json_false());
		json_object_set_new(out, "verifyReason", json_string("record-missing"));
		return;
	}
	ctl_policy_init(&pol, c->cfg, (const unsigned char *)key, key_len);
	st = record_load(&pol, id, raw, now, &rec, NULL, detail, sizeof detail);
	json_object_set_new(out, "verified", json_boolean(st == RECORD_OK));
	if (st != RECORD_OK) {
		json_object_set_new(out, "verifyReason", json_string(record_status_code(st)));
		json_object_set_new(out, "verifyDetail", json_string(detail));
		return;
	}
	json_object_set_new(out, "expired", json_boolean(now >= rec->expires_at_ms));
	json_object_set_new(out, "record", record_content(rec));
	record_free(rec);
}

static int
scheduled_at(struct cli *c, json_t *out, const char *id)
{
	char at[WTIME_RFC3339_LEN];
	redisReply *r;
	int rc = clir_run(c, &r, "ZSCORE", c->keys.scheduled, id, (char *)NULL);

	if (rc != 0)
		return rc;
	const char *score = sreply_string(sreply_of(r));
	if (score != NULL)
		json_object_set_new(out, "scheduledAt", json_string(wtime_format_rfc3339(
		    (int64_t)strtod(score, NULL), at, sizeof at)));
	freeReplyObject(r);
	return 0;
}

static int
inspect_json(struct cli *c, const char *id, const char *key, size_t key_len, json_t *out)
{
	char hash[STORE_KEY_MAX + RECORD_ID_MAX];
	json_t *audit = json_array(), *dead = json_array();
	redisReply *h;
	int rc = EX_REFUSED;

	if (store_decision_key(&c->keys, id, hash, sizeof hash) != 0 ||
	    (rc = clir_run(c, &h, "HGETALL", hash, (char *)NULL)) != 0) {
		json_decref(audit);
		json_decref(dead);
		return rc;
	}
	size_t n = 0;
	if (sreply_array_len(sreply_of(h), &n) != 0 || n == 0) {
		cli_say("inspect: no decision %s", id);
		rc = EX_REFUSED;
	} else {
		json_object_set_new(out, "id", json_string(id));
		cli_add_flat(out, sreply_of(h), cli_state_order, "record");
		verify_into(c, out, id, sreply_field(sreply_of(h), "record"), key, key_len,
		    wtime_now_ms());
		rc = scheduled_at(c, out, id);
		json_t *paused = paused_now(c);
		mark_held(out, paused, json_string_value(json_object_get(json_object_get(out,
		    "record"), "action")));
		json_decref(paused);
	}
	if (rc == 0 && (rc = clir_scan_stream(c, c->keys.dead, id, cli_dead_order, dead)) == 0)
		rc = clir_scan_stream(c, c->keys.audit, id, cli_audit_order, audit);
	json_object_set_new(out, "deadLetters", dead);
	json_object_set_new(out, "audit", audit);
	freeReplyObject(h);
	return rc;
}

int
cmd_inspect(struct cli *c, int argc, char **argv)
{
	char *id = NULL, *key = NULL;
	size_t key_len = 0;
	json_t *out;
	int rc = cli_parse_simple(c, argc, argv, 1, 1, &id);

	if (rc == 1) {
		fputs(cli_usage_text, stdout);
		return 0;
	}
	if (rc != 0)
		return rc;
	if (id == NULL || !record_id_valid(id))	/* parse_simple set it; the analyzer cannot see */
		return cli_usage_error("inspect: '%s' is not a recordId", id ? id : "");
	if ((rc = cli_load_config(c)) != 0 || (rc = cli_use_shard_of(c, id)) != 0 ||
	    (rc = cli_read_verify_key(c, &key, &key_len)) != 0 || (rc = clir_connect(c)) != 0) {
		secrets_free(key, key_len);
		return rc;
	}
	out = json_object();
	if ((rc = inspect_json(c, id, key, key_len, out)) == 0) {
		if (c->json)
			rc = cli_print_json(out);
		else
			ctl_print_human(stdout, out, 0);
	}
	json_decref(out);
	secrets_free(key, key_len);
	return rc;
}

/* ---- jobs (§11) ---- */

struct jobs_query {
	const char *state;	/* --state: NULL any */
	const char *action;	/* --action: NULL any */
	int scheduled;		/* --state scheduled: P:scheduled only (their state
				   is queued: a place, not a state) */
	long limit;		/* --limit [100]; 0: no limit */
	char *key;		/* the verification key (secrets_free) */
	size_t key_len;
	json_t *seen;		/* recordIds listed or passed over: each once */
	json_t *paused;		/* P:paused (paused_now) */
	json_t *out;		/* the list */
};

static int
jobs_full(const struct jobs_query *q)
{
	return q->limit > 0 && (long)json_array_size(q->out) >= q->limit;
}

/*
 * One recordId found in `where` (pending, stream, scheduled, dead, audit):
 * its hash is what says its state now; a hash gone (its retention ended)
 * leaves the state the source gives (`fallback`: the audit's last `to`, or
 * "dead" for a letter, "" when unknown). Listed when it passes the filters.
 * `extra` (consumed) adds the source's own fields. 0 or an exit code.
 */
/* The filters: --state and --action. */
static int
jobs_wanted(const struct jobs_query *q, const json_t *o)
{
	const char *st = json_string_value(json_object_get(o, "state"));
	const char *act = json_string_value(json_object_get(o, "action"));

	return (q->state == NULL || (st != NULL && strcmp(st, q->state) == 0)) &&
	    (q->action == NULL || (act != NULL && strcmp(act, q->action) == 0));
}

/* The hash's fields into o: the verified record's action and resource (or
 * "verified": false), and the state fields. */
static void
jobs_fields(const struct jobs_query *q, const struct cfg *cfg, json_t *o, const char *id,
	    const struct sreply *fields)
{
	static const char *const shown[] = {"attempts", "attemptsBase", "owner", "updatedAt",
	    "outcome", "lateOutcome", "lateHttpStatus", NULL};
	const char *raw = sreply_field(fields, "record");

	if (raw != NULL) {
		struct record_policy pol;
		struct record *rec;
		char detail[DETAIL_MAX];
		ctl_policy_init(&pol, cfg, (const unsigned char *)q->key, q->key_len);
		if (record_load(&pol, id, raw, wtime_now_ms(), &rec, NULL, detail,
		    sizeof detail) == RECORD_OK) {
			json_object_set_new(o, "action", json_string(rec->action));
			json_object_set_new(o, "resource", json_string(rec->resource));
			record_free(rec);
		} else {
			json_object_set_new(o, "verified", json_false());
		}
	}
	for (const char *const *k = shown; *k != NULL; k++) {
		const struct sreply *v = sreply_field_reply(fields, *k);
		if (v != NULL && sreply_string(v) != NULL)
			json_object_set_new(o, *k, cli_reply_json(v));
	}
}

/*
 * One recordId found in `where` (pending, stream, scheduled, dead, audit):
 * its hash is what says its state now; a hash gone (its retention ended)
 * leaves the state the source gives (`fallback`: the audit's last `to`, or
 * "dead" for a letter, "" when unknown). Listed when it passes the filters.
 * `extra` (consumed; may be NULL) adds the source's own fields. 0 or an
 * exit code.
 */
static int
jobs_consider(struct cli *c, struct jobs_query *q, const char *id, const char *where,
	      const char *fallback, json_t *extra)
{
	char hash[STORE_KEY_MAX + RECORD_ID_MAX];
	redisReply *h = NULL;
	int rc = 0;

	if (id == NULL || json_object_get(q->seen, id) != NULL || jobs_full(q)) {
		json_decref(extra);
		return 0;
	}
	json_object_set_new(q->seen, id, json_true());
	if (record_id_valid(id) && store_decision_key(&c->keys, id, hash, sizeof hash) == 0 &&
	    (rc = clir_run(c, &h, "HGETALL", hash, (char *)NULL)) != 0) {
		json_decref(extra);
		return rc;
	}
	const char *state = h != NULL ? sreply_field(sreply_of(h), "state") : NULL;
	json_t *o = json_pack("{s:s, s:s}", "id", id, "state", state ? state :
	    fallback ? fallback : "");
	if (o == NULL) {	/* an id that is not UTF-8 (a hand-made entry) */
		json_decref(extra);
		freeReplyObject(h);
		return 0;
	}
	if (h != NULL)
		jobs_fields(q, c->cfg, o, id, sreply_of(h));
	mark_held(o, q->paused, json_string_value(json_object_get(o, "action")));
	json_object_set_new(o, "source", json_string(where));
	if (extra != NULL)
		json_object_update(o, extra);
	if (jobs_wanted(q, o))
		json_array_append(q->out, o);
	json_decref(extra);
	json_decref(o);
	freeReplyObject(h);
	return 0;
}

/* The pending entries: running, retrying, waiting for a token -- or held by
 * a consumer that died. */
static int
jobs_pending(struct cli *c, struct jobs_query *q)
{
	char start[128] = "-";
	redisReply *r, *e;
	int rc;

	for (;;) {
		const char *argv[] = {"XPENDING", c->keys.jobs, c->cfg->redis.group, start, "+",
		    PAGE_S};
		r = clir_asking(c, 6, argv, NULL);
		const char *why = sreply_error_text(sreply_of(r));
		if (why != NULL && (strstr(why, "no such key") || strstr(why, "NOGROUP"))) {
			freeReplyObject(r);
			return 0;	/* no stream or no group yet: nothing pending */
		}
		if ((rc = clir_checked(c, r, "XPENDING", &r)) != 0)
			return rc;
		size_t n = 0;
		if (sreply_array_len(sreply_of(r), &n) != 0)
			n = 0;
		for (size_t i = 0; rc == 0 && i < n && !jobs_full(q); i++) {
			const struct sreply *p = sreply_element(sreply_of(r), i);
			const char *eid = sreply_string(sreply_element(p, 0));
			long long idle = 0, deliveries = 0;
			if (eid == NULL)
				continue;
			snprintf(start, sizeof start, "(%s", eid);
			if (sreply_integer(sreply_element(p, 2), &idle) != 0)
				idle = 0;
			if (sreply_integer(sreply_element(p, 3), &deliveries) != 0)
				deliveries = 0;
			if ((rc = clir_run(c, &e, "XRANGE", c->keys.jobs, eid, eid, (char *)NULL)) != 0)
				break;
			const struct sreply *one = sreply_element(sreply_of(e), 0);
			const char *id = one ? sreply_field(sreply_element(one, 1), "id") : NULL;
			json_t *extra = json_pack("{s:s, s:s?, s:I, s:I}", "entryId", eid,
			    "consumer", sreply_string(sreply_element(p, 1)), "idleMs",
			    (json_int_t)idle, "deliveries", (json_int_t)deliveries);
			rc = jobs_consider(c, q, id, "pending", "", extra);
			freeReplyObject(e);
		}
		freeReplyObject(r);
		if (rc != 0 || n < PAGE || jobs_full(q))
			return rc;
	}
}

/* One entry of a stream walk: its id and its fields; non-zero stops it. */
typedef int jobs_entry_fn(struct cli *c, struct jobs_query *q, const char *eid,
			  const struct sreply *fields, void *arg);

/* Each entry of `key` a page at a time, after `from` ("-" or "(ID") upwards,
 * or with `rev` before it ("+" or "(ID") downwards, until `each` says stop,
 * the stream ends or the query is full. */
static int
jobs_walk(struct cli *c, struct jobs_query *q, const char *key, const char *from, int rev,
	  jobs_entry_fn *each, void *arg)
{
	char at[128];
	redisReply *r;
	int rc;

	snprintf(at, sizeof at, "%s", from);
	for (;;) {
		if ((rc = clir_run(c, &r, rev ? "XREVRANGE" : "XRANGE", key, at, rev ? "-" : "+",
		    "COUNT", PAGE_S, (char *)NULL)) != 0)
			return rc;
		size_t n = 0;
		if (sreply_array_len(sreply_of(r), &n) != 0)
			n = 0;
		for (size_t i = 0; rc == 0 && i < n && !jobs_full(q); i++) {
			const struct sreply *e = sreply_element(sreply_of(r), i);
			const char *eid = cli_entry_id(e);
			if (eid == NULL)
				continue;
			snprintf(at, sizeof at, "(%s", eid);
			rc = each(c, q, eid, sreply_element(e, 1), arg);
		}
		freeReplyObject(r);
		if (rc != 0 || n < PAGE || jobs_full(q))
			return rc;
	}
}

static int
jobs_undelivered_one(struct cli *c, struct jobs_query *q, const char *eid,
		     const struct sreply *fields, void *arg)
{
	(void)arg;
	return jobs_consider(c, q, sreply_field(fields, "id"), "stream", "",
	    json_pack("{s:s}", "entryId", eid));
}

/* The entries no consumer has read yet: after the group's last-delivered-id
 * (all of the stream when there is no group). */
static int
jobs_undelivered(struct cli *c, struct jobs_query *q)
{
	char start[128] = "-";
	redisReply *groups;
	const struct sreply *g;
	int rc;

	if ((rc = clir_find_group(c, &groups, &g)) != 0)
		return rc;
	const char *last = g ? sreply_field(g, "last-delivered-id") : NULL;
	if (last != NULL)
		snprintf(start, sizeof start, "(%s", last);
	freeReplyObject(groups);
	return jobs_walk(c, q, c->keys.jobs, start, 0, jobs_undelivered_one, NULL);
}

/* P:scheduled, soonest first. */
static int
jobs_scheduled(struct cli *c, struct jobs_query *q)
{
	char at[WTIME_RFC3339_LEN], lo[32], hi[32];
	redisReply *r;
	int rc;

	for (long from = 0;; from += PAGE) {
		snprintf(lo, sizeof lo, "%ld", from);
		snprintf(hi, sizeof hi, "%ld", from + PAGE - 1);
		if ((rc = clir_run(c, &r, "ZRANGE", c->keys.scheduled, lo, hi, "WITHSCORES",
		    (char *)NULL)) != 0)
			return rc;
		size_t n = 0;
		if (sreply_array_len(sreply_of(r), &n) != 0)
			n = 0;
		for (size_t i = 0; rc == 0 && i + 1 < n && !jobs_full(q); i += 2) {
			const char *id = sreply_string(sreply_element(sreply_of(r), i));
			const char *score = sreply_string(sreply_element(sreply_of(r), i + 1));
			rc = jobs_consider(c, q, id, "scheduled", "", json_pack("{s:s}",
			    "scheduledAt", wtime_format_rfc3339(score ? (int64_t)strtod(score,
			    NULL) : 0, at, sizeof at)));
		}
		freeReplyObject(r);
		if (rc != 0 || n < 2 * PAGE || jobs_full(q))
			return rc;
	}
}

static int
jobs_history_one(struct cli *c, struct jobs_query *q, const char *eid,
		 const struct sreply *fields, void *arg)
{
	const char *where = arg;
	const char *to = strcmp(where, "audit") == 0 ? sreply_field(fields, "to") : "dead";

	(void)eid;
	if (q->state != NULL && (to == NULL || strcmp(to, q->state) != 0))
		return 0;
	return jobs_consider(c, q, sreply_field(fields, "id"), where, to, NULL);
}

/* A stream from the newest entry back: P:dead (its letters are dead), or
 * P:audit (each record's latest state change, as far back as audit_maxlen
 * reaches). With a --state, only entries that could be it are looked up. */
static int
jobs_history(struct cli *c, struct jobs_query *q, const char *key, const char *where)
{
	return jobs_walk(c, q, key, "+", 1, jobs_history_one, (void *)where);
}

/* 1 when --state S names a state that is never terminal: only the queue's
 * sources can hold it; a terminal one only the history's. */
static int
jobs_live_state(const char *s)
{
	enum job_state st;

	return job_state_parse(s, &st) == 0 && !job_state_terminal(st);
}

static int
jobs_of_shard(struct cli *c, struct jobs_query *q)
{
	int live = q->state == NULL || jobs_live_state(q->state);
	int done = q->state == NULL || !jobs_live_state(q->state);
	int rc = 0;

	if (q->scheduled)
		return jobs_scheduled(c, q);

	if (live && rc == 0)
		rc = jobs_pending(c, q);
	if (live && rc == 0 && !jobs_full(q))
		rc = jobs_undelivered(c, q);
	if (live && rc == 0 && !jobs_full(q))
		rc = jobs_scheduled(c, q);
	if (done && rc == 0 && !jobs_full(q))
		rc = jobs_history(c, q, c->keys.dead, "dead");
	if (done && rc == 0 && !jobs_full(q))
		rc = jobs_history(c, q, c->keys.audit, "audit");
	return rc;
}

int
cmd_jobs(struct cli *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"state", required_argument, NULL, OPT_STATE},
		{"action", required_argument, NULL, OPT_ACTION},
		{"limit", required_argument, NULL, OPT_LIMIT},
		{"json", no_argument, NULL, OPT_JSON},
		{"shard", required_argument, NULL, OPT_SHARD},
		{"config", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct jobs_query q = {.limit = 100};
	enum job_state st;
	unsigned first, end;
	char *e;
	int ch, rc = 0;

	while ((ch = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
		if (ch == 'h') {
			fputs(cli_usage_text, stdout);
			return 0;
		} else if (ch == 'c')
			c->cfg_path = optarg;
		else if (ch == OPT_STATE)
			q.state = optarg;
		else if (ch == OPT_ACTION)
			q.action = optarg;
		else if (ch == OPT_JSON)
			c->json = 1;
		else if (ch == OPT_LIMIT) {
			q.limit = strtol(optarg, &e, 10);
			if (*optarg < '0' || *optarg > '9' || *e != '\0' || q.limit > 1000000)
				return cli_usage_error("jobs: --limit: '%s' is not a number (0: "
				    "no limit)", optarg);
		} else if (ch == OPT_SHARD) {
			if ((rc = cli_shard_option(c, optarg)) != 0)
				return rc;
		} else
			return cli_unknown_option(argv[0], argv);
	}
	if (argc != optind)
		return cli_usage_error("jobs: no argument expected, got '%s'", argv[optind]);
	if (q.state != NULL && strcmp(q.state, "scheduled") == 0) {
		q.scheduled = 1;
		q.state = NULL;
	}
	if (q.state != NULL && (job_state_parse(q.state, &st) != 0 || st == JOB_NONE))
		return cli_usage_error("jobs: --state: '%s' is not a state (queued, running, "
		    "retrying, auth_wait, done, expired, denied, failed, dead, cancelled) or "
		    "scheduled", q.state);
	if ((rc = cli_load_config(c)) != 0 || (rc = cli_read_verify_key(c, &q.key, &q.key_len)) != 0)
		return rc;
	q.seen = json_object();
	q.out = json_array();
	cli_shard_range(c, &first, &end);
	for (unsigned sh = first; rc == 0 && sh < end && !jobs_full(&q); sh++)
		if ((rc = cli_use_shard(c, sh)) == 0 && (rc = clir_connect(c)) == 0) {
			if (q.paused == NULL)
				q.paused = paused_now(c);
			rc = jobs_of_shard(c, &q);
		}
	if (rc == 0 && c->json)
		rc = cli_print_json(q.out);
	else if (rc == 0) {
		size_t i;
		json_t *o;
		json_array_foreach(q.out, i, o)
			ctl_print_line(stdout, o, 0);
	}
	json_decref(q.seen);
	json_decref(q.out);
	json_decref(q.paused);
	secrets_free(q.key, q.key_len);
	return rc;
}

