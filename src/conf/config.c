/* SPDX-License-Identifier: BSD-2-Clause */
/* config: the INI file of warrantd(7) §10 -- this file holds its key table,
 * the setters that parse each value, the defaults and cfg_free. The reader
 * is config_read.c, the rules between keys config_check.c, the reload diff
 * and -T config_diff.c (config_int.h). Pure. */
#define _DEFAULT_SOURCE
#include "config_int.h"
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

#include "core/token.h"
#include "core/urltpl.h"

/* ---- values ---- */

static int
set_str(struct ctx *c, const struct key *k, void *field, const char *v)
{
	char **dst = field, *s = strdup(v);

	(void)k;
	if (!s) {
		c->nomem = 1;
		return -1;
	}
	free(*dst);
	*dst = s;
	return 0;
}

static int
parse_integer(struct ctx *c, const struct key *k, const char *v, long *out)
{
	char *end;

	errno = 0;
	long n = strtol(v, &end, 10);
	if (end == v || *end != '\0' || isspace((unsigned char)*v)) {
		cfg_fail(c, c->lineno, "%s: '%.*s' is not an integer", k->name, SHOW, v);
		return -1;
	}
	if (errno == ERANGE || n < k->min || n > k->max) {
		cfg_fail(c, c->lineno, "%s: %.*s is out of range %ld..%ld", k->name, SHOW, v,
		    k->min, k->max);
		return -1;
	}
	*out = n;
	return 0;
}

static int
set_long(struct ctx *c, const struct key *k, void *field, const char *v)
{
	long n;

	if (parse_integer(c, k, v, &n) < 0)
		return -1;
	*(long *)field = n;
	return 0;
}

/* A count, or `off` (0): [action NAME] breaker_failures. */
static int
set_long_off(struct ctx *c, const struct key *k, void *field, const char *v)
{
	if (strcmp(v, "off") == 0) {
		*(long *)field = 0;
		return 0;
	}
	return set_long(c, k, field, v);
}

static int
set_int(struct ctx *c, const struct key *k, void *field, const char *v)
{
	long n;

	if (parse_integer(c, k, v, &n) < 0)
		return -1;
	*(int *)field = (int)n;	/* k->max <= INT_MAX */
	return 0;
}

/* A fraction strictly between 0 and 1. */
static int
set_ratio(struct ctx *c, const struct key *k, void *field, const char *v)
{
	char *end;

	errno = 0;
	double r = strtod(v, &end);
	if (!(isdigit((unsigned char)*v) || *v == '.') || *end != '\0' || errno == ERANGE ||
	    !isfinite(r)) {
		cfg_fail(c, c->lineno, "%s: '%.*s' is not a number", k->name, SHOW, v);
		return -1;
	}
	if (!(r > 0 && r < 1)) {
		cfg_fail(c, c->lineno, "%s: %.*s is not between 0 and 1 (both excluded)", k->name,
		    SHOW, v);
		return -1;
	}
	*(double *)field = r;
	return 0;
}

static int
lookup(struct ctx *c, const struct key *k, const struct name_val *tbl, const char *v, int *out)
{
	char names[128] = "";

	for (const struct name_val *e = tbl; e->name; e++) {
		if (strcmp(v, e->name) == 0) {
			*out = e->val;
			return 0;
		}
		if (e != tbl)
			strncat(names, "|", sizeof names - strlen(names) - 1);
		strncat(names, e->name, sizeof names - strlen(names) - 1);
	}
	cfg_fail(c, c->lineno, "%s: '%.*s' is not one of %s", k->name, SHOW, v, names);
	return -1;
}

static const struct name_val log_levels[] = {{"error", LOG_ERROR}, {"warn", LOG_WARN},
	{"info", LOG_INFO}, {"debug", LOG_DEBUG}, {NULL, 0}};

static int
set_log_level(struct ctx *c, const struct key *k, void *field, const char *v)
{
	int n;

	if (lookup(c, k, log_levels, v, &n) < 0)
		return -1;
	*(enum log_level *)field = (enum log_level)n;
	return 0;
}

