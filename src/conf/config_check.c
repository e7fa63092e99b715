/* SPDX-License-Identifier: BSD-2-Clause */
/* config_check.c: the rules between keys of config (config_int.h), once a
 * file is read, and the warnings of -t, start and reload. */
#define _DEFAULT_SOURCE
#include "config_int.h"
#include "core/allowlist.h"
#include "core/hostport.h"
#include "core/listen.h"
#include "core/shard.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- rules between keys, once the file is read ---- */

/* A key that was written but rejected has had its error already. */
static void
require(struct ctx *c, const char *section, const char *key, const void *value,
	const char *when)
{
	if (!value && !cfg_find_line(c->cfg, section, key))
		cfg_fail(c, cfg_line_of(c->cfg, section, NULL), "[%s] %s is required%s", section,
		    key, when);
}

/* [daemon] consumer defaults to the host name the caller was told. */
static void
finish_daemon(struct ctx *c, const char *host)
{
	struct cfg *cfg = c->cfg;

	if (cfg->daemon.consumer)
		return;
	if (host == NULL)
		host = "";
	if (!cfg_consumer_ok(host)) {
		cfg_fail(c, cfg_line_of(cfg, "daemon", NULL),
		    "host name '%.*s' is not a valid consumer name: set [daemon] consumer",
		    SHOW, host);
		return;
	}
	if (!(cfg->daemon.consumer = strdup(host)))
		c->nomem = 1;
}

/* allow_hosts: names, addresses and CIDR blocks, each with an optional
 * port (allowlist.h). */
static void
finish_allow_hosts(struct ctx *c)
{
	struct allowlist *a;
	char why[160];

	if (c->cfg->redis.allow_hosts == NULL || (a = allowlist_new()) == NULL)
		return;
	if (allowlist_add_list(a, c->cfg->redis.allow_hosts, why, sizeof why) < 0)
		cfg_fail(c, cfg_line_of(c->cfg, "redis", "allow_hosts"), "%s", why);
	allowlist_free(a);
}

/* Sentinel: a list that parses, with a master name; a socket is then
 * meaningless (sentinels name TCP addresses). */
static void
finish_sentinel(struct ctx *c)
{
	struct cfg *cfg = c->cfg;
	char why[160];

	if (cfg->redis.sentinels == NULL) {
		if (cfg->redis.master_name || cfg->redis.sentinel_password_file)
			cfg_fail(c, cfg_line_of(cfg, "redis", cfg->redis.master_name ? "master_name" :
			    "sentinel_password_file"), "%s is only used with sentinels",
			    cfg->redis.master_name ? "master_name" : "sentinel_password_file");
		return;
	}
	if (hostport_parse_list(cfg->redis.sentinels, cfg->redis.sentinel_addr,
	    &cfg->redis.n_sentinel_addr, why, sizeof why) < 0) {
		cfg->redis.n_sentinel_addr = 0;
		cfg_fail(c, cfg_line_of(cfg, "redis", "sentinels"), "sentinels: %s", why);
	}
	if (cfg->redis.master_name == NULL)
		cfg_fail(c, cfg_line_of(cfg, "redis", "sentinels"), "sentinels needs master_name");
	if (cfg->redis.socket != NULL)
		cfg_fail(c, cfg_line_of(cfg, "redis", "socket"),
		    "socket and sentinels exclude each other: the sentinels name the primary");
	/* issue 37 item 2: the primary a sentinel names is configured nowhere
	 * else; without a list the password would follow any answer */
	if (cfg->redis.allow_hosts == NULL)
		cfg_fail(c, cfg_line_of(cfg, "redis", "sentinels"), "[redis] sentinels needs "
		    "allow_hosts naming where the primaries may be (host:port)");
}

/* Cluster: seeds that parse, no socket, sentinels or db (a cluster has only
 * db 0), and keys that stay in one slot per shard: a prefix with a hash tag,
 * or shards (whose prefixes are the hash tags). A prefix that is itself
 * tagged would put every shard in one slot: refused with shards. */
