/* SPDX-License-Identifier: BSD-2-Clause */
#include <stdio.h>
#include <string.h>

#include "walert.h"

static void
add(json_t *out, const char *level, const char *text)
{
	json_array_append_new(out, json_pack("{s:s, s:s}", "level", level, "text", text));
}

static void
no_consumer(json_t *out, const json_t *streams)
{
	const json_t *st;
	size_t i;
	char text[300];

	json_array_foreach(streams, i, st) {
		const json_t *alive = json_object_get(st, "alive");
		if (!json_is_integer(alive) || json_integer_value(alive) > 0)
			continue;
		snprintf(text, sizeof text, "no live consumer on %s: nothing is being worked",
		    json_string_value(json_object_get(st, "stream")) ?
		    json_string_value(json_object_get(st, "stream")) : "the stream");
		add(out, "bad", text);
	}
}

/* tokenState, tokenState.SCOPE and redisTokenState of every live consumer. */
static void
token_errors(json_t *out, const json_t *streams)
{
	const json_t *st, *c, *v;
	const char *name, *f;
	size_t i;
	char text[400];

	json_array_foreach(streams, i, st) {
		json_object_foreach((json_t *)json_object_get(st, "consumers"), name, c) {
			if (!json_is_true(json_object_get(c, "alive")))
				continue;
			json_object_foreach((json_t *)c, f, v) {
				if (!json_is_string(v) || strcmp(json_string_value(v), "error") != 0)
					continue;
				if (strncmp(f, "tokenState.", 11) == 0)
					snprintf(text, sizeof text, "token error for scope %s on %s", f + 11,
					    name);
				else if (strcmp(f, "tokenState") == 0)
					snprintf(text, sizeof text, "token error for the worker's token "
					    "on %s", name);
				else if (strcmp(f, "redisTokenState") == 0)
					snprintf(text, sizeof text, "token error for the Redis credential "
					    "on %s", name);
				else
					continue;
				add(out, "bad", text);
			}
		}
	}
}

/* The dead letters of the last WALERT_DEAD_MINUTES buckets, by reason. */
static void
dead_rising(json_t *out, const json_t *stats)
{
	const json_t *all = json_object_get(stats, "buckets"), *b, *v;
	json_t *by = json_object();
	size_t n = json_array_size(all), from = n > WALERT_DEAD_MINUTES ? n - WALERT_DEAD_MINUTES : 0;
	long long total = 0;
	const char *f;
	char text[600];
	size_t len;

	for (size_t i = from; i < n; i++) {
		b = json_array_get(all, i);
		json_object_foreach((json_t *)b, f, v) {
			if (strncmp(f, "d.", 2) != 0 || !json_is_integer(v))
				continue;
			json_int_t k = json_integer_value(json_object_get(by, f + 2));
			json_object_set_new(by, f + 2, json_integer(k + json_integer_value(v)));
			total += json_integer_value(v);
		}
	}
	if (total > 0) {
		len = (size_t)snprintf(text, sizeof text, "dead letters rising: %lld in the last %d "
		    "minutes (", total, WALERT_DEAD_MINUTES);
		int first = 1;
		json_object_foreach(by, f, v) {
			if (len < sizeof text)
				len += (size_t)snprintf(text + len, sizeof text - len, "%s%s %lld",
				    first ? "" : ", ", f, (long long)json_integer_value(v));
			first = 0;
		}
		if (len < sizeof text)
			snprintf(text + len, sizeof text - len, ")");
		add(out, "warn", text);
	}
	json_decref(by);
}

json_t *
walert_list(const json_t *ov, const json_t *stats)
{
	json_t *out = json_array();
	const json_t *streams = json_object_get(ov, "streams");

	no_consumer(out, streams);
	token_errors(out, streams);
	dead_rising(out, stats);
	return out;
}
