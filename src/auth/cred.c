/* SPDX-License-Identifier: BSD-2-Clause */
/* cred: one credential per action -- none, a static bearer, or the worker's token. */
#define _DEFAULT_SOURCE
#include "auth/cred.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "jose/dpop.h"
#include "conf/secrets.h"
#include "core/token.h"
#include "base/wtime.h"

/* token = per-record: tokens kept per resource until they expire. */
#define RCACHE_MAX	1024
struct rtok {
	char *resource, *token;	/* the token wiped on free */
	int64_t expires_at_ms;	/* monotonic */
	uint64_t gen;
};
struct rcache {
	struct rtok v[RCACHE_MAX];
	size_t n;
	uint64_t gen;		/* the last generation handed out */
	/* R9 for per-record tokens: requests that refusals cause are spaced */
	long min_interval_ms;
	int refused_in_row;
	int64_t last_fetch_ms, next_fetch_ms;	/* monotonic */
};

struct cred {
	char *name;		/* the action's */
	enum cfg_auth kind;
	long timeout_ms;	/* the action's: R6 */
	char *bearer;		/* CFG_AUTH_STATIC: the secret, wiped on free */
	size_t bearer_len;
	struct oauth *oauth;	/* CFG_AUTH_OAUTH */
	int owns_oauth;		/* a narrowed token this cred fetches and frees */
	int exchange;		/* token = exchange */
	int per_record;		/* token = per-record (RFC 9396) */
	char *rar_type, *origin, *scope, *resource;	/* per-record's request */
	struct rcache *cache;	/* per-record's tokens */
	const char *scope_name;	/* a narrowed token's name for people (tokenState.<it>):
				   the action's scope, audience or resource; borrowed
				   from the owner's copy, NULL for the worker's */
	char *scope_copy;
};

struct creds {
	struct cred *v;
	size_t n;
	struct cred pdp, hook;	/* [authz] auth, [notify] auth (§6, §7) */
};

static int
narrowed(const struct cfg_action *a)
{
	return a->scope != NULL || a->audience != NULL || a->resource != NULL;
}

static int
same_opt(const char *x, const char *y)
{
	return (x == NULL && y == NULL) || (x != NULL && y != NULL && strcmp(x, y) == 0);
}

/* An earlier action of the set narrowed to the same token: share it. */
static struct oauth *
shared_token(const struct cfg *cfg, const struct creds *cs, const struct cfg_action *a)
{
	for (size_t i = 0; i < cs->n; i++) {
		const struct cfg_action *b = &cfg->actions[i];
		if (cs->v[i].owns_oauth && same_opt(a->scope, b->scope) &&
		    same_opt(a->audience, b->audience) && same_opt(a->resource, b->resource))
			return cs->v[i].oauth;
	}
	return NULL;
}

