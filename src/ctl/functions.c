/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * warrantctl functions load|status|show (warrantd(7) §2.1): the Redis
 * Functions library of lua/ (store_library, store.h) loaded into, or
 * checked on, the primary of every shard, or printed (for FUNCTION LOAD
 * on a node that holds no shard yet: a cluster's new primary). Only an administrator may load a library, so
 * these log in as the user named by --user (default: Redis' `default`
 * user) with the password in --password-file (none: no AUTH), never as one
 * of the config's users, none of which may: that is what keeps any other
 * code from running in Redis.
 */
#define _DEFAULT_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "conf/config.h"
#include "ctl/clir.h"
#include "ctl/cmds.h"

enum { OPT_USER = 512, OPT_PASSWORD_FILE };

/* The library's version on c's shard into buf ("" when it is not loaded):
 * 0, or an exit code (said). */
static int
loaded_version(struct cli *c, char *buf, size_t n)
{
	const char *argv[] = {"FCALL_RO", "warrantd_version", "0"};
	redisReply *r = clir_argv(c, 3, argv);
	const struct sreply *s = sreply_of(r);
	int rc = 0;

	buf[0] = '\0';
	if (r == NULL)
		return clir_checked(c, r, "FCALL_RO warrantd_version", &r);
	switch (store_library_check(sreply_error_text(s) != NULL,
	    sreply_error_text(s) ? sreply_error_text(s) : sreply_string(s))) {
	case STORE_LIBRARY_OK:
	case STORE_LIBRARY_WRONG:
		snprintf(buf, n, "%s", sreply_string(s));
		break;
	case STORE_LIBRARY_MISSING:
		break;
	case STORE_LIBRARY_NO_FUNCTIONS:
		cli_say("functions: the server has no Redis Functions (older than Redis 7.0)");
		rc = EX_UNAVAILABLE;
		break;
	default:
		cli_say("functions: FCALL_RO warrantd_version: %s",
		    sreply_error_text(s) ? sreply_error_text(s) : "not a string");
		rc = EX_REFUSED;
	}
	freeReplyObject(r);
	return rc;
}

/* FUNCTION LOAD REPLACE of the library on c's shard: 0 or an exit code. */
static int
load_library(struct cli *c)
{
	const char *argv[] = {"FUNCTION", "LOAD", "REPLACE", store_library};
	redisReply *r;
	int rc = clir_checked(c, clir_argv(c, 4, argv), "FUNCTION LOAD", &r);

	freeReplyObject(r);
	return rc;
}

/* One shard: loaded (load) or checked. 0, EX_REFUSED (status: not this
 * version), or an exit code. */
static int
one_shard(struct cli *c, unsigned i, int load)
{
	char was[64], now[64];
	int rc;

	if ((rc = cli_use_shard(c, i)) != 0 || (rc = clir_connect(c)) != 0 ||
	    (rc = loaded_version(c, was, sizeof was)) != 0)
		return rc;
	if (!load) {
		printf("shard %u: %s%s\n", i, was[0] ? was : "not loaded",
		    strcmp(was, STORE_LIBRARY_VERSION) == 0 ? " (this version)" :
		    was[0] ? " (another version: warrantctl functions load)" : "");
		return strcmp(was, STORE_LIBRARY_VERSION) == 0 ? 0 : EX_REFUSED;
	}
	if (strcmp(was, STORE_LIBRARY_VERSION) == 0) {
		printf("shard %u: %s already\n", i, was);
		return 0;
	}
	if ((rc = load_library(c)) != 0 || (rc = loaded_version(c, now, sizeof now)) != 0)
		return rc;
	if (strcmp(now, STORE_LIBRARY_VERSION) != 0) {
		cli_say("functions: shard %u answers version \"%s\" after the load", i, now);
		return EX_REFUSED;
	}
	printf("shard %u: %s%s%s\n", i, now, was[0] ? ", was " : " loaded", was);
	return 0;
}

int
cmd_functions(struct cli *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"config", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{"user", required_argument, NULL, OPT_USER},
		{"password-file", required_argument, NULL, OPT_PASSWORD_FILE},
		{NULL, 0, NULL, 0},
	};
	const char *user = NULL, *pwfile = NULL;
	unsigned first, end;
	int ch, rc, worst = 0;

	while ((ch = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
		if (ch == 'h') {
			fputs(cli_usage_text, stdout);
			return 0;
		}
		if (ch == 'c')
			c->cfg_path = optarg;
		else if (ch == OPT_USER)
			user = optarg;
		else if (ch == OPT_PASSWORD_FILE)
			pwfile = optarg;
		else
			return cli_unknown_option(argv[0], argv);
	}
	if (argc - optind != 1 || (strcmp(argv[optind], "load") != 0 &&
	    strcmp(argv[optind], "status") != 0 && strcmp(argv[optind], "show") != 0))
		return cli_usage_error("functions: load, status or show");
	if (strcmp(argv[optind], "show") == 0) {	/* for a node no shard names */
		fputs(store_library, stdout);
		return 0;
	}
	int load = strcmp(argv[optind], "load") == 0;
	if (pwfile != NULL && user == NULL)
		user = "default";
	if ((rc = cli_load_config(c)) != 0)
		return rc;
	/* the administrator, not a user of the config (clir_password) */
	c->as = "administrator";
	c->username = user;
	c->password_file = pwfile;
	snprintf(c->user_section, sizeof c->user_section, "functions --password-file");
	cli_shard_range(c, &first, &end);
	for (unsigned i = first; i < end; i++) {
		if ((rc = one_shard(c, i, load)) == EX_REFUSED && !load)
			worst = rc;	/* status: every shard said */
		else if (rc != 0)
			return rc;
	}
	return worst;
}
