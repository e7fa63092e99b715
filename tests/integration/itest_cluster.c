/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_cluster: warrantd on Redis Cluster (issue 13). Three primaries and
 * three replicas of Debian's redis-server on 127.0.0.1, cluster-enabled,
 * joined by `redis-cli --cluster create --cluster-replicas 1`, in private
 * dirs under the harness's temp dir; every process is ours, by PID.
 *
 * test_tagged_prefix: prefix = {itc}, no shards -- every key in one slot --
 *   one worker runs 300 jobs to the end.
 * test_shards_reshard_failover: shards = 6, three workers, 6,000 jobs. A
 *   quarter of the way in, one shard's slot is moved to another primary
 *   (`redis-cli --cluster reshard`); half way in, a third primary is
 *   SIGKILLed and its replica promoted. Afterwards every job is terminal,
 *   none is lost (the target saw every recordId), and every shard's PEL is
 *   empty; duplicate executions are counted and printed (replication is
 *   asynchronous: a result the dead primary acknowledged but had not sent to
 *   its replica is run again). A few records go through the real decider
 *   (`warrantctl decide`): their keys are where warrantd(7)'s shard function,
 *   computed here on its own, says, and the workers run them.
 *
 * test_ask_mid_migration: shards = 6, one worker; one shard's keys are moved
 *   to another primary while its slot stays IMPORTING/MIGRATING: that
 *   shard's entries are read, loaded and called only because the worker
 *   follows -ASK (rconn's side connection) and no call names a key that
 *   does not exist (issue 27 item 5; P:scheduled, P:dead and P:notify are
 *   not made beforehand); their final writes, which create the P:final
 *   marks, and the dead letter of an entry with no id added mid-migration,
 *   wait on -TRYAGAIN until the migration ends; then all are done, the
 *   entry dead-lettered, and no PEL is left.
 *
 * The jobs' keys are placed on the node the slot map names (the module under
 * test, cluster.h: a wrong slot would be answered with MOVED and fail here).
 */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "redis/cluster.h"
#include "harness.h"

#define WAIT_MS		60000
#define NNODES		6	/* 3 primaries, 3 replicas */
#define SHARDS		6
#define JOBS		6000
#define CTL_JOBS	12	/* of JOBS, through warrantctl decide */
#define TAG_JOBS	300
#define NWORKERS	3

struct node {
	pid_t pid;
	int port;
	char id[64];
	char dir[512];
};

static struct node nodes[NNODES];
static struct h_fake target;
static struct hostport seeds[NNODES];
static char seed_list[256];

/* ---- the cluster ---- */

/* With a command timeout: nothing here blocks on purpose. */
static redisContext *
connect_port(int port)
{
	struct timeval tv = {5, 0};
	redisContext *c = h_redis_connect_tcp(port);

	if (c != NULL)
		redisSetTimeout(c, tv);
	return c;
}

static void
start_node(struct node *n, int i)
{
	struct h_rnode r;
	char name[32];

	/* require-full-coverage no: a primary that is down stops its own slots
	 * only, which is what the workers' per-shard R17 is about */
	snprintf(name, sizeof name, "cluster-%d", i);
	assert_int_equal(h_rnode_start(&r, name, "save \"\"\nappendonly no\n"
	    "cluster-enabled yes\ncluster-config-file nodes.conf\ncluster-node-timeout 1000\n"
	    "cluster-require-full-coverage no\n", H_RNODE_CLUSTER), 0);
	n->pid = r.pid;
	n->port = r.port;
	snprintf(n->dir, sizeof n->dir, "%s", r.dir);
	redisContext *c = connect_port(n->port);
	assert_non_null(c);
	char *id = h_redis_str(c, "CLUSTER MYID");
	assert_non_null(id);
	snprintf(n->id, sizeof n->id, "%s", id);
	free(id);
	redisFree(c);
}

/* Every node says cluster_state:ok and knows all six. */
static int
cluster_ok(void *arg)
{
	(void)arg;
	for (int i = 0; i < NNODES; i++) {
		redisContext *c = connect_port(nodes[i].port);
		char *info = c ? h_redis_str(c, "CLUSTER INFO") : NULL;
		int ok = info && strstr(info, "cluster_state:ok") &&
		    strstr(info, "cluster_known_nodes:6");
		free(info);
		if (c)
			redisFree(c);
		if (!ok)
			return 0;
	}
	return 1;
}

