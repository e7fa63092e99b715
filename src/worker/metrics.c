/* SPDX-License-Identifier: BSD-2-Clause */
/* metrics: the daemon's numbers as Prometheus text, served on hsrv (see metrics.h). */
#define _GNU_SOURCE
#include "worker/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "core/callfail.h"
#include "base/promtext.h"
#include "http/hsrv.h"

/* ------------------------------------------------------------------ */
/* histograms                                                           */

static const long long duration_le_ms[] = {5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000,
	10000, 30000, 60000};
static const long long delay_le_ms[] = {100, 500, 1000, 5000, 15000, 60000, 300000, 900000,
	3600000, 21600000, 86400000};
#define NDUR	(sizeof duration_le_ms / sizeof duration_le_ms[0])
#define NDELAY	(sizeof delay_le_ms / sizeof delay_le_ms[0])
#define NMAX	(NDUR > NDELAY ? NDUR : NDELAY)

struct series {
	long long bucket[NMAX];	/* not cumulative: count with value <= le[i], > le[i-1] */
	long long count, sum_ms;
};

/* The terminal outcomes counted by action, in the order they are shown. */
static const char *const outcomes[] = {"done", "expired", "denied", "failed", "dead"};
#define NOUTCOME (sizeof outcomes / sizeof outcomes[0])
#define DEAD_REASONS_MAX 64	/* reason.h has fewer: no cap is ever met */

/* The status classes call durations are kept by ("error": no answer). */
static const char *const status_classes[] = {"1xx", "2xx", "3xx", "4xx", "5xx", "error"};
#define NCLASS (sizeof status_classes / sizeof status_classes[0])

struct action_hist {
	char *action;
	struct series duration[NCLASS], delay;
	long long outcome[NOUTCOME];
};

struct metrics_hist {
	struct action_hist *a;
	size_t n;
	struct {
		char reason[40];
		long long n;
	} dead[DEAD_REASONS_MAX];
	size_t ndead;
};

struct metrics_hist *
metrics_hist_new(void)
{
	return calloc(1, sizeof(struct metrics_hist));
}

void
metrics_hist_free(struct metrics_hist *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n; i++)
		free(h->a[i].action);
	free(h->a);
	free(h);
}

static void
series_add(struct series *s, const long long *le, size_t nle, long long ms)
{
	if (ms < 0)
		ms = 0;
	for (size_t i = 0; i < nle; i++)
		if (ms <= le[i]) {
			s->bucket[i]++;
			break;
		}
	s->count++;
	s->sum_ms += ms;
}

/* The action's entry, added when new; NULL past METRICS_ACTIONS_MAX or out
 * of memory. */
static struct action_hist *
action_of(struct metrics_hist *h, const char *action)
{
	for (size_t i = 0; i < h->n; i++)
		if (strcmp(h->a[i].action, action) == 0)
			return &h->a[i];
	if (h->n >= METRICS_ACTIONS_MAX)
		return NULL;
	struct action_hist *more = realloc(h->a, (h->n + 1) * sizeof *more);
	if (!more)
		return NULL;
	h->a = more;
	struct action_hist *a = &h->a[h->n];
	memset(a, 0, sizeof *a);
	if (!(a->action = strdup(action)))
		return NULL;
	h->n++;
	return a;
}

static size_t
class_of(long status)
{
	return status >= 100 && status <= 599 ? (size_t)(status / 100 - 1) : NCLASS - 1;
}

const char *
metrics_status_class(long status)
{
	return status_classes[class_of(status)];
}

int
metrics_hist_observe(struct metrics_hist *h, const char *action, long status,
		     long long duration_ms, long long queue_delay_ms)
{
	struct action_hist *a = action_of(h, action);

	if (!a)
		return -1;
	series_add(&a->duration[class_of(status)], duration_le_ms, NDUR, duration_ms);
	series_add(&a->delay, delay_le_ms, NDELAY, queue_delay_ms);
	return 0;
}

int
metrics_hist_outcome(struct metrics_hist *h, const char *action, const char *outcome,
		     const char *reason)
{
	size_t k = 0;

	while (k < NOUTCOME && strcmp(outcomes[k], outcome) != 0)
		k++;
	if (k == NOUTCOME)
		return 0;	/* not terminal: not an outcome */
	struct action_hist *a = action_of(h, action);
	if (!a)
		return -1;
	a->outcome[k]++;
	if (strcmp(outcome, "dead") != 0)
		return 0;
	size_t r = 0;
	while (r < h->ndead && strcmp(h->dead[r].reason, reason) != 0)
		r++;
	if (r == h->ndead) {
		if (h->ndead == DEAD_REASONS_MAX || strlen(reason) >= sizeof h->dead[0].reason)
			return -1;
		snprintf(h->dead[h->ndead++].reason, sizeof h->dead[0].reason, "%s", reason);
	}
	h->dead[r].n++;
	return 0;
}

