/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_redis_tls: warrantd against a Redis that speaks only TLS. A
 * throwaway CA is made with openssl at test time; redis-server gets a
 * tls-port with client certificates required.
 *
 * Native ([redis] tls = yes, rtls.c): jobs are done and `warrantctl
 * status` answers over TLS; a certificate for another name, one from
 * another CA, or no client certificate where the server requires one is a
 * failed connect, and no AUTH reaches the server (its commandstats say).
 *
 * Through the stunnel client of systemd/warrantd-redis-tls.service (Debian
 * stunnel4): stunnel verifies the server's chain and host name and shows
 * its own certificate; warrantd's [redis] socket is stunnel's unix socket.
 * Jobs are done; with a wrong CA, or a wrong host name, stunnel refuses.
 *
 * Skips with a printed reason when redis-server is built without TLS (and
 * the stunnel cases when stunnel is not installed).
 */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "redis/cluster.h"
#include "harness.h"

#define WAIT_MS		60000
#define PREFIX		"tls"

static struct h_stack S;
#define C (S.c)
static int tls_port;
static char *stunnel_bin;
static int have_tls;
static char dir[512];
static char pwfile[600];

/* Makes a CA, a server certificate for redis.test / 127.0.0.1, a client
 * certificate, a server certificate with only a subject CN (cnonly.test, no
 * SAN), and a second CA that signed nothing here. */
static const char gen_script[] =
    "set -e\n"
    "cd \"$1\"\n"
    "ca() { openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
    "-keyout $1.key -out $1.crt -days 2 -subj /CN=$1 2>/dev/null; }\n"
    "leaf() { openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
    "-keyout $1.key -out $1.csr -subj /CN=$2 2>/dev/null;\n"
    "  openssl x509 -req -in $1.csr -CA ca.crt -CAkey ca.key -CAcreateserial "
    "-out $1.crt -days 2 $3 2>/dev/null; }\n"
    "ca ca\nca other-ca\n"
    "printf 'subjectAltName=DNS:redis.test,IP:127.0.0.1\\n' > san.ext\n"
    "leaf server redis.test '-extfile san.ext'\n"
    "leaf client warrantd ''\n"
    "leaf cnonly cnonly.test ''\n"
    "chmod 600 *.key\n";

static int
group_setup(void **state)
{
	char script[600], *out;
	(void)state;

	if (!(stunnel_bin = h_which("stunnel4")) && !(stunnel_bin = h_which("stunnel")))
		printf("itest_redis_tls: SKIP: stunnel not installed (Debian package stunnel4)\n");
	snprintf(dir, sizeof dir, "%s/pki", h_tmpdir());
	if (mkdir(dir, 0700) != 0)
		return -1;
	snprintf(script, sizeof script, "%s/gen.sh", dir);
	FILE *f = fopen(script, "w");
	if (!f)
		return -1;
	fputs(gen_script, f);
	fclose(f);
	char *argv[] = {"sh", script, dir, NULL};
	if (h_run(argv, 60000, &out) != 0) {
		fprintf(stderr, "itest_redis_tls: making the CA failed: %s\n", out);
		free(out);
		return -1;
	}
	free(out);
	if (h_stack_start(&S) != 0)
		return -1;
	/* Redis 7 sets TLS at run time; one built without TLS refuses. */
	tls_port = h_free_port();
	redisReply *r = redisCommand(C, "CONFIG SET tls-cert-file %s/server.crt tls-key-file "
	    "%s/server.key tls-ca-cert-file %s/ca.crt tls-auth-clients yes tls-port %d", dir, dir,
	    dir, tls_port);
	int ok = r && r->type == REDIS_REPLY_STATUS;
	if (!ok) {
		printf("itest_redis_tls: SKIP: redis-server has no TLS (%s)\n",
		    r && r->type == REDIS_REPLY_ERROR ? r->str : "no reply");
		free(stunnel_bin);
		stunnel_bin = NULL;
	}
	freeReplyObject(r);
	have_tls = ok;
	/* the native cases' user: an AUTH is counted in its commandstats */
	if (ok) {
		r = redisCommand(C, "ACL SETUSER tlsd on >tls-secret-pw ~* &* +@all");
		ok = r && r->type == REDIS_REPLY_STATUS;
		freeReplyObject(r);
		char *path = h_write_file("redis-tls.pw", "tls-secret-pw\n");
		if (!ok || path == NULL)
			return -1;
		snprintf(pwfile, sizeof pwfile, "%s", path);
		free(path);
	}
	return 0;
}

