/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fake_redisgate: managed Redis' token enforcement (warrantd(7) §9: Azure Cache for
 * Redis with Entra ID, ElastiCache IAM), in front of a real redis-server, for
 * integration tests.
 *
 *   fake_redisgate --port-file FILE [--port N] --upstream-socket PATH
 *                  [--on-expiry noauth|close]
 *
 * Listens on 127.0.0.1. Every client connection gets one connection of its
 * own to the redis-server at PATH (which needs no AUTH: the gate does the
 * checking). AUTH [user] token is answered by the gate itself: the token must
 * be a JWT (three base64url parts) whose payload has a numeric `exp` in the
 * future -- what fake_idp and tests' token_command scripts issue -- else
 * -WRONGPASS. Until a connection's first good AUTH every command is answered
 * -NOAUTH. An AUTH counts at the moment Redis would answer it: in order,
 * after every reply to the commands sent before it (behind a blocking
 * XREADGROUP, when that read ends). A connection whose token's exp passes
 * (wall clock, to the ms) before an AUTH with a later exp has counted is
 * "enforced": with noauth, every later command but AUTH is answered -NOAUTH
 * (commands already forwarded are answered by Redis); with close, the
 * connection is closed, as Azure does.
 *
 * GATE.REVOKE (no AUTH needed) revokes every token seen so far, as an IdP
 * that disables a principal does: each connection authenticated with one is
 * enforced at once (the same -NOAUTH or close), and an AUTH with a token
 * whose exp is not later than the latest seen before it is -WRONGPASS. A
 * token issued afterwards (a later exp) is good. Answers +OK.
 *
 * GATE.STATS (no AUTH needed) answers a bulk string "conns=N auths=N
 * reauths=N enforced=N wrongpass=N noauth=N": connections accepted, first
 * AUTHs, AUTHs on an authenticated connection, expiries enforced, AUTHs
 * refused, and -NOAUTH replies sent. Logs one line per enforcement (never a
 * token). Single-threaded, libev; SIGTERM or SIGINT ends it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "jose/b64url.h"
#include "base/log.h"
#include "base/wtime.h"

#define BUF_MAX		(64u << 20)	/* a peer that sends more without a reply: dropped */

struct buf {
	char *p;
	size_t len, cap;
};

/* One command's place in the reply order: forwarded (Redis answers it) or
 * answered by the gate (reply ready at once). */
struct entry {
	struct entry *next;
	int local, have;
	char *reply;
	size_t rlen;
	int64_t auth_exp_ms;	/* > 0: a good AUTH, applied when its reply goes out */
};

struct conn {
	struct conn *prev, *next;	/* in g.all */
	int id, cfd, ufd;
	ev_io cio, uio;
	ev_timer exp_timer;
	struct buf cin, uin;
	struct entry *head, *tail;
	int64_t expires_ms;	/* wall ms of the AUTH Redis would have answered last;
				   0: never authenticated */
	int64_t queued_exp;	/* of the last good AUTH taken, answered or not */
	int authed, expired;
};

static struct {
	const char *upstream;
	int close_on_expiry;
	long long conns, auths, reauths, enforced, wrongpass, noauth;
	int64_t max_exp;	/* the latest exp of a good AUTH */
	int64_t revoked_exp;	/* GATE.REVOKE: tokens whose exp <= this are dead */
	struct conn *all;	/* every open connection */
	struct ev_loop *loop;
} g;

