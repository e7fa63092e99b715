/* SPDX-License-Identifier: BSD-2-Clause */
/* oauth: the worker's access token, fetched and refreshed on the loop. */
#define _DEFAULT_SOURCE
#include "auth/oauth.h"

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/backoff.h"
#include "jose/dpop.h"
#include "jose/jws.h"
#include "base/log.h"
#include "base/rnd.h"
#include "conf/secrets.h"
#include "core/token.h"
#include "base/wtime.h"

#define ASSERTION_TTL_S		60
#define JTI_BYTES		16
/* What a token lives when the IdP says neither expires_in nor a JWT exp
 * (RFC 6749 §5.1 only recommends expires_in): short, so a wrong guess costs
 * a refresh, not an outage. */
#define DEFAULT_LIFETIME_S	300
#define CLIENT_ASSERTION_TYPE	"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

/* Everything taken from the config, secrets included: replaced whole on
 * reload. */
struct settings {
	char *token_url, *client_id, *scope, *resource, *audience;
	enum cfg_client_auth auth_method;
	enum jwa_alg assertion_alg;	/* RS256 or ES256 (config checked) */
	char *assertion_audience, *key_id;
	double refresh_ratio;
	long timeout_ms, min_refresh_interval_ms;
	char *secret;		/* client_secret_basic and _post */
	size_t secret_len;
	struct jws_key *key;	/* private_key_jwt: the private key, parsed */
	char *x5t;		/* base64url SHA-256 of the DER certificate, or NULL */
	struct dpop *dpop;	/* dpop_key_file, parsed; NULL: bearer tokens */
};

struct oauth {
	struct ev_loop *loop;
	struct http_client *http;
	struct settings set;

	char *token;		/* NULL: none held */
	int64_t expires_at_ms;	/* monotonic (wtime_mono_ms); 0 when none held */
	int refused;		/* R9: tokens refused in a row, each fetched after
				   the last one's refusal */
	int after_refusal;	/* the token held was fetched because one was refused */
	uint64_t generation;
	long long refreshes;
	int failures;		/* fetches failed since the last success */
	long long *failed_total;	/* oauth_count_failures_into; may be NULL */
	int started;
	int nonce_retry;	/* RFC 9449 §8: the fetch in flight answers a nonce challenge */
	char refused_code[64];	/* §9: the last fetch's error, when no retry mends it
				   (invalid_scope, invalid_target...); "" otherwise */
	long lead_ms;		/* oauth_set_refresh_lead */

	struct http_call *call;	/* the one fetch in flight, or NULL */
	int64_t call_started_ms;	/* monotonic */
	int64_t call_started_wall;	/* for a JWT exp, which is wall-clock */
	int64_t last_fetch_ms;		/* monotonic; 0 before the first */

	ev_timer fetch_timer;	/* proactive refresh, or retry after a failure */
	ev_timer expiry_timer;
	ev_timer notify_timer;	/* 0 s: calls the listener from the loop */

	void (*listener)(void *arg, int have_token);
	void *listener_arg;
	int notified_have;
	uint64_t notified_gen;
};

static void
wipe_free(char *s)
{
	if (s != NULL) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

static void
arm(struct oauth *o, ev_timer *t, int64_t delay_ms)
{
	/* A timer counts from the loop's time of waking, which a long callback
	 * before this one leaves behind: R9's spacing would fire that much
	 * early (seen: a 2 s gap 103 ms short, ASan under load). */
	ev_now_update(o->loop);
	ev_timer_stop(o->loop, t);
	ev_timer_set(t, delay_ms > 0 ? (double)delay_ms / 1000.0 : 0.0, 0.0);
	ev_timer_start(o->loop, t);
}

/* ---- settings ---- */

static void
settings_clear(struct settings *s)
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
copy_strings(struct settings *s, const struct cfg *cfg, const struct oauth_scope *sc)
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
		*out = token_b64url_encode(md, sizeof md);
	OPENSSL_free(der);
	X509_free(x);
	BIO_free(bio);
	return *out != NULL ? 0 : -1;
}

static char *build_assertion(const struct settings *s, int64_t now_ms);

static int
read_secrets(struct settings *s, const struct cfg *cfg, char *err, size_t errlen)
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
	if (s->key == NULL || (probe = build_assertion(s, wtime_now_ms())) == NULL) {
		snprintf(err, errlen, "oauth: %s cannot sign %s assertions (a PEM %s private key?)",
		    cfg->oauth.private_key_file, jwa_name(s->assertion_alg),
		    s->assertion_alg == JWA_ES256 ? "P-256 EC" : "RSA");
		return -1;
	}
	wipe_free(probe);
	return 0;
}

