/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * disc: where to connect, found asynchronously (Sentinel, Cluster).
 *
 * One lookup at a time: the nodes to ask (the sentinels; or the map's
 * primaries, then the seeds) are asked in turn, each through an rconn of
 * one attempt. A node's answer -- or its failure, or its timeout -- only
 * "decides" and arms the step timer; the step frees that rconn (never from
 * inside its own callbacks) and asks the next node or ends the lookup.
 */
#define _DEFAULT_SOURCE
#include "redis/disc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "core/allowlist.h"
#include "redis/cluster.h"
#include "base/log.h"
#include "redis/rconn.h"
#include "redis/sentinel.h"
#include "base/wtime.h"

#define ASK_MAX		(HOSTPORT_MAX + CLUSTER_NODES_MAX)
_Static_assert(CLUSTER_HOST_MAX == HOSTPORT_HOST_MAX, "a node's host is a sentinel_addr's");
#define FRESH_MS	1000	/* an answer this recent serves a connect */

enum mode { M_NONE, M_SENTINEL, M_CLUSTER };

struct disc {
	struct disc_opts o;	/* the strings below are our copies */
	enum mode mode;
	struct hostport sentinels[HOSTPORT_MAX], seeds[HOSTPORT_MAX];
	size_t nsentinels, nseeds;
	char *master_name, *username;
	struct allowlist *allow;
	int announce;		/* default allow_hosts: a seed's answer is admitted */
	struct cluster_map *map;
	char primary[HOSTPORT_HOST_MAX];	/* Sentinel: the answer; port 0: none */
	int primary_port;
	int64_t answered_at;	/* wtime_mono_ms of the last lookup's end; 0: stale */

	/* the lookup under way */
	int active;
	struct hostport ask[ASK_MAX];
	size_t nask, iask;
	struct rconn *rc;	/* the node being asked */
	int decided, found;
	char cand[HOSTPORT_HOST_MAX];	/* a sentinel's answer, before it is taken */
	int cand_port;
	char why[200];
	ev_timer step, deadline, poll;
};

static void finish(struct disc *d);

static void
decide(struct disc *d, int found, const char *why)
{
	if (d->decided)
		return;
	d->decided = 1;
	d->found = found;
	if (!found && why != NULL) {
		const struct hostport *a = &d->ask[d->iask - 1];
		snprintf(d->why, sizeof d->why, "%s:%d: %s", a->host, a->port, why);
	}
	ev_timer_set(&d->step, 0.0, 0.0);
	ev_timer_start(d->o.loop, &d->step);
}

static int
keep_allowed(void *arg, const struct cluster_node *n)
{
	struct disc *d = arg;

	return allowlist_check(d->allow, n->host, n->port, "shards");
}

static int
is_seed(const struct disc *d, const struct hostport *a)
{
	for (size_t i = 0; i < d->nseeds; i++)
		if (d->seeds[i].port == a->port && strcmp(d->seeds[i].host, a->host) == 0)
			return 1;
	return 0;
}

static int
announce_one(void *arg, const char *host, int port)
{
	return allowlist_announce(arg, host, port);
}

/* The asked node's answer. rconn hands replies as sreply; the parsers of
 * sentinel.h and cluster.h read hiredis's tree, which sreply_of wraps. */
static void
on_answer(struct rconn *rc, const struct sreply *reply, void *arg)
{
	struct disc *d = arg;
	const redisReply *r = (const redisReply *)(const void *)reply;

	if (d->decided || rc != d->rc)
		return;
	if (r == NULL) {
		decide(d, 0, "no answer");
		return;
	}
	if (d->mode == M_SENTINEL) {
		if (sentinel_parse_reply(r, d->cand, sizeof d->cand, &d->cand_port) < 0)
			decide(d, 0, r->type == REDIS_REPLY_NIL ? "does not know the master name" :
			    "unexpected reply");
		else if (!allowlist_check(d->allow, d->cand, d->cand_port, "sentinel"))
			decide(d, 0, "named a host outside allow_hosts");
		else
			decide(d, 1, NULL);
		return;
	}
	const struct hostport *asked = &d->ask[d->iask - 1];
	if (cluster_map_parse_shards(d->map, r, asked->host) < 0) {
		decide(d, 0, r->type == REDIS_REPLY_ERROR ? r->str :
		    "unexpected CLUSTER SHARDS reply");
		return;
	}
	/* the default allow_hosts: what a configured seed announces, never
	 * what a node it announced says in turn */
	if (d->announce && is_seed(d, asked)) {
		allowlist_announce_clear(d->allow);
		if (cluster_shards_each_node(r, asked->host, d->o.tls != NULL, announce_one,
		    d->allow) < 0)
			log_warn("redis.cluster", "error=%s",
			    LOG_Q("a seed announced more nodes than are kept"));
	}
	(void)cluster_map_keep(d->map, keep_allowed, d);
	decide(d, 1, NULL);
}

