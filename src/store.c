/* store: key names, and the arguments of the Lua scripts of lua/ set by
 * name; every multi-step change is one script. */
#include "store.h"

#include "job.h"
#include "names.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
store_keys_init(struct store_keys *k, const char *prefix, const char *consumer)
{
	struct {
		char *dst;
		const char *suffix;
	} keys[] = {
		{k->jobs, "jobs"}, {k->scheduled, "scheduled"}, {k->dead, "dead"},
		{k->notify, "notify"}, {k->audit, "audit"}, {k->decision_prefix, "decision:"},
	};

	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		int w = snprintf(keys[i].dst, STORE_KEY_MAX, "%s:%s", prefix, keys[i].suffix);
		if (w < 0 || w >= STORE_KEY_MAX)
			return -1;
	}
	int w = snprintf(k->consumer, STORE_KEY_MAX, "%s:consumer:%s", prefix, consumer);
	return w < 0 || w >= STORE_KEY_MAX ? -1 : 0;
}

int
store_decision_key(const struct store_keys *k, const char *id, char *buf, size_t n)
{
	int w = snprintf(buf, n, "%s%s", k->decision_prefix, id);
	return w < 0 || (size_t)w >= n ? -1 : 0;
}

static const char *const replies[STORE_REPLY_COUNT] = {
	[STORE_REPLY_OK] = "ok",
	[STORE_REPLY_LEASE] = "lease",
	[STORE_REPLY_OWNER] = "owner",
	[STORE_REPLY_ATTEMPTS] = "attempts",
	[STORE_REPLY_TERMINAL] = "terminal",
	[STORE_REPLY_MISSING] = "missing",
};

const char *const store_dead_fields[STORE_DEAD_NFIELDS + 1] = {
	[STORE_DEAD_ID] = "id",
	[STORE_DEAD_REASON] = "reason",
	[STORE_DEAD_DETAIL] = "detail",
	[STORE_DEAD_DELIVERIES] = "deliveries",
	[STORE_DEAD_CONSUMER] = "consumer",
	[STORE_DEAD_AT] = "at",
	[STORE_DEAD_STREAM_ID] = "streamId",
	[STORE_DEAD_NFIELDS] = NULL,
};

const char *
store_reply_name(enum store_reply r)
{
	if ((int)r < 0 || (int)r >= STORE_REPLY_COUNT)
		return "";
	return replies[r];
}

int
store_reply_parse(const char *s, enum store_reply *out)
{
	int i = names_find(replies, STORE_REPLY_COUNT, sizeof replies[0], s);

	if (i < 0)
		return -1;
	*out = (enum store_reply)i;
	return 0;
}

int
store_reply_is(const char *s, enum store_reply r)
{
	enum store_reply got;

	return store_reply_parse(s, &got) == 0 && got == r;
}

void
store_args_init(struct store_args *a, enum store_script_id script)
{
	memset(a, 0, sizeof *a);
	a->script = script;
}

static int
nslots(enum store_script_id script)
{
	return store_scripts[script].nkeys + store_scripts[script].nargs;
}

void
store_arg(struct store_args *a, enum store_slot slot, const char *value)
{
	int i = (int)slot & 0xff;

	if ((int)slot >> 8 != (int)a->script || i >= nslots(a->script) || a->v[i] != NULL) {
		a->bad = 1;	/* reported by store_args_vec, which refuses */
		a->bad_slot = (int)slot;
		return;
	}
	a->v[i] = value;
}

/* value in decimal into buf (24 bytes hold any long long); no printf:
 * a transition sets eight numbers. */
