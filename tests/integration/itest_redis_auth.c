/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_redis_auth: short-lived credentials to Redis itself (warrantd(7) §9
 * "Short-lived credentials to Redis itself", [redis] auth) with the real
 * warrantd, a real redis-server behind fake_redisgate (managed Redis'
 * enforcement: a connection whose token's exp passes before an AUTH with a
 * later one was answered is refused -NOAUTH, or closed), fake_idp (Redis
 * tokens of 5 s for the Redis scope) and fake_target.
 *
 * The gate counts the expiries it enforced: every test that says "in time"
 * wants 0 of them. token_command is a shell script written by the test: it
 * prints a JWT-shaped token whose exp the gate reads, and its file `mode`
 * beside it makes it fail (exit 3) or print garbage.
 *
 * Every test brings up its own redis, gate, fakes and daemon and stops them
 * by PID in the teardown (also after a failed assertion).
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "harness.h"

#define WAIT_MS		60000	/* generous: 2 cores, ASan, load */
#define PREFIX		"warrant"
#define AUDIT		PREFIX ":audit"
#define JOBS		PREFIX ":jobs"
#define GROUP		"workers"
#define REDIS_SCOPE	"https://redis.example/.default"
#define CLIENT_ID	"warrantd-rt"
/* The load test: jobs over this long, with 5 s tokens (about 15 refreshes). */
#define LOAD_RUN_MS	60000
#define LOAD_EVERY_MS	100

static struct h_redis redis;
static struct h_fake gate, idp, target;
static struct h_daemon dmn;
static redisContext *rc;
static char *tok_dir;

