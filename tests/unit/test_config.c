/* SPDX-License-Identifier: BSD-2-Clause */
/* test_config: the INI of warrantd(7) §10 and its errors, parsed from strings with a
 * made-up host (the file from disk: test_cfgfile; the files it names:
 * test_secrets). */
#define _GNU_SOURCE	/* asprintf */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "conf/config.h"
#include "jose/jwa.h"
#include "base/log.h"

/* The smallest valid file: a key to verify records and one action. */
#define MIN_RECORDS "[records]\nverify_key_file = k.pub\n"
#define MIN_ACTION "[action a]\nurl = http://127.0.0.1/x\nauth = none\n"

/* What the tests' host is: never the machine's. */
static const struct cfg_env test_env = {.host = "test-host", .dir = "/etc/warrantd"};

static struct cfg *
parse(const char *text, struct cfg_errors *errs)
{
	return cfg_parse("t.ini", text, strlen(text), &test_env, errs);
}

static struct cfg *
load_ok(const char *text)
{
	struct cfg_errors errs = {0};
	struct cfg *cfg = parse(text, &errs);

	for (size_t i = 0; i < errs.n; i++)
		print_message("unexpected: %s\n", errs.msgs[i]);
	assert_int_equal(errs.n, 0);
	assert_non_null(cfg);
	return cfg;
}

/* The load fails with exactly these errors, in this order; each message
 * must start with its want[i] ("t.ini:3: port: ..."). */
static void
expect_errors(const char *text, const char *const *want, size_t n)
{
	struct cfg_errors errs = {0};
	struct cfg *cfg = parse(text, &errs);

	assert_null(cfg);
	int ok = errs.n == n;
	for (size_t i = 0; ok && i < n; i++)
		ok = strncmp(errs.msgs[i], want[i], strlen(want[i])) == 0;
	if (!ok) {
		for (size_t i = 0; i < n; i++)
			print_message("want: %s...\n", want[i]);
		for (size_t i = 0; i < errs.n; i++)
			print_message("got:  %s\n", errs.msgs[i]);
		fail_msg("%zu errors, %zu wanted, or one differs", errs.n, n);
	}
	cfg_errors_clear(&errs);
	assert_null(errs.msgs);
	assert_int_equal(errs.n, 0);
}

#define EXPECT(text, ...) do { \
	const char *const want_[] = {__VA_ARGS__}; \
	expect_errors(text, want_, sizeof want_ / sizeof want_[0]); \
} while (0)

/* ---- defaults ---- */

/* "(null)" for an unset string key. */
static const char *
str_or_null(const char *s)
{
	return s != NULL ? s : "(null)";
}

/* The settings test_defaults and test_full_config both check, written back
 * one "section.key = value" a line, so that each test states what it
 * expects as one text and a mismatch prints the two side by side. Caller
 * frees. */
static char *
settings_text(const struct cfg *cfg)
{
	static const char *const client_auth[] = {"client_secret_basic", "client_secret_post",
	    "private_key_jwt"};
	char *out = NULL;
	int n = asprintf(&out,
	    "daemon.consumer = %s\ndaemon.log_level = %s\ndaemon.max_in_flight = %ld\n"
	    "daemon.shutdown_grace_ms = %ld\ndaemon.heartbeat_ms = %ld\n"
	    "redis.host = %s\nredis.port = %d\nredis.socket = %s\nredis.username = %s\n"
	    "redis.password_file = %s\nredis.db = %d\nredis.prefix = %s\nredis.group = %s\n"
	    "redis.batch = %ld\nredis.block_ms = %ld\nredis.claim_idle_ms = %ld\n"
	    "redis.claim_interval_ms = %ld\nredis.lease_renew_ms = %ld\n"
	    "redis.max_deliveries = %ld\nredis.dead_maxlen = %ld\nredis.notify_maxlen = %ld\n"
	    "records.signature_required = %d\nrecords.algorithm = %s\n"
	    "records.verify_key_file = %s\nrecords.issuer = %s\nrecords.max_window_s = %ld\n"
	    "records.clock_skew_s = %ld\nrecords.retain_s = %ld\nrecords.audit_maxlen = %ld\n"
	    "oauth.present = %d\noauth.token_url = %s\noauth.auth_method = %s\n"
	    "oauth.assertion_alg = %s\noauth.refresh_ratio = %g\noauth.timeout_ms = %ld\n"
	    "oauth.auth_wait_max_ms = %ld\noauth.min_refresh_interval_ms = %ld\n"
	    "authz.url = %s\nauthz.timeout_ms = %ld\n"
	    "retry.base_ms = %ld\nretry.cap_ms = %ld\nretry.max_attempts = %ld\n"
	    "notify.default_owner = %s\nnotify.webhook_url = %s\nnotify.timeout_ms = %ld\n"
	    "actions = %zu\n",
	    cfg->daemon.consumer, log_level_name(cfg->daemon.log_level),
	    cfg->daemon.max_in_flight, cfg->daemon.shutdown_grace_ms, cfg->daemon.heartbeat_ms,
	    cfg->redis.host, cfg->redis.port, str_or_null(cfg->redis.socket),
	    str_or_null(cfg->redis.username), str_or_null(cfg->redis.password_file),
	    cfg->redis.db, cfg->redis.prefix, cfg->redis.group, cfg->redis.batch,
	    cfg->redis.block_ms, cfg->redis.claim_idle_ms, cfg->redis.claim_interval_ms,
	    cfg->redis.lease_renew_ms, cfg->redis.max_deliveries, cfg->redis.dead_maxlen,
	    cfg->redis.notify_maxlen,
	    cfg->records.signature_required, jwa_name(cfg->records.algorithm),
	    cfg->records.verify_key_file, str_or_null(cfg->records.issuer),
	    cfg->records.max_window_s, cfg->records.clock_skew_s, cfg->records.retain_s,
	    cfg->records.audit_maxlen,
	    cfg->oauth.present, str_or_null(cfg->oauth.token_url),
	    client_auth[cfg->oauth.auth_method], jwa_name(cfg->oauth.assertion_alg),
	    cfg->oauth.refresh_ratio, cfg->oauth.timeout_ms, cfg->oauth.auth_wait_max_ms,
	    cfg->oauth.min_refresh_interval_ms,
	    str_or_null(cfg->authz.url), cfg->authz.timeout_ms,
	    cfg->retry.base_ms, cfg->retry.cap_ms, cfg->retry.max_attempts,
	    str_or_null(cfg->notify.default_owner), str_or_null(cfg->notify.webhook_url),
	    cfg->notify.timeout_ms, cfg->nactions);

	assert_true(n > 0);
	return out;
}

static void
assert_settings(const struct cfg *cfg, const char *want)
{
	char *got = settings_text(cfg);

	assert_string_equal(got, want);
	free(got);
}

static void
test_defaults(void **state)
{
	(void)state;
	struct cfg *cfg = load_ok(MIN_RECORDS MIN_ACTION);

	assert_string_equal(cfg->path, "t.ini");
	assert_string_equal(cfg->dir, "/etc/warrantd");
	/* R15: shutdown_grace_ms is the largest action timeout_ms (10000 by
	 * default) + 5000 */
	assert_settings(cfg,
	    "daemon.consumer = test-host\n"
	    "daemon.log_level = info\n"
	    "daemon.max_in_flight = 256\n"
	    "daemon.shutdown_grace_ms = 15000\n"
	    "daemon.heartbeat_ms = 5000\n"
	    "redis.host = 127.0.0.1\n"
	    "redis.port = 6379\n"
	    "redis.socket = (null)\n"
	    "redis.username = (null)\n"
	    "redis.password_file = (null)\n"
	    "redis.db = 0\n"
	    "redis.prefix = warrant\n"
	    "redis.group = workers\n"
	    "redis.batch = 64\n"
	    "redis.block_ms = 5000\n"
	    "redis.claim_idle_ms = 60000\n"
	    "redis.claim_interval_ms = 5000\n"
	    "redis.lease_renew_ms = 20000\n"
	    "redis.max_deliveries = 16\n"
	    "redis.dead_maxlen = 100000\n"
	    "redis.notify_maxlen = 100000\n"
	    "records.signature_required = 1\n"
	    "records.algorithm = ES256\n"
	    "records.verify_key_file = k.pub\n"
	    "records.issuer = (null)\n"
	    "records.max_window_s = 604800\n"
	    "records.clock_skew_s = 60\n"
	    "records.retain_s = 604800\n"
	    "records.audit_maxlen = 100000\n"
	    "oauth.present = 0\n"
	    "oauth.token_url = (null)\n"
	    "oauth.auth_method = client_secret_basic\n"
	    "oauth.assertion_alg = RS256\n"
	    "oauth.refresh_ratio = 0.75\n"
	    "oauth.timeout_ms = 5000\n"
	    "oauth.auth_wait_max_ms = 30000\n"
	    "oauth.min_refresh_interval_ms = 1000\n"
	    "authz.url = (null)\n"
	    "authz.timeout_ms = 2000\n"
	    "retry.base_ms = 500\n"
	    "retry.cap_ms = 60000\n"
	    "retry.max_attempts = 10\n"
	    "notify.default_owner = (null)\n"
	    "notify.webhook_url = (null)\n"
	    "notify.timeout_ms = 2000\n"
	    "actions = 1\n");
	assert_string_equal(cfg->actions[0].name, "a");
	assert_string_equal(cfg->actions[0].method, "POST");
	assert_int_equal(cfg->actions[0].timeout_ms, 10000);
	assert_int_equal(cfg->actions[0].auth, CFG_AUTH_NONE);
	assert_null(cfg->actions[0].bearer_file);
	cfg_free(cfg);
}

static void
test_oauth_defaults(void **state)
{
	(void)state;
	struct cfg *cfg = load_ok(MIN_RECORDS
	    "[oauth]\ntoken_url = https://auth.example/token\nclient_id = w\n"
	    "client_secret_file = s\n"
	    "[action a]\nurl = http://127.0.0.1/x\n");

	assert_int_equal(cfg->oauth.present, 1);
	assert_string_equal(cfg->oauth.assertion_audience, "https://auth.example/token");
	assert_int_equal(cfg->oauth.auth_method, CFG_CLIENT_SECRET_BASIC);
	assert_null(cfg->oauth.private_key_file);
	assert_null(cfg->oauth.key_id);
	assert_null(cfg->oauth.certificate_file);
	assert_null(cfg->oauth.scope);
	assert_null(cfg->oauth.resource);
	assert_null(cfg->oauth.audience);
	assert_int_equal(cfg->actions[0].auth, CFG_AUTH_OAUTH);
	cfg_free(cfg);
}

