/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_tokens: the worker's own OAuth 2.0 token (warrantd(7) §9, R6, R9) with the
 * real warrantd, a real redis-server, fake_idp and fake_target. Both fakes
 * share one HS256 secret (tests/data/test-hs256.secret): the target accepts
 * only a live, unrevoked token the IdP issued, and answers anything else
 * with 401 and WWW-Authenticate: Bearer error="invalid_token".
 *
 * Every test brings up its own redis, IdP, target and daemons, and the
 * teardown stops them by PID (also after a failed assertion), so no test
 * sees another's traffic or tokens.
 *
 * fake_idp stamps iat and exp in whole seconds (exp = iat + lifetime) and
 * fake_target's POST /_revoke kills every token whose iat is before the
 * current second. So a token is revoked for sure only once the wall clock
 * has moved past the second it was issued in: the tests wait for that
 * (next_second) before they revoke.
 */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "harness.h"
#include "base/wtime.h"

#define ID_LEN		48
#define CLIENT_ID	"warrantd-tok"
/* Distinctive, and with characters that Basic auth form-encodes. */
#define SECRET		"tok-S3cr3t+%:/x"
#define SECRET_FORM	"tok-S3cr3t%2B%25%3A%2Fx"
#define WRONG_SECRET	"not-the-S3cr3t"

static struct h_redis redis;
static struct h_fake idp, target;
static struct h_daemon dmn[2];
static redisContext *rc;
static char *secret_path;

/* ------------------------------------------------------------------ */
/* the world: redis, the IdP, the target                               */

/* The IdP also exchanges tokens (RFC 8693) for records the test decider
 * signed. */
static void
world_up(int lifetime_s)
{
	char life[16];
	const char *hs = h_data("test-hs256.secret");

	snprintf(life, sizeof life, "%d", lifetime_s);
	secret_path = h_write_file("client-secret", SECRET "\n");
	assert_non_null(secret_path);
	const char *idp_args[] = {"--jwt-secret-file", hs, "--client-id", CLIENT_ID,
	    "--client-secret-file", secret_path, "--assertion-key-file", h_data("test-rs256.pub"),
	    "--lifetime-s", life, "--decision-key-file", h_data("test-es256.pub"), NULL};
	const char *target_args[] = {"--jwt-secret-file", hs, NULL};

	rc = h_redis_up(&redis);
	assert_int_equal(h_fake_start(&idp, "fake_idp", idp_args), 0);
	assert_int_equal(h_fake_start(&target, "fake_target", target_args), 0);
}

static int
world_down(void **state)
{
	(void)state;
	h_world_down(dmn, sizeof dmn / sizeof dmn[0], &rc, &redis, &target, &idp,
	    (struct h_fake *)NULL);
	free(secret_path);
	secret_path = NULL;
	return 0;
}

/* Paces load the test generates; never used to wait for an outcome. */
static void
pause_ms(long long ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	while (ms > 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static long long
stat_int(const struct h_fake *f, const char *name)
{
	return h_fake_stat(f, NULL, name);
}

/* by_status[code] of the target, 0 when absent. */
static long long
target_answers(const char *code)
{
	return h_fake_stat(&target, "by_status", code);
}

/* Calls the target recorded with Idempotency-Key: key. */
static long long
target_calls(const char *key)
{
	return h_fake_stat(&target, "keys", key);
}

struct key_wait {
	const char *key;
	long long min;
};

static int
target_saw(void *arg)
{
	const struct key_wait *w = arg;
	return target_calls(w->key) >= w->min;
}

static void
wait_target_calls(const char *key, long long min)
{
	struct key_wait w = { key, min };

	if (h_wait_until(target_saw, &w, H_WAIT_MS) != 0)
		fail_msg("%s: %lld call(s) at the target, want %lld", key, target_calls(key), min);
}

/* The statuses the target answered to key, in arrival order: "503 401 200". */
static void
statuses_of(const char *key, char *out, size_t n)
{
	json_t *all = h_get_ok(&target, "/_requests"), *r;
	size_t i, used = 0;

	out[0] = '\0';
	json_array_foreach(all, i, r) {
		const char *k = json_string_value(json_object_get(r, "idempotency_key"));
		if (k == NULL || strcmp(k, key) != 0)
			continue;
		int w = snprintf(out + used, n - used, "%s%lld", used ? " " : "",
		    (long long)json_integer_value(json_object_get(r, "status")));
		if (w > 0 && (size_t)w < n - used)
			used += (size_t)w;
	}
	json_decref(all);
}

static void
assert_statuses(const char *key, const char *want)
{
	char got[256];

	statuses_of(key, got, sizeof got);
	if (strcmp(got, want) != 0)
		fail_msg("%s: the target answered \"%s\", want \"%s\"", key, got, want);
}

/* Waits until the wall clock is in a later second than `ms`: a token issued
 * at or before ms is then dead after POST /_revoke (see the top). */
static int
second_passed(void *arg)
{
	return h_now_ms() / 1000 > *(long long *)arg / 1000;
}

static void
next_second(long long ms)
{
	assert_int_equal(h_wait_until(second_passed, &ms, 5000), 0);
}

/* ------------------------------------------------------------------ */
/* the daemon                                                           */

struct dcfg {
	const char *consumer;
	const char *secret_file;	/* client_secret_basic; NULL: private_key_jwt */
	int timeout_ms;			/* the action's [2000] */
	int claim_idle_ms;		/* [2000] */
	int max_deliveries;		/* [16] */
	const char *redis_extra;
	const char *oauth_extra;
	const char *action_extra;	/* inside [action gate.open] */
	const char *more_sections;	/* after [oauth] */
};

static char *
daemon_ini(const struct dcfg *c)
{
	char sections[4096], auth[1024];

	if (c->secret_file != NULL)
		snprintf(auth, sizeof auth, "client_secret_file = %s\n", c->secret_file);
	else
		snprintf(auth, sizeof auth, "auth_method = private_key_jwt\n"
		    "private_key_file = %s\nassertion_alg = RS256\n", h_data("test-rs256.key"));
	snprintf(sections, sizeof sections, "[oauth]\ntoken_url = %s/token\nclient_id = %s\n%s%s%s",
	    idp.url, CLIENT_ID, auth, c->oauth_extra ? c->oauth_extra : "",
	    c->more_sections ? c->more_sections : "");
	struct h_daemon_opts o = {
		.redis_sock = redis.sock, .target_url = target.url, .consumer = c->consumer,
		.claim_idle_ms = c->claim_idle_ms, .action_auth = "oauth",
		.action_timeout_ms = c->timeout_ms, .redis_extra = c->redis_extra,
		.max_deliveries = c->max_deliveries, .action_extra = c->action_extra,
		.sections = sections,
	};
	char *ini = h_daemon_ini(&o);

	assert_non_null(ini);
	return ini;
}

/* Started and ready (its own PEL scanned, which needs a token). */
static void
daemon_up(struct h_daemon *d, const struct dcfg *c)
{
	char *ini = daemon_ini(c);
	int r = h_daemon_start(d, ini);

	free(ini);
	if (r != 0)
		fail_msg("warrantd %s did not get ready (log %s)", c->consumer, d->log);
}

/* ---- the heartbeat hash (warrantd(7) §8) ---- */

static char *
hb_str(const char *consumer, const char *name)
{
	char key[128];

	snprintf(key, sizeof key, H_PREFIX ":consumer:%s", consumer);
	return h_hget(rc, key, name);
}

static long long
hb_int(const char *consumer, const char *name)
{
	char *v = hb_str(consumer, name);
	long long n = v ? strtoll(v, NULL, 10) : -1;

	free(v);
	return n;
}

struct hb_wait {
	const char *consumer, *name;
	long long min;		/* counters */
	const char *want;	/* strings: equal to, or (negate) not equal to */
	int negate;
};

static int
hb_reached(void *arg)
{
	const struct hb_wait *w = arg;

	if (w->want == NULL)
		return hb_int(w->consumer, w->name) >= w->min;
	char *v = hb_str(w->consumer, w->name);
	int eq = v != NULL && strcmp(v, w->want) == 0;
	int ok = v != NULL && (w->negate ? !eq : eq);
	free(v);
	return ok;
}

/* Waits for the heartbeat (written every heartbeat_ms) to show at least min. */
static void
wait_hb_min(const char *consumer, const char *name, long long min)
{
	struct hb_wait w = { consumer, name, min, NULL, 0 };

	if (h_wait_until(hb_reached, &w, H_WAIT_MS) != 0)
		fail_msg("%s %s = %lld, want >= %lld", consumer, name, hb_int(consumer, name), min);
}

static void
wait_hb_str(const char *consumer, const char *name, const char *want, int negate)
{
	struct hb_wait w = { consumer, name, 0, want, negate };

	if (h_wait_until(hb_reached, &w, H_WAIT_MS) != 0) {
		char *v = hb_str(consumer, name);
		fail_msg("%s %s = \"%s\", want %s\"%s\"", consumer, name, v ? v : "(nil)",
		    negate ? "not " : "", want);
	}
}

/* ------------------------------------------------------------------ */
/* records, states, the PEL                                            */

/* A signed record for `action` on `resource`, its deadline an hour away. */
static void
decide_on(const char *id, const char *action, const char *resource)
{
	long long now = h_now_ms();
	char *json = h_record_json(id, action, resource, now - 1000, now + 3600 * 1000LL, 0,
	    NULL);

	assert_non_null(json);
	assert_int_equal(h_decide(rc, H_PREFIX, id, json, 1), 0);
	free(json);
}

/* A signed record for `action`, its deadline an hour away. */
static void
decide_action(const char *id, const char *action)
{
	long long now = h_now_ms();
	char *json = h_record_json(id, action, "lock/7", now - 1000, now + 3600 * 1000LL, 0,
	    NULL);

	assert_non_null(json);
	assert_int_equal(h_decide(rc, H_PREFIX, id, json, 1), 0);
	free(json);
}

/* A signed record for gate.open, its deadline an hour away. */
static void
decide(const char *id)
{
	long long now = h_now_ms();
	char *json = h_record_json(id, "gate.open", "lock/7", now - 1000, now + 3600 * 1000LL, 0,
	    NULL);

	assert_non_null(json);
	assert_int_equal(h_decide(rc, H_PREFIX, id, json, 1), 0);
	free(json);
}

static char *
hash_field(const char *id, const char *name)
{
	char key[128];

	snprintf(key, sizeof key, H_PREFIX ":decision:%.*s", ID_LEN, id);
	return h_hget(rc, key, name);
}

static int
terminal_not_done(const char *s)
{
	return strcmp(s, "expired") == 0 || strcmp(s, "denied") == 0 ||
	    strcmp(s, "failed") == 0 || strcmp(s, "dead") == 0;
}

/* Terminal states never change, so the scan resumes where it stopped. */
struct done_wait {
	char (*ids)[ID_LEN];
	int n, next;
	char bad[200];		/* set when one ended other than done */
};

static int
all_done(void *arg)
{
	struct done_wait *w = arg;

	while (w->next < w->n) {
		char *s = hash_field(w->ids[w->next], "state");
		int done = s != NULL && strcmp(s, "done") == 0;
		if (s != NULL && terminal_not_done(s)) {
			char *why = hash_field(w->ids[w->next], "outcome");
			snprintf(w->bad, sizeof w->bad, "%s ended %s (%s), want done",
			    w->ids[w->next], s, why ? why : "-");
			free(why);
			free(s);
			return 1;
		}
		free(s);
		if (!done)
			return 0;
		w->next++;
	}
	return 1;
}

static void
wait_all_done(char (*ids)[ID_LEN], int n, const struct h_daemon *d)
{
	struct done_wait w = { ids, n, 0, "" };

	if (h_wait_until(all_done, &w, H_WAIT_MS) != 0) {
		char *s = hash_field(ids[w.next], "state");
		fail_msg("%s: state \"%s\" after %d ms, want done (%d of %d done; log %s)",
		    ids[w.next], s ? s : "(nil)", H_WAIT_MS, w.next, n, d->log);
	}
	if (w.bad[0])
		fail_msg("%s (log %s)", w.bad, d->log);
}

static void
wait_done(const char *id, const struct h_daemon *d)
{
	char one[1][ID_LEN];

	snprintf(one[0], ID_LEN, "%s", id);
	wait_all_done(one, 1, d);
}

static void
wait_state(const char *id, const char *want)
{
	h_wait_hash_field(rc, h_key(H_PREFIX, "decision:%s", id), "state", want, H_WAIT_MS);
}

/* The `to` states of id's audit entries, in order, space-separated. */
static void
audit_trail(const char *id, char *out, size_t n)
{
	redisReply *r = redisCommand(rc, "XRANGE %s - +", H_AUDIT);
	size_t used = 0;

	out[0] = '\0';
	for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
		const redisReply *f = r->element[i]->element[1];
		const char *eid = NULL, *to = NULL;
		for (size_t k = 0; k + 1 < f->elements; k += 2) {
			if (strcmp(f->element[k]->str, "id") == 0)
				eid = f->element[k + 1]->str;
			else if (strcmp(f->element[k]->str, "to") == 0)
				to = f->element[k + 1]->str;
		}
		if (eid == NULL || to == NULL || strcmp(eid, id) != 0)
			continue;
		int w = snprintf(out + used, n - used, "%s%s", used ? " " : "", to);
		if (w > 0 && (size_t)w < n - used)
			used += (size_t)w;
	}
	freeReplyObject(r);
}

static void
assert_trail_ends(const char *id, const char *tail)
{
	char trail[1024];
	size_t lt, ln;

	audit_trail(id, trail, sizeof trail);
	lt = strlen(trail), ln = strlen(tail);
	if (lt < ln || strcmp(trail + lt - ln, tail) != 0)
		fail_msg("%s: audit trail \"%s\", want it to end with \"%s\"", id, trail, tail);
}

/* XPENDING summary: entries pending for consumer (0 when none). */
static long long
pending_of(const char *consumer)
{
	return h_pending_of(rc, H_JOBS, H_GROUP, consumer);
}

/* XINFO GROUPS lag of our group: entries not yet delivered; -1 unknown. */
static long long
group_lag(void)
{
	redisReply *r = redisCommand(rc, "XINFO GROUPS %s", H_JOBS);
	long long lag = -1;

	for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
		const redisReply *g = r->element[i];
		int ours = 0;
		long long l = -1;
		for (size_t k = 0; g->type == REDIS_REPLY_ARRAY && k + 1 < g->elements; k += 2) {
			const char *name = g->element[k]->str;
			const redisReply *v = g->element[k + 1];
			if (strcmp(name, "name") == 0 && v->type == REDIS_REPLY_STRING)
				ours = strcmp(v->str, H_GROUP) == 0;
			else if (strcmp(name, "lag") == 0 && v->type == REDIS_REPLY_INTEGER)
				l = v->integer;
		}
		if (ours)
			lag = l;
	}
	freeReplyObject(r);
	return lag;
}

