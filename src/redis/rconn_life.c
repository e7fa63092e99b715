/* SPDX-License-Identifier: BSD-2-Clause */
/* rconn_life.c: a connection's life (rconn_int.h): connect (where Sentinel or
 * Cluster says), drop, the reconnect policy (backoff, the connect, command
 * and drop timers), rconn_new and rconn_free. */
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
#include <inttypes.h>
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
#include "core/consumer.h"
#include "redis/rtls.h"

static void start_connect(struct rconn *rc);
static void drop(struct rconn *rc, const char *why);


static void
notify_state(struct rconn *rc, int up)
{
	if (rc->state_cb == NULL)
		return;
	rc->depth++;
	rc->state_cb(rc, up, rc->state_arg);
	rc->depth--;
}

static void
stop_conn_timers(struct rconn *rc)
{
	ev_timer_stop(rc->loop, &rc->conn_timer);
	ev_timer_stop(rc->loop, &rc->cmd_timer);
	ev_timer_stop(rc->loop, &rc->drop_timer);
}

/* Closes the socket and forgets what was unsent or unread (the output
 * buffer may hold an AUTH: wiped). The entries in rc->sent stay. */
static void
link_close(struct rconn *rc)
{
	ev_io_stop(rc->loop, &rc->io);
	rtls_conn_free(rc->link);
	rc->link = NULL;
	rc->linked = 0;
	rc->read_wants_write = 0;
	if (rc->reader != NULL)
		redisReaderFree(rc->reader);	/* frees a reply half read */
	rc->reader = NULL;
	if (rc->obuf != NULL)
		explicit_bzero(rc->obuf, rc->ocap);
	rc->olen = rc->ooff = 0;
	if (rc->ocap > RCONN_OBUF_KEEP) {	/* a big batch's room: not kept idle */
		free(rc->obuf);
		rc->obuf = NULL;
		rc->ocap = 0;
	}
}

/* The current connection is gone (or never came to be): close it, give
 * every outstanding command NULL, and plan the next attempt. Not from
 * inside a reply's callback (drop_timer is for that). */
void
rc_conn_gone(struct rconn *rc, const char *why)
{
	char qwhy[160], wbuf[200];
	int was_up = rc->announced;

	/* why may be the link's, freed here */
	snprintf(wbuf, sizeof wbuf, "%s", why);
	why = wbuf;
	link_close(rc);
	rc->gen++;
	rc->up = 0;
	rc->announced = 0;
	rc->drop_reason = NULL;
	stop_conn_timers(rc);
	/* A server that closes a connection whose token died (Azure) says
	 * nothing: the time says it, before the commands hear of the loss. */
	if (was_up && !rc->freeing && rc->auth_seen != NULL && rc->auth_expires != 0 &&
	    wtime_mono_ms() >= rc->auth_expires - RCONN_AUTH_CLOSE_MARGIN_MS)
		rc->auth_seen(rc->auth_arg, 0, "closed");
	rc->auth_expires = 0;
	while (!TAILQ_EMPTY(&rc->sent))
		rc_finish(rc, TAILQ_FIRST(&rc->sent), NULL);
	if (rc->freeing)
		return;
	/* A new connection meets its own ASKs. The side's callbacks, too,
	 * come before state_cb(0), unless this runs inside one of them. */
	if (rc->side != NULL && rc->side->depth == 0)
		rc_free_side(rc);
	else
		rc_close_side(rc);

	rc->resolving = 0;
	if (rc->once) {		/* the asker moves on: no retry of its own */
		log_debug("redis.down", "name=%s attempt=%u was_up=%d err=%s", rc->qname,
		    rc->attempt, was_up, log_quote(qwhy, sizeof(qwhy), why));
		notify_state(rc, 0);
		return;
	}
	unsigned failures = rc->attempt > 0 ? rc->attempt : 1;
	long delay = (long)backoff_ms(rc->backoff_min_ms, rc->backoff_min_ms,
	    rc->backoff_max_ms, failures > INT32_MAX ? INT32_MAX : (int)failures, rnd_u64());
	/* issue 38 item 5: the outage at warn once, then a reminder a minute */
	int64_t now = wtime_mono_ms();
	rc->down_since = rc->down_since ? rc->down_since : now;
	int warn = consumer_down_warn(rc->down_said, now);
	rc->down_said = warn ? now : rc->down_said;
	log_msg(warn ? LOG_WARN : LOG_DEBUG, "redis.down", "name=%s attempt=%u was_up=%d "
	    "retry_ms=%ld down_ms=%" PRId64 " err=%s", rc->qname, rc->attempt, was_up, delay,
	    now - rc->down_since, log_quote(qwhy, sizeof(qwhy), why));
	ev_timer_set(&rc->retry_timer, (double)delay / 1000.0, 0.0);
	ev_timer_start(rc->loop, &rc->retry_timer);
	if (was_up)
		notify_state(rc, 0);
}

