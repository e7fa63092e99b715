/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_warrantctl: the real warrantctl binary (warrantd(7) §11) against a private
 * redis-server, with generated configs and the test keys in tests/data/.
 *
 * Every test starts from an empty database (FLUSHALL). What the tool wrote
 * is read back with a client of our own; signed records are verified with
 * the public key, as the worker would.
 */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <jansson.h>

#include "harness.h"
#include "core/record.h"
#include "base/wtime.h"

#define RUN_TIMEOUT_MS 30000	/* one CLI run; generous for ASan under load */
#define ES_PUB	"tests/data/test-es256.pub"
#define ES_KEY	"tests/data/test-es256.key"
#define ES_OTHER_KEY "tests/data/test-es256-other.key"
#define HS_SECRET "tests/data/test-hs256.secret"

static struct h_redis R;
static redisContext *C;
static char *cfg_es, *cfg_hs, *cfg_off, *cfg_bad, *cfg_down, *cfg_window, *cfg_shards;
static char es_key[PATH_MAX], es_pub[PATH_MAX], es_other_key[PATH_MAX], hs_secret[PATH_MAX];

/* ---- fixtures ---- */

static char *
write_cfg(const char *name, const char *socket, const char *records, const char *prefix)
{
	char text[2 * PATH_MAX + 1024];

	snprintf(text, sizeof text,
	    "[daemon]\nconsumer = itest\n"
	    "[redis]\nsocket = %s\nprefix = %s\n"
	    "[records]\n%s\n"
	    "[action gate.open]\nurl = http://127.0.0.1:1/gates/{resource}\nauth = none\n",
	    socket, prefix, records);
	return h_write_file(name, text);
}

static int
abs_path(const char *rel, char *out)
{
	if (realpath(rel, out) == NULL) {
		fprintf(stderr, "cannot find %s (run from the repository root)\n", rel);
		return -1;
	}
	return 0;
}

static int
setup_all(void **state)
{
	char rec[PATH_MAX + 128], gone[300];

	(void)state;
	if (abs_path(ES_PUB, es_pub) || abs_path(ES_KEY, es_key) ||
	    abs_path(ES_OTHER_KEY, es_other_key) || abs_path(HS_SECRET, hs_secret))
		return -1;
	if (h_redis_start(&R, 0) != 0 || (C = h_redis_connect(&R)) == NULL)
		return -1;
	snprintf(rec, sizeof rec, "verify_key_file = %s", es_pub);
	cfg_es = write_cfg("es.ini", R.sock, rec, "t");
	snprintf(rec, sizeof rec, "algorithm = HS256\nverify_key_file = %s", hs_secret);
	cfg_hs = write_cfg("hs.ini", R.sock, rec, "t");
	cfg_off = write_cfg("off.ini", R.sock, "signature = off", "t");
	snprintf(rec, sizeof rec, "verify_key_file = %s\nmax_window_s = 600\nissuer = dec-1",
	    es_pub);
	cfg_window = write_cfg("window.ini", R.sock, rec, "t");
	cfg_bad = write_cfg("bad.ini", R.sock, "signature = off\nno_such_key = 1", "t");
	cfg_shards = write_cfg("shards.ini", R.sock, "signature = off", "t\nshards = 4");
	snprintf(gone, sizeof gone, "%s/no-redis.sock", h_tmpdir());
	cfg_down = write_cfg("down.ini", gone, "signature = off", "t");
	return cfg_es && cfg_hs && cfg_off && cfg_window && cfg_bad && cfg_down && cfg_shards ?
	    0 : -1;
}

static int
teardown_all(void **state)
{
	(void)state;
	redisFree(C);
	h_redis_stop(&R);
	free(cfg_es);
	free(cfg_hs);
	free(cfg_off);
	free(cfg_window);
	free(cfg_bad);
	free(cfg_down);
	free(cfg_shards);
	return 0;
}

static int
flush(void **state)
{
	(void)state;
	char *ok = h_redis_str(C, "FLUSHALL");
	int rc = ok != NULL && strcmp(ok, "OK") == 0 ? 0 : -1;

	free(ok);
	return rc;
}

/* ---- running the tool ---- */

/*
 * Runs warrantctl [-c cfg] args... (NULL-terminated); returns its exit code
 * and sets *out to what it wrote (stdout and stderr; caller frees).
 */
