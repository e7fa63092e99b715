/* SPDX-License-Identifier: BSD-2-Clause */
/* oauth_xch: a token for one job -- RFC 8693 exchange, RFC 9396 per-record. */
#define _DEFAULT_SOURCE
#include "oauth_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wtime.h"
#include "core/token.h"


#define TOKEN_EXCHANGE_GRANT	"urn:ietf:params:oauth:grant-type:token-exchange"
#define ACCESS_TOKEN_TYPE	"urn:ietf:params:oauth:token-type:access_token"

struct oauth_xch_call {
	struct oauth *o;
	struct http_call *call;
	oauth_exchange_cb *cb;
	void *arg;
	/* the request, kept to send it again for a DPoP nonce challenge */
	char *subject, *subject_type, *scope, *resource, *details;
	long max_ms, call_timeout_ms;
	int nonce_retry;
	int64_t sent_wall_ms;	/* a JWT exp becomes a lifetime against it */
	ev_timer delay;		/* delay_ms: armed until the request goes */
};

/* §9: what the IdP's answer means for the job, one mapping for every mode
 * (token_idp_classify). */
static enum oauth_xch
xch_of(enum token_idp_error e)
{
	switch (e) {
	case TOKEN_IDP_REFRESH:
		return OAUTH_XCH_REFRESH;
	case TOKEN_IDP_REFUSED:
		return OAUTH_XCH_REFUSED;
	case TOKEN_IDP_FATAL:
		return OAUTH_XCH_FAILED;
	case TOKEN_IDP_TRANSIENT:
		break;
	}
	return OAUTH_XCH_UNAVAILABLE;
}

static void
xch_free(struct oauth_xch_call *x)
{
	if (x == NULL)
		return;
	ev_timer_stop(x->o->loop, &x->delay);
	oauth_wipe_free(x->subject);
	free(x->subject_type);
	free(x->scope);
	free(x->resource);
	free(x->details);
	free(x);
}

static int xch_send(struct oauth_xch_call *x);

static void
on_exchange(const struct http_response *resp, void *arg)
{
	struct oauth_xch_call *x = arg;
	char detail[512] = "", code[64] = "", *tok = NULL;
	long long expires_in = -1;
	struct oauth_xch_answer a = {OAUTH_XCH_UNAVAILABLE, NULL, detail, code, -1};
	int dpop = x->o->set.dpop != NULL;

	x->call = NULL;
	if (oauth_nonce_challenge(&x->o->set, resp) && !x->nonce_retry) {
		x->nonce_retry = 1;	/* RFC 9449 §8: not a failure, not an attempt */
		if (xch_send(x) == 0)
			return;
		snprintf(detail, sizeof detail, "cannot send the request again");
	} else if (resp->status >= 200 && resp->status <= 299) {
		if (token_parse_bound(resp->body, resp->body_len, dpop, &tok, &expires_in, detail,
		    sizeof detail) == 0) {
			a.r = OAUTH_XCH_OK;
			a.lifetime_ms = token_lifetime_ms(expires_in, tok, x->sent_wall_ms);
		}
	} else if (resp->status == 0) {
		snprintf(detail, sizeof detail, "%s", resp->timed_out ? "timeout" : "transport error");
	} else {
		if (token_parse_response(resp->body, resp->body_len, &tok, &expires_in, detail,
		    sizeof detail) == 0)
			snprintf(detail, sizeof detail, "http %ld", resp->status);
		oauth_wipe_free(tok);
		tok = NULL;
		a.r = xch_of(token_idp_classify(resp->status, detail, code, sizeof code));
	}
	a.token = a.r == OAUTH_XCH_OK ? tok : NULL;
	x->cb(x->arg, &a);
	oauth_wipe_free(tok);
	xch_free(x);
}