/* RFC 9449: the key every token is bound to, parsed once (per manager and
 * reload); the PEM is wiped at once. */
static int
read_dpop_key(struct settings *s, const struct cfg *cfg, char *err, size_t errlen)
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
settings_load(struct settings *s, const struct cfg *cfg, const struct oauth_scope *sc,
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
same_identity(const struct settings *a, const struct settings *b)
{
	return same_str(a->token_url, b->token_url) && same_str(a->client_id, b->client_id) &&
	    a->auth_method == b->auth_method && same_str(a->scope, b->scope) &&
	    same_str(a->resource, b->resource) && same_str(a->audience, b->audience) &&
	    same_str(a->dpop ? dpop_jkt(a->dpop) : NULL, b->dpop ? dpop_jkt(b->dpop) : NULL);
}

/* ---- the request ---- */

/* RFC 7523 §3 client assertion; caller wipes and frees. NULL on error.
 * typ JWT: what libjwt wrote here before, and what IdPs built on it read. */
static char *
build_assertion(const struct settings *s, int64_t now_ms)
{
	char jti[2 * JTI_BYTES + 1];
	json_int_t iat = (json_int_t)(now_ms / 1000);
	json_t *header = NULL, *claims = NULL;
	char *out = NULL;

	if (s->key == NULL || rnd_hex(jti, sizeof jti, JTI_BYTES) != 0)
		return NULL;
	header = json_pack("{s:s}", "typ", "JWT");
	claims = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I}", "iss", s->client_id, "sub",
	    s->client_id, "aud", s->assertion_audience, "jti", jti, "iat", iat, "exp",
	    iat + ASSERTION_TTL_S);
	if (header != NULL && claims != NULL &&
	    (s->key_id == NULL || json_object_set_new(header, "kid", json_string(s->key_id)) == 0) &&
	    (s->x5t == NULL || json_object_set_new(header, "x5t#S256", json_string(s->x5t)) == 0))
		out = jws_sign(s->key, header, claims);
	json_decref(header);
	json_decref(claims);
	return out;
}

/* The form body (and for client_secret_basic the userpwd) of one token
 * request. Both hold secrets: the caller wipes and frees them. */
static int
build_request(const struct settings *s, int64_t now_ms, const char *const *grant,
	      char **body, char **userpwd, char *err, size_t errlen)
{
	const char *pairs[32];
	char *assertion = NULL;
	size_t n = 0;

	*body = *userpwd = NULL;
#define OPT(name, v) do { if ((v) != NULL) { pairs[n++] = (name); pairs[n++] = (v); } } while (0)
	/* the grant's own pairs, NULL values skipped; at most 10 */
	for (size_t i = 0; i < 20 && grant[i] != NULL; i += 2)
		OPT(grant[i], grant[i + 1]);
	switch (s->auth_method) {
	case CFG_CLIENT_SECRET_BASIC:
		if ((*userpwd = token_basic_userpwd(s->client_id, s->secret)) == NULL)
			goto oom;
		break;
	case CFG_CLIENT_SECRET_POST:
		OPT("client_id", s->client_id);
		OPT("client_secret", s->secret);
		break;
	case CFG_PRIVATE_KEY_JWT:
		if ((assertion = build_assertion(s, now_ms)) == NULL) {
			snprintf(err, errlen, "cannot sign the client assertion");
			return -1;
		}
		OPT("client_id", s->client_id);
		pairs[n++] = "client_assertion_type";
		pairs[n++] = CLIENT_ASSERTION_TYPE;
		OPT("client_assertion", assertion);
		break;
	}
#undef OPT
	pairs[n] = NULL;
	*body = token_form_encode(pairs);
	wipe_free(assertion);
	if (*body != NULL)
		return 0;
oom:
	wipe_free(*userpwd);
	*userpwd = NULL;
	snprintf(err, errlen, "out of memory");
	return -1;
}

/* RFC 9449 §4: the "DPoP: <proof>" line of a request, a new string (wipe
 * with wipe_free), or NULL (out of memory, or no key: check s->dpop). */
static char *
dpop_line(const struct settings *s, const char *method, const char *url, const char *token,
	  int64_t now_ms)
{
	char *proof, *line = NULL;
	size_t n;

	if (s->dpop == NULL || (proof = dpop_proof(s->dpop, method, url, token, now_ms)) == NULL)
		return NULL;
	n = strlen(proof) + sizeof "DPoP: ";
	if ((line = malloc(n)) != NULL)
		snprintf(line, n, "DPoP: %s", proof);
	dpop_proof_free(proof);
	return line;
}

