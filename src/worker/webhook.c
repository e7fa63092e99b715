/* SPDX-License-Identifier: BSD-2-Clause */
/* webhook: a FIFO of notification bodies, sent one at a time. */
#define _DEFAULT_SOURCE
#include "worker/webhook.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <jansson.h>

#include "base/backoff.h"
#include "auth/cred.h"
#include "base/log.h"
#include "base/rnd.h"
#include "conf/secrets.h"

struct wh_item {
	STAILQ_ENTRY(wh_item) link;
	char *body;
	int tries;
};

struct webhook {
	struct ev_loop *loop;
	struct http_client *http;
	char *url;
	long timeout_ms;
	webhook_token_fn *token;
	void *token_arg;
	char *bearer;		/* [notify] auth = static: from bearer_file */
	size_t bearer_len;
	STAILQ_HEAD(, wh_item) queue;	/* oldest first: its head is being sent */
	size_t n;
	struct http_call *call;
	ev_timer retry;
	long long *failures, *dropped;	/* webhook_count_into; may be NULL */
};

static void
count(long long *c)
{
	if (c != NULL)
		(*c)++;
}

static void send_head(struct webhook *wh);

static void
pop(struct webhook *wh)
{
	struct wh_item *it = STAILQ_FIRST(&wh->queue);

	STAILQ_REMOVE_HEAD(&wh->queue, link);
	wh->n--;
	free(it->body);
	free(it);
}

/* A try of the head failed (status 0: no answer, or not even sent): again
 * later, or drop it and go on with the next; the queue never stalls. */
static void
try_failed(struct webhook *wh, long status)
{
	struct wh_item *it = STAILQ_FIRST(&wh->queue);

	count(wh->failures);
	if (++it->tries >= WEBHOOK_TRIES) {
		count(wh->dropped);
		log_warn("webhook.dropped", "status=%ld tries=%d", status, it->tries);
		pop(wh);
		send_head(wh);
		return;
	}
	long long delay = backoff_ms(0, 500, 30000, it->tries, rnd_u64());
	log_info("webhook.retry", "status=%ld tries=%d retry_ms=%lld", status, it->tries, delay);
	ev_timer_set(&wh->retry, (double)delay / 1000.0, 0.0);
	ev_timer_start(wh->loop, &wh->retry);
}

static void
on_done(const struct http_response *resp, void *arg)
{
	struct webhook *wh = arg;

	wh->call = NULL;
	if (resp->status >= 200 && resp->status <= 299) {
		pop(wh);
		send_head(wh);
		return;
	}
	try_failed(wh, resp->status);
}

static void
send_head(struct webhook *wh)
{
	char *auth = NULL;
	const char *headers[3] = {"Content-Type: application/json", NULL, NULL};
	const char *tok = NULL;

	if (STAILQ_EMPTY(&wh->queue) || wh->call != NULL || ev_is_active(&wh->retry))
		return;
	if (wh->bearer != NULL)
		tok = wh->bearer;
	else if (wh->token && wh->token(wh->token_arg, &tok) < 0) {
		ev_timer_set(&wh->retry, WEBHOOK_TOKEN_WAIT_MS / 1000.0, 0.0);
		ev_timer_start(wh->loop, &wh->retry);
		return;
	}
	if (tok && (auth = cred_auth_line_new(tok)) != NULL)
		headers[1] = auth;
	const char *body = STAILQ_FIRST(&wh->queue)->body;
	struct http_request req = {
		.method = "POST", .url = wh->url, .headers = headers, .body = body,
		.body_len = strlen(body), .timeout_ms = wh->timeout_ms,
	};
	int rc = tok && auth == NULL ? -1 : http_start(wh->http, &req, on_done, wh, &wh->call);
	cred_auth_line_free(auth);
	if (rc < 0) {
		wh->call = NULL;
		log_warn("webhook.not_sent", "detail=\"cannot start request\"");
		try_failed(wh, 0);
	}
}

static void
retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop, (void)revents;
	send_head(w->data);
}

struct webhook *
webhook_new(struct ev_loop *loop, struct http_client *http, const char *url, long timeout_ms,
	    webhook_token_fn *token, void *token_arg)
{
	struct webhook *wh = calloc(1, sizeof *wh);

	if (wh == NULL || (wh->url = strdup(url)) == NULL) {
		free(wh);
		return NULL;
	}
	wh->loop = loop;
	STAILQ_INIT(&wh->queue);
	wh->http = http;
	wh->timeout_ms = timeout_ms;
	wh->token = token;
	wh->token_arg = token_arg;
	ev_init(&wh->retry, retry_cb);
	wh->retry.data = wh;
	return wh;
}

struct webhook *
webhook_from_cfg(struct ev_loop *loop, struct http_client *http, const struct cfg *cfg,
		 webhook_token_fn *worker_token, void *token_arg, char *err, size_t errlen)
{
	const char *url = cfg->notify.webhook_url;
	char *bearer = NULL;
	size_t len = 0;
	struct webhook *wh;

	err[0] = '\0';
	if (url == NULL)
		return NULL;
	if (cfg->notify.auth == CFG_AUTH_STATIC &&
	    secrets_read_cfg(cfg, cfg->notify.bearer_file, SECRETS_TRIMMED, &bearer, &len, err,
	    errlen) < 0)
		return NULL;
	wh = webhook_new(loop, http, url, cfg->notify.timeout_ms,
	    cfg->notify.auth == CFG_AUTH_OAUTH ? worker_token : NULL, token_arg);
	if (wh == NULL) {
		secrets_free(bearer, len);
		snprintf(err, errlen, "cannot create the webhook client");
		return NULL;
	}
	wh->bearer = bearer;
	wh->bearer_len = len;
	return wh;
}

void
webhook_post(struct webhook *wh, const char *json)
{
	struct wh_item *it;

	if (wh->n >= WEBHOOK_QUEUE_MAX) {
		count(wh->dropped);
		log_warn("webhook.dropped", "detail=\"queue full\" queued=%zu", wh->n);
		return;
	}
	if ((it = calloc(1, sizeof *it)) == NULL || (it->body = strdup(json)) == NULL) {
		free(it);
		return;
	}
	STAILQ_INSERT_TAIL(&wh->queue, it, link);
	wh->n++;
	send_head(wh);
}

size_t
webhook_queued(const struct webhook *wh)
{
	return wh->n;
}

void
webhook_free(struct webhook *wh)
{
	if (wh == NULL)
		return;
	if (wh->call)
		http_cancel(wh->call);
	ev_timer_stop(wh->loop, &wh->retry);
	while (!STAILQ_EMPTY(&wh->queue))
		pop(wh);
	free(wh->url);
	secrets_free(wh->bearer, wh->bearer_len);
	free(wh);
}

void
webhook_count_into(struct webhook *wh, long long *failures, long long *dropped)
{
	if (wh == NULL)
		return;
	wh->failures = failures;
	wh->dropped = dropped;
}

char *
webhook_note_body(const struct webhook_note *n)
{
	json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "id", n->id, "owner", n->owner,
	    "kind", n->kind, "reason", n->reason, "onBehalfOf", n->on_behalf_of, "action",
	    n->action, "resource", n->resource, "at", n->at);
	char *body = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	return body;
}

int
webhook_post_note(struct webhook *wh, const struct webhook_note *n)
{
	char *body = webhook_note_body(n);

	if (body == NULL)
		return -1;
	webhook_post(wh, body);
	free(body);
	return 0;
}
