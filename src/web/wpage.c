/* SPDX-License-Identifier: BSD-2-Clause */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "wchart.h"
#include "wjob.h"
#include "wpage.h"
#include "base/wtime.h"

const char *
wpage_age(int64_t ms, char *buf, size_t n)
{
	const char *sign = ms < 0 ? "-" : "";
	int64_t a = ms < 0 ? -ms : ms;

	if (a < 60000)
		snprintf(buf, n, "%s%" PRId64 ".%" PRId64 " s", sign, a / 1000, a % 1000 / 100);
	else if (a < 3600000)
		snprintf(buf, n, "%s%" PRId64 " min", sign, a / 60000);
	else if (a < 86400000)
		snprintf(buf, n, "%s%" PRId64 " h", sign, a / 3600000);
	else
		snprintf(buf, n, "%s%" PRId64 " d", sign, a / 86400000);
	return buf;
}

static void
head(struct whtml *b, const struct wpage_who *who, const char *title, const char *nav)
{
	static const struct { const char *id, *href, *label; } links[] = {
		{"overview", "/", "Overview"}, {"jobs", "/jobs", "Jobs"},
		{"dead", "/dead", "Dead letters"}, {"charts", "/charts", "Charts"},
	};

	whtml_raw(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
	if (who && who->csrf) {
		whtml_raw(b, "<meta name=\"csrf-token\" content=\"");
		whtml_text(b, who->csrf);
		whtml_raw(b, "\">");
	}
	whtml_raw(b, "<title>");
	whtml_text(b, title);
	whtml_raw(b, " \xc2\xb7 warrantd</title><link rel=\"stylesheet\" href=\"/static/console.css\">"
	    "<script src=\"/static/console.js\" defer></script></head><body>"
	    "<header><a class=\"brand\" href=\"/\">warrantd</a>");
	if (who && who->user) {
		whtml_raw(b, "<nav>");
		for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
			whtml_rawf(b, "<a href=\"%s\"%s>%s</a>", links[i].href,
			    nav && strcmp(nav, links[i].id) == 0 ? " class=\"on\"" : "",
			    links[i].label);
		whtml_raw(b, "</nav><form class=\"who\" method=\"post\" action=\"/logout\">"
		    "<span>");
		whtml_text(b, who->user);
		whtml_raw(b, "</span><input type=\"hidden\" name=\"csrf\" value=\"");
		whtml_text(b, who->csrf);
		whtml_raw(b, "\"><button type=\"submit\">Log out</button></form>");
	}
	whtml_raw(b, "</header><main>");
}

static void
foot(struct whtml *b)
{
	whtml_raw(b, "</main></body></html>\n");
}

/* An action's button: a GET form to its confirmation page (nothing is
 * done before the confirmation's POST). Only for an operator console. */
static void
act_button(struct whtml *b, const struct wpage_who *who, const char *op, const char *arg,
	   const char *label)
{
	if (who == NULL || !who->operator)
		return;
	whtml_raw(b, "<form class=\"act\" method=\"get\" action=\"/confirm\">"
	    "<input type=\"hidden\" name=\"op\" value=\"");
	whtml_text(b, op);
	whtml_raw(b, "\"><input type=\"hidden\" name=\"arg\" value=\"");
	whtml_text(b, arg);
	whtml_raw(b, "\"><button type=\"submit\" data-op=\"");
	whtml_text(b, op);
	whtml_raw(b, "\">");
	whtml_text(b, label);
	whtml_raw(b, "</button></form>");
}

void
wpage_login(struct whtml *b, const char *csrf, const char *message)
{
	head(b, NULL, "Log in", NULL);
	whtml_raw(b, "<form class=\"login\" method=\"post\" action=\"/login\"><h1>Log in</h1>");
	if (message) {
		whtml_raw(b, "<p class=\"err\" role=\"alert\">");
		whtml_text(b, message);
		whtml_raw(b, "</p>");
	}
	whtml_raw(b, "<input type=\"hidden\" name=\"csrf\" value=\"");
	whtml_text(b, csrf);
	whtml_raw(b, "\"><label>User <input name=\"user\" autocomplete=\"username\" required "
	    "autofocus></label><label>Password <input name=\"password\" type=\"password\" "
	    "autocomplete=\"current-password\" required></label>"
	    "<button type=\"submit\">Log in</button></form>");
	foot(b);
}

/* A JSON value as text: strings as they are, numbers, "—" for null/absent. */
static void
value(struct whtml *b, const json_t *v)
{
	if (json_is_string(v))
		whtml_text(b, json_string_value(v));
	else if (json_is_integer(v))
		whtml_rawf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_true(v))
		whtml_raw(b, "yes");
	else if (json_is_false(v))
		whtml_raw(b, "no");
	else if (v == NULL || json_is_null(v))
		whtml_raw(b, "\xe2\x80\x94");
	else {
		char *s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
		whtml_text(b, s);
		free(s);
	}
}

