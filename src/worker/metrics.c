/* SPDX-License-Identifier: BSD-2-Clause */
/* metrics: Prometheus text format and its tiny HTTP/1.x responder (see metrics.h). */
#define _GNU_SOURCE
#include "worker/metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/log.h"
#include "core/callfail.h"

/* ------------------------------------------------------------------ */
/* requests                                                             */

int
metrics_http_parse(const char *buf, size_t len)
{
	const char *end = NULL;

	for (size_t i = 0; i + 1 < len && !end; i++) {
		if (buf[i] == '\n' && buf[i + 1] == '\n')
			end = buf + i;
		else if (i + 3 < len && memcmp(buf + i, "\r\n\r\n", 4) == 0)
			end = buf + i;
	}
	if (!end)
		return len >= METRICS_REQ_MAX ? 431 : 0;
	/* end is at "\n\n" or "\r\n\r\n": a '\n' is within its first two bytes */
	const char *eol = memchr(buf, '\n', (size_t)(end - buf) + 2);
	size_t llen = (size_t)(eol - buf);
	if (llen > 0 && buf[llen - 1] == '\r')
		llen--;
	/* METHOD SP TARGET SP HTTP/1.x, nothing else on the line */
	const char *sp1 = memchr(buf, ' ', llen);
	const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', llen - (size_t)(sp1 + 1 - buf)) : NULL;
	if (!sp1 || !sp2 || sp1 == buf || sp2 == sp1 + 1)
		return 400;
	size_t vlen = llen - (size_t)(sp2 + 1 - buf);
	if (memchr(sp2 + 1, ' ', vlen))
		return 400;
	if (vlen != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0)
		return vlen >= 5 && memcmp(sp2 + 1, "HTTP/", 5) == 0 ? 505 : 400;
	if (sp2[8] != '0' && sp2[8] != '1')
		return 505;
	for (const char *p = buf; p < buf + llen; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return 400;
	size_t tlen = (size_t)(sp2 - sp1 - 1);
	const char *target = sp1 + 1;
	int is_metrics = tlen >= 8 && memcmp(target, "/metrics", 8) == 0 &&
	    (tlen == 8 || target[8] == '?');
	if (!is_metrics)
		return 404;
	if ((size_t)(sp1 - buf) != 3 || memcmp(buf, "GET", 3) != 0)
		return 405;
	return 200;
}

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

struct out {
	char *buf;
	size_t len, cap;
	int nomem;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
put(struct out *o, const char *fmt, ...)
{
	va_list ap;

	for (;;) {
		size_t room = o->cap - o->len;
		va_start(ap, fmt);
		int n = o->nomem ? 0 : vsnprintf(o->buf ? o->buf + o->len : NULL, room, fmt, ap);
		va_end(ap);
		if (o->nomem || n < 0) {
			o->nomem = 1;
			return;
		}
		if ((size_t)n < room) {
			o->len += (size_t)n;
			return;
		}
		size_t cap = o->cap ? o->cap * 2 : 8192;
		while (cap - o->len <= (size_t)n)
			cap *= 2;
		char *bigger = realloc(o->buf, cap);
		if (!bigger) {
			o->nomem = 1;
			return;
		}
		o->buf = bigger;
		o->cap = cap;
	}
}

char *
metrics_label_value(const char *s)
{
	char *q = malloc(2 * strlen(s) + 3), *p = q;

	if (!q)
		return NULL;
	*p++ = '"';
	for (; *s; s++) {
		if (*s == '\\' || *s == '"' || *s == '\n')
			*p++ = '\\';
		*p++ = *s == '\n' ? 'n' : *s;
	}
	*p++ = '"';
	*p = '\0';
	return q;
}

static void
put_label(struct out *o, const char *v)
{
	char *q = metrics_label_value(v);

	if (!q) {
		o->nomem = 1;
		return;
	}
	put(o, "%s", q);
	free(q);
}

static void
put_head(struct out *o, const char *name, const char *type, const char *help)
{
	put(o, "# HELP warrantd_%s %s\n# TYPE warrantd_%s %s\n", name, help, name, type);
}

/* {action="…"} or {action="…",status="…"}, then more when le is not NULL. */
static void
put_labels(struct out *o, const char *action, const char *status, const char *le)
{
	put(o, "{action=");
	put_label(o, action);
	if (status)
		put(o, ",status=\"%s\"", status);
	put(o, "%s%s%s} ", le ? ",le=\"" : "", le ? le : "", le ? "\"" : "");
}

static void
put_series(struct out *o, const char *name, const char *action, const char *status,
	   const struct series *s, const long long *le, size_t nle)
{
	long long cum = 0;
	char v[32];

	for (size_t i = 0; i < nle; i++) {
		cum += s->bucket[i];
		snprintf(v, sizeof v, "%g", (double)le[i] / 1000.0);
		put(o, "warrantd_%s_bucket", name);
		put_labels(o, action, status, v);
		put(o, "%lld\n", cum);
	}
	put(o, "warrantd_%s_bucket", name);
	put_labels(o, action, status, "+Inf");
	put(o, "%lld\nwarrantd_%s_sum", s->count, name);
	put_labels(o, action, status, NULL);
	put(o, "%.3f\nwarrantd_%s_count", (double)s->sum_ms / 1000.0, name);
	put_labels(o, action, status, NULL);
	put(o, "%lld\n", s->count);
}

static void
put_hists(struct out *o, const struct metrics_hist *h)
{
	put_head(o, "call_duration_seconds", "histogram", "Duration of action calls, by action "
	    "and status class (1xx to 5xx, or error: no answer).");
	for (size_t i = 0; h && i < h->n; i++)
		for (size_t c = 0; c < NCLASS; c++)
			if (h->a[i].duration[c].count > 0)
				put_series(o, "call_duration_seconds", h->a[i].action,
				    status_classes[c], &h->a[i].duration[c], duration_le_ms, NDUR);
	put_head(o, "queue_delay_seconds", "histogram",
	    "Delay from the XADD of an entry to the start of each of its calls, by action.");
	for (size_t i = 0; h && i < h->n; i++)
		if (h->a[i].delay.count > 0)
			put_series(o, "queue_delay_seconds", h->a[i].action, NULL, &h->a[i].delay,
			    delay_le_ms, NDELAY);
}

/* The alertable counters: outcomes by action ("is gate.close failing?")
 * and dead letters by reason ("is bad-signature spiking?"). */
static void
put_outcomes(struct out *o, const struct metrics_hist *h)
{
	put_head(o, "jobs_total", "counter", "Jobs that reached a terminal state, by action and "
	    "outcome (action \"\": no record to name one).");
	for (size_t i = 0; h && i < h->n; i++) {
		long long any = 0;
		for (size_t k = 0; k < NOUTCOME; k++)
			any += h->a[i].outcome[k];
		for (size_t k = 0; any > 0 && k < NOUTCOME; k++) {
			put(o, "warrantd_jobs_total{action=");
			put_label(o, h->a[i].action);
			put(o, ",outcome=\"%s\"} %lld\n", outcomes[k], h->a[i].outcome[k]);
		}
	}
	put_head(o, "dead_letters_total", "counter", "Dead letters written, by reason.");
	for (size_t r = 0; h && r < h->ndead; r++) {
		put(o, "warrantd_dead_letters_total{reason=");
		put_label(o, h->dead[r].reason);
		put(o, "} %lld\n", h->dead[r].n);
	}
}

/* The process_* metrics every Prometheus client library exports, so the
 * usual dashboards and alerts (memory, descriptors near the limit) work. */
static void
put_process(struct out *o, const struct metrics_sample *s)
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
		put(o, "# HELP %s %s\n# TYPE %s %s\n", m[i].name, m[i].help, m[i].name, m[i].type);
		put(o, i == 0 ? "%s %.3f\n" : "%s %.0f\n", m[i].name, v[i]);
	}
}