static const struct name_val signatures[] = {{"required", 1}, {"off", 0}, {NULL, 0}};

static const struct name_val log_formats[] = {{"logfmt", LOG_LOGFMT}, {"json", LOG_JSON},
	{NULL, 0}};

static int
set_log_format(struct ctx *c, const struct key *k, void *field, const char *v)
{
	int n;

	if (lookup(c, k, log_formats, v, &n) < 0)
		return -1;
	*(enum log_format *)field = (enum log_format)n;
	return 0;
}

static const struct name_val redis_auths[] = {{"password", CFG_REDIS_PASSWORD},
	{"oauth", CFG_REDIS_OAUTH}, {"command", CFG_REDIS_COMMAND}, {NULL, 0}};

static int
set_redis_auth(struct ctx *c, const struct key *k, void *field, const char *v)
{
	int n;

	if (lookup(c, k, redis_auths, v, &n) < 0)
		return -1;
	*(enum cfg_redis_auth *)field = (enum cfg_redis_auth)n;
	return 0;
}

/* The program and its arguments, split now so that -t reports a bad one
 * at its line (token_command_argv: no shell, no variables). */
static int
set_token_command(struct ctx *c, const struct key *k, void *field, const char *v)
{
	char why[160];
	char **argv = token_command_argv(v, why, sizeof why);

	if (argv == NULL) {
		cfg_fail(c, c->lineno, "%s: %s", k->name, why);
		return -1;
	}
	token_command_argv_free(argv);
	return set_str(c, k, field, v);
}

static int
set_signature(struct ctx *c, const struct key *k, void *field, const char *v)
{
	return lookup(c, k, signatures, v, field);
}

static const struct name_val algorithms[] = {{"ES256", JWA_ES256}, {"HS256", JWA_HS256},
	{"RS256", JWA_RS256}, {NULL, 0}};

static int
set_alg(struct ctx *c, const struct key *k, void *field, const char *v)
{
	int n;

	if (lookup(c, k, algorithms, v, &n) < 0)
		return -1;
	*(enum jwa_alg *)field = (enum jwa_alg)n;
	return 0;
}

static const struct name_val assertion_algs[] = {{"RS256", JWA_RS256}, {"ES256", JWA_ES256},
	{NULL, 0}};

static int
set_assertion_alg(struct ctx *c, const struct key *k, void *field, const char *v)
{
	int n;

	if (lookup(c, k, assertion_algs, v, &n) < 0)
		return -1;
	*(enum jwa_alg *)field = (enum jwa_alg)n;
	return 0;
}

static const struct name_val client_auths[] = {{"client_secret_basic", CFG_CLIENT_SECRET_BASIC},
	{"client_secret_post", CFG_CLIENT_SECRET_POST},
	{"private_key_jwt", CFG_PRIVATE_KEY_JWT}, {NULL, 0}};

static int
set_client_auth(struct ctx *c, const struct key *k, void *field, const char *v)
{
	int n;

	if (lookup(c, k, client_auths, v, &n) < 0)
		return -1;
	*(enum cfg_client_auth *)field = (enum cfg_client_auth)n;
	return 0;
}

static const struct name_val yes_no[] = {{"yes", 1}, {"no", 0}, {NULL, 0}};

static int
set_yes_no(struct ctx *c, const struct key *k, void *field, const char *v)
{
	return lookup(c, k, yes_no, v, field);
}

static const struct name_val auths[] = {{"oauth", CFG_AUTH_OAUTH}, {"none", CFG_AUTH_NONE},
	{"static", CFG_AUTH_STATIC}, {NULL, 0}};

static int
set_action_auth(struct ctx *c, const struct key *k, void *field, const char *v)
{
	int n;

	if (lookup(c, k, auths, v, &n) < 0)
		return -1;
	*(enum cfg_auth *)field = (enum cfg_auth)n;
	return 0;
}

static const struct name_val authz_apis[] = {{"opa", CFG_AUTHZ_OPA},
	{"authzen", CFG_AUTHZ_AUTHZEN}, {NULL, 0}};