/* One number of the overview: its element is named by data-k (stream i,
 * field) for console.js to update. */
static void
stat(struct whtml *b, size_t i, const char *field, const char *label, const json_t *st)
{
	whtml_rawf(b, "<div class=\"stat\"><span class=\"n\" data-k=\"%zu.%s\">", i, field);
	value(b, json_object_get(st, field));
	whtml_rawf(b, "</span><span class=\"l\">%s</span></div>", label);
}

static void
age_of(struct whtml *b, const json_t *ms)
{
	char buf[32];

	if (json_is_integer(ms))
		whtml_text(b, wpage_age(json_integer_value(ms), buf, sizeof buf));
	else
		whtml_raw(b, "\xe2\x80\x94");
}

static void
consumers(struct whtml *b, size_t i, const json_t *st)
{
	const json_t *cs = json_object_get(st, "consumers"), *c;
	const char *name;

	whtml_rawf(b, "<h3>Consumers</h3><table class=\"consumers\" data-consumers=\"%zu\">"
	    "<thead><tr><th>consumer</th><th>state</th><th>heartbeat</th><th>in flight</th>"
	    "<th>pending</th><th>token</th><th>version</th></tr></thead><tbody>", i);
	json_object_foreach((json_t *)cs, name, c) {
		int alive = json_is_true(json_object_get(c, "alive"));
		whtml_raw(b, "<tr><td>");
		whtml_text(b, name);
		whtml_rawf(b, "</td><td><span class=\"badge %s\">%s</span></td><td>",
		    alive ? "ok" : "bad", alive ? "alive" : "dead");
		age_of(b, json_object_get(c, "heartbeatAgeMs"));
		whtml_raw(b, "</td><td>");
		value(b, json_object_get(c, "inFlight"));
		whtml_raw(b, "</td><td>");
		value(b, json_object_get(c, "pending"));
		whtml_raw(b, "</td><td>");
		value(b, json_object_get(c, "tokenState"));
		whtml_raw(b, "</td><td>");
		value(b, json_object_get(c, "version"));
		whtml_raw(b, "</td></tr>");
	}
	whtml_raw(b, "</tbody></table>");
}

/* The alerts in plain words (walert.h); console.js redraws #alerts. */
static void
alerts(struct whtml *b, const json_t *list)
{
	const json_t *a;
	size_t i;

	whtml_raw(b, "<section class=\"alerts\" id=\"alerts\">");
	json_array_foreach(list, i, a) {
		const char *level = json_string_value(json_object_get(a, "level"));
		whtml_raw(b, level && strcmp(level, "bad") == 0 ? "<p class=\"alert bad\">" :
		    "<p class=\"alert warn\">");
		whtml_text(b, json_string_value(json_object_get(a, "text")));
		whtml_raw(b, "</p>");
	}
	whtml_raw(b, "</section>");
}

/* Pause an action or the queue: a select of what the config names. */
static void
pause_form(struct whtml *b, const struct wpage_who *who, const json_t *actions)
{
	const json_t *a;
	size_t i;

	if (who == NULL || !who->operator)
		return;
	whtml_raw(b, "<form class=\"act pause\" method=\"get\" action=\"/confirm\">"
	    "<input type=\"hidden\" name=\"op\" value=\"pause\"><label>Pause "
	    "<select name=\"arg\"><option value=\"*\">the whole queue</option>");
	json_array_foreach(actions, i, a) {
		whtml_raw(b, "<option value=\"");
		whtml_text(b, json_string_value(a));
		whtml_raw(b, "\">");
		whtml_text(b, json_string_value(a));
		whtml_raw(b, "</option>");
	}
	whtml_raw(b, "</select></label><button type=\"submit\" data-op=\"pause\">Pause"
	    "</button></form>");
}