static int
buf_add(struct buf *b, const char *p, size_t n)
{
	if (b->len + n > BUF_MAX)
		return -1;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		char *q = realloc(b->p, cap);
		if (q == NULL)
			return -1;
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

static void
buf_eat(struct buf *b, size_t n)
{
	memmove(b->p, b->p + n, b->len - n);
	b->len -= n;
}

static int
write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void
conn_close(struct conn *c, const char *why)
{
	log_info("gate.closed", "conn=%d why=\"%s\"", c->id, why);
	if (c->prev)
		c->prev->next = c->next;
	else
		g.all = c->next;
	if (c->next)
		c->next->prev = c->prev;
	ev_io_stop(g.loop, &c->cio);
	ev_io_stop(g.loop, &c->uio);
	ev_timer_stop(g.loop, &c->exp_timer);
	close(c->cfd);
	close(c->ufd);
	while (c->head != NULL) {
		struct entry *e = c->head;
		c->head = e->next;
		free(e->reply);
		free(e);
	}
	free(c->cin.p);
	free(c->uin.p);
	free(c);
}

/* ---- RESP ---- */

/* A line "X...\r\n" at p: its length with CRLF, or 0 when incomplete. */
static size_t
line_len(const char *p, size_t n)
{
	const char *e = memmem(p, n, "\r\n", 2);
	return e ? (size_t)(e - p) + 2 : 0;
}

/* One whole reply at p: its length, 0 when incomplete, -1 on a protocol
 * error. */
static long
reply_len(const char *p, size_t n)
{
	size_t l = n > 0 ? line_len(p, n) : 0;

	if (l == 0)
		return 0;
	long v = strtol(p + 1, NULL, 10);
	switch (p[0]) {
	case '+': case '-': case ':':
		return (long)l;
	case '$':
		if (v < 0)
			return (long)l;
		return l + (size_t)v + 2 <= n ? (long)(l + (size_t)v + 2) : 0;
	case '*': {
		size_t off = l;
		for (long i = 0; i < v; i++) {
			long k = reply_len(p + off, n - off);
			if (k <= 0)
				return k;
			off += (size_t)k;
		}
		return (long)off;
	}
	}
	return -1;
}

#define MAX_ARGS_SEEN 3

/* One client command (a RESP array of bulk strings) at p: its length, 0 when
 * incomplete, -1 when not RESP. Its first MAX_ARGS_SEEN arguments into a/al,
 * their count (all of them) into *argc. */
static long
command_len(const char *p, size_t n, const char **a, size_t *al, long *argc)
{
	size_t l = n > 0 ? line_len(p, n) : 0;

	if (l == 0)
		return 0;
	if (p[0] != '*')
		return -1;
	*argc = strtol(p + 1, NULL, 10);
	size_t off = l;
	for (long i = 0; i < *argc; i++) {
		size_t bl = line_len(p + off, n - off);
		if (bl == 0)
			return 0;
		if (p[off] != '$')
			return -1;
		long v = strtol(p + off + 1, NULL, 10);
		if (v < 0)
			return -1;
		if (off + bl + (size_t)v + 2 > n)
			return 0;
		if (i < MAX_ARGS_SEEN) {
			a[i] = p + off + bl;
			al[i] = (size_t)v;
		}
		off += bl + (size_t)v + 2;
	}
	return *argc > 0 ? (long)off : -1;
}

/* The exp of a JWT, in wall ms; -1 when it is not one or has none. */
static int64_t
token_exp_ms(const char *t, size_t n)
{
	const char *d1 = memchr(t, '.', n);
	const char *d2 = d1 ? memchr(d1 + 1, '.', n - (size_t)(d1 + 1 - t)) : NULL;
	unsigned char *payload;
	size_t plen;
	int64_t exp = -1;

	if (d2 == NULL || b64url_decode_lax(d1 + 1, (size_t)(d2 - d1 - 1), &payload, &plen) != 0)
		return -1;
	json_t *o = json_loadb((const char *)payload, plen, 0, NULL);
	json_t *e = json_object_get(o, "exp");
	if (json_is_integer(e))
		exp = (int64_t)json_integer_value(e) * 1000;
	json_decref(o);
	free(payload);
	return exp;
}

/* ---- the order of replies ---- */

static struct entry *
push(struct conn *c, int local, const char *reply, int64_t auth_exp_ms)
{
	struct entry *e = calloc(1, sizeof *e);

	if (e == NULL)
		return NULL;
	e->local = local;
	if (local) {
		e->have = 1;
		e->reply = strdup(reply);
		e->rlen = strlen(reply);
		e->auth_exp_ms = auth_exp_ms;
	}
	if (c->tail)
		c->tail->next = e;
	else
		c->head = e;
	c->tail = e;
	return e;
}

static void arm_expiry(struct conn *c);

/* An AUTH counts now, when Redis would have answered it. */
static void
apply_auth(struct conn *c, int64_t exp_ms)
{
	if (c->authed && !c->expired)
		g.reauths++;
	else
		g.auths++;
	c->authed = 1;
	c->expired = 0;
	c->expires_ms = exp_ms;
	arm_expiry(c);
}

/* Every reply whose turn has come goes out. -1: the client is gone. */
static int
flush(struct conn *c)
{
	while (c->head != NULL && c->head->have) {
		struct entry *e = c->head;
		if (e->auth_exp_ms > 0)
			apply_auth(c, e->auth_exp_ms);
		int w = write_all(c->cfd, e->reply, e->rlen);
		c->head = e->next;
		if (c->head == NULL)
			c->tail = NULL;
		free(e->reply);
		free(e);
		if (w < 0)
			return -1;
	}
	return 0;
}

static void
on_expiry(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct conn *c = w->data;
	int64_t now = wtime_now_ms();
	(void)loop, (void)revents;

	if (c->expires_ms > now) {
		arm_expiry(c);
		return;
	}
	g.enforced++;
	log_warn("gate.enforced", "conn=%d late_ms=%lld action=%s", c->id,
	    (long long)(now - c->expires_ms), g.close_on_expiry ? "close" : "noauth");
	if (g.close_on_expiry)
		conn_close(c, "token expired");
	else
		c->expired = 1;
}

static void
arm_expiry(struct conn *c)
{
	int64_t left = c->expires_ms - wtime_now_ms();

	ev_timer_stop(g.loop, &c->exp_timer);
	ev_timer_set(&c->exp_timer, left > 0 ? (double)left / 1000.0 : 0.0, 0.0);
	ev_timer_start(g.loop, &c->exp_timer);
}

static int
is(const char *a, size_t al, const char *name)
{
	return al == strlen(name) && strncasecmp(a, name, al) == 0;
}

/* One command from the client. -1: drop the connection. */
static int
take_command(struct conn *c, const char *cmd, size_t len, const char **a, const size_t *al,
	     long argc)
{
	char stats[256], reply[300];

	if (is(a[0], al[0], "GATE.STATS")) {
		snprintf(stats, sizeof stats, "conns=%lld auths=%lld reauths=%lld enforced=%lld "
		    "wrongpass=%lld noauth=%lld", g.conns, g.auths, g.reauths, g.enforced,
		    g.wrongpass, g.noauth);
		snprintf(reply, sizeof reply, "$%zu\r\n%s\r\n", strlen(stats), stats);
		return push(c, 1, reply, 0) ? 0 : -1;
	}
	if (is(a[0], al[0], "GATE.REVOKE")) {
		g.revoked_exp = g.max_exp;
		for (struct conn *o = g.all, *next; o != NULL; o = next) {
			next = o->next;
			if (o == c || !o->authed || o->queued_exp > g.revoked_exp)
				continue;
			g.enforced++;
			log_warn("gate.enforced", "conn=%d action=%s why=revoked", o->id,
			    g.close_on_expiry ? "close" : "noauth");
			if (g.close_on_expiry)
				conn_close(o, "token revoked");
		}
		return push(c, 1, "+OK\r\n", 0) ? 0 : -1;
	}
	if (is(a[0], al[0], "AUTH")) {
		if (argc != 2 && argc != 3)
			return push(c, 1, "-ERR wrong number of arguments for 'auth' command\r\n",
			    0) ? 0 : -1;
		int i = argc == 3 ? 2 : 1;
		int64_t exp = token_exp_ms(a[i], al[i]);
		if (exp <= wtime_now_ms() || exp <= g.revoked_exp) {
			g.wrongpass++;
			log_info("gate.wrongpass", "conn=%d why=%s", c->id, exp < 0 ? "not-a-jwt" :
			    exp <= g.revoked_exp ? "revoked" : "expired");
			return push(c, 1, "-WRONGPASS invalid username-password pair or user is "
			    "disabled.\r\n", 0) ? 0 : -1;
		}
		c->queued_exp = exp;
		if (exp > g.max_exp)
			g.max_exp = exp;
		return push(c, 1, "+OK\r\n", exp) ? 0 : -1;
	}
	/* As Redis would see it when it comes to this command: after every
	 * AUTH taken before it. */
	int64_t now = wtime_now_ms();
	if (c->queued_exp <= now || c->queued_exp <= g.revoked_exp ||
	    (c->expired && c->queued_exp <= c->expires_ms)) {
		g.noauth++;
		return push(c, 1, "-NOAUTH Authentication required.\r\n", 0) ? 0 : -1;
	}
	if (push(c, 0, NULL, 0) == NULL || write_all(c->ufd, cmd, len) < 0)
		return -1;
	return 0;
}

static void
on_client(struct ev_loop *loop, ev_io *w, int revents)
{
	struct conn *c = w->data;
	char tmp[65536];
	(void)loop, (void)revents;

	ssize_t n = read(c->cfd, tmp, sizeof tmp);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0 || buf_add(&c->cin, tmp, (size_t)n) < 0) {
		conn_close(c, n == 0 ? "client closed" : "client error");
		return;
	}
	for (;;) {
		const char *a[MAX_ARGS_SEEN];
		size_t al[MAX_ARGS_SEEN];
		long argc = 0;
		long k = command_len(c->cin.p, c->cin.len, a, al, &argc);
		if (k == 0)
			break;
		if (k < 0 || take_command(c, c->cin.p, (size_t)k, a, al, argc) < 0) {
			conn_close(c, "bad command");
			return;
		}
		buf_eat(&c->cin, (size_t)k);
	}
	if (flush(c) < 0)
		conn_close(c, "client write failed");
}

