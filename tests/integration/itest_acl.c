/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_acl: conf/redis-acl.conf (README "Redis", ACLs) on a real redis-server.
 *
 * The shipped file has no passwords (nobody can log in until an operator adds
 * one); the test gives each user one, and turns the `default` user into an
 * unrestricted one for its own inspection connection (the harness's PING and
 * our reads). Then:
 *   - warrantd runs as `warrantd` and `warrantctl decide` as `decider`: a job
 *     and a scheduled job are done, and the daemon's log holds no NOPERM;
 *   - `monitor` reads the PEL depth (XPENDING) and `warrantctl status`, and
 *     can write nothing;
 *   - `decider` cannot read the group, acknowledge, or write the worker's
 *     streams and heartbeats, or a record's P:final mark (R4);
 *   - `warrantd` cannot delete keys, touch another prefix or drop the group;
 *     and — the limit of ACLs — it CAN overwrite a record's hash, whose
 *     integrity against it rests on the signature alone.
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

#include "harness.h"

#define ACL_FILE "conf/redis-acl.conf"

static struct h_redis R;
static redisContext *C;		/* `default`, unrestricted in this test */
static struct h_fake target;
static struct h_daemon dmn;
static char *decider_ini, *monitor_ini, *pw_file[3];
static const char *const users[3] = {"warrantd", "decider", "monitor"};

/* The shipped ACL file with a password per user (the user's name + "-pw")
 * and an unrestricted default user; caller frees the path. */
static char *
test_acl_file(void)
{
	char *shipped = h_read_file(ACL_FILE), *out, *save = NULL;
	size_t cap;

	if (shipped == NULL) {
		fprintf(stderr, "%s not found (run from the repository root)\n", ACL_FILE);
		return NULL;
	}
	cap = strlen(shipped) + 1024;
	out = calloc(1, cap);
	for (char *l = strtok_r(shipped, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char name[64] = "";
		sscanf(l, "user %63s", name);
		if (strcmp(name, "default") == 0)
			strcat(out, "user default on nopass ~* &* +@all");
		else
			snprintf(out + strlen(out), cap - strlen(out), "%s >%s-pw", l, name);
		strcat(out, "\n");
	}
	free(shipped);
	char *path = h_write_file("test.acl", out);
	free(out);
	return path;
}

static char *
user_ini(const char *user, const char *pw_path)
{
	char redis[PATH_MAX + 64], name[64];
	struct h_daemon_opts o = {.redis_sock = R.sock, .target_url = target.url,
	    .redis_extra = redis};

	snprintf(redis, sizeof redis, "username = %s\npassword_file = %s\n", user, pw_path);
	char *text = h_daemon_ini(&o);
	snprintf(name, sizeof name, "%s.ini", user);
	char *path = text ? h_write_file(name, text) : NULL;
	free(text);
	return path;
}

static int
setup(void **state)
{
	char conf[PATH_MAX + 16], pw[64], name[64];
	(void)state;

	char *acl = test_acl_file();
	if (acl == NULL)
		return -1;
	snprintf(conf, sizeof conf, "aclfile %s\n", acl);
	free(acl);
	if (h_redis_start_conf(&R, 0, conf) != 0 || (C = h_redis_connect(&R)) == NULL ||
	    h_fake_start(&target, "fake_target", NULL) != 0)
		return -1;
	for (int i = 0; i < 3; i++) {
		snprintf(pw, sizeof pw, "%s-pw\n", users[i]);
		snprintf(name, sizeof name, "%s.password", users[i]);
		if ((pw_file[i] = h_write_file(name, pw)) == NULL)
			return -1;
	}
	char *worker_ini = user_ini("warrantd", pw_file[0]);
	decider_ini = user_ini("decider", pw_file[1]);
	monitor_ini = user_ini("monitor", pw_file[2]);
	if (worker_ini == NULL || decider_ini == NULL || monitor_ini == NULL)
		return -1;
	char *text = h_read_file(worker_ini);
	int rc = text ? h_daemon_start(&dmn, text) : -1;
	free(text);
	free(worker_ini);
	return rc;
}

static int
teardown(void **state)
{
	(void)state;
	h_daemon_stop(&dmn);
	h_fake_stop(&target);
	if (C)
		redisFree(C);
	h_redis_stop(&R);
	free(decider_ini);
	free(monitor_ini);
	for (int i = 0; i < 3; i++)
		free(pw_file[i]);
	return 0;
}

/* A client logged in as `user`; caller frees. */
static redisContext *
login(const char *user)
{
	redisContext *c = redisConnectUnix(R.sock);
	char pw[64];

	assert_non_null(c);
	assert_int_equal(c->err, 0);
	snprintf(pw, sizeof pw, "%s-pw", user);
	redisReply *r = redisCommand(c, "AUTH %s %s", user, pw);
	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_STATUS);
	freeReplyObject(r);
	return c;
}