static int
group_teardown(void **state)
{
	(void)state;
	h_stack_stop(&S);
	free(stunnel_bin);
	return 0;
}

struct tunnel {
	pid_t pid;
	char sock[600], log[600];
};

static int
sock_exists(void *arg)
{
	struct stat st;
	return stat(arg, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* stunnel as in conf/stunnel-redis.conf, pointed at the test's Redis. */
static void
tunnel_start(struct tunnel *t, const char *name, const char *ca, const char *host)
{
	char conf[4096], file[64];

	snprintf(t->sock, sizeof t->sock, "%s/%s.sock", dir, name);
	snprintf(t->log, sizeof t->log, "%s/%s.log", dir, name);
	snprintf(conf, sizeof conf, "foreground = yes\npid =\n[redis]\nclient = yes\n"
	    "accept = %s\nconnect = 127.0.0.1:%d\nverifyChain = yes\nCAfile = %s/%s.crt\n"
	    "checkHost = %s\nsslVersionMin = TLSv1.2\ncert = %s/client.crt\nkey = %s/client.key\n",
	    t->sock, tls_port, dir, ca, host, dir, dir);
	snprintf(file, sizeof file, "stunnel-%s.conf", name);
	char *path = h_write_file(file, conf);
	assert_non_null(path);
	char *argv[] = {stunnel_bin, path, NULL};
	t->pid = h_spawn(t->log, argv);
	free(path);
	assert_true(t->pid > 0);
	if (h_wait_until(sock_exists, t->sock, WAIT_MS) != 0)
		fail_msg("stunnel did not listen on %s; log %s", t->sock, t->log);
}

static void
tunnel_stop(struct tunnel *t)
{
	if (t->pid > 0)
		(void)h_stop(t->pid, SIGTERM, 10000);
	t->pid = 0;
}

/* PING through the tunnel: "PONG", or NULL when the connection is refused
 * or closed. */
static char *
ping_through(const struct tunnel *t)
{
	struct timeval tv = {10, 0};
	redisContext *c = redisConnectUnixWithTimeout(t->sock, tv);
	char *pong = NULL;

	if (c && !c->err) {
		redisReply *r = redisCommand(c, "PING");
		if (r && r->type == REDIS_REPLY_STATUS)
			pong = strdup(r->str);
		freeReplyObject(r);
	}
	redisFree(c);
	return pong;
}

static int
job_done(void *arg)
{
	char key[128];
	snprintf(key, sizeof key, PREFIX ":decision:%s", (const char *)arg);
	char *st = h_hget(C, key, "state");
	int ok = st && strcmp(st, "done") == 0;
	free(st);
	return ok;
}

static void
test_jobs_through_tls(void **state)
{
	struct tunnel t = {0};
	struct h_daemon d = {0};
	(void)state;

	if (!stunnel_bin)
		skip();
	tunnel_start(&t, "good", "ca", "redis.test");
	char *pong = ping_through(&t);
	assert_non_null(pong);
	assert_string_equal(pong, "PONG");
	free(pong);

	struct h_daemon_opts o = {.redis_sock = t.sock, .target_url = S.target.url,
	    .prefix = PREFIX};
	char *ini = h_daemon_ini(&o);
	assert_non_null(ini);
	if (h_daemon_start(&d, ini) != 0)
		fail_msg("warrantd did not start through stunnel; logs %s %s", d.log, t.log);
	free(ini);
	const char *ids[] = {"tls-1", "tls-2", "tls-3"};
	long long now = h_now_ms();
	for (size_t i = 0; i < 3; i++) {
		char *json = h_record_json(ids[i], "gate.open", "canal/lateral-3/gate-14",
		    now - 1000, now + 60000, 0, NULL);
		assert_int_equal(h_decide(C, PREFIX, ids[i], json, 1), 0);
		free(json);
	}
	for (size_t i = 0; i < 3; i++)
		if (h_wait_until(job_done, (void *)ids[i], WAIT_MS) != 0)
			fail_msg("%s not done; logs %s %s", ids[i], d.log, t.log);
	/* The worker's connections are TLS ones: stunnel verified the server. */
	assert_true(h_file_contains(t.log, "Certificate accepted at depth=0: CN=redis.test"));
	assert_true(h_daemon_stop_clean(&d));
	tunnel_stop(&t);
}

static int
log_says_verify_failed(void *arg)
{
	return h_file_contains(arg, "certificate verify failed");
}

/* The log of a failed case on stderr: the temporary directory goes with
 * the test. */
static void
dump_log(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[512];

	if (f == NULL)
		return;
	while (fgets(line, sizeof line, f))
		fprintf(stderr, "  | %s", line);
	fclose(f);
}

/* A tunnel that trusts `ca` and expects `host` gets no PONG: stunnel
 * refuses the server (its log says why, a moment after the client has
 * seen the connection closed). */
static void
assert_refused(const char *name, const char *ca, const char *host, const char *why)
{
	struct tunnel t = {0};

	if (!stunnel_bin)
		skip();
	tunnel_start(&t, name, ca, host);
	char *pong = ping_through(&t);
	assert_null(pong);
	if (h_wait_until(log_says_verify_failed, t.log, WAIT_MS) != 0) {
		tunnel_stop(&t);
		dump_log(t.log);
		fail_msg("stunnel's log %s never said \"certificate verify failed\"", t.log);
	}
	tunnel_stop(&t);
	printf("itest_redis_tls: refused: %s\n", why);
}

static void
test_wrong_ca_refused(void **state)
{
	(void)state;
	assert_refused("wrong-ca", "other-ca", "redis.test",
	    "a server certificate from another CA");
}

static void
test_wrong_host_refused(void **state)
{
	(void)state;
	assert_refused("wrong-host", "ca", "redis.elsewhere.test",
	    "a certificate for another host name");
}

/* ---- native TLS: [redis] tls = yes ---- */

/* AUTH commands the server has run since the last CONFIG RESETSTAT. */
static long long
auths_seen(void)
{
	char *info = h_redis_str(C, "INFO commandstats");
	const char *p = info ? strstr(info, "cmdstat_auth:calls=") : NULL;
	long long n = p ? atoll(p + strlen("cmdstat_auth:calls=")) : 0;
	free(info);
	return n;
}

static void
reset_stats(void)
{
	redisReply *r = redisCommand(C, "CONFIG RESETSTAT");
	assert_non_null(r);
	freeReplyObject(r);
}

/* The daemon's ini for the TLS port: [redis] host/port and `tls`, what
 * extra says. The CA, certificates and password file are absolute paths. */
static char *
native_ini(const char *extra)
{
	char redis_extra[2048];

	snprintf(redis_extra, sizeof redis_extra, "host = 127.0.0.1\nport = %d\ntls = yes\n"
	    "username = tlsd\npassword_file = %s\n%s", tls_port, pwfile, extra);
	struct h_daemon_opts o = {.target_url = S.target.url,
	    .prefix = PREFIX, .redis_extra = redis_extra};
	char *ini = h_daemon_ini(&o);
	assert_non_null(ini);
	return ini;
}

static char *
ctl_status(const char *ini_path, int *rc)
{
	char *out = NULL;
	char *argv[] = {(char *)h_bin("warrantctl"), "-c", (char *)ini_path, "status", NULL};
	*rc = h_run(argv, 60000, &out);
	return out;
}

/* A trampoline directory (the transport before issue 36) under run, into
 * buf; 0 or -1: rconn owns its TLS socket, nothing is made on disk. */
static int
trampoline_in(const char *run, char *buf, size_t n)
{
	DIR *dp = opendir(run);
	struct dirent *e;
	int rc = -1;

	while (dp != NULL && (e = readdir(dp)) != NULL)
		if (strncmp(e->d_name, "warrantd-tls.", 13) == 0) {
			snprintf(buf, n, "%s/%s", run, e->d_name);
			rc = 0;
		}
	if (dp != NULL)
		closedir(dp);
	return rc;
}

static void
test_native_jobs(void **state)
{
	struct h_daemon d = {0};
	char extra[2048];
	(void)state;

	if (!have_tls)
		skip();
	reset_stats();
	/* the name checked is the host, 127.0.0.1: the server's IP SAN */
	snprintf(extra, sizeof extra, "tls_ca_file = %s/ca.crt\ntls_cert_file = %s/client.crt\n"
	    "tls_key_file = %s/client.key\n", dir, dir, dir);
	char *ini = native_ini(extra);
	/* where the daemon once put its trampoline, as systemd's
	 * RuntimeDirectory= would say: nothing goes there now */
	char run[600];
	snprintf(run, sizeof run, "%s/run", h_tmpdir());
	assert_int_equal(mkdir(run, 0700), 0);
	assert_int_equal(setenv("RUNTIME_DIRECTORY", run, 1), 0);
	int started = h_daemon_start(&d, ini);
	unsetenv("RUNTIME_DIRECTORY");
	if (started != 0)
		fail_msg("warrantd did not start over TLS; log %s", d.log);
	free(ini);
	const char *ids[] = {"ntls-1", "ntls-2", "ntls-3"};
	long long now = h_now_ms();
	for (size_t i = 0; i < 3; i++) {
		char *json = h_record_json(ids[i], "gate.open", "canal/lateral-3/gate-14",
		    now - 1000, now + 60000, 0, NULL);
		assert_int_equal(h_decide(C, PREFIX, ids[i], json, 1), 0);
		free(json);
	}
	for (size_t i = 0; i < 3; i++)
		if (h_wait_until(job_done, (void *)ids[i], WAIT_MS) != 0)
			fail_msg("%s not done; log %s", ids[i], d.log);
	assert_true(auths_seen() > 0);
	assert_false(h_daemon_log_has(&d, "event=redis.down"));

	/* No file under run (no trampoline); the server drops the
	 * connections: the reconnect over TLS carries on. */
	char tramp[700];
	assert_int_equal(trampoline_in(run, tramp, sizeof tramp), -1);
	assert_true(h_redis_int(C, "CLIENT KILL USER tlsd") > 0);
	char *json = h_record_json("ntls-4", "gate.open", "canal/lateral-3/gate-14", now - 1000,
	    now + 60000, 0, NULL);
	assert_int_equal(h_decide(C, PREFIX, "ntls-4", json, 1), 0);
	free(json);
	if (h_wait_until(job_done, (void *)"ntls-4", WAIT_MS) != 0)
		fail_msg("ntls-4 not done after the reconnect; log %s", d.log);
	assert_true(h_daemon_log_has(&d, "event=redis.down"));
	assert_int_equal(trampoline_in(run, tramp, sizeof tramp), -1);

	/* warrantctl with the same file: its own TLS connection */
	int rc;
	char *out = ctl_status(d.ini, &rc);
	if (rc != 0)
		fail_msg("warrantctl status over TLS exited %d: %s", rc, out);
	free(out);
	assert_true(h_daemon_stop_clean(&d));
}

struct down_count {
	const struct h_daemon *d;
	const char *needle;
};

/* Two refused attempts: the backoff ran, and each one was refused. */
static int
refused_twice(void *arg)
{
	const struct down_count *dc = arg;
	char *text = h_read_file(dc->d->log);
	int n = 0;

	for (const char *p = text; p && (p = strstr(p, dc->needle)) != NULL; p++)
		n++;
	free(text);
	return n >= 2;
}

/* warrantd with `extra` never gets a session: the log names why (needle,
 * in event=redis.down lines), no AUTH reaches the server, and warrantctl
 * is refused too. */
static void
assert_native_refused(const char *extra, const char *needle, const char *what)
{
	struct h_daemon d = {0};

	if (!have_tls)
		skip();
	reset_stats();
	char *ini = native_ini(extra);
	assert_int_equal(h_daemon_spawn(&d, ini), 0);
	free(ini);
	struct down_count dc = {&d, needle};
	if (h_wait_until(refused_twice, &dc, WAIT_MS) != 0)
		fail_msg("no two refusals (%s) in %s", needle, d.log);
	assert_false(h_daemon_log_has(&d, "event=redis.up"));
	assert_int_equal(auths_seen(), 0);
	int rc;
	char *out = ctl_status(d.ini, &rc);
	assert_int_not_equal(rc, 0);
	free(out);
	assert_int_equal(auths_seen(), 0);
	assert_true(h_daemon_stop_clean(&d));
	printf("itest_redis_tls: native: refused: %s\n", what);
}

/* warrantd -t loads the TLS files as the first connect would: a key that
 * is not the certificate's, or one that others may read, is refused. */
static void
test_native_check(void **state)
{
	char extra[2048], *out = NULL;
	(void)state;

	if (!have_tls)
		skip();
	snprintf(extra, sizeof extra, "tls_ca_file = %s/ca.crt\ntls_cert_file = %s/client.crt\n"
	    "tls_key_file = %s/server.key\n", dir, dir, dir);
	char *ini = native_ini(extra);
	char *path = h_write_file("check-tls.ini", ini);
	free(ini);
	assert_non_null(path);
	char *argv[] = {(char *)h_bin("warrantd"), "-t", "-c", path, NULL};
	assert_int_not_equal(h_run(argv, 60000, &out), 0);
	if (strstr(out, "tls_key_file does not match tls_cert_file") == NULL)
		fail_msg("warrantd -t said: %s", out);
	free(out);
	free(path);

	char key[600], open_key[700];
	snprintf(key, sizeof key, "%s/client.key", dir);
	snprintf(open_key, sizeof open_key, "%s/client-open.key", dir);
	char *text = h_read_file(key);
	assert_non_null(text);
	FILE *f = fopen(open_key, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	free(text);
	assert_int_equal(chmod(open_key, 0644), 0);
	snprintf(extra, sizeof extra, "tls_ca_file = %s/ca.crt\ntls_cert_file = %s/client.crt\n"
	    "tls_key_file = %s\n", dir, dir, open_key);
	ini = native_ini(extra);
	path = h_write_file("check-tls-open.ini", ini);
	free(ini);
	argv[3] = path;
	assert_int_not_equal(h_run(argv, 60000, &out), 0);
	if (strstr(out, "client-open.key") == NULL || strstr(out, "refusing") == NULL)
		fail_msg("warrantd -t said: %s", out);
	free(out);
	free(path);
}

static void
test_native_wrong_host(void **state)
{
	char extra[2048];
	(void)state;
	snprintf(extra, sizeof extra, "tls_ca_file = %s/ca.crt\ntls_cert_file = %s/client.crt\n"
	    "tls_key_file = %s/client.key\ntls_server_name = redis.elsewhere.test\n", dir, dir,
	    dir);
	assert_native_refused(extra, "certificate verify failed", "a certificate for another "
	    "host name");
}

static void
test_native_wrong_ca(void **state)
{
	char extra[2048];
	(void)state;
	snprintf(extra, sizeof extra, "tls_ca_file = %s/other-ca.crt\ntls_cert_file = "
	    "%s/client.crt\ntls_key_file = %s/client.key\ntls_server_name = redis.test\n", dir,
	    dir, dir);
	assert_native_refused(extra, "certificate verify failed", "a server certificate from "
	    "another CA");
}

/* Issue 37: the name is checked against the SANs only, never the subject's
 * CN. The server presents a certificate of the right CA whose only name is
 * CN=cnonly.test (no SAN at all), for the whole test, then its own again. */
static void
test_native_cn_only(void **state)
{
	char extra[2048];
	(void)state;

	if (!have_tls)
		skip();
	redisReply *r = redisCommand(C, "CONFIG SET tls-cert-file %s/cnonly.crt tls-key-file "
	    "%s/cnonly.key", dir, dir);
	assert_true(r && r->type == REDIS_REPLY_STATUS);
	freeReplyObject(r);
	snprintf(extra, sizeof extra, "tls_ca_file = %s/ca.crt\ntls_cert_file = %s/client.crt\n"
	    "tls_key_file = %s/client.key\ntls_server_name = cnonly.test\n", dir, dir, dir);
	assert_native_refused(extra, "certificate verify failed", "a certificate naming the "
	    "host in its subject CN only");
	r = redisCommand(C, "CONFIG SET tls-cert-file %s/server.crt tls-key-file %s/server.key",
	    dir, dir);
	assert_true(r && r->type == REDIS_REPLY_STATUS);
	freeReplyObject(r);
}

/* tls-auth-clients yes: without a client certificate the server ends the
 * session (TLS 1.3: after the client's side of the handshake is done, so
 * the failure comes with the first read). */
static void
test_native_no_client_cert(void **state)
{
	char extra[2048];
	(void)state;
	snprintf(extra, sizeof extra, "tls_ca_file = %s/ca.crt\ntls_server_name = redis.test\n",
	    dir);
	assert_native_refused(extra, "certificate required", "no client certificate where the "
	    "server requires one");
}

/* ---- Sentinel over TLS ---- */

/* A node's TLS lines: a tls-port beside its plain port (the harness's PING
 * and the test's own look; the daemon is given TLS ports only), TLS for
 * replication and for the sentinels' own connections. */
static void
tls_lines(char *buf, size_t n, int port, const char *more)
{
	snprintf(buf, n, "tls-port %d\ntls-cert-file %s/server.crt\ntls-key-file %s/server.key\n"
	    "tls-ca-cert-file %s/ca.crt\ntls-auth-clients no\ntls-replication yes\n%s", port, dir,
	    dir, dir, more);
}

struct on_node {
	int port;	/* plain */
	const char *id;
};

static int
done_on(void *arg)
{
	const struct on_node *o = arg;
	char key[128];
	redisContext *c = h_redis_connect_tcp(o->port);
	if (c == NULL)
		return 0;
	snprintf(key, sizeof key, PREFIX ":decision:%s", o->id);
	char *st = h_hget(c, key, "state");
	int ok = st && strcmp(st, "done") == 0;
	free(st);
	redisFree(c);
	return ok;
}

static void
decide_and_wait(int port, const char *prefix, int n, const struct h_daemon *d)
{
	redisContext *c = h_redis_connect_tcp(port);
	long long now = h_now_ms();
	char id[64];

	assert_non_null(c);
	for (int i = 0; i < n; i++) {
		snprintf(id, sizeof id, "%s-%d", prefix, i);
		char *json = h_record_json(id, "gate.open", "canal/lateral-3/gate-14", now - 1000,
		    now + 120000, 0, NULL);
		assert_int_equal(h_decide(c, PREFIX, id, json, 1), 0);
		free(json);
	}
	redisFree(c);
	for (int i = 0; i < n; i++) {
		snprintf(id, sizeof id, "%s-%d", prefix, i);
		struct on_node o = {port, id};
		if (h_wait_until(done_on, &o, 120000) != 0)
			fail_msg("%s not done; log %s", id, d->log);
	}
}

struct sent_ask {
	int sentinel_port, want;
};

static int
sentinel_names(void *arg)
{
	const struct sent_ask *a = arg;
	redisContext *c = h_redis_connect_tcp(a->sentinel_port);
	redisReply *r = c ? redisCommand(c, "SENTINEL get-master-addr-by-name mymaster") : NULL;
	int ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	    atoi(r->element[1]->str) == a->want;
	freeReplyObject(r);
	if (c)
		redisFree(c);
	return ok;
}

static int
sentinel_sees_replica(void *arg)
{
	redisContext *c = h_redis_connect_tcp(*(int *)arg);
	redisReply *r = c ? redisCommand(c, "SENTINEL replicas mymaster") : NULL;
	int ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 1;
	freeReplyObject(r);
	if (c)
		redisFree(c);
	return ok;
}

/* A primary, a replica and a sentinel, all TLS (tls-replication): the
 * daemon knows only the sentinel's TLS port, asks it over TLS, connects
 * over TLS to the primary it names, does jobs; the primary is killed, the
 * sentinel promotes the replica, and jobs are done there. warrantctl finds
 * the primary through the sentinel over TLS as well. */
static void
test_sentinel_tls(void **state)
{
	struct h_rnode pri, rep, sen;
	struct h_daemon d = {0};
	char conf[4096], more[256], extra[1024];
	int pri_tls = h_free_port(), rep_tls = h_free_port(), sen_tls = h_free_port();
	(void)state;

	if (!have_tls)
		skip();
	tls_lines(conf, sizeof conf, pri_tls, "save \"\"\n");
	assert_int_equal(h_rnode_start(&pri, "tls-primary", conf, 0), 0);
	snprintf(more, sizeof more, "save \"\"\nreplicaof 127.0.0.1 %d\n", pri_tls);
	tls_lines(conf, sizeof conf, rep_tls, more);
	assert_int_equal(h_rnode_start(&rep, "tls-replica", conf, 0), 0);
	snprintf(more, sizeof more, "sentinel monitor mymaster 127.0.0.1 %d 1\n"
	    "sentinel down-after-milliseconds mymaster 1000\n"
	    "sentinel failover-timeout mymaster 10000\n", pri_tls);
	tls_lines(conf, sizeof conf, sen_tls, more);
	assert_int_equal(h_rnode_start(&sen, "tls-sentinel", conf, H_RNODE_SENTINEL), 0);
	assert_int_equal(h_wait_until(sentinel_sees_replica, &sen.port, 60000), 0);
	/* synced (the library came with it): the failover below keeps it */
	assert_int_equal(h_wait_until(h_node_has_library, &rep.port, 60000), 0);

	snprintf(extra, sizeof extra, "sentinels = 127.0.0.1:%d\nmaster_name = mymaster\n"
	    "tls = yes\ntls_ca_file = %s/ca.crt\nallow_hosts = 127.0.0.1:%d, 127.0.0.1:%d\n",
	    sen_tls, dir, pri_tls, rep_tls);
	struct h_daemon_opts o = {.target_url = S.target.url,
	    .prefix = PREFIX, .redis_extra = extra};
	char *ini = h_daemon_ini(&o);
	assert_non_null(ini);
	if (h_daemon_start(&d, ini) != 0)
		fail_msg("warrantd did not start through a TLS sentinel; log %s", d.log);
	free(ini);
	char want[64];
	snprintf(want, sizeof want, "host=127.0.0.1 port=%d", pri_tls);
	assert_true(h_daemon_log_has(&d, want));
	decide_and_wait(pri.port, "sen-a", 5, &d);
	int rc;
	char *out = ctl_status(d.ini, &rc);
	if (rc != 0)
		fail_msg("warrantctl status through a TLS sentinel exited %d: %s", rc, out);
	free(out);

	assert_int_equal(kill(pri.pid, SIGKILL), 0);
	(void)h_stop(pri.pid, SIGKILL, 10000);
	struct sent_ask a = {sen.port, rep_tls};
	assert_int_equal(h_wait_until(sentinel_names, &a, 120000), 0);
	decide_and_wait(rep.port, "sen-b", 5, &d);
	snprintf(want, sizeof want, "host=127.0.0.1 port=%d", rep_tls);
	assert_true(h_daemon_log_has(&d, want));
	assert_true(h_daemon_stop_clean(&d));
	(void)h_stop(sen.pid, SIGTERM, 10000);
	(void)h_stop(rep.pid, SIGTERM, 10000);
}

struct on_node_p {
	int port;
	const char *prefix, *id;
};

static int
done_on_p(void *arg)
{
	const struct on_node_p *o = arg;
	char key[160];
	redisContext *c = h_redis_connect_tcp(o->port);
	if (c == NULL)
		return 0;
	snprintf(key, sizeof key, "%s:decision:%s", o->prefix, o->id);
	char *st = h_hget(c, key, "state");
	int ok = st && strcmp(st, "done") == 0;
	free(st);
	redisFree(c);
	return ok;
}

/* ---- Cluster over TLS ---- */

#define CNODES	3

struct cnode {
	struct h_rnode n;
	int tls, bus;
};

static int
tls_cluster_ok(void *arg)
{
	const struct cnode *c = arg;
	for (int i = 0; i < CNODES; i++) {
		redisContext *rc = h_redis_connect_tcp(c[i].n.port);
		char *info = rc ? h_redis_str(rc, "CLUSTER INFO") : NULL;
		int ok = info && strstr(info, "cluster_state:ok") &&
		    strstr(info, "cluster_known_nodes:3");
		free(info);
		if (rc)
			redisFree(rc);
		if (!ok)
			return 0;
	}
	return 1;
}

/* Three primaries with tls-cluster yes (the bus and the ports they announce
 * are TLS), joined by hand: CLUSTER MEET names the TLS ports. The daemon
 * knows only the TLS ports (cluster = ..., shards = 3); the test routes
 * its own writes by the plain ports' map. Jobs of every shard are done,
 * and warrantctl status reaches every shard over TLS. */
static void
test_cluster_tls(void **state)
{
	struct cnode c[CNODES];
	struct h_daemon d = {0};
	char conf[4096], more[512], extra[1024], seeds_tls[256] = "";
	struct hostport seeds[CNODES];
	(void)state;

	if (!have_tls)
		skip();
	for (int i = 0; i < CNODES; i++) {
		char name[32];
		c[i].tls = h_free_port();
		c[i].bus = h_free_port();
		snprintf(more, sizeof more, "save \"\"\nappendonly no\ncluster-enabled yes\n"
		    "cluster-config-file nodes.conf\ncluster-node-timeout 1000\ntls-cluster yes\n"
		    "cluster-port %d\n", c[i].bus);
		tls_lines(conf, sizeof conf, c[i].tls, more);
		snprintf(name, sizeof name, "tls-cluster-%d", i);
		assert_int_equal(h_rnode_start(&c[i].n, name, conf, 0), 0);
		redisContext *rc = h_redis_connect_tcp(c[i].n.port);
		assert_non_null(rc);
		long long lo = i * 5462, hi = i == CNODES - 1 ? 16383 : lo + 5461;
		char *ok = h_redis_str(rc, "CLUSTER ADDSLOTSRANGE %lld %lld", lo, hi);
		assert_non_null(ok);
		free(ok);
		redisFree(rc);
		snprintf(seeds[i].host, sizeof seeds[i].host, "127.0.0.1");
		seeds[i].port = c[i].n.port;
		size_t l = strlen(seeds_tls);
		snprintf(seeds_tls + l, sizeof seeds_tls - l, "%s127.0.0.1:%d", i ? ", " : "",
		    c[i].tls);
	}
	redisContext *rc = h_redis_connect_tcp(c[0].n.port);
	assert_non_null(rc);
	for (int i = 1; i < CNODES; i++) {
		char *ok = h_redis_str(rc, "CLUSTER MEET 127.0.0.1 %d %d", c[i].tls, c[i].bus);
		assert_non_null(ok);
		free(ok);
	}
	redisFree(rc);
	assert_int_equal(h_wait_until(tls_cluster_ok, c, 60000), 0);

	snprintf(extra, sizeof extra, "cluster = %s\nshards = 3\ntls = yes\ntls_ca_file = "
	    "%s/ca.crt\n", seeds_tls, dir);
	struct h_daemon_opts o = {.target_url = S.target.url,
	    .prefix = "tlsc", .redis_extra = extra};
	char *ini = h_daemon_ini(&o);
	assert_non_null(ini);
	if (h_daemon_start(&d, ini) != 0)
		fail_msg("warrantd did not start on a TLS cluster; log %s", d.log);
	free(ini);

	/* the test's own routing, over the plain ports */
	struct cluster_map *map = cluster_map_new();
	char err[300];
	assert_non_null(map);
	if (h_cluster_refresh(map, seeds, CNODES, 2000, err, sizeof err) != 0)
		fail_msg("%s", err);
	int used[CNODES] = {0};
	long long now = h_now_ms();
	for (int i = 0; i < 12; i++) {
		char id[32], prefix[64];
		snprintf(id, sizeof id, "cl-%d", i);
		unsigned sh = cluster_shard_of(id, strlen(id), 3);
		assert_int_equal(cluster_shard_prefix(prefix, sizeof prefix, "tlsc", sh, 3), 0);
		const struct cluster_node *own = cluster_map_owner(map,
		    cluster_key_slot(prefix, strlen(prefix)));
		assert_non_null(own);
		for (int k = 0; k < CNODES; k++)
			if (c[k].n.port == own->port)
				used[k] = 1;
		redisContext *nc = h_redis_connect_tcp(own->port);
		assert_non_null(nc);
		char *json = h_record_json(id, "gate.open", "canal/lateral-3/gate-14", now - 1000,
		    now + 120000, 0, NULL);
		assert_int_equal(h_decide(nc, prefix, id, json, 1), 0);
		free(json);
		redisFree(nc);
		struct on_node_p w = {own->port, prefix, id};
		if (h_wait_until(done_on_p, &w, 120000) != 0)
			fail_msg("%s not done; log %s", id, d.log);
	}
	cluster_map_free(map);
	int nodes_used = used[0] + used[1] + used[2];
	printf("itest_redis_tls: cluster: 12 jobs over %d of 3 TLS primaries\n", nodes_used);
	assert_true(nodes_used >= 2);
	int rcode;
	char *out = ctl_status(d.ini, &rcode);
	if (rcode != 0)
		fail_msg("warrantctl status on a TLS cluster exited %d: %s", rcode, out);
	free(out);
	assert_true(h_daemon_stop_clean(&d));
	for (int i = 0; i < CNODES; i++)
		(void)h_stop(c[i].n.pid, SIGTERM, 10000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_native_jobs),
		cmocka_unit_test(test_native_check),
		cmocka_unit_test(test_native_wrong_host),
		cmocka_unit_test(test_native_wrong_ca),
		cmocka_unit_test(test_native_cn_only),
		cmocka_unit_test(test_native_no_client_cert),
		cmocka_unit_test(test_sentinel_tls),
		cmocka_unit_test(test_cluster_tls),
		cmocka_unit_test(test_jobs_through_tls),
		cmocka_unit_test(test_wrong_ca_refused),
		cmocka_unit_test(test_wrong_host_refused),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
