/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_jobops: the job operations of warrantd(7) §11 -- warrantctl jobs,
 * retry, cancel, dead requeue/drop in bulk -- with the real warrantctl and
 * warrantd against a real redis-server and fake_target.
 *
 * The daemon half shows what the worker makes of them: a retried record
 * runs on a fresh budget (attemptsBase) while `attempts` goes on growing; a
 * record cancelled while its call is out stays `cancelled`, the call's
 * answer kept in lateOutcome/lateHttpStatus; one cancelled while it waits
 * for a retry is never called again. The CLI half needs no daemon: what
 * each command writes, prints and refuses.
 */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "core/store.h"

#define ACTION		"gate.open"
#define WAIT_MS		H_WAIT_MS
#define RUN_MS		30000

static struct h_stack *const S = &h_group;
static struct h_daemon D;

static int
test_teardown(void **state)
{
	(void)state;
	if (D.pid > 0) {
		fprintf(stderr, "itest_jobops: killing leftover warrantd; log %s\n", D.log);
		h_daemon_kill(&D);
	}
	return 0;
}

static struct h_daemon_opts
opts(const char *prefix)
{
	struct h_daemon_opts o = {
		.redis_sock = S->redis.sock, .target_url = S->target.url, .prefix = prefix,
	};
	return o;
}

/* The config file warrantctl reads: the daemon's own. Caller frees. */
static char *
ini_of(const struct h_daemon_opts *o, const char *name)
{
	char *text = h_daemon_ini(o), *path;

	assert_non_null(text);
	path = h_write_file(name, text);
	assert_non_null(path);
	free(text);
	return path;
}

/* warrantctl -c ini args... (NULL-terminated): its exit code, and what it
 * wrote in *out (caller frees). */
