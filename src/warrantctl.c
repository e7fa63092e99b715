/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * warrantctl: the decider's and the operator's tool (warrantd(7) §11).
 *
 *   warrantctl [-c FILE] decide ...     write a record, enqueue or schedule it
 *   warrantctl [-c FILE] status         group lag, PEL, consumers, queue sizes
 *   warrantctl [-c FILE] metrics        the same as Prometheus gauges (textfile collector)
 *   warrantctl [-c FILE] inspect ID     state, verified record, audit trail
 *   warrantctl [-c FILE] dead list|requeue ID|drop ID
 *
 * Exit codes: 0 ok, 1 not found or refused, 64 usage, 69 Redis unreachable,
 * 78 config error. Every error is one line on stderr. A CLI runs one command
 * and exits, so it talks to Redis synchronously; every write that changes
 * more than one key is one Lua script.
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "allowlist.h"
#include "cfgfile.h"
#include "cluster.h"
#include "config.h"
#include "ctl.h"
#include "disc.h"
#include "record.h"
#include "rnd.h"
#include "rtoken.h"
#include "secrets.h"
#include "sentinel.h"
#include "proc.h"
#include "sreply.h"
#include "store.h"
#include "version.h"
#include "wtime.h"

#define PROG		"warrantctl"
#define EX_REFUSED	1
#define TIMEOUT_S	10
#define PAGE		1000	/* XRANGE COUNT */
#define PAGE_S		"1000"
#define MAX_ARGS	64	/* of a command built with run() */
#define DETAIL_MAX	512

struct ctx {
	const char *cfg_path;
	struct cfg *cfg;
	struct store_keys keys;	/* of the shard in use (shards unset: the prefix's) */
	char prefix[STORE_KEY_MAX];	/* the shard's: "{P:i}", or P */
	unsigned shard;
	long shard_opt;		/* --shard N; -1: every shard */
	redisContext *redis;
	int json;		/* --json */
	const char *as;		/* --as ROLE; NULL: [redis]'s user */
	/* The Redis user it logs in as: [redis.ROLE]'s with --as, else
	 * [redis]'s (either may be NULL: no AUTH); borrowed from cfg. */
	const char *username, *password_file;
	char user_section[32];	/* "redis", "redis.operator": for messages */
};

static const char usage_text[] =
"usage: warrantctl [-c FILE] [--as ROLE] COMMAND [ARGS]\n"
"\n"
"  decide --on-behalf-of S --action A --resource R [--param K=V]... [--params JSON]\n"
"         --basis B --expires T [--not-before T] [--notify OWNER] [--id ID]\n"
"         [--issuer ISS] [--kid KID] --key FILE\n"
"      write a decision record and enqueue its id (or schedule it when\n"
"      --not-before is in the future); prints the recordId.\n"
"      T: RFC 3339 UTC (2026-11-30T04:00:00Z) or +N[smhd] from now.\n"
"      --key: the PEM private key (ES256, RS256) or the HMAC secret (HS256);\n"
"      not needed with [records] signature = off.\n"
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
"  dead requeue ID        put a dead record back on the queue (not past its deadline)\n"
"  dead drop ID           delete the dead letters of a record\n"
"\n"
"  -c, --config FILE   the daemon's INI file (default " CFG_DEFAULT_PATH ")\n"
"      --as ROLE       log in to Redis as the user of [redis.ROLE]: operator,\n"
"                      monitor or decider (default: [redis]'s user)\n"
"  -h, --help          this help\n"
"  -V, --version       the version\n"
"\n"
"exit: 0 ok, 1 not found or refused, 64 usage, 69 Redis unreachable, 78 config error\n";

/* The fields of a P:dead (store.h) and a P:audit entry, in the order they
 * are shown. */
static const char *const *const dead_order = store_dead_fields;
static const char *const audit_order[] = {"id", "from", "to", "attempt", "consumer", "at",
    "detail", NULL};
/* The state fields of a decision hash (§3.3), shown first by inspect. */
static const char *const state_order[] = {"state", "attempts", "owner", "createdAt",
    "updatedAt", "outcome", "detail", "httpStatus", NULL};

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line on stderr, whatever the message holds. */
static void
say(const char *fmt, ...)
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

static int
usage_error(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	say("%s (see warrantctl -h)", buf);
	return EX_USAGE;
}

/* ---- config and connection ---- */

/* Shard i's keys ("{P:i}:..."; shards unset: "P:..."). On a cluster the
 * connection goes when the shard's slot is another node's. 0 or an exit
 * code. */
static int
use_shard(struct ctx *c, unsigned i)
{
	unsigned old_slot = cluster_key_slot(c->keys.jobs, strlen(c->keys.jobs));

	if (cluster_shard_prefix(c->prefix, sizeof c->prefix, c->cfg->redis.prefix, i,
	    (unsigned)c->cfg->redis.shards) != 0 || store_keys_init(&c->keys, c->prefix, PROG) != 0) {
		say("%s: [redis] prefix is too long", c->cfg_path);
		return EX_CONFIG;
	}
	c->shard = i;
	if (c->cfg->redis.cluster && c->redis &&
	    cluster_key_slot(c->keys.jobs, strlen(c->keys.jobs)) != old_slot) {
		redisFree(c->redis);	/* the next connect_redis asks the map */
		c->redis = NULL;
	}
	return 0;
}

static int
load_config(struct ctx *c)
{
	struct cfg_errors errs = {0};

	c->cfg = cfgfile_load(c->cfg_path, &errs);
	for (size_t i = 0; i < errs.n; i++)
		say("%s", errs.msgs[i]);
	cfg_errors_clear(&errs);
	if (c->cfg == NULL)
		return EX_CONFIG;
	c->username = c->cfg->redis.username;
	c->password_file = c->cfg->redis.password_file;
	snprintf(c->user_section, sizeof c->user_section, "redis");
	if (c->as != NULL) {
		const struct cfg_role *r = &c->cfg->roles[cfg_role_find(c->as)];	/* main checked it */
		snprintf(c->user_section, sizeof c->user_section, "redis.%s", c->as);
		if (r->username == NULL) {
			say("--as %s: %s has no [%s] section", c->as, c->cfg_path,
			    c->user_section);
			return EX_CONFIG;
		}
		c->username = r->username;
		c->password_file = r->password_file;
	}
	if (c->shard_opt >= 0 && c->shard_opt >= (c->cfg->redis.shards ? c->cfg->redis.shards : 1))
		return usage_error("--shard %ld: [redis] shards is %ld", c->shard_opt,
		    c->cfg->redis.shards);
	return use_shard(c, c->shard_opt > 0 ? (unsigned)c->shard_opt : 0);
}

/* The shard of recordId id (FNV-1a-32 mod shards: cluster.h). */
static int
use_shard_of(struct ctx *c, const char *id)
{
	return use_shard(c, cluster_shard_of(id, strlen(id), (unsigned)c->cfg->redis.shards));
}

/* The reply, even an error reply; NULL (and c->redis->err) when the
 * connection failed. */
static redisReply *
run_argv(struct ctx *c, int argc, const char **argv)
{
	return redisCommandArgv(c->redis, argc, argv, NULL);
}

/*
 * Runs a command given as strings. 0 with *out (caller frees with
 * freeReplyObject), EX_UNAVAILABLE when the connection failed, EX_REFUSED on
 * an error reply; a message is printed in both cases.
 */
static int
checked(struct ctx *c, redisReply *r, const char *what, redisReply **out)
{
	*out = NULL;
	if (r == NULL) {
		say("redis: %s: %s", what, c->redis->errstr[0] ? c->redis->errstr : "no reply");
		return EX_UNAVAILABLE;
	}
	const char *why = sreply_error_text(sreply_of(r));
	if (why != NULL) {
		say("redis: %s: %s", what, why);
		freeReplyObject(r);
		return EX_REFUSED;
	}
	*out = r;
	return 0;
}

