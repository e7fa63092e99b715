/* SPDX-License-Identifier: BSD-2-Clause */
/* oauth: the worker's access token from the token endpoint, one source of
 * tokhold.h; settings and secrets here, the request in oauth_req.c, a
 * token for one job in oauth_xch.c. */
#define _DEFAULT_SOURCE
#include "oauth_int.h"

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jose/b64url.h"
#include "jose/dpop.h"
#include "jose/jws.h"
#include "base/log.h"
#include "conf/secrets.h"
#include "core/token.h"
#include "base/wtime.h"

/* What a token lives when the IdP says neither expires_in nor a JWT exp
 * (RFC 6749 §5.1 only recommends expires_in): short, so a wrong guess costs
 * a refresh, not an outage. */
#define DEFAULT_LIFETIME_S	300

/* ---- settings ---- */

static void
settings_clear(struct oauth_settings *s)
{
	free(s->token_url);
	free(s->client_id);
	free(s->scope);
	free(s->resource);
	free(s->audience);
	free(s->assertion_audience);
	free(s->key_id);
	free(s->x5t);
	secrets_free(s->secret, s->secret_len);
	jws_key_free(s->key);
	dpop_free(s->dpop);
	memset(s, 0, sizeof *s);
}

static int
dup_opt(char **dst, const char *src)
{
	*dst = NULL;
	return src != NULL && (*dst = strdup(src)) == NULL ? -1 : 0;
}

/* An action's own scope, audience or resource, where it names one,
 * replaces [oauth]'s. */
static const char *
over(const char *mine, const char *dflt)
{
	return mine != NULL ? mine : dflt;
}

static int
copy_strings(struct oauth_settings *s, const struct cfg *cfg, const struct oauth_scope *sc)
{
	const char *aud = cfg->oauth.assertion_audience ? cfg->oauth.assertion_audience :
	    cfg->oauth.token_url;
	const struct oauth_scope none = {NULL, NULL, NULL, 0};

	if (sc == NULL)
		sc = &none;
	return dup_opt(&s->token_url, cfg->oauth.token_url) | dup_opt(&s->client_id,
	    cfg->oauth.client_id) | dup_opt(&s->scope, over(sc->scope, cfg->oauth.scope)) |
	    dup_opt(&s->resource, over(sc->resource, cfg->oauth.resource)) |
	    dup_opt(&s->audience, over(sc->audience, cfg->oauth.audience)) |
	    dup_opt(&s->assertion_audience, aud) | dup_opt(&s->key_id, cfg->oauth.key_id);
}

/* x5t#S256 (RFC 7515 §4.1.8) of the first certificate in a PEM file. */
static int
cert_thumbprint(const char *pem, size_t len, char **out)
{
	BIO *bio = BIO_new_mem_buf(pem, (int)len);
	X509 *x = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
	unsigned char *der = NULL, md[SHA256_DIGEST_LENGTH];
	int n = x ? i2d_X509(x, &der) : -1;

	*out = NULL;
	if (n > 0 && SHA256(der, (size_t)n, md) != NULL)
		*out = b64url_encode(md, sizeof md);
	OPENSSL_free(der);
	X509_free(x);
	BIO_free(bio);
	return *out != NULL ? 0 : -1;
}