void
rc_became_up(struct rconn *rc)
{
	ev_timer_stop(rc->loop, &rc->conn_timer);
	rc->up = 1;
	rc->announced = 1;
	if (rc->once)	/* a discovery question, every few seconds: not news */
		log_debug("redis.up", "name=%s attempt=%u", rc->qname, rc->attempt);
	else if (rc->down_since)
		log_info("redis.up", "name=%s attempt=%u down_ms=%" PRId64, rc->qname,
		    rc->attempt, wtime_mono_ms() - rc->down_since);
	else
		log_info("redis.up", "name=%s attempt=%u", rc->qname, rc->attempt);
	rc->down_since = rc->down_said = 0;
	rc->attempt = 0;
	notify_state(rc, 1);
}

/* From inside a callback: drop the connection once it returned. */
void
rc_schedule_drop(struct rconn *rc, const char *why)
{
	rc->up = 0;
	if (ev_is_active(&rc->drop_timer))
		return;
	rc->drop_reason = why;
	ev_timer_set(&rc->drop_timer, 0.0, 0.0);
	ev_timer_start(rc->loop, &rc->drop_timer);
}
/* Only from outside callbacks: our timers and rconn_free(). */
static void
drop(struct rconn *rc, const char *why)
{
	if (rc->link == NULL)
		return;
	rc->up = 0;
	rc_conn_gone(rc, why);	/* closes the link: every outstanding command gets NULL */
}

/* Sentinel or Cluster: where to connect now; 1: asked, answer later. */
static int
resolve_primary(struct rconn *rc, char *why, size_t whylen)
{
	char host[256];
	int port;

	int r = rc->resolve(rc->resolve_arg, host, sizeof host, &port);
	if (r > 0)
		return 1;
	if (r < 0) {
		snprintf(why, whylen, rc->cluster ? "no node for the slot" :
		    "no primary from the sentinels");
		return -1;
	}
	if (rc->host == NULL || strcmp(rc->host, host) != 0 || rc->port != port) {
		char *copy = strdup(host);
		if (copy == NULL) {
			snprintf(why, whylen, "out of memory");
			return -1;
		}
		free(rc->host);
		rc->host = copy;
		rc->port = port;
		/* what a sentinel answered: quoted */
		log_info("redis.primary", "name=%s host=%s port=%d", rc->qname, LOG_Q(host), port);
	}
	return 0;
}

static void
arm_conn_timer(struct rconn *rc)
{
	if (rc->connect_timeout_ms <= 0)
		return;
	ev_timer_stop(rc->loop, &rc->conn_timer);
	ev_timer_set(&rc->conn_timer, (double)rc->connect_timeout_ms / 1000.0, 0.0);
	ev_timer_start(rc->loop, &rc->conn_timer);
}

