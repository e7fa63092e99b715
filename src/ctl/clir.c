/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * clir: warrantctl's Redis handle (clir.h).
 */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "auth/rtoken.h"
#include "base/log.h"
#include "conf/config.h"
#include "conf/secrets.h"
#include "core/allowlist.h"
#include "ctl/clir.h"
#include "redis/cluster.h"
#include "redis/disc.h"
#include "redis/rtls.h"
#include "redis/sentinel.h"

/* The reply, even an error reply; NULL (and c->redis->err) when the
 * connection failed. */
redisReply *
clir_argv(struct cli *c, int argc, const char **argv)
{
	return redisCommandArgv(c->redis, argc, argv, NULL);
}

/*
 * Runs a command given as strings. 0 with *out (caller frees with
 * freeReplyObject), EX_UNAVAILABLE when the connection failed, EX_REFUSED on
 * an error reply; a message is printed in both cases.
 */
int
clir_checked(struct cli *c, redisReply *r, const char *what, redisReply **out)
{
	*out = NULL;
	if (r == NULL) {
		cli_say("redis: %s: %s", what, c->redis->errstr[0] ? c->redis->errstr : "no reply");
		return EX_UNAVAILABLE;
	}
	const char *why = sreply_error_text(sreply_of(r));
	if (why != NULL) {
		cli_say("redis: %s: %s", what, why);
		freeReplyObject(r);
		return EX_REFUSED;
	}
	*out = r;
	return 0;
}

static int host_allowed(const struct cfg *cfg, const char *host, int port);

/* Every command follows one -ASK: mid-migration a record's keys answer on
 * the importing node (issue 27 item 7). */
int
clir_runv(struct cli *c, redisReply **out, int argc, const char **argv)
{
	return clir_checked_asking(c, clir_asking(c, argc, argv, NULL), argv[0], out);
}

/* A script of lua/ (lua/decide.lua, lua/requeue.lua) by EVAL, its
 * arguments set by name; a call with one missing is refused here. */
int
clir_script(struct cli *c, redisReply **out, const struct store_args *a)
{
	struct store_vec v;
	char err[160];

	*out = NULL;
	if (store_args_vec(a, &v, err, sizeof err) < 0) {
		cli_say("%s", err);
		return EX_REFUSED;
	}
	int rc = clir_checked_asking(c, clir_asking(c, v.argc, v.argv, v.len), "EVAL", out);
	store_vec_free(&v);
	return rc;
}

int
clir_run(struct cli *c, redisReply **out, const char *cmd, ...)
{
	const char *argv[MAX_ARGS];
	int argc = 0;
	va_list ap;

	argv[argc++] = cmd;
	va_start(ap, cmd);
	while (argc < MAX_ARGS && (argv[argc] = va_arg(ap, const char *)) != NULL)
		argc++;
	va_end(ap);
	return clir_runv(c, out, argc, argv);
}

/* The AUTH password: with --as ROLE the role's password_file; else as the
 * daemon gets it ([redis] auth, rtoken.h). 0 with *pw NULL (no AUTH) or a
 * secret (secrets_free), or an exit code. */
int
clir_password(const struct cli *c, char **pw, size_t *len)
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
		cli_say("[%s] password_file: %s", c->user_section, err);
		return EX_CONFIG;
	}
	if (rtoken_fetch_once(cfg, TIMEOUT_S * 1000L, pw, len, err, sizeof err) == 0)
		return 0;
	cli_say("[redis] %s: %s", cfg->redis.auth == CFG_REDIS_PASSWORD ? "password_file" : "auth",
	    err);
	return cfg->redis.auth == CFG_REDIS_PASSWORD ? EX_CONFIG : EX_UNAVAILABLE;
}

