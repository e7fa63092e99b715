/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * soak SECONDS: one warrantd under steady load for SECONDS (make soak,
 * SOAK_SECONDS, default 600) with 5 s tokens from fake_idp, a target that
 * checks them, and every token revoked every 20 s. Prints, once a minute and
 * at the end: the worker's RSS, jobs done, 401s at the target, re-dispatches
 * and token refreshes (heartbeat counters, warrantd(7) §8) and IdP requests per
 * minute. At the end it waits (bounded) for every job to be terminal and the
 * PEL empty, stops the worker with SIGTERM and everything else by PID.
 * Exit 1 when
 *   - a job is not done (every job here is one the target answers 200 well
 *     within its deadline), the PEL is not empty, or the worker died or did
 *     not exit 0;
 *   - the target answered one Idempotency-Key 2xx twice (its /_stats
 *     `duplicates`: nothing here -- no kill, no timeout -- explains one);
 *   - the IdP saw more requests than the refresh schedule and the
 *     revocations allow (IDP_MAX below);
 *   - the worker's RSS grew more than RSS_WARMUP_KIB over the run, or, in a
 *     run of at least two minutes, more than RSS_STEADY_KIB after the
 *     first minute.
 */
#define _DEFAULT_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "world.h"

#define RATE_PER_TICK	5		/* jobs per 100 ms: 50 jobs/s */
#define REVOKE_EVERY_MS	20000
#define REPORT_EVERY_MS	60000
#define DRAIN_MS	60000
#define TOKEN_LIFE_S	5		/* fake_idp's expires_in and exp - iat */
#define REFRESH_RATIO	"0.75"		/* [oauth] refresh_ratio */
#define MIN_REFRESH_MS	"1000"		/* [oauth] min_refresh_interval_ms */

/* The IdP bound. A token's life counts from the answer: exp is in whole
 * seconds (up to 1 s cut off the 5) and the answer takes its loopback trip
 * (100 ms is generous), so a life is at least 3.9 s; the next fetch starts
 * at refresh_ratio of it less up to 5 % jitter (token.h), at least
 * 0.70 x 3.9 s = 2.73 s after the last. A revocation adds one fetch (R9:
 * one refresh however many calls failed), and one more when a fetch under
 * way as it happened brings a token issued before it (refused too; spaced
 * by min_refresh_interval_ms). The first token is one more. Measured
 * (tests/README.md): 21.4 a minute against this bound's 28; a worker that
 * fetched per call, per 401 in a burst, or ignored its refresh time would
 * be far above it. */
#define MIN_CYCLE_MS	((TOKEN_LIFE_S * 1000 - 1000 - 100) * 70 / 100)
#define IDP_MAX(ms, revocations)	(1 + (ms) / MIN_CYCLE_MS + 2 * (revocations))

/* The RSS bounds, from the soaks recorded in tests/README.md: 11.4 MiB at
 * start, 13.2 after the first minute (allocator arenas, curl's connection
 * cache, the buffers of 64 jobs in flight), 13.3 at ten minutes -- 1.9 MiB
 * over the run, 116 KiB after the first minute. Twice the warm-up, and about
 * nine times the steady growth: a leak of more than 42 bytes a job (25,000
 * jobs in those nine minutes) fails the second. */
#define RSS_WARMUP_KIB	4096
#define RSS_STEADY_KIB	1024

struct soak {
	struct world w;
	long long enqueued, revocations;
	long long rss_start_kib, rss_1min_kib;	/* 0: not yet */
};

/* VmRSS of pid in KiB, -1 when unknown. */
static long long
rss_kib(pid_t pid)
{
	char path[64], *s, *at;
	long long kib = -1;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if ((s = h_read_file(path)) == NULL)
		return -1;
	if ((at = strstr(s, "VmRSS:")) != NULL)
		kib = strtoll(at + 6, NULL, 10);
	free(s);
	return kib;
}

static long long
target_401(struct world *w)
{
	json_t *s = h_fake_json(&w->target, "/_stats");
	long long n = json_integer_value(json_object_get(json_object_get(s, "by_status"), "401"));

	json_decref(s);
	return n;
}

