/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * warrantctl: the decider's and the operator's tool (warrantd(7) §11).
 *
 *   warrantctl [-c FILE] decide ...     write a record, enqueue or schedule it
 *   warrantctl [-c FILE] status         group lag, PEL, consumers, queue sizes
 *   warrantctl [-c FILE] metrics        the same as Prometheus gauges (textfile collector)
 *   warrantctl [-c FILE] inspect ID     state, verified record, audit trail
 *   warrantctl [-c FILE] dead list|requeue ID|drop ID  (or in bulk)
 *   warrantctl [-c FILE] jobs|retry ID|cancel ID   job operations
 *   warrantctl [-c FILE] doctor         what a deployment needs, end to end
 *   warrantctl [-c FILE] functions load|status|show  the Redis Functions library
 *   warrantctl keygen [--alg A] [--kid KID] --out PREFIX  the decider's key
 *
 * Exit codes: 0 ok, 1 not found or refused, 64 usage, 69 Redis unreachable,
 * 78 config error. Every error is one line on stderr. This file is the
 * usage and the dispatch; each command family is a file of its own
 * (ctl/cmds.h) over the shared context (ctl/cli.h) and its Redis handle
 * (ctl/clir.h).
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "base/version.h"
#include "conf/config.h"
#include "ctl/clir.h"
#include "ctl/cmds.h"
#include "worker/proc.h"

/* ---- main ---- */

static int
dispatch(struct cli *c, int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(struct cli *, int, char **);
		const char *role;	/* without --as, when configured */
	} cmds[] = {
		{"decide", cmd_decide, "decider"}, {"status", cmd_status, "monitor"},
		{"metrics", cmd_metrics, "monitor"}, {"inspect", cmd_inspect, "monitor"},
		{"jobs", cmd_jobs, "monitor"}, {"dead", cmd_dead, NULL},
		{"pause", cmd_pause, NULL}, {"resume", cmd_pause, NULL},
		{"retry", cmd_retry, NULL}, {"cancel", cmd_cancel, NULL},
		{"doctor", cmd_doctor, NULL}, {"functions", cmd_functions, NULL},
		{"keygen", cmd_keygen, NULL},
	};

	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		if (strcmp(argv[0], cmds[i].name) == 0) {
			optind = 0;	/* glibc: start over on the command's own argv */
			c->role_of_cmd = cmds[i].role;
			return cmds[i].fn(c, argc, argv);
		}
	if (strcmp(argv[0], "help") == 0) {
		fputs(cli_usage_text, stdout);
		return 0;
	}
	return cli_usage_error("unknown command '%s'", argv[0]);
}

int
main(int argc, char **argv)
{
	struct cli c = {.cfg_path = CFG_DEFAULT_PATH, .shard_opt = -1};
	int ch, rc;

	static const struct option global[] = {
		{"config", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{"as", required_argument, NULL, 'A'},
		{NULL, 0, NULL, 0},
	};

	char why[160];
	proc_wipe_json();
	if (proc_harden(0, why, sizeof why) < 0) {	/* it reads keys and passwords */
		cli_say("%s", why);
		return EX_OSERR;
	}
	opterr = 0;	/* our own one-line messages */
	while ((ch = getopt_long(argc, argv, "+c:hV", global, NULL)) != -1) {
		switch (ch) {
		case 'c':
			c.cfg_path = optarg;
			break;
		case 'h':
			fputs(cli_usage_text, stdout);
			return 0;
		case 'V':
			printf(PROG " " WARRANTD_VERSION "\n");
			return 0;
		case 'A':
			if (cfg_role_find(optarg) < 0)
				return cli_usage_error("--as %s: the roles are operator, monitor and "
				    "decider", optarg);
			c.as = optarg;
			break;
		default:
			return cli_unknown_option(NULL, argv);
		}
	}
	if (optind >= argc)
		return cli_usage_error("no command");
	rc = dispatch(&c, argc - optind, argv + optind);
	if (fflush(stdout) != 0 && rc == 0) {
		cli_say("cannot write the output: %s", strerror(errno));
		rc = EX_REFUSED;
	}
	clir_close(&c);
	cfg_free(c.cfg);
	return rc;
}

