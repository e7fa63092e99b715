/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ejob_call: a job's calls (ejob_int.h) -- the action's (R7, RFC 9449's
 * proof and nonce), the PDP's question (R5) and the per-job token exchange
 * (RFC 8693) -- and its place at the gate (§13: gate.h decides when a job
 * is held, takes a place, gives it back and is woken; this carries it out).
 */
#define _DEFAULT_SOURCE
#include "ejob_int.h"

static struct gate *gate_of(const struct ejob *j);
static void gate_wake_one(struct ejobs *s);
static enum job_dpop dpop_answer(struct ejob *j, const struct http_response *resp);
static void call_failed(struct ejob *j, const struct http_response *resp);
static void call_answered(struct ejob *j, const struct http_response *resp);
static void on_call_done(const struct http_response *resp, void *arg);
static const char *put_line(char **p, const char *name, size_t nl, const char *value, size_t vl);
static void cannot_call(struct ejob *j, enum job_no_call why);
static void call_not_started(struct ejob *j, const char *why);
static const char *xch_answer_name(enum job_exchange x);
static void exchange_answered(struct ejob *j, const struct oauth_xch_answer *a);
static void on_exchanged(void *arg, const struct oauth_xch_answer *a);
static void authz_answered(struct ejob *j, const struct http_response *resp);
static void on_authz_done(const struct http_response *resp, void *arg);

/* ------------------------------------------------------------------ */
/* §13: the gate -- pauses, limits, the breaker (gate.h decides)        */

static struct gate *
gate_of(const struct ejob *j)
{
	return j->rec ? env_of(j)->gate : NULL;
}

int
ejob_gate_shut(const struct ejob *j)
{
	struct gate *g = gate_of(j);

	return g != NULL && gate_check(g, j->rec->action, now_ms(j), NULL) != GATE_GO;
}

/* The oldest job held at the gate that it would let start now goes on from
 * the loop: one per place that came free, and each that starts wakes the
 * next (a pause that ends wakes all: ejobs_gate_wake). */
static void
gate_wake_one(struct ejobs *s)
{
	struct ejob *j;
	int64_t now = 0;

	if (s->draining)
		return;
	/* A pass walks the whole set on every call's end: only the jobs waiting
	 * at the gate are asked about, and the clock is read once a pass
	 * (bench/README.md: 2,000 instructions a job otherwise). */
	for (j = TAILQ_LAST(&s->all, ejob_list); j != NULL; j = TAILQ_PREV(j, ejob_list, link)) {
		if (j->finished || j->timer_kind != T_GATE_WAIT)
			continue;
		if (now == 0)
			now = now_ms(j);
		if (!gate_may_wake(gate_of(j), j->rec ? j->rec->action : NULL, now, 1, j->gate_kicked))
			continue;
		j->gate_kicked = 1;
		ejob_arm(j, T_GATE_WAIT, 0);
		return;
	}
}

void
ejob_gate_give_back(struct ejob *j, enum gate_result r)
{
	struct gate *g = gate_of(j);
	int64_t now = now_ms(j);

	j->gate_held = 0;
	if (g == NULL)
		return;
	enum gate_breaker before = gate_breaker_at(g, j->rec->action, now);
	gate_done(g, j->rec->action, j->gate_probe, r, now);
	enum gate_breaker after = gate_breaker_at(g, j->rec->action, now);
	const struct cfg_action *a = ejob_action(j);
	if (after == GATE_BROKEN && before != GATE_BROKEN)
		log_warn("breaker.open", "action=%s open_ms=%ld detail=%s", LOG_Q(j->rec->action),
		    a ? a->breaker_open_ms : 0L, j->gate_probe ? "\"the probe failed\"" :
		    "\"retryable failures in a row\"");
	else if (after == GATE_CLOSED && before != GATE_CLOSED)
		log_info("breaker.closed", "action=%s detail=\"the probe got an answer\"",
		    LOG_Q(j->rec->action));
	j->gate_probe = 0;
	gate_wake_one(j->set);
}

/* The place at the gate follows the core: held while an attempt that
 * passed it (job_next checked gate_shut) awaits the PDP, the exchange or
 * the call; given back when it ends without a call (denied, a PDP or token
 * wait, the deadline). A call's answer gives it back itself, with the
 * outcome. */
