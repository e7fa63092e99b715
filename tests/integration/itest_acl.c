/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_acl: conf/redis-acl.conf (README "Security model", HACKING "Redis
 * ACLs"; issue 23 item 2) on a real redis-server, with each of its users.
 *
 * The shipped file has no passwords (nobody can log in until an operator adds
 * one); the test gives each user one, and turns the `default` user into an
 * unrestricted one for its own inspection connection. Three times: as
 * shipped (prefix `warrant`), and with the key patterns rewritten as the
 * README tells an operator to, for `prefix = {warrant}`
 * (`sed 's/~warrant:/~{warrant}:/g'`) and for `[redis] shards = 2`
 * (`~{warrant:*}:`, the cases then on `{warrant:0}`). Each time:
 *   - warrantd runs as `warrantd` and `warrantctl --as decider decide` as
 *     `decider`: a job and a scheduled job are done, with no NOPERM logged;
 *   - `warrantctl --as operator dead requeue` puts a dead record back and the
 *     worker runs it again; `--as monitor` runs status, metrics, inspect and
 *     dead list, and cannot requeue; without --as, status, metrics and
 *     inspect log in as the monitor (the metrics timer passes no --as); the
 *     operator runs §11's job operations (jobs, retry, cancel, dead
 *     requeue/drop --all) and pause/resume, the monitor only jobs;
 *   - per user, what it can NOT do, each a NOPERM: the worker cannot expire
 *     or trim the queue, the audit or the dead letters, overwrite a key with
 *     SET, delete a record's field or write a stream that is not its own;
 *     the decider cannot write P:final (R4) or make a stream or sorted set of
 *     a decision key; the operator cannot delete a record or the queue; the
 *     monitor writes nothing;
 *   - and, asked with ACL DRYRUN so that nothing is erased, what ACLs cannot
 *     forbid (README): XADD's MAXLEN trims a stream the user may write, SET
 *     PX expires a mark, and a record's hash is writable whole.
 * No user can run code of its own in Redis (issue 37 item 3): EVAL,
 * EVALSHA, SCRIPT LOAD and FUNCTION LOAD are NOPERM for all four --
 * `EVAL "while true do end" 0` as the decider first among them -- and each
 * calls only the library's functions it needs (FCALL; the decider and the
 * operator by name), which an administrator loaded; the operator may
 * SCRIPT KILL and FUNCTION KILL.
 * A fourth time (test_cluster_users, issue 27 item 7) on a cluster of three
 * primaries with `shards = 3`: the worker and the decider work in every
 * shard and follow -ASK into a slot mid-migration (ASKING), the operator
 * pauses and resumes, the monitor reads; no NOPERM; the library is
 * loaded into every primary by `warrantctl functions load`, and a worker
 * refuses to start while one lacks it.
 * $WARRANTD_ACL_FILE replaces conf/redis-acl.conf (to show the cases red on
 * an older file).
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
#include <signal.h>
#include <sys/wait.h>

#include "core/store.h"
#include "redis/cluster.h"
#include "harness.h"

#define NUSERS 4

/* One Redis, its ACL file and a worker on it. */
struct deployment {
	const char *tag;	/* file names */
	const char *pattern;	/* what `~warrant:` becomes in the ACL file */
	const char *prefix;	/* P in the cases below */
	const char *ini_prefix;	/* [redis] prefix */
	const char *redis_extra;	/* [redis] lines beyond the user's */
	int shards;
	struct h_redis R;
	redisContext *C;	/* `default`, unrestricted in this test */
	struct h_daemon dmn;
	char *ini;		/* the worker's, with the [redis.ROLE] sections */
	char *ini_no_roles;
};

static struct deployment plain = {.tag = "plain", .pattern = "~warrant:", .prefix = "warrant",
    .ini_prefix = "warrant", .redis_extra = ""};
static struct deployment tagged = {.tag = "tagged", .pattern = "~{warrant}:",
    .prefix = "{warrant}", .ini_prefix = "{warrant}", .redis_extra = ""};
static struct deployment sharded = {.tag = "sharded", .pattern = "~{warrant:*}:",
    .prefix = "{warrant:0}", .ini_prefix = "warrant", .redis_extra = "shards = 2\n",
    .shards = 2};
static struct deployment *D;	/* the one the running group tests */
static struct h_fake target;
static const char *const users[NUSERS] = {"warrantd", "decider", "operator", "monitor"};
static char *pw_file[NUSERS];

/* The ACL file with `~warrant:` replaced by d->pattern (README: how an
 * operator adapts it to another prefix), a password per user (the user's
 * name + "-pw") and an unrestricted default user; caller frees the path. */
