/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * gate: pauses, limits and the breaker of each action on this worker, as
 * plain arithmetic over `now` (gate.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "core/gate.h"

#include <stdlib.h>
#include <string.h>

struct gate_action {
	char *name;
	struct gate_limits lim;
	long in_flight;
	int64_t next_us;	/* rate_per_s: the next start allowed, in us */
	enum gate_breaker breaker;
	long failures;		/* retryable failures in a row, while closed */
	int64_t open_until;	/* GATE_BROKEN: then half-open */
	int probe_out;		/* GATE_HALF_OPEN: the probe is under way */
};

struct gate {
	struct gate_action *a;
	size_t n;
	char **paused;
	size_t npaused;
};

struct gate *
gate_new(void)
{
	return calloc(1, sizeof(struct gate));
}

static void
free_names(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void
gate_free(struct gate *g)
{
	if (g == NULL)
		return;
	for (size_t i = 0; i < g->n; i++)
		free(g->a[i].name);
	free(g->a);
	free_names(g->paused, g->npaused);
	free(g);
}

static struct gate_action *
find(const struct gate *g, const char *action)
{
	if (action == NULL)
		return NULL;
	for (size_t i = 0; i < g->n; i++)
		if (strcmp(g->a[i].name, action) == 0)
			return &g->a[i];
	return NULL;
}

int
gate_configure(struct gate *g, const char *const *names, const struct gate_limits *lim, size_t n)
{
	struct gate_action *a = calloc(n ? n : 1, sizeof *a);

	if (a == NULL)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const struct gate_action *old = find(g, names[i]);
		if (old != NULL)
			a[i] = *old;	/* its places and breaker go on */
		if ((a[i].name = strdup(names[i])) == NULL) {
			for (size_t k = 0; k < i; k++)
				free(a[k].name);
			free(a);
			return -1;
		}
		a[i].lim = lim[i];
		if (lim[i].breaker_failures <= 0 && a[i].breaker != GATE_CLOSED) {
			/* the breaker was turned off: nothing holds calls back */
			a[i].breaker = GATE_CLOSED;
			a[i].probe_out = 0;
		}
	}
	for (size_t i = 0; i < g->n; i++)
		free(g->a[i].name);
	free(g->a);
	g->a = a;
	g->n = n;
	return 0;
}

static int
in_names(char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return 1;
	return 0;
}

int
gate_set_paused(struct gate *g, const char *const *names, size_t n)
{
	int changed = n != g->npaused;
	char **v = calloc(n ? n : 1, sizeof *v);

	if (v == NULL)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if ((v[i] = strdup(names[i])) == NULL) {
			free_names(v, i);
			return -1;
		}
		if (!in_names(g->paused, g->npaused, names[i]))
			changed = 1;
	}
	free_names(g->paused, g->npaused);
	g->paused = v;
	g->npaused = n;
	return changed;
}

int
gate_paused(const struct gate *g, const char *action)
{
	return in_names(g->paused, g->npaused, "*") ||
	    (action != NULL && in_names(g->paused, g->npaused, action));
}

void
gate_paused_list(const struct gate *g, char *buf, size_t n)
{
	size_t w = 0;

	if (n == 0)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < g->npaused; i++) {
		size_t k = strlen(g->paused[i]);
		if (w + (w ? 1 : 0) + k + 1 > n) {
			if (n >= 4)
				memcpy(buf + (w + 4 <= n ? w : n - 4), "...", 4);
			return;
		}
		if (w)
			buf[w++] = ',';
		memcpy(buf + w, g->paused[i], k + 1);
		w += k;
	}
}

/* The breaker as it stands at now: an open interval that has run out is
 * half-open. */
static enum gate_breaker
breaker_at(const struct gate_action *a, int64_t now)
{
	if (a->breaker == GATE_BROKEN && now >= a->open_until)
		return GATE_HALF_OPEN;
	return a->breaker;
}

/* now in us, saturated: 2^53 ms is far past any deadline. */
static int64_t
us_of(int64_t ms)
{
	const int64_t cap = INT64_C(1) << 53;

	return ms > cap ? cap * 1000 : ms < 0 ? 0 : ms * 1000;
}

enum gate_verdict
gate_check(const struct gate *g, const char *action, int64_t now, int64_t *at)
{
	const struct gate_action *a = find(g, action);
	int64_t when = INT64_MAX;
	enum gate_verdict v = GATE_GO;

	if (gate_paused(g, action)) {
		v = GATE_PAUSED;
	} else if (a == NULL) {
		v = GATE_GO;
	} else if (a->lim.breaker_failures > 0 && breaker_at(a, now) == GATE_BROKEN) {
		v = GATE_OPEN;
		when = a->open_until;
	} else if (a->lim.breaker_failures > 0 && breaker_at(a, now) == GATE_HALF_OPEN &&
	    a->probe_out) {
		v = GATE_OPEN;
	} else if (a->lim.max_in_flight > 0 && a->in_flight >= a->lim.max_in_flight) {
		v = GATE_FULL;
	} else if (a->lim.rate_per_s > 0 && us_of(now) < a->next_us) {
		v = GATE_RATE;
		when = (a->next_us + 999) / 1000;
	}
	if (at != NULL)
		*at = when;
	return v;
}