/* RFC 9449 §8: keeps a DPoP-Nonce the token endpoint sent; 1 when the
 * answer is its use_dpop_nonce challenge (400), which one immediate retry
 * with that nonce answers. */
static int
nonce_challenge(const struct settings *s, const struct http_response *resp)
{
	json_t *o;
	int is;

	if (s->dpop == NULL || resp->dpop_nonce == NULL)
		return 0;
	(void)dpop_nonce_keep(s->dpop, s->token_url, resp->dpop_nonce);
	if (resp->status != 400)
		return 0;
	o = json_loadb(resp->body ? resp->body : "", resp->body ? resp->body_len : 0, 0, NULL);
	is = json_is_string(json_object_get(o, "error")) &&
	    strcmp(json_string_value(json_object_get(o, "error")), "use_dpop_nonce") == 0;
	json_decref(o);
	return is;
}

/* ---- token life cycle ---- */

static void fetch(struct oauth *o);

static void
schedule_notify(struct oauth *o)
{
	if (!ev_is_active(&o->notify_timer))
		arm(o, &o->notify_timer, 0);
}

static void
drop_token(struct oauth *o)
{
	wipe_free(o->token);
	o->token = NULL;
	o->expires_at_ms = 0;
	ev_timer_stop(o->loop, &o->expiry_timer);
}

static void
install_token(struct oauth *o, char *token, int64_t lifetime_ms, long elapsed_ms)
{
	int64_t now = wtime_mono_ms();
	int64_t refresh_at = token_refresh_before_ms(o->call_started_ms, lifetime_ms,
	    o->set.refresh_ratio, rnd_u64(), o->lead_ms);

	drop_token(o);
	o->token = token;
	o->expires_at_ms = o->call_started_ms + lifetime_ms;
	o->generation++;
	o->refreshes++;
	o->failures = 0;
	o->refused_code[0] = '\0';
	o->after_refusal = o->refused > 0;
	arm(o, &o->fetch_timer, refresh_at - now);
	arm(o, &o->expiry_timer, o->expires_at_ms - now);
	log_info("token.refreshed", "expires_in_s=%lld refresh_in_s=%lld ms=%ld",
	    (long long)(lifetime_ms / 1000), (long long)((refresh_at - now) / 1000), elapsed_ms);
	schedule_notify(o);
}

static void
fetch_failed(struct oauth *o, long status, const char *detail)
{
	char q[512];
	int64_t delay;

	if (o->failures < 1000000)
		o->failures++;
	if (token_idp_classify(status, detail, o->refused_code,
	    sizeof o->refused_code) != TOKEN_IDP_FATAL)
		o->refused_code[0] = '\0';
	if (o->failed_total != NULL)
		(*o->failed_total)++;
	delay = backoff_ms(0, TOKEN_RETRY_BASE_MS, TOKEN_RETRY_CAP_MS, o->failures, rnd_u64());
	arm(o, &o->fetch_timer, delay);
	log_warn("token.error", "status=%ld detail=%s failures=%d retry_ms=%lld held=%d",
	    status, log_quote(q, sizeof q, detail), o->failures, (long long)delay,
	    o->token != NULL);
}

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

/* One line about a failed exchange; never the body itself unless it is an
 * OAuth error object (whose fields token_parse_response picks). */
static void
describe_failure(const struct http_response *resp, char *detail, size_t n)
{
	char *tok = NULL;
	long long exp;

	if (resp->status == 0)
		snprintf(detail, n, "%s", resp->timed_out ? "timeout" :
		    resp->error[0] ? resp->error : "transport error");
	else if (token_parse_response(resp->body, resp->body_len, &tok, &exp, detail, n) == 0 ||
	    strncmp(detail, "idp error: ", 11) != 0)
		snprintf(detail, n, "http %ld", resp->status);
	wipe_free(tok);
}