static int
ctl(char **out, const char *ini, ...)
{
	char *argv[32];
	int n = 0;
	va_list ap;

	argv[n++] = (char *)h_bin("warrantctl");
	argv[n++] = "-c";
	argv[n++] = (char *)ini;
	va_start(ap, ini);
	while (n < 31 && (argv[n] = va_arg(ap, char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	return h_run(argv, RUN_MS, out);
}

#define CTL_EXPECT(code, needle, ...) do { \
	char *out_; \
	int rc_ = ctl(&out_, __VA_ARGS__, (char *)NULL); \
	if (rc_ != (code) || (needle != NULL && strstr(out_, needle) == NULL)) \
		fail_msg("warrantctl %s: exit %d, wanted %d and \"%s\": %s", #__VA_ARGS__, \
		    rc_, code, needle ? needle : "", out_); \
	free(out_); \
} while (0)

/* A signed record, decided a second ago, on the queue (or only stored). */
static void
decide(const char *prefix, const char *id, long long expires_in_ms, const char *notify,
       int enqueue)
{
	long long now = h_now_ms();
	/* one already past its deadline was decided before it */
	long long decided = expires_in_ms > 0 ? now - 1000 : now + expires_in_ms - 60000;
	char *json = h_record_json(id, ACTION, "canal/gate-14", decided, now + expires_in_ms,
	    0, notify), *jws;

	assert_non_null(json);
	if (enqueue) {
		assert_int_equal(h_decide(S->c, prefix, id, json, 1), 0);
	} else {
		jws = h_sign(json, h_data("test-es256.key"));
		assert_non_null(jws);
		assert_int_equal(h_store_record(S->c, prefix, id, jws, 0), 0);
		free(jws);
	}
	free(json);
}

/* Makes id a record the worker left `state` (failed or dead, with a dead
 * letter for dead), after `attempts` calls. */
static void
make_terminal(const char *prefix, const char *id, const char *state, int attempts,
	      const char *reason)
{
	assert_true(h_redis_int(S->c, "HSET %s state %s attempts %d owner w1 outcome %s",
	    h_key(prefix, "decision:%s", id), state, attempts, reason) >= 0);
	assert_int_equal(h_redis_int(S->c, "PEXPIRE %s 600000", h_key(prefix, "decision:%s",
	    id)), 1);
	free(h_redis_str(S->c, "SET %s %s PX 600000", h_key(prefix, "final:%s", id), state));
	if (strcmp(state, "dead") == 0)
		free(h_redis_str(S->c, "XADD %s * id %s streamId 1-1 reason %s detail x "
		    "deliveries 1 consumer w1 at 2026-01-01T00:00:00Z", h_key(prefix, "dead"),
		    id, reason));
}

struct field_wait {
	const char *prefix, *id, *field, *want;
};

static int
field_is(void *arg)
{
	const struct field_wait *w = arg;
	char *v = h_record_field(S->c, w->prefix, w->id, w->field);
	int ok = v != NULL && strcmp(v, w->want) == 0;

	free(v);
	return ok;
}

static void
wait_field(const char *prefix, const char *id, const char *field, const char *want)
{
	struct field_wait w = {prefix, id, field, want};

	if (h_wait_until(field_is, &w, WAIT_MS) != 0) {
		char *v = h_record_field(S->c, prefix, id, field);
		char *detail = h_record_field(S->c, prefix, id, "detail");
		fail_msg("%s's %s stays %s (%s), wanted %s; log %s", id, field, v ? v : "(nil)",
		    detail ? detail : "-", want, D.log);
	}
}

static int
call_arrived(void *arg)
{
	return h_count_calls(&S->target, arg) >= 1;
}

static int
pel_empty(void *arg)
{
	return h_pending_count(S->c, h_key(arg, "jobs"), H_GROUP) == 0;
}

/* The webhook POSTs (path /hook) about record id with kind cancelled. */
static int
hook_posts(const char *id)
{
	json_t *all = h_get_ok(&S->target, "/_requests"), *r;
	char want[128];
	size_t i;
	int n = 0;

	snprintf(want, sizeof want, "\"id\":\"%s\"", id);
	json_array_foreach(all, i, r) {
		const char *path = json_string_value(json_object_get(r, "path"));
		const char *body = json_string_value(json_object_get(r, "body"));
		if (path != NULL && strcmp(path, "/hook") == 0 && body != NULL &&
		    strstr(body, want) != NULL && strstr(body, "\"kind\":\"cancelled\"") != NULL &&
		    strstr(body, "\"owner\":\"ops\"") != NULL)
			n++;
	}
	json_decref(all);
	return n;
}

/* ---- with the daemon ---- */

/* §11, R8: a record dead after max_attempts calls, retried, runs again --
 * on calls counted from attemptsBase, `attempts` never going down -- and
 * the same for a failed one. */
static void
test_retry_fresh_budget(void **state)
{
	const char *p = "jr";
	struct h_daemon_opts o = opts(p);
	(void)state;

	o.max_attempts = 2;
	h_fake_reset(&S->target);
	assert_int_equal(h_fake_script(&S->target, "{\"default\": {\"status\": 503},"
	    "\"per_key\": {\"jr-failed\": [{\"status\": 403}]}}"), 0);
	char *ini = ini_of(&o, "jr.ini");
	h_daemon_up(&D, &o);
	decide(p, "jr-dead", 600000, NULL, 1);
	decide(p, "jr-failed", 600000, NULL, 1);
	wait_field(p, "jr-dead", "state", "dead");
	wait_field(p, "jr-failed", "state", "failed");
	h_assert_record_field(S->c, p, "jr-dead", "attempts", "2");
	assert_int_equal(h_stream_count(S->c, h_key(p, "dead"), "id", "jr-dead"), 1);

	assert_int_equal(h_fake_script(&S->target, "{\"default\": {\"status\": 200}}"), 0);
	CTL_EXPECT(0, "retried jr-dead", ini, "retry", "jr-dead");
	CTL_EXPECT(0, "retried jr-failed", ini, "retry", "jr-failed");
	wait_field(p, "jr-dead", "state", "done");
	wait_field(p, "jr-failed", "state", "done");
	h_assert_record_field(S->c, p, "jr-dead", "attempts", "3");
	h_assert_record_field(S->c, p, "jr-dead", "attemptsBase", "2");
	h_assert_record_field(S->c, p, "jr-failed", "attempts", "2");
	h_assert_record_field(S->c, p, "jr-failed", "attemptsBase", "1");
	/* the dead letter is answered; the audit says who asked */
	assert_int_equal(h_stream_count(S->c, h_key(p, "dead"), "id", "jr-dead"), 0);
	char *detail = h_stream_field(S->c, h_key(p, "audit"), "consumer", "warrantctl",
	    "detail");
	assert_non_null(detail);
	assert_non_null(strstr(detail, "asked by"));
	assert_non_null(strstr(detail, "redis user"));
	free(detail);
	/* done now: nothing to retry */
	CTL_EXPECT(1, "done", ini, "retry", "jr-dead");
	h_daemon_down(&D);
	free(ini);
}

/* §11: cancelled while its call is out: the call finishes, the state stays
 * cancelled, the answer goes to lateOutcome/lateHttpStatus and the audit,
 * and the entry is acked; the owner was told at the cancel. */
static void
test_cancel_in_flight(void **state)
{
	const char *p = "jc";
	struct h_daemon_opts o = opts(p);
	(void)state;

	o.claim_idle_ms = 600000;	/* nobody re-takes the entry meanwhile */
	o.action_timeout_ms = 10000;
	h_fake_reset(&S->target);
	assert_int_equal(h_fake_script(&S->target, "{\"per_key\": {\"jc-slow\": "
	    "[{\"status\": 200, \"delay_ms\": 3000}]}}"), 0);
	char *ini = ini_of(&o, "jc.ini");
	h_daemon_up(&D, &o);
	decide(p, "jc-slow", 600000, "ops:canal", 1);
	h_wait_for(call_arrived, (void *)"jc-slow", WAIT_MS, "the slow call");
	CTL_EXPECT(0, "cancelled jc-slow (was running); notified ops:canal", ini, "cancel",
	    "jc-slow");
	wait_field(p, "jc-slow", "lateOutcome", "done");
	h_assert_record_field(S->c, p, "jc-slow", "lateHttpStatus", "200");
	h_assert_record_field(S->c, p, "jc-slow", "state", "cancelled");
	char *fin = h_redis_str(S->c, "GET %s", h_key(p, "final:jc-slow"));
	assert_non_null(fin);
	assert_string_equal(fin, "cancelled");
	free(fin);
	assert_true(h_redis_int(S->c, "PTTL %s", h_key(p, "decision:jc-slow")) > 0);
	h_wait_for(pel_empty, (void *)p, WAIT_MS, "the entry acked");
	char *kind = h_stream_field(S->c, h_key(p, "notify"), "id", "jc-slow", "kind");
	assert_non_null(kind);
	assert_string_equal(kind, "cancelled");
	free(kind);
	assert_int_equal(h_stream_count(S->c, h_key(p, "notify"), "id", "jc-slow"), 1);
	assert_int_equal(h_stream_count(S->c, h_key(p, "audit"), "to", "cancelled"), 2);
	assert_int_equal(h_stream_count(S->c, h_key(p, "audit"), "to", "done"), 0);
	CTL_EXPECT(1, "cancelled already", ini, "cancel", "jc-slow");
	h_daemon_down(&D);
	free(ini);
}

/* §11: cancelled while it waits for a retry: when the timer fires the
 * worker finds it terminal, acks it, and never calls the target again; a
 * scheduled one leaves the schedule. */
static void
test_cancel_waiting(void **state)
{
	const char *p = "jw";
	struct h_daemon_opts o = opts(p);
	char hook[256];
	(void)state;

	/* §6: the webhook hears of a cancel as of any drop (the fake target
	 * stands in for the sink) */
	snprintf(hook, sizeof hook, "webhook_url = %s/hook\n", S->target.url);
	o.notify_extra = hook;
	h_fake_reset(&S->target);
	assert_int_equal(h_fake_script(&S->target, "{\"default\": {\"status\": 200}, "
	    "\"per_key\": {\"jw-retry\": [{\"status\": 503, \"retry_after\": \"2\"}]}}"), 0);
	char *ini = ini_of(&o, "jw.ini");
	h_daemon_up(&D, &o);
	decide(p, "jw-retry", 600000, NULL, 1);
	wait_field(p, "jw-retry", "state", "retrying");
	CTL_EXPECT(0, "cancelled jw-retry (was retrying); notified ops", ini, "cancel",
	    "jw-retry");
	h_wait_for(pel_empty, (void *)p, WAIT_MS, "the entry acked");
	assert_int_equal(h_count_calls(&S->target, "jw-retry"), 1);
	h_assert_record_field(S->c, p, "jw-retry", "state", "cancelled");
	char *late = h_record_field(S->c, p, "jw-retry", "lateOutcome");
	assert_null(late);
	assert_int_equal(hook_posts("jw-retry"), 1);

	/* scheduled an hour ahead */
	decide(p, "jw-later", 600000, NULL, 0);
	assert_int_equal(h_redis_int(S->c, "ZADD %s %lld jw-later", h_key(p, "scheduled"),
	    h_now_ms() + 3600000), 1);
	CTL_EXPECT(0, "cancelled jw-later (was queued)", ini, "cancel", "jw-later");
	assert_int_equal(h_redis_int(S->c, "ZCARD %s", h_key(p, "scheduled")), 0);
	h_daemon_down(&D);
	free(ini);
}

/* lua/transition.lua alone (plain EVAL, as the worker's batch would run
 * it): a call's answer that finds the record terminal is kept as
 * lateOutcome only when the terminal state is not its own -- a cancel --
 * and only for the attempt in flight; the same terminal write sent again
 * after its reply was lost is not a late outcome. */
static void
test_late_outcome_script(void **state)
{
	const char *p = "ls";
	struct store_keys k;
	char key[STORE_KEY_MAX + 64], err[160], sid[64];
	(void)state;

	assert_int_equal(store_keys_init(&k, p, "w1"), 0);
	free(h_redis_str(S->c, "XGROUP CREATE %s %s 0 MKSTREAM", h_key(p, "jobs"), H_GROUP));
	char *e = h_redis_str(S->c, "XADD %s * id ls-1", h_key(p, "jobs"));
	assert_non_null(e);
	snprintf(sid, sizeof sid, "%s", e);
	free(e);
	redisReply *rd = redisCommand(S->c, "XREADGROUP GROUP %s w1 COUNT 1 STREAMS %s >", H_GROUP,
	    h_key(p, "jobs"));
	freeReplyObject(rd);
	snprintf(key, sizeof key, "%s:decision:ls-1", p);
	struct store_transition t = {
		.hash_key = key, .stream_id = sid, .record_id = "ls-1", .state = "done",
		.outcome = "ok", .detail = "200 from target after 1 call(s)", .http_status = "200",
		.fence_attempts = 1, .require_owner = 1, .ack = 0, .dead_reason = "",
		.notify_owner = "", .notify_kind = "", .on_behalf_of = "", .action = "",
		.resource = "", .schedule_score = "", .at = "2026-12-02T10:00:00Z",
		.dead_maxlen = 10, .notify_maxlen = 10, .keep_unpending = 1, .call_result = 1,
	};
	static const struct {
		const char *mark, *owner, *attempts, *late;
	} cases[] = {
		{"done", "w1", "1", NULL},		/* its own write, sent again */
		{"cancelled", "w2", "1", NULL},		/* another consumer's attempt */
		{"cancelled", "w1", "2", NULL},		/* a newer attempt */
		{"cancelled", "w1", "1", "done"},	/* the call in flight at the cancel */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct store_args a;
		struct store_vec v;
		assert_true(h_redis_int(S->c, "HSET %s state %s owner %s attempts %s entry %s", key,
		    cases[i].mark, cases[i].owner, cases[i].attempts, sid) >= 0);
		free(h_redis_str(S->c, "SET %s %s", h_key(p, "final:ls-1"), cases[i].mark));
		free(h_redis_str(S->c, "HDEL %s lateOutcome lateHttpStatus", key));
		store_transition_args(&k, H_GROUP, "w1", 100, &t, &a);
		assert_int_equal(store_args_vec(&a, &v, err, sizeof err), 0);
		redisReply *r = redisCommandArgv(S->c, v.argc, v.argv, v.len);
		store_vec_free(&v);
		assert_non_null(r);
		if (r->type != REDIS_REPLY_ARRAY || r->elements < 2)
			fail_msg("case %zu: the transition answered %s", i,
			    r->type == REDIS_REPLY_ERROR ? r->str : "another shape");
		assert_string_equal(r->element[1]->str, "terminal");
		freeReplyObject(r);
		char *late = h_record_field(S->c, p, "ls-1", "lateOutcome");
		if ((late == NULL) != (cases[i].late == NULL) ||
		    (late != NULL && strcmp(late, cases[i].late) != 0))
			fail_msg("case %zu (mark %s, owner %s, attempts %s): lateOutcome %s, want %s",
			    i, cases[i].mark, cases[i].owner, cases[i].attempts, late ? late : "(nil)",
			    cases[i].late ? cases[i].late : "(nil)");
		free(late);
	}
	h_assert_record_field(S->c, p, "ls-1", "lateHttpStatus", "200");
	h_assert_record_field(S->c, p, "ls-1", "state", "cancelled");
}

/* ---- the CLI alone ---- */

/* What each command refuses, with exit 1 (or 64 for its usage). */
static void
test_refusals(void **state)
{
	const char *p = "rf";
	struct h_daemon_opts o = opts(p);
	char *ini = ini_of(&o, "rf.ini");
	(void)state;

	decide(p, "rf-done", 600000, NULL, 0);
	make_terminal(p, "rf-done", "done", 1, "ok");
	CTL_EXPECT(1, "its state is \"done\", not one of failed dead", ini, "retry", "rf-done");
	CTL_EXPECT(1, "it is done already", ini, "cancel", "rf-done");
	/* R4: set back to failed by hand, its mark still says done */
	decide(p, "rf-back", 600000, NULL, 0);
	make_terminal(p, "rf-back", "done", 1, "ok");
	assert_true(h_redis_int(S->c, "HSET %s state failed", h_key(p, "decision:rf-back")) >= 0);
	CTL_EXPECT(1, "its P:final mark says \"done\"", ini, "retry", "rf-back");
	/* past its deadline */
	decide(p, "rf-late", -1000, NULL, 0);
	make_terminal(p, "rf-late", "failed", 1, "http-4xx");
	CTL_EXPECT(1, "past its deadline", ini, "retry", "rf-late");
	assert_true(h_redis_int(S->c, "HSET %s state queued", h_key(p, "decision:rf-late")) >= 0);
	CTL_EXPECT(1, "past its deadline", ini, "cancel", "rf-late");
	/* no longer verifies */
	decide(p, "rf-forged", 600000, NULL, 0);
	make_terminal(p, "rf-forged", "failed", 1, "http-4xx");
	assert_int_equal(h_redis_int(S->c, "HSET %s record %s", h_key(p, "decision:rf-forged"),
	    "{\"recordId\":\"rf-forged\"}"), 0);
	CTL_EXPECT(1, "bad-signature", ini, "retry", "rf-forged");
	CTL_EXPECT(1, "bad-signature", ini, "cancel", "rf-forged");
	/* not failed or dead: queued */
	decide(p, "rf-queued", 600000, NULL, 0);
	CTL_EXPECT(1, "its state is \"queued\"", ini, "retry", "rf-queued");
	CTL_EXPECT(1, "record-missing", ini, "retry", "rf-none");
	/* nothing changed */
	char *st = h_record_field(S->c, p, "rf-done", "state");
	assert_string_equal(st, "done");
	free(st);
	assert_int_equal(h_redis_int(S->c, "EXISTS %s", h_key(p, "audit")), 0);
	assert_int_equal(h_redis_int(S->c, "EXISTS %s", h_key(p, "jobs")), 0);

	CTL_EXPECT(64, "expected 1 argument", ini, "retry");
	CTL_EXPECT(64, "not a recordId", ini, "cancel", "a/b");
	CTL_EXPECT(64, "no filter with it", ini, "dead", "drop", "--all", "--reason", "x");
	CTL_EXPECT(64, "--older-than is dead drop's", ini, "dead", "requeue",
	    "--older-than", "1d");
	CTL_EXPECT(64, "not a duration", ini, "dead", "drop", "--older-than", "soon");
	CTL_EXPECT(64, "expected ID or", ini, "dead", "drop", "x", "--all");
	CTL_EXPECT(64, "is not a state", ini, "jobs", "--state", "nope");
	CTL_EXPECT(64, "not a number", ini, "jobs", "--limit", "-1");
	free(ini);
}

/* dead requeue and drop in bulk: by reason, by age, all. */
static void
test_dead_bulk(void **state)
{
	const char *p = "bk";
	struct h_daemon_opts o = opts(p);
	char *ini = ini_of(&o, "bk.ini");
	(void)state;

	/* a letter from 1970 (an entry id below every other one comes first) */
	free(h_redis_str(S->c, "XADD %s 1000-0 id old-1 reason x", h_key(p, "dead")));
	decide(p, "bk-1", 600000, NULL, 0);
	decide(p, "bk-2", 600000, NULL, 0);
	decide(p, "bk-3", 600000, NULL, 0);
	make_terminal(p, "bk-1", "dead", 5, "max-attempts");
	make_terminal(p, "bk-2", "dead", 5, "max-attempts");
	make_terminal(p, "bk-2", "dead", 5, "max-attempts");	/* two letters */
	make_terminal(p, "bk-3", "dead", 1, "bad-signature");
	assert_int_equal(h_redis_int(S->c, "HSET %s record %s", h_key(p, "decision:bk-3"),
	    "{\"recordId\":\"bk-3\"}"), 0);

	CTL_EXPECT(0, "requeued 2 of 2 records (0 refused)", ini, "dead", "requeue", "--reason",
	    "max-attempts");
	h_assert_record_field(S->c, p, "bk-1", "state", "queued");
	h_assert_record_field(S->c, p, "bk-2", "attemptsBase", "5");
	h_assert_record_field(S->c, p, "bk-2", "attempts", "5");
	assert_int_equal(h_redis_int(S->c, "XLEN %s", h_key(p, "jobs")), 2);
	assert_int_equal(h_redis_int(S->c, "XLEN %s", h_key(p, "dead")), 2);
	/* bk-3 no longer verifies, old-1 has no record: refused, their letters kept */
	CTL_EXPECT(1, "requeued 0 of 2 records (2 refused)", ini, "dead", "requeue", "--all");
	assert_int_equal(h_redis_int(S->c, "XLEN %s", h_key(p, "dead")), 2);

	/* by age, by reason, all */
	CTL_EXPECT(0, "dropped 1 dead letter of 1 record", ini, "dead", "drop", "--older-than",
	    "1d");
	assert_int_equal(h_stream_count(S->c, h_key(p, "dead"), "id", "old-1"), 0);
	assert_int_equal(h_redis_int(S->c, "XLEN %s", h_key(p, "dead")), 1);
	free(h_redis_str(S->c, "XADD %s * id new-1 reason x", h_key(p, "dead")));
	CTL_EXPECT(0, "dropped 1 dead letter of 1 record", ini, "dead", "drop", "--reason",
	    "bad-signature");
	assert_int_equal(h_stream_count(S->c, h_key(p, "dead"), "id", "new-1"), 1);
	CTL_EXPECT(0, "dropped 1 dead letter of 1 record", ini, "dead", "drop", "--all");
	assert_int_equal(h_redis_int(S->c, "XLEN %s", h_key(p, "dead")), 0);
	CTL_EXPECT(1, "no dead letter matches", ini, "dead", "drop", "--all");
	free(ini);
}

/* jobs: every source, the filters, the limit, JSON. */
static void
test_jobs(void **state)
{
	const char *p = "jb";
	struct h_daemon_opts o = opts(p);
	char *ini = ini_of(&o, "jb.ini"), *out;
	(void)state;

	/* pending: read by w1, running */
	free(h_redis_str(S->c, "XGROUP CREATE %s %s 0 MKSTREAM", h_key(p, "jobs"), H_GROUP));
	decide(p, "jb-run", 600000, NULL, 1);
	redisReply *r = redisCommand(S->c, "XREADGROUP GROUP %s w1 COUNT 1 STREAMS %s >",
	    H_GROUP, h_key(p, "jobs"));
	assert_non_null(r);
	freeReplyObject(r);
	assert_true(h_redis_int(S->c, "HSET %s state running attempts 1 owner w1",
	    h_key(p, "decision:jb-run")) >= 0);
	/* undelivered */
	decide(p, "jb-q", 600000, NULL, 1);
	/* scheduled */
	decide(p, "jb-s", 600000, NULL, 0);
	assert_int_equal(h_redis_int(S->c, "ZADD %s %lld jb-s", h_key(p, "scheduled"),
	    h_now_ms() + 3600000), 1);
	/* done, seen through the audit */
	decide(p, "jb-done", 600000, NULL, 0);
	make_terminal(p, "jb-done", "done", 1, "ok");
	free(h_redis_str(S->c, "XADD %s * id jb-done from running to done", h_key(p, "audit")));
	/* dead, through its letter */
	decide(p, "jb-dead", 600000, NULL, 0);
	make_terminal(p, "jb-dead", "dead", 5, "max-attempts");
	/* expired long ago: its hash gone, only the audit remembers */
	free(h_redis_str(S->c, "XADD %s * id jb-gone from running to expired", h_key(p, "audit")));

	assert_int_equal(ctl(&out, ini, "jobs", (char *)NULL), 0);
	static const char *const lines[] = {"id=jb-run state=running action=gate.open",
	    "id=jb-q state=queued", "id=jb-s state=queued", "id=jb-done state=done",
	    "id=jb-dead state=dead", "id=jb-gone state=expired source=audit"};
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
		if (strstr(out, lines[i]) == NULL)
			fail_msg("jobs: no \"%s\" in: %s", lines[i], out);
	assert_non_null(strstr(out, "source=pending entryId="));
	assert_non_null(strstr(out, "consumer=w1"));
	assert_non_null(strstr(out, "source=scheduled scheduledAt="));
	free(out);

	CTL_EXPECT(0, "id=jb-done state=done", ini, "jobs", "--state", "done");
	assert_int_equal(ctl(&out, ini, "jobs", "--state", "queued", "--json", (char *)NULL), 0);
	json_t *v = json_loads(out, 0, NULL);
	assert_non_null(v);
	assert_int_equal(json_array_size(v), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(v, 0), "source")),
	    "stream");
	assert_string_equal(json_string_value(json_object_get(json_array_get(v, 1), "id")),
	    "jb-s");
	json_decref(v);
	free(out);
	assert_int_equal(ctl(&out, ini, "jobs", "--limit", "2", (char *)NULL), 0);
	assert_int_equal(strchr(strchr(out, '\n') + 1, '\n')[1], '\0');	/* two lines */
	free(out);
	/* --action: the verified record's; the hash-less one has none */
	assert_int_equal(ctl(&out, ini, "jobs", "--action", ACTION, "--json", (char *)NULL), 0);
	v = json_loads(out, 0, NULL);
	assert_int_equal(json_array_size(v), 5);
	json_decref(v);
	free(out);
	assert_int_equal(ctl(&out, ini, "jobs", "--action", "gate.close", (char *)NULL), 0);
	assert_string_equal(out, "");
	free(out);
	free(ini);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_retry_fresh_budget, test_teardown),
		cmocka_unit_test_teardown(test_cancel_in_flight, test_teardown),
		cmocka_unit_test_teardown(test_cancel_waiting, test_teardown),
		cmocka_unit_test(test_late_outcome_script),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_dead_bulk),
		cmocka_unit_test(test_jobs),
	};

	return cmocka_run_group_tests_name("jobops", tests, h_group_setup, h_group_teardown);
}
