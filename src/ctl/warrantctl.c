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
#include <netdb.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include <curl/curl.h>
#include <ev.h>
#include <hiredis/hiredis.h>
#include <jansson.h>

#include "core/allowlist.h"
#include "auth/authz.h"
#include "conf/cfgfile.h"
#include "redis/cluster.h"
#include "conf/config.h"
#include "ctl/ctl.h"
#include "redis/disc.h"
#include "http/http.h"
#include "core/job.h"
#include "auth/oauth.h"
#include "core/record.h"
#include "base/rnd.h"
#include "auth/rtoken.h"
#include "conf/secrets.h"
#include "redis/sentinel.h"
#include "worker/proc.h"
#include "redis/sreply.h"
#include "core/store.h"
#include "core/trace.h"
#include "redis/rtls.h"
#include "base/version.h"
#include "worker/webhook.h"
#include "base/wtime.h"

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
	struct rtls_ctx *tls;	/* [redis] tls: made at the first connect */
	int json;		/* --json */
	const char *as;		/* --as ROLE; NULL: [redis]'s user */
	/* The role made for the command (status and metrics: monitor;
	 * decide: decider), used without --as when the file has its section:
	 * a timer that reads gauges needs no write access. NULL: none. */
	const char *role_of_cmd;
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
"         [--issuer ISS] [--kid KID] [--traceparent TP] --key FILE\n"
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
"                         worker within a heartbeat; entries wait in hand,\n"
"                         no attempt spent, deadlines still hold\n"
"  resume [ACTION]        end that pause\n"
"  jobs [--state S] [--action A] [--limit N] [--json] [--shard N]\n"
"                         records by state: pending, queued, scheduled, then the\n"
"                         dead letters and the audit trail, newest first (N: 100)\n"
"  retry ID               a failed or dead record before its deadline: queued\n"
"                         again with a fresh budget of calls (attemptsBase)\n"
"  cancel ID              a record not yet terminal ends as cancelled, its owner\n"
"                         notified; a call in flight finishes (lateOutcome)\n"
"  doctor                 checks, one line each: every Redis user's login and ACL,\n"
"                         the Redis version, an IdP token, a PDP question, each\n"
"                         action's host; exit 1 when one fails\n"
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
	if (c->as == NULL && c->role_of_cmd != NULL &&
	    c->cfg->roles[cfg_role_find(c->role_of_cmd)].username != NULL)
		c->as = c->role_of_cmd;
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

static redisReply *run_asking(struct ctx *c, int argc, const char **argv, const size_t *len);
static int checked_asking(struct ctx *c, redisReply *r, const char *what, redisReply **out);

/* Every command follows one -ASK: mid-migration a record's keys answer on
 * the importing node (issue 27 item 7). */