static void
finish_cluster(struct ctx *c)
{
	struct cfg *cfg = c->cfg;
	char why[160];

	if (cfg->redis.shards > 0 && (strchr(cfg->redis.prefix, '{') ||
	    strchr(cfg->redis.prefix, '}')))
		cfg_fail(c, cfg_line_of(cfg, "redis", "prefix"),
		    "with shards the prefix takes no braces: shard i is {prefix:i}");
	if (cfg->redis.cluster == NULL)
		return;
	if (hostport_parse_list(cfg->redis.cluster, cfg->redis.cluster_addr,
	    &cfg->redis.n_cluster_addr, why, sizeof why) < 0) {
		cfg->redis.n_cluster_addr = 0;
		cfg_fail(c, cfg_line_of(cfg, "redis", "cluster"), "cluster: %s", why);
	}
	if (cfg->redis.socket != NULL || cfg->redis.sentinels != NULL)
		cfg_fail(c, cfg_line_of(cfg, "redis", "cluster"),
		    "cluster excludes socket and sentinels: the cluster names its nodes");
	if (cfg->redis.db != 0)
		cfg_fail(c, cfg_line_of(cfg, "redis", "db"), "a Redis Cluster has only db 0");
	if (cfg->redis.shards == 0 && !shard_has_tag(cfg->redis.prefix))
		cfg_fail(c, cfg_line_of(cfg, "redis", "prefix"),
		    "on a cluster the prefix needs a hash tag (e.g. {%.*s}) or shards must be set: "
		    "each script's keys must share one slot", SHOW, cfg->redis.prefix);
}

/* [redis] auth: each source takes its own keys and refuses the others', so
 * a half-edited file (a password_file left behind auth = oauth) is not
 * silently read one way. [oauth] is checked by finish_oauth. */
static void
finish_redis_auth(struct ctx *c)
{
	struct cfg *cfg = c->cfg;
	enum cfg_redis_auth a = cfg->redis.auth;
	static const char *const names[] = {"password", "oauth", "command"};

	if (a != CFG_REDIS_PASSWORD && cfg->redis.password_file)
		cfg_fail(c, cfg_line_of(cfg, "redis", "password_file"),
		    "password_file is only used with auth = password (auth = %s fetches a token)",
		    names[a]);
	if (a != CFG_REDIS_OAUTH) {
		if (cfg->redis.token_scope)
			cfg_fail(c, cfg_line_of(cfg, "redis", "token_scope"),
			    "token_scope is only used with auth = oauth");
		if (cfg->redis.token_resource)
			cfg_fail(c, cfg_line_of(cfg, "redis", "token_resource"),
			    "token_resource is only used with auth = oauth");
	}
	if (a != CFG_REDIS_COMMAND && cfg->redis.token_command)
		cfg_fail(c, cfg_line_of(cfg, "redis", "token_command"),
		    "token_command is only used with auth = command");
	if (a == CFG_REDIS_OAUTH) {
		if (!cfg->oauth.present)
			cfg_fail(c, cfg_line_of(cfg, "redis", "auth"),
			    "auth = oauth needs an [oauth] section (the client that fetches the token)");
		/* Without them the worker would hand Redis the token meant for its
		 * targets: a token for one audience is never sent to another. */
		if (!cfg->redis.token_scope && !cfg->redis.token_resource)
			cfg_fail(c, cfg_line_of(cfg, "redis", "auth"),
			    "auth = oauth needs token_scope or token_resource (e.g. token_scope = "
			    "https://redis.azure.com/.default)");
	}
	if (a == CFG_REDIS_COMMAND)
		require(c, "redis", "token_command", cfg->redis.token_command,
		    " with auth = command");
}

static void
finish_redis(struct ctx *c)
{
	struct cfg *cfg = c->cfg;
	int set = cfg_find_line(cfg, "redis", "lease_renew_ms") != NULL;

	if (!set)
		cfg->redis.lease_renew_ms = cfg->redis.claim_idle_ms / 3;
	/* R10, R11: an owner renews and beats at least three times within
	 * the silence that makes its entries another's. */
	if (cfg->redis.lease_renew_ms < 1 || cfg->redis.lease_renew_ms > cfg->redis.claim_idle_ms / 3)
		cfg_fail(c, cfg_line_of(cfg, "redis", set ? "lease_renew_ms" : "claim_idle_ms"),
		    "lease_renew_ms (%ld) must be at least 1 and at most a third of claim_idle_ms (%ld)",
		    cfg->redis.lease_renew_ms, cfg->redis.claim_idle_ms);
	int hb_set = cfg_find_line(cfg, "daemon", "heartbeat_ms") != NULL;
	if (!hb_set && cfg->daemon.heartbeat_ms > cfg->redis.claim_idle_ms / 3)
		cfg->daemon.heartbeat_ms = cfg->redis.claim_idle_ms / 3;
	if (cfg->daemon.heartbeat_ms < 1 || cfg->daemon.heartbeat_ms > cfg->redis.claim_idle_ms / 3)
		cfg_fail(c, hb_set ? cfg_line_of(cfg, "daemon", "heartbeat_ms") :
		    cfg_line_of(cfg, "redis", "claim_idle_ms"),
		    "heartbeat_ms (%ld) must be at least 1 and at most a third of claim_idle_ms (%ld)",
		    cfg->daemon.heartbeat_ms, cfg->redis.claim_idle_ms);
	finish_sentinel(c);
	finish_cluster(c);
	finish_allow_hosts(c);
	/* a role is a Redis user: a section without one is a slip */
	for (int r = 0; r < CFG_NROLES; r++) {
		char sec[32];
		snprintf(sec, sizeof sec, "redis.%s", cfg_role_name(r));
		if (cfg_find_line(cfg, sec, NULL)) {
			require(c, sec, "username", cfg->roles[r].username, "");
			require(c, sec, "password_file", cfg->roles[r].password_file, "");
		}
	}
	finish_redis_auth(c);
}

