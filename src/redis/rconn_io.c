/* SPDX-License-Identifier: BSD-2-Clause */
/* rconn_io.c: the socket of rconn (rconn_int.h): its one ev_io, the output
 * buffer written, replies read and their size capped. */
#define _DEFAULT_SOURCE		/* strdup, strncasecmp */
#include "rconn_int.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include <hiredis/hiredis.h>
#include <openssl/evp.h>

#include "base/backoff.h"
#include "core/resp.h"
#include "base/log.h"
#include "base/rnd.h"
#include "redis/rreply.h"
#include "base/wtime.h"
#include "redis/cluster.h"
#include "redis/sentinel.h"
#include "core/allowlist.h"
#include "redis/rtls.h"

/* The socket. One ev_io watches it: for writing while the link connects
 * (then for what its TLS handshake wants), then for reading always and for
 * writing while the output buffer holds bytes. */


static void
io_watch(struct rconn *rc, int events)
{
	if (rc->link == NULL)
		return;
	if (ev_is_active(&rc->io) && (rc->io.events & (EV_READ | EV_WRITE)) == events)
		return;
	ev_io_stop(rc->loop, &rc->io);
	ev_io_set(&rc->io, rtls_link_fd(rc->link), events);
	if (events != 0)
		ev_io_start(rc->loop, &rc->io);
}

static int
wants_events(int wants)
{
	return (wants & RTLS_WANT_READ ? EV_READ : 0) | (wants & RTLS_WANT_WRITE ? EV_WRITE : 0);
}

void
rc_io_update(struct rconn *rc)
{
	if (!rc->linked)
		io_watch(rc, wants_events(rtls_link_wants(rc->link)));
	else
		io_watch(rc, EV_READ | (rc->ooff < rc->olen || rc->read_wants_write ? EV_WRITE : 0));
}

/* Appends n bytes to the output buffer; they are written when the socket
 * is writable (one write for all a loop iteration queued). 0, or -1 when
 * out of memory (nothing appended). */
int
rc_obuf_put(struct rconn *rc, const char *p, size_t n)
{
	if (rc->ocap - rc->olen < n && rc->ooff > 0) {	/* the written part goes first */
		size_t left = rc->olen - rc->ooff;
		memmove(rc->obuf, rc->obuf + rc->ooff, left);
		/* issue 37 item 5: the bytes moved leave no copy behind (an
		 * AUTH still unsent may be among them) */
		explicit_bzero(rc->obuf + left, rc->olen - left);
		rc->olen = left;
		rc->ooff = 0;
	}
	if (rc->ocap - rc->olen < n) {
		size_t cap = rc->ocap > 0 ? rc->ocap : 4096;
		while (cap - rc->olen < n) {
			if (cap > SIZE_MAX / 2)
				return -1;
			cap *= 2;
		}
		/* not realloc: the old block would be freed with an AUTH in it */
		char *nb = malloc(cap);
		if (nb == NULL)
			return -1;
		if (rc->obuf != NULL) {
			memcpy(nb, rc->obuf, rc->olen);
			explicit_bzero(rc->obuf, rc->ocap);
			free(rc->obuf);
		}
		rc->obuf = nb;
		rc->ocap = cap;
	}
	memcpy(rc->obuf + rc->olen, p, n);
	rc->olen += n;
	rc_io_update(rc);
	return 0;
}
/* The link ended under us (closed by the server, a read or write error). */
static void
link_ended(struct rconn *rc)
{
	const char *why = rc->drop_reason;

	if (why == NULL)
		why = rtls_conn_why(rc->link)[0] != '\0' ? rtls_conn_why(rc->link) :
		    "connection closed";
	rc_conn_gone(rc, why);
}

/* Writes what the output buffer holds, as far as the socket takes it.
 * 0, or -1 when the link ended (rc_conn_gone() ran). */
static int
flush_out(struct rconn *rc)
{
	while (rc->ooff < rc->olen) {
		ssize_t n = rtls_link_write(rc->link, rc->obuf + rc->ooff, rc->olen - rc->ooff);
		if (n < 0) {
			link_ended(rc);
			return -1;
		}
		if (n == 0)
			break;
		/* issue 37 item 5: what went out is wiped at once (an AUTH's
		 * password or token among it); the kernel or TLS has its copy */
		explicit_bzero(rc->obuf + rc->ooff, (size_t)n);
		rc->ooff += (size_t)n;
	}
	if (rc->ooff == rc->olen)
		rc->ooff = rc->olen = 0;
	return 0;
}

/* A server that breaks RESP, or sends more than rconn buffers: said once
 * (R17's event, kind PROTOCOL or TOOBIG), then the connection goes. */