static int
group_setup(void **state)
{
	char *path = h_which("redis-cli");
	char *argv[32], ports[NNODES][32];
	int argc = 0;

	(void)state;
	if (path == NULL)
		return -1;
	free(path);
	for (int i = 0; i < NNODES; i++) {
		start_node(&nodes[i], i);
		snprintf(seeds[i].host, sizeof seeds[i].host, "127.0.0.1");
		seeds[i].port = nodes[i].port;
		size_t l = strlen(seed_list);
		snprintf(seed_list + l, sizeof seed_list - l, "%s127.0.0.1:%d", i ? ", " : "",
		    nodes[i].port);
	}
	argv[argc++] = "redis-cli";
	argv[argc++] = "--cluster";
	argv[argc++] = "create";
	for (int i = 0; i < NNODES; i++) {
		snprintf(ports[i], sizeof ports[i], "127.0.0.1:%d", nodes[i].port);
		argv[argc++] = ports[i];
	}
	argv[argc++] = "--cluster-replicas";
	argv[argc++] = "1";
	argv[argc++] = "--cluster-yes";
	argv[argc] = NULL;
	char *out = NULL;
	int rc = h_run(argv, 60000, &out);
	if (rc != 0)
		print_message("redis-cli --cluster create: %d\n%s\n", rc, out ? out : "");
	free(out);
	if (rc != 0 || h_wait_until(cluster_ok, NULL, WAIT_MS) != 0)
		return -1;
	return h_fake_start(&target, "fake_target", NULL) == 0 &&
	    h_fake_script(&target, "{\"default\": {\"delay_ms\": 2}}") == 0 ? 0 : -1;
}

static int
group_teardown(void **state)
{
	(void)state;
	h_fake_stop(&target);
	for (int i = 0; i < NNODES; i++)
		if (nodes[i].pid > 0)
			h_stop(nodes[i].pid, SIGTERM, 5000);
	return 0;
}

/* ---- routing for the test's own reads and writes ---- */

struct router {
	struct cluster_map *map;
	redisContext *conn[NNODES];
	int port[NNODES];
};

static void
router_refresh(struct router *r)
{
	char err[300];

	if (r->map == NULL)
		r->map = cluster_map_new();
	assert_non_null(r->map);
	if (h_cluster_refresh(r->map, seeds, NNODES, 1000, err, sizeof err) != 0)
		fail_msg("%s", err);
}

/* The connection to the node owning key's slot (NULL: none known). */
static redisContext *
route(struct router *r, const char *key)
{
	const struct cluster_node *n = cluster_map_owner(r->map, cluster_key_slot(key,
	    strlen(key)));

	if (n == NULL)
		return NULL;
	for (int i = 0; i < NNODES; i++)
		if (r->port[i] == n->port)
			return r->conn[i];
	for (int i = 0; i < NNODES; i++)
		if (r->conn[i] == NULL) {
			r->conn[i] = connect_port(n->port);
			r->port[i] = n->port;
			return r->conn[i];
		}
	return NULL;
}

static void
router_close(struct router *r)
{
	for (int i = 0; i < NNODES; i++) {
		if (r->conn[i])
			redisFree(r->conn[i]);
		r->conn[i] = NULL;
		r->port[i] = 0;
	}
	cluster_map_free(r->map);
	r->map = NULL;
}

/* ---- warrantd(7)'s shard function, written here on its own ---- */

static unsigned
spec_shard(const char *id)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)id; *p; p++) {
		h ^= *p;
		h *= 16777619u;
	}
	return h % SHARDS;
}

/* ---- workers, jobs, states ---- */

static char *
worker_ini(const char *consumer, const char *prefix, int shards, int max_in_flight)
{
	char redis_extra[512], daemon_extra[64];

	snprintf(redis_extra, sizeof redis_extra, "cluster = %s\n%s%s", seed_list,
	    shards ? "shards = 6\n" : "", "batch = 16\n");
	struct h_daemon_opts o = {
		.target_url = target.url, .consumer = consumer,
		.prefix = prefix, .signature_off = 1, .redis_extra = redis_extra,
		.claim_idle_ms = 3000, .daemon_extra = daemon_extra,
	};
	snprintf(daemon_extra, sizeof daemon_extra, "max_in_flight = %d\n", max_in_flight);
	char *ini = h_daemon_ini(&o);
	assert_non_null(ini);
	return ini;
}


static long long
target_stat(const char *name)
{
	json_t *st = h_fake_json(&target, "/_stats");
	long long n = json_integer_value(json_object_get(st, name));
	json_decref(st);
	return n;
}

static int
target_reached(void *arg)
{
	return target_stat("distinct_keys") >= *(long long *)arg;
}

