/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit tests for src/core/store.c and the scripts embedded from lua/ by
 * scripts/luagen.sh: the headers, the generated table and prologue, and
 * the arguments set by name. LUA_DIR is the source's lua/ (Makefile).
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "core/job.h"
#include "core/store.h"
#include "worker/webhook.h"

#ifndef LUA_DIR
#define LUA_DIR "lua"
#endif

/* The whole file lua/NAME.lua; caller frees. */
static char *
read_lua(const char *name)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s.lua", LUA_DIR, name);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		fail_msg("cannot open %s", path);
	char *buf = calloc(1, 1 << 16);
	size_t n = fread(buf, 1, (1 << 16) - 1, f);
	fclose(f);
	assert_true(n < (1 << 16) - 1);
	return buf;
}

/* Line `k` (1-based) of text into out, without its newline. */
static void
line_of(const char *text, int k, char *out, size_t n)
{
	for (int i = 1; i < k && text; i++)
		if ((text = strchr(text, '\n')) != NULL)
			text++;
	assert_non_null(text);
	size_t len = strcspn(text, "\n");
	assert_true(len < n);
	memcpy(out, text, len);
	out[len] = '\0';
}

/* The words after `tag` on a header line, checked against names[0..n-1]
 * and (for ARGV) the trailing list "rest...". */
static void
check_header(const char *line, const char *tag, const char *const *names, int n,
	     const char *rest)
{
	char buf[2048], want[2048] = "";

	assert_memory_equal(line, tag, strlen(tag));
	for (int i = 0; i < n; i++) {
		strcat(want, " ");
		strcat(want, names[i]);
	}
	if (rest) {
		strcat(want, " ");
		strcat(want, rest);
		strcat(want, "...");
	}
	assert_null(names[n]);
	snprintf(buf, sizeof buf, "%s", line + strlen(tag));
	assert_string_equal(buf, want);
}

/* Every lua/NAME.lua is in the table, and every entry's header is its file's. */
static void
test_headers_match_table(void **state)
{
	(void)state;
	DIR *d = opendir(LUA_DIR);
	int files = 0;
	struct dirent *e;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		char base[256], *text, l1[2048];
		if (len <= 4 || len >= sizeof base || strcmp(e->d_name + len - 4, ".lua") != 0)
			continue;
		snprintf(base, sizeof base, "%.*s", (int)(len - 4), e->d_name);
		text = read_lua(base);
		line_of(text, 1, l1, sizeof l1);
		if (strncmp(l1, "-- SHARED:", 10) != 0)	/* shared code: no function */
			files++;
		free(text);
	}
	closedir(d);
	assert_int_equal(files, STORE_NSCRIPTS);
	for (int s = 0; s < STORE_NSCRIPTS; s++) {
		const struct store_script *sc = &store_scripts[s];
		char *text = read_lua(sc->name), l1[2048], l2[2048];

		line_of(text, 1, l1, sizeof l1);
		line_of(text, 2, l2, sizeof l2);
		check_header(l1, "-- KEYS:", sc->keys, sc->nkeys, NULL);
		check_header(l2, "-- ARGV:", sc->args, sc->nargs, sc->rest);
		assert_true(sc->nkeys + sc->nargs <= STORE_SLOTS_MAX);
		free(text);
	}
}

/* "local K_a, K_b = KEYS[1], KEYS[2]" for names (locals: see luagen.sh). */
static void
prologue(char *out, size_t n, const char *var, const char *tab, const char *const *names,
	 int count, const char *rest)
{
	int w = 0;

	if (count > 0) {
		w = snprintf(out, n, "local ");
		for (int i = 0; i < count; i++)
			w += snprintf(out + w, n - (size_t)w, "%s%s_%s", i ? ", " : "", var, names[i]);
		w += snprintf(out + w, n - (size_t)w, " = ");
		for (int i = 0; i < count; i++)
			w += snprintf(out + w, n - (size_t)w, "%s%s[%d]", i ? ", " : "", tab, i + 1);
	}
	if (rest)
		w += snprintf(out + w, n - (size_t)w, "%slocal A_%s = {} for i = %d, #ARGV do "
		    "A_%s[i - %d] = ARGV[i] end", count ? " " : "", rest, count + 1, rest, count);
	if (w == 0)
		snprintf(out, n, "-- no %s", var[0] == 'K' ? "keys" : "arguments");
}

/* The file's text as luagen embeds it: K.x and A.x outside comments as
 * K_x and A_x. Caller frees. */
static char *
as_locals(const char *text)
{
	char *out = malloc(strlen(text) + 1), *o = out;
	int comment = 0;

	assert_non_null(out);
	for (const char *p = text; *p; p++) {
		if (*p == '\n')
			comment = 0;
		else if (p[0] == '-' && p[1] == '-')
			comment = 1;
		*o++ = *p;
		if (!comment && (*p == 'A' || *p == 'K') && p[1] == '.' && p[2] >= 'a' &&
		    p[2] <= 'z' && (p == text || !(isalnum((unsigned char)p[-1]) ||
		    p[-1] == '_' || p[-1] == '.'))) {
			*o++ = '_';
			p++;
		}
	}
	*o = '\0';
	return out;
}

/* Each body is its file with the two header lines replaced by the K and A
 * tables (so Lua's line numbers are the file's), and no script reads KEYS
 * or ARGV by position anywhere else. */
/* "A_x = A_x or '' " for each argument of a batched script that is each
 * item's own (none for others), into buf; checks that they come after
 * every shared one (the plain form leaves out trailing empty ones too). */
static void
own_defaults(const struct store_script *sc, char *buf, size_t n)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; sc->shared && i < sc->nargs; i++) {
		const char *a = sc->args[i];
		if (sc->shared[sc->nkeys + i]) {
			assert_int_equal(len, 0);
			continue;
		}
		int w = snprintf(buf + len, n - len, "A_%s = A_%s or '' ", a, a);
		assert_true(w > 0 && (size_t)w < n - len);
		len += (size_t)w;
	}
}

static void
test_prologue_and_body(void **state)
{
	(void)state;
	for (int s = 0; s < STORE_NSCRIPTS; s++) {
		const struct store_script *sc = &store_scripts[s];
		char *text = read_lua(sc->name), l1[2048], l2[2048], want[2048];

		line_of(sc->body, 1, l1, sizeof l1);
		line_of(sc->body, 2, l2, sizeof l2);
		prologue(want, sizeof want, "K", "KEYS", sc->keys, sc->nkeys, NULL);
		assert_string_equal(l1, want);
		prologue(want, sizeof want, "A", "ARGV", sc->args, sc->nargs, sc->rest);
		assert_string_equal(l2, want);
		const char *b = strchr(strchr(sc->body, '\n') + 1, '\n') + 1;
		char *f = as_locals(strchr(strchr(text, '\n') + 1, '\n') + 1);
		/* a batched script's line 3 first makes what an item left out "" */
		own_defaults(sc, want, sizeof want);
		assert_memory_equal(b, want, strlen(want));
		assert_string_equal(b + strlen(want), f);
		free(f);
		assert_null(strstr(b, "ARGV["));
		assert_null(strstr(b, "KEYS["));
		assert_null(strstr(b, "#ARGV"));
		free(text);
	}
}