/* A token's state (one gauge per state, 1 for the current one) and life. */
static void
put_token(struct out *o, const char *prefix, const char *what, const char *none,
	  const char *state, long long expires_in_s)
{
	char name[64], help[128];

	snprintf(name, sizeof name, "%s_state", prefix);
	snprintf(help, sizeof help, "1 for %s's current state.", what);
	put_head(o, name, "gauge", help);
	for (size_t i = 0; i < sizeof token_states / sizeof token_states[0]; i++)
		put(o, "warrantd_%s{state=\"%s\"} %d\n", name, token_states[i],
		    state && strcmp(state, token_states[i]) == 0);
	snprintf(name, sizeof name, "%s_expires_in_seconds", prefix);
	snprintf(help, sizeof help, "Seconds until %s expires %s.", what, none);
	put_head(o, name, "gauge", help);
	put(o, "warrantd_%s %lld\n", name, expires_in_s);
}

/* §13: the whole queue's pause, and each action's pause, breaker and
 * limit (one gauge per breaker state, 1 for the current one, as tokens). */
static void
put_gate(struct out *o, const struct gate *g, long long now)
{
	static const enum gate_breaker states[] = {GATE_CLOSED, GATE_HALF_OPEN, GATE_BROKEN};
	size_t n = g ? gate_count(g) : 0;
	struct gate_view v;

	put_head(o, "queue_paused", "gauge", "1 while the whole queue is paused (warrantctl pause).");
	put(o, "warrantd_queue_paused %d\n", g && gate_paused(g, NULL));
	if (n == 0)
		return;
	put_head(o, "action_paused", "gauge",
	    "1 while the action is paused, by name or with the whole queue.");
	for (size_t i = 0; i < n; i++) {
		gate_view(g, i, now, &v);
		put(o, "warrantd_action_paused{action=");
		put_label(o, v.action);
		put(o, "} %d\n", v.paused);
	}
	put_head(o, "breaker_state", "gauge",
	    "1 for the current state of the action's circuit breaker on this worker.");
	for (size_t i = 0; i < n; i++) {
		gate_view(g, i, now, &v);
		for (size_t k = 0; k < sizeof states / sizeof states[0]; k++) {
			put(o, "warrantd_breaker_state{action=");
			put_label(o, v.action);
			put(o, ",state=\"%s\"} %d\n", gate_breaker_name(states[k]),
			    v.breaker == states[k]);
		}
	}
	put_head(o, "action_max_in_flight", "gauge",
	    "The action's max_in_flight on this worker (0: no limit).");
	for (size_t i = 0; i < n; i++) {
		gate_view(g, i, now, &v);
		put(o, "warrantd_action_max_in_flight{action=");
		put_label(o, v.action);
		put(o, "} %ld\n", v.max_in_flight);
	}
	put_head(o, "action_in_flight", "gauge",
	    "Attempts of the action under way on this worker (its places at the gate).");
	for (size_t i = 0; i < n; i++) {
		gate_view(g, i, now, &v);
		put(o, "warrantd_action_in_flight{action=");
		put_label(o, v.action);
		put(o, "} %ld\n", v.in_flight);
	}
}

