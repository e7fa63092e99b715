/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * vpool: records verified on worker threads, results handed back on the
 * loop (vpool.h).
 *
 * One mutex guards both queues and every ticket's state; a worker holds it
 * only to take a ticket and to hand it back, never while verifying. The
 * loop is woken once per batch: an ev_async send when the done queue goes
 * from empty to not empty.
 *
 * The threads never share a verify context: each worker verifies with its
 * own record_verifier, the loop (inline, in ejob) with the key's own, so
 * record.c needs no lock of its own.
 */
#define _POSIX_C_SOURCE 200809L
#include "worker/vpool.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

enum ticket_state { TS_QUEUED, TS_RUNNING, TS_DONE };

struct vpool_ticket {
	TAILQ_ENTRY(vpool_ticket) link;	/* in queued or done, or neither */
	enum ticket_state state;
	int cancelled;			/* set by the loop; a done one is then freed */
	struct record_policy pol;	/* a copy: parsed_key and issuer are ours */
	char id[RECORD_ID_MAX + 1];
	int64_t now_ms;
	vpool_done_cb *done;
	void *arg;
	struct vpool_result res;	/* res.raw: the bytes to verify */
};

/* A FIFO of tickets. */
TAILQ_HEAD(tqueue, vpool_ticket);

/* One thread and what it verifies with. */
struct worker {
	struct vpool *p;
	pthread_t thread;
	struct record_verifier *v;	/* its own: see the top */
};

struct vpool {
	struct ev_loop *loop;
	ev_async wake;
	pthread_mutex_t mu;
	pthread_cond_t work;		/* `queued` got a ticket, or stop */
	struct tqueue queued, done;
	int stop;
	size_t live;			/* tickets not yet freed */
	struct worker workers[VPOOL_THREADS_MAX];
	unsigned nthreads;		/* started */
};

/* The first ticket, taken out; NULL when q is empty. */
static struct vpool_ticket *
tq_pop(struct tqueue *q)
{
	struct vpool_ticket *t = TAILQ_FIRST(q);

	if (t != NULL)
		TAILQ_REMOVE(q, t, link);
	return t;
}

/* Frees t and what its result still holds (nothing, once called back). */
static void
ticket_free(struct vpool *p, struct vpool_ticket *t)
{
	record_key_free((struct record_key *)t->pol.parsed_key);
	free((char *)t->pol.issuer);
	free((char *)t->pol.audience);
	record_free(t->res.rec);
	free(t->res.owner);
	free(t->res.raw);
	free(t);
	p->live--;
}

static void
verify(struct vpool_ticket *t, struct record_verifier *v)
{
	t->pol.verifier = v;
	t->res.status = record_load(&t->pol, t->id, t->res.raw, t->now_ms, &t->res.rec,
	    &t->res.owner, t->res.detail, sizeof t->res.detail);
}

static void *
worker(void *arg)
{
	struct worker *w = arg;
	struct vpool *p = w->p;
	struct vpool_ticket *t;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->stop && TAILQ_EMPTY(&p->queued))
			pthread_cond_wait(&p->work, &p->mu);
		if (p->stop)
			break;
		t = tq_pop(&p->queued);
		t->state = TS_RUNNING;
		pthread_mutex_unlock(&p->mu);
		verify(t, w->v);
		pthread_mutex_lock(&p->mu);
		t->state = TS_DONE;
		if (TAILQ_EMPTY(&p->done))
			ev_async_send(p->loop, &p->wake);
		TAILQ_INSERT_TAIL(&p->done, t, link);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* The loop: every result done so far to its callback, or freed when its
 * ticket was cancelled (also by an earlier callback of this batch). */
static void
wake_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	struct vpool *p = w->data;
	struct tqueue batch = TAILQ_HEAD_INITIALIZER(batch);
	struct vpool_ticket *t;
	(void)loop, (void)revents;

	pthread_mutex_lock(&p->mu);
	TAILQ_CONCAT(&batch, &p->done, link);
	pthread_mutex_unlock(&p->mu);
	while ((t = tq_pop(&batch)) != NULL) {
		if (!t->cancelled) {
			t->done(t->arg, &t->res);
			memset(&t->res, 0, sizeof t->res);	/* the callback's now */
		}
		ticket_free(p, t);
	}
}