static void
finish_misc(struct ctx *c)
{
	struct cfg *cfg = c->cfg;

	if (cfg->retry.cap_ms < cfg->retry.base_ms)
		cfg_fail(c, cfg_line_of(cfg, "retry", "cap_ms"),
		    "cap_ms (%ld) must not be below base_ms (%ld)", cfg->retry.cap_ms,
		    cfg->retry.base_ms);
	if (cfg->records.signature_required)
		require(c, "records", "verify_key_file", cfg->records.verify_key_file,
		    " with signature = required");
}

static void
finish_oauth(struct ctx *c)
{
	struct cfg *cfg = c->cfg;

	if (!cfg->oauth.present)
		return;
	require(c, "oauth", "token_url", cfg->oauth.token_url, "");
	require(c, "oauth", "client_id", cfg->oauth.client_id, "");
	if (cfg->oauth.auth_method == CFG_CLIENT_SECRET_BASIC)
		require(c, "oauth", "client_secret_file", cfg->oauth.client_secret_file,
		    " with auth_method = client_secret_basic");
	else if (cfg->oauth.auth_method == CFG_CLIENT_SECRET_POST)
		require(c, "oauth", "client_secret_file", cfg->oauth.client_secret_file,
		    " with auth_method = client_secret_post");
	else
		require(c, "oauth", "private_key_file", cfg->oauth.private_key_file,
		    " with auth_method = private_key_jwt");
	if (!cfg->oauth.assertion_audience && cfg->oauth.token_url &&
	    !(cfg->oauth.assertion_audience = strdup(cfg->oauth.token_url)))
		c->nomem = 1;
}

/* The rules of an `auth` key ([action NAME], [notify]) and its bearer_file. */
static void
finish_auth(struct ctx *c, const char *sec, enum cfg_auth auth, const char *bearer_file,
	    const char *dflt)
{
	struct cfg *cfg = c->cfg;

	if (auth == CFG_AUTH_STATIC)
		require(c, sec, "bearer_file", bearer_file, " with auth = static");
	else if (bearer_file)
		cfg_fail(c, cfg_line_of(cfg, sec, "bearer_file"),
		    "bearer_file is only used with auth = static");
	if (auth == CFG_AUTH_OAUTH && !cfg->oauth.present)
		cfg_fail(c, cfg_line_of(cfg, sec, "auth"),
		    "[%s] has auth = oauth%s but there is no [oauth] section", sec, dflt);
}

/* §6, §7: the PDP's and the webhook's OAuth tokens are minted for them
 * alone, so neither can replay what it receives against a target. */
static void
check_own_audience(struct ctx *c, const char *sec, enum cfg_auth auth, const char *scope,
		   const char *resource, const char *audience)
{
	static const char *const keys[] = {"scope", "resource", "audience"};
	const char *const vals[] = {scope, resource, audience};

	if (auth == CFG_AUTH_OAUTH && c->cfg->oauth.present && scope == NULL && resource == NULL &&
	    audience == NULL)
		cfg_fail(c, cfg_line_of(c->cfg, sec, "auth"), "[%s] auth = oauth needs a scope, resource "
		    "or audience of its own: the worker's token could call every action", sec);
	for (size_t k = 0; k < 3; k++)
		if (vals[k] != NULL && auth != CFG_AUTH_OAUTH)
			cfg_fail(c, cfg_line_of(c->cfg, sec, keys[k]), "%s is only used with auth = oauth",
			    keys[k]);
}