static void
report(struct soak *s, long long elapsed_ms, const char *when)
{
	struct world *w = &s->w;
	double min = elapsed_ms / 60000.0;
	long long idp = w_fake_stat(&w->idp, "requests");

	w_say("soak %s %5.1f min: rss %lld KiB (start %lld), enqueued %lld, done %lld, "
	    "401s %lld, redispatched %lld, authFailures %lld, tokenRefreshes %lld, "
	    "IdP requests %lld (%.1f/min)\n", when, min, rss_kib(w->w[0].d.pid),
	    s->rss_start_kib, s->enqueued, w_hb_int(w, "soak", "done"), target_401(w),
	    w_hb_int(w, "soak", "redispatched"), w_hb_int(w, "soak", "authFailures"),
	    w_hb_int(w, "soak", "tokenRefreshes"), idp, min > 0 ? idp / min : 0.0);
}

static int
enqueue_tick(struct soak *s)
{
	char id[64], res[96];

	for (int k = 0; k < RATE_PER_TICK; k++, s->enqueued++) {
		snprintf(id, sizeof id, "soak-%lld", s->enqueued);
		snprintf(res, sizeof res, "canal/gate/%lld", s->enqueued % 97);
		if (w_enqueue(&s->w, id, res, h_now_ms() + 60000) != 0)
			return -1;
	}
	return 0;
}

/* How many jobs are in state `want` (NULL: not terminal) now; -1 on
 * error. */
static long long
count_jobs(struct soak *s, const char *want)
{
	long long k = 0;
	char *ids[1000], *st[1000], buf[1000][32];

	for (long long base = 0; base < s->enqueued; base += 1000) {
		int n = (int)(s->enqueued - base < 1000 ? s->enqueued - base : 1000);
		for (int i = 0; i < n; i++) {
			snprintf(buf[i], sizeof buf[i], "soak-%lld", base + i);
			ids[i] = buf[i];
		}
		if (w_states(&s->w, ids, n, st) != 0)
			return -1;
		for (int i = 0; i < n; i++) {
			k += want ? st[i] != NULL && strcmp(st[i], want) == 0 : !w_terminal(st[i]);
			free(st[i]);
		}
	}
	return k;
}

static int
drained(void *arg)
{
	struct soak *s = arg;

	w_pause_ms(500);	/* each check reads every job */
	return count_jobs(s, NULL) == 0 && w_pending(&s->w) == 0;
}

/* The bounds of the header comment; 0 when each holds. */
static int
verdict(struct soak *s, long long load_ms, long long end_ms, long long rss_end)
{
	long long done = count_jobs(s, "done"), dup = w_fake_stat(&s->w.target, "duplicates");
	long long idp = w_fake_stat(&s->w.idp, "requests");
	long long idp_max = IDP_MAX(end_ms, s->revocations);
	long long grown = rss_end - s->rss_start_kib;
	long long steady = s->rss_1min_kib > 0 ? rss_end - s->rss_1min_kib : 0;
	int steady_judged = load_ms >= 2 * REPORT_EVERY_MS && s->rss_1min_kib > 0;
	int bad = 0;

	w_say("soak: done %lld of %lld; duplicates at the target %lld (want 0); IdP requests "
	    "%lld (at most %lld: %lld revocations, a fetch at least %d ms apart); RSS %+lld KiB "
	    "over the run (at most %d)", done, s->enqueued, dup, idp, idp_max, s->revocations,
	    MIN_CYCLE_MS, grown, RSS_WARMUP_KIB);
	if (steady_judged)
		w_say(", %+lld KiB after the first minute (at most %d)\n", steady, RSS_STEADY_KIB);
	else
		w_say(" (the run is too short to judge the growth after the first minute)\n");
	if (done != s->enqueued) {
		w_say("soak: FAIL: %lld of %lld jobs are not done\n", s->enqueued - done, s->enqueued);
		bad = 1;
	}
	if (dup != 0) {
		w_say("soak: FAIL: the target answered %lld repeated Idempotency-Keys 2xx\n", dup);
		bad = 1;
	}
	if (idp < 0 || idp > idp_max) {
		w_say("soak: FAIL: %lld IdP requests in %.1f min, more than %lld\n", idp,
		    end_ms / 60000.0, idp_max);
		bad = 1;
	}
	if (rss_end < 0 || grown > RSS_WARMUP_KIB || (steady_judged && steady > RSS_STEADY_KIB)) {
		w_say("soak: FAIL: the worker's RSS grew too much (%lld KiB at start, %lld after "
		    "a minute, %lld at the end)\n", s->rss_start_kib, s->rss_1min_kib, rss_end);
		bad = 1;
	}
	return bad ? -1 : 0;
}