static int
runv(struct ctx *c, redisReply **out, int argc, const char **argv)
{
	return checked_asking(c, run_asking(c, argc, argv, NULL), argv[0], out);
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
	int rc = checked_asking(c, run_asking(c, v.argc, v.argv, v.len), "EVAL", out);
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
	struct cluster_map *m = NULL;
	char err[512], *pw = NULL;
	size_t len = 0;
	int rc = EX_UNAVAILABLE;

	if ((rc = redis_password(c, &pw, &len)) != 0)
		return rc;
	rc = EX_UNAVAILABLE;
	if ((m = cluster_map_new()) == NULL)
		say("out of memory");
	else if (cluster_refresh_tls(c->tls, m, cfg->redis.cluster_addr,
	    cfg->redis.n_cluster_addr, c->username, pw, TIMEOUT_S * 1000L,
	    err, sizeof err) < 0)
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
	char err[256], *pw = NULL;
	size_t len = 0;
	int rc;

	if (cfg->redis.sentinel_password_file &&
	    secrets_read_cfg(cfg, cfg->redis.sentinel_password_file, SECRETS_TRIMMED, &pw, &len,
	    err, sizeof err) < 0) {
		say("%s", err);
		return EX_CONFIG;
	}
	/* as the daemon: without a file of their own, the sentinels get the
	 * Redis token */
	if (!cfg->redis.sentinel_password_file && cfg->redis.auth != CFG_REDIS_PASSWORD &&
	    (rc = redis_password(c, &pw, &len)) != 0)
		return rc;
	rc = sentinel_master_tls(c->tls, cfg->redis.sentinel_addr, cfg->redis.n_sentinel_addr,
	    cfg->redis.master_name, pw, TIMEOUT_S * 1000L,
	    host, hostlen, port, err, sizeof err);
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
	int sentinels = cfg->redis.n_sentinel_addr > 0;
	struct allowlist *a = disc_allowlist_of(cfg->redis.allow_hosts, NULL,
	    sentinels ? cfg->redis.sentinel_addr : cfg->redis.cluster_addr,
	    sentinels ? cfg->redis.n_sentinel_addr : cfg->redis.n_cluster_addr, err, sizeof err);

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

/* [redis] tls: every connection of this run over it (rtls.h). 0, or an
 * exit code. */
static int
make_tls(struct ctx *c)
{
	char err[512];

	if (!c->cfg->redis.tls || c->tls != NULL)
		return 0;
	if ((c->tls = rtls_ctx_new(c->cfg, err, sizeof err)) == NULL) {
		say("[redis] tls: %s", err);
		return EX_CONFIG;
	}
	return 0;
}

static int
connect_redis(struct ctx *c)
{
	const struct cfg *cfg = c->cfg;
	struct timeval tv = {TIMEOUT_S, 0};
	char db[16], host[HOSTPORT_HOST_MAX];
	const char *where = cfg->redis.host;
	int port = cfg->redis.port;
	redisReply *r;
	int rc;

	if (c->redis != NULL)
		return 0;	/* connected to the shard's node already */
	if ((rc = make_tls(c)) != 0)
		return rc;
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
		c->redis = rtls_redis_connect(c->tls, where, port, TIMEOUT_S * 1000L);
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
	OPT_SHARD, OPT_ALL, OPT_REASON, OPT_OLDER_THAN, OPT_STATE, OPT_LIMIT,
	OPT_TRACEPARENT,
};

struct decide_opts {
	struct ctl_decision d;
	char id_buf[CTL_ID_LEN + 1];	/* d.id when --id is not given */
	const char **params;	/* --param values, d.params points here */
	const char *expires, *not_before, *key_path, *kid, *issuer;
	char traceparent[TRACE_LEN + 1];	/* --traceparent, checked; "" none */
	const char *traceparent_arg;
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
	case OPT_TRACEPARENT: o->traceparent_arg = optarg; break;
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
		{"traceparent", required_argument, NULL, OPT_TRACEPARENT},
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
	/* §13: checked as the worker will; P:scheduled holds ids only */
	if (o->traceparent_arg != NULL && trace_parse(o->traceparent_arg,
	    strlen(o->traceparent_arg), o->traceparent) != 0)
		return usage_error("decide: --traceparent: not a W3C traceparent: '%s'",
		    o->traceparent_arg);
	if (o->traceparent[0] && o->d.not_before_ms > now)
		return usage_error("decide: --traceparent goes into the stream entry: not with "
		    "a --not-before in the future (P:scheduled holds ids only)");
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

/*
 * The reply to argv, following one -ASK (a slot mid-migration: the key is
 * on the importing node, which serves it after ASKING, on a connection of
 * its own authenticated as this one). NULL when a connection failed (said).
 */
static redisReply *
run_asking(struct ctx *c, int argc, const char **argv, const size_t *len)
{
	redisReply *r = redisCommandArgv(c->redis, argc, argv, len), *a;
	char host[HOSTPORT_HOST_MAX], *end;
	const char *h, *colon;

	/* "ASK <slot> <host>:<port>" */
	if (r == NULL || r->type != REDIS_REPLY_ERROR || strncmp(r->str, "ASK ", 4) != 0 ||
	    (h = strchr(r->str + 4, ' ')) == NULL || (colon = strrchr(++h, ':')) == NULL ||
	    (size_t)(colon - h) >= sizeof host)
		return r;
	long port = strtol(colon + 1, &end, 10);
	if (*end != '\0' || port <= 0 || port > 65535)
		return r;
	memcpy(host, h, (size_t)(colon - h));
	host[colon - h] = '\0';
	freeReplyObject(r);
	if (host_allowed(c->cfg, host, (int)port) != 0)
		return NULL;	/* said; no connection, so no AUTH, goes there */
	struct timeval tv = {TIMEOUT_S, 0};
	redisContext *home = c->redis, *side = rtls_redis_connect(c->tls, host, (int)port,
	    TIMEOUT_S * 1000L);
	r = NULL;
	if (side == NULL || side->err || redisSetTimeout(side, tv) != REDIS_OK) {
		say("cannot connect to Redis at %s:%ld (ASK)", host, port);
	} else {
		c->redis = side;	/* AUTH as on the main connection */
		if (authenticate(c) == 0 && (a = redisCommand(side, "ASKING")) != NULL) {
			freeReplyObject(a);
			r = redisCommandArgv(side, argc, argv, len);
		}
		c->redis = home;
	}
	redisFree(side);
	return r;
}

/* A reply of warrantctl's own asking: 0 with *out, or an exit code (said). */
static int
checked_asking(struct ctx *c, redisReply *r, const char *what, redisReply **out)
{
	if (r == NULL && c->redis->err == 0) {
		*out = NULL;
		return EX_UNAVAILABLE;	/* the ASK's connection, said */
	}
	return checked(c, r, what, out);
}

/* Mid-migration (decide.lua refused with -TRYAGAIN): the record by a call
 * naming its hash alone, then its id queued or scheduled by a command of
 * its own. Two steps: a decider that dies between them leaves a record
 * that never runs (`warrantctl inspect` shows it queued, in no stream). */
static int
store_decision_split(struct ctx *c, const struct ctl_decision *d, const char *hash,
		     const char *record, const char *at, const char *score, const char *traceparent,
		     redisReply **out)
{
	struct store_args a;
	struct store_vec v;
	char err[160];
	long long stored = 0;
	redisReply *r;
	int rc;

	store_args_init(&a, STORE_NEWRECORD);
	store_arg(&a, STORE_NEWRECORD_HASH, hash);
	store_arg(&a, STORE_NEWRECORD_RECORD, record);
	store_arg(&a, STORE_NEWRECORD_CREATED_AT, at);
	if (store_args_vec(&a, &v, err, sizeof err) < 0) {
		say("%s", err);
		return EX_REFUSED;
	}
	rc = checked_asking(c, run_asking(c, v.argc, v.argv, v.len), "EVAL", &r);
	store_vec_free(&v);
	if (rc != 0)
		return rc;
	if (sreply_integer(sreply_of(r), &stored) < 0 || stored != 1) {
		*out = r;	/* "exists" */
		return 0;
	}
	freeReplyObject(r);
	const char *xadd[] = {"XADD", c->keys.jobs, "*", "id", d->id, "traceparent", traceparent};
	const char *zadd[] = {"ZADD", c->keys.scheduled, score, d->id};
	if (score[0])
		rc = checked_asking(c, run_asking(c, 4, zadd, NULL), "ZADD", &r);
	else
		rc = checked_asking(c, run_asking(c, traceparent && traceparent[0] ? 7 : 5, xadd,
		    NULL), "XADD", &r);
	if (rc != 0) {
		say("decide: decision %s written but not queued: run `warrantctl inspect %s`",
		    d->id, d->id);
		return rc;
	}
	freeReplyObject(r);
	*out = NULL;	/* stored */
	return 0;
}

static int
store_decision(struct ctx *c, const struct ctl_decision *d, const char *record, int64_t now,
	       const char *traceparent)
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
	/* issue 27 item 5: the key the call does not touch is not named --
	 * the other one stands in (an empty schedule does not exist) */
	store_args_init(&a, STORE_DECIDE);
	store_arg(&a, STORE_DECIDE_HASH, hash);
	store_arg(&a, STORE_DECIDE_JOBS, score[0] ? c->keys.scheduled : c->keys.jobs);
	store_arg(&a, STORE_DECIDE_SCHEDULED, score[0] ? c->keys.scheduled : c->keys.jobs);
	store_arg(&a, STORE_DECIDE_RECORD, record);
	store_arg(&a, STORE_DECIDE_CREATED_AT, at);
	store_arg(&a, STORE_DECIDE_RECORD_ID, d->id);
	store_arg(&a, STORE_DECIDE_SCORE, score);
	store_arg(&a, STORE_DECIDE_TRACEPARENT, traceparent);
	struct store_vec v;
	char err[160];
	if (store_args_vec(&a, &v, err, sizeof err) < 0) {
		say("%s", err);
		return EX_REFUSED;
	}
	r = run_asking(c, v.argc, v.argv, v.len);
	store_vec_free(&v);
	if (r != NULL && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "TRYAGAIN", 8) == 0) {
		/* the shard's slot migrates: in two steps */
		freeReplyObject(r);
		if ((rc = store_decision_split(c, d, hash, record, at, score, traceparent,
		    &r)) != 0)
			return rc;
	} else if ((rc = checked_asking(c, r, "EVAL", &r)) != 0) {
		return rc;
	}
	long long stored = 0;
	rc = r == NULL || (sreply_integer(sreply_of(r), &stored) == 0 && stored == 1) ? 0 :
	    EX_REFUSED;
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
		rc = store_decision(c, &o->d, record, now, o->traceparent);
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

	if (*v < '0' || *v > '9' || *end != '\0' || n >= SHARD_MAX)
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
	redisReply *r = run_asking(c, 3, argv, NULL);
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

/* §13: the oldest entry not yet delivered to the group (the first after
 * its last-delivered-id; the worker never trims one), whose age is the
 * queue's latency; null when every entry was delivered. */
static int
undelivered_field(struct ctx *c, json_t *st)
{
	const char *last = json_string_value(json_object_get(st, "lastDeliveredId"));
	char from[64];
	redisReply *r;
	int rc;

	snprintf(from, sizeof from, "(%s", last ? last : "0-0");
	if ((rc = run(c, &r, "XRANGE", c->keys.jobs, from, "+", "COUNT", "1", (char *)NULL)) != 0)
		return rc;
	const struct sreply *id = sreply_element(sreply_element(sreply_of(r), 0), 0);
	json_object_set_new(st, "oldestUndelivered", id ? reply_json(id) : json_null());
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

/* §13: P:paused as "paused": {name: who and when}; "*" is the whole
 * queue. Shard 0's only, where pause writes them for every worker (another
 * shard's slot may be on another cluster node). */
static int
paused_fields(struct ctx *c, json_t *st)
{
	redisReply *r;
	json_t *o;

	if (c->shard != 0)
		return 0;
	if ((o = json_object()) == NULL)
		return EX_REFUSED;
	int rc = run(c, &r, "HGETALL", c->keys.paused, (char *)NULL);
	if (rc != 0) {
		json_decref(o);
		return rc;
	}
	add_flat(o, sreply_of(r), NULL, NULL);
	freeReplyObject(r);
	json_object_set_new(st, "paused", o);
	return 0;
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
	    (rc = undelivered_field(c, st)) != 0 ||
	    (rc = length_of(c, "ZCARD", c->keys.scheduled, st, "scheduled")) != 0 ||
	    (rc = length_of(c, "XLEN", c->keys.dead, st, "dead")) != 0 ||
	    (rc = length_of(c, "XLEN", c->keys.notify, st, "notify")) != 0 ||
	    (rc = paused_fields(c, st)) != 0)
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

/* --all, --reason R, --older-than D: which dead letters. */
struct dead_filter {
	int all;
	const char *reason;	/* NULL: any */
	int64_t before_ms;	/* added before this; 0: any time */
};

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

/* Who asked, for the audit entry (§11): the login (and the one behind sudo)
 * and the Redis user. */
static void
who_asked(const struct ctx *c, char *buf, size_t n)
{
	const struct passwd *pw = getpwuid(getuid());
	const char *sudo = getenv("SUDO_USER");
	char uid[32];

	snprintf(uid, sizeof uid, "uid %u", (unsigned)getuid());
	snprintf(buf, n, "%s%s%s%s, redis user %s", pw != NULL ? pw->pw_name : uid,
	    sudo != NULL && *sudo ? " (sudo from " : "", sudo != NULL && *sudo ? sudo : "",
	    sudo != NULL && *sudo ? ")" : "", c->username != NULL ? c->username : "default");
	for (char *p = buf; *p; p++)	/* one line in the audit */
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

/*
 * lua/requeue.lua for retry and dead requeue: the record queued again with a
 * fresh budget, from one of `states`, its dead letters `entries` deleted.
 * Says what it did. 0 or an exit code.
 */
static int
requeue_write(struct ctx *c, const char *cmd, const char *id, const char *hash,
	      const char *raw, json_t *entries, const char *states)
{
	char at[WTIME_RFC3339_LEN], final[STORE_KEY_MAX + RECORD_ID_MAX], who[256];
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
		say("%s: %s: key name too long", cmd, id);
		free(ids);
		return EX_REFUSED;
	}
	json_array_foreach(entries, i, e)
		ids[i] = json_string_value(json_object_get(e, "entryId"));
	wtime_format_rfc3339(wtime_now_ms(), at, sizeof at);
	who_asked(c, who, sizeof who);
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
	store_arg(&a, STORE_REQUEUE_STATES, states);
	store_arg(&a, STORE_REQUEUE_WHO, who);
	store_arg_rest(&a, ids, n);
	rc = run_script(c, &r, &a);
	free(ids);
	if (rc != 0)
		return rc;
	/* {1, new entry id, attempts} or {0, why}. */
	const struct sreply *res = sreply_of(r);
	const char *said = sreply_string(sreply_element(res, 1));
	const char *attempts = sreply_string(sreply_element(res, 2));
	long long done = 0;
	if (said != NULL && sreply_integer(sreply_element(res, 0), &done) == 0 && done == 1) {
		/* the entry id last: scripts read "... entry <id>" up to the end */
		printf("%s %s with a fresh budget of %ld calls (attempts %s, attemptsBase %s) "
		    "as %s entry %s\n", strcmp(cmd, "retry") == 0 ? "retried" : "requeued", id,
		    c->cfg->retry.max_attempts, attempts ? attempts : "?", attempts ? attempts : "?",
		    c->keys.jobs, said);
	} else {
		say("%s: refused: %s: %s", cmd, id, said != NULL ? said : "unexpected reply");
		rc = EX_REFUSED;
	}
	freeReplyObject(r);
	return rc;
}

/* The record as the worker would take it now: verified, and before its
 * deadline; refusals said as "CMD: refused: ...". With out, the record
 * (record_free). 0 or EX_REFUSED. */
static int
record_check(struct ctx *c, const char *cmd, const char *id, const char *raw, const char *key,
	     size_t key_len, struct record **out)
{
	struct record_policy pol;
	struct record *rec;
	char detail[DETAIL_MAX], at[WTIME_RFC3339_LEN];
	int64_t now = wtime_now_ms();
	enum record_status st;

	if (raw == NULL) {
		say("%s: refused: %s: no record (record-missing)", cmd, id);
		return EX_REFUSED;
	}
	ctl_policy_init(&pol, c->cfg, (const unsigned char *)key, key_len);
	st = record_load(&pol, id, raw, now, &rec, NULL, detail, sizeof detail);
	if (st != RECORD_OK) {
		say("%s: refused: %s: %s: %s", cmd, id, record_status_code(st), detail);
		return EX_REFUSED;
	}
	int expired = now >= rec->expires_at_ms;
	wtime_format_rfc3339(rec->expires_at_ms, at, sizeof at);
	if (expired) {
		record_free(rec);
		say("%s: refused: %s is past its deadline (expiresAt %s)", cmd, id, at);
		return EX_REFUSED;
	}
	if (out != NULL)
		*out = rec;
	else
		record_free(rec);
	return 0;
}

/* retry and dead requeue of one record whose dead letters (none for a
 * failed record, or trimmed) are `entries`. */
static int
requeue_one(struct ctx *c, const char *cmd, const char *id, const char *key, size_t key_len,
	    json_t *entries, const char *states)
{
	char hash[STORE_KEY_MAX + RECORD_ID_MAX];
	redisReply *r = NULL;
	int rc;

	if (store_decision_key(&c->keys, id, hash, sizeof hash) != 0) {
		say("%s: %s: key name too long", cmd, id);
		return EX_REFUSED;
	}
	if ((rc = run(c, &r, "HGET", hash, "record", (char *)NULL)) != 0)
		return rc;
	const char *raw = sreply_string(sreply_of(r));
	if ((rc = record_check(c, cmd, id, raw, key, key_len, NULL)) == 0)
		rc = requeue_write(c, cmd, id, hash, raw, entries, states);
	freeReplyObject(r);
	return rc;
}

static int
dead_requeue(struct ctx *c, const char *id, const char *key, size_t key_len)
{
	json_t *entries = json_array();
	int rc;

	if ((rc = dead_entries(c, id, entries)) == 0)
		rc = requeue_one(c, "dead requeue", id, key, key_len, entries, " dead ");
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

static int dead_bulk(struct ctx *c, const char *sub, const struct dead_filter *f);
static int parse_dead_change(struct ctx *c, int argc, char **argv, char **id,
			     struct dead_filter *f);

static int
cmd_dead(struct ctx *c, int argc, char **argv)
{
	struct dead_filter f = {0};
	char *id;
	int rc;

	if (argc < 2)
		return usage_error("dead: expected list, requeue or drop");
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
	if ((rc = parse_dead_change(c, argc, argv, &id, &f)) == 1)
		fputs(usage_text, stdout);
	if (rc != 0)
		return rc == 1 ? 0 : rc;
	return id != NULL ? dead_with_id(c, argv[0], id) : dead_bulk(c, argv[0], &f);
}

/* ---- job operations (§11): retry, cancel ---- */

/* retry ID and cancel ID: the options, the config, the record's shard, the
 * key and the connection. 0, -1 for -h (usage printed), or an exit code. */
static int
id_command(struct ctx *c, int argc, char **argv, char **id, char **key, size_t *key_len)
{
	int rc = parse_simple(c, argc, argv, 0, 1, id);

	if (rc == 1) {
		fputs(usage_text, stdout);
		return -1;
	}
	if (rc != 0)
		return rc;
	if (*id == NULL || !record_id_valid(*id))
		return usage_error("%s: '%s' is not a recordId", argv[0], *id ? *id : "");
	if ((rc = load_config(c)) != 0 || (rc = use_shard_of(c, *id)) != 0 ||
	    (rc = read_verify_key(c, key, key_len)) != 0)
		return rc;
	return connect_redis(c);
}

/* A failed or dead record before its deadline: a fresh budget (requeue.lua),
 * its dead letters answered. */
static int
cmd_retry(struct ctx *c, int argc, char **argv)
{
	char *id = NULL, *key = NULL;
	size_t key_len = 0;
	json_t *entries = json_array();
	int rc = id_command(c, argc, argv, &id, &key, &key_len);

	if (rc == 0 && (rc = scan_stream(c, c->keys.dead, id, dead_order, entries)) == 0)
		rc = requeue_one(c, "retry", id, key, key_len, entries, " failed dead ");
	json_decref(entries);
	secrets_free(key, key_len);
	return rc < 0 ? 0 : rc;
}

static void doctor_run(struct ev_loop *loop, const int *done, long timeout_ms);

/* The webhook's token with [notify] auth = oauth: the worker's client's, as
 * the daemon sends it (webhook.h). */
static int
cancel_hook_token(void *arg, const char **token)
{
	const struct oauth *o = arg;

	*token = o != NULL ? oauth_token(o, wtime_mono_ms(), 0) : NULL;
	return o != NULL && *token == NULL ? -1 : 0;
}

/* §6: the owner is told through the webhook too, as for any drop, after
 * P:notify has it (cancel.lua). Sent from here, on a loop of its own, with
 * the webhook's retries, for at most a few of its timeouts. 0 when sent (or
 * there is no webhook), -1 when it was not taken. */
static int
cancel_webhook(const struct ctx *c, const char *id, const char *owner, const char *at,
	       const struct record *rec)
{
	const struct cfg *cfg = c->cfg;
	struct ev_loop *loop;
	struct http_client *http = NULL;
	struct oauth *o = NULL;
	struct webhook *wh = NULL;
	char err[256] = "";
	int rc = -1;

	if (cfg->notify.webhook_url == NULL || *owner == '\0')
		return 0;
	json_t *n = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "id", id, "owner", owner,
	    "kind", "cancelled", "reason", "cancelled", "onBehalfOf", rec->on_behalf_of, "action",
	    rec->action, "resource", rec->resource, "at", at);
	char *body = n ? json_dumps(n, JSON_COMPACT) : NULL;

	if (body != NULL && (loop = ev_loop_new(EVFLAG_AUTO)) != NULL) {
		if ((http = http_client_new(loop)) != NULL && cfg->notify.auth == CFG_AUTH_OAUTH &&
		    (o = oauth_new(loop, http, cfg, err, sizeof err)) != NULL)
			oauth_start(o);
		if (http != NULL && (cfg->notify.auth != CFG_AUTH_OAUTH || o != NULL))
			wh = webhook_from_cfg(loop, http, cfg, cancel_hook_token, o, err, sizeof err);
		if (wh != NULL) {
			webhook_post(wh, body);
			for (int64_t end = wtime_mono_ms() + 3 * cfg->notify.timeout_ms + 5000;
			    webhook_queued(wh) > 0 && wtime_mono_ms() < end;) {
				int never = 0;
				doctor_run(loop, &never, 100);
			}
			rc = webhook_queued(wh) == 0 ? 0 : -1;
		}
		webhook_free(wh);
		oauth_free(o);
		http_client_free(http);
		ev_loop_destroy(loop);
	}
	if (rc != 0)
		say("cancel: %s: the webhook did not take the notification%s%s (P:notify has it)",
		    id, err[0] ? ": " : "", err);
	free(body);
	json_decref(n);
	return rc;
}

static int
cancel_write(struct ctx *c, const char *id, const char *hash, const char *raw,
	     const struct record *rec)
{
	char at[WTIME_RFC3339_LEN], final[STORE_KEY_MAX + RECORD_ID_MAX], who[256];
	const struct cfg *cfg = c->cfg;
	const char *owner = rec->notify_on_denial ? rec->notify_on_denial :
	    cfg->notify.default_owner ? cfg->notify.default_owner : "";
	struct job core = {.expires_at_ms = rec->expires_at_ms};
	int64_t now = wtime_now_ms();
	struct store_args a;
	redisReply *r;
	int rc;

	if (store_final_key(&c->keys, id, final, sizeof final) != 0) {
		say("cancel: %s: key name too long", id);
		return EX_REFUSED;
	}
	wtime_format_rfc3339(now, at, sizeof at);
	who_asked(c, who, sizeof who);
	store_args_init(&a, STORE_CANCEL);
	store_arg(&a, STORE_CANCEL_HASH, hash);
	store_arg(&a, STORE_CANCEL_FINAL, final);
	store_arg(&a, STORE_CANCEL_NOTIFY, c->keys.notify);
	store_arg(&a, STORE_CANCEL_AUDIT, c->keys.audit);
	store_arg(&a, STORE_CANCEL_SCHEDULED, c->keys.scheduled);
	store_arg(&a, STORE_CANCEL_RECORD_ID, id);
	store_arg(&a, STORE_CANCEL_AT, at);
	store_arg_ll(&a, STORE_CANCEL_AUDIT_MAXLEN, cfg->records.audit_maxlen);
	store_arg_ll(&a, STORE_CANCEL_NOTIFY_MAXLEN, cfg->redis.notify_maxlen);
	store_arg(&a, STORE_CANCEL_RECORD, raw);
	store_arg(&a, STORE_CANCEL_TERMINAL, c->keys.terminal);
	/* §3.3: kept as the worker keeps a terminal hash and its mark */
	store_arg_ll(&a, STORE_CANCEL_RETAIN_MS, job_retain_ms(&core,
	    cfg->records.clock_skew_s * 1000LL, cfg->records.retain_s * 1000LL, now));
	store_arg(&a, STORE_CANCEL_WHO, who);
	store_arg(&a, STORE_CANCEL_NOTIFY_OWNER, owner);
	store_arg(&a, STORE_CANCEL_ON_BEHALF_OF, rec->on_behalf_of);
	store_arg(&a, STORE_CANCEL_ACTION, rec->action);
	store_arg(&a, STORE_CANCEL_RESOURCE, rec->resource);
	if ((rc = run_script(c, &r, &a)) != 0)
		return rc;
	/* {1, from} or {0, why} */
	const struct sreply *res = sreply_of(r);
	const char *said = sreply_string(sreply_element(res, 1));
	long long done = 0;
	if (said != NULL && sreply_integer(sreply_element(res, 0), &done) == 0 && done == 1) {
		printf("cancelled %s (was %s)%s%s%s\n", id, *said ? said : "without a state",
		    *owner ? "; notified " : "; nobody to notify", owner,
		    strcmp(said, "running") == 0 ? "; a call in flight finishes and its result "
		    "goes to lateOutcome" : "");
		fflush(stdout);
		(void)cancel_webhook(c, id, owner, at, rec);	/* it said why */
	} else {
		say("cancel: refused: %s: %s", id, said != NULL ? said : "unexpected reply");
		rc = EX_REFUSED;
	}
	freeReplyObject(r);
	return rc;
}

/* A record not yet terminal, verified and before its deadline (past it, the
 * worker expires it on its own): `cancelled`, terminal. */
static int
cmd_cancel(struct ctx *c, int argc, char **argv)
{
	char *id = NULL, *key = NULL, hash[STORE_KEY_MAX + RECORD_ID_MAX];
	size_t key_len = 0;
	struct record *rec = NULL;
	redisReply *r = NULL;
	int rc = id_command(c, argc, argv, &id, &key, &key_len);

	if (rc == 0 && store_decision_key(&c->keys, id, hash, sizeof hash) != 0) {
		say("cancel: %s: key name too long", id);
		rc = EX_REFUSED;
	}
	if (rc == 0)
		rc = run(c, &r, "HGET", hash, "record", (char *)NULL);
	if (rc == 0) {
		const char *raw = sreply_string(sreply_of(r));
		if ((rc = record_check(c, "cancel", id, raw, key, key_len, &rec)) == 0)
			rc = cancel_write(c, id, hash, raw, rec);
	}
	record_free(rec);
	freeReplyObject(r);
	secrets_free(key, key_len);
	return rc < 0 ? 0 : rc;
}

/* ---- dead letters in bulk (§11) ---- */

/*
 * Adds every dead letter of the shard in use that f chooses to by_id:
 * recordId -> [{"entryId": id}, ...], in the stream's order, read in pages
 * (only the ids are kept, however long P:dead is). A letter without a
 * usable id (no-id) is kept under "". 0 or an exit code.
 */
static int
dead_matching(struct ctx *c, const struct dead_filter *f, json_t *by_id)
{
	char start[128] = "-";
	redisReply *r;
	int rc;

	for (;;) {
		if ((rc = run(c, &r, "XRANGE", c->keys.dead, start, "+", "COUNT", PAGE_S,
		    (char *)NULL)) != 0)
			return rc;
		const struct sreply *page = sreply_of(r);
		size_t n = 0;
		if (sreply_array_len(page, &n) != 0)
			n = 0;
		for (size_t i = 0; i < n; i++) {
			const struct sreply *e = sreply_element(page, i);
			const char *eid = entry_id(e);
			if (eid == NULL)
				continue;
			snprintf(start, sizeof start, "(%s", eid);
			const struct sreply *fields = sreply_element(e, 1);
			if (!ctl_dead_match(eid, sreply_field(fields, "reason"), f->reason,
			    f->before_ms))
				continue;
			const char *id = sreply_field(fields, "id");
			if (id == NULL)
				id = "";
			json_t *list = json_object_get(by_id, id);
			if (list == NULL) {
				list = json_array();
				json_object_set_new(by_id, id, list);
			}
			json_array_append_new(list, json_pack("{s:s}", "entryId", eid));
		}
		freeReplyObject(r);
		if (n < PAGE)
			return 0;
	}
}

/* XDEL of the letters in by_id, some at a time. *n: how many went. */
static int
dead_drop_matching(struct ctx *c, json_t *by_id, long long *n)
{
	enum { CHUNK = 500 };
	const char *argv[CHUNK + 2];
	const char *id;
	json_t *list, *e;
	size_t i;
	int argc = 2, rc = 0;
	redisReply *r;

	argv[0] = "XDEL";
	argv[1] = c->keys.dead;
	json_object_foreach(by_id, id, list) {
		json_array_foreach(list, i, e) {
			argv[argc++] = json_string_value(json_object_get(e, "entryId"));
			if (argc < CHUNK + 2)
				continue;
			if ((rc = runv(c, &r, argc, argv)) != 0)
				return rc;
			long long k = 0;
			*n += sreply_integer(sreply_of(r), &k) == 0 ? k : 0;
			freeReplyObject(r);
			argc = 2;
		}
	}
	if (argc > 2 && (rc = runv(c, &r, argc, argv)) == 0) {
		long long k = 0;
		*n += sreply_integer(sreply_of(r), &k) == 0 ? k : 0;
		freeReplyObject(r);
	}
	return rc;
}

/* dead requeue|drop --all|--reason R[|--older-than D] over every shard (or
 * --shard N's). Each record is requeued or refused on its own line; the
 * last line counts them. Exit 1 when something was refused or nothing
 * matched. */
static int
dead_bulk(struct ctx *c, const char *sub, const struct dead_filter *f)
{
	int requeue = strcmp(sub, "requeue") == 0;
	char *key = NULL, cmd[32];
	size_t key_len = 0, records = 0, refused = 0;
	long long letters = 0, done = 0;
	unsigned first, end;
	int rc;

	snprintf(cmd, sizeof cmd, "dead %s", sub);
	if ((rc = load_config(c)) != 0 ||
	    (requeue && (rc = read_verify_key(c, &key, &key_len)) != 0))
		return rc;
	shard_range(c, &first, &end);
	for (unsigned sh = first; rc == 0 && sh < end; sh++) {
		json_t *by_id = json_object(), *list;
		const char *id;
		if ((rc = use_shard(c, sh)) == 0 && (rc = connect_redis(c)) == 0)
			rc = dead_matching(c, f, by_id);
		json_object_foreach(by_id, id, list) {
			if (rc != 0)
				break;
			records++;
			letters += (long long)json_array_size(list);
			if (!requeue)
				continue;
			if (!record_id_valid(id)) {
				say("%s: refused: '%s' is not a recordId", cmd, id);
				refused++;
				continue;
			}
			int one = requeue_one(c, cmd, id, key, key_len, list, " dead ");
			if (one == EX_REFUSED)
				refused++;
			else if (one != 0)
				rc = one;	/* Redis went: stop */
			else
				done++;
		}
		if (rc == 0 && !requeue)
			rc = dead_drop_matching(c, by_id, &done);
		json_decref(by_id);
	}
	secrets_free(key, key_len);
	if (rc != 0)
		return rc;
	if (requeue)
		printf("requeued %lld of %zu record%s (%zu refused)\n", done, records,
		    records == 1 ? "" : "s", refused);
	else
		printf("dropped %lld dead letter%s of %zu record%s\n", done, done == 1 ? "" : "s",
		    records, records == 1 ? "" : "s");
	if (letters == 0) {
		say("%s: no dead letter matches", cmd);
		return EX_REFUSED;
	}
	return refused > 0 ? EX_REFUSED : 0;
}

/*
 * dead requeue|drop: ID, or the bulk options. 0 with *id or f set, 1 for -h,
 * or an exit code.
 */
static int
parse_dead_change(struct ctx *c, int argc, char **argv, char **id, struct dead_filter *f)
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
			return usage_error("dead requeue: --older-than is dead drop's: a record's "
			    "age is not a reason to run it");
		else if (ch == OPT_OLDER_THAN) {
			if (ctl_parse_duration(optarg, &age) != 0 || age <= 0)
				return usage_error("dead drop: --older-than: '%s' is not a "
				    "duration (N[smhd])", optarg);
			f->before_ms = wtime_now_ms() - age;
		} else if (ch == OPT_SHARD) {
			if ((rc = shard_option(c, optarg)) != 0)
				return rc;
		} else
			return unknown_option(argv[0], argv);
	}
	int bulk = f->all || f->reason != NULL || f->before_ms != 0;
	if (f->all && (f->reason != NULL || f->before_ms != 0))
		return usage_error("dead %s: --all chooses every dead letter: no filter with it",
		    argv[0]);
	if (bulk && argc - optind == 0)
		return 0;
	if (!bulk && argc - optind == 1 && c->shard_opt < 0) {
		*id = argv[optind];
		return 0;
	}
	return usage_error("dead %s: expected ID or %s", argv[0], drop ?
	    "--all, --reason R or --older-than D" : "--all or --reason R");
}

