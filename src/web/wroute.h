/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wroute: what a request asks for (pure). The route table (method, path),
 * a form body or query string taken apart (application/x-www-form-urlencoded),
 * the session cookie, and the jobs page's filters checked.
 *
 * Every POST route is marked so: web.c checks its CSRF token in one place
 * before the handler runs, so an action added later cannot forget it.
 */
#ifndef WARRANTD_WROUTE_H
#define WARRANTD_WROUTE_H

#include <stddef.h>

enum wroute_id {
	WR_NOT_FOUND = 0,
	WR_BAD_METHOD,		/* a known path, another method: 405 */
	WR_LOGIN_FORM,		/* GET /login */
	WR_LOGIN,		/* POST /login */
	WR_LOGOUT,		/* POST /logout */
	WR_OVERVIEW,		/* GET / */
	WR_API_OVERVIEW,	/* GET /api/overview */
	WR_JOBS,		/* GET /jobs?state=&action=&resource=&subject=&id=&page= */
	WR_JOB,			/* GET /job/ID */
	WR_DEAD,		/* GET /dead */
	WR_ASSET,		/* GET /static/NAME */
	WR_CHARTS,		/* GET /charts */
	WR_CONFIRM,		/* GET /confirm?op=&arg=&id=...: what an action will do */
	WR_ACT,			/* POST /act (op, arg, csrf): do it */
};

/* Plain data: a matched route. */
struct wroute {
	enum wroute_id id;
	int post;		/* a POST: CSRF token required (login: its own) */
	int session;		/* a session required */
	const char *arg;	/* /job/ID's ID, /static/NAME's NAME: points into path */
};

/* path (without its query) and method into *out; borrowed. HEAD is GET. */
void wroute_match(const char *method, const char *path, struct wroute *out);

/*
 * The value of `name` in an urlencoded text (a form body or a query
 * string; len bytes, not NUL-terminated), percent-decoded, '+' a space,
 * into out. 0; -1 when absent, undecodable (a bad escape, a NUL byte) or
 * longer than n - 1. The first of several wins.
 */
int wroute_form_get(const char *text, size_t len, const char *name, char *out, size_t n);

/* The value of cookie `name` in a Cookie header into out: 0, or -1. */
int wroute_cookie_get(const char *header, const char *name, char *out, size_t n);

#define WROUTE_PAGE	50	/* jobs a page */
#define WROUTE_FILTER_MAX 256

/* Plain data: the jobs page's question. An empty string: any. */
struct wroute_jobq {
	char state[24], action[WROUTE_FILTER_MAX], resource[WROUTE_FILTER_MAX];
	char subject[WROUTE_FILTER_MAX], id[WROUTE_FILTER_MAX];
	long page;		/* from 0 */
};

/* Looks a query argument up: its value (decoded), or NULL. */
typedef const char *wroute_arg_fn(void *arg, const char *name);

/*
 * The jobs page's filters from get(arg, name): state must be one of
 * job.h's state names or "pending", "queued", "scheduled"; page a number
 * 0..100000; each text under WROUTE_FILTER_MAX bytes without control
 * characters. 0, or -1 with one line in err.
 */
int wroute_jobq_parse(struct wroute_jobq *q, wroute_arg_fn *get, void *arg, char *err,
		      size_t errlen);

/* 1 when s is a state the jobs page lists by (see wroute_jobq_parse). */
int wroute_state_ok(const char *s);

#endif
