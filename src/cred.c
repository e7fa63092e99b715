/* cred: one credential per action -- none, a static bearer, or the worker's token. */
#define _DEFAULT_SOURCE
#include "cred.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wtime.h"

struct cred {
	char *name;		/* the action's */
	enum cfg_auth kind;
	char *bearer;		/* CFG_AUTH_STATIC: the secret, wiped on free */
	size_t bearer_len;
	struct oauth *oauth;	/* CFG_AUTH_OAUTH: borrowed */
};

struct creds {
	struct cred *v;
	size_t n;
};

static int
cred_init(struct cred *c, const struct cfg *cfg, const struct cfg_action *a,
	  struct oauth *oauth, char *err, size_t errlen)
{
	c->kind = a->auth;
	if ((c->name = strdup(a->name)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (a->auth == CFG_AUTH_STATIC)
		return cfg_read_file(cfg, a->bearer_file, 0, &c->bearer, &c->bearer_len, err, errlen);
	if (a->auth == CFG_AUTH_OAUTH) {
		if (oauth == NULL) {
			snprintf(err, errlen, "[action %s] auth = oauth needs [oauth]", a->name);
			return -1;
		}
		c->oauth = oauth;
	}
	return 0;
}

struct creds *
creds_new(const struct cfg *cfg, struct oauth *oauth, char *err, size_t errlen)
{
	struct creds *cs = calloc(1, sizeof *cs);

	if (cs == NULL || (cs->v = calloc(cfg->nactions + 1, sizeof *cs->v)) == NULL) {
		free(cs);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	for (; cs->n < cfg->nactions; cs->n++)
		if (cred_init(&cs->v[cs->n], cfg, &cfg->actions[cs->n], oauth, err, errlen) < 0) {
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
			cfg_secret_free(cs->v[i].bearer, cs->v[i].bearer_len);
		free(cs->v[i].name);
	}
	free(cs->v);
	free(cs);
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
