/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wview: a console page assembled: what wread reads (or wact does) for one
 * route, rendered by wpage. wserve has already checked the session and,
 * for a POST, its CSRF token; wview only reads, renders, and (wview_act)
 * acts through wact.
 */
#ifndef WARRANTD_WVIEW_H
#define WARRANTD_WVIEW_H

#include <stdint.h>

#include <jansson.h>

#include "conf/config.h"
#include "http/hsrv.h"
#include "wact.h"
#include "whtml.h"
#include "wpage.h"
#include "wread.h"
#include "wroute.h"

/* What a view reads from and acts with: all borrowed. act NULL: the
 * console has no [redis.operator]. */
struct wview_ctx {
	const struct cfg *cfg;
	struct wread *read;
	struct wact *act;
};

/* Plain data: one answer, a page or a JSON value (the other NULL), both
 * the caller's to free (whtml_free, json_decref). */
struct wview_out {
	int status;
	struct whtml *html;
	json_t *json;
};

/* A page for an error into *out: 0, or -1 out of memory. */
int wview_error(const struct wpage_who *who, int status, const char *message,
		struct wview_out *out);

/* One GET page (WR_OVERVIEW, WR_API_OVERVIEW, WR_JOBS, WR_JOB, WR_DEAD,
 * WR_CHARTS; another: 404) for who, its query from q, times against now_ms.
 * 0, or -1 out of memory. */
int wview_page(const struct wview_ctx *c, const struct wroute *rt, const struct wpage_who *who,
	       const struct hsrv_req *q, int64_t now_ms, struct wview_out *out);

/* GET /confirm?op=&arg= (or &id=... of a list): what the action will do
 * and the form that does it. 0, or -1 out of memory. */
int wview_confirm(const struct wview_ctx *c, const struct wpage_who *who,
		  const struct hsrv_req *q, struct wview_out *out);

/* POST /act: the form's op and arg (body: len bytes) done through wact as
 * who->user, and what it did. c->act not NULL. 0, or -1 out of memory. */
int wview_act(const struct wview_ctx *c, const struct wpage_who *who, const char *body,
	      size_t len, struct wview_out *out);

#endif