void
ejob_gate_follow(struct ejob *j)
{
	struct gate *g = gate_of(j);
	enum gate_place p = gate_place_next(j->gate_held, job_attempt_holds_gate(j->core.awaiting));

	if (p == GATE_PLACE_GIVE)
		ejob_gate_give_back(j, GATE_NO_CALL);
	if (g != NULL && p == GATE_PLACE_TAKE) {
		j->gate_probe = gate_take(g, j->rec->action, now_ms(j));
		j->gate_held = 1;
		if (j->gate_probe)
			log_info("breaker.probe", "id=%s action=%s", lid(j), LOG_Q(j->rec->action));
		gate_wake_one(j->set);
	}
}

/* Held until gate_hold_until says. */
void
ejob_gate_hold(struct ejob *j)
{
	struct gate *g = gate_of(j);
	int64_t now = now_ms(j);
	enum gate_verdict v;
	int64_t at = gate_hold_until(g, g ? j->rec->action : NULL, now, j->step.at_ms, &v);

	log_debug("job.held", "id=%s action=%s why=%s", lid(j), j->rec ? LOG_Q(j->rec->action) :
	    "-", gate_verdict_name(v));
	j->gate_kicked = 0;
	/* R6: beyond its share of the hand a job held for good is parked, so
	 * that the entries behind it are read and run */
	if (j->rec != NULL && ops_of(j)->park != NULL && gate_parks(v) &&
	    consumer_parks((long)ejobs_held(j->set), env_of(j)->cfg->daemon.max_in_flight)) {
		ejob_step_start(j, EJOB_STEP_PARK);
		return;
	}
	ejob_arm(j, T_GATE_WAIT, at - now);
}

/* ------------------------------------------------------------------ */
/* HTTP: the action call and the authority check                        */

/* RFC 9449 §9: keeps a target's DPoP-Nonce; what the answer says of the
 * proof (job_dpop_answer). */
static enum job_dpop
dpop_answer(struct ejob *j, const struct http_response *resp)
{
	const struct cfg_action *a = ejob_action(j);
	char uerr[160];

	if (a == NULL || ops_of(j)->dpop_nonce == NULL)
		return JOB_DPOP_NONE;
	if (resp->dpop_nonce != NULL) {
		struct urltpl_vars vars = {j->rec->resource, j->rec->action, j->rec->id,
		    j->rec->on_behalf_of};
		char *url = urltpl_expand(a->url, &vars, uerr, sizeof uerr);
		if (url != NULL)
			ops_of(j)->dpop_nonce(ctx_of(j), a->name, url, resp->dpop_nonce);
		free(url);
	}
	return job_dpop_answer(resp->status, resp->www_authenticate, resp->dpop_nonce != NULL);
}

/* A call that got no answer: its class and curl's message (which names a
 * host and port, no userinfo, no header) at warn, counted by class. */
static void
call_failed(struct ejob *j, const struct http_response *resp)
{
	enum callfail f = resp->fail == CALLFAIL_NONE ? CALLFAIL_OTHER : resp->fail;
	char detail[256];

	env_of(j)->n->call_failures[f]++;
	log_warn("http.failed", "id=%s action=%s attempt=%d class=%s detail=%s", lid(j),
	    LOG_Q(j->rec->action), j->core.calls, callfail_name(f),
	    log_quote(detail, sizeof detail, resp->error));
}