static char *
test_acl_file(const struct deployment *d)
{
	const char *src = getenv("WARRANTD_ACL_FILE") ? getenv("WARRANTD_ACL_FILE") :
	    "conf/redis-acl.conf";
	char *shipped = h_read_file(src), *out, *save = NULL, name[64];
	size_t cap;

	if (shipped == NULL) {
		fprintf(stderr, "%s not found (run from the repository root)\n", src);
		return NULL;
	}
	cap = 4 * strlen(shipped) + 1024;
	out = calloc(1, cap);
	for (char *l = strtok_r(shipped, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		name[0] = '\0';
		sscanf(l, "user %63s", name);
		if (strcmp(name, "default") == 0) {
			strcat(out, "user default on nopass ~* &* +@all\n");
			continue;
		}
		for (const char *p = l; *p; ) {
			if (strncmp(p, "~warrant:", 9) == 0) {
				strcat(out, d->pattern);
				p += 9;
			} else {
				strncat(out, p, 1);
				p++;
			}
		}
		snprintf(out + strlen(out), cap - strlen(out), " >%s-pw\n", name);
	}
	free(shipped);
	snprintf(name, sizeof name, "%s.acl", d->tag);
	char *path = h_write_file(name, out);
	free(out);
	return path;
}

/* The worker's INI (as `warrantd`), and with roles: a [redis.ROLE] section
 * for each other user, as warrantctl --as reads them. Caller frees. */
static char *
deployment_ini(const struct deployment *d, int roles)
{
	char redis[2 * PATH_MAX + 128], name[64], *text, *all;
	struct h_daemon_opts o = {.redis_sock = d->R.sock, .target_url = target.url,
	    .prefix = d->ini_prefix, .redis_extra = redis};
	size_t n;

	snprintf(redis, sizeof redis, "username = warrantd\npassword_file = %s\n%s", pw_file[0],
	    d->redis_extra);
	if ((text = h_daemon_ini(&o)) == NULL)
		return NULL;
	n = strlen(text) + 3 * (PATH_MAX + 96);
	if ((all = calloc(1, n)) == NULL) {
		free(text);
		return NULL;
	}
	strcpy(all, text);
	free(text);
	for (int i = 1; roles && i < NUSERS; i++)
		snprintf(all + strlen(all), n - strlen(all),
		    "\n[redis.%s]\nusername = %s\npassword_file = %s\n", users[i], users[i],
		    pw_file[i]);
	snprintf(name, sizeof name, "%s%s.ini", d->tag, roles ? "" : "-no-roles");
	char *path = h_write_file(name, all);
	free(all);
	return path;
}

static int
setup_deployment(struct deployment *d)
{
	char conf[PATH_MAX + 16], pw[64], name[64];

	D = d;
	if (target.pid == 0 && h_fake_start(&target, "fake_target", NULL) != 0)
		return -1;
	for (int i = 0; i < NUSERS; i++) {
		if (pw_file[i] != NULL)
			continue;
		snprintf(pw, sizeof pw, "%s-pw\n", users[i]);
		snprintf(name, sizeof name, "%s.password", users[i]);
		if ((pw_file[i] = h_write_file(name, pw)) == NULL)
			return -1;
	}
	char *acl = test_acl_file(d);
	if (acl == NULL)
		return -1;
	snprintf(conf, sizeof conf, "aclfile %s\n", acl);
	free(acl);
	if (h_redis_start_conf(&d->R, 0, conf) != 0 || (d->C = h_redis_connect(&d->R)) == NULL)
		return -1;
	d->ini = deployment_ini(d, 1);
	d->ini_no_roles = deployment_ini(d, 0);
	char *text = d->ini ? h_read_file(d->ini) : NULL;
	int rc = text && d->ini_no_roles ? h_daemon_start(&d->dmn, text) : -1;
	free(text);
	return rc;
}

static int
setup_plain(void **state)
{
	(void)state;
	return setup_deployment(&plain);
}

static int
setup_tagged(void **state)
{
	(void)state;
	return setup_deployment(&tagged);
}

static int
setup_sharded(void **state)
{
	(void)state;
	return setup_deployment(&sharded);
}

static int
teardown(void **state)
{
	(void)state;
	h_daemon_stop(&D->dmn);
	if (D->C)
		redisFree(D->C);
	h_redis_stop(&D->R);
	free(D->ini);
	free(D->ini_no_roles);
	return 0;
}

/* `P:...` in a command is the deployment's prefix; out holds the result. */
static void
expand(const char *in, char *out, size_t n)
{
	size_t w = 0;

	for (const char *p = in; *p && w + 1 < n; p++) {
		if (p[0] == 'P' && p[1] == ':' && (p == in || p[-1] == ' ')) {
			w += (size_t)snprintf(out + w, n - w, "%s", D->prefix);
			continue;
		}
		out[w++] = *p;
	}
	out[w < n ? w : n - 1] = '\0';
}

/* The key `P:what` of recordId id's shard (the shard that holds its hash;
 * without shards, the prefix), into buf; a `what` ending in ':' ("decision:")
 * is followed by the id. */
static const char *
key_of(const char *id, const char *what, char *buf, size_t n)
{
	char p[32];

	snprintf(p, sizeof p, "%s", D->prefix);
	for (int s = 0; s < D->shards; s++) {
		snprintf(p, sizeof p, "{warrant:%d}", s);
		if (h_redis_int(D->C, "EXISTS %s:decision:%s", p, id) == 1)
			break;
	}
	snprintf(buf, n, "%s:%s%s", p, what, what[strlen(what) - 1] == ':' ? id : "");
	return buf;
}

/* A client logged in as `user`; caller frees. */
static redisContext *
login(const char *user)
{
	redisContext *c = redisConnectUnix(D->R.sock);
	char pw[64];

	assert_non_null(c);
	assert_int_equal(c->err, 0);
	snprintf(pw, sizeof pw, "%s-pw", user);
	redisReply *r = redisCommand(c, "AUTH %s %s", user, pw);
	assert_non_null(r);
	if (r->type != REDIS_REPLY_STATUS)
		fail_msg("AUTH %s: %s", user, r->type == REDIS_REPLY_ERROR ? r->str : "?");
	freeReplyObject(r);
	return c;
}

/* A refusal by the ACL: directly (NOPERM), or of a command a script runs. */
static int
refused(const redisReply *r)
{
	return r->type == REDIS_REPLY_ERROR && (strncmp(r->str, "NOPERM", 6) == 0 ||
	    strstr(r->str, "The user executing the script") != NULL);
}

/* What one user may and may not run: {allowed, what, command}; `P:` is the
 * prefix. allowed 2: allowed, asked with ACL DRYRUN (it would erase what
 * other cases need); 3: refused, asked with ACL DRYRUN (run, it would hold
 * Redis if it were allowed). A command's words hold no spaces, except in an EVAL's
 * script, which is the word after EVAL and may hold them as '_'. */
struct acl_case {
	int allowed;
	const char *what, *cmd;
};

/* Runs every case as `user`; a mismatch is printed and counted, and the
 * test fails after all of them with the count. */
static void
expect_cases(const char *user, const struct acl_case *cases, size_t n)
{
	redisContext *c = login(user);
	size_t wrong = 0;

	for (size_t i = 0; i < n; i++) {
		char buf[512], *argv[20], *save = NULL;
		int argc = 0;

		int dry = cases[i].allowed >= 2;
		if (dry)
			argv[argc++] = "ACL", argv[argc++] = "DRYRUN", argv[argc++] = (char *)user;
		expand(cases[i].cmd, buf, sizeof buf);
		for (char *w = strtok_r(buf, " ", &save); w && argc < 20;
		    w = strtok_r(NULL, " ", &save))
			argv[argc++] = w;
		if (strcmp(argv[dry ? 3 : 0], "EVAL") == 0)
			for (char *p = argv[dry ? 4 : 1]; *p; p++)
				if (*p == '_')
					*p = ' ';
		redisReply *r = redisCommandArgv(dry ? D->C : c, argc, (const char **)argv, NULL);
		assert_non_null(r);
		int dry_ok = r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0;
		int ok = cases[i].allowed == 2 ? dry_ok : cases[i].allowed == 3 ? !dry_ok :
		    cases[i].allowed != refused(r);
		if (!ok) {
			print_message("%s [%s] %s: %s, wanted %s (%s)\n", user, D->tag,
			    cases[i].what, cases[i].allowed % 3 ? "refused" : "allowed",
			    cases[i].allowed % 3 ? "allowed" : "NOPERM",
			    r->type == REDIS_REPLY_ERROR || r->type == REDIS_REPLY_STRING ||
			    r->type == REDIS_REPLY_STATUS ? r->str : "no error");
			wrong++;
		}
		freeReplyObject(r);
	}
	redisFree(c);
	if (wrong > 0)
		fail_msg("%s [%s]: %zu of %zu cases wrong", user, D->tag, wrong, n);
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

/* warrantctl --as ROLE ... exits 0; its output is freed. */
#define CTL_OK(...) do { \
	char *out_; \
	int rc_ = ctl(&out_, D->ini, __VA_ARGS__, (char *)NULL); \
	if (rc_ != 0) \
		fail_msg("[%s] warrantctl %s: exit %d: %s", D->tag, #__VA_ARGS__, rc_, \
		    out_ ? out_ : ""); \
	free(out_); \
} while (0)

struct state_wait {
	const char *id, *want;
};

static int
state_is(void *arg)
{
	const struct state_wait *w = arg;
	char key[128];

	char *st = h_hget(D->C, key_of(w->id, "decision:", key, sizeof key), "state");
	int ok = st != NULL && strcmp(st, w->want) == 0;
	free(st);
	return ok;
}

static void
wait_state(const char *id, const char *want)
{
	struct state_wait w = {id, want};

	if (h_wait_until(state_is, &w, 30000) != 0)
		fail_msg("[%s] %s is not %s (log %s)", D->tag, id, want, D->dmn.log);
}

static void
decide(const char *id, const char *not_before)
{
	if (not_before == NULL)
		CTL_OK("--as", "decider", "decide", "--on-behalf-of", "operator:4417", "--action",
		    "gate.open", "--resource", "canal/gate-1", "--basis", "rule:acl", "--expires",
		    "+1h", "--key", h_data("test-es256.key"), "--id", id);
	else
		CTL_OK("--as", "decider", "decide", "--on-behalf-of", "operator:4417", "--action",
		    "gate.open", "--resource", "canal/gate-2", "--basis", "rule:acl", "--expires",
		    "+1h", "--not-before", not_before, "--key", h_data("test-es256.key"), "--id",
		    id);
}

/* warrantd as `warrantd`, warrantctl decide as `decider`: both work,
 * scheduled jobs included (the promoter's script), with no NOPERM. */
static void
test_worker_and_decider_work(void **state)
{
	(void)state;

	decide("acl-now", NULL);
	decide("acl-later", "+1s");
	wait_state("acl-now", "done");
	wait_state("acl-later", "done");
	/* a heartbeat and a lease renewal have run by now */
	assert_int_equal(h_daemon_wait_log(&D->dmn, "event=consumer.ready", 1000), 0);
	/* refused directly (NOPERM) or inside a script */
	if (h_daemon_log_has(&D->dmn, "NOPERM") || h_daemon_log_has(&D->dmn, "can't run") ||
	    h_daemon_log_has(&D->dmn, "can't access") || h_daemon_log_has(&D->dmn, "no permissions"))
		fail_msg("[%s] warrantd ran a command its ACL user may not (log %s)", D->tag,
		    D->dmn.log);
}

/* Makes done record `id` dead, as the worker would have: state, mark, a
 * dead letter. */
static void
make_dead(const char *id)
{
	char hash[128], fin[128], dead[128];

	key_of(id, "decision:", hash, sizeof hash);
	key_of(id, "final:", fin, sizeof fin);
	key_of(id, "dead", dead, sizeof dead);
	assert_true(h_redis_int(D->C, "HSET %s state dead", hash) >= 0);
	free(h_redis_str(D->C, "SET %s dead", fin));
	free(h_redis_str(D->C, "XADD %s * id %s streamId 1-1 reason too-many-deliveries "
	    "detail x deliveries 17 consumer w1 at 2026-01-01T00:00:00Z", dead, id));
}

/* The operator requeues a dead letter and the worker runs it again; the
 * monitor cannot; the operator drops one. */
static void
test_operator_requeues(void **state)
{
	char *out;
	(void)state;

	make_dead("acl-now");
	assert_int_equal(ctl(&out, D->ini, "--as", "monitor", "dead", "requeue", "acl-now",
	    (char *)NULL), 1);
	if (out == NULL || strstr(out, "NOPERM") == NULL)
		fail_msg("[%s] monitor's requeue: %s", D->tag, out ? out : "");
	free(out);
	CTL_OK("--as", "operator", "dead", "requeue", "acl-now");
	wait_state("acl-now", "done");
	make_dead("acl-later");
	CTL_OK("--as", "operator", "dead", "drop", "acl-later");
	char dead[128];
	assert_int_equal(h_redis_int(D->C, "XLEN %s", key_of("acl-later", "dead", dead,
	    sizeof dead)), 0);
}

/* §13: the operator pauses and resumes an action, the worker reads the
 * pause (no NOPERM), the monitor sees it in status and cannot pause. */
static void
test_operator_pauses(void **state)
{
	char *out;
	(void)state;

	assert_int_equal(ctl(&out, D->ini, "--as", "monitor", "pause", "gate.open",
	    (char *)NULL), 1);
	if (out == NULL || strstr(out, "NOPERM") == NULL)
		fail_msg("[%s] monitor's pause: %s", D->tag, out ? out : "");
	free(out);
	CTL_OK("--as", "operator", "pause", "gate.open");
	if (h_daemon_wait_log(&D->dmn, "event=gate.pauses paused=gate.open", 30000) != 0)
		fail_msg("[%s] the worker did not see the pause (log %s)", D->tag, D->dmn.log);
	assert_int_equal(ctl(&out, D->ini, "--as", "monitor", "status", "--json", (char *)NULL),
	    0);
	if (out == NULL || strstr(out, "\"gate.open\":\"by=") == NULL)
		fail_msg("[%s] status shows no pause: %s", D->tag, out ? out : "");
	free(out);
	CTL_OK("--as", "operator", "resume", "gate.open");
	if (h_daemon_wait_log(&D->dmn, "event=gate.pauses paused=-", 30000) != 0)
		fail_msg("[%s] the worker did not see the resume (log %s)", D->tag, D->dmn.log);
	if (h_daemon_log_has(&D->dmn, "event=gate.unreadable"))
		fail_msg("[%s] the worker could not read the pauses (log %s)", D->tag, D->dmn.log);
}

/* The monitor runs what a timer and a person on duty read. */
static void
test_monitor_reads(void **state)
{
	(void)state;

	CTL_OK("--as", "monitor", "status");
	if (D->shards)
		CTL_OK("--as", "monitor", "metrics", "--shard", "0");
	else
		CTL_OK("--as", "monitor", "metrics");
	CTL_OK("--as", "monitor", "inspect", "acl-now");
	CTL_OK("--as", "monitor", "dead", "list");
}

/* The job operations of §11 as the operator (retry, cancel, bulk dead
 * letters); the monitor lists jobs but changes nothing. */
static void
test_operator_job_ops(void **state)
{
	char *out, dead[128];
	(void)state;

	CTL_OK("--as", "monitor", "jobs");
	CTL_OK("--as", "operator", "jobs", "--state", "done");
	/* acl-later: dead, its letter dropped */
	assert_int_equal(ctl(&out, D->ini, "--as", "monitor", "retry", "acl-later",
	    (char *)NULL), 1);
	if (out == NULL || strstr(out, "NOPERM") == NULL)
		fail_msg("[%s] monitor's retry: %s", D->tag, out ? out : "");
	free(out);
	CTL_OK("--as", "operator", "retry", "acl-later");
	wait_state("acl-later", "done");
	/* scheduled an hour ahead: cancelled, and off the schedule */
	decide("acl-cancel", "+30m");
	assert_int_equal(ctl(&out, D->ini, "--as", "monitor", "cancel", "acl-cancel",
	    (char *)NULL), 1);
	if (out == NULL || strstr(out, "NOPERM") == NULL)
		fail_msg("[%s] monitor's cancel: %s", D->tag, out ? out : "");
	free(out);
	CTL_OK("--as", "operator", "cancel", "acl-cancel");
	wait_state("acl-cancel", "cancelled");
	/* in bulk */
	make_dead("acl-now");
	CTL_OK("--as", "operator", "dead", "requeue", "--all");
	wait_state("acl-now", "done");
	make_dead("acl-cancel");
	CTL_OK("--as", "operator", "dead", "drop", "--all");
	assert_int_equal(h_redis_int(D->C, "XLEN %s", key_of("acl-cancel", "dead", dead,
	    sizeof dead)), 0);
}

/* warrantctl doctor logs in as each of the four users; none of them may ask
 * ACL DRYRUN, so their commands go unchecked, and that is no failure. */
static void
test_doctor(void **state)
{
	static const char *const lines[] = {"redis version: ok 7.",
	    "redis user warrantd [redis]: ok", "redis user operator [redis.operator]: ok",
	    "redis user monitor [redis.monitor]: ok", "redis user decider [redis.decider]: ok",
	    "action gate.open target: ok"};
	char *out;
	(void)state;

	int rc = ctl(&out, D->ini, "doctor", (char *)NULL);
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
		if (out == NULL || strstr(out, lines[i]) == NULL)
			fail_msg("[%s] doctor: no \"%s\" in: %s", D->tag, lines[i], out ? out : "");
	if (rc != 0)
		fail_msg("[%s] doctor: exit %d: %s", D->tag, rc, out);
	free(out);
}

/* --as names one of three roles, and the file must define it. */
static void
test_as_errors(void **state)
{
	char *out;
	(void)state;

	assert_int_equal(ctl(&out, D->ini, "--as", "admin", "status", (char *)NULL), 64);
	free(out);
	assert_int_equal(ctl(&out, D->ini_no_roles, "--as", "operator", "status", (char *)NULL), 78);
	if (out == NULL || strstr(out, "no [redis.operator] section") == NULL)
		fail_msg("--as without its section: %s", out ? out : "");
	free(out);
	/* without --as and without [redis.monitor]: [redis]'s user, the
	 * worker's, which reads no XLEN */
	assert_int_equal(ctl(&out, D->ini_no_roles, "status", (char *)NULL), 1);
	if (out == NULL || strstr(out, "NOPERM") == NULL)
		fail_msg("status as the worker: %s", out ? out : "");
	free(out);
}

/* Without --as, the read-only commands log in as [redis.monitor] when the
 * file has it (the metrics timer passes no --as): as the worker, XLEN is
 * refused (test_as_errors). */
static void
test_default_role(void **state)
{
	(void)state;

	CTL_OK("status");
	if (D->shards)
		CTL_OK("metrics", "--shard", "0");
	else
		CTL_OK("metrics");
	CTL_OK("inspect", "acl-now");
}

static void
test_worker_limits(void **state)
{
	static const struct acl_case cases[] = {
		/* issue 23 item 2: what erased the queue, the audit trail or
		 * the dead letters */
		{0, "PEXPIRE jobs", "PEXPIRE P:jobs 1"},
		{0, "PEXPIRE audit", "PEXPIRE P:audit 1"},
		{0, "PEXPIRE dead", "PEXPIRE P:dead 1"},
		{0, "PEXPIRE consumers", "PEXPIRE P:consumers 1"},
		{0, "PEXPIRE scheduled", "PEXPIRE P:scheduled 1"},
		{0, "XTRIM audit", "XTRIM P:audit MAXLEN 0"},
		{0, "XTRIM dead", "XTRIM P:dead MAXLEN 0"},
		{0, "XTRIM notify", "XTRIM P:notify MAXLEN 0"},
		{0, "SET over the queue", "SET P:jobs x"},
		{0, "SET over a record", "SET P:decision:acl-now x"},
		{0, "HDEL a record's field", "HDEL P:decision:acl-now record"},
		{0, "XADD as a record", "XADD P:decision:acl-x * a b"},
		{0, "XADD scheduled", "XADD P:scheduled * a b"},
		{0, "XADD heartbeat", "XADD P:consumer:w9 * a b"},
		{0, "SET clock", "SET P:clock 0"},
		{0, "HSET final", "HSET P:final:acl-x a b"},
		{0, "EVAL PEXPIRE jobs", "EVAL return_redis.call('PEXPIRE',KEYS[1],1) 1 P:jobs"},
		{0, "EVAL XTRIM audit", "EVAL return_redis.call('XTRIM',KEYS[1],'MAXLEN',0) 1 P:audit"},
		/* and as before */
		{0, "DEL record", "DEL P:decision:acl-now"},
		{0, "DEL final", "DEL P:final:acl-now"},
		{0, "UNLINK", "UNLINK P:jobs"},
		{0, "FLUSHDB", "FLUSHDB"},
		{0, "KEYS", "KEYS *"},
		{0, "CONFIG", "CONFIG GET *"},
		{0, "XGROUP DESTROY", "XGROUP DESTROY P:jobs workers"},
		{0, "XGROUP SETID", "XGROUP SETID P:jobs workers $"},
		{0, "another prefix", "HSET other:decision:x record forged"},
		{0, "SCRIPT FLUSH", "SCRIPT FLUSH"},
		/* issue 37 item 3: no code of its own in Redis */
		{0, "EVAL", "EVAL return_0 0"},
		{3, "EVAL while true", "EVAL while_true_do_end 0"},
		{0, "EVALSHA", "EVALSHA 0123456789012345678901234567890123456789 0"},
		{0, "SCRIPT LOAD", "SCRIPT LOAD return_0"},
		{0, "FUNCTION LOAD", "FUNCTION LOAD REPLACE x"},
		{0, "FUNCTION DELETE", "FUNCTION DELETE warrantd"},
		{0, "FCALL on another prefix", "FCALL warrantd_trim 1 other:jobs"},
		/* what it needs, the limits of ACLs (README) */
		{1, "HSET record", "HSET P:decision:acl-limit record forged"},
		{1, "PEXPIRE heartbeat", "PEXPIRE P:consumer:w9 1000"},
		{2, "XADD MAXLEN 0 audit", "XADD P:audit MAXLEN 0 * id x"},
		{2, "XTRIM jobs", "XTRIM P:jobs MAXLEN 0"},
		{2, "SET final PX", "SET P:final:acl-now x PX 1"},
		{2, "PEXPIRE record", "PEXPIRE P:decision:acl-now 1"},
	};
	(void)state;
	expect_cases("warrantd", cases, sizeof cases / sizeof cases[0]);
}

/* Every command the worker sends, on the key it sends it to (engine.c,
 * ejob.c, the scripts of lua/), by ACL DRYRUN: the paths a job that is done does not
 * take (hand-back, re-dispatch, dead letters, notifications, a consumer
 * leaving) are allowed too. */
static void
test_worker_needs(void **state)
{
	static const struct acl_case cases[] = {
		{2, "XREADGROUP", "XREADGROUP GROUP workers w1 COUNT 1 STREAMS P:jobs >"},
		{2, "XGROUP CREATE", "XGROUP CREATE P:jobs workers 0 MKSTREAM"},
		{2, "XGROUP DELCONSUMER", "XGROUP DELCONSUMER P:jobs workers w9"},
		{2, "XINFO GROUPS", "XINFO GROUPS P:jobs"},
		{2, "XINFO CONSUMERS", "XINFO CONSUMERS P:jobs workers"},
		{2, "XPENDING", "XPENDING P:jobs workers - + 1 w1"},
		{2, "XRANGE", "XRANGE P:jobs 0-1 0-1"},
		{2, "XACK", "XACK P:jobs workers 0-1"},
		{2, "XCLAIM", "XCLAIM P:jobs workers w1 0 0-1 JUSTID"},
		{2, "XADD jobs (hand-back)", "XADD P:jobs * id x priorDeliveries 1"},
		{2, "XTRIM MINID jobs", "XTRIM P:jobs MINID ~ 0-1"},
		{2, "EXISTS jobs", "EXISTS P:jobs"},
		{2, "HMGET record", "HMGET P:decision:x state entry"},
		{2, "HMGET record (load.lua)", "HMGET P:decision:x state attempts record"},
		{2, "HGET record", "HGET P:decision:x attempts"},
		{2, "HSTRLEN record", "HSTRLEN P:decision:x record"},
		{2, "EXISTS record", "EXISTS P:decision:x"},
		{2, "HSET record", "HSET P:decision:x state running"},
		{2, "HINCRBY record", "HINCRBY P:decision:x attempts 1"},
		{2, "PEXPIRE record", "PEXPIRE P:decision:x 1000"},
		{2, "GET final", "GET P:final:x"},
		{2, "SET final", "SET P:final:x done PX 1000"},
		{2, "ZRANGEBYSCORE", "ZRANGEBYSCORE P:scheduled -inf 1 LIMIT 0 10"},
		{2, "ZADD scheduled", "ZADD P:scheduled 1 x"},
		{2, "ZREM scheduled", "ZREM P:scheduled x"},
		{2, "XADD audit", "XADD P:audit MAXLEN ~ 100 * id x"},
		{2, "XADD dead", "XADD P:dead MAXLEN ~ 100 * id x"},
		{2, "XADD notify", "XADD P:notify MAXLEN ~ 100 * id x"},
		{2, "HSET heartbeat", "HSET P:consumer:w1 pid 1"},
		{2, "HGETALL consumers", "HGETALL P:consumers"},
		{2, "HVALS consumers", "HVALS P:consumers"},
		{2, "HSET consumers", "HSET P:consumers w1 x"},
		{2, "HDEL consumers", "HDEL P:consumers w9"},
		{2, "HGET clock", "HGET P:clock last"},
		{2, "HSET clock", "HSET P:clock last 1"},
		{2, "TIME", "TIME"},
		{2, "ROLE", "ROLE"},
		/* the library's functions (warrantd(7) §2.1) */
		{2, "FCALL transition", "FCALL warrantd_transition 2 P:decision:x P:jobs"},
		{2, "FCALL heartbeat", "FCALL warrantd_heartbeat 2 P:consumers P:clock w1 1 1"},
		{2, "FCALL_RO load", "FCALL_RO warrantd_load 1 P:decision:x 100"},
		{2, "FCALL_RO version", "FCALL_RO warrantd_version 0"},
	};
	(void)state;
	expect_cases("warrantd", cases, sizeof cases / sizeof cases[0]);
}

static void
test_decider_limits(void **state)
{
	static const struct acl_case cases[] = {
		/* R4: the terminal mark, which a record's `state` set back to
		 * queued does not outweigh */
		{0, "SET final", "SET P:final:acl-next queued"},
		{0, "DEL final", "DEL P:final:acl-now"},
		{0, "HSET final", "HSET P:final:acl-next state queued"},
		{0, "EVAL HSET final", "EVAL return_redis.call('HSET',KEYS[1],'a','b') 1 P:final:acl-now"},
		/* a command it has, on a key that is not for it */
		{0, "ZADD as a record", "ZADD P:decision:acl-z 1 a"},
		{0, "XADD as a record", "XADD P:decision:acl-x * a b"},
		{0, "HSET scheduled", "HSET P:scheduled a b"},
		{0, "XADD scheduled", "XADD P:scheduled * a b"},
		{0, "ZADD jobs", "ZADD P:jobs 1 a"},
		{0, "HSET jobs", "HSET P:jobs a b"},
		/* and as before */
		{0, "XREADGROUP", "XREADGROUP GROUP workers x COUNT 1 STREAMS P:jobs >"},
		{0, "XACK", "XACK P:jobs workers 0-1"},
		{0, "XCLAIM", "XCLAIM P:jobs workers x 0 0-1"},
		{0, "XADD dead", "XADD P:dead * id x reason forged"},
		{0, "XADD audit", "XADD P:audit * id x"},
		{0, "XADD notify", "XADD P:notify * id x"},
		{0, "HSET heartbeat", "HSET P:consumer:w1 done 0"},
		{0, "DEL record", "DEL P:decision:acl-now"},
		{0, "HGETALL record", "HGETALL P:decision:acl-now"},
		{0, "PEXPIRE jobs", "PEXPIRE P:jobs 1"},
		/* issue 37 item 3: the credential outside services hold runs no
		 * code of its own (this one froze Redis for every user), and
		 * only the two functions warrantctl decide calls */
		{3, "EVAL while true", "EVAL while_true_do_end 0"},
		{0, "EVAL", "EVAL return_0 0"},
		{0, "EVALSHA", "EVALSHA 0123456789012345678901234567890123456789 0"},
		{0, "SCRIPT LOAD", "SCRIPT LOAD return_0"},
		{0, "FUNCTION LOAD", "FUNCTION LOAD REPLACE x"},
		{0, "FCALL transition", "FCALL warrantd_transition 1 P:jobs"},
		{0, "FCALL trim", "FCALL warrantd_trim 1 P:jobs"},
		{0, "FCALL_RO load", "FCALL_RO warrantd_load 1 P:decision:acl-now 100"},
		{2, "FCALL decide", "FCALL warrantd_decide 3 P:decision:x P:jobs P:scheduled"},
		{2, "FCALL newrecord", "FCALL warrantd_newrecord 1 P:decision:x"},
		{2, "MULTI (the decider libraries)", "MULTI"},
		/* the limits */
		{2, "XADD MAXLEN 0 jobs", "XADD P:jobs MAXLEN 0 * id x"},
		{2, "HSET another's state", "HSET P:decision:acl-now state done"},
	};
	(void)state;
	expect_cases("decider", cases, sizeof cases / sizeof cases[0]);
	char fin[128];
	key_of("acl-now", "final:", fin, sizeof fin);
	char *mark = h_redis_str(D->C, "GET %s", fin);
	assert_non_null(mark);
	assert_string_equal(mark, "done");
	free(mark);
}

/* Issue 37 item 3 end to end: the script that froze Redis for everyone,
 * sent as the decider, is refused at once (NOPERM), and Redis answers
 * every other user meanwhile. The decider's connection waits 5 s at most:
 * a script that ran (an older ACL file) is killed and the test fails. */
static void
test_decider_cannot_freeze(void **state)
{
	struct timeval tv = {5, 0};
	(void)state;
	redisContext *dec = login("decider"), *mon = login("monitor");

	assert_int_equal(redisSetTimeout(dec, tv), REDIS_OK);
	redisReply *r = redisCommand(dec, "EVAL %s 0", "while true do end");
	if (r == NULL) {
		freeReplyObject(redisCommand(D->C, "SCRIPT KILL"));
		fail_msg("[%s] EVAL \"while true do end\" as the decider ran", D->tag);
	}
	if (r->type != REDIS_REPLY_ERROR || strncmp(r->str, "NOPERM", 6) != 0)
		fail_msg("[%s] EVAL as the decider: %s, wanted NOPERM", D->tag,
		    r->type == REDIS_REPLY_ERROR ? r->str : "not an error");
	freeReplyObject(r);
	r = redisCommand(mon, "PING");
	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_STATUS);
	freeReplyObject(r);
	redisFree(dec);
	redisFree(mon);
}