struct pel_entry {
	int present;
	char owner[64];
	long long idle_ms, deliveries;
};

static struct pel_entry
pel_entry(const char *sid)
{
	redisReply *r = redisCommand(rc, "XPENDING %s %s %s %s 1", H_JOBS, H_GROUP, sid, sid);
	struct pel_entry e = {0};

	if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
	    r->element[0]->type == REDIS_REPLY_ARRAY && r->element[0]->elements == 4) {
		const redisReply *x = r->element[0];
		e.present = 1;
		snprintf(e.owner, sizeof e.owner, "%s", x->element[1]->str);
		e.idle_ms = x->element[2]->integer;
		e.deliveries = x->element[3]->integer;
	}
	freeReplyObject(r);
	return e;
}

/* XREADGROUP as `consumer`, as a worker that then crashed would: the
 * entries stay pending for it. Returns how many it got. */
static int
read_as(const char *consumer, int count)
{
	redisReply *r = redisCommand(rc, "XREADGROUP GROUP %s %s COUNT %d STREAMS %s >", H_GROUP,
	    consumer, count, H_JOBS);
	int n = 0;

	if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 1) {
		const redisReply *s = r->element[0];
		if (s->type == REDIS_REPLY_ARRAY && s->elements == 2 &&
		    s->element[1]->type == REDIS_REPLY_ARRAY)
			n = (int)s->element[1]->elements;
	}
	freeReplyObject(r);
	return n;
}

/* How often needle occurs in d's log. */
static int
log_count(const struct h_daemon *d, const char *needle)
{
	char *text = h_read_file(d->log);
	int n = 0;

	for (const char *p = text; p != NULL && (p = strstr(p, needle)) != NULL; p++)
		n++;
	free(text);
	return n;
}

struct log_wait {
	const struct h_daemon *d;
	const char *needle;
	int min;
};

static int
log_reached(void *arg)
{
	const struct log_wait *w = arg;
	return log_count(w->d, w->needle) >= w->min;
}

static void
assert_log_lacks(const struct h_daemon *d, const char *needle, const char *what)
{
	if (h_daemon_log_has(d, needle))
		fail_msg("%s (\"%s\") appears in %s", what, needle, d->log);
}

/* How many of the worker's calls for `key` it gave up on unanswered
 * (event=job.call ... error=timeout). */
static int
timeouts_of(const struct h_daemon *d, const char *key)
{
	char *text = h_read_file(d->log), needle[96];
	int n = 0;

	snprintf(needle, sizeof needle, "event=job.call id=%s ", key);
	for (char *line = text ? strtok(text, "\n") : NULL; line != NULL;
	    line = strtok(NULL, "\n"))
		if (strstr(line, needle) != NULL && strstr(line, " error=timeout") != NULL)
			n++;
	free(text);
	return n;
}

/* key got a 2xx at the target, and a second one only after a call the
 * worker timed out on: the call's timeout_ms (400 ms below, for R6's
 * margin in 2 s tokens) is shorter than a call can take on a loaded
 * machine, and R8 then calls again with the same Idempotency-Key. Seen: 4
 * keys of 300 answered 200 twice, each first call answered after 402-486 ms. */
static void
assert_ok_once_or_timed_out(json_t *reqs, const char *key, const struct h_daemon *d)
{
	json_t *r;
	size_t i;
	int ok = 0;

	json_array_foreach(reqs, i, r) {
		const char *k = json_string_value(json_object_get(r, "idempotency_key"));
		long long st = json_integer_value(json_object_get(r, "status"));
		if (k != NULL && strcmp(k, key) == 0 && st >= 200 && st <= 299)
			ok++;
	}
	if (ok == 0)
		fail_msg("%s: no 2xx at the target", key);
	if (ok > 1 && ok - 1 > timeouts_of(d, key))
		fail_msg("%s: %d 2xx at the target, and the worker timed out on %d call(s) "
		    "of it (log %s)", key, ok, timeouts_of(d, key), d->log);
}

/* ------------------------------------------------------------------ */
/* 1. short tokens, refreshed ahead (warrantd(7) §9, R6)                       */

/*
 * Tokens live 2 s. fake_idp writes iat and exp in whole seconds (exp =
 * iat + 2), so a token received during second S dies at S + 2 and has
 * between 1 and 2 s left on arrival. R6 with timeout_ms 400 wants more than
 * 400 + 1000 = 1400 ms left when a call starts, so even a token received at
 * the very start of a second is usable for its first 600 ms only. With the
 * default refresh_ratio 0.75 the refresh would come at 1.5 s, 0.9 s after the
 * token stopped being usable; 0.2 asks at ~400 ms (less up to 5% jitter),
 * while it still has ~1.6 s, leaving ~200 ms for the round trip (and a
 * refresh in the same second gets the same exp, with shorter life, so the
 * next one comes sooner still, until the second turns).
 *
 * Whatever the ratio: every call R6 allows starts before exp - 1.4 s, and
 * exp <= S + 2 for the second S the call starts in (the token was issued at
 * or before it), so every call starts in the first 600 ms of a wall-clock
 * second. The target's arrival times show that (300 ms allowed for a request
 * to travel on a loaded box): a worker that ignored the timeout or the
 * margin would call all through the second, and one that used tokens to the
 * last moment would also get 401s.
 */