static int
terminal(const char *st)
{
	return st && (!strcmp(st, "done") || !strcmp(st, "expired") || !strcmp(st, "denied") ||
	    !strcmp(st, "failed") || !strcmp(st, "dead"));
}

struct check {
	struct router *r;
	const char *prefix;	/* the deployment's */
	int shards, jobs;
	const char *id_pre;	/* recordIds: <id_pre>-%05d */
	int terminal, done;
	/* mid-migration: this shard's keys are asked of the importing node
	 * (ASKING first: the map still names the source); NULL: none */
	redisContext *ask_dst;
	unsigned ask_shard;
};

static void
shard_prefix(char *buf, size_t n, const struct check *k, const char *id)
{
	if (k->shards)
		snprintf(buf, n, "{%s:%u}", k->prefix, spec_shard(id));
	else
		snprintf(buf, n, "%s", k->prefix);
}

/* Every job's state, asked of the node that owns its shard now (or of
 * the importing node, for a shard mid-migration). */
static int
all_terminal(void *arg)
{
	struct check *k = arg;
	char id[32], p[64], key[512];

	router_close(k->r);
	router_refresh(k->r);
	k->terminal = k->done = 0;
	for (int i = 0; i < k->jobs; i++) {
		snprintf(id, sizeof id, "%s-%05d", k->id_pre, i);
		shard_prefix(p, sizeof p, k, id);
		snprintf(key, sizeof key, "%s:decision:%s", p, id);
		redisContext *c = route(k->r, key);
		if (k->ask_dst != NULL && spec_shard(id) == k->ask_shard) {
			c = k->ask_dst;
			freeReplyObject(redisCommand(c, "ASKING"));
		}
		char *st = c ? h_hget(c, key, "state") : NULL;
		k->terminal += terminal(st);
		k->done += st && !strcmp(st, "done");
		free(st);
	}
	return k->terminal == k->jobs;
}

static long long
pel_total(struct check *k)
{
	char p[64], stream[512];
	long long sum = 0;
	int n = k->shards ? k->shards : 1;

	router_close(k->r);
	router_refresh(k->r);
	for (int i = 0; i < n; i++) {
		if (k->shards)
			snprintf(p, sizeof p, "{%s:%d}", k->prefix, i);
		else
			snprintf(p, sizeof p, "%s", k->prefix);
		snprintf(stream, sizeof stream, "%s:jobs", p);
		redisContext *c = route(k->r, stream);
		assert_non_null(c);
		long long pel = h_pending_count(c, stream, "workers");
		if (pel != 0)
			print_message("    %s: PEL %lld\n", stream, pel);
		sum += pel < 0 ? 1 : pel;
	}
	return sum;
}

/* On a failure: where the jobs that are not terminal stand, per shard. */
static void
diagnose(struct check *k)
{
	char id[32], p[64], key[512];
	int stuck[SHARDS] = {0};

	router_close(k->r);
	router_refresh(k->r);
	for (int i = 0; i < k->jobs; i++) {
		snprintf(id, sizeof id, "%s-%05d", k->id_pre, i);
		shard_prefix(p, sizeof p, k, id);
		snprintf(key, sizeof key, "%s:decision:%s", p, id);
		redisContext *c = route(k->r, key);
		char *st = c ? h_hget(c, key, "state") : NULL;
		if (!terminal(st) && stuck[k->shards ? spec_shard(id) : 0]++ < 3)
			print_message("    %s: state %s\n", key, st ? st : "(none)");
		free(st);
	}
	for (int i = 0; i < (k->shards ? k->shards : 1); i++) {
		if (k->shards)
			snprintf(p, sizeof p, "{%s:%d}", k->prefix, i);
		else
			snprintf(p, sizeof p, "%s", k->prefix);
		snprintf(key, sizeof key, "%s:jobs", p);
		redisContext *c = route(k->r, key);
		redisReply *g = c ? redisCommand(c, "XINFO GROUPS %s", key) : NULL;
		char info[512] = "";
		for (size_t j = 0; g && g->type == REDIS_REPLY_ARRAY && j < g->elements; j++)
			for (size_t f = 0; f + 1 < g->element[j]->elements; f += 2) {
				const redisReply *v = g->element[j]->element[f + 1];
				size_t l = strlen(info);
				if (v->type == REDIS_REPLY_INTEGER)
					snprintf(info + l, sizeof info - l, " %s=%lld",
					    g->element[j]->element[f]->str, v->integer);
				else if (v->type == REDIS_REPLY_STRING)
					snprintf(info + l, sizeof info - l, " %s=%s",
					    g->element[j]->element[f]->str, v->str);
			}
		print_message("    %s: %d not terminal, xlen %lld, pel %lld,%s\n", key, stuck[i],
		    c ? h_redis_int(c, "XLEN %s", key) : -1,
		    c ? h_pending_count(c, key, "workers") : -1, info);
		freeReplyObject(g);
	}
}

