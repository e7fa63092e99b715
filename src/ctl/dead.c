/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * warrantctl dead, retry and cancel: dead letters listed, requeued and
 * dropped (one by one or in bulk), a record queued again or cancelled
 * (warrantd(7) §11).
 */
#define _DEFAULT_SOURCE
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "auth/oauth.h"
#include "base/wtime.h"
#include "conf/config.h"
#include "conf/secrets.h"
#include "core/job.h"
#include "core/record.h"
#include "ctl/clir.h"
#include "ctl/cmds.h"
#include "ctl/ctl.h"
#include "worker/webhook.h"

/* ---- dead letters ---- */

/* --all, --reason R, --older-than D: which dead letters. */
struct dead_filter {
	int all;
	const char *reason;	/* NULL: any */
	int64_t before_ms;	/* added before this; 0: any time */
};

/* Every shard's dead letters in turn (or --shard N's). */
static int
dead_list(struct cli *c)
{
	json_t *all = json_array(), *e;
	size_t i;
	unsigned first, end;
	int rc = 0;

	cli_shard_range(c, &first, &end);
	for (unsigned sh = first; rc == 0 && sh < end; sh++)
		if ((rc = cli_use_shard(c, sh)) == 0 && (rc = clir_connect(c)) == 0)
			rc = clir_scan_stream(c, c->keys.dead, NULL, cli_dead_order, all);

	if (rc == 0 && c->json)
		rc = cli_print_json(all);
	else if (rc == 0)
		json_array_foreach(all, i, e)
			ctl_print_line(stdout, e, 0);
	if (rc == 0 && !c->json && json_array_size(all) == 0)	/* issue 38 item 6 */
		puts("no dead letters");
	json_decref(all);
	return rc;
}

/* The P:dead entries of recordId `id`, at least one, else EX_REFUSED. */
static int
dead_entries(struct cli *c, const char *id, json_t *entries)
{
	int rc = clir_scan_stream(c, c->keys.dead, id, cli_dead_order, entries);

	if (rc == 0 && json_array_size(entries) == 0) {
		cli_say("dead: no dead letter for %s", id);
		rc = EX_REFUSED;
	}
	return rc;
}

/* Who asked, for the audit entry (§11): the login (and the one behind sudo)
 * and the Redis user. */