static void
test_short_tokens_refreshed_ahead(void **state)
{
	enum { N = 300, EVERY_MS = 100 };
	static char ids[N][ID_LEN];
	(void)state;

	world_up(2);
	struct dcfg c = { .consumer = "w1", .secret_file = secret_path, .timeout_ms = 400,
	    .oauth_extra = "refresh_ratio = 0.2\n" };
	daemon_up(&dmn[0], &c);

	long long t0 = h_now_ms();
	for (int i = 0; i < N; i++) {
		snprintf(ids[i], ID_LEN, "t1-%03d", i);
		pause_ms(t0 + (long long)i * EVERY_MS - h_now_ms());
		decide(ids[i]);
	}
	wait_all_done(ids, N, &dmn[0]);

	assert_int_equal(target_answers("401"), 0);
	json_t *reqs = h_get_ok(&target, "/_requests"), *r;
	size_t i;
	assert_int_equal(json_array_size(reqs), target_answers("200"));
	for (int k = 0; k < N; k++)
		assert_ok_once_or_timed_out(reqs, ids[k], &dmn[0]);
	long long late = 0, worst = 0;
	json_array_foreach(reqs, i, r) {
		long long in_second = json_integer_value(json_object_get(r, "arrival_ms")) % 1000;
		assert_true(json_is_true(json_object_get(r, "authorization")));
		if (in_second >= 900)
			late++;
		if (in_second > worst)
			worst = in_second;
	}
	json_decref(reqs);
	print_message("itest_tokens: latest call %lld ms into a second\n", worst);
	if (late > 0)
		fail_msg("%lld call(s) arrived >= 900 ms into a second (latest %lld): a token "
		    "with less than timeout + 1 s of life was used (R6)", late, worst);

	long long issued = stat_int(&idp, "issued");
	if (issued < 10)
		fail_msg("the IdP issued %lld tokens in 30 s of 2 s tokens, want >= 10", issued);
	wait_hb_min("w1", "done", N);
	wait_hb_min("w1", "tokenRefreshes", 10);
	assert_int_equal(hb_int("w1", "expired"), 0);
	assert_int_equal(hb_int("w1", "dead"), 0);
	h_daemon_down(&dmn[0]);
}

/* ------------------------------------------------------------------ */
/* 2. revoked again and again (R9)                                      */

/*
 * 500 jobs over 10 s while the test revokes every token every 300 ms (which
 * bites once a second, see the top). Each call rejected with 401 must be
 * re-dispatched and run again with a fresh token: every key succeeds at the
 * target exactly once, nothing is left in the PEL, nothing dies.
 */
static void
test_revocations_execute_each_once(void **state)
{
	enum { N = 500, EVERY_MS = 20, REVOKE_MS = 300 };
	static char ids[N][ID_LEN];
	struct done_wait w = { ids, N, 0, "" };
	int added = 0, revokes = 0;
	(void)state;

	world_up(30);
	/* A little delay keeps calls in flight across revocations. */
	assert_int_equal(h_fake_script(&target, "{\"default\":{\"status\":200,\"delay_ms\":20}}"), 0);
	struct dcfg c = { .consumer = "w1", .secret_file = secret_path };
	daemon_up(&dmn[0], &c);

	long long t0 = h_now_ms(), next_revoke = t0 + REVOKE_MS, deadline = t0 + 150000;
	while (added < N || !all_done(&w)) {
		long long now = h_now_ms();
		if (now > deadline)
			fail_msg("%d of %d done after %lld ms (log %s)", w.next, N, now - t0,
			    dmn[0].log);
		while (added < N && now >= t0 + (long long)added * EVERY_MS) {
			snprintf(ids[added], ID_LEN, "t2-%03d", added);
			decide(ids[added++]);
		}
		if (now >= next_revoke) {
			h_post_ok(&target, "/_revoke", NULL);
			revokes++;
			next_revoke += REVOKE_MS;
		}
		pause_ms(5);
	}
	if (w.bad[0])
		fail_msg("%s (log %s)", w.bad, dmn[0].log);
	print_message("itest_tokens: %d revocations, %lld 401s\n", revokes, target_answers("401"));

	/* Exactly one 2xx per key: executed successfully exactly once. */
	json_t *reqs = h_get_ok(&target, "/_requests"), *ok = json_object(), *r;
	size_t i;
	json_array_foreach(reqs, i, r) {
		long long st = json_integer_value(json_object_get(r, "status"));
		const char *k = json_string_value(json_object_get(r, "idempotency_key"));
		assert_non_null(k);
		if (st >= 200 && st <= 299)
			json_object_set_new(ok, k, json_integer(
			    json_integer_value(json_object_get(ok, k)) + 1));
	}
	for (int k = 0; k < N; k++) {
		long long n = json_integer_value(json_object_get(ok, ids[k]));
		if (n != 1)
			fail_msg("%s: %lld successful calls at the target, want 1", ids[k], n);
	}
	assert_int_equal(json_object_size(ok), N);
	json_decref(ok);
	json_decref(reqs);
	assert_int_equal(stat_int(&target, "duplicates"), 0);
	if (target_answers("401") == 0)
		fail_msg("no 401 at all: the revocations did not bite");

	wait_hb_min("w1", "done", N);
	if (hb_int("w1", "redispatched") <= 0 || hb_int("w1", "authFailures") <= 0)
		fail_msg("redispatched %lld, authFailures %lld: want both > 0",
		    hb_int("w1", "redispatched"), hb_int("w1", "authFailures"));
	assert_int_equal(h_pending_count(rc, H_JOBS, H_GROUP), 0);
	assert_int_equal(h_redis_int(rc, "XLEN %s", H_DEAD), 0);
	h_daemon_down(&dmn[0]);
}

/* ------------------------------------------------------------------ */
/* 3. IdP down longer than a token lives (R6)                           */

/*
 * Tokens live 3 s: between 2 and 3 s left on arrival. refresh_ratio 0.25
 * asks again with at least 0.75 * 2 s = 1.5 s left, above R6's 400 + 1000 ms,
 * so while the IdP answers the worker never pauses; once it is down, the
 * token runs out and the worker must stop taking entries: neither new ones
 * (XREADGROUP) nor those of a crashed consumer (XAUTOCLAIM) that go idle
 * while it has no token.
 */
static void
test_idp_down_stops_claiming(void **state)
{
	enum { GONE = 3, N = 25, EVERY_MS = 200, ALL = 1 + GONE + N };
	static char ids[ALL][ID_LEN];
	(void)state;

	world_up(3);
	struct dcfg c = { .consumer = "w1", .secret_file = secret_path, .timeout_ms = 400,
	    .claim_idle_ms = 2000, .oauth_extra = "refresh_ratio = 0.25\n" };
	daemon_up(&dmn[0], &c);
	snprintf(ids[0], ID_LEN, "t3-warm");
	decide(ids[0]);
	wait_done(ids[0], &dmn[0]);
	/* At most the one pause before the first token came. */
	int pauses = log_count(&dmn[0], "event=consumer.paused");
	assert_true(pauses <= 1);

	h_post_ok(&idp, "/_down", NULL);
	/* From its expiry on, the heartbeat must not say valid (before it,
	 * one written at start may still say refreshing). */
	assert_int_equal(h_daemon_wait_log(&dmn[0], "event=token.expired", H_WAIT_MS), 0);
	wait_hb_str("w1", "tokenState", "valid", 1);
	struct log_wait lw = { &dmn[0], "event=consumer.paused", pauses + 1 };
	if (h_wait_until(log_reached, &lw, H_WAIT_MS) != 0)
		fail_msg("no event=consumer.paused once the token died (log %s)", dmn[0].log);
	assert_int_equal(log_count(&dmn[0], "event=consumer.paused"), pauses + 1);

	long long mine = pending_of("w1"), lag0 = group_lag();
	assert_int_equal(lag0, 0);

	/* A consumer that read these and died: idle past claim_idle_ms below. */
	for (int g = 0; g < GONE; g++) {
		snprintf(ids[1 + g], ID_LEN, "t3-gone-%d", g);
		decide(ids[1 + g]);
	}
	assert_int_equal(read_as("w-gone", 10), GONE);

	/* ~5 s of arrivals while the token is gone: the lag grows, w1's
	 * pending count does not (the gone entries are claimable after 2 s). */
	long long t0 = h_now_ms();
	for (int i = 0; i < N; i++) {
		snprintf(ids[1 + GONE + i], ID_LEN, "t3-%02d", i);
		decide(ids[1 + GONE + i]);
		assert_int_equal(group_lag(), i + 1);
		pause_ms(t0 + (long long)(i + 1) * EVERY_MS - h_now_ms());
		long long now_mine = pending_of("w1");
		if (now_mine != mine)
			fail_msg("w1 took entries without a token: pending %lld -> %lld after %d "
			    "arrivals (log %s)", mine, now_mine, i + 1, dmn[0].log);
		char *ts = hb_str("w1", "tokenState");
		assert_non_null(ts);
		if (strcmp(ts, "valid") == 0)
			fail_msg("tokenState valid while the IdP is down");
		free(ts);
	}
	assert_int_equal(group_lag(), N);
	assert_int_equal(pending_of("w-gone"), GONE);

	h_post_ok(&idp, "/_up", NULL);
	wait_all_done(ids, ALL, &dmn[0]);
	assert_true(h_daemon_log_has(&dmn[0], "event=consumer.resumed"));
	wait_hb_min("w1", "done", ALL);
	wait_hb_min("w1", "claimed", GONE);
	assert_int_equal(hb_int("w1", "expired"), 0);
	assert_int_equal(hb_int("w1", "dead"), 0);
	assert_int_equal(h_redis_int(rc, "XLEN %s", H_DEAD), 0);
	assert_int_equal(h_pending_count(rc, H_JOBS, H_GROUP), 0);
	h_daemon_down(&dmn[0]);
}