void
wpage_overview(struct whtml *b, const struct wpage_who *who, const json_t *ov)
{
	const json_t *streams = json_object_get(ov, "streams"), *st, *paused, *v;
	const char *name;
	size_t i;

	head(b, who, "Overview", "overview");
	whtml_raw(b, "<h1>Overview <small class=\"live\" id=\"live\">live</small></h1>");
	alerts(b, json_object_get(ov, "alerts"));
	paused = json_object_get(ov, "paused");
	whtml_raw(b, "<section class=\"paused\" id=\"paused\">");
	if (json_object_size(paused) > 0) {
		whtml_raw(b, "<h2>Paused</h2><ul>");
		json_object_foreach((json_t *)paused, name, v) {
			whtml_raw(b, "<li><b>");
			whtml_text(b, strcmp(name, "*") == 0 ? "every action" : name);
			whtml_raw(b, "</b> ");
			value(b, v);
			act_button(b, who, "resume", name, "Resume");
			whtml_raw(b, "</li>");
		}
		whtml_raw(b, "</ul>");
	}
	pause_form(b, who, json_object_get(ov, "actions"));
	whtml_raw(b, "</section>");
	json_array_foreach(streams, i, st) {
		whtml_raw(b, "<section class=\"stream\"><h2>");
		whtml_text(b, json_string_value(json_object_get(st, "stream")));
		whtml_raw(b, " <small>group ");
		whtml_text(b, json_string_value(json_object_get(st, "group")));
		whtml_raw(b, "</small></h2><div class=\"stats\">");
		stat(b, i, "streamLength", "in stream", st);
		stat(b, i, "lag", "lag", st);
		stat(b, i, "pending", "pending", st);
		whtml_rawf(b, "<div class=\"stat\"><span class=\"n\" data-k=\"%zu.oldestPendingAge\">",
		    i);
		age_of(b, json_object_get(st, "oldestPendingIdleMs"));
		whtml_raw(b, "</span><span class=\"l\">oldest pending</span></div>");
		stat(b, i, "scheduled", "scheduled", st);
		stat(b, i, "dead", "dead", st);
		stat(b, i, "notify", "notify backlog", st);
		stat(b, i, "alive", "live consumers", st);
		whtml_raw(b, "</div>");
		consumers(b, i, st);
		whtml_raw(b, "</section>");
	}
	foot(b);
}

/* "held: paused" beside a state that would look merely queued. */
static void
held_badge(struct whtml *b, const char *state, const char *action, const json_t *paused)
{
	const char *why = wjob_held(state, action, paused);

	if (why == NULL)
		return;
	whtml_raw(b, " <span class=\"badge held\">held: ");
	whtml_text(b, why);
	whtml_raw(b, "</span>");
}

static void
filter_input(struct whtml *b, const char *name, const char *label, const char *v)
{
	whtml_rawf(b, "<label>%s <input name=\"%s\" value=\"", label, name);
	whtml_text(b, v);
	whtml_raw(b, "\"></label>");
}

/* The query of q with page p, as href's value (escaped). */
static void
jobs_href(struct whtml *b, const struct wroute_jobq *q, long p)
{
	const struct { const char *k, *v; } a[] = {{"state", q->state}, {"action", q->action},
	    {"resource", q->resource}, {"subject", q->subject}, {"id", q->id}};

	whtml_rawf(b, "/jobs?page=%ld", p);
	for (size_t i = 0; i < sizeof a / sizeof a[0]; i++)
		if (a[i].v[0]) {
			whtml_rawf(b, "&amp;%s=", a[i].k);
			whtml_url(b, a[i].v);
		}
}

