/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * warrantctl doctor: what a deployment needs, end to end, one line per check
 * (warrantd(7) §11).
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include <curl/curl.h>

#include "auth/authz.h"
#include "auth/oauth.h"
#include "base/wtime.h"
#include "conf/config.h"
#include "ctl/clir.h"
#include "ctl/cmds.h"

/* ---- doctor ---- */

/* What a deployment needs, checked end to end: one line per check, "ok",
 * "INFO: advice", "WARN: why" or "FAIL: why"; any FAIL makes the exit 1.
 * The library's log lines and warrantctl's own messages are captured
 * (stderr into a temp file) and the last one said during a check ends its
 * line: nothing else is mixed into the output (issue 38 item 3). */
struct doctor {
	int failed;
	int version_done;
	struct clir *admin;	/* the first connection ACL DRYRUN worked on */
	FILE *cap;		/* stderr while checking; NULL: not captured */
	int saved_stderr;
	long cap_off;		/* what doctor_line has read of cap */
};

enum doctor_level { D_OK, D_INFO, D_WARN, D_FAIL };

static void
doctor_capture(struct doctor *d)
{
	d->saved_stderr = -1;
	fflush(stderr);
	if ((d->cap = tmpfile()) == NULL)
		return;
	if ((d->saved_stderr = dup(STDERR_FILENO)) < 0 ||
	    dup2(fileno(d->cap), STDERR_FILENO) < 0) {
		if (d->saved_stderr >= 0)
			close(d->saved_stderr);
		d->saved_stderr = -1;
		fclose(d->cap);
		d->cap = NULL;
	}
}

static void
doctor_release(struct doctor *d)
{
	if (d->cap == NULL)
		return;
	fflush(stderr);
	dup2(d->saved_stderr, STDERR_FILENO);
	close(d->saved_stderr);
	fclose(d->cap);
	d->cap = NULL;
}

/* The last line written to stderr since the previous check, without its
 * "ts=... " stamp, into buf ("" when none). */
static void
doctor_said(struct doctor *d, char *buf, size_t n)
{
	char line[512];

	buf[0] = '\0';
	if (d->cap == NULL)
		return;
	fflush(stderr);
	if (fseek(d->cap, d->cap_off, SEEK_SET) != 0)
		return;
	while (fgets(line, sizeof line, d->cap) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		const char *from = strstr(line, "level=");
		if (line[0] != '\0')
			snprintf(buf, n, "%s", from != NULL ? from : line);
	}
	d->cap_off = ftell(d->cap);
	fseek(d->cap, 0, SEEK_END);
}