static int
read_secrets(struct oauth_settings *s, const struct cfg *cfg, char *err, size_t errlen)
{
	char *cert = NULL, *pem = NULL, *probe = NULL;
	size_t cert_len = 0, pem_len = 0;
	char why[256];

	if (s->auth_method != CFG_PRIVATE_KEY_JWT) {
		if (cfg->oauth.client_secret_file == NULL) {
			snprintf(err, errlen, "oauth: client_secret_file is required");
			return -1;
		}
		if (secrets_read_cfg(cfg, cfg->oauth.client_secret_file, SECRETS_TRIMMED,
		    &s->secret, &s->secret_len, why, sizeof why) != 0) {
			snprintf(err, errlen, "oauth: %s", why);
			return -1;
		}
		return 0;
	}
	if (cfg->oauth.private_key_file == NULL) {
		snprintf(err, errlen, "oauth: private_key_file is required with private_key_jwt");
		return -1;
	}
	if (secrets_read_cfg(cfg, cfg->oauth.private_key_file, SECRETS_PRIVATE_PEM, &pem,
	    &pem_len, why, sizeof why) != 0) {
		snprintf(err, errlen, "oauth: %s", why);
		return -1;
	}
	/* Parsed once, the PEM wiped at once: the key's one copy is OpenSSL's. */
	s->key = jws_key_new(s->assertion_alg, (const unsigned char *)pem, pem_len, why,
	    sizeof why);
	secrets_free(pem, pem_len);
	if (cfg->oauth.certificate_file != NULL) {
		if (secrets_read_cfg(cfg, cfg->oauth.certificate_file, SECRETS_PUBLIC, &cert,
		    &cert_len, why, sizeof why) != 0) {
			snprintf(err, errlen, "oauth: %s", why);
			return -1;
		}
		int rc = cert_thumbprint(cert, cert_len, &s->x5t);
		secrets_free(cert, cert_len);
		if (rc != 0) {
			snprintf(err, errlen, "oauth: %s holds no PEM certificate",
			    cfg->oauth.certificate_file);
			return -1;
		}
	}
	/* Signing once now turns a wrong key into a start-up error. */
	if (s->key == NULL || (probe = oauth_build_assertion(s, wtime_now_ms())) == NULL) {
		snprintf(err, errlen, "oauth: %s cannot sign %s assertions (a PEM %s private key?)",
		    cfg->oauth.private_key_file, jwa_name(s->assertion_alg),
		    s->assertion_alg == JWA_ES256 ? "P-256 EC" : "RSA");
		return -1;
	}
	oauth_wipe_free(probe);
	return 0;
}

/* RFC 9449: the key every token is bound to, parsed once (per manager and
 * reload); the PEM is wiped at once. */
static int
read_dpop_key(struct oauth_settings *s, const struct cfg *cfg, char *err, size_t errlen)
{
	char *pem = NULL, why[256];
	size_t pem_len = 0;

	if (cfg->oauth.dpop_key_file == NULL)
		return 0;
	if (secrets_read_cfg(cfg, cfg->oauth.dpop_key_file, SECRETS_PRIVATE_PEM, &pem, &pem_len,
	    why, sizeof why) != 0) {
		snprintf(err, errlen, "oauth: %s", why);
		return -1;
	}
	s->dpop = dpop_new((const unsigned char *)pem, pem_len, why, sizeof why);
	secrets_free(pem, pem_len);
	if (s->dpop == NULL) {
		snprintf(err, errlen, "oauth: %s (%s)", why, cfg->oauth.dpop_key_file);
		return -1;
	}
	return 0;
}

/* 0: *s holds everything; -1: *s is empty and err says why. */
static int
settings_load(struct oauth_settings *s, const struct cfg *cfg, const struct oauth_scope *sc,
	      char *err, size_t errlen)
{
	memset(s, 0, sizeof *s);
	if (!cfg->oauth.present || cfg->oauth.token_url == NULL || cfg->oauth.client_id == NULL) {
		snprintf(err, errlen, "oauth: token_url and client_id are required");
		return -1;
	}
	s->auth_method = cfg->oauth.auth_method;
	s->assertion_alg = cfg->oauth.assertion_alg;
	s->refresh_ratio = cfg->oauth.refresh_ratio;
	s->timeout_ms = cfg->oauth.timeout_ms > 0 ? cfg->oauth.timeout_ms : 5000;
	s->min_refresh_interval_ms = cfg->oauth.min_refresh_interval_ms;
	if (copy_strings(s, cfg, sc) != 0) {
		snprintf(err, errlen, "oauth: out of memory");
		settings_clear(s);
		return -1;
	}
	if (read_secrets(s, cfg, err, errlen) != 0 ||
	    ((sc == NULL || !sc->bearer_only) && read_dpop_key(s, cfg, err, errlen) != 0)) {
		settings_clear(s);
		return -1;
	}
	return 0;
}