static int
runv(struct ctx *c, redisReply **out, int argc, const char **argv)
{
	return checked(c, run_argv(c, argc, argv), argv[0], out);
}

/* A script of lua/ (lua/decide.lua, lua/requeue.lua) by EVAL, its
 * arguments set by name; a call with one missing is refused here. */
static int
run_script(struct ctx *c, redisReply **out, const struct store_args *a)
{
	struct store_vec v;
	char err[160];

	*out = NULL;
	if (store_args_vec(a, &v, err, sizeof err) < 0) {
		say("%s", err);
		return EX_REFUSED;
	}
	int rc = checked(c, redisCommandArgv(c->redis, v.argc, v.argv, v.len), "EVAL", out);
	store_vec_free(&v);
	return rc;
}

static int run(struct ctx *c, redisReply **out, const char *cmd, ...)
	__attribute__((sentinel));

static int
run(struct ctx *c, redisReply **out, const char *cmd, ...)
{
	const char *argv[MAX_ARGS];
	int argc = 0;
	va_list ap;

	argv[argc++] = cmd;
	va_start(ap, cmd);
	while (argc < MAX_ARGS && (argv[argc] = va_arg(ap, const char *)) != NULL)
		argc++;
	va_end(ap);
	return runv(c, out, argc, argv);
}

/* The AUTH password: with --as ROLE the role's password_file; else as the
 * daemon gets it ([redis] auth, rtoken.h). 0 with *pw NULL (no AUTH) or a
 * secret (secrets_free), or an exit code. */
static int
redis_password(const struct ctx *c, char **pw, size_t *len)
{
	const struct cfg *cfg = c->cfg;
	char err[512];

	*pw = NULL;
	*len = 0;
	if (c->as != NULL) {
		if (c->password_file == NULL ||
		    secrets_read_cfg(cfg, c->password_file, SECRETS_TRIMMED, pw, len, err,
		    sizeof err) == 0)
			return 0;
		say("[%s] password_file: %s", c->user_section, err);
		return EX_CONFIG;
	}
	if (rtoken_fetch_once(cfg, TIMEOUT_S * 1000L, pw, len, err, sizeof err) == 0)
		return 0;
	say("[redis] %s: %s", cfg->redis.auth == CFG_REDIS_PASSWORD ? "password_file" : "auth",
	    err);
	return cfg->redis.auth == CFG_REDIS_PASSWORD ? EX_CONFIG : EX_UNAVAILABLE;
}

static int
authenticate(struct ctx *c)
{
	char *pw;
	size_t len;
	redisReply *r;
	int rc;

	if ((rc = redis_password(c, &pw, &len)) != 0)
		return rc;
	if (pw == NULL)
		return 0;
	if (c->username != NULL)
		rc = run(c, &r, "AUTH", c->username, pw, (char *)NULL);
	else
		rc = run(c, &r, "AUTH", pw, (char *)NULL);
	secrets_free(pw, len);
	freeReplyObject(r);
	return rc == 0 ? 0 : EX_UNAVAILABLE;
}

/* Cluster: the node owning the slot of the shard in use, from a fresh slot
 * map. 0, or an exit code. */
static int
cluster_owner(struct ctx *c, char *host, size_t hostlen, int *port)
{
	const struct cfg *cfg = c->cfg;
	struct sentinel_addr seeds[SENTINEL_MAX];
	struct cluster_map *m = NULL;
	char err[512], *pw = NULL;
	size_t n, len = 0;
	int rc = EX_UNAVAILABLE;

	if (sentinel_parse_list(cfg->redis.cluster, seeds, &n, err, sizeof err) < 0) {
		say("%s", err);
		return EX_CONFIG;
	}
	if ((rc = redis_password(c, &pw, &len)) != 0)
		return rc;
	rc = EX_UNAVAILABLE;
	if ((m = cluster_map_new()) == NULL)
		say("out of memory");
	else if (cluster_refresh(m, seeds, n, c->username, pw, TIMEOUT_S * 1000L, err,
	    sizeof err) < 0)
		say("%s", err);
	else {
		unsigned slot = cluster_key_slot(c->keys.jobs, strlen(c->keys.jobs));
		const struct cluster_node *o = cluster_map_owner(m, slot);
		if (o == NULL || strlen(o->host) >= hostlen)
			say("no cluster node owns slot %u of %s", slot, c->keys.jobs);
		else {
			snprintf(host, hostlen, "%s", o->host);
			*port = o->port;
			rc = 0;
		}
	}
	if (pw)
		secrets_free(pw, len);
	cluster_map_free(m);
	return rc;
}

/* Sentinel: the primary's address, as the daemon finds it. 0, or an exit
 * code. */
static int
sentinel_primary(const struct ctx *c, char *host, size_t hostlen, int *port)
{
	const struct cfg *cfg = c->cfg;
	struct sentinel_addr a[SENTINEL_MAX];
	char err[256], *pw = NULL;
	size_t n, len = 0;
	int rc;

	if (sentinel_parse_list(cfg->redis.sentinels, a, &n, err, sizeof err) < 0 ||
	    (cfg->redis.sentinel_password_file &&
	    secrets_read_cfg(cfg, cfg->redis.sentinel_password_file, SECRETS_TRIMMED, &pw, &len,
	    err, sizeof err) < 0)) {
		say("%s", err);
		return EX_CONFIG;
	}
	/* as the daemon: without a file of their own, the sentinels get the
	 * Redis token */
	if (!cfg->redis.sentinel_password_file && cfg->redis.auth != CFG_REDIS_PASSWORD &&
	    (rc = redis_password(c, &pw, &len)) != 0)
		return rc;
	rc = sentinel_master(a, n, cfg->redis.master_name, pw, TIMEOUT_S * 1000L, host, hostlen,
	    port, err, sizeof err);
	if (pw)
		secrets_free(pw, len);
	if (rc < 0) {
		say("%s", err);
		return EX_UNAVAILABLE;
	}
	return 0;
}

/* [redis] allow_hosts, as the daemon applies it: a host a sentinel or the
 * cluster named outside it gets no connection, so no AUTH. 0, or an exit
 * code. */
static int
host_allowed(const struct cfg *cfg, const char *host, int port)
{
	char err[256];
	struct allowlist *a = disc_allowlist_of(cfg->redis.allow_hosts, NULL,
	    cfg->redis.sentinels, cfg->redis.cluster, err, sizeof err);

	if (a == NULL) {
		say("%s", err);
		return EX_CONFIG;
	}
	int ok = allowlist_match(a, host);
	allowlist_free(a);
	if (!ok) {
		say("%s:%d is outside [redis] allow_hosts: not connected to", host, port);
		return EX_UNAVAILABLE;
	}
	return 0;
}

static int
connect_redis(struct ctx *c)
{
	const struct cfg *cfg = c->cfg;
	struct timeval tv = {TIMEOUT_S, 0};
	char db[16], host[SENTINEL_HOST_MAX];
	const char *where = cfg->redis.host;
	int port = cfg->redis.port;
	redisReply *r;
	int rc;

	if (c->redis != NULL)
		return 0;	/* connected to the shard's node already */
	if (cfg->redis.sentinels && (rc = sentinel_primary(c, host, sizeof host, &port)) != 0)
		return rc;
	if (cfg->redis.cluster && (rc = cluster_owner(c, host, sizeof host, &port)) != 0)
		return rc;
	if (cfg->redis.sentinels || cfg->redis.cluster) {
		where = host;
		if ((rc = host_allowed(cfg, host, port)) != 0)
			return rc;
	}
	if (cfg->redis.socket != NULL)
		c->redis = redisConnectUnixWithTimeout(cfg->redis.socket, tv);
	else
		c->redis = redisConnectWithTimeout(where, port, tv);
	if (c->redis == NULL || c->redis->err) {
		if (cfg->redis.socket != NULL)
			say("cannot connect to Redis at %s: %s", cfg->redis.socket,
			    c->redis ? c->redis->errstr : "out of memory");
		else
			say("cannot connect to Redis at %s:%d: %s", where, port,
			    c->redis ? c->redis->errstr : "out of memory");
		return EX_UNAVAILABLE;
	}
	if (redisSetTimeout(c->redis, tv) != REDIS_OK) {
		say("cannot set the Redis timeout");
		return EX_UNAVAILABLE;
	}
	if ((rc = authenticate(c)) != 0)
		return rc;
	if (cfg->redis.db == 0)
		return 0;
	snprintf(db, sizeof db, "%d", cfg->redis.db);
	rc = run(c, &r, "SELECT", db, (char *)NULL);
	freeReplyObject(r);
	return rc == 0 ? 0 : EX_UNAVAILABLE;
}