void
wpage_jobs(struct whtml *b, const struct wpage_who *who, const struct wroute_jobq *q,
	   const json_t *list)
{
	static const char *const states[] = {"", "pending", "queued", "scheduled", "running",
	    "retrying", "auth_wait", "done", "expired", "denied", "failed", "dead", "cancelled"};
	const json_t *jobs = json_object_get(list, "jobs"), *j;
	size_t i;

	head(b, who, "Jobs", "jobs");
	whtml_raw(b, "<h1>Jobs</h1><form class=\"filters\" method=\"get\" action=\"/jobs\">"
	    "<label>State <select name=\"state\">");
	for (i = 0; i < sizeof states / sizeof states[0]; i++) {
		whtml_raw(b, "<option value=\"");
		whtml_text(b, states[i]);
		whtml_raw(b, strcmp(states[i], q->state) == 0 ? "\" selected>" : "\">");
		whtml_text(b, states[i][0] ? states[i] : "any");
		whtml_raw(b, "</option>");
	}
	whtml_raw(b, "</select></label>");
	filter_input(b, "action", "Action", q->action);
	filter_input(b, "resource", "Resource", q->resource);
	filter_input(b, "subject", "Subject", q->subject);
	filter_input(b, "id", "Record id", q->id);
	whtml_raw(b, "<button type=\"submit\">Show</button></form>");
	/* dead letters chosen by hand: the rows' boxes go to the confirmation */
	int pick = who && who->operator && strcmp(q->state, "dead") == 0;
	if (pick)
		whtml_raw(b, "<form class=\"pick\" method=\"get\" action=\"/confirm\">");
	whtml_raw(b, "<table class=\"jobs\"><thead><tr><th>record id</th><th>state</th>"
	    "<th>action</th><th>resource</th><th>subject</th><th>attempts</th><th>updated</th>"
	    "<th>found in</th></tr></thead><tbody>");
	json_array_foreach(jobs, i, j) {
		const char *id = json_string_value(json_object_get(j, "id"));
		const char *st = json_string_value(json_object_get(j, "state"));
		whtml_raw(b, "<tr><td>");
		if (pick) {
			whtml_raw(b, "<input type=\"checkbox\" name=\"id\" value=\"");
			whtml_text(b, id);
			whtml_raw(b, "\"> ");
		}
		whtml_raw(b, "<a href=\"/job/");
		whtml_url(b, id);
		whtml_raw(b, "\">");
		whtml_text(b, id);
		whtml_raw(b, "</a></td><td><span class=\"badge st-");
		whtml_text(b, st);
		whtml_raw(b, "\">");
		whtml_text(b, st && *st ? st : "?");
		whtml_raw(b, "</span>");
		held_badge(b, st, json_string_value(json_object_get(j, "action")),
		    json_object_get(list, "paused"));
		whtml_raw(b, "</td>");
		static const char *const cols[] = {"action", "resource", "onBehalfOf", "attempts",
		    "updatedAt", "source"};
		for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) {
			whtml_raw(b, "<td>");
			value(b, json_object_get(j, cols[c]));
			whtml_raw(b, "</td>");
		}
		whtml_raw(b, "</tr>");
	}
	if (json_array_size(jobs) == 0)
		whtml_raw(b, "<tr><td colspan=\"8\" class=\"none\">no job matches</td></tr>");
	whtml_raw(b, "</tbody></table>");
	if (pick)
		whtml_raw(b, "<p class=\"actions\"><button type=\"submit\" name=\"op\" "
		    "value=\"requeue\">Requeue selected</button> <button type=\"submit\" "
		    "name=\"op\" value=\"drop\">Drop selected</button></p></form>");
	whtml_raw(b, "<p class=\"pager\">");
	if (q->page > 0) {
		whtml_raw(b, "<a rel=\"prev\" href=\"");
		jobs_href(b, q, q->page - 1);
		whtml_raw(b, "\">\xe2\x86\x90 newer</a> ");
	}
	whtml_rawf(b, "<span>page %ld</span>", q->page + 1);
	if (json_is_true(json_object_get(list, "more"))) {
		whtml_raw(b, " <a rel=\"next\" href=\"");
		jobs_href(b, q, q->page + 1);
		whtml_raw(b, "\">older \xe2\x86\x92</a>");
	}
	whtml_raw(b, "</p>");
	foot(b);
}