static void
test_lease_follows_claim_idle(void **state)
{
	(void)state;
	struct cfg *cfg = load_ok("[redis]\nclaim_idle_ms = 9000\n" MIN_RECORDS MIN_ACTION);

	assert_int_equal(cfg->redis.lease_renew_ms, 3000);
	cfg_free(cfg);
	/* R16: at most a third, so an owner renews three times within the
	 * silence that makes its entries another's */
	EXPECT("[redis]\nclaim_idle_ms = 9000\nlease_renew_ms = 3001\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:3: lease_renew_ms (3001) must be at least 1 and at most a third of "
	    "claim_idle_ms (9000)");
	cfg = load_ok("[redis]\nclaim_idle_ms = 9000\nlease_renew_ms = 3000\n" MIN_RECORDS
	    MIN_ACTION);
	cfg_free(cfg);
	/* defaulted to 2 / 3 = 0: blamed on the key that was set */
	EXPECT("[redis]\nclaim_idle_ms = 2\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:2: lease_renew_ms (0) must be",
	    "t.ini:2: heartbeat_ms (0) must be at least 1 and at most a third of claim_idle_ms (2)");
}

/* R15: shutdown_grace_ms unset follows the longest action timeout_ms, so a
 * call in flight at SIGTERM is not cut off and run again elsewhere. */
static void
test_grace_follows_longest_action(void **state)
{
	(void)state;
	struct cfg *cfg = load_ok(MIN_RECORDS MIN_ACTION
	    "[action b]\nurl = http://127.0.0.1/y\nauth = none\ntimeout_ms = 30000\n"
	    "[action c]\nurl = http://127.0.0.1/z\nauth = none\ntimeout_ms = 2000\n");

	assert_int_equal(cfg->daemon.shutdown_grace_ms, 35000);
	cfg_free(cfg);
	cfg = load_ok("[daemon]\nshutdown_grace_ms = 1000\n" MIN_RECORDS MIN_ACTION);
	assert_int_equal(cfg->daemon.shutdown_grace_ms, 1000);
	cfg_free(cfg);
}

/* R11: heartbeat_ms at most a third of claim_idle_ms. */
static void
test_heartbeat_follows_claim_idle(void **state)
{
	(void)state;
	struct cfg *cfg = load_ok("[daemon]\nheartbeat_ms = 3000\n[redis]\nclaim_idle_ms = 9000\n"
	    MIN_RECORDS MIN_ACTION);

	cfg_free(cfg);
	EXPECT("[daemon]\nheartbeat_ms = 3001\n[redis]\nclaim_idle_ms = 9000\n" MIN_RECORDS
	    MIN_ACTION, "t.ini:2: heartbeat_ms (3001) must be at least 1 and at most a third of claim_idle_ms (9000)");
	/* unset: 5000, or a third of a shorter claim_idle_ms */
	cfg = load_ok("[redis]\nclaim_idle_ms = 9000\n" MIN_RECORDS MIN_ACTION);
	assert_int_equal(cfg->daemon.heartbeat_ms, 3000);
	cfg_free(cfg);
	cfg = load_ok(MIN_RECORDS MIN_ACTION);
	assert_int_equal(cfg->daemon.heartbeat_ms, 5000);
	cfg_free(cfg);
}

/* issue 13: shards unset is 0 (today's names); a cluster with a tagged
 * prefix, or with shards. */
static void
test_cluster_keys(void **state)
{
	(void)state;
	struct cfg *cfg = load_ok(MIN_RECORDS MIN_ACTION);

	assert_int_equal(cfg->redis.shards, 0);
	assert_null(cfg->redis.cluster);
	cfg_free(cfg);
	cfg = load_ok("[redis]\ncluster = 127.0.0.1:7001, 127.0.0.1:7002\nprefix = {warrant}\n"
	    MIN_RECORDS MIN_ACTION);
	assert_string_equal(cfg->redis.cluster, "127.0.0.1:7001, 127.0.0.1:7002");
	/* the seeds are parsed once, here: every reader takes the typed list */
	assert_int_equal(cfg->redis.n_cluster_addr, 2);
	assert_string_equal(cfg->redis.cluster_addr[1].host, "127.0.0.1");
	assert_int_equal(cfg->redis.cluster_addr[1].port, 7002);
	assert_int_equal(cfg->redis.n_sentinel_addr, 0);
	cfg_free(cfg);
	cfg = load_ok("[redis]\nsentinels = s1:26379, [::1]:26380\nmaster_name = m\n"
	    "allow_hosts = s1:6379\n" MIN_RECORDS MIN_ACTION);
	assert_int_equal(cfg->redis.n_sentinel_addr, 2);
	assert_string_equal(cfg->redis.sentinel_addr[0].host, "s1");
	assert_int_equal(cfg->redis.sentinel_addr[0].port, 26379);
	assert_string_equal(cfg->redis.sentinel_addr[1].host, "::1");
	assert_int_equal(cfg->redis.n_cluster_addr, 0);
	cfg_free(cfg);
	cfg = load_ok("[redis]\ncluster = 127.0.0.1:7001\nshards = 6\n" MIN_RECORDS MIN_ACTION);
	assert_int_equal(cfg->redis.shards, 6);
	cfg_free(cfg);
}

/* warrantctl --as ROLE (warrantd(7) §11): [redis.operator|monitor|decider],
 * each a whole Redis user; any other role, a repeat or half a user is an
 * error at its line. */
static void
test_redis_roles(void **state)
{
	(void)state;
	struct cfg *cfg = load_ok(MIN_RECORDS MIN_ACTION
	    "[redis.operator]\nusername = op\npassword_file = op.pw\n"
	    "[redis.decider]\nusername = dc\npassword_file = /etc/dc.pw\n");

	assert_int_equal(cfg_role_find("operator"), CFG_ROLE_OPERATOR);
	assert_int_equal(cfg_role_find("monitor"), CFG_ROLE_MONITOR);
	assert_int_equal(cfg_role_find("decider"), CFG_ROLE_DECIDER);
	assert_int_equal(cfg_role_find("warrantd"), -1);
	assert_int_equal(cfg_role_find(""), -1);
	assert_string_equal(cfg->roles[CFG_ROLE_OPERATOR].username, "op");
	assert_string_equal(cfg->roles[CFG_ROLE_OPERATOR].password_file, "op.pw");
	assert_string_equal(cfg->roles[CFG_ROLE_DECIDER].username, "dc");
	assert_null(cfg->roles[CFG_ROLE_MONITOR].username);
	assert_null(cfg->redis.username);	/* [redis]'s own is untouched */
	cfg_free(cfg);
	EXPECT(MIN_RECORDS MIN_ACTION "[redis.admin]\nusername = a\npassword_file = a.pw\n",
	    "t.ini:6: unknown section [redis.admin]; the roles are");
	EXPECT(MIN_RECORDS MIN_ACTION "[redis.monitor]\nusername = a\npassword_file = a.pw\n"
	    "[redis.monitor]\nusername = b\n",
	    "t.ini:9: duplicate section [redis.monitor] (first at line 6)");
	EXPECT(MIN_RECORDS MIN_ACTION "[redis.monitor]\nusername = a\n",
	    "t.ini:6: [redis.monitor] password_file is required");
	EXPECT(MIN_RECORDS MIN_ACTION "[redis.decider]\npassword_file = a.pw\nhost = x\n",
	    "t.ini:6: [redis.decider] username is required",
	    "t.ini:8: unknown key 'host' in [redis.decider]");
}

/* ---- a valid file that sets every key ---- */

static const char full_text[] =
	"; every key\n"
	"[daemon]\n"
	"consumer = w-1.a:b@c_d\n"
	"log_level = debug\n"
	"max_in_flight = 8\n"
	"shutdown_grace_ms = 0\n"
	"heartbeat_ms = 1000\n"
	"[redis]\n"
	"host = redis.local\n"
	"port = 6380\n"
	"socket = /run/redis.sock\n"
	"username = w\n"
	"password_file = redis-pw\n"
	"db = 3\n"
	"prefix = p\n"
	"group = g\n"
	"batch = 10\n"
	"block_ms = 100\n"
	"claim_idle_ms = 30000\n"
	"claim_interval_ms = 1000\n"
	"lease_renew_ms = 5000\n"
	"max_deliveries = 3\n"
	"dead_maxlen = 50\n"
	"notify_maxlen = 60\n"
	"[records]\n"
	"signature = off\n"
	"algorithm = HS256\n"
	"verify_key_file = hs.key\n"
	"issuer = decider-1\n"
	"max_window_s = 3600\n"
	"clock_skew_s = 0\n"
	"retain_s = 86400\n"
	"audit_maxlen = 500\n"
	"[oauth]\n"
	"token_url = https://idp.example:8443/oauth2/token?x=1\n"
	"client_id = worker\n"
	"auth_method = private_key_jwt\n"
	"client_secret_file = unused\n"
	"private_key_file = key.pem\n"
	"assertion_alg = ES256\n"
	"assertion_audience = https://idp.example/\n"
	"key_id = k1\n"
	"certificate_file = cert.pem\n"
	"scope = gates.write gates.read\n"
	"resource = https://gates.example/\n"
	"audience = gates\n"
	"refresh_ratio = 0.5\n"
	"timeout_ms = 3000\n"
	"auth_wait_max_ms = 4000\n"
	"min_refresh_interval_ms = 0\n"
	"[authz]\n"
	"url = http://[::1]:8181/v1/data/allow\n"
	"timeout_ms = 700\n"
	"[retry]\n"
	"base_ms = 100\n"
	"cap_ms = 100\n"
	"max_attempts = 1\n"
	"[notify]\n"
	"default_owner = ops\n"
	"webhook_url = http://127.0.0.1:9/hook\n"
	"timeout_ms = 900\n"
	"[action gate.open]\n"
	"url = http://127.0.0.1:8080/gates/{resource}/open?by={onBehalfOf}&id={recordId}\n"
	"method = put\n"
	"timeout_ms = 1500\n"
	"auth = static\n"
	"bearer_file = gate-token\n"
	"[action gate.close]\n"
	"url = https://gates.example/{action}\n"
	"auth = oauth\n"
	"scope = gates.close\n"
	"audience = https://gates.example/\n";