/* The verification key of [records], for inspect and requeue. *key is NULL
 * with signature = off. Caller frees with secrets_free. */
static int
read_verify_key(struct ctx *c, char **key, size_t *len)
{
	const struct cfg *cfg = c->cfg;
	char err[512];

	*key = NULL;
	*len = 0;
	if (!cfg->records.signature_required)
		return 0;
	if (secrets_read_verify_key(cfg, key, len, err, sizeof err) != 0) {
		say("[records] verify_key_file: %s", err);
		return EX_CONFIG;
	}
	return 0;
}

static int
print_json(const json_t *v)
{
	if (json_dumpf(v, stdout, JSON_COMPACT | JSON_ENCODE_ANY) != 0) {
		say("cannot write the output");
		return EX_REFUSED;
	}
	fputc('\n', stdout);
	return 0;
}

/* ---- replies as JSON ---- */

/* A value of a flat reply or of XPENDING: an integer, a string, or null
 * for anything else (nil, an array). */
static json_t *
reply_json(const struct sreply *r)
{
	long long n;
	const char *s;

	if (sreply_integer(r, &n) == 0)
		return json_integer(n);
	if ((s = sreply_string(r)) != NULL)
		return ctl_scalar(s);
	return json_null();
}

static int
in_list(const char *const *list, const char *s)
{
	for (; list != NULL && *list != NULL; list++)
		if (strcmp(*list, s) == 0)
			return 1;
	return 0;
}

/* Adds the pairs of a flat reply to obj: first those named in `order`, in
 * that order, then the rest as they come, except `skip`. */
static void
add_flat(json_t *obj, const struct sreply *r, const char *const *order, const char *skip)
{
	const struct sreply *v;
	size_t n = 0;

	for (const char *const *k = order; k != NULL && *k != NULL; k++)
		if ((v = sreply_field_reply(r, *k)) != NULL)
			json_object_set_new(obj, *k, reply_json(v));
	if (sreply_array_len(r, &n) != 0)
		return;
	for (size_t i = 0; i + 1 < n; i += 2) {
		const char *k = sreply_string(sreply_element(r, i));
		if (k == NULL || in_list(order, k) || (skip != NULL && strcmp(k, skip) == 0))
			continue;
		json_object_set_new(obj, k, reply_json(sreply_element(r, i + 1)));
	}
}

/* A stream entry [id, [f, v, ...]]: its id, NULL for another shape. */
static const char *
entry_id(const struct sreply *e)
{
	size_t n = 0, fields;

	if (sreply_array_len(e, &n) != 0 || n != 2 ||
	    sreply_array_len(sreply_element(e, 1), &fields) != 0)
		return NULL;
	return sreply_string(sreply_element(e, 0));
}

/* A stream entry (entry_id checked) as {"entryId": id, fields...}. */
static json_t *
entry_json(const struct sreply *e, const char *const *order)
{
	json_t *obj = json_object();

	json_object_set_new(obj, "entryId", json_string(entry_id(e)));
	add_flat(obj, sreply_element(e, 1), order, NULL);
	return obj;
}

/*
 * Appends to `out` every entry of stream `key` whose field `id` equals
 * `want` (every entry when want is NULL), read in pages with XRANGE, so a
 * long stream never arrives in one reply. 0 or an exit code.
 */
static int
scan_stream(struct ctx *c, const char *key, const char *want, const char *const *order,
	    json_t *out)
{
	char start[128] = "-";
	redisReply *r;
	int rc;

	for (;;) {
		if ((rc = run(c, &r, "XRANGE", key, start, "+", "COUNT", PAGE_S, (char *)NULL)) != 0)
			return rc;
		const struct sreply *page = sreply_of(r);
		size_t n = 0;
		if (sreply_array_len(page, &n) != 0)
			n = 0;
		for (size_t i = 0; i < n; i++) {
			const struct sreply *e = sreply_element(page, i);
			const char *eid = entry_id(e), *id;
			if (eid == NULL)
				continue;
			id = sreply_field(sreply_element(e, 1), "id");
			if (want == NULL || (id != NULL && strcmp(id, want) == 0))
				json_array_append_new(out, entry_json(e, order));
			/* The next page starts after the last entry seen. */
			snprintf(start, sizeof start, "(%s", eid);
		}
		freeReplyObject(r);
		if (n < PAGE)
			return 0;
	}
}

/* ---- decide ---- */

enum {
	OPT_ON_BEHALF_OF = 256, OPT_ACTION, OPT_RESOURCE, OPT_PARAM, OPT_PARAMS, OPT_BASIS,
	OPT_EXPIRES, OPT_NOT_BEFORE, OPT_NOTIFY, OPT_ID, OPT_KID, OPT_KEY, OPT_ISSUER, OPT_JSON,
	OPT_SHARD,
};

struct decide_opts {
	struct ctl_decision d;
	char id_buf[CTL_ID_LEN + 1];	/* d.id when --id is not given */
	const char **params;	/* --param values, d.params points here */
	const char *expires, *not_before, *key_path, *kid, *issuer;
};

/* After getopt returned '?' or an option the command does not take; cmd is
 * NULL for the global options. */
static int
unknown_option(const char *cmd, char **argv)
{
	const char *sep = cmd != NULL ? ": " : "";

	if (cmd == NULL)
		cmd = "";
	if (optopt != 0 && optopt < 256 && strncmp(argv[optind - 1], "--", 2) != 0)
		return usage_error("%s%sunknown option or missing value: -%c", cmd, sep, optopt);
	return usage_error("%s%sunknown option or missing value: %s", cmd, sep,
	    argv[optind - 1]);
}

static int
decide_option(struct ctx *c, struct decide_opts *o, int ch)
{
	switch (ch) {
	case 'c': c->cfg_path = optarg; break;
	case OPT_ON_BEHALF_OF: o->d.on_behalf_of = optarg; break;
	case OPT_ACTION: o->d.action = optarg; break;
	case OPT_RESOURCE: o->d.resource = optarg; break;
	case OPT_PARAM: o->params[o->d.nparams++] = optarg; break;
	case OPT_PARAMS: o->d.params_json = optarg; break;
	case OPT_BASIS: o->d.basis = optarg; break;
	case OPT_EXPIRES: o->expires = optarg; break;
	case OPT_NOT_BEFORE: o->not_before = optarg; break;
	case OPT_NOTIFY: o->d.notify = optarg; break;
	case OPT_ID: o->d.id = optarg; break;
	case OPT_KID: o->kid = optarg; break;
	case OPT_KEY: o->key_path = optarg; break;
	case OPT_ISSUER: o->issuer = optarg; break;
	default: return -1;
	}
	return 0;
}

