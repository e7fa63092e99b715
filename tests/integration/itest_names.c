/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_names: issue 38 item 1, one consumer name is one live process --
 * the real warrantd against a real redis-server and fake_target.
 *
 *   - a second worker started under the name of a running one refuses to
 *     start (event=consumer.name_taken, exit 73) while the first holds an
 *     entry in a slow call, and that entry is called exactly once;
 *   - a clean stop gives the name back (P:owner:<name>, the heartbeat hash
 *     and the P:consumers field are gone) and the next worker under the
 *     name starts at once, without waiting;
 *   - a SIGKILLed holder's claim is taken once its TTL (three heartbeats,
 *     by Redis' clock) ran out: a restart is never refused for good;
 *   - `warrantctl status` shows each name's owner, and a collision (the
 *     claim one instance's, the heartbeat another's) in its table and JSON.
 *
 * One redis-server and one fake_target for all; each test has its own key
 * prefix. Every wait is a condition with a timeout; processes are stopped
 * by PID (harness.h).
 */
#define _DEFAULT_SOURCE
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "harness.h"

#define WAIT_MS		30000
#define ACTION		"gate.open"
#define RESOURCE	"canal/lateral-3/gate-14"

static struct h_stack *const S = &h_group;
static struct h_daemon D[2];

static int
test_teardown(void **state)
{
	(void)state;
	for (int i = 0; i < 2; i++)
		if (D[i].pid > 0) {
			fprintf(stderr, "itest_names: killing leftover warrantd; log %s\n", D[i].log);
			h_daemon_kill(&D[i]);
		}
	return 0;
}

static struct h_daemon_opts
opts(const char *prefix, const char *consumer)
{
	struct h_daemon_opts o = {
		.redis_sock = S->redis.sock, .target_url = S->target.url, .prefix = prefix,
		.consumer = consumer,
	};
	return o;
}

static void
fake_reset(int delay_ms)
{
	char script[64];

	h_fake_reset(&S->target);
	snprintf(script, sizeof script, "{\"default\": {\"delay_ms\": %d}}", delay_ms);
	assert_int_equal(h_fake_script(&S->target, script), 0);
}

struct called {
	const char *id;
	long long n;
};

static int
called(void *arg)
{
	const struct called *c = arg;

	return h_count_calls(&S->target, c->id) >= c->n;
}

struct field {
	const char *prefix, *id, *name, *want;
};

static int
field_is(void *arg)
{
	const struct field *f = arg;
	char *v = h_record_field(S->c, f->prefix, f->id, f->name);
	int ok = v != NULL && strcmp(v, f->want) == 0;

	free(v);
	return ok;
}

/* Two workers, one name: the second exits 73 with one clear line while
 * the first is in a call; the entry is called once. */
static void
test_second_refused(void **state)
{
	const char *p = "nt", *id = "nt-0001";
	struct h_daemon_opts o = opts(p, "same");
	(void)state;

	fake_reset(1500);	/* under the action's timeout_ms of 2000 */
	h_store_signed(S->c, p, id, ACTION, RESOURCE, h_now_ms() + 600000, 1);
	h_daemon_up(&D[0], &o);
	struct called c = {id, 1};
	h_wait_for(called, &c, WAIT_MS, "the first worker's call");
	char *ini = h_daemon_ini(&o);
	assert_non_null(ini);
	assert_int_equal(h_daemon_spawn(&D[1], ini), 0);
	free(ini);
	int st = 0;
	if (h_wait_exit(D[1].pid, WAIT_MS, &st) != 0)
		fail_msg("the second worker under one name still runs (log %s)", D[1].log);
	D[1].pid = 0;
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 73);
	assert_true(h_daemon_log_has(&D[1], "event=consumer.name_taken consumer=same"));
	assert_false(h_daemon_log_has(&D[1], "event=consumer.ready"));
	struct field f = {p, id, "state", "done"};
	h_wait_for(field_is, &f, WAIT_MS, "the record done");
	assert_int_equal(h_count_calls(&S->target, id), 1);
	assert_true(h_daemon_log_clean(&D[1]));
	h_daemon_down(&D[0]);
}

/* A clean stop deletes the claim, the heartbeat and the liveness field;
 * the next worker under the name starts without waiting. */
static void
test_clean_stop_releases(void **state)
{
	const char *p = "nc";
	struct h_daemon_opts o = opts(p, "same");
	(void)state;

	fake_reset(0);
	h_daemon_up(&D[0], &o);
	assert_int_equal(h_redis_int(S->c, "EXISTS %s", h_key(p, "owner:same")), 1);
	h_daemon_down(&D[0]);
	assert_int_equal(h_redis_int(S->c, "EXISTS %s", h_key(p, "owner:same")), 0);
	assert_int_equal(h_redis_int(S->c, "EXISTS %s", h_key(p, "consumer:same")), 0);
	assert_int_equal(h_redis_int(S->c, "HEXISTS %s same", h_key(p, "consumers")), 0);
	h_daemon_up(&D[1], &o);
	assert_false(h_daemon_log_has(&D[1], "event=consumer.name_waiting"));
	h_daemon_down(&D[1]);
}

