/* SPDX-License-Identifier: BSD-2-Clause */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "worker/wstats.h"

#define FIELD_MAX	160

struct field {
	char name[FIELD_MAX];
	long long n;
};

struct wstats {
	struct field f[WSTATS_FIELDS];
	size_t nf;
	long long overflow;	/* counts that found no room: logged at a flush */
	void (*next_call)(void *, const char *, long, long long, long long);
	void (*next_outcome)(void *, const char *, const char *, const char *);
	void *next_arg;
};

struct wstats *
wstats_new(void)
{
	return calloc(1, sizeof(struct wstats));
}

void
wstats_free(struct wstats *s)
{
	free(s);
}

void
wstats_set_next_call(struct wstats *s, void (*fn)(void *arg, const char *action, long status,
		     long long duration_ms, long long queue_delay_ms), void *arg)
{
	s->next_call = fn;
	s->next_arg = arg;
}

void
wstats_set_next_outcome(struct wstats *s, void (*fn)(void *arg, const char *action,
			const char *state, const char *reason))
{
	s->next_outcome = fn;
}

/* Is f the field "<kind>.<name>"? Compared in place: a job's three counts
 * cost no formatting (bench/README.md, issue 36's before and after). */
static int
field_is(const struct field *f, const char *kind, size_t kl, const char *name)
{
	return strncmp(f->name, kind, kl) == 0 && f->name[kl] == '.' &&
	    strcmp(f->name + kl + 1, name) == 0;
}

/* field "<kind>.<name>" += n */
static void
add(struct wstats *s, const char *kind, const char *name, long long n)
{
	size_t kl = strlen(kind), nl;

	if (name == NULL || name[0] == '\0')
		return;
	for (size_t i = 0; i < s->nf; i++)
		if (field_is(&s->f[i], kind, kl, name)) {
			s->f[i].n += n;
			return;
		}
	nl = strlen(name);
	if (s->nf == WSTATS_FIELDS || kl + 1 + nl >= FIELD_MAX) {
		s->overflow++;
		return;
	}
	/* inserts are rare (one per new action), so snprintf's cost is fine */
	(void)snprintf(s->f[s->nf].name, FIELD_MAX, "%s.%s", kind, name);
	s->f[s->nf++].n = n;
}

void
wstats_on_call(void *arg, const char *action, long status, long long duration_ms,
	       long long queue_delay_ms)
{
	struct wstats *s = arg;

	add(s, "c", action, 1);
	add(s, "ms", action, duration_ms > 0 ? duration_ms : 0);
	if (s->next_call)
		s->next_call(s->next_arg, action, status, duration_ms, queue_delay_ms);
}

void
wstats_on_outcome(void *arg, const char *action, const char *state, const char *reason)
{
	struct wstats *s = arg;

	add(s, "o", state, 1);
	if (state != NULL && strcmp(state, "dead") == 0)
		add(s, "d", reason && reason[0] ? reason : "unknown", 1);
	if (s->next_outcome)
		s->next_outcome(s->next_arg, action, state, reason);
}

int
wstats_key(const char *paused_key, int64_t now_ms, char *buf, size_t n)
{
	size_t len = strlen(paused_key), tail = strlen("paused");

	if (len < tail || strcmp(paused_key + len - tail, "paused") != 0)
		return -1;
	int w = snprintf(buf, n, "%.*sstats:%lld", (int)(len - tail), paused_key,
	    (long long)(now_ms / 60000));
	return w < 0 || (size_t)w >= n ? -1 : 0;
}

void
wstats_flush(struct wstats *s, wstats_send_fn *send, void *arg, const char *paused_key,
	     int64_t now_ms)
{
	char key[512], num[24], ttl[24];
	size_t sent = 0;

	if (s->overflow) {
		log_warn("stats.overflow", "dropped=%lld detail=\"more than %d fields in a "
		    "heartbeat\"", s->overflow, WSTATS_FIELDS);
		s->overflow = 0;
	}
	if (s->nf == 0 || send == NULL ||
	    wstats_key(paused_key, now_ms, key, sizeof key) != 0)
		return;
	for (; sent < s->nf; sent++) {
		const char *argv[] = {"HINCRBY", key, s->f[sent].name, num};
		snprintf(num, sizeof num, "%lld", s->f[sent].n);
		if (send(arg, 4, argv) != 0)
			break;
	}
	snprintf(ttl, sizeof ttl, "%lld", WSTATS_TTL_MS);
	const char *exp[] = {"PEXPIRE", key, ttl};
	if (sent > 0 && send(arg, 3, exp) != 0)
		log_debug("redis.skipped", "detail=\"not connected\"");	/* set again next flush */
	/* what could not be appended waits for the next flush */
	memmove(s->f, s->f + sent, (s->nf - sent) * sizeof s->f[0]);
	s->nf -= sent;
}
