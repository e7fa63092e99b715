/*
 * soak SECONDS: one warrantd under steady load for SECONDS (make soak,
 * SOAK_SECONDS, default 600) with 5 s tokens from fake_idp, a target that
 * checks them, and every token revoked every 20 s. Prints, once a minute and
 * at the end: the worker's RSS, jobs done, 401s at the target, re-dispatches
 * and token refreshes (heartbeat counters, SPEC §8) and IdP requests per
 * minute. At the end it waits (bounded) for every job to be terminal and the
 * PEL empty, stops the worker with SIGTERM and everything else by PID.
 * Exit 1 when a job is left unfinished, the PEL is not empty, or the
 * worker died or did not exit 0.
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

struct soak {
	struct world w;
	long long enqueued;
	long long rss_start_kib;
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

/* Jobs not terminal now (-1 on error). */
static long long
unfinished(struct soak *s)
{
	long long left = 0;
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
			left += !w_terminal(st[i]);
			free(st[i]);
		}
	}
	return left;
}

static int
drained(void *arg)
{
	struct soak *s = arg;

	w_pause_ms(500);	/* each check reads every job */
	return unfinished(s) == 0 && w_pending(&s->w) == 0;
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
	if (w_up(&s->w, 5, 1) != 0 || h_fake_script(&s->w.target,
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
			next_revoke += REVOKE_EVERY_MS;
		}
		if (w_mono_ms() >= next_report) {
			report(s, w_mono_ms() - t0, "at");
			next_report += REPORT_EVERY_MS;
		}
		w_pause_ms(100);	/* paces the load */
	}
	int ok = h_wait_until(drained, s, DRAIN_MS) == 0;
	report(s, w_mono_ms() - t0, "end");
	if (!ok)
		w_say("soak: %lld jobs unfinished, %lld pending %d s after the load stopped\n",
		    unfinished(s), w_pending(&s->w), DRAIN_MS / 1000);
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
