/* SPDX-License-Identifier: BSD-2-Clause */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "wsess.h"

#define SOURCES		64	/* sources whose failures are remembered */
#define SOURCE_MAX	64

struct source {
	char name[SOURCE_MAX];
	int64_t window_ms;	/* the start of its window; 0: unused */
	int fails;
};

struct wsess_table {
	struct wsess *s;	/* id[0] == '\0': a free slot */
	size_t max;
	int64_t idle_ms;
	struct source src[SOURCES];
	int64_t all_window_ms;
	int all_fails;
};

struct wsess_table *
wsess_new(size_t max, int64_t idle_ms)
{
	struct wsess_table *t = calloc(1, sizeof *t);

	if (t == NULL || max == 0 || (t->s = calloc(max, sizeof *t->s)) == NULL) {
		free(t);
		return NULL;
	}
	t->max = max;
	t->idle_ms = idle_ms;
	return t;
}

void
wsess_free(struct wsess_table *t)
{
	if (t == NULL)
		return;
	OPENSSL_cleanse(t->s, t->max * sizeof *t->s);
	free(t->s);
	free(t);
}

static void
hex(char *out, const unsigned char *in, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

static int
expired(const struct wsess_table *t, const struct wsess *s, int64_t now_ms)
{
	return s->id[0] == '\0' || now_ms - s->last_ms >= t->idle_ms;
}

const struct wsess *
wsess_create(struct wsess_table *t, const char *user, int64_t now_ms,
	     const unsigned char rnd[WSESS_RAND])
{
	struct wsess *slot = &t->s[0];	/* wsess_new made max >= 1 */

	if (!wpass_user_valid(user))
		return NULL;
	/* a free or expired slot, else the one unused longest */
	for (size_t i = 0; i < t->max; i++) {
		struct wsess *s = &t->s[i];
		if (expired(t, s, now_ms)) {
			slot = s;
			break;
		}
		if (s->last_ms < slot->last_ms)
			slot = s;
	}
	memset(slot, 0, sizeof *slot);
	hex(slot->id, rnd, WSESS_RAND / 2);
	hex(slot->csrf, rnd + WSESS_RAND / 2, WSESS_RAND / 2);
	snprintf(slot->user, sizeof slot->user, "%s", user);
	slot->created_ms = slot->last_ms = now_ms;
	return slot;
}

static struct wsess *
lookup(struct wsess_table *t, const char *id)
{
	if (id == NULL || strlen(id) != WSESS_ID_LEN)
		return NULL;
	for (size_t i = 0; i < t->max; i++)
		if (t->s[i].id[0] != '\0' && CRYPTO_memcmp(t->s[i].id, id, WSESS_ID_LEN) == 0)
			return &t->s[i];
	return NULL;
}

const struct wsess *
wsess_find(struct wsess_table *t, const char *id, int64_t now_ms)
{
	struct wsess *s = lookup(t, id);

	if (s == NULL)
		return NULL;
	if (expired(t, s, now_ms)) {
		OPENSSL_cleanse(s, sizeof *s);
		return NULL;
	}
	s->last_ms = now_ms;
	return s;
}

int
wsess_csrf_ok(const struct wsess *s, const char *token)
{
	return s != NULL && token != NULL && strlen(token) == WSESS_ID_LEN &&
	    CRYPTO_memcmp(s->csrf, token, WSESS_ID_LEN) == 0;
}

void
wsess_end(struct wsess_table *t, const char *id)
{
	struct wsess *s = lookup(t, id);

	if (s != NULL)
		OPENSSL_cleanse(s, sizeof *s);
}

size_t
wsess_count(struct wsess_table *t, int64_t now_ms)
{
	size_t n = 0;

	for (size_t i = 0; i < t->max; i++)
		n += !expired(t, &t->s[i], now_ms);
	return n;
}

/* source's entry, its window restarted when over; with `make`, a new one
 * (over the oldest) when it has none. */
static struct source *
source_of(struct wsess_table *t, const char *name, int64_t now_ms, int make)
{
	struct source *oldest = &t->src[0];

	for (size_t i = 0; i < SOURCES; i++) {
		struct source *s = &t->src[i];
		if (s->window_ms != 0 && strncmp(s->name, name, SOURCE_MAX - 1) == 0) {
			if (now_ms - s->window_ms >= WSESS_WINDOW_MS) {
				s->window_ms = now_ms;
				s->fails = 0;
			}
			return s;
		}
		if (s->window_ms < oldest->window_ms)
			oldest = s;
	}
	if (!make)
		return NULL;
	snprintf(oldest->name, sizeof oldest->name, "%s", name);
	oldest->window_ms = now_ms;
	oldest->fails = 0;
	return oldest;
}

static void
all_window(struct wsess_table *t, int64_t now_ms)
{
	if (t->all_window_ms == 0 || now_ms - t->all_window_ms >= WSESS_WINDOW_MS) {
		t->all_window_ms = now_ms;
		t->all_fails = 0;
	}
}

int
wsess_login_allowed(struct wsess_table *t, const char *source, int64_t now_ms)
{
	const struct source *s = source_of(t, source, now_ms, 0);

	all_window(t, now_ms);
	return t->all_fails < WSESS_FAILS_ALL && (s == NULL || s->fails < WSESS_FAILS);
}

void
wsess_login_failed(struct wsess_table *t, const char *source, int64_t now_ms)
{
	struct source *s = source_of(t, source, now_ms, 1);

	all_window(t, now_ms);
	t->all_fails++;
	s->fails++;
}
