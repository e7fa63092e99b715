/*
 * hconn: kept-alive connections for the native HTTP/1.1 client. See hconn.h.
 *
 * A connection's watcher stays started with EV_READ from the connect to the
 * close, idle or busy (EV_WRITE only while a connect or a send is under way),
 * so a reused connection costs no epoll_ctl. An exchange owns its answer's
 * reader, so the connection can go back to the idle list before the callback
 * and the answer's bytes still live through it.
 *
 * Re-entrancy: callbacks run last in each path, after the exchange has left
 * its connection and the pool's lists; nothing of the exchange is read after
 * its callback but to put it back on the free list.
 */
#define _GNU_SOURCE	/* SOCK_NONBLOCK, SOCK_CLOEXEC, MSG_NOSIGNAL */
#include "hconn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "h1.h"

/* Exchanges kept for reuse with their readers; each reader keeps buffers up
 * to HCONN_KEEP_BUF (an answer of a few hundred bytes needs no malloc). */
#define HCONN_FREE_XFERS 512
#define HCONN_KEEP_BUF 1024
#define HCONN_READ_BUF 16384

struct host;

struct conn {
	struct ev_io io;		/* first: the watcher's address is the conn's */
	struct hconn_pool *pool;
	struct host *host;
	struct hconn_xfer *x;		/* the exchange on it, or NULL when idle */
	struct conn *prev, *next;	/* in its host's idle list while idle */
	int connecting;
	int used;			/* it carried an exchange before this one */
};

struct host {
	struct sockaddr_storage addr;
	socklen_t addr_len;
	struct conn *idle;		/* most recently used first */
	struct host *next;
};

struct hconn_xfer {
	struct hconn_pool *pool;
	struct hconn_xfer *prev, *next;	/* the pool's active list, or the free list */
	struct conn *c;
	struct h1_reader *rd;
	struct ev_timer timer;
	hconn_done_cb *cb;
	void *arg;
	struct host *host;
	const char *hostname;
	const char *head, *body;
	size_t head_len, body_len, sent;
	size_t body_max;
	int head_request, resent;
	int failed;			/* err holds a failure the timer reports */
	long connects, timeout_ms;
	char err[256];
};

struct hconn_pool {
	struct ev_loop *loop;
	struct host *hosts;
	struct hconn_xfer *active;
	struct hconn_xfer *free;
	size_t nfree, nidle;
};

static void conn_io_cb(struct ev_loop *loop, struct ev_io *w, int revents);

/* ---- connections ---- */

static void
idle_unlink(struct conn *c)
{
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		c->host->idle = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
	c->pool->nidle--;
}

static void
conn_close(struct conn *c)
{
	ev_io_stop(c->pool->loop, &c->io);
	close(c->io.fd);
	free(c);
}

static void
conn_events(struct conn *c, int events)
{
	if (c->io.events == events)
		return;
	ev_io_stop(c->pool->loop, &c->io);
	ev_io_set(&c->io, c->io.fd, events);
	ev_io_start(c->pool->loop, &c->io);
}

