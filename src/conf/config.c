/* SPDX-License-Identifier: BSD-2-Clause */
/* config: the INI file of warrantd(7) §10, read by its own line reader into a fresh struct cfg.
 * Pure: the text and what it needs of the host come from the caller. */
#define _DEFAULT_SOURCE
#include "conf/config.h"
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

#include "core/token.h"
#include "core/urltpl.h"

#define CONSUMER_MAX	64
#define VAL_MAX		INT_MAX		/* every count and duration fits an int (libev, curl) */
#define SHOW		60		/* bytes of a bad value quoted back in a message */
#define LINE_BUF	200		/* a line and its NUL: warrantd.ini(5)'s 199 bytes */

enum section {
	SEC_NONE,	/* before the first header */
	SEC_SKIP,	/* a header in error: its keys are not looked at */
	SEC_DAEMON, SEC_REDIS, SEC_RECORDS, SEC_OAUTH, SEC_AUTHZ, SEC_RETRY, SEC_NOTIFY,
	SEC_METRICS, SEC_WEB, SEC_ACTION, SEC_ROLE,
};

struct key;

/* The state of one load, shared by the line reader and the key handler: the
 * reader calls the handler for a line before it reads the next one, so
 * lineno and the section are always those of the key being handled. */
struct ctx {
	const char *name;		/* the file, for messages */
	const char *text;
	size_t len, pos;
	int lineno;
	struct cfg *cfg;
	struct cfg_errors *errs;
	size_t errs_before;		/* errs->n when this load began */
	enum section sec;
	const struct key *keys;		/* of sec */
	const char *secname;		/* owned by cfg->lines */
	size_t action;			/* index in cfg->actions with SEC_ACTION, in
					 * cfg->roles with SEC_ROLE */
	int nomem;
};

typedef int (*setter)(struct ctx *, const struct key *, void *field, const char *value);

struct key {
	const char *name;
	setter set;
	size_t off;		/* in struct cfg, or struct cfg_action for actions */
	long min, max;		/* for numbers */
};

struct name_val {
	const char *name;
	int val;
};

/* ---- errors ---- */

static int errs_vadd(struct cfg_errors *errs, const char *file, int line, const char *fmt,
		     va_list ap)
	__attribute__((format(printf, 4, 0)));

static int
errs_vadd(struct cfg_errors *errs, const char *file, int line, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof msg, fmt, ap);
	int n = snprintf(NULL, 0, "%s:%d: %s", file, line, msg);
	char *s = n < 0 ? NULL : malloc((size_t)n + 1);
	char **msgs = s ? realloc(errs->msgs, (errs->n + 1) * sizeof *msgs) : NULL;
	if (!msgs) {
		free(s);
		return -1;
	}
	snprintf(s, (size_t)n + 1, "%s:%d: %s", file, line, msg);
	msgs[errs->n++] = s;
	errs->msgs = msgs;
	return 0;
}

int
cfg_errors_add(struct cfg_errors *errs, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int rc = errs_vadd(errs, file, line, fmt, ap);
	va_end(ap);
	return rc;
}