/* `cmd` (no arguments with spaces) is refused by the ACL (NOPERM), or
 * allowed (any other reply). */
static void
expect_acl(redisContext *c, int allowed, const char *what, const char *cmd)
{
	char buf[256], *argv[16], *save = NULL;
	int argc = 0;

	snprintf(buf, sizeof buf, "%s", cmd);
	for (char *w = strtok_r(buf, " ", &save); w && argc < 16; w = strtok_r(NULL, " ", &save))
		argv[argc++] = w;
	redisReply *r = redisCommandArgv(c, argc, (const char **)argv, NULL);
	assert_non_null(r);
	int denied = r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOPERM", 6) == 0;
	if (denied == allowed)
		fail_msg("%s: %s (%s)", what, allowed ? "refused" : "allowed",
		    r->type == REDIS_REPLY_ERROR ? r->str : "no error");
	freeReplyObject(r);
}

/* Runs warrantctl -c ini args...; the exit code, its output in *out. */
static int
ctl(char **out, const char *ini, ...)
{
	static int seq;
	char *argv[40], log[PATH_MAX];
	int n = 0, status = 0;
	va_list ap;

	argv[n++] = (char *)h_bin("warrantctl");
	argv[n++] = "-c";
	argv[n++] = (char *)ini;
	va_start(ap, ini);
	while (n < 39 && (argv[n] = va_arg(ap, char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	snprintf(log, sizeof log, "%s/ctl-acl-%d.out", h_tmpdir(), ++seq);
	pid_t pid = h_spawn(log, argv);
	assert_true(pid > 0);
	assert_int_equal(h_wait_exit(pid, 30000, &status), 0);
	*out = h_read_file(log);
	if (!WIFEXITED(status))
		fail_msg("warrantctl %s: killed by signal %d: %s", argv[3], WTERMSIG(status),
		    *out ? *out : "");
	return WEXITSTATUS(status);
}

struct state_wait {
	const char *id, *want;
};

static int
state_is(void *arg)
{
	const struct state_wait *w = arg;
	char key[128];

	snprintf(key, sizeof key, "warrant:decision:%s", w->id);
	char *st = h_hget(C, key, "state");
	int ok = st != NULL && strcmp(st, w->want) == 0;
	free(st);
	return ok;
}

static void
decide(const char *id, const char *not_before)
{
	char *out;
	int rc = not_before == NULL ?
	    ctl(&out, decider_ini, "decide", "--on-behalf-of", "operator:4417", "--action",
	    "gate.open", "--resource", "canal/gate-1", "--basis", "rule:acl", "--expires", "+1h",
	    "--key", h_data("test-es256.key"), "--id", id, NULL) :
	    ctl(&out, decider_ini, "decide", "--on-behalf-of", "operator:4417", "--action",
	    "gate.open", "--resource", "canal/gate-2", "--basis", "rule:acl", "--expires", "+1h",
	    "--not-before", not_before, "--key", h_data("test-es256.key"), "--id", id, NULL);
	if (rc != 0)
		fail_msg("warrantctl decide as decider: exit %d: %s", rc, out ? out : "");
	free(out);
}

/* warrantd as `warrantd`, warrantctl decide as `decider`: both work,
 * scheduled jobs included (the promoter's script), with no NOPERM. */
static void
test_worker_and_decider_work(void **state)
{
	struct state_wait now = {"acl-now", "done"}, later = {"acl-later", "done"};
	(void)state;

	decide(now.id, NULL);
	decide(later.id, "+1s");
	if (h_wait_until(state_is, &now, 30000) != 0 || h_wait_until(state_is, &later, 30000) != 0) {
		char *a = h_hget(C, "warrant:decision:acl-now", "state");
		char *b = h_hget(C, "warrant:decision:acl-later", "state");
		fail_msg("jobs not done under the ACL users: acl-now %s, acl-later %s, "
		    "scheduled %lld, pending %lld (log %s)", a ? a : "(none)", b ? b : "(none)",
		    h_redis_int(C, "ZCARD warrant:scheduled"),
		    h_pending_count(C, "warrant:jobs", "workers"), dmn.log);
	}
	assert_int_equal(h_pending_count(C, "warrant:jobs", "workers"), 0);
	/* a heartbeat and a lease renewal have run by now */
	assert_int_equal(h_daemon_wait_log(&dmn, "event=consumer.ready", 1000), 0);
	/* refused directly (NOPERM) or inside a script (ERR ... can't run) */
	if (h_daemon_log_has(&dmn, "NOPERM") || h_daemon_log_has(&dmn, "can't run this command"))
		fail_msg("warrantd ran a command its ACL user may not (log %s)", dmn.log);
}

/* What one user may and may not run: {allowed, what, command}. */
struct acl_case {
	int allowed;
	const char *what, *cmd;
};

static void
expect_cases(const char *user, const struct acl_case *c, size_t n)
{
	redisContext *r = login(user);

	for (size_t i = 0; i < n; i++)
		expect_acl(r, c[i].allowed, c[i].what, c[i].cmd);
	redisFree(r);
}

/* The monitor reads what README's redis-cli lines and warrantctl status
 * read, the PEL depth first, and writes nothing. */
static void
test_monitor_reads_only(void **state)
{
	static const struct acl_case cases[] = {
		{1, "XPENDING (PEL depth)", "XPENDING warrant:jobs workers"},
		{1, "XINFO GROUPS", "XINFO GROUPS warrant:jobs"},
		{1, "HGETALL heartbeat", "HGETALL warrant:consumer:w1"},
		{1, "XREVRANGE dead", "XREVRANGE warrant:dead + - COUNT 10"},
		{0, "XADD jobs", "XADD warrant:jobs * id forged"},
		{0, "HSET record", "HSET warrant:decision:acl-now state queued"},
		{0, "XACK", "XACK warrant:jobs workers 0-1"},
		{0, "DEL", "DEL warrant:dead"},
		{0, "EVAL", "EVAL return 0"},
	};
	char *out;
	(void)state;

	expect_cases("monitor", cases, sizeof cases / sizeof cases[0]);
	int rc = ctl(&out, monitor_ini, "status", NULL);
	if (rc != 0)
		fail_msg("warrantctl status as monitor: exit %d: %s", rc, out ? out : "");
	free(out);
}

/* The decider writes records and enqueues; it cannot consume, acknowledge,
 * or write the worker's streams and heartbeats, or read a record back. */
static void
test_decider_limits(void **state)
{
	static const struct acl_case cases[] = {
		{0, "XREADGROUP", "XREADGROUP GROUP workers x COUNT 1 STREAMS warrant:jobs >"},
		{0, "XACK", "XACK warrant:jobs workers 0-1"},
		{0, "XCLAIM", "XCLAIM warrant:jobs workers x 0 0-1"},
		{0, "XADD dead", "XADD warrant:dead * id x reason forged"},
		{0, "XADD audit", "XADD warrant:audit * id x"},
		{0, "HSET heartbeat", "HSET warrant:consumer:w1 done 0"},
		{0, "DEL record", "DEL warrant:decision:acl-now"},
		{0, "HGETALL record", "HGETALL warrant:decision:acl-now"},
		/* R4: the terminal mark, which a record's `state` set back to
		 * queued does not outweigh */
		{0, "SET final", "SET warrant:final:acl-next queued"},
		{0, "DEL final", "DEL warrant:final:acl-now"},
		/* a command it has, on a key it must not touch */
		{0, "HSET final", "HSET warrant:final:acl-next state queued"},
	};
	(void)state;
	expect_cases("decider", cases, sizeof cases / sizeof cases[0]);

	/* nor from a script of its own: Redis checks the keys a script
	 * touches against the user that runs it */
	redisContext *c = login("decider");
	redisReply *r = redisCommand(c, "EVAL %s 1 %s",
	    "return redis.call('HSET', KEYS[1], 'state', 'queued')", "warrant:final:acl-now");
	assert_non_null(r);
	if (r->type != REDIS_REPLY_ERROR)
		fail_msg("decider: EVAL writing P:final was allowed");
	printf("itest_acl: decider's EVAL on P:final: %s\n", r->str);
	freeReplyObject(r);
	redisFree(c);
	char *mark = h_redis_str(C, "GET warrant:final:acl-now");
	assert_non_null(mark);
	assert_string_equal(mark, "done");
	free(mark);
}

/* The worker cannot delete, leave its prefix or drop the group. What ACL
 * key patterns cannot express: it writes state fields into the record's own
 * hash, so it can overwrite `record` too; only the signature stops that. */
static void
test_worker_limits(void **state)
{
	static const struct acl_case cases[] = {
		{0, "DEL record", "DEL warrant:decision:acl-now"},
		{0, "UNLINK", "UNLINK warrant:jobs"},
		{0, "FLUSHDB", "FLUSHDB"},
		{0, "KEYS", "KEYS *"},
		{0, "CONFIG", "CONFIG GET *"},
		{0, "XGROUP DESTROY", "XGROUP DESTROY warrant:jobs workers"},
		{0, "XGROUP SETID", "XGROUP SETID warrant:jobs workers $"},
		{0, "another prefix", "HSET other:decision:x record forged"},
		{0, "SCRIPT FLUSH", "SCRIPT FLUSH"},
		{1, "HSET record (the limit)", "HSET warrant:decision:acl-limit record forged"},
	};
	(void)state;
	expect_cases("warrantd", cases, sizeof cases / sizeof cases[0]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_worker_and_decider_work),
		cmocka_unit_test(test_monitor_reads_only),
		cmocka_unit_test(test_decider_limits),
		cmocka_unit_test(test_worker_limits),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