static void
call_answered(struct ejob *j, const struct http_response *resp)
{
	struct job_event ev = {.kind = JOB_EV_HTTP};
	int64_t now = now_ms(j);
	enum job_dpop dp = (ejob_auth_of(j, ejob_action(j)) & EJOB_AUTH_TOKEN) ?
	    dpop_answer(j, resp) : JOB_DPOP_NONE;

	if (job_dpop_retry_now(dp, &j->nonce_retried)) {
		/* one immediate retry with the nonce: no attempt (R8), no R9 */
		log_info("job.dpop_nonce", "id=%s action=%s status=401 retry=1", lid(j),
		    LOG_Q(j->rec->action));
		ejob_start_call(j);
		return;
	}
	ejob_drop_xtoken(j);	/* cached across nothing: the next call exchanges again */
	ev.dpop_proof_refused = dp == JOB_DPOP_REFUSED;
	ev.no_descriptor = resp->no_descriptor;
	ev.call_fail = resp->fail;
	ev.http_status = (int)resp->status;
	ev.invalid_token = resp->status == 403 && resp->www_authenticate &&
	    job_www_auth_invalid_token(resp->www_authenticate);
	ev.retry_after_ms = job_retry_after_ms(resp->retry_after, now);
	j->last_status = (int)resp->status;
	if (j->gate_held)
		ejob_gate_give_back(j, gate_result_of(resp->no_descriptor,
		    job_status_retryable((int)resp->status)));
	if (resp->status >= 200 && resp->status <= 299 &&
	    (ejob_auth_of(j, ejob_action(j)) & EJOB_AUTH_TOKEN))
		ops_of(j)->token_verdict(ctx_of(j), j->rec->action, j->token_gen, 1);
	if (resp->status == 0)
		call_failed(j, resp);
	log_info("job.call", "id=%s action=%s resource=%s attempt=%d status=%ld ms=%ld%s%s",
	    lid(j), LOG_Q(j->rec->action), LOG_Q(j->rec->resource), j->core.calls, resp->status,
	    resp->elapsed_ms, resp->status == 0 ? " error=" : "",
	    resp->status == 0 ? (resp->no_descriptor ? "no-descriptor" : resp->timed_out ?
	    "timeout" : "transport") : "");
	/* a stream id starts with its XADD's ms */
	ops_of(j)->call_done(ctx_of(j), j->rec->action, resp->status, resp->elapsed_ms,
	    j->attempt_started_ms - strtoll(j->stream_id, NULL, 10));
	ejob_feed(j, &ev);
}

static void
on_call_done(const struct http_response *resp, void *arg)
{
	struct ejob *j = arg;

	j->call = NULL;
	if (ejob_answered(j))
		call_answered(j, resp);
	ejob_settle(j);
}

/* The action call's headers (R7), their lines in one buffer (on the stack
 * unless they are long): it holds the bearer, so it is wiped. */
struct call_headers {
	char *buf;
	size_t len;
	const char *list[8];
	char stack[1024];
};

/* Appends "name: value" and its NUL at *p, as long as it needs to be:
 * nothing that goes out is cut short. */
static const char *
put_line(char **p, const char *name, size_t nl, const char *value, size_t vl)
{
	char *line = *p;

	memcpy(line, name, nl);
	line[nl] = ':';
	line[nl + 1] = ' ';
	memcpy(line + nl + 2, value, vl);
	line[nl + 2 + vl] = '\0';
	*p = line + nl + 2 + vl + 1;
	return line;
}

/* proof: a DPoP proof (RFC 9449) when the bearer is a DPoP-bound token,
 * else NULL. */
static int
call_headers_fill(struct call_headers *h, const struct record *r, const char *bearer,
		  const char *proof, const char *trace)
{
	static const char idem[] = "Idempotency-Key", obo[] = "Warrant-On-Behalf-Of",
	    basis[] = "Warrant-Basis", dpop[] = "DPoP", tp[] = "traceparent";
	size_t il = strlen(r->id), ol = strlen(r->on_behalf_of), bl = strlen(r->basis);
	size_t tl = bearer ? strlen(bearer) : 0, pl = proof ? strlen(proof) : 0;
	size_t trl = strlen(trace);
	size_t need = sizeof idem + 2 + il + sizeof obo + 2 + ol + sizeof basis + 2 + bl +
	    sizeof tp + 2 + trl + (bearer ? CRED_AUTH_LINE_SIZE(tl) : 0) +
	    (proof ? sizeof dpop + 2 + pl : 0);
	int nh = 0;
	char *p;

	h->len = 0;
	h->buf = need <= sizeof h->stack ? h->stack : malloc(need);
	if (h->buf == NULL)
		return -1;
	p = h->buf;
	h->list[nh++] = "Content-Type: application/json";
	h->list[nh++] = put_line(&p, idem, sizeof idem - 1, r->id, il);
	h->list[nh++] = put_line(&p, obo, sizeof obo - 1, r->on_behalf_of, ol);
	h->list[nh++] = put_line(&p, basis, sizeof basis - 1, r->basis, bl);
	if (trl > 0)	/* §13 */
		h->list[nh++] = put_line(&p, tp, sizeof tp - 1, trace, trl);
	if (bearer) {
		h->list[nh++] = p;
		p += (proof ? cred_dpop_auth_line(p, bearer, tl) : cred_auth_line(p, bearer, tl)) + 1;
	}
	if (proof)
		h->list[nh++] = put_line(&p, dpop, sizeof dpop - 1, proof, pl);
	h->list[nh] = NULL;
	h->len = (size_t)(p - h->buf);
	return 0;
}

