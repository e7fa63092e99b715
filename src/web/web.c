/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * warrantd-web: the operators' console (issue 39): reads as
 * [redis.monitor]; acts (retry, cancel, requeue, drop, pause) only with
 * [redis.operator], through warrantctl's own code (wact.h, ctl/act.h).
 *
 *   warrantd-web [-c FILE]            serve [web] listen until SIGTERM
 *   warrantd-web [-c FILE] -t         check [web] and the files it names
 *   warrantd-web passwd FILE USER     add or change USER in FILE (password
 *                                     on stdin)
 *
 * One libev loop, no thread: wserve answers on hsrv (libmicrohttpd on the
 * loop), one request at a time, so the session table and the one Redis
 * connection need no locking; the signals are ev_signal watchers.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include <ev.h>
#include <microhttpd.h>

#include "base/log.h"
#include "base/version.h"
#include "conf/cfgfile.h"
#include "conf/secrets.h"
#include "worker/sdnotify.h"
#include "wact.h"
#include "wconf.h"
#include "wpasswd.h"
#include "wread.h"
#include "wserve.h"

#define PROG		"warrantd-web"

struct web {
	struct wconf conf;
	struct wread *read;
	struct wact *act;	/* NULL: no [redis.operator], no action */
	struct wserve *serve;
	char *tls_cert, *tls_key;	/* PEM (tls_key: secrets_free) */
	size_t tls_cert_len, tls_key_len;
	int sig;		/* the signal that stopped the loop */
};

static const char usage_text[] =
"usage: warrantd-web [-c FILE] [-t]\n"
"       warrantd-web passwd FILE USER    (the password on stdin)\n"
"\n"
"  -c, --config FILE   the daemon's INI file (default " CFG_DEFAULT_PATH "): [web],\n"
"                      [redis] and [redis.monitor]\n"
"  -t, --test          check the configuration and exit\n"
"  -h, --help          this help\n"
"  -V, --version       the version\n";

static void
stop(struct web *w)
{
	wserve_free(w->serve);
	wread_free(w->read);
	wact_free(w->act);
	free(w->tls_cert);
	secrets_free(w->tls_key, w->tls_key_len);
	memset(w, 0, sizeof *w);
}

/* The TLS pair, the users file and the Redis reader: what -t checks too. */
static int
prepare(struct web *w, struct cfg *cfg, char *err, size_t errlen)
{
	char *users = NULL;
	size_t len = 0;

	memset(w, 0, sizeof *w);
	if (wconf_parse(cfg, &w->conf, err, errlen) != 0)
		return -1;
	if (w->conf.tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
		snprintf(err, errlen, "[web] tls_cert_file: this libmicrohttpd has no TLS");
		return -1;
	}
	if (w->conf.tls &&
	    (secrets_read_cfg(cfg, cfg->web.tls_cert_file, SECRETS_PUBLIC, &w->tls_cert,
	    &w->tls_cert_len, err, errlen) != 0 ||
	    secrets_read_cfg(cfg, cfg->web.tls_key_file, SECRETS_PRIVATE_PEM, &w->tls_key,
	    &w->tls_key_len, err, errlen) != 0))
		return -1;
	if (secrets_read_cfg(cfg, cfg->web.users_file, SECRETS_TRIMMED, &users, &len, err,
	    errlen) != 0)
		return -1;
	secrets_free(users, len);
	if ((w->read = wread_new(cfg, err, errlen)) == NULL)
		return -1;
	if (cfg->roles[CFG_ROLE_OPERATOR].username != NULL &&
	    (w->act = wact_new(cfg, err, errlen)) == NULL)
		return -1;
	return 0;
}

static void
on_signal(struct ev_loop *loop, ev_signal *sw, int revents)
{
	struct web *w = sw->data;

	(void)revents;
	if (sw->signum == SIGHUP)
		return;	/* nothing to reload: the users file is read at each login */
	w->sig = sw->signum;
	ev_break(loop, EVBREAK_ALL);
}

/* Serves until SIGTERM or SIGINT: 0, or EX_UNAVAILABLE when it cannot listen. */
static int
serve(struct web *w, const struct cfg *cfg)
{
	struct ev_loop *loop = ev_default_loop(EVFLAG_AUTO);
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
	ev_signal sw[3];
	char err[512];

	if (loop == NULL) {
		log_error("web.start_failed", "detail=%s", LOG_Q("no event loop"));
		return EX_UNAVAILABLE;
	}
	if ((w->serve = wserve_new(loop, cfg, &w->conf, w->read, w->act, w->tls_cert, w->tls_key,
	    err, sizeof err)) == NULL) {
		log_error("web.start_failed", "detail=%s", LOG_Q(err));
		return EX_UNAVAILABLE;
	}
	for (size_t i = 0; i < 3; i++) {
		ev_signal_init(&sw[i], on_signal, sigs[i]);
		sw[i].data = w;
		ev_signal_start(loop, &sw[i]);
	}
	log_info("web.started", "version=%s listen=%s tls=%d", WARRANTD_VERSION,
	    LOG_Q(cfg->web.listen ? cfg->web.listen : WCONF_DEFAULT_LISTEN), w->conf.tls);
	(void)sdnotify_send("READY=1");
	ev_run(loop, 0);
	(void)sdnotify_send("STOPPING=1");
	log_info("web.stopped", "signal=%d", w->sig);
	for (size_t i = 0; i < 3; i++)
		ev_signal_stop(loop, &sw[i]);
	wserve_free(w->serve);
	w->serve = NULL;
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'}, {"test", no_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	const char *path = CFG_DEFAULT_PATH;
	struct cfg_errors errs = {0};
	int ch, test = 0, rc;
	char err[512];
	struct web w;

	log_init(PROG);
	if (argc >= 2 && strcmp(argv[1], "passwd") == 0) {
		if (argc != 4) {
			fputs(usage_text, stderr);
			return EX_USAGE;
		}
		return wpasswd_cmd(argv[2], argv[3]);
	}
	while ((ch = getopt_long(argc, argv, "c:thV", opts, NULL)) != -1) {
		switch (ch) {
		case 'c': path = optarg; break;
		case 't': test = 1; break;
		case 'h': fputs(usage_text, stdout); return 0;
		case 'V': printf(PROG " %s\n", WARRANTD_VERSION); return 0;
		default: fputs(usage_text, stderr); return EX_USAGE;
		}
	}
	if (optind != argc) {
		fputs(usage_text, stderr);
		return EX_USAGE;
	}
	struct cfg *cfg = cfgfile_load(path, &errs);
	for (size_t i = 0; i < errs.n; i++)
		fprintf(stderr, PROG ": %s\n", errs.msgs[i]);
	cfg_errors_clear(&errs);
	if (cfg == NULL)
		return EX_CONFIG;
	log_set_level(cfg->daemon.log_level);
	log_set_format(cfg->daemon.log_format);
	signal(SIGPIPE, SIG_IGN);
	if (prepare(&w, cfg, err, sizeof err) != 0) {
		fprintf(stderr, PROG ": %s: %s\n", path, err);
		stop(&w);
		cfg_free(cfg);
		return EX_CONFIG;
	}
	if (test) {
		printf("%s: [web] ok\n", path);
		rc = 0;
	} else
		rc = serve(&w, cfg);
	stop(&w);
	cfg_free(cfg);
	return rc;
}