static int
run(struct soak *s, long seconds)
{
	struct w_params p;
	long long t0, next_revoke, next_report;

	memset(&p, 0, sizeof p);
	p.oauth = 1;
	p.max_in_flight = 64;
	p.action_timeout_ms = 1000;	/* a 5 s token is usable for its first 3 s */
	p.claim_idle_ms = 10000;
	p.claim_interval_ms = 1000;
	p.heartbeat_ms = 1000;
	p.max_deliveries = 32;
	/* the IdP bound (IDP_MAX) is derived from these */
	p.oauth_extra = "refresh_ratio = " REFRESH_RATIO "\nmin_refresh_interval_ms = "
	    MIN_REFRESH_MS "\n";
	if (w_up(&s->w, TOKEN_LIFE_S, 1) != 0 || h_fake_script(&s->w.target,
	    "{\"default\":{\"delay_ms\":20}}") != 0 || w_add_worker(&s->w, "soak", &p) < 0 ||
	    w_start(&s->w, 0) != 0) {
		w_say("soak: could not start (WARRANTD_KEEP_TMP=1 keeps the logs)\n");
		return -1;
	}
	s->rss_start_kib = rss_kib(s->w.w[0].d.pid);
	t0 = w_mono_ms();
	next_revoke = t0 + REVOKE_EVERY_MS;
	next_report = t0 + REPORT_EVERY_MS;
	while (w_mono_ms() < t0 + seconds * 1000LL) {
		if (enqueue_tick(s) != 0 || !w_running(&s->w, 0) ||
		    h_wait_exit(s->w.w[0].d.pid, 0, NULL) == 0) {
			w_say("soak: the worker or redis went away\n");
			return -1;
		}
		if (w_mono_ms() >= next_revoke) {
			w_post(&s->w.target, "/_revoke", NULL);
			s->revocations++;
			next_revoke += REVOKE_EVERY_MS;
		}
		if (w_mono_ms() >= next_report) {
			if (s->rss_1min_kib == 0)
				s->rss_1min_kib = rss_kib(s->w.w[0].d.pid);
			report(s, w_mono_ms() - t0, "at");
			next_report += REPORT_EVERY_MS;
		}
		w_pause_ms(100);	/* paces the load */
	}
	long long load_ms = w_mono_ms() - t0;
	int ok = h_wait_until(drained, s, DRAIN_MS) == 0;
	long long end_ms = w_mono_ms() - t0, rss_end = rss_kib(s->w.w[0].d.pid);
	report(s, end_ms, "end");
	if (!ok)
		w_say("soak: %lld jobs unfinished, %lld pending %d s after the load stopped\n",
		    count_jobs(s, NULL), w_pending(&s->w), DRAIN_MS / 1000);
	if (verdict(s, load_ms, end_ms, rss_end) != 0)
		ok = 0;
	int st = w_term(&s->w, 0);
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		w_say("soak: SIGTERM ended the worker with status %d\n", st);
		ok = 0;
	}
	return ok ? 0 : -1;
}

int
main(int argc, char **argv)
{
	static struct soak s;
	long seconds = argc > 1 ? strtol(argv[1], NULL, 10) : 600;

	if (argc > 2 || seconds <= 0) {
		fprintf(stderr, "usage: soak [SECONDS]\n");
		return 64;
	}
	signal(SIGPIPE, SIG_IGN);
	w_say("soak: %ld s, 5 jobs every 100 ms (up to 50/s), 5 s tokens, every token revoked every %d s\n", seconds,
	    REVOKE_EVERY_MS / 1000);
	int r = run(&s, seconds);
	w_down(&s.w);
	w_say("soak: %s\n", r == 0 ? "ok" : "FAIL");
	return r == 0 ? 0 : 1;
}