/* ---- jobs (§11) ---- */

struct jobs_query {
	const char *state;	/* --state: NULL any */
	const char *action;	/* --action: NULL any */
	long limit;		/* --limit [100]; 0: no limit */
	char *key;		/* the verification key (secrets_free) */
	size_t key_len;
	json_t *seen;		/* recordIds listed or passed over: each once */
	json_t *out;		/* the list */
};

static int
jobs_full(const struct jobs_query *q)
{
	return q->limit > 0 && (long)json_array_size(q->out) >= q->limit;
}

/*
 * One recordId found in `where` (pending, stream, scheduled, dead, audit):
 * its hash is what says its state now; a hash gone (its retention ended)
 * leaves the state the source gives (`fallback`: the audit's last `to`, or
 * "dead" for a letter, "" when unknown). Listed when it passes the filters.
 * `extra` (consumed) adds the source's own fields. 0 or an exit code.
 */
/* The filters: --state and --action. */
static int
jobs_wanted(const struct jobs_query *q, const json_t *o)
{
	const char *st = json_string_value(json_object_get(o, "state"));
	const char *act = json_string_value(json_object_get(o, "action"));

	return (q->state == NULL || (st != NULL && strcmp(st, q->state) == 0)) &&
	    (q->action == NULL || (act != NULL && strcmp(act, q->action) == 0));
}

