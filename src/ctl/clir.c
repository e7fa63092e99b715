/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * clir: warrantctl's Redis handle (clir.h) -- the daemon's transport and
 * discovery, waited for: an rconn (one attempt) on a libev loop of its own,
 * resolved through disc for Sentinel and Cluster, each command sent and the
 * loop run until its reply (rconn's timeouts bound both). A reply lives only
 * during rconn's callback: it is copied into a redisReply the caller frees.
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
#include "redis/rconn.h"
#include "redis/rtls.h"
#include "redis/sentinel.h"

#define ASK_TRIES	50	/* an -ASK's side connection: 50 x 100 ms at most */

struct clir {
	struct ev_loop *loop;
	struct disc *disc;	/* sentinels or cluster; NULL: the one node */
	struct rconn *rc;
	unsigned slot;		/* of the shard it was made for */
	char *pw, *sentinel_pw;	/* secrets: a node's AUTH, a sentinel's */
	size_t pw_len, sentinel_pw_len;
	int sentinel_own;	/* sentinel_pw is the sentinels' own file */
	int state;		/* 0 connecting, 1 up, -1 failed or lost */
	char auth_kind[RCONN_ERR_KIND_LEN];	/* a refused AUTH's error code */
	int said;		/* the last failure was said already */
};

/* One command waited for. */
struct clir_wait {
	int done;
	redisReply *reply;	/* the copy; NULL: no reply (or out of memory) */
};

/* rconn's loop runs here only, with the daemon's log lines kept back:
 * warrantctl says each failure once, in its own words. */
static void
run_quiet(struct clir *h, const int *done, long timeout_ms)
{
	enum log_level level = log_get_level();

	log_set_level(LOG_ERROR);
	cli_run_loop(h->loop, done, timeout_ms);
	log_set_level(level);
}

/* A deep copy of an rconn reply (sreply views hiredis's tree, disc.c). */
static redisReply *
copy_reply(const redisReply *r)
{
	redisReply *o = calloc(1, sizeof *o);

	if (o == NULL)
		return NULL;
	o->type = r->type;
	o->integer = r->integer;
	if (r->str != NULL) {
		if ((o->str = malloc(r->len + 1)) == NULL)
			goto oom;
		memcpy(o->str, r->str, r->len);
		o->str[r->len] = '\0';
		o->len = r->len;
	}
	if (r->type == REDIS_REPLY_ARRAY && r->elements > 0) {
		/* an array of pointers: each element is a reply of its own */
		if ((o->element = calloc(r->elements, sizeof(redisReply *))) == NULL)
			goto oom;
		o->elements = r->elements;
		for (size_t i = 0; i < r->elements; i++)
			if ((o->element[i] = copy_reply(r->element[i])) == NULL)
				goto oom;
	}
	return o;
oom:
	freeReplyObject(o);
	return NULL;
}

static void
on_reply(struct rconn *rc, const struct sreply *reply, void *arg)
{
	struct clir_wait *w = arg;

	(void)rc;
	w->done = 1;
	w->reply = reply != NULL ? copy_reply((const redisReply *)(const void *)reply) : NULL;
}

static void
on_state(struct rconn *rc, int up, void *arg)
{
	struct clir *h = arg;

	(void)rc;
	h->state = up ? 1 : -1;
}

static void
on_auth(void *arg, int ok, const char *kind)
{
	struct clir *h = arg;

	if (ok == 0 && strcmp(kind, "closed") != 0)
		snprintf(h->auth_kind, sizeof h->auth_kind, "%s", kind);
}

/* rconn_opts.resolve: disc's answer for the shard's slot. */
static int
resolve(void *arg, char *host, size_t hostlen, int *port)
{
	struct clir *h = arg;

	return disc_resolve(h->disc, h->slot, host, hostlen, port);
}

static void
error_seen(void *arg, const char *error)
{
	struct clir *h = arg;

	disc_error_seen(h->disc, error);
}

/* disc_opts.secret: as the daemon, without a file of their own the
 * sentinels get the Redis token (not a Redis password). */
static const char *
disc_secret(void *arg, int sentinel)
{
	const struct clir *h = arg;

	return sentinel ? h->sentinel_pw : h->pw;
}

/* disc_opts.each_conn: our one connection. */
static void
each_conn(void *arg, disc_conn_fn *fn, void *fnarg)
{
	struct clir *h = arg;

	if (h->rc != NULL)
		fn(h->rc, h->slot, 0, fnarg);
}

static void
clir_free(struct clir *h)
{
	if (h == NULL)
		return;
	rconn_free(h->rc);	/* outstanding callbacks: none (each was waited for) */
	disc_free(h->disc);
	if (h->loop != NULL)
		ev_loop_destroy(h->loop);
	if (h->sentinel_own)
		secrets_free(h->sentinel_pw, h->sentinel_pw_len);
	if (h->pw != NULL)
		secrets_free(h->pw, h->pw_len);
	free(h);
}

void
clir_drop(struct cli *c)
{
	clir_free(c->redis);
	c->redis = NULL;
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

/* The secrets of h: a node's AUTH (also a sentinel's without a file of
 * their own, unless [redis] auth is a password). 0 or an exit code. */
static int
read_secrets(const struct cli *c, struct clir *h)
{
	const struct cfg *cfg = c->cfg;
	char err[256];
	int rc;

	if (cfg->redis.sentinels && cfg->redis.sentinel_password_file) {
		if (secrets_read_cfg(cfg, cfg->redis.sentinel_password_file, SECRETS_TRIMMED,
		    &h->sentinel_pw, &h->sentinel_pw_len, err, sizeof err) < 0) {
			cli_say("%s", err);
			return EX_CONFIG;
		}
		h->sentinel_own = 1;
	}
	if ((rc = clir_password(c, &h->pw, &h->pw_len)) != 0)
		return rc;
	if (!h->sentinel_own && cfg->redis.auth != CFG_REDIS_PASSWORD)
		h->sentinel_pw = h->pw;
	return 0;
}

/* Why h never came up, said once. */
static int
say_failure(const struct cli *c, struct clir *h)
{
	const struct cfg *cfg = c->cfg;
	const char *why = disc_error(h->disc), *host = rconn_host(h->rc);

	if (h->auth_kind[0])
		cli_say("redis: AUTH: %s", h->auth_kind);
	else if (h->disc != NULL && why[0] && cfg->redis.sentinels)
		cli_say("no sentinel answered for %s (last: %s)", cfg->redis.master_name, why);
	else if (h->disc != NULL && why[0])
		cli_say("no cluster node answered CLUSTER SHARDS (last: %s)", why);
	else if (h->disc != NULL && host == NULL && cfg->redis.cluster)
		cli_say("no cluster node owns slot %u of %s", h->slot, c->keys.jobs);
	else if (h->disc != NULL && host == NULL)
		cli_say("no sentinel named the primary of %s", cfg->redis.master_name);
	else if (cfg->redis.socket != NULL)
		cli_say("cannot connect to Redis at %s: no connection", cfg->redis.socket);
	else
		cli_say("cannot connect to Redis at %s:%d: no connection", host ? host :
		    cfg->redis.host, host ? rconn_port(h->rc) : cfg->redis.port);
	return EX_UNAVAILABLE;
}

/* A new handle to the node of c's shard, up. 0 with *out, or an exit code
 * (said). */
static int
open_handle(struct cli *c, struct clir **out)
{
	const struct cfg *cfg = c->cfg;
	struct clir *h = calloc(1, sizeof *h);
	char err[512];
	int rc;

	*out = NULL;
	if (h == NULL || (h->loop = ev_loop_new(EVFLAG_AUTO)) == NULL) {
		free(h);
		cli_say("out of memory");
		return EX_UNAVAILABLE;
	}
	h->slot = cluster_key_slot(c->keys.jobs, strlen(c->keys.jobs));
	if ((rc = read_secrets(c, h)) != 0)
		goto fail;
	if (cfg->redis.sentinels || cfg->redis.cluster) {
		struct disc_opts d = {
			.loop = h->loop, .sentinels = cfg->redis.sentinel_addr,
			.nsentinels = cfg->redis.n_sentinel_addr, .seeds = cfg->redis.cluster_addr,
			.nseeds = cfg->redis.n_cluster_addr, .master_name = cfg->redis.master_name,
			.username = c->username, .allow_hosts = cfg->redis.allow_hosts,
			.allow_plaintext = cfg->redis.allow_plaintext,
			.secret = disc_secret, .each_conn = each_conn, .arg = h, .tls = c->tls,
			.timeout_ms = TIMEOUT_S * 1000L,
		};
		if ((h->disc = disc_new(&d, err, sizeof err)) == NULL) {
			cli_say("%s", err);
			rc = EX_CONFIG;
			goto fail;
		}
	}
	struct rconn_opts o = {
		.host = cfg->redis.host, .port = cfg->redis.port, .socket = cfg->redis.socket,
		.username = c->username, .password = h->pw, .db = cfg->redis.db,
		.connect_timeout_ms = TIMEOUT_S * 1000L, .command_timeout_ms = TIMEOUT_S * 1000L,
		.backoff_min_ms = 1000, .backoff_max_ms = 1000,
		.resolve = h->disc != NULL ? resolve : NULL, .resolve_arg = h,
		.error_seen = cfg->redis.cluster ? error_seen : NULL,
		.cluster = cfg->redis.cluster != NULL, .auth_seen = on_auth, .auth_arg = h,
		.allow = disc_allowlist(h->disc), .tls = c->tls, .once = 1,
	};
	enum log_level level = log_get_level();
	log_set_level(LOG_ERROR);
	h->rc = rconn_new(h->loop, &o, PROG, on_state, h);
	log_set_level(level);
	if (h->rc == NULL) {
		cli_say("out of memory");
		rc = EX_UNAVAILABLE;
		goto fail;
	}
	/* discovery asks each node within 2 x its timeout (disc.c); rconn's
	 * connect timer bounds the rest */
	run_quiet(h, &h->state, (HOSTPORT_MAX + CLUSTER_NODES_MAX + 1) * 2L * TIMEOUT_S * 1000L);
	if (h->state != 1) {
		rc = say_failure(c, h);
		goto fail;
	}
	*out = h;
	return 0;
fail:
	clir_free(h);
	return rc;
}

int
clir_connect(struct cli *c)
{
	unsigned slot = cluster_key_slot(c->keys.jobs, strlen(c->keys.jobs));
	int rc;

	if (c->redis != NULL && c->redis->state == 1 &&
	    (!c->cfg->redis.cluster || slot == c->redis->slot))
		return 0;	/* connected to the shard's node already */
	clir_drop(c);	/* a cluster's shard on another node: asks the map */
	if ((rc = make_tls(c)) != 0)
		return rc;
	return open_handle(c, &c->redis);
}

void
clir_close(struct cli *c)
{
	clir_drop(c);
	rtls_ctx_free(c->tls);
	c->tls = NULL;
}

/* One command on h, waited for: the reply (caller frees), NULL when none
 * came. */
static redisReply *
send_wait(struct clir *h, int argc, const char **argv, const size_t *len)
{
	struct clir_wait w = {0};

	if (h->state != 1 || rconn_commandv(h->rc, on_reply, &w, argc, argv, len) < 0)
		return NULL;
	run_quiet(h, &w.done, 2L * TIMEOUT_S * 1000L);
	if (!w.done) {	/* rconn's command timeout did not fire: its NULL now */
		rconn_free(h->rc);
		h->rc = NULL;
		h->state = -1;
	}
	return w.reply;
}

redisReply *
clir_argv(struct cli *c, int argc, const char **argv)
{
	c->redis->said = 0;
	return send_wait(c->redis, argc, argv, NULL);
}

/* clir_pipeline's commands, counted down as their replies come. */
struct clir_many {
	size_t left;
	int done;
};

struct clir_one {
	struct clir_many *m;
	redisReply **slot;
};

static void
on_one_reply(struct rconn *rc, const struct sreply *reply, void *arg)
{
	struct clir_one *o = arg;

	(void)rc;
	*o->slot = reply != NULL ? copy_reply((const redisReply *)(const void *)reply) : NULL;
	if (--o->m->left == 0)
		o->m->done = 1;
}

int
clir_pipeline(struct cli *c, size_t n, int argc, const char **argv, redisReply **replies)
{
	struct clir *h = c->redis;
	struct clir_many m = {0, 0};
	struct clir_one *one = calloc(n > 0 ? n : 1, sizeof *one);
	size_t sent = 0;
	int ok = one != NULL && h->state == 1;

	for (size_t i = 0; i < n; i++)
		replies[i] = NULL;
	h->said = 0;
	for (; ok && sent < n; sent++) {
		one[sent] = (struct clir_one){&m, &replies[sent]};
		m.left++;
		if (rconn_commandv(h->rc, on_one_reply, &one[sent], argc, argv + sent * (size_t)argc,
		    NULL) < 0) {
			m.left--;	/* not accepted: never called back */
			ok = 0;
		}
	}
	if (m.left > 0)
		run_quiet(h, &m.done, 2L * TIMEOUT_S * 1000L);
	if (m.left > 0) {	/* rconn's command timeout did not fire: the rest NULL now */
		rconn_free(h->rc);
		h->rc = NULL;
		h->state = -1;
	}
	free(one);
	for (size_t i = 0; ok && i < sent; i++)
		ok = replies[i] != NULL;
	if (ok)
		return 0;
	for (size_t i = 0; i < n; i++) {
		freeReplyObject(replies[i]);
		replies[i] = NULL;
	}
	return -1;
}

/* "ASK <slot> <host>:<port>": 1 with the node, else 0. */
static int
ask_target(const redisReply *r, char *host, size_t hostlen, long *port)
{
	const char *h, *colon;
	char *end;

	if (r == NULL || r->type != REDIS_REPLY_ERROR || strncmp(r->str, "ASK ", 4) != 0 ||
	    (h = strchr(r->str + 4, ' ')) == NULL || (colon = strrchr(++h, ':')) == NULL ||
	    (size_t)(colon - h) >= hostlen)
		return 0;
	*port = strtol(colon + 1, &end, 10);
	if (*end != '\0' || *port <= 0 || *port > 65535)
		return 0;
	memcpy(host, h, (size_t)(colon - h));
	host[colon - h] = '\0';
	return 1;
}

/* rconn follows an -ASK on a side connection of its own once that is up:
 * the command is sent again until it is (a host outside allow_hosts gets
 * none: said). */
redisReply *
clir_asking(struct cli *c, int argc, const char **argv, const size_t *len)
{
	struct clir *h = c->redis;
	char host[HOSTPORT_HOST_MAX];
	long port;

	h->said = 0;
	for (int i = 0;; i++) {
		redisReply *r = send_wait(h, argc, argv, len);
		if (h->disc == NULL || !ask_target(r, host, sizeof host, &port) || i >= ASK_TRIES)
			return r;
		freeReplyObject(r);
		if (!allowlist_match(disc_allowlist(h->disc), host, (int)port)) {
			cli_say("%s:%ld is outside [redis] allow_hosts: not connected to", host, port);
			h->said = 1;
			return NULL;	/* no connection, so no AUTH, goes there */
		}
		int never = 0;
		run_quiet(h, &never, 100);
	}
}

int
clir_checked(struct cli *c, redisReply *r, const char *what, redisReply **out)
{
	*out = NULL;
	if (r == NULL) {
		if (!c->redis->said)
			cli_say("redis: %s: %s", what, c->redis->state == 1 ? "no reply" :
			    "connection lost");
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

int
clir_checked_asking(struct cli *c, redisReply *r, const char *what, redisReply **out)
{
	return clir_checked(c, r, what, out);
}

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

int
clir_each_entry(struct cli *c, const char *key, clir_entry_fn *fn, void *arg)
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
			const char *eid = cli_entry_id(e);
			if (eid == NULL)
				continue;
			fn(arg, eid, e);
			/* The next page starts after the last entry seen. */
			snprintf(start, sizeof start, "(%s", eid);
		}
		freeReplyObject(r);
		if (n < PAGE)
			return 0;
	}
}

struct scan {
	const char *want;
	const char *const *order;
	json_t *out;
};

static void
scan_one(void *arg, const char *eid, const struct sreply *e)
{
	struct scan *s = arg;
	const char *id = sreply_field(sreply_element(e, 1), "id");
	(void)eid;

	if (s->want == NULL || (id != NULL && strcmp(id, s->want) == 0))
		json_array_append_new(s->out, cli_entry_json(e, s->order));
}

int
clir_scan_stream(struct cli *c, const char *key, const char *want, const char *const *order,
		 json_t *out)
{
	struct scan s = {want, order, out};

	return clir_each_entry(c, key, scan_one, &s);
}