/* An object's fields as a definition list, in its own order. */
static void
fields(struct whtml *b, const json_t *o)
{
	const char *k;
	const json_t *v;

	whtml_raw(b, "<dl>");
	json_object_foreach((json_t *)o, k, v) {
		whtml_raw(b, "<dt>");
		whtml_text(b, k);
		whtml_raw(b, "</dt><dd>");
		value(b, v);
		whtml_raw(b, "</dd>");
	}
	whtml_raw(b, "</dl>");
}

/* What an operator may do with a job in state st: retry a failed or dead
 * one, cancel one not yet terminal, requeue or drop its dead letters. The
 * checks themselves are act.c's, at the POST. */
static void
job_buttons(struct whtml *b, const struct wpage_who *who, const char *id, const char *st,
	    int has_dead)
{
	static const char *const terminal[] = {"done", "expired", "denied", "failed", "dead",
	    "cancelled"};
	int final = 0;

	if (who == NULL || !who->operator || id == NULL)
		return;
	for (size_t i = 0; st && i < sizeof terminal / sizeof terminal[0]; i++)
		final |= strcmp(st, terminal[i]) == 0;
	whtml_raw(b, "<div class=\"actions\">");
	if (st && (strcmp(st, "failed") == 0 || strcmp(st, "dead") == 0))
		act_button(b, who, "retry", id, "Retry");
	if (!final)
		act_button(b, who, "cancel", id, "Cancel");
	if (has_dead) {
		act_button(b, who, "requeue", id, "Requeue dead letters");
		act_button(b, who, "drop", id, "Drop dead letters");
	}
	whtml_raw(b, "</div>");
}

/* The record's signature: verified or why not, alg and kid as the header
 * says; the trace the job's calls carry (the audit's traceparent). */
static void
signature(struct whtml *b, const json_t *job, const json_t *audit)
{
	const char *tp = NULL;
	const json_t *e;
	size_t i;

	json_array_foreach(audit, i, e)
		if (json_is_string(json_object_get(e, "traceparent")))
			tp = json_string_value(json_object_get(e, "traceparent"));
	whtml_raw(b, "<section class=\"sig\"><dl><dt>signature</dt><dd class=\"sig\">");
	if (json_is_string(json_object_get(job, "signature")))
		value(b, json_object_get(job, "signature"));
	else
		whtml_textf(b, "refused: %s", json_string_value(json_object_get(job,
		    "recordError")) ? json_string_value(json_object_get(job, "recordError")) : "?");
	whtml_raw(b, "</dd><dt>alg</dt><dd>");
	value(b, json_object_get(job, "alg"));
	whtml_raw(b, "</dd><dt>kid</dt><dd class=\"kid\">");
	value(b, json_object_get(job, "kid"));
	whtml_raw(b, "</dd><dt>traceparent</dt><dd class=\"traceparent\"><code>");
	whtml_text(b, tp ? tp : "\xe2\x80\x94");
	whtml_raw(b, "</code></dd></dl></section>");
}

/* Every attempt: its number, start, outcome and how long it ran. */
static void
attempts(struct whtml *b, const json_t *audit)
{
	json_t *list = wjob_attempts(audit);
	const json_t *a;
	size_t i;
	char buf[32];

	whtml_raw(b, "<h2>Attempts</h2><table class=\"attempts\"><thead><tr><th>attempt</th>"
	    "<th>started</th><th>outcome</th><th>duration</th><th>detail</th></tr></thead><tbody>");
	json_array_foreach(list, i, a) {
		const json_t *ms = json_object_get(a, "durationMs");
		const char *out = json_string_value(json_object_get(a, "outcome"));
		whtml_raw(b, "<tr><td>");
		value(b, json_object_get(a, "attempt"));
		whtml_raw(b, "</td><td>");
		value(b, json_object_get(a, "startedAt"));
		whtml_raw(b, "</td><td>");
		whtml_text(b, out && *out ? out : "running");
		whtml_raw(b, "</td><td class=\"num\">");
		if (json_is_integer(ms) && json_integer_value(ms) < 10000)
			whtml_rawf(b, "%lld ms", (long long)json_integer_value(ms));
		else
			whtml_text(b, json_is_integer(ms) ? wpage_age(json_integer_value(ms), buf,
			    sizeof buf) : "\xe2\x80\x94");
		whtml_raw(b, "</td><td>");
		value(b, json_object_get(a, "detail"));
		whtml_raw(b, "</td></tr>");
	}
	if (json_array_size(list) == 0)
		whtml_raw(b, "<tr><td colspan=\"5\" class=\"none\">no attempt yet</td></tr>");
	whtml_raw(b, "</tbody></table>");
	json_decref(list);
}