static void
call_headers_free(struct call_headers *h)
{
	if (h->buf == NULL)
		return;
	explicit_bzero(h->buf, h->len);
	if (h->buf != h->stack)
		free(h->buf);
	h->buf = NULL;
}

/* The decided call cannot go out: the core says what that means. */
static void
cannot_call(struct ejob *j, enum job_no_call why)
{
	struct job_event ev = {.kind = JOB_EV_CANNOT_CALL, .no_call = why};
	ejob_feed(j, &ev);
}

/* A call that could not be started counts as one that got no answer. */
static void
call_not_started(struct ejob *j, const char *why)
{
	struct job_event ev = {.kind = JOB_EV_HTTP, .http_status = 0, .retry_after_ms = -1};

	log_error("job.call", "id=%s error=%s", lid(j), LOG_Q(why));
	ejob_feed(j, &ev);
}

void
ejob_start_call(struct ejob *j)
{
	const struct ejob_ops *ops = ops_of(j);
	const struct cfg_action *a = ejob_action(j);
	char err[160] = "";
	int64_t now = now_ms(j);

	if (job_time_left(&j->core, 1, now) == 0) {
		cannot_call(j, JOB_NOCALL_DEADLINE);	/* R1, at the last moment */
		return;
	}
	if (a == NULL) {
		cannot_call(j, JOB_NOCALL_ACTION_GONE);	/* a reload removed it */
		return;
	}
	struct urltpl_vars vars = {j->rec->resource, j->rec->action, j->rec->id,
	    j->rec->on_behalf_of};
	char *url = urltpl_expand(a->url, &vars, err, sizeof err);
	if (url == NULL) {
		log_warn("job.call", "id=%s error=%s", lid(j), LOG_Q(err));
		cannot_call(j, JOB_NOCALL_BAD_REQUEST);
		return;
	}
	/* token = exchange: this job's own token, for this one call */
	unsigned auth = ejob_auth_of(j, a);
	const char *bearer = (auth & EJOB_AUTH_EXCHANGE) ? j->xtoken :
	    ops->bearer(ctx_of(j), a->name, a->timeout_ms, &j->token_gen);
	if ((auth & EJOB_AUTH_TOKEN) && bearer == NULL) {
		free(url);
		cannot_call(j, JOB_NOCALL_TOKEN_GONE);	/* R6: wait for one */
		return;
	}
	/* RFC 9449: a DPoP-bound token travels with a fresh proof */
	char *proof = NULL;
	if (bearer != NULL && ops->proof != NULL &&
	    ops->proof(ctx_of(j), a->name, a->method, url, bearer, &proof) != 0) {
		free(url);
		call_not_started(j, "cannot sign the DPoP proof");
		return;
	}
	/* R7: the verified payload's own bytes (equal as JSON, never re-serialised) */
	const char *body = j->rec->body;
	struct call_headers h;
	int rc = -1;
	if (body != NULL && call_headers_fill(&h, j->rec, bearer, proof, j->trace) == 0) {
		struct http_request req = {
			.method = a->method, .url = url, .headers = h.list,
			.body = body, .body_len = j->rec->body_len,
			/* R1: the request leaves by the deadline -- connecting is
			 * bounded by the time left -- and once it has left, its
			 * answer decides (within timeout_ms): a call cut after
			 * it left might have run at the target all the same */
			.timeout_ms = a->timeout_ms,
			.connect_timeout_ms = job_time_left(&j->core, a->timeout_ms, now),
		};
		rc = ops->call(ctx_of(j), &req, on_call_done, j, &j->call);
	}
	if (body != NULL)
		call_headers_free(&h);
	dpop_proof_free(proof);
	free(url);
	if (rc < 0) {
		j->call = NULL;
		call_not_started(j, "cannot start request");
		return;
	}
	j->refs++;
	j->wait = W_CALL;
	j->attempt_started_ms = now_ms(j);
}