static void
test_full_config(void **state)
{
	(void)state;
	struct cfg *cfg = load_ok(full_text);

	assert_settings(cfg,
	    "daemon.consumer = w-1.a:b@c_d\n"
	    "daemon.log_level = debug\n"
	    "daemon.max_in_flight = 8\n"
	    "daemon.shutdown_grace_ms = 0\n"
	    "daemon.heartbeat_ms = 1000\n"
	    "redis.host = redis.local\n"
	    "redis.port = 6380\n"
	    "redis.socket = /run/redis.sock\n"
	    "redis.username = w\n"
	    "redis.password_file = redis-pw\n"
	    "redis.db = 3\n"
	    "redis.prefix = p\n"
	    "redis.group = g\n"
	    "redis.batch = 10\n"
	    "redis.block_ms = 100\n"
	    "redis.claim_idle_ms = 30000\n"
	    "redis.claim_interval_ms = 1000\n"
	    "redis.lease_renew_ms = 5000\n"
	    "redis.max_deliveries = 3\n"
	    "redis.dead_maxlen = 50\n"
	    "redis.notify_maxlen = 60\n"
	    "records.signature_required = 0\n"
	    "records.algorithm = HS256\n"
	    "records.verify_key_file = hs.key\n"
	    "records.issuer = decider-1\n"
	    "records.max_window_s = 3600\n"
	    "records.clock_skew_s = 0\n"
	    "records.retain_s = 86400\n"
	    "records.audit_maxlen = 500\n"
	    "oauth.present = 1\n"
	    "oauth.token_url = https://idp.example:8443/oauth2/token?x=1\n"
	    "oauth.auth_method = private_key_jwt\n"
	    "oauth.assertion_alg = ES256\n"
	    "oauth.refresh_ratio = 0.5\n"
	    "oauth.timeout_ms = 3000\n"
	    "oauth.auth_wait_max_ms = 4000\n"
	    "oauth.min_refresh_interval_ms = 0\n"
	    "authz.url = http://[::1]:8181/v1/data/allow\n"
	    "authz.timeout_ms = 700\n"
	    "retry.base_ms = 100\n"
	    "retry.cap_ms = 100\n"
	    "retry.max_attempts = 1\n"
	    "notify.default_owner = ops\n"
	    "notify.webhook_url = http://127.0.0.1:9/hook\n"
	    "notify.timeout_ms = 900\n"
	    "actions = 2\n");
	assert_string_equal(cfg->oauth.client_id, "worker");
	assert_string_equal(cfg->oauth.client_secret_file, "unused");
	assert_string_equal(cfg->oauth.private_key_file, "key.pem");
	assert_string_equal(cfg->oauth.assertion_audience, "https://idp.example/");
	assert_string_equal(cfg->oauth.key_id, "k1");
	assert_string_equal(cfg->oauth.certificate_file, "cert.pem");
	assert_string_equal(cfg->oauth.scope, "gates.write gates.read");
	assert_string_equal(cfg->oauth.resource, "https://gates.example/");
	assert_string_equal(cfg->oauth.audience, "gates");
	const struct cfg_action *a = &cfg->actions[0];
	assert_string_equal(a->name, "gate.open");
	assert_string_equal(a->url,
	    "http://127.0.0.1:8080/gates/{resource}/open?by={onBehalfOf}&id={recordId}");
	assert_string_equal(a->method, "PUT");	/* upper-cased */
	assert_int_equal(a->timeout_ms, 1500);
	assert_int_equal(a->auth, CFG_AUTH_STATIC);
	assert_string_equal(a->bearer_file, "gate-token");
	assert_int_equal(cfg->actions[1].auth, CFG_AUTH_OAUTH);
	assert_string_equal(cfg->actions[1].scope, "gates.close");
	assert_string_equal(cfg->actions[1].audience, "https://gates.example/");
	assert_null(cfg->actions[1].resource);
	assert_null(cfg->actions[0].scope);
	cfg_free(cfg);
}

static void
test_action_find_and_lines(void **state)
{
	(void)state;
	struct cfg *cfg = load_ok(full_text);

	const struct cfg_action *a = cfg_action_find(cfg, "gate.close");
	assert_non_null(a);
	assert_ptr_equal(a, &cfg->actions[1]);
	assert_string_equal(a->url, "https://gates.example/{action}");
	assert_ptr_equal(cfg_action_find(cfg, "gate.open"), &cfg->actions[0]);
	assert_null(cfg_action_find(cfg, "gate"));
	assert_null(cfg_action_find(cfg, "gate.open "));
	assert_null(cfg_action_find(cfg, ""));

	assert_int_equal(cfg_line_of(cfg, "daemon", NULL), 2);
	assert_int_equal(cfg_line_of(cfg, "redis", "port"), 10);
	assert_int_equal(cfg_line_of(cfg, "action gate.open", "bearer_file"), 67);
	assert_int_equal(cfg_line_of(cfg, "action gate.close", NULL), 68);
	/* a key not set: its section's header */
	assert_int_equal(cfg_line_of(cfg, "action gate.close", "method"), 68);
	cfg_free(cfg);

	cfg = load_ok(MIN_RECORDS MIN_ACTION);
	assert_int_equal(cfg_line_of(cfg, "oauth", "token_url"), 1);	/* no such section */
	cfg_free(cfg);
}

/* A long section name is read whole (inih, read before, cut one at 49 bytes). */
static void
test_long_action_name(void **state)
{
	(void)state;
	char text[512], name[101];

	memset(name, 'n', 100);
	name[100] = '\0';
	snprintf(text, sizeof text, MIN_RECORDS "[action %s]\nurl = https://h/\nauth = none\n", name);
	struct cfg *cfg = load_ok(text);
	assert_non_null(cfg_action_find(cfg, name));
	name[49] = '\0';
	assert_null(cfg_action_find(cfg, name));
	cfg_free(cfg);
}

static void
test_comments_indent_crlf_bom(void **state)
{
	(void)state;
	/* an indented line is a key of its own, not a continuation of host */
	struct cfg *cfg = load_ok(
	    "\xef\xbb\xbf# comment\r\n"
	    "[redis] ; the redis\r\n"
	    "host = h ; inline comment\r\n"
	    "  port = 6390\r\n"
	    "\tprefix=p;q\r\n"
	    "group : g\r\n"
	    "\r\n"
	    MIN_RECORDS MIN_ACTION);

	assert_string_equal(cfg->redis.host, "h");
	assert_int_equal(cfg->redis.port, 6390);
	assert_string_equal(cfg->redis.prefix, "p;q");	/* ';' right after text is no comment */
	assert_string_equal(cfg->redis.group, "g");
	cfg_free(cfg);
	EXPECT("\xef\xbb\xbf[redis]\r\n\r\nport = x\r\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:3: port: 'x' is not an integer");
}

/* §10: '#' and ';' after white space start a comment, also after a value;
 * a group or prefix with white space in it is refused (it would name
 * another group, created at id 0, and replay the stream). */
static void
test_inline_hash_comments(void **state)
{
	(void)state;
	struct cfg *cfg = load_ok(
	    "[daemon]   # the worker\n"
	    "consumer = w1\t# this host\n"
	    "[redis]\n"
	    "group = workers   # production\n"
	    "prefix = p#q ; '#' right after text is no comment\n"
	    "[metrics]\n"
	    "listen = 127.0.0.1:9464   # scraped by prometheus\n"
	    MIN_RECORDS MIN_ACTION);

	assert_string_equal(cfg->daemon.consumer, "w1");
	assert_string_equal(cfg->redis.group, "workers");
	assert_string_equal(cfg->redis.prefix, "p#q");
	cfg_free(cfg);
	EXPECT("[redis]\ngroup = work ers\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:2: group: 'work ers' has white space or a control character in it");
	EXPECT("[redis]\nprefix = a\tb\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:2: prefix: 'a\tb' has white space or a control character in it");
}

/* ---- errors ---- */

static void
test_every_error_reported(void **state)
{
	(void)state;
	EXPECT("[daemon]\n"			/* 1 */
	    "log_level = loud\n"		/* 2 */
	    "http_client = native\n"		/* 3: a removed key */
	    "[redis]\n"				/* 4 */
	    "port = 70000\n"			/* 5 */
	    "batch = 0\n"			/* 6 */
	    MIN_RECORDS MIN_ACTION,
	    "t.ini:2: log_level: 'loud' is not one of error|warn|info|debug",
	    "t.ini:3: unknown key 'http_client' in [daemon] (removed: every call goes through "
	    "libcurl; delete the line)",
	    "t.ini:5: port: 70000 is out of range 1..65535",
	    "t.ini:6: batch: 0 is out of range 1..");
	/* syntax errors too: every one, not only the first */
	EXPECT("[redis\n"			/* 1 */
	    "[redis]\n"				/* 2 */
	    "just words\n"			/* 3 */
	    "= value\n"				/* 4 */
	    "port ; = 1\n"			/* 5 */
	    "[notify] trailing\n"		/* 6 */
	    MIN_RECORDS MIN_ACTION,
	    "t.ini:1: missing ']' in section header",
	    "t.ini:3: expected 'key = value'",
	    "t.ini:4: missing key name before '='",
	    "t.ini:5: expected 'key = value'",
	    "t.ini:6: text after ']' in section header");
}

static void
test_unknown_sections_and_keys(void **state)
{
	(void)state;
	/* one error per unknown section, not one per key under it */
	EXPECT("[bogus]\nx = 1\ny = 2\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:1: unknown section [bogus]");
	EXPECT("[Redis]\n" MIN_RECORDS "[actions a]\n" MIN_ACTION,
	    "t.ini:1: unknown section [Redis]",
	    "t.ini:4: unknown section [actions a]");
	EXPECT("[redis]\nhots = x\n" MIN_RECORDS MIN_ACTION "timeout = 5\n",
	    "t.ini:2: unknown key 'hots' in [redis]",
	    "t.ini:8: unknown key 'timeout' in [action a]");
	EXPECT("port = 1\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:1: key 'port' before any [section]");
	EXPECT(MIN_RECORDS "[action]\nurl = https://h/\n[action a*]\nurl = https://h/\n" MIN_ACTION,
	    "t.ini:3: [action] needs a name",
	    "t.ini:5: action name 'a*' has '*'");
}

