/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_redis_tls: warrantd against a Redis that speaks only TLS, through the
 * stunnel client of systemd/warrantd-redis-tls.service (hiredis 0.14 has no
 * TLS). A throwaway CA is made with openssl at test time; redis-server gets
 * a tls-port with client certificates required; stunnel (Debian stunnel4)
 * verifies the server's chain and host name and shows its own certificate;
 * warrantd's [redis] socket is stunnel's unix socket. Jobs are done; with a
 * wrong CA, or a wrong host name, stunnel refuses the server.
 *
 * Skips with a printed reason when stunnel is not installed or redis-server
 * is built without TLS.
 */
#define _DEFAULT_SOURCE
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

#include "harness.h"

#define WAIT_MS		60000
#define PREFIX		"tls"

static struct h_stack S;
#define C (S.c)
static int tls_port;
static char *stunnel_bin;
static char dir[512];

/* Makes a CA, a server certificate for redis.test / 127.0.0.1, a client
 * certificate, and a second CA that signed nothing here. */
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
    "chmod 600 *.key\n";

static int
group_setup(void **state)
{
	char script[600], *out;
	(void)state;

	if (!(stunnel_bin = h_which("stunnel4")) && !(stunnel_bin = h_which("stunnel"))) {
		printf("itest_redis_tls: SKIP: stunnel not installed (Debian package stunnel4)\n");
		return 0;
	}
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
	assert_int_equal(h_wait_until(log_says_verify_failed, t.log, WAIT_MS), 0);
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jobs_through_tls),
		cmocka_unit_test(test_wrong_ca_refused),
		cmocka_unit_test(test_wrong_host_refused),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