/* Every slot set to its own name lands at its header's position. */
static void
test_args_by_name_positions(void **state)
{
	(void)state;
	for (int s = 0; s < STORE_NSCRIPTS; s++) {
		const struct store_script *sc = &store_scripts[s];
		int n = sc->nkeys + sc->nargs;
		struct store_args a;
		struct store_vec v;
		char err[160], nk[16];

		store_args_init(&a, (enum store_script_id)s);
		for (int i = n - 1; i >= 0; i--)	/* any order */
			store_arg(&a, (enum store_slot)STORE_SLOT(s, i),
			    i < sc->nkeys ? sc->keys[i] : sc->args[i - sc->nkeys]);
		assert_int_equal(store_args_vec(&a, &v, err, sizeof err), 0);
		assert_int_equal(v.argc, STORE_VEC_HEAD + n);
		assert_string_equal(v.argv[0], sc->read_only ? "FCALL_RO" : "FCALL");
		assert_ptr_equal(v.argv[1], sc->function);
		snprintf(nk, sizeof nk, "%d", sc->nkeys);
		assert_string_equal(v.argv[2], nk);
		for (int i = 0; i < n; i++) {
			assert_string_equal(v.argv[STORE_VEC_HEAD + i],
			    i < sc->nkeys ? sc->keys[i] : sc->args[i - sc->nkeys]);
			assert_int_equal(v.len[STORE_VEC_HEAD + i], strlen(v.argv[STORE_VEC_HEAD + i]));
		}
		store_vec_free(&v);
	}
}

/* The generated enum names the same slots as the table. */
static void
test_slot_enum_names(void **state)
{
	static const struct {
		int slot;
		const char *name;
	} cases[] = {
		{STORE_TRANSITION_HASH, "transition.hash"},
		{STORE_TRANSITION_FENCE, "transition.fence"},
		{STORE_TRANSITION_FLAGS, "transition.flags"},
		{STORE_CLAIM_CALLS, "claim.calls"},
		{STORE_RENEW_CONSUMER, "renew.consumer"},
		{STORE_REDISPATCH_ID, "redispatch.id"},
		{STORE_PROMOTE_LIMIT, "promote.limit"},
		{STORE_TRIM_JOBS, "trim.jobs"},
		{STORE_DECIDE_SCORE, "decide.score"},
		{STORE_REQUEUE_RECORD, "requeue.record"},
	};
	char buf[96];

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		assert_string_equal(store_slot_name(cases[i].slot, buf, sizeof buf), cases[i].name);
	assert_string_equal(store_slot_name(STORE_SLOT(STORE_NSCRIPTS, 0), buf, sizeof buf), "?");
}

/* Leaving out any one key or argument is refused, naming it. */
static void
test_missing_argument_refused(void **state)
{
	(void)state;
	for (int s = 0; s < STORE_NSCRIPTS; s++) {
		const struct store_script *sc = &store_scripts[s];
		int n = sc->nkeys + sc->nargs;

		for (int skip = 0; skip < n; skip++) {
			struct store_args a;
			struct store_vec v;
			char err[160] = "";

			store_args_init(&a, (enum store_script_id)s);
			for (int i = 0; i < n; i++)
				if (i != skip)
					store_arg(&a, (enum store_slot)STORE_SLOT(s, i), "x");
			assert_int_equal(store_args_vec(&a, &v, err, sizeof err), -1);
			assert_null(v.argv);
			assert_non_null(strstr(err, skip < sc->nkeys ? sc->keys[skip] :
			    sc->args[skip - sc->nkeys]));
			assert_non_null(strstr(err, "missing"));
		}
	}
}

/* A slot of another script, one set twice, NULL, or a list where the
 * script takes none: refused. */
static void
test_misplaced_argument_refused(void **state)
{
	struct store_args a;
	struct store_vec v;
	char err[160];
	const char *ids[] = {"1-0"};
	struct store_keys k;

	(void)state;
	assert_int_equal(store_keys_init(&k, "w", "c1"), 0);
	store_args_init(&a, STORE_REDISPATCH);
	store_arg(&a, STORE_REDISPATCH_JOBS, "j");
	store_arg(&a, STORE_REDISPATCH_GROUP, "g");
	store_arg(&a, STORE_REDISPATCH_CONSUMER, "c");
	store_arg(&a, STORE_CLAIM_MODE, "own");		/* slot 3 of claim, not of redispatch */
	assert_int_equal(store_args_vec(&a, &v, err, sizeof err), -1);
	assert_non_null(strstr(err, "claim.mode"));

	store_args_init(&a, STORE_PROMOTE);
	store_arg(&a, STORE_PROMOTE_SCHEDULED, "s");
	store_arg(&a, STORE_PROMOTE_JOBS, "j");
	store_arg_ll(&a, STORE_PROMOTE_LIMIT, 64);
	store_arg_ll(&a, STORE_PROMOTE_LIMIT, 65);
	assert_int_equal(store_args_vec(&a, &v, err, sizeof err), -1);
	assert_non_null(strstr(err, "promote.limit"));

	store_args_init(&a, STORE_TRIM);
	store_arg(&a, STORE_TRIM_JOBS, NULL);
	assert_int_equal(store_args_vec(&a, &v, err, sizeof err), -1);

	store_args_init(&a, STORE_TRIM);
	store_arg(&a, STORE_TRIM_JOBS, "j");
	store_arg_rest(&a, ids, 1);
	assert_int_equal(store_args_vec(&a, &v, err, sizeof err), -1);

	store_args_init(&a, STORE_TRIM);	/* trim names no group */
	store_args_consumer(&a, &k, "g", "c");
	assert_int_equal(store_args_vec(&a, &v, err, sizeof err), -1);
	assert_non_null(strstr(err, "trim"));
}

/* The three every consumer script names, set by their names. */
static void
test_consumer_args(void **state)
{
	static const enum store_script_id scripts[] = {STORE_CLAIM, STORE_RENEW, STORE_REDISPATCH,
	    STORE_TRANSITION};
	struct store_keys k;

	(void)state;
	assert_int_equal(store_keys_init(&k, "w", "c1"), 0);
	for (size_t i = 0; i < sizeof scripts / sizeof scripts[0]; i++) {
		struct store_args a;
		store_args_init(&a, scripts[i]);
		store_args_consumer(&a, &k, "g", "c1");
		assert_int_equal(a.bad, 0);
		const struct store_script *sc = &store_scripts[scripts[i]];
		for (int s = 0; s < sc->nkeys + sc->nargs; s++) {
			const char *n = s < sc->nkeys ? sc->keys[s] : sc->args[s - sc->nkeys];
			const char *want = strcmp(n, "jobs") == 0 ? "w:jobs" :
			    strcmp(n, "group") == 0 ? "g" : strcmp(n, "consumer") == 0 ? "c1" : NULL;
			if (want)
				assert_string_equal(a.v[s], want);
			else
				assert_null(a.v[s]);
		}
	}
}