/* ------------------------------------------------------------------ */
/* 4. a worker with a wrong secret (R6, R11)                            */

/*
 * w-bad never gets a token: it must read nothing new and call nothing. Its
 * own pending entries (left from a previous life) are its own: it takes
 * them back and, with no token within auth_wait_max_ms, hands each back
 * through a new stream entry (R9) -- it is alive, so no one else would
 * ever take them (R11). w-good does every job.
 */
static void
test_bad_secret_worker_takes_nothing(void **state)
{
	enum { HELD = 5, FREE = 20, ALL = HELD + FREE };
	static char ids[ALL][ID_LEN];
	(void)state;

	world_up(3600);
	char *wrong = h_write_file("wrong-secret", WRONG_SECRET "\n");
	assert_non_null(wrong);
	char *ok = h_redis_str(rc, "XGROUP CREATE %s %s 0 MKSTREAM", H_JOBS, H_GROUP);
	assert_non_null(ok);
	free(ok);
	for (int i = 0; i < HELD; i++) {
		snprintf(ids[i], ID_LEN, "t4-held-%d", i);
		decide(ids[i]);
	}
	/* w-bad had read these before (a previous life): pending for it. */
	assert_int_equal(read_as("w-bad", HELD + 10), HELD);
	for (int i = 0; i < FREE; i++) {
		snprintf(ids[HELD + i], ID_LEN, "t4-free-%02d", i);
		decide(ids[HELD + i]);
	}

	/* w-bad never gets a token, so never gets ready: just spawn it. */
	struct dcfg bad = { .consumer = "w-bad", .secret_file = wrong, .claim_idle_ms = 1500,
	    .oauth_extra = "auth_wait_max_ms = 1500\n" };
	char *ini = daemon_ini(&bad);
	assert_int_equal(h_daemon_spawn(&dmn[1], ini), 0);
	free(ini);
	free(wrong);
	wait_hb_str("w-bad", "tokenState", "error", 0);
	assert_int_equal(h_daemon_wait_log(&dmn[1], "event=consumer.paused", H_WAIT_MS), 0);
	assert_int_equal(group_lag(), FREE);

	struct dcfg good = { .consumer = "w-good", .secret_file = secret_path,
	    .claim_idle_ms = 1500 };
	daemon_up(&dmn[0], &good);
	wait_all_done(ids, ALL, &dmn[0]);

	wait_hb_min("w-good", "done", ALL);
	wait_hb_min("w-bad", "redispatched", HELD);	/* each of its own handed back */
	for (int i = 0; i < ALL; i++) {
		char *owner = hash_field(ids[i], "owner");
		if (owner == NULL || strcmp(owner, "w-good") != 0)
			fail_msg("%s: owner %s, want w-good", ids[i], owner ? owner : "(nil)");
		free(owner);
	}
	/* Whatever reached the target carried a token it accepted. */
	assert_int_equal(target_answers("200"), ALL);
	assert_int_equal(stat_int(&target, "total"), ALL);
	assert_int_equal(pending_of("w-bad"), 0);
	assert_int_equal(h_pending_count(rc, H_JOBS, H_GROUP), 0);

	wait_hb_str("w-bad", "tokenState", "error", 0);
	assert_int_equal(hb_int("w-bad", "received"), HELD);	/* its own, nothing new */
	assert_int_equal(hb_int("w-bad", "done"), 0);
	assert_true(h_daemon_log_has(&dmn[1], "event=job.handback"));
	assert_true(h_daemon_log_has(&dmn[1], "event=token.error"));
	wait_hb_min("w-bad", "idpFailures", 1);	/* §13's counter of them */
	assert_int_equal(hb_int("w-good", "idpFailures"), 0);
	assert_log_lacks(&dmn[1], "S3cr3t", "the (wrong) client secret");
	assert_log_lacks(&dmn[1], "eyJ", "a JWT");
	h_daemon_down(&dmn[0]);
	h_daemon_down(&dmn[1]);
}

/* ------------------------------------------------------------------ */
/* 5. a 401 while a job is in hand (R9, R10)                            */

struct pel_wait {
	const char *sid;
	long long deliveries;	/* wait for this count, or */
	long long idle_over;	/* for idle above this */
	struct pel_entry last;
};

static int
pel_reached(void *arg)
{
	struct pel_wait *w = arg;

	w->last = pel_entry(w->sid);
	if (!w->last.present)
		return 1;	/* gone: the caller's assertions say what went wrong */
	if (w->deliveries > 0)
		return w->last.deliveries >= w->deliveries;
	return w->last.idle_ms > w->idle_over;
}

static struct pel_entry
wait_pel(const char *sid, long long deliveries, long long idle_over)
{
	struct pel_wait w = { sid, deliveries, idle_over, {0} };

	if (h_wait_until(pel_reached, &w, H_WAIT_MS) != 0)
		fail_msg("%s: deliveries %lld idle %lld ms, want deliveries %lld / idle > %lld",
		    sid, w.last.deliveries, w.last.idle_ms, deliveries, idle_over);
	if (!w.last.present)
		fail_msg("%s left the PEL early", sid);
	return w.last;
}

/* The stream entries whose `id` is the key: one more after a hand-back. */
struct entries_wait {
	const char *id;
	long long n;
};

static int
entries_reached(void *arg)
{
	const struct entries_wait *w = arg;
	return h_stream_count(rc, H_JOBS, "id", w->id) >= w->n;
}

/*
 * A job retrying after a 503 finds its token revoked: the retry gets 401,
 * the job waits in auth_wait for a fresh token and is then XCLAIMed again by
 * its own worker (delivery count exactly +1) and done. Then the same with
 * the IdP down as well: after auth_wait_max_ms the worker hands the entry
 * back (R9: a new stream entry, carrying the delivery count, and the old
 * one acked) and, having no token, reads nothing until the IdP is back;
 * then it reads the new entry like any other (not claimed).
 */
static void
test_401_in_hand_redispatch_then_handback(void **state)
{
	const char *id = "t5-revoked", *id2 = "t5-no-token";
	char sid[64], sid2[64];
	(void)state;

	world_up(60);
	struct dcfg c = { .consumer = "w1", .secret_file = secret_path, .claim_idle_ms = 3000,
	    .redis_extra = "lease_renew_ms = 500\n", .oauth_extra = "auth_wait_max_ms = 1500\n" };
	daemon_up(&dmn[0], &c);
	next_second(h_now_ms());	/* the token held is from an earlier second */

	/* 503 first; the test revokes the token; the retry 2 s later gets 401.
	 * The call after the re-dispatch takes 1.5 s, so the PEL shows it. */
	assert_int_equal(h_fake_script(&target, "{\"per_key\":{"
	    "\"t5-revoked\":[{\"status\":503,\"retry_after\":\"2\"},{\"status\":200,\"delay_ms\":1500}],"
	    "\"t5-no-token\":[{\"status\":503,\"retry_after\":\"2\"}]}}"), 0);
	decide(id);
	wait_target_calls(id, 1);
	h_post_ok(&target, "/_revoke", NULL);
	h_stream_id_of(rc, H_JOBS, id, sid, sizeof sid);
	struct pel_entry e = pel_entry(sid);
	assert_true(e.present);
	assert_int_equal(e.deliveries, 1);
	assert_string_equal(e.owner, "w1");

	e = wait_pel(sid, 2, 0);
	assert_int_equal(e.deliveries, 2);	/* XCLAIM: exactly +1 */
	assert_string_equal(e.owner, "w1");
	wait_done(id, &dmn[0]);
	long long done_at = h_now_ms();
	assert_statuses(id, "503 401 200");
	assert_trail_ends(id, "retrying running auth_wait running done");
	if (!h_daemon_log_has(&dmn[0], "event=job.redispatch id=t5-revoked"))
		fail_msg("t5-revoked was not re-dispatched (XCLAIM) after its 401 but let go "
		    "and claimed again: the fresh token came before it began to wait? (log %s)",
		    dmn[0].log);
	wait_hb_min("w1", "redispatched", 1);
	assert_int_equal(hb_int("w1", "redispatched"), 1);
	assert_int_equal(hb_int("w1", "authFailures"), 1);
	assert_true(stat_int(&idp, "issued") >= 2);

	/* Now the IdP is down too: no token within auth_wait_max_ms, so the
	 * entry is handed back, and taken again once the IdP is back. */
	next_second(done_at);	/* the token held is older than the revocation */
	decide(id2);
	wait_target_calls(id2, 1);
	h_post_ok(&idp, "/_down", NULL);
	h_post_ok(&target, "/_revoke", NULL);
	h_stream_id_of(rc, H_JOBS, id2, sid2, sizeof sid2);
	wait_state(id2, "auth_wait");
	struct entries_wait back = { id2, 2 };
	if (h_wait_until(entries_reached, &back, H_WAIT_MS) != 0)
		fail_msg("%s was not handed back (log %s)", id2, dmn[0].log);
	assert_false(pel_entry(sid2).present);	/* the old entry acked with it */
	wait_hb_str("w1", "inFlight", "0", 0);
	char *st = hash_field(id2, "state");
	assert_string_equal(st, "auth_wait");
	free(st);
	char *entry = hash_field(id2, "entry");
	assert_non_null(entry);
	assert_string_not_equal(entry, sid2);
	free(entry);

	h_post_ok(&idp, "/_up", NULL);
	wait_done(id2, &dmn[0]);
	assert_statuses(id2, "503 401 200");
	assert_trail_ends(id2, "auth_wait running done");
	wait_hb_min("w1", "redispatched", 2);
	assert_int_equal(hb_int("w1", "claimed"), 0);
	assert_int_equal(h_pending_count(rc, H_JOBS, H_GROUP), 0);
	h_daemon_down(&dmn[0]);
}