static int
ctl(char **out, const char *cfg, ...)
{
	static int seq;
	char *argv[64], log[512];
	int n = 0, status = 0;
	va_list ap;
	pid_t pid;

	argv[n++] = (char *)h_bin("warrantctl");
	if (cfg != NULL) {
		argv[n++] = "-c";
		argv[n++] = (char *)cfg;
	}
	va_start(ap, cfg);
	while (n < 63 && (argv[n] = va_arg(ap, char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	snprintf(log, sizeof log, "%s/ctl-%d.out", h_tmpdir(), ++seq);
	pid = h_spawn(log, argv);
	assert_true(pid > 0);
	assert_int_equal(h_wait_exit(pid, RUN_TIMEOUT_MS, &status), 0);
	*out = h_read_file(log);
	if (*out == NULL)
		*out = strdup("");
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* ctl() that must succeed; returns its output. */
static char *
ctl_ok(const char *cfg, ...)
{
	char *argv[64], *out;
	int n = 0;
	va_list ap;

	va_start(ap, cfg);
	while (n < 63 && (argv[n] = va_arg(ap, char *)) != NULL)
		n++;
	va_end(ap);
	for (int i = n; i < 63; i++)
		argv[i] = NULL;
	int rc = ctl(&out, cfg, argv[0], argv[1], argv[2], argv[3], argv[4], argv[5], argv[6],
	    argv[7], argv[8], argv[9], argv[10], argv[11], argv[12], argv[13], argv[14],
	    argv[15], argv[16], argv[17], argv[18], argv[19], argv[20], argv[21], (char *)NULL);
	if (rc != 0)
		fail_msg("warrantctl exited %d: %s", rc, out);
	return out;
}

/* decide with the usual options and --id id; returns the id printed. */
static char *
decide(const char *cfg, const char *id, const char *expires, const char *not_before)
{
	char *out;

	if (not_before != NULL)
		out = ctl_ok(cfg, "decide", "--on-behalf-of", "operator:4417", "--action",
		    "gate.open", "--resource", "canal/gate-14", "--basis", "role:gatekeeper",
		    "--expires", expires, "--not-before", not_before, "--id", id, "--key", es_key,
		    (char *)NULL);
	else
		out = ctl_ok(cfg, "decide", "--on-behalf-of", "operator:4417", "--action",
		    "gate.open", "--resource", "canal/gate-14", "--basis", "role:gatekeeper",
		    "--expires", expires, "--id", id, "--key", es_key, (char *)NULL);
	out[strcspn(out, "\n")] = '\0';
	assert_string_equal(out, id);
	return out;
}

/* ---- reading back ---- */

static char *
read_all(const char *path)
{
	char *s = h_read_file(path);

	assert_non_null(s);
	return s;
}

/* The stored record, verified with the public key (or the secret). */
static struct record *
load_record(const char *id, enum jwa_alg alg, const char *key_path)
{
	char *raw = h_redis_str(C, "HGET t:decision:%s record", id), *key = read_all(key_path);
	struct record_policy pol = {.signature_required = 1, .algorithm = alg,
	    .key = (unsigned char *)key, .key_len = strlen(key), .max_window_ms = 604800000,
	    .clock_skew_ms = 60000};
	struct record *rec;
	char detail[256];

	assert_non_null(raw);
	if (record_load(&pol, id, raw, wtime_now_ms(), &rec, NULL, detail, sizeof detail) !=
	    RECORD_OK)
		fail_msg("the stored record does not verify: %s", detail);
	free(raw);
	free(key);
	return rec;
}

static json_t *
parse_json(const char *text)
{
	json_error_t err;
	json_t *v = json_loads(text, 0, &err);

	if (v == NULL)
		fail_msg("not JSON (%s): %s", err.text, text);
	return v;
}

static long long
jint(const json_t *obj, const char *path)
{
	json_t *v = json_object_get(obj, path);

	if (!json_is_integer(v))
		fail_msg("%s is not an integer", path);
	return json_integer_value(v);
}

static const char *
jstr(const json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));

	if (s == NULL)
		fail_msg("%s is not a string", key);
	return s;
}

static void
assert_contains(const char *hay, const char *needle)
{
	if (strstr(hay, needle) == NULL)
		fail_msg("'%s' not in: %s", needle, hay);
}

/* The `id` of the only entry of P:jobs. */
static char *
only_job_id(void)
{
	redisReply *r = redisCommand(C, "XRANGE t:jobs - +");
	char *id;

	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_int_equal(r->elements, 1);
	redisReply *f = r->element[0]->element[1];
	assert_int_equal(f->elements, 2);
	assert_string_equal(f->element[0]->str, "id");
	id = strdup(f->element[1]->str);
	freeReplyObject(r);
	return id;
}

/* ---- decide ---- */

static void
test_decide_writes_hash_and_stream(void **state)
{
	char *out, *job;
	struct record *rec;
	int64_t created, now = wtime_now_ms();

	(void)state;
	out = ctl_ok(cfg_es, "decide", "--on-behalf-of", "operator:4417", "--action", "gate.open",
	    "--resource", "canal/gate-14", "--param", "mode=full", "--params",
	    "{\"mode\":\"half\",\"n\":2}", "--basis", "role:gatekeeper", "--expires", "+2h",
	    "--notify", "ops", "--key", es_key, (char *)NULL);
	out[strcspn(out, "\n")] = '\0';
	/* A generated id: 26 lower-case base32 characters. */
	assert_int_equal(strlen(out), 26);
	assert_int_equal(strspn(out, "abcdefghijklmnopqrstuvwxyz234567"), 26);

	char *state_f = h_redis_str(C, "HGET t:decision:%s state", out);
	char *created_f = h_redis_str(C, "HGET t:decision:%s createdAt", out);
	assert_string_equal(state_f, "queued");
	assert_int_equal(wtime_parse_rfc3339(created_f, &created), 0);
	assert_true(created >= now - 1000 && created <= wtime_now_ms() + 1000);
	job = only_job_id();
	assert_string_equal(job, out);
	assert_int_equal(h_redis_int(C, "ZCARD t:scheduled"), 0);

	rec = load_record(out, JWA_ES256, es_pub);
	assert_string_equal(rec->on_behalf_of, "operator:4417");
	assert_string_equal(rec->action, "gate.open");
	assert_string_equal(rec->resource, "canal/gate-14");
	assert_string_equal(rec->basis, "role:gatekeeper");
	assert_string_equal(rec->notify_on_denial, "ops");
	assert_string_equal(rec->iss, "warrantctl");
	json_t *content = record_content(rec), *params = json_object_get(content, "parameters");
	assert_string_equal(json_string_value(json_object_get(params, "mode")), "full");
	assert_int_equal(json_integer_value(json_object_get(params, "n")), 2);
	json_decref(content);
	assert_true(rec->decided_at_ms >= now - 1000 && rec->decided_at_ms <= wtime_now_ms());
	assert_int_equal(rec->expires_at_ms - rec->decided_at_ms, 2 * 3600 * 1000);
	assert_int_equal(rec->not_before_ms, 0);
	record_free(rec);
	free(job);
	free(state_f);
	free(created_f);
	free(out);
}

static void
test_decide_hs256(void **state)
{
	char *out;
	struct record *rec;

	(void)state;
	out = ctl_ok(cfg_hs, "decide", "--on-behalf-of", "svc:a", "--action", "gate.open",
	    "--resource", "g/1", "--basis", "grant:7", "--expires", "+10m", "--id", "hs-1",
	    "--kid", "k1", "--key", hs_secret, (char *)NULL);
	rec = load_record("hs-1", JWA_HS256, hs_secret);
	assert_string_equal(rec->basis, "grant:7");
	record_free(rec);
	free(out);
}

static void
test_decide_signature_off_stores_json(void **state)
{
	char *out, *raw;
	json_t *v;

	(void)state;
	out = ctl_ok(cfg_off, "decide", "--on-behalf-of", "svc:a", "--action", "gate.open",
	    "--resource", "g/1", "--basis", "grant:7", "--expires", "+10m", "--id", "plain-1",
	    (char *)NULL);
	raw = h_redis_str(C, "HGET t:decision:plain-1 record");
	assert_non_null(raw);
	v = parse_json(raw);
	assert_string_equal(jstr(v, "recordId"), "plain-1");
	assert_string_equal(jstr(v, "iss"), "warrantctl");
	json_decref(v);
	free(raw);
	free(out);
}

static void
test_decide_not_before_schedules(void **state)
{
	char *out, *score;
	struct record *rec;

	(void)state;
	out = decide(cfg_es, "later-1", "+2h", "+1h");
	assert_int_equal(h_redis_int(C, "XLEN t:jobs"), 0);
	score = h_redis_str(C, "ZSCORE t:scheduled later-1");
	assert_non_null(score);
	rec = load_record("later-1", JWA_ES256, es_pub);
	assert_int_equal(rec->not_before_ms - rec->decided_at_ms, 3600 * 1000);
	assert_int_equal(strtoll(score, NULL, 10), rec->not_before_ms);
	record_free(rec);
	free(score);
	free(out);

	/* A notBefore already past: straight onto the stream. */
	out = decide(cfg_es, "now-1", "+2h", "2020-01-01T00:00:00Z");
	assert_int_equal(h_redis_int(C, "XLEN t:jobs"), 1);
	assert_int_equal(h_redis_int(C, "ZCARD t:scheduled"), 1);
	free(out);
}

static void
test_decide_duplicate_refused(void **state)
{
	char *out, *first, *second;
	int rc;

	(void)state;
	out = decide(cfg_es, "dup-1", "+1h", NULL);
	free(out);
	first = h_redis_str(C, "HGET t:decision:dup-1 record");
	rc = ctl(&out, cfg_es, "decide", "--on-behalf-of", "someone:else", "--action",
	    "gate.open", "--resource", "g/2", "--basis", "b", "--expires", "+1h", "--id",
	    "dup-1", "--key", es_key, (char *)NULL);
	assert_int_equal(rc, 1);
	assert_contains(out, "warrantctl: ");
	assert_contains(out, "exists");
	second = h_redis_str(C, "HGET t:decision:dup-1 record");
	assert_string_equal(first, second);	/* the first decision stands */
	assert_int_equal(h_redis_int(C, "XLEN t:jobs"), 1);
	free(first);
	free(second);
	free(out);
}

static void
test_decide_unknown_action_refused(void **state)
{
	char *out;

	(void)state;
	assert_int_equal(ctl(&out, cfg_es, "decide", "--on-behalf-of", "a", "--action",
	    "gate.close", "--resource", "g/1", "--basis", "b", "--expires", "+1h", "--key",
	    es_key, (char *)NULL), 1);
	assert_contains(out, "gate.close");
	assert_int_equal(h_redis_int(C, "DBSIZE"), 0);
	free(out);
}

static void
test_decide_checks_config_rules(void **state)
{
	char *out;

	(void)state;
	/* max_window_s = 600 */
	assert_int_equal(ctl(&out, cfg_window, "decide", "--on-behalf-of", "a", "--action",
	    "gate.open", "--resource", "g/1", "--basis", "b", "--expires", "+11m", "--key",
	    es_key, (char *)NULL), 64);
	assert_contains(out, "max_window_s");
	free(out);
	/* [records] issuer = dec-1 is what iss becomes */
	out = ctl_ok(cfg_window, "decide", "--on-behalf-of", "a", "--action", "gate.open",
	    "--resource", "g/1", "--basis", "b", "--expires", "+9m", "--id", "iss-1", "--key",
	    es_key, (char *)NULL);
	struct record *rec = load_record("iss-1", JWA_ES256, es_pub);
	assert_string_equal(rec->iss, "dec-1");
	record_free(rec);
	free(out);
	assert_int_equal(ctl(&out, cfg_window, "decide", "--on-behalf-of", "a", "--action",
	    "gate.open", "--resource", "g/1", "--basis", "b", "--expires", "+9m", "--issuer",
	    "dec-2", "--key", es_key, (char *)NULL), 64);
	free(out);
	assert_int_equal(h_redis_int(C, "DBSIZE"), 2);	/* iss-1's hash and P:jobs */
}

static void
test_usage_errors(void **state)
{
	char *out;

	(void)state;
	assert_int_equal(ctl(&out, cfg_es, (char *)NULL), 64);
	free(out);
	assert_int_equal(ctl(&out, cfg_es, "frobnicate", (char *)NULL), 64);
	assert_contains(out, "warrantctl: ");
	free(out);
	assert_int_equal(ctl(&out, cfg_es, "decide", "--on-behalf-of", "a", "--action",
	    "gate.open", "--resource", "g/1", "--expires", "+1h", "--key", es_key, (char *)NULL),
	    64);	/* no --basis */
	free(out);
	assert_int_equal(ctl(&out, cfg_es, "decide", "--on-behalf-of", "a", "--action",
	    "gate.open", "--resource", "g/1", "--basis", "b", "--expires", "tomorrow", "--key",
	    es_key, (char *)NULL), 64);
	assert_contains(out, "--expires");
	free(out);
	assert_int_equal(ctl(&out, cfg_es, "decide", "--on-behalf-of", "a", "--action",
	    "gate.open", "--resource", "g/1", "--basis", "b", "--expires", "+1h", (char *)NULL),
	    64);	/* no --key with signature = required */
	free(out);
	assert_int_equal(ctl(&out, cfg_es, "decide", "--on-behalf-of", "a", "--action",
	    "gate.open", "--resource", "g//1", "--basis", "b", "--expires", "+1h", "--key",
	    es_key, (char *)NULL), 64);	/* a record the worker would refuse */
	free(out);
	assert_int_equal(ctl(&out, cfg_es, "decide", "--on-behalf-of", "a", "--action",
	    "gate.open", "--resource", "g/1", "--basis", "b", "--expires", "+1h", "--id",
	    "no spaces", "--key", es_key, (char *)NULL), 64);
	free(out);
	assert_int_equal(ctl(&out, cfg_es, "decide", "--bogus", (char *)NULL), 64);
	free(out);
	assert_int_equal(ctl(&out, cfg_es, "inspect", (char *)NULL), 64);
	free(out);
	assert_int_equal(ctl(&out, cfg_es, "inspect", "a", "b", (char *)NULL), 64);
	free(out);
	assert_int_equal(ctl(&out, cfg_es, "dead", (char *)NULL), 64);
	free(out);
	assert_int_equal(ctl(&out, cfg_es, "dead", "bury", "x", (char *)NULL), 64);
	free(out);
	/* the global options, short and long */
	const char *helps[] = {"-h", "--help"};
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(ctl(&out, NULL, helps[i], (char *)NULL), 0);
		assert_contains(out, "usage: warrantctl");
		free(out);
	}
	assert_int_equal(ctl(&out, NULL, "--version", (char *)NULL), 0);
	assert_contains(out, "warrantctl ");
	free(out);
	assert_int_equal(ctl(&out, NULL, "--config", (char *)NULL), 64);
	assert_contains(out, "missing value: --config");
	free(out);
	assert_int_equal(ctl(&out, NULL, "--config", "/nonexistent.ini", "status", (char *)NULL),
	    78);
	assert_contains(out, "/nonexistent.ini");
	free(out);
	assert_int_equal(ctl(&out, NULL, "--bogus", (char *)NULL), 64);
	assert_contains(out, "unknown option or missing value: --bogus");
	free(out);
	assert_int_equal(ctl(&out, cfg_es, "status", "extra", (char *)NULL), 64);
	free(out);
	assert_int_equal(h_redis_int(C, "DBSIZE"), 0);
	/* -h is not an error */
	assert_int_equal(ctl(&out, NULL, "-h", (char *)NULL), 0);
	assert_contains(out, "usage: warrantctl");
	free(out);
}

static void
test_config_errors(void **state)
{
	char *out, missing[300];

	(void)state;
	assert_int_equal(ctl(&out, cfg_bad, "status", (char *)NULL), 78);
	assert_contains(out, "bad.ini:");
	assert_contains(out, "no_such_key");
	free(out);
	snprintf(missing, sizeof missing, "%s/missing.ini", h_tmpdir());
	assert_int_equal(ctl(&out, missing, "status", (char *)NULL), 78);
	free(out);
	/* A --key that cannot be read, or whose public half is not the
	 * configured verification key: nothing is written. */
	assert_int_equal(ctl(&out, cfg_es, "decide", "--on-behalf-of", "a", "--action",
	    "gate.open", "--resource", "g/1", "--basis", "b", "--expires", "+1h", "--key",
	    "/nonexistent/key.pem", (char *)NULL), 78);
	free(out);
	assert_int_equal(ctl(&out, cfg_es, "decide", "--on-behalf-of", "a", "--action",
	    "gate.open", "--resource", "g/1", "--basis", "b", "--expires", "+1h", "--key",
	    es_other_key, (char *)NULL), 78);
	assert_contains(out, "verify_key_file");
	free(out);
	assert_int_equal(h_redis_int(C, "DBSIZE"), 0);
}

static void
test_redis_down(void **state)
{
	char *out;

	(void)state;
	assert_int_equal(ctl(&out, cfg_down, "status", (char *)NULL), 69);
	assert_contains(out, "no-redis.sock");
	free(out);
	assert_int_equal(ctl(&out, cfg_down, "decide", "--on-behalf-of", "a", "--action",
	    "gate.open", "--resource", "g/1", "--basis", "b", "--expires", "+1h", (char *)NULL),
	    69);
	free(out);
	assert_int_equal(ctl(&out, cfg_down, "dead", "list", (char *)NULL), 69);
	free(out);
}

/* ---- status ---- */

static void
test_status_without_group(void **state)
{
	char *out;
	json_t *st;

	(void)state;
	/* nobody works the queue: the verdict is exit 1, said on stderr */
	assert_int_equal(ctl(&out, cfg_es, "status", (char *)NULL), 1);
	assert_contains(out, "no group yet");
	assert_contains(out, "consumers: 0 alive of 0\n");
	assert_contains(out, "warrantctl: no consumer has a live heartbeat\n");
	free(out);
	/* a live heartbeat (the hash, with its fields) is someone working */
	assert_int_equal(h_redis_int(C, "HSET t:consumer:w9 tokenState valid"), 1);
	out = ctl_ok(cfg_es, "status", "--json", (char *)NULL);
	st = parse_json(out);
	assert_true(json_is_false(json_object_get(st, "groupExists")));
	assert_int_equal(jint(st, "lag"), 0);
	assert_int_equal(jint(st, "pending"), 0);
	assert_int_equal(jint(st, "scheduled"), 0);
	assert_int_equal(jint(st, "dead"), 0);
	assert_int_equal(jint(st, "notify"), 0);
	json_decref(st);
	free(out);
	out = ctl_ok(cfg_es, "status", (char *)NULL);
	assert_contains(out, "no group yet");
	assert_contains(out, "pending:");
	assert_contains(out, "oldestPendingIdle: -\n");
	assert_contains(out, "consumers: 1 alive of 1\n"
	    "  NAME  ALIVE  HEARTBEAT  PENDING  IN FLIGHT  TOKEN  VERSION  OWNER\n"
	    "  w9    alive  -          0        -          valid  -        -\n");
	free(out);
}

static void
test_status_reports_group_and_consumers(void **state)
{
	char *out;
	json_t *st, *w1;

	(void)state;
	free(decide(cfg_es, "s-1", "+1h", NULL));
	free(decide(cfg_es, "s-2", "+1h", NULL));
	free(decide(cfg_es, "s-3", "+2h", "+1h"));
	char *ok = h_redis_str(C, "XGROUP CREATE t:jobs workers 0");
	assert_string_equal(ok, "OK");
	free(ok);
	redisReply *r = redisCommand(C, "XREADGROUP GROUP workers w1 COUNT 1 STREAMS t:jobs >");
	assert_non_null(r);
	freeReplyObject(r);
	assert_int_equal(h_redis_int(C, "HSET t:consumer:w1 tokenState valid inFlight 1 done 5"),
	    3);
	assert_int_equal(h_redis_int(C, "HSET t:consumer:w2 tokenState refreshing"), 1);
	free(h_redis_str(C, "XADD t:dead * id x reason no-id"));
	free(h_redis_str(C, "XADD t:notify * id x owner ops kind dead"));

	out = ctl_ok(cfg_es, "status", "--json", (char *)NULL);
	st = parse_json(out);
	assert_true(json_is_true(json_object_get(st, "groupExists")));
	assert_int_equal(jint(st, "lag"), 1);
	/* §13: the one entry not delivered yet is the second one queued */
	redisReply *last = redisCommand(C, "XREVRANGE t:jobs + - COUNT 1");
	assert_non_null(last);
	assert_int_equal(last->type, REDIS_REPLY_ARRAY);
	assert_string_equal(jstr(st, "oldestUndelivered"), last->element[0]->element[0]->str);
	freeReplyObject(last);
	assert_int_equal(jint(st, "entriesRead"), 1);
	assert_int_equal(jint(st, "pending"), 1);
	assert_true(jint(st, "oldestPendingIdleMs") >= 0);
	assert_int_equal(jint(st, "scheduled"), 1);
	assert_int_equal(jint(st, "dead"), 1);
	assert_int_equal(jint(st, "notify"), 1);
	w1 = json_object_get(json_object_get(st, "consumers"), "w1");
	assert_non_null(w1);
	assert_int_equal(jint(w1, "pending"), 1);
	assert_true(jint(w1, "idleMs") >= 0);
	assert_string_equal(jstr(w1, "tokenState"), "valid");
	assert_int_equal(jint(w1, "done"), 5);
	assert_true(json_is_true(json_object_get(w1, "alive")));
	/* Heartbeat only, not in the group yet. */
	json_t *w2 = json_object_get(json_object_get(st, "consumers"), "w2");
	assert_non_null(w2);
	assert_string_equal(jstr(w2, "tokenState"), "refreshing");
	assert_true(json_is_false(json_object_get(w2, "inGroup")));
	json_decref(st);
	free(out);

	/* --state scheduled, as --help lists it: P:scheduled's records */
	out = ctl_ok(cfg_es, "jobs", "--state", "scheduled", "--json", (char *)NULL);
	st = parse_json(out);
	assert_int_equal(json_array_size(st), 1);
	assert_string_equal(jstr(json_array_get(st, 0), "id"), "s-3");
	assert_string_equal(jstr(json_array_get(st, 0), "source"), "scheduled");
	json_decref(st);
	free(out);

	out = ctl_ok(cfg_es, "status", (char *)NULL);
	assert_contains(out, "\nlag:");
	assert_contains(out, "consumers: 2 alive of 2\n");
	assert_contains(out, "  w1    alive  ");
	assert_contains(out, "  valid  ");
	assert_null(strstr(out, "received"));	/* the counters: --json only */
	free(out);
}

/* ---- inspect ---- */

static void
test_inspect_state_record_audit(void **state)
{
	char *out;
	json_t *v, *audit;

	(void)state;
	free(decide(cfg_es, "in-1", "+1h", NULL));
	free(h_redis_str(C, "XADD t:audit * id in-1 from queued to running consumer w1 "
	    "attempt 1 at 2026-01-01T00:00:00Z detail x"));
	free(h_redis_str(C, "XADD t:audit * id other from queued to running"));
	/* More than one XRANGE page (1000) before the last entry of in-1. */
	for (int i = 0; i < 1100; i++)
		assert_int_equal(redisAppendCommand(C, "XADD t:audit * id filler-%d to x", i),
		    REDIS_OK);
	for (int i = 0; i < 1100; i++) {
		redisReply *r;
		assert_int_equal(redisGetReply(C, (void **)&r), REDIS_OK);
		freeReplyObject(r);
	}
	free(h_redis_str(C, "XADD t:audit * id in-1 from running to done consumer w1 "
	    "attempt 1 at 2026-01-01T00:00:01Z detail ok"));
	assert_int_equal(h_redis_int(C, "HSET t:decision:in-1 attempts 1 owner w1"), 2);

	out = ctl_ok(cfg_es, "inspect", "in-1", "--json", (char *)NULL);
	v = parse_json(out);
	assert_string_equal(jstr(v, "state"), "queued");
	assert_int_equal(jint(v, "attempts"), 1);
	assert_string_equal(jstr(v, "owner"), "w1");
	assert_true(json_is_true(json_object_get(v, "verified")));
	assert_string_equal(jstr(json_object_get(v, "record"), "recordId"), "in-1");
	audit = json_object_get(v, "audit");
	assert_int_equal(json_array_size(audit), 2);
	assert_string_equal(jstr(json_array_get(audit, 0), "to"), "running");
	assert_string_equal(jstr(json_array_get(audit, 1), "to"), "done");
	json_decref(v);
	free(out);

	out = ctl_ok(cfg_es, "inspect", "in-1", (char *)NULL);
	assert_contains(out, "state:");
	assert_contains(out, "queued");
	assert_contains(out, "verified:");
	assert_contains(out, "from=running to=done");
	free(out);
}

static void
test_inspect_shows_failed_verification(void **state)
{
	char *out;
	json_t *v;

	(void)state;
	free(decide(cfg_es, "in-2", "+1h", NULL));
	/* Someone with write access rewrites the record: not signed by the decider. */
	assert_int_equal(h_redis_int(C, "HSET t:decision:in-2 record %s",
	    "{\"recordId\":\"in-2\"}"), 0);
	out = ctl_ok(cfg_es, "inspect", "in-2", "--json", (char *)NULL);
	v = parse_json(out);
	assert_true(json_is_false(json_object_get(v, "verified")));
	assert_string_equal(jstr(v, "verifyReason"), "bad-signature");
	assert_null(json_object_get(v, "record"));
	json_decref(v);
	free(out);
}

static void
test_inspect_not_found(void **state)
{
	char *out;

	(void)state;
	assert_int_equal(ctl(&out, cfg_es, "inspect", "nope", (char *)NULL), 1);
	assert_contains(out, "nope");
	free(out);
}

/* ---- dead letters ---- */

/* Makes id a dead record the way the worker leaves one. */
static void
make_dead(const char *id, const char *reason)
{
	assert_true(h_redis_int(C, "HSET t:decision:%s state dead attempts 10 owner w1 "
	    "outcome %s", id, reason) >= 0);
	assert_int_equal(h_redis_int(C, "PEXPIRE t:decision:%s 600000", id), 1);
	free(h_redis_str(C, "XADD t:dead * id %s streamId 1-1 reason %s detail %s deliveries 3 "
	    "consumer w1 at 2026-01-01T00:00:00Z", id, reason, "gave-up"));
}

static void
test_dead_list(void **state)
{
	char *out;
	json_t *v;

	(void)state;
	/* nothing: a line that says so (issue 38 item 6); JSON: [] */
	out = ctl_ok(cfg_es, "dead", "list", (char *)NULL);
	assert_string_equal(out, "no dead letters\n");
	free(out);
	out = ctl_ok(cfg_es, "dead", "list", "--json", (char *)NULL);
	assert_non_null(strstr(out, "[]"));
	free(out);
	free(h_redis_str(C, "XADD t:dead * id d-1 streamId 5-0 reason record-missing detail %s "
	    "deliveries 1 consumer w1 at 2026-01-01T00:00:00Z", "no hash"));
	free(h_redis_str(C, "XADD t:dead * id d-2 streamId 6-0 reason too-many-deliveries "
	    "detail x deliveries 17 consumer w2 at 2026-01-01T00:00:01Z"));
	out = ctl_ok(cfg_es, "dead", "list", (char *)NULL);
	assert_contains(out, "id=d-1 reason=record-missing detail=\"no hash\" deliveries=1 "
	    "consumer=w1 at=2026-01-01T00:00:00Z");
	assert_contains(out, "id=d-2 reason=too-many-deliveries");
	assert_int_equal(strchr(strchr(out, '\n') + 1, '\n')[1], '\0');	/* two lines */
	free(out);
	out = ctl_ok(cfg_es, "dead", "list", "--json", (char *)NULL);
	v = parse_json(out);
	assert_int_equal(json_array_size(v), 2);
	assert_string_equal(jstr(json_array_get(v, 1), "id"), "d-2");
	assert_int_equal(jint(json_array_get(v, 1), "deliveries"), 17);
	assert_non_null(json_object_get(json_array_get(v, 0), "entryId"));
	json_decref(v);
	free(out);
}

static void
test_dead_requeue(void **state)
{
	char *out, *st, *attempts, *owner, *job;
	redisReply *r;

	(void)state;
	free(decide(cfg_es, "rq-1", "+1h", NULL));
	free(h_redis_str(C, "DEL t:jobs"));
	make_dead("rq-1", "too-many-deliveries");
	make_dead("rq-other", "record-invalid");

	out = ctl_ok(cfg_es, "dead", "requeue", "rq-1", (char *)NULL);
	free(out);
	st = h_redis_str(C, "HGET t:decision:rq-1 state");
	attempts = h_redis_str(C, "HGET t:decision:rq-1 attempts");
	owner = h_redis_str(C, "HGET t:decision:rq-1 owner");
	assert_string_equal(st, "queued");
	/* §11: a fresh budget, `attempts` never going down (R13's fence) */
	assert_string_equal(attempts, "10");
	free(attempts);
	attempts = h_redis_str(C, "HGET t:decision:rq-1 attemptsBase");
	assert_string_equal(attempts, "10");
	assert_null(owner);
	assert_int_equal(h_redis_int(C, "TTL t:decision:rq-1"), -1);	/* retention undone */
	job = only_job_id();
	assert_string_equal(job, "rq-1");
	/* Only rq-1's dead letter is gone, and the change is audited. */
	assert_int_equal(h_redis_int(C, "XLEN t:dead"), 1);
	r = redisCommand(C, "XRANGE t:audit - +");
	assert_int_equal(r->elements, 1);
	free(job);
	freeReplyObject(r);
	free(st);
	free(attempts);

	/* No dead letter any more: refused. */
	assert_int_equal(ctl(&out, cfg_es, "dead", "requeue", "rq-1", (char *)NULL), 1);
	free(out);
	assert_int_equal(h_redis_int(C, "XLEN t:jobs"), 1);
}

/* A record signed now with an expiresAt in the past. */
static void
store_expired(const char *id)
{
	char *key = read_all(es_key), *jws;
	json_t *content = json_pack("{s:s, s:s, s:s, s:s, s:{}, s:s, s:s, s:s, s:s}",
	    "recordId", id, "onBehalfOf", "a", "action", "gate.open", "resource", "g/1",
	    "parameters", "basis", "b", "decidedAt", "2020-01-01T00:00:00Z",
	    "expiresAt", "2020-01-01T01:00:00Z", "iss", "warrantctl");

	jws = record_sign(JWA_ES256, (unsigned char *)key, strlen(key), NULL, content);
	assert_non_null(jws);
	assert_int_equal(h_redis_int(C, "HSET t:decision:%s record %s", id, jws), 1);
	free(jws);
	json_decref(content);
	free(key);
}

static void
test_dead_requeue_refused(void **state)
{
	char *out, *st;

	(void)state;
	/* Past its deadline. */
	store_expired("rq-late");
	make_dead("rq-late", "too-many-deliveries");
	assert_int_equal(ctl(&out, cfg_es, "dead", "requeue", "rq-late", (char *)NULL), 1);
	assert_contains(out, "deadline");
	free(out);
	st = h_redis_str(C, "HGET t:decision:rq-late state");
	assert_string_equal(st, "dead");
	free(st);

	/* Fails verification. */
	free(decide(cfg_es, "rq-forged", "+1h", NULL));
	assert_int_equal(h_redis_int(C, "HSET t:decision:rq-forged record %s",
	    "{\"recordId\":\"rq-forged\"}"), 0);
	make_dead("rq-forged", "bad-signature");
	assert_int_equal(ctl(&out, cfg_es, "dead", "requeue", "rq-forged", (char *)NULL), 1);
	assert_contains(out, "bad-signature");
	free(out);

	/* Not dead: a record that finished is never run again. */
	free(decide(cfg_es, "rq-done", "+1h", NULL));
	make_dead("rq-done", "too-many-deliveries");
	assert_int_equal(h_redis_int(C, "HSET t:decision:rq-done state done"), 0);
	assert_int_equal(ctl(&out, cfg_es, "dead", "requeue", "rq-done", (char *)NULL), 1);
	assert_contains(out, "done");
	free(out);

	assert_int_equal(h_redis_int(C, "XLEN t:dead"), 3);	/* all kept */
	assert_int_equal(h_redis_int(C, "XLEN t:jobs"), 2);	/* decide's two only */
	assert_int_equal(h_redis_int(C, "EXISTS t:audit"), 0);
}

static void
test_dead_drop(void **state)
{
	char *out;

	(void)state;
	free(h_redis_str(C, "XADD t:dead * id dr-1 reason record-missing"));
	free(h_redis_str(C, "XADD t:dead * id dr-2 reason record-missing"));
	free(h_redis_str(C, "XADD t:dead * id dr-1 reason too-many-deliveries"));
	out = ctl_ok(cfg_es, "dead", "drop", "dr-1", (char *)NULL);
	assert_contains(out, "2");
	free(out);
	assert_int_equal(h_redis_int(C, "XLEN t:dead"), 1);
	assert_int_equal(ctl(&out, cfg_es, "dead", "drop", "dr-1", (char *)NULL), 1);
	free(out);
	assert_int_equal(h_redis_int(C, "XLEN t:dead"), 1);
}

/* issue 13: warrantd(7)'s shard function, written here on its own */
static unsigned
spec_shard(const char *id, unsigned n)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)id; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h % n;
}

