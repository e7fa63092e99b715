/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_trace: W3C Trace Context (warrantd(7) §13) with the real warrantd,
 * warrantctl, fake_target and fake_pdp. One redis, target, PDP and daemon.
 *
 * What is checked: a stream entry's `traceparent` reaches the PDP and the
 * target as the `traceparent` header, unchanged; every log line about the
 * job carries it; each of the job's P:audit entries records it. An entry
 * without one, or with one that is not W3C Trace Context, gets a new trace:
 * the PDP and the target see the same new one, two jobs two different ones,
 * and the audit records none. `warrantctl decide --traceparent` puts one in
 * the entry, and refuses one that is not.
 */
#define _DEFAULT_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "core/trace.h"

#define TP "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


static int
group_setup(void **state)
{
	(void)state;
	return h_pdp_world_start(&h_pdp, "/v1/data/warrant/allow", "");
}

/* A signed record stored, and a stream entry for it with `traceparent`
 * (NULL: none). */
static void
enqueue(const char *id, const char *traceparent)
{
	long long now = h_now_ms();

	h_store_signed(h_pdp.s.c, H_PREFIX, id, "gate.open", "gate/1", now + 60000, 0);
	redisReply *r = traceparent ?
	    redisCommand(h_pdp.s.c, "XADD %s * id %s traceparent %s", H_JOBS, id, traceparent) :
	    redisCommand(h_pdp.s.c, "XADD %s * id %s", H_JOBS, id);
	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_STRING);
	freeReplyObject(r);
}

static void
wait_done(const char *id)
{
	char key[256];

	snprintf(key, sizeof key, H_PREFIX ":decision:%s", id);
	h_wait_hash_field(h_pdp.s.c, key, "state", "done", H_WAIT_MS);
}

/* The `traceparent` header of the one PDP query and the one call for id;
 * caller frees. */
static char *
header_at(json_t *list, const char *what, const char *id)
{
	if (json_array_size(list) != 1)
		fail_msg("%s: %zu %s, want 1", id, json_array_size(list), what);
	const json_t *v = json_object_get(json_array_get(list, 0), "traceparent");
	char *s = json_is_string(v) ? strdup(json_string_value(v)) : NULL;
	json_decref(list);
	return s;
}

static char *
pdp_traceparent(const char *id)
{
	return header_at(h_pdp_queries(&h_pdp.pdp, id), "PDP queries", id);
}

static char *
target_traceparent(const char *id)
{
	return header_at(h_calls_with_key(&h_pdp.s.target, id), "calls", id);
}

struct audit_scan {
	const char *id;
	int entries, with;	/* of id; with a traceparent field */
	char seen[TRACE_LEN + 8];
};

static int
audit_add(const redisReply *fields, void *arg)
{
	struct audit_scan *a = arg;
	const char *id = h_entry_str(fields, "id"), *tp = h_entry_str(fields, "traceparent");

	if (id == NULL || strcmp(id, a->id) != 0)
		return 0;
	a->entries++;
	if (tp != NULL) {
		a->with++;
		snprintf(a->seen, sizeof a->seen, "%s", tp);
	}
	return 0;
}

/* The log lines about id (" id=ID "): how many, and how many of them
 * carry its trace right after the id (" id=ID traceparent=WANT "). */
static void
log_lines_of(const char *id, const char *want, int *lines, int *with)
{
	char *log = h_read_file(h_pdp.d.log), needle[128], tpneedle[160];

	assert_non_null(log);
	snprintf(needle, sizeof needle, " id=%s ", id);
	snprintf(tpneedle, sizeof tpneedle, " id=%s traceparent=%s ", id, want);
	*lines = *with = 0;
	for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
		if (strstr(line, needle) == NULL)
			continue;
		(*lines)++;
		*with += strstr(line, tpneedle) != NULL;
	}
	free(log);
}

/* §13: the entry's traceparent, unchanged, to the PDP and the target, in
 * every log line about the job and in each of its audit entries. */