static void doctor_say(struct doctor *d, enum doctor_level lv, const char *what,
		       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void
doctor_say(struct doctor *d, enum doctor_level lv, const char *what, const char *fmt, ...)
{
	static const char *const head[] = {"ok", "INFO: ", "WARN: ", "FAIL: "};
	char why[1100] = "", said[512];	/* room for both */
	va_list ap;

	if (fmt != NULL) {
		va_start(ap, fmt);
		vsnprintf(why, sizeof why, fmt, ap);
		va_end(ap);
	}
	doctor_said(d, said, sizeof said);
	if (lv != D_OK && said[0] != '\0') {	/* the cause, as it was said */
		size_t len = strlen(why);
		snprintf(why + len, sizeof why - len, "%s[%s]", len ? " " : "", said);
	}
	for (char *p = why; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	if (lv == D_FAIL)
		d->failed = 1;
	printf("%s: %s%s%s\n", what, head[lv], lv == D_OK && *why ? " " : "", why);
	fflush(stdout);
}

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
	doctor_say(d, ok ? D_OK : D_FAIL, what, fmt != NULL ? "%s" : NULL, why);
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
	"HSET {clock} last 1", "TIME", "FCALL warrantd_transition 0",
	"GET {owner}", "SET {owner} x PX 1000", "PTTL {owner}", "DEL {owner}",
	"PEXPIRE {consumer} 0", "FCALL warrantd_owner 0",
	"FCALL_RO warrantd_version 0", NULL,
};
static const char *const needs_operator[] = {
	"XRANGE {dead} - +", "XREVRANGE {audit} + -", "XPENDING {jobs} {group}",
	"XINFO GROUPS {jobs}", "HGETALL {decision}", "ZRANGE {scheduled} 0 -1",
	"HSET {decision} state queued", "PEXPIRE {decision} 1000", "PERSIST {decision}",
	"DEL {final}", "SET {final} cancelled PX 1000", "XADD {jobs} * id x",
	"XDEL {dead} 0-1", "XADD {notify} * id x", "ZREM {scheduled} x",
	"FCALL warrantd_cancel 0", "FCALL warrantd_requeue 0", NULL,
};
static const char *const needs_monitor[] = {
	"XINFO GROUPS {jobs}", "XPENDING {jobs} {group}", "XRANGE {dead} - +",
	"XREVRANGE {audit} + -", "HGETALL {decision}", "ZRANGE {scheduled} 0 -1",
	"XLEN {notify}", "ZCARD {scheduled}",
	/* and everything else `status` and `metrics` read (issue 38 item 3) */
	"XLEN {jobs}", "XLEN {dead}", "XRANGE {jobs} - + COUNT 1", "XPENDING {jobs} {group} - + 1",
	"XINFO CONSUMERS {jobs} {group}", "SCAN 0", "HGETALL {consumer}", "HGETALL {paused}",
	"GET {owner}", NULL,
};
static const char *const needs_decider[] = {
	"HSET {decision} record r", "XADD {jobs} * id x", "ZADD {scheduled} 1 x",
	"FCALL warrantd_decide 0", NULL,
};

/* One word of a needs_* line: a key's name for "{jobs}" and the like. */
static const char *
doctor_word(const struct cli *c, const char *w, char *buf, size_t n)
{
	if (strcmp(w, "{jobs}") == 0) return c->keys.jobs;
	if (strcmp(w, "{dead}") == 0) return c->keys.dead;
	if (strcmp(w, "{audit}") == 0) return c->keys.audit;
	if (strcmp(w, "{notify}") == 0) return c->keys.notify;
	if (strcmp(w, "{scheduled}") == 0) return c->keys.scheduled;
	if (strcmp(w, "{consumers}") == 0) return c->keys.consumers;
	if (strcmp(w, "{clock}") == 0) return c->keys.clock;
	if (strcmp(w, "{owner}") == 0) return c->keys.owner;
	if (strcmp(w, "{consumer}") == 0) return c->keys.consumer;
	if (strcmp(w, "{paused}") == 0) return c->keys.paused;
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
doctor_dryrun(struct cli *c, const char *user, const char *const *needs, char *refused,
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
		redisReply *r = clir_argv(c, argc, argv);
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
			size_t len = strlen(refused), cl = strlen(cmd);
			const char *seen = refused;	/* each command named once */
			while ((seen = strstr(seen, cmd)) != NULL && ((seen != refused &&
			    seen[-1] != ' ') || (seen[cl] != ',' && seen[cl] != '\0')))
				seen += cl;
			if (seen == NULL)
				snprintf(refused + len, n - len, "%s%s", len ? ", " : "", cmd);
		}
		freeReplyObject(r);
	}
	return 0;
}

/* "7.0.15" from INFO server, or HELLO's; NULL when both are refused. */
static int
doctor_version(struct cli *c, char *out, size_t n)
{
	const char *info[] = {"INFO", "server"}, *hello[] = {"HELLO", "2"};
	redisReply *r = clir_argv(c, 2, info);
	const char *s;

	out[0] = '\0';
	if (r != NULL && r->type == REDIS_REPLY_STRING &&
	    (s = strstr(r->str, "redis_version:")) != NULL) {
		snprintf(out, n, "%.*s", (int)strcspn(s + 14, "\r\n"), s + 14);
	} else {
		freeReplyObject(r);
		r = clir_argv(c, 2, hello);
		const char *v = r ? sreply_field(sreply_of(r), "version") : NULL;
		if (v != NULL)
			snprintf(out, n, "%s", v);
	}
	freeReplyObject(r);
	return out[0] ? 0 : -1;
}