/* ------------------------------------------------------------------ */
/* the exposition text                                                  */

/* HELP texts by heartbeat name; a counter added to counters.h without one
 * still gets served, with a generic help. */
static const struct {
	const char *name, *help;
} counter_help[] = {
	{"received", "Entries taken in hand."},
	{"done", "Jobs done (2xx)."},
	{"expired", "Jobs dropped at their deadline (R1)."},
	{"denied", "Jobs denied by the policy decision point (R5)."},
	{"failed", "Jobs failed permanently (4xx)."},
	{"dead", "Entries dead-lettered."},
	{"retried", "Calls retried with backoff (R8)."},
	{"redispatched", "Entries re-dispatched after an auth failure (R9)."},
	{"authFailures", "Calls refused for the token (401, invalid_token)."},
	{"tokenRefreshes", "Access tokens fetched."},
	{"claimed", "Entries taken over from other consumers (R11)."},
	{"parked", "Entries set aside while their action was paused, its breaker open or its scope without a token (R6)."},
	{"redisOutages", "Connections to Redis lost (R17)."},
	{"redisAuthRefreshes", "Tokens fetched for Redis itself ([redis] auth = oauth or command)."},
	{"redisAuthFailures", "Redis refused its credential (NOAUTH, WRONGPASS, closed at expiry)."},
	{"idpFailures", "Token requests for the worker's token that failed (IdP down, refused)."},
	{"pdpFailures", "Questions to the policy decision point that decided nothing (no 2xx, no JSON)."},
	{"webhookFailures", "Webhook POSTs that failed (each try)."},
	{"notifyDropped", "Notifications the webhook gave up on (tries spent, or its queue full)."},
	{"redisHostsRefused", "Redis hosts refused: named outside [redis] allow_hosts."},
};

static const char *
help_of(const char *name)
{
	for (size_t i = 0; i < sizeof counter_help / sizeof counter_help[0]; i++)
		if (strcmp(counter_help[i].name, name) == 0)
			return counter_help[i].help;
	return "A counter of the heartbeat hash (warrantd(7) §8).";
}

static const char *const token_states[] = {"valid", "refreshing", "none", "error"};

int
metrics_snake_case(const char *camel, char *out, size_t n)
{
	size_t k = 0;

	for (const char *p = camel; *p; p++) {
		int upper = *p >= 'A' && *p <= 'Z';
		if (k + 2 + (size_t)upper > n)
			return -1;
		if (upper && p != camel)
			out[k++] = '_';
		out[k++] = upper ? (char)(*p - 'A' + 'a') : *p;
	}
	if (k >= n)
		return -1;
	out[k] = '\0';
	return 0;
}

/* "warrantd_" + name: every metric of the daemon but process_*. */
static const char *
wname(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "warrantd_%s", name);
	return buf;
}

static void
head(struct promtext *p, const char *name, const char *type, const char *help)
{
	char n[96];

	promtext_head(p, wname(n, sizeof n, name), type, help);
}

static void
begin(struct promtext *p, const char *name)
{
	char n[96];

	promtext_begin(p, wname(n, sizeof n, name));
}

/* One unlabelled sample. */
static void
sample_ll(struct promtext *p, const char *name, long long v)
{
	begin(p, name);
	promtext_ll(p, v);
}

static void
put_series(struct promtext *p, const char *name, const char *action, const char *status,
	   const struct series *s, const long long *le, size_t nle)
{
	static const char *const keys[] = {"action", "status"};
	const char *values[] = {action, status};
	char n[96];

	promtext_histogram(p, wname(n, sizeof n, name), keys, values, status ? 2 : 1, le,
	    s->bucket, nle, s->count, s->sum_ms);
}

static void
put_hists(struct promtext *p, const struct metrics_hist *h)
{
	head(p, "call_duration_seconds", "histogram", "Duration of action calls, by action "
	    "and status class (1xx to 5xx, or error: no answer).");
	for (size_t i = 0; h && i < h->n; i++)
		for (size_t c = 0; c < NCLASS; c++)
			if (h->a[i].duration[c].count > 0)
				put_series(p, "call_duration_seconds", h->a[i].action,
				    status_classes[c], &h->a[i].duration[c], duration_le_ms, NDUR);
	head(p, "queue_delay_seconds", "histogram",
	    "Delay from the XADD of an entry to the start of each of its calls, by action.");
	for (size_t i = 0; h && i < h->n; i++)
		if (h->a[i].delay.count > 0)
			put_series(p, "queue_delay_seconds", h->a[i].action, NULL, &h->a[i].delay,
			    delay_le_ms, NDELAY);
}