/* renew's ids follow the fixed arguments; numbers and flags are text. */
static void
test_rest_and_numbers(void **state)
{
	const char *ids[] = {"1-0", "2-0", "3-0"};
	struct store_args a;
	struct store_vec v;
	char err[160];

	(void)state;
	store_args_init(&a, STORE_RENEW);
	store_arg(&a, STORE_RENEW_CONSUMER, "me");
	store_arg(&a, STORE_RENEW_GROUP, "g");
	store_arg(&a, STORE_RENEW_JOBS, "p:jobs");
	store_arg_rest(&a, ids, 3);
	assert_int_equal(store_args_vec(&a, &v, err, sizeof err), 0);
	assert_int_equal(v.argc, STORE_VEC_HEAD + 3 + 3);
	const char *want[] = {"FCALL", "warrantd_renew", "1", "p:jobs", "g", "me",
	    "1-0", "2-0", "3-0"};
	for (int i = 0; i < v.argc; i++)
		assert_string_equal(v.argv[i], want[i]);
	store_vec_free(&v);

	store_args_init(&a, STORE_PROMOTE);
	store_arg(&a, STORE_PROMOTE_SCHEDULED, "s");
	store_arg(&a, STORE_PROMOTE_JOBS, "j");
	store_arg_ll(&a, STORE_PROMOTE_LIMIT, -1234567890123LL);
	assert_int_equal(store_args_vec(&a, &v, err, sizeof err), 0);
	assert_string_equal(v.argv[STORE_VEC_HEAD + 2], "-1234567890123");
	store_vec_free(&v);
}

static const char *
arg_of(const struct store_vec *v, int slot)
{
	return v->argv[STORE_VEC_HEAD + (slot & 0xff)];
}

/* store_transition_args sets every slot, each from its field. */
static void
test_transition_args(void **state)
{
	struct store_keys k;
	struct store_transition t = {
		.hash_key = "w:decision:r1", .stream_id = "5-0", .record_id = "r1",
		.state = "dead", .outcome = "max-attempts", .detail = "d", .http_status = "503",
		.fence_attempts = 7, .require_owner = 1, .ack = 1, .dead_reason = "max-attempts",
		.notify = 1, .notify_owner = "o", .notify_kind = "dead", .on_behalf_of = "u",
		.action = "a", .resource = "r", .schedule_score = "", .deliveries = 3,
		.attempt = 7, .at = "2026-01-01T00:00:00Z", .retain_ms = 1000, .dead_maxlen = 10,
		.notify_maxlen = 20, .skip_lease = 1, .keep_unpending = 1,
		.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	};
	struct store_args a;
	struct store_vec v;
	char err[160];

	(void)state;
	assert_int_equal(store_keys_init(&k, "w", "c1"), 0);
	store_transition_args(&k, "g", "c1", 99, &t, &a);
	assert_int_equal(store_args_vec(&a, &v, err, sizeof err), 0);
	assert_string_equal(arg_of(&v, STORE_TRANSITION_HASH), "w:decision:r1");
	/* R4's mark of the record, made by store.c from the record id */
	assert_string_equal(arg_of(&v, STORE_TRANSITION_FINAL), "w:final:r1");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_DEAD), "w:dead");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_NOTIFY), "w:notify");
	/* issue 27 item 5: a key the call does not touch is not named (a
	 * missing one stalls a slot migration): the stream stands in */
	assert_string_equal(arg_of(&v, STORE_TRANSITION_SCHEDULED), "w:jobs");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_FENCE), "7");
	/* has_hash, ack, notify_write, require_owner, keep_unpending and
	 * final_write (dead is terminal); no lease check, no HINCRBY */
	assert_string_equal(arg_of(&v, STORE_TRANSITION_FLAGS), "207");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_AUDIT_MAXLEN), "99");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_NOTIFY_MAXLEN), "20");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_HTTP_STATUS), "503");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_RETAIN_MS), "1000");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_ATTEMPT), "7");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_DELIVERIES), "3");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_RESOURCE), "r");
	/* §13: the entry's trace goes into the audit entries */
	assert_string_equal(arg_of(&v, STORE_TRANSITION_TRACEPARENT),
	    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
	store_vec_free(&v);

	/* What the script will not read is "" (a batch leaves trailing ones
	 * out): the attempt HINCRBY makes, deliveries without a dead letter,
	 * the notification's fields without one, no retention. */
	t.incr_attempts = 1;
	t.dead_reason = "";
	t.notify = 0;
	t.retain_ms = 0;
	t.traceparent = NULL;
	store_transition_args(&k, "g", "c1", 99, &t, &a);
	assert_int_equal(store_args_vec(&a, &v, err, sizeof err), 0);
	assert_string_equal(arg_of(&v, STORE_TRANSITION_ATTEMPT), "");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_DELIVERIES), "");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_RETAIN_MS), "");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_NOTIFY_OWNER), "");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_NOTIFY_KIND), "");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_ON_BEHALF_OF), "");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_ACTION), "");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_RESOURCE), "");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_STATE), "dead");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_DEAD), "w:jobs");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_NOTIFY), "w:jobs");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_TRACEPARENT), "");
	store_vec_free(&v);
	t.schedule_score = "1700000000000";
	store_transition_args(&k, "g", "c1", 99, &t, &a);
	assert_int_equal(store_args_vec(&a, &v, err, sizeof err), 0);
	assert_string_equal(arg_of(&v, STORE_TRANSITION_SCHEDULED), "w:scheduled");
	store_vec_free(&v);
	t.schedule_score = "";

	/* Only a terminal state is written as P:final: not "retrying", nor a
	 * name that is part of one ("don"), nor no state at all. */
	static const struct {
		const char *state;
		int final;
	} states[] = {{"done", 1}, {"expired", 1}, {"retrying", 0}, {"running", 0},
	    {"don", 0}, {"one", 0}, {"", 0}, {NULL, 0}};
	t.incr_attempts = 0;
	t.keep_unpending = 0;
	t.require_owner = 0;
	t.ack = 0;
	t.skip_lease = 0;
	for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
		t.state = states[i].state;
		store_transition_args(&k, "g", "c1", 99, &t, &a);
		assert_int_equal(store_args_vec(&a, &v, err, sizeof err), 0);
		assert_string_equal(arg_of(&v, STORE_TRANSITION_FLAGS),
		    states[i].final ? "161" : "33");	/* has_hash, check_lease */
		/* the mark is named only with the write that sets it */
		assert_string_equal(arg_of(&v, STORE_TRANSITION_FINAL),
		    states[i].final ? "w:final:r1" : "w:jobs");
		store_vec_free(&v);
	}

	/* An id too long for the mark's key: the call is refused, never sent
	 * with a mark cut short. */
	char longid[STORE_KEY_MAX + 80];
	memset(longid, 'i', sizeof longid - 1);
	longid[sizeof longid - 1] = '\0';
	t.record_id = longid;
	t.state = "done";
	store_transition_args(&k, "g", "c1", 99, &t, &a);
	assert_int_equal(store_args_vec(&a, &v, err, sizeof err), -1);
	assert_non_null(strstr(err, "key final is missing"));

	/* No hash: the stream stands in (never a key that may not exist),
	 * has_hash is 0, NULL strings are "". */
	memset(&t, 0, sizeof t);
	t.fence_attempts = -1;
	store_transition_args(&k, "g", "c1", 99, &t, &a);
	assert_int_equal(store_args_vec(&a, &v, err, sizeof err), 0);
	assert_string_equal(arg_of(&v, STORE_TRANSITION_HASH), "w:jobs");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_FINAL), "w:jobs");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_DEAD), "w:jobs");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_FENCE), "-1");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_STATE), "");
	assert_string_equal(arg_of(&v, STORE_TRANSITION_FLAGS), "32");	/* the lease check */
	store_vec_free(&v);
}

