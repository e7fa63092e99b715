/* SPDX-License-Identifier: BSD-2-Clause */
/* warrantd: the daemon's entry point: options, the configuration, then run(). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include <signal.h>

#include <ev.h>

#include "auth/rtoken.h"
#include "conf/cfgfile.h"
#include "conf/config.h"
#include "worker/engine.h"
#include "base/log.h"
#include "worker/metrics.h"
#include "core/record.h"
#include "redis/rtls.h"
#include "conf/secrets.h"
#include "worker/proc.h"
#include "worker/rstate.h"
#include "worker/sdnotify.h"
#include "base/version.h"
#include "base/wtime.h"

static void
usage(FILE *f)
{
	fprintf(f, "usage: warrantd [-t | -T | -r PID] [-c FILE]\n"
	    "       warrantd -h | -V\n"
	    "  -c FILE  configuration (default " CFG_DEFAULT_PATH ")\n"
	    "  -t       check the configuration and the files it names, then exit\n"
	    "  -T       as -t, then print the effective configuration\n"
	    "  -r PID   as -t, then reload the daemon PID and wait for its answer\n"
	    "           (ExecReload=): exit 0 when it applied the file\n"
	    "  -h       this help\n"
	    "  -V       version\n");
}

/* The verification key must parse for the configured algorithm, so that a
 * wrong key is found by -t and not by the first record. */
static int
check_verify_key(const struct cfg *cfg, FILE *out)
{
	char *key = NULL, err[256];
	size_t len = 0;

	if (!cfg->records.signature_required)
		return 0;
	if (secrets_read_verify_key(cfg, &key, &len, err, sizeof err) < 0)
		return -1;	/* secrets_check_cfg has said why */
	struct record_key *k = record_key_new(cfg->records.algorithm, (unsigned char *)key, len,
	    err, sizeof err);
	secrets_free(key, len);
	if (k == NULL)
		fprintf(out, "%s:%d: verify_key_file %s: %s\n", cfg->path,
		    cfg_line_of(cfg, "records", "verify_key_file"), cfg->records.verify_key_file, err);
	const char *why = record_key_issuer_problem(k, cfg->records.issuer);
	if (why != NULL)
		fprintf(out, "%s:%d: %s\n", cfg->path, cfg_line_of(cfg, "records",
		    "verify_key_file"), why);
	record_key_free(k);
	return k && !why ? 0 : -1;
}

/* [redis] tls: the CA, the client certificate and its key load and match
 * (rtls_ctx_new), so -t finds what the first connect would. 0 or -1. */
static int
check_tls(const struct cfg *cfg, FILE *out)
{
	char err[512];

	if (!cfg->redis.tls)
		return 0;
	struct rtls_ctx *t = rtls_ctx_new(cfg, err, sizeof err);
	if (t == NULL)
		fprintf(out, "%s:%d: tls: %s\n", cfg->path, cfg_line_of(cfg, "redis", "tls"), err);
	rtls_ctx_free(t);
	return t ? 0 : -1;
}

/* The config with every file it names readable, or NULL after printing each
 * error on its own line: an operator reads these, so no logfmt. */
static struct cfg *
load_config(const char *path)
{
	struct cfg_errors errs = {0};
	struct cfg *cfg = cfgfile_load(path, &errs);

	if (cfg && (secrets_check_cfg(cfg, &errs) < 0 || rtoken_check_cfg(cfg, &errs) < 0 ||
	    check_verify_key(cfg, stderr) < 0 || check_tls(cfg, stderr) < 0)) {
		cfg_free(cfg);
		cfg = NULL;
	}
	for (size_t i = 0; i < errs.n; i++)
		fprintf(stderr, "%s\n", errs.msgs[i]);
	cfg_errors_clear(&errs);
	return cfg;
}

static const char *config_path;

/* Reloads applied and refused since start, for the metrics. */
static long long reloads_ok, reloads_failed;

/* Where each reload's result is published (rstate.h); "" when not under
 * systemd. */
static char rstate_file[4096];

/* The result of the reload just tried (generation = reloads so far), for
 * `warrantd -r` and systemd: RELOADING=1 came before it, READY=1 and a
 * STATUS= line end it. */
