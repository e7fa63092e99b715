/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli: warrantctl's shared context -- config, shard, options, output (cli.h).
 */
#define _DEFAULT_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "base/wtime.h"
#include "conf/cfgfile.h"
#include "conf/config.h"
#include "conf/secrets.h"
#include "ctl/cli.h"
#include "ctl/ctl.h"
#include "core/shard.h"
#include "redis/cluster.h"

const char cli_usage_text[] =
"usage: warrantctl [-c FILE] [--as ROLE] COMMAND [ARGS]\n"
"\n"
"  decide --on-behalf-of S --action A --resource R [--param K=V]... [--params JSON]\n"
"         --basis B --expires T [--not-before T] [--notify OWNER] [--id ID]\n"
"         [--issuer ISS] [--audience AUD] [--kid KID] [--traceparent TP] --key FILE\n"
"      write a decision record and enqueue its id (or schedule it when\n"
"      --not-before is in the future); prints the recordId.\n"
"      T: RFC 3339 UTC (2026-11-30T04:00:00Z) or +N[smhd] from now.\n"
"      --key: the PEM private key (ES256, RS256) or the HMAC secret (HS256);\n"
"      not needed with [records] signature = off.\n"
"      --traceparent: a W3C Trace Context the job's calls carry (§13).\n"
"  status [--json] [--shard N]\n"
"                         group lag, pending entries, consumers, queue sizes\n"
"                         (with [redis] shards: of shard N, else of each);\n"
"                         exit 1 when no consumer has a live heartbeat\n"
"  metrics [--output FILE] [--shard N]\n"
"                         queue gauges in the Prometheus text format, for\n"
"                         node_exporter's textfile collector; --output writes\n"
"                         FILE atomically (a temp file, then rename);\n"
"                         with [redis] shards, --shard N is required\n"
"  inspect ID [--json]    state fields, the verified record, its audit trail\n"
"  dead list [--json] [--shard N]\n"
"                         dead letters, one per line (of every shard)\n"
"  dead requeue ID|--all|--reason R\n"
"                         put dead records back on the queue with a fresh budget\n"
"                         (each verified and before its deadline)\n"
"  dead drop ID|--all|--reason R|--older-than D\n"
"                         delete dead letters (D: N[smhd])\n"
"  pause [ACTION]         no new call of ACTION (or of any action) on every\n"
"                         worker within a heartbeat; entries wait in hand (or\n"
"                         parked), no attempt spent, deadlines still hold\n"
"  resume [ACTION]        end that pause\n"
"  jobs [--state S] [--action A] [--limit N] [--json] [--shard N]\n"
"                         records by state: pending, queued, scheduled, then the\n"
"                         dead letters and the audit trail, newest first (N: 100)\n"
"  retry ID               a failed or dead record before its deadline: queued\n"
"                         again with a fresh budget of calls (attemptsBase)\n"
"  cancel ID              a record not yet terminal ends as cancelled, its owner\n"
"                         notified; a call in flight finishes (lateOutcome)\n"
"  doctor                 checks, one line each: every Redis user's login and ACL,\n"
"                         the Redis version and settings, the consumer name, an\n"
"                         IdP token per scope, a PDP question, a connection to\n"
"                         the webhook and each target; exit 1 when one fails\n"
"  functions load|status [--user U] [--password-file F]\n"
"                         the Redis Functions library every user calls: loaded\n"
"                         (or upgraded) into each shard's primary, or its version\n"
"                         shown (exit 1 when one is not this build's); as an\n"
"                         administrator (U: default `default`, F: no AUTH)\n"
"  functions show         the library, for redis-cli -x FUNCTION LOAD REPLACE\n"
"  keygen [--alg ES256|RS256|HS256] [--kid KID] --out PREFIX\n"
"                         the decider's key (ES256 by default): PREFIX.key (0600,\n"
"                         for decide --key), PREFIX.pub and PREFIX.jwks (for\n"
"                         verify_key_file; HS256: no .pub, .jwks 0600); prints\n"
"                         the kid (default: the RFC 7638 thumbprint); refuses\n"
"                         (exit 1) when any of the files exists\n"
"\n"
"  -c, --config FILE   the daemon's INI file (default " CFG_DEFAULT_PATH ")\n"
"      --as ROLE       log in to Redis as the user of [redis.ROLE]: operator,\n"
"                      monitor or decider (default: the command's own role\n"
"                      when its section exists -- decide: decider; status,\n"
"                      metrics, inspect: monitor -- else [redis]'s user)\n"
"  -h, --help          this help\n"
"  -V, --version       the version\n"
"\n"
"exit: 0 ok, 1 not found or refused, 64 usage, 69 Redis unreachable, 78 config error\n";

