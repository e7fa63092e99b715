/* SPDX-License-Identifier: BSD-2-Clause */
/* ctl: warrantctl's pure pieces -- command-line times, ids, the record JSON
 * and the human rendering of its JSON output. */
#define _POSIX_C_SOURCE 200809L
#include "ctl/ctl.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/promtext.h"
#include "base/wtime.h"

static void seterr(char *err, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
seterr(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || n == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
}

/* ---- times and ids ---- */

static int64_t
unit_ms(char u)
{
	switch (u) {
	case '\0':
	case 's':
		return 1000;
	case 'm':
		return 60 * 1000;
	case 'h':
		return 3600 * 1000;
	case 'd':
		return 86400 * 1000;
	}
	return -1;
}

/* "+N[smhd]": the digits alone, so strtoll's sign and space are not let in. */
static int
parse_relative(const char *s, int64_t now_ms, int64_t *out_ms)
{
	int64_t n = 0, mult;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -1;
	for (; isdigit((unsigned char)*p); p++) {
		if (n > (INT64_MAX - 9) / 10)
			return -1;
		n = n * 10 + (*p - '0');
	}
	if ((mult = unit_ms(*p)) <= 0 || (*p != '\0' && p[1] != '\0'))
		return -1;
	if (n > (INT64_MAX - now_ms) / mult)
		return -1;
	*out_ms = now_ms + n * mult;
	return 0;
}

int
ctl_parse_time(const char *s, int64_t now_ms, int64_t *out_ms)
{
	if (s == NULL || now_ms < 0)
		return -1;
	if (s[0] == '+')
		return parse_relative(s + 1, now_ms, out_ms);
	return wtime_parse_rfc3339(s, out_ms);
}

int
ctl_parse_duration(const char *s, int64_t *out_ms)
{
	if (s == NULL)
		return -1;
	return parse_relative(s[0] == '+' ? s + 1 : s, 0, out_ms);
}

int64_t
ctl_stream_id_ms(const char *id)
{
	int64_t n = 0;
	const char *p = id;

	if (p == NULL || !isdigit((unsigned char)*p))
		return -1;
	for (; isdigit((unsigned char)*p); p++) {
		if (n > (INT64_MAX - 9) / 10)
			return -1;
		n = n * 10 + (*p - '0');
	}
	return *p == '-' && isdigit((unsigned char)p[1]) ? n : -1;
}

int
ctl_dead_match(const char *entry_id, const char *reason_field, const char *reason,
	       int64_t before_ms)
{
	if (reason != NULL && (reason_field == NULL || strcmp(reason, reason_field) != 0))
		return 0;
	if (before_ms > 0) {
		int64_t at = ctl_stream_id_ms(entry_id);
		if (at < 0 || at >= before_ms)
			return 0;
	}
	return 1;
}

void
ctl_make_id(const unsigned char rnd[CTL_ID_LEN], char *out)
{
	/* RFC 4648 base32 in lower case: no '.', so never a dot segment. */
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz234567";

	for (size_t i = 0; i < CTL_ID_LEN; i++)
		out[i] = alphabet[rnd[i] & 31];	/* 256 is a multiple of 32: uniform */
	out[CTL_ID_LEN] = '\0';
}

/* ---- the record ---- */

static int
set_string(json_t *obj, const char *key, const char *value, char *err, size_t n)
{
	json_t *v = json_string(value);

	if (v == NULL || json_object_set_new(obj, key, v) != 0) {
		seterr(err, n, "%s: not valid UTF-8", key);
		return -1;
	}
	return 0;
}

static int
set_time(json_t *obj, const char *key, int64_t ms, char *err, size_t n)
{
	char buf[WTIME_RFC3339_LEN];

	return set_string(obj, key, wtime_format_rfc3339(ms, buf, sizeof buf), err, n);
}

static json_t *
params_object(const char *json, char *err, size_t n)
{
	json_error_t jerr;
	json_t *v;

	if (json == NULL)
		return json_object();
	if ((v = json_loads(json, JSON_REJECT_DUPLICATES, &jerr)) == NULL) {
		seterr(err, n, "--params: not JSON: %s", jerr.text);
		return NULL;
	}
	if (!json_is_object(v)) {
		json_decref(v);
		seterr(err, n, "--params: not a JSON object");
		return NULL;
	}
	return v;
}

/* Each "K=V" over what --params gave: the pair named on its own wins. */
static int
merge_pairs(json_t *params, const char *const *pairs, size_t npairs, char *err, size_t n)
{
	for (size_t i = 0; i < npairs; i++) {
		const char *eq = strchr(pairs[i], '=');
		char *key;
		json_t *v;

		if (eq == NULL || eq == pairs[i]) {
			seterr(err, n, "--param: expected KEY=VALUE, got '%.64s'", pairs[i]);
			return -1;
		}
		if ((key = strndup(pairs[i], (size_t)(eq - pairs[i]))) == NULL) {
			seterr(err, n, "out of memory");
			return -1;
		}
		v = json_string(eq + 1);
		int rc = v == NULL ? -1 : json_object_set_new(params, key, v);
		if (rc != 0)
			seterr(err, n, "--param %.64s: not valid UTF-8", key);
		free(key);
		if (rc != 0)
			return -1;
	}
	return 0;
}

static int
check_decision(const struct ctl_decision *d, char *err, size_t n)
{
	static const char *const names[] = {"--id", "--on-behalf-of", "--action", "--resource",
	    "--basis", "issuer"};
	const char *values[] = {d->id, d->on_behalf_of, d->action, d->resource, d->basis, d->iss};

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (values[i] == NULL) {
			seterr(err, n, "%s is missing", names[i]);
			return -1;
		}
	if (d->decided_at_ms <= 0 || d->expires_at_ms <= 0 || d->not_before_ms < 0) {
		seterr(err, n, "a time is before 1970");
		return -1;
	}
	/* The rules allow it, but such a job could never run. */
	if (d->not_before_ms > 0 && d->not_before_ms >= d->expires_at_ms) {
		seterr(err, n, "--not-before is not before --expires");
		return -1;
	}
	return 0;
}

static int
fill_record(json_t *obj, const struct ctl_decision *d, json_t *params, char *err, size_t n)
{
	if (set_string(obj, "recordId", d->id, err, n) != 0 ||
	    set_string(obj, "onBehalfOf", d->on_behalf_of, err, n) != 0 ||
	    set_string(obj, "action", d->action, err, n) != 0 ||
	    set_string(obj, "resource", d->resource, err, n) != 0)
		return -1;
	if (json_object_set(obj, "parameters", params) != 0) {
		seterr(err, n, "out of memory");
		return -1;
	}
	if (set_string(obj, "basis", d->basis, err, n) != 0 ||
	    set_time(obj, "decidedAt", d->decided_at_ms, err, n) != 0 ||
	    (d->not_before_ms > 0 && set_time(obj, "notBefore", d->not_before_ms, err, n) != 0) ||
	    set_time(obj, "expiresAt", d->expires_at_ms, err, n) != 0 ||
	    (d->notify != NULL && set_string(obj, "notifyOnDenial", d->notify, err, n) != 0) ||
	    set_string(obj, "iss", d->iss, err, n) != 0)
		return -1;
	return 0;
}

json_t *
ctl_build_record(const struct ctl_decision *d, char *err, size_t errlen)
{
	json_t *obj, *params;

	if (check_decision(d, err, errlen) != 0)
		return NULL;
	if ((params = params_object(d->params_json, err, errlen)) == NULL)
		return NULL;
	if (merge_pairs(params, d->params, d->nparams, err, errlen) != 0) {
		json_decref(params);
		return NULL;
	}
	if ((obj = json_object()) == NULL || fill_record(obj, d, params, err, errlen) != 0) {
		if (obj == NULL)
			seterr(err, errlen, "out of memory");
		json_decref(obj);
		obj = NULL;
	}
	json_decref(params);
	return obj;
}

/* ---- the policy ---- */

static int
action_configured(void *ctx, const char *action)
{
	return cfg_action_find(ctx, action) != NULL;
}

/* What both policies share: everything of [records] but the signature. */
static void
policy_common(struct record_policy *pol, const struct cfg *cfg)
{
	memset(pol, 0, sizeof *pol);
	pol->algorithm = cfg->records.algorithm;
	pol->issuer = cfg->records.issuer;
	pol->audience = cfg->records.audience;
	pol->max_window_ms = (int64_t)cfg->records.max_window_s * 1000;
	pol->clock_skew_ms = (int64_t)cfg->records.clock_skew_s * 1000;
	pol->max_bytes = (size_t)cfg->records.max_bytes;
	pol->action_known = action_configured;
	pol->action_ctx = (void *)cfg;	/* only read, by action_configured */
}

/* The signature requirement is the configuration's, never the key's: a
 * missing key makes record_load refuse (bad-signature), it cannot turn
 * verification off. */
void
ctl_policy_init(struct record_policy *pol, const struct cfg *cfg, const unsigned char *key,
		size_t key_len)
{
	policy_common(pol, cfg);
	pol->signature_required = cfg->records.signature_required;
	pol->key = key;
	pol->key_len = key_len;
}

void
ctl_policy_content(struct record_policy *pol, const struct cfg *cfg)
{
	policy_common(pol, cfg);
	pol->signature_required = 0;
}

/* ---- output ---- */

json_t *
ctl_scalar(const char *s)
{
	const char *p = s + (s[0] == '-');
	long long v;
	char *end;

	/* No leading zero, so "007" stays the text it was. */
	if (!isdigit((unsigned char)*p) || (p[0] == '0' && p[1] != '\0'))
		return json_string(s);
	for (const char *q = p; *q; q++)
		if (!isdigit((unsigned char)*q))
			return json_string(s);
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return json_string(s);
	return json_integer(v);
}

static void
put_clean(FILE *out, const char *s)
{
	for (; *s; s++)
		fputc(iscntrl((unsigned char)*s) ? '?' : *s, out);
}

/* A JSON value as text; caller frees. NULL on no memory. */
static char *
value_text(const json_t *v)
{
	char num[64];

	switch (json_typeof(v)) {
	case JSON_STRING:
		return strdup(json_string_value(v));
	case JSON_INTEGER:
		snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return strdup(num);
	case JSON_REAL:
		snprintf(num, sizeof num, "%.17g", json_real_value(v));
		return strdup(num);
	case JSON_TRUE:
		return strdup("true");
	case JSON_FALSE:
		return strdup("false");
	case JSON_NULL:
		return strdup("-");
	default:
		return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	}
}

static int
array_of_objects(const json_t *v)
{
	size_t i;
	json_t *e;

	if (!json_is_array(v) || json_array_size(v) == 0)
		return 0;
	json_array_foreach(v, i, e)
		if (!json_is_object(e))
			return 0;
	return 1;
}

void
ctl_print_line(FILE *out, const json_t *obj, int indent)
{
	const char *key, *sep = "";
	json_t *v;

	fprintf(out, "%*s", indent, "");
	json_object_foreach((json_t *)obj, key, v) {
		char *text;

		if (json_is_null(v) || (text = value_text(v)) == NULL)
			continue;
		/* log_quote writes at most 4 bytes per byte (\xNN) and 2 quotes. */
		size_t n = strlen(text) * 4 + 3;
		char *quoted = malloc(n);
		if (quoted != NULL) {
			fprintf(out, "%s", sep);
			put_clean(out, key);
			fprintf(out, "=%s", log_quote(quoted, n, text));
			sep = " ";
		}
		free(quoted);
		free(text);
	}
	fputc('\n', out);
}

static size_t
key_width(const json_t *obj)
{
	const char *key;
	json_t *v;
	size_t w = 0;

	json_object_foreach((json_t *)obj, key, v)
		if (strlen(key) > w)
			w = strlen(key);
	return w + 1;	/* the colon */
}

static void
print_member(FILE *out, const char *key, const json_t *v, int indent, size_t width)
{
	size_t i;
	json_t *e;
	char *text;

	fprintf(out, "%*s", indent, "");
	put_clean(out, key);
	if (json_is_object(v) && json_object_size(v) > 0) {
		fprintf(out, ":\n");
		ctl_print_human(out, v, indent + 2);
		return;
	}
	if (array_of_objects(v)) {
		fprintf(out, ":\n");
		json_array_foreach(v, i, e)
			ctl_print_line(out, e, indent + 2);
		return;
	}
	fprintf(out, ":%*s", (int)(width - strlen(key)), "");
	if ((json_is_array(v) && json_array_size(v) == 0) ||
	    (json_is_object(v) && json_object_size(v) == 0))
		text = strdup("(none)");
	else
		text = value_text(v);
	if (text != NULL)
		put_clean(out, text);
	free(text);
	fputc('\n', out);
}

void
ctl_print_human(FILE *out, const json_t *obj, int indent)
{
	const char *key;
	json_t *v;
	size_t width = key_width(obj);

	json_object_foreach((json_t *)obj, key, v)
		print_member(out, key, v, indent, width);
}

const char *
ctl_human_ms(long long ms, char *buf, size_t n)
{
	static const struct {
		long long below, per;
		const char *unit;
	} steps[] = {
		{1000, 1, "ms"}, {120000, 1000, "s"}, {7200000, 60000, "m"},
		{172800000, 3600000, "h"}, {-1, 86400000, "d"},
	};

	if (ms < 0) {
		snprintf(buf, n, "-");
		return buf;
	}
	for (size_t i = 0;; i++)
		if (steps[i].below < 0 || ms < steps[i].below) {
			snprintf(buf, n, "%lld %s", ms / steps[i].per, steps[i].unit);
			return buf;
		}
}

size_t
ctl_status_alive(const json_t *status)
{
	const char *name;
	json_t *o;
	size_t alive = 0;

	json_object_foreach(json_object_get(status, "consumers"), name, o)
		alive += json_is_true(json_object_get(o, "alive"));
	return alive;
}

const char *
ctl_held(const json_t *paused, const char *action, const char *state)
{
	if (state == NULL || (strcmp(state, "queued") != 0 && strcmp(state, "retrying") != 0))
		return NULL;
	if (json_object_get(paused, "*") != NULL ||
	    (action != NULL && json_object_get(paused, action) != NULL))
		return "paused";
	return NULL;
}

/* "xxxMs" holding an integer: the key without "Ms" and the value for people
 * in text; else 0. */
static int
human_duration(const char *key, const json_t *v, char *name, size_t nn, char *text, size_t nt)
{
	size_t len = strlen(key);

	if (len < 3 || strcmp(key + len - 2, "Ms") != 0 || !(json_is_integer(v) || json_is_null(v)))
		return 0;
	snprintf(name, nn, "%.*s", (int)(len - 2), key);
	ctl_human_ms(json_is_null(v) ? -1 : json_integer_value(v), text, nt);
	return 1;
}

/* The consumers as a table of what matters (the rest is in --json and
 * the heartbeat hash): name, alive, heartbeat age, pending, in flight,
 * token state, version, the name's owner (its instance id's first 8
 * digits; "COLLISION" beside it when another instance wrote the heartbeat). */
enum { COLS = 8 };

static void
consumer_row(const char *name, const json_t *o, char cell[COLS][64])
{
	const json_t *age = json_object_get(o, "heartbeatAgeMs");
	const char *token = json_string_value(json_object_get(o, "tokenState"));
	const char *version = json_string_value(json_object_get(o, "version"));
	const json_t *pending = json_object_get(o, "pending");
	const json_t *inflight = json_object_get(o, "inFlight");

	snprintf(cell[0], 64, "%s", name);
	snprintf(cell[1], 64, "%s", json_is_true(json_object_get(o, "alive")) ? "alive" :
	    "silent");
	ctl_human_ms(json_is_integer(age) ? json_integer_value(age) : -1, cell[2], 64);
	snprintf(cell[3], 64, "%lld", (long long)json_integer_value(pending));
	if (json_is_integer(inflight))
		snprintf(cell[4], 64, "%lld", (long long)json_integer_value(inflight));
	else
		snprintf(cell[4], 64, "-");
	snprintf(cell[5], 64, "%s", token && *token ? token : "-");
	snprintf(cell[6], 64, "%s", version && *version ? version : "-");
	const char *owner = json_string_value(json_object_get(o, "owner"));
	snprintf(cell[7], 64, "%.8s%s", owner && *owner ? owner : "-",
	    json_is_true(json_object_get(o, "collision")) ? " COLLISION" : "");
}

static void
put_row(FILE *out, char cell[COLS][64], const size_t width[COLS])
{
	fputs(" ", out);
	for (int k = 0; k < COLS; k++) {
		fputc(' ', out);
		put_clean(out, cell[k]);
		if (k + 1 < COLS)
			fprintf(out, "%*s", (int)(width[k] - strlen(cell[k]) + 1), "");
	}
	fputc('\n', out);
}

static void
print_consumers(FILE *out, const json_t *consumers)
{
	static const char *const head[COLS] = {"NAME", "ALIVE", "HEARTBEAT", "PENDING",
	    "IN FLIGHT", "TOKEN", "VERSION", "OWNER"};
	char cell[COLS][64];
	size_t width[COLS];
	const char *name;
	json_t *o;

	if (json_object_size(consumers) == 0)
		return;
	for (int k = 0; k < COLS; k++)
		width[k] = strlen(head[k]);
	json_object_foreach((json_t *)consumers, name, o) {
		consumer_row(name, o, cell);
		for (int k = 0; k < COLS; k++)
			if (strlen(cell[k]) > width[k])
				width[k] = strlen(cell[k]);
	}
	for (int k = 0; k < COLS; k++)
		snprintf(cell[k], 64, "%s", head[k]);
	put_row(out, cell, width);
	json_object_foreach((json_t *)consumers, name, o) {
		consumer_row(name, o, cell);
		put_row(out, cell, width);
	}
}

void
ctl_print_status(FILE *out, const json_t *status)
{
	const json_t *consumers = json_object_get(status, "consumers");
	json_t *copy = json_object(), *v;
	const char *key;
	char k[64], t[32];

	if (copy == NULL)
		return;
	json_object_foreach((json_t *)status, key, v) {	/* durations for people */
		if (strcmp(key, "consumers") == 0 || strcmp(key, "lagAtLeast") == 0)
			continue;
		if (strcmp(key, "lag") == 0 && json_is_true(json_object_get(status,
		    "lagAtLeast")))	/* counted up to LAG_CAP: "≥10000" */
			json_object_set_new(copy, key, json_sprintf("\u2265%lld",
			    (long long)json_integer_value(v)));
		else if (human_duration(key, v, k, sizeof k, t, sizeof t))
			json_object_set_new(copy, k, json_string(t));
		else
			json_object_set(copy, key, v);
	}
	ctl_print_human(out, copy, 0);
	json_decref(copy);
	fprintf(out, "consumers: %zu alive of %zu\n", ctl_status_alive(status),
	    json_object_size(consumers));
	print_consumers(out, consumers);
}

/* ---- metrics ---- */

static const struct {
	const char *member, *name, *help;
	int ms;		/* the member is in ms, the metric in seconds */
	int skip_null;	/* unknown is left out, not 0 */
} queue_gauges[] = {
	{"streamLength", "stream_length", "Entries in the jobs stream.", 0, 0},
	{"lag", "lag", "Entries not yet delivered to the group.", 0, 1},
	{"pending", "pending", "Entries delivered and not acknowledged (PEL depth).", 0, 0},
	{"oldestPendingIdleMs", "oldest_pending_idle_seconds",
	    "Idle time of the oldest pending entry (0: none).", 1, 0},
	{"scheduled", "scheduled", "Records waiting for their notBefore.", 0, 0},
	{"dead", "dead", "Entries in the dead-letter stream.", 0, 0},
	{"notify", "notify", "Entries in the notification stream.", 0, 0},
};

/* The text being written and the labels every sample carries. */
struct queue_labels {
	struct promtext *p;
	const char *stream, *group;
};

static void
queue_head(struct promtext *p, const char *name, const char *help)
{
	char n[96];

	snprintf(n, sizeof n, "warrantd_queue_%s", name);
	promtext_head(p, n, "gauge", help);
}

/* warrantd_queue_<name>{stream="…",group="…" */
static void
queue_begin(struct queue_labels *q, const char *name)
{
	char n[96];

	snprintf(n, sizeof n, "warrantd_queue_%s", name);
	promtext_begin(q->p, n);
	promtext_label(q->p, "stream", q->stream);
	promtext_label(q->p, "group", q->group);
}

static double
queue_number(const json_t *v, int ms)
{
	double d = json_is_integer(v) ? (double)json_integer_value(v) : json_number_value(v);
	return ms ? d / 1000.0 : d;
}

/* Age of an entry from its id "<ms>-<seq>" (status's member `which`); 0
 * when none. */
static double
oldest_age_s(const json_t *status, const char *which, int64_t now_ms)
{
	const char *id = json_string_value(json_object_get(status, which));
	long long ms = id ? strtoll(id, NULL, 10) : 0;

	return ms > 0 && now_ms > ms ? (double)(now_ms - ms) / 1000.0 : 0;
}

int
ctl_queue_metrics(FILE *out, const json_t *status, int64_t now_ms)
{
	const char *stream = json_string_value(json_object_get(status, "stream"));
	const char *group = json_string_value(json_object_get(status, "group"));
	const json_t *consumers = json_object_get(status, "consumers"), *o;
	struct queue_labels q = {promtext_new(), stream ? stream : "", group ? group : ""};
	long long alive = 0, in_group = 0;
	const char *name;

	if (!q.p)
		return -1;
	queue_head(q.p, "group_exists", "1 when the consumer group exists.");
	queue_begin(&q, "group_exists");
	promtext_ll(q.p, json_is_true(json_object_get(status, "groupExists")));
	for (size_t i = 0; i < sizeof queue_gauges / sizeof queue_gauges[0]; i++) {
		const json_t *v = json_object_get(status, queue_gauges[i].member);
		if (!json_is_number(v) && queue_gauges[i].skip_null)
			continue;
		queue_head(q.p, queue_gauges[i].name, queue_gauges[i].help);
		queue_begin(&q, queue_gauges[i].name);
		promtext_g(q.p, json_is_number(v) ? queue_number(v, queue_gauges[i].ms) : 0.0);
	}
	queue_head(q.p, "oldest_pending_age_seconds",
	    "Age of the oldest pending entry since its XADD (0: none).");
	queue_begin(&q, "oldest_pending_age_seconds");
	promtext_fixed(q.p, oldest_age_s(status, "oldestPendingId", now_ms), 3);
	queue_head(q.p, "oldest_undelivered_age_seconds",
	    "Age of the oldest entry not yet delivered to the group, since its XADD: the "
	    "queue's latency (0: none).");
	queue_begin(&q, "oldest_undelivered_age_seconds");
	promtext_fixed(q.p, oldest_age_s(status, "oldestUndelivered", now_ms), 3);
	queue_head(q.p, "consumer_pending", "Pending entries per consumer of the group.");
	json_object_foreach((json_t *)consumers, name, o) {
		alive += json_is_true(json_object_get(o, "alive"));
		if (!json_is_true(json_object_get(o, "inGroup")))
			continue;
		in_group++;
		queue_begin(&q, "consumer_pending");
		promtext_label(q.p, "consumer", name);
		promtext_ll(q.p, json_integer_value(json_object_get(o, "pending")));
	}
	queue_head(q.p, "consumers", "Consumers known to the group.");
	queue_begin(&q, "consumers");
	promtext_ll(q.p, in_group);
	queue_head(q.p, "consumers_alive", "Consumers whose heartbeat hash has not expired.");
	queue_begin(&q, "consumers_alive");
	promtext_ll(q.p, alive);
	size_t len;
	char *text = promtext_take(q.p, &len);
	promtext_free(q.p);
	if (!text)
		return -1;
	size_t wrote = fwrite(text, 1, len, out);
	free(text);
	return wrote == len ? 0 : -1;
}