static void
pause_ms(long long ms)	/* paces load; never waits for an outcome */
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	while (ms > 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ------------------------------------------------------------------ */
/* the world                                                           */

static void
world_up(const char *on_expiry)
{
	const char *gate_args[] = {"--upstream-socket", NULL, "--on-expiry", on_expiry, NULL};

	assert_int_equal(h_redis_start(&redis, 0), 0);
	rc = h_redis_connect(&redis);
	assert_non_null(rc);
	gate_args[1] = redis.sock;
	assert_int_equal(h_fake_start(&gate, "fake_redisgate", gate_args), 0);
	assert_int_equal(h_fake_start(&target, "fake_target", NULL), 0);
}

static int
world_down(void **state)
{
	(void)state;
	h_daemon_kill(&dmn);
	if (rc != NULL)
		redisFree(rc);
	rc = NULL;
	h_fake_stop(&target);
	h_fake_stop(&idp);
	h_fake_stop(&gate);
	h_redis_stop(&redis);
	free(tok_dir);
	tok_dir = NULL;
	memset(&dmn, 0, sizeof dmn);
	memset(&idp, 0, sizeof idp);
	memset(&gate, 0, sizeof gate);
	memset(&target, 0, sizeof target);
	memset(&redis, 0, sizeof redis);
	return 0;
}

/* The gate's counters ("conns=N auths=N reauths=N enforced=N ..."). */
static long long
gate_stat(const char *name)
{
	redisContext *g = h_redis_connect_tcp(gate.port);
	char *s = g ? h_redis_str(g, "GATE.STATS") : NULL, want[64];
	long long n = -1;

	snprintf(want, sizeof want, "%s=", name);
	const char *p = s ? strstr(s, want) : NULL;
	if (p != NULL)
		n = strtoll(p + strlen(want), NULL, 10);
	free(s);
	if (g != NULL)
		redisFree(g);
	if (n < 0)
		fail_msg("GATE.STATS has no %s", name);
	return n;
}

/* token_command: a script in a directory of its own, its `mode` file
 * beside it ("ok", "fail", "garbage"); each run appends a line to `runs`. */
static const char tok_script[] =
	"#!/bin/sh\n"
	"d=$(dirname \"$0\")\n"
	"echo run >> \"$d/runs\"\n"
	/* what the helper inherited (issue 37 item 4): its descriptors, its env */
	/* in a subshell: the redirection is the child's, so the list is of the
	 * shell's descriptors as the daemon left them */
	"(ls -l /proc/$$/fd) > \"$d/fds\"\n"
	"env > \"$d/env\"\n"
	"case \"$(cat \"$d/mode\" 2>/dev/null)\" in\n"
	"fail) echo 'tok.sh: the signer is unreachable' >&2; exit 3;;\n"
	"garbage) echo '<html>s3cr3t-garbage</html>'; exit 0;;\n"
	"esac\n"
	"now=$(date +%s); exp=$((now + $1))\n"
	"b64() { printf '%s' \"$1\" | base64 -w0 | tr '+/' '-_' | tr -d '='; }\n"
	"h=$(b64 '{\"alg\":\"none\",\"typ\":\"JWT\"}')\n"
	"p=$(b64 \"{\\\"sub\\\":\\\"warrantd\\\",\\\"exp\\\":$exp,\\\"jti\\\":\\\"$$\\\"}\")\n"
	"printf '{\"token\": \"%s.%s.x\", \"expires_in\": %s}\\n' \"$h\" \"$p\" \"$1\"\n";

static void
set_mode(const char *mode)
{
	char path[512];

	snprintf(path, sizeof path, "%s/mode", tok_dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", mode);
	assert_int_equal(fclose(f), 0);
}

/* The script under a fresh directory; returns its path (caller frees). */
static char *
write_tok_script(void)
{
	char *dir = h_write_file("rt-mkdir-probe", "");
	char path[512];

	assert_non_null(dir);
	*strrchr(dir, '/') = '\0';
	snprintf(path, sizeof path, "%s/rtok", dir);
	free(dir);
	if (mkdir(path, 0700) != 0 && errno != EEXIST)
		fail_msg("mkdir %s: %s", path, strerror(errno));
	tok_dir = strdup(path);
	snprintf(path, sizeof path, "%s/tok.sh", tok_dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(tok_script, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, 0700), 0);
	set_mode("ok");
	return strdup(path);
}

/* Issue 37 item 4: the last token_command run (made while the daemon held
 * authenticated Redis connections) had stdin, stdout and stderr and nothing
 * else of the daemon's -- no socket, no pipe but its stdout -- and an
 * environment without the daemon's variables. */
static void
assert_helper_inherited_nothing(void)
{
	char path[512], line[512];

	snprintf(path, sizeof path, "%s/fds", tok_dir);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	int fds = 0;
	/* "l-wx------ 1 root root 64 Dec  7 11:56 1 -> pipe:[613855]" a line;
	 * besides 0-2, only the script that the shell reads is open */
	while (fgets(line, sizeof line, f) != NULL) {
		char *arrow = strstr(line, " -> ");
		if (arrow == NULL)
			continue;
		fds++;
		char *fd = arrow;
		while (fd > line && fd[-1] != ' ')
			fd--;
		if (strncmp(fd, "1 ", 2) != 0 &&
		    (strstr(arrow, "socket:") != NULL || strstr(arrow, "pipe:") != NULL))
			fail_msg("token_command inherited a descriptor: %s", line);
	}
	fclose(f);
	assert_true(fds >= 3);
	snprintf(path, sizeof path, "%s/env", tok_dir);
	f = fopen(path, "r");
	assert_non_null(f);
	int has_path = 0;
	while (fgets(line, sizeof line, f) != NULL) {
		if (strncmp(line, "WARRANTD_ITEST_LEAK=", 20) == 0 ||
		    strncmp(line, "ASAN_OPTIONS=", 13) == 0)
			fail_msg("token_command inherited the daemon's environment: %s", line);
		has_path |= strncmp(line, "PATH=", 5) == 0;
	}
	fclose(f);
	assert_true(has_path);
}

/* The daemon on the gate (TCP), with redis_extra and sections added. */
static void
daemon_up(const char *redis_extra, const char *sections, int block_ms)
{
	char sock_line[300], tcp[128];
	struct h_daemon_opts o = {
		.redis_sock = redis.sock, .target_url = target.url, .redis_extra = redis_extra,
		.sections = sections, .block_ms = block_ms,
	};
	char *ini = h_daemon_ini(&o);

	assert_non_null(ini);
	snprintf(sock_line, sizeof sock_line, "socket = %s\n", redis.sock);
	snprintf(tcp, sizeof tcp, "host = 127.0.0.1\nport = %d\n", gate.port);
	char *at = strstr(ini, sock_line);
	assert_non_null(at);
	size_t head = (size_t)(at - ini), tail = strlen(at + strlen(sock_line));
	char *text = malloc(head + strlen(tcp) + tail + 1);
	assert_non_null(text);
	memcpy(text, ini, head);
	memcpy(text + head, tcp, strlen(tcp));
	memcpy(text + head + strlen(tcp), at + strlen(sock_line), tail + 1);
	free(ini);
	int r = h_daemon_start(&dmn, text);
	free(text);
	if (r != 0)
		fail_msg("warrantd did not get ready (log %s)", dmn.log);
}

static char *
hb_str(const char *name)
{
	return h_hget(rc, PREFIX ":consumer:w1", name);
}

static long long
hb_int(const char *name)
{
	char *v = hb_str(name);
	long long n = v ? strtoll(v, NULL, 10) : -1;

	free(v);
	return n;
}

static void
decide(const char *id)
{
	long long now = h_now_ms();
	char *json = h_record_json(id, "gate.open", "lock/7", now - 1000, now + 3600 * 1000LL, 0,
	    NULL);

	assert_non_null(json);
	assert_int_equal(h_decide(rc, PREFIX, id, json, 1), 0);
	free(json);
}

static char *
state_of(const char *id)
{
	char key[128];

	snprintf(key, sizeof key, PREFIX ":decision:%s", id);
	return h_hget(rc, key, "state");
}

/* The ids "<prefix><i>", i from 0 to n - 1. */
struct ids {
	const char *prefix;
	int n;
};

static int
all_done(void *arg)
{
	const struct ids *w = arg;
	char id[64];

	for (int i = 0; i < w->n; i++) {
		snprintf(id, sizeof id, "%s%d", w->prefix, i);
		char *s = state_of(id);
		int done = s != NULL && strcmp(s, "done") == 0;
		free(s);
		if (!done)
			return 0;
	}
	return 1;
}

static void
wait_done(const char *prefix, int n)
{
	struct ids w = {prefix, n};

	if (h_wait_until(all_done, &w, WAIT_MS) != 0)
		fail_msg("not every job %s0..%d is done; log %s", prefix, n - 1, dmn.log);
}

static void
decide_n(const char *prefix, int n)
{
	char id[64];

	for (int i = 0; i < n; i++) {
		snprintf(id, sizeof id, "%s%d", prefix, i);
		decide(id);
	}
}

/* Each Idempotency-Key the target saw: called exactly once. */
static void
assert_each_called_once(long long want)
{
	json_t *s = h_fake_json(&target, "/_stats");
	json_t *keys = json_object_get(s, "keys"), *v;
	const char *k;
	long long n = 0;

	json_object_foreach(keys, k, v) {
		if (json_integer_value(v) != 1)
			fail_msg("%s called %lld times", k, (long long)json_integer_value(v));
		n++;
	}
	json_decref(s);
	if (n != want)
		fail_msg("%lld jobs called, want %lld", n, want);
}

static void
assert_counters_clean(void)
{
	static const char *const zero[] = {"failed", "dead", "retried", "redispatched",
	    "redisAuthFailures"};

	for (size_t i = 0; i < sizeof zero / sizeof zero[0]; i++)
		if (hb_int(zero[i]) != 0)
			fail_msg("heartbeat %s = %lld, want 0 (log %s)", zero[i], hb_int(zero[i]),
			    dmn.log);
}

struct hb_at_least {
	const char *name;
	long long min;
};

static int
hb_reached(void *arg)
{
	const struct hb_at_least *w = arg;
	return hb_int(w->name) >= w->min;
}

static void
wait_hb(const char *name, long long min)
{
	struct hb_at_least w = {name, min};

	if (h_wait_until(hb_reached, &w, WAIT_MS) != 0)
		fail_msg("heartbeat %s = %lld, want >= %lld (log %s)", name, hb_int(name), min,
		    dmn.log);
}

static int
log_count(const char *needle)
{
	char *text = h_read_file(dmn.log);
	int n = 0;

	for (const char *p = text; p && (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	free(text);
	return n;
}

struct log_wait {
	const char *needle;
	int min;
};

static int
log_reached(void *arg)
{
	const struct log_wait *w = arg;
	return log_count(w->needle) >= w->min;
}

static void
wait_log_count(const char *needle, int min)
{
	struct log_wait w = {needle, min};

	if (h_wait_until(log_reached, &w, WAIT_MS) != 0)
		fail_msg("%d of \"%s\" in %s, want %d", log_count(needle), needle, dmn.log, min);
}

/* ------------------------------------------------------------------ */
/* the tests                                                            */

/*
 * 5 s tokens from token_command over LOAD_RUN_MS of jobs: every connection
 * (the blocking read's too: block_ms 1000) re-authenticated before its
 * token's exp -- the gate enforced nothing -- and no error reached a job.
 */
static void
test_command_tokens_under_load(void **state)
{
	char extra[1024], id[64];
	(void)state;

	world_up("noauth");
	char *script = write_tok_script();
	snprintf(extra, sizeof extra, "auth = command\nusername = warrantd\n"
	    "token_command = %s 5\n", script);
	free(script);
	setenv("WARRANTD_ITEST_LEAK", "not-for-helpers", 1);
	daemon_up(extra, NULL, 1000);
	unsetenv("WARRANTD_ITEST_LEAK");
	int n = 0;
	for (long long t0 = h_now_ms(); h_now_ms() - t0 < LOAD_RUN_MS; n++) {
		snprintf(id, sizeof id, "load-%d", n);
		decide(id);
		pause_ms(LOAD_EVERY_MS);
	}
	wait_done("load-", n);
	assert_each_called_once(n);
	long long enforced = gate_stat("enforced"), reauths = gate_stat("reauths");
	long long refreshes = hb_int("redisAuthRefreshes");
	printf("itest_redis_auth: %d jobs in %d s, %lld tokens, %lld re-AUTHs, %lld enforced\n",
	    n, LOAD_RUN_MS / 1000, refreshes, reauths, enforced);
	if (enforced != 0)
		fail_msg("the gate enforced %lld expiries (log %s, gate log %s)", enforced, dmn.log,
		    gate.log);
	/* about one token every 3 s, each sent on at least the two connections */
	if (refreshes < LOAD_RUN_MS / 5000 || reauths < 2 * (LOAD_RUN_MS / 5000))
		fail_msg("%lld tokens, %lld re-AUTHs: too few for %d s of 5 s tokens", refreshes,
		    reauths, LOAD_RUN_MS / 1000);
	assert_counters_clean();
	assert_int_equal(gate_stat("noauth"), 0);
	assert_helper_inherited_nothing();
	char *ts = hb_str("redisTokenState");
	assert_non_null(ts);
	assert_string_equal(ts, "valid");
	free(ts);
	assert_int_equal(h_daemon_stop_clean(&dmn), 1);
}

/*
 * token_command fails, then prints garbage: one clear line for each (the
 * reason, never the output), the old token used while it lives (a job still
 * runs, the gate enforces nothing), and a good run afterwards takes over.
 */
static void
test_command_fails_old_token_kept(void **state)
{
	char extra[1024];
	(void)state;

	world_up("close");
	char *script = write_tok_script();
	/* 30 s tokens: the refresh is due at 22.5 s at the latest (ratio
	 * 0.75), 7.5 s before the token dies: room for a failed run, a
	 * garbage one and the backoff between them */
	snprintf(extra, sizeof extra, "auth = command\nusername = warrantd\n"
	    "token_command = %s 30\n", script);
	free(script);
	daemon_up(extra, NULL, 1000);	/* ready: the first token came */
	set_mode("fail");		/* so the refresh fails */
	decide_n("before-", 1);
	wait_done("before-", 1);
	wait_log_count("token_command exited with status 3\" failures=1 ", 1);
	if (!h_daemon_log_has(&dmn, "status 3\" failures=1 retry_ms="))
		fail_msg("no token_error line for the failed run in %s", dmn.log);
	set_mode("garbage");
	wait_log_count("token_command printed garbage: the output is not a JSON object", 1);
	if (h_daemon_log_has(&dmn, "s3cr3t-garbage"))
		fail_msg("the command's output reached the log %s", dmn.log);
	decide_n("during-", 1);	/* the old token still lives: the job runs */
	wait_done("during-", 1);
	/* each failure said the old token is still held, and reading never
	 * stopped for want of one */
	if (log_count("held=1 held_expires_in_ms=") < 2 || log_count("held=0 ") > 0 ||
	    h_daemon_log_has(&dmn, "reason=no-redis-token"))
		fail_msg("the old token was not kept while good (log %s)", dmn.log);
	set_mode("ok");
	wait_log_count("event=redis.token_refreshed", 2);
	decide_n("after-", 1);
	wait_done("after-", 1);
	assert_int_equal(gate_stat("enforced"), 0);
	assert_each_called_once(3);
	assert_counters_clean();
	/* warrantctl gets its token the same way, through the same gate */
	long long auths = gate_stat("auths");
	char *out = NULL;
	char *const ctl[] = {(char *)h_bin("warrantctl"), (char *)"-c", dmn.ini, (char *)"status",
	    (char *)"--json", NULL};
	int st = h_run(ctl, WAIT_MS, &out);
	/* the consumer's heartbeat, as --json gives it (compact) */
	if (st != 0 || out == NULL || !strstr(out, "\"redisTokenState\":\"valid\""))
		fail_msg("warrantctl status: %d\n%s", st, out ? out : "");
	free(out);
	assert_true(gate_stat("auths") > auths);
	assert_int_equal(h_daemon_stop_clean(&dmn), 1);
}

/*
 * auth = oauth, the IdP down across a 5 s Redis token's expiry (the gate
 * closes connections at expiry): reading stops (nothing new is taken in
 * hand), nothing is lost, and work resumes once the IdP is back.
 */
static void
test_idp_down_across_expiry(void **state)
{
	char sections[2048], id[64];
	(void)state;

	world_up("close");
	char *secret = h_write_file("rt-client-secret", "rt-S3cr3t\n");
	assert_non_null(secret);
	const char *idp_args[] = {"--jwt-secret-file", h_data("test-hs256.secret"), "--client-id",
	    CLIENT_ID, "--client-secret-file", secret, "--redis-scope", REDIS_SCOPE,
	    "--redis-lifetime-s", "5", NULL};
	assert_int_equal(h_fake_start(&idp, "fake_idp", idp_args), 0);
	snprintf(sections, sizeof sections, "[oauth]\ntoken_url = %s/token\nclient_id = %s\n"
	    "client_secret_file = %s\nmin_refresh_interval_ms = 200\n", idp.url, CLIENT_ID, secret);
	free(secret);
	daemon_up("auth = oauth\nusername = 00000000-0000-0000-0000-00000000abcd\n"
	    "token_scope = " REDIS_SCOPE "\n", sections, 1000);
	decide_n("first-", 1);
	wait_done("first-", 1);
	assert_true(h_fake_post(&idp, "/_down", NULL) == 200);
	assert_int_equal(h_daemon_wait_log(&dmn, "reason=no-redis-token", WAIT_MS), 0);
	decide_n("held-", 5);
	/* reading has stopped: nothing is taken in hand while the IdP is down */
	pause_ms(2000);
	assert_int_equal(h_pending_count(rc, JOBS, GROUP), 0);
	for (int i = 0; i < 5; i++) {
		snprintf(id, sizeof id, "held-%d", i);
		char *s = state_of(id);
		assert_non_null(s);
		assert_string_equal(s, "queued");
		free(s);
	}
	assert_true(h_fake_post(&idp, "/_up", NULL) == 200);
	wait_done("held-", 5);
	assert_each_called_once(6);
	assert_int_equal(h_pending_count(rc, JOBS, GROUP), 0);
	wait_hb("redisAuthRefreshes", 2);
	assert_int_equal(h_daemon_stop_clean(&dmn), 1);
}

/* The target has received at least `n` calls (its delayed answers are
 * still to come). */
static int
target_got(void *arg)
{
	json_t *s = h_fake_json(&target, "/_stats");
	long long total = s ? (long long)json_integer_value(json_object_get(s, "total")) : -1;

	json_decref(s);
	return total >= *(const long long *)arg;
}

/*
 * R20: the Redis token is revoked early (GATE.REVOKE) while 50 calls are in
 * flight at a slow target, and the next token cannot be had until they have
 * all answered: their completions meet the revoked credential (-NOAUTH, or
 * connections closed and AUTH refused), are held, and once a token is back
 * each entry is claimed back to this consumer before its write goes again.
 * Every call made once (counted by Idempotency-Key = record id), every job
 * done, the PEL empty.
 */
static void
revoked_in_flight(const char *on_expiry)
{
	char extra[1024];
	const long long n = 50;

	world_up(on_expiry);
	char *script = write_tok_script();
	/* 120 s tokens: no refresh of their own during the test */
	snprintf(extra, sizeof extra, "auth = command\nusername = warrantd\n"
	    "token_command = %s 120\n", script);
	free(script);
	assert_int_equal(h_fake_script(&target, "{\"default\": {\"status\": 204, "
	    "\"delay_ms\": 1500}}"), 0);	/* the action timeout is 2 s */
	daemon_up(extra, NULL, 1000);
	decide_n("rv-", (int)n);
	if (h_wait_until(target_got, (void *)&n, WAIT_MS) != 0)
		fail_msg("the target did not get %lld calls (log %s)", n, dmn.log);
	set_mode("fail");	/* no new token until every completion has met the old one */
	redisContext *g = h_redis_connect_tcp(gate.port);
	assert_non_null(g);
	char *ok = h_redis_str(g, "GATE.REVOKE");
	redisFree(g);
	assert_non_null(ok);
	free(ok);
	/* every completion was refused and is held; nothing written meanwhile */
	wait_log_count("event=job.redis_auth_held ", (int)n);
	assert_int_equal(h_pending_count(rc, JOBS, GROUP), n);
	set_mode("ok");
	wait_done("rv-", (int)n);
	assert_each_called_once(n);
	assert_int_equal(h_pending_count(rc, JOBS, GROUP), 0);
	/* each entry claimed back to us before its write went again */
	if (log_count("event=job.redis_auth_reclaim ") < n || log_count("owner=another") > 0)
		fail_msg("%d reclaims, want %lld, none another's (log %s)",
		    log_count("event=job.redis_auth_reclaim "), n, dmn.log);
	wait_hb("redispatched", n);
	assert_true(hb_int("redisAuthFailures") > 0);
	printf("itest_redis_auth: revoked (%s) with %lld calls in flight: %d held, %d reclaimed, "
	    "gate noauth=%lld wrongpass=%lld enforced=%lld\n", on_expiry, n,
	    log_count("event=job.redis_auth_held "), log_count("event=job.redis_auth_reclaim "),
	    gate_stat("noauth"), gate_stat("wrongpass"), gate_stat("enforced"));
	assert_true(gate_stat("enforced") > 0);
	assert_int_equal(h_daemon_stop_clean(&dmn), 1);
}

static void
test_revoked_in_flight_noauth(void **state)
{
	(void)state;
	revoked_in_flight("noauth");
}

static void
test_revoked_in_flight_close(void **state)
{
	(void)state;
	revoked_in_flight("close");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_revoked_in_flight_noauth, world_down),
		cmocka_unit_test_teardown(test_revoked_in_flight_close, world_down),
		cmocka_unit_test_teardown(test_command_fails_old_token_kept, world_down),
		cmocka_unit_test_teardown(test_idp_down_across_expiry, world_down),
		cmocka_unit_test_teardown(test_command_tokens_under_load, world_down),
	};

	if (getenv("ITEST_FILTER") != NULL)	/* one test while working on it */
		cmocka_set_test_filter(getenv("ITEST_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