/* The alertable counters: outcomes by action ("is gate.close failing?")
 * and dead letters by reason ("is bad-signature spiking?"). */
static void
put_outcomes(struct promtext *p, const struct metrics_hist *h)
{
	head(p, "jobs_total", "counter", "Jobs that reached a terminal state, by action and "
	    "outcome (action \"\": no record to name one).");
	for (size_t i = 0; h && i < h->n; i++) {
		long long any = 0;
		for (size_t k = 0; k < NOUTCOME; k++)
			any += h->a[i].outcome[k];
		for (size_t k = 0; any > 0 && k < NOUTCOME; k++) {
			begin(p, "jobs_total");
			promtext_label(p, "action", h->a[i].action);
			promtext_label(p, "outcome", outcomes[k]);
			promtext_ll(p, h->a[i].outcome[k]);
		}
	}
	head(p, "dead_letters_total", "counter", "Dead letters written, by reason.");
	for (size_t r = 0; h && r < h->ndead; r++) {
		begin(p, "dead_letters_total");
		promtext_label(p, "reason", h->dead[r].reason);
		promtext_ll(p, h->dead[r].n);
	}
}

/* The process_* metrics every Prometheus client library exports, so the
 * usual dashboards and alerts (memory, descriptors near the limit) work. */
static void
put_process(struct promtext *p, const struct metrics_sample *s)
{
	static const struct {
		const char *name, *type, *help;
	} m[] = {
		{"process_cpu_seconds_total", "counter", "User and system CPU time, seconds."},
		{"process_resident_memory_bytes", "gauge", "Resident memory size, bytes."},
		{"process_open_fds", "gauge", "Open file descriptors."},
		{"process_max_fds", "gauge", "The file descriptor limit (soft)."},
		{"process_start_time_seconds", "gauge", "Start time of the process, Unix seconds."},
	};
	const double v[] = {s->cpu_s, (double)s->rss_bytes, (double)s->open_fds,
	    (double)s->max_fds, (double)s->start_time_s};

	for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
		if (v[i] < 0)
			continue;
		promtext_head(p, m[i].name, m[i].type, m[i].help);
		promtext_begin(p, m[i].name);
		promtext_fixed(p, v[i], i == 0 ? 3 : 0);
	}
}

/* A state gauge: one sample per state, 1 for the current one. */
static void
put_states(struct promtext *p, const char *name, const char *key, const char *value,
	   const char *const *states, size_t nstates, const char *state)
{
	for (size_t i = 0; i < nstates; i++) {
		begin(p, name);
		if (key)
			promtext_label(p, key, value);
		promtext_label(p, "state", states[i]);
		promtext_ll(p, state && strcmp(state, states[i]) == 0);
	}
}

#define NTOKEN_STATES (sizeof token_states / sizeof token_states[0])

/* A token's state (one gauge per state, 1 for the current one) and life. */
static void
put_token(struct promtext *p, const char *prefix, const char *what, const char *none,
	  const char *state, long long expires_in_s)
{
	char name[64], help[128];

	snprintf(name, sizeof name, "%s_state", prefix);
	snprintf(help, sizeof help, "1 for %s's current state.", what);
	head(p, name, "gauge", help);
	put_states(p, name, NULL, NULL, token_states, NTOKEN_STATES, state);
	snprintf(name, sizeof name, "%s_expires_in_seconds", prefix);
	snprintf(help, sizeof help, "Seconds until %s expires %s.", what, none);
	head(p, name, "gauge", help);
	sample_ll(p, name, expires_in_s);
}

/* One gauge per action of the gate, its value from the view. */
static void
put_gate_gauge(struct promtext *p, const struct gate *g, long long now, const char *name,
	       const char *help, int which)
{
	struct gate_view v;

	head(p, name, "gauge", help);
	for (size_t i = 0; i < gate_count(g); i++) {
		gate_view(g, i, now, &v);
		begin(p, name);
		promtext_label(p, "action", v.action);
		promtext_ll(p, which == 0 ? v.paused : which == 1 ? v.max_in_flight : v.in_flight);
	}
}

/* §13: the whole queue's pause, and each action's pause, breaker and
 * limit (one gauge per breaker state, 1 for the current one, as tokens). */