/* Each STORE_TF_ bit is the one transition.lua takes apart under its name
 * ("local ack = f % 4 >= 2"), and each name is read there. */
static void
test_transition_flags_match_script(void **state)
{
	static const struct {
		const char *name;
		int bit;
	} flags[] = {
		{"has_hash", STORE_TF_HAS_HASH}, {"ack", STORE_TF_ACK},
		{"notify_write", STORE_TF_NOTIFY_WRITE}, {"require_owner", STORE_TF_REQUIRE_OWNER},
		{"incr_attempts", STORE_TF_INCR_ATTEMPTS}, {"check_lease", STORE_TF_CHECK_LEASE},
		{"keep_unpending", STORE_TF_KEEP_UNPENDING}, {"final_write", STORE_TF_FINAL_WRITE},
		{"call_result", STORE_TF_CALL_RESULT},
	};
	char *text = read_lua("transition");
	int all = 0;

	(void)state;
	for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
		char want[96], use[64];
		snprintf(want, sizeof want, "\nlocal %s = f %% %d >= %d\n", flags[i].name,
		    2 * flags[i].bit, flags[i].bit);
		assert_non_null(strstr(text, want));
		snprintf(use, sizeof use, "%s ", flags[i].name);
		const char *after = strstr(text, want) + strlen(want);
		assert_non_null(strstr(after, use));
		assert_int_equal(all & flags[i].bit, 0);
		all |= flags[i].bit;
	}
	assert_int_equal(all, 511);
	free(text);
}

/* Two transitions of one batch: the same keys and limits, their own hash,
 * stream id, state, fence... */
static void
two_transitions(struct store_keys *k, struct store_args a[2])
{
	struct store_transition t[2] = {
		{.hash_key = "w:decision:r1", .stream_id = "5-0", .record_id = "r1",
		 .state = "running", .fence_attempts = -1, .incr_attempts = 1, .attempt = 1,
		 .at = "2026-01-01T00:00:00Z", .dead_maxlen = 10, .notify_maxlen = 20},
		{.hash_key = "w:decision:r2", .stream_id = "6-0", .record_id = "r2",
		 .state = "done", .fence_attempts = 3, .require_owner = 1, .ack = 1, .attempt = 3,
		 .http_status = "204", .at = "2026-01-01T00:00:01Z", .retain_ms = 1000,
		 .dead_maxlen = 10, .notify_maxlen = 20, .keep_unpending = 1},
	};

	assert_int_equal(store_keys_init(k, "w", "c1"), 0);
	for (int i = 0; i < 2; i++)
		store_transition_args(k, "g", "c1", 99, &t[i], &a[i]);
}

/* The bulk strings of a batch's pieces, read back: up to max of them into
 * argv (pointers into buf, NUL-terminated there); their number. Fails the
 * test on anything but well-formed RESP bulk strings. */
static int
parts_read(const struct iovec *parts, size_t nparts, char *buf, size_t bufsize, char **argv,
	   int max)
{
	size_t len = 0;
	int n = 0;

	for (size_t i = 0; i < nparts; i++) {
		assert_true(len + parts[i].iov_len < bufsize);
		assert_true(parts[i].iov_len > 0);
		memcpy(buf + len, parts[i].iov_base, parts[i].iov_len);
		len += parts[i].iov_len;
	}
	for (size_t at = 0; at < len; n++) {
		char *end;
		assert_true(n < max);
		assert_int_equal(buf[at], '$');
		unsigned long vlen = strtoul(buf + at + 1, &end, 10);
		assert_memory_equal(end, "\r\n", 2);
		argv[n] = end + 2;
		assert_true((size_t)(argv[n] - buf) + vlen + 2 <= len);
		assert_memory_equal(argv[n] + vlen, "\r\n", 2);
		argv[n][vlen] = '\0';
		at = (size_t)(argv[n] - buf) + vlen + 2;
	}
	return n;
}

/* The batch form's arguments: the shared keys once, then each item's own
 * keys, the shared arguments once, then each item's own arguments, every
 * one in header order -- the order the generated Lua reads them in; a
 * lone call is the plain script's, in header order. */