static void
test_operator_limits(void **state)
{
	static const struct acl_case cases[] = {
		{0, "DEL jobs", "DEL P:jobs"},
		{0, "DEL record", "DEL P:decision:acl-now"},
		{0, "UNLINK audit", "UNLINK P:audit"},
		{0, "XTRIM jobs", "XTRIM P:jobs MAXLEN 0"},
		{0, "XTRIM audit", "XTRIM P:audit MAXLEN 0"},
		{0, "PEXPIRE jobs", "PEXPIRE P:jobs 1"},
		{0, "ZADD scheduled", "ZADD P:scheduled 1 x"},
		{0, "XDEL notify", "XDEL P:notify 0-1"},
		{0, "XADD dead", "XADD P:dead * id x"},
		{0, "XDEL audit", "XDEL P:audit 0-1"},
		{0, "XACK", "XACK P:jobs workers 0-1"},
		{0, "XGROUP DESTROY", "XGROUP DESTROY P:jobs workers"},
		{0, "HSET consumers", "HSET P:consumers w1 0"},
		{0, "FLUSHDB", "FLUSHDB"},
		{1, "HGETALL record", "HGETALL P:decision:acl-now"},
		{1, "XPENDING", "XPENDING P:jobs workers"},
		{2, "XDEL dead", "XDEL P:dead 0-1"},
		{2, "DEL final", "DEL P:final:acl-now"},
		/* cancel (§11): the terminal mark and the retention of both, as
		 * the worker writes them, the owner's notification, and the
		 * schedule left */
		{2, "SET final", "SET P:final:acl-x cancelled PX 1000"},
		{2, "PEXPIRE record", "PEXPIRE P:decision:acl-now 1000"},
		{2, "XADD notify", "XADD P:notify MAXLEN ~ 100 * id x"},
		{2, "ZREM scheduled", "ZREM P:scheduled x"},
		/* issue 37 item 3: no code of its own, the two functions its
		 * commands call, and the end of a script or function that
		 * holds Redis */
		{0, "EVAL", "EVAL return_0 0"},
		{3, "EVAL while true", "EVAL while_true_do_end 0"},
		{0, "SCRIPT LOAD", "SCRIPT LOAD return_0"},
		{0, "FUNCTION LOAD", "FUNCTION LOAD REPLACE x"},
		{0, "FCALL transition", "FCALL warrantd_transition 1 P:jobs"},
		{2, "FCALL requeue", "FCALL warrantd_requeue 1 P:decision:x"},
		{2, "FCALL cancel", "FCALL warrantd_cancel 1 P:decision:x"},
		{2, "SCRIPT KILL", "SCRIPT KILL"},
		{2, "FUNCTION KILL", "FUNCTION KILL"},
	};
	(void)state;
	expect_cases("operator", cases, sizeof cases / sizeof cases[0]);
}

