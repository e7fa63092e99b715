/* SPDX-License-Identifier: BSD-2-Clause */
/* wview: a console page assembled (wview.h). */
#include "wview.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "walert.h"

int
wview_error(const struct wpage_who *who, int status, const char *message,
	    struct wview_out *out)
{
	out->status = status;
	if ((out->html = whtml_new()) == NULL)
		return -1;
	wpage_error(out->html, who, status, message);
	return 0;
}

static const char *
query_arg(void *arg, const char *name)
{
	return hsrv_req_arg(arg, name);
}

/* The overview's alerts, from it and the last minutes of the charts'
 * buckets (a failed read of those: the alerts of the overview alone). */
static void
add_alerts(const struct wview_ctx *c, json_t *ov, int64_t now)
{
	char err[256];
	json_t *st = wread_stats(c->read, now, WALERT_DEAD_MINUTES, err, sizeof err);

	json_object_set_new(ov, "alerts", walert_list(ov, st));
	json_decref(st);
}

int
wview_page(const struct wview_ctx *c, const struct wroute *rt, const struct wpage_who *who,
	   const struct hsrv_req *q, int64_t now, struct wview_out *out)
{
	char err[512];
	json_t *v = NULL;
	struct wroute_jobq jq;

	switch (rt->id) {
	case WR_API_OVERVIEW:
		if ((v = wread_overview(c->read, now, err, sizeof err)) == NULL) {
			out->status = 502;
			out->json = json_pack("{s:s}", "error", err);
		} else {
			add_alerts(c, v, now);
			out->status = 200;
			out->json = v;
		}
		return out->json ? 0 : -1;
	case WR_OVERVIEW:
		if ((v = wread_overview(c->read, now, err, sizeof err)) != NULL)
			add_alerts(c, v, now);
		break;
	case WR_JOBS:
		if (wroute_jobq_parse(&jq, query_arg, (void *)q, err, sizeof err) != 0)
			return wview_error(who, 400, err, out);
		v = wread_jobs(c->read, &jq, now, err, sizeof err);
		break;
	case WR_JOB:
		if ((v = wread_job(c->read, rt->arg, now, err, sizeof err)) == NULL &&
		    strcmp(err, "not found") == 0)
			return wview_error(who, 404, "no such job", out);
		break;
	case WR_DEAD:
		v = wread_dead(c->read, err, sizeof err);
		break;
	case WR_CHARTS:
		v = wread_stats(c->read, now, 1440, err, sizeof err);
		break;
	default:
		return wview_error(who, 404, "not found", out);
	}
	if (v == NULL) {
		log_warn("web.redis", "detail=%s", LOG_Q(err));
		return wview_error(who, 502, err, out);
	}
	out->status = 200;
	if ((out->html = whtml_new()) == NULL) {
		json_decref(v);
		return -1;
	}
	if (rt->id == WR_OVERVIEW) {
		json_t *names = json_array();	/* what the pause form offers */
		for (size_t i = 0; i < c->cfg->nactions; i++)
			json_array_append_new(names, json_string(c->cfg->actions[i].name));
		json_object_set_new(v, "actions", names);
		wpage_overview(out->html, who, v);
	} else if (rt->id == WR_JOBS)
		wpage_jobs(out->html, who, &jq, v);
	else if (rt->id == WR_JOB)
		wpage_job(out->html, who, v, now);
	else if (rt->id == WR_CHARTS)
		wpage_charts(out->html, who, v);
	else
		wpage_dead(out->html, who, v);
	json_decref(v);
	return 0;
}

/* The checked boxes of a list (?id=a&id=b) as "a b". */
struct ids_acc {
	char buf[WACT_ARG_MAX];
	size_t len;
	int too_long;
};

static int
add_id(void *arg, const char *value)
{
	struct ids_acc *a = arg;
	size_t n = strlen(value);

	if (n == 0)
		return 0;
	if (a->len + n + 2 > sizeof a->buf) {
		a->too_long = 1;
		return -1;
	}
	a->len += (size_t)snprintf(a->buf + a->len, sizeof a->buf - a->len, "%s%s",
	    a->len ? " " : "", value);
	return 0;
}

int
wview_confirm(const struct wview_ctx *c, const struct wpage_who *who, const struct hsrv_req *q,
	      struct wview_out *out)
{
	const char *op = hsrv_req_arg(q, "op"), *arg = hsrv_req_arg(q, "arg");
	char err[512], sentence[WACT_ARG_MAX + 256], back[WACT_ARG_MAX + 16];
	struct ids_acc *ids = calloc(1, sizeof *ids);
	struct wact_req *req = calloc(1, sizeof *req);
	long long count = 0;
	int rc = -1;

	if (ids == NULL || req == NULL)
		goto done;
	if (arg == NULL)
		hsrv_req_args(q, "id", add_id, ids);
	if (ids->too_long || wact_parse(c->cfg, op, arg ? arg : ids->buf, req, err,
	    sizeof err) != 0) {
		rc = wview_error(who, 400, ids->too_long ? "too many records" : err, out);
		goto done;
	}
	if (req->op == WACT_REQUEUE_REASON || req->op == WACT_DROP_REASON) {
		json_t *d = wread_dead(c->read, err, sizeof err);
		count = json_integer_value(json_object_get(json_object_get(d, "reasons"), req->arg));
		json_decref(d);
	}
	wact_describe(req, count, sentence, sizeof sentence);
	wact_back(req, back, sizeof back);
	out->status = 200;
	if ((out->html = whtml_new()) != NULL) {
		wpage_confirm(out->html, who, wact_op_name(req->op), req->arg, sentence, back);
		rc = 0;
	}
done:
	free(ids);
	free(req);
	return rc;
}

int
wview_act(const struct wview_ctx *c, const struct wpage_who *who, const char *body, size_t len,
	  struct wview_out *out)
{
	char op[32], err[512], sentence[WACT_ARG_MAX + 256], back[WACT_ARG_MAX + 16];
	char *arg = calloc(1, WACT_ARG_MAX);
	struct wact_req *req = calloc(1, sizeof *req);
	struct act_result res;
	int rc = -1;

	if (arg == NULL || req == NULL)
		goto done;
	if (wroute_form_get(body, len, "op", op, sizeof op) != 0 ||
	    wroute_form_get(body, len, "arg", arg, WACT_ARG_MAX) != 0 ||
	    wact_parse(c->cfg, op, arg, req, err, sizeof err) != 0) {
		rc = wview_error(who, 400, "refused: not an action this console knows", out);
		goto done;
	}
	act_result_init(&res);
	int code = wact_run(c->act, req, who->user, &res);
	log_info("web.action", "user=%s op=%s arg=%s rc=%d done=%lld", LOG_Q(who->user),
	    wact_op_name(req->op), LOG_Q(req->arg), code, res.done);
	wact_describe(req, res.matched, sentence, sizeof sentence);
	wact_back(req, back, sizeof back);
	out->status = code == 0 ? 200 : code == WACT_REFUSED ? 409 : 502;
	if ((out->html = whtml_new()) != NULL) {
		wpage_acted(out->html, who, sentence, code, res.lines, back);
		rc = 0;
	}
	act_result_clear(&res);
done:
	free(arg);
	free(req);
	return rc;
}