static void
who_asked(const struct cli *c, char *buf, size_t n)
{
	const struct passwd *pw = getpwuid(getuid());
	const char *sudo = getenv("SUDO_USER");
	char uid[32];

	snprintf(uid, sizeof uid, "uid %u", (unsigned)getuid());
	snprintf(buf, n, "%s%s%s%s, redis user %s", pw != NULL ? pw->pw_name : uid,
	    sudo != NULL && *sudo ? " (sudo from " : "", sudo != NULL && *sudo ? sudo : "",
	    sudo != NULL && *sudo ? ")" : "", c->username != NULL ? c->username : "default");
	for (char *p = buf; *p; p++)	/* one line in the audit */
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

/*
 * lua/requeue.lua for retry and dead requeue: the record queued again with a
 * fresh budget, from one of `states`, its dead letters `entries` deleted.
 * Says what it did. 0 or an exit code.
 */
static int
requeue_write(struct cli *c, const char *cmd, const char *id, const char *hash,
	      const char *raw, json_t *entries, const char *states)
{
	char at[WTIME_RFC3339_LEN], final[STORE_KEY_MAX + RECORD_ID_MAX], who[256];
	size_t n = json_array_size(entries), i;
	const char **ids = calloc(n ? n : 1, sizeof *ids);
	struct store_args a;
	redisReply *r;
	json_t *e;
	int rc;

	if (ids == NULL) {
		cli_say("out of memory");
		return EX_REFUSED;
	}
	if (store_final_key(&c->keys, id, final, sizeof final) != 0) {
		cli_say("%s: %s: key name too long", cmd, id);
		free(ids);
		return EX_REFUSED;
	}
	json_array_foreach(entries, i, e)
		ids[i] = json_string_value(json_object_get(e, "entryId"));
	wtime_format_rfc3339(wtime_now_ms(), at, sizeof at);
	who_asked(c, who, sizeof who);
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
	const struct sreply *res = sreply_of(r);
	const char *said = sreply_string(sreply_element(res, 1));
	const char *attempts = sreply_string(sreply_element(res, 2));
	long long done = 0;
	if (said != NULL && sreply_integer(sreply_element(res, 0), &done) == 0 && done == 1) {
		/* the entry id last: scripts read "... entry <id>" up to the end */
		printf("%s %s with a fresh budget of %ld calls (attempts %s, attemptsBase %s) "
		    "as %s entry %s\n", strcmp(cmd, "retry") == 0 ? "retried" : "requeued", id,
		    c->cfg->retry.max_attempts, attempts ? attempts : "?", attempts ? attempts : "?",
		    c->keys.jobs, said);
	} else {
		cli_say("%s: refused: %s: %s", cmd, id, said != NULL ? said : "unexpected reply");
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
	     size_t key_len, struct record **out)
{
	struct record_policy pol;
	struct record *rec;
	char detail[DETAIL_MAX], at[WTIME_RFC3339_LEN];
	int64_t now = wtime_now_ms();
	enum record_status st;

	if (raw == NULL) {
		cli_say("%s: refused: %s: no record (record-missing)", cmd, id);
		return EX_REFUSED;
	}
	ctl_policy_init(&pol, c->cfg, (const unsigned char *)key, key_len);
	st = record_load(&pol, id, raw, now, &rec, NULL, detail, sizeof detail);
	if (st != RECORD_OK) {
		cli_say("%s: refused: %s: %s: %s", cmd, id, record_status_code(st), detail);
		return EX_REFUSED;
	}
	int expired = now >= rec->expires_at_ms;
	wtime_format_rfc3339(rec->expires_at_ms, at, sizeof at);
	if (expired) {
		record_free(rec);
		cli_say("%s: refused: %s is past its deadline (expiresAt %s)", cmd, id, at);
		return EX_REFUSED;
	}
	if (out != NULL)
		*out = rec;
	else
		record_free(rec);
	return 0;
}

/* retry and dead requeue of one record whose dead letters (none for a
 * failed record, or trimmed) are `entries`. */
static int
requeue_one(struct cli *c, const char *cmd, const char *id, const char *key, size_t key_len,
	    json_t *entries, const char *states)
{
	char hash[STORE_KEY_MAX + RECORD_ID_MAX];
	redisReply *r = NULL;
	int rc;

	if (store_decision_key(&c->keys, id, hash, sizeof hash) != 0) {
		cli_say("%s: %s: key name too long", cmd, id);
		return EX_REFUSED;
	}
	if ((rc = clir_run(c, &r, "HGET", hash, "record", (char *)NULL)) != 0)
		return rc;
	const char *raw = sreply_string(sreply_of(r));
	if ((rc = record_check(c, cmd, id, raw, key, key_len, NULL)) == 0)
		rc = requeue_write(c, cmd, id, hash, raw, entries, states);
	freeReplyObject(r);
	return rc;
}

static int
dead_requeue(struct cli *c, const char *id, const char *key, size_t key_len)
{
	json_t *entries = json_array();
	int rc;

	if ((rc = dead_entries(c, id, entries)) == 0)
		rc = requeue_one(c, "dead requeue", id, key, key_len, entries, " dead ");
	json_decref(entries);
	return rc;
}

static int
dead_drop(struct cli *c, const char *id)
{
	json_t *entries = json_array(), *e;
	const char **argv = NULL;
	redisReply *r;
	size_t i;
	int argc = 0, rc;

	if ((rc = dead_entries(c, id, entries)) != 0)
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
		cli_say("dead drop: no dead letter for %s", id);	/* dropped meanwhile */
		rc = EX_REFUSED;
	} else {
		printf("dropped %lld dead letter%s of %s\n", n, n == 1 ? "" : "s", id);
	}
done:
	free(argv);
	json_decref(entries);
	return rc;
}

static int
dead_with_id(struct cli *c, const char *sub, const char *id)
{
	char *key = NULL;
	size_t key_len = 0;
	int rc;

	if (*id == '\0')
		return cli_usage_error("dead %s: the recordId is empty", sub);
	/* drop matches any id, so a malformed one can be cleared too. */
	if (strcmp(sub, "requeue") == 0 && !record_id_valid(id))
		return cli_usage_error("dead requeue: '%s' is not a recordId", id);
	if ((rc = cli_load_config(c)) != 0 || (rc = cli_use_shard_of(c, id)) != 0)
		return rc;
	if (strcmp(sub, "requeue") == 0 && (rc = cli_read_verify_key(c, &key, &key_len)) != 0)
		return rc;
	if ((rc = clir_connect(c)) == 0)
		rc = strcmp(sub, "requeue") == 0 ? dead_requeue(c, id, key, key_len)
		    : dead_drop(c, id);
	secrets_free(key, key_len);
	return rc;
}

static int dead_bulk(struct cli *c, const char *sub, const struct dead_filter *f);
static int parse_dead_change(struct cli *c, int argc, char **argv, char **id,
			     struct dead_filter *f);

int
cmd_dead(struct cli *c, int argc, char **argv)
{
	struct dead_filter f = {0};
	char *id;
	int rc;

	if (argc < 2)
		return cli_usage_error("dead: expected list, requeue or drop");
	argc--;
	argv++;
	if (strcmp(argv[0], "list") == 0) {
		if ((rc = cli_parse_simple(c, argc, argv, 1, 0, NULL)) == 1)
			fputs(cli_usage_text, stdout);
		if (rc != 0)
			return rc == 1 ? 0 : rc;
		return (rc = cli_load_config(c)) != 0 ? rc : dead_list(c);
	}
	if (strcmp(argv[0], "requeue") != 0 && strcmp(argv[0], "drop") != 0)
		return cli_usage_error("dead: unknown subcommand '%s'", argv[0]);
	if ((rc = parse_dead_change(c, argc, argv, &id, &f)) == 1)
		fputs(cli_usage_text, stdout);
	if (rc != 0)
		return rc == 1 ? 0 : rc;
	return id != NULL ? dead_with_id(c, argv[0], id) : dead_bulk(c, argv[0], &f);
}

/* ---- job operations (§11): retry, cancel ---- */

/* retry ID and cancel ID: the options, the config, the record's shard, the
 * key and the connection. 0, -1 for -h (usage printed), or an exit code. */
static int
id_command(struct cli *c, int argc, char **argv, char **id, char **key, size_t *key_len)
{
	int rc = cli_parse_simple(c, argc, argv, 0, 1, id);

	if (rc == 1) {
		fputs(cli_usage_text, stdout);
		return -1;
	}
	if (rc != 0)
		return rc;
	if (*id == NULL || !record_id_valid(*id))
		return cli_usage_error("%s: '%s' is not a recordId", argv[0], *id ? *id : "");
	if ((rc = cli_load_config(c)) != 0 || (rc = cli_use_shard_of(c, *id)) != 0 ||
	    (rc = cli_read_verify_key(c, key, key_len)) != 0)
		return rc;
	return clir_connect(c);
}

/* A failed or dead record before its deadline: a fresh budget (requeue.lua),
 * its dead letters answered. */
int
cmd_retry(struct cli *c, int argc, char **argv)
{
	char *id = NULL, *key = NULL;
	size_t key_len = 0;
	json_t *entries = json_array();
	int rc = id_command(c, argc, argv, &id, &key, &key_len);

	if (rc == 0 && (rc = clir_scan_stream(c, c->keys.dead, id, cli_dead_order, entries)) == 0)
		rc = requeue_one(c, "retry", id, key, key_len, entries, " failed dead ");
	json_decref(entries);
	secrets_free(key, key_len);
	return rc < 0 ? 0 : rc;
}


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
	       const struct record *rec)
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
		cli_say("cancel: %s: the webhook did not take the notification%s%s (P:notify has it)",
		    id, err[0] ? ": " : "", err);
	free(body);
	return rc;
}