/* The hash's fields into o: the verified record's action and resource (or
 * "verified": false), and the state fields. */
static void
jobs_fields(const struct jobs_query *q, const struct cfg *cfg, json_t *o, const char *id,
	    const struct sreply *fields)
{
	static const char *const shown[] = {"attempts", "attemptsBase", "owner", "updatedAt",
	    "outcome", "lateOutcome", "lateHttpStatus", NULL};
	const char *raw = sreply_field(fields, "record");

	if (raw != NULL) {
		struct record_policy pol;
		struct record *rec;
		char detail[DETAIL_MAX];
		ctl_policy_init(&pol, cfg, (const unsigned char *)q->key, q->key_len);
		if (record_load(&pol, id, raw, wtime_now_ms(), &rec, NULL, detail,
		    sizeof detail) == RECORD_OK) {
			json_object_set_new(o, "action", json_string(rec->action));
			json_object_set_new(o, "resource", json_string(rec->resource));
			record_free(rec);
		} else {
			json_object_set_new(o, "verified", json_false());
		}
	}
	for (const char *const *k = shown; *k != NULL; k++) {
		const struct sreply *v = sreply_field_reply(fields, *k);
		if (v != NULL && sreply_string(v) != NULL)
			json_object_set_new(o, *k, reply_json(v));
	}
}