static int
oauth_init(struct cred *c, const struct cfg *cfg, const struct creds *cs,
	   const struct cfg_action *a, const struct creds_ctx *ctx, char *err, size_t errlen)
{
	if (ctx->oauth == NULL) {
		snprintf(err, errlen, "[action %s] auth = oauth needs [oauth]", a->name);
		return -1;
	}
	c->oauth = ctx->oauth;
	if (!narrowed(a))
		return 0;
	if ((c->oauth = shared_token(cfg, cs, a)) != NULL) {
		for (size_t i = 0; i < cs->n; i++)
			if (cs->v[i].owns_oauth && cs->v[i].oauth == c->oauth)
				c->scope_name = cs->v[i].scope_name;
		return 0;
	}
	if ((c->scope_copy = strdup(a->scope ? a->scope : a->audience ? a->audience :
	    a->resource)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	c->scope_name = c->scope_copy;
	struct oauth_scope sc = {a->scope, a->audience, a->resource, 0};
	if ((c->oauth = oauth_new_scoped(ctx->loop, ctx->http, cfg, &sc, err, errlen)) == NULL)
		return -1;
	c->owns_oauth = 1;
	oauth_set_listener(c->oauth, ctx->listener, ctx->arg);
	return 0;
}

/* token = per-record asks [oauth]'s client for each (action, resource):
 * no token of the action's own is fetched ahead. */
static int
per_record_init(struct cred *c, const struct cfg *cfg, const struct cfg_action *a,
		const struct creds_ctx *ctx, char *err, size_t errlen)
{
	char origin[512];

	if (ctx->oauth == NULL) {
		snprintf(err, errlen, "[action %s] token = per-record needs [oauth]", a->name);
		return -1;
	}
	/* placeholders stay out of scheme, host and port (R7): the template's
	 * origin is every call's */
	if (dpop_origin(a->url, origin, sizeof origin) != 0) {
		snprintf(err, errlen, "[action %s] url has no origin", a->name);
		return -1;
	}
	c->oauth = ctx->oauth;
	if ((c->origin = strdup(origin)) == NULL || (c->rar_type = strdup(cfg->oauth.rar_type ?
	    cfg->oauth.rar_type : "warrant")) == NULL || (a->scope != NULL &&
	    (c->scope = strdup(a->scope)) == NULL) || (a->resource != NULL &&
	    (c->resource = strdup(a->resource)) == NULL) ||
	    (c->cache = calloc(1, sizeof *c->cache)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	c->cache->min_interval_ms = cfg->oauth.min_refresh_interval_ms;
	return 0;
}

static void
rtok_clear(struct rtok *t)
{
	free(t->resource);
	if (t->token != NULL) {
		explicit_bzero(t->token, strlen(t->token));
		free(t->token);
	}
	memset(t, 0, sizeof *t);
}

static void
rcache_free(struct rcache *rc)
{
	for (size_t i = 0; rc != NULL && i < rc->n; i++)
		rtok_clear(&rc->v[i]);
	free(rc);
}

static int
cred_init(struct cred *c, const struct cfg *cfg, const struct creds *cs,
	  const struct cfg_action *a, const struct creds_ctx *ctx, char *err, size_t errlen)
{
	c->kind = a->auth;
	c->timeout_ms = a->timeout_ms;
	c->exchange = a->token_exchange == CFG_TOKEN_EXCHANGE;
	c->per_record = a->token_exchange == CFG_TOKEN_PER_RECORD;
	if ((c->name = strdup(a->name)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (c->per_record)
		return per_record_init(c, cfg, a, ctx, err, errlen);
	if (a->auth == CFG_AUTH_STATIC)
		return secrets_read_cfg(cfg, a->bearer_file, SECRETS_TRIMMED, &c->bearer,
		    &c->bearer_len, err, errlen);
	if (a->auth == CFG_AUTH_OAUTH)
		return oauth_init(c, cfg, cs, a, ctx, err, errlen);
	return 0;
}

/* The PDP's or the webhook's credential: never an action's token. With
 * oauth a manager of its own for its own scope, resource or audience (the
 * config demands one), bearer tokens (their calls carry no DPoP proof). */
static int
side_init(struct cred *c, const struct cfg *cfg, const char *name, enum cfg_auth auth,
	  const char *bearer_file, const struct oauth_scope *sc, long timeout_ms,
	  const struct creds_ctx *ctx, char *err, size_t errlen)
{
	c->kind = auth;
	c->timeout_ms = timeout_ms;
	if ((c->name = strdup(name)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (auth == CFG_AUTH_STATIC)
		return secrets_read_cfg(cfg, bearer_file, SECRETS_TRIMMED, &c->bearer,
		    &c->bearer_len, err, errlen);
	if (auth != CFG_AUTH_OAUTH)
		return 0;
	if (ctx->oauth == NULL) {
		snprintf(err, errlen, "%s auth = oauth needs [oauth]", name);
		return -1;
	}
	if ((c->oauth = oauth_new_scoped(ctx->loop, ctx->http, cfg, sc, err, errlen)) == NULL)
		return -1;
	c->owns_oauth = 1;
	oauth_set_listener(c->oauth, ctx->listener, ctx->arg);
	return 0;
}

static void
cred_clear(struct cred *c)
{
	if (c->bearer)
		secrets_free(c->bearer, c->bearer_len);
	if (c->owns_oauth)
		oauth_free(c->oauth);
	free(c->name);
	free(c->scope_copy);
	free(c->rar_type);
	free(c->origin);
	free(c->scope);
	free(c->resource);
	rcache_free(c->cache);
	memset(c, 0, sizeof *c);
}

struct creds *
creds_new(const struct cfg *cfg, const struct creds_ctx *ctx, char *err, size_t errlen)
{
	struct creds *cs = calloc(1, sizeof *cs);

	if (cs == NULL || (cs->v = calloc(cfg->nactions + 1, sizeof *cs->v)) == NULL) {
		free(cs);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	for (; cs->n < cfg->nactions; cs->n++)
		if (cred_init(&cs->v[cs->n], cfg, cs, &cfg->actions[cs->n], ctx, err, errlen) < 0) {
			cs->n++;	/* free what this one got too */
			creds_free(cs);
			return NULL;
		}
	struct oauth_scope pdp = {cfg->authz.scope, cfg->authz.audience, cfg->authz.resource, 1};
	struct oauth_scope hook = {cfg->notify.scope, cfg->notify.audience, cfg->notify.resource, 1};
	if ((cfg->authz.url != NULL && side_init(&cs->pdp, cfg, "[authz]", cfg->authz.auth,
	    cfg->authz.bearer_file, &pdp, cfg->authz.timeout_ms, ctx, err, errlen) != 0) ||
	    (cfg->notify.webhook_url != NULL && side_init(&cs->hook, cfg, "[notify]",
	    cfg->notify.auth, cfg->notify.bearer_file, &hook, cfg->notify.timeout_ms, ctx, err,
	    errlen) != 0)) {
		creds_free(cs);
		return NULL;
	}
	return cs;
}

void
creds_free(struct creds *cs)
{
	if (cs == NULL)
		return;
	for (size_t i = 0; i < cs->n; i++)
		cred_clear(&cs->v[i]);
	cred_clear(&cs->pdp);
	cred_clear(&cs->hook);
	free(cs->v);
	free(cs);
}

void
creds_start(struct creds *cs)
{
	for (size_t i = 0; cs && i < cs->n; i++)
		if (cs->v[i].owns_oauth)
			oauth_start(cs->v[i].oauth);
	if (cs && cs->pdp.owns_oauth)
		oauth_start(cs->pdp.oauth);
	if (cs && cs->hook.owns_oauth)
		oauth_start(cs->hook.oauth);
}

const struct cred *
creds_pdp(const struct creds *cs)
{
	return cs != NULL && cs->pdp.name != NULL ? &cs->pdp : NULL;
}

const struct cred *
creds_webhook(const struct creds *cs)
{
	return cs != NULL && cs->hook.name != NULL ? &cs->hook : NULL;
}

/* R6: a narrowed token (an action's own scope, audience or resource) that
 * cannot be had holds up its own actions only; the worker's own holds up
 * every action that calls with it. */
int
creds_tokens_usable(const struct creds *cs)
{
	uint64_t gen;

	for (size_t i = 0; cs && i < cs->n; i++)
		if (cs->v[i].kind == CFG_AUTH_OAUTH && cs->v[i].scope_name == NULL &&
		    cred_bearer(&cs->v[i], cs->v[i].timeout_ms, &gen) == NULL)
			return 0;
	return 1;
}

size_t
creds_scopes(const struct creds *cs, struct creds_scope *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; cs && i < cs->n && n < max; i++) {
		const struct cred *c = &cs->v[i];
		if (!c->owns_oauth)
			continue;
		out[n].name = c->scope_name;
		out[n].state = oauth_state_name(c->oauth);
		out[n].expires_at_ms = oauth_expires_at_ms(c->oauth);
		n++;
	}
	return n;
}

const struct cred *
creds_find(const struct creds *cs, const char *name)
{
	for (size_t i = 0; cs && name && i < cs->n; i++)
		if (strcmp(cs->v[i].name, name) == 0)
			return &cs->v[i];
	return NULL;
}

int
cred_is_oauth(const struct cred *c)
{
	return c != NULL && c->kind == CFG_AUTH_OAUTH;
}

const char *
cred_bearer(const struct cred *c, long timeout_ms, uint64_t *gen)
{
	*gen = 0;
	switch (c->kind) {
	case CFG_AUTH_STATIC:
		return c->bearer;
	case CFG_AUTH_OAUTH:
		/* per-record: each job asks for its own (cred_record_token); none
		 * is held ahead, so none is missing */
		if (c->per_record)
			return "";
		*gen = oauth_generation(c->oauth);
		return oauth_token(c->oauth, wtime_mono_ms(), timeout_ms);
	case CFG_AUTH_NONE:
		break;
	}
	return NULL;
}

size_t
cred_auth_line(char *buf, const char *token, size_t token_len)
{
	memcpy(buf, CRED_AUTH_PREFIX, sizeof CRED_AUTH_PREFIX - 1);
	memcpy(buf + sizeof CRED_AUTH_PREFIX - 1, token, token_len);
	buf[sizeof CRED_AUTH_PREFIX - 1 + token_len] = '\0';
	return sizeof CRED_AUTH_PREFIX - 1 + token_len;
}

char *
cred_auth_line_new(const char *token)
{
	size_t len;
	char *line;

	if (token == NULL)
		return NULL;
	len = strlen(token);
	if ((line = malloc(CRED_AUTH_LINE_SIZE(len))) != NULL)
		(void)cred_auth_line(line, token, len);
	return line;
}

void
cred_auth_line_free(char *line)
{
	if (line != NULL) {
		explicit_bzero(line, strlen(line));
		free(line);
	}
}

int
cred_exchanges(const struct cred *c)
{
	return c != NULL && (c->exchange || c->per_record);
}

int
cred_per_record(const struct cred *c)
{
	return c != NULL && c->per_record;
}

/* RFC 9396 §2: one entry -- this action, at its origin, on this resource. */
static char *
details_json(const struct cred *c, const char *resource)
{
	json_t *d = json_pack("[{s:s, s:[s], s:[s], s:s}]", "type", c->rar_type, "actions", c->name,
	    "locations", c->origin, "identifier", resource);
	char *s = d ? json_dumps(d, JSON_COMPACT) : NULL;

	json_decref(d);
	return s;
}

const char *
cred_record_token(const struct cred *c, const char *resource, long timeout_ms, uint64_t *gen)
{
	int64_t now = wtime_mono_ms();

	*gen = 0;
	for (size_t i = 0; c != NULL && c->cache != NULL && i < c->cache->n; i++) {
		const struct rtok *t = &c->cache->v[i];
		if (t->resource != NULL && strcmp(t->resource, resource) == 0) {
			if (!token_usable(t->expires_at_ms, now, timeout_ms))
				return NULL;
			*gen = t->gen;
			return t->token;
		}
	}
	return NULL;
}

void
cred_record_keep(const struct cred *c, const char *resource, const char *token,
		 int64_t lifetime_ms, uint64_t *gen)
{
	struct rcache *rc = c ? c->cache : NULL;
	int64_t now = wtime_mono_ms();
	struct rtok *slot = NULL;

	*gen = 0;
	if (rc == NULL || lifetime_ms <= 0)
		return;
	for (size_t i = 0; i < rc->n && slot == NULL; i++)
		if (rc->v[i].resource != NULL && strcmp(rc->v[i].resource, resource) == 0)
			slot = &rc->v[i];
	for (size_t i = 0; i < rc->n && slot == NULL; i++)
		if (rc->v[i].resource == NULL)
			slot = &rc->v[i];	/* a dropped one */
	if (slot == NULL && rc->n < RCACHE_MAX)
		slot = &rc->v[rc->n++];
	if (slot == NULL) {
		/* full: the one that dies first goes */
		slot = &rc->v[0];
		for (size_t i = 1; i < rc->n; i++)
			if (rc->v[i].expires_at_ms < slot->expires_at_ms)
				slot = &rc->v[i];
	}
	rtok_clear(slot);
	if ((slot->resource = strdup(resource)) == NULL || (slot->token = strdup(token)) == NULL) {
		rtok_clear(slot);	/* a free slot: resource NULL */
		return;
	}
	slot->expires_at_ms = now + lifetime_ms;
	slot->gen = *gen = ++rc->gen;
}

/* R9: the target refused a per-record token: it is dropped, the next job
 * for that resource asks again. */
static void
record_refused(const struct cred *c, uint64_t gen)
{
	for (size_t i = 0; gen != 0 && c->cache != NULL && i < c->cache->n; i++)
		if (c->cache->v[i].gen == gen)
			rtok_clear(&c->cache->v[i]);	/* a free slot */
	if (gen != 0 && c->cache != NULL) {
		struct rcache *rc = c->cache;
		if (rc->refused_in_row < 1000)
			rc->refused_in_row++;
		rc->next_fetch_ms = token_refused_fetch_at_ms(rc->last_fetch_ms, rc->min_interval_ms,
		    rc->refused_in_row);
	}
}

struct oauth_xch_call *
cred_exchange(const struct cred *c, const char *record, const char *scope, const char *resource,
	      long timeout_ms, long max_ms, uint64_t *gen, oauth_exchange_cb *cb, void *arg)
{
	struct oauth_exchange_req rq = {.subject_token = record,
	    .subject_token_type = CRED_DECISION_TOKEN_TYPE, .scope = scope, .resource = resource,
	    .max_ms = max_ms};
	struct oauth_xch_call *x;

	*gen = c->oauth ? oauth_generation(c->oauth) : 0;
	if (!cred_is_oauth(c))
		return NULL;
	if (!c->per_record)
		return oauth_exchange(c->oauth, &rq, cb, arg, wtime_mono_ms(), timeout_ms);
	/* per-record: `record` is the record's resource, the details' identifier */
	char *details = details_json(c, record);
	struct oauth_exchange_req rr = {.scope = c->scope, .resource = c->resource,
	    .authorization_details = details, .max_ms = max_ms};
	*gen = 0;
	/* R9: after a refusal the next request waits its turn */
	int64_t now = wtime_mono_ms();
	if (c->cache->next_fetch_ms > now)
		rr.delay_ms = (long)(c->cache->next_fetch_ms - now);
	x = details ? oauth_exchange(c->oauth, &rr, cb, arg, now, timeout_ms) : NULL;
	if (x != NULL)
		c->cache->last_fetch_ms = now + rr.delay_ms;
	free(details);
	return x;
}

void
cred_refused(const struct cred *c, uint64_t gen)
{
	if (cred_per_record(c))
		record_refused(c, gen);
	else if (cred_is_oauth(c))
		oauth_invalidate_gen(c->oauth, gen);
}

void
cred_accepted(const struct cred *c, uint64_t gen)
{
	if (cred_per_record(c) && gen != 0)
		c->cache->refused_in_row = 0;	/* R9's backoff ends */
	if (cred_is_oauth(c) && !c->per_record)
		oauth_token_accepted(c->oauth, gen);
}

struct dpop *
cred_dpop(const struct cred *c)
{
	return cred_is_oauth(c) ? oauth_dpop(c->oauth) : NULL;
}

size_t
cred_dpop_auth_line(char *buf, const char *token, size_t token_len)
{
	memcpy(buf, CRED_DPOP_PREFIX, sizeof CRED_DPOP_PREFIX - 1);
	memcpy(buf + sizeof CRED_DPOP_PREFIX - 1, token, token_len);
	buf[sizeof CRED_DPOP_PREFIX - 1 + token_len] = '\0';
	return sizeof CRED_DPOP_PREFIX - 1 + token_len;
}

int
cred_proof(const struct cred *c, const char *method, const char *url, const char *token,
	   char **proof)
{
	struct dpop *d = cred_dpop(c);

	*proof = NULL;
	if (d == NULL)
		return 0;
	*proof = dpop_proof(d, method, url, token, wtime_now_ms());
	return *proof != NULL ? 0 : -1;
}

void
cred_dpop_nonce(const struct cred *c, const char *url, const char *nonce)
{
	struct dpop *d = cred_dpop(c);

	if (d != NULL)
		(void)dpop_nonce_keep(d, url, nonce);
}

const char *
cred_refused_code(const struct cred *c)
{
	return cred_is_oauth(c) && !c->per_record ? oauth_refused(c->oauth) : NULL;
}