/* 0, 1 for -h, or an exit code. */
static int
parse_decide(struct ctx *c, int argc, char **argv, struct decide_opts *o)
{
	static const struct option longopts[] = {
		{"on-behalf-of", required_argument, NULL, OPT_ON_BEHALF_OF},
		{"action", required_argument, NULL, OPT_ACTION},
		{"resource", required_argument, NULL, OPT_RESOURCE},
		{"param", required_argument, NULL, OPT_PARAM},
		{"params", required_argument, NULL, OPT_PARAMS},
		{"basis", required_argument, NULL, OPT_BASIS},
		{"expires", required_argument, NULL, OPT_EXPIRES},
		{"not-before", required_argument, NULL, OPT_NOT_BEFORE},
		{"notify", required_argument, NULL, OPT_NOTIFY},
		{"id", required_argument, NULL, OPT_ID},
		{"kid", required_argument, NULL, OPT_KID},
		{"key", required_argument, NULL, OPT_KEY},
		{"issuer", required_argument, NULL, OPT_ISSUER},
		{"config", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
		if (ch == 'h')
			return 1;
		if (decide_option(c, o, ch) != 0)
			return unknown_option("decide", argv);
	}
	if (optind < argc)
		return usage_error("decide: unexpected argument '%s'", argv[optind]);
	if (!o->d.on_behalf_of || !o->d.action || !o->d.resource || !o->d.basis || !o->expires)
		return usage_error("decide: --on-behalf-of, --action, --resource, --basis and "
		    "--expires are required");
	return 0;
}

static int
random_id(char *out)
{
	unsigned char raw[CTL_ID_LEN];

	if (rnd_bytes(raw, sizeof raw) != 0) {
		say("cannot read the kernel's random bytes: %s", strerror(errno));
		return EX_REFUSED;
	}
	ctl_make_id(raw, out);
	return 0;
}

/* Times, id and issuer: what the options leave to be worked out. */
static int
complete_decision(struct ctx *c, struct decide_opts *o, int64_t now, char *id_buf)
{
	const char *cfg_iss = c->cfg->records.issuer;
	int rc;

	o->d.decided_at_ms = now;
	if (ctl_parse_time(o->expires, now, &o->d.expires_at_ms) != 0)
		return usage_error("decide: --expires: not RFC 3339 UTC or +N[smhd]: '%s'",
		    o->expires);
	if (o->not_before != NULL &&
	    ctl_parse_time(o->not_before, now, &o->d.not_before_ms) != 0)
		return usage_error("decide: --not-before: not RFC 3339 UTC or +N[smhd]: '%s'",
		    o->not_before);
	if (cfg_iss != NULL && o->issuer != NULL && strcmp(cfg_iss, o->issuer) != 0)
		return usage_error("decide: --issuer differs from [records] issuer");
	o->d.iss = cfg_iss != NULL ? cfg_iss : o->issuer != NULL ? o->issuer : PROG;
	if (o->d.id == NULL) {
		if ((rc = random_id(id_buf)) != 0)
			return rc;
		o->d.id = id_buf;
	}
	return 0;
}

/* By the rules the worker applies (§3.1), the signature aside. */
static int
validate_content(struct ctx *c, const char *id, const char *json, int64_t now)
{
	struct record_policy pol;
	struct record *rec;
	char detail[DETAIL_MAX];
	enum record_status st;

	ctl_policy_content(&pol, c->cfg);
	st = record_load(&pol, id, json, now, &rec, NULL, detail, sizeof detail);
	record_free(rec);
	if (st == RECORD_UNKNOWN_ACTION) {
		say("decide: refused: %s", detail);
		return EX_REFUSED;
	}
	if (st != RECORD_OK) {
		say("decide: the record would be invalid: %s", detail);
		return EX_USAGE;
	}
	return 0;
}

/*
 * A decider signing with a key whose public half the workers do not have
 * would fill the dead letters: when the configured verification key can be
 * read here, the signed record must verify with it.
 */
static int
check_against_verify_key(struct ctx *c, const char *id, const char *jws, int64_t now)
{
	struct record_policy pol;
	struct record *rec;
	char detail[DETAIL_MAX], err[512], *key;
	size_t len;
	enum record_status st;

	if (secrets_read_verify_key(c->cfg, &key, &len, err, sizeof err) != 0)
		return 0;	/* a decider's host need not hold it */
	ctl_policy_init(&pol, c->cfg, (unsigned char *)key, len);
	st = record_load(&pol, id, jws, now, &rec, NULL, detail, sizeof detail);
	record_free(rec);
	secrets_free(key, len);
	if (st == RECORD_OK)
		return 0;
	say("decide: the signed record does not verify with [records] verify_key_file: %s",
	    detail);
	return EX_CONFIG;
}

/* The `record` field: a JWS, or the plain JSON with signature = off.
 * *out is the caller's to free. */
static int
encode_record(struct ctx *c, struct decide_opts *o, const json_t *content, const char *json,
	      int64_t now, char **out)
{
	const struct cfg *cfg = c->cfg;
	char err[512], *key;
	size_t len;

	if (!cfg->records.signature_required)
		return (*out = strdup(json)) != NULL ? 0 : EX_REFUSED;
	/* The decider's signing key: a private PEM or the HMAC secret. */
	if (secrets_read(o->key_path, secrets_key_kind(cfg->records.algorithm, 1), &key, &len, err,
	    sizeof err) != 0) {
		say("decide: --key: %s", err);
		return EX_CONFIG;
	}
	*out = record_sign(cfg->records.algorithm, (unsigned char *)key, len, o->kid, content);
	secrets_free(key, len);
	if (*out == NULL) {
		say("decide: --key %s: not a usable %s %s", o->key_path,
		    jwa_name(cfg->records.algorithm),
		    cfg->records.algorithm == JWA_HS256 ? "secret (at least 32 bytes)"
		    : "private key (PEM)");
		return EX_CONFIG;
	}
	return check_against_verify_key(c, o->d.id, *out, now);
}

static int
store_decision(struct ctx *c, const struct ctl_decision *d, const char *record, int64_t now)
{
	char hash[STORE_KEY_MAX + RECORD_ID_MAX], at[WTIME_RFC3339_LEN], score[32] = "";
	struct store_args a;
	redisReply *r;
	int rc;

	if (store_decision_key(&c->keys, d->id, hash, sizeof hash) != 0) {
		say("decide: the key name is too long");
		return EX_CONFIG;
	}
	if (d->not_before_ms > now)
		snprintf(score, sizeof score, "%lld", (long long)d->not_before_ms);
	wtime_format_rfc3339(now, at, sizeof at);
	store_args_init(&a, STORE_DECIDE);
	store_arg(&a, STORE_DECIDE_HASH, hash);
	store_arg(&a, STORE_DECIDE_JOBS, c->keys.jobs);
	store_arg(&a, STORE_DECIDE_SCHEDULED, c->keys.scheduled);
	store_arg(&a, STORE_DECIDE_RECORD, record);
	store_arg(&a, STORE_DECIDE_CREATED_AT, at);
	store_arg(&a, STORE_DECIDE_RECORD_ID, d->id);
	store_arg(&a, STORE_DECIDE_SCORE, score);
	if ((rc = run_script(c, &r, &a)) != 0)
		return rc;
	long long stored = 0;
	rc = sreply_integer(sreply_of(r), &stored) == 0 && stored == 1 ? 0 : EX_REFUSED;
	freeReplyObject(r);
	if (rc != 0) {
		say("decide: refused: decision %s exists already", d->id);
		return rc;
	}
	printf("%s\n", d->id);
	return 0;
}

static int
decide_with(struct ctx *c, struct decide_opts *o)
{
	char err[DETAIL_MAX], *json = NULL, *record = NULL;
	json_t *content = NULL;
	int64_t now = wtime_now_ms();
	int rc;

	if ((rc = load_config(c)) != 0)
		return rc;
	if (c->cfg->records.signature_required && o->key_path == NULL)
		return usage_error("decide: --key is required with [records] signature = required");
	if ((rc = complete_decision(c, o, now, o->id_buf)) != 0)
		return rc;
	if ((content = ctl_build_record(&o->d, err, sizeof err)) == NULL)
		return usage_error("decide: %s", err);
	if ((json = json_dumps(content, JSON_COMPACT)) == NULL)
		rc = EX_REFUSED;
	if (rc == 0)
		rc = validate_content(c, o->d.id, json, now);
	if (rc == 0)
		rc = encode_record(c, o, content, json, now, &record);
	if (rc == 0)
		rc = use_shard_of(c, o->d.id);
	if (rc == 0)
		rc = connect_redis(c);
	if (rc == 0)
		rc = store_decision(c, &o->d, record, now);
	free(record);
	free(json);
	json_decref(content);
	return rc;
}

static int
cmd_decide(struct ctx *c, int argc, char **argv)
{
	struct decide_opts o;
	int rc;

	memset(&o, 0, sizeof o);
	if ((o.params = calloc((size_t)argc, sizeof *o.params)) == NULL) {
		say("out of memory");
		return EX_REFUSED;
	}
	o.d.params = o.params;
	rc = parse_decide(c, argc, argv, &o);
	if (rc == 1) {
		fputs(usage_text, stdout);
		rc = 0;
	} else if (rc == 0) {
		rc = decide_with(c, &o);
	}
	free(o.params);
	return rc;
}

/* ---- the other commands' options ---- */

/* --shard N: 0 or an exit code (the range is checked with the config). */
static int
shard_option(struct ctx *c, const char *v)
{
	char *end;
	long n = strtol(v, &end, 10);

	if (*v < '0' || *v > '9' || *end != '\0' || n >= CLUSTER_SHARDS_MAX)
		return usage_error("--shard: '%s' is not a shard number", v);
	c->shard_opt = n;
	return 0;
}

/*
 * -c, -h and --json, then exactly `npos` positional arguments into pos[].
 * 0, 1 for -h, or an exit code.
 */
static int
parse_simple(struct ctx *c, int argc, char **argv, int allow_json, int npos, char **pos)
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
		else if (ch == OPT_SHARD && npos == 0 && (rc = shard_option(c, optarg)) != 0)
			return rc;
		else if (ch != OPT_SHARD || npos != 0)	/* with an ID, the ID picks the shard */
			return unknown_option(argv[0], argv);
	}
	if (argc - optind != npos)
		return usage_error("%s: expected %d argument%s, got %d", argv[0], npos,
		    npos == 1 ? "" : "s", argc - optind);
	for (int i = 0; i < npos; i++)
		pos[i] = argv[optind + i];
	return 0;
}