static void
test_entry_traceparent_carried(void **state)
{
	const char *id = "tr-given";
	struct audit_scan a = { .id = id };
	int lines, with;

	(void)state;
	enqueue(id, TP);
	wait_done(id);
	char *p = pdp_traceparent(id), *t = target_traceparent(id);
	assert_non_null(p);
	assert_non_null(t);
	assert_string_equal(p, TP);
	assert_string_equal(t, TP);
	free(p);
	free(t);
	h_stream_each(h_pdp.s.c, H_AUDIT, audit_add, &a);
	assert_true(a.entries >= 2);	/* running, done */
	assert_int_equal(a.with, a.entries);
	assert_string_equal(a.seen, TP);
	log_lines_of(id, TP, &lines, &with);
	printf("    %s: %d audit entries, %d log lines, all with its traceparent\n", id,
	    a.entries, lines);
	assert_true(lines >= 3);	/* job.state, job.authz, job.call at least */
	assert_int_equal(with, lines);
}

/* None, or one that is not W3C: a new trace per job, the same for its
 * PDP query and its call; the audit records none. */
static void
test_new_trace_per_job(void **state)
{
	const char *ids[] = { "tr-none", "tr-bad" };
	char *seen[2];
	char out[TRACE_LEN + 1];

	(void)state;
	enqueue(ids[0], NULL);
	enqueue(ids[1], "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01");
	for (int i = 0; i < 2; i++) {
		struct audit_scan a = { .id = ids[i] };
		wait_done(ids[i]);
		char *p = pdp_traceparent(ids[i]);
		seen[i] = target_traceparent(ids[i]);
		assert_non_null(p);
		assert_non_null(seen[i]);
		assert_string_equal(p, seen[i]);
		assert_int_equal(trace_parse(seen[i], strlen(seen[i]), out), 0);
		assert_string_not_equal(seen[i], TP);
		free(p);
		h_stream_each(h_pdp.s.c, H_AUDIT, audit_add, &a);
		assert_true(a.entries >= 2);
		assert_int_equal(a.with, 0);
	}
	assert_string_not_equal(seen[0], seen[1]);
	assert_true(h_daemon_log_has(&h_pdp.d, "event=job.traceparent"));
	free(seen[0]);
	free(seen[1]);
}

static int
ctl_decide(const char *id, const char *traceparent)
{
	char *const argv[] = { (char *)h_bin("warrantctl"), "-c", h_pdp.d.ini, "decide",
	    "--on-behalf-of", "operator:4417", "--action", "gate.open", "--resource", "gate/2",
	    "--basis", "role:canal-operator", "--expires", "+1m", "--id", (char *)id,
	    "--traceparent", (char *)traceparent, "--key", (char *)h_data("test-es256.key"),
	    NULL };
	char *out = NULL;
	int st = h_run(argv, 20000, &out);

	free(out);
	return st;
}

/* warrantctl decide --traceparent: into the entry, so to the target; one
 * that is not W3C is a usage error and nothing is written. */
static void
test_warrantctl_decide_traceparent(void **state)
{
	(void)state;
	assert_int_equal(ctl_decide("tr-ctl", TP), 0);
	wait_done("tr-ctl");
	char *t = target_traceparent("tr-ctl");
	assert_non_null(t);
	assert_string_equal(t, TP);
	free(t);
	assert_int_equal(ctl_decide("tr-ctl-bad", "00-xyz"), 64);
	char *state_ = h_hget(h_pdp.s.c, H_PREFIX ":decision:tr-ctl-bad", "state");
	assert_null(state_);
}

static void
test_daemon_stops_clean(void **state)
{
	(void)state;
	h_daemon_down(&h_pdp.d);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_entry_traceparent_carried),
		cmocka_unit_test(test_new_trace_per_job),
		cmocka_unit_test(test_warrantctl_decide_traceparent),
		cmocka_unit_test(test_daemon_stops_clean),
	};

	return cmocka_run_group_tests(tests, group_setup, h_pdp_group_teardown);
}