/* [redis] shards = 4 on one Redis: decide writes in the recordId's shard,
 * status covers every shard or --shard N, metrics wants --shard, inspect
 * and dead drop find the shard from the id, dead list reads them all. */
static void
test_shards(void **state)
{
	char *out, id[16], key[64];
	json_t *v;

	(void)state;
	for (int i = 0; i < 8; i++) {
		snprintf(id, sizeof id, "sd-%d", i);
		free(ctl_ok(cfg_shards, "decide", "--on-behalf-of", "svc:a", "--action",
		    "gate.open", "--resource", "g/1", "--basis", "grant:7", "--expires", "+10m",
		    "--id", id, (char *)NULL));
		snprintf(key, sizeof key, "{t:%u}:decision:%s", spec_shard(id, 4), id);
		char *st = h_redis_str(C, "HGET %s state", key);
		if (st == NULL)
			fail_msg("%s is not in %s", id, key);
		free(st);
		assert_int_equal(h_redis_int(C, "EXISTS t:decision:%s", id), 0);
	}
	/* one live consumer on any shard is someone working */
	assert_int_equal(h_redis_int(C, "HSET {t:2}:consumer:w1 tokenState valid"), 1);
	out = ctl_ok(cfg_shards, "status", "--json", (char *)NULL);
	v = parse_json(out);
	assert_int_equal(json_array_size(v), 4);
	long long sum = 0;
	for (size_t i = 0; i < 4; i++) {
		snprintf(key, sizeof key, "{t:%zu}:jobs", i);
		assert_string_equal(jstr(json_array_get(v, i), "stream"), key);
		sum += json_integer_value(json_object_get(json_array_get(v, i), "streamLength"));
	}
	assert_int_equal(sum, 8);
	json_decref(v);
	free(out);
	out = ctl_ok(cfg_shards, "status", "--json", "--shard", "2", (char *)NULL);
	v = parse_json(out);
	assert_string_equal(jstr(v, "stream"), "{t:2}:jobs");
	json_decref(v);
	free(out);
	assert_int_equal(ctl(&out, cfg_shards, "metrics", (char *)NULL), 64);
	free(out);
	assert_int_equal(ctl(&out, cfg_shards, "metrics", "--shard", "4", (char *)NULL), 64);
	free(out);
	out = ctl_ok(cfg_shards, "metrics", "--shard", "1", (char *)NULL);
	assert_contains(out, "stream=\"{t:1}:jobs\"");
	free(out);
	out = ctl_ok(cfg_shards, "inspect", "sd-3", (char *)NULL);
	assert_contains(out, "sd-3");
	free(out);
	assert_int_equal(ctl(&out, cfg_shards, "inspect", "sd-3", "--shard", "1", (char *)NULL), 64);
	free(out);
	snprintf(key, sizeof key, "{t:%u}:dead", spec_shard("dd-1", 4));
	free(h_redis_str(C, "XADD %s * id dd-1 reason record-missing", key));
	snprintf(key, sizeof key, "{t:%u}:dead", (spec_shard("dd-1", 4) + 1) % 4);
	free(h_redis_str(C, "XADD %s * id dd-2 reason record-missing", key));
	out = ctl_ok(cfg_shards, "dead", "list", "--json", (char *)NULL);
	v = parse_json(out);
	assert_int_equal(json_array_size(v), 2);
	json_decref(v);
	free(out);
	free(ctl_ok(cfg_shards, "dead", "drop", "dd-1", (char *)NULL));
	out = ctl_ok(cfg_shards, "dead", "list", "--json", (char *)NULL);
	v = parse_json(out);
	assert_int_equal(json_array_size(v), 1);
	json_decref(v);
	free(out);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_decide_writes_hash_and_stream, flush),
		cmocka_unit_test_setup(test_decide_hs256, flush),
		cmocka_unit_test_setup(test_decide_signature_off_stores_json, flush),
		cmocka_unit_test_setup(test_decide_not_before_schedules, flush),
		cmocka_unit_test_setup(test_decide_duplicate_refused, flush),
		cmocka_unit_test_setup(test_decide_unknown_action_refused, flush),
		cmocka_unit_test_setup(test_decide_checks_config_rules, flush),
		cmocka_unit_test_setup(test_usage_errors, flush),
		cmocka_unit_test_setup(test_config_errors, flush),
		cmocka_unit_test_setup(test_redis_down, flush),
		cmocka_unit_test_setup(test_status_without_group, flush),
		cmocka_unit_test_setup(test_status_reports_group_and_consumers, flush),
		cmocka_unit_test_setup(test_inspect_state_record_audit, flush),
		cmocka_unit_test_setup(test_inspect_shows_failed_verification, flush),
		cmocka_unit_test_setup(test_inspect_not_found, flush),
		cmocka_unit_test_setup(test_dead_list, flush),
		cmocka_unit_test_setup(test_dead_requeue, flush),
		cmocka_unit_test_setup(test_dead_requeue_refused, flush),
		cmocka_unit_test_setup(test_dead_drop, flush),
		cmocka_unit_test_setup(test_shards, flush),
	};

	return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
