/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * harness: what every integration test needs -- a private temp dir, child
 * processes that never outlive the test, a real redis-server on a unix socket,
 * the HTTP fakes, and a small blocking HTTP client.
 *
 * Every process h_spawn() starts is registered; at exit, and on SIGINT,
 * SIGTERM or SIGABRT, each one's process group gets SIGKILL and is reaped, so
 * a failed cmocka assertion leaves nothing running. Spawn from the test's
 * main thread: children are also told (PR_SET_PDEATHSIG) to die with the
 * thread that forked them, which covers a test runner killed with SIGKILL.
 *
 * Fake target JSON (GET /_requests, one object per recorded call):
 *   {"method", "path" (request-target as received: percent-encoded, with any
 *    ?query), "idempotency_key", "authorization" (bool: header present),
 *    "on_behalf_of", "basis", "content_type", "body", "arrival_ms" (Unix ms),
 *    "status" (answered), "delay_ms" (how long the answer was held back: a
 *    call held longer than the action's timeout_ms ran at the target, but
 *    its worker never saw the answer)}; absent headers are null.
 */
#ifndef WARRANTD_HARNESS_H
#define WARRANTD_HARNESS_H

#include <sys/types.h>

#include <ev.h>
#include <hiredis/hiredis.h>
#include <jansson.h>

/* Private dir under /tmp, created on first use, removed with its contents at
 * exit unless $WARRANTD_KEEP_TMP is set. Aborts the test program when it
 * cannot be created. Valid until exit. */
const char *h_tmpdir(void);

/* $WARRANTD_BIN_DIR/name (default build/release/bin) and
 * $WARRANTD_TEST_DIR/name (default build/release/tests). Valid until exit. */
const char *h_bin(const char *name);
const char *h_testbin(const char *name);

/* Runs argv[0] (a path) with argv in its own process group, stdin from
 * /dev/null, stdout and stderr appended to log_path, environment inherited.
 * Returns the pid, or -1. */
pid_t h_spawn(const char *log_path, char *const argv[])
	__attribute__((warn_unused_result));

/* Sends sig, waits up to timeout_ms, then SIGKILLs. Whatever is left of the
 * process group is killed too and the child is reaped. Returns the waitpid
 * status, or -1 when pid is not a child we can wait for. */
int h_stop(pid_t pid, int sig, int timeout_ms);

/* 0 once pid has exited (reaped; *status, when not NULL, gets the waitpid
 * status), -1 when it still runs after timeout_ms or cannot be waited for. */
int h_wait_exit(pid_t pid, int timeout_ms, int *status)
	__attribute__((warn_unused_result));

struct h_redis {
	pid_t pid;
	char sock[256];
	char dir[256];
};

/* redis-server (port 0: no TCP) in a fresh dir under h_tmpdir(); returns when
 * PING answers (timeout 10 s). Its settings are kept in dir/redis.conf.
 * 0 or -1. */
int h_redis_start(struct h_redis *r, int appendonly)
	__attribute__((warn_unused_result));
/* As h_redis_start, with `extra` (NULL: none) appended to its redis.conf,
 * e.g. "aclfile /path/acl.conf\n". */
int h_redis_start_conf(struct h_redis *r, int appendonly, const char *extra)
	__attribute__((warn_unused_result));
/* FUNCTION LOAD REPLACE of the library of lua/ (store_library, warrantd(7)
 * §2.1) on c, as `warrantctl functions load` does: h_redis_start and
 * h_rnode_start do it for every server they start (a replica's comes from
 * its primary). 0, or -1 (said on stderr). */
int h_redis_load_functions(redisContext *c);
/* An h_wait_until condition, arg an int *: 1 once the node on that TCP
 * port has the library (a replica: once its sync brought it). */
int h_node_has_library(void *port);
/* SIGKILL, then start again on the same dir, socket and settings. */
int h_redis_restart(struct h_redis *r)
	__attribute__((warn_unused_result));