static void
publish_reload(int applied, const char *reason, int notify)
{
	struct rstate st = {.pid = (long)getpid(), .generation = reloads_ok + reloads_failed,
	    .applied = applied};
	char status[RSTATE_REASON_MAX + 64], q[RSTATE_REASON_MAX + 16];

	snprintf(st.reason, sizeof st.reason, "%s", reason);
	if (rstate_file[0] && rstate_write(rstate_file, &st) < 0)
		log_warn("reload.unpublished", "file=%s error=\"%s\"",
		    log_quote(q, sizeof q, rstate_file), strerror(errno));
	if (!notify)
		return;
	snprintf(status, sizeof status, "READY=1\nSTATUS=reload %lld %s%s", st.generation,
	    applied ? "applied" : "refused: ", applied ? "" : reason);
	(void)sdnotify_send(status);
}

/* [metrics] as the daemon started: a reload cannot move the listener. */
static char *metrics_listen;
static int metrics_allow_remote;

static int
same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* What works but weakens a guarantee (cfg_warnings), once per start and
 * reload, as log lines. */
static void
warn_config(const struct cfg *cfg)
{
	struct cfg_errors warns = {0};
	char q[512];

	if (cfg_warnings(cfg, &warns) < 0)
		log_error("config.warning", "error=\"out of memory\"");
	for (size_t i = 0; i < warns.n; i++)
		log_warn("config.warning", "detail=%s", log_quote(q, sizeof q, warns.msgs[i]));
	cfg_errors_clear(&warns);
}

/* -t and -T: the warnings on stderr (an operator reads them), then the
 * verdict, and with -T the effective configuration. */
static int
check_only(struct cfg *cfg, int dump)
{
	struct cfg_errors warns = {0};
	int rc = cfg_warnings(cfg, &warns);

	for (size_t i = 0; i < warns.n; i++)
		fprintf(stderr, "%s\n", warns.msgs[i]);
	cfg_errors_clear(&warns);
	if (rc < 0) {
		fprintf(stderr, "out of memory\n");
		cfg_free(cfg);
		return EX_SOFTWARE;
	}
	puts("configuration OK");
	if (dump) {
		putchar('\n');
		cfg_dump(cfg, stdout);
	}
	cfg_free(cfg);
	return fflush(stdout) == 0 ? 0 : EX_IOERR;
}

static void
on_stop(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop, (void)revents;
	engine_stop(w->data);
}

/* R16: a config that does not load is logged line by line and the running
 * one is kept; the daemon never dies of a reload. */
static void
on_reload(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct cfg_errors errs = {0};
	char err[256], q[512];
	(void)loop, (void)revents;

	(void)sdnotify_send("RELOADING=1");
	struct cfg *cfg = cfgfile_load(config_path, &errs);
	if (cfg && secrets_check_cfg(cfg, &errs) < 0) {
		cfg_free(cfg);
		cfg = NULL;
	}
	for (size_t i = 0; i < errs.n; i++)
		log_error("config.reload_failed", "error=%s", log_quote(q, sizeof q, errs.msgs[i]));
	if (cfg == NULL) {
		reloads_failed++;
		snprintf(err, sizeof err, "%s%s", errs.n ? errs.msgs[0] : "the file cannot be read",
		    errs.n > 1 ? " (and more: see the log)" : "");
		cfg_errors_clear(&errs);
		publish_reload(0, err, 1);
		return;
	}
	cfg_errors_clear(&errs);
	if (engine_reload(w->data, cfg, err, sizeof err) < 0) {
		log_error("config.reload_failed", "error=%s", log_quote(q, sizeof q, err));
		cfg_free(cfg);
		reloads_failed++;
		publish_reload(0, err, 1);
		return;
	}
	reloads_ok++;
	publish_reload(1, "", 1);
	if (!same_str(cfg->metrics.listen, metrics_listen) ||
	    cfg->metrics.allow_remote != metrics_allow_remote)
		log_warn("config.restart_needed", "key=\"[metrics] listen\" detail=\"[metrics] "
		    "changes take effect at a restart; still serving as before\"");
	warn_config(cfg);
	log_info("config.reloaded", "config=%s", log_quote(q, sizeof q, config_path));
}