static void
test_batch_layout(void **state)
{
	const struct store_script *sc = &store_scripts[STORE_TRANSITION];
	struct store_keys k;
	struct store_args a[2];
	struct store_batch b = {0};
	struct store_vec one[2];
	struct iovec parts[STORE_BATCH_PARTS];
	static char buf[1 << 14];
	char *argv[2 * STORE_SLOTS_MAX], err[160];
	int nslot = sc->nkeys + sc->nargs, shared_keys = 0, shared_args = 0, own_keys = 0;
	int own_args = 0, nkeys, argc;

	(void)state;
	assert_non_null(sc->batch);
	assert_non_null(sc->shared);
	two_transitions(&k, a);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(store_args_vec(&a[i], &one[i], err, sizeof err), 0);
		assert_int_equal(store_batch_add(&b, &a[i], err, sizeof err), 0);
	}
	assert_int_equal(b.n, 2);
	for (int i = 0; i < nslot; i++) {
		if (i < sc->nkeys) {
			shared_keys += sc->shared[i];
			own_keys += !sc->shared[i];
		} else {
			shared_args += sc->shared[i];
			own_args += !sc->shared[i];
		}
	}
	/* the hash and its P:final are each item's; key names, group,
	 * consumer and limits shared */
	assert_int_equal(own_keys, 2);
	assert_int_equal(sc->shared[STORE_TRANSITION_HASH & 0xff], 0);
	assert_int_equal(sc->shared[STORE_TRANSITION_FINAL & 0xff], 0);
	assert_int_equal(sc->shared[STORE_TRANSITION_STREAM_ID & 0xff], 0);
	assert_int_equal(sc->shared[STORE_TRANSITION_CONSUMER & 0xff], 1);
	assert_int_equal(sc->shared[STORE_TRANSITION_TERMINAL & 0xff], 1);

	/* each item sends its own arguments up to the last that is not
	 * empty: the start (no status, no retention...) fewer than the end */
	int sent[2];
	for (int item = 0; item < 2; item++) {
		sent[item] = own_args;
		while (sent[item] > 0 &&
		    one[item].argv[STORE_VEC_HEAD + nslot - own_args + sent[item] - 1][0] == '\0')
			sent[item]--;
	}
	assert_true(sent[0] < sent[1]);
	assert_true(sent[1] < own_args);

	size_t np = store_batch_parts(&b, parts, &nkeys, &argc);
	assert_true(np >= 1 && np <= STORE_BATCH_GROUPS);
	assert_int_equal(parts_read(parts, np, buf, sizeof buf, argv, 2 * STORE_SLOTS_MAX), argc);
	assert_int_equal(argc, shared_keys + 2 * own_keys + shared_args + 2 + sent[0] + sent[1]);
	assert_int_equal(nkeys, shared_keys + 2 * own_keys);
	int at = 0;
	for (int pass = 0; pass < 4; pass++) {	/* shared keys, own keys, shared args, own args */
		int keys = pass < 2, shared = pass % 2 == 0;
		for (int item = 0; item < (shared ? 1 : 2); item++) {
			int left = sent[item];
			if (pass == 3) {
				char count[8];
				snprintf(count, sizeof count, "%d", sent[item]);
				assert_string_equal(argv[at++], count);
			}
			for (int i = keys ? 0 : sc->nkeys; i < (keys ? sc->nkeys : nslot); i++)
				if (sc->shared[i] == shared && (pass < 3 || left-- > 0))
					assert_string_equal(argv[at++], one[item].argv[STORE_VEC_HEAD + i]);
		}
	}
	assert_int_equal(at, argc);

	/* one call alone: the plain script's keys and arguments, in header
	 * order, without its trailing empty ones; again after the batch was
	 * emptied, its buffers reused */
	for (int round = 0; round < 2; round++) {
		store_batch_clear(&b);
		assert_int_equal(b.n, 0);
		assert_int_equal(store_batch_add(&b, &a[round], err, sizeof err), 0);
		np = store_batch_parts(&b, parts, &nkeys, &argc);
		assert_int_equal(nkeys, sc->nkeys);
		assert_int_equal(argc, nslot - own_args + sent[round]);
		assert_int_equal(parts_read(parts, np, buf, sizeof buf, argv, 2 * STORE_SLOTS_MAX),
		    argc);
		for (int i = 0; i < argc; i++)
			assert_string_equal(argv[i], one[round].argv[STORE_VEC_HEAD + i]);
	}
	store_batch_clear(&b);
	assert_int_equal(store_batch_parts(&b, parts, &nkeys, &argc), 0);
	store_batch_release(&b);
	for (int i = 0; i < 2; i++)
		store_vec_free(&one[i]);
}

/* The load's batch form: an item has a key and no argument of its own, so
 * each item's arguments are the count 0 alone; three loads are the three
 * hashes, max_bytes once, and three zeros. */
static void
test_load_batch_layout(void **state)
{
	const struct store_script *sc = &store_scripts[STORE_LOAD];
	static const char *const hashes[] = {"P:decision:a", "P:decision:b", "P:decision:c"};
	static const char *const want[] = {"P:decision:a", "P:decision:b", "P:decision:c",
	    "16384", "0", "0", "0"};
	struct store_batch b = {0};
	struct store_args a;
	struct iovec parts[STORE_BATCH_PARTS];
	static char buf[1 << 12];
	char *argv[16], err[160];
	int nkeys, argc;

	(void)state;
	assert_non_null(sc->batch);
	assert_int_equal(sc->shared[STORE_LOAD_HASH & 0xff], 0);
	assert_int_equal(sc->shared[STORE_LOAD_MAX_BYTES & 0xff], 1);
	for (int i = 0; i < 3; i++) {
		store_args_init(&a, STORE_LOAD);
		store_arg(&a, STORE_LOAD_HASH, hashes[i]);
		store_arg_ll(&a, STORE_LOAD_MAX_BYTES, 16384);
		assert_int_equal(store_batch_add(&b, &a, err, sizeof err), 0);
	}
	size_t np = store_batch_parts(&b, parts, &nkeys, &argc);
	assert_int_equal(nkeys, 3);
	assert_int_equal(argc, 7);
	assert_int_equal(parts_read(parts, np, buf, sizeof buf, argv, 16), argc);
	for (int i = 0; i < argc; i++)
		assert_string_equal(argv[i], want[i]);
	/* alone: the plain script's key and argument */
	store_batch_clear(&b);
	assert_int_equal(store_batch_add(&b, &a, err, sizeof err), 0);
	np = store_batch_parts(&b, parts, &nkeys, &argc);
	assert_int_equal(nkeys, 1);
	assert_int_equal(argc, 2);
	assert_int_equal(parts_read(parts, np, buf, sizeof buf, argv, 16), argc);
	assert_string_equal(argv[0], "P:decision:c");
	assert_string_equal(argv[1], "16384");
	store_batch_release(&b);
}

/* The batch form's Lua: the shared names as locals on line 1, the rest as
 * the parameters of the per-item function on line 2, then the script's own
 * lines from line 3 (so an error's line number is the file's), each item
 * run under pcall. */
static void
test_batch_body(void **state)
{
	const struct store_script *sc = &store_scripts[STORE_TRANSITION];
	char l1[4096], l2[4096], want[4096] = "local function one(";
	int nslot = sc->nkeys + sc->nargs, first = 1;

	(void)state;
	line_of(sc->batch, 1, l1, sizeof l1);
	line_of(sc->batch, 2, l2, sizeof l2);
	for (int i = 0; i < nslot; i++) {
		const char *name = i < sc->nkeys ? sc->keys[i] : sc->args[i - sc->nkeys];
		char local[96];
		snprintf(local, sizeof local, "%s_%s", i < sc->nkeys ? "K" : "A", name);
		if (sc->shared[i]) {
			assert_non_null(strstr(l1, local));
			continue;
		}
		strcat(want, first ? "" : ", ");
		strcat(want, local);
		first = 0;
	}
	strcat(want, ")");
	assert_string_equal(l2, want);
	const char *body = strchr(strchr(sc->body, '\n') + 1, '\n') + 1;
	const char *batch = strchr(strchr(sc->batch, '\n') + 1, '\n') + 1;
	assert_memory_equal(batch, body, strlen(body));
	assert_non_null(strstr(batch + strlen(body),
	    "pcall(one, KEYS[k + 1], KEYS[k + 2], unpack(ARGV, a + 2, a + 1 + n))"));
	/* scripts without a "-- BATCH:" line have no batch form */
	for (int s = 0; s < STORE_NSCRIPTS; s++) {
		char *text = read_lua(store_scripts[s].name), l3[2048];
		line_of(text, 3, l3, sizeof l3);
		assert_int_equal(store_scripts[s].batch != NULL, strncmp(l3, "-- BATCH:", 9) == 0);
		assert_int_equal(store_scripts[s].shared != NULL, store_scripts[s].batch != NULL);
		free(text);
	}
}