/* warrantd(8) -t: a misspelt key or section names the nearest one. */
/* Issue 23: a Redis password does not cross a network in clear text
 * without allow_plaintext = yes; loopback and unix sockets are fine. */
static void
test_redis_password_plaintext(void **state)
{
	(void)state;
	EXPECT("[redis]\nhost = 10.0.0.5\npassword_file = pw\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:2: host: the Redis password would cross the network to 10.0.0.5 in clear "
	    "text");
	EXPECT("[redis]\nsentinels = 10.0.0.1:26379, 127.0.0.1:26380\nmaster_name = m\n"
	    "password_file = pw\nallow_hosts = 127.0.0.1:6379\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:2: sentinels: the Redis password would cross the network to 10.0.0.1");
	EXPECT("[redis]\ncluster = redis.example:7000\nprefix = {w}\npassword_file = pw\n"
	    MIN_RECORDS MIN_ACTION,
	    "t.ini:2: cluster: the Redis password would cross the network to redis.example");
	cfg_free(load_ok("[redis]\nhost = 10.0.0.5\npassword_file = pw\nallow_plaintext = yes\n"
	    MIN_RECORDS MIN_ACTION));
	cfg_free(load_ok("[redis]\nhost = 127.0.0.2\npassword_file = pw\n" MIN_RECORDS
	    MIN_ACTION));
	cfg_free(load_ok("[redis]\nhost = 10.0.0.5\nsocket = /run/r.sock\npassword_file = pw\n"
	    MIN_RECORDS MIN_ACTION));
	cfg_free(load_ok("[redis]\nhost = 10.0.0.5\n" MIN_RECORDS MIN_ACTION));	/* no password */
}

/* Issue 37 item 1: every credential that will be sent, not only
 * password_file: the Redis token (auth = oauth, command), a role's password
 * (warrantctl), the sentinels' password or token. */
static void
test_redis_token_plaintext(void **state)
{
	(void)state;
	EXPECT("[redis]\nhost = 10.9.8.7\nauth = command\ntoken_command = /bin/tok\n"
	    MIN_RECORDS MIN_ACTION,
	    "t.ini:2: host: the Redis token would cross the network to 10.9.8.7 in clear text");
	EXPECT("[redis]\nhost = 10.9.8.7\n[redis.operator]\nusername = op\npassword_file = p\n"
	    MIN_RECORDS MIN_ACTION,
	    "t.ini:2: host: the Redis password would cross the network to 10.9.8.7");
	EXPECT("[redis]\nsentinels = 10.0.0.1:26379\nmaster_name = m\n"
	    "sentinel_password_file = sp\nallow_hosts = 127.0.0.1\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:2: sentinels: the sentinel password would cross the network to 10.0.0.1");
	EXPECT("[redis]\nsentinels = 10.0.0.1:26379\nmaster_name = m\nauth = command\n"
	    "token_command = /bin/tok\nallow_hosts = 127.0.0.1:6379\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:2: sentinels: the Redis token would cross the network to 10.0.0.1");
	/* with sentinels or a cluster, allow_hosts names where it may go: known now */
	EXPECT("[redis]\nsentinels = 127.0.0.1:26379\nmaster_name = m\npassword_file = pw\n"
	    "allow_hosts = 127.0.0.1:6379, 10.0.0.0/24:6379\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:5: allow_hosts: the Redis password would cross the network to 10.0.0.0/24 "
	    "in clear text");
	EXPECT("[redis]\ncluster = 127.0.0.1:7000\nprefix = {w}\nauth = command\n"
	    "token_command = /bin/tok\nallow_hosts = localhost, redis.example:7001\n"
	    MIN_RECORDS MIN_ACTION,
	    "t.ini:6: allow_hosts: the Redis token would cross the network to redis.example");
	cfg_free(load_ok("[redis]\nsentinels = 127.0.0.1:26379\nmaster_name = m\n"
	    "password_file = pw\nallow_hosts = 127.0.0.1:6379, [::1]:6380, localhost:6381\n"
	    MIN_RECORDS MIN_ACTION));
	cfg_free(load_ok("[redis]\nsentinels = 127.0.0.1:26379\nmaster_name = m\n"
	    "password_file = pw\nallow_hosts = 10.0.0.0/24:6379\nallow_plaintext = yes\n"
	    MIN_RECORDS MIN_ACTION));
	cfg_free(load_ok("[redis]\nsentinels = 127.0.0.1:26379\nmaster_name = m\n"
	    "allow_hosts = 10.0.0.0/24:6379\n" MIN_RECORDS MIN_ACTION));	/* no credential */
	cfg_free(load_ok("[redis]\nhost = 10.9.8.7\nauth = command\ntoken_command = /bin/tok\n"
	    "allow_plaintext = yes\n" MIN_RECORDS MIN_ACTION));
	cfg_free(load_ok("[redis]\nhost = ::1\nauth = command\ntoken_command = /bin/tok\n"
	    MIN_RECORDS MIN_ACTION));
}

static char *dump_text(const struct cfg *cfg);

/* Issue 27 item 6: [redis] tls. A password may then cross the network; the
 * tls_* keys need tls = yes; a unix socket excludes it; a client
 * certificate comes with its key; a server name is a name, not a URL. */
static void
test_redis_tls(void **state)
{
	(void)state;
	struct cfg *cfg = load_ok("[redis]\nhost = 10.0.0.5\npassword_file = pw\ntls = yes\n"
	    "tls_ca_file = ca.crt\ntls_cert_file = c.crt\ntls_key_file = c.key\n"
	    "tls_server_name = redis.example\n" MIN_RECORDS MIN_ACTION);
	assert_int_equal(cfg->redis.tls, 1);
	assert_string_equal(cfg->redis.tls_ca_file, "ca.crt");
	assert_string_equal(cfg->redis.tls_server_name, "redis.example");
	char *dump = dump_text(cfg);
	assert_non_null(strstr(dump, "\ntls = yes\n"));
	assert_non_null(strstr(dump, "\ntls_server_name = redis.example\n"));
	free(dump);
	cfg_free(cfg);
	cfg_free(load_ok("[redis]\nsentinels = 10.0.0.1:26379\nmaster_name = m\n"
	    "password_file = pw\ntls = yes\nallow_hosts = 10.0.0.0/24:6379\n" MIN_RECORDS MIN_ACTION));
	EXPECT("[redis]\nhost = 10.0.0.5\ntls_ca_file = ca.crt\ntls_server_name = r\n"
	    MIN_RECORDS MIN_ACTION,
	    "t.ini:3: tls_ca_file is only used with tls = yes",
	    "t.ini:4: tls_server_name is only used with tls = yes");
	EXPECT("[redis]\nsocket = /run/r.sock\ntls = yes\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:2: socket and tls exclude each other");
	EXPECT("[redis]\ntls = yes\ntls_cert_file = c.crt\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:3: tls_cert_file and tls_key_file go together");
	EXPECT("[redis]\ntls = yes\ntls_key_file = c.key\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:3: tls_cert_file and tls_key_file go together");
	EXPECT("[redis]\ntls = yes\ntls_server_name = redis.example:6380\n" MIN_RECORDS
	    MIN_ACTION, "t.ini:3: tls_server_name: a host name or address, without port");
	EXPECT("[redis]\ntls = maybe\n" MIN_RECORDS MIN_ACTION, "t.ini:2: ");
}

static void
test_did_you_mean(void **state)
{
	(void)state;
	EXPECT("[daemon]\nlog_levle = info\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:2: unknown key 'log_levle' in [daemon]; did you mean 'log_level'?");
	EXPECT("[redis]\nclaim_idle = 5\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:2: unknown key 'claim_idle' in [redis]; did you mean 'claim_idle_ms'?");
	EXPECT(MIN_RECORDS MIN_ACTION "timeout = 5\n",
	    "t.ini:6: unknown key 'timeout' in [action a]; did you mean 'timeout_ms'?");
	EXPECT("[reddis]\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:1: unknown section [reddis]; did you mean [redis]?");
	/* nothing near: no guess */
	struct cfg_errors errs = {0};
	assert_null(parse("[daemon]\nzzz = 1\n" MIN_RECORDS MIN_ACTION, &errs));
	assert_int_equal(errs.n, 1);
	assert_null(strstr(errs.msgs[0], "did you mean"));
	cfg_errors_clear(&errs);
}

static char *
dump_text(const struct cfg *cfg)
{
	char *text = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);

	assert_non_null(f);
	cfg_dump(cfg, f);
	assert_int_equal(fclose(f), 0);
	return text;
}

/* §13: the action's limits and breaker; breaker_failures may say `off`,
 * and -T shows what holds. */
static void
test_action_gate_keys(void **state)
{
	(void)state;
	struct cfg *cfg = load_ok(MIN_RECORDS MIN_ACTION "max_in_flight = 4\nrate_per_s = 20\n"
	    "breaker_failures = 5\n[action b]\nurl = http://127.0.0.1/y\nauth = none\n"
	    "breaker_failures = off\n");
	const struct cfg_action *a = cfg_action_find(cfg, "a"), *b = cfg_action_find(cfg, "b");

	assert_int_equal(a->max_in_flight, 4);
	assert_int_equal(a->rate_per_s, 20);
	assert_int_equal(a->breaker_failures, 5);
	assert_int_equal(a->breaker_open_ms, 30000);	/* the default */
	assert_int_equal(b->max_in_flight, 0);		/* unset: no limit */
	assert_int_equal(b->breaker_failures, 0);
	char *text = dump_text(cfg);
	assert_non_null(strstr(text, "\nmax_in_flight = 4\nrate_per_s = 20\nbreaker_failures = 5\n"
	    "breaker_open_ms = 30000\n"));
	assert_non_null(strstr(text, "\n;max_in_flight =\n;rate_per_s =\nbreaker_failures = off\n"));
	free(text);
	cfg_free(cfg);
	EXPECT(MIN_RECORDS MIN_ACTION "max_in_flight = 0\n",
	    "t.ini:6: max_in_flight: 0 is out of range");
	EXPECT(MIN_RECORDS MIN_ACTION "breaker_failures = never\n",
	    "t.ini:6: breaker_failures: 'never' is not an integer");
}