/* scope, audience and resource narrow the worker's token: oauth only. */
static void
check_narrowing(struct ctx *c, const char *sec, const struct cfg_action *a)
{
	static const char *const keys[] = {"scope", "audience", "resource"};
	const char *const vals[] = {a->scope, a->audience, a->resource};

	for (size_t k = 0; k < 3; k++)
		if (vals[k] != NULL && a->auth != CFG_AUTH_OAUTH)
			cfg_fail(c, cfg_line_of(c->cfg, sec, keys[k]),
			    "%s narrows the worker's OAuth token: only with auth = oauth", keys[k]);
	if (a->token_exchange && a->auth != CFG_AUTH_OAUTH)
		cfg_fail(c, cfg_line_of(c->cfg, sec, "token"),
		    "token = %s %s: only with auth = oauth", a->token_exchange == CFG_TOKEN_EXCHANGE ?
		    "exchange" : "per-record", a->token_exchange == CFG_TOKEN_EXCHANGE ?
		    "trades the worker's OAuth token" : "asks the [oauth] client for a token");
}

/* R15: unset, the grace lets the longest call in flight at SIGTERM end and
 * its result be written, rather than leave it to run again elsewhere. */
static void
default_grace(struct cfg *cfg)
{
	long longest = 0;

	if (cfg_find_line(cfg, "daemon", "shutdown_grace_ms") != NULL)
		return;
	for (size_t i = 0; i < cfg->nactions; i++)
		if (cfg->actions[i].timeout_ms > longest)
			longest = cfg->actions[i].timeout_ms;
	cfg->daemon.shutdown_grace_ms = longest + 5000;
}

static void
finish_actions(struct ctx *c)
{
	struct cfg *cfg = c->cfg;
	char sec[256];

	if (cfg->nactions == 0)
		cfg_fail(c, 1, "no [action NAME] section: nothing to execute");
	default_grace(cfg);
	for (size_t i = 0; i < cfg->nactions; i++) {
		const struct cfg_action *a = &cfg->actions[i];
		snprintf(sec, sizeof sec, "action %s", a->name);
		require(c, sec, "url", a->url, "");
		finish_auth(c, sec, a->auth, a->bearer_file, " (the default)");
		check_narrowing(c, sec, a);
	}
	finish_auth(c, "notify", cfg->notify.auth, cfg->notify.bearer_file, "");
	finish_auth(c, "authz", cfg->authz.auth, cfg->authz.bearer_file, "");
	check_own_audience(c, "notify", cfg->notify.auth, cfg->notify.scope, cfg->notify.resource,
	    cfg->notify.audience);
	check_own_audience(c, "authz", cfg->authz.auth, cfg->authz.scope, cfg->authz.resource,
	    cfg->authz.audience);
}

/* ---- clear-text HTTP ---- */

static int
loopback_host(const char *h, size_t n)
{
	if ((n == 9 && strncasecmp(h, "localhost", 9) == 0) || (n == 5 && memcmp(h, "[::1]", 5) == 0))
		return 1;
	/* 127.0.0.0/8, written as four decimal parts */
	if (n < 7 || strncmp(h, "127.", 4) != 0)
		return 0;
	int dots = 0;
	for (size_t i = 0; i < n; i++) {
		if (h[i] == '.')
			dots++;
		else if (!isdigit((unsigned char)h[i]))
			return 0;
	}
	return dots == 3;
}

/* tls: the tls_* keys need it, a unix socket excludes it, and a client
 * certificate comes with its key. */
static void
finish_tls(struct ctx *c)
{
	const struct cfg *cfg = c->cfg;
	static const char *const keys[] = {"tls_ca_file", "tls_cert_file", "tls_key_file",
	    "tls_server_name"};

	if (!cfg->redis.tls) {
		for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
			if (cfg_find_line(cfg, "redis", keys[i]) != NULL)
				cfg_fail(c, cfg_line_of(cfg, "redis", keys[i]),
				    "%s is only used with tls = yes", keys[i]);
		return;
	}
	if (cfg->redis.socket != NULL)
		cfg_fail(c, cfg_line_of(cfg, "redis", "socket"),
		    "socket and tls exclude each other: TLS is for a host and port");
	if ((cfg->redis.tls_cert_file == NULL) != (cfg->redis.tls_key_file == NULL))
		cfg_fail(c, cfg_line_of(cfg, "redis", cfg->redis.tls_cert_file ? "tls_cert_file" :
		    "tls_key_file"), "tls_cert_file and tls_key_file go together");
	if (cfg->redis.tls_server_name != NULL && (*cfg->redis.tls_server_name == '\0' ||
	    strpbrk(cfg->redis.tls_server_name, " \t/:@") != NULL))
		cfg_fail(c, cfg_line_of(cfg, "redis", "tls_server_name"),
		    "tls_server_name: a host name or address, without port");
}

