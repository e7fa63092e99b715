/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * warrantctl status and metrics: group lag, pending entries, consumers, queue
 * sizes, as text, JSON or Prometheus gauges (warrantd(7) §11).
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "base/wtime.h"
#include "conf/config.h"
#include "core/lag.h"
#include "ctl/clir.h"
#include "ctl/cmds.h"
#include "ctl/ctl.h"

/* ---- status ---- */

static int
length_of(struct cli *c, const char *cmd, const char *key, json_t *obj, const char *name)
{
	redisReply *r;
	long long n = 0;
	int rc = clir_run(c, &r, cmd, key, (char *)NULL);

	if (rc == 0 && sreply_integer(sreply_of(r), &n) != 0)
		n = 0;
	if (rc == 0)
		json_object_set_new(obj, name, json_integer(n));
	freeReplyObject(r);
	return rc;
}

/* The group's counters as Redis gives them: "redisLag" is XINFO GROUPS'
 * `lag`, which Redis 7.0 gets wrong after a restart (core/lag.h); "lag" is
 * counted from ids by lag_field. */
static void
group_fields(json_t *st, const struct sreply *g)
{
	const struct sreply *v;

	if (g == NULL) {
		/* The group will be created at id 0 (R14): all of it is lag. */
		json_object_set_new(st, "entriesRead", json_integer(0));
		json_object_set_new(st, "lastDeliveredId", json_string("0-0"));
		return;
	}
	v = sreply_field_reply(g, "lag");
	json_object_set_new(st, "redisLag", v ? cli_reply_json(v) : json_null());
	v = sreply_field_reply(g, "entries-read");
	json_object_set_new(st, "entriesRead", v ? cli_reply_json(v) : json_null());
	v = sreply_field_reply(g, "last-delivered-id");
	json_object_set_new(st, "lastDeliveredId", v ? cli_reply_json(v) : json_null());
}

/* Issue 38 item 2: the entries after the group's last-delivered id (XLEN
 * when none was delivered), up to LAG_CAP; "lagAtLeast" when there may be
 * more. */
static int
lag_field(struct cli *c, json_t *st)
{
	const char *last = json_string_value(json_object_get(st, "lastDeliveredId"));
	char start[LAG_START_MAX];
	long long count = 0;
	size_t n = 0;
	redisReply *r;
	int rc, q = lag_query_for(last, start);

	if (q < 0) {	/* not an id: nothing to count from */
		json_object_set_new(st, "lag", json_null());
		return 0;
	}
	if (q == LAG_XLEN)
		rc = clir_run(c, &r, "XLEN", c->keys.jobs, (char *)NULL);
	else
		rc = clir_run(c, &r, "XRANGE", c->keys.jobs, start, "+", "COUNT", LAG_CAP_S,
		    (char *)NULL);
	if (rc != 0)
		return rc;
	if (q == LAG_XLEN && sreply_integer(sreply_of(r), &count) != 0)
		count = 0;
	if (q == LAG_XRANGE && sreply_array_len(sreply_of(r), &n) == 0)
		count = (long long)n;
	freeReplyObject(r);
	struct lag l = lag_from_count((enum lag_query)q, count);
	json_object_set_new(st, "lag", json_integer(l.n));
	if (l.at_least)
		json_object_set_new(st, "lagAtLeast", json_true());
	return 0;
}