/* Jobs from..to-1 written by the test, each where its shard's slot is. */
static void
decide_range(struct router *r, const struct check *k, int from, int to)
{
	long long now = h_now_ms();
	char id[32], p[64], key[512];

	for (int i = from; i < to; i++) {
		snprintf(id, sizeof id, "%s-%05d", k->id_pre, i);
		shard_prefix(p, sizeof p, k, id);
		snprintf(key, sizeof key, "%s:jobs", p);
		redisContext *c = route(r, key);
		assert_non_null(c);
		char *js = h_record_json(id, "gate.open", "north/1", now - 1000,
		    now + 3600 * 1000LL, 0, NULL);
		assert_int_equal(h_decide(c, p, id, js, 0), 0);
		free(js);
	}
}

/* Replicated before anything runs: a killed primary loses no job. */
static void
wait_replicated(struct router *r)
{
	for (int i = 0; i < NNODES; i++)
		if (r->conn[i] != NULL)
			assert_true(h_redis_int(r->conn[i], "WAIT 1 10000") == 1);
}

static void
test_tagged_prefix(void **state)
{
	struct router r = {0};
	struct check k = {.r = &r, .prefix = "{itc}", .shards = 0, .jobs = TAG_JOBS, .id_pre = "tg"};
	struct h_daemon w;

	(void)state;
	router_refresh(&r);
	decide_range(&r, &k, 0, TAG_JOBS);
	char *ini = worker_ini("t1", "{itc}", 0, 32);
	assert_int_equal(h_daemon_start(&w, ini), 0);
	free(ini);
	if (h_wait_until(all_terminal, &k, WAIT_MS) != 0)
		fail_msg("%d of %d jobs terminal", k.terminal, TAG_JOBS);
	assert_int_equal(k.done, TAG_JOBS);
	assert_int_equal(pel_total(&k), 0);
	assert_int_equal(h_assert_each_once(&target, "tg-", TAG_JOBS, 0), 0);
	assert_true(h_daemon_stop_clean(&w));
	router_close(&r);
}

/* ---- the reshard and the kill ---- */

/* How many slots the owner of `slot` holds up to and including it: the
 * number `redis-cli --cluster reshard` must move from it (it takes a
 * source's slots in ascending order) for `slot` to go too. Counted over
 * every slot, so a range left in pieces by an earlier test (a migration,
 * a reshard) is counted right: the tests may run in any order. */
static unsigned
slots_up_to(struct router *r, unsigned slot)
{
	const struct cluster_node *o = cluster_map_owner(r->map, slot);
	unsigned k = 0;

	for (unsigned s = 0; o != NULL && s <= slot; s++) {
		const struct cluster_node *x = cluster_map_owner(r->map, s);
		k += x != NULL && x->port == o->port;
	}
	return k;
}

/* A deployment prefix one of whose shards sits among the first 200 slots
 * its primary holds: moving those moves that shard's slot. */
static void
pick_prefix(struct router *r, char *prefix, size_t n, unsigned *slot, int *from)
{
	for (int t = 0; t < 10000; t++) {
		snprintf(prefix, n, "ws%d", t);
		for (int s = 0; s < SHARDS; s++) {
			char key[64];
			snprintf(key, sizeof key, "{%s:%d}", prefix, s);
			unsigned sl = cluster_key_slot(key, strlen(key));
			const struct cluster_node *o = cluster_map_owner(r->map, sl);
			if (o != NULL && slots_up_to(r, sl) <= 200) {
				*slot = sl;
				*from = o->port;
				return;
			}
		}
	}
	fail_msg("no prefix with a shard near a range's start");
}

static const struct node *
node_by_port(int port)
{
	for (int i = 0; i < NNODES; i++)
		if (nodes[i].port == port)
			return &nodes[i];
	return NULL;
}

/* The primaries, by the map: ports into out[3]. */
static void
primaries(struct router *r, int out[3])
{
	struct cluster_node ns[CLUSTER_NODES_MAX];
	size_t n = cluster_map_nodes(r->map, ns, CLUSTER_NODES_MAX);

	assert_int_equal(n, 3);
	for (size_t i = 0; i < 3; i++)
		out[i] = ns[i].port;
}

