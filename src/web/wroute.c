/* SPDX-License-Identifier: BSD-2-Clause */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/job.h"
#include "wroute.h"

static const struct {
	const char *method, *path;	/* a path ending in '/' takes one more segment */
	enum wroute_id id;
	int session;
} routes[] = {
	{"GET", "/login", WR_LOGIN_FORM, 0},
	{"POST", "/login", WR_LOGIN, 0},
	{"POST", "/logout", WR_LOGOUT, 1},
	{"GET", "/", WR_OVERVIEW, 1},
	{"GET", "/api/overview", WR_API_OVERVIEW, 1},
	{"GET", "/jobs", WR_JOBS, 1},
	{"GET", "/job/", WR_JOB, 1},
	{"GET", "/dead", WR_DEAD, 1},
	{"GET", "/charts", WR_CHARTS, 1},
	/* the actions (only with [redis.operator]: web.c answers 404 without) */
	{"GET", "/confirm", WR_CONFIRM, 1},
	{"POST", "/act", WR_ACT, 1},
	/* assets hold nothing of an operator's: the login page needs them */
	{"GET", "/static/", WR_ASSET, 0},
};

/* A segment: 1..255 bytes of [A-Za-z0-9._:-], not "." or "..". */
static int
segment_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 255 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return 0;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-") == n;
}

void
wroute_match(const char *method, const char *path, struct wroute *out)
{
	const char *m = strcmp(method, "HEAD") == 0 ? "GET" : method;
	int known_path = 0;

	memset(out, 0, sizeof *out);
	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
		const char *p = routes[i].path, *arg = NULL;
		size_t plen = strlen(p);
		if (plen > 1 && p[plen - 1] == '/') {
			if (strncmp(path, p, plen) != 0 || !segment_ok(path + plen))
				continue;
			arg = path + plen;
		} else if (strcmp(path, p) != 0)
			continue;
		known_path = 1;
		if (strcmp(m, routes[i].method) != 0)
			continue;
		out->id = routes[i].id;
		out->post = strcmp(m, "POST") == 0;
		out->session = routes[i].session;
		out->arg = arg;
		return;
	}
	out->id = known_path ? WR_BAD_METHOD : WR_NOT_FOUND;
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* len bytes of s decoded into out (n bytes with the NUL): 0 or -1. */
static int
decode(const char *s, size_t len, char *out, size_t n)
{
	size_t j = 0;

	for (size_t i = 0; i < len; i++) {
		int c = (unsigned char)s[i];
		if (c == '+')
			c = ' ';
		else if (c == '%') {
			if (i + 2 >= len)
				return -1;
			int hi = hexval(s[i + 1]), lo = hexval(s[i + 2]);
			if (hi < 0 || lo < 0)
				return -1;
			c = hi * 16 + lo;
			i += 2;
		}
		if (c == 0 || j + 1 >= n)
			return -1;
		out[j++] = (char)c;
	}
	out[j] = '\0';
	return 0;
}

int
wroute_form_get(const char *text, size_t len, const char *name, char *out, size_t n)
{
	size_t nlen = strlen(name), i = 0;

	while (i < len) {
		size_t end = i;
		while (end < len && text[end] != '&')
			end++;
		const char *eq = memchr(text + i, '=', end - i);
		size_t klen = eq ? (size_t)(eq - (text + i)) : end - i;
		if (klen == nlen && memcmp(text + i, name, nlen) == 0) {
			const char *v = eq ? eq + 1 : text + end;
			return decode(v, (size_t)(text + end - v), out, n);
		}
		i = end + 1;
	}
	return -1;
}

int
wroute_cookie_get(const char *header, const char *name, char *out, size_t n)
{
	size_t nlen = strlen(name);

	for (const char *p = header; p && *p;) {
		while (*p == ' ' || *p == '\t')
			p++;
		const char *end = strchr(p, ';');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len > nlen && p[nlen] == '=' && strncmp(p, name, nlen) == 0) {
			size_t vlen = len - nlen - 1;
			if (vlen >= n)
				return -1;
			memcpy(out, p + nlen + 1, vlen);
			out[vlen] = '\0';
			return 0;
		}
		p = end ? end + 1 : NULL;
	}
	return -1;
}

int
wroute_state_ok(const char *s)
{
	enum job_state st;

	return strcmp(s, "pending") == 0 || strcmp(s, "scheduled") == 0 ||
	    (job_state_parse(s, &st) == 0 && st != JOB_NONE);
}

static int
text_arg(char *dst, size_t n, const char *v, const char *name, char *err, size_t errlen)
{
	if (v == NULL)
		return 0;
	if (strlen(v) >= n) {
		snprintf(err, errlen, "%s: longer than %zu bytes", name, n - 1);
		return -1;
	}
	for (const char *p = v; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			snprintf(err, errlen, "%s: a control character", name);
			return -1;
		}
	snprintf(dst, n, "%s", v);
	return 0;
}

int
wroute_jobq_parse(struct wroute_jobq *q, wroute_arg_fn *get, void *arg, char *err,
		  size_t errlen)
{
	const char *v;

	memset(q, 0, sizeof *q);
	if ((v = get(arg, "state")) != NULL && *v != '\0') {
		if (!wroute_state_ok(v)) {
			snprintf(err, errlen, "state: not a state the console lists");
			return -1;
		}
		snprintf(q->state, sizeof q->state, "%s", v);
	}
	if ((v = get(arg, "page")) != NULL && *v != '\0') {
		char *end;
		long p = strtol(v, &end, 10);
		if (*end != '\0' || p < 0 || p > 100000 || v[0] == '-' || v[0] == '+') {
			snprintf(err, errlen, "page: not a number from 0 to 100000");
			return -1;
		}
		q->page = p;
	}
	return text_arg(q->action, sizeof q->action, get(arg, "action"), "action", err, errlen) ||
	    text_arg(q->resource, sizeof q->resource, get(arg, "resource"), "resource", err,
	    errlen) ||
	    text_arg(q->subject, sizeof q->subject, get(arg, "subject"), "subject", err, errlen) ||
	    text_arg(q->id, sizeof q->id, get(arg, "id"), "id", err, errlen) ? -1 : 0;
}