static void
metrics_sample_engine(void *arg, struct metrics_sample *out)
{
	const struct engine *eng = arg;
	const struct engine_counters *n = engine_counters(eng);
	struct engine_gauges g;

	engine_gauges(eng, &g);
	out->n = *n;
	/* the engine copies these two into its counters at each heartbeat only */
	out->n.token_refreshes = g.token_refreshes;
	out->n.redis_outages = g.redis_outages;
	out->n.redis_auth_refreshes = g.redis_auth_refreshes;
	out->redis_token_state = g.redis_token_state;
	out->redis_token_expires_in_s = g.redis_token_expires_in_s;
	out->in_flight = g.in_flight;
	out->token_state = g.token_state;
	out->token_expires_in_s = g.token_expires_in_s;
	for (size_t i = 0; i < g.nscopes && i < METRICS_SCOPES_MAX; i++) {
		out->scopes[i].name = g.scopes[i].name;
		out->scopes[i].state = g.scopes[i].state;
		out->scopes[i].expires_in_s = g.scopes[i].expires_in_s;
	}
	out->nscopes = g.nscopes < METRICS_SCOPES_MAX ? g.nscopes : METRICS_SCOPES_MAX;
	out->redis_up = g.redis_up;
	out->version = WARRANTD_VERSION;
	out->start_time_s = g.started_at_ms / 1000;
	out->gate = g.gate;
	out->now_ms = wtime_now_ms();
	struct proc_usage u;
	proc_usage(&u);
	out->cpu_s = u.cpu_s;
	out->rss_bytes = u.rss_bytes;
	out->open_fds = u.open_fds;
	out->max_fds = u.max_fds;
	out->reloads_ok = reloads_ok;
	out->reloads_failed = reloads_failed;
}

static void
metrics_on_call(void *arg, const char *action, long status, long long duration_ms,
		long long queue_delay_ms)
{
	metrics_observe_call(arg, action, status, duration_ms, queue_delay_ms);
}

static void
metrics_on_outcome(void *arg, const char *action, const char *state, const char *reason)
{
	metrics_observe_outcome(arg, action, state, reason);
}

/* The [metrics] listener, or NULL when none is configured (*failed 0) or it
 * cannot listen (*failed 1, logged). */
static struct metrics *
start_metrics(struct ev_loop *loop, const struct cfg *cfg, struct engine *eng, int *failed)
{
	char err[256], q[300];
	struct metrics *m;

	*failed = 0;
	if (!cfg->metrics.listen)
		return NULL;
	m = metrics_new(loop, &cfg->metrics.listen_addr, metrics_sample_engine, eng, err,
	    sizeof err);
	if (!m) {
		log_error("fatal", "error=%s", log_quote(q, sizeof q, err));
		*failed = 1;
		return NULL;
	}
	engine_set_call_observer(eng, metrics_on_call, m);
	engine_set_outcome_observer(eng, metrics_on_outcome);
	log_info("metrics.listen", "listen=%s", log_quote(q, sizeof q, cfg->metrics.listen));
	return m;
}

/* The daemon. Owns cfg (a reload swaps it) and frees it. Returns the exit
 * status. */
static int
run(struct cfg *cfg)
{
	char consumer[160], path[160], err[256];
	struct ev_loop *loop = ev_default_loop(EVFLAG_AUTO);
	ev_signal sigterm, sigint, sighup;

	signal(SIGPIPE, SIG_IGN);	/* curl runs with CURLOPT_NOSIGNAL */
	log_set_level(cfg->daemon.log_level);
	log_set_format(cfg->daemon.log_format);
	log_info("start", "version=%s consumer=%s config=%s", WARRANTD_VERSION,
	    log_quote(consumer, sizeof consumer, cfg->daemon.consumer),
	    log_quote(path, sizeof path, cfg->path));
	warn_config(cfg);
	if (loop == NULL) {
		log_error("fatal", "error=\"no event loop\"");
		cfg_free(cfg);
		return EX_SOFTWARE;
	}
	char why[256];
	switch (proc_harden(proc_fds_needed(cfg->daemon.max_in_flight, cfg->redis.shards), why,
	    sizeof why)) {
	case -1:
		log_error("fatal", "error=%s", log_quote(path, sizeof path, why));
		cfg_free(cfg);
		return EX_OSERR;
	case 1:
		log_warn("proc.limits", "detail=%s", log_quote(path, sizeof path, why));
		break;
	default:
		break;
	}
	/* What engine_new refuses comes from the configuration's files: a key
	 * that does not parse, a client key that cannot sign. */
	struct engine *eng = engine_new(loop, cfg, err, sizeof err);
	if (eng == NULL) {
		log_error("fatal", "error=%s", log_quote(path, sizeof path, err));
		cfg_free(cfg);
		return EX_CONFIG;
	}
	int failed;
	metrics_allow_remote = cfg->metrics.allow_remote;
	metrics_listen = cfg->metrics.listen ? strdup(cfg->metrics.listen) : NULL;
	struct metrics *metrics = start_metrics(loop, cfg, eng, &failed);	/* cfg: eng's now */
	if (failed || (cfg->metrics.listen && !metrics_listen)) {
		metrics_free(metrics);
		engine_free(eng);
		free(metrics_listen);
		return EX_UNAVAILABLE;
	}
	ev_signal_init(&sigterm, on_stop, SIGTERM);
	ev_signal_init(&sigint, on_stop, SIGINT);
	ev_signal_init(&sighup, on_reload, SIGHUP);
	sigterm.data = sigint.data = sighup.data = eng;
	ev_signal_start(loop, &sigterm);
	ev_signal_start(loop, &sigint);
	ev_signal_start(loop, &sighup);
	if (rstate_path(rstate_file, sizeof rstate_file) < 0)
		rstate_file[0] = '\0';
	publish_reload(1, "", 0);	/* generation 0: running; READY=1 is the engine's */
	engine_start(eng);
	ev_run(loop, 0);
	engine_set_outcome_observer(eng, NULL);
	engine_set_call_observer(eng, NULL, NULL);
	int status = engine_exit_status(eng);
	metrics_free(metrics);
	engine_free(eng);
	free(metrics_listen);
	ev_loop_destroy(loop);
	log_info("exit", "status=%d", status);
	return status;
}

