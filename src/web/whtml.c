/* SPDX-License-Identifier: BSD-2-Clause */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "whtml.h"

struct whtml {
	char *s;
	size_t len, cap;
	int failed;
};

struct whtml *
whtml_new(void)
{
	return calloc(1, sizeof(struct whtml));
}

void
whtml_free(struct whtml *b)
{
	if (b == NULL)
		return;
	free(b->s);
	free(b);
}

static int
room(struct whtml *b, size_t more)
{
	if (b->failed)
		return -1;
	if (b->len + more + 1 <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + more + 1)
		cap *= 2;
	char *s = realloc(b->s, cap);
	if (s == NULL) {
		b->failed = 1;
		return -1;
	}
	b->s = s;
	b->cap = cap;
	return 0;
}

static void
put(struct whtml *b, const char *s, size_t n)
{
	if (room(b, n) < 0)
		return;
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void
whtml_raw(struct whtml *b, const char *s)
{
	put(b, s, strlen(s));
}

static char *
vformat(const char *fmt, va_list ap)
{
	char *s = NULL;

	if (vasprintf(&s, fmt, ap) < 0)
		return NULL;
	return s;
}

void
whtml_rawf(struct whtml *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	char *s = vformat(fmt, ap);
	va_end(ap);
	if (s == NULL)
		b->failed = 1;
	else
		whtml_raw(b, s);
	free(s);
}

void
whtml_text(struct whtml *b, const char *s)
{
	if (s == NULL)
		return;
	for (; *s; s++) {
		switch (*s) {
		case '&': put(b, "&amp;", 5); break;
		case '<': put(b, "&lt;", 4); break;
		case '>': put(b, "&gt;", 4); break;
		case '"': put(b, "&quot;", 6); break;
		case '\'': put(b, "&#39;", 5); break;
		default: put(b, s, 1);
		}
	}
}

void
whtml_textf(struct whtml *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	char *s = vformat(fmt, ap);
	va_end(ap);
	if (s == NULL)
		b->failed = 1;
	else
		whtml_text(b, s);
	free(s);
}

void
whtml_url(struct whtml *b, const char *s)
{
	static const char digits[] = "0123456789ABCDEF";

	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~')
			put(b, s, 1);
		else {
			char e[3] = {'%', digits[c >> 4], digits[c & 15]};
			put(b, e, 3);
		}
	}
}

const char *
whtml_str(const struct whtml *b, size_t *len)
{
	if (b->failed)
		return NULL;
	if (len)
		*len = b->len;
	return b->s ? b->s : "";
}

char *
whtml_take(struct whtml *b, size_t *len)
{
	char *s = b->failed ? NULL : b->s ? b->s : strdup("");

	if (b->failed)
		free(b->s);
	if (len)
		*len = b->failed ? 0 : b->len;
	b->s = NULL;
	b->len = b->cap = 0;
	b->failed = 0;
	return s;
}
