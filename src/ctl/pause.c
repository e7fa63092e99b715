/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * warrantctl pause and resume (warrantd(7) §13): the options parsed and
 * act_pause's lines printed (act.c does it, for warrantd-web too).
 */
#define _DEFAULT_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "ctl/act.h"
#include "ctl/cli.h"
#include "ctl/cmds.h"

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
	char who[ACT_WHO_MAX];
	struct act_result res;

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
	act_who_unix(c->username, who, sizeof who);
	act_result_init(&res);
	rc = act_pause(c, name, resume, who, &res);
	act_result_print(&res);
	act_result_clear(&res);
	return rc;
}