/* -T: every key shown (none as '?'), defaults and derived values filled in,
 * and the text loads back to the same configuration. */
static void
test_dump_round_trip(void **state)
{
	(void)state;
	struct cfg *cfg = load_ok("[daemon]\nconsumer = w1\n[redis]\nclaim_idle_ms = 30000\n"
	    "[oauth]\ntoken_url = https://idp/t\nclient_id = c\nclient_secret_file = s\n"
	    "[authz]\nurl = https://pdp/v1/data\n[metrics]\nlisten = 127.0.0.1:9464\n"
	    "[redis.monitor]\nusername = monitor\npassword_file = m.pw\n"
	    MIN_RECORDS MIN_ACTION "method = put\n");
	char *first = dump_text(cfg);

	assert_non_null(strstr(first, "\n[redis.monitor]\nusername = monitor\npassword_file = m.pw\n"));
	assert_null(strstr(first, "[redis.operator]"));	/* only the roles set */

	assert_null(strstr(first, "= ?"));
	assert_non_null(strstr(first, "\nlease_renew_ms = 10000\n"));	/* derived */
	assert_non_null(strstr(first, "\nassertion_audience = https://idp/t\n"));
	assert_non_null(strstr(first, "\nmethod = PUT\n"));
	assert_non_null(strstr(first, "\n;socket =\n"));
	assert_non_null(strstr(first, "\n;shards =\n"));
	assert_non_null(strstr(first, "\n[action a]\n"));
	/* every key of the parser is in it */
	const char *section, *key;
	for (size_t i = 0; (key = cfg_key_at(i, &section)) != NULL; i++) {
		char set[80], unset[80];
		snprintf(set, sizeof set, "\n%s = ", key);
		snprintf(unset, sizeof unset, "\n;%s =", key);
		if (!strstr(first, set) && !strstr(first, unset))
			fail_msg("-T leaves out [%s] %s", section, key);
	}
	struct cfg *again = load_ok(first);
	char *second = dump_text(again);
	assert_string_equal(strchr(first, '\n'), strchr(second, '\n'));	/* past the path */
	free(first);
	free(second);
	cfg_free(again);
	cfg_free(cfg);
}

/* conf/warrantd.ini is the commented example of every key: each key of the
 * parser appears in its section, set or as ";key = example". */
static void
test_example_has_every_key(void **state)
{
	(void)state;
	FILE *f = fopen("conf/warrantd.ini", "r");
	char line[512], section[64] = "";
	char seen[4096] = " ";

	assert_non_null(f);
	while (fgets(line, sizeof line, f)) {
		char key[64];
		if (sscanf(line, "[action %63[^]]]", key) == 1)
			snprintf(section, sizeof section, "action");
		else if (sscanf(line, ";[redis.%63[^]]]", key) == 1)	/* an example left off */
			snprintf(section, sizeof section, "redis.ROLE");
		else if (sscanf(line, "[%63[^]]]", key) == 1)
			snprintf(section, sizeof section, "%s", key);
		else if (sscanf(line, ";%63[a-z_] =", key) == 1 || sscanf(line, "%63[a-z_] =", key) == 1)
			snprintf(seen + strlen(seen), sizeof seen - strlen(seen), "%s.%s ", section,
			    key);
	}
	fclose(f);
	const char *sec, *key;
	size_t missing = 0;
	for (size_t i = 0; (key = cfg_key_at(i, &sec)) != NULL; i++) {
		char want[140];
		snprintf(want, sizeof want, " %s.%s ", sec, key);
		if (!strstr(seen, want)) {
			print_message("[%s] %s is not in conf/warrantd.ini\n", sec, key);
			missing++;
		}
	}
	assert_int_equal(missing, 0);
}

static size_t
count_warnings(const char *text, const char *needle)
{
	struct cfg *cfg = load_ok(text);
	struct cfg_errors w = {0};
	size_t hits = 0;

	assert_int_equal(cfg_warnings(cfg, &w), 0);
	for (size_t i = 0; i < w.n; i++) {
		assert_true(strncmp(w.msgs[i], "t.ini:", 6) == 0);
		assert_non_null(strstr(w.msgs[i], ": warning: "));
		hits += needle && strstr(w.msgs[i], needle) != NULL;
	}
	if (!needle)
		hits = w.n;
	cfg_errors_clear(&w);
	cfg_free(cfg);
	return hits;
}

/* -t's warnings: what works but weakens a guarantee or looks like a slip. */
static void
test_warnings(void **state)
{
	(void)state;
	const char *pdp = "[authz]\nurl = https://pdp/v1/data\n";
	const char *idp = "[oauth]\ntoken_url = https://idp/t\nclient_id = c\n"
	    "client_secret_file = s\n";
	char text[1024];

	snprintf(text, sizeof text, "%s" MIN_RECORDS "audience = d\n" MIN_ACTION, pdp);
	assert_int_equal(count_warnings(text, NULL), 0);
	snprintf(text, sizeof text, "%s" MIN_RECORDS MIN_ACTION, pdp);	/* issue 37 item 7 */
	assert_int_equal(count_warnings(text, "t.ini:3: warning: [records] audience is unset"), 1);
	assert_int_equal(count_warnings(MIN_RECORDS MIN_ACTION, "t.ini:1: warning: [authz] url "
	    "is unset"), 1);
	snprintf(text, sizeof text, "%s[records]\nalgorithm = HS256\nverify_key_file = k\n"
	    MIN_ACTION, pdp);
	assert_int_equal(count_warnings(text, "t.ini:4: warning: HS256"), 1);
	snprintf(text, sizeof text, "%s[records]\nsignature = off\n" MIN_ACTION, pdp);
	assert_int_equal(count_warnings(text, "t.ini:4: warning: records are not signed"), 1);
	snprintf(text, sizeof text, "%s" MIN_RECORDS MIN_ACTION "method = FROB\n", pdp);
	assert_int_equal(count_warnings(text, "t.ini:8: warning: method FROB"), 1);
	snprintf(text, sizeof text, "%s%s" MIN_RECORDS MIN_ACTION, pdp, idp);
	/* issue 26: the PDP no longer gets the worker's token, so no warning */
	assert_int_equal(count_warnings(text, "t.ini:2: warning: the PDP is sent the worker's "
	    "own token"), 0);
}

static void
test_duplicates(void **state)
{
	(void)state;
	EXPECT("[redis]\nport = 1\nport = 2\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:3: duplicate key 'port' (first at line 2)");
	/* the duplicate's keys are not reported again */
	EXPECT(MIN_RECORDS MIN_ACTION "[action  a ]\nurl = https://h/\nauth = none\n",
	    "t.ini:6: duplicate section [action a] (first at line 3)");
	EXPECT("[redis]\nport = 1\n[daemon]\n[redis]\nport = 2\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:4: duplicate section [redis] (first at line 1)");
}

static void
test_bad_numbers(void **state)
{
	(void)state;
	EXPECT("[redis]\n"				/* 1 */
	    "port = abc\n"				/* 2 */
	    "batch = 10ms\n"				/* 3 */
	    "block_ms = 99999999999999999999\n"		/* 4 */
	    "db = 1.5\n"				/* 5 */
	    "claim_interval_ms = 0x10\n"		/* 6 */
	    "max_deliveries = \n"			/* 7 */
	    "host =\n"					/* 8 */
	    "[daemon]\n"				/* 9 */
	    "max_in_flight = 0\n"			/* 10 */
	    "heartbeat_ms = -5\n"			/* 11 */
	    "shutdown_grace_ms = -1\n"			/* 12 */
	    "[authz]\n"					/* 13 */
	    "timeout_ms = 0\n"				/* 14 */
	    "[retry]\n"					/* 15 */
	    "max_attempts = 2147483648\n"		/* 16 */
	    MIN_RECORDS MIN_ACTION
	    "timeout_ms = -1\n",			/* 22 */
	    "t.ini:2: port: 'abc' is not an integer",
	    "t.ini:3: batch: '10ms' is not an integer",
	    "t.ini:4: block_ms: 99999999999999999999 is out of range",
	    "t.ini:5: db: '1.5' is not an integer",
	    "t.ini:6: claim_interval_ms: '0x10' is not an integer",
	    "t.ini:7: max_deliveries: empty value",
	    "t.ini:8: host: empty value",
	    "t.ini:10: max_in_flight: 0 is out of range 1..",
	    "t.ini:11: heartbeat_ms: -5 is out of range 1..",
	    "t.ini:12: shutdown_grace_ms: -1 is out of range 0..",
	    "t.ini:14: timeout_ms: 0 is out of range 1..",
	    "t.ini:16: max_attempts: 2147483648 is out of range 1..2147483647",
	    "t.ini:22: timeout_ms: -1 is out of range 1..");
	EXPECT("[redis]\nport = 65536\nport2 = 1\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:2: port: 65536 is out of range 1..65535",
	    "t.ini:3: unknown key 'port2'");
	EXPECT("[retry]\nbase_ms = 1000\ncap_ms = 999\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:3: cap_ms (999) must not be below base_ms (1000)");
}

static void
test_bad_ratio(void **state)
{
	(void)state;
	static const char *const bad[] = {"0", "1", "1.5", "-0.5", "abc", "0.5x", "nan", "inf"};
	char text[256];

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(text, sizeof text, MIN_RECORDS MIN_ACTION
		    "[oauth]\ntoken_url = https://h/t\nclient_id = c\nclient_secret_file = s\n"
		    "refresh_ratio = %s\n", bad[i]);
		EXPECT(text, "t.ini:10: refresh_ratio: ");
	}
}