int
gate_take(struct gate *g, const char *action, int64_t now)
{
	struct gate_action *a = find(g, action);
	int probe = 0;

	if (a == NULL)
		return 0;
	a->in_flight++;
	if (a->lim.rate_per_s > 0) {
		/* ceil: rate starts never fit in less than a second */
		int64_t step = (1000000 + a->lim.rate_per_s - 1) / a->lim.rate_per_s;
		int64_t from = us_of(now) > a->next_us ? us_of(now) : a->next_us;
		a->next_us = from + step;
	}
	if (a->lim.breaker_failures > 0 && breaker_at(a, now) == GATE_HALF_OPEN) {
		a->breaker = GATE_HALF_OPEN;
		a->probe_out = 1;
		probe = 1;
	}
	return probe;
}

static void
open_breaker(struct gate_action *a, int64_t now)
{
	a->breaker = GATE_BROKEN;
	a->open_until = now + (a->lim.breaker_open_ms > 0 ? a->lim.breaker_open_ms : 0);
	a->failures = 0;
	a->probe_out = 0;
}

void
gate_done(struct gate *g, const char *action, int probe, enum gate_result r, int64_t now)
{
	struct gate_action *a = find(g, action);

	if (a == NULL)
		return;
	if (a->in_flight > 0)
		a->in_flight--;
	if (a->lim.breaker_failures <= 0)
		return;
	if (probe && a->breaker == GATE_HALF_OPEN && a->probe_out) {
		a->probe_out = 0;
		if (r == GATE_CALL_OK) {
			a->breaker = GATE_CLOSED;
			a->failures = 0;
		} else if (r == GATE_CALL_FAILED) {
			open_breaker(a, now);
		}
		/* GATE_NO_CALL: still half-open, the next attempt probes */
		return;
	}
	if (a->breaker != GATE_CLOSED || r == GATE_NO_CALL)
		return;	/* a call from before the opening, or none */
	if (r == GATE_CALL_OK) {
		a->failures = 0;
	} else if (++a->failures >= a->lim.breaker_failures) {
		open_breaker(a, now);
	}
}

enum gate_breaker
gate_breaker_at(const struct gate *g, const char *action, int64_t now)
{
	const struct gate_action *a = find(g, action);

	return a != NULL && a->lim.breaker_failures > 0 ? breaker_at(a, now) : GATE_CLOSED;
}

size_t
gate_count(const struct gate *g)
{
	return g->n;
}

void
gate_view(const struct gate *g, size_t i, int64_t now, struct gate_view *out)
{
	const struct gate_action *a = &g->a[i];

	out->action = a->name;
	out->paused = gate_paused(g, a->name);
	out->breaker = a->lim.breaker_failures > 0 ? breaker_at(a, now) : GATE_CLOSED;
	out->max_in_flight = a->lim.max_in_flight;
	out->in_flight = a->in_flight;
}

const char *
gate_breaker_name(enum gate_breaker b)
{
	switch (b) {
	case GATE_CLOSED:
		return "closed";
	case GATE_HALF_OPEN:
		return "half-open";
	case GATE_BROKEN:
		return "open";
	}
	return "";
}

const char *
gate_verdict_name(enum gate_verdict v)
{
	switch (v) {
	case GATE_GO:
		return "go";
	case GATE_PAUSED:
		return "paused";
	case GATE_OPEN:
		return "breaker-open";
	case GATE_FULL:
		return "full";
	case GATE_RATE:
		return "rate";
	}
	return "";
}

int64_t
gate_hold_until(const struct gate *g, const char *action, int64_t now, int64_t deadline,
		enum gate_verdict *why)
{
	int64_t at = INT64_MAX;
	enum gate_verdict v = g ? gate_check(g, action, now, &at) : GATE_GO;

	if (why != NULL)
		*why = v;
	if (at > now + GATE_POLL_MS)
		at = now + GATE_POLL_MS;
	return at > deadline ? deadline : at;
}

enum gate_result
gate_result_of(int no_descriptor, int retryable)
{
	return no_descriptor ? GATE_NO_CALL : retryable ? GATE_CALL_FAILED : GATE_CALL_OK;
}

enum gate_place
gate_place_next(int held, int attempt)
{
	if (held && !attempt)
		return GATE_PLACE_GIVE;
	return !held && attempt ? GATE_PLACE_TAKE : GATE_PLACE_KEEP;
}

int
gate_parks(enum gate_verdict v)
{
	return v == GATE_PAUSED || v == GATE_OPEN;
}

int
gate_keeps_parked(const struct gate *g, const char *action, int64_t now)
{
	return gate_paused(g, action) || gate_breaker_at(g, action, now) != GATE_CLOSED;
}

int
gate_may_wake(const struct gate *g, const char *action, int64_t now, int waiting, int kicked)
{
	return waiting && !kicked && (g == NULL || gate_check(g, action, now, NULL) == GATE_GO);
}
