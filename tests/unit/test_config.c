/* test_config: the INI of SPEC §10 and its errors, parsed from strings with a
 * made-up host (the file from disk: test_cfgfile; the files it names:
 * test_secrets). */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

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

static void
test_defaults(void **state)
{
	(void)state;
	struct cfg *cfg = load_ok(MIN_RECORDS MIN_ACTION);

	assert_string_equal(cfg->path, "t.ini");
	assert_string_equal(cfg->dir, "/etc/warrantd");
	assert_string_equal(cfg->daemon.consumer, "test-host");
	assert_int_equal(cfg->daemon.log_level, LOG_INFO);
	assert_int_equal(cfg->daemon.max_in_flight, 256);
	/* R15: the largest action timeout_ms (10000 by default) + 5000 */
	assert_int_equal(cfg->daemon.shutdown_grace_ms, 15000);
	assert_int_equal(cfg->daemon.heartbeat_ms, 5000);

	assert_string_equal(cfg->redis.host, "127.0.0.1");
	assert_int_equal(cfg->redis.port, 6379);
	assert_null(cfg->redis.socket);
	assert_null(cfg->redis.username);
	assert_null(cfg->redis.password_file);
	assert_int_equal(cfg->redis.db, 0);
	assert_string_equal(cfg->redis.prefix, "warrant");
	assert_string_equal(cfg->redis.group, "workers");
	assert_int_equal(cfg->redis.batch, 64);
	assert_int_equal(cfg->redis.block_ms, 5000);
	assert_int_equal(cfg->redis.claim_idle_ms, 60000);
	assert_int_equal(cfg->redis.claim_interval_ms, 5000);
	assert_int_equal(cfg->redis.lease_renew_ms, 20000);
	assert_int_equal(cfg->redis.max_deliveries, 16);
	assert_int_equal(cfg->redis.dead_maxlen, 100000);
	assert_int_equal(cfg->redis.notify_maxlen, 100000);

	assert_int_equal(cfg->records.signature_required, 1);
	assert_int_equal(cfg->records.algorithm, JWA_ES256);
	assert_string_equal(cfg->records.verify_key_file, "k.pub");
	assert_null(cfg->records.issuer);
	assert_int_equal(cfg->records.max_window_s, 604800);
	assert_int_equal(cfg->records.clock_skew_s, 60);
	assert_int_equal(cfg->records.retain_s, 604800);
	assert_int_equal(cfg->records.audit_maxlen, 100000);

	assert_int_equal(cfg->oauth.present, 0);
	assert_null(cfg->oauth.token_url);
	assert_int_equal(cfg->oauth.auth_method, CFG_CLIENT_SECRET_BASIC);
	assert_int_equal(cfg->oauth.assertion_alg, JWA_RS256);
	assert_true(cfg->oauth.refresh_ratio == 0.75);
	assert_int_equal(cfg->oauth.timeout_ms, 5000);
	assert_int_equal(cfg->oauth.auth_wait_max_ms, 30000);
	assert_int_equal(cfg->oauth.min_refresh_interval_ms, 1000);

	assert_null(cfg->authz.url);
	assert_int_equal(cfg->authz.timeout_ms, 2000);
	assert_int_equal(cfg->retry.base_ms, 500);
	assert_int_equal(cfg->retry.cap_ms, 60000);
	assert_int_equal(cfg->retry.max_attempts, 10);
	assert_null(cfg->notify.default_owner);
	assert_null(cfg->notify.webhook_url);
	assert_int_equal(cfg->notify.timeout_ms, 2000);

	assert_int_equal(cfg->nactions, 1);
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
	cfg_free(cfg);
	cfg = load_ok("[redis]\ncluster = 127.0.0.1:7001\nshards = 6\n" MIN_RECORDS MIN_ACTION);
	assert_int_equal(cfg->redis.shards, 6);
	cfg_free(cfg);
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

	assert_string_equal(cfg->daemon.consumer, "w-1.a:b@c_d");
	assert_int_equal(cfg->daemon.log_level, LOG_DEBUG);
	assert_int_equal(cfg->daemon.max_in_flight, 8);
	assert_int_equal(cfg->daemon.shutdown_grace_ms, 0);
	assert_int_equal(cfg->daemon.heartbeat_ms, 1000);
	assert_string_equal(cfg->redis.host, "redis.local");
	assert_int_equal(cfg->redis.port, 6380);
	assert_string_equal(cfg->redis.socket, "/run/redis.sock");
	assert_string_equal(cfg->redis.username, "w");
	assert_string_equal(cfg->redis.password_file, "redis-pw");
	assert_int_equal(cfg->redis.db, 3);
	assert_string_equal(cfg->redis.prefix, "p");
	assert_string_equal(cfg->redis.group, "g");
	assert_int_equal(cfg->redis.batch, 10);
	assert_int_equal(cfg->redis.block_ms, 100);
	assert_int_equal(cfg->redis.claim_idle_ms, 30000);
	assert_int_equal(cfg->redis.claim_interval_ms, 1000);
	assert_int_equal(cfg->redis.lease_renew_ms, 5000);
	assert_int_equal(cfg->redis.max_deliveries, 3);
	assert_int_equal(cfg->redis.dead_maxlen, 50);
	assert_int_equal(cfg->redis.notify_maxlen, 60);
	assert_int_equal(cfg->records.signature_required, 0);
	assert_int_equal(cfg->records.algorithm, JWA_HS256);
	assert_string_equal(cfg->records.verify_key_file, "hs.key");
	assert_string_equal(cfg->records.issuer, "decider-1");
	assert_int_equal(cfg->records.max_window_s, 3600);
	assert_int_equal(cfg->records.clock_skew_s, 0);
	assert_int_equal(cfg->records.retain_s, 86400);
	assert_int_equal(cfg->records.audit_maxlen, 500);
	assert_int_equal(cfg->oauth.present, 1);
	assert_string_equal(cfg->oauth.token_url, "https://idp.example:8443/oauth2/token?x=1");
	assert_string_equal(cfg->oauth.client_id, "worker");
	assert_int_equal(cfg->oauth.auth_method, CFG_PRIVATE_KEY_JWT);
	assert_string_equal(cfg->oauth.client_secret_file, "unused");
	assert_string_equal(cfg->oauth.private_key_file, "key.pem");
	assert_int_equal(cfg->oauth.assertion_alg, JWA_ES256);
	assert_string_equal(cfg->oauth.assertion_audience, "https://idp.example/");
	assert_string_equal(cfg->oauth.key_id, "k1");
	assert_string_equal(cfg->oauth.certificate_file, "cert.pem");
	assert_string_equal(cfg->oauth.scope, "gates.write gates.read");
	assert_string_equal(cfg->oauth.resource, "https://gates.example/");
	assert_string_equal(cfg->oauth.audience, "gates");
	assert_true(cfg->oauth.refresh_ratio == 0.5);
	assert_int_equal(cfg->oauth.timeout_ms, 3000);
	assert_int_equal(cfg->oauth.auth_wait_max_ms, 4000);
	assert_int_equal(cfg->oauth.min_refresh_interval_ms, 0);
	assert_string_equal(cfg->authz.url, "http://[::1]:8181/v1/data/allow");
	assert_int_equal(cfg->authz.timeout_ms, 700);
	assert_int_equal(cfg->retry.base_ms, 100);
	assert_int_equal(cfg->retry.cap_ms, 100);
	assert_int_equal(cfg->retry.max_attempts, 1);
	assert_string_equal(cfg->notify.default_owner, "ops");
	assert_string_equal(cfg->notify.webhook_url, "http://127.0.0.1:9/hook");
	assert_int_equal(cfg->notify.timeout_ms, 900);
	assert_int_equal(cfg->nactions, 2);
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

/* inih limits a section name to 49 bytes; ours is read by our reader. */
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
	/* syntax errors too: inih itself only keeps the first */
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

#define MIN_OAUTH "[oauth]\ntoken_url = https://idp/t\nclient_id = c\nclient_secret_file = s\n"

/* SPEC §9: [redis] auth and the keys of each source. */
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
	/* inih reads 199 bytes a line: a longer command is refused at its line,
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
	EXPECT("[redis]\nsentinels = 127.0.0.1:26379\nsocket = /run/r.sock\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:2: sentinels needs master_name",
	    "t.ini:3: socket and sentinels exclude each other: the sentinels name the primary");
	EXPECT("[redis]\nsentinels = nohost\nmaster_name = m\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:2: sentinels: 'nohost' is not host:port");
	EXPECT("[redis]\nmaster_name = m\n" MIN_RECORDS MIN_ACTION,
	    "t.ini:2: master_name is only used with sentinels");
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
	    "t.ini:10: token: 'mine' is not one of worker|exchange");
	/* an empty value is its own error, not also a missing key */
	EXPECT(MIN_RECORDS MIN_ACTION "[oauth]\ntoken_url =\nclient_id = c\nclient_secret_file = s\n",
	    "t.ini:7: token_url: empty value");
	EXPECT(MIN_RECORDS, "t.ini:1: no [action NAME] section");
	EXPECT("", "t.ini:1: [records] verify_key_file is required", "t.ini:1: no [action NAME]");
}

/* SPEC §10: http:// to a host that is not loopback only with allow_http. */
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

/* SPEC §6: [notify] auth = none (default) | static | oauth. */
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

/* SPEC §3.1: [records] max_bytes [16384]. */
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

/* A line longer than inih's buffer is reported with its number, and its
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_oauth_defaults),
		cmocka_unit_test(test_lease_follows_claim_idle),
		cmocka_unit_test(test_heartbeat_follows_claim_idle),
		cmocka_unit_test(test_grace_follows_longest_action),
		cmocka_unit_test(test_cluster_keys),
		cmocka_unit_test(test_full_config),
		cmocka_unit_test(test_action_find_and_lines),
		cmocka_unit_test(test_long_action_name),
		cmocka_unit_test(test_comments_indent_crlf_bom),
		cmocka_unit_test(test_every_error_reported),
		cmocka_unit_test(test_unknown_sections_and_keys),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_bad_numbers),
		cmocka_unit_test(test_bad_ratio),
		cmocka_unit_test(test_metrics_section),
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