static void
reshard(const struct node *from, const struct node *to, unsigned nslots)
{
	char addr[64], slots[16];
	char *out = NULL;

	snprintf(addr, sizeof addr, "127.0.0.1:%d", from->port);
	snprintf(slots, sizeof slots, "%u", nslots);
	char *argv[] = {"redis-cli", "--cluster", "reshard", addr, "--cluster-from",
	    (char *)from->id, "--cluster-to", (char *)to->id, "--cluster-slots", slots,
	    "--cluster-yes", NULL};
	int rc = h_run(argv, 60000, &out);
	if (rc != 0)
		fail_msg("redis-cli --cluster reshard: %d\n%s", rc, out ? out : "");
	free(out);
}

struct promoted {
	struct router *r;
	unsigned slot;
	int dead_port;
};

static int
slot_moved(void *arg)
{
	struct promoted *p = arg;
	struct cluster_map *m = cluster_map_new();
	char err[300];
	int ok = 0;

	if (m && h_cluster_refresh(m, seeds, NNODES, 300, err, sizeof err) == 0) {
		const struct cluster_node *o = cluster_map_owner(m, p->slot);
		ok = o != NULL && o->port != p->dead_port;
	}
	cluster_map_free(m);
	return ok;
}

/* ---- ASK: a slot left mid-migration ---- */

#define ASK_JOBS	60

static redisReply *
cmd_ok(redisContext *c, const char *what, redisReply *r)
{
	if (r == NULL || r->type == REDIS_REPLY_ERROR)
		fail_msg("%s: %s", what, r ? r->str : c->errstr);
	return r;
}

/* At least `want` of k's jobs terminal (all_terminal counts them). */
struct others_wait {
	struct check *k;
	int want;
};

static int
others_terminal(void *arg)
{
	struct others_wait *w = arg;

	all_terminal(w->k);
	return w->k->terminal >= w->want;
}

/* One record called at the target. */
struct id_called {
	const char *id;
};

static int
id_called(void *arg)
{
	return h_count_calls(&target, ((struct id_called *)arg)->id) > 0;
}

/* Every job of the moving shard called at the target (whatever its state). */
struct moved_calls {
	const char *id_pre;
	int jobs;
	unsigned shard;
	int called;
};

static int
moved_called(void *arg)
{
	struct moved_calls *m = arg;
	int want = 0;
	char id[32];

	m->called = 0;
	for (int i = 0; i < m->jobs; i++) {
		snprintf(id, sizeof id, "%s%05d", m->id_pre, i);
		if (spec_shard(id) != m->shard)
			continue;
		want++;
		m->called += h_count_calls(&target, id) > 0;
	}
	return m->called == want;
}

/* One shard's keys all moved to another primary while its slot stays
 * IMPORTING there and MIGRATING on the source: the source answers -ASK for
 * every one of them, and only a worker that follows it (ASKING, then the
 * command on the importing node) reads, loads and calls that shard's jobs.
 * The importing node answers -TRYAGAIN to a call naming several keys when
 * one of them is missing: so the calls must name none that is missing --
 * not an empty schedule, dead-letter or notify stream, nor a record's
 * P:final mark before its terminal write. That write, which creates the
 * mark, waits for the migration's end (SETSLOT NODE); then every job is
 * done, once, and no PEL is left. */