int
clir_authenticate(struct cli *c)
{
	char *pw;
	size_t len;
	redisReply *r;
	int rc;

	if ((rc = clir_password(c, &pw, &len)) != 0)
		return rc;
	if (pw == NULL)
		return 0;
	if (c->username != NULL)
		rc = clir_run(c, &r, "AUTH", c->username, pw, (char *)NULL);
	else
		rc = clir_run(c, &r, "AUTH", pw, (char *)NULL);
	secrets_free(pw, len);
	freeReplyObject(r);
	return rc == 0 ? 0 : EX_UNAVAILABLE;
}

/* ---- where to connect: the daemon's discovery (disc.h), run to its
 * answer on a loop of its own ---- */

struct locate {
	char *pw, *sentinel_pw;	/* secrets: AUTH of a node, of a sentinel */
	size_t pw_len, sentinel_pw_len;
	int sentinel_own;	/* sentinel_pw is the sentinels' own file */
	int done;		/* the lookup ended (disc's each_conn) */
};

/* disc_opts.secret: as the daemon, without a file of their own the
 * sentinels get the Redis token (not a Redis password). */
static const char *
locate_secret(void *arg, int sentinel)
{
	const struct locate *l = arg;

	return sentinel ? l->sentinel_pw : l->pw;
}

/* disc_opts.each_conn: no connection of ours waits on disc; its call at
 * the end of a lookup says it ended. */
static void
locate_each(void *arg, disc_conn_fn *fn, void *fnarg)
{
	struct locate *l = arg;

	(void)fn;
	(void)fnarg;
	l->done = 1;
}

/* The secrets the sentinels and nodes are asked with. 0 or an exit code. */
static int
locate_secrets(const struct cli *c, struct locate *l)
{
	const struct cfg *cfg = c->cfg;
	char err[256];
	int rc;

	if (cfg->redis.sentinels && cfg->redis.sentinel_password_file) {
		if (secrets_read_cfg(cfg, cfg->redis.sentinel_password_file, SECRETS_TRIMMED,
		    &l->sentinel_pw, &l->sentinel_pw_len, err, sizeof err) < 0) {
			cli_say("%s", err);
			return EX_CONFIG;
		}
		l->sentinel_own = 1;
	}
	if (cfg->redis.sentinels && (l->sentinel_own || cfg->redis.auth == CFG_REDIS_PASSWORD))
		return 0;
	if ((rc = clir_password(c, &l->pw, &l->pw_len)) != 0)
		return rc;
	if (!l->sentinel_own)
		l->sentinel_pw = l->pw;
	return 0;
}

/* Runs d's lookup on loop until it ends (within the timeout of every node
 * asked) and takes its answer for slot. 0, or -1. */
static int
locate_run(struct disc *d, struct ev_loop *loop, struct locate *l, unsigned slot, char *host,
	   size_t hostlen, int *port)
{
	int rc = disc_resolve(d, slot, host, hostlen, port);

	if (rc != 1)
		return rc;
	/* each node asked costs at most 2 x its timeout (disc.c) */
	cli_run_loop(loop, &l->done, (SENTINEL_MAX + CLUSTER_NODES_MAX) * 2L * TIMEOUT_S * 1000L);
	return l->done ? disc_resolve(d, slot, host, hostlen, port) : -1;
}

/* Sentinel: the primary's address; cluster: the node owning the slot of
 * the shard in use -- found as the daemon finds them (disc.h: the same
 * connect, TLS, AUTH and allow_hosts check), a host outside [redis]
 * allow_hosts never connected to. 0, or an exit code (said). */