/* R6, §8: one scope's trouble is its own, so each narrowed token has its
 * state and life under its scope's label. */
static void
put_scopes(struct out *o, const struct metrics_sample *s)
{
	if (s->nscopes == 0)
		return;
	put_head(o, "scope_token_state", "gauge",
	    "1 for the current state of an action's own token, by scope.");
	for (size_t i = 0; i < s->nscopes && i < METRICS_SCOPES_MAX; i++)
		for (size_t k = 0; k < sizeof token_states / sizeof token_states[0]; k++) {
			put(o, "warrantd_scope_token_state{scope=");
			put_label(o, s->scopes[i].name ? s->scopes[i].name : "");
			put(o, ",state=\"%s\"} %d\n", token_states[k], s->scopes[i].state &&
			    strcmp(s->scopes[i].state, token_states[k]) == 0);
		}
	put_head(o, "scope_token_expires_in_seconds", "gauge",
	    "Seconds until an action's own token expires (0: none), by scope.");
	for (size_t i = 0; i < s->nscopes && i < METRICS_SCOPES_MAX; i++) {
		put(o, "warrantd_scope_token_expires_in_seconds{scope=");
		put_label(o, s->scopes[i].name ? s->scopes[i].name : "");
		put(o, "} %lld\n", s->scopes[i].expires_in_s);
	}
}