static void
stop_workers(struct vpool *p)
{
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->workers[i].thread, NULL);
	p->nthreads = 0;
}

/* The workers take no signal: SIGTERM and SIGHUP are the loop's. */
static int
start_workers(struct vpool *p, unsigned nthreads)
{
	sigset_t all, old;
	int rc = 0;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (; rc == 0 && p->nthreads < nthreads; p->nthreads++) {
		struct worker *w = &p->workers[p->nthreads];

		w->p = p;
		if ((w->v = record_verifier_new()) == NULL ||
		    pthread_create(&w->thread, NULL, worker, w) != 0) {
			rc = -1;
			break;
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

struct vpool *
vpool_new(struct ev_loop *loop, unsigned nthreads)
{
	struct vpool *p;

	if (nthreads == 0 || nthreads > VPOOL_THREADS_MAX || (p = calloc(1, sizeof *p)) == NULL)
		return NULL;
	p->loop = loop;
	TAILQ_INIT(&p->queued);
	TAILQ_INIT(&p->done);
	if (pthread_mutex_init(&p->mu, NULL) != 0) {
		free(p);
		return NULL;
	}
	if (pthread_cond_init(&p->work, NULL) != 0) {
		pthread_mutex_destroy(&p->mu);
		free(p);
		return NULL;
	}
	ev_async_init(&p->wake, wake_cb);
	p->wake.data = p;
	ev_async_start(loop, &p->wake);
	if (start_workers(p, nthreads) < 0) {
		vpool_free(p);
		return NULL;
	}
	return p;
}

void
vpool_free(struct vpool *p)
{
	struct vpool_ticket *t;

	if (p == NULL)
		return;
	stop_workers(p);
	for (unsigned i = 0; i < VPOOL_THREADS_MAX; i++)
		record_verifier_free(p->workers[i].v);
	while ((t = tq_pop(&p->queued)) != NULL)
		ticket_free(p, t);
	while ((t = tq_pop(&p->done)) != NULL)
		ticket_free(p, t);
	ev_async_stop(p->loop, &p->wake);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

static int
copy_str(char **dst, const char *src)
{
	return src == NULL || (*dst = strdup(src)) != NULL ? 0 : -1;
}

struct vpool_ticket *
vpool_submit(struct vpool *p, const struct record_policy *pol, const char *expected_id,
	     const char *raw, int64_t now_ms, vpool_done_cb *done, void *arg)
{
	struct vpool_ticket *t;
	char *issuer = NULL, *audience = NULL;

	if (pol->parsed_key == NULL || pol->algorithm == JWA_HS256 || raw == NULL ||
	    strlen(expected_id) > RECORD_ID_MAX || (t = calloc(1, sizeof *t)) == NULL)
		return NULL;
	if (copy_str(&t->res.raw, raw) < 0 || copy_str(&issuer, pol->issuer) < 0 ||
	    copy_str(&audience, pol->audience) < 0) {
		free(issuer);
		free(t->res.raw);
		free(t);
		return NULL;
	}
	t->pol = *pol;
	t->pol.parsed_key = record_key_ref((struct record_key *)pol->parsed_key);
	t->pol.key = NULL;
	t->pol.key_len = 0;
	t->pol.issuer = issuer;
	t->pol.audience = audience;
	t->pol.action_known = NULL;	/* the config is the loop's: see vpool.h */
	t->pol.action_ctx = NULL;
	memcpy(t->id, expected_id, strlen(expected_id) + 1);
	t->now_ms = now_ms;
	t->done = done;
	t->arg = arg;
	pthread_mutex_lock(&p->mu);
	t->state = TS_QUEUED;
	TAILQ_INSERT_TAIL(&p->queued, t, link);
	p->live++;
	pthread_cond_signal(&p->work);
	pthread_mutex_unlock(&p->mu);
	return t;
}

void
vpool_cancel(struct vpool *p, struct vpool_ticket *t)
{
	int unqueued;

	pthread_mutex_lock(&p->mu);
	if ((unqueued = t->state == TS_QUEUED))
		TAILQ_REMOVE(&p->queued, t, link);
	t->cancelled = 1;	/* running or done: freed when the loop sees it */
	pthread_mutex_unlock(&p->mu);
	if (unqueued)
		ticket_free(p, t);
}

size_t
vpool_pending(const struct vpool *p)
{
	return p->live;
}
