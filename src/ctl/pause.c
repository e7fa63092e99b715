/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * warrantctl pause and resume (warrantd(7) §13).
 */
#define _DEFAULT_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "base/wtime.h"
#include "conf/config.h"
#include "ctl/clir.h"
#include "ctl/cmds.h"

/* ---- pause, resume (§13) ---- */

/* Who asks, for the record in P:paused: the login behind sudo, else the
 * user; and the role it connects as. */
static void
who_asks(const struct cli *c, char *buf, size_t n, int64_t now)
{
	const char *u = getenv("SUDO_USER");
	char at[WTIME_RFC3339_LEN];

	if (u == NULL || u[0] == '\0')
		u = getenv("USER");
	snprintf(buf, n, "by=%s%s%s at=%s", u && u[0] ? u : "?", c->as ? " as=" : "",
	    c->as ? c->as : "", wtime_format_rfc3339(now, at, sizeof at));
}

int
cmd_pause(struct cli *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"config", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int resume = strcmp(argv[0], "resume") == 0, ch, rc;
	const char *name = "*";
	char who[256];
	redisReply *r;

	while ((ch = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
		if (ch == 'h') {
			fputs(cli_usage_text, stdout);
			return 0;
		}
		if (ch != 'c')
			return cli_unknown_option(argv[0], argv);
		c->cfg_path = optarg;
	}
	if (argc - optind > 1)
		return cli_usage_error("%s: at most one ACTION", argv[0]);
	if (argc - optind == 1)
		name = argv[optind];
	if ((rc = cli_load_config(c)) != 0)
		return rc;
	/* A typo must not look like a pause: only what the config names. */
	if (strcmp(name, "*") != 0 && cfg_action_find(c->cfg, name) == NULL) {
		cli_say("%s: %s has no [action %s]", argv[0], c->cfg_path, name);
		return EX_REFUSED;
	}
	/* every worker reads shard 0's P:paused */
	if ((rc = cli_use_shard(c, 0)) != 0 || (rc = clir_connect(c)) != 0)
		return rc;
	const char *what = strcmp(name, "*") == 0 ? "the whole queue" : name;
	if (resume) {
		if ((rc = clir_run(c, &r, "HDEL", c->keys.paused, name, (char *)NULL)) != 0)
			return rc;
		long long gone = 0;
		if (sreply_integer(sreply_of(r), &gone) != 0)
			gone = 0;
		freeReplyObject(r);
		if (gone)
			printf("resumed %s: workers start its calls again within a heartbeat "
			    "(%ld ms)\n", what, c->cfg->daemon.heartbeat_ms);
		else
			printf("%s was not paused\n", what);
		return 0;
	}
	who_asks(c, who, sizeof who, wtime_now_ms());
	if ((rc = clir_run(c, &r, "HSET", c->keys.paused, name, who, (char *)NULL)) != 0)
		return rc;
	freeReplyObject(r);
	printf("paused %s: every worker starts no new call of it within a heartbeat (%ld ms); "
	    "entries wait in hand, deadlines still hold\n", what, c->cfg->daemon.heartbeat_ms);
	return 0;
}