static void
test_monitor_limits(void **state)
{
	static const struct acl_case cases[] = {
		{1, "XPENDING (PEL depth)", "XPENDING P:jobs workers"},
		{1, "XINFO GROUPS", "XINFO GROUPS P:jobs"},
		{1, "HGETALL heartbeat", "HGETALL P:consumer:w1"},
		{1, "XREVRANGE dead", "XREVRANGE P:dead + - COUNT 10"},
		{0, "XADD jobs", "XADD P:jobs * id forged"},
		{0, "HSET record", "HSET P:decision:acl-now state queued"},
		{0, "XACK", "XACK P:jobs workers 0-1"},
		{0, "XDEL dead", "XDEL P:dead 0-1"},
		{0, "DEL", "DEL P:dead"},
		{0, "PEXPIRE", "PEXPIRE P:jobs 1"},
		{0, "SET final", "SET P:final:acl-x x"},
		{0, "EVAL", "EVAL return_0 0"},
		{3, "EVAL while true", "EVAL while_true_do_end 0"},
		{0, "FCALL", "FCALL warrantd_trim 1 P:jobs"},
		{0, "FCALL_RO", "FCALL_RO warrantd_version 0"},
	};
	(void)state;
	expect_cases("monitor", cases, sizeof cases / sizeof cases[0]);
}

