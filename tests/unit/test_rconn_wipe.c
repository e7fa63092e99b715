/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit test for rconn's output buffer (issue 37 item 5): the bytes of an
 * AUTH -- the Redis password or token -- are wiped from rconn's output
 * buffer as soon as the socket took them, at the handshake and at a
 * re-AUTH (rconn_reauth), and nothing of them is left behind when the
 * buffer moves or grows.
 *
 * Linked with -Wl,--wrap=rtls_link_write (see the Makefile): the wrapper
 * sees every write rconn makes, remembers where in rconn's buffer the bytes
 * holding the secret were, and the test looks there once the write
 * returned. No Redis: the connection goes to a unix socket of the test's
 * own that is never accepted from (the kernel queues what is written).
 */
#define _GNU_SOURCE	/* memmem */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <ev.h>

#include "core/allowlist.h"
#include "redis/rconn.h"
#include "redis/rtls.h"

#define SECRET1 "s3cr3t-Handshake-Wipe-Me"
#define SECRET2 "s3cr3t-Reauth-Wipe-Me-Too"

ssize_t __real_rtls_link_write(struct rtls_conn *t, const void *buf, size_t n);
ssize_t __wrap_rtls_link_write(struct rtls_conn *t, const void *buf, size_t n);
void __real_free(void *p);
void __wrap_free(void *p);

static struct {
	const char *secret;	/* looked for in each write */
	const unsigned char *at;	/* where it was in rconn's buffer */
	size_t len;
	int writes, hits;
	int stall;		/* writes "would block": the bytes stay queued */
	const unsigned char *obuf;	/* the buffer of the first stalled write */
	size_t olen;
	int obuf_freed, obuf_dirty;	/* it was freed; with the secret in it */
} seen;

/* Every free of the test and the library: the stalled buffer's bytes are
 * looked at as it goes. */
void
__wrap_free(void *p)
{
	if (p != NULL && p == (const void *)seen.obuf) {
		seen.obuf_freed = 1;
		seen.obuf_dirty = memmem(p, seen.olen, SECRET1, strlen(SECRET1)) != NULL;
		seen.obuf = NULL;
	}
	__real_free(p);
}

ssize_t
__wrap_rtls_link_write(struct rtls_conn *t, const void *buf, size_t n)
{
	if (seen.stall) {
		if (seen.obuf == NULL && !seen.obuf_freed) {
			seen.obuf = buf;
			seen.olen = n;
		}
		return 0;
	}
	ssize_t r = __real_rtls_link_write(t, buf, n);

	seen.writes++;
	if (r > 0 && seen.secret != NULL) {
		const unsigned char *p = memmem(buf, (size_t)r, seen.secret, strlen(seen.secret));
		if (p != NULL) {
			seen.at = p;
			seen.len = strlen(seen.secret);
			seen.hits++;
		}
	}
	return r;
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs the loop until the secret was written (at most 5 s). */
static void
run_until_written(struct ev_loop *loop)
{
	for (int64_t end = now_ms() + 5000; seen.hits == 0 && now_ms() < end;) {
		ev_run(loop, EVRUN_NOWAIT);
		if (seen.hits == 0)
			usleep(1000);
	}
	assert_int_equal(seen.hits, 1);
}

static int
all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0)
			return 0;
	return 1;
}

static void
test_auth_bytes_wiped(void **state)
{
	char dir[] = "/tmp/rconn-wipe-XXXXXX", path[64];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/redis.sock", dir);
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(lfd, 4), 0);

	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	assert_non_null(loop);
	struct rconn_opts o = {
		.socket = path, .username = "warrantd", .password = SECRET1,
		.connect_timeout_ms = 5000, .command_timeout_ms = 5000,
		.backoff_min_ms = 1000, .backoff_max_ms = 1000,
	};
	seen.secret = SECRET1;
	struct rconn *rc = rconn_new(loop, &o, "wipe", NULL, NULL);
	assert_non_null(rc);

	/* the handshake's AUTH went out: rconn's copy of it is zero */
	run_until_written(loop);
	if (!all_zero(seen.at, seen.len))
		fail_msg("the handshake's AUTH stays in rconn's output buffer: %.*s",
		    (int)seen.len, (const char *)seen.at);

	/* a re-AUTH with a new token: the same (the handshake still waits
	 * for its replies, so the connection holds it) */
	seen.secret = SECRET2;
	seen.hits = 0;
	assert_int_equal(rconn_reauth(rc, SECRET2, 0), 0);
	run_until_written(loop);
	if (!all_zero(seen.at, seen.len))
		fail_msg("a re-AUTH stays in rconn's output buffer: %.*s", (int)seen.len,
		    (const char *)seen.at);

	rconn_free(rc);
	ev_loop_destroy(loop);
	close(lfd);
	unlink(path);
	rmdir(dir);
}

/* The output buffer grows while an AUTH waits in it (the socket takes
 * nothing): the old block is wiped before it is freed, never handed to
 * realloc with the password in it. */