static int
cancel_write(struct cli *c, const char *id, const char *hash, const char *raw,
	     const struct record *rec)
{
	char at[WTIME_RFC3339_LEN], final[STORE_KEY_MAX + RECORD_ID_MAX], who[256];
	const struct cfg *cfg = c->cfg;
	const char *owner = rec->notify_on_denial ? rec->notify_on_denial :
	    cfg->notify.default_owner ? cfg->notify.default_owner : "";
	struct job core = {.expires_at_ms = rec->expires_at_ms};
	int64_t now = wtime_now_ms();
	struct store_args a;
	redisReply *r;
	int rc;

	if (store_final_key(&c->keys, id, final, sizeof final) != 0) {
		cli_say("cancel: %s: key name too long", id);
		return EX_REFUSED;
	}
	wtime_format_rfc3339(now, at, sizeof at);
	who_asked(c, who, sizeof who);
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
	const struct sreply *res = sreply_of(r);
	const char *said = sreply_string(sreply_element(res, 1));
	long long done = 0;
	if (said != NULL && sreply_integer(sreply_element(res, 0), &done) == 0 && done == 1) {
		printf("cancelled %s (was %s)%s%s%s\n", id, *said ? said : "without a state",
		    *owner ? "; notified " : "; nobody to notify", owner,
		    strcmp(said, "running") == 0 ? "; a call in flight finishes and its result "
		    "goes to lateOutcome" : "");
		fflush(stdout);
		(void)cancel_webhook(c, id, owner, at, rec);	/* it said why */
	} else {
		cli_say("cancel: refused: %s: %s", id, said != NULL ? said : "unexpected reply");
		rc = EX_REFUSED;
	}
	freeReplyObject(r);
	return rc;
}

