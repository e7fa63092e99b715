/* SPDX-License-Identifier: BSD-2-Clause */
/* urltpl: percent-encoding placeholders into action URLs. */
#include "core/urltpl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { VAR_RESOURCE, VAR_ACTION, VAR_RECORD_ID, VAR_ON_BEHALF_OF, VAR_UNKNOWN };

static const char *const var_names[] = {"resource", "action", "recordId", "onBehalfOf"};

static int
var_lookup(const char *name, size_t len)
{
	for (int i = 0; i < VAR_UNKNOWN; i++)
		if (strlen(var_names[i]) == len && memcmp(var_names[i], name, len) == 0)
			return i;
	return VAR_UNKNOWN;
}

static int
unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	    c == '-' || c == '.' || c == '_' || c == '~';
}

/*
 * A segment that is exactly "." or ".." would be removed, or climb a level,
 * when the URL is resolved (RFC 3986 §5.2.4): a resource "a/../b" must not
 * call /b. Its dots are encoded, so the segment reaches the target as data.
 */
static int
dot_segment(const unsigned char *p, int keep_slash)
{
	size_t n = 0;

	while (p[n] == '.')
		n++;
	return (n == 1 || n == 2) && (p[n] == '\0' || (keep_slash && p[n] == '/'));
}

int
urltpl_encode(char *dst, size_t n, size_t *len, const char *s, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	int dots = dot_segment((const unsigned char *)s, keep_slash);

	if (*len >= n)
		return -1;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (keep_slash && *p == '/') {
			if (*len + 1 >= n)
				return -1;
			dst[(*len)++] = '/';
			dots = dot_segment(p + 1, keep_slash);
		} else if (unreserved(*p) && !(dots && *p == '.')) {
			if (*len + 1 >= n)
				return -1;
			dst[(*len)++] = (char)*p;
		} else {
			if (*len + 3 >= n)
				return -1;
			dst[(*len)++] = '%';
			dst[(*len)++] = hex[*p >> 4];
			dst[(*len)++] = hex[*p & 15];
		}
	}
	dst[*len] = '\0';
	return 0;
}

/* Walks tpl; for each placeholder calls out with its index. Returns -1 on a
 * syntax error (message in err). */
static int
scan(const char *tpl, char *err, size_t errlen,
     int (*lit)(void *, const char *, size_t), int (*var)(void *, int), void *ctx)
{
	const char *p = tpl;

	while (*p) {
		const char *open = strchr(p, '{');
		const char *close = strchr(p, '}');
		if (close && (!open || close < open)) {
			snprintf(err, errlen, "unbalanced '}' in url template");
			return -1;
		}
		if (!open) {
			if (lit(ctx, p, strlen(p)) < 0)
				goto toolong;
			return 0;
		}
		if (lit(ctx, p, (size_t)(open - p)) < 0)
			goto toolong;
		close = strchr(open, '}');
		if (!close) {
			snprintf(err, errlen, "unbalanced '{' in url template");
			return -1;
		}
		int v = var_lookup(open + 1, (size_t)(close - open - 1));
		if (v == VAR_UNKNOWN) {
			snprintf(err, errlen, "unknown placeholder {%.*s} in url template",
			    (int)(close - open - 1 > 40 ? 40 : close - open - 1), open + 1);
			return -1;
		}
		if (var(ctx, v) < 0)
			goto toolong;
		p = close + 1;
	}
	return 0;
toolong:
	snprintf(err, errlen, "expanded url too long");
	return -1;
}

static int
lit_none(void *ctx, const char *s, size_t n)
{
	(void)ctx, (void)s, (void)n;
	return 0;
}

static int
var_none(void *ctx, int v)
{
	(void)ctx, (void)v;
	return 0;
}

/*
 * A placeholder in the scheme, host or port would let a record pick where the
 * bearer token goes ("https://{resource}.svc/" with resource "evil.example/x"),
 * and one in the fragment is never sent: they are allowed in the path and the
 * query only. Without "://" there is no telling where a path would start
 * ("https:/{resource}" with an empty value is "https://..."): a placeholder
 * there is refused wherever it is.
 */
static int
placeholder_outside_path(const char *tpl)
{
	const char *sep = strstr(tpl, "://");
	if (sep == NULL)
		return strpbrk(tpl, "{}") != NULL;
	const char *auth = sep + 3;
	size_t before = (size_t)(auth - tpl) + strcspn(auth, "/?#");
	const char *frag = strchr(tpl + before, '#');

	return strcspn(tpl, "{}") < before || (frag != NULL && strpbrk(frag, "{}") != NULL);
}

int
urltpl_check(const char *tpl, char *err, size_t errlen)
{
	if (scan(tpl, err, errlen, lit_none, var_none, NULL) < 0)
		return -1;
	if (placeholder_outside_path(tpl)) {
		snprintf(err, errlen, "a placeholder in the scheme, host, port or fragment of the "
		    "url template: only the path and the query may hold one");
		return -1;
	}
	return 0;
}

struct expansion {
	char *buf;
	size_t n, len;
	const struct urltpl_vars *vars;
};

static int
lit_copy(void *ctx, const char *s, size_t n)
{
	struct expansion *e = ctx;

	if (e->len + n >= e->n)
		return -1;
	memcpy(e->buf + e->len, s, n);
	e->len += n;
	e->buf[e->len] = '\0';
	return 0;
}

static int
var_copy(void *ctx, int v)
{
	struct expansion *e = ctx;
	const char *val[] = {e->vars->resource, e->vars->action, e->vars->record_id,
	    e->vars->on_behalf_of};

	return urltpl_encode(e->buf, e->n, &e->len, val[v] ? val[v] : "", v == VAR_RESOURCE);
}

char *
urltpl_expand(const char *tpl, const struct urltpl_vars *vars, char *err, size_t errlen)
{
	const char *val[] = {vars->resource, vars->action, vars->record_id, vars->on_behalf_of};
	size_t longest = 0, places = 0;

	for (int i = 0; i < VAR_UNKNOWN; i++)
		if (val[i] && strlen(val[i]) > longest)
			longest = strlen(val[i]);
	for (const char *p = tpl; *p; p++)
		places += *p == '{';
	/* each placeholder grows to at most three bytes per byte of its value */
	if (places > 0 && longest > (SIZE_MAX / 4 - strlen(tpl)) / 3 / places) {
		snprintf(err, errlen, "expanded url too long");
		return NULL;
	}
	size_t room = strlen(tpl) + 1 + places * 3 * longest;
	struct expansion e = {.buf = malloc(room), .n = room, .len = 0, .vars = vars};
	if (!e.buf) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	e.buf[0] = '\0';
	if (placeholder_outside_path(tpl)) {
		snprintf(err, errlen, "a placeholder outside the path and query of the url template");
		free(e.buf);
		return NULL;
	}
	if (scan(tpl, err, errlen, lit_copy, var_copy, &e) < 0) {
		free(e.buf);
		return NULL;
	}
	return e.buf;
}
