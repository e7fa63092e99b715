/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cli: warrantctl's shared context -- the configuration and the shard in
 * use, the Redis user it logs in as, the options every command shares, and
 * its output (one-line messages on stderr, JSON on stdout). Each command
 * family (decide, status, jobs, dead, doctor, pause: ctl/cmds.h) works on
 * one struct cli; its Redis handle is clir's (ctl/clir.h).
 *
 * struct cli is plain data the command families read and set: warrantctl
 * runs one command and exits, and main() owns the one context.
 */
#ifndef WARRANTD_CLI_H
#define WARRANTD_CLI_H

#include <stddef.h>
#include <ev.h>
#include <hiredis/hiredis.h>
#include <jansson.h>

#include "core/store.h"
#include "redis/sreply.h"

#define PROG		"warrantctl"
#define EX_REFUSED	1
#define TIMEOUT_S	10
#define PAGE		1000	/* XRANGE COUNT */
#define PAGE_S		"1000"
#define MAX_ARGS	64	/* of a command built with clir_run() */
#define DETAIL_MAX	512

struct cfg;
struct clir;
struct rtls_ctx;

struct cli {
	const char *cfg_path;
	struct cfg *cfg;
	struct store_keys keys;	/* of the shard in use (shards unset: the prefix's) */
	char prefix[STORE_KEY_MAX];	/* the shard's: "{P:i}", or P */
	unsigned shard;
	long shard_opt;		/* --shard N; -1: every shard */
	struct clir *redis;	/* clir's handle; NULL: not connected */
	struct rtls_ctx *tls;	/* [redis] tls: made at the first connect */
	int json;		/* --json */
	const char *as;		/* --as ROLE; NULL: [redis]'s user */
	/* The role made for the command (status and metrics: monitor;
	 * decide: decider), used without --as when the file has its section:
	 * a timer that reads gauges needs no write access. NULL: none. */
	const char *role_of_cmd;
	/* The Redis user it logs in as: [redis.ROLE]'s with --as, else
	 * [redis]'s (either may be NULL: no AUTH); borrowed from cfg. */
	const char *username, *password_file;
	char user_section[32];	/* "redis", "redis.operator": for messages */
};

/* The long options of every command (getopt_long's values). */
enum {
	OPT_ON_BEHALF_OF = 256, OPT_ACTION, OPT_RESOURCE, OPT_PARAM, OPT_PARAMS, OPT_BASIS,
	OPT_EXPIRES, OPT_NOT_BEFORE, OPT_NOTIFY, OPT_ID, OPT_KID, OPT_KEY, OPT_ISSUER, OPT_JSON,
	OPT_SHARD, OPT_ALL, OPT_REASON, OPT_OLDER_THAN, OPT_STATE, OPT_LIMIT,
	OPT_TRACEPARENT, OPT_AUDIENCE,
};

/* warrantctl -h: every command's usage. */
extern const char cli_usage_text[];

/* The fields of a P:dead (store.h) and a P:audit entry, and the state
 * fields of a decision hash (§3.3), in the order they are shown. */
extern const char *const *const cli_dead_order;
extern const char *const cli_audit_order[];
extern const char *const cli_state_order[];

/* One line on stderr ("warrantctl: ..."), control characters blanked,
 * whatever the message holds. */
void cli_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* cli_say with " (see warrantctl -h)"; returns EX_USAGE. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* After getopt returned '?' or an option the command does not take; cmd is
 * NULL for the global options. Returns EX_USAGE (said). */
int cli_unknown_option(const char *cmd, char **argv);

/* Reads c->cfg_path into c->cfg (freed by main with cfg_free), picks the
 * Redis user (--as, or the command's role) and the first shard. 0 or an
 * exit code (said). */
int cli_load_config(struct cli *c);
/* Shard i's keys ("{P:i}:..."; shards unset: "P:..."); the next
 * clir_connect goes to its node. 0 or an exit code. */
int cli_use_shard(struct cli *c, unsigned i);
/* The shard of recordId id (FNV-1a-32 mod shards: cluster.h). */
int cli_use_shard_of(struct cli *c, const char *id);
/* The shards a command without an ID covers: --shard N, else all of them
 * (one: shards unset), as [*first, *end). */
void cli_shard_range(const struct cli *c, unsigned *first, unsigned *end);
/* The verification key of [records], for inspect and requeue. *key is NULL
 * with signature = off. Caller frees with secrets_free. 0 or an exit code. */
int cli_read_verify_key(struct cli *c, char **key, size_t *len);

/* --shard N: 0 or an exit code (the range is checked with the config). */
int cli_shard_option(struct cli *c, const char *v);
/* -c, -h and --json (allow_json), --shard (npos 0), then exactly npos
 * positional arguments into pos[] (borrowed from argv). 0, 1 for -h, or an
 * exit code. */
int cli_parse_simple(struct cli *c, int argc, char **argv, int allow_json, int npos,
		     char **pos);

/* v as one compact line on stdout. 0 or EX_REFUSED (said). */
int cli_print_json(const json_t *v);
/* A value of a flat reply or of XPENDING: an integer, a string, or null
 * for anything else (nil, an array). New reference. */
json_t *cli_reply_json(const struct sreply *r);
/* 1 when s is in the NULL-ended list (NULL: empty). */
int cli_in_list(const char *const *list, const char *s);
/* Adds the pairs of a flat reply to obj: first those named in `order`, in
 * that order, then the rest as they come, except `skip` (NULL: none). */
void cli_add_flat(json_t *obj, const struct sreply *r, const char *const *order,
		  const char *skip);
/* A stream entry [id, [f, v, ...]]: its id (borrowed from e), NULL for
 * another shape. */
const char *cli_entry_id(const struct sreply *e);
/* A stream entry (cli_entry_id checked) as {"entryId": id, fields...}. New
 * reference. */
json_t *cli_entry_json(const struct sreply *e, const char *const *order);

/* Runs loop (borrowed) until *done or timeout_ms: the loop of a
 * synchronous check (doctor's IdP and PDP, cancel's webhook). */
void cli_run_loop(struct ev_loop *loop, const int *done, long timeout_ms);

#endif