static void fail(struct ctx *c, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
fail(struct ctx *c, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (errs_vadd(c->errs, c->name, line, fmt, ap) < 0)
		c->nomem = 1;
	va_end(ap);
}

void
cfg_errors_clear(struct cfg_errors *errs)
{
	if (!errs)
		return;
	for (size_t i = 0; i < errs->n; i++)
		free(errs->msgs[i]);
	free(errs->msgs);
	errs->msgs = NULL;
	errs->n = 0;
}

/* ---- where keys were read ---- */

static const struct cfg_keyline *
find_line(const struct cfg *cfg, const char *section, const char *key)
{
	for (size_t i = 0; i < cfg->nlines; i++) {
		const struct cfg_keyline *l = &cfg->lines[i];
		if (strcmp(l->section, section) != 0)
			continue;
		if (key ? l->key && strcmp(l->key, key) == 0 : !l->key)
			return l;
	}
	return NULL;
}

int
cfg_line_of(const struct cfg *cfg, const char *section, const char *key)
{
	const struct cfg_keyline *l = key ? find_line(cfg, section, key) : NULL;

	if (!l)
		l = find_line(cfg, section, NULL);
	return l ? l->line : 1;
}

/* Returns the stored section name (stable until cfg_free), or NULL. */
static const char *
record_line(struct ctx *c, const char *section, const char *key)
{
	struct cfg *cfg = c->cfg;
	struct cfg_keyline *lines = realloc(cfg->lines, (cfg->nlines + 1) * sizeof *lines);

	if (!lines) {
		c->nomem = 1;
		return NULL;
	}
	cfg->lines = lines;
	struct cfg_keyline *l = &lines[cfg->nlines];
	l->section = strdup(section);
	l->key = key ? strdup(key) : NULL;
	l->line = c->lineno;
	if (!l->section || (key && !l->key)) {
		free(l->section);
		free(l->key);
		c->nomem = 1;
		return NULL;
	}
	cfg->nlines++;
	return l->section;
}

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
		fail(c, c->lineno, "%s: '%.*s' is not an integer", k->name, SHOW, v);
		return -1;
	}
	if (errno == ERANGE || n < k->min || n > k->max) {
		fail(c, c->lineno, "%s: %.*s is out of range %ld..%ld", k->name, SHOW, v,
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
		fail(c, c->lineno, "%s: '%.*s' is not a number", k->name, SHOW, v);
		return -1;
	}
	if (!(r > 0 && r < 1)) {
		fail(c, c->lineno, "%s: %.*s is not between 0 and 1 (both excluded)", k->name,
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
	fail(c, c->lineno, "%s: '%.*s' is not one of %s", k->name, SHOW, v, names);
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
		fail(c, c->lineno, "%s: %s", k->name, why);
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

static int
consumer_ok(const char *s)
{
	size_t n = strlen(s);

	return n >= 1 && n <= CONSUMER_MAX &&
	    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:@-") == n;
}

static int
set_consumer(struct ctx *c, const struct key *k, void *field, const char *v)
{
	if (!consumer_ok(v)) {
		fail(c, c->lineno, "%s: '%.*s' is not 1 to %d of [A-Za-z0-9._:@-]", k->name, SHOW,
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
			fail(c, c->lineno, "%s: '%.*s' has white space or a control character in it",
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
		fail(c, c->lineno, "%s: '%.*s' is not an HTTP method", k->name, SHOW, v);
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
		fail(c, c->lineno, "%s: '%.*s' %s", k->name, SHOW, v, why);
		return -1;
	}
	return set_str(c, k, field, v);
}

static int
set_action_url(struct ctx *c, const struct key *k, void *field, const char *v)
{
	char why[128];

	if (urltpl_check(v, why, sizeof why) < 0) {
		fail(c, c->lineno, "%s: %s", k->name, why);
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

/* R16: the [redis] keys of the live connections, which a reload cannot
 * change (cfg_restart_keys). */
static const char *const redis_restart_keys[] = {"host", "port", "socket", "db", "username",
    "password_file", "sentinels", "master_name", "allow_hosts", "sentinel_password_file",
    "auth", "token_scope", "token_resource", "token_command", "tls", "tls_ca_file",
    "tls_cert_file", "tls_key_file", "tls_server_name"};

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

static const struct {
	const char *name;
	enum section sec;
	const struct key *keys;
} sections[] = {
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

/* ---- defaults ---- */

static int
set_defaults(struct cfg *cfg)
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

/* ---- the line reader ---- */

static char *
trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

/* An inline comment: a '#' or ';' right after white space ends the line
 * (`group = workers   # production` is the group `workers`). */
static void
cut_inline_comment(char *s)
{
	for (size_t i = 1; s[i]; i++)
		if ((s[i] == '#' || s[i] == ';') && isspace((unsigned char)s[i - 1])) {
			s[i] = '\0';
			break;
		}
}

static int
is_comment_start(char ch)
{
	return ch == ';' || ch == '#';
}

static void
open_action(struct ctx *c, const char *name)
{
	char full[256];

	if (*name == '\0') {
		fail(c, c->lineno, "[action] needs a name, e.g. [action gate.open]");
		return;
	}
	for (const char *p = name; *p; p++)
		if (*p == '*' || iscntrl((unsigned char)*p)) {
			fail(c, c->lineno, "action name '%.*s' has '*' or a control character",
			    SHOW, name);
			return;
		}
	snprintf(full, sizeof full, "action %s", name);	/* a line is shorter */
	const struct cfg_keyline *first = find_line(c->cfg, full, NULL);
	if (first) {
		fail(c, c->lineno, "duplicate section [%s] (first at line %d)", full, first->line);
		return;
	}
	struct cfg *cfg = c->cfg;
	struct cfg_action *acts = realloc(cfg->actions, (cfg->nactions + 1) * sizeof *acts);
	if (!acts) {
		c->nomem = 1;
		return;
	}
	cfg->actions = acts;
	struct cfg_action *a = &acts[cfg->nactions];
	*a = (struct cfg_action){.name = strdup(name), .method = strdup("POST"),
	    .timeout_ms = 10000, .auth = CFG_AUTH_OAUTH, .breaker_open_ms = 30000};
	cfg->nactions++;	/* counted even half made, so cfg_free frees it */
	if (!a->name || !a->method || !(c->secname = record_line(c, full, NULL))) {
		c->nomem = 1;
		return;
	}
	c->sec = SEC_ACTION;
	c->keys = action_keys;
	c->action = cfg->nactions - 1;
}

/* ---- suggestions for a misspelt name ---- */

/* Levenshtein distance of a and b, capped: names are short, and anything
 * past cap is no suggestion anyway. */
static size_t
edit_distance(const char *a, const char *b, size_t cap)
{
	size_t la = strlen(a), lb = strlen(b), row[64];

	if (lb >= sizeof row / sizeof row[0] || (la > lb ? la - lb : lb - la) > cap)
		return cap + 1;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (tolower((unsigned char)a[i - 1]) !=
			    tolower((unsigned char)b[j - 1]));
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

/* The closest of names to `name` within a third of its length (at least 1,
 * at most 3 edits), or NULL: "log_levle" -> "log_level", "x" -> nothing. */
static const char *
nearest_of(const char *const *names, size_t n, const char *name)
{
	size_t cap = strlen(name) / 3, best = (size_t)-1;
	const char *pick = NULL;

	cap = cap < 1 ? 1 : cap > 3 ? 3 : cap;
	for (size_t i = 0; i < n; i++) {
		size_t d = edit_distance(name, names[i], cap);
		if (d <= cap && d < best) {
			best = d;
			pick = names[i];
		}
	}
	/* "timeout" for "timeout_ms": the unit left out */
	for (size_t i = 0; !pick && strlen(name) >= 4 && i < n; i++)
		if (strncmp(names[i], name, strlen(name)) == 0)
			pick = names[i];
	return pick;
}

static const char *
nearest_key(const struct key *keys, const char *name)
{
	const char *names[64];
	size_t n = 0;

	for (const struct key *k = keys; k->name && n < sizeof names / sizeof names[0]; k++)
		names[n++] = k->name;
	return nearest_of(names, n, name);
}

static const char *
nearest_section(const char *name)
{
	const char *names[sizeof sections / sizeof sections[0] + 1];
	size_t n = 0;

	for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
		names[n++] = sections[i].name;
	names[n++] = "action NAME";
	return nearest_of(names, n, name);
}

/* [redis.ROLE]: one of role_names, once. */
static void
open_role(struct ctx *c, const char *name)
{
	int r = cfg_role_find(name + 6);
	const struct cfg_keyline *first;

	if (r < 0) {
		fail(c, c->lineno, "unknown section [%.*s]; the roles are [redis.operator], "
		    "[redis.monitor] and [redis.decider]", SHOW, name);
		return;
	}
	if ((first = find_line(c->cfg, name, NULL)) != NULL) {
		fail(c, c->lineno, "duplicate section [%s] (first at line %d)", name, first->line);
		return;
	}
	if (!(c->secname = record_line(c, name, NULL)))
		return;
	c->sec = SEC_ROLE;
	c->keys = role_keys;
	c->action = (size_t)r;
}

static void
open_section(struct ctx *c, char *name)
{
	if (strncmp(name, "action", 6) == 0 && (name[6] == '\0' || isspace((unsigned char)name[6]))) {
		open_action(c, trim(name + 6));
		return;
	}
	if (strncmp(name, "redis.", 6) == 0) {
		open_role(c, name);
		return;
	}
	for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
		if (strcmp(name, sections[i].name) != 0)
			continue;
		const struct cfg_keyline *first = find_line(c->cfg, name, NULL);
		if (first) {
			fail(c, c->lineno, "duplicate section [%s] (first at line %d)", name,
			    first->line);
			return;
		}
		if (!(c->secname = record_line(c, name, NULL)))
			return;
		c->sec = sections[i].sec;
		c->keys = sections[i].keys;
		if (c->sec == SEC_OAUTH)
			c->cfg->oauth.present = 1;
		return;
	}
	const char *near = nearest_section(name);

	if (near != NULL)
		fail(c, c->lineno, "unknown section [%.*s]; did you mean [%s]?", SHOW, name, near);
	else
		fail(c, c->lineno, "unknown section [%.*s]", SHOW, name);
}

/* s starts with '['. Until a header parses, its keys are skipped: one
 * error per bad header, not one per key under it. */
static void
section_header(struct ctx *c, char *s)
{
	char *end = s + 1 + strcspn(s + 1, "]");

	c->sec = SEC_SKIP;
	if (*end != ']') {
		fail(c, c->lineno, "missing ']' in section header");
		return;
	}
	*end = '\0';
	char *rest = trim(end + 1);
	if (*rest && !is_comment_start(*rest)) {
		fail(c, c->lineno, "text after ']' in section header");
		return;
	}
	open_section(c, trim(s + 1));
}

/* Next physical line of the text, without its CR LF (or LF), and without a
 * UTF-8 byte order mark on line 1. */
static int
take_line(struct ctx *c, const char **line, size_t *n)
{
	if (c->pos >= c->len)
		return 0;
	const char *p = c->text + c->pos;
	const char *nl = memchr(p, '\n', c->len - c->pos);
	size_t len = nl ? (size_t)(nl - p) : c->len - c->pos;

	c->pos += len + (nl != NULL);
	c->lineno++;
	if (len > 0 && p[len - 1] == '\r')
		len--;
	if (c->lineno == 1 && len >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0) {
		p += 3;
		len -= 3;
	}
	*line = p;
	*n = len;
	return 1;
}

/* ---- the key handler ---- */

static const struct key *
find_key(const struct key *keys, const char *name)
{
	for (const struct key *k = keys; k->name; k++)
		if (strcmp(k->name, name) == 0)
			return k;
	return NULL;
}

/* 1 when key k's field differs between a and b, by the setter's type. */
static int
key_differs(const struct key *k, const struct cfg *a, const struct cfg *b)
{
	const char *fa = (const char *)a + k->off, *fb = (const char *)b + k->off;

	if (k->set == set_str || k->set == set_token_command) {
		const char *sa = *(char *const *)(const void *)fa, *sb = *(char *const *)(const void *)fb;
		return (sa == NULL) != (sb == NULL) || (sa != NULL && strcmp(sa, sb) != 0);
	}
	if (k->set == set_long)
		return *(const long *)(const void *)fa != *(const long *)(const void *)fb;
	return *(const int *)(const void *)fa != *(const int *)(const void *)fb;
}

size_t
cfg_restart_keys(const struct cfg *old, const struct cfg *cfg, const char **names, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < sizeof redis_restart_keys / sizeof redis_restart_keys[0]; i++) {
		const struct key *k = find_key(redis_keys, redis_restart_keys[i]);
		if (k != NULL && key_differs(k, old, cfg) && n < max)
			names[n++] = k->name;
	}
	return n;
}

/* Keys an older warrantd took and this one does not: still unknown keys,
 * with the reason after the error, so an old file says what to change. */
static const struct {
	const char *section, *name, *why;
} removed_keys[] = {
	{"daemon", "http_client", "removed: every call goes through libcurl; delete the line"},
};

static const char *
removed_why(const char *section, const char *name)
{
	for (size_t i = 0; i < sizeof removed_keys / sizeof removed_keys[0]; i++)
		if (strcmp(removed_keys[i].section, section) == 0 &&
		    strcmp(removed_keys[i].name, name) == 0)
			return removed_keys[i].why;
	return NULL;
}

/* One "name = value" line of the current section. */
static void
on_key(struct ctx *c, const char *name, const char *value)
{
	if (c->sec == SEC_SKIP)
		return;
	if (c->sec == SEC_NONE) {
		fail(c, c->lineno, "key '%.*s' before any [section]", SHOW, name);
		return;
	}
	if (*name == '\0') {
		fail(c, c->lineno, "missing key name before '='");
		return;
	}
	const struct key *k = find_key(c->keys, name);
	if (!k) {
		const char *why = removed_why(c->secname, name);

		const char *near = nearest_key(c->keys, name);

		if (why != NULL)
			fail(c, c->lineno, "unknown key '%s' in [%s] (%s)", name, c->secname, why);
		else if (near != NULL)
			fail(c, c->lineno, "unknown key '%.*s' in [%s]; did you mean '%s'?", SHOW, name,
			    c->secname, near);
		else
			fail(c, c->lineno, "unknown key '%.*s' in [%s]", SHOW, name, c->secname);
		return;
	}
	const struct cfg_keyline *first = find_line(c->cfg, c->secname, name);
	if (first) {
		fail(c, c->lineno, "duplicate key '%s' (first at line %d)", name, first->line);
		return;
	}
	if (!record_line(c, c->secname, name))
		return;
	if (*value == '\0') {
		fail(c, c->lineno, "%s: empty value", name);
		return;
	}
	char *base = c->sec == SEC_ACTION ? (char *)&c->cfg->actions[c->action] :
	    c->sec == SEC_ROLE ? (char *)&c->cfg->roles[c->action] : (char *)c->cfg;
	(void)k->set(c, k, base + k->off, value);
}

/* ---- the line reader ---- */

/*
 * Every line of the text, in order: comments and blank lines skipped,
 * section headers opened, each "key = value" (or "key: value") handed to
 * on_key with both sides trimmed; anything else is an error at its line and
 * reading goes on, so one pass reports every syntax error. A line is
 * left-trimmed first, so an indented line is an ordinary key and never a
 * continuation; one longer than LINE_BUF - 1 bytes is refused whole.
 */
static void
read_lines(struct ctx *c)
{
	char buf[LINE_BUF];
	const char *line;
	size_t n;

	while (!c->nomem && take_line(c, &line, &n)) {
		if (n > sizeof buf - 1) {
			fail(c, c->lineno, "line longer than %d bytes", (int)sizeof buf - 1);
			continue;
		}
		if (memchr(line, '\0', n)) {
			fail(c, c->lineno, "NUL byte in line");
			continue;
		}
		memcpy(buf, line, n);
		buf[n] = '\0';
		cut_inline_comment(buf);
		char *s = trim(buf);
		if (*s == '\0' || is_comment_start(*s))
			continue;
		if (*s == '[') {
			section_header(c, s);
			continue;
		}
		char *eq = s + strcspn(s, "=:");
		if (*eq == '\0') {
			fail(c, c->lineno, "expected 'key = value'");
			continue;
		}
		*eq = '\0';
		on_key(c, trim(s), trim(eq + 1));
	}
}

/* ---- rules between keys, once the file is read ---- */

/* A key that was written but rejected has had its error already. */
static void
require(struct ctx *c, const char *section, const char *key, const void *value,
	const char *when)
{
	if (!value && !find_line(c->cfg, section, key))
		fail(c, cfg_line_of(c->cfg, section, NULL), "[%s] %s is required%s", section,
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
	if (!consumer_ok(host)) {
		fail(c, cfg_line_of(cfg, "daemon", NULL),
		    "host name '%.*s' is not a valid consumer name: set [daemon] consumer",
		    SHOW, host);
		return;
	}
	if (!(cfg->daemon.consumer = strdup(host)))
		c->nomem = 1;
}

/* allow_hosts: names, addresses and CIDR blocks (allowlist.h). */
static void
finish_allow_hosts(struct ctx *c)
{
	struct allowlist *a;
	char why[160];

	if (c->cfg->redis.allow_hosts == NULL || (a = allowlist_new()) == NULL)
		return;
	if (allowlist_add_list(a, c->cfg->redis.allow_hosts, why, sizeof why) < 0)
		fail(c, cfg_line_of(c->cfg, "redis", "allow_hosts"), "%s", why);
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
			fail(c, cfg_line_of(cfg, "redis", cfg->redis.master_name ? "master_name" :
			    "sentinel_password_file"), "%s is only used with sentinels",
			    cfg->redis.master_name ? "master_name" : "sentinel_password_file");
		return;
	}
	if (hostport_parse_list(cfg->redis.sentinels, cfg->redis.sentinel_addr,
	    &cfg->redis.n_sentinel_addr, why, sizeof why) < 0) {
		cfg->redis.n_sentinel_addr = 0;
		fail(c, cfg_line_of(cfg, "redis", "sentinels"), "sentinels: %s", why);
	}
	if (cfg->redis.master_name == NULL)
		fail(c, cfg_line_of(cfg, "redis", "sentinels"), "sentinels needs master_name");
	if (cfg->redis.socket != NULL)
		fail(c, cfg_line_of(cfg, "redis", "socket"),
		    "socket and sentinels exclude each other: the sentinels name the primary");
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
		fail(c, cfg_line_of(cfg, "redis", "prefix"),
		    "with shards the prefix takes no braces: shard i is {prefix:i}");
	if (cfg->redis.cluster == NULL)
		return;
	if (hostport_parse_list(cfg->redis.cluster, cfg->redis.cluster_addr,
	    &cfg->redis.n_cluster_addr, why, sizeof why) < 0) {
		cfg->redis.n_cluster_addr = 0;
		fail(c, cfg_line_of(cfg, "redis", "cluster"), "cluster: %s", why);
	}
	if (cfg->redis.socket != NULL || cfg->redis.sentinels != NULL)
		fail(c, cfg_line_of(cfg, "redis", "cluster"),
		    "cluster excludes socket and sentinels: the cluster names its nodes");
	if (cfg->redis.db != 0)
		fail(c, cfg_line_of(cfg, "redis", "db"), "a Redis Cluster has only db 0");
	if (cfg->redis.shards == 0 && !shard_has_tag(cfg->redis.prefix))
		fail(c, cfg_line_of(cfg, "redis", "prefix"),
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
		fail(c, cfg_line_of(cfg, "redis", "password_file"),
		    "password_file is only used with auth = password (auth = %s fetches a token)",
		    names[a]);
	if (a != CFG_REDIS_OAUTH) {
		if (cfg->redis.token_scope)
			fail(c, cfg_line_of(cfg, "redis", "token_scope"),
			    "token_scope is only used with auth = oauth");
		if (cfg->redis.token_resource)
			fail(c, cfg_line_of(cfg, "redis", "token_resource"),
			    "token_resource is only used with auth = oauth");
	}
	if (a != CFG_REDIS_COMMAND && cfg->redis.token_command)
		fail(c, cfg_line_of(cfg, "redis", "token_command"),
		    "token_command is only used with auth = command");
	if (a == CFG_REDIS_OAUTH) {
		if (!cfg->oauth.present)
			fail(c, cfg_line_of(cfg, "redis", "auth"),
			    "auth = oauth needs an [oauth] section (the client that fetches the token)");
		/* Without them the worker would hand Redis the token meant for its
		 * targets: a token for one audience is never sent to another. */
		if (!cfg->redis.token_scope && !cfg->redis.token_resource)
			fail(c, cfg_line_of(cfg, "redis", "auth"),
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
	int set = find_line(cfg, "redis", "lease_renew_ms") != NULL;

	if (!set)
		cfg->redis.lease_renew_ms = cfg->redis.claim_idle_ms / 3;
	/* R10, R11: an owner renews and beats at least three times within
	 * the silence that makes its entries another's. */
	if (cfg->redis.lease_renew_ms < 1 || cfg->redis.lease_renew_ms > cfg->redis.claim_idle_ms / 3)
		fail(c, cfg_line_of(cfg, "redis", set ? "lease_renew_ms" : "claim_idle_ms"),
		    "lease_renew_ms (%ld) must be at least 1 and at most a third of claim_idle_ms (%ld)",
		    cfg->redis.lease_renew_ms, cfg->redis.claim_idle_ms);
	int hb_set = find_line(cfg, "daemon", "heartbeat_ms") != NULL;
	if (!hb_set && cfg->daemon.heartbeat_ms > cfg->redis.claim_idle_ms / 3)
		cfg->daemon.heartbeat_ms = cfg->redis.claim_idle_ms / 3;
	if (cfg->daemon.heartbeat_ms < 1 || cfg->daemon.heartbeat_ms > cfg->redis.claim_idle_ms / 3)
		fail(c, hb_set ? cfg_line_of(cfg, "daemon", "heartbeat_ms") :
		    cfg_line_of(cfg, "redis", "claim_idle_ms"),
		    "heartbeat_ms (%ld) must be at least 1 and at most a third of claim_idle_ms (%ld)",
		    cfg->daemon.heartbeat_ms, cfg->redis.claim_idle_ms);
	finish_sentinel(c);
	finish_cluster(c);
	finish_allow_hosts(c);
	/* a role is a Redis user: a section without one is a slip */
	for (int r = 0; r < CFG_NROLES; r++) {
		char sec[32];
		snprintf(sec, sizeof sec, "redis.%s", role_names[r]);
		if (find_line(cfg, sec, NULL)) {
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
		fail(c, cfg_line_of(cfg, "retry", "cap_ms"),
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
		fail(c, cfg_line_of(cfg, sec, "bearer_file"),
		    "bearer_file is only used with auth = static");
	if (auth == CFG_AUTH_OAUTH && !cfg->oauth.present)
		fail(c, cfg_line_of(cfg, sec, "auth"),
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
		fail(c, cfg_line_of(c->cfg, sec, "auth"), "[%s] auth = oauth needs a scope, resource "
		    "or audience of its own: the worker's token could call every action", sec);
	for (size_t k = 0; k < 3; k++)
		if (vals[k] != NULL && auth != CFG_AUTH_OAUTH)
			fail(c, cfg_line_of(c->cfg, sec, keys[k]), "%s is only used with auth = oauth",
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
			fail(c, cfg_line_of(c->cfg, sec, keys[k]),
			    "%s narrows the worker's OAuth token: only with auth = oauth", keys[k]);
	if (a->token_exchange && a->auth != CFG_AUTH_OAUTH)
		fail(c, cfg_line_of(c->cfg, sec, "token"),
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

	if (find_line(cfg, "daemon", "shutdown_grace_ms") != NULL)
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
		fail(c, 1, "no [action NAME] section: nothing to execute");
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
			if (find_line(cfg, "redis", keys[i]) != NULL)
				fail(c, cfg_line_of(cfg, "redis", keys[i]),
				    "%s is only used with tls = yes", keys[i]);
		return;
	}
	if (cfg->redis.socket != NULL)
		fail(c, cfg_line_of(cfg, "redis", "socket"),
		    "socket and tls exclude each other: TLS is for a host and port");
	if ((cfg->redis.tls_cert_file == NULL) != (cfg->redis.tls_key_file == NULL))
		fail(c, cfg_line_of(cfg, "redis", cfg->redis.tls_cert_file ? "tls_cert_file" :
		    "tls_key_file"), "tls_cert_file and tls_key_file go together");
	if (cfg->redis.tls_server_name != NULL && (*cfg->redis.tls_server_name == '\0' ||
	    strpbrk(cfg->redis.tls_server_name, " \t/:@") != NULL))
		fail(c, cfg_line_of(cfg, "redis", "tls_server_name"),
		    "tls_server_name: a host name or address, without port");
}

/* A Redis password sent to a host that is not loopback crosses a network
 * in clear text: refused without tls = yes (or stunnel on loopback) unless
 * allow_plaintext = yes, as http:// is without allow_http. */
static void
finish_plaintext(struct ctx *c)
{
	const struct cfg *cfg = c->cfg;
	struct hostport one;
	const struct hostport *a = &one;
	size_t n = 1;

	if (cfg->redis.allow_plaintext || cfg->redis.socket != NULL || cfg->redis.tls)
		return;
	const char *key = cfg->redis.cluster ? "cluster" : cfg->redis.sentinels ? "sentinels" :
	    "host";
	const char *pw = cfg->redis.password_file;
	if (cfg->redis.sentinels && cfg->redis.sentinel_password_file)
		pw = cfg->redis.sentinel_password_file;
	if (pw == NULL)
		return;
	/* a list that did not parse has no entry: reported where it is checked */
	if (cfg->redis.cluster) {
		a = cfg->redis.cluster_addr;
		n = cfg->redis.n_cluster_addr;
	} else if (cfg->redis.sentinels) {
		a = cfg->redis.sentinel_addr;
		n = cfg->redis.n_sentinel_addr;
	} else {
		snprintf(one.host, sizeof one.host, "%s", cfg->redis.host);
	}
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(a[i].host);
		if (loopback_host(a[i].host, len) || strcmp(a[i].host, "::1") == 0)
			continue;
		fail(c, cfg_line_of(cfg, "redis", key), "%s: the Redis password would cross the "
		    "network to %.*s in clear text: set tls = yes (or use stunnel on loopback), "
		    "or set allow_plaintext = yes", key, SHOW, a[i].host);
		return;
	}
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
	fail(c, cfg_line_of(c->cfg, sec, key),
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
		fail(c, cfg_line_of(cfg, "metrics", "listen"), "listen: %s", why);
}

/* ---- loading ---- */

static long
line_in(const char *msg, size_t namelen)
{
	return strtol(msg + namelen + 1, NULL, 10);
}

/* Errors of one file in line order (stable), as a reader goes through it:
 * the rules checked after reading would otherwise come last. */
static void
sort_errors(struct cfg_errors *errs, size_t from, const char *name)
{
	size_t namelen = strlen(name);

	for (size_t i = from + 1; i < errs->n; i++) {
		char *m = errs->msgs[i];
		long line = line_in(m, namelen);
		size_t j = i;
		for (; j > from && line_in(errs->msgs[j - 1], namelen) > line; j--)
			errs->msgs[j] = errs->msgs[j - 1];
		errs->msgs[j] = m;
	}
}

struct cfg *
cfg_parse(const char *name, const char *text, size_t len, const struct cfg_env *env,
	  struct cfg_errors *errs)
{
	struct cfg *cfg = calloc(1, sizeof *cfg);
	struct ctx c = {.name = name, .text = text, .len = len, .cfg = cfg, .errs = errs,
	    .errs_before = errs->n, .sec = SEC_NONE};

	if (!cfg || set_defaults(cfg) < 0 || !(cfg->path = strdup(name)) ||
	    !(cfg->dir = strdup(env->dir ? env->dir : "."))) {
		c.nomem = 1;
	} else {
		read_lines(&c);
	}
	if (!c.nomem) {	/* a half-made action has no name to check */
		finish_daemon(&c, env->host);
		finish_redis(&c);
		finish_misc(&c);
		finish_oauth(&c);
		finish_actions(&c);
		finish_http(&c);
		finish_plaintext(&c);
		finish_tls(&c);
		finish_metrics(&c);
	}
	if (c.nomem)
		(void)cfg_errors_add(errs, name, c.lineno, "out of memory");
	if (c.nomem || errs->n > c.errs_before) {
		sort_errors(errs, c.errs_before, name);
		cfg_free(cfg);
		return NULL;
	}
	return cfg;
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

/* ---- the effective configuration (-T) ---- */

static const char *
name_of(const struct name_val *tbl, int val)
{
	for (; tbl->name; tbl++)
		if (tbl->val == val)
			return tbl->name;
	return NULL;
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

/* One key of base (a struct cfg or cfg_action) as "key = value", or as a
 * comment when it holds nothing. A setter with no way to show it is shown
 * as '?': test_config fails on it, so a new kind of key gets one. */
static void
dump_key(const struct key *k, const void *base, FILE *out)
{
	const void *field = (const char *)base + k->off;
	const struct name_val *tbl = names_of_setter(k->set);

	if (k->set == set_long_off && *(const long *)field < k->min)
		fprintf(out, "%s = off\n", k->name);
	else if (k->set == set_long && *(const long *)field < k->min)
		fprintf(out, ";%s =\n", k->name);	/* 0 for "off", e.g. shards */
	else if (k->set == set_long || k->set == set_long_off)
		fprintf(out, "%s = %ld\n", k->name, *(const long *)field);
	else if (k->set == set_int)
		fprintf(out, "%s = %d\n", k->name, *(const int *)field);
	else if (k->set == set_ratio)
		fprintf(out, "%s = %g\n", k->name, *(const double *)field);
	else if (tbl != NULL) {
		const char *name = name_of(tbl, *(const int *)field);
		fprintf(out, "%s = %s\n", k->name, name ? name : "?");
	} else if (k->set == set_str || k->set == set_word || k->set == set_consumer ||
	    k->set == set_url || k->set == set_action_url || k->set == set_method ||
	    k->set == set_token_command) {
		const char *v = *(const char *const *)field;
		if (v != NULL)
			fprintf(out, "%s = %s\n", k->name, v);
		else
			fprintf(out, ";%s =\n", k->name);
	} else
		fprintf(out, "%s = ?\n", k->name);
}

void
cfg_dump(const struct cfg *cfg, FILE *out)
{
	fprintf(out, "# %s, as warrantd reads it: every key, defaults and derived values\n"
	    "# filled in (';key =' is unset). Secrets are in files: only their names here.\n",
	    cfg->path);
	for (size_t s = 0; s < sizeof sections / sizeof sections[0]; s++) {
		if (sections[s].sec == SEC_OAUTH && !cfg->oauth.present)
			continue;
		fprintf(out, "\n[%s]\n", sections[s].name);
		for (const struct key *k = sections[s].keys; k->name; k++)
			dump_key(k, cfg, out);
	}
	for (int r = 0; r < CFG_NROLES; r++) {
		if (cfg->roles[r].username == NULL)
			continue;
		fprintf(out, "\n[redis.%s]\n", role_names[r]);
		for (const struct key *k = role_keys; k->name; k++)
			dump_key(k, &cfg->roles[r], out);
	}
	for (size_t i = 0; i < cfg->nactions; i++) {
		fprintf(out, "\n[action %s]\n", cfg->actions[i].name);
		for (const struct key *k = action_keys; k->name; k++)
			dump_key(k, &cfg->actions[i], out);
	}
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