void
wpage_job(struct whtml *b, const struct wpage_who *who, const json_t *job, int64_t now_ms)
{
	const json_t *rec = json_object_get(job, "record"), *state = json_object_get(job, "state");
	const json_t *audit = json_object_get(job, "audit"), *e;
	const char *id = json_string_value(json_object_get(job, "id"));
	const char *st = json_string_value(json_object_get(state, "state"));
	size_t i;

	head(b, who, id ? id : "Job", "jobs");
	whtml_raw(b, "<h1>Job <code>");
	whtml_text(b, id);
	whtml_raw(b, "</code> <span class=\"badge st-");
	whtml_text(b, st);
	whtml_raw(b, "\">");
	whtml_text(b, st ? st : "unknown");
	whtml_raw(b, "</span>");
	held_badge(b, st, json_string_value(json_object_get(rec, "action")),
	    json_object_get(job, "paused"));
	whtml_raw(b, "</h1>");
	job_buttons(b, who, id, st, json_array_size(json_object_get(job, "deadLetters")) > 0);
	whtml_raw(b, "<div class=\"cols\"><section><h2>Record</h2>");
	if (json_is_object(rec)) {
		const char *exp = json_string_value(json_object_get(rec, "expiresAt"));
		int64_t exp_ms;
		fields(b, rec);
		if (exp && wtime_parse_rfc3339(exp, &exp_ms) == 0) {
			char buf[32];
			whtml_raw(b, "<p class=\"left\">");
			if (exp_ms > now_ms)
				whtml_textf(b, "%s left before its deadline",
				    wpage_age(exp_ms - now_ms, buf, sizeof buf));
			else
				whtml_textf(b, "deadline passed %s ago",
				    wpage_age(now_ms - exp_ms, buf, sizeof buf));
			whtml_raw(b, "</p>");
		}
	} else {
		whtml_raw(b, "<p class=\"err\">");
		whtml_text(b, json_string_value(json_object_get(job, "recordError")));
		whtml_raw(b, "</p>");
	}
	whtml_raw(b, "</section><section><h2>State</h2>");
	if (json_is_object(state))
		fields(b, state);
	else
		whtml_raw(b, "<p>no state hash (never loaded, or its retention ended)</p>");
	whtml_raw(b, "</section></div>");
	signature(b, job, audit);
	attempts(b, audit);
	whtml_raw(b, "<h2>Audit trail</h2><table class=\"audit\"><thead><tr>"
	    "<th>at</th><th>from</th><th>to</th><th>attempt</th><th>consumer</th><th>detail</th>"
	    "</tr></thead><tbody>");
	json_array_foreach(audit, i, e) {
		static const char *const cols[] = {"at", "from", "to", "attempt", "consumer",
		    "detail"};
		whtml_raw(b, "<tr>");
		for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) {
			whtml_raw(b, "<td>");
			value(b, json_object_get(e, cols[c]));
			whtml_raw(b, "</td>");
		}
		whtml_raw(b, "</tr>");
	}
	if (json_array_size(audit) == 0)
		whtml_raw(b, "<tr><td colspan=\"6\" class=\"none\">no audit entry</td></tr>");
	whtml_raw(b, "</tbody></table>");
	foot(b);
}

void
wpage_dead(struct whtml *b, const struct wpage_who *who, const json_t *dead)
{
	const json_t *by = json_object_get(dead, "reasons"), *v;
	const char *reason;

	head(b, who, "Dead letters", "dead");
	whtml_raw(b, "<h1>Dead letters</h1><table class=\"dead\"><thead><tr><th>reason</th>"
	    "<th>count</th><th></th></tr></thead><tbody>");
	json_object_foreach((json_t *)by, reason, v) {
		whtml_raw(b, "<tr><td>");
		whtml_text(b, reason);
		whtml_raw(b, "</td><td class=\"num\">");
		value(b, v);
		whtml_raw(b, "</td><td><a href=\"/jobs?state=dead\">list</a>");
		act_button(b, who, "requeue-reason", reason, "Requeue all");
		act_button(b, who, "drop-reason", reason, "Drop all");
		whtml_raw(b, "</td></tr>");
	}
	if (json_object_size(by) == 0)
		whtml_raw(b, "<tr><td colspan=\"3\" class=\"none\">no dead letter</td></tr>");
	whtml_raw(b, "</tbody></table>");
	foot(b);
}