static int
set_authz_api(struct ctx *c, const struct key *k, void *field, const char *v)
{
	int n;

	if (lookup(c, k, authz_apis, v, &n) < 0)
		return -1;
	*(enum cfg_authz_api *)field = (enum cfg_authz_api)n;
	return 0;
}

static const struct name_val action_tokens[] = {{"worker", CFG_TOKEN_WORKER},
	{"exchange", CFG_TOKEN_EXCHANGE}, {"per-record", CFG_TOKEN_PER_RECORD}, {NULL, 0}};

static int
set_action_token(struct ctx *c, const struct key *k, void *field, const char *v)
{
	int n;

	if (lookup(c, k, action_tokens, v, &n) < 0)
		return -1;
	*(int *)field = n;
	return 0;
}

int
cfg_consumer_ok(const char *s)
{
	size_t n = strlen(s);

	return n >= 1 && n <= CONSUMER_MAX &&
	    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:@-") == n;
}

static int
set_consumer(struct ctx *c, const struct key *k, void *field, const char *v)
{
	if (!cfg_consumer_ok(v)) {
		cfg_fail(c, c->lineno, "%s: '%.*s' is not 1 to %d of [A-Za-z0-9._:@-]", k->name, SHOW,
		    v, CONSUMER_MAX);
		return -1;
	}
	return set_str(c, k, field, v);
}

/* A group or prefix is a word: one with white space in it is almost always
 * a comment or a paste gone wrong, and would silently name another group
 * (created at id 0: the stream replayed) or other keys. */
static int
set_word(struct ctx *c, const struct key *k, void *field, const char *v)
{
	for (const char *p = v; *p; p++)
		if (isspace((unsigned char)*p) || iscntrl((unsigned char)*p)) {
			cfg_fail(c, c->lineno, "%s: '%.*s' has white space or a control character in it",
			    k->name, SHOW, v);
			return -1;
		}
	return set_str(c, k, field, v);
}

