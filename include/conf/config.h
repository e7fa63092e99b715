/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * config: the INI file of warrantd(7) §10, parsed into a fresh struct cfg.
 *
 * cfg_parse() never touches the running configuration: it builds a new one
 * or reports every error it found, so a SIGHUP with a broken file changes
 * nothing. A struct cfg is plain data; it is read-only once loaded. Pure:
 * the text, the host name and the directory come from the caller (cfgfile
 * reads them), the files the config names are read by secrets.
 *
 * The file is read by a line reader of its own (no INI library: see
 * HACKING.md "Libraries, and why each"), which counts lines, refuses a line
 * longer than 199 bytes whole, reports every syntax error and strips leading
 * white space, so an indented line is an ordinary key and never a
 * multi-line continuation. An action method is
 * stored upper-cased ("get" becomes "GET").
 */
#ifndef WARRANTD_CONFIG_H
#define WARRANTD_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "jose/jwa.h"
#include "base/log.h"
#include "core/hostport.h"
#include "core/listen.h"

#define CFG_DEFAULT_PATH "/etc/warrantd/warrantd.ini"

enum cfg_auth { CFG_AUTH_OAUTH = 0, CFG_AUTH_NONE, CFG_AUTH_STATIC };

/* [redis] auth (warrantd(7) §9): where the Redis AUTH password comes from. */
enum cfg_redis_auth {
	CFG_REDIS_PASSWORD = 0,	/* password_file (or none) */
	CFG_REDIS_OAUTH,	/* an [oauth] token for token_scope/token_resource */
	CFG_REDIS_COMMAND,	/* token_command prints {"token", "expires_in"} */
};

/* [authz] api (warrantd(7) §7): the shape of the PDP's question and answer. */
enum cfg_authz_api { CFG_AUTHZ_OPA = 0, CFG_AUTHZ_AUTHZEN };

enum cfg_client_auth {
	CFG_CLIENT_SECRET_BASIC = 0,
	CFG_CLIENT_SECRET_POST,
	CFG_PRIVATE_KEY_JWT,
};

enum cfg_token_mode { CFG_TOKEN_WORKER = 0, CFG_TOKEN_EXCHANGE = 1, CFG_TOKEN_PER_RECORD = 2 };

struct cfg_action {
	char *name;		/* the record's `action`, e.g. "gate.open" */
	char *url;		/* template of warrantd(7) R7 */
	char *method;		/* upper case, e.g. "POST" */
	long timeout_ms;
	enum cfg_auth auth;
	char *bearer_file;	/* with CFG_AUTH_STATIC */
	/* With CFG_AUTH_OAUTH: a token of its own, narrowed to this action
	 * (NULL: [oauth]'s value). */
	char *scope, *audience, *resource;
	/* CFG_TOKEN_EXCHANGE: a token for each job (RFC 8693), sub = the
	 * record's onBehalfOf, act = the worker; CFG_TOKEN_PER_RECORD: a token
	 * for this action on this resource (RFC 9396), kept until it expires;
	 * CFG_TOKEN_WORKER (0): the worker's own token */
	int token_exchange;
	int allow_http;		/* http:// to a host that is not loopback */
	/* §13, on this worker (gate.h); 0: no limit, breaker off */
	long max_in_flight, rate_per_s, breaker_failures, breaker_open_ms;
};

/* warrantctl --as ROLE (warrantd(7) §11): the Redis user of [redis.ROLE]
 * instead of [redis]'s, so each person and timer uses the least it needs. */
enum cfg_role_id { CFG_ROLE_OPERATOR = 0, CFG_ROLE_MONITOR, CFG_ROLE_DECIDER, CFG_NROLES };

struct cfg_role {
	char *username, *password_file;	/* both set, or the section is absent */
};

/* Where a section header (key NULL) or a key was read. */
struct cfg_keyline {
	char *section;		/* "redis", "action gate.open" */
	char *key;		/* NULL: the section header */
	int line;
};

struct cfg {
	char *path;		/* the file it came from */
	char *dir;		/* its directory (cfg_env.dir), for relative file
				 * names: see secrets_read_cfg */

	struct {
		char *consumer;	/* default: the host name */
		enum log_level log_level;
		enum log_format log_format;	/* logfmt (default) or json */
		long max_in_flight, shutdown_grace_ms, heartbeat_ms;
	} daemon;