/* ---- the shipped users on a cluster (issue 27 item 7) ---- */

#define CL_NODES	3
#define CL_SHARDS	3
#define CL_JOBS		6

static struct deployment clustered = {.tag = "cluster", .pattern = "~{warrant:*}:",
    .prefix = "{warrant:0}", .ini_prefix = "warrant", .shards = CL_SHARDS};
static struct h_rnode cl_node[CL_NODES];
static redisContext *cl_c[CL_NODES];	/* `default`, unrestricted here */
static char cl_id[CL_NODES][64];

/* The command answered where the cluster keeps its key: asked of every
 * node plainly, then with ASKING (a slot's importing node). */
static redisReply *
cl_any(const char *fmt, ...)
{
	for (int asking = 0; asking < 2; asking++)
		for (int i = 0; i < CL_NODES; i++) {
			va_list ap;
			if (asking)
				freeReplyObject(redisCommand(cl_c[i], "ASKING"));
			va_start(ap, fmt);
			redisReply *r = redisvCommand(cl_c[i], fmt, ap);
			va_end(ap);
			if (r != NULL && r->type != REDIS_REPLY_ERROR)
				return r;
			freeReplyObject(r);
		}
	return NULL;
}

static int
cl_done(void *arg)
{
	const char *id = arg;
	char p[64];

	assert_int_equal(cluster_shard_prefix(p, sizeof p, "warrant",
	    cluster_shard_of(id, strlen(id), CL_SHARDS), CL_SHARDS), 0);
	redisReply *r = cl_any("HGET %s:decision:%s state", p, id);
	int done = r != NULL && r->type == REDIS_REPLY_STRING && strcmp(r->str, "done") == 0;
	freeReplyObject(r);
	return done;
}