/* ------------------------------------------------------------------ */
/* 5a. a target that refuses every token (R9 + R12)                     */

/*
 * Every call is answered 401. Each re-dispatch is a delivery, counted once
 * and checked against max_deliveries (R12), and the refreshes the 401s
 * cause are spaced (min_refresh_interval_ms, then backoff): the entry ends
 * dead after max_deliveries calls and the IdP sees a handful of requests,
 * not one per millisecond.
 */
static void
test_target_refuses_every_token(void **state)
{
	const char *id = "t5a-refused";
	(void)state;

	world_up(60);
	struct dcfg c = { .consumer = "w1", .secret_file = secret_path, .max_deliveries = 5,
	    .oauth_extra = "min_refresh_interval_ms = 100\n" };
	daemon_up(&dmn[0], &c);
	assert_int_equal(h_fake_script(&target, "{\"default\":{\"status\":401,"
	    "\"www_authenticate\":\"Bearer error=\\\"invalid_token\\\"\"}}"), 0);
	long long issued_before = stat_int(&idp, "issued");
	decide(id);
	wait_state(id, "dead");
	char *outcome = hash_field(id, "outcome");
	assert_string_equal(outcome, "too-many-deliveries");
	free(outcome);
	long long calls = target_calls(id), issued = stat_int(&idp, "issued") - issued_before;
	printf("    401 to every token, max_deliveries 5: %lld calls, %lld tokens issued\n",
	    calls, issued);
	assert_int_equal(calls, 5);
	assert_true(issued >= 1 && issued <= 6);
	assert_int_equal(h_pending_count(rc, H_JOBS, H_GROUP), 0);
	assert_true(h_daemon_log_has(&dmn[0], "refused_in_row=3"));
	h_daemon_down(&dmn[0]);
}

/* ------------------------------------------------------------------ */
/* 5b. R9's spacing, measured where it is kept                           */

#define SPACING_MIN_MS	400	/* [oauth] min_refresh_interval_ms below */
#define SPACING_JOBS	20
#define SPACING_MAX_DELIVERIES	5
/* The gaps are read from the worker's own event=token.request lines: R9
 * spaces a request from when the worker started the one before, and that
 * line is stamped as each one starts (after the clock read the spacing
 * counts from, by the microseconds of http_start; stamps in whole ms). They
 * are not read at the IdP: its stamps add how long each request took to
 * get there and be answered, which on a loaded machine differs from one
 * request to the next by far more than any slack (the first, sent while the
 * worker is still starting, took 133 ms, the next 51 ms: gap 1, 400 ms at
 * the worker, was 318 ms at the IdP; a 2,000 ms gap came out as 1,811). */
#define SPACING_SLACK_MS	5

/* The Unix ms stamps of the lines of `path` that hold `needle`, in order,
 * into at[] (up to max); the count. */
static int
log_stamps(const char *path, const char *needle, long long *at, int max)
{
	char *text = h_read_file(path);
	int n = 0;

	assert_non_null(text);
	for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
		int64_t ms;
		char ts[64];
		if (strstr(line, needle) == NULL ||
		    sscanf(line, "ts=%63s", ts) != 1 || wtime_parse_rfc3339(ts, &ms) != 0)
			continue;
		if (n < max)
			at[n] = ms;
		n++;
	}
	free(text);
	return n;
}

static void
format_gaps(const long long *at, int n, char *line, size_t size)
{
	size_t used = 0;

	line[0] = '\0';
	for (int i = 1; i < n; i++)
		used += (size_t)snprintf(line + used, used < size ? size - used : 0, " %lld",
		    at[i] - at[i - 1]);
}

/*
 * R9: many calls refused at once start one refresh, and refreshes caused by
 * 401s are at least min_refresh_interval_ms apart; when the token fetched
 * after a 401 is refused too, the next waits with exponential backoff. With
 * 20 jobs refused by every token, the gaps between the worker's token
 * requests must be: gap 1 (first refresh) >= min, gap 2 (its token refused:
 * the backoff's first step, never below min) >= min, and each later gap at
 * least double the bound before it (min * 2^(k-2)). A worker that refreshes
 * once per 401 fails gap 1 (20 requests within ms); one spaced by min but
 * without backoff fails gap 3. The IdP must have issued one token per
 * request the worker logged, each after it: no request went unlogged.
 */
static void
test_refresh_spacing_gaps(void **state)
{
	long long at[64], issued[64];
	char id[ID_LEN];
	(void)state;

	world_up(3600);	/* no proactive refresh within the test */
	assert_int_equal(h_fake_script(&target, "{\"default\":{\"status\":401,"
	    "\"www_authenticate\":\"Bearer error=\\\"invalid_token\\\"\"}}"), 0);
	/* Every job queued before the worker starts, so that its first read
	 * takes all 20 and each token is refused by all of them. Queued while it
	 * runs, a job that came after the first refusal waited, unread, for the
	 * next token (R6: no reading without one) and so needed its 5 deliveries
	 * from later tokens of the same streak, 16, 32 and 60 s apart: it ran for
	 * minutes, past the wait for it below (seen on a loaded machine, where
	 * signing and queuing 20 records took longer than a refusal). */
	char *ok = h_redis_str(rc, "XGROUP CREATE %s %s 0 MKSTREAM", H_JOBS, H_GROUP);
	assert_non_null(ok);
	free(ok);
	for (int i = 0; i < SPACING_JOBS; i++) {
		snprintf(id, sizeof id, "gap-%02d", i);
		decide(id);
	}
	struct dcfg c = { .consumer = "w1", .secret_file = secret_path,
	    .max_deliveries = SPACING_MAX_DELIVERIES,
	    .oauth_extra = "min_refresh_interval_ms = 400\n" };
	daemon_up(&dmn[0], &c);
	for (int i = 0; i < SPACING_JOBS; i++) {
		snprintf(id, sizeof id, "gap-%02d", i);
		wait_state(id, "dead");	/* too-many-deliveries: each token ran it once */
	}
	h_daemon_down(&dmn[0]);	/* no request after the last line is read */
	int n = log_stamps(dmn[0].log, "event=token.request ", at, 64);
	int ni = log_stamps(idp.log, "event=fake.token status=200", issued, 64);
	char line[1024], idp_line[1024];
	format_gaps(at, n < 64 ? n : 64, line, sizeof line);
	format_gaps(issued, ni < 64 ? ni : 64, idp_line, sizeof idp_line);
	printf("    %d jobs refused by every token: %d token requests, gaps (ms):%s; "
	    "at the IdP:%s\n", SPACING_JOBS, n, line, idp_line);
	/* the first token, then one per delivery: each re-dispatch waits for a
	 * new token, and the last one finds the delivery count over the limit */
	assert_true(n >= SPACING_MAX_DELIVERIES + 1);
	assert_true(n <= 64);
	if (ni != n)
		fail_msg("the IdP issued %d tokens, the worker logged %d requests (log %s)", ni, n,
		    dmn[0].log);
	for (int k = 0; k < n; k++)
		if (issued[k] < at[k])
			fail_msg("token %d was issued at %lld, before the worker asked for it at %lld",
			    k, issued[k], at[k]);
	long long bound = SPACING_MIN_MS;
	for (int k = 1; k < n; k++) {
		if (k >= 3)
			bound *= 2;
		if (bound > 60000)
			bound = 60000;	/* R9's cap */
		long long gap = at[k] - at[k - 1];
		if (gap < bound - SPACING_SLACK_MS)
			fail_msg("token request %d came %lld ms after request %d; R9 wants at least "
			    "%lld ms (gaps:%s; log %s)", k, gap, k - 1, bound, line, dmn[0].log);
	}
}

/* ------------------------------------------------------------------ */
/* 5c. per-action scopes (issue 12)                                      */

/* Each call's token scope, by the path's action, must be `want_*`: an
 * action never receives a token minted for another scope. Returns the
 * number of calls checked. */
static int
assert_scopes(const char *want_open, const char *want_close)
{
	json_t *all = h_get_ok(&target, "/_requests"), *r;
	size_t i;
	int n = 0;

	json_array_foreach(all, i, r) {
		const char *path = json_string_value(json_object_get(r, "path"));
		const char *scope = json_string_value(json_object_get(r, "token_scope"));
		const char *want = strstr(path, "/close") ? want_close : want_open;
		if (scope == NULL || strcmp(scope, want) != 0)
			fail_msg("%s was called with a token of scope %s, want %s", path,
			    scope ? scope : "(none)", want);
		n++;
	}
	json_decref(all);
	return n;
}