static void
put_gate(struct promtext *p, const struct gate *g, long long now)
{
	static const enum gate_breaker states[] = {GATE_CLOSED, GATE_HALF_OPEN, GATE_BROKEN};
	const char *names[sizeof states / sizeof states[0]];
	struct gate_view v;

	head(p, "queue_paused", "gauge", "1 while the whole queue is paused (warrantctl pause).");
	sample_ll(p, "queue_paused", g && gate_paused(g, NULL));
	if (!g || gate_count(g) == 0)
		return;
	put_gate_gauge(p, g, now, "action_paused",
	    "1 while the action is paused, by name or with the whole queue.", 0);
	head(p, "breaker_state", "gauge",
	    "1 for the current state of the action's circuit breaker on this worker.");
	for (size_t k = 0; k < sizeof states / sizeof states[0]; k++)
		names[k] = gate_breaker_name(states[k]);
	for (size_t i = 0; i < gate_count(g); i++) {
		gate_view(g, i, now, &v);
		put_states(p, "breaker_state", "action", v.action, names,
		    sizeof states / sizeof states[0], gate_breaker_name(v.breaker));
	}
	put_gate_gauge(p, g, now, "action_max_in_flight",
	    "The action's max_in_flight on this worker (0: no limit).", 1);
	put_gate_gauge(p, g, now, "action_in_flight",
	    "Attempts of the action under way on this worker (its places at the gate).", 2);
}

/* R6, §8: one scope's trouble is its own, so each narrowed token has its
 * state and life under its scope's label. */
static void
put_scopes(struct promtext *p, const struct metrics_sample *s)
{
	size_t n = s->nscopes < METRICS_SCOPES_MAX ? s->nscopes : METRICS_SCOPES_MAX;

	if (n == 0)
		return;
	head(p, "scope_token_state", "gauge",
	    "1 for the current state of an action's own token, by scope.");
	for (size_t i = 0; i < n; i++)
		put_states(p, "scope_token_state", "scope", s->scopes[i].name ?
		    s->scopes[i].name : "", token_states, NTOKEN_STATES, s->scopes[i].state);
	head(p, "scope_token_expires_in_seconds", "gauge",
	    "Seconds until an action's own token expires (0: none), by scope.");
	for (size_t i = 0; i < n; i++) {
		begin(p, "scope_token_expires_in_seconds");
		promtext_label(p, "scope", s->scopes[i].name ? s->scopes[i].name : "");
		promtext_ll(p, s->scopes[i].expires_in_s);
	}
}

/* Every counter of counters.h's table, as warrantd_<snake_case>_total. */
static void
put_counters(struct promtext *p, const struct metrics_sample *s)
{
	for (const struct counter_field *f = counter_fields; f->name; f++) {
		static const char total[] = "_total";
		char name[80];
		if (metrics_snake_case(f->name, name, sizeof name - (sizeof total - 1)) < 0)
			continue;	/* no counter name is that long */
		memcpy(name + strlen(name), total, sizeof total);
		head(p, name, "counter", help_of(f->name));
		sample_ll(p, name, counter_value(&s->n, f));
	}
}

/* Action calls that got no answer, by the class http gave them (callfail). */
static void
put_call_failures(struct promtext *p, const struct metrics_sample *s)
{
	head(p, "call_failures_total", "counter", "Action calls that got no answer, by class "
	    "(warrantd(8) LOGS: http.failed).");
	for (int c = CALLFAIL_NONE + 1; c < CALLFAIL_COUNT; c++) {
		begin(p, "call_failures_total");
		promtext_label(p, "class", callfail_name((enum callfail)c));
		promtext_ll(p, s->n.call_failures[c]);
	}
}