static void
test_growth_wipes_old_block(void **state)
{
	char dir[] = "/tmp/rconn-grow-XXXXXX", path[64];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	(void)state;
	memset(&seen, 0, sizeof seen);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/redis.sock", dir);
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(lfd, 4), 0);
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	assert_non_null(loop);
	struct rconn_opts o = {
		.socket = path, .password = SECRET1,
		.connect_timeout_ms = 5000, .command_timeout_ms = 5000,
		.backoff_min_ms = 1000, .backoff_max_ms = 1000,
	};
	seen.stall = 1;
	struct rconn *rc = rconn_new(loop, &o, "grow", NULL, NULL);
	assert_non_null(rc);
	for (int64_t end = now_ms() + 5000; seen.obuf == NULL && now_ms() < end; usleep(1000))
		ev_run(loop, EVRUN_NOWAIT);
	assert_non_null(seen.obuf);	/* the handshake waits in the buffer */
	assert_non_null(memmem(seen.obuf, seen.olen, SECRET1, strlen(SECRET1)));
	/* a token longer than the buffer's room makes it grow */
	size_t big = 20000;
	char *tok = malloc(big + 1);
	assert_non_null(tok);
	memset(tok, 't', big);
	tok[big] = '\0';
	assert_int_equal(rconn_reauth(rc, tok, 0), 0);
	free(tok);
	if (!seen.obuf_freed)
		fail_msg("the old output buffer was not freed by rconn (realloc'd with the AUTH in it)");
	assert_false(seen.obuf_dirty);
	seen.stall = 0;
	rconn_free(rc);
	ev_loop_destroy(loop);
	close(lfd);
	unlink(path);
	rmdir(dir);
}

/* An address of this machine that is not loopback, or 0. */
static int
own_address(char *buf, size_t n)
{
	struct ifaddrs *ifs, *i;
	int found = 0;

	if (getifaddrs(&ifs) != 0)
		return 0;
	for (i = ifs; i != NULL && !found; i = i->ifa_next) {
		if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET)
			continue;
		const struct in_addr *a = &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr;
		if ((ntohl(a->s_addr) >> 24) == 127)
			continue;
		found = inet_ntop(AF_INET, a, buf, (socklen_t)n) != NULL;
	}
	freeifaddrs(ifs);
	return found;
}

static int
linked(struct ev_loop *loop, int lfd)
{
	for (int64_t end = now_ms() + 5000; now_ms() < end;) {
		ev_run(loop, EVRUN_NOWAIT);
		int fd = accept(lfd, NULL, NULL);
		if (fd >= 0)
			return fd;
		usleep(1000);
	}
	return -1;
}

/* Issue 37 item 1, at re-authentication: a TCP link to a host that is not
 * loopback, made without a credential (none was there yet) and so never
 * checked for one, gets a token by rconn_reauth: no AUTH goes out in clear
 * text, the refusal is counted, and the connection is made again (and
 * refused the same way). */
static void
test_reauth_cleartext_refused(void **state)
{
	char host[INET_ADDRSTRLEN];

	(void)state;
	if (!own_address(host, sizeof host))
		skip();		/* this machine has only loopback */
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof sa;
	assert_int_equal(inet_pton(AF_INET, host, &sa.sin_addr), 1);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(lfd, 4), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);

	struct allowlist *al = allowlist_new();
	long long refused = 0;
	assert_non_null(al);
	allowlist_count_in(al, &refused);
	assert_int_equal(allowlist_add_host(al, host, ntohs(sa.sin_port)), 0);
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	assert_non_null(loop);
	struct rconn_opts o = {
		.host = host, .port = ntohs(sa.sin_port), .allow = al,
		.connect_timeout_ms = 5000, .command_timeout_ms = 5000,
		.backoff_min_ms = 1000, .backoff_max_ms = 1000,
	};
	seen.secret = SECRET2;
	seen.hits = 0;
	struct rconn *rc = rconn_new(loop, &o, "reauth", NULL, NULL);
	assert_non_null(rc);
	int fd = linked(loop, lfd);	/* no credential: connected, ROLE sent */
	assert_true(fd >= 0);
	assert_int_equal(refused, 0);
	assert_int_equal(rconn_reauth(rc, SECRET2, 0), 0);
	for (int i = 0; i < 50; i++) {
		ev_run(loop, EVRUN_NOWAIT);
		usleep(1000);
	}
	assert_int_equal(seen.hits, 0);		/* never written */
	assert_true(refused >= 1);
	char buf[4096];
	ssize_t got = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
	if (got > 0 && memmem(buf, (size_t)got, SECRET2, strlen(SECRET2)) != NULL)
		fail_msg("the token reached the listener in clear text");
	close(fd);
	rconn_free(rc);
	ev_loop_destroy(loop);
	allowlist_free(al);
	close(lfd);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_auth_bytes_wiped),
		cmocka_unit_test(test_growth_wipes_old_block),
		cmocka_unit_test(test_reauth_cleartext_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