static void
test_ask_mid_migration(void **state)
{
	struct router r = {0};
	struct check k = {.r = &r, .prefix = "ask", .shards = SHARDS, .jobs = ASK_JOBS, .id_pre = "ak"};
	char sp[64], key[512];
	int prim[3];
	struct h_daemon w;

	(void)state;
	router_refresh(&r);
	decide_range(&r, &k, 0, ASK_JOBS);
	unsigned shard = spec_shard("ak-00000");
	snprintf(sp, sizeof sp, "{ask:%u}", shard);
	unsigned slot = cluster_key_slot(sp, strlen(sp));
	snprintf(key, sizeof key, "%s:jobs", sp);
	redisContext *sc = route(&r, key);
	const struct cluster_node *o = cluster_map_owner(r.map, slot);
	assert_non_null(sc);
	assert_non_null(o);
	const struct node *src = node_by_port(o->port), *dst = NULL;
	primaries(&r, prim);
	for (int i = 0; i < 3 && dst == NULL; i++)
		if (prim[i] != src->port)
			dst = node_by_port(prim[i]);
	assert_non_null(dst);
	redisContext *dc = connect_port(dst->port);
	assert_non_null(dc);

	/* The keys that exist on a shard any worker has run on: the audit
	 * stream and the liveness keys the heartbeat and claim scripts name
	 * (R11), with fields neither reads. Not P:scheduled, P:dead nor
	 * P:notify (issue 27 item 5): no script may name them while they do
	 * not exist, nor a record's P:final mark before it is terminal. */
	freeReplyObject(cmd_ok(sc, "XADD", redisCommand(sc, "XADD %s:audit * itest ask", sp)));
	freeReplyObject(cmd_ok(sc, "HSET", redisCommand(sc, "HSET %s:consumers itest ask", sp)));
	freeReplyObject(cmd_ok(sc, "HSET", redisCommand(sc, "HSET %s:clock itest ask", sp)));
	freeReplyObject(cmd_ok(dc, "IMPORTING", redisCommand(dc, "CLUSTER SETSLOT %u IMPORTING %s",
	    slot, src->id)));
	freeReplyObject(cmd_ok(sc, "MIGRATING", redisCommand(sc, "CLUSTER SETSLOT %u MIGRATING %s",
	    slot, dst->id)));
	redisReply *keys = cmd_ok(sc, "GETKEYSINSLOT", redisCommand(sc,
	    "CLUSTER GETKEYSINSLOT %u 10000", slot));
	assert_true(keys->elements > 0);
	for (size_t i = 0; i < keys->elements; i++)
		freeReplyObject(cmd_ok(sc, "MIGRATE", redisCommand(sc, "MIGRATE 127.0.0.1 %d %s 0 5000",
		    dst->port, keys->element[i]->str)));
	printf("    slot %u (%s) mid-migration :%d -> :%d, %zu keys moved\n", slot, sp, src->port,
	    dst->port, keys->elements);
	freeReplyObject(keys);

	char *ini = worker_ini("a1", "ask", 1, 16);
	assert_int_equal(h_daemon_start(&w, ini), 0);
	free(ini);
	k.ask_dst = dc;
	k.ask_shard = shard;
	/* Mid-migration the moved shard's entries are read and loaded through
	 * the ASK, and every call step names only keys that exist (issue 27
	 * item 5): each of them is called while the slot still migrates. Only
	 * a write that creates a key -- a record's P:final mark with its
	 * terminal state, the shard's first dead letter -- waits for the
	 * migration's end (-TRYAGAIN, retried: R17, no attempt spent). The
	 * other shards' jobs run meanwhile. */
	int moved_jobs = 0;
	for (int i = 0; i < ASK_JOBS; i++) {
		char id[32];
		snprintf(id, sizeof id, "ak-%05d", i);
		moved_jobs += spec_shard(id) == shard;
	}
	struct others_wait ow = {&k, ASK_JOBS - moved_jobs};
	if (h_wait_until(others_terminal, &ow, 30000) != 0)
		fail_msg("mid-migration: %d of %d jobs terminal, %d held", k.terminal, ASK_JOBS,
		    moved_jobs);
	assert_int_equal(h_daemon_wait_log(&w, "redis.ask", 30000), 0);
	/* a stream entry with no id, into the moving shard (on the importing
	 * node: its stream moved there) */
	freeReplyObject(cmd_ok(dc, "ASKING", redisCommand(dc, "ASKING")));
	freeReplyObject(cmd_ok(dc, "XADD", redisCommand(dc, "XADD %s:jobs * itest no-id", sp)));
	/* and the real decider, into the moving shard: its record and entry
	 * land on the importing node (it follows -ASK, and writes the new
	 * hash by a call naming it alone when the one-step write is refused
	 * with -TRYAGAIN) */
	char ctl_id[32];
	for (int i = 0;; i++) {
		snprintf(ctl_id, sizeof ctl_id, "ac-%05d", i);
		if (spec_shard(ctl_id) == shard)
			break;
	}
	ini = worker_ini("a1", "ask", 1, 16);
	char *ctl_ini = h_write_file("ask-ctl.ini", ini);
	free(ini);
	assert_non_null(ctl_ini);
	char *argv[] = {(char *)h_bin("warrantctl"), "-c", ctl_ini, "decide", "--on-behalf-of",
	    "operator:4417", "--action", "gate.open", "--resource", "north/1", "--basis",
	    "role:canal-operator", "--expires", "+1h", "--id", ctl_id, NULL};
	char *out = NULL;
	int rc = h_run(argv, 20000, &out);
	if (rc != 0)
		fail_msg("warrantctl decide mid-migration: %d %s", rc, out ? out : "");
	free(out);
	free(ctl_ini);
	struct moved_calls mc = {"ak-", ASK_JOBS, shard, 0};
	if (h_wait_until(moved_called, &mc, 30000) != 0)
		fail_msg("mid-migration: %d of the moving shard's %d jobs called", mc.called,
		    moved_jobs);
	struct id_called ic = {ctl_id};
	if (h_wait_until(id_called, &ic, 30000) != 0)
		fail_msg("mid-migration: %s (warrantctl decide) not called", ctl_id);
	all_terminal(&k);
	assert_true(k.terminal >= ASK_JOBS - moved_jobs);	/* none lost */

	/* the migration ends: the slot is the importing node's */
	k.ask_dst = NULL;
	for (int i = 0; i < NNODES; i++) {
		if (nodes[i].pid <= 0 || (nodes[i].port != src->port && nodes[i].port != dst->port))
			continue;
		redisContext *c = connect_port(nodes[i].port);
		assert_non_null(c);
		freeReplyObject(cmd_ok(c, "NODE", redisCommand(c, "CLUSTER SETSLOT %u NODE %s", slot,
		    dst->id)));
		redisFree(c);
	}
	struct promoted moved = {&r, slot, src->port};
	assert_int_equal(h_wait_until(slot_moved, &moved, WAIT_MS), 0);
	if (h_wait_until(all_terminal, &k, WAIT_MS) != 0) {
		diagnose(&k);
		fail_msg("%d of %d jobs terminal", k.terminal, ASK_JOBS);
	}
	assert_int_equal(k.done, ASK_JOBS);
	assert_int_equal(pel_total(&k), 0);
	/* a migration loses nothing: no failover, so nothing may run twice */
	assert_int_equal(h_assert_each_once(&target, "ak-", ASK_JOBS, 0), 0);
	assert_int_equal(h_count_calls(&target, ctl_id), 1);
	snprintf(key, sizeof key, "%s:decision:%s", sp, ctl_id);
	h_wait_hash_field(dc, key, "state", "done", WAIT_MS);
	/* the entry with no id is a dead letter of its shard, now on dst */
	snprintf(key, sizeof key, "%s:dead", sp);
	assert_int_equal(h_stream_count(dc, key, "reason", "no-id"), 1);
	assert_true(h_daemon_stop_clean(&w));
	redisFree(dc);
	router_close(&r);
}