/*
 * One recordId found in `where` (pending, stream, scheduled, dead, audit):
 * its hash is what says its state now; a hash gone (its retention ended)
 * leaves the state the source gives (`fallback`: the audit's last `to`, or
 * "dead" for a letter, "" when unknown). Listed when it passes the filters.
 * `extra` (consumed; may be NULL) adds the source's own fields. 0 or an
 * exit code.
 */
static int
jobs_consider(struct ctx *c, struct jobs_query *q, const char *id, const char *where,
	      const char *fallback, json_t *extra)
{
	char hash[STORE_KEY_MAX + RECORD_ID_MAX];
	redisReply *h = NULL;
	int rc = 0;

	if (id == NULL || json_object_get(q->seen, id) != NULL || jobs_full(q)) {
		json_decref(extra);
		return 0;
	}
	json_object_set_new(q->seen, id, json_true());
	if (record_id_valid(id) && store_decision_key(&c->keys, id, hash, sizeof hash) == 0 &&
	    (rc = run(c, &h, "HGETALL", hash, (char *)NULL)) != 0) {
		json_decref(extra);
		return rc;
	}
	const char *state = h != NULL ? sreply_field(sreply_of(h), "state") : NULL;
	json_t *o = json_pack("{s:s, s:s}", "id", id, "state", state ? state :
	    fallback ? fallback : "");
	if (o == NULL) {	/* an id that is not UTF-8 (a hand-made entry) */
		json_decref(extra);
		freeReplyObject(h);
		return 0;
	}
	if (h != NULL)
		jobs_fields(q, c->cfg, o, id, sreply_of(h));
	json_object_set_new(o, "source", json_string(where));
	if (extra != NULL)
		json_object_update(o, extra);
	if (jobs_wanted(q, o))
		json_array_append(q->out, o);
	json_decref(extra);
	json_decref(o);
	freeReplyObject(h);
	return 0;
}

/* The pending entries: running, retrying, waiting for a token -- or held by
 * a consumer that died. */
static int
jobs_pending(struct ctx *c, struct jobs_query *q)
{
	char start[128] = "-";
	redisReply *r, *e;
	int rc;

	for (;;) {
		const char *argv[] = {"XPENDING", c->keys.jobs, c->cfg->redis.group, start, "+",
		    PAGE_S};
		r = run_asking(c, 6, argv, NULL);
		const char *why = sreply_error_text(sreply_of(r));
		if (why != NULL && (strstr(why, "no such key") || strstr(why, "NOGROUP"))) {
			freeReplyObject(r);
			return 0;	/* no stream or no group yet: nothing pending */
		}
		if ((rc = checked(c, r, "XPENDING", &r)) != 0)
			return rc;
		size_t n = 0;
		if (sreply_array_len(sreply_of(r), &n) != 0)
			n = 0;
		for (size_t i = 0; rc == 0 && i < n && !jobs_full(q); i++) {
			const struct sreply *p = sreply_element(sreply_of(r), i);
			const char *eid = sreply_string(sreply_element(p, 0));
			long long idle = 0, deliveries = 0;
			if (eid == NULL)
				continue;
			snprintf(start, sizeof start, "(%s", eid);
			if (sreply_integer(sreply_element(p, 2), &idle) != 0)
				idle = 0;
			if (sreply_integer(sreply_element(p, 3), &deliveries) != 0)
				deliveries = 0;
			if ((rc = run(c, &e, "XRANGE", c->keys.jobs, eid, eid, (char *)NULL)) != 0)
				break;
			const struct sreply *one = sreply_element(sreply_of(e), 0);
			const char *id = one ? sreply_field(sreply_element(one, 1), "id") : NULL;
			json_t *extra = json_pack("{s:s, s:s?, s:I, s:I}", "entryId", eid,
			    "consumer", sreply_string(sreply_element(p, 1)), "idleMs",
			    (json_int_t)idle, "deliveries", (json_int_t)deliveries);
			rc = jobs_consider(c, q, id, "pending", "", extra);
			freeReplyObject(e);
		}
		freeReplyObject(r);
		if (rc != 0 || n < PAGE || jobs_full(q))
			return rc;
	}
}

/* One entry of a stream walk: its id and its fields; non-zero stops it. */
typedef int jobs_entry_fn(struct ctx *c, struct jobs_query *q, const char *eid,
			  const struct sreply *fields, void *arg);

/* Each entry of `key` a page at a time, after `from` ("-" or "(ID") upwards,
 * or with `rev` before it ("+" or "(ID") downwards, until `each` says stop,
 * the stream ends or the query is full. */