static void
on_asked_state(struct rconn *rc, int up, void *arg)
{
	struct disc *d = arg;

	if (d->decided || (d->rc != NULL && rc != d->rc))
		return;
	if (!up) {
		decide(d, 0, "no connection");
		return;
	}
	int r = d->mode == M_SENTINEL ?
	    rconn_command(rc, on_answer, d, "SENTINEL get-master-addr-by-name %s", d->master_name) :
	    rconn_command(rc, on_answer, d, "CLUSTER SHARDS");
	if (r < 0)
		decide(d, 0, "not sent");
}

static void
ask_one(struct disc *d, const struct hostport *a)
{
	int sentinel = d->mode == M_SENTINEL;
	struct rconn_opts o = {
		.host = a->host, .port = a->port,
		.username = sentinel ? NULL : d->username,
		.password = d->o.secret != NULL ? d->o.secret(d->o.arg, sentinel) : NULL,
		.connect_timeout_ms = d->o.timeout_ms, .command_timeout_ms = d->o.timeout_ms,
		.backoff_min_ms = 1000, .backoff_max_ms = 1000,
		.allow = d->allow, .once = 1, .tls = d->o.tls,
		.role = sentinel ? RCONN_ROLE_SENTINEL : RCONN_ROLE_ANY,
	};

	d->decided = 0;
	d->rc = NULL;	/* a failure inside rconn_new is this node's */
	struct rconn *rc = rconn_new(d->o.loop, &o, sentinel ? "sentinel" : "shards",
	    on_asked_state, d);
	d->rc = rc;	/* decided already (a refused host): freed at the step */
	if (rc == NULL) {
		decide(d, 0, "out of memory");
		return;
	}
	/* rconn's own timers bound connect, handshake and answer; this bounds
	 * them together */
	ev_timer_set(&d->deadline, 2.0 * (double)d->o.timeout_ms / 1000.0, 0.0);
	ev_timer_start(d->o.loop, &d->deadline);
}

static void
on_deadline(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	decide(w->data, 0, "timeout");
}

static void
on_step(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct disc *d = w->data;
	struct rconn *rc = d->rc;

	(void)revents;
	d->rc = NULL;
	ev_timer_stop(loop, &d->deadline);
	rconn_free(rc);		/* its NULL callbacks come after decided: ignored */
	if (d->found || d->iask >= d->nask) {
		finish(d);
		return;
	}
	ask_one(d, &d->ask[d->iask++]);
}

static void
lookup_start(struct disc *d)
{
	if (d->active)
		return;
	d->nask = 0;
	if (d->mode == M_SENTINEL) {
		memcpy(d->ask, d->sentinels, d->nsentinels * sizeof d->ask[0]);
		d->nask = d->nsentinels;
	} else {
		/* the default allow_hosts admits what a seed announces: the
		 * seeds first then, so that a node added since is learnt */
		struct cluster_node known[CLUSTER_NODES_MAX];
		size_t n = cluster_map_nodes(d->map, known, CLUSTER_NODES_MAX);
		if (d->announce) {
			memcpy(d->ask, d->seeds, d->nseeds * sizeof d->ask[0]);
			d->nask = d->nseeds;
		}
		for (size_t i = 0; i < n; i++) {
			memcpy(d->ask[d->nask].host, known[i].host, sizeof d->ask[0].host);
			d->ask[d->nask++].port = known[i].port;
		}
		if (!d->announce) {
			memcpy(d->ask + d->nask, d->seeds, d->nseeds * sizeof d->ask[0]);
			d->nask += d->nseeds;
		}
	}
	d->active = 1;
	d->iask = 0;
	d->found = 0;
	d->decided = 1;		/* the step asks the first node */
	snprintf(d->why, sizeof d->why, "no node to ask");
	ev_timer_set(&d->step, 0.0, 0.0);
	ev_timer_start(d->o.loop, &d->step);
}