static int
same_str(const char *a, const char *b)
{
	return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Whether a token fetched with `a` may stand for one fetched with `b`. */
static int
same_identity(const struct oauth_settings *a, const struct oauth_settings *b)
{
	return same_str(a->token_url, b->token_url) && same_str(a->client_id, b->client_id) &&
	    a->auth_method == b->auth_method && same_str(a->scope, b->scope) &&
	    same_str(a->resource, b->resource) && same_str(a->audience, b->audience) &&
	    same_str(a->dpop ? dpop_jkt(a->dpop) : NULL, b->dpop ? dpop_jkt(b->dpop) : NULL);
}

/* ---- the source of the holder's tokens ---- */

/* The lifetime of a token received, or -1 when it is already dead. */
static int64_t
lifetime_of(const struct oauth *o, long long expires_in_s, const char *token)
{
	int64_t life = token_lifetime_ms(expires_in_s, token, o->call_started_wall);

	if (life < 0 && expires_in_s < 0) {
		life = token_lifetime_ms(DEFAULT_LIFETIME_S, token, o->call_started_wall);
		if (life > 0)
			log_warn("token.lifetime_unknown", "assumed_s=%d", DEFAULT_LIFETIME_S);
	}
	return life;
}

/* §9: an error no retry mends is kept for oauth_refused. */
static void
failed(struct oauth *o, long status, const char *detail)
{
	char code[64];
	int fatal = token_idp_classify(status, detail, code, sizeof code) == TOKEN_IDP_FATAL;

	tokhold_failed(o->hold, status, detail, fatal ? code : NULL);
}

static void
on_response(const struct http_response *resp, void *arg)
{
	struct oauth *o = arg;
	char detail[512];
	char *tok = NULL;
	long long expires_in;

	o->call = NULL;
	if (oauth_nonce_challenge(&o->set, resp) && !o->nonce_retry) {
		/* neither a failure nor a refusal: ask again at once, with it */
		o->nonce_retry = 1;
		log_debug("token.dpop_nonce", "retry=1");
		tokhold_fetch_again(o->hold);
		return;
	}
	o->nonce_retry = 0;
	if (resp->status < 200 || resp->status > 299) {
		oauth_describe_failure(resp, detail, sizeof detail);
		failed(o, resp->status, detail);
		return;
	}
	if (token_parse_bound(resp->body, resp->body_len, o->set.dpop != NULL, &tok, &expires_in,
	    detail, sizeof detail) != 0) {
		failed(o, resp->status, detail);
		return;
	}
	int64_t life = lifetime_of(o, expires_in, tok);
	if (life <= 0) {
		oauth_wipe_free(tok);
		failed(o, resp->status, "the token received has already expired");
		return;
	}
	tokhold_fetched(o->hold, tok, life);
}

/* tokhold_ops.fetch: one client credentials request. */
static int
src_fetch(void *arg, int64_t *sent_mono_ms, char *err, size_t errlen)
{
	struct oauth *o = arg;
	char *body = NULL, *userpwd = NULL;
	int64_t now = wtime_now_ms();	/* the assertion's iat and exp, the proof's iat */
	char *proof = oauth_dpop_line(&o->set, "POST", o->set.token_url, NULL, now);
	const char *headers[] = {"Content-Type: application/x-www-form-urlencoded",
	    "Accept: application/json", proof, NULL};
	const char *grant[] = {"grant_type", "client_credentials", "scope", o->set.scope,
	    "resource", o->set.resource, "audience", o->set.audience, NULL};
	int rc;

	if (o->set.dpop != NULL && proof == NULL) {
		snprintf(err, errlen, "cannot sign the DPoP proof");
		return -1;
	}
	rc = oauth_build_request(&o->set, now, grant, &body, &userpwd, err, errlen);
	if (rc == 0) {
		struct http_request rq = {
			.method = "POST", .url = o->set.token_url, .headers = headers,
			.body = body, .body_len = strlen(body),
			.timeout_ms = o->set.timeout_ms, .userpwd = userpwd,
		};
		rc = http_start(o->http, &rq, on_response, o, &o->call);
		if (rc != 0)
			snprintf(err, errlen, "cannot start the token request");
	}
	oauth_wipe_free(body);
	oauth_wipe_free(userpwd);
	oauth_wipe_free(proof);
	if (rc != 0) {
		o->call = NULL;
		return -1;
	}
	/* A JWT exp (wall clock) becomes a monotonic expiry through these two
	 * readings: the monotonic one first, so time lost between them (signing
	 * the assertion, a preempted thread) shortens the life we assume instead
	 * of lengthening it past the real exp. */
	*sent_mono_ms = wtime_mono_ms();
	o->call_started_wall = wtime_now_ms();
	return 0;
}

/* tokhold_ops.cancel */
static void
src_cancel(void *arg)
{
	struct oauth *o = arg;

	http_cancel(o->call);
	o->call = NULL;
	o->nonce_retry = 0;
}

static const struct tokhold_ops oauth_ops = {
	.fetch = src_fetch, .cancel = src_cancel, .source = "oauth", .start_fail_status = 0,
	.ev_request = "token.request", .ev_refreshed = "token.refreshed",
	.ev_error = "token.error", .ev_expired = "token.expired",
	.ev_refused = "token.invalidated", .ev_short = NULL,
};

static struct tokhold_params
params_of(const struct oauth *o)
{
	struct tokhold_params p = {o->set.refresh_ratio, o->set.min_refresh_interval_ms,
	    o->lead_ms};
	return p;
}

/* The holder's news, for oauth_set_listener's listener. */
static void
on_hold(void *arg, const char *token, int64_t expires_at_ms)
{
	struct oauth *o = arg;

	(void)expires_at_ms;
	if (o->listener != NULL)
		o->listener(o->listener_arg, token != NULL);
}

/* ---- public ---- */

struct oauth *
oauth_new(struct ev_loop *loop, struct http_client *http, const struct cfg *cfg, char *err,
	  size_t errlen)
{
	return oauth_new_scoped(loop, http, cfg, NULL, err, errlen);
}

struct oauth *
oauth_new_scoped(struct ev_loop *loop, struct http_client *http, const struct cfg *cfg,
		 const struct oauth_scope *sc, char *err, size_t errlen)
{
	struct oauth *o = calloc(1, sizeof *o);

	if (o == NULL) {
		snprintf(err, errlen, "oauth: out of memory");
		return NULL;
	}
	if (settings_load(&o->set, cfg, sc, err, errlen) != 0) {
		free(o);
		return NULL;
	}
	o->loop = loop;
	o->http = http;
	struct tokhold_params p = params_of(o);
	if ((o->hold = tokhold_new(loop, &oauth_ops, o, &p)) == NULL) {
		snprintf(err, errlen, "oauth: out of memory");
		settings_clear(&o->set);
		free(o);
		return NULL;
	}
	tokhold_set_listener(o->hold, on_hold, o);
	return o;
}

void
oauth_free(struct oauth *o)
{
	if (o == NULL)
		return;
	tokhold_free(o->hold);	/* cancels the fetch in flight */
	settings_clear(&o->set);
	free(o);
}

void
oauth_start(struct oauth *o)
{
	tokhold_start(o->hold);
}

struct tokhold *
oauth_holder(struct oauth *o)
{
	return o->hold;
}

const char *
oauth_token(const struct oauth *o, int64_t now_ms, long timeout_ms)
{
	return tokhold_token(o->hold, now_ms, timeout_ms);
}

const char *
oauth_refused(const struct oauth *o)
{
	return tokhold_refused_code(o->hold);
}

int64_t
oauth_expires_at_ms(const struct oauth *o)
{
	return tokhold_expires_at_ms(o->hold);
}

const char *
oauth_state_name(const struct oauth *o)
{
	return tokhold_state_name(o->hold);
}

void
oauth_invalidate(struct oauth *o)
{
	tokhold_refused(o->hold, tokhold_generation(o->hold));
}

void
oauth_set_refresh_lead(struct oauth *o, long lead_ms)
{
	o->lead_ms = lead_ms;
	struct tokhold_params p = params_of(o);
	tokhold_set_params(o->hold, &p);
}

void
oauth_token_accepted(struct oauth *o, uint64_t gen)
{
	tokhold_accepted(o->hold, gen);
}

uint64_t
oauth_generation(const struct oauth *o)
{
	return tokhold_generation(o->hold);
}

void
oauth_invalidate_gen(struct oauth *o, uint64_t gen)
{
	tokhold_refused(o->hold, gen);
}

void
oauth_set_listener(struct oauth *o, void (*cb)(void *arg, int have_token), void *arg)
{
	o->listener = cb;
	o->listener_arg = arg;
}

long long
oauth_refreshes(const struct oauth *o)
{
	return tokhold_refreshes(o->hold);
}

void
oauth_count_failures_into(struct oauth *o, long long *failed_total)
{
	tokhold_count_failures_into(o->hold, failed_total);
}

int
oauth_reload(struct oauth *o, const struct cfg *cfg, char *err, size_t errlen)
{
	struct oauth_settings fresh;
	int same;

	if (settings_load(&fresh, cfg, NULL, err, errlen) != 0)
		return -1;
	same = same_identity(&fresh, &o->set);
	settings_clear(&o->set);
	o->set = fresh;
	struct tokhold_params p = params_of(o);
	tokhold_set_params(o->hold, &p);
	log_info("token.reload", "same_client=%d", same);
	if (!same)	/* a fetch in flight asks for the old client: ask again */
		tokhold_refetch(o->hold);
	return 0;
}

struct dpop *
oauth_dpop(const struct oauth *o)
{
	return o != NULL ? o->set.dpop : NULL;
}