/* The fields of a P:dead (store.h) and a P:audit entry, in the order they
 * are shown. */
const char *const *const cli_dead_order = store_dead_fields;
const char *const cli_audit_order[] = {"id", "from", "to", "attempt", "consumer", "at",
    "detail", NULL};
/* The state fields of a decision hash (§3.3), shown first by inspect. */
const char *const cli_state_order[] = {"state", "attempts", "owner", "createdAt",
    "updatedAt", "outcome", "detail", "httpStatus", NULL};

void
cli_say(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	for (char *p = buf; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	fprintf(stderr, PROG ": %s\n", buf);
}

int
cli_usage_error(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	cli_say("%s (see warrantctl -h)", buf);
	return EX_USAGE;
}

/* ---- config ---- */

int
cli_use_shard(struct cli *c, unsigned i)
{
	if (cluster_shard_prefix(c->prefix, sizeof c->prefix, c->cfg->redis.prefix, i,
	    (unsigned)c->cfg->redis.shards) != 0 || store_keys_init(&c->keys, c->prefix, PROG) != 0) {
		cli_say("%s: [redis] prefix is too long", c->cfg_path);
		return EX_CONFIG;
	}
	c->shard = i;
	return 0;
}

int
cli_load_config(struct cli *c)
{
	struct cfg_errors errs = {0};

	c->cfg = cfgfile_load(c->cfg_path, &errs);
	for (size_t i = 0; i < errs.n; i++)
		cli_say("%s", errs.msgs[i]);
	cfg_errors_clear(&errs);
	if (c->cfg == NULL)
		return EX_CONFIG;
	c->username = c->cfg->redis.username;
	c->password_file = c->cfg->redis.password_file;
	snprintf(c->user_section, sizeof c->user_section, "redis");
	if (c->as == NULL && c->role_of_cmd != NULL &&
	    c->cfg->roles[cfg_role_find(c->role_of_cmd)].username != NULL)
		c->as = c->role_of_cmd;
	if (c->as != NULL) {
		const struct cfg_role *r = &c->cfg->roles[cfg_role_find(c->as)];	/* main checked it */
		snprintf(c->user_section, sizeof c->user_section, "redis.%s", c->as);
		if (r->username == NULL) {
			cli_say("--as %s: %s has no [%s] section", c->as, c->cfg_path,
			    c->user_section);
			return EX_CONFIG;
		}
		c->username = r->username;
		c->password_file = r->password_file;
	}
	if (c->shard_opt >= 0 && c->shard_opt >= (c->cfg->redis.shards ? c->cfg->redis.shards : 1))
		return cli_usage_error("--shard %ld: [redis] shards is %ld", c->shard_opt,
		    c->cfg->redis.shards);
	return cli_use_shard(c, c->shard_opt > 0 ? (unsigned)c->shard_opt : 0);
}

int
cli_use_shard_of(struct cli *c, const char *id)
{
	return cli_use_shard(c, cluster_shard_of(id, strlen(id), (unsigned)c->cfg->redis.shards));
}

int
cli_read_verify_key(struct cli *c, char **key, size_t *len)
{
	const struct cfg *cfg = c->cfg;
	char err[512];

	*key = NULL;
	*len = 0;
	if (!cfg->records.signature_required)
		return 0;
	if (secrets_read_verify_key(cfg, key, len, err, sizeof err) != 0) {
		cli_say("[records] verify_key_file: %s", err);
		return EX_CONFIG;
	}
	return 0;
}

int
cli_print_json(const json_t *v)
{
	if (json_dumpf(v, stdout, JSON_COMPACT | JSON_ENCODE_ANY) != 0) {
		cli_say("cannot write the output");
		return EX_REFUSED;
	}
	fputc('\n', stdout);
	return 0;
}

/* ---- replies as JSON ---- */

/* A value of a flat reply or of XPENDING: an integer, a string, or null
 * for anything else (nil, an array). */
json_t *
cli_reply_json(const struct sreply *r)
{
	long long n;
	const char *s;

	if (sreply_integer(r, &n) == 0)
		return json_integer(n);
	if ((s = sreply_string(r)) != NULL)
		return ctl_scalar(s);
	return json_null();
}

int
cli_in_list(const char *const *list, const char *s)
{
	for (; list != NULL && *list != NULL; list++)
		if (strcmp(*list, s) == 0)
			return 1;
	return 0;
}

/* Adds the pairs of a flat reply to obj: first those named in `order`, in
 * that order, then the rest as they come, except `skip`. */
void
cli_add_flat(json_t *obj, const struct sreply *r, const char *const *order, const char *skip)
{
	const struct sreply *v;
	size_t n = 0;

	for (const char *const *k = order; k != NULL && *k != NULL; k++)
		if ((v = sreply_field_reply(r, *k)) != NULL)
			json_object_set_new(obj, *k, cli_reply_json(v));
	if (sreply_array_len(r, &n) != 0)
		return;
	for (size_t i = 0; i + 1 < n; i += 2) {
		const char *k = sreply_string(sreply_element(r, i));
		if (k == NULL || cli_in_list(order, k) || (skip != NULL && strcmp(k, skip) == 0))
			continue;
		json_object_set_new(obj, k, cli_reply_json(sreply_element(r, i + 1)));
	}
}

/* A stream entry [id, [f, v, ...]]: its id, NULL for another shape. */
const char *
cli_entry_id(const struct sreply *e)
{
	size_t n = 0, fields;

	if (sreply_array_len(e, &n) != 0 || n != 2 ||
	    sreply_array_len(sreply_element(e, 1), &fields) != 0)
		return NULL;
	return sreply_string(sreply_element(e, 0));
}

/* A stream entry (entry_id checked) as {"entryId": id, fields...}. */
json_t *
cli_entry_json(const struct sreply *e, const char *const *order)
{
	json_t *obj = json_object();

	json_object_set_new(obj, "entryId", json_string(cli_entry_id(e)));
	cli_add_flat(obj, sreply_element(e, 1), order, NULL);
	return obj;
}

/* After getopt returned '?' or an option the command does not take; cmd is
 * NULL for the global options. */
int
cli_unknown_option(const char *cmd, char **argv)
{
	const char *sep = cmd != NULL ? ": " : "";

	if (cmd == NULL)
		cmd = "";
	if (optopt != 0 && optopt < 256 && strncmp(argv[optind - 1], "--", 2) != 0)
		return cli_usage_error("%s%sunknown option or missing value: -%c", cmd, sep, optopt);
	return cli_usage_error("%s%sunknown option or missing value: %s", cmd, sep,
	    argv[optind - 1]);
}

/* ---- the other commands' options ---- */

/* --shard N: 0 or an exit code (the range is checked with the config). */
int
cli_shard_option(struct cli *c, const char *v)
{
	char *end;
	long n = strtol(v, &end, 10);

	if (*v < '0' || *v > '9' || *end != '\0' || n >= SHARD_MAX)
		return cli_usage_error("--shard: '%s' is not a shard number", v);
	c->shard_opt = n;
	return 0;
}

/*
 * -c, -h and --json, then exactly `npos` positional arguments into pos[].
 * 0, 1 for -h, or an exit code.
 */
int
cli_parse_simple(struct cli *c, int argc, char **argv, int allow_json, int npos, char **pos)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, OPT_JSON},
		{"shard", required_argument, NULL, OPT_SHARD},
		{"config", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
		if (ch == 'h')
			return 1;
		if (ch == 'c')
			c->cfg_path = optarg;
		else if (ch == OPT_JSON && allow_json)
			c->json = 1;
		else if (ch == OPT_SHARD && npos == 0 && (rc = cli_shard_option(c, optarg)) != 0)
			return rc;
		else if (ch != OPT_SHARD || npos != 0)	/* with an ID, the ID picks the shard */
			return cli_unknown_option(argv[0], argv);
	}
	if (argc - optind != npos)
		return cli_usage_error("%s: expected %d argument%s, got %d", argv[0], npos,
		    npos == 1 ? "" : "s", argc - optind);
	for (int i = 0; i < npos; i++)
		pos[i] = argv[optind + i];
	return 0;
}

void
cli_shard_range(const struct cli *c, unsigned *first, unsigned *end)
{
	*first = c->shard_opt >= 0 ? (unsigned)c->shard_opt : 0;
	*end = c->shard_opt >= 0 ? *first + 1 :
	    c->cfg->redis.shards > 0 ? (unsigned)c->cfg->redis.shards : 1;
}

static void
cli_tick(EV_P_ ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
}

void
cli_run_loop(struct ev_loop *loop, const int *done, long timeout_ms)
{
	ev_timer tick;

	ev_timer_init(&tick, cli_tick, 0.05, 0.05);
	ev_timer_start(loop, &tick);
	for (int64_t end = wtime_mono_ms() + timeout_ms; !*done && wtime_mono_ms() < end;)
		ev_run(loop, EVRUN_ONCE);
	ev_timer_stop(loop, &tick);
}