void
wpage_charts(struct whtml *b, const struct wpage_who *who, const json_t *stats)
{
	head(b, who, "Charts", "charts");
	whtml_raw(b, "<h1>Charts</h1><p class=\"note\">From the per-minute counts every worker "
	    "adds with its heartbeat (kept 26 h): all workers together.</p>"
	    "<section class=\"chart\" id=\"hour\"><h2>Jobs per minute by outcome, the last "
	    "hour</h2>");
	wchart_outcomes(b, stats, 60, 1);
	whtml_raw(b, "</section><section class=\"chart\" id=\"day\"><h2>Jobs by outcome, the "
	    "last day (30 minutes a bar)</h2>");
	wchart_outcomes(b, stats, 1440, 30);
	whtml_raw(b, "</section><section class=\"chart\" id=\"latency\"><h2>Call duration by "
	    "action, the last hour</h2>");
	wchart_latency(b, stats, 60, 1);
	whtml_raw(b, "</section><section class=\"chart\" id=\"deadchart\"><h2>Dead letters by "
	    "reason, the last day</h2>");
	wchart_dead(b, stats, 1440);
	whtml_raw(b, "</section>");
	foot(b);
}

void
wpage_confirm(struct whtml *b, const struct wpage_who *who, const char *op, const char *arg,
	      const char *sentence, const char *back)
{
	head(b, who, "Confirm", NULL);
	whtml_raw(b, "<h1>Confirm</h1><p class=\"confirm\">");
	whtml_text(b, sentence);
	whtml_raw(b, "?</p><form class=\"confirm\" method=\"post\" action=\"/act\">"
	    "<input type=\"hidden\" name=\"csrf\" value=\"");
	whtml_text(b, who->csrf);
	whtml_raw(b, "\"><input type=\"hidden\" name=\"op\" value=\"");
	whtml_text(b, op);
	whtml_raw(b, "\"><input type=\"hidden\" name=\"arg\" value=\"");
	whtml_text(b, arg);
	whtml_raw(b, "\"><button type=\"submit\" class=\"danger\">Yes, ");
	whtml_text(b, op);
	whtml_raw(b, "</button> <a href=\"");
	whtml_text(b, back);
	whtml_raw(b, "\">No, go back</a></form>");
	foot(b);
}

void
wpage_acted(struct whtml *b, const struct wpage_who *who, const char *sentence, int rc,
	    const json_t *lines, const char *back)
{
	const json_t *l;
	size_t i;

	head(b, who, rc == 0 ? "Done" : "Refused", NULL);
	whtml_raw(b, rc == 0 ? "<h1>Done</h1>" : "<h1>Refused</h1>");
	whtml_raw(b, "<p>");
	whtml_text(b, sentence);
	whtml_raw(b, "</p><ul class=\"acted\">");
	json_array_foreach(lines, i, l) {
		whtml_raw(b, json_is_true(json_array_get(l, 0)) ? "<li class=\"err\">" : "<li>");
		whtml_text(b, json_string_value(json_array_get(l, 1)));
		whtml_raw(b, "</li>");
	}
	if (rc != 0 && json_array_size(lines) == 0)
		whtml_raw(b, "<li class=\"err\">Redis refused or did not answer (see warrantd-web's "
		    "log)</li>");
	whtml_raw(b, "</ul><p><a class=\"back\" href=\"");
	whtml_text(b, back);
	whtml_raw(b, "\">Back</a></p>");
	foot(b);
}

void
wpage_error(struct whtml *b, const struct wpage_who *who, int status, const char *message)
{
	head(b, who, "Error", NULL);
	whtml_rawf(b, "<h1>%d</h1><p class=\"err\">", status);
	whtml_text(b, message);
	whtml_raw(b, "</p>");
	foot(b);
}