static void
cl_wait_done(const char *id)
{
	if (h_wait_until(cl_done, (void *)id, 30000) != 0)
		fail_msg("[cluster] %s is not done (log %s)", id, D->dmn.log);
}

static int
cl_called(void *arg)
{
	return h_count_calls(&target, arg) > 0;
}

static int
cl_ok(void *arg)
{
	(void)arg;
	for (int i = 0; i < CL_NODES; i++) {
		char *info = h_redis_str(cl_c[i], "CLUSTER INFO");
		int ok = info && strstr(info, "cluster_state:ok") &&
		    strstr(info, "cluster_known_nodes:3");
		free(info);
		if (!ok)
			return 0;
	}
	return 1;
}

static void
cl_decide(const char *id)
{
	CTL_OK("--as", "decider", "decide", "--on-behalf-of", "operator:4417", "--action",
	    "gate.open", "--resource", "canal/gate-1", "--basis", "rule:acl", "--expires", "+1h",
	    "--key", h_data("test-es256.key"), "--id", id);
}

/*
 * conf/redis-acl.conf rewritten for `shards` (`~{warrant:*}:`) on a cluster
 * of three primaries, each with the file: warrantd as `warrantd` (CLUSTER
 * SHARDS to find the nodes) runs what `warrantctl --as decider decide`
 * writes into every shard; then one shard's slot is left mid-migration, its
 * keys moved, and a record decided into it: the decider and the worker
 * follow -ASK (ASKING) and it is called before the migration ends; the
 * operator pauses and resumes, the monitor reads status, metrics and a
 * record; no NOPERM anywhere.
 */
