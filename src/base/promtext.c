/* SPDX-License-Identifier: BSD-2-Clause */
/* promtext: the Prometheus text format writer (promtext.h). */
#include "base/promtext.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct promtext {
	char *buf;
	size_t len, cap;
	int nomem;
	int labels;	/* labels written in the sample begun: '{' or ',' next */
};

struct promtext *
promtext_new(void)
{
	return calloc(1, sizeof(struct promtext));
}

void
promtext_free(struct promtext *p)
{
	if (!p)
		return;
	free(p->buf);
	free(p);
}

/* Room for n more bytes and a NUL; 0, or -1 (and nomem set). */
static int
reserve(struct promtext *p, size_t n)
{
	if (p->nomem)
		return -1;
	if (p->cap - p->len > n)
		return 0;
	size_t cap = p->cap ? p->cap : 8192;
	while (cap - p->len <= n)
		cap *= 2;
	char *bigger = realloc(p->buf, cap);
	if (!bigger) {
		p->nomem = 1;
		return -1;
	}
	p->buf = bigger;
	p->cap = cap;
	return 0;
}

static void
put_bytes(struct promtext *p, const char *s, size_t n)
{
	if (reserve(p, n) < 0)
		return;
	memcpy(p->buf + p->len, s, n);
	p->len += n;
	p->buf[p->len] = '\0';
}

static void
put_str(struct promtext *p, const char *s)
{
	put_bytes(p, s, strlen(s));
}

static void putf(struct promtext *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Numbers only: a value's text is short, never a label's or a help's. */
static void
putf(struct promtext *p, const char *fmt, ...)
{
	char num[64];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(num, sizeof num, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof num) {
		p->nomem = 1;	/* cannot happen for the formats used here */
		return;
	}
	put_bytes(p, num, (size_t)n);
}

/* The escaped value between its quotes. */
static void
put_escaped(struct promtext *p, const char *s)
{
	put_str(p, "\"");
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			put_bytes(p, "\\", 1);
		if (*s == '\n')
			put_str(p, "\\n");
		else
			put_bytes(p, s, 1);
	}
	put_str(p, "\"");
}

char *
promtext_quote(const char *s)
{
	struct promtext p = {0};
	size_t len;

	put_escaped(&p, s);
	return promtext_take(&p, &len);
}

void
promtext_head(struct promtext *p, const char *name, const char *type, const char *help)
{
	put_str(p, "# HELP ");
	put_str(p, name);
	put_str(p, " ");
	put_str(p, help);
	put_str(p, "\n# TYPE ");
	put_str(p, name);
	put_str(p, " ");
	put_str(p, type);
	put_str(p, "\n");
}

void
promtext_begin(struct promtext *p, const char *name)
{
	put_str(p, name);
	p->labels = 0;
}

void
promtext_label(struct promtext *p, const char *key, const char *value)
{
	put_str(p, p->labels++ ? "," : "{");
	put_str(p, key);
	put_str(p, "=");
	put_escaped(p, value);
}

/* The end of the labels, and the space before the value. */
static void
end_labels(struct promtext *p)
{
	put_str(p, p->labels ? "} " : " ");
	p->labels = 0;
}

void
promtext_ll(struct promtext *p, long long v)
{
	end_labels(p);
	putf(p, "%lld\n", v);
}

void
promtext_fixed(struct promtext *p, double v, int decimals)
{
	end_labels(p);
	putf(p, "%.*f\n", decimals, v);
}

void
promtext_g(struct promtext *p, double v)
{
	end_labels(p);
	putf(p, "%.15g\n", v);
}

/* name + suffix, then the series' labels. */
static void
begin_series(struct promtext *p, const char *name, const char *suffix,
	     const char *const *keys, const char *const *values, size_t nlabels)
{
	put_str(p, name);
	promtext_begin(p, suffix);
	for (size_t i = 0; i < nlabels; i++)
		promtext_label(p, keys[i], values[i]);
}

void
promtext_histogram(struct promtext *p, const char *name, const char *const *keys,
		   const char *const *values, size_t nlabels, const long long *le_ms,
		   const long long *bucket, size_t nle, long long count, long long sum_ms)
{
	long long cum = 0;
	char le[32];

	for (size_t i = 0; i < nle; i++) {
		cum += bucket[i];
		snprintf(le, sizeof le, "%g", (double)le_ms[i] / 1000.0);
		begin_series(p, name, "_bucket", keys, values, nlabels);
		promtext_label(p, "le", le);
		promtext_ll(p, cum);
	}
	begin_series(p, name, "_bucket", keys, values, nlabels);
	promtext_label(p, "le", "+Inf");
	promtext_ll(p, count);
	begin_series(p, name, "_sum", keys, values, nlabels);
	promtext_fixed(p, (double)sum_ms / 1000.0, 3);
	begin_series(p, name, "_count", keys, values, nlabels);
	promtext_ll(p, count);
}

char *
promtext_take(struct promtext *p, size_t *len)
{
	char *text = p->buf;

	if (!p->nomem && !text && reserve(p, 0) == 0) {
		text = p->buf;
		text[0] = '\0';
	}
	if (p->nomem) {
		free(p->buf);
		text = NULL;
	}
	*len = text ? p->len : 0;
	p->buf = NULL;
	p->len = p->cap = 0;
	p->nomem = 0;
	return text;
}
