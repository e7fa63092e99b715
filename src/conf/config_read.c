/* SPDX-License-Identifier: BSD-2-Clause */
/* config_read.c: the line reader of config (config_int.h) -- lines, sections
 * and "key = value" into the key table's setters, errors at their lines;
 * cfg_parse. */
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

void
cfg_fail(struct ctx *c, int line, const char *fmt, ...)
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

const struct cfg_keyline *
cfg_find_line(const struct cfg *cfg, const char *section, const char *key)
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
	const struct cfg_keyline *l = key ? cfg_find_line(cfg, section, key) : NULL;

	if (!l)
		l = cfg_find_line(cfg, section, NULL);
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
		cfg_fail(c, c->lineno, "[action] needs a name, e.g. [action gate.open]");
		return;
	}
	for (const char *p = name; *p; p++)
		if (*p == '*' || iscntrl((unsigned char)*p)) {
			cfg_fail(c, c->lineno, "action name '%.*s' has '*' or a control character",
			    SHOW, name);
			return;
		}
	snprintf(full, sizeof full, "action %s", name);	/* a line is shorter */
	const struct cfg_keyline *first = cfg_find_line(c->cfg, full, NULL);
	if (first) {
		cfg_fail(c, c->lineno, "duplicate section [%s] (first at line %d)", full, first->line);
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
	c->keys = cfg_keys_of(SEC_ACTION);
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
	size_t nsec;
	const struct cfg_section *sections = cfg_sections(&nsec);
	const char *names[16];
	size_t n = 0;

	for (size_t i = 0; i < nsec && n < sizeof names / sizeof names[0] - 1; i++)
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
		cfg_fail(c, c->lineno, "unknown section [%.*s]; the roles are [redis.operator], "
		    "[redis.monitor] and [redis.decider]", SHOW, name);
		return;
	}
	if ((first = cfg_find_line(c->cfg, name, NULL)) != NULL) {
		cfg_fail(c, c->lineno, "duplicate section [%s] (first at line %d)", name, first->line);
		return;
	}
	if (!(c->secname = record_line(c, name, NULL)))
		return;
	c->sec = SEC_ROLE;
	c->keys = cfg_keys_of(SEC_ROLE);
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
	size_t nsec;
	const struct cfg_section *sections = cfg_sections(&nsec);

	for (size_t i = 0; i < nsec; i++) {
		if (strcmp(name, sections[i].name) != 0)
			continue;
		const struct cfg_keyline *first = cfg_find_line(c->cfg, name, NULL);
		if (first) {
			cfg_fail(c, c->lineno, "duplicate section [%s] (first at line %d)", name,
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
		cfg_fail(c, c->lineno, "unknown section [%.*s]; did you mean [%s]?", SHOW, name, near);
	else
		cfg_fail(c, c->lineno, "unknown section [%.*s]", SHOW, name);
}

/* s starts with '['. Until a header parses, its keys are skipped: one
 * error per bad header, not one per key under it. */
static void
section_header(struct ctx *c, char *s)
{
	char *end = s + 1 + strcspn(s + 1, "]");

	c->sec = SEC_SKIP;
	if (*end != ']') {
		cfg_fail(c, c->lineno, "missing ']' in section header");
		return;
	}
	*end = '\0';
	char *rest = trim(end + 1);
	if (*rest && !is_comment_start(*rest)) {
		cfg_fail(c, c->lineno, "text after ']' in section header");
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
		cfg_fail(c, c->lineno, "key '%.*s' before any [section]", SHOW, name);
		return;
	}
	if (*name == '\0') {
		cfg_fail(c, c->lineno, "missing key name before '='");
		return;
	}
	const struct key *k = cfg_find_key(c->keys, name);
	if (!k) {
		const char *why = removed_why(c->secname, name);

		const char *near = nearest_key(c->keys, name);

		if (why != NULL)
			cfg_fail(c, c->lineno, "unknown key '%s' in [%s] (%s)", name, c->secname, why);
		else if (near != NULL)
			cfg_fail(c, c->lineno, "unknown key '%.*s' in [%s]; did you mean '%s'?", SHOW, name,
			    c->secname, near);
		else
			cfg_fail(c, c->lineno, "unknown key '%.*s' in [%s]", SHOW, name, c->secname);
		return;
	}
	const struct cfg_keyline *first = cfg_find_line(c->cfg, c->secname, name);
	if (first) {
		cfg_fail(c, c->lineno, "duplicate key '%s' (first at line %d)", name, first->line);
		return;
	}
	if (!record_line(c, c->secname, name))
		return;
	if (*value == '\0') {
		cfg_fail(c, c->lineno, "%s: empty value", name);
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
			cfg_fail(c, c->lineno, "line longer than %d bytes", (int)sizeof buf - 1);
			continue;
		}
		if (memchr(line, '\0', n)) {
			cfg_fail(c, c->lineno, "NUL byte in line");
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
			cfg_fail(c, c->lineno, "expected 'key = value'");
			continue;
		}
		*eq = '\0';
		on_key(c, trim(s), trim(eq + 1));
	}
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

	if (!cfg || cfg_set_defaults(cfg) < 0 || !(cfg->path = strdup(name)) ||
	    !(cfg->dir = strdup(env->dir ? env->dir : "."))) {
		c.nomem = 1;
	} else {
		read_lines(&c);
	}
	if (!c.nomem) {	/* a half-made action has no name to check */
		cfg_finish(&c, env->host);
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