static void
test_cluster_users(void **state)
{
	char *argv[16], addr[CL_NODES][32], seeds[160] = "", conf[PATH_MAX + 160], id[32];
	int argc = 0;
	(void)state;

	char *cli = h_which("redis-cli");
	if (cli == NULL)
		h_skip("redis-cli is not installed (Debian redis-tools)");
	free(cli);
	D = &clustered;
	if (target.pid == 0)
		assert_int_equal(h_fake_start(&target, "fake_target", NULL), 0);
	for (int i = 0; i < NUSERS; i++)
		if (pw_file[i] == NULL) {
			char pw[64], name[64];
			snprintf(pw, sizeof pw, "%s-pw\n", users[i]);
			snprintf(name, sizeof name, "%s.password", users[i]);
			assert_non_null(pw_file[i] = h_write_file(name, pw));
		}
	char *acl = test_acl_file(D);
	assert_non_null(acl);
	snprintf(conf, sizeof conf, "aclfile %s\nsave \"\"\nappendonly no\ncluster-enabled yes\n"
	    "cluster-config-file nodes.conf\ncluster-node-timeout 1000\n", acl);
	free(acl);
	argv[argc++] = "redis-cli";
	argv[argc++] = "--cluster";
	argv[argc++] = "create";
	for (int i = 0; i < CL_NODES; i++) {
		char name[32];
		snprintf(name, sizeof name, "acl-cluster-%d", i);
		assert_int_equal(h_rnode_start(&cl_node[i], name, conf, H_RNODE_CLUSTER), 0);
		assert_non_null(cl_c[i] = h_redis_connect_tcp(cl_node[i].port));
		char *myid = h_redis_str(cl_c[i], "CLUSTER MYID");
		assert_non_null(myid);
		snprintf(cl_id[i], sizeof cl_id[i], "%s", myid);
		free(myid);
		snprintf(addr[i], sizeof addr[i], "127.0.0.1:%d", cl_node[i].port);
		argv[argc++] = addr[i];
		snprintf(seeds + strlen(seeds), sizeof seeds - strlen(seeds), "%s%s", i ? ", " : "",
		    addr[i]);
	}
	argv[argc++] = "--cluster-replicas";
	argv[argc++] = "0";
	argv[argc++] = "--cluster-yes";
	argv[argc] = NULL;
	char *out = NULL;
	int rc = h_run(argv, 60000, &out);
	if (rc != 0)
		fail_msg("redis-cli --cluster create: %d %s", rc, out ? out : "");
	free(out);
	assert_int_equal(h_wait_until(cl_ok, NULL, H_WAIT_MS), 0);

	/* the worker's INI: the cluster's seeds instead of a socket, a
	 * [redis.ROLE] section per other user */
	char redis[PATH_MAX + 256];
	snprintf(redis, sizeof redis, "username = warrantd\npassword_file = %s\ncluster = %s\n"
	    "shards = %d\n", pw_file[0], seeds, CL_SHARDS);
	struct h_daemon_opts o = {.target_url = target.url,
	    .redis_extra = redis};
	char *text = h_daemon_ini(&o);
	assert_non_null(text);
	size_t n = strlen(text) + 3 * (PATH_MAX + 96);
	char *all = calloc(1, n);
	assert_non_null(all);
	strcpy(all, text);
	free(text);
	for (int i = 1; i < NUSERS; i++)
		snprintf(all + strlen(all), n - strlen(all),
		    "\n[redis.%s]\nusername = %s\npassword_file = %s\n", users[i], users[i],
		    pw_file[i]);
	assert_non_null(D->ini = h_write_file("cluster.ini", all));

	/* the library on every primary (warrantd(7) §2.1): checked per shard,
	 * a worker stops (exit 76) when one primary lacks it; `warrantctl
	 * functions load`, as the administrator (`default` here), loads it
	 * into each shard's primary */
	free(h_redis_str(cl_c[1], "FUNCTION DELETE warrantd"));
	struct h_daemon early = {0};
	int st = -1;
	assert_int_equal(h_daemon_spawn(&early, all), 0);
	if (h_wait_exit(early.pid, 30000, &st) != 0) {
		h_daemon_kill(&early);
		fail_msg("[cluster] warrantd ran with a primary without the library (log %s)",
		    early.log);
	}
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 76);
	assert_true(h_file_contains(early.log, "event=redis.library"));
	for (int i = 0; i < CL_NODES; i++)
		free(h_redis_str(cl_c[i], "FUNCTION DELETE warrantd"));
	CTL_OK("functions", "load");
	for (int i = 0; i < CL_NODES; i++) {
		char *v = h_redis_str(cl_c[i], "FCALL_RO warrantd_version 0");
		if (v == NULL || strcmp(v, STORE_LIBRARY_VERSION) != 0)
			fail_msg("[cluster] node %d: library %s after functions load", i, v ? v : "none");
		free(v);
	}
	CTL_OK("functions", "status");
	assert_int_equal(h_daemon_start(&D->dmn, all), 0);
	free(all);

	/* the decider writes into every shard, the worker runs each */
	int in_shard[CL_SHARDS] = {0};
	for (int i = 0; i < CL_JOBS; i++) {
		snprintf(id, sizeof id, "acl-cl-%d", i);
		in_shard[cluster_shard_of(id, strlen(id), CL_SHARDS)]++;
		cl_decide(id);
	}
	for (int i = 0; i < CL_JOBS; i++) {
		snprintf(id, sizeof id, "acl-cl-%d", i);
		cl_wait_done(id);
	}
	for (int i = 0; i < CL_SHARDS; i++)
		if (in_shard[i] == 0)
			fail_msg("[cluster] no job in shard %d: the ids no longer spread", i);

	/* a slot mid-migration: its keys on the importing node, -ASK for all */
	const char *mid = "acl-cl-ask";
	char sp[64];
	unsigned shard = cluster_shard_of(mid, strlen(mid), CL_SHARDS);
	assert_int_equal(cluster_shard_prefix(sp, sizeof sp, "warrant", shard, CL_SHARDS), 0);
	unsigned slot = cluster_key_slot(sp, strlen(sp));
	int src = -1;
	for (int i = 0; i < CL_NODES && src < 0; i++)
		if (h_redis_int(cl_c[i], "EXISTS %s:jobs", sp) == 1)
			src = i;
	assert_true(src >= 0);
	int dst = (src + 1) % CL_NODES;
	free(h_redis_str(cl_c[dst], "CLUSTER SETSLOT %u IMPORTING %s", slot, cl_id[src]));
	free(h_redis_str(cl_c[src], "CLUSTER SETSLOT %u MIGRATING %s", slot, cl_id[dst]));
	redisReply *keys = redisCommand(cl_c[src], "CLUSTER GETKEYSINSLOT %u 1000", slot);
	assert_true(keys != NULL && keys->type == REDIS_REPLY_ARRAY && keys->elements > 0);
	for (size_t i = 0; i < keys->elements; i++)
		free(h_redis_str(cl_c[src], "MIGRATE 127.0.0.1 %d %s 0 5000", cl_node[dst].port,
		    keys->element[i]->str));
	freeReplyObject(keys);
	cl_decide(mid);
	if (h_wait_until(cl_called, (void *)mid, 30000) != 0)
		fail_msg("[cluster] %s not called mid-migration (log %s)", mid, D->dmn.log);
	/* still migrating (its final write waits for the end): the monitor
	 * and the operator read it through -ASK, on the importing node */
	char shard_s[16];
	snprintf(shard_s, sizeof shard_s, "%u", shard);
	CTL_OK("--as", "monitor", "inspect", mid);
	CTL_OK("--as", "operator", "jobs", "--shard", shard_s);
	for (int i = 0; i < CL_NODES; i++)
		free(h_redis_str(cl_c[i], "CLUSTER SETSLOT %u NODE %s", slot, cl_id[dst]));
	cl_wait_done(mid);
	assert_true(h_daemon_log_has(&D->dmn, "event=redis.ask"));

	/* the operator and the monitor */
	CTL_OK("--as", "operator", "pause", "gate.open");
	if (h_daemon_wait_log(&D->dmn, "event=gate.pauses paused=gate.open", 30000) != 0)
		fail_msg("[cluster] the worker did not see the pause (log %s)", D->dmn.log);
	CTL_OK("--as", "operator", "resume", "gate.open");
	if (h_daemon_wait_log(&D->dmn, "event=gate.pauses paused=-", 30000) != 0)
		fail_msg("[cluster] the worker did not see the resume (log %s)", D->dmn.log);
	CTL_OK("--as", "monitor", "status", "--shard", "0");
	CTL_OK("--as", "monitor", "metrics", "--shard", "0");
	CTL_OK("--as", "monitor", "inspect", "acl-cl-0");
	if (h_daemon_log_has(&D->dmn, "NOPERM") || h_daemon_log_has(&D->dmn, "can't run") ||
	    h_daemon_log_has(&D->dmn, "can't access") || h_daemon_log_has(&D->dmn, "no permissions"))
		fail_msg("[cluster] warrantd ran a command its ACL user may not (log %s)",
		    D->dmn.log);
	assert_true(h_daemon_stop_clean(&D->dmn));
	free(D->ini);
	D->ini = NULL;
	for (int i = 0; i < CL_NODES; i++) {
		redisFree(cl_c[i]);
		h_stop(cl_node[i].pid, SIGTERM, 5000);
	}
}