/* SIGTERM (SIGKILL after 5 s); no-op when not running. */
void h_redis_stop(struct h_redis *r);
/* Synchronous client on the socket; caller frees with redisFree. NULL on error. */
redisContext *h_redis_connect(const struct h_redis *r);
/* The same for a node on 127.0.0.1:port (cluster nodes, sentinels): quietly
 * NULL when it does not answer. */
redisContext *h_redis_connect_tcp(int port);
/* 1 when 127.0.0.1:port answers PING, else 0 (a condition to wait on). */
int h_redis_tcp_pings(int port);

/* A node of a Sentinel or Cluster test: redis-server (or, with
 * H_RNODE_SENTINEL, in sentinel mode) on 127.0.0.1 at a free port -- with
 * H_RNODE_CLUSTER one at most 55000 whose bus port (+10000) is free too --
 * in its own directory h_tmpdir()/name, its redis.conf "port, bind, dir"
 * and then `conf`; waits (20 s) until it answers PING. Stop it with
 * h_stop(n->pid, ...). 0, or -1 (what was started is stopped). */
struct h_rnode {
	pid_t pid;
	int port;
	char dir[512];
};
#define H_RNODE_SENTINEL	1
#define H_RNODE_CLUSTER		2
int h_rnode_start(struct h_rnode *n, const char *name, const char *conf, int flags)
	__attribute__((warn_unused_result));
/* Integer reply, or -1 on any error or other reply type. */
long long h_redis_int(redisContext *c, const char *fmt, ...);
/* String or status reply, caller frees; NULL for nil, error or other types. */
char *h_redis_str(redisContext *c, const char *fmt, ...);
/* The test's own routing: m replaced by the first seed's CLUSTER SHARDS (clear
 * text, no AUTH; each connect and command bounded by timeout_ms). 0, or -1
 * with err and m unchanged. The worker and warrantctl find it through disc. */
struct cluster_map;
struct hostport;
int h_cluster_refresh(struct cluster_map *m, const struct hostport *seeds, size_t nseeds,
		      long timeout_ms, char *err, size_t errlen);

/* Runs argv (argv[0] a path, or a name looked up in PATH) like h_spawn and
 * waits up to timeout_ms (then SIGKILL). Returns its exit code (-1: killed,
 * or did not start) and, when out is not NULL, what it wrote to stdout and
 * stderr in *out (caller frees; "" at worst). */
int h_run(char *const argv[], int timeout_ms, char **out);

/* The full path of an executable found in PATH (caller frees), or NULL:
 * for tests that skip when a Debian package is not installed. */
char *h_which(const char *name);

/* A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0 and
 * closed again), or -1. */
int h_free_port(void);
/* 1 when 127.0.0.1:port can be bound now (a cluster node's bus port). */
int h_port_free(int port);

/* Polls cond every 10 ms until it returns non-zero (0) or timeout_ms passes (-1). */
int h_wait_until(int (*cond)(void *arg), void *arg, int timeout_ms)
	__attribute__((warn_unused_result));

/* Writes content to h_tmpdir()/name (mode 0600). Caller frees the path. NULL on error. */
char *h_write_file(const char *name, const char *content);
/* Whole file, caller frees. NULL on error. */
char *h_read_file(const char *path);
/* The entries of directory `path` but "." and ".." (/proc/self/fd: the
 * directory's own descriptor counts too); -1 when it cannot be opened. */
int h_dir_count(const char *path);
/* 1 when the file holds needle, 0 when not or unreadable. */
int h_file_contains(const char *path, const char *needle);

struct h_fake {
	pid_t pid;
	int port;
	char url[128];
	char log[256];
};

/* Runs h_testbin(bin_name) --port-file F [extra_args..., NULL-terminated or
 * NULL] and waits (10 s) until it listens. 0 or -1. */
int h_fake_start(struct h_fake *f, const char *bin_name, const char *const extra_args[])
	__attribute__((warn_unused_result));