static void
test_per_action_scopes(void **state)
{
	char close[512], id[ID_LEN];
	(void)state;

	world_up(60);
	snprintf(close, sizeof close, "[action gate.close]\nurl = %s/gates/{resource}/close\n"
	    "auth = oauth\nscope = gates.close\n", target.url);
	struct dcfg c = { .consumer = "w1", .secret_file = secret_path,
	    .oauth_extra = "scope = gates.default\nmin_refresh_interval_ms = 100\n",
	    .action_extra = "scope = gates.open\n", .more_sections = close };
	daemon_up(&dmn[0], &c);
	for (int i = 0; i < 10; i++) {
		snprintf(id, sizeof id, "sc-open-%d", i);
		decide_action(id, "gate.open");
		snprintf(id, sizeof id, "sc-close-%d", i);
		decide_action(id, "gate.close");
	}
	for (int i = 0; i < 10; i++) {
		snprintf(id, sizeof id, "sc-open-%d", i);
		wait_done(id, &dmn[0]);
		snprintf(id, sizeof id, "sc-close-%d", i);
		wait_done(id, &dmn[0]);
	}
	assert_int_equal(assert_scopes("gates.open", "gates.close"), 20);
	long long redispatched = hb_int("w1", "redispatched");

	/* Only gate.close's tokens are revoked: only its jobs are re-dispatched,
	 * and only its scope is fetched again. */
	next_second(h_now_ms());
	h_post_ok(&target, "/_revoke", "{\"scope\": \"gates.close\"}");
	assert_int_equal(h_fake_script(&target, "{\"default\": {\"delay_ms\": 300}}"), 0);
	for (int i = 0; i < 5; i++) {
		snprintf(id, sizeof id, "sc2-open-%d", i);
		decide_action(id, "gate.open");
		snprintf(id, sizeof id, "sc2-close-%d", i);
		decide_action(id, "gate.close");
	}
	for (int i = 0; i < 5; i++) {
		snprintf(id, sizeof id, "sc2-open-%d", i);
		wait_done(id, &dmn[0]);
		assert_int_equal(target_calls(id), 1);	/* never refused */
		snprintf(id, sizeof id, "sc2-close-%d", i);
		wait_done(id, &dmn[0]);
	}
	char statuses[256];
	wait_hb_min("w1", "redispatched", redispatched + 1);	/* the heartbeat lags */
	statuses_of("sc2-close-0", statuses, sizeof statuses);
	printf("    scope gates.close revoked: sc2-close-0 saw \"%s\"; re-dispatched %lld\n",
	    statuses, hb_int("w1", "redispatched") - redispatched);
	assert_true(hb_int("w1", "redispatched") > redispatched);
	assert_true(hb_int("w1", "redispatched") - redispatched <= 5);
	assert_int_equal(assert_scopes("gates.open", "gates.close"), 20 + 10 +
	    (int)(hb_int("w1", "redispatched") - redispatched));
	h_daemon_down(&dmn[0]);
}

/* ------------------------------------------------------------------ */
/* 5d. token exchange: a token for each job (RFC 8693, issue 12)        */

/* The heartbeat's counter `name` passes `than` (it is written every
 * heartbeat_ms, so it lags the job's own state). */
static void
wait_hb_above(const char *consumer, const char *name, long long than)
{
	long long end = h_now_ms() + H_WAIT_MS;

	while (hb_int(consumer, name) <= than) {
		if (h_now_ms() > end)
			fail_msg("heartbeat %s of %s stayed at %lld", name, consumer, than);
		pause_ms(50);	/* polls a condition, with a deadline */
	}
}

static void
test_token_exchange(void **state)
{
	char xch[512], id[ID_LEN];
	(void)state;

	world_up(60);
	snprintf(xch, sizeof xch, "[action gate.exchange]\nurl = %s/act/{action}/{resource}\n"
	    "auth = oauth\ntoken = exchange\n", target.url);
	struct dcfg c = { .consumer = "w1", .secret_file = secret_path, .more_sections = xch };
	daemon_up(&dmn[0], &c);
	for (int i = 0; i < 5; i++) {
		snprintf(id, sizeof id, "xch-%d", i);
		decide_action(id, "gate.exchange");
	}
	for (int i = 0; i < 5; i++) {
		snprintf(id, sizeof id, "xch-%d", i);
		wait_done(id, &dmn[0]);
	}
	/* Each call carried a token of its own: sub = the record's subject,
	 * act.sub = the worker, scope = the action; nothing was cached. */
	json_t *all = h_get_ok(&target, "/_requests"), *r;
	size_t i;
	json_array_foreach(all, i, r) {
		assert_string_equal(json_string_value(json_object_get(r, "token_sub")),
		    json_string_value(json_object_get(r, "on_behalf_of")));
		assert_string_equal(json_string_value(json_object_get(r, "token_act_sub")), CLIENT_ID);
		assert_string_equal(json_string_value(json_object_get(r, "token_scope")),
		    "gate.exchange");
	}
	assert_int_equal(json_array_size(all), 5);
	json_decref(all);
	assert_int_equal(stat_int(&idp, "exchanges"), 5);

	/* §9 (issue 26): a revoked actor token is no denial. The IdP's
	 * invalid_grant refreshes the worker's token (R9) and re-dispatches;
	 * the job is done with one call. */
	long long redispatched = hb_int("w1", "redispatched");
	h_post_ok(&idp, "/_revoke_actors", NULL);
	decide_action("xch-revoked", "gate.exchange");
	wait_done("xch-revoked", &dmn[0]);
	assert_int_equal(target_calls("xch-revoked"), 1);
	wait_hb_above("w1", "redispatched", redispatched);

	/* The IdP refuses it again after the refresh: failed with its error
	 * as the reason, the owner told, no call. */
	h_post_ok(&idp, "/_exchange_deny", NULL);
	decide_action("xch-refused", "gate.exchange");
	wait_state("xch-refused", "failed");
	char *outcome = hash_field("xch-refused", "outcome");
	assert_string_equal(outcome, "invalid_grant");
	free(outcome);
	assert_int_equal(target_calls("xch-refused"), 0);
	assert_true(h_stream_count(rc, H_PREFIX ":notify", "id", "xch-refused") == 1);

	/* invalid_scope: a configuration matter, failed at once. */
	long long exchanges = stat_int(&idp, "exchanges");
	h_post_ok(&idp, "/_exchange_deny", "invalid_scope");
	decide_action("xch-scope", "gate.exchange");
	wait_state("xch-scope", "failed");
	outcome = hash_field("xch-scope", "outcome");
	assert_string_equal(outcome, "invalid_scope");
	free(outcome);
	assert_int_equal(stat_int(&idp, "exchanges") - exchanges, 1);

	/* An IdP that is down (503) is waited for within the deadline. */
	h_post_ok(&idp, "/_exchange_allow", NULL);
	h_post_ok(&idp, "/_down", NULL);
	decide_action("xch-later", "gate.exchange");
	wait_state("xch-later", "retrying");
	h_post_ok(&idp, "/_up", NULL);
	wait_done("xch-later", &dmn[0]);
	assert_int_equal(target_calls("xch-later"), 1);
	assert_false(h_daemon_log_has(&dmn[0], "eyJ"));	/* no token in the log */
	h_daemon_down(&dmn[0]);
}

/* ------------------------------------------------------------------ */
/* 5d'. DPoP: tokens bound to a key that never leaves (RFC 9449, issue 26) */

static long long
attempts_of(const char *id)
{
	char *v = hash_field(id, "attempts");
	long long n = v ? strtoll(v, NULL, 10) : -1;

	free(v);
	return n;
}

static void
test_dpop(void **state)
{
	char extra[512], id[ID_LEN];
	(void)state;

	world_up(60);
	/* both servers demand a nonce from the start */
	h_post_ok(&idp, "/_dpop_nonce", "idp-n1");
	h_post_ok(&target, "/_dpop_nonce", "rs-n1");
	snprintf(extra, sizeof extra, "dpop_key_file = %s\n", h_data("test-es256.key"));
	struct dcfg c = { .consumer = "w1", .secret_file = secret_path, .oauth_extra = extra };
	daemon_up(&dmn[0], &c);
	for (int i = 0; i < 5; i++) {
		snprintf(id, sizeof id, "dpop-%d", i);
		decide(id);
	}
	for (int i = 0; i < 5; i++) {
		snprintf(id, sizeof id, "dpop-%d", i);
		wait_done(id, &dmn[0]);
		/* a nonce challenge is answered by one immediate retry: no attempt */
		assert_int_equal(attempts_of(id), 1);
	}
	/* the IdP bound the token to the key (cnf.jkt = the proof's key), after
	 * one nonce challenge; the target saw a good proof with every call,
	 * challenged once, and the nonce was kept for the next calls */
	json_t *st = h_get_ok(&idp, "/_stats");
	const char *jkt = json_string_value(json_object_get(st, "last_jkt"));
	assert_non_null(jkt);
	assert_true(json_integer_value(json_object_get(st, "dpop_issued")) >= 1);
	assert_int_equal(json_integer_value(json_object_get(st, "dpop_challenges")), 1);
	assert_int_equal(json_integer_value(json_object_get(st, "dpop_refused")), 0);
	json_t *all = h_get_ok(&target, "/_requests"), *r;
	size_t i, ok = 0;
	json_array_foreach(all, i, r) {
		if (json_integer_value(json_object_get(r, "status")) != 200)
			continue;
		assert_true(json_is_true(json_object_get(r, "dpop")));
		assert_string_equal(json_string_value(json_object_get(r, "dpop_jkt")), jkt);
		ok++;
	}
	assert_int_equal(ok, 5);
	/* calls that left together before the first challenge came back were
	 * each challenged once; none twice */
	long long challenged = h_fake_stat(&target, NULL, "dpop_challenges");
	assert_true(challenged >= 1 && challenged <= 5);
	assert_int_equal(h_fake_stat(&target, NULL, "dpop_ok"), 5);
	json_decref(all);
	json_decref(st);

	/* A proof the target refuses (invalid_dpop_proof) is a retry (R8),
	 * not R9: no refresh, no re-dispatch */
	long long redispatched = hb_int("w1", "redispatched");
	long long issued = h_fake_stat(&idp, NULL, "issued");
	h_post_ok(&target, "/_dpop_refuse", "1");
	decide("dpop-refused");
	wait_done("dpop-refused", &dmn[0]);
	assert_int_equal(attempts_of("dpop-refused"), 2);
	assert_int_equal(hb_int("w1", "redispatched"), redispatched);
	assert_int_equal(h_fake_stat(&idp, NULL, "issued"), issued);

	/* a new nonce: one more challenge, still no attempt */
	h_post_ok(&target, "/_dpop_nonce", "rs-n2");
	decide("dpop-rotated");
	wait_done("dpop-rotated", &dmn[0]);
	assert_int_equal(attempts_of("dpop-rotated"), 1);
	assert_int_equal(h_fake_stat(&target, NULL, "dpop_challenges"), challenged + 1);
	assert_false(h_daemon_log_has(&dmn[0], "eyJ"));	/* no token, no proof in the log */
	h_daemon_down(&dmn[0]);
}