/* Only calls that agree on every shared slot share a batch (1: send the
 * batch first); a batch holds STORE_BATCH_MAX calls at most; a call with a
 * slot missing or misplaced, with a list, or of a script without a batch
 * form is refused (-1) and leaves the batch as it was. */
static void
test_batch_refusals(void **state)
{
	struct store_keys k;
	struct store_args a[2], other;
	struct store_batch b = {0}, lone = {0};
	char err[160];
	const char *ids[] = {"1-0"};

	(void)state;
	two_transitions(&k, a);
	assert_int_equal(store_batch_add(&b, &a[0], err, sizeof err), 0);
	assert_int_equal(store_batch_add(&b, &a[1], err, sizeof err), 0);
	store_args_init(&other, STORE_TRANSITION);
	for (int i = 0; i < STORE_SLOTS_MAX; i++)
		other.v[i] = a[1].v[i];
	other.v[STORE_TRANSITION_CONSUMER & 0xff] = "c2";
	assert_int_equal(store_batch_add(&b, &other, err, sizeof err), 1);
	other.v[STORE_TRANSITION_CONSUMER & 0xff] = "c1";
	other.v[STORE_TRANSITION_AUDIT_MAXLEN & 0xff] = "98";	/* a reload changed it */
	assert_int_equal(store_batch_add(&b, &other, err, sizeof err), 1);
	other.v[STORE_TRANSITION_AUDIT_MAXLEN & 0xff] = "990";	/* not a prefix either */
	assert_int_equal(store_batch_add(&b, &other, err, sizeof err), 1);
	other.v[STORE_TRANSITION_AUDIT_MAXLEN & 0xff] = "9";	/* nor shorter */
	assert_int_equal(store_batch_add(&b, &other, err, sizeof err), 1);
	assert_int_equal(b.n, 2);
	other.v[STORE_TRANSITION_AUDIT_MAXLEN & 0xff] = a[0].v[STORE_TRANSITION_AUDIT_MAXLEN & 0xff];
	other.v[STORE_TRANSITION_STREAM_ID & 0xff] = "9-0";	/* its own: fits */
	assert_int_equal(store_batch_add(&b, &other, err, sizeof err), 0);
	assert_int_equal(b.n, 3);
	other.v[STORE_TRANSITION_DETAIL & 0xff] = NULL;
	assert_int_equal(store_batch_add(&b, &other, err, sizeof err), -1);
	assert_non_null(strstr(err, "detail is missing"));
	assert_int_equal(store_batch_add(&lone, &other, err, sizeof err), -1);
	assert_int_equal(lone.n, 0);
	other.v[STORE_TRANSITION_DETAIL & 0xff] = "";
	store_arg(&other, STORE_TRIM_JOBS, "w:jobs");	/* another script's slot */
	assert_int_equal(store_batch_add(&b, &other, err, sizeof err), -1);
	assert_non_null(strstr(err, "not its own"));
	other.bad = 0;
	store_arg_rest(&other, ids, 1);
	assert_int_equal(store_batch_add(&b, &other, err, sizeof err), -1);
	assert_non_null(strstr(err, "list"));
	assert_int_equal(b.n, 3);
	while (b.n < STORE_BATCH_MAX)
		assert_int_equal(store_batch_add(&b, &a[1], err, sizeof err), 0);
	assert_int_equal(store_batch_add(&b, &a[1], err, sizeof err), 1);	/* full */
	assert_int_equal(b.n, STORE_BATCH_MAX);
	store_args_init(&other, STORE_TRIM);
	store_arg(&other, STORE_TRIM_JOBS, "w:jobs");
	assert_int_equal(store_batch_add(&lone, &other, err, sizeof err), -1);
	assert_non_null(strstr(err, "no batch form"));
	assert_int_equal(lone.n, 0);
	store_batch_release(&b);
	store_batch_release(&lone);
}

/* A gathered call keeps its own copy of every string. */
static void
test_batch_copies(void **state)
{
	struct store_args a;
	struct store_batch b = {0};
	struct iovec parts[STORE_BATCH_PARTS];
	char hash[] = "w:decision:r9", sid[] = "7-1", err[160], buf[4096];
	char *argv[STORE_SLOTS_MAX];
	struct store_keys k;
	int nkeys, argc;

	(void)state;
	assert_int_equal(store_keys_init(&k, "w", "c1"), 0);
	struct store_transition t = {.hash_key = hash, .stream_id = sid, .fence_attempts = -1};
	store_transition_args(&k, "g", "c1", 5, &t, &a);
	assert_int_equal(store_batch_add(&b, &a, err, sizeof err), 0);
	hash[0] = 'X';
	sid[0] = 'X';
	memset(&a, 0, sizeof a);
	size_t np = store_batch_parts(&b, parts, &nkeys, &argc);
	assert_int_equal(parts_read(parts, np, buf, sizeof buf, argv, STORE_SLOTS_MAX), argc);
	assert_string_equal(argv[STORE_TRANSITION_HASH & 0xff], "w:decision:r9");
	assert_string_equal(argv[STORE_TRANSITION_STREAM_ID & 0xff], "7-1");
	assert_string_equal(argv[STORE_TRANSITION_AUDIT_MAXLEN & 0xff], "5");
	store_batch_release(&b);
}

/* Every reply code has a unique name that parses back, and every code a
 * script returns ({0|1, 'word', ...}) is one of them. Scripts whose
 * replies are sentences for people (warrantctl's requeue and cancel) are
 * exempt. */
