/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fake_rnode: a hostile or a stuck Redis node, for the discovery tests
 * (issue 27: allow_hosts, asynchronous discovery).
 *
 *   fake_rnode --port-file FILE [--port N] --mode MODE [--target HOST:PORT]
 *
 * Listens on 127.0.0.1; speaks RESP to any number of clients (poll, one
 * thread). AUTH is +OK, PING +PONG, in every mode but `silent`. Modes:
 *   sentinel  a sentinel (ROLE "sentinel") whose SENTINEL
 *             get-master-addr-by-name answers TARGET, whatever the name
 *   moved     a cluster primary owning every slot (CLUSTER SHARDS names
 *             itself) that answers every other command -MOVED <slot> TARGET
 *   ask       the same with -ASK <slot> TARGET
 *   shards    a cluster node whose CLUSTER SHARDS names TARGET as the
 *             primary of every slot
 *   replica   a node whose ROLE says "slave" (of TARGET)
 *   silent    accepts connections and never answers
 *   huge      a primary that answers every other command with a bulk
 *             string of almost 1 TB ("$999999999999") and 64 KiB of it
 * Anything else is -ERR. Every command's name goes to stderr (its log).
 * SIGTERM or SIGINT ends it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#define CLIENTS_MAX	64

static volatile sig_atomic_t stop;
static const char *mode = "";
static char thost[256] = "127.0.0.2";
static int tport = 6379, myport;