char *
metrics_format(const struct metrics_sample *s, const struct metrics_hist *h, size_t *len)
{
	struct promtext *p = promtext_new();

	if (!p)
		return NULL;
	head(p, "build_info", "gauge", "Always 1; the version in a label.");
	begin(p, "build_info");
	promtext_label(p, "version", s->version ? s->version : "");
	promtext_ll(p, 1);
	head(p, "start_time_seconds", "gauge", "Start time of the process, Unix seconds.");
	sample_ll(p, "start_time_seconds", s->start_time_s);
	put_counters(p, s);
	put_call_failures(p, s);
	head(p, "in_flight", "gauge", "Entries in hand now.");
	sample_ll(p, "in_flight", s->in_flight);
	put_token(p, "token", "the worker token", "(0: none)", s->token_state,
	    s->token_expires_in_s);
	put_token(p, "redis_token", "the Redis token", "(0: none, or a static password)",
	    s->redis_token_state, s->redis_token_expires_in_s);
	put_scopes(p, s);
	head(p, "redis_up", "gauge", "1 while the command connection to Redis is up.");
	sample_ll(p, "redis_up", s->redis_up ? 1 : 0);
	head(p, "config_reloads_total", "counter",
	    "Reloads (SIGHUP, R16) since start, by result: a refused one keeps the running config.");
	begin(p, "config_reloads_total");
	promtext_label(p, "result", "ok");
	promtext_ll(p, s->reloads_ok);
	begin(p, "config_reloads_total");
	promtext_label(p, "result", "failed");
	promtext_ll(p, s->reloads_failed);
	put_process(p, s);
	put_gate(p, s->gate, s->now_ms);
	put_hists(p, h);
	put_outcomes(p, h);
	char *text = promtext_take(p, len);
	promtext_free(p);
	return text;
}
/* ------------------------------------------------------------------ */
/* the server                                                           */

struct metrics {
	struct hsrv *srv;
	metrics_sample_fn *sample;
	void *sample_arg;
	struct metrics_hist *hist;
	int observe_failed;	/* logged once */
};

/* A short plain answer of its own status. */
static void
plain(struct hsrv_answer *out, int status, const char *text)
{
	out->status = status;
	out->content_type = "text/plain; charset=utf-8";
	out->body = strdup(text);
	out->len = out->body ? strlen(out->body) : 0;
}

/* GET /metrics (a query string is ignored); 405 for another method on it,
 * 404 for another path. */
static void
answer(void *arg, const struct hsrv_req *q, const char *method, const char *path,
       struct hsrv_answer *out)
{
	struct metrics *m = arg;
	struct metrics_sample s = {0};

	(void)q;
	if (strcmp(path, "/metrics") != 0) {
		plain(out, 404, "Not Found\n");
		return;
	}
	if (strcmp(method, "GET") != 0) {
		plain(out, 405, "Method Not Allowed\n");
		out->allow = "GET";
		return;
	}
	m->sample(m->sample_arg, &s);
	if (!(out->body = metrics_format(&s, m->hist, &out->len))) {
		plain(out, 500, "Internal Server Error\n");
		return;
	}
	out->status = 200;
	out->content_type = "text/plain; version=0.0.4; charset=utf-8";
}

struct metrics *
metrics_new(struct ev_loop *loop, const struct listen_addr *addr, metrics_sample_fn *sample,
	    void *arg, char *err, size_t errlen)
{
	static const struct hsrv_limits limits = {.ev_accept = "metrics.accept",
	    .ev_http = "metrics.http", .per_peer = METRICS_PER_PEER,
	    .total = METRICS_CLIENTS, .timeout_s = METRICS_TIMEOUT_S, .head_max = METRICS_REQ_MAX};
	struct metrics *m = calloc(1, sizeof *m);
	char why[200];

	if (!m || !(m->hist = metrics_hist_new())) {
		snprintf(err, errlen, "metrics: out of memory");
		free(m);
		return NULL;
	}
	m->sample = sample;
	m->sample_arg = arg;
	if (!(m->srv = hsrv_new(loop, addr, &limits, answer, m, why, sizeof why))) {
		snprintf(err, errlen, "metrics: %s", why);
		metrics_hist_free(m->hist);
		free(m);
		return NULL;
	}
	return m;
}
void
metrics_observe_call(struct metrics *m, const char *action, long status, long long duration_ms,
		     long long queue_delay_ms)
{
	if (metrics_hist_observe(m->hist, action, status, duration_ms, queue_delay_ms) < 0 &&
	    !m->observe_failed) {
		m->observe_failed = 1;
		log_warn("metrics.dropped", "detail=\"more than %d actions or out of memory: "
		    "some calls are not in the histograms\"", METRICS_ACTIONS_MAX);
	}
}

void
metrics_observe_outcome(struct metrics *m, const char *action, const char *outcome,
			const char *reason)
{
	if (metrics_hist_outcome(m->hist, action, outcome, reason) < 0 && !m->observe_failed) {
		m->observe_failed = 1;
		log_warn("metrics.dropped", "detail=\"more than %d actions or out of memory: "
		    "some outcomes are not counted\"", METRICS_ACTIONS_MAX);
	}
}

void
metrics_free(struct metrics *m)
{
	if (!m)
		return;
	hsrv_free(m->srv);
	metrics_hist_free(m->hist);
	free(m);
}