static void
test_shards_reshard_failover(void **state)
{
	struct router r = {0};
	char prefix[32], ids[CTL_JOBS][32];
	unsigned mslot = 0;
	int from_port = 0, prim[3];
	struct h_daemon w[NWORKERS];

	(void)state;
	router_refresh(&r);
	pick_prefix(&r, prefix, sizeof prefix, &mslot, &from_port);
	struct check k = {.r = &r, .prefix = prefix, .shards = SHARDS, .jobs = JOBS, .id_pre = "sh"};
	decide_range(&r, &k, CTL_JOBS, JOBS);
	wait_replicated(&r);

	char *ini = worker_ini("w1", prefix, 1, 16);
	/* the real decider: its records land where warrantd(7)'s function says */
	char *ctl_ini = h_write_file("ctl.ini", ini);
	assert_non_null(ctl_ini);
	for (int i = 0; i < CTL_JOBS; i++) {
		snprintf(ids[i], sizeof ids[i], "sh-%05d", i);
		char *argv[] = {(char *)h_bin("warrantctl"), "-c", ctl_ini, "decide",
		    "--on-behalf-of", "operator:4417", "--action", "gate.open", "--resource",
		    "north/1", "--basis", "role:canal-operator", "--expires", "+1h", "--id", ids[i],
		    NULL};
		char *out = NULL;
		int rc = h_run(argv, 20000, &out);
		if (rc != 0)
			fail_msg("warrantctl decide: %d %s", rc, out ? out : "");
		free(out);
		char key[512];
		snprintf(key, sizeof key, "{%s:%u}:decision:%s", prefix, spec_shard(ids[i]), ids[i]);
		redisContext *c = route(&r, key);
		assert_non_null(c);
		char *st = h_hget(c, key, "state");
		if (st == NULL)
			fail_msg("%s: not where warrantd(7)'s shard function puts it", key);
		free(st);
	}
	free(ctl_ini);
	wait_replicated(&r);

	/* slow enough that the reshard and the kill land mid-run: 3 workers x
	 * 16 calls of 40 ms in flight, about 1,200 jobs/s at most */
	assert_int_equal(h_fake_script(&target, "{\"default\": {\"delay_ms\": 40}}"), 0);
	long long base = target_stat("distinct_keys");	/* test_tagged_prefix's */
	long long t0 = h_now_ms();
	for (int i = 0; i < NWORKERS; i++) {
		char name[16];
		snprintf(name, sizeof name, "w%d", i + 1);
		char *wi = worker_ini(name, prefix, 1, 16);
		assert_int_equal(h_daemon_start(&w[i], wi), 0);
		free(wi);
	}
	free(ini);

	/* a quarter in: the slot of one shard moves to another primary */
	primaries(&r, prim);
	const struct node *src = node_by_port(from_port), *dst = NULL, *victim = NULL;
	for (int i = 0; i < 3; i++)
		if (prim[i] != from_port && dst == NULL)
			dst = node_by_port(prim[i]);
		else if (prim[i] != from_port)
			victim = node_by_port(prim[i]);
	assert_non_null(src);
	assert_non_null(dst);
	assert_non_null(victim);
	long long quarter = base + JOBS / 4, half = base + JOBS / 2;
	assert_int_equal(h_wait_until(target_reached, &quarter, WAIT_MS), 0);
	reshard(src, dst, slots_up_to(&r, mslot));
	struct promoted moved = {&r, mslot, from_port};
	assert_int_equal(h_wait_until(slot_moved, &moved, WAIT_MS), 0);
	printf("    slot %u (a shard of %s) moved from :%d to :%d after %lld calls\n", mslot,
	    prefix, src->port, dst->port, target_stat("total"));

	/* half way: a third primary dies; its replica takes over */
	assert_int_equal(h_wait_until(target_reached, &half, WAIT_MS), 0);
	unsigned vslot = 0;
	while (vslot < CLUSTER_SLOTS && (cluster_map_owner(r.map, vslot) == NULL ||
	    cluster_map_owner(r.map, vslot)->port != victim->port))
		vslot++;
	assert_true(vslot < CLUSTER_SLOTS);
	assert_int_equal(kill(victim->pid, SIGKILL), 0);
	assert_true(h_wait_exit(victim->pid, 5000, NULL) == 0);
	((struct node *)victim)->pid = 0;
	long long killed_at = h_now_ms();
	struct promoted pr = {&r, vslot, victim->port};
	assert_int_equal(h_wait_until(slot_moved, &pr, WAIT_MS), 0);
	printf("    primary :%d SIGKILLed after %lld calls; its replica took its slots after "
	    "%lld ms\n", victim->port, target_stat("total"), h_now_ms() - killed_at);

	long long all = base + JOBS;
	if (h_wait_until(target_reached, &all, WAIT_MS) != 0) {
		diagnose(&k);
		fail_msg("the target saw %lld of %d recordIds", target_stat("distinct_keys") - base,
		    JOBS);
	}
	if (h_wait_until(all_terminal, &k, WAIT_MS) != 0) {
		diagnose(&k);
		fail_msg("%d of %d jobs terminal", k.terminal, JOBS);
	}
	long long took = h_now_ms() - t0;
	assert_int_equal(pel_total(&k), 0);
	printf("    %d jobs over %d shards, 3 workers: %d done, %d terminal, %lld distinct "
	    "recordIds at the target, %lld duplicate executions, %lld ms\n", JOBS, SHARDS,
	    k.done, k.terminal, target_stat("distinct_keys") - base,
	    target_stat("duplicates"), took);
	/* every record's deadline is an hour away and the target answers 200:
	 * anything but done is a defect */
	assert_int_equal(k.done, JOBS);
	h_assert_each_once(&target, "sh-", JOBS, killed_at);
	int seen_moved = 0;
	for (int i = 0; i < NWORKERS; i++) {
		seen_moved |= h_daemon_log_has(&w[i], "MOVED");
		assert_true(h_daemon_stop_clean(&w[i]));
	}
	assert_true(seen_moved);	/* the reshard was noticed by a redirect */
	router_close(&r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tagged_prefix),
		/* before the reshard: the slot it leaves with another primary
		 * must not matter to the reshard's choice (slots_up_to) */
		cmocka_unit_test(test_ask_mid_migration),
		cmocka_unit_test(test_shards_reshard_failover),
	};
	char *cli = h_which("redis-cli");

	if (cli == NULL) {
		/* every test needs it: the whole program skips (tests/run.sh) */
		printf("itest_cluster: skip: redis-cli is not installed (Debian redis-tools)\n");
		return H_SKIP_STATUS;
	}
	free(cli);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