/* SIGTERM (SIGKILL after 5 s); no-op when not running. */
void h_fake_stop(struct h_fake *f);

/* Blocking request; body (may be NULL) is sent as application/json. Returns
 * the response body (caller frees) and sets *status; NULL and *status = 0 when
 * no response came. */
char *h_http(const char *method, const char *url, const char *body, long *status);

/* Plain data: one HTTP exchange. body and headers are malloc'd. */
struct h_http_reply {
	long status;		/* 0: no response */
	char *body;
	char *headers;		/* raw response header block */
};

/* Like h_http, with extra request headers ("Name: value", NULL-terminated
 * array or NULL) and the response headers kept. 0 when a response came, else
 * -1. The caller clears *out with h_http_reply_clear in both cases. */
int h_http_req(const char *method, const char *url, const char *const headers[],
	       const char *body, struct h_http_reply *out)
	__attribute__((warn_unused_result));
void h_http_reply_clear(struct h_http_reply *r);
/* Value of the first response header called name (case-insensitive),
 * caller frees; NULL when absent. */
char *h_http_header(const struct h_http_reply *r, const char *name);

/* ---- records, streams and the daemon (shared by the engine tests) ---- */

/* Wall clock, Unix ms (what the daemon and fake_target use). */
long long h_now_ms(void);

/* Absolute path of tests/data/name ($WARRANTD_DATA_DIR, default tests/data
 * under the current dir); an absolute name is itself (a file the test
 * wrote). Valid until exit. */
const char *h_data(const char *name);

/*
 * A record's JSON content (warrantd(7) §3.1), compact: recordId = id, onBehalfOf
 * "operator:4417", basis "role:canal-operator", parameters {"reason": "test"},
 * iss "decider-test", the times as RFC 3339 from Unix ms; notBefore only when
 * not_before_ms > 0, notifyOnDenial only when notify is not NULL.
 * Caller frees; NULL on error.
 */
char *h_record_json(const char *id, const char *action, const char *resource,
		    long long decided_ms, long long expires_ms, long long not_before_ms,
		    const char *notify);

/* ES256 JWS (typ decision+jwt) of `json` with the PEM private key at
 * key_path. Caller frees; NULL on error. */
char *h_sign(const char *json, const char *key_path);

/* Writes P:decision:<id> {record, state=queued, createdAt} and, when
 * enqueue, XADDs P:jobs * id <id>. `record` is stored as given. 0 or -1. */
int h_store_record(redisContext *c, const char *prefix, const char *id, const char *record,
		   int enqueue)
	__attribute__((warn_unused_result));

/* The decider: `json` signed with tests/data/test-es256.key (sign = 1) or
 * stored as plain JSON (sign = 0), then h_store_record(..., 1). 0 or -1. */
int h_decide(redisContext *c, const char *prefix, const char *id, const char *json, int sign)
	__attribute__((warn_unused_result));

/* HGET; caller frees; NULL when the field or key is missing. */
char *h_hget(redisContext *c, const char *key, const char *field);

/* XPENDING key group (summary): the count, or -1 on error (0 when no group). */
long long h_pending_count(redisContext *c, const char *stream, const char *group);

/* XPENDING key group (summary): the entries pending for `consumer` (0 when
 * none), or -1 on error. */
long long h_pending_of(redisContext *c, const char *stream, const char *group,
		       const char *consumer);

/* Entries of stream `key` whose field `match_field` equals `match_value`
 * (both NULL: every entry). */
long long h_stream_count(redisContext *c, const char *key, const char *match_field,
			 const char *match_value);
/* Calls each(fields, arg) for every entry of stream `key` (XRANGE - +),
 * fields being the entry's [name, value, ...] array, until it returns
 * non-zero. The number of entries seen. */
long long h_stream_each(redisContext *c, const char *key,
			int (*each)(const redisReply *fields, void *arg), void *arg);