/* ------------------------------------------------------------------ */
/* 5d''. one action on one resource: RAR (RFC 9396, issue 26)          */

static void
test_per_record(void **state)
{
	char more[512], extra[512];
	(void)state;

	world_up(60);
	snprintf(more, sizeof more, "[action gate.rar]\nurl = %s/act/{action}/{resource}\n"
	    "auth = oauth\ntoken = per-record\n", target.url);
	/* with DPoP: per-record tokens are bound too */
	snprintf(extra, sizeof extra, "dpop_key_file = %s\n", h_data("test-es256.key"));
	struct dcfg c = { .consumer = "w1", .secret_file = secret_path, .more_sections = more,
	    .oauth_extra = extra };
	daemon_up(&dmn[0], &c);
	long long rar0 = h_fake_stat(&idp, NULL, "rar_issued");
	decide_on("rar-a1", "gate.rar", "lock/1");
	wait_done("rar-a1", &dmn[0]);
	decide_on("rar-a2", "gate.rar", "lock/1");
	decide_on("rar-b1", "gate.rar", "lock/2");
	wait_done("rar-a2", &dmn[0]);
	wait_done("rar-b1", &dmn[0]);
	/* one token per (action, resource), kept until it expires */
	assert_int_equal(h_fake_stat(&idp, NULL, "rar_issued") - rar0, 2);
	/* each call's token names this action, its origin and this resource alone */
	json_t *all = h_get_ok(&target, "/_requests"), *r;
	size_t i, n = 0;
	json_array_foreach(all, i, r) {
		const char *key = json_string_value(json_object_get(r, "idempotency_key"));
		if (key == NULL || strncmp(key, "rar-", 4) != 0)
			continue;
		json_t *d = json_array_get(json_object_get(r, "token_rar"), 0);
		assert_int_equal(json_array_size(json_object_get(r, "token_rar")), 1);
		assert_string_equal(json_string_value(json_object_get(d, "type")), "warrant");
		assert_string_equal(json_string_value(json_array_get(json_object_get(d, "actions"),
		    0)), "gate.rar");
		assert_string_equal(json_string_value(json_array_get(json_object_get(d,
		    "locations"), 0)), target.url);
		assert_string_equal(json_string_value(json_object_get(d, "identifier")),
		    key[4] == 'a' ? "lock/1" : "lock/2");
		assert_true(json_is_true(json_object_get(r, "dpop")));
		n++;
	}
	assert_int_equal(n, 3);
	json_decref(all);

	/* invalid_authorization_details: failed with that reason, no call */
	h_post_ok(&idp, "/_rar_deny", NULL);
	decide_on("rar-denied", "gate.rar", "lock/3");
	wait_state("rar-denied", "failed");
	char *outcome = hash_field("rar-denied", "outcome");
	assert_string_equal(outcome, "invalid_authorization_details");
	free(outcome);
	assert_int_equal(target_calls("rar-denied"), 0);

	/* R9 for per-record tokens: a target that refuses every token gets a
	 * new one per re-dispatch, but the requests are spaced (1 s, then
	 * doubling), not one per delivery as fast as they come */
	h_post_ok(&idp, "/_rar_allow", NULL);
	h_post_ok(&target, "/_default", "{\"status\": 401}");
	long long before = h_fake_stat(&idp, NULL, "rar_issued");
	long long t0 = h_now_ms();
	decide_on("rar-refused", "gate.rar", "lock/4");
	while (h_now_ms() - t0 < 3500)
		pause_ms(100);	/* a span of time is what is measured */
	long long asked = h_fake_stat(&idp, NULL, "rar_issued") - before;
	printf("    per-record tokens asked for in 3.5 s of refusals: %lld\n", asked);
	assert_true(asked >= 2 && asked <= 3);	/* at 0, 1 and 3 s; the next at 7 s */
	char *st = hash_field("rar-refused", "state");
	assert_string_not_equal(st, "dead");	/* not 16 deliveries burnt in a moment */
	free(st);
	h_daemon_down(&dmn[0]);
}

/* ------------------------------------------------------------------ */
/* 5d-3. one scope's trouble stays its own (issue 26 item 5)           */

static void
test_scope_trouble_is_its_own(void **state)
{
	char more[512];
	(void)state;

	world_up(60);
	/* §9: the IdP refuses gates.close's scope for good from the start: its
	 * job fails with that code, no wait */
	h_post_ok(&idp, "/_deny_scope", "gates.close");
	snprintf(more, sizeof more, "[action gate.close]\nurl = %s/close/{resource}\n"
	    "auth = oauth\nscope = gates.close\n", target.url);
	struct dcfg c = { .consumer = "w1", .secret_file = secret_path, .more_sections = more };
	daemon_up(&dmn[0], &c);
	decide_action("sc-refused", "gate.close");
	wait_state("sc-refused", "failed");
	char *outcome = hash_field("sc-refused", "outcome");
	assert_string_equal(outcome, "invalid_scope");
	free(outcome);

	/* now the scope is only down (503): its job waits in hand while the
	 * other actions go on, and the heartbeat says whose trouble it is */
	long long down = h_fake_stat(&idp, NULL, "unavailable");
	h_post_ok(&idp, "/_down_scope", "gates.close");
	h_post_ok(&idp, "/_deny_scope", "");
	/* the scope's next fetch (its backoff) meets the 503: no longer refused */
	long long end = h_now_ms() + H_WAIT_MS;
	while (h_fake_stat(&idp, NULL, "unavailable") == down) {
		if (h_now_ms() > end)
			fail_msg("the scope's token was not asked for again");
		pause_ms(50);	/* polls a condition, with a deadline */
	}
	decide_action("sc-close", "gate.close");
	for (int i = 0; i < 3; i++) {
		char id[ID_LEN];
		snprintf(id, sizeof id, "sc-open-%d", i);
		decide(id);
	}
	for (int i = 0; i < 3; i++) {
		char id[ID_LEN];
		snprintf(id, sizeof id, "sc-open-%d", i);
		wait_done(id, &dmn[0]);
	}
	wait_state("sc-close", "auth_wait");
	assert_int_equal(target_calls("sc-close"), 0);
	h_wait_hash_field(rc, h_key(H_PREFIX, "consumer:%s", "w1"), "tokenState.gates.close",
	    "error", H_WAIT_MS);
	/* the worker's own token is not blamed: valid, or being refreshed on
	 * its schedule (a 60 s token, refreshed before it expires, may be
	 * mid-refresh at this moment on a slow build) -- never error */
	char *ts = hb_str("w1", "tokenState");
	if (ts == NULL || (strcmp(ts, "valid") != 0 && strcmp(ts, "refreshing") != 0))
		fail_msg("the worker's token state is %s, not valid", ts ? ts : "(none)");
	free(ts);
	/* the IdP is back: the waiting job runs */
	h_post_ok(&idp, "/_down_scope", "");
	wait_done("sc-close", &dmn[0]);
	h_daemon_down(&dmn[0]);
}

/* ------------------------------------------------------------------ */
/* 5e. a step of the wall clock (issue 7, item 8)                       */

/* libfaketime's preload library, wherever this architecture's package put
 * it (dpkg -L); the test skips, saying so, when the package is missing. */
static const char *
faketime_so(void)
{
	static char *so;

	if (so == NULL && (so = h_dpkg_file("libfaketime", "/libfaketime.so.1")) == NULL)
		h_skip("libfaketime.so.1 not installed (Debian package libfaketime)");
	return so;
}

static void
decide_far(const char *id)
{
	long long now = h_now_ms();
	char *json = h_record_json(id, "gate.open", "lock/7", now - 1000, now + 6 * 3600 * 1000LL,
	    0, NULL);

	assert_non_null(json);
	assert_int_equal(h_decide(rc, H_PREFIX, id, json, 1), 0);
	free(json);
}

struct clock_wait {
	char after[WTIME_RFC3339_LEN];
};

static int
daemon_clock_past(void *arg)
{
	const struct clock_wait *w = arg;
	char *at = hb_str("w1", "heartbeatAt");
	int past = at != NULL && strcmp(at, w->after) > 0;

	free(at);
	return past;
}

/* Starts warrantd w1 under libfaketime with its wall clock at `offset` (a
 * FAKETIME spec such as "+0" or "+2h") read from a file that the test may
 * rewrite later (returned: caller frees); its monotonic clock is real. */
static char *
daemon_up_faketime(struct h_daemon *d, const char *offset)
{
	char line[64];

	snprintf(line, sizeof line, "%s\n", offset);
	char *step = h_write_file("faketime", line);
	assert_non_null(step);
	const char *asan = getenv("ASAN_OPTIONS");
	char asan_opts[512];
	snprintf(asan_opts, sizeof asan_opts, "%s%sverify_asan_link_order=0", asan ? asan : "",
	    asan ? ":" : "");
	char *saved_asan = asan ? strdup(asan) : NULL;
	setenv("LD_PRELOAD", faketime_so(), 1);
	setenv("FAKETIME_TIMESTAMP_FILE", step, 1);
	setenv("FAKETIME_NO_CACHE", "1", 1);
	setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1", 1);
	setenv("ASAN_OPTIONS", asan_opts, 1);
	struct dcfg c = { .consumer = "w1", .secret_file = secret_path };
	daemon_up(d, &c);
	unsetenv("LD_PRELOAD");
	unsetenv("FAKETIME_TIMESTAMP_FILE");
	unsetenv("FAKETIME_NO_CACHE");
	unsetenv("FAKETIME_DONT_FAKE_MONOTONIC");
	if (saved_asan)
		setenv("ASAN_OPTIONS", saved_asan, 1);
	else
		unsetenv("ASAN_OPTIONS");
	free(saved_asan);

	return step;
}

