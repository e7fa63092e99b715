/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * config's private header, shared by the files split from it (none other
 * includes it): config.c (the key table, its setters, defaults, freeing),
 * config_read.c (the line reader and the key handler, cfg_parse),
 * config_check.c (the rules between keys, once a file is read; warnings),
 * config_diff.c (what a reload may not change, and -T's dump).
 */
#ifndef WARRANTD_CONFIG_INT_H
#define WARRANTD_CONFIG_INT_H

#include "conf/config.h"

#include <stddef.h>

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

/* One [section] of the key table: its name, its kind and its keys. */
struct cfg_section {
	const char *name;
	enum section sec;
	const struct key *keys;
};

/* What a key's setter stores, for the code that reads fields back. */
enum cfg_kind {
	CFG_KIND_STR,		/* char *, NULL when unset */
	CFG_KIND_LONG,		/* long, below min when unset ("off") */
	CFG_KIND_LONG_OFF,	/* long, below min for `off` */
	CFG_KIND_INT,
	CFG_KIND_RATIO,		/* double */
	CFG_KIND_NAMED,		/* int, one of a name table */
	CFG_KIND_OTHER,		/* none of these: test_config fails on it */
};

/* ---- config.c: the key table ---- */

/* The sections of the table (static storage), their number in *n. */
const struct cfg_section *cfg_sections(size_t *n);

/* The keys of sec (static storage): a section's, [action NAME]'s or
 * [redis.ROLE]'s; NULL for SEC_NONE and SEC_SKIP. */
const struct key *cfg_keys_of(enum section sec);

/* The name of role r (static storage). */
const char *cfg_role_name(int r);

/* The key named name in keys (borrowed from the table), or NULL. */
const struct key *cfg_find_key(const struct key *keys, const char *name);

/* What k's field holds; with CFG_KIND_NAMED, its names in *names (static
 * storage; NULL otherwise). */
enum cfg_kind cfg_key_kind(const struct key *k, const struct name_val **names);

/* 1 when s is a valid [daemon] consumer name. */
int cfg_consumer_ok(const char *s);

/* The defaults into a zeroed cfg (which owns what they allocate). 0, or -1
 * out of memory. */
int cfg_set_defaults(struct cfg *cfg) __attribute__((warn_unused_result));

/* ---- config_read.c ---- */

/* An error at line of the file c reads (out of memory sets c->nomem). */
void cfg_fail(struct ctx *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Where section (and key; NULL: the header) was read (borrowed from cfg),
 * or NULL. */
const struct cfg_keyline *cfg_find_line(const struct cfg *cfg, const char *section,
					const char *key);

/* ---- config_check.c ---- */

/* Every rule between keys of the file c has read (host: the default
 * consumer name), each broken one an error at its line. */
void cfg_finish(struct ctx *c, const char *host);

#endif