/* The string value of `field` in such a field array, NULL when absent. */
const char *h_entry_str(const redisReply *fields, const char *field);
/* Value of `want` in the first such entry; caller frees; NULL when none. */
char *h_stream_field(redisContext *c, const char *key, const char *match_field,
		     const char *match_value, const char *want);

/* What most integration tests start with: a redis-server, a fake_target
 * and a client of that redis. */
struct h_stack {
	struct h_redis redis;
	struct h_fake target;
	redisContext *c;
};

/* 0, or -1 (whatever started is stopped again). */
int h_stack_start(struct h_stack *s)
	__attribute__((warn_unused_result));
/* Stops all three; safe on a half-started or stopped stack. */
void h_stack_stop(struct h_stack *s);

/* POST /_script with json to the fake; 0 when it answered 200. */
int h_fake_script(const struct h_fake *f, const char *json)
	__attribute__((warn_unused_result));
/* GET f->url + path (e.g. "/_stats", "/_requests") parsed; caller
 * json_decref's; NULL on error. */
json_t *h_fake_json(const struct h_fake *f, const char *path);
/* POST body (NULL: "{}") to f->url + path; the HTTP status, 0 on failure. */
long h_fake_post(const struct h_fake *f, const char *path, const char *body);

/* Runs `loop` until cond(arg) holds: 0, or -1 after timeout_ms. A 10 ms
 * tick makes each EVRUN_ONCE return even when nothing happens. */
int h_loop_run_until(struct ev_loop *loop, int (*cond)(void *arg), void *arg, int timeout_ms);

/*
 * A test config for warrantd. 0 / NULL fields take the value in brackets.
 * The *_extra strings are appended verbatim inside their section (keys the
 * helper does not write, one "key = value\n" each); `sections` is appended
 * at the end (whole extra sections such as [oauth], [authz]).
 */
struct h_daemon_opts {
	const char *redis_sock;		/* required */
	const char *target_url;		/* required: fake base url */
	const char *consumer;		/* [w1] */
	const char *prefix;		/* [warrant] */
	int signature_off;		/* [0]: required, ES256, tests/data/test-es256.pub */
	const char *verify_key;		/* [test-es256.pub]: another of tests/data/ */
	int heartbeat_ms;		/* [500, or claim_idle_ms / 3 when less] */
	int shutdown_grace_ms;		/* [3000] */
	int claim_interval_ms;		/* [200] */
	int claim_idle_ms;		/* [2000] */
	int block_ms;			/* [1000] */
	int max_deliveries;		/* [16] */
	int base_ms, cap_ms, max_attempts;	/* [50], [500], [5] */
	const char *default_owner;	/* [ops] */
	const char *action_auth;	/* [none] */
	int action_timeout_ms;		/* [2000] */
	const char *daemon_extra, *redis_extra, *records_extra, *retry_extra;
	const char *notify_extra, *action_extra, *sections;
};

/* The INI text; caller frees; NULL on error. [action gate.open] url is
 * target_url + "/gates/{resource}/open". */
char *h_daemon_ini(const struct h_daemon_opts *o);

struct h_daemon {
	pid_t pid;		/* 0: not running */
	char ini[256];		/* the config file */
	char log[256];		/* its stdout and stderr */
};

/* Writes ini_text to a fresh file under h_tmpdir() and runs
 * h_bin("warrantd") -c FILE with its output in a fresh log. 0 or -1.
 * $WARRANTD_WRAPPER, when set, is split at spaces and run in front of it
 * (make valgrind: the daemon under memcheck). */
int h_daemon_spawn(struct h_daemon *d, const char *ini_text)
	__attribute__((warn_unused_result));
/* h_daemon_spawn, then waits (60 s) for event=consumer.ready in its log.
 * -1 (the daemon stopped) when it exits or never gets ready. */
int h_daemon_start(struct h_daemon *d, const char *ini_text)
	__attribute__((warn_unused_result));
/* SIGTERM, waits up to 20 s (then SIGKILL). The waitpid status, or -1;
 * no-op returning -1 when not running. */