static void
test_replies_map_back(void **state)
{
	int seen[STORE_REPLY_COUNT] = {0};

	(void)state;
	for (int i = 0; i < STORE_REPLY_COUNT; i++) {
		enum store_reply back;
		assert_true(store_reply_name((enum store_reply)i)[0] != '\0');
		for (int k = 0; k < i; k++)
			assert_string_not_equal(store_reply_name((enum store_reply)i),
			    store_reply_name((enum store_reply)k));
		assert_int_equal(store_reply_parse(store_reply_name((enum store_reply)i), &back), 0);
		assert_int_equal(back, i);
		assert_true(store_reply_is(store_reply_name((enum store_reply)i), back));
	}
	assert_false(store_reply_is(NULL, STORE_REPLY_OK));
	assert_false(store_reply_is("nonsense", STORE_REPLY_OK));
	for (int s = 0; s < STORE_NSCRIPTS; s++) {
		const char *p = store_scripts[s].body;
		while ((p = strstr(p, "return {")) != NULL) {
			p += strlen("return {");
			if ((*p != '0' && *p != '1') || strncmp(p + 1, ", '", 3) != 0)
				continue;
			char word[64];
			size_t n = strcspn(p + 4, "'");
			assert_true(n < sizeof word);
			memcpy(word, p + 4, n);
			word[n] = '\0';
			if ((s == STORE_REQUEUE || s == STORE_CANCEL) && strchr(word, ' ') != NULL)
				continue;
			enum store_reply r;
			if (store_reply_parse(word, &r) != 0)
				fail_msg("%s.lua returns '%s', not a store_reply", store_scripts[s].name,
				    word);
			seen[r] = 1;
		}
	}
	for (int i = 0; i < STORE_REPLY_COUNT; i++)
		if (!seen[i])
			fail_msg("no script returns '%s'", store_reply_name((enum store_reply)i));
}

/* The decision key of the longest prefix and id: ejob builds it on the stack
 * in a buffer of STORE_KEY_MAX + RECORD_ID_MAX + 1 at every read and
 * transition, so it must fit there, and a buffer a byte short is refused. */
static void
test_decision_key_longest(void **state)
{
	struct store_keys k;
	char prefix[STORE_KEY_MAX], id[RECORD_ID_MAX + 1], want[STORE_KEY_MAX + RECORD_ID_MAX + 1];
	char buf[STORE_KEY_MAX + RECORD_ID_MAX + 1];
	size_t plen = STORE_KEY_MAX - 1 - strlen(":decision:");

	(void)state;
	memset(prefix, 'p', plen);
	prefix[plen] = '\0';
	assert_int_equal(store_keys_init(&k, prefix, "c"), -1);	/* "<prefix>:consumer:c" */
	plen = STORE_KEY_MAX - 1 - strlen(":consumer:c");
	prefix[plen] = '\0';
	assert_int_equal(store_keys_init(&k, prefix, "c"), 0);
	memset(id, 'i', RECORD_ID_MAX);
	id[RECORD_ID_MAX] = '\0';
	snprintf(want, sizeof want, "%s%s", k.decision_prefix, id);
	size_t len = strlen(want);
	assert_true(len < sizeof buf);
	assert_int_equal(store_decision_key(&k, id, buf, sizeof buf), 0);
	assert_string_equal(buf, want);
	assert_int_equal(store_decision_key(&k, id, buf, len + 1), 0);
	assert_string_equal(buf, want);
	assert_int_equal(store_decision_key(&k, id, buf, len), -1);
	assert_int_equal(store_decision_key(&k, "", buf, strlen(k.decision_prefix)), -1);
	assert_int_equal(store_decision_key(&k, "", buf, strlen(k.decision_prefix) + 1), 0);
	assert_string_equal(buf, k.decision_prefix);
	assert_int_equal(store_decision_key(&k, id, buf, 0), -1);
	/* P:final:<id> is shorter ("final:"), so it fits wherever that does;
	 * one byte short is refused as well */
	snprintf(want, sizeof want, "%s%s", k.final_prefix, id);
	assert_non_null(strstr(want, ":final:"));
	len = strlen(want);
	assert_int_equal(store_final_key(&k, id, buf, sizeof buf), 0);
	assert_string_equal(buf, want);
	assert_int_equal(store_final_key(&k, id, buf, len), -1);
}

/* The P:dead entry the transition writes has exactly store_dead_fields. */
static void
test_dead_fields_match_script(void **state)
{
	const char *body = store_scripts[STORE_TRANSITION].body;
	const char *p = strstr(body, "redis.call('XADD', K_dead,");
	int n = 0, found[STORE_DEAD_NFIELDS] = {0};

	(void)state;
	assert_non_null(p);
	assert_null(strstr(strstr(p, "K_dead") + 1, "K_dead"));	/* one writer */
	const char *end = strchr(p, ')');
	p = strstr(p, "'*'");
	assert_non_null(p);
	assert_true(p < end);
	/* after '*' every quoted word is a field name; values are A.x */
	for (p += 3; (p = strchr(p, '\'')) != NULL && p < end; p += 1) {
		size_t len = strcspn(p + 1, "'");
		int k;
		for (k = 0; k < STORE_DEAD_NFIELDS; k++)
			if (strlen(store_dead_fields[k]) == len &&
			    strncmp(p + 1, store_dead_fields[k], len) == 0)
				break;
		if (k == STORE_DEAD_NFIELDS)
			fail_msg("P:dead field '%.*s' is not in store_dead_fields", (int)len, p + 1);
		assert_false(found[k]);
		found[k] = 1;
		n++;
		p += len + 1;
	}
	assert_int_equal(n, STORE_DEAD_NFIELDS);
	assert_null(store_dead_fields[STORE_DEAD_NFIELDS]);
}

/* The transition's terminal set is job.c's, and the script names no
 * terminal state itself. */
static void
test_terminal_from_job_table(void **state)
{
	struct store_keys k;
	struct store_transition t = {.fence_attempts = -1};
	struct store_args a;
	struct store_vec v;
	char err[160], want[128] = "", quoted[32];

	(void)state;
	for (int st = JOB_NONE; st <= JOB_CANCELLED; st++) {
		if (!job_state_terminal((enum job_state)st))
			continue;
		if (want[0])
			strcat(want, " ");
		strcat(want, job_state_name((enum job_state)st));
		snprintf(quoted, sizeof quoted, "'%s'", job_state_name((enum job_state)st));
		assert_null(strstr(store_scripts[STORE_TRANSITION].body, quoted));
	}
	assert_string_equal(want, "done expired denied failed dead cancelled");
	assert_int_equal(store_keys_init(&k, "w", "c1"), 0);
	store_transition_args(&k, "g", "c1", 1, &t, &a);
	assert_int_equal(store_args_vec(&a, &v, err, sizeof err), 0);
	/* with a space at each end, for the script's plain find */
	char padded[136];
	snprintf(padded, sizeof padded, " %s ", want);
	assert_string_equal(arg_of(&v, STORE_TRANSITION_TERMINAL), padded);
	store_vec_free(&v);
}

/* The library (luagen.sh): "#!lua name=warrantd" first, then each script's
 * body as the callback of warrantd_<name> (its batch form's as
 * warrantd_<name>_batch), registered with "no-writes" exactly when the
 * file says "-- FLAGS: no-writes" (and then called with FCALL_RO), and
 * last warrantd_version, returning STORE_LIBRARY_VERSION: the SHA-1 of
 * everything before it, so that any change of lua/ is a new version. */