/* The same keep-alive probes curl was set to (http.c's easy_setup). */
static void
socket_options(int fd)
{
	int one = 1, idle = 30, intvl = 15;

	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	(void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
	(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
}

/* A new connection under way to the host; NULL with errno set. */
static struct conn *
conn_open(struct hconn_pool *p, struct host *h)
{
	struct conn *c = calloc(1, sizeof *c);
	int fd;

	if (c == NULL)
		return NULL;
	fd = socket(h->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		free(c);
		return NULL;
	}
	socket_options(fd);
	if (connect(fd, (const struct sockaddr *)&h->addr, h->addr_len) < 0 &&
	    errno != EINPROGRESS) {
		int e = errno;
		close(fd);
		free(c);
		errno = e;
		return NULL;
	}
	c->pool = p;
	c->host = h;
	c->connecting = 1;
	ev_io_init(&c->io, conn_io_cb, fd, EV_READ | EV_WRITE);
	ev_io_start(p->loop, &c->io);
	return c;
}

static struct host *
host_get(struct hconn_pool *p, const struct sockaddr *sa, socklen_t len)
{
	struct host *h;

	for (h = p->hosts; h != NULL; h = h->next)
		if (h->addr_len == len && memcmp(&h->addr, sa, len) == 0)
			return h;
	if (len > sizeof h->addr || (h = calloc(1, sizeof *h)) == NULL)
		return NULL;
	memcpy(&h->addr, sa, len);
	h->addr_len = len;
	h->next = p->hosts;
	p->hosts = h;
	return h;
}

/* ---- exchanges ---- */

static void
active_unlink(struct hconn_xfer *x)
{
	struct hconn_pool *p = x->pool;

	if (x->prev != NULL)
		x->prev->next = x->next;
	else
		p->active = x->next;
	if (x->next != NULL)
		x->next->prev = x->prev;
	x->prev = x->next = NULL;
}

static void
xfer_release(struct hconn_xfer *x)
{
	struct hconn_pool *p = x->pool;

	if (p->nfree >= HCONN_FREE_XFERS) {
		h1_reader_free(x->rd);
		free(x);
		return;
	}
	h1_reader_reset(x->rd, 0, 0, HCONN_KEEP_BUF);
	x->next = p->free;
	p->free = x;
	p->nfree++;
}

/* The exchange leaves its connection: kept for the next one when the answer
 * allows it and there is room, else closed. */
static void
detach(struct hconn_xfer *x, int reusable)
{
	struct conn *c = x->c;
	struct hconn_pool *p = x->pool;

	ev_timer_stop(p->loop, &x->timer);
	active_unlink(x);
	x->c = NULL;
	if (c == NULL)
		return;
	c->x = NULL;
	if (!reusable || p->nidle >= HCONN_MAX_IDLE) {
		conn_close(c);
		return;
	}
	c->used = 1;
	conn_events(c, EV_READ);
	c->next = c->host->idle;
	if (c->next != NULL)
		c->next->prev = c;
	c->host->idle = c;
	p->nidle++;
}

static void
finish(struct hconn_xfer *x, long status, const char *error, int timed_out)
{
	struct hconn_result r = {.status = status, .timed_out = timed_out,
	    .too_large = h1_reader_too_large(x->rd), .error = error,
	    .connects = x->connects};

	if (status > 0) {
		r.body = h1_reader_body(x->rd, &r.body_len);
		r.retry_after = h1_reader_retry_after(x->rd);
		r.www_authenticate = h1_reader_www_authenticate(x->rd);
	} else {
		r.body = "";
	}
	x->cb(&r, x->arg);
	xfer_release(x);
}

/* sin_port and sin6_port lie at the same place */
static unsigned
port_of(const struct host *h)
{
	return ntohs(((const struct sockaddr_in *)(const void *)&h->addr)->sin_port);
}

/* The error text of a transport failure, worded as curl's. */
static void
say_failure(struct hconn_xfer *x, const char *verb, const char *what)
{
	snprintf(x->err, sizeof x->err, "%s %s port %u: %s", verb, x->hostname, port_of(x->host),
	    what);
}

/* A transport failure, called back now. */
static void
fail_now(struct hconn_xfer *x, const char *verb, const char *what)
{
	say_failure(x, verb, what);
	detach(x, 0);
	finish(x, 0, x->err, 0);
}

/* A failure found inside hconn_start: its connection closed now, the
 * callback from the loop (the timer, due at once). */
static void
fail_later(struct hconn_xfer *x, const char *verb, const char *what)
{
	say_failure(x, verb, what);
	if (x->c != NULL) {
		x->c->x = NULL;
		conn_close(x->c);
		x->c = NULL;
	}
	x->failed = 1;
	ev_timer_set(&x->timer, 0.0, 0.0);
}

/* Puts the exchange on a new connection. -1 with errno when none opens. */
static int
attach_new(struct hconn_xfer *x)
{
	struct conn *c = conn_open(x->pool, x->host);

	if (c == NULL)
		return -1;
	c->x = x;
	x->c = c;
	x->connects++;
	x->sent = 0;
	return 0;
}

/* A kept connection the server had closed took the request, or none of it:
 * once, the request goes again on a new connection. 1: it goes again; 0:
 * this failure is the answer; -1 (errno): no new connection opened. */
static int
resend(struct hconn_xfer *x)
{
	struct conn *old = x->c;

	if (old == NULL || !old->used || x->resent || h1_reader_started(x->rd))
		return 0;
	x->resent = 1;
	old->x = NULL;
	conn_close(old);
	x->c = NULL;
	h1_reader_reset(x->rd, x->head_request, x->body_max, HCONN_KEEP_BUF);
	return attach_new(x) < 0 ? -1 : 1;
}

/* The connection failed under the exchange (err, an errno): sent again on
 * a new one, or called back. */
static void
io_failed(struct hconn_xfer *x, const char *verb, int err)
{
	int r = resend(x);

	if (r == 0)
		fail_now(x, verb, strerror(err));
	else if (r < 0)
		fail_now(x, "Failed to connect to", strerror(errno));
}

/* Sends what is left of the request. 0: sent, or the rest waits for
 * EV_WRITE; -1 with errno: the connection failed. */
static int
send_some(struct hconn_xfer *x)
{
	struct iovec iov[2];
	struct msghdr msg = {.msg_iov = iov};
	size_t total = x->head_len + x->body_len;
	ssize_t n;

	/* sendmsg does not write through iov_base: the casts drop const only */
	if (x->sent < x->head_len) {
		iov[0].iov_base = (void *)(x->head + x->sent);
		iov[0].iov_len = x->head_len - x->sent;
		iov[1].iov_base = (void *)x->body;
		iov[1].iov_len = x->body_len;
		msg.msg_iovlen = x->body_len > 0 ? 2 : 1;
	} else {
		iov[0].iov_base = (void *)(x->body + (x->sent - x->head_len));
		iov[0].iov_len = total - x->sent;
		msg.msg_iovlen = 1;
	}
	n = sendmsg(x->c->io.fd, &msg, MSG_NOSIGNAL);
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			return -1;
		conn_events(x->c, EV_READ | EV_WRITE);
		return 0;
	}
	x->sent += (size_t)n;
	conn_events(x->c, x->sent < total ? EV_READ | EV_WRITE : EV_READ);
	return 0;
}

static void
connected(struct hconn_xfer *x)
{
	int err = 0;
	socklen_t len = sizeof err;

	if (getsockopt(x->c->io.fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err != 0) {
		fail_now(x, "Failed to connect to", strerror(err));
		return;
	}
	x->c->connecting = 0;
	if (send_some(x) < 0)
		io_failed(x, "Send failure to", errno);
}

static void
answered(struct hconn_xfer *x, enum h1_rc rc, int extra)
{
	if (rc == H1_DONE) {
		long status = h1_reader_status(x->rd);
		detach(x, h1_reader_keep_alive(x->rd) && !extra);
		finish(x, status, "", 0);
		return;
	}
	snprintf(x->err, sizeof x->err, "%s", h1_reader_error(x->rd));
	detach(x, 0);
	finish(x, 0, x->err, 0);
}

static void
receive(struct hconn_xfer *x)
{
	char buf[HCONN_READ_BUF];
	ssize_t n = read(x->c->io.fd, buf, sizeof buf);
	enum h1_rc rc;
	size_t used;

	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		io_failed(x, "Recv failure from", errno);
		return;
	}
	if (n == 0) {
		int r = resend(x);
		if (r == 0)
			answered(x, h1_reader_eof(x->rd), 0);
		else if (r < 0)
			fail_now(x, "Failed to connect to", strerror(errno));
		return;
	}
	rc = h1_reader_feed(x->rd, buf, (size_t)n, &used);
	if (rc != H1_MORE)
		answered(x, rc, used < (size_t)n);
}

/* An idle connection is readable: the server closed it (or sent what no
 * request asked for). Either way it is done. */
static void
idle_readable(struct conn *c)
{
	idle_unlink(c);
	conn_close(c);
}

static void
conn_io_cb(struct ev_loop *loop, struct ev_io *w, int revents)
{
	struct conn *c = (struct conn *)(void *)w;
	struct hconn_xfer *x = c->x;

	(void)loop;
	if (x == NULL) {
		idle_readable(c);
		return;
	}
	if (c->connecting) {
		if (revents & (EV_WRITE | EV_READ))
			connected(x);
		return;
	}
	if ((revents & EV_WRITE) && x->sent < x->head_len + x->body_len) {
		if (send_some(x) < 0)
			io_failed(x, "Send failure to", errno);
		return;
	}
	if (revents & EV_READ)
		receive(x);
}

static void
timer_cb(struct ev_loop *loop, struct ev_timer *w, int revents)
{
	struct hconn_xfer *x = w->data;
	size_t got = 0;

	(void)loop;
	(void)revents;
	if (x->failed) {
		detach(x, 0);
		finish(x, 0, x->err, 0);
		return;
	}
	(void)h1_reader_body(x->rd, &got);
	snprintf(x->err, sizeof x->err,
	    "Operation timed out after %ld milliseconds with %zu bytes received",
	    x->timeout_ms, got);
	detach(x, 0);
	finish(x, 0, x->err, 1);
}

static struct hconn_xfer *
xfer_get(struct hconn_pool *p)
{
	struct hconn_xfer *x = p->free;

	if (x != NULL) {
		p->free = x->next;
		p->nfree--;
		return x;
	}
	x = calloc(1, sizeof *x);
	if (x == NULL)
		return NULL;
	if ((x->rd = h1_reader_new()) == NULL) {
		free(x);
		return NULL;
	}
	x->pool = p;
	ev_timer_init(&x->timer, timer_cb, 0.0, 0.0);
	x->timer.data = x;
	return x;
}

static void
xfer_fill(struct hconn_xfer *x, struct host *h, const struct hconn_req *req, hconn_done_cb *cb,
	  void *arg)
{
	x->c = NULL;
	x->host = h;
	x->hostname = req->host;
	x->head = req->head;
	x->head_len = req->head_len;
	x->body = req->body != NULL ? req->body : "";
	x->body_len = req->body_len;
	x->head_request = req->head_request;
	x->body_max = req->body_max;
	x->timeout_ms = req->timeout_ms;
	x->cb = cb;
	x->arg = arg;
	x->sent = 0;
	x->resent = 0;
	x->connects = 0;
	x->failed = 0;
	x->err[0] = '\0';
	h1_reader_reset(x->rd, req->head_request, req->body_max, HCONN_KEEP_BUF);
}

/* ---- public ---- */

struct hconn_pool *
hconn_pool_new(struct ev_loop *loop)
{
	struct hconn_pool *p = calloc(1, sizeof *p);

	if (p != NULL)
		p->loop = loop;
	return p;
}

void
hconn_pool_free(struct hconn_pool *p)
{
	struct hconn_xfer *x;

	if (p == NULL)
		return;
	while ((x = p->active) != NULL) {
		p->active = x->next;
		ev_timer_stop(p->loop, &x->timer);
		if (x->c != NULL)
			conn_close(x->c);
		h1_reader_free(x->rd);
		free(x);
	}
	while ((x = p->free) != NULL) {
		p->free = x->next;
		h1_reader_free(x->rd);
		free(x);
	}
	for (struct host *h = p->hosts, *hn; h != NULL; h = hn) {
		hn = h->next;
		for (struct conn *c = h->idle, *cn; c != NULL; c = cn) {
			cn = c->next;
			conn_close(c);
		}
		free(h);
	}
	free(p);
}

int
hconn_start(struct hconn_pool *p, const struct hconn_req *req, hconn_done_cb *cb, void *arg,
	    struct hconn_xfer **out)
{
	struct host *h = host_get(p, req->addr, req->addr_len);
	struct hconn_xfer *x;
	struct conn *c;

	if (out != NULL)
		*out = NULL;
	if (h == NULL || (x = xfer_get(p)) == NULL)
		return -1;
	xfer_fill(x, h, req, cb, arg);
	x->next = p->active;
	x->prev = NULL;
	if (p->active != NULL)
		p->active->prev = x;
	p->active = x;
	ev_timer_set(&x->timer, (double)req->timeout_ms / 1000.0, 0.0);
	if ((c = h->idle) != NULL) {
		idle_unlink(c);
		c->x = x;
		x->c = c;
		/* sent now: a reused connection needs no wake-up first */
		if (send_some(x) < 0) {
			int err = errno, r = resend(x);
			if (r == 0)
				fail_later(x, "Send failure to", strerror(err));
			else if (r < 0)
				fail_later(x, "Failed to connect to", strerror(errno));
		}
	} else if (attach_new(x) < 0) {
		fail_later(x, "Failed to connect to", strerror(errno));
	}
	ev_timer_start(p->loop, &x->timer);
	if (out != NULL)
		*out = x;
	return 0;
}

void
hconn_cancel(struct hconn_xfer *x)
{
	if (x == NULL)
		return;
	detach(x, 0);
	xfer_release(x);
}