int h_daemon_stop(struct h_daemon *d);
/* SIGKILL (a crash). */
void h_daemon_kill(struct h_daemon *d);
/* h_daemon_stop, then 1 when it exited 0 with a clean (sanitizer) log, else
 * 0 after printing why and where its log is. */
int h_daemon_stop_clean(struct h_daemon *d);
/* 1 when its log holds needle. */
int h_daemon_log_has(const struct h_daemon *d, const char *needle);
/* Waits up to timeout_ms for needle in its log; 0 or -1. */
int h_daemon_wait_log(const struct h_daemon *d, const char *needle, int timeout_ms)
	__attribute__((warn_unused_result));
/* 1 when its log holds no sanitizer report ("ERROR: AddressSanitizer",
 * "ERROR: LeakSanitizer", "runtime error"); 0 otherwise (also printed). */
int h_daemon_log_clean(const struct h_daemon *d);

/* The names h_daemon_ini's defaults give (prefix "warrant", group
 * "workers"), for the tests that keep them, and how long a test waits for
 * what must happen (generous: 2 cores, ASan, load). */
#define H_WAIT_MS	60000
#define H_PREFIX	"warrant"
#define H_GROUP		"workers"
/* A worker that asks a PDP: an h_stack, a fake_pdp and one warrantd whose
 * [authz] url is the PDP's url + `path`, with the lines `authz_extra`. */
struct h_pdp_world {
	struct h_stack s;
	struct h_fake pdp;
	struct h_daemon d;
};

/* 0, or -1 (whatever started is stopped again by h_pdp_world_stop). */
int h_pdp_world_start(struct h_pdp_world *w, const char *path, const char *authz_extra)
	__attribute__((warn_unused_result));
/* SIGKILLs the daemon (a no-op once it stopped) and stops the rest. */
void h_pdp_world_stop(struct h_pdp_world *w);
/* POST /_reset to the PDP and the target. */
void h_pdp_world_reset(const struct h_pdp_world *w);

/* cmocka fixtures over one h_pdp_world, h_pdp, for programs whose tests
 * share it (each starts it in its own group setup): the group's teardown,
 * and a reset of both fakes before a test. */
extern struct h_pdp_world h_pdp;
int h_pdp_group_teardown(void **state);
int h_pdp_reset(void **state);

#define H_JOBS		H_PREFIX ":jobs"
#define H_NOTIFY	H_PREFIX ":notify"
#define H_DEAD		H_PREFIX ":dead"
#define H_AUDIT		H_PREFIX ":audit"

/* cmocka group setup and teardown over one h_stack, h_group: for programs
 * whose tests share one redis-server, one fake_target and one client. */
extern struct h_stack h_group;
int h_group_setup(void **state);
int h_group_teardown(void **state);

/* Ends what a test or group started, whatever a failed assertion left: the
 * nd daemons at d (SIGKILL; a no-op for one already stopped), the client *c
 * (then NULL), the fakes (a NULL-terminated list of struct h_fake *), redis.
 * Each is zeroed for the next test. */
void h_world_down(struct h_daemon *d, size_t nd, redisContext **c, struct h_redis *r, ...);

/* ---- checks shared by the itest_* programs ----
 * Each fails the running cmocka test (fail_msg, which names what it waited
 * for and where the logs are) instead of returning an error. */

/* POST body (NULL: "{}") to f->url + path; fails unless it answered 200. */
void h_post_ok(const struct h_fake *f, const char *path, const char *body);
/* POST /_reset to the fake; fails unless it answered 200. */
void h_fake_reset(const struct h_fake *f);
/* GET f->url + path parsed; fails when it cannot be. Caller json_decref's. */
json_t *h_get_ok(const struct h_fake *f, const char *path);
/* A counter of the fake's GET /_stats: member `name` of its object `group`
 * ("by_status", "keys"), or of the top level when group is NULL; 0 when
 * absent. */