/* ---- status ---- */

/* XINFO GROUPS: the flat reply of our group; *group NULL when absent. The
 * reply `all` is the caller's to free. */
static int
find_group(struct ctx *c, redisReply **all, const struct sreply **group)
{
	const char *argv[] = {"XINFO", "GROUPS", c->keys.jobs};
	redisReply *r = run_argv(c, 3, argv);
	const char *why = sreply_error_text(sreply_of(r));
	size_t n = 0;

	*all = NULL;
	*group = NULL;
	/* No stream yet: nothing has been decided and no worker has started. */
	if (why != NULL && strstr(why, "no such key") != NULL) {
		freeReplyObject(r);
		return 0;
	}
	int rc = checked(c, r, "XINFO GROUPS", all);
	if (rc == 0 && sreply_array_len(sreply_of(*all), &n) != 0)
		n = 0;
	for (size_t i = 0; i < n; i++) {
		const struct sreply *g = sreply_element(sreply_of(*all), i);
		const char *name = sreply_field(g, "name");
		if (name != NULL && strcmp(name, c->cfg->redis.group) == 0)
			*group = g;
	}
	return rc;
}

static int
length_of(struct ctx *c, const char *cmd, const char *key, json_t *obj, const char *name)
{
	redisReply *r;
	long long n = 0;
	int rc = run(c, &r, cmd, key, (char *)NULL);

	if (rc == 0 && sreply_integer(sreply_of(r), &n) != 0)
		n = 0;
	if (rc == 0)
		json_object_set_new(obj, name, json_integer(n));
	freeReplyObject(r);
	return rc;
}

static void
group_fields(json_t *st, const struct sreply *g, long long stream_len)
{
	const struct sreply *v;

	if (g == NULL) {
		/* The group will be created at id 0 (R14): all of it is lag. */
		json_object_set_new(st, "lag", json_integer(stream_len));
		json_object_set_new(st, "entriesRead", json_integer(0));
		json_object_set_new(st, "lastDeliveredId", json_string("0-0"));
		return;
	}
	v = sreply_field_reply(g, "lag");
	json_object_set_new(st, "lag", v ? reply_json(v) : json_null());
	v = sreply_field_reply(g, "entries-read");
	json_object_set_new(st, "entriesRead", v ? reply_json(v) : json_null());
	v = sreply_field_reply(g, "last-delivered-id");
	json_object_set_new(st, "lastDeliveredId", v ? reply_json(v) : json_null());
}

/* PEL depth and its oldest entry (XPENDING summary, then - + 1). */
static int
pending_fields(struct ctx *c, json_t *st, int have_group)
{
	const char *group = c->cfg->redis.group;
	long long count = 0;
	redisReply *r;
	int rc;

	if (have_group) {
		if ((rc = run(c, &r, "XPENDING", c->keys.jobs, group, (char *)NULL)) != 0)
			return rc;
		if (sreply_integer(sreply_element(sreply_of(r), 0), &count) != 0)
			count = 0;
		freeReplyObject(r);
	}
	json_object_set_new(st, "pending", json_integer(count));
	if (count == 0) {
		json_object_set_new(st, "oldestPendingId", json_null());
		json_object_set_new(st, "oldestPendingIdleMs", json_null());
		return 0;
	}
	if ((rc = run(c, &r, "XPENDING", c->keys.jobs, group, "-", "+", "1", (char *)NULL)) != 0)
		return rc;
	const struct sreply *e = sreply_element(sreply_of(r), 0);
	size_t n = 0;
	int ok = sreply_array_len(e, &n) == 0 && n >= 4;
	json_object_set_new(st, "oldestPendingId", ok ? reply_json(sreply_element(e, 0))
	    : json_null());
	json_object_set_new(st, "oldestPendingIdleMs", ok ? reply_json(sreply_element(e, 2))
	    : json_null());
	json_object_set_new(st, "oldestPendingDeliveries", ok ? reply_json(sreply_element(e, 3))
	    : json_null());
	freeReplyObject(r);
	return 0;
}

static json_t *
consumer_entry(json_t *consumers, const char *name)
{
	json_t *o = json_object_get(consumers, name);

	if (o == NULL) {
		o = json_object();
		json_object_set_new(o, "inGroup", json_false());
		json_object_set_new(o, "pending", json_integer(0));
		json_object_set_new(o, "idleMs", json_null());
		json_object_set_new(consumers, name, o);
	}
	return o;
}

static int
group_consumers(struct ctx *c, json_t *consumers)
{
	redisReply *r;
	const struct sreply *v;
	size_t n = 0;
	int rc = run(c, &r, "XINFO", "CONSUMERS", c->keys.jobs, c->cfg->redis.group,
	    (char *)NULL);

	if (rc == 0 && sreply_array_len(sreply_of(r), &n) != 0)
		n = 0;
	for (size_t i = 0; i < n; i++) {
		const struct sreply *info = sreply_element(sreply_of(r), i);
		const char *name = sreply_field(info, "name");
		if (name == NULL)
			continue;
		json_t *o = consumer_entry(consumers, name);
		json_object_set_new(o, "inGroup", json_true());
		if ((v = sreply_field_reply(info, "pending")) != NULL)
			json_object_set_new(o, "pending", reply_json(v));
		if ((v = sreply_field_reply(info, "idle")) != NULL)
			json_object_set_new(o, "idleMs", reply_json(v));
	}
	freeReplyObject(r);
	return rc;
}

/* The prefix as a SCAN MATCH pattern that matches it literally. */
static void
glob_escape(char *dst, size_t n, const char *s)
{
	size_t j = 0;

	for (; *s && j + 2 < n; s++) {
		if (strchr("*?[]\\", *s) != NULL)
			dst[j++] = '\\';
		dst[j++] = *s;
	}
	dst[j] = '\0';
}

/* Joins P:consumer:<name> into the consumer's object: `alive` is whether the
 * hash (TTL 3 heartbeats) is still there. */