static int
locate(struct cli *c, char *host, size_t hostlen, int *port)
{
	const struct cfg *cfg = c->cfg;
	struct locate l = {0};
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct disc *d = NULL;
	unsigned slot = cluster_key_slot(c->keys.jobs, strlen(c->keys.jobs));
	enum log_level level = log_get_level();
	char err[512];
	int rc;

	if (loop == NULL) {
		cli_say("out of memory");
		return EX_UNAVAILABLE;
	}
	if ((rc = locate_secrets(c, &l)) != 0)
		goto out;
	struct disc_opts o = {
		.loop = loop, .sentinels = cfg->redis.sentinels,
		.master_name = cfg->redis.master_name, .cluster = cfg->redis.cluster,
		.username = c->username, .allow_hosts = cfg->redis.allow_hosts,
		.secret = locate_secret, .each_conn = locate_each, .arg = &l, .tls = c->tls,
		.timeout_ms = TIMEOUT_S * 1000L,
	};
	if ((d = disc_new(&o, err, sizeof err)) == NULL) {
		cli_say("%s", err);
		rc = EX_CONFIG;
		goto out;
	}
	log_set_level(LOG_ERROR);	/* the daemon's log lines: said once below */
	rc = locate_run(d, loop, &l, slot, host, hostlen, port);
	log_set_level(level);
	if (rc != 0) {
		const char *why = disc_error(d);
		if (cfg->redis.sentinels)
			cli_say("no sentinel answered for %s (last: %s)", cfg->redis.master_name,
			    why[0] ? why : "no sentinel");
		else if (why[0])
			cli_say("no cluster node answered CLUSTER SHARDS (last: %s)", why);
		else
			cli_say("no cluster node owns slot %u of %s", slot, c->keys.jobs);
		rc = EX_UNAVAILABLE;
	}
out:
	disc_free(d);
	ev_loop_destroy(loop);
	if (l.sentinel_own)
		secrets_free(l.sentinel_pw, l.sentinel_pw_len);
	if (l.pw)
		secrets_free(l.pw, l.pw_len);
	return rc;
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
		cli_say("%s", err);
		return EX_CONFIG;
	}
	int ok = allowlist_match(a, host);
	allowlist_free(a);
	if (!ok) {
		cli_say("%s:%d is outside [redis] allow_hosts: not connected to", host, port);
		return EX_UNAVAILABLE;
	}
	return 0;
}

/* [redis] tls: every connection of this run over it (rtls.h). 0, or an
 * exit code. */
static int
make_tls(struct cli *c)
{
	char err[512];

	if (!c->cfg->redis.tls || c->tls != NULL)
		return 0;
	if ((c->tls = rtls_ctx_new(c->cfg, err, sizeof err)) == NULL) {
		cli_say("[redis] tls: %s", err);
		return EX_CONFIG;
	}
	return 0;
}

int
clir_connect(struct cli *c)
{
	const struct cfg *cfg = c->cfg;
	struct timeval tv = {TIMEOUT_S, 0};
	char db[16], host[SENTINEL_HOST_MAX];
	const char *where = cfg->redis.host;
	int port = cfg->redis.port;
	redisReply *r;
	int rc;

	unsigned slot = cluster_key_slot(c->keys.jobs, strlen(c->keys.jobs));

	if (c->redis != NULL && (!cfg->redis.cluster || slot == c->redis_slot))
		return 0;	/* connected to the shard's node already */
	redisFree(c->redis);	/* a cluster's shard on another node: asks the map */
	c->redis = NULL;
	c->redis_slot = slot;
	if ((rc = make_tls(c)) != 0)
		return rc;
	if (cfg->redis.sentinels || cfg->redis.cluster) {
		if ((rc = locate(c, host, sizeof host, &port)) != 0)
			return rc;
		where = host;
	}
	if (cfg->redis.socket != NULL)
		c->redis = redisConnectUnixWithTimeout(cfg->redis.socket, tv);
	else
		c->redis = rtls_redis_connect(c->tls, where, port, TIMEOUT_S * 1000L);
	if (c->redis == NULL || c->redis->err) {
		if (cfg->redis.socket != NULL)
			cli_say("cannot connect to Redis at %s: %s", cfg->redis.socket,
			    c->redis ? c->redis->errstr : "out of memory");
		else
			cli_say("cannot connect to Redis at %s:%d: %s", where, port,
			    c->redis ? c->redis->errstr : "out of memory");
		return EX_UNAVAILABLE;
	}
	if (redisSetTimeout(c->redis, tv) != REDIS_OK) {
		cli_say("cannot set the Redis timeout");
		return EX_UNAVAILABLE;
	}
	if ((rc = clir_authenticate(c)) != 0)
		return rc;
	if (cfg->redis.db == 0)
		return 0;
	snprintf(db, sizeof db, "%d", cfg->redis.db);
	rc = clir_run(c, &r, "SELECT", db, (char *)NULL);
	freeReplyObject(r);
	return rc == 0 ? 0 : EX_UNAVAILABLE;
}