/* PEL depth and its oldest entry (XPENDING summary, then - + 1). */
static int
pending_fields(struct cli *c, json_t *st, int have_group)
{
	const char *group = c->cfg->redis.group;
	long long count = 0;
	redisReply *r;
	int rc;

	if (have_group) {
		if ((rc = clir_run(c, &r, "XPENDING", c->keys.jobs, group, (char *)NULL)) != 0)
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
	if ((rc = clir_run(c, &r, "XPENDING", c->keys.jobs, group, "-", "+", "1", (char *)NULL)) != 0)
		return rc;
	const struct sreply *e = sreply_element(sreply_of(r), 0);
	size_t n = 0;
	int ok = sreply_array_len(e, &n) == 0 && n >= 4;
	json_object_set_new(st, "oldestPendingId", ok ? cli_reply_json(sreply_element(e, 0))
	    : json_null());
	json_object_set_new(st, "oldestPendingIdleMs", ok ? cli_reply_json(sreply_element(e, 2))
	    : json_null());
	json_object_set_new(st, "oldestPendingDeliveries", ok ? cli_reply_json(sreply_element(e, 3))
	    : json_null());
	freeReplyObject(r);
	return 0;
}

/* §13: the oldest entry not yet delivered to the group (the first after
 * its last-delivered-id; the worker never trims one), whose age is the
 * queue's latency; null when every entry was delivered. */
static int
undelivered_field(struct cli *c, json_t *st)
{
	const char *last = json_string_value(json_object_get(st, "lastDeliveredId"));
	char from[64];
	redisReply *r;
	int rc;

	snprintf(from, sizeof from, "(%s", last ? last : "0-0");
	if ((rc = clir_run(c, &r, "XRANGE", c->keys.jobs, from, "+", "COUNT", "1", (char *)NULL)) != 0)
		return rc;
	const struct sreply *id = sreply_element(sreply_element(sreply_of(r), 0), 0);
	json_object_set_new(st, "oldestUndelivered", id ? cli_reply_json(id) : json_null());
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
group_consumers(struct cli *c, json_t *consumers)
{
	redisReply *r;
	const struct sreply *v;
	size_t n = 0;
	int rc = clir_run(c, &r, "XINFO", "CONSUMERS", c->keys.jobs, c->cfg->redis.group,
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
			json_object_set_new(o, "pending", cli_reply_json(v));
		if ((v = sreply_field_reply(info, "idle")) != NULL)
			json_object_set_new(o, "idleMs", cli_reply_json(v));
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
add_heartbeat(struct cli *c, json_t *o, const char *key)
{
	redisReply *r;
	size_t n = 0;
	int rc = clir_run(c, &r, "HGETALL", key, (char *)NULL);

	if (rc != 0)
		return rc;
	int is_hash = sreply_array_len(sreply_of(r), &n) == 0;
	json_object_set_new(o, "alive", json_boolean(is_hash && n > 0));
	if (is_hash)
		cli_add_flat(o, sreply_of(r), NULL, NULL);
	/* how long ago it beat, by this host's clock (the table's column) */
	const char *at = json_string_value(json_object_get(o, "heartbeatAt"));
	int64_t at_ms;
	if (at != NULL && wtime_parse_rfc3339(at, &at_ms) == 0)
		json_object_set_new(o, "heartbeatAgeMs", json_integer(wtime_now_ms() > at_ms ?
		    wtime_now_ms() - at_ms : 0));
	freeReplyObject(r);
	return 0;
}

/* Consumers with a heartbeat that have not read yet are not in XINFO
 * CONSUMERS: SCAN finds them. */
static int
heartbeat_consumers(struct cli *c, json_t *consumers)
{
	char pattern[2 * STORE_KEY_MAX + 16], esc[2 * STORE_KEY_MAX], cursor[32] = "0";
	size_t plen = strlen(c->prefix) + strlen(":consumer:");
	redisReply *r;
	int rc;

	glob_escape(esc, sizeof esc, c->prefix);
	snprintf(pattern, sizeof pattern, "%s:consumer:*", esc);
	do {
		if ((rc = clir_run(c, &r, "SCAN", cursor, "MATCH", pattern, "COUNT", PAGE_S,
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

/* Issue 38 item 1: who holds the name's claim (P:owner:<name>,
 * lua/owner.lua) as "owner"; "collision" when the heartbeat was written
 * by another instance than the claim's: two processes under one name. */
static int
add_owner(struct cli *c, json_t *o, const char *name)
{
	char key[2 * STORE_KEY_MAX];
	redisReply *r;

	snprintf(key, sizeof key, "%s:owner:%s", c->prefix, name);
	int rc = clir_run(c, &r, "GET", key, (char *)NULL);
	if (rc != 0)
		return rc;
	const char *v = sreply_string(sreply_of(r));
	const char *beat = json_string_value(json_object_get(o, "instance"));
	if (v != NULL) {
		size_t len = strcspn(v, " ");
		json_object_set_new(o, "owner", json_stringn(v, len));
		json_object_set_new(o, "collision", json_boolean(beat != NULL &&
		    (strlen(beat) != len || strncmp(beat, v, len) != 0)));
	} else {
		json_object_set_new(o, "owner", json_null());
		json_object_set_new(o, "collision", json_false());
	}
	freeReplyObject(r);
	return 0;
}

static int
consumer_fields(struct cli *c, json_t *st, int have_group)
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
		if (rc == 0)
			rc = add_owner(c, o, name);
	}
	return rc;
}

/* §13: P:paused as "paused": {name: who and when}; "*" is the whole
 * queue. Shard 0's only, where pause writes them for every worker (another
 * shard's slot may be on another cluster node). */
static int
paused_fields(struct cli *c, json_t *st)
{
	redisReply *r;
	json_t *o;

	if (c->shard != 0)
		return 0;
	if ((o = json_object()) == NULL)
		return EX_REFUSED;
	int rc = clir_run(c, &r, "HGETALL", c->keys.paused, (char *)NULL);
	if (rc != 0) {
		json_decref(o);
		return rc;
	}
	cli_add_flat(o, sreply_of(r), NULL, NULL);
	freeReplyObject(r);
	json_object_set_new(st, "paused", o);
	return 0;
}

static int
status_json(struct cli *c, json_t *st)
{
	redisReply *groups;
	const struct sreply *g;
	int rc;

	json_object_set_new(st, "stream", json_string(c->keys.jobs));
	json_object_set_new(st, "group", json_string(c->cfg->redis.group));
	if ((rc = clir_find_group(c, &groups, &g)) != 0 ||
	    (rc = length_of(c, "XLEN", c->keys.jobs, st, "streamLength")) != 0)
		goto done;
	json_object_set_new(st, "groupExists", json_boolean(g != NULL));
	if (g == NULL)
		json_object_set_new(st, "note", json_string("no group yet: the first warrantd "
		    "creates it at id 0"));
	group_fields(st, g);
	if ((rc = lag_field(c, st)) != 0 ||
	    (rc = pending_fields(c, st, g != NULL)) != 0 ||
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

/* One shard's status, printed: a human block, or a JSON object (into all,
 * when there are several). */
static int
status_of_shard(struct cli *c, unsigned i, json_t *all, size_t *alive)
{
	json_t *st = json_object();
	int rc;

	if (st == NULL)
		return EX_REFUSED;
	if ((rc = cli_use_shard(c, i)) == 0 && (rc = clir_connect(c)) == 0 &&
	    (rc = status_json(c, st)) == 0) {
		*alive += ctl_status_alive(st);
		if (all != NULL)
			return json_array_append_new(all, st) == 0 ? 0 : EX_REFUSED;
		if (c->json)
			rc = cli_print_json(st);
		else
			ctl_print_status(stdout, st);
	}
	json_decref(st);
	return rc;
}

int
cmd_status(struct cli *c, int argc, char **argv)
{
	unsigned first, end;
	json_t *all = NULL;
	size_t alive = 0;
	int rc = cli_parse_simple(c, argc, argv, 1, 0, NULL);

	if (rc == 1) {
		fputs(cli_usage_text, stdout);
		return 0;
	}
	if (rc != 0 || (rc = cli_load_config(c)) != 0)
		return rc;
	cli_shard_range(c, &first, &end);
	/* several shards in JSON: one array of their objects */
	if (c->json && end - first > 1 && (all = json_array()) == NULL)
		return EX_REFUSED;
	for (unsigned i = first; rc == 0 && i < end; i++) {
		if (i > first && all == NULL && !c->json)
			putchar('\n');
		rc = status_of_shard(c, i, all, &alive);
	}
	if (rc == 0 && all != NULL)
		rc = cli_print_json(all);
	json_decref(all);
	/* the verdict, for scripts and people: nobody is working the queue */
	if (rc == 0 && alive == 0) {
		cli_say("no consumer has a live heartbeat");
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
		cli_say("metrics: %s: name too long", path);
		return EX_USAGE;
	}
	if ((fd = mkstemp(tmp)) < 0 || fchmod(fd, 0644) < 0 ||
	    (f = fdopen(fd, "w")) == NULL) {
		cli_say("metrics: cannot write %s: %s", tmp, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		return EX_REFUSED;
	}
	int rc = ctl_queue_metrics(f, st, wtime_now_ms());
	if (rc != 0 || fflush(f) != 0 || fsync(fileno(f)) != 0 || ferror(f)) {
		cli_say("metrics: cannot write %s: %s", tmp, rc ? "out of memory" : strerror(errno));
		fclose(f);
		unlink(tmp);
		return EX_REFUSED;
	}
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		cli_say("metrics: cannot write %s: %s", path, strerror(errno));
		unlink(tmp);
		return EX_REFUSED;
	}
	return 0;
}

int
cmd_metrics(struct cli *c, int argc, char **argv)
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
			fputs(cli_usage_text, stdout);
			return 0;
		}
		if (ch == 'c')
			c->cfg_path = optarg;
		else if (ch == 'o')
			output = optarg;
		else if (ch == OPT_SHARD && (rc = cli_shard_option(c, optarg)) != 0)
			return rc;
		else if (ch != OPT_SHARD)
			return cli_unknown_option(argv[0], argv);
	}
	if (optind != argc)
		return cli_usage_error("metrics: unexpected argument '%s'", argv[optind]);
	if ((rc = cli_load_config(c)) != 0)
		return rc;
	/* one textfile per shard: the gauges' HELP and TYPE lines once a file */
	if (c->cfg->redis.shards > 0 && c->shard_opt < 0)
		return cli_usage_error("metrics: with [redis] shards, --shard N (one file per shard)");
	if ((rc = clir_connect(c)) != 0)
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