/* ------------------------------------------------------------------ */
/* RFC 8693: a token for this one job                                   */

static const char *
xch_answer_name(enum job_exchange x)
{
	static const char *const n[] = {[JOB_XCH_OK] = "token",
	    [JOB_XCH_UNAVAILABLE] = "unavailable", [JOB_XCH_REFRESH] = "refresh",
	    [JOB_XCH_REFUSED] = "refused", [JOB_XCH_FAILED] = "failed"};
	return (unsigned)x < sizeof n / sizeof n[0] ? n[x] : "unknown";
}

static void
exchange_answered(struct ejob *j, const struct oauth_xch_answer *a)
{
	static const enum job_exchange map[] = {[OAUTH_XCH_OK] = JOB_XCH_OK,
	    [OAUTH_XCH_UNAVAILABLE] = JOB_XCH_UNAVAILABLE, [OAUTH_XCH_REFRESH] = JOB_XCH_REFRESH,
	    [OAUTH_XCH_REFUSED] = JOB_XCH_REFUSED, [OAUTH_XCH_FAILED] = JOB_XCH_FAILED};
	struct job_event ev = {.kind = JOB_EV_EXCHANGED, .exchange = JOB_XCH_UNAVAILABLE};
	char q[256];

	if ((unsigned)a->r < sizeof map / sizeof map[0])
		ev.exchange = map[a->r];
	/* §9: the IdP's own code is the reason; one we do not name is idp-refused */
	ev.idp_reason = job_idp_reason(a->code);
	ejob_drop_xtoken(j);	/* one a call that never went out left behind */
	if (a->r == OAUTH_XCH_OK && (j->xtoken = strdup(a->token)) == NULL)
		ev.exchange = JOB_XCH_UNAVAILABLE;
	/* per-record: kept for the next job on this resource (RFC 9396) */
	const struct cfg_action *act = ejob_action(j);
	if (ev.exchange == JOB_XCH_OK && act != NULL && a->lifetime_ms > 0 &&
	    (ejob_auth_of(j, act) & EJOB_AUTH_PER_RECORD) && ops_of(j)->record_keep != NULL)
		ops_of(j)->record_keep(ctx_of(j), act->name, j->rec->resource, a->token,
		    a->lifetime_ms, &j->token_gen);
	log_info("job.exchange", "id=%s answer=%s detail=%s", lid(j),
	    xch_answer_name(ev.exchange), log_quote(q, sizeof q, a->detail));
	ejob_feed(j, &ev);
}

static void
on_exchanged(void *arg, const struct oauth_xch_answer *a)
{
	struct ejob *j = arg;

	j->xch = NULL;
	if (ejob_answered(j))
		exchange_answered(j, a);
	ejob_settle(j);
}

void
ejob_start_exchange(struct ejob *j)
{
	const struct cfg_action *a = ejob_action(j);
	char err[160] = "";
	long left = job_time_left(&j->core, env_of(j)->cfg->oauth.timeout_ms, now_ms(j));

	if (left == 0) {
		cannot_call(j, JOB_NOCALL_DEADLINE);	/* R1: no exchange past it */
		return;
	}
	if (a == NULL) {
		cannot_call(j, JOB_NOCALL_ACTION_GONE);
		return;
	}
	struct urltpl_vars vars = {j->rec->resource, j->rec->action, j->rec->id,
	    j->rec->on_behalf_of};
	char *url = urltpl_expand(a->url, &vars, err, sizeof err);
	if (url == NULL) {
		cannot_call(j, JOB_NOCALL_BAD_REQUEST);
		return;
	}
	/* per-record: a token kept for this (action, resource) serves */
	unsigned auth = ejob_auth_of(j, a);
	const char *kept = (auth & EJOB_AUTH_PER_RECORD) && ops_of(j)->record_token != NULL ?
	    ops_of(j)->record_token(ctx_of(j), a->name, j->rec->resource, a->timeout_ms,
	    &j->token_gen) : NULL;
	if (kept != NULL) {
		struct oauth_xch_answer hit = {OAUTH_XCH_OK, kept, "kept", "", -1};
		free(url);
		exchange_answered(j, &hit);
		return;
	}
	/* scope = the action (or the scope it names), resource = the target;
	 * the exchange's own request ends by the deadline (R1) */
	struct ejob_exchange_req rq = {
		.action = a->name, .record = (auth & EJOB_AUTH_PER_RECORD) ? j->rec->resource :
		    j->raw ? j->raw : "",
		.scope = a->scope ? a->scope : a->name, .resource = url,
		.timeout_ms = a->timeout_ms, .max_ms = left,
	};
	j->xch = ops_of(j)->exchange(ctx_of(j), &rq, &j->token_gen, on_exchanged, j);
	free(url);
	if (j->xch == NULL) {
		cannot_call(j, JOB_NOCALL_TOKEN_GONE);	/* R6: no actor token now */
		return;
	}
	j->refs++;
	j->wait = W_EXCHANGE;
}