/* XINFO GROUPS: the flat reply of our group; *group NULL when absent. The
 * reply `all` is the caller's to free. */
int
clir_find_group(struct cli *c, redisReply **all, const struct sreply **group)
{
	const char *argv[] = {"XINFO", "GROUPS", c->keys.jobs};
	redisReply *r = clir_asking(c, 3, argv, NULL);
	const char *why = sreply_error_text(sreply_of(r));
	size_t n = 0;

	*all = NULL;
	*group = NULL;
	/* No stream yet: nothing has been decided and no worker has started. */
	if (why != NULL && strstr(why, "no such key") != NULL) {
		freeReplyObject(r);
		return 0;
	}
	int rc = clir_checked(c, r, "XINFO GROUPS", all);
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

/*
 * Appends to `out` every entry of stream `key` whose field `id` equals
 * `want` (every entry when want is NULL), read in pages with XRANGE, so a
 * long stream never arrives in one reply. 0 or an exit code.
 */
int
clir_scan_stream(struct cli *c, const char *key, const char *want, const char *const *order,
		 json_t *out)
{
	char start[128] = "-";
	redisReply *r;
	int rc;

	for (;;) {
		if ((rc = clir_run(c, &r, "XRANGE", key, start, "+", "COUNT", PAGE_S, (char *)NULL)) != 0)
			return rc;
		const struct sreply *page = sreply_of(r);
		size_t n = 0;
		if (sreply_array_len(page, &n) != 0)
			n = 0;
		for (size_t i = 0; i < n; i++) {
			const struct sreply *e = sreply_element(page, i);
			const char *eid = cli_entry_id(e), *id;
			if (eid == NULL)
				continue;
			id = sreply_field(sreply_element(e, 1), "id");
			if (want == NULL || (id != NULL && strcmp(id, want) == 0))
				json_array_append_new(out, cli_entry_json(e, order));
			/* The next page starts after the last entry seen. */
			snprintf(start, sizeof start, "(%s", eid);
		}
		freeReplyObject(r);
		if (n < PAGE)
			return 0;
	}
}

/*
 * The reply to argv, following one -ASK (a slot mid-migration: the key is
 * on the importing node, which serves it after ASKING, on a connection of
 * its own authenticated as this one). NULL when a connection failed (said).
 */
redisReply *
clir_asking(struct cli *c, int argc, const char **argv, const size_t *len)
{
	redisReply *r = redisCommandArgv(c->redis, argc, argv, len), *a;
	char host[SENTINEL_HOST_MAX], *end;
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
		cli_say("cannot connect to Redis at %s:%ld (ASK)", host, port);
	} else {
		c->redis = side;	/* AUTH as on the main connection */
		if (clir_authenticate(c) == 0 && (a = redisCommand(side, "ASKING")) != NULL) {
			freeReplyObject(a);
			r = redisCommandArgv(side, argc, argv, len);
		}
		c->redis = home;
	}
	redisFree(side);
	return r;
}

/* A reply of warrantctl's own asking: 0 with *out, or an exit code (said). */
int
clir_checked_asking(struct cli *c, redisReply *r, const char *what, redisReply **out)
{
	if (r == NULL && c->redis->err == 0) {
		*out = NULL;
		return EX_UNAVAILABLE;	/* the ASK's connection, said */
	}
	return clir_checked(c, r, what, out);
}


void
clir_close(struct cli *c)
{
	redisFree(c->redis);	/* its pump thread sees the end and stops */
	c->redis = NULL;
	rtls_ctx_free(c->tls);
	c->tls = NULL;
}