char *
metrics_format(const struct metrics_sample *s, const struct metrics_hist *h, size_t *len)
{
	struct out o = {0};

	put_head(&o, "build_info", "gauge", "Always 1; the version in a label.");
	put(&o, "warrantd_build_info{version=");
	put_label(&o, s->version ? s->version : "");
	put(&o, "} 1\n");
	put_head(&o, "start_time_seconds", "gauge", "Start time of the process, Unix seconds.");
	put(&o, "warrantd_start_time_seconds %lld\n", s->start_time_s);
	for (const struct counter_field *f = counter_fields; f->name; f++) {
		static const char total[] = "_total";
		char name[80];
		if (metrics_snake_case(f->name, name, sizeof name - (sizeof total - 1)) < 0)
			continue;	/* no counter name is that long */
		memcpy(name + strlen(name), total, sizeof total);
		put_head(&o, name, "counter", help_of(f->name));
		put(&o, "warrantd_%s %lld\n", name, counter_value(&s->n, f));
	}
	put_head(&o, "call_failures_total", "counter", "Action calls that got no answer, by class "
	    "(warrantd(8) LOGS: http.failed).");
	for (int c = CALLFAIL_NONE + 1; c < CALLFAIL_COUNT; c++)
		put(&o, "warrantd_call_failures_total{class=\"%s\"} %lld\n",
		    callfail_name((enum callfail)c), s->n.call_failures[c]);
	put_head(&o, "in_flight", "gauge", "Entries in hand now.");
	put(&o, "warrantd_in_flight %lld\n", s->in_flight);
	put_token(&o, "token", "the worker token", "(0: none)", s->token_state,
	    s->token_expires_in_s);
	put_token(&o, "redis_token", "the Redis token", "(0: none, or a static password)",
	    s->redis_token_state, s->redis_token_expires_in_s);
	put_scopes(&o, s);
	put_head(&o, "redis_up", "gauge", "1 while the command connection to Redis is up.");
	put(&o, "warrantd_redis_up %d\n", s->redis_up ? 1 : 0);
	put_head(&o, "config_reloads_total", "counter",
	    "Reloads (SIGHUP, R16) since start, by result: a refused one keeps the running config.");
	put(&o, "warrantd_config_reloads_total{result=\"ok\"} %lld\n", s->reloads_ok);
	put(&o, "warrantd_config_reloads_total{result=\"failed\"} %lld\n", s->reloads_failed);
	put_process(&o, s);
	put_gate(&o, s->gate, s->now_ms);
	put_hists(&o, h);
	put_outcomes(&o, h);
	if (o.nomem) {
		free(o.buf);
		return NULL;
	}
	*len = o.len;
	return o.buf;
}

/* ------------------------------------------------------------------ */
/* the server                                                           */

struct client {
	LIST_ENTRY(client) link;
	struct metrics *m;
	int fd;
	ev_io io;
	ev_timer idle;
	char req[METRICS_REQ_MAX];
	size_t req_len;
	char *resp;		/* NULL while reading */
	size_t resp_len, resp_off;
	int draining;		/* answered: reading what is left until EOF */
};

struct metrics {
	struct ev_loop *loop;
	int fd;
	ev_io accept_io;
	ev_timer accept_pause;	/* after an accept error: a second off */
	struct listen_addr addr;
	metrics_sample_fn *sample;
	void *sample_arg;
	struct metrics_hist *hist;
	LIST_HEAD(, client) clients;
	size_t nclients;
	int observe_failed;	/* logged once */
};