/* A SIGKILLed holder's claim runs out (three heartbeats of 500 ms): the
 * restart waits for it, then starts and runs what was queued. */
static void
test_stale_claim_taken(void **state)
{
	const char *p = "ns", *id = "ns-0001";
	struct h_daemon_opts o = opts(p, "same");
	(void)state;

	fake_reset(0);
	h_daemon_up(&D[0], &o);
	h_daemon_kill(&D[0]);
	assert_int_equal(h_redis_int(S->c, "EXISTS %s", h_key(p, "owner:same")), 1);
	long long t0 = h_now_ms();
	h_daemon_up(&D[1], &o);
	long long waited = h_now_ms() - t0;
	printf("itest_names: the restart under a killed holder's name was ready after %lld ms\n",
	    waited);
	assert_true(h_daemon_log_has(&D[1], "event=consumer.name_waiting consumer=same"));
	assert_true(h_daemon_log_has(&D[1], "event=consumer.name_claimed consumer=same"));
	h_store_signed(S->c, p, id, ACTION, RESOURCE, h_now_ms() + 600000, 1);
	struct field f = {p, id, "state", "done"};
	h_wait_for(field_is, &f, WAIT_MS, "the record done");
	h_daemon_down(&D[1]);
}

/* warrantctl -c ini ARGS: its exit, its output in *out (caller frees). */
static int
ctl(const char *ini, const char *a1, const char *a2, char **out)
{
	char *argv[] = {(char *)h_bin("warrantctl"), "-c", (char *)ini, (char *)a1, (char *)a2,
	    NULL};
	int rc = h_run(argv, WAIT_MS, out);

	printf("itest_names: warrantctl %s %s: exit %d\n%s", a1, a2 ? a2 : "", rc, *out);
	return rc;
}

/* The instance id the daemon logged with consumer.name_claimed. */
static void
claimed_instance(const struct h_daemon *d, char *buf, size_t n)
{
	char *log = h_read_file(d->log);
	const char *at = log ? strstr(log, "event=consumer.name_claimed") : NULL;

	at = at ? strstr(at, "instance=") : NULL;
	assert_non_null(at);
	snprintf(buf, n, "%.*s", (int)strcspn(at + 9, " \n"), at + 9);
	free(log);
}

static void
test_status_owner(void **state)
{
	const char *p = "nq";
	struct h_daemon_opts o = opts(p, "same");
	char inst[64], *out;
	(void)state;

	fake_reset(0);
	h_daemon_up(&D[0], &o);
	claimed_instance(&D[0], inst, sizeof inst);
	/* someone else's heartbeat under a claim that is not its own */
	assert_int_equal(h_redis_int(S->c, "HSET %s instance bbbb2222 host elsewhere pid 1",
	    h_key(p, "consumer:ghost")), 3);
	free(h_redis_str(S->c, "SET %s %s PX 60000", h_key(p, "owner:ghost"), "aaaa1111 1000"));
	assert_int_equal(ctl(D[0].ini, "status", "--json", &out), 0);
	json_error_t jerr;
	json_t *st = json_loads(out, 0, &jerr);
	assert_non_null(st);
	json_t *same = json_object_get(json_object_get(st, "consumers"), "same");
	json_t *ghost = json_object_get(json_object_get(st, "consumers"), "ghost");
	assert_string_equal(json_string_value(json_object_get(same, "owner")), inst);
	assert_true(json_is_false(json_object_get(same, "collision")));
	assert_string_equal(json_string_value(json_object_get(ghost, "owner")), "aaaa1111");
	assert_true(json_is_true(json_object_get(ghost, "collision")));
	json_decref(st);
	free(out);
	assert_int_equal(ctl(D[0].ini, "status", NULL, &out), 0);
	char want[64];
	snprintf(want, sizeof want, " %.8s\n", inst);
	assert_non_null(strstr(out, "OWNER\n"));
	assert_non_null(strstr(out, want));
	assert_non_null(strstr(out, " aaaa1111 COLLISION\n"));
	free(out);
	h_daemon_down(&D[0]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_second_refused, test_teardown),
		cmocka_unit_test_teardown(test_clean_stop_releases, test_teardown),
		cmocka_unit_test_teardown(test_stale_claim_taken, test_teardown),
		cmocka_unit_test_teardown(test_status_owner, test_teardown),
	};

	return cmocka_run_group_tests(tests, h_group_setup, h_group_teardown);
}