static void
put_ll(char *buf, long long value)
{
	char tmp[24];
	unsigned long long u = value < 0 ? 0ULL - (unsigned long long)value :
	    (unsigned long long)value;
	size_t k = 0, w = 0;

	do {
		tmp[k++] = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	if (value < 0)
		buf[w++] = '-';
	while (k > 0)
		buf[w++] = tmp[--k];
	buf[w] = '\0';
}

void
store_arg_ll(struct store_args *a, enum store_slot slot, long long value)
{
	int i = (int)slot & 0xff;

	if (i >= STORE_SLOTS_MAX) {
		store_arg(a, slot, NULL);
		return;
	}
	put_ll(a->num[i], value);
	store_arg(a, slot, a->num[i]);
}

void
store_arg_flag(struct store_args *a, enum store_slot slot, int on)
{
	store_arg(a, slot, on ? "1" : "0");
}

/* The slot of a key or argument by its name, or -1. */
static int
slot_named(enum store_script_id script, const char *name)
{
	const struct store_script *sc = &store_scripts[script];

	for (int i = 0; i < sc->nkeys + sc->nargs; i++)
		if (strcmp(i < sc->nkeys ? sc->keys[i] : sc->args[i - sc->nkeys], name) == 0)
			return STORE_SLOT(script, i);
	return -1;
}

static void
arg_named(struct store_args *a, const char *name, const char *value)
{
	int slot = slot_named(a->script, name);

	if (slot < 0) {
		a->bad = 1;
		a->bad_slot = -1;
		return;
	}
	store_arg(a, (enum store_slot)slot, value);
}

void
store_args_consumer(struct store_args *a, const struct store_keys *k, const char *group,
		    const char *consumer)
{
	arg_named(a, "jobs", k->jobs);
	arg_named(a, "group", group);
	arg_named(a, "consumer", consumer);
}

void
store_arg_rest(struct store_args *a, const char *const *items, size_t n)
{
	a->rest = items;
	a->nrest = n;
}

const char *
store_slot_name(int slot, char *buf, size_t n)
{
	int s = slot >> 8, i = slot & 0xff;

	if (s < 0 || s >= STORE_NSCRIPTS || i >= nslots((enum store_script_id)s)) {
		snprintf(buf, n, "?");
		return buf;
	}
	const struct store_script *sc = &store_scripts[s];
	snprintf(buf, n, "%s.%s", sc->name, i < sc->nkeys ? sc->keys[i] : sc->args[i - sc->nkeys]);
	return buf;
}

/* The first thing wrong with a, as one line; 0 when nothing is. */
static int
args_check(const struct store_args *a, char *err, size_t errlen)
{
	const struct store_script *sc = &store_scripts[a->script];
	char name[96];

	if (a->bad && a->bad_slot < 0) {
		snprintf(err, errlen, "script %s: no key or argument jobs, group or consumer",
		    sc->name);
		return -1;
	}
	if (a->bad) {
		snprintf(err, errlen, "script %s: slot %s set twice or not its own", sc->name,
		    store_slot_name(a->bad_slot, name, sizeof name));
		return -1;
	}
	for (int i = 0; i < nslots(a->script); i++)
		if (a->v[i] == NULL) {
			snprintf(err, errlen, "script %s: %s %s is missing", sc->name,
			    i < sc->nkeys ? "key" : "argument",
			    i < sc->nkeys ? sc->keys[i] : sc->args[i - sc->nkeys]);
			return -1;
		}
	if (a->nrest > 0 && sc->rest == NULL) {
		snprintf(err, errlen, "script %s takes no list", sc->name);
		return -1;
	}
	return 0;
}

int
store_args_vec(const struct store_args *a, struct store_vec *v, char *err, size_t errlen)
{
	const struct store_script *sc = &store_scripts[a->script];
	int fixed = nslots(a->script);
	size_t n = STORE_VEC_HEAD + (size_t)fixed + a->nrest;

	v->argv = NULL;
	v->len = NULL;
	v->argc = 0;
	if (args_check(a, err, errlen) < 0)
		return -1;
	if (n <= STORE_VEC_INLINE) {	/* every call but a long renew list */
		v->argv = v->argv_in;
		v->len = v->len_in;
	} else if (n > INT_MAX || (v->argv = calloc(n, sizeof *v->argv)) == NULL ||
	    (v->len = calloc(n, sizeof *v->len)) == NULL) {
		store_vec_free(v);
		snprintf(err, errlen, "script %s: out of memory", sc->name);
		return -1;
	}
	put_ll(v->nkeys, sc->nkeys);
	v->nkeys_n = sc->nkeys;
	v->argv[0] = "EVAL";
	v->argv[1] = sc->body;
	v->argv[2] = v->nkeys;
	for (int i = 0; i < fixed; i++)
		v->argv[STORE_VEC_HEAD + i] = a->v[i];
	for (size_t i = 0; i < a->nrest; i++)
		v->argv[STORE_VEC_HEAD + fixed + i] = a->rest[i] ? a->rest[i] : "";
	for (size_t i = 0; i < n; i++)
		v->len[i] = strlen(v->argv[i]);
	v->argc = (int)n;
	return 0;
}

int
store_call_new(const struct store_args *a, struct store_call **out, char *err, size_t errlen)
{
	*out = NULL;
	if (args_check(a, err, errlen) < 0)
		return -1;
	if (a->nrest > 0) {
		snprintf(err, errlen, "script %s: a call with a list is not copied",
		    store_scripts[a->script].name);
		return -1;
	}
	int n = nslots(a->script);
	size_t bytes = 0, len[STORE_SLOTS_MAX];
	for (int i = 0; i < n; i++)
		bytes += (len[i] = strlen(a->v[i])) + 1;
	struct store_call *c = malloc(sizeof *c + (size_t)n * (sizeof *c->v + sizeof *c->len) +
	    bytes);
	if (c == NULL) {
		snprintf(err, errlen, "script %s: out of memory", store_scripts[a->script].name);
		return -1;
	}
	c->script = a->script;
	c->n = n;
	c->v = (const char **)(c + 1);
	c->len = (size_t *)(c->v + n);
	char *p = (char *)(c->len + n);
	for (int i = 0; i < n; i++) {
		memcpy(p, a->v[i], len[i] + 1);
		c->v[i] = p;
		c->len[i] = len[i];
		p += len[i] + 1;
	}
	*out = c;
	return 0;
}

int
store_batch_fits(const struct store_call *first, const struct store_call *c)
{
	const struct store_script *sc = &store_scripts[first->script];

	if (c->script != first->script || sc->batch == NULL)
		return 0;
	for (int i = 0; i < first->n; i++)
		if (sc->shared[i] && (first->len[i] != c->len[i] ||
		    memcmp(first->v[i], c->v[i], c->len[i]) != 0))
			return 0;
	return 1;
}

/* Appends the slots of c that are keys (keys = 1) or arguments, shared or
 * not (shared), to v at *k. */
static void
batch_put(const struct store_call *c, int keys, int shared, struct store_vec *v, size_t *k)
{
	const struct store_script *sc = &store_scripts[c->script];

	for (int i = keys ? 0 : sc->nkeys; i < (keys ? sc->nkeys : c->n); i++)
		if (sc->shared[i] == shared) {
			v->argv[*k] = c->v[i];
			v->len[(*k)++] = c->len[i];
		}
}

int
store_batch_vec(const struct store_call *const *items, size_t n, struct store_vec *v,
		char *err, size_t errlen)
{
	v->argv = NULL;
	v->len = NULL;
	v->argc = 0;
	if (n == 0 || n > STORE_BATCH_MAX) {
		snprintf(err, errlen, "a batch of %zu items", n);
		return -1;
	}
	const struct store_script *sc = &store_scripts[items[0]->script];
	int own_keys = 0, own = 0;

	if (sc->batch == NULL) {
		snprintf(err, errlen, "script %s has no batch form", sc->name);
		return -1;
	}
	for (size_t i = 1; i < n; i++)
		if (!store_batch_fits(items[0], items[i])) {
			snprintf(err, errlen, "script %s: item %zu does not fit the batch", sc->name, i);
			return -1;
		}
	for (int i = 0; i < items[0]->n; i++) {
		own += !sc->shared[i];
		own_keys += i < sc->nkeys && !sc->shared[i];
	}
	size_t total = STORE_VEC_HEAD + (size_t)items[0]->n + (n - 1) * (size_t)own;
	/* every entry is set below: no calloc of up to 1,700 pointers */
	if ((v->argv = malloc(total * sizeof *v->argv)) == NULL ||
	    (v->len = malloc(total * sizeof *v->len)) == NULL) {
		store_vec_free(v);
		snprintf(err, errlen, "script %s: out of memory", sc->name);
		return -1;
	}
	put_ll(v->nkeys, sc->nkeys + (long long)(n - 1) * own_keys);
	v->nkeys_n = sc->nkeys + (int)(n - 1) * own_keys;
	v->argv[0] = "EVAL";
	v->argv[1] = sc->batch;
	v->argv[2] = v->nkeys;
	for (int i = 0; i < STORE_VEC_HEAD; i++)
		v->len[i] = strlen(v->argv[i]);
	size_t k = STORE_VEC_HEAD;
	batch_put(items[0], 1, 1, v, &k);
	for (size_t i = 0; i < n; i++)
		batch_put(items[i], 1, 0, v, &k);
	batch_put(items[0], 0, 1, v, &k);
	for (size_t i = 0; i < n; i++)
		batch_put(items[i], 0, 0, v, &k);
	v->argc = (int)total;
	return 0;
}

void
store_vec_free(struct store_vec *v)
{
	if (v->argv != v->argv_in)
		free(v->argv);
	if (v->len != v->len_in)
		free(v->len);
	v->argv = NULL;
	v->len = NULL;
	v->argc = 0;
}

/* "" for NULL: the transition's strings are "" for none. */
static const char *
opt(const char *s)
{
	return s ? s : "";
}

void
store_transition_args(const struct store_keys *k, const char *group, const char *consumer,
		      long long audit_maxlen, const struct store_transition *t,
		      struct store_args *a)
{
	store_args_init(a, STORE_TRANSITION);
	/* A script must name its keys; with no hash, the (absent) key of an
	 * empty id stands in and is never touched. */
	store_arg(a, STORE_TRANSITION_HASH, t->hash_key ? t->hash_key : k->decision_prefix);
	store_args_consumer(a, k, group, consumer);
	store_arg(a, STORE_TRANSITION_AUDIT, k->audit);
	store_arg(a, STORE_TRANSITION_DEAD, k->dead);
	store_arg(a, STORE_TRANSITION_NOTIFY, k->notify);
	store_arg(a, STORE_TRANSITION_SCHEDULED, k->scheduled);

	store_arg(a, STORE_TRANSITION_STREAM_ID, opt(t->stream_id));
	store_arg_ll(a, STORE_TRANSITION_FENCE, t->fence_attempts);
	store_arg_flag(a, STORE_TRANSITION_HAS_HASH, t->hash_key != NULL);
	store_arg(a, STORE_TRANSITION_STATE, opt(t->state));
	store_arg(a, STORE_TRANSITION_OUTCOME, opt(t->outcome));
	store_arg(a, STORE_TRANSITION_DETAIL, opt(t->detail));
	store_arg(a, STORE_TRANSITION_HTTP_STATUS, opt(t->http_status));
	store_arg_flag(a, STORE_TRANSITION_ACK, t->ack);
	store_arg(a, STORE_TRANSITION_DEAD_REASON, opt(t->dead_reason));
	store_arg_flag(a, STORE_TRANSITION_NOTIFY_WRITE, t->notify);
	store_arg(a, STORE_TRANSITION_NOTIFY_OWNER, opt(t->notify_owner));
	store_arg(a, STORE_TRANSITION_RECORD_ID, opt(t->record_id));
	store_arg(a, STORE_TRANSITION_ON_BEHALF_OF, opt(t->on_behalf_of));
	store_arg(a, STORE_TRANSITION_ACTION, opt(t->action));
	store_arg(a, STORE_TRANSITION_RESOURCE, opt(t->resource));
	store_arg_ll(a, STORE_TRANSITION_DELIVERIES, t->deliveries);
	store_arg(a, STORE_TRANSITION_AT, opt(t->at));
	store_arg_ll(a, STORE_TRANSITION_AUDIT_MAXLEN, audit_maxlen);
	store_arg(a, STORE_TRANSITION_SCHEDULE_SCORE, opt(t->schedule_score));
	store_arg_ll(a, STORE_TRANSITION_ATTEMPT, t->attempt);
	store_arg(a, STORE_TRANSITION_NOTIFY_KIND, opt(t->notify_kind));
	store_arg_ll(a, STORE_TRANSITION_RETAIN_MS, t->retain_ms);
	store_arg_flag(a, STORE_TRANSITION_REQUIRE_OWNER, t->require_owner);
	store_arg_flag(a, STORE_TRANSITION_INCR_ATTEMPTS, t->incr_attempts);
	store_arg_ll(a, STORE_TRANSITION_DEAD_MAXLEN, t->dead_maxlen);
	store_arg_ll(a, STORE_TRANSITION_NOTIFY_MAXLEN, t->notify_maxlen);
	store_arg_flag(a, STORE_TRANSITION_CHECK_LEASE, !t->skip_lease);
	store_arg_flag(a, STORE_TRANSITION_KEEP_UNPENDING, t->keep_unpending);
	if (job_terminal_list(a->text, sizeof a->text) == 0)
		store_arg(a, STORE_TRANSITION_TERMINAL, a->text);
}