static void
client_close(struct client *c)
{
	struct metrics *m = c->m;

	ev_io_stop(m->loop, &c->io);
	ev_timer_stop(m->loop, &c->idle);
	close(c->fd);
	LIST_REMOVE(c, link);
	free(c->resp);
	free(c);
	if (m->nclients-- == METRICS_CLIENTS)
		ev_io_start(m->loop, &m->accept_io);	/* room again */
}

static const char *
reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 431: return "Request Header Fields Too Large";
	case 505: return "HTTP Version Not Supported";
	default: return "Internal Server Error";
	}
}

/* The whole response in c->resp; 0 or -1 when out of memory. */
static int
client_answer(struct client *c, int status)
{
	struct metrics_sample s = {0};
	char *body = NULL, head[256];
	size_t blen = 0;

	if (status == 200) {
		c->m->sample(c->m->sample_arg, &s);
		if (!(body = metrics_format(&s, c->m->hist, &blen)))
			status = 500;
	}
	if (status != 200) {
		const char *r = reason(status);
		blen = strlen(r) + 1;
		if (!(body = malloc(blen + 1)))
			return -1;
		snprintf(body, blen + 1, "%s\n", r);
	}
	int hlen = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\n"
	    "Content-Type: %s\r\nContent-Length: %zu\r\n%sConnection: close\r\n\r\n",
	    status, reason(status), status == 200 ? "text/plain; version=0.0.4; charset=utf-8" :
	    "text/plain; charset=utf-8", blen, status == 405 ? "Allow: GET\r\n" : "");
	c->resp = malloc((size_t)hlen + blen);
	if (!c->resp) {
		free(body);
		return -1;
	}
	memcpy(c->resp, head, (size_t)hlen);
	memcpy(c->resp + hlen, body, blen);
	free(body);
	c->resp_len = (size_t)hlen + blen;
	c->resp_off = 0;
	return 0;
}

/* read() or write() on c's socket, EINTR retried: > 0 bytes moved; 0 when
 * it would block; -1 after closing c (end of stream, or an error). */
static ssize_t
client_io(struct client *c, int writing, void *buf, size_t len)
{
	for (;;) {
		ssize_t n = writing ? write(c->fd, buf, len) : read(c->fd, buf, len);
		if (n > 0)
			return n;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		client_close(c);
		return -1;
	}
}

static void
client_watch(struct client *c, int events)
{
	ev_io_stop(c->m->loop, &c->io);
	ev_io_set(&c->io, c->fd, events);
	ev_io_start(c->m->loop, &c->io);
}

/* Once the answer is out: no more writing, and what the client still sends
 * is read and dropped until it closes (or the idle timer ends it). Closing
 * with unread data would reset the connection, and a client could lose the
 * answer with it (a 431 to a client still sending its long head). */
static void
client_drain(struct client *c)
{
	char sink[4096];

	while (client_io(c, 0, sink, sizeof sink) > 0)
		;
}

static void
client_write(struct client *c)
{
	while (c->resp_off < c->resp_len) {
		ssize_t n = client_io(c, 1, c->resp + c->resp_off, c->resp_len - c->resp_off);
		if (n <= 0)
			return;
		c->resp_off += (size_t)n;
	}
	if (shutdown(c->fd, SHUT_WR) < 0) {
		client_close(c);
		return;
	}
	c->draining = 1;
	client_watch(c, EV_READ);
	client_drain(c);
}

static void
client_read(struct client *c)
{
	for (;;) {
		ssize_t n = client_io(c, 0, c->req + c->req_len, sizeof c->req - c->req_len);
		if (n <= 0)	/* would block, or gone before asking */
			return;
		c->req_len += (size_t)n;
		int status = metrics_http_parse(c->req, c->req_len);
		if (status == 0)
			continue;
		if (client_answer(c, status) < 0) {
			client_close(c);
			return;
		}
		client_watch(c, EV_WRITE);
		client_write(c);
		return;
	}
}