static void
on_upstream(struct ev_loop *loop, ev_io *w, int revents)
{
	struct conn *c = w->data;
	char tmp[65536];
	(void)loop, (void)revents;

	ssize_t n = read(c->ufd, tmp, sizeof tmp);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0 || buf_add(&c->uin, tmp, (size_t)n) < 0) {
		conn_close(c, "upstream closed");
		return;
	}
	for (;;) {
		long k = reply_len(c->uin.p, c->uin.len);
		if (k == 0)
			break;
		struct entry *e = c->head;
		while (e != NULL && (e->local || e->have))
			e = e->next;
		if (k < 0 || e == NULL || (e->reply = malloc((size_t)k)) == NULL) {
			conn_close(c, "upstream protocol");
			return;
		}
		memcpy(e->reply, c->uin.p, (size_t)k);
		e->rlen = (size_t)k;
		e->have = 1;
		buf_eat(&c->uin, (size_t)k);
	}
	if (flush(c) < 0)
		conn_close(c, "client write failed");
}

static int
connect_upstream(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", g.upstream);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
		return fd;
	if (fd >= 0)
		close(fd);
	return -1;
}

static void
on_accept(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)revents;
	int cfd = accept4(w->fd, NULL, NULL, SOCK_CLOEXEC);
	if (cfd < 0)
		return;
	int ufd = connect_upstream();
	struct conn *c = ufd >= 0 ? calloc(1, sizeof *c) : NULL;
	if (c == NULL) {
		close(cfd);
		if (ufd >= 0)
			close(ufd);
		return;
	}
	c->id = (int)++g.conns;
	c->next = g.all;
	if (g.all)
		g.all->prev = c;
	g.all = c;
	c->cfd = cfd;
	c->ufd = ufd;
	ev_io_init(&c->cio, on_client, cfd, EV_READ);
	ev_io_init(&c->uio, on_upstream, ufd, EV_READ);
	ev_init(&c->exp_timer, on_expiry);
	c->cio.data = c->uio.data = c->exp_timer.data = c;
	ev_io_start(loop, &c->cio);
	ev_io_start(loop, &c->uio);
}