static int
add_heartbeat(struct ctx *c, json_t *o, const char *key)
{
	redisReply *r;
	size_t n = 0;
	int rc = run(c, &r, "HGETALL", key, (char *)NULL);

	if (rc != 0)
		return rc;
	int is_hash = sreply_array_len(sreply_of(r), &n) == 0;
	json_object_set_new(o, "alive", json_boolean(is_hash && n > 0));
	if (is_hash)
		add_flat(o, sreply_of(r), NULL, NULL);
	freeReplyObject(r);
	return 0;
}

/* Consumers with a heartbeat that have not read yet are not in XINFO
 * CONSUMERS: SCAN finds them. */
static int
heartbeat_consumers(struct ctx *c, json_t *consumers)
{
	char pattern[2 * STORE_KEY_MAX + 16], esc[2 * STORE_KEY_MAX], cursor[32] = "0";
	size_t plen = strlen(c->prefix) + strlen(":consumer:");
	redisReply *r;
	int rc;

	glob_escape(esc, sizeof esc, c->prefix);
	snprintf(pattern, sizeof pattern, "%s:consumer:*", esc);
	do {
		if ((rc = run(c, &r, "SCAN", cursor, "MATCH", pattern, "COUNT", PAGE_S,
		    (char *)NULL)) != 0)
			return rc;
		const struct sreply *page = sreply_of(r), *keys = sreply_element(page, 1);
		const char *next = sreply_string(sreply_element(page, 0));
		size_t n = 0, nkeys = 0;
		if (sreply_array_len(page, &n) != 0 || n != 2 || next == NULL ||
		    sreply_array_len(keys, &nkeys) != 0) {
			freeReplyObject(r);
			break;
		}
		snprintf(cursor, sizeof cursor, "%s", next);
		for (size_t i = 0; i < nkeys; i++) {
			const char *key = sreply_string(sreply_element(keys, i));
			if (key != NULL && strlen(key) > plen)
				consumer_entry(consumers, key + plen);
		}
		freeReplyObject(r);
	} while (strcmp(cursor, "0") != 0);
	return 0;
}

static int
consumer_fields(struct ctx *c, json_t *st, int have_group)
{
	json_t *consumers = json_object();
	char key[2 * STORE_KEY_MAX];
	const char *name;
	json_t *o;
	int rc = 0;

	json_object_set_new(st, "consumers", consumers);
	if (have_group)
		rc = group_consumers(c, consumers);
	if (rc == 0)
		rc = heartbeat_consumers(c, consumers);
	json_object_foreach(consumers, name, o) {
		if (rc != 0)
			break;
		snprintf(key, sizeof key, "%s:consumer:%s", c->prefix, name);
		rc = add_heartbeat(c, o, key);
	}
	return rc;
}

static int
status_json(struct ctx *c, json_t *st)
{
	redisReply *groups;
	const struct sreply *g;
	long long len;
	int rc;

	json_object_set_new(st, "stream", json_string(c->keys.jobs));
	json_object_set_new(st, "group", json_string(c->cfg->redis.group));
	if ((rc = find_group(c, &groups, &g)) != 0 ||
	    (rc = length_of(c, "XLEN", c->keys.jobs, st, "streamLength")) != 0)
		goto done;
	json_object_set_new(st, "groupExists", json_boolean(g != NULL));
	if (g == NULL)
		json_object_set_new(st, "note", json_string("no group yet: the first warrantd "
		    "creates it at id 0"));
	len = json_integer_value(json_object_get(st, "streamLength"));
	group_fields(st, g, len);
	if ((rc = pending_fields(c, st, g != NULL)) != 0 ||
	    (rc = length_of(c, "ZCARD", c->keys.scheduled, st, "scheduled")) != 0 ||
	    (rc = length_of(c, "XLEN", c->keys.dead, st, "dead")) != 0 ||
	    (rc = length_of(c, "XLEN", c->keys.notify, st, "notify")) != 0)
		goto done;
	rc = consumer_fields(c, st, g != NULL);
done:
	freeReplyObject(groups);
	return rc;
}

/* The shards a command without an ID covers: --shard N, else all of them
 * (one: shards unset). */
static void
shard_range(const struct ctx *c, unsigned *first, unsigned *end)
{
	*first = c->shard_opt >= 0 ? (unsigned)c->shard_opt : 0;
	*end = c->shard_opt >= 0 ? *first + 1 :
	    c->cfg->redis.shards > 0 ? (unsigned)c->cfg->redis.shards : 1;
}

/* One shard's status, printed: a human block, or a JSON object (into all,
 * when there are several). */
static int
status_of_shard(struct ctx *c, unsigned i, json_t *all, size_t *alive)
{
	json_t *st = json_object();
	int rc;

	if (st == NULL)
		return EX_REFUSED;
	if ((rc = use_shard(c, i)) == 0 && (rc = connect_redis(c)) == 0 &&
	    (rc = status_json(c, st)) == 0) {
		*alive += ctl_status_alive(st);
		if (all != NULL)
			return json_array_append_new(all, st) == 0 ? 0 : EX_REFUSED;
		if (c->json)
			rc = print_json(st);
		else
			ctl_print_status(stdout, st);
	}
	json_decref(st);
	return rc;
}

static int
cmd_status(struct ctx *c, int argc, char **argv)
{
	unsigned first, end;
	json_t *all = NULL;
	size_t alive = 0;
	int rc = parse_simple(c, argc, argv, 1, 0, NULL);

	if (rc == 1) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (rc != 0 || (rc = load_config(c)) != 0)
		return rc;
	shard_range(c, &first, &end);
	/* several shards in JSON: one array of their objects */
	if (c->json && end - first > 1 && (all = json_array()) == NULL)
		return EX_REFUSED;
	for (unsigned i = first; rc == 0 && i < end; i++) {
		if (i > first && all == NULL && !c->json)
			putchar('\n');
		rc = status_of_shard(c, i, all, &alive);
	}
	if (rc == 0 && all != NULL)
		rc = print_json(all);
	json_decref(all);
	/* the verdict, for scripts and people: nobody is working the queue */
	if (rc == 0 && alive == 0) {
		say("no consumer has a live heartbeat");
		rc = EX_REFUSED;
	}
	return rc;
}

/* ---- metrics ---- */

/* A fresh FILE.tmp.XXXXXX in FILE's directory, synced, then renamed over
 * FILE: a collector never reads half a file. mkstemp creates it with
 * O_EXCL, so a name planted there (a symlink to something root owns) is
 * never followed or clobbered; rename replaces a symlink at FILE itself
 * instead of writing through it. The gauges are for anyone to read. */
static int
write_atomically(const char *path, const json_t *st)
{
	char tmp[4096];
	int fd = -1;
	FILE *f = NULL;

	if (snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >= (int)sizeof tmp) {
		say("metrics: %s: name too long", path);
		return EX_USAGE;
	}
	if ((fd = mkstemp(tmp)) < 0 || fchmod(fd, 0644) < 0 ||
	    (f = fdopen(fd, "w")) == NULL) {
		say("metrics: cannot write %s: %s", tmp, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		return EX_REFUSED;
	}
	int rc = ctl_queue_metrics(f, st, wtime_now_ms());
	if (rc != 0 || fflush(f) != 0 || fsync(fileno(f)) != 0 || ferror(f)) {
		say("metrics: cannot write %s: %s", tmp, rc ? "out of memory" : strerror(errno));
		fclose(f);
		unlink(tmp);
		return EX_REFUSED;
	}
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		say("metrics: cannot write %s: %s", path, strerror(errno));
		unlink(tmp);
		return EX_REFUSED;
	}
	return 0;
}