/* Where rc should be connected now; 0 with host and port, -1 unknown. */
static int
answer(struct disc *d, unsigned slot, const char **host, int *port)
{
	if (d->mode == M_SENTINEL) {
		if (d->primary_port == 0)
			return -1;
		*host = d->primary;
		*port = d->primary_port;
		return 0;
	}
	const struct cluster_node *n = cluster_map_owner(d->map, slot);
	if (n == NULL)
		return -1;
	*host = n->host;
	*port = n->port;
	return 0;
}

/* After a lookup: the waiting connections try again; after a successful
 * one, a connection to another node than its slot's primary is remade. */
static void
kick(struct rconn *rc, unsigned slot, int blocking, void *arg)
{
	struct disc *d = arg;
	const char *host, *now = rconn_host(rc);
	int port;

	(void)blocking;
	rconn_resolved(rc);
	if (!d->found || now == NULL || answer(d, slot, &host, &port) < 0)
		return;
	if (strcmp(now, host) != 0 || rconn_port(rc) != port)
		rconn_reconnect(rc, d->mode == M_SENTINEL ? "the sentinels name another primary" :
		    "the slot is served elsewhere");
}

static void
finish(struct disc *d)
{
	d->active = 0;
	d->answered_at = wtime_mono_ms();
	if (d->found && d->mode == M_SENTINEL) {
		snprintf(d->primary, sizeof d->primary, "%s", d->cand);
		d->primary_port = d->cand_port;
	}
	if (!d->found) {
		if (d->mode == M_SENTINEL)
			log_warn("redis.sentinel", "error=%s", LOG_Q(d->why));
		else
			log_warn("redis.cluster", "error=%s", LOG_Q(d->why));
	}
	d->o.each_conn(d->o.arg, kick, d);
}

/* ROLE on a command connection, every poll: a primary demoted under us
 * (and cut off from the sentinels, so they cannot tell us) is left. */
static void
on_role(struct rconn *rc, const struct sreply *reply, void *arg)
{
	struct disc *d = arg;
	const redisReply *r = (const redisReply *)(const void *)reply;

	if (r == NULL || r->type == REDIS_REPLY_ERROR || sentinel_is_master(r))
		return;
	d->answered_at = 0;	/* the next connect asks afresh */
	rconn_reconnect(rc, "ROLE: no longer a primary");
}

static void
check_role(struct rconn *rc, unsigned slot, int blocking, void *arg)
{
	(void)slot;
	if (!blocking && rconn_is_up(rc) && rconn_command(rc, on_role, arg, "ROLE") < 0)
		log_debug("redis.role_check", "sent=0");
}

static void
on_poll(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct disc *d = w->data;

	(void)loop;
	(void)revents;
	d->o.each_conn(d->o.arg, check_role, d);
	lookup_start(d);
}

int
disc_resolve(struct disc *d, unsigned slot, char *host, size_t hostlen, int *port)
{
	const char *h;
	int p;

	if (d == NULL || d->mode == M_NONE)
		return -1;
	if (d->active)
		return 1;
	if (d->answered_at == 0 || wtime_mono_ms() - d->answered_at >= FRESH_MS) {
		lookup_start(d);
		return 1;
	}
	if (answer(d, slot, &h, &p) < 0) {
		if (d->mode == M_CLUSTER)
			log_warn("redis.cluster", "slot=%u error=\"no node owns the slot\"", slot);
		return -1;
	}
	if (strlen(h) >= hostlen)
		return -1;
	snprintf(host, hostlen, "%s", h);
	*port = p;
	return 0;
}

void
disc_error_seen(struct disc *d, const char *error)
{
	struct cluster_redirect rd;

	if (d == NULL || error == NULL)
		return;
	if (strncmp(error, "READONLY", 8) == 0) {
		d->answered_at = 0;	/* a failover: the next connect asks afresh */
		return;
	}
	if (d->mode != M_CLUSTER || cluster_parse_redirect(error, &rd) != CLUSTER_MOVED)
		return;
	/* a MOVED without a host names the node that answered: rconn's own
	 * host, allowed already */
	if (rd.to.host[0] != '\0' && !allowlist_check(d->allow, rd.to.host, rd.to.port, "moved"))
		return;
	d->answered_at = 0;	/* the next connect asks the cluster again */
	if (rd.to.host[0] != '\0' && cluster_map_apply(d->map, &rd))
		log_info("redis.moved", "slot=%u host=%s port=%d", rd.slot, LOG_Q(rd.to.host),
		    rd.to.port);	/* a hostile Redis names the host */
}

