/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * scenarios: one named scenario per item of issues 7, 22 and 27 that can be seen from
 * outside, each written to fail where the code has the defect and to pass
 * once it is fixed. `faults --scenario NAME` (make faults SCENARIO=NAME);
 * "all" runs each, "list" names them.
 *
 * Each brings up its own world (redis, fakes, workers), waits on conditions
 * with a bound, prints PASS, FAIL (with what it saw) or SKIP (with why), and
 * stops everything it started.
 */
#define _DEFAULT_SOURCE
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "redis/cluster.h"
#include "faults.h"
#include "base/wtime.h"

enum { PASS, FAIL, SKIP };

static int verdict;

/* Records a failed expectation; the scenario goes on, to report them all. */
static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
check(int ok, const char *fmt, ...)
{
	va_list ap;

	if (ok)
		return;
	va_start(ap, fmt);
	printf("    FAIL: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
	verdict = FAIL;
}

/* ---- shared steps ---- */

struct jobs_wait {
	struct world *w;
	const char *prefix;
	int n;
};

static char *
job_id(char *buf, size_t n, const char *prefix, int i)
{
	snprintf(buf, n, "%s-%d", prefix, i);
	return buf;
}

static int
enqueue_n(struct world *w, const char *prefix, int n, long long expires_ms)
{
	char id[64], res[96];

	for (int i = 0; i < n; i++) {
		snprintf(res, sizeof res, "canal/gate/%s", job_id(id, sizeof id, prefix, i));
		if (w_enqueue(w, id, res, expires_ms) != 0)
			return -1;
	}
	return 0;
}

/* How many of prefix-0 .. prefix-(n-1) are in state `want` (NULL: any
 * terminal state). */
static int
count_in(struct world *w, const char *prefix, int n, const char *want)
{
	char id[64];
	int k = 0;

	for (int i = 0; i < n; i++) {
		char *s = w_state(w, job_id(id, sizeof id, prefix, i));
		k += want ? s && strcmp(s, want) == 0 : w_terminal(s);
		free(s);
	}
	return k;
}

static int
all_terminal(void *arg)
{
	struct jobs_wait *jw = arg;

	w_pause_ms(100);	/* each check reads every job */
	return count_in(jw->w, jw->prefix, jw->n, NULL) == jw->n;
}

static int
wait_terminal(struct world *w, const char *prefix, int n, int timeout_ms)
{
	struct jobs_wait jw = { w, prefix, n };

	return h_wait_until(all_terminal, &jw, timeout_ms);
}

/* Keys among prefix-0.. that the target answered 2xx more than once. */
static int
executed_twice(struct world *w, const char *prefix, int n)
{
	char id[64];
	int k = 0;

	for (int i = 0; i < n; i++)
		if (w_target_ok(w, job_id(id, sizeof id, prefix, i)) > 1) {
			printf("    %s executed %lld times\n", id, w_target_ok(w, id));
			k++;
		}
	return k;
}

/* Every one of prefix-0.. done, none executed twice, nothing pending. */
static int
ran_once(struct world *w, const char *prefix, int n, int timeout_ms)
{
	check(wait_terminal(w, prefix, n, timeout_ms) == 0, "not all terminal within %d s",
	    timeout_ms / 1000);
	check(count_in(w, prefix, n, "done") == n, "%d of %d done", count_in(w, prefix, n, "done"),
	    n);
	int twice = executed_twice(w, prefix, n);
	check(twice == 0, "%d of %d executed twice by live workers", twice, n);
	check(w_pending(w) == 0, "%lld entries left pending", w_pending(w));
	return PASS;
}

struct state_wait {
	struct world *w;
	const char *id, *want;
};

static int
in_state(void *arg)
{
	struct state_wait *sw = arg;
	char *s = w_state(sw->w, sw->id);
	int ok = s && strcmp(s, sw->want) == 0;

	free(s);
	return ok;
}

/* Waits until job id is in state want: 0, or -1 after timeout_ms. */
static int
wait_state(struct world *w, const char *id, const char *want, int timeout_ms)
{
	struct state_wait sw = { w, id, want };

	return h_wait_until(in_state, &sw, timeout_ms);
}

struct stat_wait {
	const struct h_fake *f;
	const char *field;
	long long min;
};

static int
stat_at_least(void *arg)
{
	struct stat_wait *s = arg;

	return w_fake_stat(s->f, s->field) >= s->min;
}

/* Waits until the target has seen `n` calls in all. */
static int
wait_calls(struct world *w, long long n, int timeout_ms)
{
	struct stat_wait s = { &w->target, "total", n };

	return h_wait_until(stat_at_least, &s, timeout_ms);
}

static struct w_params
base_params(void)
{
	struct w_params p;

	memset(&p, 0, sizeof p);
	p.claim_interval_ms = 200;
	p.block_ms = 1000;
	p.action_timeout_ms = 10000;
	return p;
}

static int
script(struct world *w, const char *json)
{
	return h_fake_script(&w->target, json);
}

/* Lines of worker i's current log that hold needle. */
static int
log_count(struct world *w, int i, const char *needle)
{
	const char *s = w_inc_log(w, w->w[i].inc);
	int n = 0;

	for (const char *p = s; (p = strstr(p, needle)) != NULL; ) {
		const char *eol = strchr(p, '\n');
		n++;
		if (eol == NULL)
			break;
		p = eol + 1;	/* a line counts once */
	}
	return n;
}

struct log_wait {
	struct world *w;
	int worker;
	const char *needle;
	int min;
};

static int
logged_n(void *arg)
{
	struct log_wait *lw = arg;

	w_pause_ms(50);		/* each check reads the whole log */
	return log_count(lw->w, lw->worker, lw->needle) >= lw->min;
}

/* ------------------------------------------------------------------ */
/* 1. deep PEL (R11)                                                   */

#define LIVE	120
#define ORPHANS	20

static int
pel_of(void *arg)
{
	struct world *w = arg;

	return w_pending_of(w, "slow") >= LIVE;
}

/*
 * 120 entries held (and renewed) by a live, slow worker come first in the
 * PEL; behind them 20 entries of a consumer that died. A rescuer with
 * max_in_flight 2 must recover all 20 within 30 s: XAUTOCLAIM examines at
 * most COUNT x 10 entries per call, so only following its cursor gets there.
 */
static int
sc_deep_pel(struct world *w)
{
	struct w_params slow = base_params(), rescuer = base_params();
	char json[16384];
	size_t n = 0;

	n += (size_t)snprintf(json, sizeof json, "{\"default\":{\"delay_ms\":120000},\"per_key\":{");
	for (int i = 0; i < ORPHANS; i++)
		n += (size_t)snprintf(json + n, sizeof json - n, "%s\"orphan-%d\":[{\"status\":200}]",
		    i ? "," : "", i);
	snprintf(json + n, sizeof json - n, "}}");
	slow.max_in_flight = LIVE;
	slow.claim_idle_ms = rescuer.claim_idle_ms = 3000;
	slow.lease_renew_ms = 500;
	slow.action_timeout_ms = rescuer.action_timeout_ms = 180000;
	rescuer.max_in_flight = 2;
	if (script(w, json) != 0 || enqueue_n(w, "live", LIVE, h_now_ms() + 600000) != 0 ||
	    w_add_worker(w, "slow", &slow) < 0 || w_start(w, 0) != 0 ||
	    h_wait_until(pel_of, w, 30000) != 0 || wait_calls(w, LIVE, 30000) != 0)
		return SKIP;
	/* The dead consumer: reads the next 20 and never answers. */
	if (enqueue_n(w, "orphan", ORPHANS, h_now_ms() + 600000) != 0)
		return SKIP;
	redisReply *rep = redisCommand(w_rc(w), "XREADGROUP GROUP " W_GROUP " ghost COUNT %d "
	    "STREAMS " W_JOBS " >", ORPHANS);
	int got = rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == 1 ?
	    (int)rep->element[0]->element[1]->elements : 0;
	freeReplyObject(rep);
	if (got != ORPHANS) {
		printf("    the ghost consumer read %d entries, want %d\n", got, ORPHANS);
		return SKIP;
	}
	if (w_add_worker(w, "rescuer", &rescuer) < 0 || w_start(w, 1) != 0)
		return SKIP;
	long long t0 = w_mono_ms();
	int ok = wait_terminal(w, "orphan", ORPHANS, 30000) == 0;
	check(ok, "%d of %d orphaned entries recovered in %lld ms (bound 30 s)",
	    count_in(w, "orphan", ORPHANS, "done"), ORPHANS, w_mono_ms() - t0);
	return PASS;
}

/* ------------------------------------------------------------------ */
/* 2. error replies on a live connection (R17)                          */

/*
 * redis-server turned into a replica of a master that does not exist: every
 * XREADGROUP gets -READONLY for 3 s. The worker must back off (at most 60
 * XREADGROUP in those 3 s; a tight loop sends thousands), log the kind
 * once or a few times, and read again once redis is a master: 50 jobs
 * enqueued after that are done within 20 s.
 */
static int
sc_error_replies(struct world *w)
{
	struct w_params p = base_params();

	if (w_add_worker(w, "w1", &p) < 0 || w_start(w, 0) != 0 ||
	    enqueue_n(w, "warm", 5, h_now_ms() + 600000) != 0 ||
	    wait_terminal(w, "warm", 5, 20000) != 0)
		return SKIP;
	char *ok = h_redis_str(w_rc(w), "REPLICAOF 127.0.0.1 1");
	free(ok);
	w_pause_ms(300);	/* the blocked read is kicked out and re-sent */
	long long before = w_cmd_calls(w, "xreadgroup");
	w_pause_ms(3000);
	long long sent = w_cmd_calls(w, "xreadgroup") - before;
	int logged = log_count(w, 0, "READONLY");
	free(h_redis_str(w_rc(w), "REPLICAOF NO ONE"));
	check(sent <= 60, "%lld XREADGROUP sent in 3 s of -READONLY (bound 60: no tight loop)",
	    sent);
	check(logged <= 5, "%d log lines of -READONLY in 3 s (once per kind per episode)", logged);
	if (enqueue_n(w, "after", 50, h_now_ms() + 600000) != 0)
		return SKIP;
	int done = wait_terminal(w, "after", 50, 20000) == 0;
	check(done, "%d of 50 jobs enqueued after the episode done within 20 s",
	    count_in(w, "after", 50, "done"));
	return PASS;
}

/*
 * redis-server restarted on a large AOF while the worker is idle: the worker
 * meets -LOADING on its reconnect. 50 jobs enqueued once redis is ready are
 * done within 20 s.
 */
#define LOADING_TRIES	3
static int
sc_loading(struct world *w)
{
	struct w_params p = base_params();

	if (w_add_worker(w, "w1", &p) < 0 || w_start(w, 0) != 0)
		return SKIP;
	/* 2 million keys (DEBUG is disabled in Redis 7): the AOF then takes
	 * seconds to load. In slices, each well under busy-reply-threshold. */
	for (int i = 0; i < 10; i++)
		if (h_redis_int(w_rc(w), "EVAL %s 0 %d", "for i = 1, 200000 do "
		    "redis.call('SET', 'filler:' .. ARGV[1] .. ':' .. i, 'x') end return 1",
		    i) != 1)
			return SKIP;
	/* The scenario is about -LOADING: a worker that never met it has shown
	 * nothing, so that fails rather than passes. Whether its reconnect
	 * falls within the load is the machine's timing: up to LOADING_TRIES
	 * restarts (the AOF keeps the filler) give it the chance. */
	int tries = 0;
	while (log_count(w, 0, "LOADING") == 0 && tries < LOADING_TRIES) {
		tries++;
		w_reconnect(w);
		if (h_redis_restart(&w->redis) != 0)	/* returns once PING answers */
			return SKIP;
	}
	check(log_count(w, 0, "LOADING") > 0, "the worker met -LOADING (%d restart(s) of "
	    "redis-server on a 2-million-key AOF, at most %d)", tries, LOADING_TRIES);
	if (enqueue_n(w, "after", 50, h_now_ms() + 600000) != 0)
		return SKIP;
	int done = wait_terminal(w, "after", 50, 20000) == 0;
	check(done, "%d of 50 jobs enqueued after redis was ready done within 20 s",
	    count_in(w, "after", 50, "done"));
	return PASS;
}

/* ------------------------------------------------------------------ */
/* 3. a target that refuses every token (R9 + R12)                      */

/*
 * Every call answered 401 invalid_token. With max_deliveries 5 the entry
 * is dead too-many-deliveries within 30 s, and the IdP issued at most 12
 * tokens (refreshes after 401 are spaced, min_refresh_interval_ms 1000 by
 * default, then back off).
 */
static int
sc_refuse_401(struct world *w)
{
	struct w_params p = base_params();

	p.oauth = 1;
	p.max_deliveries = 5;
	p.action_timeout_ms = 2000;
	if (script(w, "{\"default\":{\"status\":401,"
	    "\"www_authenticate\":\"Bearer error=\\\"invalid_token\\\"\"}}") != 0 ||
	    w_add_worker(w, "w1", &p) < 0 || w_start(w, 0) != 0 ||
	    enqueue_n(w, "refused", 1, h_now_ms() + 120000) != 0)
		return SKIP;
	long long t0 = w_mono_ms();
	int dead = wait_state(w, "refused-0", "dead", 30000) == 0;
	long long ms = w_mono_ms() - t0;
	char *reason = h_stream_field(w_rc(w), W_DEAD, "id", "refused-0", "reason");
	long long issued = w_fake_stat(&w->idp, "issued");
	long long calls = w_fake_stat(&w->target, "total");
	check(dead, "not dead after %lld ms", ms);
	check(reason && strcmp(reason, "too-many-deliveries") == 0,
	    "dead letter reason %s, want too-many-deliveries", reason ? reason : "(none)");
	check(issued <= 12, "the IdP issued %lld tokens in %lld ms (bound 12)", issued, ms);
	check(calls <= 10, "the target got %lld calls (max_deliveries 5)", calls);
	free(reason);
	return PASS;
}

/* ------------------------------------------------------------------ */
/* 5. stop keeps results already obtained (R15)                         */

#define STOP_JOBS 8

/*
 * 8 calls in flight; redis-server killed (so the result writes fail and wait
 * on a retry timer); the 8 answer 200; SIGTERM; redis back (AOF) 3 s later, inside shutdown_grace_ms (10 s): the worker writes
 * the 8 results and exits 0. After a restart no action is executed twice.
 */
static int
sc_stop_results(struct world *w)
{
	struct w_params p = base_params();
	int st = -1;

	p.grace_ms = 10000;
	p.claim_idle_ms = 60000;
	if (script(w, "{\"default\":{\"delay_ms\":1500}}") != 0 ||
	    w_add_worker(w, "w1", &p) < 0 || w_start(w, 0) != 0 ||
	    enqueue_n(w, "stop", STOP_JOBS, h_now_ms() + 600000) != 0 ||
	    wait_calls(w, STOP_JOBS, 20000) != 0)
		return SKIP;
	h_stop(w->redis.pid, SIGKILL, 5000);
	w->redis.pid = 0;
	w_reconnect(w);
	struct log_wait lw = { w, 0, "event=job.call", STOP_JOBS };
	/* The answers come 1.5 s after the calls; the count is checked below. */
	int answered = h_wait_until(logged_n, &lw, 20000) == 0 ? STOP_JOBS :
	    log_count(w, 0, "event=job.call");
	kill(w->w[0].d.pid, SIGTERM);
	w_pause_ms(3000);
	if (h_redis_restart(&w->redis) != 0)	/* on its AOF */
		return SKIP;
	if (h_wait_exit(w->w[0].d.pid, 20000, &st) != 0)
		w_kill(w, 0);
	else
		w->w[0].d.pid = 0;
	check(answered == STOP_JOBS, "%d of %d calls answered before SIGTERM", answered,
	    STOP_JOBS);
	check(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status %d, want 0", st);
	int written = count_in(w, "stop", STOP_JOBS, "done");
	check(written == STOP_JOBS, "%d of %d results written before exit", written, STOP_JOBS);
	if (w_start(w, 0) != 0)
		return SKIP;
	check(wait_terminal(w, "stop", STOP_JOBS, 30000) == 0, "not all terminal after restart");
	int twice = executed_twice(w, "stop", STOP_JOBS);
	check(twice == 0, "%d of %d actions executed twice", twice, STOP_JOBS);
	return PASS;
}

/* ------------------------------------------------------------------ */
/* 6. reload re-arms the lease timer (R16)                              */

/*
 * Two workers with claim_idle_ms 12000 (leases renewed every 4 s) hold n
 * calls that take 6 s; a SIGHUP lowers claim_idle_ms to 1500 and
 * lease_renew_ms to 500 on the first `reloaded` of them. The other worker
 * must not claim calls in progress: each job runs once.
 */
static int
reload_under_calls(struct world *w, const char *prefix, int n, int reloaded)
{
	struct w_params p = base_params();

	p.claim_idle_ms = 12000;
	p.max_in_flight = 4;
	p.action_timeout_ms = 20000;
	if (script(w, "{\"default\":{\"delay_ms\":6000}}") != 0 ||
	    w_add_worker(w, "a", &p) < 0 || w_add_worker(w, "b", &p) < 0 ||
	    w_start(w, 0) != 0 || w_start(w, 1) != 0 ||
	    enqueue_n(w, prefix, n, h_now_ms() + 600000) != 0 || wait_calls(w, n, 20000) != 0)
		return SKIP;
	for (int i = 0; i < reloaded; i++) {
		w->w[i].p.claim_idle_ms = 1500;
		w->w[i].p.lease_renew_ms = 500;
		if (w_reload(w, i) != 0)
			return SKIP;
	}
	return ran_once(w, prefix, n, 40000);
}

/* Both reloaded: the lease timer is re-armed at once (R16). */
static int
sc_reload_lease(struct world *w)
{
	return reload_under_calls(w, "lease", 4, 2);
}

/*
 * A job waiting to retry (503, base_ms 3000) when a reload removes its
 * action: dead unknown-action at once, not retried.
 */
static int
sc_reload_removed_action(struct world *w)
{
	struct w_params p = base_params();

	p.base_ms = 3000;
	p.cap_ms = 3000;
	p.max_attempts = 5;
	if (script(w, "{\"default\":{\"status\":503}}") != 0 ||
	    w_add_worker(w, "w1", &p) < 0 || w_start(w, 0) != 0 ||
	    enqueue_n(w, "removed", 1, h_now_ms() + 600000) != 0 || wait_calls(w, 1, 20000) != 0)
		return SKIP;
	w->w[0].p.action_name = "gate.close";
	if (w_reload(w, 0) != 0 || h_daemon_wait_log(&w->w[0].d, "config.reloaded", 10000) != 0)
		return SKIP;
	int dead = wait_state(w, "removed-0", "dead", 10000) == 0;
	char *reason = h_stream_field(w_rc(w), W_DEAD, "id", "removed-0", "reason");
	long long calls = w_fake_stat(&w->target, "total");
	check(dead, "not dead within 10 s of the reload");
	check(reason && strcmp(reason, "unknown-action") == 0,
	    "dead letter reason %s, want unknown-action", reason ? reason : "(none)");
	check(calls == 1, "the target got %lld calls, want 1 (no retry after the reload)", calls);
	free(reason);
	return PASS;
}

/* ------------------------------------------------------------------ */
/* 7. reading while the command connection is down                      */

/* CLIENT KILLs every connection but ours and the blocking reader (its last
 * command is XREADGROUP): the worker's command connection. */
static void
kill_cmd_connections(struct world *w, long long self)
{
	char *list = h_redis_str(w_rc(w), "CLIENT LIST");
	char *save = NULL;

	for (char *l = list ? strtok_r(list, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
		long long id = strtoll(l + 3, NULL, 10);	/* "id=N ..." */
		if (id == self || strstr(l, " cmd=xreadgroup") != NULL)
			continue;
		h_redis_int(w_rc(w), "CLIENT KILL ID %lld", id);
	}
	free(list);
}

/*
 * The worker's command connection is killed and kept down (maxclients
 * leaves no room for it to reconnect) while its blocking connection stays
 * up; then 200 jobs are enqueued. The worker (max_in_flight 4, batch 4) must
 * not read what it cannot load: its PEL stays at most 8 deep for 2 s. Once
 * the connection is back the 200 are done within 30 s.
 */
static int
sc_cmd_down(struct world *w)
{
	struct w_params p = base_params();
	long long peak = 0;

	p.max_in_flight = 4;
	p.claim_idle_ms = 60000;
	p.redis_extra = "batch = 4\n";
	if (script(w, "{\"default\":{\"delay_ms\":50}}") != 0 ||
	    w_add_worker(w, "w1", &p) < 0 || w_start(w, 0) != 0)
		return SKIP;
	long long self = h_redis_int(w_rc(w), "CLIENT ID");
	/* As many clients as are connected now (ours and the worker's): no
	 * other may connect, so the one killed stays out. */
	char *list = h_redis_str(w_rc(w), "CLIENT LIST");
	int clients = 0;
	for (const char *l = list; l && (l = strchr(l, '\n')) != NULL; l++)
		clients++;	/* one line each */
	free(list);
	free(h_redis_str(w_rc(w), "CONFIG SET maxclients %d", clients));
	kill_cmd_connections(w, self);
	if (enqueue_n(w, "backlog", 200, h_now_ms() + 600000) != 0)
		return SKIP;
	for (long long end = w_mono_ms() + 2000; w_mono_ms() < end; w_pause_ms(20)) {
		long long n = w_pending_of(w, "w1");
		peak = n > peak ? n : peak;
	}
	free(h_redis_str(w_rc(w), "CONFIG SET maxclients 10000"));
	printf("    the worker's PEL peaked at %lld entries\n", peak);
	check(peak <= 8, "the worker's PEL reached %lld entries while its command connection "
	    "was down (bound 8)", peak);
	check(wait_terminal(w, "backlog", 200, 30000) == 0,
	    "%d of 200 done within 30 s of the connection coming back",
	    count_in(w, "backlog", 200, "done"));
	return PASS;
}

/* ------------------------------------------------------------------ */
/* 9. streams that only grow (warrantd(7) §2)                                  */

static int
xlen_at_most(struct world *w, const char *key, long long max, int timeout_ms)
{
	long long end = w_mono_ms() + timeout_ms, n;

	while ((n = h_redis_int(w_rc(w), "XLEN %s", key)) > max && w_mono_ms() < end)
		w_pause_ms(100);
	return (int)n;
}

/* The heartbeat counts the 100 ids without a record as dead. */
static int
dead_letters(void *arg)
{
	return w_hb_int(arg, "w1", "dead") >= 100;
}

/*
 * 300 jobs done: P:jobs is trimmed (XLEN at most 30 within 10 s; the
 * private redis keeps 10 entries per stream node so that approximate
 * trimming is close). With dead_maxlen = notify_maxlen = 10, 100 dead
 * letters and 100 notifications leave at most 30 entries in P:dead and
 * P:notify (skipped when `warrantd -t` does not know those keys yet).
 */
static int
sc_trim(struct world *w)
{
	struct w_params p = base_params();
	char id[64];
	int caps;

	p.redis_extra = "dead_maxlen = 10\nnotify_maxlen = 10\n";
	p.max_in_flight = 64;
	if (w_add_worker(w, "w1", &p) < 0)
		return SKIP;
	char *text = w_ini(w, 0);
	caps = text && w_config_ok(text);
	free(text);
	if (!caps) {
		printf("    SKIP (part): warrantd -t rejects dead_maxlen/notify_maxlen\n");
		w->w[0].p.redis_extra = NULL;
	}
	free(h_redis_str(w_rc(w), "CONFIG SET stream-node-max-entries 10"));
	if (w_start(w, 0) != 0 || enqueue_n(w, "trim", 300, h_now_ms() + 600000) != 0 ||
	    wait_terminal(w, "trim", 300, 60000) != 0)
		return SKIP;
	long long n = xlen_at_most(w, W_JOBS, 30, 10000);
	check(n <= 30, "XLEN " W_JOBS " is %lld after 300 jobs done (bound 30)", n);
	if (!caps)
		return PASS;
	/* 100 ids without a record (dead, record-missing) and 100 records past
	 * their deadline (expired, notified). */
	long long now = h_now_ms();
	for (int i = 0; i < 100; i++) {
		h_redis_int(w_rc(w), "XADD " W_JOBS " * id %s", job_id(id, sizeof id, "missing", i));
		char *json = h_record_json(job_id(id, sizeof id, "late", i), "gate.open",
		    "canal/gate/1", now - 10000, now - 5000, 0, "owner:faults");
		if (json == NULL || h_decide(w_rc(w), W_PREFIX, id, json, 1) != 0)
			return SKIP;
		free(json);
	}
	if (wait_terminal(w, "late", 100, 30000) != 0 || h_wait_until(dead_letters, w, 30000) != 0)
		return SKIP;
	n = xlen_at_most(w, W_DEAD, 30, 5000);
	check(n <= 30, "XLEN " W_DEAD " is %lld with dead_maxlen 10 (bound 30)", n);
	n = xlen_at_most(w, W_NOTIFY, 30, 5000);
	check(n <= 30, "XLEN " W_NOTIFY " is %lld with notify_maxlen 10 (bound 30)", n);
	return PASS;
}

/* ------------------------------------------------------------------ */

/* ------------------------------------------------------------------ */
/* issue 22: one decision, one execution (R4, R10, R11, R16, R17)       */

#define ONCE_IDLE_MS	3000

/* Two workers, each with room, holding `n` calls of 5 s. */
static int
two_busy_workers(struct world *w, const char *prefix, int n)
{
	struct w_params p = base_params();

	p.claim_idle_ms = ONCE_IDLE_MS;
	p.max_in_flight = n;		/* room left on each: claims have somewhere to go */
	p.action_timeout_ms = 30000;
	if (script(w, "{\"default\":{\"delay_ms\":5000}}") != 0 ||
	    w_add_worker(w, "a", &p) < 0 || w_add_worker(w, "b", &p) < 0 ||
	    w_start(w, 0) != 0 || w_start(w, 1) != 0)
		return -1;
	/* workers that have run a while: nothing of their start is in play */
	w_pause_ms(1000);
	return enqueue_n(w, prefix, n, h_now_ms() + 600000) != 0 || wait_calls(w, n, 20000) != 0 ?
	    -1 : 0;
}


/*
 * Redis frozen (SIGSTOP) for claim_idle_ms + 1.5 s while 12 calls are in
 * flight on two live workers: every lease and heartbeat ages, and claims
 * sent during the freeze run when it ends. Nobody takes the other's
 * entries: each job reaches the target once.
 */
static int
sc_stall_freeze(struct world *w)
{
	if (two_busy_workers(w, "frz", 12) != 0)
		return SKIP;
	kill(w->redis.pid, SIGSTOP);
	w_pause_ms(ONCE_IDLE_MS + 1500);
	kill(w->redis.pid, SIGCONT);
	return ran_once(w, "frz", 12, 40000);
}

/*
 * Every write refused (min-replicas-to-write 1 with no replica: NOREPLICAS)
 * for claim_idle_ms + 1.5 s under 12 calls in flight: renewals and
 * heartbeats fail, claims fail; when writes are accepted again nobody takes
 * the other's entries.
 */
static int
sc_stall_refused(struct world *w)
{
	if (two_busy_workers(w, "nrp", 12) != 0)
		return SKIP;
	free(h_redis_str(w_rc(w), "CONFIG SET min-replicas-to-write 1"));
	w_pause_ms(ONCE_IDLE_MS + 1500);
	free(h_redis_str(w_rc(w), "CONFIG SET min-replicas-to-write 0"));
	return ran_once(w, "nrp", 12, 40000);
}

/*
 * A worker back after 0.85 x claim_idle_ms finds 8 entries in its own PEL
 * (read by it before it went, under its own name). Its peer has seen it
 * silent nearly as long: whichever of the two takes them, each runs once
 * (before: the PEL's idle time ran on, so both ran them).
 */
static int
sc_restart_own_pel(struct world *w)
{
	struct w_params p = base_params();

	p.claim_idle_ms = ONCE_IDLE_MS;
	char id[64], res[96];

	if (script(w, "{\"default\":{\"delay_ms\":2000}}") != 0 ||
	    w_add_worker(w, "a", &p) < 0 || w_add_worker(w, "b", &p) < 0 || w_start(w, 1) != 0)
		return SKIP;
	/* b has run for claim_idle_ms: Redis has served that long */
	w_pause_ms(ONCE_IDLE_MS);
	for (int i = 0; i < 8; i++) {
		long long now = h_now_ms();
		snprintf(res, sizeof res, "canal/gate/%s", job_id(id, sizeof id, "own", i));
		char *json = h_record_json(id, "gate.open", res, now - 1000, now + 600000, 0, NULL);
		char *jws = json ? h_sign(json, h_data("test-es256.key")) : NULL;
		int stored = jws && h_store_record(w_rc(w), W_PREFIX, id, jws, 0) == 0;
		free(json);
		free(jws);
		if (!stored)
			return SKIP;
	}
	/* "a" read them (in the transaction that adds them: b, blocked on the
	 * stream, is served only after it) and beat, then went away */
	freeReplyObject(redisCommand(w_rc(w), "MULTI"));
	for (int i = 0; i < 8; i++)
		freeReplyObject(redisCommand(w_rc(w), "XADD " W_JOBS " * id %s",
		    job_id(id, sizeof id, "own", i)));
	freeReplyObject(redisCommand(w_rc(w), "XREADGROUP GROUP " W_GROUP " a COUNT 8 STREAMS "
	    W_JOBS " >"));
	redisReply *r = redisCommand(w_rc(w), "EXEC");
	const redisReply *rd = r && r->type == REDIS_REPLY_ARRAY && r->elements == 9 ?
	    r->element[8] : NULL;
	int got = rd && rd->type == REDIS_REPLY_ARRAY && rd->elements == 1 ?
	    (int)rd->element[0]->element[1]->elements : 0;
	freeReplyObject(r);
	r = redisCommand(w_rc(w), "TIME");
	long long now = r && r->type == REDIS_REPLY_ARRAY ?
	    atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000 : 0;
	freeReplyObject(r);
	freeReplyObject(redisCommand(w_rc(w), "HSET " W_PREFIX ":consumers a %lld %d 500", now,
	    ONCE_IDLE_MS));
	if (got != 8) {
		printf("    read %d entries as a, want 8\n", got);
		return SKIP;
	}
	w_pause_ms(ONCE_IDLE_MS * 85 / 100);
	if (w_start(w, 0) != 0)
		return SKIP;
	return ran_once(w, "own", 8, 40000);
}

/*
 * A decider that retried its XADD: 10 records, each with two stream
 * entries, read by two workers (and some in one batch by one). R4: each
 * runs from one entry; the other is acknowledged as a duplicate.
 */
static int
sc_queued_twice(struct world *w)
{
	struct w_params p = base_params();
	char id[64];

	if (script(w, "{\"default\":{\"delay_ms\":300}}") != 0 ||
	    enqueue_n(w, "twice", 10, h_now_ms() + 600000) != 0)
		return SKIP;
	for (int i = 0; i < 10; i++)
		free(h_redis_str(w_rc(w), "XADD " W_JOBS " * id %s", job_id(id, sizeof id, "twice",
		    i)));
	if (w_add_worker(w, "a", &p) < 0 || w_add_worker(w, "b", &p) < 0 ||
	    w_start(w, 0) != 0 || w_start(w, 1) != 0)
		return SKIP;
	ran_once(w, "twice", 10, 30000);
	for (int i = 0; i < 10; i++)
		check(w_target_ok(w, job_id(id, sizeof id, "twice", i)) == 1,
		    "%s reached the target %lld times", id, w_target_ok(w, id));
	return PASS;
}

/*
 * R17: a decision key that is a string and a hash whose attempts is not a
 * number, queued among 20 good jobs (poisoned before the worker starts). Both are dead (redis-error) and
 * acknowledged; the PEL empties and the good ones are done.
 */
static int
sc_poisoned_hash(struct world *w)
{
	struct w_params p = base_params();

	p.max_in_flight = 4;
	if (enqueue_n(w, "good", 10, h_now_ms() + 600000) != 0 ||
	    enqueue_n(w, "bad", 2, h_now_ms() + 600000) != 0 ||
	    enqueue_n(w, "more", 10, h_now_ms() + 600000) != 0)
		return SKIP;
	free(h_redis_str(w_rc(w), "DEL " W_PREFIX ":decision:bad-0"));
	free(h_redis_str(w_rc(w), "SET " W_PREFIX ":decision:bad-0 x"));
	free(h_redis_str(w_rc(w), "HSET " W_PREFIX ":decision:bad-1 attempts three"));
	if (w_add_worker(w, "a", &p) < 0 || w_start(w, 0) != 0)
		return SKIP;
	check(wait_terminal(w, "good", 10, 30000) == 0 && wait_terminal(w, "more", 10, 30000) == 0,
	    "the good jobs were not all terminal within 30 s");
	long long dead = 0;
	for (int t = 0; t < 300 && (dead = h_stream_count(w_rc(w), W_DEAD, "reason",
	    "redis-error")) < 2; t++)
		w_pause_ms(100);
	check(dead == 2, "%lld of 2 poisoned entries dead with redis-error", dead);
	for (int t = 0; t < 100 && w_pending(w) != 0; t++)
		w_pause_ms(100);
	check(w_pending(w) == 0, "%lld entries left pending", w_pending(w));
	return PASS;
}

/*
 * A rolling reload: only "a" is lowered to claim_idle_ms 1500. "b" still
 * renews every 4 s; "a" must judge b by b's own published claim_idle_ms
 * and take nothing (before: a's XAUTOCLAIM took b's calls in progress).
 */
static int
sc_rolling_reload(struct world *w)
{
	return reload_under_calls(w, "roll", 6, 1);
}

/* ------------------------------------------------------------------ */
/* issue 27 item 4: a failover with a lagging replica (R19)            */

#define LAG_JOBS	10

struct lag {
	struct world *w;
	int port;		/* the primary's TCP port (the replication link) */
	struct h_redis rep;	/* its replica */
	int rep_port;
	redisContext *rc;	/* to the replica */
};

static int
lag_link_up(void *arg)
{
	struct lag *l = arg;
	char *info = h_redis_str(l->rc, "INFO replication");
	int up = info != NULL && strstr(info, "master_link_status:up") != NULL;

	free(info);
	return up;
}

/* A replica of the world's redis (which listens on l->port), in sync. */
static int
lag_replica_up(struct lag *l)
{
	char extra[160];

	l->rep_port = h_free_port();
	snprintf(extra, sizeof extra, "port %d\nbind 127.0.0.1\nreplicaof 127.0.0.1 %d\n"
	    "repl-diskless-sync-delay 0\n", l->rep_port, l->port);
	if (l->rep_port <= 0 || h_redis_start_conf(&l->rep, 1, extra) != 0 ||
	    (l->rc = h_redis_connect(&l->rep)) == NULL)
		return -1;
	return h_wait_until(lag_link_up, l, 30000);
}

/*
 * One round: LAG_JOBS records decided and replicated, the replica frozen
 * (SIGSTOP: it lags), worker `consumer` (wait_replicas = wait) started on
 * the primary until `busy` holds -- every job done, or every job tried --
 * then the primary SIGKILLed, the replica resumed and promoted, and a
 * worker started on it. Each job must end done; the target's 2xx count per
 * job must be `runs`. The promoted replica is the world's redis afterwards.
 */
static int
lag_round(struct world *w, struct lag *l, const char *prefix, int wait, int runs)
{
	struct w_params p = base_params();
	char extra[96], id[64];

	snprintf(extra, sizeof extra, "wait_replicas = %d\nwait_timeout_ms = 200\n", wait);
	p.redis_extra = extra;
	p.max_attempts = 1000;
	p.base_ms = 50;
	p.cap_ms = 200;
	if (lag_replica_up(l) != 0 || enqueue_n(w, prefix, LAG_JOBS, h_now_ms() + 600000) != 0 ||
	    h_redis_int(w_rc(w), "WAIT 1 10000") != 1)
		return SKIP;
	kill(l->rep.pid, SIGSTOP);
	/* and its link cut: else the kernel holds what the primary sends the
	 * stopped replica, which reads it once resumed -- no lag at all */
	check(h_redis_int(w_rc(w), "CLIENT KILL TYPE replica") == 1, "the replica's link not cut");
	long long calls_before = w_fake_stat(&w->target, "total");
	int i = w_add_worker(w, prefix, &p);
	if (i < 0 || w_start(w, i) != 0)
		return SKIP;
	if (wait == 0) {
		check(wait_terminal(w, prefix, LAG_JOBS, 60000) == 0, "not all done on the primary");
	} else {
		struct log_wait lw = { w, i, "event=job.unreplicated", 2 * LAG_JOBS };
		check(h_wait_until(logged_n, &lw, 60000) == 0, "fewer than %d unreplicated tries",
		    2 * LAG_JOBS);
		check(w_fake_stat(&w->target, "total") == calls_before,
		    "%lld calls with the replica frozen", w_fake_stat(&w->target, "total") -
		    calls_before);
	}
	/* the failover */
	w_kill(w, i);
	h_stop(w->redis.pid, SIGKILL, 5000);
	w->redis.pid = 0;
	h_redis_stop(&w->redis);	/* its dir stays; nothing runs */
	kill(l->rep.pid, SIGCONT);
	char *ok = h_redis_str(l->rc, "REPLICAOF NO ONE");
	check(ok != NULL, "REPLICAOF NO ONE refused");
	free(ok);
	redisFree(l->rc);
	l->rc = NULL;
	w->redis = l->rep;
	l->port = l->rep_port;
	memset(&l->rep, 0, sizeof l->rep);
	w_reconnect(w);
	w->w[i].p.redis_extra = "wait_replicas = 0\n";	/* the new primary has no replica */
	if (w_start(w, i) != 0)
		return SKIP;
	check(wait_terminal(w, prefix, LAG_JOBS, 60000) == 0, "not all terminal after the failover");
	check(count_in(w, prefix, LAG_JOBS, "done") == LAG_JOBS, "%d of %d done",
	    count_in(w, prefix, LAG_JOBS, "done"), LAG_JOBS);
	for (int k = 0; k < LAG_JOBS; k++)
		check(w_target_ok(w, job_id(id, sizeof id, prefix, k)) == runs,
		    "%s: %lld 2xx, want %d", id, w_target_ok(w, id), runs);
	w_kill(w, i);
	return PASS;
}

/*
 * The README's failover table, measured: with wait_replicas = 0 a failover
 * to a replica that lagged runs every acknowledged job again (each of the
 * ten exactly twice); with wait_replicas = 1 no call is made while the
 * replica cannot acknowledge its call step, and after the failover each
 * job runs once.
 */
static int
sc_failover_lag(struct world *w)
{
	struct lag l = { .w = w };
	char port[16];
	int r;

	/* the world's redis on TCP too, for its replica */
	l.port = h_free_port();
	snprintf(port, sizeof port, "%d", l.port);
	redisReply *rep = redisCommand(w_rc(w), "CONFIG SET port %s repl-diskless-sync-delay 0",
	    port);
	int ok = rep != NULL && rep->type == REDIS_REPLY_STATUS;
	freeReplyObject(rep);
	if (!ok)
		return SKIP;
	r = lag_round(w, &l, "lag0", 0, 2);
	if (r == PASS)
		r = lag_round(w, &l, "lag1", 1, 1);
	if (l.rc != NULL)
		redisFree(l.rc);
	if (l.rep.pid > 0) {
		kill(l.rep.pid, SIGCONT);
		h_redis_stop(&l.rep);
	}
	return r;
}

/* ------------------------------------------------------------------ */
/* issue 27, "done means": a Sentinel failover with replica lag (R19)  */

#define SL_JOBS		10
#define SL_NSENT	3

struct sl {
	struct world *w;
	struct h_redis rep, fresh;	/* the replica; one made for the new primary */
	int port, rep_port;		/* TCP: the primary's, the replica's */
	struct h_rnode sent[SL_NSENT];
	char name[16];			/* the master's name at the sentinels */
	char at[256];			/* the workers' [redis] lines */
};

/* redis-server (appendonly) on 127.0.0.1:*port too; `replicaof` 0: none. */
static int
sl_node(struct h_redis *r, int *port, int replicaof)
{
	char extra[160];
	int n;

	*port = h_free_port();
	n = snprintf(extra, sizeof extra, "port %d\nbind 127.0.0.1\nrepl-diskless-sync-delay 0\n",
	    *port);
	if (replicaof > 0)
		snprintf(extra + n, sizeof extra - (size_t)n, "replicaof 127.0.0.1 %d\n", replicaof);
	return *port > 0 ? h_redis_start_conf(r, 1, extra) : -1;
}

static int
sl_link_up(void *arg)
{
	redisContext *c = h_redis_connect(arg);
	char *info = c ? h_redis_str(c, "INFO replication") : NULL;
	int up = info != NULL && strstr(info, "master_link_status:up") != NULL;

	free(info);
	if (c != NULL)
		redisFree(c);
	return up;
}

/* A reply array's length from sentinel i, -1 when none. */
static long long
sl_ask(const struct sl *l, int i, const char *what)
{
	redisContext *c = h_redis_connect_tcp(l->sent[i].port);
	redisReply *r = c ? redisCommand(c, "SENTINEL %s %s", what, l->name) : NULL;
	long long n = r != NULL && r->type == REDIS_REPLY_ARRAY ? (long long)r->elements : -1;

	freeReplyObject(r);
	if (c != NULL)
		redisFree(c);
	return n;
}

/* Every sentinel knows the replica and the two other sentinels: a
 * failover can then be agreed on. */
static int
sl_sentinels_ready(void *arg)
{
	const struct sl *l = arg;

	w_pause_ms(100);
	for (int i = 0; i < SL_NSENT; i++)
		if (sl_ask(l, i, "replicas") != 1 || sl_ask(l, i, "sentinels") != SL_NSENT - 1)
			return 0;
	return 1;
}

/* The primary's port according to sentinel i, or -1. */
static int
sl_primary(const struct sl *l, int i)
{
	redisContext *c = h_redis_connect_tcp(l->sent[i].port);
	redisReply *r = c ? redisCommand(c, "SENTINEL get-master-addr-by-name %s", l->name) : NULL;
	int port = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 ?
	    atoi(r->element[1]->str) : -1;

	freeReplyObject(r);
	if (c != NULL)
		redisFree(c);
	return port;
}

static int
sl_failed_over(void *arg)
{
	const struct sl *l = arg;

	w_pause_ms(50);
	return sl_primary(l, 0) == l->rep_port && sl_primary(l, 1) == l->rep_port;
}

/* The world's redis becomes a new primary (TCP too) with a replica in sync
 * and three sentinels that know both and each other. */
static int
sl_up(struct sl *l, int round)
{
	struct world *w = l->w;
	char conf[256], name[32];

	h_redis_stop(&w->redis);
	w_reconnect(w);
	if (sl_node(&w->redis, &l->port, 0) != 0 || w_rc(w) == NULL ||
	    sl_node(&l->rep, &l->rep_port, l->port) != 0 ||
	    h_wait_until(sl_link_up, &l->rep, 30000) != 0)
		return -1;
	snprintf(l->name, sizeof l->name, "lag%d", round);
	snprintf(conf, sizeof conf, "sentinel monitor %s 127.0.0.1 %d 2\n"
	    "sentinel down-after-milliseconds %s 1000\n"
	    "sentinel failover-timeout %s 10000\n", l->name, l->port, l->name, l->name);
	for (int i = 0; i < SL_NSENT; i++) {
		snprintf(name, sizeof name, "sl%d-sentinel-%d", round, i);
		if (h_rnode_start(&l->sent[i], name, conf, H_RNODE_SENTINEL) != 0)
			return -1;
	}
	snprintf(l->at, sizeof l->at, "sentinels = 127.0.0.1:%d, 127.0.0.1:%d, 127.0.0.1:%d\n"
	    "master_name = %s\nallow_hosts = 127.0.0.1:%d, 127.0.0.1:%d\n", l->sent[0].port,
	    l->sent[1].port, l->sent[2].port, l->name, l->port, l->rep_port);
	return h_wait_until(sl_sentinels_ready, l, 60000);
}

/* Stops what sl_up started but the world's redis (w_down stops that). */
static void
sl_down(struct sl *l)
{
	for (int i = 0; i < SL_NSENT; i++)
		if (l->sent[i].pid > 0)
			h_stop(l->sent[i].pid, SIGTERM, 5000);
	if (l->rep.pid > 0)
		kill(l->rep.pid, SIGCONT);
	h_redis_stop(&l->rep);
	h_redis_stop(&l->fresh);
	memset(l->sent, 0, sizeof l->sent);
}

/* Lines holding needle in the logs of workers a and b. */
static int
sl_logged(struct world *w, int a, int b, const char *needle)
{
	return log_count(w, a, needle) + log_count(w, b, needle);
}

struct sl_wait {
	struct world *w;
	int a, b, min;
};

static int
sl_unreplicated(void *arg)
{
	struct sl_wait *s = arg;

	w_pause_ms(50);
	return sl_logged(s->w, s->a, s->b, "event=job.unreplicated") >= s->min;
}

/*
 * One round: SL_JOBS jobs decided and replicated; the replica frozen
 * (SIGSTOP, its link cut: it lags); two workers in Sentinel mode with
 * wait_replicas = wait run on the primary until every job is done (0) or
 * every job has been refused its call step twice (1); the primary
 * SIGKILLed, the replica resumed, the sentinels promote it, and the same
 * workers follow it. With 1 the new primary is given a replica of its own
 * (WAIT has something to count). Each job must end done, its 2xx count
 * `runs`; a second 2xx must be explained: its first came before the kill.
 */
static int
sl_round(struct sl *l, int round, int wait, int runs)
{
	struct world *w = l->w;
	struct w_params p = base_params();
	char extra[96], prefix[16], id[64], name[32];
	int a = w->nworkers, b = a + 1;

	snprintf(prefix, sizeof prefix, "sl%d", round);
	snprintf(extra, sizeof extra, "wait_replicas = %d\nwait_timeout_ms = 200\n", wait);
	p.redis_extra = extra;
	p.redis_at = l->at;
	p.max_attempts = 1000;
	p.base_ms = 50;
	p.cap_ms = 200;
	long long t0 = w_mono_ms();
	if (sl_up(l, round) != 0 || enqueue_n(w, prefix, SL_JOBS, h_now_ms() + 600000) != 0 ||
	    h_redis_int(w_rc(w), "WAIT 1 10000") != 1)
		return SKIP;
	kill(l->rep.pid, SIGSTOP);
	/* and its link cut: else the kernel holds what the primary sends the
	 * stopped replica, which reads it once resumed -- no lag at all */
	check(h_redis_int(w_rc(w), "CLIENT KILL TYPE replica") == 1, "the replica's link not cut");
	long long calls_before = w_fake_stat(&w->target, "total");
	snprintf(name, sizeof name, "%s-a", prefix);
	if (w_add_worker(w, name, &p) != a)
		return SKIP;
	snprintf(name, sizeof name, "%s-b", prefix);
	if (w_add_worker(w, name, &p) != b || w_start(w, a) != 0 || w_start(w, b) != 0)
		return SKIP;
	if (wait == 0) {
		check(wait_terminal(w, prefix, SL_JOBS, 60000) == 0, "not all done on the primary");
		check(count_in(w, prefix, SL_JOBS, "done") == SL_JOBS, "%d of %d done on the primary",
		    count_in(w, prefix, SL_JOBS, "done"), SL_JOBS);
	} else {
		struct sl_wait sw = { w, a, b, 2 * SL_JOBS };
		check(h_wait_until(sl_unreplicated, &sw, 60000) == 0,
		    "fewer than %d unreplicated tries", 2 * SL_JOBS);
		check(w_fake_stat(&w->target, "total") == calls_before,
		    "%lld calls with the replica frozen", w_fake_stat(&w->target, "total") -
		    calls_before);
	}
	/* the failover, by the sentinels */
	long long killed_at = h_now_ms();
	h_stop(w->redis.pid, SIGKILL, 5000);
	w->redis.pid = 0;
	kill(l->rep.pid, SIGCONT);
	long long k0 = w_mono_ms();
	if (h_wait_until(sl_failed_over, l, 60000) != 0) {
		check(0, "the sentinels did not promote the replica within 60 s");
		return PASS;
	}
	long long failover_ms = w_mono_ms() - k0;
	h_redis_stop(&w->redis);	/* its dir stays; nothing runs */
	w->redis = l->rep;
	memset(&l->rep, 0, sizeof l->rep);
	w_reconnect(w);
	int fresh_port;
	if (wait > 0 && sl_node(&l->fresh, &fresh_port, l->rep_port) != 0)
		return SKIP;
	check(wait_terminal(w, prefix, SL_JOBS, 60000) == 0, "not all terminal after the failover");
	check(count_in(w, prefix, SL_JOBS, "done") == SL_JOBS, "%d of %d done after the failover",
	    count_in(w, prefix, SL_JOBS, "done"), SL_JOBS);
	int reruns = 0, unexplained = 0;
	for (int k = 0; k < SL_JOBS; k++) {
		json_t *calls = h_calls_with_key(&w->target, job_id(id, sizeof id, prefix, k)), *c;
		long long ok = 0, first = 0;
		size_t i;
		json_array_foreach(calls, i, c) {
			json_int_t st = json_integer_value(json_object_get(c, "status"));
			if (st < 200 || st >= 300)
				continue;
			if (ok++ == 0)
				first = json_integer_value(json_object_get(c, "arrival_ms"));
		}
		json_decref(calls);
		check(ok == runs, "%s: %lld 2xx, want %d", id, ok, runs);
		reruns += ok > 1 ? (int)ok - 1 : 0;
		/* a re-run is the failover's only when the job's first call came
		 * before the primary died (its result was not replicated) */
		unexplained += ok > 1 && first >= killed_at;
	}
	check(unexplained == 0, "%d re-runs whose first call came after the kill", unexplained);
	w_say("    wait_replicas = %d: %d jobs, %d re-run (%d first called after the kill), "
	    "%d unreplicated tries, the sentinels promoted the replica in %lld ms, "
	    "round %.1f s\n", wait, SL_JOBS, reruns, unexplained,
	    sl_logged(w, a, b, "event=job.unreplicated"), failover_ms,
	    (w_mono_ms() - t0) / 1000.0);
	w_kill(w, a);
	w_kill(w, b);
	sl_down(l);
	return PASS;
}

/*
 * The README's failover row through Sentinel (make faults' 27.4 promotes
 * by hand): wait_replicas = 0 loses nothing and re-runs each job whose
 * result the replica missed; wait_replicas = 1 makes no call while the
 * replica lags and runs each job once.
 */
static int
sc_sentinel_lag(struct world *w)
{
	struct sl l;
	char *path = h_which("redis-sentinel");

	if (path == NULL) {
		printf("    redis-sentinel is not installed (Debian package redis-sentinel)\n");
		return SKIP;
	}
	free(path);
	memset(&l, 0, sizeof l);
	l.w = w;
	int r = sl_round(&l, 0, 0, 2);
	if (r == PASS) {
		memset(&l, 0, sizeof l);
		l.w = w;
		r = sl_round(&l, 1, 1, 1);
	}
	sl_down(&l);
	return r;
}

/* ------------------------------------------------------------------ */
/* issue 27, "done means": a slot migration without pre-created keys   */

#define MG_NODES	3
#define MG_SHARDS	3
#define MG_JOBS		60
#define MG_LATE		10	/* decided into the moving shard mid-migration */
#define MG_SHARD	0	/* the moving shard */

struct mg {
	struct world *w;
	struct h_rnode n[MG_NODES];
	redisContext *c[MG_NODES];
	char id[MG_NODES][64];
	char at[256];		/* the workers' [redis] lines */
	char late[MG_LATE][64];	/* as long as an id buffer (snprintf of one) */
};

static redisReply *
mg_on(redisContext *c, int asking, const char *fmt, va_list ap)
{
	if (asking)
		freeReplyObject(redisCommand(c, "ASKING"));
	return redisvCommand(c, fmt, ap);
}

/* The command answered where the cluster keeps its key now: first asked of
 * every node plainly (the owner, or a migrating source that still holds the
 * key, answers), then with ASKING (the importing node). NULL when none
 * answered without an error. */
static redisReply *
mg_any(struct mg *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static redisReply *
mg_any(struct mg *m, const char *fmt, ...)
{
	for (int asking = 0; asking < 2; asking++)
		for (int i = 0; i < MG_NODES; i++) {
			va_list ap;
			va_start(ap, fmt);
			redisReply *r = m->c[i] ? mg_on(m->c[i], asking, fmt, ap) : NULL;
			va_end(ap);
			if (r != NULL && r->type != REDIS_REPLY_ERROR)
				return r;
			freeReplyObject(r);
		}
	return NULL;
}

static const char *
mg_prefix(char *buf, size_t n, const char *id)
{
	unsigned s = cluster_shard_of(id, strlen(id), MG_SHARDS);

	return cluster_shard_prefix(buf, n, W_PREFIX, s, MG_SHARDS) == 0 ? buf : NULL;
}

/* The decider: the record and its entry into the record's shard. */
static int
mg_decide(struct mg *m, const char *id)
{
	char p[64], created[WTIME_RFC3339_LEN];
	long long now = h_now_ms();
	char *json = h_record_json(id, "gate.open", "canal/gate/1", now - 1000, now + 600000, 0,
	    NULL);
	char *jws = json ? h_sign(json, h_data("test-es256.key")) : NULL;
	redisReply *a = NULL, *b = NULL;

	wtime_format_rfc3339(now, created, sizeof created);
	if (jws != NULL && mg_prefix(p, sizeof p, id) != NULL &&
	    (a = mg_any(m, "HSET %s:decision:%s record %s state queued createdAt %s", p, id, jws,
	    created)) != NULL)
		b = mg_any(m, "XADD %s:jobs * id %s", p, id);
	int ok = b != NULL;
	freeReplyObject(a);
	freeReplyObject(b);
	free(json);
	free(jws);
	return ok ? 0 : -1;
}

static char *
mg_state(struct mg *m, const char *id)
{
	char p[64];
	redisReply *r = mg_prefix(p, sizeof p, id) ?
	    mg_any(m, "HGET %s:decision:%s state", p, id) : NULL;
	char *s = r != NULL && r->type == REDIS_REPLY_STRING ? strdup(r->str) : NULL;

	freeReplyObject(r);
	return s;
}

/* Jobs of the run not yet terminal: mg-0 .. mg-(MG_JOBS-1) and the late. */
static int
mg_open(struct mg *m, int *done)
{
	char id[64];
	int open = 0;

	*done = 0;
	for (int i = 0; i < MG_JOBS + MG_LATE; i++) {
		const char *j = i < MG_JOBS ? job_id(id, sizeof id, "mg", i) : m->late[i - MG_JOBS];
		char *s = mg_state(m, j);
		open += !w_terminal(s);
		*done += s != NULL && strcmp(s, "done") == 0;
		free(s);
	}
	return open;
}

static int
mg_all_terminal(void *arg)
{
	int done;

	w_pause_ms(200);
	return mg_open(arg, &done) == 0;
}

/* Jobs of the shards that do not move not yet terminal. */
static int
mg_others_open(struct mg *m)
{
	char id[64];
	int open = 0;

	for (int i = 0; i < MG_JOBS; i++) {
		job_id(id, sizeof id, "mg", i);
		if (cluster_shard_of(id, strlen(id), MG_SHARDS) == MG_SHARD)
			continue;
		char *s = mg_state(m, id);
		open += !w_terminal(s);
		free(s);
	}
	return open;
}

static int
mg_others_terminal(void *arg)
{
	w_pause_ms(200);
	return mg_others_open(arg) == 0;
}

/* Every job of the moving shard called at the target. */
static int
mg_moving_called(void *arg)
{
	struct mg *m = arg;
	char id[64];

	w_pause_ms(200);
	for (int i = 0; i < MG_JOBS + MG_LATE; i++) {
		const char *j = i < MG_JOBS ? job_id(id, sizeof id, "mg", i) : m->late[i - MG_JOBS];
		if (cluster_shard_of(j, strlen(j), MG_SHARDS) == MG_SHARD &&
		    w_target_ok(m->w, j) == 0)
			return 0;
	}
	return 1;
}

static int
mg_cluster_ok(void *arg)
{
	struct mg *m = arg;

	w_pause_ms(100);
	for (int i = 0; i < MG_NODES; i++) {
		char *info = h_redis_str(m->c[i], "CLUSTER INFO");
		int ok = info && strstr(info, "cluster_state:ok") &&
		    strstr(info, "cluster_known_nodes:3");
		free(info);
		if (!ok)
			return 0;
	}
	return 1;
}

/* Three primaries, no replicas, joined by redis-cli --cluster create. */
static int
mg_up(struct mg *m)
{
	char name[32], addr[MG_NODES][32], seeds[160] = "";
	char *argv[16], *out = NULL;
	int argc = 0;

	argv[argc++] = "redis-cli";
	argv[argc++] = "--cluster";
	argv[argc++] = "create";
	for (int i = 0; i < MG_NODES; i++) {
		snprintf(name, sizeof name, "mg-node-%d", i);
		if (h_rnode_start(&m->n[i], name, "save \"\"\nappendonly no\ncluster-enabled yes\n"
		    "cluster-config-file nodes.conf\ncluster-node-timeout 1000\n", H_RNODE_CLUSTER) != 0 ||
		    (m->c[i] = h_redis_connect_tcp(m->n[i].port)) == NULL)
			return -1;
		char *myid = h_redis_str(m->c[i], "CLUSTER MYID");
		if (myid == NULL)
			return -1;
		snprintf(m->id[i], sizeof m->id[i], "%s", myid);
		free(myid);
		snprintf(addr[i], sizeof addr[i], "127.0.0.1:%d", m->n[i].port);
		argv[argc++] = addr[i];
		size_t l = strlen(seeds);
		snprintf(seeds + l, sizeof seeds - l, "%s%s", i ? ", " : "", addr[i]);
	}
	argv[argc++] = "--cluster-replicas";
	argv[argc++] = "0";
	argv[argc++] = "--cluster-yes";
	argv[argc] = NULL;
	int rc = h_run(argv, 60000, &out);
	if (rc != 0)
		printf("    redis-cli --cluster create: %d\n%s\n", rc, out ? out : "");
	free(out);
	snprintf(m->at, sizeof m->at, "cluster = %s\nshards = %d\n", seeds, MG_SHARDS);
	return rc == 0 ? h_wait_until(mg_cluster_ok, m, 60000) : -1;
}

static void
mg_down(struct mg *m)
{
	for (int i = 0; i < MG_NODES; i++) {
		if (m->c[i] != NULL)
			redisFree(m->c[i]);
		if (m->n[i].pid > 0)
			h_stop(m->n[i].pid, SIGTERM, 5000);
	}
}

/*
 * A cluster of three primaries, shards = 3, two workers, 60 jobs of 2 s
 * calls, and nothing made beforehand but what the decider writes (no
 * P:scheduled, P:dead, P:notify, no liveness key). Mid-run one shard's
 * slot is set IMPORTING on another primary and MIGRATING on its own, and
 * its keys are moved one by one (MIGRATE, as redis-cli --cluster reshard
 * does) while its calls are in flight; then, the slot still mid-migration,
 * 10 more jobs are decided into that shard (on the importing node, as a
 * decider that follows -ASK writes them). Every job of that shard must be
 * called during the migration; then it ends (SETSLOT NODE) and every job
 * is done, each called once, no PEL left.
 */
static int
sc_migration(struct world *w)
{
	struct mg m;
	struct w_params p = base_params();
	char id[64], sp[64], key[128];
	int done = 0;
	char *path = h_which("redis-cli");

	if (path == NULL) {
		printf("    redis-cli is not installed (Debian package redis-tools)\n");
		return SKIP;
	}
	free(path);
	memset(&m, 0, sizeof m);
	m.w = w;
	long long t0 = w_mono_ms();
	int r = SKIP;
	p.redis_at = m.at;
	/* room for every job the moving shard holds until the migration's end
	 * (its final write waits: README "Redis"); with 4 the held ones fill
	 * both workers and the other shards wait for the end too */
	p.max_in_flight = 24;
	p.claim_idle_ms = 3000;
	p.action_timeout_ms = 20000;
	p.max_attempts = 1000;
	p.base_ms = 50;
	p.cap_ms = 500;
	if (mg_up(&m) != 0 || script(w, "{\"default\":{\"delay_ms\":2000}}") != 0 ||
	    w_add_worker(w, "mg-a", &p) < 0 || w_add_worker(w, "mg-b", &p) < 0 ||
	    w_start(w, 0) != 0 || w_start(w, 1) != 0)
		goto out;
	for (int i = 0; i < MG_JOBS; i++)
		if (mg_decide(&m, job_id(id, sizeof id, "mg", i)) != 0)
			goto out;
	for (int i = 0, k = 0; k < MG_LATE; i++) {
		snprintf(id, sizeof id, "mgl-%d", i);
		if (cluster_shard_of(id, strlen(id), MG_SHARDS) == MG_SHARD)
			snprintf(m.late[k++], sizeof m.late[0], "%s", id);
	}
	if (wait_calls(w, 8, 30000) != 0)
		goto out;
	/* the migration: the moving shard's slot, from its owner to the next */
	if (cluster_shard_prefix(sp, sizeof sp, W_PREFIX, MG_SHARD, MG_SHARDS) != 0)
		goto out;
	unsigned slot = cluster_key_slot(sp, strlen(sp));
	int src = -1;
	snprintf(key, sizeof key, "%s:jobs", sp);
	for (int i = 0; i < MG_NODES && src < 0; i++)
		if (h_redis_int(m.c[i], "EXISTS %s", key) == 1)
			src = i;
	if (src < 0)
		goto out;
	int dst = (src + 1) % MG_NODES;
	r = PASS;
	/* the point of the scenario: keys a script might name and that do not
	 * exist yet (issue 27 item 5) */
	static const char *const absent[] = { "scheduled", "dead", "notify" };
	for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
		check(h_redis_int(m.c[src], "EXISTS %s:%s", sp, absent[i]) == 0,
		    "%s:%s exists before the migration", sp, absent[i]);
	long long calls_at_start = w_fake_stat(&w->target, "total"), mig_start = h_now_ms();
	char *ok1 = h_redis_str(m.c[dst], "CLUSTER SETSLOT %u IMPORTING %s", slot, m.id[src]);
	char *ok2 = h_redis_str(m.c[src], "CLUSTER SETSLOT %u MIGRATING %s", slot, m.id[dst]);
	check(ok1 && ok2, "SETSLOT IMPORTING/MIGRATING refused");
	free(ok1);
	free(ok2);
	int moved = 0, batches = 0;
	for (; batches < 1000; batches++) {
		redisReply *keys = redisCommand(m.c[src], "CLUSTER GETKEYSINSLOT %u 1", slot);
		size_t n = keys && keys->type == REDIS_REPLY_ARRAY ? keys->elements : 0;
		for (size_t i = 0; i < n; i++) {
			/* NOKEY when a worker's write changed it meanwhile: asked again */
			redisReply *mr = redisCommand(m.c[src], "MIGRATE 127.0.0.1 %d %s 0 5000",
			    m.n[dst].port, keys->element[i]->str);
			moved += mr && mr->type == REDIS_REPLY_STATUS && strcmp(mr->str, "OK") == 0;
			freeReplyObject(mr);
		}
		freeReplyObject(keys);
		if (n == 0)
			break;
		w_pause_ms(50);	/* a reshard's pace: the shard is split meanwhile */
	}
	check(batches < 1000, "the slot's keys never left the source");
	for (int k = 0; k < MG_LATE; k++)
		check(mg_decide(&m, m.late[k]) == 0, "%s not decided mid-migration", m.late[k]);
	check(h_wait_until(mg_moving_called, &m, 60000) == 0,
	    "not every job of the moving shard called during the migration");
	/* and the other shards are not held up by it */
	check(h_wait_until(mg_others_terminal, &m, 30000) == 0, "%d jobs of the other shards "
	    "not terminal while the slot migrated", mg_others_open(&m));
	long long mig_end = h_now_ms(), mid_calls = 0;
	int moving = 0, held = 0, called_mid = 0;
	for (int i = 0; i < MG_JOBS + MG_LATE; i++) {
		const char *j = i < MG_JOBS ? job_id(id, sizeof id, "mg", i) : m.late[i - MG_JOBS];
		if (cluster_shard_of(j, strlen(j), MG_SHARDS) != MG_SHARD)
			continue;
		moving++;
		char *st = mg_state(&m, j);
		held += !w_terminal(st);	/* its final write waits for the end */
		free(st);
		json_t *calls = h_calls_with_key(&w->target, j), *c;
		size_t ci;
		long long before = mid_calls;
		json_array_foreach(calls, ci, c) {
			long long at = json_integer_value(json_object_get(c, "arrival_ms"));
			mid_calls += at >= mig_start && at <= mig_end;
		}
		called_mid += mid_calls > before;
		json_decref(calls);
	}
	check(mid_calls >= MG_LATE, "%lld of the moving shard's calls during the migration "
	    "(at least the %d decided in it)", mid_calls, MG_LATE);
	/* the migration ends: the slot is the importing node's */
	for (int i = 0; i < MG_NODES; i++) {
		char *ok = h_redis_str(m.c[i], "CLUSTER SETSLOT %u NODE %s", slot, m.id[dst]);
		check(ok != NULL || i != src, "SETSLOT NODE refused by the source");
		free(ok);
	}
	long long ended = w_mono_ms();
	check(h_wait_until(mg_all_terminal, &m, 60000) == 0, "%d jobs not terminal 60 s after "
	    "the migration", mg_open(&m, &done));
	mg_open(&m, &done);
	check(done == MG_JOBS + MG_LATE, "%d of %d done", done, MG_JOBS + MG_LATE);
	int twice = executed_twice(w, "mg", MG_JOBS);
	for (int k = 0; k < MG_LATE; k++)
		twice += w_target_ok(w, m.late[k]) != 1;
	check(twice == 0, "%d jobs not called exactly once", twice);
	long long pel = 0;
	for (unsigned s = 0; s < MG_SHARDS; s++) {
		char pp[64];
		if (cluster_shard_prefix(pp, sizeof pp, W_PREFIX, s, MG_SHARDS) != 0)
			continue;
		redisReply *x = mg_any(&m, "XPENDING %s:jobs " W_GROUP, pp);
		pel += x && x->type == REDIS_REPLY_ARRAY && x->elements > 0 &&
		    x->element[0]->type == REDIS_REPLY_INTEGER ? x->element[0]->integer : 1;
		freeReplyObject(x);
	}
	check(pel == 0, "%lld entries left pending", pel);
	w_say("    slot %u (%s) :%d -> :%d after %lld calls: %d keys moved in %d steps; %d of "
	    "the %d jobs in the moving shard (%d decided mid-migration) called while it "
	    "migrated (%lld calls, %.1f s), %d of them held for their final write; all done "
	    "%.1f s after its end; %d TRYAGAIN, %d ASK log lines; %.1f s in all\n", slot, sp,
	    m.n[src].port, m.n[dst].port, calls_at_start, moved, batches, called_mid, moving,
	    MG_LATE, mid_calls, (mig_end - mig_start) / 1000.0, held,
	    (w_mono_ms() - ended) / 1000.0,
	    log_count(w, 0, "TRYAGAIN") + log_count(w, 1, "TRYAGAIN"),
	    log_count(w, 0, "redis.ask") + log_count(w, 1, "redis.ask"),
	    (w_mono_ms() - t0) / 1000.0);
out:
	mg_down(&m);
	return r;
}

struct scenario {
	const char *name, *item;
	int (*run)(struct world *w);
	int check_tokens;
};

static const struct scenario all[] = {
	{ "deep-pel", "7.1 (R11)", sc_deep_pel, 0 },
	{ "error-replies", "7.2 (R17, -READONLY)", sc_error_replies, 0 },
	{ "loading", "7.2 (R17, -LOADING)", sc_loading, 0 },
	{ "refuse-401", "7.3 (R9, R12)", sc_refuse_401, 1 },
	{ "stop-results", "7.5 (R15)", sc_stop_results, 0 },
	{ "reload-lease", "7.6 (R16, leases)", sc_reload_lease, 0 },
	{ "reload-removed-action", "7.6 (R16, unknown-action)", sc_reload_removed_action, 0 },
	{ "cmd-down", "7.7 (R17)", sc_cmd_down, 0 },
	{ "trim", "7.9 (warrantd(7) §2)", sc_trim, 0 },
	{ "stall-freeze", "22.1 (R11, SIGSTOP)", sc_stall_freeze, 0 },
	{ "stall-refused", "22.1 (R10, R11, NOREPLICAS)", sc_stall_refused, 0 },
	{ "restart-own-pel", "22.3 (R10, R14)", sc_restart_own_pel, 0 },
	{ "queued-twice", "22.4 (R4)", sc_queued_twice, 0 },
	{ "poisoned-hash", "22.6 (R17)", sc_poisoned_hash, 0 },
	{ "rolling-reload", "22.8 (R11, R16)", sc_rolling_reload, 0 },
	{ "failover-lag", "27.4 (R19, WAIT)", sc_failover_lag, 0 },
	{ "sentinel-lag", "27 (R19, Sentinel)", sc_sentinel_lag, 0 },
	{ "migration", "27.5 (no pre-created keys)", sc_migration, 0 },
};

static int
run_one(const struct scenario *s)
{
	struct world w;
	long long t0 = w_mono_ms();
	int r;

	printf("scenario %s (issue item %s)\n", s->name, s->item);
	fflush(stdout);
	verdict = PASS;
	if (w_up(&w, 60, s->check_tokens) != 0)
		r = SKIP;
	else
		r = s->run(&w);
	if (r == SKIP)
		printf("    could not set the scenario up (see the logs; WARRANTD_KEEP_TMP=1 "
		    "keeps them)\n");
	r = r == SKIP ? FAIL : verdict;
	for (int i = 0; i < w.nworkers; i++)
		if (w.w[i].d.log[0] && !h_daemon_log_clean(&w.w[i].d))
			r = FAIL;
	w_down(&w);
	printf("  %s %s (%.1f s)\n", r == PASS ? "PASS" : "FAIL", s->name,
	    (w_mono_ms() - t0) / 1000.0);
	fflush(stdout);
	return r;
}

int
scenarios_run(const char *name)
{
	size_t n = sizeof all / sizeof all[0];
	int failed = 0, found = 0;

	for (size_t i = 0; i < n; i++) {
		if (strcmp(name, "list") == 0) {
			printf("%-22s issue item %s\n", all[i].name, all[i].item);
			found = 1;
		} else if (strcmp(name, "all") == 0 || strcmp(name, all[i].name) == 0) {
			found = 1;
			if (run_one(&all[i]) != PASS)
				failed++;
		}
	}
	if (!found) {
		fprintf(stderr, "faults: no scenario %s (try SCENARIO=list)\n", name);
		return 64;
	}
	if (strcmp(name, "list") != 0)
		printf("scenarios: %d failed\n", failed);
	return failed ? 1 : 0;
}