struct client {
	int fd;
	redisReader *rd;
};

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void
say(int fd, const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

static void
sayf(int fd, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n > 0)
		say(fd, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

static void
bulk(char *out, size_t n, const char *s)
{
	snprintf(out, n, "$%zu\r\n%s\r\n", strlen(s), s);
}

/* CLUSTER SHARDS: one shard of every slot, its primary at host:port. */
static void
shards(int fd, const char *host, int port)
{
	char h[300], role[32];

	bulk(h, sizeof h, host);
	bulk(role, sizeof role, "master");
	sayf(fd, "*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*1\r\n*10\r\n"
	    "$2\r\nid\r\n$4\r\nfake\r\n$4\r\nport\r\n:%d\r\n$2\r\nip\r\n%s"
	    "$8\r\nendpoint\r\n%s$4\r\nrole\r\n%s", port, h, h, role);
}

static void
answer(int fd, const redisReply *r)
{
	if (r->type != REDIS_REPLY_ARRAY || r->elements == 0 ||
	    r->element[0]->type != REDIS_REPLY_STRING) {
		sayf(fd, "-ERR not a command\r\n");
		return;
	}
	const char *cmd = r->element[0]->str;
	const char *sub = r->elements > 1 && r->element[1]->type == REDIS_REPLY_STRING ?
	    r->element[1]->str : "";
	fprintf(stderr, "fake_rnode: %s %s\n", cmd, strcasecmp(cmd, "AUTH") == 0 ? "(...)" : sub);
	if (strcasecmp(cmd, "AUTH") == 0 || strcasecmp(cmd, "ASKING") == 0 ||
	    strcasecmp(cmd, "SELECT") == 0) {
		sayf(fd, "+OK\r\n");
	} else if (strcasecmp(cmd, "PING") == 0) {
		sayf(fd, "+PONG\r\n");
	} else if (strcasecmp(cmd, "ROLE") == 0) {
		if (strcmp(mode, "sentinel") == 0)
			sayf(fd, "*2\r\n$8\r\nsentinel\r\n*0\r\n");
		else if (strcmp(mode, "replica") == 0)
			sayf(fd, "*5\r\n$5\r\nslave\r\n$%zu\r\n%s\r\n:%d\r\n$9\r\nconnected\r\n"
			    ":0\r\n", strlen(thost), thost, tport);
		else
			sayf(fd, "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n");
	} else if (strcmp(mode, "sentinel") == 0 && strcasecmp(cmd, "SENTINEL") == 0) {
		char h[300], p[32], ps[16];
		snprintf(ps, sizeof ps, "%d", tport);
		bulk(h, sizeof h, thost);
		bulk(p, sizeof p, ps);
		sayf(fd, "*2\r\n%s%s", h, p);
	} else if (strcasecmp(cmd, "CLUSTER") == 0 && strcasecmp(sub, "SHARDS") == 0) {
		if (strcmp(mode, "shards") == 0)
			shards(fd, thost, tport);
		else
			shards(fd, "127.0.0.1", myport);
	} else if (strcmp(mode, "huge") == 0) {
		static char junk[65536];
		memset(junk, 'x', sizeof junk);
		sayf(fd, "$999999999999\r\n");
		(void)send(fd, junk, sizeof junk, MSG_NOSIGNAL | MSG_DONTWAIT);
	} else if (strcmp(mode, "moved") == 0 || strcmp(mode, "ask") == 0) {
		sayf(fd, "-%s 1234 %s:%d\r\n", strcmp(mode, "moved") == 0 ? "MOVED" : "ASK",
		    thost, tport);
	} else {
		sayf(fd, "-ERR fake_rnode: unknown command\r\n");
	}
}

/* 0, or -1 when the client is to go. */
static int
serve(struct client *c)
{
	char buf[16384];
	ssize_t n = read(c->fd, buf, sizeof buf);

	if (n <= 0)
		return n < 0 && errno == EINTR ? 0 : -1;
	if (strcmp(mode, "silent") == 0)
		return 0;
	if (redisReaderFeed(c->rd, buf, (size_t)n) != REDIS_OK)
		return -1;
	for (;;) {
		void *r = NULL;
		if (redisReaderGetReply(c->rd, &r) != REDIS_OK)
			return -1;
		if (r == NULL)
			return 0;
		answer(c->fd, r);
		freeReplyObject(r);
	}
}

static int
listen_on(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		return -1;
	myport = ntohs(a.sin_port);
	return fd;
}

static int
write_port(const char *path)
{
	char tmp[600];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (f == NULL)
		return -1;
	fprintf(f, "%d\n", myport);
	if (fclose(f) != 0)
		return -1;
	return rename(tmp, path);
}

int
main(int argc, char **argv)
{
	const char *port_file = NULL;
	int port = 0;
	struct client cl[CLIENTS_MAX];
	size_t ncl = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--port-file") == 0) {
			port_file = argv[i + 1];
		} else if (strcmp(argv[i], "--port") == 0) {
			port = atoi(argv[i + 1]);
		} else if (strcmp(argv[i], "--mode") == 0) {
			mode = argv[i + 1];
		} else if (strcmp(argv[i], "--target") == 0) {
			const char *colon = strrchr(argv[i + 1], ':');
			if (colon == NULL)
				return 2;
			snprintf(thost, sizeof thost, "%.*s", (int)(colon - argv[i + 1]),
			    argv[i + 1]);
			tport = atoi(colon + 1);
		} else {
			return 2;
		}
	}
	if (port_file == NULL || mode[0] == '\0') {
		fprintf(stderr, "usage: fake_rnode --port-file FILE [--port N] --mode MODE "
		    "[--target HOST:PORT]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	int lfd = listen_on(port);
	if (lfd < 0 || write_port(port_file) < 0) {
		perror("fake_rnode");
		return 1;
	}
	while (!stop) {
		struct pollfd p[CLIENTS_MAX + 1];
		p[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
		for (size_t i = 0; i < ncl; i++)
			p[i + 1] = (struct pollfd){.fd = cl[i].fd, .events = POLLIN};
		if (poll(p, ncl + 1, 200) < 0)
			continue;
		for (size_t i = ncl; i-- > 0;)
			if (p[i + 1].revents != 0 && serve(&cl[i]) < 0) {
				close(cl[i].fd);
				redisReaderFree(cl[i].rd);
				cl[i] = cl[--ncl];
			}
		if (p[0].revents & POLLIN) {
			int fd = accept(lfd, NULL, NULL);
			if (fd >= 0 && ncl < CLIENTS_MAX && (cl[ncl].rd = redisReaderCreate()) != NULL) {
				cl[ncl++].fd = fd;
				fprintf(stderr, "fake_rnode: connection\n");
			} else if (fd >= 0) {
				close(fd);
			}
		}
	}
	return 0;
}