static void
test_library_assembled(void **state)
{
	(void)state;
	const char *lib = store_library;

	assert_memory_equal(lib, "#!lua name=" STORE_LIBRARY_NAME "\n", 20);
	for (int s = 0; s < STORE_NSCRIPTS; s++) {
		const struct store_script *sc = &store_scripts[s];
		char head[256], *text = read_lua(sc->name), l[2048];
		int ro = 0;

		for (int k = 3; k <= 4; k++) {
			line_of(text, k, l, sizeof l);
			ro |= strcmp(l, "-- FLAGS: no-writes") == 0;
		}
		assert_int_equal(sc->read_only, ro);
		for (int form = 0; form < 2; form++) {
			const char *fn = form ? sc->batch_function : sc->function;
			const char *body = form ? sc->batch : sc->body;
			assert_int_equal(fn == NULL, body == NULL);
			if (fn == NULL)
				continue;
			snprintf(head, sizeof head, "redis.register_function{function_name = '%s', "
			    "callback = function(KEYS, ARGV)\n", fn);
			const char *at = strstr(lib, head);
			assert_non_null(at);
			at += strlen(head);
			assert_memory_equal(at, body, strlen(body));
			at += strlen(body);
			const char *end = ro ? "end, flags = {'no-writes'}}\n" : "end}\n";
			assert_memory_equal(at, end, strlen(end));
		}
		snprintf(head, sizeof head, "warrantd_%s", sc->name);
		assert_string_equal(sc->function, head);
		free(text);
	}
	/* the version: the last line, the SHA-1 of what precedes it */
	const char *last = strstr(lib, "redis.register_function{function_name = 'warrantd_version'");
	assert_non_null(last);
	assert_string_equal(last, "redis.register_function{function_name = 'warrantd_version', "
	    "callback = function() return '" STORE_LIBRARY_VERSION "' end, flags = {'no-writes'}}\n");
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	char hex[41];
	assert_int_equal(EVP_Digest(lib, (size_t)(last - lib), md, &mdlen, EVP_sha1(), NULL), 1);
	for (unsigned i = 0; i < 8; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	assert_string_equal(hex, STORE_LIBRARY_VERSION);
}

/* What the worker makes of the reply to FCALL_RO warrantd_version 0. */
static void
test_library_check(void **state)
{
	(void)state;
	assert_int_equal(store_library_check(0, STORE_LIBRARY_VERSION), STORE_LIBRARY_OK);
	assert_int_equal(store_library_check(0, "0123456789abcdef"), STORE_LIBRARY_WRONG);
	assert_int_equal(store_library_check(0, ""), STORE_LIBRARY_WRONG);
	assert_int_equal(store_library_check(1, "ERR Function not found"), STORE_LIBRARY_MISSING);
	assert_int_equal(store_library_check(1, "ERR unknown command 'FCALL_RO', with args "
	    "beginning with: 'warrantd_version' '0' "), STORE_LIBRARY_NO_FUNCTIONS);
	assert_int_equal(store_library_check(1, "NOPERM this user has no permissions to run "
	    "the 'fcall_ro' command"), STORE_LIBRARY_UNKNOWN);
	assert_int_equal(store_library_check(1, "LOADING Redis is loading the dataset in memory"),
	    STORE_LIBRARY_UNKNOWN);
	assert_int_equal(store_library_check(0, NULL), STORE_LIBRARY_UNKNOWN);
}

/* The quoted field names of notify()'s XADD in lua/shared.lua, after '*',
 * into names (at most max); returns how many. */
static int
lua_note_fields(char names[][32], int max)
{
	char *text = read_lua("shared"), *p = strstr(text, "local function notify(");
	int n = 0;

	assert_non_null(p);
	char *end = strstr(p, "\nend\n");
	assert_non_null(end);
	*end = '\0';
	p = strstr(p, "'*',");
	assert_non_null(p);
	for (p += 4; (p = strchr(p, '\'')) != NULL && n < max; n++) {
		char *q = strchr(p + 1, '\'');
		assert_non_null(q);
		assert_true(q - p - 1 < 32);
		snprintf(names[n], 32, "%.*s", (int)(q - p - 1), p + 1);
		p = q + 1;
	}
	free(text);
	return n;
}

/* §6, one owner of a notification's fields (issue 36 item 4): the Lua
 * side writes its P:notify entry in one place, notify() of lua/shared.lua,
 * which transition.lua and cancel.lua call (neither has a copy), and its
 * fields are the webhook body's (webhook_note_body), in the same order. */
static void
test_notify_fields_match_webhook_body(void **state)
{
	(void)state;
	char lua[16][32];
	int n = lua_note_fields(lua, 16);
	const struct webhook_note note = {"1", "2", "3", "4", "5", "6", "7", "8"};
	char *body = webhook_note_body(&note);
	json_t *o = json_loads(body, 0, NULL);
	const char *key;
	json_t *v;
	int i = 0;

	assert_non_null(o);
	assert_int_equal((int)json_object_size(o), n);
	json_object_foreach(o, key, v) {
		assert_true(i < n);
		assert_string_equal(key, lua[i]);
		i++;
	}
	json_decref(o);
	free(body);
	const char *users[] = {"transition", "cancel"};
	for (size_t u = 0; u < 2; u++) {
		char *text = read_lua(users[u]);
		assert_non_null(strstr(text, "notify(K.notify, "));
		assert_null(strstr(text, "'onBehalfOf'"));
		assert_null(strstr(text, "XADD', K.notify"));
		free(text);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_headers_match_table),
		cmocka_unit_test(test_library_assembled),
		cmocka_unit_test(test_library_check),
		cmocka_unit_test(test_notify_fields_match_webhook_body),
		cmocka_unit_test(test_prologue_and_body),
		cmocka_unit_test(test_args_by_name_positions),
		cmocka_unit_test(test_slot_enum_names),
		cmocka_unit_test(test_missing_argument_refused),
		cmocka_unit_test(test_misplaced_argument_refused),
		cmocka_unit_test(test_consumer_args),
		cmocka_unit_test(test_rest_and_numbers),
		cmocka_unit_test(test_transition_args),
		cmocka_unit_test(test_transition_flags_match_script),
		cmocka_unit_test(test_batch_layout),
		cmocka_unit_test(test_load_batch_layout),
		cmocka_unit_test(test_batch_body),
		cmocka_unit_test(test_batch_refusals),
		cmocka_unit_test(test_batch_copies),
		cmocka_unit_test(test_replies_map_back),
		cmocka_unit_test(test_decision_key_longest),
		cmocka_unit_test(test_dead_fields_match_script),
		cmocka_unit_test(test_terminal_from_job_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