/*
 * The worker's wall clock jumps two hours ahead (libfaketime; its monotonic
 * clock does not move). Token life is kept on the monotonic clock and the
 * JWT exp is read against the token's own iat, so the worker goes on with
 * the token it holds and with every one after it; judged by the wall clock,
 * the token would be dead and every new one born dead.
 */
static void
test_wall_clock_step(void **state)
{
	(void)state;
	(void)faketime_so();	/* skips the test when there is none */
	world_up(60);
	char *step = daemon_up_faketime(&dmn[0], "+0");

	decide_far("step-before");
	decide_far("step-before");
	wait_done("step-before", &dmn[0]);
	free(h_write_file("faketime", "+2h\n"));
	struct clock_wait w;
	wtime_format_rfc3339(h_now_ms() + 3600 * 1000LL, w.after, sizeof w.after);
	assert_int_equal(h_wait_until(daemon_clock_past, &w, H_WAIT_MS), 0);

	decide_far("step-after");
	wait_done("step-after", &dmn[0]);
	char *state_ = hb_str("w1", "tokenState");
	assert_string_equal(state_, "valid");
	free(state_);
	assert_false(h_daemon_log_has(&dmn[0], "event=consumer.paused reason=no-token token_state=valid"));
	free(step);
	h_daemon_down(&dmn[0]);
}

/* §5: the promoter compares with Redis' TIME, not the worker's clock: a
 * worker whose clock runs two hours ahead does not promote, and so does not
 * run, a scheduled job before its notBefore. */
static void
test_promoter_uses_redis_time(void **state)
{
	(void)state;
	(void)faketime_so();	/* skips the test when there is none */
	world_up(60);
	free(daemon_up_faketime(&dmn[0], "+2h"));
	long long now = h_now_ms(), not_before = now + 3000;
	char *json = h_record_json("sched-1", "gate.open", "lock/7", now - 1000,
	    now + 6 * 3600 * 1000LL, not_before, NULL);
	assert_non_null(json);
	char *jws = h_sign(json, h_data("test-es256.key"));
	assert_non_null(jws);
	assert_int_equal(h_store_record(rc, H_PREFIX, "sched-1", jws, 0), 0);
	free(jws);
	free(json);
	assert_true(h_redis_int(rc, "ZADD " H_PREFIX ":scheduled %lld sched-1", not_before) == 1);
	wait_done("sched-1", &dmn[0]);
	json_t *all = h_get_ok(&target, "/_requests");
	long long arrival = json_integer_value(json_object_get(json_array_get(all, 0), "arrival_ms"));
	json_decref(all);
	printf("    clock 2 h ahead: the scheduled call arrived %lld ms after its notBefore\n",
	    arrival - not_before);
	assert_true(arrival >= not_before);
	h_daemon_down(&dmn[0]);
}

/* ------------------------------------------------------------------ */
/* 5b. a rejection that comes back after the fresh token (R9)           */

/*
 * Two calls carry the same token. One is answered 401 at once: the worker
 * drops the token and fetches a new one. The other is answered (403
 * invalid_token, which R9 treats the same) 1.5 s later, when the new token
 * is already held. It must then be re-dispatched with that token; waiting
 * for "the next token" strands it, since none is coming for a minute, until
 * auth_wait_max_ms hands it back (job.handback) and it is read again.
 */
static void
test_late_rejection_uses_fresh_token(void **state)
{
	(void)state;

	world_up(60);
	struct dcfg c = { .consumer = "w1", .secret_file = secret_path,
	    .oauth_extra = "auth_wait_max_ms = 10000\n" };
	daemon_up(&dmn[0], &c);
	assert_int_equal(h_fake_script(&target, "{\"per_key\":{"
	    "\"t7-slow\":[{\"status\":403,\"delay_ms\":1500,"
	    "\"www_authenticate\":\"Bearer error=\\\"invalid_token\\\"\"}],"
	    "\"t7-fast\":[{\"status\":401}]}}"), 0);
	decide("t7-slow");
	wait_target_calls("t7-slow", 1);
	decide("t7-fast");
	wait_done("t7-fast", &dmn[0]);
	assert_statuses("t7-fast", "401 200");
	wait_done("t7-slow", &dmn[0]);
	assert_statuses("t7-slow", "403 200");
	assert_trail_ends("t7-slow", "running auth_wait running done");
	assert_int_equal(stat_int(&idp, "issued"), 2);
	wait_hb_min("w1", "done", 2);
	if (hb_int("w1", "redispatched") != 2 || hb_int("w1", "claimed") != 0 ||
	    h_daemon_log_has(&dmn[0], "event=job.handback"))
		fail_msg("redispatched %lld (want 2), claimed %lld (want 0), or handed back: the "
		    "late rejection waited for a token that was already there (log %s)",
		    hb_int("w1", "redispatched"), hb_int("w1", "claimed"), dmn[0].log);
	h_daemon_down(&dmn[0]);
}

/* ------------------------------------------------------------------ */
/* 6. no token, secret or assertion in the logs (warrantd(7) §9, house rules)   */

/* base64("client_id:secret", both form-encoded): the Basic credentials. */
static void
basic_credentials(char *out, size_t n)
{
	const char *raw = CLIENT_ID ":" SECRET_FORM;

	assert_true(n > 4 * (strlen(raw) + 2) / 3 + 1);
	EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)raw, (int)strlen(raw));
}

/* 40 characters of the private key's base64 body. */
static void
key_needle(char *out, size_t n)
{
	char *pem = h_read_file(h_data("test-rs256.key"));
	const char *body = pem ? strchr(pem, '\n') : NULL;

	assert_non_null(body);
	snprintf(out, n < 41 ? n : 41, "%s", body + 1);
	free(pem);
}

static void
assert_log_has_no_secrets(const struct h_daemon *d)
{
	char basic[256], key[64];

	basic_credentials(basic, sizeof basic);
	key_needle(key, sizeof key);
	assert_true(h_daemon_log_has(d, "event=token.refreshed"));	/* it did log */
	assert_log_lacks(d, "S3cr3t", "the client secret");
	assert_log_lacks(d, SECRET_FORM, "the form-encoded client secret");
	assert_log_lacks(d, basic, "the Basic credentials");
	assert_log_lacks(d, "eyJ", "a JWT (token, assertion or record)");
	assert_log_lacks(d, "Bearer ", "an Authorization header");
	assert_log_lacks(d, key, "the private key");
}

static void
test_no_secret_in_logs(void **state)
{
	(void)state;

	world_up(60);
	/* auth_wait_max_ms: this test is about logs; a slow re-dispatch (see
	 * test_late_rejection_uses_fresh_token) must not make it slow too. */
	struct dcfg basic = { .consumer = "w-basic", .secret_file = secret_path,
	    .oauth_extra = "auth_wait_max_ms = 3000\n" };
	daemon_up(&dmn[0], &basic);
	long long ready = h_now_ms();
	decide("t6-a");
	wait_done("t6-a", &dmn[0]);
	/* A revoked token on the way: 401, refresh, re-dispatch. */
	next_second(ready);
	h_post_ok(&target, "/_revoke", NULL);
	decide("t6-b");
	wait_done("t6-b", &dmn[0]);
	assert_statuses("t6-b", "401 200");
	json_t *s = h_get_ok(&idp, "/_stats");
	assert_string_equal(json_string_value(json_object_get(s, "last_auth")),
	    "client_secret_basic");
	json_decref(s);
	h_daemon_down(&dmn[0]);
	assert_log_has_no_secrets(&dmn[0]);

	struct dcfg pkj = { .consumer = "w-pkj", .secret_file = NULL };
	daemon_up(&dmn[1], &pkj);
	decide("t6-c");
	wait_done("t6-c", &dmn[1]);
	assert_statuses("t6-c", "200");
	s = h_get_ok(&idp, "/_stats");
	assert_string_equal(json_string_value(json_object_get(s, "last_auth")), "private_key_jwt");
	assert_string_equal(json_string_value(json_object_get(s, "last_alg")), "RS256");
	json_decref(s);
	char *owner = hash_field("t6-c", "owner");
	assert_string_equal(owner, "w-pkj");
	free(owner);
	h_daemon_down(&dmn[1]);
	assert_log_has_no_secrets(&dmn[1]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_short_tokens_refreshed_ahead, world_down),
		cmocka_unit_test_teardown(test_revocations_execute_each_once, world_down),
		cmocka_unit_test_teardown(test_idp_down_stops_claiming, world_down),
		cmocka_unit_test_teardown(test_bad_secret_worker_takes_nothing, world_down),
		cmocka_unit_test_teardown(test_401_in_hand_redispatch_then_handback, world_down),
		cmocka_unit_test_teardown(test_target_refuses_every_token, world_down),
		cmocka_unit_test_teardown(test_refresh_spacing_gaps, world_down),
		cmocka_unit_test_teardown(test_per_action_scopes, world_down),
		cmocka_unit_test_teardown(test_token_exchange, world_down),
		cmocka_unit_test_teardown(test_dpop, world_down),
		cmocka_unit_test_teardown(test_per_record, world_down),
		cmocka_unit_test_teardown(test_scope_trouble_is_its_own, world_down),
		cmocka_unit_test_teardown(test_wall_clock_step, world_down),
		cmocka_unit_test_teardown(test_promoter_uses_redis_time, world_down),
		cmocka_unit_test_teardown(test_no_secret_in_logs, world_down),
		cmocka_unit_test_teardown(test_late_rejection_uses_fresh_token, world_down),
	};

	if (getenv("ITEST_FILTER") != NULL)	/* e.g. ITEST_FILTER='test_late*' */
		cmocka_set_test_filter(getenv("ITEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