static int
cmd_metrics(struct ctx *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"shard", required_argument, NULL, OPT_SHARD},
		{"config", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *output = NULL;
	json_t *st;
	int ch, rc;

	while ((ch = getopt_long(argc, argv, "c:ho:", longopts, NULL)) != -1) {
		if (ch == 'h') {
			fputs(usage_text, stdout);
			return 0;
		}
		if (ch == 'c')
			c->cfg_path = optarg;
		else if (ch == 'o')
			output = optarg;
		else if (ch == OPT_SHARD && (rc = shard_option(c, optarg)) != 0)
			return rc;
		else if (ch != OPT_SHARD)
			return unknown_option(argv[0], argv);
	}
	if (optind != argc)
		return usage_error("metrics: unexpected argument '%s'", argv[optind]);
	if ((rc = load_config(c)) != 0)
		return rc;
	/* one textfile per shard: the gauges' HELP and TYPE lines once a file */
	if (c->cfg->redis.shards > 0 && c->shard_opt < 0)
		return usage_error("metrics: with [redis] shards, --shard N (one file per shard)");
	if ((rc = connect_redis(c)) != 0)
		return rc;
	if ((st = json_object()) == NULL)
		return EX_REFUSED;
	if ((rc = status_json(c, st)) == 0) {
		if (output)
			rc = write_atomically(output, st);
		else if (ctl_queue_metrics(stdout, st, wtime_now_ms()) != 0)
			rc = EX_REFUSED;
	}
	json_decref(st);
	return rc;
}

/* ---- inspect ---- */

/* Verification (§3) with the configured key: "verified", and "record" or
 * "verifyReason" + "verifyDetail". */
static void
verify_into(struct ctx *c, json_t *out, const char *id, const char *raw, const char *key,
	    size_t key_len, int64_t now)
{
	struct record_policy pol;
	struct record *rec;
	char detail[DETAIL_MAX];
	enum record_status st;

	if (raw == NULL) {
		json_object_set_new(out, "verified", json_false());
		json_object_set_new(out, "verifyReason", json_string("record-missing"));
		return;
	}
	ctl_policy_init(&pol, c->cfg, (const unsigned char *)key, key_len);
	st = record_load(&pol, id, raw, now, &rec, NULL, detail, sizeof detail);
	json_object_set_new(out, "verified", json_boolean(st == RECORD_OK));
	if (st != RECORD_OK) {
		json_object_set_new(out, "verifyReason", json_string(record_status_code(st)));
		json_object_set_new(out, "verifyDetail", json_string(detail));
		return;
	}
	json_object_set_new(out, "expired", json_boolean(now >= rec->expires_at_ms));
	json_object_set_new(out, "record", record_content(rec));
	record_free(rec);
}

static int
scheduled_at(struct ctx *c, json_t *out, const char *id)
{
	char at[WTIME_RFC3339_LEN];
	redisReply *r;
	int rc = run(c, &r, "ZSCORE", c->keys.scheduled, id, (char *)NULL);

	if (rc != 0)
		return rc;
	const char *score = sreply_string(sreply_of(r));
	if (score != NULL)
		json_object_set_new(out, "scheduledAt", json_string(wtime_format_rfc3339(
		    (int64_t)strtod(score, NULL), at, sizeof at)));
	freeReplyObject(r);
	return 0;
}

static int
inspect_json(struct ctx *c, const char *id, const char *key, size_t key_len, json_t *out)
{
	char hash[STORE_KEY_MAX + RECORD_ID_MAX];
	json_t *audit = json_array(), *dead = json_array();
	redisReply *h;
	int rc = EX_REFUSED;

	if (store_decision_key(&c->keys, id, hash, sizeof hash) != 0 ||
	    (rc = run(c, &h, "HGETALL", hash, (char *)NULL)) != 0) {
		json_decref(audit);
		json_decref(dead);
		return rc;
	}
	size_t n = 0;
	if (sreply_array_len(sreply_of(h), &n) != 0 || n == 0) {
		say("inspect: no decision %s", id);
		rc = EX_REFUSED;
	} else {
		json_object_set_new(out, "id", json_string(id));
		add_flat(out, sreply_of(h), state_order, "record");
		verify_into(c, out, id, sreply_field(sreply_of(h), "record"), key, key_len,
		    wtime_now_ms());
		rc = scheduled_at(c, out, id);
	}
	if (rc == 0 && (rc = scan_stream(c, c->keys.dead, id, dead_order, dead)) == 0)
		rc = scan_stream(c, c->keys.audit, id, audit_order, audit);
	json_object_set_new(out, "deadLetters", dead);
	json_object_set_new(out, "audit", audit);
	freeReplyObject(h);
	return rc;
}

static int
cmd_inspect(struct ctx *c, int argc, char **argv)
{
	char *id = NULL, *key = NULL;
	size_t key_len = 0;
	json_t *out;
	int rc = parse_simple(c, argc, argv, 1, 1, &id);

	if (rc == 1) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (rc != 0)
		return rc;
	if (id == NULL || !record_id_valid(id))	/* parse_simple set it; the analyzer cannot see */
		return usage_error("inspect: '%s' is not a recordId", id ? id : "");
	if ((rc = load_config(c)) != 0 || (rc = use_shard_of(c, id)) != 0 ||
	    (rc = read_verify_key(c, &key, &key_len)) != 0 || (rc = connect_redis(c)) != 0) {
		secrets_free(key, key_len);
		return rc;
	}
	out = json_object();
	if ((rc = inspect_json(c, id, key, key_len, out)) == 0) {
		if (c->json)
			rc = print_json(out);
		else
			ctl_print_human(stdout, out, 0);
	}
	json_decref(out);
	secrets_free(key, key_len);
	return rc;
}

/* ---- dead letters ---- */

/* Every shard's dead letters in turn (or --shard N's). */
static int
dead_list(struct ctx *c)
{
	json_t *all = json_array(), *e;
	size_t i;
	unsigned first, end;
	int rc = 0;

	shard_range(c, &first, &end);
	for (unsigned sh = first; rc == 0 && sh < end; sh++)
		if ((rc = use_shard(c, sh)) == 0 && (rc = connect_redis(c)) == 0)
			rc = scan_stream(c, c->keys.dead, NULL, dead_order, all);

	if (rc == 0 && c->json)
		rc = print_json(all);
	else if (rc == 0)
		json_array_foreach(all, i, e)
			ctl_print_line(stdout, e, 0);
	json_decref(all);
	return rc;
}

/* The P:dead entries of recordId `id`, at least one, else EX_REFUSED. */
static int
dead_entries(struct ctx *c, const char *id, json_t *entries)
{
	int rc = scan_stream(c, c->keys.dead, id, dead_order, entries);

	if (rc == 0 && json_array_size(entries) == 0) {
		say("dead: no dead letter for %s", id);
		rc = EX_REFUSED;
	}
	return rc;
}

static int
requeue_write(struct ctx *c, const char *id, const char *hash, const char *raw,
	      json_t *entries)
{
	char at[WTIME_RFC3339_LEN], final[STORE_KEY_MAX + RECORD_ID_MAX];
	size_t n = json_array_size(entries), i;
	const char **ids = calloc(n ? n : 1, sizeof *ids);
	struct store_args a;
	redisReply *r;
	json_t *e;
	int rc;

	if (ids == NULL) {
		say("out of memory");
		return EX_REFUSED;
	}
	if (store_final_key(&c->keys, id, final, sizeof final) != 0) {
		say("dead requeue: %s: key name too long", id);
		free(ids);
		return EX_REFUSED;
	}
	json_array_foreach(entries, i, e)
		ids[i] = json_string_value(json_object_get(e, "entryId"));
	wtime_format_rfc3339(wtime_now_ms(), at, sizeof at);
	store_args_init(&a, STORE_REQUEUE);
	store_arg(&a, STORE_REQUEUE_HASH, hash);
	store_arg(&a, STORE_REQUEUE_FINAL, final);
	store_arg(&a, STORE_REQUEUE_JOBS, c->keys.jobs);
	store_arg(&a, STORE_REQUEUE_DEAD, c->keys.dead);
	store_arg(&a, STORE_REQUEUE_AUDIT, c->keys.audit);
	store_arg(&a, STORE_REQUEUE_RECORD_ID, id);
	store_arg(&a, STORE_REQUEUE_AT, at);
	store_arg_ll(&a, STORE_REQUEUE_AUDIT_MAXLEN, c->cfg->records.audit_maxlen);
	store_arg(&a, STORE_REQUEUE_RECORD, raw);
	store_arg_rest(&a, ids, n);
	rc = run_script(c, &r, &a);
	free(ids);
	if (rc != 0)
		return rc;
	/* lua/requeue.lua: {1, new entry id} or {0, why}. */
	const struct sreply *res = sreply_of(r);
	const char *said = sreply_string(sreply_element(res, 1));
	long long done = 0;
	size_t len = 0;
	if (sreply_array_len(res, &len) != 0 || len != 2 || said == NULL)
		said = NULL;
	if (said != NULL && sreply_integer(sreply_element(res, 0), &done) == 0 && done == 1) {
		printf("requeued %s as %s entry %s\n", id, c->keys.jobs, said);
	} else {
		say("dead requeue: refused: %s: %s", id, said != NULL ? said : "unexpected reply");
		rc = EX_REFUSED;
	}
	freeReplyObject(r);
	return rc;
}