static void
test_metrics_section(void **state)
{
	(void)state;
	struct cfg *cfg = load_ok(MIN_RECORDS MIN_ACTION);
	assert_null(cfg->metrics.listen);	/* off by default */
	assert_int_equal(cfg->metrics.allow_remote, 0);
	cfg_free(cfg);
	cfg = load_ok(MIN_RECORDS MIN_ACTION "[metrics]\nlisten = [::1]:9464\n");
	assert_string_equal(cfg->metrics.listen, "[::1]:9464");
	/* parsed once, here: the daemon binds the typed address */
	assert_int_equal(cfg->metrics.listen_addr.sa.ss_family, AF_INET6);
	assert_int_equal(cfg->metrics.listen_addr.is_loopback, 1);
	cfg_free(cfg);
	cfg = load_ok(MIN_RECORDS MIN_ACTION "[metrics]\nlisten = 0.0.0.0:9464\n"
	    "allow_remote = yes\n");
	assert_int_equal(cfg->metrics.allow_remote, 1);
	cfg_free(cfg);
	EXPECT(MIN_RECORDS MIN_ACTION "[metrics]\nlisten = 0.0.0.0:9464\n",
	    "t.ini:7: listen: '0.0.0.0:9464' is not a loopback address");
	EXPECT(MIN_RECORDS MIN_ACTION "[metrics]\nallow_remote = no\nlisten = localhost:1\n",
	    "t.ini:8: listen: 'localhost:1' is not IPV4:PORT");
	EXPECT(MIN_RECORDS MIN_ACTION "[metrics]\nallow_remote = true\n",
	    "t.ini:7: allow_remote: 'true' is not one of yes|no");
}

/* [web]: parsed here for warrantd -t; warrantd-web checks the rest (wconf). */
static void
test_web_section(void **state)
{
	(void)state;
	struct cfg *cfg = load_ok(MIN_RECORDS MIN_ACTION);
	assert_null(cfg->web.listen);
	assert_null(cfg->web.users_file);
	assert_int_equal(cfg->web.idle_timeout_s, 900);
	cfg_free(cfg);
	cfg = load_ok(MIN_RECORDS MIN_ACTION "[web]\nlisten = 127.0.0.1:1 unix:/run/w.sock\n"
	    "users_file = u\ntls_cert_file = c\ntls_key_file = k\nidle_timeout_s = 60\n");
	assert_string_equal(cfg->web.listen, "127.0.0.1:1 unix:/run/w.sock");
	assert_string_equal(cfg->web.users_file, "u");
	assert_string_equal(cfg->web.tls_cert_file, "c");
	assert_string_equal(cfg->web.tls_key_file, "k");
	assert_int_equal(cfg->web.idle_timeout_s, 60);
	cfg_free(cfg);
	EXPECT(MIN_RECORDS MIN_ACTION "[web]\nidle_timeout_s = 59\n", "t.ini:7: idle_timeout_s: ");
	EXPECT(MIN_RECORDS MIN_ACTION "[web]\nsession = 1\n", "t.ini:7: ");
}

#define MIN_OAUTH "[oauth]\ntoken_url = https://idp/t\nclient_id = c\nclient_secret_file = s\n"

/* warrantd(7) §9: [redis] auth and the keys of each source. */
static void
test_redis_auth(void **state)
{
	(void)state;
	struct cfg *cfg = load_ok(MIN_RECORDS MIN_ACTION);
	assert_int_equal(cfg->redis.auth, CFG_REDIS_PASSWORD);
	cfg_free(cfg);
	cfg = load_ok(MIN_RECORDS MIN_ACTION MIN_OAUTH "[redis]\nauth = oauth\n"
	    "username = 0f1e2d3c\ntoken_scope = https://redis.azure.com/.default\n");
	assert_int_equal(cfg->redis.auth, CFG_REDIS_OAUTH);
	assert_string_equal(cfg->redis.token_scope, "https://redis.azure.com/.default");
	cfg_free(cfg);
	cfg = load_ok(MIN_RECORDS MIN_ACTION "[redis]\nauth = command\n"
	    "token_command = /usr/bin/tok --user 'a b' \"c\\\"d\"\n");
	assert_int_equal(cfg->redis.auth, CFG_REDIS_COMMAND);
	assert_string_equal(cfg->redis.token_command, "/usr/bin/tok --user 'a b' \"c\\\"d\"");
	cfg_free(cfg);
	/* lines: 1-5 records and action, 6 [redis] */
	EXPECT(MIN_RECORDS MIN_ACTION "[redis]\nauth = iam\n",
	    "t.ini:7: auth: 'iam' is not one of password|oauth|command");
	EXPECT(MIN_RECORDS MIN_ACTION "[redis]\nauth = oauth\ntoken_scope = s\n",
	    "t.ini:7: auth = oauth needs an [oauth] section (the client that fetches the token)");
	EXPECT(MIN_RECORDS MIN_ACTION MIN_OAUTH "[redis]\nauth = oauth\n",
	    "t.ini:11: auth = oauth needs token_scope or token_resource (e.g. token_scope = "
	    "https://redis.azure.com/.default)");
	EXPECT(MIN_RECORDS MIN_ACTION "[redis]\nauth = command\n",
	    "t.ini:6: [redis] token_command is required with auth = command");
	EXPECT(MIN_RECORDS MIN_ACTION "[redis]\nauth = command\ntoken_command = tok --x\n",
	    "t.ini:8: token_command: the program must be an absolute path (no PATH lookup, no shell)");
	EXPECT(MIN_RECORDS MIN_ACTION "[redis]\nauth = command\ntoken_command = /t 'x\n",
	    "t.ini:8: token_command: unclosed single quote");
	EXPECT(MIN_RECORDS MIN_ACTION "[redis]\nauth = command\ntoken_command = /t\n"
	    "password_file = p\ntoken_scope = s\n",
	    "t.ini:9: password_file is only used with auth = password (auth = command fetches a token)",
	    "t.ini:10: token_scope is only used with auth = oauth");
	/* a line is at most 199 bytes: a longer command is refused at its line,
	 * never cut (README: put a long one in a wrapper script) */
	char long_cmd[400];
	snprintf(long_cmd, sizeof long_cmd, MIN_RECORDS MIN_ACTION "[redis]\nauth = command\n"
	    "token_command = /usr/bin/tok %0190d\n", 7);
	EXPECT(long_cmd, "t.ini:6: [redis] token_command is required with auth = command",
	    "t.ini:8: line longer than 199 bytes");
	EXPECT(MIN_RECORDS MIN_ACTION "[redis]\ntoken_command = /t\ntoken_resource = r\n",
	    "t.ini:7: token_command is only used with auth = command",
	    "t.ini:8: token_resource is only used with auth = oauth");
}

static void
test_bad_enums(void **state)
{
	(void)state;
	EXPECT("[daemon]\n"					/* 1 */
	    "log_level = INFO\n"				/* 2 */
	    "[records]\n"					/* 3 */
	    "signature = maybe\n"				/* 4 */
	    "algorithm = none\n"				/* 5 */
	    "verify_key_file = k\n"				/* 6 */
	    "[oauth]\n"						/* 7 */
	    "token_url = https://h/t\n"				/* 8 */
	    "client_id = c\n"					/* 9 */
	    "client_secret_file = s\n"				/* 10 */
	    "auth_method = basic\n"				/* 11 */
	    "assertion_alg = HS256\n"				/* 12 */
	    "[action a]\n"					/* 13 */
	    "url = https://h/\n"					/* 14 */
	    "auth = bearer\n"					/* 15 */
	    "method = PO ST\n",					/* 16 */
	    "t.ini:2: log_level: 'INFO' is not one of error|warn|info|debug",
	    "t.ini:4: signature: 'maybe' is not one of required|off",
	    "t.ini:5: algorithm: 'none' is not one of ES256|HS256|RS256",
	    "t.ini:11: auth_method: 'basic' is not one of "
	    "client_secret_basic|client_secret_post|private_key_jwt",
	    "t.ini:12: assertion_alg: 'HS256' is not one of RS256|ES256",
	    "t.ini:15: auth: 'bearer' is not one of oauth|none|static",
	    "t.ini:16: method: 'PO ST' is not an HTTP method");
	EXPECT("[records]\nalgorithm = HS512\nverify_key_file = k\n" MIN_ACTION "method = G(ET\n",
	    "t.ini:2: algorithm: 'HS512' is not one of",
	    "t.ini:7: method: 'G(ET' is not an HTTP method");
}

static void
test_bad_urls(void **state)
{
	(void)state;
	EXPECT(MIN_RECORDS						/* 1-2 */
	    "[oauth]\n"							/* 3 */
	    "token_url = ftp://h/t\n"					/* 4 */
	    "client_id = c\n"						/* 5 */
	    "client_secret_file = s\n"					/* 6 */
	    "[authz]\n"							/* 7 */
	    "url = http://\n"						/* 8 */
	    "[notify]\n"						/* 9 */
	    "webhook_url = https:///hook\n"				/* 10 */
	    "[action a]\n"						/* 11 */
	    "url = https://h/{foo}\n"					/* 12 */
	    "[action b]\n"						/* 13 */
	    "url = 127.0.0.1:8080/x\n"					/* 14 */
	    "[action c]\n"						/* 15 */
	    "url = http://h:99999/\n"					/* 16 */
	    "[action d]\n"						/* 17 */
	    "url = http://user@:80/x\n"					/* 18 */
	    "[action e]\n"						/* 19 */
	    "url = https://h/{resource\n"				/* 20 */
	    "[action f]\n"						/* 21 */
	    "url = http://h x/\n",					/* 22 */
	    /* and not "token_url is required" once more */
	    "t.ini:4: token_url: 'ftp://h/t' does not start with http:// or https://",
	    "t.ini:8: url: 'http://' has no host",
	    "t.ini:10: webhook_url: 'https:///hook' has no host",
	    "t.ini:12: url: unknown placeholder {foo}",
	    "t.ini:14: url: '127.0.0.1:8080/x' does not start with http:// or https://",
	    "t.ini:16: url: 'http://h:99999/' has a bad port",
	    "t.ini:18: url: 'http://user@:80/x' has no host",
	    "t.ini:20: url: unbalanced '{'",
	    "t.ini:22: url: 'http://h x/' contains white space");
}