static void
start_connect(struct rconn *rc)
{
	char why[200];

	if (!rc->resumed)
		rc->attempt++;
	rc->resumed = 0;
	/* a slow lookup or a long callback before: timers from the real now */
	ev_now_update(rc->loop);
	if (rc->resolve != NULL) {
		int r = resolve_primary(rc, why, sizeof why);
		if (r > 0) {	/* asked: rconn_resolved() calls again */
			rc->resolving = 1;
			arm_conn_timer(rc);
			return;
		}
		if (r < 0) {
			rc_conn_gone(rc, why);
			return;
		}
	}
	if (rc->socket == NULL && !allowlist_check(rc->allow, rc->host, rc->port, "connect")) {
		rc_conn_gone(rc, "host not in allow_hosts");
		return;
	}
	/* issue 37: a credential never crosses a network in clear text */
	if (rc->socket == NULL && rc->password != NULL && *rc->password != '\0' &&
	    !allowlist_check_credential(rc->allow, rc->host, rc->port, rc->tls_ctx != NULL)) {
		rc_conn_gone(rc, "the credential would go in clear text");
		return;
	}
	rc->link = rtls_link_new(rc->socket == NULL ? rc->tls_ctx : NULL, rc->host, rc->port,
	    rc->socket, why, sizeof why);
	if (rc->link == NULL) {
		rc_conn_gone(rc, why);
		return;
	}
	/* connected once writable; then TLS, then the handshake: rc_on_io() */
	ev_io_set(&rc->io, rtls_link_fd(rc->link), EV_WRITE);
	ev_io_start(rc->loop, &rc->io);
	arm_conn_timer(rc);
}

/* Timers. */

static void
on_retry_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	start_connect(w->data);
}

static void
on_conn_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct rconn *rc = w->data;

	(void)loop;
	(void)revents;
	if (rc->resolving) {
		rc_conn_gone(rc, "no answer from discovery in time");
		return;
	}
	drop(rc, "connect timeout");
}

static void
on_drop_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct rconn *rc = w->data;

	(void)loop;
	(void)revents;
	drop(rc, rc->drop_reason != NULL ? rc->drop_reason : "dropped");
}

static void
on_cmd_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct rconn *rc = w->data;
	struct rc_cmd *oldest = TAILQ_FIRST(&rc->sent);

	(void)revents;
	if (!rc->up || oldest == NULL)
		return;		/* re-armed by the next command */
	double limit = (double)rc->command_timeout_ms / 1000.0;
	double waited = ev_now(loop) - oldest->sent_at;
	if (waited + 0.0005 >= limit) {
		log_warn("redis.timeout", "name=%s waited_ms=%.0f pending=%zu", rc->qname,
			 waited * 1000.0, rc->npending);
		drop(rc, "command timeout");
		return;
	}
	ev_timer_set(w, limit - waited, 0.0);
	ev_timer_start(loop, w);
}

/* Public API. */

static int
copy_opt(char **dst, const char *src)
{
	*dst = NULL;
	if (src == NULL)
		return 0;
	*dst = strdup(src);
	return *dst != NULL ? 0 : -1;
}

static void
rc_release(struct rconn *rc)
{
	link_close(rc);
	free(rc->obuf);
	free(rc->host);
	free(rc->socket);
	free(rc->username);
	if (rc->password != NULL)
		explicit_bzero(rc->password, strlen(rc->password));
	free(rc->password);
	free(rc->fbuf);
	free(rc);
}

static void
init_timer(struct rconn *rc, ev_timer *t, void (*cb)(struct ev_loop *, ev_timer *, int))
{
	ev_timer_init(t, cb, 0.0, 0.0);
	t->data = rc;
}