/* Builds and starts x's request: 0, or -1 (nothing in flight). */
static int
xch_send(struct oauth_xch_call *x)
{
	struct oauth *o = x->o;
	const char *actor = NULL;
	char err[256], *body = NULL, *userpwd = NULL, *proof = NULL;
	int64_t now = wtime_now_ms();
	int rc;

	if (x->subject != NULL &&
	    (actor = oauth_token(o, wtime_mono_ms(), x->call_timeout_ms)) == NULL)
		return -1;
	const char *xgrant[] = {"grant_type", TOKEN_EXCHANGE_GRANT,
	    "subject_token", x->subject, "subject_token_type", x->subject_type,
	    "actor_token", actor, "actor_token_type", ACCESS_TOKEN_TYPE,
	    "scope", x->scope, "resource", x->resource, NULL};
	/* RFC 9396 §2: the client credentials grant, narrowed by the details */
	const char *rgrant[] = {"grant_type", "client_credentials", "scope", x->scope,
	    "resource", x->resource, "authorization_details", x->details, NULL};
	proof = oauth_dpop_line(&o->set, "POST", o->set.token_url, NULL, now);
	const char *headers[] = {"Content-Type: application/x-www-form-urlencoded",
	    "Accept: application/json", proof, NULL};
	rc = o->set.dpop != NULL && proof == NULL ? -1 : oauth_build_request(&o->set, now,
	    x->subject ? xgrant : rgrant, &body, &userpwd, err, sizeof err);
	if (rc == 0) {
		struct http_request req = {
			.method = "POST", .url = o->set.token_url, .headers = headers,
			.body = body, .body_len = strlen(body),
			.timeout_ms = x->max_ms > 0 && x->max_ms < o->set.timeout_ms ?
			    x->max_ms : o->set.timeout_ms, .userpwd = userpwd,
		};
		rc = http_start(o->http, &req, on_exchange, x, &x->call);
	}
	oauth_wipe_free(body);
	oauth_wipe_free(userpwd);
	oauth_wipe_free(proof);
	x->sent_wall_ms = now;
	return rc == 0 ? 0 : -1;
}

/* R9: a request held back by delay_ms goes now; when it cannot, the
 * answer is "unavailable" (the job retries within its deadline). */
static void
on_xch_delay(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct oauth_xch_call *x = w->data;
	struct oauth_xch_answer a = {OAUTH_XCH_UNAVAILABLE, NULL, "cannot start the request", "",
	    -1};

	(void)loop, (void)revents;
	if (xch_send(x) == 0)
		return;
	x->cb(x->arg, &a);
	xch_free(x);
}

static int
dup_into(char **dst, const char *src)
{
	return src != NULL && (*dst = strdup(src)) == NULL ? -1 : 0;
}

struct oauth_xch_call *
oauth_exchange(struct oauth *o, const struct oauth_exchange_req *rq, oauth_exchange_cb *cb,
	       void *arg, int64_t now_mono_ms, long call_timeout_ms)
{
	struct oauth_xch_call *x;

	/* R6: an exchange needs an actor that outlives the call */
	if ((rq->subject_token != NULL && oauth_token(o, now_mono_ms, call_timeout_ms) == NULL) ||
	    (x = calloc(1, sizeof *x)) == NULL)
		return NULL;
	x->o = o;
	x->cb = cb;
	x->arg = arg;
	x->max_ms = rq->max_ms;
	x->call_timeout_ms = call_timeout_ms;
	ev_timer_init(&x->delay, on_xch_delay, rq->delay_ms > 0 ? (double)rq->delay_ms / 1000.0 :
	    0.0, 0.0);
	x->delay.data = x;
	if (dup_into(&x->subject, rq->subject_token) != 0 ||
	    dup_into(&x->subject_type, rq->subject_token_type) != 0 ||
	    dup_into(&x->scope, rq->scope) != 0 || dup_into(&x->resource, rq->resource) != 0 ||
	    dup_into(&x->details, rq->authorization_details) != 0 ||
	    (rq->delay_ms <= 0 && xch_send(x) != 0)) {
		xch_free(x);
		return NULL;
	}
	if (rq->delay_ms > 0)
		ev_timer_start(o->loop, &x->delay);
	return x;
}

void
oauth_exchange_cancel(struct oauth_xch_call *x)
{
	if (x == NULL)
		return;
	http_cancel(x->call);
	xch_free(x);
}
