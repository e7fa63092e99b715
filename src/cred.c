/* SPDX-License-Identifier: BSD-2-Clause */
/* cred: one credential per action -- none, a static bearer, or the worker's token. */
#define _DEFAULT_SOURCE
#include "cred.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "secrets.h"
#include "wtime.h"

struct cred {
	char *name;		/* the action's */
	enum cfg_auth kind;
	long timeout_ms;	/* the action's: R6 */
	char *bearer;		/* CFG_AUTH_STATIC: the secret, wiped on free */
	size_t bearer_len;
	struct oauth *oauth;	/* CFG_AUTH_OAUTH */
	int owns_oauth;		/* a narrowed token this cred fetches and frees */
	int exchange;		/* token = exchange */
};

struct creds {
	struct cred *v;
	size_t n;
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
	if ((c->oauth = shared_token(cfg, cs, a)) != NULL)
		return 0;
	struct oauth_scope sc = {a->scope, a->audience, a->resource};
	if ((c->oauth = oauth_new_scoped(ctx->loop, ctx->http, cfg, &sc, err, errlen)) == NULL)
		return -1;
	c->owns_oauth = 1;
	oauth_set_listener(c->oauth, ctx->listener, ctx->arg);
	return 0;
}

static int
cred_init(struct cred *c, const struct cfg *cfg, const struct creds *cs,
	  const struct cfg_action *a, const struct creds_ctx *ctx, char *err, size_t errlen)
{
	c->kind = a->auth;
	c->timeout_ms = a->timeout_ms;
	c->exchange = a->token_exchange;
	if ((c->name = strdup(a->name)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (a->auth == CFG_AUTH_STATIC)
		return secrets_read_cfg(cfg, a->bearer_file, SECRETS_TRIMMED, &c->bearer,
		    &c->bearer_len, err, errlen);
	if (a->auth == CFG_AUTH_OAUTH)
		return oauth_init(c, cfg, cs, a, ctx, err, errlen);
	return 0;
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
	return cs;
}

void
creds_free(struct creds *cs)
{
	if (cs == NULL)
		return;
	for (size_t i = 0; i < cs->n; i++) {
		if (cs->v[i].bearer)
			secrets_free(cs->v[i].bearer, cs->v[i].bearer_len);
		if (cs->v[i].owns_oauth)
			oauth_free(cs->v[i].oauth);
		free(cs->v[i].name);
	}
	free(cs->v);
	free(cs);
}

void
creds_start(struct creds *cs)
{
	for (size_t i = 0; cs && i < cs->n; i++)
		if (cs->v[i].owns_oauth)
			oauth_start(cs->v[i].oauth);
}

int
creds_tokens_usable(const struct creds *cs)
{
	uint64_t gen;

	for (size_t i = 0; cs && i < cs->n; i++)
		if (cs->v[i].kind == CFG_AUTH_OAUTH &&
		    cred_bearer(&cs->v[i], cs->v[i].timeout_ms, &gen) == NULL)
			return 0;
	return 1;
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
	return c != NULL && c->exchange;
}

struct oauth_xch_call *
cred_exchange(const struct cred *c, const char *record, const char *scope, const char *resource,
	      long timeout_ms, long max_ms, uint64_t *gen, oauth_exchange_cb *cb, void *arg)
{
	struct oauth_exchange_req rq = {record, CRED_DECISION_TOKEN_TYPE, scope, resource, max_ms};

	*gen = c->oauth ? oauth_generation(c->oauth) : 0;
	if (!cred_is_oauth(c))
		return NULL;
	return oauth_exchange(c->oauth, &rq, cb, arg, wtime_mono_ms(), timeout_ms);
}

void
cred_refused(const struct cred *c, uint64_t gen)
{
	if (cred_is_oauth(c))
		oauth_invalidate_gen(c->oauth, gen);
}

void
cred_accepted(const struct cred *c, uint64_t gen)
{
	if (cred_is_oauth(c))
		oauth_token_accepted(c->oauth, gen);
}
