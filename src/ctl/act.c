/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * act: the operator's actions, for warrantctl and warrantd-web alike
 * (ctl/act.h; warrantd(7) §11, §13).
 */
#define _DEFAULT_SOURCE
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "auth/oauth.h"
#include "base/wtime.h"
#include "conf/config.h"
#include "core/job.h"
#include "core/record.h"
#include "ctl/act.h"
#include "ctl/clir.h"
#include "ctl/ctl.h"
#include "worker/webhook.h"

void
act_result_init(struct act_result *r)
{
	memset(r, 0, sizeof *r);
	r->lines = json_array();
}

void
act_result_clear(struct act_result *r)
{
	json_decref(r->lines);
	memset(r, 0, sizeof *r);
}

/* One line of what an action says, kept in order (err: a refusal, a
 * warning). */
static void say(struct act_result *r, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
say(struct act_result *r, int err, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	json_array_append_new(r->lines, json_pack("[bs]", err, buf));
}

/* warrantctl's printer: each line on stdout, or through cli_say. */
void
act_result_print(const struct act_result *r)
{
	const json_t *l;
	size_t i;

	json_array_foreach(r->lines, i, l) {
		const char *text = json_string_value(json_array_get(l, 1));
		if (json_is_true(json_array_get(l, 0)))
			cli_say("%s", text);
		else
			printf("%s\n", text);
	}
	fflush(stdout);
}

/* ---- who ---- */

static void
one_line(char *buf)
{
	for (char *p = buf; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

void
act_who_unix(const char *redis_user, char *buf, size_t n)
{
	const struct passwd *pw = getpwuid(getuid());
	const char *sudo = getenv("SUDO_USER");
	char uid[32];

	snprintf(uid, sizeof uid, "uid %u", (unsigned)getuid());
	snprintf(buf, n, "unix user %s%s%s%s, redis user %s", pw != NULL ? pw->pw_name : uid,
	    sudo != NULL && *sudo ? " (sudo from " : "", sudo != NULL && *sudo ? sudo : "",
	    sudo != NULL && *sudo ? ")" : "", redis_user != NULL ? redis_user : "default");
	one_line(buf);
}

void
act_who_console(const char *console_user, const char *redis_user, char *buf, size_t n)
{
	snprintf(buf, n, "console user %s, redis user %s", console_user,
	    redis_user != NULL ? redis_user : "default");
	one_line(buf);
}

/* ---- requeue (retry, dead requeue) ---- */

/* The P:dead entries of recordId `id`, at least one, else EX_REFUSED. */
static int
dead_entries(struct cli *c, const char *id, json_t *entries, struct act_result *res)
{
	int rc = clir_scan_stream(c, c->keys.dead, id, cli_dead_order, entries);

	if (rc == 0 && json_array_size(entries) == 0) {
		say(res, 1, "dead: no dead letter for %s", id);
		rc = EX_REFUSED;
	}
	return rc;
}

/*
 * lua/requeue.lua for retry and dead requeue: the record queued again with a
 * fresh budget, from one of `states`, its dead letters `entries` deleted.
 * Says what it did. 0 or an exit code.
 */
static int
requeue_write(struct cli *c, const char *cmd, const char *id, const char *hash,
	      const char *raw, json_t *entries, const char *states, const char *who,
	      struct act_result *res)
{
	char at[WTIME_RFC3339_LEN], final[STORE_KEY_MAX + RECORD_ID_MAX];
	size_t n = json_array_size(entries), i;
	const char **ids = calloc(n ? n : 1, sizeof *ids);
	struct store_args a;
	redisReply *r;
	json_t *e;
	int rc;

	if (ids == NULL) {
		say(res, 1, "out of memory");
		return EX_REFUSED;
	}
	if (store_final_key(&c->keys, id, final, sizeof final) != 0) {
		say(res, 1, "%s: %s: key name too long", cmd, id);
		free(ids);
		return EX_REFUSED;
	}
	json_array_foreach(entries, i, e)
		ids[i] = json_string_value(json_object_get(e, "entryId"));
	wtime_format_rfc3339(wtime_now_ms(), at, sizeof at);
	store_args_init(&a, STORE_REQUEUE);
	store_arg(&a, STORE_REQUEUE_HASH, hash);
	store_arg(&a, STORE_REQUEUE_FINAL, final);
	store_arg(&a, STORE_REQUEUE_JOBS, c->keys.jobs);
	store_arg(&a, STORE_REQUEUE_DEAD, c->keys.dead);
	store_arg(&a, STORE_REQUEUE_AUDIT, c->keys.audit);
	store_arg(&a, STORE_REQUEUE_RECORD_ID, id);
	store_arg(&a, STORE_REQUEUE_AT, at);
	store_arg_ll(&a, STORE_REQUEUE_AUDIT_MAXLEN, c->cfg->records.audit_maxlen);
	store_arg(&a, STORE_REQUEUE_RECORD, raw);
	store_arg(&a, STORE_REQUEUE_STATES, states);
	store_arg(&a, STORE_REQUEUE_WHO, who);
	store_arg_rest(&a, ids, n);
	rc = clir_script(c, &r, &a);
	free(ids);
	if (rc != 0)
		return rc;
	/* {1, new entry id, attempts} or {0, why}. */
	const struct sreply *rep = sreply_of(r);
	const char *said = sreply_string(sreply_element(rep, 1));
	const char *attempts = sreply_string(sreply_element(rep, 2));
	long long done = 0;
	if (said != NULL && sreply_integer(sreply_element(rep, 0), &done) == 0 && done == 1) {
		/* the entry id last: scripts read "... entry <id>" up to the end */
		say(res, 0, "%s %s with a fresh budget of %ld calls (attempts %s, attemptsBase %s) "
		    "as %s entry %s", strcmp(cmd, "retry") == 0 ? "retried" : "requeued", id,
		    c->cfg->retry.max_attempts, attempts ? attempts : "?", attempts ? attempts : "?",
		    c->keys.jobs, said);
		res->done++;
	} else {
		say(res, 1, "%s: refused: %s: %s", cmd, id, said != NULL ? said : "unexpected reply");
		rc = EX_REFUSED;
	}
	freeReplyObject(r);
	return rc;
}

/* The record as the worker would take it now: verified, and before its
 * deadline; refusals said as "CMD: refused: ...". With out, the record
 * (record_free). 0 or EX_REFUSED. */
static int
record_check(struct cli *c, const char *cmd, const char *id, const char *raw, const char *key,
	     size_t key_len, struct record **out, struct act_result *res)
{
	struct record_policy pol;
	struct record *rec;
	char detail[DETAIL_MAX], at[WTIME_RFC3339_LEN];
	int64_t now = wtime_now_ms();
	enum record_status st;

	if (raw == NULL) {
		say(res, 1, "%s: refused: %s: no record (record-missing)", cmd, id);
		return EX_REFUSED;
	}
	ctl_policy_init(&pol, c->cfg, (const unsigned char *)key, key_len);
	st = record_load(&pol, id, raw, now, &rec, NULL, detail, sizeof detail);
	if (st != RECORD_OK) {
		say(res, 1, "%s: refused: %s: %s: %s", cmd, id, record_status_code(st), detail);
		return EX_REFUSED;
	}
	int expired = now >= rec->expires_at_ms;
	wtime_format_rfc3339(rec->expires_at_ms, at, sizeof at);
	if (expired) {
		record_free(rec);
		say(res, 1, "%s: refused: %s is past its deadline (expiresAt %s)", cmd, id, at);
		return EX_REFUSED;
	}
	if (out != NULL)
		*out = rec;
	else
		record_free(rec);
	return 0;
}

/* The record of id (HGET hash record) into *r (caller frees), hash its
 * key. 0 or an exit code. */
static int
record_of(struct cli *c, const char *cmd, const char *id, char *hash, size_t n, redisReply **r,
	  struct act_result *res)
{
	*r = NULL;
	if (store_decision_key(&c->keys, id, hash, n) != 0) {
		say(res, 1, "%s: %s: key name too long", cmd, id);
		return EX_REFUSED;
	}
	return clir_run(c, r, "HGET", hash, "record", (char *)NULL);
}

/* retry and dead requeue of one record whose dead letters (none for a
 * failed record, or trimmed) are `entries`. */
static int
requeue_one(struct cli *c, const char *cmd, const char *id, const char *key, size_t key_len,
	    json_t *entries, const char *states, const char *who, struct act_result *res)
{
	char hash[STORE_KEY_MAX + RECORD_ID_MAX];
	redisReply *r = NULL;
	int rc = record_of(c, cmd, id, hash, sizeof hash, &r, res);

	if (rc != 0)
		return rc;
	const char *raw = sreply_string(sreply_of(r));
	if ((rc = record_check(c, cmd, id, raw, key, key_len, NULL, res)) == 0)
		rc = requeue_write(c, cmd, id, hash, raw, entries, states, who, res);
	freeReplyObject(r);
	return rc;
}

/* The shard of record id, connected. */
static int
connect_for(struct cli *c, const char *id)
{
	int rc = cli_use_shard_of(c, id);

	return rc != 0 ? rc : clir_connect(c);
}

int
act_retry(struct cli *c, const char *id, const char *key, size_t key_len, const char *who,
	  struct act_result *res)
{
	json_t *entries = json_array();
	int rc = connect_for(c, id);

	if (rc == 0 && (rc = clir_scan_stream(c, c->keys.dead, id, cli_dead_order, entries)) == 0)
		rc = requeue_one(c, "retry", id, key, key_len, entries, " failed dead ", who, res);
	json_decref(entries);
	return rc;
}

int
act_dead_requeue(struct cli *c, const char *id, const char *key, size_t key_len,
		 const char *who, struct act_result *res)
{
	json_t *entries = json_array();
	int rc = connect_for(c, id);

	if (rc == 0 && (rc = dead_entries(c, id, entries, res)) == 0)
		rc = requeue_one(c, "dead requeue", id, key, key_len, entries, " dead ", who, res);
	json_decref(entries);
	return rc;
}

int
act_dead_drop(struct cli *c, const char *id, struct act_result *res)
{
	json_t *entries = json_array(), *e;
	const char **argv = NULL;
	redisReply *r;
	size_t i;
	int argc = 0, rc;

	if ((rc = connect_for(c, id)) != 0 || (rc = dead_entries(c, id, entries, res)) != 0)
		goto done;
	if ((argv = calloc(2 + json_array_size(entries), sizeof *argv)) == NULL) {
		rc = EX_REFUSED;
		goto done;
	}
	argv[argc++] = "XDEL";
	argv[argc++] = c->keys.dead;
	json_array_foreach(entries, i, e)
		argv[argc++] = json_string_value(json_object_get(e, "entryId"));
	if ((rc = clir_runv(c, &r, argc, argv)) != 0)
		goto done;
	long long n = 0;
	if (sreply_integer(sreply_of(r), &n) != 0)
		n = 0;
	freeReplyObject(r);
	if (n == 0) {
		say(res, 1, "dead drop: no dead letter for %s", id);	/* dropped meanwhile */
		rc = EX_REFUSED;
	} else {
		say(res, 0, "dropped %lld dead letter%s of %s", n, n == 1 ? "" : "s", id);
		res->done = n;
	}
done:
	free(argv);
	json_decref(entries);
	return rc;
}

/* ---- cancel ---- */

/* The webhook's token with [notify] auth = oauth: the worker's client's, as
 * the daemon sends it (webhook.h). */
static int
cancel_hook_token(void *arg, const char **token)
{
	const struct oauth *o = arg;

	*token = o != NULL ? oauth_token(o, wtime_mono_ms(), 0) : NULL;
	return o != NULL && *token == NULL ? -1 : 0;
}

/* §6: the owner is told through the webhook too, as for any drop, after
 * P:notify has it (cancel.lua). Sent from here, on a loop of its own, with
 * the webhook's retries, for at most a few of its timeouts. 0 when sent (or
 * there is no webhook), -1 when it was not taken. */
static int
cancel_webhook(const struct cli *c, const char *id, const char *owner, const char *at,
	       const struct record *rec, struct act_result *res)
{
	const struct cfg *cfg = c->cfg;
	struct ev_loop *loop;
	struct http_client *http = NULL;
	struct oauth *o = NULL;
	struct webhook *wh = NULL;
	char err[256] = "";
	int rc = -1;

	if (cfg->notify.webhook_url == NULL || *owner == '\0')
		return 0;
	const struct webhook_note n = {id, owner, "cancelled", "cancelled", rec->on_behalf_of,
	    rec->action, rec->resource, at};
	char *body = webhook_note_body(&n);

	if (body != NULL && (loop = ev_loop_new(EVFLAG_AUTO)) != NULL) {
		if ((http = http_client_new(loop)) != NULL && cfg->notify.auth == CFG_AUTH_OAUTH &&
		    (o = oauth_new(loop, http, cfg, err, sizeof err)) != NULL)
			oauth_start(o);
		if (http != NULL && (cfg->notify.auth != CFG_AUTH_OAUTH || o != NULL))
			wh = webhook_from_cfg(loop, http, cfg, cancel_hook_token, o, err, sizeof err);
		if (wh != NULL) {
			webhook_post(wh, body);
			for (int64_t end = wtime_mono_ms() + 3 * cfg->notify.timeout_ms + 5000;
			    webhook_queued(wh) > 0 && wtime_mono_ms() < end;) {
				int never = 0;
				cli_run_loop(loop, &never, 100);
			}
			rc = webhook_queued(wh) == 0 ? 0 : -1;
		}
		webhook_free(wh);
		oauth_free(o);
		http_client_free(http);
		ev_loop_destroy(loop);
	}
	if (rc != 0)
		say(res, 1, "cancel: %s: the webhook did not take the notification%s%s (P:notify has it)",
		    id, err[0] ? ": " : "", err);
	free(body);
	return rc;
}

static int
cancel_write(struct cli *c, const char *id, const char *hash, const char *raw,
	     const struct record *rec, const char *who, struct act_result *res)
{
	char at[WTIME_RFC3339_LEN], final[STORE_KEY_MAX + RECORD_ID_MAX];
	const struct cfg *cfg = c->cfg;
	const char *owner = rec->notify_on_denial ? rec->notify_on_denial :
	    cfg->notify.default_owner ? cfg->notify.default_owner : "";
	struct job core = {.expires_at_ms = rec->expires_at_ms};
	int64_t now = wtime_now_ms();
	struct store_args a;
	redisReply *r;
	int rc;

	if (store_final_key(&c->keys, id, final, sizeof final) != 0) {
		say(res, 1, "cancel: %s: key name too long", id);
		return EX_REFUSED;
	}
	wtime_format_rfc3339(now, at, sizeof at);
	store_args_init(&a, STORE_CANCEL);
	store_arg(&a, STORE_CANCEL_HASH, hash);
	store_arg(&a, STORE_CANCEL_FINAL, final);
	store_arg(&a, STORE_CANCEL_NOTIFY, c->keys.notify);
	store_arg(&a, STORE_CANCEL_AUDIT, c->keys.audit);
	store_arg(&a, STORE_CANCEL_SCHEDULED, c->keys.scheduled);
	store_arg(&a, STORE_CANCEL_RECORD_ID, id);
	store_arg(&a, STORE_CANCEL_AT, at);
	store_arg_ll(&a, STORE_CANCEL_AUDIT_MAXLEN, cfg->records.audit_maxlen);
	store_arg_ll(&a, STORE_CANCEL_NOTIFY_MAXLEN, cfg->redis.notify_maxlen);
	store_arg(&a, STORE_CANCEL_RECORD, raw);
	store_arg(&a, STORE_CANCEL_TERMINAL, c->keys.terminal);
	/* §3.3: kept as the worker keeps a terminal hash and its mark */
	store_arg_ll(&a, STORE_CANCEL_RETAIN_MS, job_retain_ms(&core,
	    cfg->records.clock_skew_s * 1000LL, cfg->records.retain_s * 1000LL, now));
	store_arg(&a, STORE_CANCEL_WHO, who);
	store_arg(&a, STORE_CANCEL_NOTIFY_OWNER, owner);
	store_arg(&a, STORE_CANCEL_ON_BEHALF_OF, rec->on_behalf_of);
	store_arg(&a, STORE_CANCEL_ACTION, rec->action);
	store_arg(&a, STORE_CANCEL_RESOURCE, rec->resource);
	if ((rc = clir_script(c, &r, &a)) != 0)
		return rc;
	/* {1, from} or {0, why} */
	const struct sreply *rep = sreply_of(r);
	const char *said = sreply_string(sreply_element(rep, 1));
	long long done = 0;
	if (said != NULL && sreply_integer(sreply_element(rep, 0), &done) == 0 && done == 1) {
		say(res, 0, "cancelled %s (was %s)%s%s%s", id, *said ? said : "without a state",
		    *owner ? "; notified " : "; nobody to notify", owner,
		    strcmp(said, "running") == 0 ? "; a call in flight finishes and its result "
		    "goes to lateOutcome" : "");
		res->done = 1;
		(void)cancel_webhook(c, id, owner, at, rec, res);	/* it said why */
	} else {
		say(res, 1, "cancel: refused: %s: %s", id, said != NULL ? said : "unexpected reply");
		rc = EX_REFUSED;
	}
	freeReplyObject(r);
	return rc;
}

int
act_cancel(struct cli *c, const char *id, const char *key, size_t key_len, const char *who,
	   struct act_result *res)
{
	char hash[STORE_KEY_MAX + RECORD_ID_MAX];
	struct record *rec = NULL;
	redisReply *r = NULL;
	int rc = connect_for(c, id);

	if (rc == 0)
		rc = record_of(c, "cancel", id, hash, sizeof hash, &r, res);
	if (rc == 0) {
		const char *raw = sreply_string(sreply_of(r));
		if ((rc = record_check(c, "cancel", id, raw, key, key_len, &rec, res)) == 0)
			rc = cancel_write(c, id, hash, raw, rec, who, res);
	}
	record_free(rec);
	freeReplyObject(r);
	return rc;
}

/* ---- dead letters in bulk (§11) ---- */

/*
 * Adds every dead letter of the shard in use that f chooses to by_id:
 * recordId -> [{"entryId": id}, ...], in the stream's order, read in pages
 * (only the ids are kept, however long P:dead is). A letter without a
 * usable id (no-id) is kept under "". 0 or an exit code.
 */
struct matching {
	const struct act_filter *f;
	json_t *by_id;
};

static void
match_one(void *arg, const char *eid, const struct sreply *e)
{
	struct matching *m = arg;
	const struct sreply *fields = sreply_element(e, 1);

	if (!ctl_dead_match(eid, sreply_field(fields, "reason"), m->f->reason, m->f->before_ms))
		return;
	const char *id = sreply_field(fields, "id");
	if (id == NULL)
		id = "";
	json_t *list = json_object_get(m->by_id, id);
	if (list == NULL) {
		list = json_array();
		json_object_set_new(m->by_id, id, list);
	}
	json_array_append_new(list, json_pack("{s:s}", "entryId", eid));
}

static int
dead_matching(struct cli *c, const struct act_filter *f, json_t *by_id)
{
	struct matching m = {f, by_id};

	return clir_each_entry(c, c->keys.dead, match_one, &m);
}

/* XDEL of the letters in by_id, some at a time. *n: how many went. */
static int
dead_drop_matching(struct cli *c, json_t *by_id, long long *n)
{
	enum { CHUNK = 500 };
	const char *argv[CHUNK + 2];
	const char *id;
	json_t *list, *e;
	size_t i;
	int argc = 2, rc = 0;
	redisReply *r;

	argv[0] = "XDEL";
	argv[1] = c->keys.dead;
	json_object_foreach(by_id, id, list) {
		json_array_foreach(list, i, e) {
			argv[argc++] = json_string_value(json_object_get(e, "entryId"));
			if (argc < CHUNK + 2)
				continue;
			if ((rc = clir_runv(c, &r, argc, argv)) != 0)
				return rc;
			long long k = 0;
			*n += sreply_integer(sreply_of(r), &k) == 0 ? k : 0;
			freeReplyObject(r);
			argc = 2;
		}
	}
	if (argc > 2 && (rc = clir_runv(c, &r, argc, argv)) == 0) {
		long long k = 0;
		*n += sreply_integer(sreply_of(r), &k) == 0 ? k : 0;
		freeReplyObject(r);
	}
	return rc;
}

/* One shard's matching letters requeued record by record, or dropped. */
static int
dead_bulk_shard(struct cli *c, int requeue, json_t *by_id, const char *key, size_t key_len,
		const char *who, struct act_result *res)
{
	const char *cmd = requeue ? "dead requeue" : "dead drop";
	const char *id;
	json_t *list;
	int rc = 0;

	json_object_foreach(by_id, id, list) {
		res->matched += (long long)json_array_size(list);
		if (!requeue)
			continue;
		if (!record_id_valid(id)) {
			say(res, 1, "%s: refused: '%s' is not a recordId", cmd, id);
			res->refused++;
			continue;
		}
		int one = requeue_one(c, cmd, id, key, key_len, list, " dead ", who, res);
		if (one == EX_REFUSED)
			res->refused++;
		else if (one != 0)
			return one;	/* Redis went: stop */
	}
	if (!requeue)
		rc = dead_drop_matching(c, by_id, &res->done);
	return rc;
}

int
act_dead_bulk(struct cli *c, int requeue, const struct act_filter *f, const char *key,
	      size_t key_len, const char *who, struct act_result *res)
{
	const char *cmd = requeue ? "dead requeue" : "dead drop";
	size_t records = 0;
	unsigned first, end;
	int rc = 0;

	cli_shard_range(c, &first, &end);
	for (unsigned sh = first; rc == 0 && sh < end; sh++) {
		json_t *by_id = json_object();
		if ((rc = cli_use_shard(c, sh)) == 0 && (rc = clir_connect(c)) == 0)
			rc = dead_matching(c, f, by_id);
		records += json_object_size(by_id);
		if (rc == 0)
			rc = dead_bulk_shard(c, requeue, by_id, key, key_len, who, res);
		json_decref(by_id);
	}
	if (rc != 0)
		return rc;
	if (requeue)
		say(res, 0, "requeued %lld of %zu record%s (%lld refused)", res->done, records,
		    records == 1 ? "" : "s", res->refused);
	else
		say(res, 0, "dropped %lld dead letter%s of %zu record%s", res->done,
		    res->done == 1 ? "" : "s", records, records == 1 ? "" : "s");
	if (res->matched == 0) {
		say(res, 1, "%s: no dead letter matches", cmd);
		return EX_REFUSED;
	}
	return res->refused > 0 ? EX_REFUSED : 0;
}

/* ---- pause, resume (§13) ---- */

int
act_pause(struct cli *c, const char *name, int resume, const char *who,
	  struct act_result *res)
{
	const char *what = strcmp(name, "*") == 0 ? "the whole queue" : name;
	char value[ACT_WHO_MAX + 64], at[WTIME_RFC3339_LEN];
	redisReply *r;
	int rc;

	/* A typo must not look like a pause: only what the config names. */
	if (strcmp(name, "*") != 0 && cfg_action_find(c->cfg, name) == NULL) {
		say(res, 1, "%s: %s has no [action %s]", resume ? "resume" : "pause",
		    c->cfg_path ? c->cfg_path : "the configuration", name);
		return EX_REFUSED;
	}
	/* every worker reads shard 0's P:paused */
	if ((rc = cli_use_shard(c, 0)) != 0 || (rc = clir_connect(c)) != 0)
		return rc;
	if (resume) {
		if ((rc = clir_run(c, &r, "HDEL", c->keys.paused, name, (char *)NULL)) != 0)
			return rc;
		long long gone = 0;
		if (sreply_integer(sreply_of(r), &gone) != 0)
			gone = 0;
		freeReplyObject(r);
		res->done = gone;
		if (gone)
			say(res, 0, "resumed %s: workers start its calls again within a heartbeat "
			    "(%ld ms)", what, c->cfg->daemon.heartbeat_ms);
		else
			say(res, 0, "%s was not paused", what);
		return 0;
	}
	snprintf(value, sizeof value, "by=%s at=%s", who,
	    wtime_format_rfc3339(wtime_now_ms(), at, sizeof at));
	if ((rc = clir_run(c, &r, "HSET", c->keys.paused, name, value, (char *)NULL)) != 0)
		return rc;
	freeReplyObject(r);
	res->done = 1;
	say(res, 0, "paused %s: every worker starts no new call of it within a heartbeat (%ld ms); "
	    "entries wait in hand up to half of max_in_flight, the rest parked, deadlines still hold", what, c->cfg->daemon.heartbeat_ms);
	return 0;
}