long long h_fake_stat(const struct h_fake *f, const char *group, const char *name);
/* The calls f recorded (GET /_requests) with Idempotency-Key: key, in arrival
 * order. Caller json_decref's. */
json_t *h_calls_with_key(const struct h_fake *f, const char *key);
/* How many such calls. */
long long h_count_calls(const struct h_fake *f, const char *key);
/* The queries a fake_pdp recorded (GET /_queries) whose input.recordId is id,
 * in arrival order. Caller json_decref's. */
json_t *h_pdp_queries(const struct h_fake *pdp, const char *id);
/* How many such queries. */
long long h_pdp_count(const struct h_fake *pdp, const char *id);

/* Prints "skip: <reason>" and skips the running cmocka test (skip()).
 * tests/run.sh counts every skip and fails on one that tests/expected-skips
 * does not list: say why, and never return early from a test instead. */
void h_skip(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
/* The exit status of a program that cannot run at all here (automake's
 * "skipped"); tests/run.sh treats it like h_skip, for the whole program. */
#define H_SKIP_STATUS	77
/* The first file Debian package `pkg` installed (dpkg -L) whose path ends
 * with `suffix`, caller frees; NULL when the package or the file is not
 * there. For libraries whose directory depends on the architecture. */
char *h_dpkg_file(const char *pkg, const char *suffix);

/* "<prefix>:<suffix>" in one of eight rotating buffers: valid until eight
 * more calls. */
const char *h_key(const char *prefix, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* h_redis_start (no AOF) and h_redis_connect; fails when either does not.
 * The client is the caller's to redisFree. */
redisContext *h_redis_up(struct h_redis *r);

/* h_daemon_ini(o) and h_daemon_start; fails (naming the log) unless the
 * daemon got ready. */
void h_daemon_up(struct h_daemon *d, const struct h_daemon_opts *o);
/* R15: SIGTERM ends it with exit 0 and a log with no sanitizer report;
 * fails otherwise, naming the log. */
void h_daemon_down(struct h_daemon *d);

/* h_wait_until(cond, arg, timeout_ms); fails with "timed out waiting for
 * <what>" when cond never held. */
void h_wait_for(int (*cond)(void *arg), void *arg, int timeout_ms, const char *what);

/* HGET <prefix>:decision:<id> field (caller frees; NULL when missing), and
 * the check that it equals want. */
char *h_record_field(redisContext *c, const char *prefix, const char *id, const char *field);
void h_assert_record_field(redisContext *c, const char *prefix, const char *id,
			   const char *field, const char *want);
/* HGET key field equals want; fails (with the value seen) when not. */
void h_assert_hash_field(redisContext *c, const char *key, const char *field, const char *want);
/* Waits up to timeout_ms until HGET key field equals want; fails (with the
 * last value seen) when it never does. */
void h_wait_hash_field(redisContext *c, const char *key, const char *field, const char *want,
		       int timeout_ms);

/* A record for `action` on `resource`, decided a second ago, due at
 * expires_ms, signed with tests/data/test-es256.key and stored under
 * prefix (h_store_record: queued when enqueue). Fails when any step does. */
void h_store_signed(redisContext *c, const char *prefix, const char *id, const char *action,
		    const char *resource, long long expires_ms, int enqueue);

/* The id of the last entry of `stream` whose field `id` is id, into out;
 * fails when there is none. */
void h_stream_id_of(redisContext *c, const char *stream, const char *id, char *out, size_t n);

/*
 * After a run with failovers (issue 30): every recordId starting with
 * id_pre got a 2xx at `target` (jobs of them), and one with more than one
 * had its first call before killed_at_ms (0: no failover, so none may have
 * two; a result is lost only with a primary that died). Fails the test
 * otherwise; returns the number of extra 2xx (the allowed duplicates).
 */
long long h_assert_each_once(const struct h_fake *target, const char *id_pre, long jobs,
			     long long killed_at_ms);

#endif