/* Issue 37: no credential crosses a network in clear text. Each one that
 * will be sent -- the data nodes' password or token (password_file, auth =
 * oauth or command, a role's password_file), a sentinel's password -- is
 * checked against every host known now (allowlist_cleartext_ok; for the
 * primary that sentinels name, the sentinels' hosts); a primary a sentinel
 * names, a node CLUSTER SHARDS or a redirect names, is checked again at its
 * connect (rconn). */
static int
data_credential(const struct cfg *cfg)
{
	if (cfg->redis.auth != CFG_REDIS_PASSWORD || cfg->redis.password_file != NULL)
		return 1;
	for (int r = 0; r < CFG_NROLES; r++)
		if (cfg->roles[r].password_file != NULL)
			return 1;
	return 0;
}

/* The first host of a[0..n) a credential may not go to, or NULL. */
static const char *
cleartext_host(const struct cfg *cfg, const struct hostport *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!allowlist_cleartext_ok(a[i].host, 0, cfg->redis.tls,
		    cfg->redis.allow_plaintext))
			return a[i].host;
	return NULL;
}

static void
refuse_cleartext(struct ctx *c, const char *key, const char *what, const char *host)
{
	cfg_fail(c, cfg_line_of(c->cfg, "redis", key), "%s: %s would cross the network to %.*s "
	    "in clear text: set tls = yes (or use stunnel on loopback), or set "
	    "allow_plaintext = yes", key, what, SHOW, host);
}

static void
finish_plaintext(struct ctx *c)
{
	const struct cfg *cfg = c->cfg;
	struct hostport one = {.port = cfg->redis.port};
	const char *host;
	static const char *const what[] = {"the Redis password", "the Redis token",
	    "the Redis token"};

	if (cfg->redis.socket != NULL)
		return;
	snprintf(one.host, sizeof one.host, "%s", cfg->redis.host);
	/* a list that did not parse has no entry: reported where it is checked */
	/* with sentinels elsewhere, the primary they name is elsewhere too */
	if (data_credential(cfg)) {
		const char *key = cfg->redis.cluster ? "cluster" : cfg->redis.sentinels ?
		    "sentinels" : "host";
		host = cfg->redis.cluster ? cleartext_host(cfg, cfg->redis.cluster_addr,
		    cfg->redis.n_cluster_addr) : cfg->redis.sentinels ? cleartext_host(cfg,
		    cfg->redis.sentinel_addr, cfg->redis.n_sentinel_addr) :
		    cleartext_host(cfg, &one, 1);
		if (host != NULL) {
			refuse_cleartext(c, key, what[cfg->redis.auth], host);
			return;		/* once per key */
		}
	}
	/* issue 37 item 1: with sentinels or a cluster, allow_hosts is where the
	 * credential may go: a host beyond loopback there is known now */
	char remote[HOSTPORT_HOST_MAX + 8];
	struct allowlist *al = NULL;
	if (data_credential(cfg) && (cfg->redis.sentinels || cfg->redis.cluster) &&
	    cfg->redis.allow_hosts != NULL && !cfg->redis.tls && !cfg->redis.allow_plaintext &&
	    (al = allowlist_new()) != NULL) {
		char why[160];
		if (allowlist_add_list(al, cfg->redis.allow_hosts, why, sizeof why) == 0 &&
		    allowlist_first_remote(al, remote, sizeof remote)) {
			allowlist_free(al);
			refuse_cleartext(c, "allow_hosts", what[cfg->redis.auth], remote);
			return;
		}
	}
	allowlist_free(al);
	/* the sentinels get their own password, or else the token (engine.c) */
	if (cfg->redis.sentinels && (cfg->redis.sentinel_password_file ||
	    cfg->redis.auth != CFG_REDIS_PASSWORD) &&
	    (host = cleartext_host(cfg, cfg->redis.sentinel_addr, cfg->redis.n_sentinel_addr)))
		refuse_cleartext(c, "sentinels", cfg->redis.sentinel_password_file ?
		    "the sentinel password" : "the Redis token", host);
}