/* The record as the worker would take it now: verified, and before its
 * deadline. */
static int
requeue_check(struct ctx *c, const char *id, const char *raw, const char *key,
	      size_t key_len)
{
	struct record_policy pol;
	struct record *rec;
	char detail[DETAIL_MAX], at[WTIME_RFC3339_LEN];
	int64_t now = wtime_now_ms();
	enum record_status st;

	if (raw == NULL) {
		say("dead requeue: refused: %s: no record (record-missing)", id);
		return EX_REFUSED;
	}
	ctl_policy_init(&pol, c->cfg, (const unsigned char *)key, key_len);
	st = record_load(&pol, id, raw, now, &rec, NULL, detail, sizeof detail);
	if (st != RECORD_OK) {
		say("dead requeue: refused: %s: %s: %s", id, record_status_code(st), detail);
		return EX_REFUSED;
	}
	int expired = now >= rec->expires_at_ms;
	wtime_format_rfc3339(rec->expires_at_ms, at, sizeof at);
	record_free(rec);
	if (expired) {
		say("dead requeue: refused: %s is past its deadline (expiresAt %s)", id, at);
		return EX_REFUSED;
	}
	return 0;
}

static int
dead_requeue(struct ctx *c, const char *id, const char *key, size_t key_len)
{
	char hash[STORE_KEY_MAX + RECORD_ID_MAX];
	json_t *entries = json_array();
	redisReply *r = NULL;
	int rc;

	if ((rc = dead_entries(c, id, entries)) != 0)
		goto done;
	if (store_decision_key(&c->keys, id, hash, sizeof hash) != 0) {
		rc = EX_REFUSED;
		goto done;
	}
	if ((rc = run(c, &r, "HGET", hash, "record", (char *)NULL)) != 0)
		goto done;
	const char *raw = sreply_string(sreply_of(r));
	if ((rc = requeue_check(c, id, raw, key, key_len)) == 0)
		rc = requeue_write(c, id, hash, raw, entries);
done:
	freeReplyObject(r);
	json_decref(entries);
	return rc;
}

static int
dead_drop(struct ctx *c, const char *id)
{
	json_t *entries = json_array(), *e;
	const char **argv = NULL;
	redisReply *r;
	size_t i;
	int argc = 0, rc;

	if ((rc = dead_entries(c, id, entries)) != 0)
		goto done;
	if ((argv = calloc(2 + json_array_size(entries), sizeof *argv)) == NULL) {
		rc = EX_REFUSED;
		goto done;
	}
	argv[argc++] = "XDEL";
	argv[argc++] = c->keys.dead;
	json_array_foreach(entries, i, e)
		argv[argc++] = json_string_value(json_object_get(e, "entryId"));
	if ((rc = runv(c, &r, argc, argv)) != 0)
		goto done;
	long long n = 0;
	if (sreply_integer(sreply_of(r), &n) != 0)
		n = 0;
	freeReplyObject(r);
	if (n == 0) {
		say("dead drop: no dead letter for %s", id);	/* dropped meanwhile */
		rc = EX_REFUSED;
	} else {
		printf("dropped %lld dead letter%s of %s\n", n, n == 1 ? "" : "s", id);
	}
done:
	free(argv);
	json_decref(entries);
	return rc;
}

static int
dead_with_id(struct ctx *c, const char *sub, const char *id)
{
	char *key = NULL;
	size_t key_len = 0;
	int rc;

	if (*id == '\0')
		return usage_error("dead %s: the recordId is empty", sub);
	/* drop matches any id, so a malformed one can be cleared too. */
	if (strcmp(sub, "requeue") == 0 && !record_id_valid(id))
		return usage_error("dead requeue: '%s' is not a recordId", id);
	if ((rc = load_config(c)) != 0 || (rc = use_shard_of(c, id)) != 0)
		return rc;
	if (strcmp(sub, "requeue") == 0 && (rc = read_verify_key(c, &key, &key_len)) != 0)
		return rc;
	if ((rc = connect_redis(c)) == 0)
		rc = strcmp(sub, "requeue") == 0 ? dead_requeue(c, id, key, key_len)
		    : dead_drop(c, id);
	secrets_free(key, key_len);
	return rc;
}

static int
cmd_dead(struct ctx *c, int argc, char **argv)
{
	char *id;
	int rc;

	if (argc < 2)
		return usage_error("dead: expected list, requeue ID or drop ID");
	argc--;
	argv++;
	if (strcmp(argv[0], "list") == 0) {
		if ((rc = parse_simple(c, argc, argv, 1, 0, NULL)) == 1)
			fputs(usage_text, stdout);
		if (rc != 0)
			return rc == 1 ? 0 : rc;
		return (rc = load_config(c)) != 0 ? rc : dead_list(c);
	}
	if (strcmp(argv[0], "requeue") != 0 && strcmp(argv[0], "drop") != 0)
		return usage_error("dead: unknown subcommand '%s'", argv[0]);
	if ((rc = parse_simple(c, argc, argv, 0, 1, &id)) == 1)
		fputs(usage_text, stdout);
	if (rc != 0)
		return rc == 1 ? 0 : rc;
	return dead_with_id(c, argv[0], id);
}

/* ---- main ---- */

static int
dispatch(struct ctx *c, int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(struct ctx *, int, char **);
	} cmds[] = {
		{"decide", cmd_decide}, {"status", cmd_status}, {"metrics", cmd_metrics},
		{"inspect", cmd_inspect},
		{"dead", cmd_dead},
	};

	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		if (strcmp(argv[0], cmds[i].name) == 0) {
			optind = 0;	/* glibc: start over on the command's own argv */
			return cmds[i].fn(c, argc, argv);
		}
	if (strcmp(argv[0], "help") == 0) {
		fputs(usage_text, stdout);
		return 0;
	}
	return usage_error("unknown command '%s'", argv[0]);
}

int
main(int argc, char **argv)
{
	struct ctx c = {.cfg_path = CFG_DEFAULT_PATH, .shard_opt = -1};
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
		say("%s", why);
		return EX_OSERR;
	}
	opterr = 0;	/* our own one-line messages */
	while ((ch = getopt_long(argc, argv, "+c:hV", global, NULL)) != -1) {
		switch (ch) {
		case 'c':
			c.cfg_path = optarg;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		case 'V':
			printf(PROG " " WARRANTD_VERSION "\n");
			return 0;
		case 'A':
			if (cfg_role_find(optarg) < 0)
				return usage_error("--as %s: the roles are operator, monitor and "
				    "decider", optarg);
			c.as = optarg;
			break;
		default:
			return unknown_option(NULL, argv);
		}
	}
	if (optind >= argc)
		return usage_error("no command");
	rc = dispatch(&c, argc - optind, argv + optind);
	if (fflush(stdout) != 0 && rc == 0) {
		say("cannot write the output: %s", strerror(errno));
		rc = EX_REFUSED;
	}
	redisFree(c.redis);
	cfg_free(c.cfg);
	return rc;
}