	struct {
		char *host;
		int port;
		char *socket;	/* NULL: TCP */
		char *username, *password_file;
		int db;
		char *prefix, *group;
		long batch, block_ms, claim_idle_ms, claim_interval_ms;
		long lease_renew_ms;	/* default claim_idle_ms / 3 */
		long max_deliveries;
		long dead_maxlen, notify_maxlen;	/* XADD MAXLEN ~ of P:dead, P:notify */
		/* R19: WAIT for this many replicas (0: no WAIT), at most this long */
		long wait_replicas, wait_timeout_ms;
		/* Sentinel: "host:port, ..." and the primary's name; NULL: none.
		 * The text is kept to say whether it is set and what changed on
		 * a reload; sentinel_addr is the list, parsed once. */
		char *sentinels, *master_name, *sentinel_password_file;
		struct hostport sentinel_addr[HOSTPORT_MAX];
		size_t n_sentinel_addr;		/* 0: no sentinels */
		/* Redis Cluster: seed nodes "host:port, ..."; NULL: not a
		 * cluster. cluster_addr: the seeds, parsed once. */
		char *cluster;
		struct hostport cluster_addr[HOSTPORT_MAX];
		size_t n_cluster_addr;		/* 0: not a cluster */
		/* hosts a redirect or a sentinel may name (allowlist.h); NULL:
		 * warrantd(7) §10's default */
		char *allow_hosts;
		/* 0 (unset): one stream under prefix; N: N shards "{prefix:i}" */
		long shards;
		/* 1: a password may cross a network to a host that is not
		 * loopback in clear text (without tls) */
		int allow_plaintext;
		/* §10: every Redis connection over TLS (rtls.h); the files are
		 * read through secrets; server_name NULL: the host connected to */
		int tls;
		char *tls_ca_file, *tls_cert_file, *tls_key_file, *tls_server_name;
		/* warrantd(7) §9: a short-lived token as the AUTH password (rtoken.h) */
		enum cfg_redis_auth auth;
		char *token_scope, *token_resource;	/* with CFG_REDIS_OAUTH */
		char *token_command;	/* with CFG_REDIS_COMMAND: argv, split on
					 * white space (token_command_argv) */
	} redis;

	struct {
		int signature_required;	/* 1: "required" (default); 0: "off" */
		enum jwa_alg algorithm;	/* ES256, HS256 or RS256 */
		char *verify_key_file;	/* required with signature = required */
		char *issuer;		/* NULL: not checked */
		char *audience;		/* NULL: a record with an aud is refused */
		long max_window_s, clock_skew_s, retain_s, audit_maxlen;
		long max_bytes;		/* a longer `record` value is record-invalid */
		long verify_threads;	/* ES256/RS256 verified on these; 0: inline */
	} records;

	struct {
		int present;	/* the file has an [oauth] section */
		char *token_url, *client_id;
		enum cfg_client_auth auth_method;
		char *client_secret_file, *private_key_file;
		enum jwa_alg assertion_alg;	/* RS256 or ES256 */
		char *assertion_audience;	/* default token_url */
		char *key_id, *certificate_file, *scope, *resource, *audience;
		double refresh_ratio;
		long timeout_ms, auth_wait_max_ms;
		long min_refresh_interval_ms;	/* R9: spacing of refreshes 401s cause */
		char *dpop_key_file;	/* RFC 9449: a P-256 key binds every token; NULL: bearer */
		char *rar_type;		/* RFC 9396 authorization_details type [warrant] */
		int allow_http;
	} oauth;

	struct {
		char *url;	/* NULL: no re-check */
		long timeout_ms;
		enum cfg_auth auth;	/* default CFG_AUTH_NONE; never an action's token */
		char *bearer_file;	/* with CFG_AUTH_STATIC */
		char *scope, *resource, *audience;	/* with CFG_AUTH_OAUTH: the PDP's own */
		int allow_http;
		enum cfg_authz_api api;
		char *subject_type, *resource_type;	/* AuthZEN's; default user, resource */
	} authz;

	struct {
		long base_ms, cap_ms, max_attempts;
	} retry;

	struct {
		char *default_owner, *webhook_url;
		long timeout_ms;
		enum cfg_auth auth;	/* default CFG_AUTH_NONE: a sink is not a target */
		char *bearer_file;	/* with CFG_AUTH_STATIC */
		char *scope, *resource, *audience;	/* with CFG_AUTH_OAUTH: the sink's own */
		int allow_http;
	} notify;