struct allowlist *
disc_allowlist(struct disc *d)
{
	return d != NULL ? d->allow : NULL;
}

void
disc_count_refused_in(struct disc *d, long long *counter)
{
	if (d != NULL)
		allowlist_count_in(d->allow, counter);
}

const char *
disc_error(const struct disc *d)
{
	return d != NULL && !d->active && !d->found && d->answered_at != 0 ? d->why : "";
}

void
disc_start(struct disc *d)
{
	if (d == NULL || d->mode == M_NONE || d->o.poll_ms <= 0)
		return;
	double s = (double)d->o.poll_ms / 1000.0;
	ev_timer_set(&d->poll, s, s);
	ev_timer_start(d->o.loop, &d->poll);
}

struct allowlist *
disc_allowlist_of(const char *allow_hosts, const char *host, int port,
		  const struct hostport *nodes, size_t n, char *err, size_t errlen)
{
	struct allowlist *al = allowlist_new();

	if (al == NULL)
		goto oom;
	if (allow_hosts != NULL && allowlist_add_list(al, allow_hosts, err, errlen) < 0)
		goto fail;
	if (host != NULL && allowlist_add_host(al, host, port) < 0)
		goto oom;
	for (size_t i = 0; i < n; i++)
		if (allowlist_add_host(al, nodes[i].host, nodes[i].port) < 0)
			goto oom;
	return al;
oom:
	snprintf(err, errlen, "out of memory");
fail:
	allowlist_free(al);
	return NULL;
}

static int
copy_str(char **dst, const char *src)
{
	*dst = NULL;
	return src == NULL || (*dst = strdup(src)) != NULL ? 0 : -1;
}

static void
init_timer(struct disc *d, ev_timer *t, void (*cb)(struct ev_loop *, ev_timer *, int))
{
	ev_timer_init(t, cb, 0.0, 0.0);
	t->data = d;
}

struct disc *
disc_new(const struct disc_opts *o, char *err, size_t errlen)
{
	struct disc *d = calloc(1, sizeof *d);

	if (d == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->o = *o;
	d->o.sentinels = d->o.seeds = NULL;
	d->o.master_name = d->o.username = NULL;
	d->o.host = d->o.allow_hosts = NULL;
	init_timer(d, &d->step, on_step);
	init_timer(d, &d->deadline, on_deadline);
	init_timer(d, &d->poll, on_poll);
	if (o->nsentinels > HOSTPORT_MAX || o->nseeds > HOSTPORT_MAX) {
		snprintf(err, errlen, "more than %d sentinels or seeds", HOSTPORT_MAX);
		goto fail;
	}
	if (o->nsentinels > 0) {
		d->mode = M_SENTINEL;
		d->nsentinels = o->nsentinels;
		memcpy(d->sentinels, o->sentinels, o->nsentinels * sizeof d->sentinels[0]);
	} else if (o->nseeds > 0) {
		d->mode = M_CLUSTER;
		d->nseeds = o->nseeds;
		memcpy(d->seeds, o->seeds, o->nseeds * sizeof d->seeds[0]);
	}
	if (copy_str(&d->master_name, o->master_name) < 0 ||
	    copy_str(&d->username, o->username) < 0 ||
	    (d->mode == M_CLUSTER && (d->map = cluster_map_new()) == NULL)) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (d->map != NULL)
		cluster_map_use_tls(d->map, o->tls != NULL);
	/* the one Redis's host only when it is the one connected to */
	if ((d->allow = disc_allowlist_of(o->allow_hosts, d->mode == M_NONE ? o->host : NULL,
	    o->port, d->mode == M_SENTINEL ? d->sentinels : d->seeds,
	    d->mode == M_SENTINEL ? d->nsentinels : d->nseeds, err, errlen)) == NULL)
		goto fail;
	allowlist_allow_plaintext(d->allow, o->allow_plaintext);
	d->announce = d->mode == M_CLUSTER && o->allow_hosts == NULL;
	return d;
fail:
	disc_free(d);
	return NULL;
}

void
disc_free(struct disc *d)
{
	if (d == NULL)
		return;
	ev_timer_stop(d->o.loop, &d->step);
	ev_timer_stop(d->o.loop, &d->deadline);
	ev_timer_stop(d->o.loop, &d->poll);
	d->decided = 1;		/* the asked node's NULL callbacks: ignored */
	rconn_free(d->rc);
	allowlist_free(d->allow);
	cluster_map_free(d->map);
	free(d->master_name);
	free(d->username);
	free(d);
}