static void
on_response(const struct http_response *resp, void *arg)
{
	struct oauth *o = arg;
	char detail[512];
	char *tok = NULL;
	long long expires_in;

	o->call = NULL;
	if (nonce_challenge(&o->set, resp) && !o->nonce_retry) {
		/* neither a failure nor a refusal: ask again at once, with it */
		o->nonce_retry = 1;
		log_debug("token.dpop_nonce", "retry=1");
		arm(o, &o->fetch_timer, 0);
		return;
	}
	o->nonce_retry = 0;
	if (resp->status < 200 || resp->status > 299) {
		describe_failure(resp, detail, sizeof detail);
		fetch_failed(o, resp->status, detail);
		return;
	}
	if (token_parse_bound(resp->body, resp->body_len, o->set.dpop != NULL, &tok, &expires_in,
	    detail, sizeof detail) != 0) {
		fetch_failed(o, resp->status, detail);
		return;
	}
	int64_t life = lifetime_of(o, expires_in, tok);
	if (life <= 0) {
		wipe_free(tok);
		fetch_failed(o, resp->status, "the token received has already expired");
		return;
	}
	install_token(o, tok, life, resp->elapsed_ms);
}

static void
fetch(struct oauth *o)
{
	char err[256], *body = NULL, *userpwd = NULL;
	int64_t now = wtime_now_ms();	/* the assertion's iat and exp, the proof's iat */
	char *proof = dpop_line(&o->set, "POST", o->set.token_url, NULL, now);
	const char *headers[] = {"Content-Type: application/x-www-form-urlencoded",
	    "Accept: application/json", proof, NULL};
	int rc;

	ev_timer_stop(o->loop, &o->fetch_timer);
	if (o->call != NULL) {
		wipe_free(proof);
		return;
	}
	const char *grant[] = {"grant_type", "client_credentials", "scope", o->set.scope,
	    "resource", o->set.resource, "audience", o->set.audience, NULL};
	rc = o->set.dpop != NULL && proof == NULL ? -1 :
	    build_request(&o->set, now, grant, &body, &userpwd, err, sizeof err);
	if (rc != 0 && proof == NULL && o->set.dpop != NULL)
		snprintf(err, sizeof err, "cannot sign the DPoP proof");
	if (rc == 0) {
		struct http_request rq = {
			.method = "POST", .url = o->set.token_url, .headers = headers,
			.body = body, .body_len = strlen(body),
			.timeout_ms = o->set.timeout_ms, .userpwd = userpwd,
		};
		rc = http_start(o->http, &rq, on_response, o, &o->call);
		if (rc != 0)
			snprintf(err, sizeof err, "cannot start the token request");
	}
	wipe_free(body);
	wipe_free(userpwd);
	wipe_free(proof);
	if (rc != 0) {
		o->call = NULL;
		fetch_failed(o, 0, err);
		return;
	}
	/* A JWT exp (wall clock) becomes a monotonic expiry through these two
	 * readings: the monotonic one first, so time lost between them (signing
	 * the assertion, a preempted thread) shortens the life we assume instead
	 * of lengthening it past the real exp. */
	o->call_started_ms = o->last_fetch_ms = wtime_mono_ms();
	o->call_started_wall = wtime_now_ms();
	log_debug("token.request", "failures=%d held=%d", o->failures, o->token != NULL);
}

/* ---- watchers ---- */

static void
on_fetch_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct oauth *o = w->data;
	(void)loop, (void)revents;

	if (o->token != NULL)
		o->refused = 0;	/* it lived to its refresh: nobody refused it */
	fetch(o);
}

static void
on_expiry(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct oauth *o = w->data;
	int64_t now = wtime_mono_ms();

	(void)loop, (void)revents;
	if (o->token == NULL)
		return;
	if (now < o->expires_at_ms) {	/* the loop's clock ran ahead */
		arm(o, &o->expiry_timer, o->expires_at_ms - now);
		return;
	}
	drop_token(o);
	log_warn("token.expired", "failures=%d", o->failures);
	schedule_notify(o);
	if (o->call == NULL && !ev_is_active(&o->fetch_timer))
		fetch(o);
}

static void
on_notify(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct oauth *o = w->data;
	int have = o->token != NULL;

	(void)loop, (void)revents;
	if (have == o->notified_have && (!have || o->generation == o->notified_gen))
		return;
	o->notified_have = have;
	o->notified_gen = o->generation;
	if (o->listener != NULL)
		o->listener(o->listener_arg, have);
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
	ev_timer_init(&o->fetch_timer, on_fetch_timer, 0., 0.);
	ev_timer_init(&o->expiry_timer, on_expiry, 0., 0.);
	ev_timer_init(&o->notify_timer, on_notify, 0., 0.);
	o->fetch_timer.data = o->expiry_timer.data = o->notify_timer.data = o;
	return o;
}