static void
authz_answered(struct ejob *j, const struct http_response *resp)
{
	struct job_event ev = {.kind = JOB_EV_AUTHZ};

	ev.authz = authz_parse_answer(env_of(j)->cfg->authz.api, resp->status, resp->body,
	    resp->body_len);
	if (ev.authz == JOB_AUTHZ_UNAVAILABLE)
		env_of(j)->n->pdp_failures++;
	if (resp->status == 401)	/* §7: the PDP's token is refreshed, the question asked again */
		ops_of(j)->token_verdict(ctx_of(j), NULL, j->token_gen, 0);
	log_info("job.authz", "id=%s status=%ld answer=%s ms=%ld", lid(j), resp->status,
	    authz_name(ev.authz), resp->elapsed_ms);
	ejob_feed(j, &ev);
}

static void
on_authz_done(const struct http_response *resp, void *arg)
{
	struct ejob *j = arg;

	j->call = NULL;
	if (ejob_answered(j))
		authz_answered(j, resp);
	ejob_settle(j);
}

void
ejob_start_authz(struct ejob *j)
{
	const struct ejob_env *env = env_of(j);
	/* R1, R5: the PDP's answer is awaited no later than the deadline */
	long left = job_time_left(&j->core, env->cfg->authz.timeout_ms, now_ms(j));
	uint64_t gen;

	if (left == 0) {
		cannot_call(j, JOB_NOCALL_DEADLINE);
		return;
	}
	const struct authz_shape shape = {.api = env->cfg->authz.api,
	    .subject_type = env->cfg->authz.subject_type,
	    .resource_type = env->cfg->authz.resource_type};
	char *body = authz_request_body(j->rec, &shape);
	struct job_event ev = {.kind = JOB_EV_AUTHZ, .authz = JOB_AUTHZ_UNAVAILABLE};
	/* the PDP's own token ([authz] auth, §7), never the worker's */
	const char *tok = env->ops->bearer(env->ctx, NULL, env->cfg->authz.timeout_ms, &gen);
	j->token_gen = gen;
	char *h_auth = cred_auth_line_new(tok);
	char h_trace[sizeof "traceparent: " + TRACE_LEN];
	snprintf(h_trace, sizeof h_trace, "traceparent: %s", j->trace);	/* §13 */
	const char *headers[] = {"Content-Type: application/json", h_trace, h_auth, NULL};
	struct http_request req = {
		.method = "POST", .url = env->cfg->authz.url, .headers = headers,
		.body = body, .body_len = body ? strlen(body) : 0, .timeout_ms = left,
	};
	/* no PDP token yet: asked again later, like a PDP that is down (R5) */
	int no_token = tok == NULL && (env->ops->auth(env->ctx, NULL) & EJOB_AUTH_TOKEN);
	int rc = body && !no_token && (!tok || h_auth) ?
	    env->ops->call(env->ctx, &req, on_authz_done, j, &j->call) : -1;
	cred_auth_line_free(h_auth);
	free(body);
	if (rc < 0) {
		j->call = NULL;
		env->n->pdp_failures++;
		ejob_feed(j, &ev);
		return;
	}
	j->refs++;
	j->wait = W_AUTHZ;
}
