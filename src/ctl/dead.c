/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * warrantctl dead, retry and cancel: dead letters listed, requeued and
 * dropped (one by one or in bulk), a record queued again or cancelled
 * (warrantd(7) §11). The actions themselves, with their checks, are
 * act.c's (shared with warrantd-web); these parse, print and exit.
 */
#define _DEFAULT_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "base/wtime.h"
#include "conf/config.h"
#include "conf/secrets.h"
#include "core/record.h"
#include "ctl/act.h"
#include "ctl/clir.h"
#include "ctl/cmds.h"
#include "ctl/ctl.h"

/* ---- dead letters ---- */

/* Every shard's dead letters in turn (or --shard N's). */
static int
dead_list(struct cli *c)
{
	json_t *all = json_array(), *e;
	size_t i;
	unsigned first, end;
	int rc = 0;

	cli_shard_range(c, &first, &end);
	for (unsigned sh = first; rc == 0 && sh < end; sh++)
		if ((rc = cli_use_shard(c, sh)) == 0 && (rc = clir_connect(c)) == 0)
			rc = clir_scan_stream(c, c->keys.dead, NULL, cli_dead_order, all);

	if (rc == 0 && c->json)
		rc = cli_print_json(all);
	else if (rc == 0)
		json_array_foreach(all, i, e)
			ctl_print_line(stdout, e, 0);
	if (rc == 0 && !c->json && json_array_size(all) == 0)	/* issue 38 item 6 */
		puts("no dead letters");
	json_decref(all);
	return rc;
}

/* What an action said, printed; its exit code. */
static int
printed(struct act_result *res, int rc)
{
	act_result_print(res);
	act_result_clear(res);
	return rc;
}

static int
dead_with_id(struct cli *c, const char *sub, const char *id)
{
	int requeue = strcmp(sub, "requeue") == 0;
	char *key = NULL, who[ACT_WHO_MAX];
	size_t key_len = 0;
	struct act_result res;
	int rc;

	if (*id == '\0')
		return cli_usage_error("dead %s: the recordId is empty", sub);
	/* drop matches any id, so a malformed one can be cleared too. */
	if (requeue && !record_id_valid(id))
		return cli_usage_error("dead requeue: '%s' is not a recordId", id);
	if ((rc = cli_load_config(c)) != 0)
		return rc;
	if (requeue && (rc = cli_read_verify_key(c, &key, &key_len)) != 0)
		return rc;
	act_who_unix(c->username, who, sizeof who);
	act_result_init(&res);
	rc = requeue ? act_dead_requeue(c, id, key, key_len, who, &res) : act_dead_drop(c, id, &res);
	secrets_free(key, key_len);
	return printed(&res, rc);
}

static int dead_bulk(struct cli *c, const char *sub, const struct act_filter *f);
static int parse_dead_change(struct cli *c, int argc, char **argv, char **id,
			     struct act_filter *f);

int
cmd_dead(struct cli *c, int argc, char **argv)
{
	struct act_filter f = {0};
	char *id;
	int rc;

	if (argc < 2)
		return cli_usage_error("dead: expected list, requeue or drop");
	argc--;
	argv++;
	if (strcmp(argv[0], "list") == 0) {
		if ((rc = cli_parse_simple(c, argc, argv, 1, 0, NULL)) == 1)
			fputs(cli_usage_text, stdout);
		if (rc != 0)
			return rc == 1 ? 0 : rc;
		return (rc = cli_load_config(c)) != 0 ? rc : dead_list(c);
	}
	if (strcmp(argv[0], "requeue") != 0 && strcmp(argv[0], "drop") != 0)
		return cli_usage_error("dead: unknown subcommand '%s'", argv[0]);
	if ((rc = parse_dead_change(c, argc, argv, &id, &f)) == 1)
		fputs(cli_usage_text, stdout);
	if (rc != 0)
		return rc == 1 ? 0 : rc;
	return id != NULL ? dead_with_id(c, argv[0], id) : dead_bulk(c, argv[0], &f);
}

/* ---- job operations (§11): retry, cancel ---- */

/* retry ID and cancel ID: the options, the config and the key. 0, -1 for
 * -h (usage printed), or an exit code. */
static int
id_command(struct cli *c, int argc, char **argv, char **id, char **key, size_t *key_len)
{
	int rc = cli_parse_simple(c, argc, argv, 0, 1, id);

	if (rc == 1) {
		fputs(cli_usage_text, stdout);
		return -1;
	}
	if (rc != 0)
		return rc;
	if (*id == NULL || !record_id_valid(*id))
		return cli_usage_error("%s: '%s' is not a recordId", argv[0], *id ? *id : "");
	if ((rc = cli_load_config(c)) != 0)
		return rc;
	return cli_read_verify_key(c, key, key_len);
}