/* A record not yet terminal, verified and before its deadline (past it, the
 * worker expires it on its own): `cancelled`, terminal. */
int
cmd_cancel(struct cli *c, int argc, char **argv)
{
	char *id = NULL, *key = NULL, hash[STORE_KEY_MAX + RECORD_ID_MAX];
	size_t key_len = 0;
	struct record *rec = NULL;
	redisReply *r = NULL;
	int rc = id_command(c, argc, argv, &id, &key, &key_len);

	if (rc == 0 && store_decision_key(&c->keys, id, hash, sizeof hash) != 0) {
		cli_say("cancel: %s: key name too long", id);
		rc = EX_REFUSED;
	}
	if (rc == 0)
		rc = clir_run(c, &r, "HGET", hash, "record", (char *)NULL);
	if (rc == 0) {
		const char *raw = sreply_string(sreply_of(r));
		if ((rc = record_check(c, "cancel", id, raw, key, key_len, &rec)) == 0)
			rc = cancel_write(c, id, hash, raw, rec);
	}
	record_free(rec);
	freeReplyObject(r);
	secrets_free(key, key_len);
	return rc < 0 ? 0 : rc;
}

/* ---- dead letters in bulk (§11) ---- */

/*
 * Adds every dead letter of the shard in use that f chooses to by_id:
 * recordId -> [{"entryId": id}, ...], in the stream's order, read in pages
 * (only the ids are kept, however long P:dead is). A letter without a
 * usable id (no-id) is kept under "". 0 or an exit code.
 */