static int
jobs_walk(struct ctx *c, struct jobs_query *q, const char *key, const char *from, int rev,
	  jobs_entry_fn *each, void *arg)
{
	char at[128];
	redisReply *r;
	int rc;

	snprintf(at, sizeof at, "%s", from);
	for (;;) {
		if ((rc = run(c, &r, rev ? "XREVRANGE" : "XRANGE", key, at, rev ? "-" : "+",
		    "COUNT", PAGE_S, (char *)NULL)) != 0)
			return rc;
		size_t n = 0;
		if (sreply_array_len(sreply_of(r), &n) != 0)
			n = 0;
		for (size_t i = 0; rc == 0 && i < n && !jobs_full(q); i++) {
			const struct sreply *e = sreply_element(sreply_of(r), i);
			const char *eid = entry_id(e);
			if (eid == NULL)
				continue;
			snprintf(at, sizeof at, "(%s", eid);
			rc = each(c, q, eid, sreply_element(e, 1), arg);
		}
		freeReplyObject(r);
		if (rc != 0 || n < PAGE || jobs_full(q))
			return rc;
	}
}

static int
jobs_undelivered_one(struct ctx *c, struct jobs_query *q, const char *eid,
		     const struct sreply *fields, void *arg)
{
	(void)arg;
	return jobs_consider(c, q, sreply_field(fields, "id"), "stream", "",
	    json_pack("{s:s}", "entryId", eid));
}

/* The entries no consumer has read yet: after the group's last-delivered-id
 * (all of the stream when there is no group). */
static int
jobs_undelivered(struct ctx *c, struct jobs_query *q)
{
	char start[128] = "-";
	redisReply *groups;
	const struct sreply *g;
	int rc;

	if ((rc = find_group(c, &groups, &g)) != 0)
		return rc;
	const char *last = g ? sreply_field(g, "last-delivered-id") : NULL;
	if (last != NULL)
		snprintf(start, sizeof start, "(%s", last);
	freeReplyObject(groups);
	return jobs_walk(c, q, c->keys.jobs, start, 0, jobs_undelivered_one, NULL);
}

/* P:scheduled, soonest first. */
static int
jobs_scheduled(struct ctx *c, struct jobs_query *q)
{
	char at[WTIME_RFC3339_LEN], lo[32], hi[32];
	redisReply *r;
	int rc;

	for (long from = 0;; from += PAGE) {
		snprintf(lo, sizeof lo, "%ld", from);
		snprintf(hi, sizeof hi, "%ld", from + PAGE - 1);
		if ((rc = run(c, &r, "ZRANGE", c->keys.scheduled, lo, hi, "WITHSCORES",
		    (char *)NULL)) != 0)
			return rc;
		size_t n = 0;
		if (sreply_array_len(sreply_of(r), &n) != 0)
			n = 0;
		for (size_t i = 0; rc == 0 && i + 1 < n && !jobs_full(q); i += 2) {
			const char *id = sreply_string(sreply_element(sreply_of(r), i));
			const char *score = sreply_string(sreply_element(sreply_of(r), i + 1));
			rc = jobs_consider(c, q, id, "scheduled", "", json_pack("{s:s}",
			    "scheduledAt", wtime_format_rfc3339(score ? (int64_t)strtod(score,
			    NULL) : 0, at, sizeof at)));
		}
		freeReplyObject(r);
		if (rc != 0 || n < 2 * PAGE || jobs_full(q))
			return rc;
	}
}

static int
jobs_history_one(struct ctx *c, struct jobs_query *q, const char *eid,
		 const struct sreply *fields, void *arg)
{
	const char *where = arg;
	const char *to = strcmp(where, "audit") == 0 ? sreply_field(fields, "to") : "dead";

	(void)eid;
	if (q->state != NULL && (to == NULL || strcmp(to, q->state) != 0))
		return 0;
	return jobs_consider(c, q, sreply_field(fields, "id"), where, to, NULL);
}

/* A stream from the newest entry back: P:dead (its letters are dead), or
 * P:audit (each record's latest state change, as far back as audit_maxlen
 * reaches). With a --state, only entries that could be it are looked up. */
static int
jobs_history(struct ctx *c, struct jobs_query *q, const char *key, const char *where)
{
	return jobs_walk(c, q, key, "+", 1, jobs_history_one, (void *)where);
}

/* 1 when --state S names a state that is never terminal: only the queue's
 * sources can hold it; a terminal one only the history's. */
static int
jobs_live_state(const char *s)
{
	enum job_state st;

	return job_state_parse(s, &st) == 0 && !job_state_terminal(st);
}

static int
jobs_of_shard(struct ctx *c, struct jobs_query *q)
{
	int live = q->state == NULL || jobs_live_state(q->state);
	int done = q->state == NULL || !jobs_live_state(q->state);
	int rc = 0;

	if (live && rc == 0)
		rc = jobs_pending(c, q);
	if (live && rc == 0 && !jobs_full(q))
		rc = jobs_undelivered(c, q);
	if (live && rc == 0 && !jobs_full(q))
		rc = jobs_scheduled(c, q);
	if (done && rc == 0 && !jobs_full(q))
		rc = jobs_history(c, q, c->keys.dead, "dead");
	if (done && rc == 0 && !jobs_full(q))
		rc = jobs_history(c, q, c->keys.audit, "audit");
	return rc;
}