/* The published result of pid, when the file is one of its. */
static int
rstate_of(const char *file, long pid, struct rstate *st)
{
	return rstate_read(file, st) == 0 && st->pid == pid ? 0 : -1;
}

/* -r PID (the units' ExecReload=): SIGHUP to the daemon, then its answer
 * (rstate.h), waited for up to 80 s (systemd's reload timeout is 90 s).
 * 0 when it applied the file; EX_CONFIG with its reason when it refused
 * it; EX_UNAVAILABLE when there is no daemon to ask or nowhere to read
 * its answer; EX_TEMPFAIL when it did not answer. */
static int
reload_and_wait(const char *pidarg)
{
	char file[4096], *end = NULL;
	struct rstate st;
	long pid = strtol(pidarg, &end, 10);

	if (pid <= 1 || *end != '\0') {
		fprintf(stderr, "warrantd: -r: '%s' is not a process id\n", pidarg);
		return EX_USAGE;
	}
	if (rstate_path(file, sizeof file) < 0) {
		fprintf(stderr, "warrantd: -r: RUNTIME_DIRECTORY is not set: the daemon publishes "
		    "its reload results only under systemd (RuntimeDirectory=)\n");
		return EX_UNAVAILABLE;
	}
	long long before = rstate_of(file, pid, &st) == 0 ? st.generation : 0;
	if (kill((pid_t)pid, SIGHUP) < 0) {
		fprintf(stderr, "warrantd: -r: cannot signal %ld: %s\n", pid, strerror(errno));
		return EX_UNAVAILABLE;
	}
	const struct timespec tick = {0, 50 * 1000 * 1000};
	for (long long waited = 0; waited < 80000; waited += 50) {
		if (rstate_of(file, pid, &st) == 0 && st.generation > before) {
			if (st.applied) {
				printf("reload %lld applied\n", st.generation);
				return 0;
			}
			fprintf(stderr, "warrantd: reload %lld refused, the running configuration "
			    "kept: %s\n", st.generation, st.reason);
			return EX_CONFIG;
		}
		if (kill((pid_t)pid, 0) < 0 && errno == ESRCH) {
			fprintf(stderr, "warrantd: -r: process %ld is gone\n", pid);
			return EX_UNAVAILABLE;
		}
		nanosleep(&tick, NULL);
	}
	fprintf(stderr, "warrantd: -r: no answer from %ld in 80 s (%s)\n", pid, file);
	return EX_TEMPFAIL;
}

int
main(int argc, char **argv)
{
	const char *path = CFG_DEFAULT_PATH, *reload_pid = NULL;
	int check = 0, opt;

	log_init("warrantd");
	proc_wipe_json();	/* before any JSON: token responses pass through it */
	char why[256];
	if (proc_harden(0, why, sizeof why) < 0) {	/* before -t reads a secret */
		fprintf(stderr, "warrantd: %s\n", why);
		return EX_OSERR;
	}
	while ((opt = getopt(argc, argv, "c:r:tThV")) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 'r':
			reload_pid = optarg;
			break;
		case 't':
			check = check ? check : 1;
			break;
		case 'T':
			check = 2;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("warrantd %s\n", WARRANTD_VERSION);
			return 0;
		default:
			usage(stderr);
			return EX_USAGE;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return EX_USAGE;
	}
	struct cfg *cfg = load_config(path);
	if (!cfg)
		return EX_CONFIG;	/* -r too: a file that fails -t is never sent */
	if (reload_pid) {
		cfg_free(cfg);
		return reload_and_wait(reload_pid);
	}
	config_path = path;
	if (!check)
		return run(cfg);
	return check_only(cfg, check == 2);
}
