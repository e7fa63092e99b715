/* script: one loader and one caller for the embedded Lua scripts, and the
 * batcher of the calls that have a batch form. */
#include "script.h"

#include "log.h"

#include <stdlib.h>

void
script_set_init(struct script_set *set)
{
	for (int i = 0; i < STORE_NSCRIPTS; i++) {
		rconn_script_init(&set->s[i], store_scripts[i].body);
		if (store_scripts[i].batch)
			rconn_script_init(&set->batch[i], store_scripts[i].batch);
		else
			set->batch[i] = (struct rconn_script){.body = NULL};
	}
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

/* A call gathered, with its own copy of the arguments. */
struct gathered {
	struct gathered *next;
	struct store_call *c;		/* its arguments, owned */
	rconn_reply_cb *cb;
	void *arg;
};

struct script_batch {
	struct ev_loop *loop;
	struct rconn *rc;
	const struct script_set *set;
	ev_prepare flush;		/* before the loop waits: send what is gathered */
	ev_idle again;			/* calls gathered while flushing: no waiting */
	struct gathered *head, **tail;
};

/* The callbacks of one batch call sent: item i's is to[i]. Freed by the
 * reply's callback, after every item's callback returned. */
struct sent {
	size_t n;
	struct {
		rconn_reply_cb *cb;
		void *arg;
	} to[];
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

/* Sends items[0..n-1] (n >= 2) as one call of the batch form; -1 when it
 * could not be sent (no callback then). */
static int
send_batch(struct script_batch *b, struct gathered *const *items, size_t n)
{
	const struct store_call *calls[STORE_BATCH_MAX];
	enum store_script_id id = items[0]->c->script;
	struct store_vec v;
	char err[160];

	for (size_t i = 0; i < n; i++)
		calls[i] = items[i]->c;
	if (store_batch_vec(calls, n, &v, err, sizeof err) < 0) {
		log_error("script.refused", "error=\"%s\"", err);
		return -1;
	}
	struct sent *s = malloc(sizeof *s + n * sizeof s->to[0]);
	if (s == NULL) {
		store_vec_free(&v);
		return -1;
	}
	s->n = n;
	for (size_t i = 0; i < n; i++) {
		s->to[i].cb = items[i]->cb;
		s->to[i].arg = items[i]->arg;
	}
	/* the number of keys store_batch_vec counted (shared once, the rest per item) */
	int sent = send_vec(b->rc, &b->set->batch[id], &v, v.nkeys_n, on_batch_reply, s);
	store_vec_free(&v);
	if (sent < 0)
		free(s);
	return sent;
}

/* Sends a run of items that fit one batch; every item gets exactly one
 * callback (NULL now when the run could not be sent), and is freed. */
static void
send_run(struct script_batch *b, struct gathered *const *items, size_t n)
{
	int sent;

	if (n == 1) {	/* the plain script: a batch of one costs Redis 7 % more */
		const struct store_call *c = items[0]->c;
		sent = rconn_eval(b->rc, &b->set->s[c->script], items[0]->cb, items[0]->arg,
		    store_scripts[c->script].nkeys, c->n, c->v, c->len);
	} else
		sent = send_batch(b, items, n);
	for (size_t i = 0; i < n; i++) {
		if (sent < 0)
			items[i]->cb(b->rc, NULL, items[i]->arg);
		free(items[i]->c);
		free(items[i]);
	}
}

/* Sends everything gathered so far. Callbacks run from here (a batch that
 * could not be sent) may gather new calls: they wait for the next turn,
 * which `again` keeps from waiting on the loop. */
static void
flush(struct script_batch *b)
{
	struct gathered *list = b->head;

	b->head = NULL;
	b->tail = &b->head;
	while (list) {
		struct gathered *run[STORE_BATCH_MAX];
		size_t n = 0;
		do {
			run[n++] = list;
			list = list->next;
		} while (list && n < STORE_BATCH_MAX && store_batch_fits(run[0]->c, list->c));
		send_run(b, run, n);
	}
}

static void
on_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct script_batch *b = w->data;
	(void)revents;

	ev_idle_stop(loop, &b->again);
	flush(b);
	if (b->head == NULL)
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
	b->tail = &b->head;
	ev_prepare_init(&b->flush, on_prepare);
	b->flush.data = b;
	ev_idle_init(&b->again, on_again);
	b->again.data = b;
	return b;
}

void
script_batch_free(struct script_batch *b)
{
	if (b == NULL)
		return;
	ev_prepare_stop(b->loop, &b->flush);
	ev_idle_stop(b->loop, &b->again);
	while (b->head) {	/* a callback may gather again: taken list by list */
		struct gathered *list = b->head;
		b->head = NULL;
		b->tail = &b->head;
		while (list) {
			struct gathered *g = list;
			list = g->next;
			g->cb(b->rc, NULL, g->arg);
			free(g->c);
			free(g);
		}
	}
	free(b);
}

int
script_batch_send(struct script_batch *b, const struct store_args *a, rconn_reply_cb *cb,
		  void *arg)
{
	char err[160];

	if (store_scripts[a->script].batch == NULL)
		return script_send(b->rc, b->set, a, cb, arg);
	if (!rconn_is_up(b->rc))
		return -1;	/* as rconn_eval: refused now, not a NULL later */
	struct gathered *g = malloc(sizeof *g);
	if (g == NULL)
		return -1;
	if (store_call_new(a, &g->c, err, sizeof err) < 0) {
		log_error("script.refused", "error=\"%s\"", err);
		free(g);
		return -1;
	}
	g->next = NULL;
	g->cb = cb;
	g->arg = arg;
	*b->tail = g;
	b->tail = &g->next;
	ev_prepare_start(b->loop, &b->flush);
	return 0;
}