void
oauth_free(struct oauth *o)
{
	if (o == NULL)
		return;
	http_cancel(o->call);
	ev_timer_stop(o->loop, &o->fetch_timer);
	ev_timer_stop(o->loop, &o->expiry_timer);
	ev_timer_stop(o->loop, &o->notify_timer);
	drop_token(o);
	settings_clear(&o->set);
	free(o);
}

void
oauth_start(struct oauth *o)
{
	if (o->started)
		return;
	o->started = 1;
	fetch(o);
}

const char *
oauth_token(const struct oauth *o, int64_t now_ms, long timeout_ms)
{
	if (o->token == NULL || !token_usable(o->expires_at_ms, now_ms, timeout_ms))
		return NULL;
	return o->token;
}

const char *
oauth_refused(const struct oauth *o)
{
	return o->token == NULL && o->refused_code[0] ? o->refused_code : NULL;
}

int64_t
oauth_expires_at_ms(const struct oauth *o)
{
	return o->token != NULL ? o->expires_at_ms : 0;
}

const char *
oauth_state_name(const struct oauth *o)
{
	if (o->token != NULL)
		return "valid";
	if (o->call != NULL || (o->failures == 0 && ev_is_active(&o->fetch_timer)))
		return "refreshing";
	return o->failures > 0 ? "error" : "none";
}

/* R9: refreshes that refusals cause are spaced, and back off when the
 * fresh token is refused too. */
void
oauth_invalidate(struct oauth *o)
{
	if (o->token == NULL)
		return;
	o->refused = o->after_refusal && o->refused < 1000 ? o->refused + 1 : 1;
	drop_token(o);
	schedule_notify(o);
	if (o->call != NULL) {
		log_info("token.invalidated", "refreshing=1 refused_in_row=%d", o->refused);
		return;
	}
	int64_t wait = token_refused_fetch_at_ms(o->last_fetch_ms,
	    o->set.min_refresh_interval_ms, o->refused) - wtime_mono_ms();
	log_info("token.invalidated", "refreshing=0 refused_in_row=%d fetch_in_ms=%lld",
	    o->refused, (long long)(wait > 0 ? wait : 0));
	if (wait > 0)
		arm(o, &o->fetch_timer, wait);
	else
		fetch(o);
}

void
oauth_set_refresh_lead(struct oauth *o, long lead_ms)
{
	o->lead_ms = lead_ms;
}

void
oauth_token_accepted(struct oauth *o, uint64_t gen)
{
	if (gen == o->generation)
		o->refused = 0;
}

uint64_t
oauth_generation(const struct oauth *o)
{
	return o->generation;
}

void
oauth_invalidate_gen(struct oauth *o, uint64_t gen)
{
	if (gen == o->generation)
		oauth_invalidate(o);
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
	return o->refreshes;
}

void
oauth_count_failures_into(struct oauth *o, long long *failed)
{
	o->failed_total = failed;
}

int
oauth_reload(struct oauth *o, const struct cfg *cfg, char *err, size_t errlen)
{
	struct settings fresh;
	int same;

	if (settings_load(&fresh, cfg, NULL, err, errlen) != 0)
		return -1;
	same = same_identity(&fresh, &o->set);
	settings_clear(&o->set);
	o->set = fresh;
	log_info("token.reload", "same_client=%d", same);
	if (!same && o->started) {
		/* A fetch in flight asks for the old client: ask again. */
		http_cancel(o->call);
		o->call = NULL;
		fetch(o);
	}
	return 0;
}

/* ---- a token for one job: RFC 8693 exchange, RFC 9396 per-record ---- */

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
	wipe_free(x->subject);
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
	if (nonce_challenge(&x->o->set, resp) && !x->nonce_retry) {
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
		wipe_free(tok);
		tok = NULL;
		a.r = xch_of(token_idp_classify(resp->status, detail, code, sizeof code));
	}
	a.token = a.r == OAUTH_XCH_OK ? tok : NULL;
	x->cb(x->arg, &a);
	wipe_free(tok);
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
	proof = dpop_line(&o->set, "POST", o->set.token_url, NULL, now);
	const char *headers[] = {"Content-Type: application/x-www-form-urlencoded",
	    "Accept: application/json", proof, NULL};
	rc = o->set.dpop != NULL && proof == NULL ? -1 : build_request(&o->set, now,
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
	wipe_free(body);
	wipe_free(userpwd);
	wipe_free(proof);
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

struct dpop *
oauth_dpop(const struct oauth *o)
{
	return o != NULL ? o->set.dpop : NULL;
}