struct rconn *
rconn_new(struct ev_loop *loop, const struct rconn_opts *opts, const char *name,
	  rconn_state_cb *state_cb, void *arg)
{
	struct rconn *rc;

	if (loop == NULL || opts == NULL ||
	    (opts->socket == NULL && opts->host == NULL && opts->resolve == NULL))
		return NULL;
	rc = calloc(1, sizeof(*rc));
	if (rc == NULL)
		return NULL;
	TAILQ_INIT(&rc->sent);
	if (copy_opt(&rc->host, opts->host) < 0 || copy_opt(&rc->socket, opts->socket) < 0 ||
	    copy_opt(&rc->username, opts->username) < 0 ||
	    copy_opt(&rc->password, opts->password) < 0) {
		rc_release(rc);
		return NULL;
	}
	rc->loop = loop;
	rc->port = opts->port;
	rc->db = opts->db;
	rc->connect_timeout_ms = opts->connect_timeout_ms;
	rc->command_timeout_ms = opts->command_timeout_ms;
	rc->backoff_min_ms = opts->backoff_min_ms;
	rc->backoff_max_ms = opts->backoff_max_ms;
	rc->state_cb = state_cb;
	rc->state_arg = arg;
	rc->resolve = opts->resolve;
	rc->resolve_arg = opts->resolve_arg;
	rc->error_seen = opts->error_seen;
	rc->auth_seen = opts->auth_seen;
	rc->auth_arg = opts->auth_arg;
	rc->password_expires = opts->password_expires_at_ms;
	rc->cluster = opts->resolve != NULL && opts->cluster;
	rc->allow = opts->allow;
	rc->tls_ctx = opts->tls;
	rc->role = opts->role;
	rc->once = opts->once;
	log_quote(rc->qname, sizeof(rc->qname), name != NULL ? name : "redis");
	init_timer(rc, &rc->retry_timer, on_retry_timer);
	init_timer(rc, &rc->conn_timer, on_conn_timer);
	init_timer(rc, &rc->cmd_timer, on_cmd_timer);
	init_timer(rc, &rc->drop_timer, on_drop_timer);
	init_timer(rc, &rc->side_timer, rc_on_side_timer);
	ev_io_init(&rc->io, rc_on_io, 0, EV_WRITE);
	rc->io.data = rc;
	/* Called before the loop runs, ev_now() may be long past: timers
	 * started from it would expire at once. */
	ev_now_update(loop);
	start_connect(rc);
	return rc;
}

void
rconn_free(struct rconn *rc)
{
	if (rc == NULL)
		return;
	/* Freeing rc inside its own callback chain would pull the reader
	 * and the queue out from under the reply loop: a caller bug, caught
	 * loudly. */
	assert(rc->depth == 0);
	rc->freeing = 1;
	rc->up = 0;
	ev_timer_stop(rc->loop, &rc->retry_timer);
	rc_free_side(rc);		/* its callbacks answer rc's callers: first */
	drop(rc, "freed");
	stop_conn_timers(rc);
	while (!TAILQ_EMPTY(&rc->sent))
		rc_finish(rc, TAILQ_FIRST(&rc->sent), NULL);
	rc_release(rc);
}

void
rconn_resolved(struct rconn *rc)
{
	if (rc == NULL || !rc->resolving || rc->freeing)
		return;
	rc->resolving = 0;
	rc->resumed = 1;
	ev_timer_stop(rc->loop, &rc->conn_timer);
	ev_timer_stop(rc->loop, &rc->retry_timer);
	ev_timer_set(&rc->retry_timer, 0.0, 0.0);
	ev_timer_start(rc->loop, &rc->retry_timer);
}

const char *
rconn_host(const struct rconn *rc)
{
	return rc != NULL && rc->socket == NULL ? rc->host : NULL;
}

int
rconn_port(const struct rconn *rc)
{
	return rc != NULL && rc->socket == NULL && rc->host != NULL ? rc->port : 0;
}

void
rconn_reconnect(struct rconn *rc, const char *why)
{
	if (rc == NULL || rc->link == NULL || rc->freeing)
		return;
	log_info("redis.reconnect", "name=%s host=%s port=%d why=%s", rc->qname,
	    rc->host ? LOG_Q(rc->host) : "-", rc->port, LOG_Q(why));
	rc_schedule_drop(rc, why);
}

int
rconn_is_up(const struct rconn *rc)
{
	return rc != NULL && rc->up;
}

size_t
rconn_pending(const struct rconn *rc)
{
	return rc != NULL ? rc->npending + rconn_pending(rc->side) : 0;
}