static void
on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)w, (void)revents;
	ev_break(loop, EVBREAK_ALL);
}

static int
usage(void)
{
	fprintf(stderr, "usage: fake_redisgate --port-file FILE [--port N] --upstream-socket PATH "
	    "[--on-expiry noauth|close]\n");
	return 64;
}

int
main(int argc, char **argv)
{
	const char *port_file = NULL;
	int port = 0;

	log_init("fake_redisgate");
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--port-file") == 0)
			port_file = argv[i + 1];
		else if (strcmp(argv[i], "--port") == 0)
			port = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--upstream-socket") == 0)
			g.upstream = argv[i + 1];
		else if (strcmp(argv[i], "--on-expiry") == 0 && (strcmp(argv[i + 1], "close") == 0 ||
		    strcmp(argv[i + 1], "noauth") == 0))
			g.close_on_expiry = strcmp(argv[i + 1], "close") == 0;
		else
			return usage();
	}
	if (argc % 2 != 1 || port_file == NULL || g.upstream == NULL)
		return usage();
	signal(SIGPIPE, SIG_IGN);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof sa;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(lfd, 128) != 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl) != 0) {
		perror("fake_redisgate: listen");
		return 1;
	}
	char tmp[512];
	snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
	FILE *f = fopen(tmp, "w");
	if (f == NULL || fprintf(f, "%d\n", ntohs(sa.sin_port)) < 0 || fclose(f) != 0 ||
	    rename(tmp, port_file) != 0) {
		perror("fake_redisgate: port file");
		return 1;
	}
	g.loop = ev_default_loop(0);
	ev_io lio;
	ev_signal st, si;
	ev_io_init(&lio, on_accept, lfd, EV_READ);
	ev_io_start(g.loop, &lio);
	ev_signal_init(&st, on_signal, SIGTERM);
	ev_signal_init(&si, on_signal, SIGINT);
	ev_signal_start(g.loop, &st);
	ev_signal_start(g.loop, &si);
	log_info("gate.listening", "port=%d upstream=\"%s\" on_expiry=%s", ntohs(sa.sin_port),
	    g.upstream, g.close_on_expiry ? "close" : "noauth");
	ev_run(g.loop, 0);
	log_info("gate.stopped", "conns=%lld auths=%lld reauths=%lld enforced=%lld wrongpass=%lld "
	    "noauth=%lld", g.conns, g.auths, g.reauths, g.enforced, g.wrongpass, g.noauth);
	close(lfd);
	return 0;
}
