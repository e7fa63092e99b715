/* SPDX-License-Identifier: BSD-2-Clause */
/* store: key names, and the arguments of the Lua scripts of lua/ set by
 * name; every multi-step change is one script. */
#include "core/store.h"

#include "core/job.h"
#include "base/names.h"
#include "core/resp.h"

#include <limits.h>
#include <stdint.h>
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
		{k->consumers, "consumers"}, {k->clock, "clock"},
		{k->final_prefix, "final:"}, {k->paused, "paused"}, {k->parked, "parked"},
		{k->parked_prefix, "parked:"},
	};

	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		int w = snprintf(keys[i].dst, STORE_KEY_MAX, "%s:%s", prefix, keys[i].suffix);
		if (w < 0 || w >= STORE_KEY_MAX)
			return -1;
	}
	int w = snprintf(k->consumer, STORE_KEY_MAX, "%s:consumer:%s", prefix, consumer);
	if (w < 0 || w >= STORE_KEY_MAX)
		return -1;
	w = snprintf(k->owner, STORE_KEY_MAX, "%s:owner:%s", prefix, consumer);
	if (w < 0 || w >= STORE_KEY_MAX)
		return -1;
	/* " done expired ... ": with a space at each end the script finds
	 * " state " in it as it is, with no concatenation per call */
	k->terminal[0] = ' ';
	if (job_terminal_list(k->terminal + 1, sizeof k->terminal - 2) < 0)
		return -1;
	size_t n = strlen(k->terminal);	/* < sizeof k->terminal - 1 */
	k->terminal[n] = ' ';
	k->terminal[n + 1] = '\0';
	return 0;
}

/* prefix and id into buf; -1 when they do not fit. */
static int
key_of(const char *prefix, const char *id, char *buf, size_t n)
{
	/* Not snprintf: ejob builds the key on the stack at every read and
	 * transition of a job instead of keeping it (issue 10, RSS). */
	size_t pl = strlen(prefix), il = strlen(id);

	if (pl >= n || il >= n - pl)
		return -1;
	memcpy(buf, prefix, pl + 1);	/* a string at every step (clang-tidy) */
	memcpy(buf + pl, id, il + 1);
	return 0;
}

int
store_decision_key(const struct store_keys *k, const char *id, char *buf, size_t n)
{
	return key_of(k->decision_prefix, id, buf, n);
}

int
store_final_key(const struct store_keys *k, const char *id, char *buf, size_t n)
{
	return key_of(k->final_prefix, id, buf, n);
}

int
store_parked_key(const struct store_keys *k, const char *action, char *buf, size_t n)
{
	return key_of(k->parked_prefix, action, buf, n);
}