static int
cmd_jobs(struct ctx *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"state", required_argument, NULL, OPT_STATE},
		{"action", required_argument, NULL, OPT_ACTION},
		{"limit", required_argument, NULL, OPT_LIMIT},
		{"json", no_argument, NULL, OPT_JSON},
		{"shard", required_argument, NULL, OPT_SHARD},
		{"config", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct jobs_query q = {.limit = 100};
	enum job_state st;
	unsigned first, end;
	char *e;
	int ch, rc = 0;

	while ((ch = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
		if (ch == 'h') {
			fputs(usage_text, stdout);
			return 0;
		} else if (ch == 'c')
			c->cfg_path = optarg;
		else if (ch == OPT_STATE)
			q.state = optarg;
		else if (ch == OPT_ACTION)
			q.action = optarg;
		else if (ch == OPT_JSON)
			c->json = 1;
		else if (ch == OPT_LIMIT) {
			q.limit = strtol(optarg, &e, 10);
			if (*optarg < '0' || *optarg > '9' || *e != '\0' || q.limit > 1000000)
				return usage_error("jobs: --limit: '%s' is not a number (0: "
				    "no limit)", optarg);
		} else if (ch == OPT_SHARD) {
			if ((rc = shard_option(c, optarg)) != 0)
				return rc;
		} else
			return unknown_option(argv[0], argv);
	}
	if (argc != optind)
		return usage_error("jobs: no argument expected, got '%s'", argv[optind]);
	if (q.state != NULL && (job_state_parse(q.state, &st) != 0 || st == JOB_NONE))
		return usage_error("jobs: --state: '%s' is not a state (queued, running, "
		    "retrying, auth_wait, done, expired, denied, failed, dead, cancelled)",
		    q.state);
	if ((rc = load_config(c)) != 0 || (rc = read_verify_key(c, &q.key, &q.key_len)) != 0)
		return rc;
	q.seen = json_object();
	q.out = json_array();
	shard_range(c, &first, &end);
	for (unsigned sh = first; rc == 0 && sh < end && !jobs_full(&q); sh++)
		if ((rc = use_shard(c, sh)) == 0 && (rc = connect_redis(c)) == 0)
			rc = jobs_of_shard(c, &q);
	if (rc == 0 && c->json)
		rc = print_json(q.out);
	else if (rc == 0) {
		size_t i;
		json_t *o;
		json_array_foreach(q.out, i, o)
			ctl_print_line(stdout, o, 0);
	}
	json_decref(q.seen);
	json_decref(q.out);
	secrets_free(q.key, q.key_len);
	return rc;
}

/* ---- doctor ---- */

/* What a deployment needs, checked end to end: one line per check, "ok" or
 * "FAIL: why"; any failure makes the exit 1. */
struct doctor {
	int failed;
	int version_done;
	redisContext *admin;	/* the first connection ACL DRYRUN worked on */
};

static void doctor_line(struct doctor *d, int ok, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void
doctor_line(struct doctor *d, int ok, const char *what, const char *fmt, ...)
{
	char why[512] = "";
	va_list ap;

	if (fmt != NULL) {
		va_start(ap, fmt);
		vsnprintf(why, sizeof why, fmt, ap);
		va_end(ap);
	}
	for (char *p = why; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	if (!ok)
		d->failed = 1;
	printf("%s: %s%s%s\n", what, ok ? "ok" : "FAIL: ", ok && *why ? " " : "", why);
	fflush(stdout);
}

/* The commands each Redis user needs, "{jobs}"-style names for the keys
 * (shard 0's), as ACL DRYRUN is asked them. */
static const char *const needs_daemon[] = {
	"XREADGROUP GROUP {group} w COUNT 1 STREAMS {jobs} >", "XACK {jobs} {group} 0-1",
	"XCLAIM {jobs} {group} w 0 0-1", "XPENDING {jobs} {group}", "XADD {jobs} * id x",
	"XTRIM {jobs} MINID 0", "XGROUP CREATE {jobs} {group} 0 MKSTREAM",
	"HSET {decision} state running", "HINCRBY {decision} attempts 1",
	"PEXPIRE {decision} 1000", "GET {final}", "SET {final} done PX 1000",
	"ZADD {scheduled} 1 x", "ZREM {scheduled} x", "XADD {dead} * id x",
	"XADD {notify} * id x", "XADD {audit} * id x", "HSET {consumers} w 1",
	"HSET {clock} last 1", "TIME", "EVAL return 0 0", NULL,
};
static const char *const needs_operator[] = {
	"XRANGE {dead} - +", "XREVRANGE {audit} + -", "XPENDING {jobs} {group}",
	"XINFO GROUPS {jobs}", "HGETALL {decision}", "ZRANGE {scheduled} 0 -1",
	"HSET {decision} state queued", "PEXPIRE {decision} 1000", "PERSIST {decision}",
	"DEL {final}", "SET {final} cancelled PX 1000", "XADD {jobs} * id x",
	"XDEL {dead} 0-1", "XADD {notify} * id x", "ZREM {scheduled} x", "EVAL return 0 0",
	NULL,
};
static const char *const needs_monitor[] = {
	"XINFO GROUPS {jobs}", "XPENDING {jobs} {group}", "XRANGE {dead} - +",
	"XREVRANGE {audit} + -", "HGETALL {decision}", "ZRANGE {scheduled} 0 -1",
	"XLEN {notify}", "ZCARD {scheduled}", NULL,
};
static const char *const needs_decider[] = {
	"HSET {decision} record r", "XADD {jobs} * id x", "ZADD {scheduled} 1 x",
	"EVAL return 0 0", NULL,
};

/* One word of a needs_* line: a key's name for "{jobs}" and the like. */
static const char *
doctor_word(const struct ctx *c, const char *w, char *buf, size_t n)
{
	if (strcmp(w, "{jobs}") == 0) return c->keys.jobs;
	if (strcmp(w, "{dead}") == 0) return c->keys.dead;
	if (strcmp(w, "{audit}") == 0) return c->keys.audit;
	if (strcmp(w, "{notify}") == 0) return c->keys.notify;
	if (strcmp(w, "{scheduled}") == 0) return c->keys.scheduled;
	if (strcmp(w, "{consumers}") == 0) return c->keys.consumers;
	if (strcmp(w, "{clock}") == 0) return c->keys.clock;
	if (strcmp(w, "{group}") == 0) return c->cfg->redis.group;
	if (strcmp(w, "{decision}") == 0 || strcmp(w, "{final}") == 0) {
		snprintf(buf, n, "%sdoctor", strcmp(w, "{final}") == 0 ? c->keys.final_prefix :
		    c->keys.decision_prefix);
		return buf;
	}
	return w;
}

/* ACL DRYRUN of each command `user` needs: "" when all are allowed, else
 * the refused ones; -1 when DRYRUN itself is refused (an older Redis, or a
 * user without +acl|dryrun). */
static int
doctor_dryrun(struct ctx *c, const char *user, const char *const *needs, char *refused,
	      size_t n)
{
	refused[0] = '\0';
	for (const char *const *l = needs; *l != NULL; l++) {
		char line[256], keybuf[16][STORE_KEY_MAX + 16], *save = NULL;
		const char *argv[16] = {"ACL", "DRYRUN", user};
		int argc = 3;

		snprintf(line, sizeof line, "%s", *l);
		for (char *w = strtok_r(line, " ", &save); w != NULL && argc < 16;
		    w = strtok_r(NULL, " ", &save)) {
			argv[argc] = doctor_word(c, w, keybuf[argc], sizeof keybuf[0]);
			argc++;
		}
		redisReply *r = run_argv(c, argc, argv);
		if (r == NULL)
			return -1;
		const char *why = sreply_error_text(sreply_of(r));
		int plain = r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0;
		if (why != NULL && l == needs) {	/* DRYRUN itself */
			freeReplyObject(r);
			return -1;
		}
		if (!plain) {
			char cmd[64];
			snprintf(cmd, sizeof cmd, "%s", *l);
			cmd[strcspn(cmd, " ")] = '\0';
			size_t len = strlen(refused);
			snprintf(refused + len, n - len, "%s%s", len ? ", " : "", cmd);
		}
		freeReplyObject(r);
	}
	return 0;
}

/* "7.0.15" from INFO server, or HELLO's; NULL when both are refused. */
static int
doctor_version(struct ctx *c, char *out, size_t n)
{
	const char *info[] = {"INFO", "server"}, *hello[] = {"HELLO", "2"};
	redisReply *r = run_argv(c, 2, info);
	const char *s;

	out[0] = '\0';
	if (r != NULL && r->type == REDIS_REPLY_STRING &&
	    (s = strstr(r->str, "redis_version:")) != NULL) {
		snprintf(out, n, "%.*s", (int)strcspn(s + 14, "\r\n"), s + 14);
	} else {
		freeReplyObject(r);
		r = run_argv(c, 2, hello);
		const char *v = r ? sreply_field(sreply_of(r), "version") : NULL;
		if (v != NULL)
			snprintf(out, n, "%s", v);
	}
	freeReplyObject(r);
	return out[0] ? 0 : -1;
}

/* One Redis user: AUTH, the version (once), the commands its role needs. */
static void
doctor_user(struct ctx *c, struct doctor *d, const char *role, const char *const *needs)
{
	char what[96], ver[64], refused[512];
	const char *user;

	redisFree(c->redis);
	c->redis = NULL;
	c->as = role;
	if (role == NULL) {
		c->username = c->cfg->redis.username;
		c->password_file = c->cfg->redis.password_file;
		snprintf(c->user_section, sizeof c->user_section, "redis");
	} else {
		const struct cfg_role *r = &c->cfg->roles[cfg_role_find(role)];
		c->username = r->username;
		c->password_file = r->password_file;
		snprintf(c->user_section, sizeof c->user_section, "redis.%s", role);
	}
	user = c->username != NULL ? c->username : "default";
	snprintf(what, sizeof what, "redis user %s [%s]", user, c->user_section);
	if (connect_redis(c) != 0) {
		doctor_line(d, 0, what, "cannot connect or log in (see above)");
		return;
	}
	if (!d->version_done && doctor_version(c, ver, sizeof ver) == 0) {
		long major = strtol(ver, NULL, 10);
		d->version_done = 1;
		doctor_line(d, major >= 7, "redis version", major >= 7 ? "%s" :
		    "%s: 7.0 or later is needed (ACL selectors, XAUTOCLAIM)", ver);
	}
	/* a user may not ask about itself: then ask from one that may */
	int rc = doctor_dryrun(c, user, needs, refused, sizeof refused);
	if (rc < 0 && d->admin != NULL) {
		redisContext *own = c->redis;
		c->redis = d->admin;
		rc = doctor_dryrun(c, user, needs, refused, sizeof refused);
		c->redis = own;
	} else if (rc == 0 && d->admin == NULL) {
		d->admin = c->redis;	/* kept: the next user's connection is new */
		c->redis = NULL;
	}
	if (rc < 0)
		doctor_line(d, 1, what, "(logged in; ACL DRYRUN refused to this user: the "
		    "commands of its role not checked)");
	else if (refused[0])
		doctor_line(d, 0, what, "its ACL refuses %s", refused);
	else
		doctor_line(d, 1, what, NULL);
}

/* The loop of a synchronous check: runs until *done or timeout_ms. */
static void
doctor_tick(EV_P_ ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
}

static void
doctor_run(struct ev_loop *loop, const int *done, long timeout_ms)
{
	ev_timer tick;

	ev_timer_init(&tick, doctor_tick, 0.05, 0.05);
	ev_timer_start(loop, &tick);
	for (int64_t end = wtime_mono_ms() + timeout_ms; !*done && wtime_mono_ms() < end;)
		ev_run(loop, EVRUN_ONCE);
	ev_timer_stop(loop, &tick);
}

/* A token from the IdP for [oauth]'s client. */
static void
doctor_idp(const struct ctx *c, struct doctor *d, struct ev_loop *loop,
	   struct http_client *http)
{
	char err[256], what[300];
	int have = 0;
	struct oauth *o = oauth_new(loop, http, c->cfg, err, sizeof err);

	snprintf(what, sizeof what, "idp token from %s", c->cfg->oauth.token_url);
	if (o == NULL) {
		doctor_line(d, 0, what, "%s", err);
		return;
	}
	oauth_start(o);
	for (int64_t end = wtime_mono_ms() + c->cfg->oauth.timeout_ms + 2000;
	    wtime_mono_ms() < end;) {
		int done = 0;
		doctor_run(loop, &done, 100);
		if (oauth_token(o, wtime_mono_ms(), 0) != NULL) {
			have = 1;
			break;
		}
		if (strcmp(oauth_state_name(o), "error") == 0)
			break;
	}
	if (have)
		doctor_line(d, 1, what, "(lives %lld s)", (long long)((oauth_expires_at_ms(o) -
		    wtime_mono_ms()) / 1000));
	else
		doctor_line(d, 0, what, "no token (%s; the IdP's answer is in the line above)",
		    oauth_state_name(o));
	oauth_free(o);
}

struct doctor_call {
	int done;
	long status;
	char error[200], body[200];
};

static void
doctor_answer(const struct http_response *resp, void *arg)
{
	struct doctor_call *dc = arg;

	dc->status = resp->status;
	snprintf(dc->error, sizeof dc->error, "%s", resp->error ? resp->error : "");
	snprintf(dc->body, sizeof dc->body, "%.*s", (int)(resp->body_len < 199 ?
	    resp->body_len : 199), resp->body);
	dc->done = 1;
}

/* One question to the PDP (§7) about a record that does not exist: any 2xx
 * with an answer is a PDP that works, allow or deny. */
static void
doctor_pdp(const struct ctx *c, struct doctor *d, struct ev_loop *loop,
	   struct http_client *http)
{
	static const char *const headers[] = {"Content-Type: application/json",
	    "Accept: application/json", NULL};
	char at[WTIME_RFC3339_LEN], what[300];
	struct doctor_call dc = {0};
	char payload[128];
	struct record r = {.on_behalf_of = "warrantctl-doctor", .resource = "doctor",
	    .basis = "warrantctl doctor", .body = payload,
	    .action = c->cfg->nactions ? c->cfg->actions[0].name : "doctor"};
	const struct authz_shape shape = {.api = c->cfg->authz.api,
	    .subject_type = c->cfg->authz.subject_type,
	    .resource_type = c->cfg->authz.resource_type};

	strcpy(r.id, "doctor");
	r.body_len = (size_t)snprintf(payload, sizeof payload,
	    "{\"decidedAt\":\"%s\",\"parameters\":{}}",
	    wtime_format_rfc3339(wtime_now_ms(), at, sizeof at));
	/* the question as the daemon puts it, in [authz] api's shape */
	char *body = authz_request_body(&r, &shape);
	struct http_request rq = {.method = "POST", .url = c->cfg->authz.url,
	    .headers = headers, .body = body, .body_len = body ? strlen(body) : 0,
	    .timeout_ms = c->cfg->authz.timeout_ms};

	snprintf(what, sizeof what, "pdp %s", c->cfg->authz.url);
	if (body == NULL || http_start(http, &rq, doctor_answer, &dc, NULL) != 0) {
		doctor_line(d, 0, what, "cannot send the question");
	} else {
		doctor_run(loop, &dc.done, c->cfg->authz.timeout_ms + 2000);
		if (!dc.done)
			doctor_line(d, 0, what, "no answer");
		else if (dc.status >= 200 && dc.status <= 299)
			doctor_line(d, 1, what, "(answered %s)", authz_name(authz_parse_answer(
			    c->cfg->authz.api, dc.status, dc.body, strlen(dc.body))));
		else if (dc.status == 0)
			doctor_line(d, 0, what, "%s", dc.error);
		else
			doctor_line(d, 0, what, "HTTP %ld: %s", dc.status, dc.body);
	}
	free(body);
}

/* Each action's host resolves (getaddrinfo), as the call will need. */
static void
doctor_actions(const struct ctx *c, struct doctor *d)
{
	for (size_t i = 0; i < c->cfg->nactions; i++) {
		const struct cfg_action *a = &c->cfg->actions[i];
		char what[300], *host = NULL;
		CURLU *u = curl_url();
		struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;

		snprintf(what, sizeof what, "action %s url host", a->name);
		/* placeholders are in the path and query only (R7) */
		if (u == NULL || curl_url_set(u, CURLUPART_URL, a->url, CURLU_ALLOW_SPACE) != CURLUE_OK ||
		    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
			doctor_line(d, 0, what, "cannot read the host of %s", a->url);
		} else {
			size_t n = strlen(host);
			if (n > 1 && host[0] == '[' && host[n - 1] == ']') {	/* IPv6 */
				memmove(host, host + 1, n - 2);
				host[n - 2] = '\0';
			}
			int rc = getaddrinfo(host, NULL, &hints, &res);
			if (rc == 0)
				doctor_line(d, 1, what, "(%s resolves)", host);
			else
				doctor_line(d, 0, what, "%s: %s", host, gai_strerror(rc));
		}
		if (res != NULL)
			freeaddrinfo(res);
		curl_free(host);
		curl_url_cleanup(u);
	}
}

static int
cmd_doctor(struct ctx *c, int argc, char **argv)
{
	static const char *const roles[CFG_NROLES] = {"operator", "monitor", "decider"};
	static const char *const *const needs[CFG_NROLES] = {needs_operator, needs_monitor,
	    needs_decider};
	struct doctor d = {0};
	int rc = parse_simple(c, argc, argv, 0, 0, NULL);

	if (rc == 1) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (rc != 0 || (rc = load_config(c)) != 0)
		return rc;
	doctor_line(&d, 1, "config", "(%s)", c->cfg_path);
	doctor_user(c, &d, NULL, needs_daemon);
	for (int i = 0; i < CFG_NROLES; i++)
		if (cfg_role_find(roles[i]) == i && c->cfg->roles[i].username != NULL)
			doctor_user(c, &d, roles[i], needs[i]);
	if (!d.version_done)
		doctor_line(&d, 0, "redis version", "no user could ask (INFO and HELLO refused)");

	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct http_client *http = loop ? http_client_new(loop) : NULL;
	if (http == NULL) {
		doctor_line(&d, 0, "http", "cannot set up an event loop");
	} else {
		if (c->cfg->oauth.present)
			doctor_idp(c, &d, loop, http);
		if (c->cfg->authz.url != NULL)
			doctor_pdp(c, &d, loop, http);
	}
	http_client_free(http);
	if (loop != NULL)
		ev_loop_destroy(loop);
	doctor_actions(c, &d);
	redisFree(d.admin);
	return d.failed ? EX_REFUSED : 0;
}

/* ---- pause, resume (§13) ---- */

/* Who asks, for the record in P:paused: the login behind sudo, else the
 * user; and the role it connects as. */
static void
who_asks(const struct ctx *c, char *buf, size_t n, int64_t now)
{
	const char *u = getenv("SUDO_USER");
	char at[WTIME_RFC3339_LEN];

	if (u == NULL || u[0] == '\0')
		u = getenv("USER");
	snprintf(buf, n, "by=%s%s%s at=%s", u && u[0] ? u : "?", c->as ? " as=" : "",
	    c->as ? c->as : "", wtime_format_rfc3339(now, at, sizeof at));
}

static int
cmd_pause(struct ctx *c, int argc, char **argv)
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
			fputs(usage_text, stdout);
			return 0;
		}
		if (ch != 'c')
			return unknown_option(argv[0], argv);
		c->cfg_path = optarg;
	}
	if (argc - optind > 1)
		return usage_error("%s: at most one ACTION", argv[0]);
	if (argc - optind == 1)
		name = argv[optind];
	if ((rc = load_config(c)) != 0)
		return rc;
	/* A typo must not look like a pause: only what the config names. */
	if (strcmp(name, "*") != 0 && cfg_action_find(c->cfg, name) == NULL) {
		say("%s: %s has no [action %s]", argv[0], c->cfg_path, name);
		return EX_REFUSED;
	}
	/* every worker reads shard 0's P:paused */
	if ((rc = use_shard(c, 0)) != 0 || (rc = connect_redis(c)) != 0)
		return rc;
	const char *what = strcmp(name, "*") == 0 ? "the whole queue" : name;
	if (resume) {
		if ((rc = run(c, &r, "HDEL", c->keys.paused, name, (char *)NULL)) != 0)
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
	if ((rc = run(c, &r, "HSET", c->keys.paused, name, who, (char *)NULL)) != 0)
		return rc;
	freeReplyObject(r);
	printf("paused %s: every worker starts no new call of it within a heartbeat (%ld ms); "
	    "entries wait in hand, deadlines still hold\n", what, c->cfg->daemon.heartbeat_ms);
	return 0;
}

/* ---- main ---- */

static int
dispatch(struct ctx *c, int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(struct ctx *, int, char **);
		const char *role;	/* without --as, when configured */
	} cmds[] = {
		{"decide", cmd_decide, "decider"}, {"status", cmd_status, "monitor"},
		{"metrics", cmd_metrics, "monitor"}, {"inspect", cmd_inspect, "monitor"},
		{"jobs", cmd_jobs, "monitor"}, {"dead", cmd_dead, NULL},
		{"pause", cmd_pause, NULL}, {"resume", cmd_pause, NULL},
		{"retry", cmd_retry, NULL}, {"cancel", cmd_cancel, NULL},
		{"doctor", cmd_doctor, NULL},
	};

	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		if (strcmp(argv[0], cmds[i].name) == 0) {
			optind = 0;	/* glibc: start over on the command's own argv */
			c->role_of_cmd = cmds[i].role;
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
	redisFree(c.redis);	/* its pump thread sees the end and stops */
	rtls_ctx_free(c.tls);
	cfg_free(c.cfg);
	return rc;
}