/* An HTTP method is a token (RFC 9110 §5.6.2); stored upper-cased. */
static int
set_method(struct ctx *c, const struct key *k, void *field, const char *v)
{
	static const char tchar[] = "!#$%&'*+-.^_`|~0123456789"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

	if (strspn(v, tchar) != strlen(v)) {
		cfg_fail(c, c->lineno, "%s: '%.*s' is not an HTTP method", k->name, SHOW, v);
		return -1;
	}
	if (set_str(c, k, field, v) < 0)
		return -1;
	for (char *p = *(char **)field; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	return 0;
}

/* NULL when u is an http or https URL with a host, else what is wrong. */
static const char *
url_problem(const char *u)
{
	const char *p;

	if (strncasecmp(u, "http://", 7) == 0)
		p = u + 7;
	else if (strncasecmp(u, "https://", 8) == 0)
		p = u + 8;
	else
		return "does not start with http:// or https://";
	for (const char *q = u; *q; q++)
		if ((unsigned char)*q <= ' ' || *q == 0x7f)
			return "contains white space or a control character";
	size_t alen = strcspn(p, "/?#");
	const char *host = p;
	for (const char *q = p; q < p + alen; q++)
		if (*q == '@')
			host = q + 1;
	const char *end = p + alen, *colon;
	if (*host == '[') {	/* an IPv6 literal */
		const char *rb = memchr(host, ']', (size_t)(end - host));
		if (!rb || rb == host + 1)
			return "has no host";
		colon = rb + 1 < end ? rb + 1 : NULL;
		if (colon && *colon != ':')
			return "has a bad host";
	} else {
		colon = memchr(host, ':', (size_t)(end - host));
		if ((colon ? colon : end) == host)
			return "has no host";
	}
	if (colon) {
		size_t plen = (size_t)(end - colon - 1);
		long port = plen >= 1 && plen <= 5 && strspn(colon + 1, "0123456789") == plen ?
		    strtol(colon + 1, NULL, 10) : 0;
		if (port < 1 || port > 65535)
			return "has a bad port";
	}
	return NULL;
}

static int
set_url(struct ctx *c, const struct key *k, void *field, const char *v)
{
	const char *why = url_problem(v);

	if (why) {
		cfg_fail(c, c->lineno, "%s: '%.*s' %s", k->name, SHOW, v, why);
		return -1;
	}
	return set_str(c, k, field, v);
}

static int
set_action_url(struct ctx *c, const struct key *k, void *field, const char *v)
{
	char why[128];

	if (urltpl_check(v, why, sizeof why) < 0) {
		cfg_fail(c, c->lineno, "%s: %s", k->name, why);
		return -1;
	}
	return set_url(c, k, field, v);
}

/* ---- the keys of each section ---- */

#define C(m) offsetof(struct cfg, m)
#define A(m) offsetof(struct cfg_action, m)
#define R(m) offsetof(struct cfg_role, m)

static const struct key daemon_keys[] = {
	{"consumer", set_consumer, C(daemon.consumer), 0, 0},
	{"log_level", set_log_level, C(daemon.log_level), 0, 0},
	{"log_format", set_log_format, C(daemon.log_format), 0, 0},
	{"max_in_flight", set_long, C(daemon.max_in_flight), 1, VAL_MAX},
	{"shutdown_grace_ms", set_long, C(daemon.shutdown_grace_ms), 0, VAL_MAX},
	{"heartbeat_ms", set_long, C(daemon.heartbeat_ms), 1, VAL_MAX},
	{NULL, NULL, 0, 0, 0},
};

static const struct key redis_keys[] = {
	{"host", set_str, C(redis.host), 0, 0},
	{"port", set_int, C(redis.port), 1, 65535},
	{"socket", set_str, C(redis.socket), 0, 0},
	{"username", set_str, C(redis.username), 0, 0},
	{"password_file", set_str, C(redis.password_file), 0, 0},
	{"sentinels", set_str, C(redis.sentinels), 0, 0},
	{"master_name", set_str, C(redis.master_name), 0, 0},
	{"sentinel_password_file", set_str, C(redis.sentinel_password_file), 0, 0},
	{"cluster", set_str, C(redis.cluster), 0, 0},
	{"shards", set_long, C(redis.shards), 1, SHARD_MAX},
	{"allow_hosts", set_str, C(redis.allow_hosts), 0, 0},
	{"db", set_int, C(redis.db), 0, VAL_MAX},
	{"prefix", set_word, C(redis.prefix), 0, 0},
	{"group", set_word, C(redis.group), 0, 0},
	{"batch", set_long, C(redis.batch), 1, VAL_MAX},
	{"block_ms", set_long, C(redis.block_ms), 1, VAL_MAX},	/* 0 would block forever */
	{"claim_idle_ms", set_long, C(redis.claim_idle_ms), 1, VAL_MAX},
	{"claim_interval_ms", set_long, C(redis.claim_interval_ms), 1, VAL_MAX},
	{"lease_renew_ms", set_long, C(redis.lease_renew_ms), 1, VAL_MAX},
	{"max_deliveries", set_long, C(redis.max_deliveries), 1, VAL_MAX},
	{"dead_maxlen", set_long, C(redis.dead_maxlen), 1, VAL_MAX},
	{"notify_maxlen", set_long, C(redis.notify_maxlen), 1, VAL_MAX},
	{"wait_replicas", set_long, C(redis.wait_replicas), 0, 64},
	/* WAIT's 0 is "for ever": a worker never blocks on a replica */
	{"wait_timeout_ms", set_long, C(redis.wait_timeout_ms), 1, VAL_MAX},
	{"allow_plaintext", set_yes_no, C(redis.allow_plaintext), 0, 0},
	{"tls", set_yes_no, C(redis.tls), 0, 0},
	{"tls_ca_file", set_str, C(redis.tls_ca_file), 0, 0},
	{"tls_cert_file", set_str, C(redis.tls_cert_file), 0, 0},
	{"tls_key_file", set_str, C(redis.tls_key_file), 0, 0},
	{"tls_server_name", set_str, C(redis.tls_server_name), 0, 0},
	{"auth", set_redis_auth, C(redis.auth), 0, 0},
	{"token_scope", set_str, C(redis.token_scope), 0, 0},
	{"token_resource", set_str, C(redis.token_resource), 0, 0},
	{"token_command", set_token_command, C(redis.token_command), 0, 0},
	{NULL, NULL, 0, 0, 0},
};

static const struct key records_keys[] = {
	{"signature", set_signature, C(records.signature_required), 0, 0},
	{"algorithm", set_alg, C(records.algorithm), 0, 0},
	{"verify_key_file", set_str, C(records.verify_key_file), 0, 0},
	{"issuer", set_str, C(records.issuer), 0, 0},
	{"audience", set_str, C(records.audience), 0, 0},
	{"max_window_s", set_long, C(records.max_window_s), 1, VAL_MAX},
	{"clock_skew_s", set_long, C(records.clock_skew_s), 0, VAL_MAX},
	{"retain_s", set_long, C(records.retain_s), 1, VAL_MAX},
	{"audit_maxlen", set_long, C(records.audit_maxlen), 1, VAL_MAX},
	{"max_bytes", set_long, C(records.max_bytes), 256, VAL_MAX},
	{"verify_threads", set_long, C(records.verify_threads), 0, 16},	/* VPOOL_THREADS_MAX */
	{NULL, NULL, 0, 0, 0},
};

static const struct key oauth_keys[] = {
	{"token_url", set_url, C(oauth.token_url), 0, 0},
	{"client_id", set_str, C(oauth.client_id), 0, 0},
	{"auth_method", set_client_auth, C(oauth.auth_method), 0, 0},
	{"client_secret_file", set_str, C(oauth.client_secret_file), 0, 0},
	{"private_key_file", set_str, C(oauth.private_key_file), 0, 0},
	{"assertion_alg", set_assertion_alg, C(oauth.assertion_alg), 0, 0},
	{"assertion_audience", set_str, C(oauth.assertion_audience), 0, 0},
	{"key_id", set_str, C(oauth.key_id), 0, 0},
	{"certificate_file", set_str, C(oauth.certificate_file), 0, 0},
	{"scope", set_str, C(oauth.scope), 0, 0},
	{"resource", set_str, C(oauth.resource), 0, 0},
	{"audience", set_str, C(oauth.audience), 0, 0},
	{"refresh_ratio", set_ratio, C(oauth.refresh_ratio), 0, 0},
	{"timeout_ms", set_long, C(oauth.timeout_ms), 1, VAL_MAX},
	{"auth_wait_max_ms", set_long, C(oauth.auth_wait_max_ms), 1, VAL_MAX},
	{"min_refresh_interval_ms", set_long, C(oauth.min_refresh_interval_ms), 0, VAL_MAX},
	{"dpop_key_file", set_str, C(oauth.dpop_key_file), 0, 0},
	{"rar_type", set_str, C(oauth.rar_type), 0, 0},
	{"allow_http", set_yes_no, C(oauth.allow_http), 0, 0},
	{NULL, NULL, 0, 0, 0},
};

static const struct key authz_keys[] = {
	{"url", set_url, C(authz.url), 0, 0},
	{"timeout_ms", set_long, C(authz.timeout_ms), 1, VAL_MAX},
	{"auth", set_action_auth, C(authz.auth), 0, 0},
	{"bearer_file", set_str, C(authz.bearer_file), 0, 0},
	{"scope", set_str, C(authz.scope), 0, 0},
	{"resource", set_str, C(authz.resource), 0, 0},
	{"audience", set_str, C(authz.audience), 0, 0},
	{"allow_http", set_yes_no, C(authz.allow_http), 0, 0},
	{"api", set_authz_api, C(authz.api), 0, 0},
	{"subject_type", set_word, C(authz.subject_type), 0, 0},
	{"resource_type", set_word, C(authz.resource_type), 0, 0},
	{NULL, NULL, 0, 0, 0},
};

static const struct key retry_keys[] = {
	{"base_ms", set_long, C(retry.base_ms), 1, VAL_MAX},
	{"cap_ms", set_long, C(retry.cap_ms), 1, VAL_MAX},
	{"max_attempts", set_long, C(retry.max_attempts), 1, VAL_MAX},
	{NULL, NULL, 0, 0, 0},
};

static const struct key notify_keys[] = {
	{"default_owner", set_str, C(notify.default_owner), 0, 0},
	{"webhook_url", set_url, C(notify.webhook_url), 0, 0},
	{"timeout_ms", set_long, C(notify.timeout_ms), 1, VAL_MAX},
	{"auth", set_action_auth, C(notify.auth), 0, 0},
	{"bearer_file", set_str, C(notify.bearer_file), 0, 0},
	{"scope", set_str, C(notify.scope), 0, 0},
	{"resource", set_str, C(notify.resource), 0, 0},
	{"audience", set_str, C(notify.audience), 0, 0},
	{"allow_http", set_yes_no, C(notify.allow_http), 0, 0},
	{NULL, NULL, 0, 0, 0},
};

static const struct key metrics_keys[] = {
	{"listen", set_str, C(metrics.listen), 0, 0},	/* checked in finish_metrics */
	{"allow_remote", set_yes_no, C(metrics.allow_remote), 0, 0},
	{NULL, NULL, 0, 0, 0},
};

static const struct key web_keys[] = {
	{"listen", set_str, C(web.listen), 0, 0},	/* checked by warrantd-web */
	{"tls_cert_file", set_str, C(web.tls_cert_file), 0, 0},
	{"tls_key_file", set_str, C(web.tls_key_file), 0, 0},
	{"users_file", set_str, C(web.users_file), 0, 0},
	{"idle_timeout_s", set_long, C(web.idle_timeout_s), 60, 86400},
	{"trusted_user_header", set_str, C(web.trusted_user_header), 0, 0},
	{NULL, NULL, 0, 0, 0},
};

static const struct key action_keys[] = {
	{"url", set_action_url, A(url), 0, 0},
	{"method", set_method, A(method), 0, 0},
	{"timeout_ms", set_long, A(timeout_ms), 1, VAL_MAX},
	{"auth", set_action_auth, A(auth), 0, 0},
	{"bearer_file", set_str, A(bearer_file), 0, 0},
	{"allow_http", set_yes_no, A(allow_http), 0, 0},
	{"scope", set_str, A(scope), 0, 0},
	{"audience", set_str, A(audience), 0, 0},
	{"resource", set_str, A(resource), 0, 0},
	{"token", set_action_token, A(token_exchange), 0, 0},
	{"max_in_flight", set_long, A(max_in_flight), 1, VAL_MAX},
	{"rate_per_s", set_long, A(rate_per_s), 1, VAL_MAX},
	{"breaker_failures", set_long_off, A(breaker_failures), 1, VAL_MAX},
	{"breaker_open_ms", set_long, A(breaker_open_ms), 1, VAL_MAX},
	{NULL, NULL, 0, 0, 0},
};

static const struct key role_keys[] = {
	{"username", set_str, R(username), 0, 0},
	{"password_file", set_str, R(password_file), 0, 0},
	{NULL, NULL, 0, 0, 0},
};

static const char *const role_names[CFG_NROLES] = {
	[CFG_ROLE_OPERATOR] = "operator", [CFG_ROLE_MONITOR] = "monitor",
	[CFG_ROLE_DECIDER] = "decider",
};

int
cfg_role_find(const char *name)
{
	for (int i = 0; i < CFG_NROLES; i++)
		if (strcmp(name, role_names[i]) == 0)
			return i;
	return -1;
}

static const struct cfg_section sections[] = {
	{"daemon", SEC_DAEMON, daemon_keys},
	{"redis", SEC_REDIS, redis_keys},
	{"records", SEC_RECORDS, records_keys},
	{"oauth", SEC_OAUTH, oauth_keys},
	{"authz", SEC_AUTHZ, authz_keys},
	{"retry", SEC_RETRY, retry_keys},
	{"notify", SEC_NOTIFY, notify_keys},
	{"metrics", SEC_METRICS, metrics_keys},
	{"web", SEC_WEB, web_keys},
};

const char *
cfg_key_at(size_t i, const char **section)
{
	size_t nsec = sizeof sections / sizeof sections[0];

	for (size_t s = 0; s <= nsec + 1; s++) {
		const struct key *k = s < nsec ? sections[s].keys : s == nsec ? role_keys :
		    action_keys;
		for (; k->name; k++, i--)
			if (i == 0) {
				*section = s < nsec ? sections[s].name : s == nsec ? "redis.ROLE" :
				    "action";
				return k->name;
			}
	}
	return NULL;
}

const struct cfg_section *
cfg_sections(size_t *n)
{
	*n = sizeof sections / sizeof sections[0];
	return sections;
}

const struct key *
cfg_keys_of(enum section sec)
{
	if (sec == SEC_ACTION)
		return action_keys;
	if (sec == SEC_ROLE)
		return role_keys;
	for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
		if (sections[i].sec == sec)
			return sections[i].keys;
	return NULL;
}

const char *
cfg_role_name(int r)
{
	return role_names[r];
}

/* The name table a setter reads, or NULL for a setter of another kind. */
static const struct name_val *
names_of_setter(setter set)
{
	static const struct {
		setter set;
		const struct name_val *tbl;
	} named[] = {
		{set_log_level, log_levels}, {set_log_format, log_formats},
		{set_redis_auth, redis_auths},
		{set_signature, signatures}, {set_alg, algorithms},
		{set_assertion_alg, assertion_algs}, {set_client_auth, client_auths},
		{set_yes_no, yes_no}, {set_action_auth, auths}, {set_action_token, action_tokens},
		{set_authz_api, authz_apis},
	};

	for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
		if (named[i].set == set)
			return named[i].tbl;
	return NULL;
}

enum cfg_kind
cfg_key_kind(const struct key *k, const struct name_val **names)
{
	*names = names_of_setter(k->set);
	if (*names != NULL)
		return CFG_KIND_NAMED;
	if (k->set == set_long)
		return CFG_KIND_LONG;
	if (k->set == set_long_off)
		return CFG_KIND_LONG_OFF;
	if (k->set == set_int)
		return CFG_KIND_INT;
	if (k->set == set_ratio)
		return CFG_KIND_RATIO;
	if (k->set == set_str || k->set == set_word || k->set == set_consumer ||
	    k->set == set_url || k->set == set_action_url || k->set == set_method ||
	    k->set == set_token_command)
		return CFG_KIND_STR;
	return CFG_KIND_OTHER;
}

/* ---- defaults ---- */

int
cfg_set_defaults(struct cfg *cfg)
{
	cfg->daemon.log_level = LOG_INFO;
	cfg->daemon.max_in_flight = 256;
	cfg->daemon.shutdown_grace_ms = 10000;
	cfg->daemon.heartbeat_ms = 5000;

	cfg->redis.port = 6379;
	cfg->redis.batch = 64;
	cfg->redis.block_ms = 5000;
	cfg->redis.claim_idle_ms = 60000;
	cfg->redis.claim_interval_ms = 5000;
	cfg->redis.max_deliveries = 16;
	cfg->redis.dead_maxlen = 100000;
	cfg->redis.notify_maxlen = 100000;
	cfg->redis.wait_timeout_ms = 1000;

	cfg->records.signature_required = 1;
	cfg->records.algorithm = JWA_ES256;
	cfg->records.max_window_s = 604800;
	cfg->records.clock_skew_s = 60;
	cfg->records.retain_s = 604800;
	cfg->records.audit_maxlen = 100000;
	cfg->records.max_bytes = 16384;
	cfg->records.verify_threads = 1;

	cfg->oauth.auth_method = CFG_CLIENT_SECRET_BASIC;
	cfg->oauth.assertion_alg = JWA_RS256;
	cfg->oauth.refresh_ratio = 0.75;
	cfg->oauth.timeout_ms = 5000;
	cfg->oauth.auth_wait_max_ms = 30000;
	cfg->oauth.min_refresh_interval_ms = 1000;

	cfg->authz.timeout_ms = 2000;
	cfg->authz.subject_type = strdup("user");
	cfg->authz.resource_type = strdup("resource");
	cfg->retry.base_ms = 500;
	cfg->retry.cap_ms = 60000;
	cfg->retry.max_attempts = 10;
	cfg->web.idle_timeout_s = 900;
	cfg->notify.timeout_ms = 2000;
	cfg->notify.auth = CFG_AUTH_NONE;
	cfg->authz.auth = CFG_AUTH_NONE;

	cfg->redis.host = strdup("127.0.0.1");
	cfg->redis.prefix = strdup("warrant");
	cfg->redis.group = strdup("workers");
	cfg->oauth.rar_type = strdup("warrant");
	return cfg->redis.host && cfg->redis.prefix && cfg->redis.group && cfg->oauth.rar_type &&
	    cfg->authz.subject_type && cfg->authz.resource_type ? 0 : -1;
}

const struct key *
cfg_find_key(const struct key *keys, const char *name)
{
	for (const struct key *k = keys; k->name; k++)
		if (strcmp(k->name, name) == 0)
			return k;
	return NULL;
}
void
cfg_free(struct cfg *cfg)
{
	if (!cfg)
		return;
	free(cfg->path);
	free(cfg->dir);
	free(cfg->daemon.consumer);
	free(cfg->redis.host);
	free(cfg->redis.socket);
	free(cfg->redis.username);
	free(cfg->redis.password_file);
	free(cfg->redis.sentinels);
	free(cfg->redis.master_name);
	free(cfg->redis.sentinel_password_file);
	free(cfg->redis.cluster);
	free(cfg->redis.allow_hosts);
	free(cfg->redis.tls_ca_file);
	free(cfg->redis.tls_cert_file);
	free(cfg->redis.tls_key_file);
	free(cfg->redis.tls_server_name);
	free(cfg->redis.token_scope);
	free(cfg->redis.token_resource);
	free(cfg->redis.token_command);
	free(cfg->redis.prefix);
	free(cfg->redis.group);
	for (int r = 0; r < CFG_NROLES; r++) {
		free(cfg->roles[r].username);
		free(cfg->roles[r].password_file);
	}
	free(cfg->records.verify_key_file);
	free(cfg->records.issuer);
	free(cfg->records.audience);
	char **oauth_strs[] = {&cfg->oauth.token_url, &cfg->oauth.client_id,
	    &cfg->oauth.client_secret_file, &cfg->oauth.private_key_file,
	    &cfg->oauth.assertion_audience, &cfg->oauth.key_id, &cfg->oauth.certificate_file,
	    &cfg->oauth.scope, &cfg->oauth.resource, &cfg->oauth.audience,
	    &cfg->oauth.dpop_key_file, &cfg->oauth.rar_type};
	for (size_t i = 0; i < sizeof oauth_strs / sizeof oauth_strs[0]; i++)
		free(*oauth_strs[i]);
	free(cfg->authz.url);
	free(cfg->authz.bearer_file);
	free(cfg->authz.scope);
	free(cfg->authz.resource);
	free(cfg->authz.audience);
	free(cfg->notify.scope);
	free(cfg->notify.resource);
	free(cfg->notify.audience);
	free(cfg->authz.subject_type);
	free(cfg->authz.resource_type);
	free(cfg->notify.default_owner);
	free(cfg->notify.webhook_url);
	free(cfg->notify.bearer_file);
	free(cfg->metrics.listen);
	free(cfg->web.listen);
	free(cfg->web.tls_cert_file);
	free(cfg->web.tls_key_file);
	free(cfg->web.users_file);
	free(cfg->web.trusted_user_header);
	for (size_t i = 0; i < cfg->nactions; i++) {
		free(cfg->actions[i].name);
		free(cfg->actions[i].url);
		free(cfg->actions[i].method);
		free(cfg->actions[i].bearer_file);
		free(cfg->actions[i].scope);
		free(cfg->actions[i].audience);
		free(cfg->actions[i].resource);
	}
	free(cfg->actions);
	for (size_t i = 0; i < cfg->nlines; i++) {
		free(cfg->lines[i].section);
		free(cfg->lines[i].key);
	}
	free(cfg->lines);
	free(cfg);
}

const struct cfg_action *
cfg_action_find(const struct cfg *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->nactions; i++)
		if (strcmp(cfg->actions[i].name, name) == 0)
			return &cfg->actions[i];
	return NULL;
}