/* One Redis user: AUTH, the version (once), the commands its role needs. */
static void
doctor_user(struct cli *c, struct doctor *d, const char *role, const char *const *needs)
{
	char what[96], ver[64], refused[512];
	const char *user;

	clir_drop(c);
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
	if (clir_connect(c) != 0) {
		doctor_line(d, 0, what, "cannot connect or log in");
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
		struct clir *own = c->redis;
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

/* A token as the worker gets it: [oauth]'s (sc NULL), or an action's own
 * scope, audience and resource (`label` names it). */
static void
doctor_idp(const struct cli *c, struct doctor *d, struct ev_loop *loop,
	   struct http_client *http, const struct oauth_scope *sc, const char *label)
{
	char err[256], what[300];
	int have = 0;
	struct oauth *o = oauth_new_scoped(loop, http, c->cfg, sc, err, sizeof err);

	snprintf(what, sizeof what, "idp token from %s%s%s", c->cfg->oauth.token_url,
	    label ? " for " : "", label ? label : "");
	if (o == NULL) {
		doctor_line(d, 0, what, "%s", err);
		return;
	}
	oauth_start(o);
	for (int64_t end = wtime_mono_ms() + c->cfg->oauth.timeout_ms + 2000;
	    wtime_mono_ms() < end;) {
		int done = 0;
		cli_run_loop(loop, &done, 100);
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
		doctor_line(d, 0, what, "no token (%s)", oauth_state_name(o));
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
doctor_pdp(const struct cli *c, struct doctor *d, struct ev_loop *loop,
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
		cli_run_loop(loop, &dc.done, c->cfg->authz.timeout_ms + 2000);
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

/* "scheme://host:port/" of url (the default port filled in) into buf; 0 or
 * -1. Placeholders are in the path and query only (R7). */
static int
doctor_origin(const char *url, char *buf, size_t n)
{
	char *scheme = NULL, *host = NULL, *port = NULL;
	CURLU *u = curl_url();
	int rc = -1;

	if (u != NULL && curl_url_set(u, CURLUPART_URL, url, CURLU_ALLOW_SPACE) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK)
		rc = snprintf(buf, n, "%s://%s:%s/", scheme, host, port) < (int)n ? 0 : -1;
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	return rc;
}

/* What a call to url will do first: connect to its origin, and for https
 * the TLS handshake with the certificate checked as the worker checks it
 * (the system's CAs). One line, `what`. */
static void
doctor_connect(struct doctor *d, const char *what, const char *url, long timeout_ms)
{
	char origin[600], err[CURL_ERROR_SIZE] = "";
	CURL *e;

	if (doctor_origin(url, origin, sizeof origin) != 0) {
		doctor_line(d, 0, what, "cannot read the origin of %s", url);
		return;
	}
	if ((e = curl_easy_init()) == NULL) {
		doctor_line(d, 0, what, "out of memory");
		return;
	}
	curl_easy_setopt(e, CURLOPT_URL, origin);
	curl_easy_setopt(e, CURLOPT_CONNECT_ONLY, 1L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms > 0 ? timeout_ms : 10000L);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, err);
	CURLcode rc = curl_easy_perform(e);
	if (rc == CURLE_OK)
		doctor_line(d, 1, what, "(%s answers%s)", origin, strncmp(origin, "https:", 6) == 0 ?
		    ", TLS handshake and certificate ok" : "");
	else
		doctor_line(d, 0, what, "%s: %s", origin, err[0] ? err : curl_easy_strerror(rc));
	curl_easy_cleanup(e);
}

/* Each action's target, as its calls will need it. */
static void
doctor_actions(const struct cli *c, struct doctor *d)
{
	for (size_t i = 0; i < c->cfg->nactions; i++) {
		const struct cfg_action *a = &c->cfg->actions[i];
		char what[300];

		snprintf(what, sizeof what, "action %s target", a->name);
		doctor_connect(d, what, a->url, a->timeout_ms);
	}
}

/* A token for each scope the worker will ask for: [oauth]'s own, and each
 * action's narrowed one (token exchange is per job: not asked here). */
static void
doctor_tokens(const struct cli *c, struct doctor *d, struct ev_loop *loop,
	      struct http_client *http)
{
	doctor_idp(c, d, loop, http, NULL, NULL);
	for (size_t i = 0; i < c->cfg->nactions; i++) {
		const struct cfg_action *a = &c->cfg->actions[i];
		char label[200];
		if (a->auth != CFG_AUTH_OAUTH || a->token_exchange != CFG_TOKEN_WORKER ||
		    (a->scope == NULL && a->audience == NULL && a->resource == NULL))
			continue;
		const struct oauth_scope sc = {.scope = a->scope, .audience = a->audience,
		    .resource = a->resource};
		snprintf(label, sizeof label, "action %s", a->name);
		doctor_idp(c, d, loop, http, &sc, label);
	}
}

/* ---- the server's settings and the consumer's name ---- */

/* The value of `field` in an INFO text into buf; 0, or -1 when absent. */
static int
info_value(const char *info, const char *field, char *buf, size_t n)
{
	size_t len = strlen(field);

	for (const char *p = info; p != NULL && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 :
	    NULL)
		if (strncmp(p, field, len) == 0 && p[len] == ':') {
			snprintf(buf, n, "%.*s", (int)strcspn(p + len + 1, "\r\n"), p + len + 1);
			return 0;
		}
	return -1;
}

/* INFO of every section, on the connection that may (the admin's when
 * there is one); caller frees; NULL when refused. */
static redisReply *
doctor_info(struct cli *c, struct doctor *d)
{
	const char *argv[] = {"INFO", "everything"};
	struct clir *own = c->redis;
	redisReply *r = NULL;

	if (d->admin != NULL)
		c->redis = d->admin;
	if (c->redis != NULL)
		r = clir_argv(c, 2, argv);
	c->redis = own;
	if (r != NULL && r->type != REDIS_REPLY_STRING) {
		freeReplyObject(r);
		r = NULL;
	}
	return r;
}

/* appendonly (the PEL and the records survive a restart), maxmemory-policy
 * (anything but noeviction evicts records and PEL state), and the replicas
 * against [redis] wait_replicas (R19). */
static void
doctor_server(struct cli *c, struct doctor *d)
{
	char aof[16], policy[64], replicas[16], minrep[16];
	redisReply *r = doctor_info(c, d);

	if (r == NULL) {
		doctor_say(d, D_WARN, "redis settings", "INFO refused to every user: appendonly, "
		    "maxmemory-policy and replicas not checked");
		return;
	}
	if (info_value(r->str, "aof_enabled", aof, sizeof aof) != 0)
		doctor_say(d, D_WARN, "redis appendonly", "not in INFO");
	else if (strcmp(aof, "1") == 0)
		doctor_say(d, D_OK, "redis appendonly", "(yes)");
	else
		doctor_say(d, D_FAIL, "redis appendonly", "no: a restart loses the queue, the "
		    "PEL and every record's state (set appendonly yes)");
	if (info_value(r->str, "maxmemory_policy", policy, sizeof policy) != 0)
		doctor_say(d, D_WARN, "redis maxmemory-policy", "not in INFO");
	else if (strcmp(policy, "noeviction") == 0)
		doctor_say(d, D_OK, "redis maxmemory-policy", "(noeviction)");
	else
		doctor_say(d, D_FAIL, "redis maxmemory-policy", "%s: Redis may evict records and "
		    "PEL state when memory is full (set noeviction)", policy);
	long n = info_value(r->str, "connected_slaves", replicas, sizeof replicas) == 0 ?
	    strtol(replicas, NULL, 10) : 0;
	int min_set = info_value(r->str, "min_slaves_good_slaves", minrep, sizeof minrep) == 0;
	long wait = c->cfg->redis.wait_replicas;
	if (n > 0 && wait > 0)
		doctor_say(d, D_OK, "redis replicas", "(%ld connected, wait_replicas = %ld)", n,
		    wait);
	else if (n > 0)
		doctor_say(d, D_WARN, "redis replicas", "%ld connected and [redis] wait_replicas = "
		    "0: a failover loses the writes not yet copied%s", n, min_set ? " "
		    "(min-replicas-to-write does not close that)" : "");
	else
		doctor_say(d, D_INFO, "redis replicas", "none: a lost machine loses what was not "
		    "synced%s", min_set ? "; min-replicas-to-write is set and refuses every write "
		    "without one" : "");
	freeReplyObject(r);
}

/* P:owner:<name>'s value ("<instance> <ms>", lua/owner.lua) into buf, ""
 * when the name is not claimed or the claim cannot be read. */
static void
doctor_claim(struct cli *c, struct doctor *d, char *buf, size_t n)
{
	char key[2 * STORE_KEY_MAX];
	struct clir *own = c->redis;
	redisReply *r = NULL;

	buf[0] = '\0';
	snprintf(key, sizeof key, "%s:owner:%s", c->prefix, c->cfg->daemon.consumer);
	const char *argv[] = {"GET", key};
	if (d->admin != NULL)
		c->redis = d->admin;
	if (c->redis != NULL)
		r = clir_argv(c, 2, argv);
	c->redis = own;
	if (r != NULL && r->type == REDIS_REPLY_STRING)
		snprintf(buf, n, "%s", r->str);
	freeReplyObject(r);
}

/* warrantd(7) §2.1: this build's library on the Redis at hand (shard 0's
 * node): a missing one or another version is a worker that refuses to
 * start (exit 76). */
static void
doctor_functions(struct cli *c, struct doctor *d)
{
	const char *argv[] = {"FCALL_RO", "warrantd_version", "0"};
	struct clir *own = c->redis;
	redisReply *r = NULL;

	if (d->admin != NULL)
		c->redis = d->admin;
	if (c->redis != NULL)
		r = clir_argv(c, 3, argv);
	c->redis = own;
	const struct sreply *s = sreply_of(r);
	const char *err = r ? sreply_error_text(s) : "no connection";
	switch (r == NULL ? STORE_LIBRARY_UNKNOWN : store_library_check(err != NULL,
	    err != NULL ? err : sreply_string(s))) {
	case STORE_LIBRARY_OK:
		doctor_say(d, D_OK, "redis functions", "(library warrantd %s)", STORE_LIBRARY_VERSION);
		break;
	case STORE_LIBRARY_WRONG:
		doctor_say(d, D_FAIL, "redis functions", "the library warrantd is version %s, this "
		    "build needs %s: the worker refuses to start (exit 76); load it as an "
		    "administrator with warrantctl functions load", sreply_string(s),
		    STORE_LIBRARY_VERSION);
		break;
	case STORE_LIBRARY_MISSING:
		doctor_say(d, D_FAIL, "redis functions", "the library warrantd is not loaded: the "
		    "worker refuses to start (exit 76); load it as an administrator with warrantctl "
		    "functions load");
		break;
	case STORE_LIBRARY_NO_FUNCTIONS:
		doctor_say(d, D_FAIL, "redis functions", "the server has no Redis Functions (older "
		    "than Redis 7.0)");
		break;
	default:
		doctor_say(d, D_WARN, "redis functions", "FCALL_RO warrantd_version: %s",
		    err ? err : "not a string");
	}
	freeReplyObject(r);
}

/* The consumer name is one live process (issue 38 item 1): a claim
 * (P:owner:<name>) and a heartbeat written by two instances, a live
 * heartbeat under it from another host, or from a pid that is not running
 * here, is another worker with the same name. */
static void
doctor_consumer(struct cli *c, struct doctor *d)
{
	const char *name = c->cfg->daemon.consumer;
	char key[2 * STORE_KEY_MAX], what[300], self[256] = "";
	struct clir *own = c->redis;
	redisReply *r = NULL;

	snprintf(what, sizeof what, "consumer name %s", name);
	snprintf(key, sizeof key, "%s:consumer:%s", c->prefix, name);
	const char *argv[] = {"HGETALL", key};
	if (d->admin != NULL)
		c->redis = d->admin;
	if (c->redis != NULL)
		r = clir_argv(c, 2, argv);
	c->redis = own;
	size_t n = 0;
	if (r == NULL || sreply_array_len(sreply_of(r), &n) != 0) {
		doctor_say(d, D_WARN, what, "its heartbeat cannot be read: %s", r && r->type ==
		    REDIS_REPLY_ERROR ? r->str : "no connection");
		freeReplyObject(r);
		return;
	}
	const char *host = sreply_field(sreply_of(r), "host");
	const char *pid_s = sreply_field(sreply_of(r), "pid");
	const char *beat = sreply_field(sreply_of(r), "instance");
	long pid = pid_s ? strtol(pid_s, NULL, 10) : 0;
	char claim[96] = "";
	gethostname(self, sizeof self - 1);
	doctor_claim(c, d, claim, sizeof claim);
	size_t clen = strcspn(claim, " ");
	if (n > 0 && beat != NULL && claim[0] != '\0' &&
	    (strlen(beat) != clen || strncmp(beat, claim, clen) != 0))
		doctor_say(d, D_FAIL, what, "collision: the name's claim is instance %.*s's, its "
		    "heartbeat instance %s's (host %s, pid %s): two workers run under one name; give "
		    "each its own [daemon] consumer", (int)clen, claim, beat, host ? host : "?",
		    pid_s ? pid_s : "?");
	else if (n == 0 && claim[0] != '\0')
		doctor_say(d, D_OK, what, "(claimed by instance %.*s, no live heartbeat: a worker "
		    "starting or stopped by SIGKILL; free within three heartbeats)", (int)clen, claim);
	else if (n == 0)
		doctor_say(d, D_OK, what, "(no live heartbeat: free)");
	else if (host != NULL && strcmp(host, self) == 0 && pid > 0 &&
	    (kill((pid_t)pid, 0) == 0 || errno == EPERM))
		doctor_say(d, D_OK, what, "(held by pid %ld on this host: the running worker)", pid);
	else
		doctor_say(d, D_FAIL, what, "another live worker holds it (host %s, pid %s): give "
		    "each worker its own [daemon] consumer", host ? host : "?", pid_s ? pid_s : "?");
	freeReplyObject(r);
}

int
cmd_doctor(struct cli *c, int argc, char **argv)
{
	static const char *const roles[CFG_NROLES] = {"operator", "monitor", "decider"};
	static const char *const *const needs[CFG_NROLES] = {needs_operator, needs_monitor,
	    needs_decider};
	struct doctor d = {0};
	int rc = cli_parse_simple(c, argc, argv, 0, 0, NULL);

	if (rc == 1) {
		fputs(cli_usage_text, stdout);
		return 0;
	}
	if (rc != 0 || (rc = cli_load_config(c)) != 0)
		return rc;
	doctor_capture(&d);
	doctor_line(&d, 1, "config", "(%s)", c->cfg_path);
	doctor_user(c, &d, NULL, needs_daemon);
	for (int i = 0; i < CFG_NROLES; i++)
		if (cfg_role_find(roles[i]) == i && c->cfg->roles[i].username != NULL)
			doctor_user(c, &d, roles[i], needs[i]);
	if (!d.version_done)
		doctor_line(&d, 0, "redis version", "no user could ask (INFO and HELLO refused)");
	doctor_server(c, &d);
	/* The functions library's version beside the server's settings
	 * (issue 38 item 3). */
	doctor_functions(c, &d);
	doctor_consumer(c, &d);

	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct http_client *http = loop ? http_client_new(loop) : NULL;
	if (http == NULL) {
		doctor_line(&d, 0, "http", "cannot set up an event loop");
	} else {
		if (c->cfg->oauth.present)
			doctor_tokens(c, &d, loop, http);
		if (c->cfg->authz.url != NULL)
			doctor_pdp(c, &d, loop, http);
	}
	http_client_free(http);
	if (loop != NULL)
		ev_loop_destroy(loop);
	if (c->cfg->notify.webhook_url != NULL)
		doctor_connect(&d, "webhook", c->cfg->notify.webhook_url, 0);
	doctor_actions(c, &d);
	clir_drop(c);	/* and the admin's: main frees none twice */
	c->redis = d.admin;
	doctor_release(&d);
	return d.failed ? EX_REFUSED : 0;
}