static void
test_missing_keys(void **state)
{
	(void)state;
	/* no [records] at all: line 1 */
	EXPECT(MIN_ACTION, "t.ini:1: [records] verify_key_file is required with signature = required");
	EXPECT("[daemon]\n[records]\nissuer = x\n" MIN_ACTION,
	    "t.ini:2: [records] verify_key_file is required with signature = required");
	EXPECT(MIN_RECORDS "[oauth]\nscope = s\n" MIN_ACTION,
	    "t.ini:3: [oauth] token_url is required",
	    "t.ini:3: [oauth] client_id is required",
	    "t.ini:3: [oauth] client_secret_file is required with auth_method = client_secret_basic");
	EXPECT(MIN_RECORDS "[oauth]\ntoken_url = https://h/t\nclient_id = c\n"
	    "auth_method = client_secret_post\n" MIN_ACTION,
	    "t.ini:3: [oauth] client_secret_file is required with auth_method = client_secret_post");
	EXPECT(MIN_RECORDS "[oauth]\ntoken_url = https://h/t\nclient_id = c\n"
	    "auth_method = private_key_jwt\nclient_secret_file = s\n" MIN_ACTION,
	    "t.ini:3: [oauth] private_key_file is required with auth_method = private_key_jwt");
	EXPECT(MIN_RECORDS "[action a]\nauth = none\n[action b]\nurl = https://h/\nauth = static\n"
	    "[action c]\nurl = https://h/\nauth = none\nbearer_file = t\n",
	    "t.ini:3: [action a] url is required",
	    "t.ini:5: [action b] bearer_file is required with auth = static",
	    "t.ini:11: bearer_file is only used with auth = static");
	EXPECT(MIN_RECORDS "[action a]\nurl = https://h/\n",
	    "t.ini:3: [action a] has auth = oauth (the default) but there is no [oauth] section");
	/* scope, audience, resource narrow the OAuth token: nothing else has one */
	EXPECT(MIN_RECORDS "[action a]\nurl = https://h/\nauth = none\nscope = x\n"
	    "[action b]\nurl = https://h/\nauth = static\nbearer_file = t\naudience = y\n"
	    "resource = http://h/\n",
	    "t.ini:6: scope narrows the worker's OAuth token: only with auth = oauth",
	    "t.ini:11: audience narrows the worker's OAuth token: only with auth = oauth",
	    "t.ini:12: resource narrows the worker's OAuth token: only with auth = oauth");
	/* Sentinel: a list that parses, with a master name, and no socket */
	EXPECT("[redis]\nsentinels = 127.0.0.1:26379\nsocket = /run/r.sock\nallow_hosts = ::1\n"
	    MIN_RECORDS MIN_ACTION,
	    "t.ini:2: sentinels needs master_name",
	    "t.ini:3: socket and sentinels exclude each other: the sentinels name the primary");
	EXPECT("[redis]\nsentinels = nohost\nmaster_name = m\nallow_hosts = ::1\n"
	    MIN_RECORDS MIN_ACTION,
	    "t.ini:2: sentinels: 'nohost' is not host:port");
	EXPECT("[redis]\nmaster_name = m\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:2: master_name is only used with sentinels");
	/* issue 37 item 2: the primaries a sentinel names are configured
	 * nowhere else: allow_hosts says where they may be */
	EXPECT("[redis]\nsentinels = 127.0.0.1:26379\nmaster_name = m\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:2: [redis] sentinels needs allow_hosts naming where the primaries may be "
	    "(host:port)");
	EXPECT("[redis]\nsentinels = 127.0.0.1:26379\nmaster_name = m\nallow_hosts = h:0\n"
	    MIN_RECORDS MIN_ACTION, "t.ini:4: allow_hosts: 'h:0' is not a host name");
	/* Cluster: seeds that parse, one slot per shard, db 0, no socket */
	EXPECT("[redis]\ncluster = 127.0.0.1:7001\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:1: on a cluster the prefix needs a hash tag (e.g. {warrant}) or shards must "
	    "be set: each script's keys must share one slot");
	EXPECT("[redis]\ncluster = h\nprefix = {w}\ndb = 2\nsocket = /s\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:2: cluster: 'h' is not host:port",
	    "t.ini:2: cluster excludes socket and sentinels: the cluster names its nodes",
	    "t.ini:4: a Redis Cluster has only db 0");
	EXPECT("[redis]\nshards = 4\nprefix = {w}\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:3: with shards the prefix takes no braces: shard i is {prefix:i}");
	EXPECT("[redis]\nshards = 0\n" MIN_RECORDS MIN_ACTION, "t.ini:2: shards");
	EXPECT("[redis]\nshards = 1025\n" MIN_RECORDS MIN_ACTION, "t.ini:2: shards");
	/* token = exchange trades the worker's OAuth token: it needs one */
	EXPECT(MIN_RECORDS "[action a]\nurl = https://h/\ntoken = exchange\n",
	    "t.ini:3: [action a] has auth = oauth (the default) but there is no [oauth] section");
	EXPECT(MIN_RECORDS "[action a]\nurl = https://h/\nauth = none\ntoken = exchange\n"
	    "[action b]\nurl = https://h/\nauth = none\ntoken = mine\n",
	    "t.ini:6: token = exchange trades the worker's OAuth token: only with auth = oauth",
	    "t.ini:10: token: 'mine' is not one of worker|exchange|per-record");
	/* issue 26, §6, §7: the PDP's and the sink's tokens are their own */
	EXPECT(MIN_RECORDS MIN_ACTION MIN_OAUTH "[authz]\nurl = https://pdp/\nauth = oauth\n"
	    "[notify]\nwebhook_url = https://hook/\nauth = static\nbearer_file = b\nscope = x\n",
	    "t.ini:12: [authz] auth = oauth needs a scope, resource or audience of its own: the "
	    "worker's token could call every action",
	    "t.ini:17: scope is only used with auth = oauth");
	EXPECT(MIN_RECORDS "[action a]\nurl = https://h/\nauth = none\ntoken = per-record\n",
	    "t.ini:6: token = per-record asks the [oauth] client for a token: only with auth = oauth");
	/* an empty value is its own error, not also a missing key */
	EXPECT(MIN_RECORDS MIN_ACTION "[oauth]\ntoken_url =\nclient_id = c\nclient_secret_file = s\n",
	    "t.ini:7: token_url: empty value");
	EXPECT(MIN_RECORDS, "t.ini:1: no [action NAME] section");
	EXPECT("", "t.ini:1: [records] verify_key_file is required", "t.ini:1: no [action NAME]");
}

/* warrantd(7) §10: http:// to a host that is not loopback only with allow_http. */
static void
test_clear_text_http(void **state)
{
	(void)state;
	EXPECT(MIN_RECORDS
	    "[oauth]\ntoken_url = http://idp.example/t\nclient_id = c\n"	/* 3-5 */
	    "client_secret_file = s\n"						/* 6 */
	    "[authz]\nurl = http://10.0.0.7:8181/v1/data/allow\n"		/* 7, 8 */
	    "[notify]\nwebhook_url = HTTP://hooks.example/n\n"			/* 9, 10 */
	    "[action a]\nurl = http://gates.example/{resource}\nauth = none\n"	/* 11-13 */
	    "[action b]\nurl = http://user@128.0.0.1/x\nauth = none\n",	/* 14-16 */
	    "t.ini:4: token_url: http:// to a host that is not loopback",
	    "t.ini:8: url: http:// to a host that is not loopback",
	    "t.ini:10: webhook_url: http:// to a host that is not loopback",
	    "t.ini:12: url: http:// to a host that is not loopback",
	    "t.ini:15: url: http:// to a host that is not loopback");
	/* allowed per section; https anywhere; http to loopback */
	struct cfg *cfg = load_ok(MIN_RECORDS
	    "[oauth]\ntoken_url = http://idp.example/t\nclient_id = c\nclient_secret_file = s\n"
	    "allow_http = yes\n"
	    "[authz]\nurl = http://[::1]:8181/v1/data/allow\n"
	    "[notify]\nwebhook_url = http://localhost:9/n\n"
	    "[action a]\nurl = http://gates.example/{resource}\nauth = none\nallow_http = yes\n"
	    "[action b]\nurl = https://gates.example/x\nauth = none\n"
	    "[action c]\nurl = http://127.8.9.10:80/x\nauth = none\nallow_http = no\n");
	assert_int_equal(cfg->oauth.allow_http, 1);
	assert_int_equal(cfg->authz.allow_http, 0);
	assert_int_equal(cfg->actions[0].allow_http, 1);
	cfg_free(cfg);
	EXPECT(MIN_RECORDS MIN_ACTION "[notify]\nallow_http = maybe\n",
	    "t.ini:7: allow_http: 'maybe' is not one of yes|no");
	/* a placeholder in the host is refused as such (R7) */
	EXPECT(MIN_RECORDS "[action a]\nurl = https://{resource}.svc.internal/open\nauth = none\n",
	    "t.ini:4: url: a placeholder in the scheme, host, port or fragment");
}

/* warrantd(7) §6: [notify] auth = none (default) | static | oauth. */
static void
test_notify_auth(void **state)
{
	(void)state;
	struct cfg *cfg = load_ok(MIN_RECORDS MIN_ACTION "[notify]\nwebhook_url = https://h/n\n");
	assert_int_equal(cfg->notify.auth, CFG_AUTH_NONE);
	assert_null(cfg->notify.bearer_file);
	cfg_free(cfg);
	cfg = load_ok(MIN_RECORDS MIN_ACTION
	    "[notify]\nwebhook_url = https://h/n\nauth = static\nbearer_file = hook-token\n");
	assert_int_equal(cfg->notify.auth, CFG_AUTH_STATIC);
	assert_string_equal(cfg->notify.bearer_file, "hook-token");
	cfg_free(cfg);
	EXPECT(MIN_RECORDS MIN_ACTION "[notify]\nauth = static\n",
	    "t.ini:6: [notify] bearer_file is required with auth = static");
	EXPECT(MIN_RECORDS MIN_ACTION "[notify]\nbearer_file = t\n",
	    "t.ini:7: bearer_file is only used with auth = static");
	EXPECT(MIN_RECORDS MIN_ACTION "[notify]\nauth = oauth\n",
	    "t.ini:7: [notify] has auth = oauth but there is no [oauth] section");
	EXPECT(MIN_RECORDS MIN_ACTION "[notify]\nauth = token\n",
	    "t.ini:7: auth: 'token' is not one of oauth|none|static");
}