static void
reply_refused(struct rconn *rc, const char *kind, const char *what)
{
	char q[200];

	log_warn("redis.error", "name=%s kind=%s error=%s", rc->qname, LOG_Q(kind),
	    log_quote(q, sizeof q, what));
	rc_conn_gone(rc, what);
}

/* The reply being read holds (in the reader's buffer and the objects
 * built so far) or announces (a bulk string's length, before its bytes)
 * more than RCONN_REPLY_MAX_BYTES: that much into *n, and 1. */
static int
reply_too_big(const redisReader *r, unsigned long long *n)
{
	const char *p = r->buf + r->pos, *end = r->buf + r->len;

	*n = r->len - r->pos;
	if (r->ridx >= 0 && r->rstack[0].obj != NULL)	/* an array, part built */
		*n += rreply_size(r->rstack[0].obj);
	if (*n > RCONN_REPLY_MAX_BYTES)
		return 1;
	/* the reader took the '$' (the task's type) and waits for the rest */
	if (r->ridx >= 0 && r->rstack[r->ridx].type == REDIS_REPLY_STRING) {
		unsigned long long v = 0;
		for (; p < end && *p >= '0' && *p <= '9' && v < 100000000000000000ULL; p++)
			v = v * 10 + (unsigned)(*p - '0');
		if (v > RCONN_REPLY_MAX_BYTES) {
			*n = v;
			return 1;
		}
	}
	return 0;
}

/* Every whole reply the reader has, each to the queue's head, in order.
 * 0, or -1 when the connection went. */
static int
take_replies(struct rconn *rc, unsigned gen)
{
	void *r;
	unsigned long long n;
	char what[160];

	for (;;) {
		if (redisReaderGetReply(rc->reader, &r) != REDIS_OK) {
			snprintf(what, sizeof what, "%s", rc->reader->errstr);
			reply_refused(rc, strcmp(what, "Out of memory") == 0 ? "TOOBIG" : "PROTOCOL",
			    what);
			return -1;
		}
		if (r == NULL)
			break;
		struct rc_cmd *c = TAILQ_FIRST(&rc->sent);
		if (c == NULL) {
			rreply_functions()->freeObject(r);
			reply_refused(rc, "PROTOCOL", "a reply to no command");
			return -1;
		}
		rc_on_reply(rc, c, r);
		rreply_functions()->freeObject(r);
		if (rc->gen != gen)
			return -1;
	}
	if (reply_too_big(rc->reader, &n)) {
		snprintf(what, sizeof what, "a reply of %llu bytes or more: over the %d it may take",
		    n, RCONN_REPLY_MAX_BYTES);
		reply_refused(rc, "TOOBIG", what);
		return -1;
	}
	return 0;
}

/* Reads what the socket has, feeding the reader, replies as they are
 * whole. A short clear-text read means the socket is empty; TLS reads
 * one record at a time, until it has none. */
static void
read_in(struct rconn *rc)
{
	char buf[RCONN_READ_CHUNK];
	unsigned gen = rc->gen;
	int tls = rc->socket == NULL && rc->tls_ctx != NULL;

	rc->read_wants_write = 0;
	for (;;) {
		ssize_t n = rtls_link_read(rc->link, buf, sizeof buf);
		if (n < 0) {
			link_ended(rc);
			return;
		}
		if (n == 0) {
			rc->read_wants_write = (rtls_link_wants(rc->link) & RTLS_WANT_WRITE) != 0;
			return;
		}
		if (redisReaderFeed(rc->reader, buf, (size_t)n) != REDIS_OK) {
			rc_conn_gone(rc, "out of memory");
			return;
		}
		if (take_replies(rc, gen) != 0)
			return;
		if (!tls && (size_t)n < sizeof buf)
			return;
	}
}

void
rc_on_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct rconn *rc = w->data;
	unsigned gen = rc->gen;

	(void)loop;
	if (!rc->linked) {
		int r = rtls_link_connect(rc->link);
		if (r < 0)
			rc_conn_gone(rc, rtls_conn_why(rc->link));
		else if (r == 0)
			rc_io_update(rc);
		else
			rc_link_up(rc);
		return;
	}
	if (rc->ooff < rc->olen && flush_out(rc) != 0)
		return;
	if ((revents & EV_READ) || rc->read_wants_write) {
		read_in(rc);
		if (rc->gen != gen)
			return;
		/* what the replies' callbacks queued goes now, in one write,
		 * not a loop iteration (and a watcher change) later */
		if (rc->ooff < rc->olen && flush_out(rc) != 0)
			return;
	}
	rc_io_update(rc);
}

