/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * warrantctl doctor: what a deployment needs, end to end, one line per check
 * (warrantd(7) §11).
 */
#define _DEFAULT_SOURCE
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include <curl/curl.h>

#include "auth/authz.h"
#include "auth/oauth.h"
#include "base/wtime.h"
#include "conf/config.h"
#include "ctl/clir.h"
#include "ctl/cmds.h"

/* ---- doctor ---- */

/* What a deployment needs, checked end to end: one line per check, "ok" or
 * "FAIL: why"; any failure makes the exit 1. */
struct doctor {
	int failed;
	int version_done;
	struct clir *admin;	/* the first connection ACL DRYRUN worked on */
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
	"HSET {clock} last 1", "TIME", "FCALL warrantd_transition 0",
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
	"XLEN {notify}", "ZCARD {scheduled}", NULL,
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
			size_t len = strlen(refused);
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

static void
doctor_idp(const struct cli *c, struct doctor *d, struct ev_loop *loop,
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

/* Each action's host resolves (getaddrinfo), as the call will need. */
static void
doctor_actions(const struct cli *c, struct doctor *d)
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
	clir_drop(c);	/* and the admin's: main frees none twice */
	c->redis = d.admin;
	return d.failed ? EX_REFUSED : 0;
}

