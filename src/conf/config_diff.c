/* SPDX-License-Identifier: BSD-2-Clause */
/* config_diff.c: what a reload of config may not change (R16) and the
 * effective configuration of -T (config_int.h). */
#define _DEFAULT_SOURCE
#include "config_int.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* R16: the [redis] keys of the live connections, which a reload cannot
 * change (cfg_restart_keys). */
static const char *const redis_restart_keys[] = {"host", "port", "socket", "db", "username",
    "password_file", "sentinels", "master_name", "allow_hosts", "sentinel_password_file",
    "auth", "token_scope", "token_resource", "token_command", "tls", "tls_ca_file",
    "tls_cert_file", "tls_key_file", "tls_server_name"};

/* 1 when key k's field differs between a and b, by the setter's type. */
static int
key_differs(const struct key *k, const struct cfg *a, const struct cfg *b)
{
	const char *fa = (const char *)a + k->off, *fb = (const char *)b + k->off;
	const struct name_val *names;
	enum cfg_kind kind = cfg_key_kind(k, &names);

	if (kind == CFG_KIND_STR) {
		const char *sa = *(char *const *)(const void *)fa, *sb = *(char *const *)(const void *)fb;
		return (sa == NULL) != (sb == NULL) || (sa != NULL && strcmp(sa, sb) != 0);
	}
	if (kind == CFG_KIND_LONG || kind == CFG_KIND_LONG_OFF)
		return *(const long *)(const void *)fa != *(const long *)(const void *)fb;
	if (kind == CFG_KIND_RATIO)
		return *(const double *)(const void *)fa != *(const double *)(const void *)fb;
	return *(const int *)(const void *)fa != *(const int *)(const void *)fb;
}

size_t
cfg_restart_keys(const struct cfg *old, const struct cfg *cfg, const char **names, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < sizeof redis_restart_keys / sizeof redis_restart_keys[0]; i++) {
		const struct key *k = cfg_find_key(cfg_keys_of(SEC_REDIS), redis_restart_keys[i]);
		if (k != NULL && key_differs(k, old, cfg) && n < max)
			names[n++] = k->name;
	}
	return n;
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

/* One key of base (a struct cfg or cfg_action) as "key = value", or as a
 * comment when it holds nothing. A setter with no way to show it is shown
 * as '?': test_config fails on it, so a new kind of key gets one. */
static void
dump_key(const struct key *k, const void *base, FILE *out)
{
	const void *field = (const char *)base + k->off;
	const struct name_val *tbl;
	enum cfg_kind kind = cfg_key_kind(k, &tbl);

	if (kind == CFG_KIND_LONG_OFF && *(const long *)field < k->min)
		fprintf(out, "%s = off\n", k->name);
	else if (kind == CFG_KIND_LONG && *(const long *)field < k->min)
		fprintf(out, ";%s =\n", k->name);	/* 0 for "off", e.g. shards */
	else if (kind == CFG_KIND_LONG || kind == CFG_KIND_LONG_OFF)
		fprintf(out, "%s = %ld\n", k->name, *(const long *)field);
	else if (kind == CFG_KIND_INT)
		fprintf(out, "%s = %d\n", k->name, *(const int *)field);
	else if (kind == CFG_KIND_RATIO)
		fprintf(out, "%s = %g\n", k->name, *(const double *)field);
	else if (kind == CFG_KIND_NAMED) {
		const char *name = name_of(tbl, *(const int *)field);
		fprintf(out, "%s = %s\n", k->name, name ? name : "?");
	} else if (kind == CFG_KIND_STR) {
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
	size_t nsec;
	const struct cfg_section *sections = cfg_sections(&nsec);

	for (size_t s = 0; s < nsec; s++) {
		if (sections[s].sec == SEC_OAUTH && !cfg->oauth.present)
			continue;
		fprintf(out, "\n[%s]\n", sections[s].name);
		for (const struct key *k = sections[s].keys; k->name; k++)
			dump_key(k, cfg, out);
	}
	for (int r = 0; r < CFG_NROLES; r++) {
		if (cfg->roles[r].username == NULL)
			continue;
		fprintf(out, "\n[redis.%s]\n", cfg_role_name(r));
		for (const struct key *k = cfg_keys_of(SEC_ROLE); k->name; k++)
			dump_key(k, &cfg->roles[r], out);
	}
	for (size_t i = 0; i < cfg->nactions; i++) {
		fprintf(out, "\n[action %s]\n", cfg->actions[i].name);
		for (const struct key *k = cfg_keys_of(SEC_ACTION); k->name; k++)
			dump_key(k, &cfg->actions[i], out);
	}
}

