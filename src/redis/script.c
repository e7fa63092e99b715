/* SPDX-License-Identifier: BSD-2-Clause */
/* script: one caller for the functions of the library (lua/, loaded by an
 * administrator), the check of its version, and the batcher of the calls
 * that have a batch form. */
#include "redis/script.h"

#include "base/log.h"

#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

void
script_set_init(struct script_set *set)
{
	for (int i = 0; i < STORE_NSCRIPTS; i++) {
		const struct store_script *sc = &store_scripts[i];

		rconn_function_init(&set->s[i], sc->function, sc->read_only);
		if (sc->batch_function)
			rconn_function_init(&set->batch[i], sc->batch_function, sc->read_only);
		else
			set->batch[i] = (struct rconn_script){.body = NULL};
	}
}

enum store_library_state
script_library_state(const struct sreply *r)
{
	const char *err = sreply_error_text(r);

	return store_library_check(err != NULL, err != NULL ? err : sreply_string(r));
}

int
script_check_library(struct rconn *rc, rconn_reply_cb *cb, void *arg)
{
	return rconn_command(rc, cb, arg, "FCALL_RO warrantd_version 0");
}

/* The vector built, sent: rconn_eval's result. */
static int
send_vec(struct rconn *rc, const struct rconn_script *s, const struct store_vec *v, int nkeys,
	 rconn_reply_cb *cb, void *arg)
{
	return rconn_eval(rc, s, cb, arg, nkeys, v->argc - STORE_VEC_HEAD,
	    v->argv + STORE_VEC_HEAD, v->len + STORE_VEC_HEAD);
}

int
script_send(struct rconn *rc, const struct script_set *set, const struct store_args *a,
	    rconn_reply_cb *cb, void *arg)
{
	struct store_vec v;
	char err[160];

	if (store_args_vec(a, &v, err, sizeof err) < 0) {
		log_error("script.refused", "error=\"%s\"", err);
		return -1;
	}
	int sent = send_vec(rc, &set->s[a->script], &v, store_scripts[a->script].nkeys, cb, arg);
	store_vec_free(&v);
	return sent;
}

/* ------------------------------------------------------------------ */
/* Batches                                                              */

/* Whom a call's reply goes to. */
struct reply_to {
	rconn_reply_cb *cb;
	void *arg;
};

/* The calls of one batch: their bytes as they are sent (store.h) and
 * item i's callback in to[i]. Kept, emptied, for later batches: its
 * buffers then need no allocation. */
struct run {
	TAILQ_ENTRY(run) link;	/* in gathered or spare */
	struct store_batch sb;
	struct reply_to to[STORE_BATCH_MAX];
};

TAILQ_HEAD(run_list, run);

/* Emptied runs kept at most: one turn of the loop rarely fills more. */
#define SPARE_MAX 4

struct script_batch {
	struct ev_loop *loop;
	struct rconn *rc;
	const struct script_set *set;
	ev_prepare flush;		/* before the loop waits: send what is gathered */
	ev_idle again;			/* calls gathered while flushing: no waiting */
	struct run_list gathered;	/* in order; only the last takes more */
	struct run_list spare;		/* emptied, SPARE_MAX at most */
	int nspare;
	/* R19: whom the WAIT after this turn's calls answers; its numbers
	 * are the largest asked (a reload may change them mid-turn) */
	struct reply_to *wait_to;
	size_t nwait, wait_cap;
	long wait_replicas, wait_timeout_ms;
};

/* The callbacks of one batch call sent: item i's is to[i]. Freed by the
 * reply's callback, after every item's callback returned (rc may answer
 * after b is gone). */
struct sent {
	size_t n;
	struct reply_to to[];
};

static void
on_batch_reply(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct sent *s = arg;

	for (size_t i = 0; i < s->n; i++) {
		const struct sreply *item = sreply_batch_item(r, s->n, i);
		/* An item's error is logged as R17 says, as if it came alone;
		 * rconn logged an error reply to the whole call already. */
		if (item != r)
			rconn_note_error(rc, sreply_error_text(item));
		s->to[i].cb(rc, item, s->to[i].arg);
	}
	free(s);
}

/* Sends r (two items or more) as one call of the batch form, its pieces
 * from store_batch_parts; -1 when it could not be sent (no callback then). */