	struct {
		char *listen;		/* NULL: no metrics endpoint */
		struct listen_addr listen_addr;	/* listen, parsed (when listen is set) */
		int allow_remote;	/* 1: a non-loopback listen is allowed */
	} metrics;

	/* warrantd-web's (src/web/): the daemon and warrantctl ignore them. The
	 * listen rule (TLS off loopback) is warrantd-web's own (wconf.h). */
	struct {
		char *listen;		/* up to 4 addresses, as [metrics] listen's;
					 * NULL: 127.0.0.1:8470 */
		char *tls_cert_file, *tls_key_file;	/* both or neither */
		char *users_file;	/* user:hash lines (warrantd-web passwd) */
		long idle_timeout_s;	/* a session unused this long ends */
		char *trusted_user_header; /* a proxy's user, on the unix socket only */
	} web;

	struct cfg_role roles[CFG_NROLES];

	struct cfg_action *actions;
	size_t nactions;

	struct cfg_keyline *lines;	/* every header and key, in file order */
	size_t nlines;
};

/* Every error of one load, each "file:line: message", in line order. A
 * missing required key or a rule between keys is reported at the line of the
 * key, else of its section header, else line 1; a file that cannot be read
 * at line 0. */
struct cfg_errors {
	char **msgs;
	size_t n;
};

/* What the parser is told of the world, so that it reads nothing itself:
 * the caller (cfgfile_load) asks the host. Borrowed for the call. */
struct cfg_env {
	const char *host;	/* the host name, [daemon] consumer's default; NULL or
				 * not a valid consumer: the file must set consumer */
	const char *dir;	/* the config's directory, copied to cfg->dir for
				 * relative file names; NULL: "." */
};

/*
 * Parses the `len` bytes of `text`; `name` stands for the file in messages
 * and becomes cfg->path. Pure: no file, no environment. On success returns a
 * new cfg (caller frees with cfg_free) and adds nothing to errs; on failure
 * returns NULL and appends every error to errs (caller frees with
 * cfg_errors_clear). Reads no key or secret file: see secrets_check_cfg.
 */
struct cfg *cfg_parse(const char *name, const char *text, size_t len, const struct cfg_env *env,
		      struct cfg_errors *errs)
	__attribute__((warn_unused_result));

/* Appends "file:line: message" to errs, for errors found about a loaded
 * config (a file it names, a file that cannot be read). -1 when out of
 * memory (nothing added). */
int cfg_errors_add(struct cfg_errors *errs, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

void cfg_free(struct cfg *cfg);
void cfg_errors_clear(struct cfg_errors *errs);

/* The action named `name`, or NULL. Valid as long as cfg. */
const struct cfg_action *cfg_action_find(const struct cfg *cfg, const char *name);

/* The role named `name` ("operator", "monitor", "decider"), or -1. */
int cfg_role_find(const char *name);

/* The parser's key table, for documentation checks: the i-th key (from 0)
 * and its section ("daemon", ..., "redis.ROLE" for every [redis.ROLE],
 * "action" for every [action NAME]) in
 * *section; NULL past the last. Static strings. */
const char *cfg_key_at(size_t i, const char **section);

/*
 * The effective configuration (`warrantd -T`) onto out: every key of every
 * section, defaults and derived values filled in, as INI text that loads
 * to the same values; a key that is unset is written as ";key =". Secrets
 * live in files, so only file names appear. cfg is borrowed.
 */
void cfg_dump(const struct cfg *cfg, FILE *out);

/*
 * Warnings about a valid config (printed by -t, logged at start and
 * reload): what works but weakens a guarantee or looks like a slip --
 * unsigned records, HS256, no [authz] url, the worker's token sent to the
 * PDP, a non-standard HTTP method. Each "file:line: warning: ..." appended
 * to warns (the caller clears it). -1 when out of memory.
 */
int cfg_warnings(const struct cfg *cfg, struct cfg_errors *warns)
	__attribute__((warn_unused_result));

/* The line where `key` of `section` ("oauth", "action gate.open") was set;
 * when key is NULL or not set, the line of the section header; when the
 * section is absent too, 1. For messages about a key after loading. */
int cfg_line_of(const struct cfg *cfg, const char *section, const char *key);

/* R16: the [redis] keys (of the live connections: host, port, auth, tls,
 * ...) whose values differ between old and cfg, which a reload cannot
 * apply: up to max of their names (static storage) into names, host first.
 * Returns how many. */
size_t cfg_restart_keys(const struct cfg *old, const struct cfg *cfg, const char **names,
			size_t max);

#endif