static int
dead_matching(struct cli *c, const struct dead_filter *f, json_t *by_id)
{
	char start[128] = "-";
	redisReply *r;
	int rc;

	for (;;) {
		if ((rc = clir_run(c, &r, "XRANGE", c->keys.dead, start, "+", "COUNT", PAGE_S,
		    (char *)NULL)) != 0)
			return rc;
		const struct sreply *page = sreply_of(r);
		size_t n = 0;
		if (sreply_array_len(page, &n) != 0)
			n = 0;
		for (size_t i = 0; i < n; i++) {
			const struct sreply *e = sreply_element(page, i);
			const char *eid = cli_entry_id(e);
			if (eid == NULL)
				continue;
			snprintf(start, sizeof start, "(%s", eid);
			const struct sreply *fields = sreply_element(e, 1);
			if (!ctl_dead_match(eid, sreply_field(fields, "reason"), f->reason,
			    f->before_ms))
				continue;
			const char *id = sreply_field(fields, "id");
			if (id == NULL)
				id = "";
			json_t *list = json_object_get(by_id, id);
			if (list == NULL) {
				list = json_array();
				json_object_set_new(by_id, id, list);
			}
			json_array_append_new(list, json_pack("{s:s}", "entryId", eid));
		}
		freeReplyObject(r);
		if (n < PAGE)
			return 0;
	}
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

/* dead requeue|drop --all|--reason R[|--older-than D] over every shard (or
 * --shard N's). Each record is requeued or refused on its own line; the
 * last line counts them. Exit 1 when something was refused or nothing
 * matched. */
static int
dead_bulk(struct cli *c, const char *sub, const struct dead_filter *f)
{
	int requeue = strcmp(sub, "requeue") == 0;
	char *key = NULL, cmd[32];
	size_t key_len = 0, records = 0, refused = 0;
	long long letters = 0, done = 0;
	unsigned first, end;
	int rc;

	snprintf(cmd, sizeof cmd, "dead %s", sub);
	if ((rc = cli_load_config(c)) != 0 ||
	    (requeue && (rc = cli_read_verify_key(c, &key, &key_len)) != 0))
		return rc;
	cli_shard_range(c, &first, &end);
	for (unsigned sh = first; rc == 0 && sh < end; sh++) {
		json_t *by_id = json_object(), *list;
		const char *id;
		if ((rc = cli_use_shard(c, sh)) == 0 && (rc = clir_connect(c)) == 0)
			rc = dead_matching(c, f, by_id);
		json_object_foreach(by_id, id, list) {
			if (rc != 0)
				break;
			records++;
			letters += (long long)json_array_size(list);
			if (!requeue)
				continue;
			if (!record_id_valid(id)) {
				cli_say("%s: refused: '%s' is not a recordId", cmd, id);
				refused++;
				continue;
			}
			int one = requeue_one(c, cmd, id, key, key_len, list, " dead ");
			if (one == EX_REFUSED)
				refused++;
			else if (one != 0)
				rc = one;	/* Redis went: stop */
			else
				done++;
		}
		if (rc == 0 && !requeue)
			rc = dead_drop_matching(c, by_id, &done);
		json_decref(by_id);
	}
	secrets_free(key, key_len);
	if (rc != 0)
		return rc;
	if (requeue)
		printf("requeued %lld of %zu record%s (%zu refused)\n", done, records,
		    records == 1 ? "" : "s", refused);
	else
		printf("dropped %lld dead letter%s of %zu record%s\n", done, done == 1 ? "" : "s",
		    records, records == 1 ? "" : "s");
	if (letters == 0) {
		cli_say("%s: no dead letter matches", cmd);
		return EX_REFUSED;
	}
	return refused > 0 ? EX_REFUSED : 0;
}

/*
 * dead requeue|drop: ID, or the bulk options. 0 with *id or f set, 1 for -h,
 * or an exit code.
 */
static int
parse_dead_change(struct cli *c, int argc, char **argv, char **id, struct dead_filter *f)
{
	static const struct option longopts[] = {
		{"all", no_argument, NULL, OPT_ALL},
		{"reason", required_argument, NULL, OPT_REASON},
		{"older-than", required_argument, NULL, OPT_OLDER_THAN},
		{"shard", required_argument, NULL, OPT_SHARD},
		{"config", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int drop = strcmp(argv[0], "drop") == 0, ch, rc;
	int64_t age;

	*id = NULL;
	while ((ch = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
		if (ch == 'h')
			return 1;
		else if (ch == 'c')
			c->cfg_path = optarg;
		else if (ch == OPT_ALL)
			f->all = 1;
		else if (ch == OPT_REASON)
			f->reason = optarg;
		else if (ch == OPT_OLDER_THAN && !drop)
			return cli_usage_error("dead requeue: --older-than is dead drop's: a record's "
			    "age is not a reason to run it");
		else if (ch == OPT_OLDER_THAN) {
			if (ctl_parse_duration(optarg, &age) != 0 || age <= 0)
				return cli_usage_error("dead drop: --older-than: '%s' is not a "
				    "duration (N[smhd])", optarg);
			f->before_ms = wtime_now_ms() - age;
		} else if (ch == OPT_SHARD) {
			if ((rc = cli_shard_option(c, optarg)) != 0)
				return rc;
		} else
			return cli_unknown_option(argv[0], argv);
	}
	int bulk = f->all || f->reason != NULL || f->before_ms != 0;
	if (f->all && (f->reason != NULL || f->before_ms != 0))
		return cli_usage_error("dead %s: --all chooses every dead letter: no filter with it",
		    argv[0]);
	if (bulk && argc - optind == 0)
		return 0;
	if (!bulk && argc - optind == 1 && c->shard_opt < 0) {
		*id = argv[optind];
		return 0;
	}
	return cli_usage_error("dead %s: expected ID or %s", argv[0], drop ?
	    "--all, --reason R or --older-than D" : "--all or --reason R");
}