/* retry ID and cancel ID: act_retry or act_cancel, printed. */
static int
id_action(struct cli *c, int argc, char **argv, int cancel)
{
	char *id = NULL, *key = NULL, who[ACT_WHO_MAX];
	size_t key_len = 0;
	struct act_result res;
	int rc = id_command(c, argc, argv, &id, &key, &key_len);

	if (rc != 0)
		return rc < 0 ? 0 : rc;
	act_who_unix(c->username, who, sizeof who);
	act_result_init(&res);
	rc = cancel ? act_cancel(c, id, key, key_len, who, &res) :
	    act_retry(c, id, key, key_len, who, &res);
	secrets_free(key, key_len);
	return printed(&res, rc);
}

/* A failed or dead record before its deadline: a fresh budget (requeue.lua),
 * its dead letters answered. */
int
cmd_retry(struct cli *c, int argc, char **argv)
{
	return id_action(c, argc, argv, 0);
}

/* A record not yet terminal, verified and before its deadline (past it, the
 * worker expires it on its own): `cancelled`, terminal. */
int
cmd_cancel(struct cli *c, int argc, char **argv)
{
	return id_action(c, argc, argv, 1);
}

/* ---- dead letters in bulk (§11) ---- */

/* dead requeue|drop --all|--reason R[|--older-than D] over every shard (or
 * --shard N's). Each record is requeued or refused on its own line; the
 * last line counts them. Exit 1 when something was refused or nothing
 * matched. */
static int
dead_bulk(struct cli *c, const char *sub, const struct act_filter *f)
{
	int requeue = strcmp(sub, "requeue") == 0;
	char *key = NULL, who[ACT_WHO_MAX];
	size_t key_len = 0;
	struct act_result res;
	int rc;

	if ((rc = cli_load_config(c)) != 0 ||
	    (requeue && (rc = cli_read_verify_key(c, &key, &key_len)) != 0))
		return rc;
	act_who_unix(c->username, who, sizeof who);
	act_result_init(&res);
	rc = act_dead_bulk(c, requeue, f, key, key_len, who, &res);
	secrets_free(key, key_len);
	return printed(&res, rc);
}

/*
 * dead requeue|drop: ID, or the bulk options. 0 with *id or f set, 1 for -h,
 * or an exit code.
 */
static int
parse_dead_change(struct cli *c, int argc, char **argv, char **id, struct act_filter *f)
{
	static const struct option longopts[] = {
		{"all", no_argument, NULL, OPT_ALL},
		{"reason", required_argument, NULL, OPT_REASON},
		{"older-than", required_argument, NULL, OPT_OLDER_THAN},
		{"shard", required_argument, NULL, OPT_SHARD},
		{"config", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int drop = strcmp(argv[0], "drop") == 0, ch, rc;
	int64_t age;

	*id = NULL;
	while ((ch = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
		if (ch == 'h')
			return 1;
		else if (ch == 'c')
			c->cfg_path = optarg;
		else if (ch == OPT_ALL)
			f->all = 1;
		else if (ch == OPT_REASON)
			f->reason = optarg;
		else if (ch == OPT_OLDER_THAN && !drop)
			return cli_usage_error("dead requeue: --older-than is dead drop's: a record's "
			    "age is not a reason to run it");
		else if (ch == OPT_OLDER_THAN) {
			if (ctl_parse_duration(optarg, &age) != 0 || age <= 0)
				return cli_usage_error("dead drop: --older-than: '%s' is not a "
				    "duration (N[smhd])", optarg);
			f->before_ms = wtime_now_ms() - age;
		} else if (ch == OPT_SHARD) {
			if ((rc = cli_shard_option(c, optarg)) != 0)
				return rc;
		} else
			return cli_unknown_option(argv[0], argv);
	}
	int bulk = f->all || f->reason != NULL || f->before_ms != 0;
	if (f->all && (f->reason != NULL || f->before_ms != 0))
		return cli_usage_error("dead %s: --all chooses every dead letter: no filter with it",
		    argv[0]);
	if (bulk && argc - optind == 0)
		return 0;
	if (!bulk && argc - optind == 1 && c->shard_opt < 0) {
		*id = argv[optind];
		return 0;
	}
	return cli_usage_error("dead %s: expected ID or %s", argv[0], drop ?
	    "--all, --reason R or --older-than D" : "--all or --reason R");
}