static const char *const replies[STORE_REPLY_COUNT] = {
	[STORE_REPLY_OK] = "ok",
	[STORE_REPLY_LEASE] = "lease",
	[STORE_REPLY_OWNER] = "owner",
	[STORE_REPLY_ATTEMPTS] = "attempts",
	[STORE_REPLY_TERMINAL] = "terminal",
	[STORE_REPLY_MISSING] = "missing",
	[STORE_REPLY_AGAIN] = "again",
	[STORE_REPLY_DUPLICATE] = "duplicate",
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

enum store_library_state
store_library_check(int is_error, const char *text)
{
	static const char missing[] = "ERR Function not found";
	static const char unknown[] = "ERR unknown command";

	if (text == NULL)
		return STORE_LIBRARY_UNKNOWN;
	if (!is_error)
		return strcmp(text, STORE_LIBRARY_VERSION) == 0 ? STORE_LIBRARY_OK :
		    STORE_LIBRARY_WRONG;
	if (strncmp(text, missing, sizeof missing - 1) == 0)
		return STORE_LIBRARY_MISSING;
	if (strncmp(text, unknown, sizeof unknown - 1) == 0)
		return STORE_LIBRARY_NO_FUNCTIONS;
	return STORE_LIBRARY_UNKNOWN;
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
	v->argv[0] = sc->read_only ? "FCALL_RO" : "FCALL";
	v->argv[1] = sc->function;
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

/* Room for more bytes in buf; -1 when out of memory. */
static int
buf_room(struct store_buf *buf, size_t more)
{
	size_t cap = buf->cap ? buf->cap : 1024;

	if (buf->cap - buf->len >= more)
		return 0;
	while (cap - buf->len < more) {
		if (cap > SIZE_MAX / 2)
			return -1;
		cap *= 2;
	}
	char *p = realloc(buf->p, cap);
	if (p == NULL)
		return -1;
	buf->p = p;
	buf->cap = cap;
	return 0;
}

/* The group of slot i (struct store_batch): even shared, odd each call's. */
static int
group_of(const struct store_script *sc, int i)
{
	return (i < sc->nkeys ? 0 : 2) + !sc->shared[i];
}

/* b's script and its slots by kind (struct store_batch), for a first call. */
static void
batch_start(struct store_batch *b, enum store_script_id script)
{
	const struct store_script *sc = &store_scripts[script];
	int n = nslots(script), k = 0;

	b->script = script;
	b->nslots = (unsigned char)n;
	for (int own = 0; own < 2; own++) {
		for (int i = 0; i < n; i++)
			if ((sc->shared[i] == 0) == own)
				b->slot[k++] = (unsigned char)i;
		if (!own)
			b->nshared = (unsigned char)k;
	}
	k = b->nshared;
	while (k < n && b->slot[k] < sc->nkeys)
		k++;
	b->own_arg0 = (unsigned char)k;
}

/* 1 when a's shared slots (their lengths in len) are the first call's. */
static int
shared_same(const struct store_batch *b, const struct store_args *a, const size_t *len)
{
	const struct store_script *sc = &store_scripts[b->script];

	for (int k = 0; k < b->nshared; k++) {
		int i = b->slot[k];
		if (len[i] != b->vlen[i] ||
		    memcmp(b->group[group_of(sc, i)].p + b->val[i], a->v[i], len[i]) != 0)
			return 0;
	}
	return 1;
}

/* Why a cannot be gathered, into err; -1. */
static int
batch_refused(const struct store_args *a, char *err, size_t errlen)
{
	if (args_check(a, err, errlen) == 0)
		snprintf(err, errlen, "script %s: a call with a list is not batched",
		    store_scripts[a->script].name);
	return -1;
}

/* Writes slot[k] of a (its length in len) into its group, noting where the
 * first call's is. */
static void
batch_put_slot(struct store_batch *b, const struct store_args *a, const size_t *len, int k)
{
	const struct store_script *sc = &store_scripts[b->script];
	int i = b->slot[k];
	struct store_buf *g = &b->group[group_of(sc, i)];
	char *end = resp_put_bulk(g->p + g->len, a->v[i], len[i]);

	if (b->n == 0) {
		b->val[i] = (size_t)(end - 2 - len[i] - g->p);
		b->vlen[i] = len[i];
	}
	g->len = (size_t)(end - g->p);
}

/* Writes the slots slot[from..] of a (their lengths in len) into b's
 * groups: the own arguments up to the last that is not empty, after their
 * number. */
static void
batch_put(struct store_batch *b, const struct store_args *a, const size_t *len, int from)
{
	struct store_buf *own = &b->group[STORE_BATCH_GROUPS - 1];
	int end = b->nslots, k;
	char count[4];

	while (end > b->own_arg0 && len[b->slot[end - 1]] == 0)
		end--;
	for (k = from; k < b->own_arg0; k++)
		batch_put_slot(b, a, len, k);
	*dec_put(count, (size_t)(end - b->own_arg0)) = '\0';
	own->len = (size_t)(resp_put_bulk(own->p + own->len, count, strlen(count)) - own->p);
	for (; k < end; k++)
		batch_put_slot(b, a, len, k);
	b->own_argc += 1 + (size_t)(end - b->own_arg0);
	/* Own arguments are the last in header order (luagen.sh), so the
	 * plain form sends the first `end` slots in header order. */
	if (b->n == 0)
		b->lone_slots = (unsigned char)end;
}

int
store_batch_add(struct store_batch *b, const struct store_args *a, char *err, size_t errlen)
{
	const struct store_script *sc = &store_scripts[a->script];
	int n = nslots(a->script);
	/* each slot and the own arguments' number */
	size_t len[STORE_SLOTS_MAX], room = (size_t)(n + 1) * RESP_BULK_OVER;

	if (sc->batch == NULL) {
		snprintf(err, errlen, "script %s has no batch form", sc->name);
		return -1;
	}
	if (a->bad || a->nrest > 0)
		return batch_refused(a, err, errlen);
	for (int i = 0; i < n; i++) {
		if (a->v[i] == NULL)
			return batch_refused(a, err, errlen);
		room += len[i] = strlen(a->v[i]);
	}
	if (b->n > 0 && (b->n >= STORE_BATCH_MAX || b->script != a->script ||
	    !shared_same(b, a, len)))
		return 1;
	/* room for all of a in every group it writes to: one check a group */
	for (int g = 0; g < STORE_BATCH_GROUPS; g++)
		if ((b->n == 0 || g % 2 == 1) && buf_room(&b->group[g], room) < 0) {
			snprintf(err, errlen, "script %s: out of memory", sc->name);
			return -1;
		}
	if (b->n == 0)
		batch_start(b, a->script);
	batch_put(b, a, len, b->n == 0 ? 0 : b->nshared);
	b->n++;
	return 0;
}

/* A lone call: its slots in header order, one piece per run of slots that
 * lie one after the other in one group. */
static size_t
lone_parts(const struct store_batch *b, struct iovec *parts)
{
	const struct store_script *sc = &store_scripts[b->script];
	size_t k = 0;

	for (int i = 0; i < b->lone_slots; i++) {
		char *at = b->group[group_of(sc, i)].p + b->val[i] - 3 -
		    dec_len(b->vlen[i]);
		size_t n = resp_bulk_len(b->vlen[i]);
		if (k > 0 && (char *)parts[k - 1].iov_base + parts[k - 1].iov_len == at)
			parts[k - 1].iov_len += n;
		else
			parts[k++] = (struct iovec){.iov_base = at, .iov_len = n};
	}
	return k;
}

size_t
store_batch_parts(const struct store_batch *b, struct iovec parts[STORE_BATCH_PARTS],
		  int *nkeys, int *argc)
{
	const struct store_script *sc = &store_scripts[b->script];
	int count[STORE_BATCH_GROUPS] = {0};
	size_t k = 0;

	*nkeys = *argc = 0;
	if (b->n == 0)
		return 0;
	if (b->n == 1) {
		*nkeys = sc->nkeys;
		*argc = b->lone_slots;
		return lone_parts(b, parts);
	}
	for (int i = 0; i < b->nslots; i++)
		count[group_of(sc, i)]++;
	*nkeys = count[0] + (int)b->n * count[1];
	*argc = *nkeys + count[2] + (int)b->own_argc;
	for (int g = 0; g < STORE_BATCH_GROUPS; g++)
		if (b->group[g].len > 0)	/* never a piece at NULL */
			parts[k++] = (struct iovec){.iov_base = b->group[g].p,
			    .iov_len = b->group[g].len};
	return k;
}

void
store_batch_clear(struct store_batch *b)
{
	b->n = 0;
	b->own_argc = 0;
	for (int g = 0; g < STORE_BATCH_GROUPS; g++)
		b->group[g].len = 0;
}

void
store_batch_release(struct store_batch *b)
{
	for (int g = 0; g < STORE_BATCH_GROUPS; g++)
		free(b->group[g].p);
	memset(b, 0, sizeof *b);
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

/* 1 when state is one of k's terminal states (" done expired ... "). */
static int
state_terminal(const struct store_keys *k, const char *state)
{
	size_t n = strlen(state);

	for (const char *p = k->terminal; n > 0 && (p = strstr(p, state)) != NULL; p++)
		if (p > k->terminal && p[-1] == ' ' && p[n] == ' ')
			return 1;
	return 0;
}

static long long
transition_flags(const struct store_keys *k, const struct store_transition *t)
{
	/* R4: a terminal state written into the hash is written as P:final
	 * too; the script only sees this bit, not a second list to search. */
	int final = t->hash_key && t->state && state_terminal(k, t->state);

	return (t->hash_key ? STORE_TF_HAS_HASH : 0) | (t->ack ? STORE_TF_ACK : 0) |
	    (t->notify ? STORE_TF_NOTIFY_WRITE : 0) |
	    (t->require_owner ? STORE_TF_REQUIRE_OWNER : 0) |
	    (t->incr_attempts ? STORE_TF_INCR_ATTEMPTS : 0) |
	    (t->skip_lease ? 0 : STORE_TF_CHECK_LEASE) |
	    (t->keep_unpending ? STORE_TF_KEEP_UNPENDING : 0) |
	    (final ? STORE_TF_FINAL_WRITE : 0) |
	    (t->call_result ? STORE_TF_CALL_RESULT : 0);
}

void
store_transition_args(const struct store_keys *k, const char *group, const char *consumer,
		      long long audit_maxlen, const struct store_transition *t,
		      struct store_args *a)
{
	long long flags = transition_flags(k, t);

	store_args_init(a, STORE_TRANSITION);
	/* Issue 27 item 5: a key the call does not touch is not named -- the
	 * stream, which always exists, stands in for it (the script reads the
	 * flags, never the stand-in). Redis refuses a call that names a key
	 * missing on its node while its slot migrates (-TRYAGAIN), for as long
	 * as the migration lasts: an empty P:scheduled, a P:dead or P:notify
	 * before its first entry, the mark of a record not yet terminal. */
	store_arg(a, STORE_TRANSITION_HASH, t->hash_key ? t->hash_key : k->jobs);
	/* R4's mark, named only with the terminal write that sets it (the
	 * load reads it: eops.c); made here so no caller can leave it out --
	 * an id too long for it leaves the slot unset, and the call is refused. */
	if (!(flags & STORE_TF_FINAL_WRITE))
		store_arg(a, STORE_TRANSITION_FINAL, k->jobs);
	else
		store_arg(a, STORE_TRANSITION_FINAL, store_final_key(k, opt(t->record_id), a->key,
		    sizeof a->key) == 0 ? a->key : NULL);
	/* by slot, not store_args_consumer's search by name: 730 instructions
	 * a call */
	store_arg(a, STORE_TRANSITION_JOBS, k->jobs);
	store_arg(a, STORE_TRANSITION_GROUP, group);
	store_arg(a, STORE_TRANSITION_CONSUMER, consumer);
	store_arg(a, STORE_TRANSITION_AUDIT, k->audit);
	store_arg(a, STORE_TRANSITION_DEAD, t->dead_reason && t->dead_reason[0] ? k->dead : k->jobs);
	store_arg(a, STORE_TRANSITION_NOTIFY, t->notify ? k->notify : k->jobs);
	store_arg(a, STORE_TRANSITION_SCHEDULED, t->schedule_score && t->schedule_score[0] ?
	    k->scheduled : k->jobs);

	store_arg(a, STORE_TRANSITION_STREAM_ID, opt(t->stream_id));
	store_arg_ll(a, STORE_TRANSITION_FENCE, t->fence_attempts);
	store_arg_ll(a, STORE_TRANSITION_FLAGS, flags);
	store_arg(a, STORE_TRANSITION_STATE, opt(t->state));
	store_arg(a, STORE_TRANSITION_OUTCOME, opt(t->outcome));
	store_arg(a, STORE_TRANSITION_DETAIL, opt(t->detail));
	store_arg(a, STORE_TRANSITION_HTTP_STATUS, opt(t->http_status));
	store_arg(a, STORE_TRANSITION_DEAD_REASON, opt(t->dead_reason));
	/* What the script does not read is sent as "" (transition.lua): an
	 * item's trailing empty arguments are left out of a batch. */
	store_arg(a, STORE_TRANSITION_NOTIFY_OWNER, t->notify ? opt(t->notify_owner) : "");
	store_arg(a, STORE_TRANSITION_RECORD_ID, opt(t->record_id));
	store_arg(a, STORE_TRANSITION_ON_BEHALF_OF, t->notify ? opt(t->on_behalf_of) : "");
	store_arg(a, STORE_TRANSITION_ACTION, t->notify ? opt(t->action) : "");
	store_arg(a, STORE_TRANSITION_RESOURCE, t->notify ? opt(t->resource) : "");
	if (t->dead_reason && t->dead_reason[0])
		store_arg_ll(a, STORE_TRANSITION_DELIVERIES, t->deliveries);
	else
		store_arg(a, STORE_TRANSITION_DELIVERIES, "");
	store_arg(a, STORE_TRANSITION_AT, opt(t->at));
	store_arg_ll(a, STORE_TRANSITION_AUDIT_MAXLEN, audit_maxlen);
	store_arg(a, STORE_TRANSITION_SCHEDULE_SCORE, opt(t->schedule_score));
	if (t->incr_attempts && t->hash_key)	/* the script's HINCRBY says it */
		store_arg(a, STORE_TRANSITION_ATTEMPT, "");
	else
		store_arg_ll(a, STORE_TRANSITION_ATTEMPT, t->attempt);
	store_arg(a, STORE_TRANSITION_NOTIFY_KIND, t->notify ? opt(t->notify_kind) : "");
	if (t->retain_ms > 0)
		store_arg_ll(a, STORE_TRANSITION_RETAIN_MS, t->retain_ms);
	else
		store_arg(a, STORE_TRANSITION_RETAIN_MS, "");
	store_arg_ll(a, STORE_TRANSITION_DEAD_MAXLEN, t->dead_maxlen);
	store_arg_ll(a, STORE_TRANSITION_NOTIFY_MAXLEN, t->notify_maxlen);
	store_arg(a, STORE_TRANSITION_TERMINAL, k->terminal);
	store_arg(a, STORE_TRANSITION_TRACEPARENT, opt(t->traceparent));
}