/* 1 when `u` (already a valid URL) is http:// to a host that is not loopback. */
static int
clear_text_remote(const char *u)
{
	if (strncasecmp(u, "http://", 7) != 0)
		return 0;
	const char *p = u + 7;
	size_t alen = strcspn(p, "/?#");
	const char *host = p, *end = p + alen;
	for (const char *q = p; q < end; q++)
		if (*q == '@')
			host = q + 1;
	const char *colon = *host == '[' ? memchr(host, ']', (size_t)(end - host)) : host;
	if (*host == '[' && colon)
		colon++;	/* just after ']' */
	else if (colon)
		colon = memchr(host, ':', (size_t)(end - host));
	size_t hlen = (size_t)((colon && colon < end ? colon : end) - host);
	return !loopback_host(host, hlen);
}

static void
check_clear_text(struct ctx *c, const char *sec, const char *key, const char *url, int allow)
{
	if (!url || allow || !clear_text_remote(url))
		return;
	cfg_fail(c, cfg_line_of(c->cfg, sec, key),
	    "%s: http:// to a host that is not loopback would send tokens and secrets in "
	    "clear text: use https://, or set allow_http = yes in [%s]", key, sec);
}

static void
finish_http(struct ctx *c)
{
	struct cfg *cfg = c->cfg;
	char sec[256];

	check_clear_text(c, "oauth", "token_url", cfg->oauth.token_url, cfg->oauth.allow_http);
	check_clear_text(c, "authz", "url", cfg->authz.url, cfg->authz.allow_http);
	check_clear_text(c, "notify", "webhook_url", cfg->notify.webhook_url,
	    cfg->notify.allow_http);
	for (size_t i = 0; i < cfg->nactions; i++) {
		snprintf(sec, sizeof sec, "action %s", cfg->actions[i].name);
		check_clear_text(c, sec, "url", cfg->actions[i].url, cfg->actions[i].allow_http);
	}
}

/* The address is parsed again when the daemon listens; here only so that
 * -t and a reload report a bad one at its line. */
static void
finish_metrics(struct ctx *c)
{
	struct cfg *cfg = c->cfg;
	char why[256];

	if (cfg->metrics.listen &&
	    listen_parse(cfg->metrics.listen, cfg->metrics.allow_remote,
		&cfg->metrics.listen_addr, why, sizeof why) < 0)
		cfg_fail(c, cfg_line_of(cfg, "metrics", "listen"), "listen: %s", why);
}

void
cfg_finish(struct ctx *c, const char *host)
{
	finish_daemon(c, host);
	finish_redis(c);
	finish_misc(c);
	finish_oauth(c);
	finish_actions(c);
	finish_http(c);
	finish_plaintext(c);
	finish_tls(c);
	finish_metrics(c);
}

/* ---- warnings (-t, start, reload) ---- */

static const char *const plain_methods[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE",
	"OPTIONS"};

static int
method_is_plain(const char *m)
{
	for (size_t i = 0; i < sizeof plain_methods / sizeof plain_methods[0]; i++)
		if (strcmp(m, plain_methods[i]) == 0)
			return 1;
	return 0;
}

int
cfg_warnings(const struct cfg *cfg, struct cfg_errors *warns)
{
	int rc = 0;
#define WARN(sec, key, ...) \
	rc |= cfg_errors_add(warns, cfg->path, cfg_line_of(cfg, sec, key), "warning: " __VA_ARGS__)

	if (!cfg->records.signature_required)
		WARN("records", "signature", "records are not signed: only Redis ACLs protect them");
	else if (cfg->records.algorithm == JWA_HS256)
		WARN("records", "algorithm", "HS256: every verifier holds the key that signs "
		    "decisions; prefer ES256 or RS256");
	if (cfg->records.signature_required && !cfg->records.audience)
		WARN("records", NULL, "[records] audience is unset: a record signed for another "
		    "deployment that trusts the same decider key runs here too");
	if (!cfg->authz.url)
		WARN("authz", NULL, "[authz] url is unset: authority is not re-checked before a call");

	for (size_t i = 0; i < cfg->nactions; i++) {
		char sec[300];
		snprintf(sec, sizeof sec, "action %s", cfg->actions[i].name);
		if (!method_is_plain(cfg->actions[i].method))
			WARN(sec, "method", "method %s is not a standard HTTP method: is it meant?",
			    cfg->actions[i].method);
	}
#undef WARN
	return rc < 0 ? -1 : 0;
}