static int
send_batch(struct script_batch *b, const struct run *r, const struct iovec *parts,
	   size_t nparts, int nkeys, int argc)
{
	size_t n = r->sb.n;
	struct sent *s = malloc(sizeof *s + n * sizeof s->to[0]);

	if (s == NULL)
		return -1;
	s->n = n;
	memcpy(s->to, r->to, n * sizeof s->to[0]);
	int sent = rconn_eval_resp(b->rc, &b->set->batch[r->sb.script], on_batch_reply, s, nkeys,
	    argc, parts, nparts);
	if (sent < 0)
		free(s);
	return sent;
}

/* Sends the calls of r; every one gets exactly one callback (NULL now
 * when they could not be sent). */
static void
send_run(struct script_batch *b, const struct run *r)
{
	struct iovec parts[STORE_BATCH_PARTS];
	int nkeys, argc, sent;
	size_t nparts = store_batch_parts(&r->sb, parts, &nkeys, &argc);

	if (r->sb.n == 1)	/* the plain function: a batch of one costs Redis 7 % more */
		sent = rconn_eval_resp(b->rc, &b->set->s[r->sb.script], r->to[0].cb, r->to[0].arg,
		    nkeys, argc, parts, nparts);
	else
		sent = send_batch(b, r, parts, nparts, nkeys, argc);
	for (size_t i = 0; sent < 0 && i < r->sb.n; i++)
		r->to[i].cb(b->rc, NULL, r->to[i].arg);
}

static void
run_free(struct run *r)
{
	store_batch_release(&r->sb);
	free(r);
}

/* An empty run: a spare, or a new one. NULL when out of memory. */
static struct run *
run_get(struct script_batch *b)
{
	struct run *r = TAILQ_FIRST(&b->spare);

	if (r == NULL)
		return calloc(1, sizeof *r);
	TAILQ_REMOVE(&b->spare, r, link);
	b->nspare--;
	return r;
}

/* r is done with: emptied and kept, or freed. */
static void
run_put(struct script_batch *b, struct run *r)
{
	if (b->nspare >= SPARE_MAX) {
		run_free(r);
		return;
	}
	store_batch_clear(&r->sb);
	TAILQ_INSERT_HEAD(&b->spare, r, link);
	b->nspare++;
}

/* The WAIT's reply (NULL: not sent, or the connection went), to each of
 * those that asked for it. */
static void
on_wait_reply(struct rconn *rc, const struct sreply *r, void *arg)
{
	struct sent *s = arg;

	for (size_t i = 0; i < s->n; i++)
		s->to[i].cb(rc, r, s->to[i].arg);
	free(s);
}

/* One WAIT for the n waiters in to (taken: freed here), after the calls
 * sent before it on the same connection: Redis counts the replicas that
 * have every write of this connection so far. */
static void
send_wait(struct script_batch *b, struct reply_to *to, size_t n, long replicas, long timeout_ms)
{
	struct sent *s = malloc(sizeof *s + n * sizeof s->to[0]);

	if (s != NULL) {
		s->n = n;
		memcpy(s->to, to, n * sizeof s->to[0]);
		if (rconn_command(b->rc, on_wait_reply, s, "WAIT %ld %ld", replicas,
		    timeout_ms) == 0) {
			free(to);
			return;
		}
		free(s);
	}
	for (size_t i = 0; i < n; i++)
		to[i].cb(b->rc, NULL, to[i].arg);
	free(to);
}

/* Sends everything gathered so far, then the WAIT asked for with it.
 * Callbacks run from here (a batch that could not be sent) may gather new
 * calls: they wait for the next turn, which `again` keeps from waiting on
 * the loop. */
static void
flush(struct script_batch *b)
{
	struct run_list list = TAILQ_HEAD_INITIALIZER(list);
	struct run *r;
	struct reply_to *wait_to = b->wait_to;
	size_t nwait = b->nwait;
	long replicas = b->wait_replicas, timeout_ms = b->wait_timeout_ms;

	TAILQ_CONCAT(&list, &b->gathered, link);
	b->wait_to = NULL;
	b->nwait = b->wait_cap = 0;
	while ((r = TAILQ_FIRST(&list)) != NULL) {
		TAILQ_REMOVE(&list, r, link);
		send_run(b, r);
		run_put(b, r);
	}
	if (nwait > 0)
		send_wait(b, wait_to, nwait, replicas, timeout_ms);
	else
		free(wait_to);
}

static void
on_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct script_batch *b = w->data;
	(void)revents;

	ev_idle_stop(loop, &b->again);
	flush(b);
	if (TAILQ_EMPTY(&b->gathered) && b->nwait == 0)
		ev_prepare_stop(loop, &b->flush);
	else
		ev_idle_start(loop, &b->again);
}