/* warrantd(7) §3.1: [records] max_bytes [16384]. */
static void
test_max_bytes(void **state)
{
	(void)state;
	struct cfg *cfg = load_ok(MIN_RECORDS MIN_ACTION);
	assert_int_equal(cfg->records.max_bytes, 16384);
	cfg_free(cfg);
	cfg = load_ok("[records]\nverify_key_file = k.pub\nmax_bytes = 4096\n" MIN_ACTION);
	assert_int_equal(cfg->records.max_bytes, 4096);
	cfg_free(cfg);
	EXPECT("[records]\nverify_key_file = k.pub\nmax_bytes = 0\n" MIN_ACTION,
	    "t.ini:3: max_bytes:");
}

/* Issue 10: [records] verify_threads [1], 0 (inline) to 16. */
static void
test_verify_threads(void **state)
{
	static const char *const refused[] = {"17", "-1", "two"};
	char text[256];

	(void)state;
	struct cfg *cfg = load_ok(MIN_RECORDS MIN_ACTION);
	assert_int_equal(cfg->records.verify_threads, 1);
	cfg_free(cfg);
	for (long n = 0; n <= 16; n += 16) {
		snprintf(text, sizeof text, "[records]\nverify_key_file = k.pub\n"
		    "verify_threads = %ld\n" MIN_ACTION, n);
		cfg = load_ok(text);
		assert_int_equal(cfg->records.verify_threads, n);
		cfg_free(cfg);
	}
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
		snprintf(text, sizeof text, "[records]\nverify_key_file = k.pub\n"
		    "verify_threads = %s\n" MIN_ACTION, refused[i]);
		EXPECT(text, "t.ini:3: verify_threads:");
	}
}

static void
test_consumer(void **state)
{
	(void)state;
	char text[256], name[66];

	memset(name, 'c', 65);
	name[65] = '\0';
	snprintf(text, sizeof text, "[daemon]\nconsumer = %s\n" MIN_RECORDS MIN_ACTION, name);
	EXPECT(text, "t.ini:2: consumer: '");
	name[64] = '\0';
	snprintf(text, sizeof text, "[daemon]\nconsumer = %s\n" MIN_RECORDS MIN_ACTION, name);
	struct cfg *cfg = load_ok(text);
	assert_string_equal(cfg->daemon.consumer, name);
	cfg_free(cfg);
	EXPECT("[daemon]\nconsumer = two words\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:2: consumer: 'two words' is not 1 to 64 of [A-Za-z0-9._:@-]");
	EXPECT("[daemon]\nconsumer = a/b\n" MIN_RECORDS MIN_ACTION, "t.ini:2: consumer: 'a/b'");
}

/* A line longer than 199 bytes is reported with its number, and its
 * rest is not read as a line of its own. */
/* The parser is told the host name and the directory; it asks nobody. */
static struct cfg *
parse_env(const char *host, const char *dir, const char *text, struct cfg_errors *errs)
{
	const struct cfg_env env = {.host = host, .dir = dir};

	return cfg_parse("t.ini", text, strlen(text), &env, errs);
}

static void
test_env_host_and_dir(void **state)
{
	(void)state;
	struct cfg_errors errs = {0};
	struct cfg *cfg;

	/* the host name is the default consumer; a set consumer wins */
	cfg = parse_env("worker-7.example", "conf", MIN_RECORDS MIN_ACTION, &errs);
	assert_non_null(cfg);
	assert_string_equal(cfg->daemon.consumer, "worker-7.example");
	assert_string_equal(cfg->dir, "conf");	/* as given: relative stays relative */
	cfg_free(cfg);
	cfg = parse_env("bad host", NULL, "[daemon]\nconsumer = w1\n" MIN_RECORDS MIN_ACTION,
	    &errs);
	assert_non_null(cfg);
	assert_string_equal(cfg->daemon.consumer, "w1");
	assert_string_equal(cfg->dir, ".");	/* no directory: the working one */
	cfg_free(cfg);

	/* a host name that is no consumer name, or none, asks for consumer at
	 * the [daemon] header, else line 1 */
	assert_null(parse_env("bad host", "/", "[daemon]\nlog_level = info\n" MIN_RECORDS
	    MIN_ACTION, &errs));
	assert_int_equal(errs.n, 1);
	assert_string_equal(errs.msgs[0], "t.ini:1: host name 'bad host' is not a valid "
	    "consumer name: set [daemon] consumer");
	cfg_errors_clear(&errs);
	assert_null(parse_env(NULL, "/", MIN_RECORDS MIN_ACTION, &errs));
	assert_int_equal(errs.n, 1);
	assert_string_equal(errs.msgs[0], "t.ini:1: host name '' is not a valid consumer name: "
	    "set [daemon] consumer");
	cfg_errors_clear(&errs);
	assert_null(parse_env("", "/", "\n\n[daemon]\n" MIN_RECORDS MIN_ACTION, &errs));
	assert_int_equal(errs.n, 1);
	assert_true(strncmp(errs.msgs[0], "t.ini:3: host name ''", 21) == 0);
	cfg_errors_clear(&errs);
}

/* The text's length is given: a NUL inside is an error, not its end. */
static void
test_nul_in_text(void **state)
{
	(void)state;
	static const char text[] = "[redis]\nport = 1\0\n" MIN_RECORDS MIN_ACTION;
	struct cfg_errors errs = {0};

	assert_null(cfg_parse("t.ini", text, sizeof text - 1, &test_env, &errs));
	assert_int_equal(errs.n, 1);
	assert_string_equal(errs.msgs[0], "t.ini:2: NUL byte in line");
	cfg_errors_clear(&errs);
}

/* cfg_errors_add: for messages about a loaded config, in the same form. */
static void
test_errors_add(void **state)
{
	(void)state;
	struct cfg_errors errs = {0};

	assert_int_equal(cfg_errors_add(&errs, "w.ini", 7, "cannot read %s: %s", "k", "why"), 0);
	assert_int_equal(errs.n, 1);
	assert_string_equal(errs.msgs[0], "w.ini:7: cannot read k: why");
	cfg_errors_clear(&errs);
}

static void
test_long_line(void **state)
{
	(void)state;
	char text[1024], val[512];

	memset(val, 'a', 300);
	strcpy(val + 300, " bogus = 1");
	snprintf(text, sizeof text, MIN_RECORDS "issuer = %s\n[redis]\nport = 0\n" MIN_ACTION, val);
	EXPECT(text, "t.ini:3: line longer than 199 bytes", "t.ini:5: port: 0 is out of range");

	/* the edge: 199 bytes pass, 200 do not */
	memset(val, 'i', 190);
	val[190] = '\0';
	snprintf(text, sizeof text, MIN_RECORDS "issuer = %s\n" MIN_ACTION, val);
	assert_int_equal(strlen("issuer = ") + 190, 199);
	struct cfg *cfg = load_ok(text);
	assert_int_equal(strlen(cfg->records.issuer), 190);
	cfg_free(cfg);
	strcat(val, "i");
	snprintf(text, sizeof text, MIN_RECORDS "issuer = %s\r\n" MIN_ACTION, val);
	EXPECT(text, "t.ini:3: line longer than 199 bytes");

	/* a comment is a line too */
	memset(val, '#', 300);
	val[300] = '\0';
	snprintf(text, sizeof text, "%s\n" MIN_RECORDS MIN_ACTION, val);
	EXPECT(text, "t.ini:1: line longer than 199 bytes");
}

/* R16: the connection keys a reload cannot change are named, by the key
 * table's own types; the others are not. */
static void
test_restart_keys(void **state)
{
	(void)state;
	struct cfg *a = load_ok("[redis]\nhost = a\nport = 6379\nblock_ms = 100\n"
	    MIN_RECORDS MIN_ACTION);
	struct cfg *b = load_ok("[redis]\nhost = b\nport = 6380\nblock_ms = 200\ntls = yes\n"
	    "tls_server_name = x\n" MIN_RECORDS MIN_ACTION);
	const char *names[32];

	assert_int_equal(cfg_restart_keys(a, a, names, 32), 0);
	size_t n = cfg_restart_keys(a, b, names, 32);
	assert_int_equal(n, 4);
	assert_string_equal(names[0], "host");
	assert_string_equal(names[1], "port");
	assert_string_equal(names[2], "tls");
	assert_string_equal(names[3], "tls_server_name");
	assert_int_equal(cfg_restart_keys(a, b, names, 1), 1);
	cfg_free(a);
	cfg_free(b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_restart_keys),
		cmocka_unit_test(test_oauth_defaults),
		cmocka_unit_test(test_lease_follows_claim_idle),
		cmocka_unit_test(test_heartbeat_follows_claim_idle),
		cmocka_unit_test(test_grace_follows_longest_action),
		cmocka_unit_test(test_cluster_keys),
		cmocka_unit_test(test_redis_roles),
		cmocka_unit_test(test_full_config),
		cmocka_unit_test(test_action_find_and_lines),
		cmocka_unit_test(test_long_action_name),
		cmocka_unit_test(test_comments_indent_crlf_bom),
		cmocka_unit_test(test_inline_hash_comments),
		cmocka_unit_test(test_redis_password_plaintext),
		cmocka_unit_test(test_redis_token_plaintext),
		cmocka_unit_test(test_redis_tls),
		cmocka_unit_test(test_did_you_mean),
		cmocka_unit_test(test_dump_round_trip),
		cmocka_unit_test(test_action_gate_keys),
		cmocka_unit_test(test_warnings),
		cmocka_unit_test(test_example_has_every_key),
		cmocka_unit_test(test_every_error_reported),
		cmocka_unit_test(test_unknown_sections_and_keys),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_bad_numbers),
		cmocka_unit_test(test_bad_ratio),
		cmocka_unit_test(test_metrics_section),
		cmocka_unit_test(test_web_section),
		cmocka_unit_test(test_redis_auth),
		cmocka_unit_test(test_bad_enums),
		cmocka_unit_test(test_bad_urls),
		cmocka_unit_test(test_missing_keys),
		cmocka_unit_test(test_clear_text_http),
		cmocka_unit_test(test_notify_auth),
		cmocka_unit_test(test_max_bytes),
		cmocka_unit_test(test_verify_threads),
		cmocka_unit_test(test_consumer),
		cmocka_unit_test(test_env_host_and_dir),
		cmocka_unit_test(test_nul_in_text),
		cmocka_unit_test(test_errors_add),
		cmocka_unit_test(test_long_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