int
main(void)
{
	/* in this order: the limits use the records the first tests made */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_worker_and_decider_work),
		cmocka_unit_test(test_operator_requeues),
		cmocka_unit_test(test_operator_pauses),
		cmocka_unit_test(test_monitor_reads),
		cmocka_unit_test(test_default_role),
		cmocka_unit_test(test_operator_job_ops),
		cmocka_unit_test(test_doctor),
		cmocka_unit_test(test_as_errors),
		cmocka_unit_test(test_worker_limits),
		cmocka_unit_test(test_worker_needs),
		cmocka_unit_test(test_decider_limits),
		cmocka_unit_test(test_decider_cannot_freeze),
		cmocka_unit_test(test_operator_limits),
		cmocka_unit_test(test_monitor_limits),
	};
	int failed = cmocka_run_group_tests_name("prefix warrant", tests, setup_plain, teardown);

	failed += cmocka_run_group_tests_name("prefix {warrant}", tests, setup_tagged, teardown);
	failed += cmocka_run_group_tests_name("shards {warrant:0..1}", tests, setup_sharded,
	    teardown);
	const struct CMUnitTest on_cluster[] = {
		cmocka_unit_test(test_cluster_users),
	};
	failed += cmocka_run_group_tests_name("cluster {warrant:0..2}", on_cluster, NULL, NULL);
	h_fake_stop(&target);
	for (int i = 0; i < NUSERS; i++)
		free(pw_file[i]);
	return failed;
}