static void
on_again(struct ev_loop *loop, ev_idle *w, int revents)
{
	(void)revents;
	ev_idle_stop(loop, w);
}

struct script_batch *
script_batch_new(struct ev_loop *loop, struct rconn *rc, const struct script_set *set)
{
	struct script_batch *b = calloc(1, sizeof *b);

	if (b == NULL)
		return NULL;
	b->loop = loop;
	b->rc = rc;
	b->set = set;
	TAILQ_INIT(&b->gathered);
	TAILQ_INIT(&b->spare);
	ev_prepare_init(&b->flush, on_prepare);
	b->flush.data = b;
	ev_idle_init(&b->again, on_again);
	b->again.data = b;
	return b;
}

void
script_batch_free(struct script_batch *b)
{
	struct run *r;

	if (b == NULL)
		return;
	ev_prepare_stop(b->loop, &b->flush);
	ev_idle_stop(b->loop, &b->again);
	/* A callback may gather again: taken list by list. */
	while (!TAILQ_EMPTY(&b->gathered)) {
		struct run_list list = TAILQ_HEAD_INITIALIZER(list);

		TAILQ_CONCAT(&list, &b->gathered, link);
		while ((r = TAILQ_FIRST(&list)) != NULL) {
			TAILQ_REMOVE(&list, r, link);
			for (size_t i = 0; i < r->sb.n; i++)
				r->to[i].cb(b->rc, NULL, r->to[i].arg);
			run_free(r);
		}
	}
	/* after the calls, as their WAIT would have answered */
	while (b->nwait > 0) {
		struct reply_to *to = b->wait_to;
		size_t n = b->nwait;

		b->wait_to = NULL;
		b->nwait = b->wait_cap = 0;
		for (size_t i = 0; i < n; i++)
			to[i].cb(b->rc, NULL, to[i].arg);
		free(to);
	}
	while ((r = TAILQ_FIRST(&b->spare)) != NULL) {
		TAILQ_REMOVE(&b->spare, r, link);
		run_free(r);
	}
	free(b);
}

/* a gathered into the tail run, or into a new one when it does not fit
 * there: 0, or -1 (logged when refused). */
static int
gather(struct script_batch *b, const struct store_args *a, rconn_reply_cb *cb, void *arg)
{
	struct run *r = TAILQ_LAST(&b->gathered, run_list);
	char err[160];
	int added = r != NULL ? store_batch_add(&r->sb, a, err, sizeof err) : 1;

	if (added == 1) {	/* a new run: it always takes a first call */
		if ((r = run_get(b)) == NULL)
			return -1;
		if ((added = store_batch_add(&r->sb, a, err, sizeof err)) != 0)
			run_put(b, r);
		else
			TAILQ_INSERT_TAIL(&b->gathered, r, link);
	}
	if (added != 0) {
		log_error("script.refused", "error=\"%s\"", err);
		return -1;
	}
	r->to[r->sb.n - 1] = (struct reply_to){cb, arg};
	return 0;
}

int
script_batch_send(struct script_batch *b, const struct store_args *a, rconn_reply_cb *cb,
		  void *arg)
{
	if (store_scripts[a->script].batch == NULL)
		return script_send(b->rc, b->set, a, cb, arg);
	if (!rconn_is_up(b->rc))
		return -1;	/* as rconn_eval: refused now, not a NULL later */
	if (gather(b, a, cb, arg) < 0)
		return -1;
	ev_prepare_start(b->loop, &b->flush);
	return 0;
}

int
script_batch_wait(struct script_batch *b, long replicas, long timeout_ms, rconn_reply_cb *cb,
		  void *arg)
{
	if (!rconn_is_up(b->rc) || replicas <= 0 || timeout_ms <= 0)
		return -1;
	if (b->nwait == b->wait_cap) {
		size_t cap = b->wait_cap ? b->wait_cap * 2 : 16;
		struct reply_to *to = realloc(b->wait_to, cap * sizeof *to);
		if (to == NULL)
			return -1;
		b->wait_to = to;
		b->wait_cap = cap;
	}
	if (b->nwait == 0 || replicas > b->wait_replicas)
		b->wait_replicas = replicas;
	if (b->nwait == 0 || timeout_ms > b->wait_timeout_ms)
		b->wait_timeout_ms = timeout_ms;
	b->wait_to[b->nwait++] = (struct reply_to){cb, arg};
	ev_prepare_start(b->loop, &b->flush);
	return 0;
}