static void
client_io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct client *c = w->data;
	(void)loop, (void)revents;

	if (c->draining)
		client_drain(c);
	else if (c->resp)
		client_write(c);
	else
		client_read(c);
}

static void
client_idle_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop, (void)revents;
	client_close(w->data);
}

static void
accept_resume_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct metrics *m = w->data;
	(void)revents;

	if (m->nclients < METRICS_CLIENTS)
		ev_io_start(loop, &m->accept_io);
}

static void
accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct metrics *m = w->data;
	(void)revents;

	while (m->nclients < METRICS_CLIENTS) {
		int fd = accept4(m->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			log_warn("metrics.accept", "error=\"%s\"", strerror(errno));
			/* EMFILE and the like leave the connection in the backlog:
			 * the level-triggered watcher would spin on it. */
			ev_io_stop(loop, &m->accept_io);
			ev_timer_set(&m->accept_pause, 1.0, 0.);	/* a fired timer keeps ~0 */
			ev_timer_start(loop, &m->accept_pause);
			return;
		}
		struct client *c = calloc(1, sizeof *c);
		if (!c) {
			close(fd);
			return;
		}
		c->m = m;
		c->fd = fd;
		ev_io_init(&c->io, client_io_cb, fd, EV_READ);
		c->io.data = c;
		ev_timer_init(&c->idle, client_idle_cb, METRICS_IDLE_MS / 1000.0, 0.);
		c->idle.data = c;
		ev_io_start(loop, &c->io);
		ev_timer_start(loop, &c->idle);
		LIST_INSERT_HEAD(&m->clients, c, link);
		m->nclients++;
	}
	ev_io_stop(loop, &m->accept_io);	/* full: the backlog waits */
}

static int
listen_on(const struct listen_addr *a, char *err, size_t errlen)
{
	const struct sockaddr_un *un = (const struct sockaddr_un *)&a->sa;
	struct stat st;
	int one = 1;
	int fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		snprintf(err, errlen, "metrics: socket: %s", strerror(errno));
		return -1;
	}
	if (a->is_unix && lstat(un->sun_path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(un->sun_path);	/* a stale socket of an earlier run */
	if (!a->is_unix)
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (const struct sockaddr *)&a->sa, a->salen) < 0 ||
	    (a->is_unix && chmod(un->sun_path, 0666) < 0) || listen(fd, 64) < 0) {
		snprintf(err, errlen, "metrics: cannot listen: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

struct metrics *
metrics_new(struct ev_loop *loop, const struct listen_addr *addr, metrics_sample_fn *sample,
	    void *arg, char *err, size_t errlen)
{
	struct metrics *m = calloc(1, sizeof *m);

	if (!m || !(m->hist = metrics_hist_new())) {
		snprintf(err, errlen, "metrics: out of memory");
		free(m);
		return NULL;
	}
	m->loop = loop;
	LIST_INIT(&m->clients);
	m->addr = *addr;
	m->sample = sample;
	m->sample_arg = arg;
	if ((m->fd = listen_on(addr, err, errlen)) < 0) {
		metrics_hist_free(m->hist);
		free(m);
		return NULL;
	}
	ev_io_init(&m->accept_io, accept_cb, m->fd, EV_READ);
	m->accept_io.data = m;
	ev_timer_init(&m->accept_pause, accept_resume_cb, 0., 0.);
	m->accept_pause.data = m;
	ev_io_start(loop, &m->accept_io);
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
	/* The next one is read first (glibc has no LIST_FOREACH_SAFE). */
	for (struct client *c = LIST_FIRST(&m->clients), *next; c != NULL; c = next) {
		next = LIST_NEXT(c, link);
		client_close(c);	/* unlinks and frees c alone */
	}
	ev_io_stop(m->loop, &m->accept_io);
	ev_timer_stop(m->loop, &m->accept_pause);
	close(m->fd);
	if (m->addr.is_unix)
		unlink(((const struct sockaddr_un *)&m->addr.sa)->sun_path);
	metrics_hist_free(m->hist);
	free(m);
}
