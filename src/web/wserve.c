/* SPDX-License-Identifier: BSD-2-Clause */
/* wserve: the console on hsrv (wserve.h). */
#define _GNU_SOURCE
#include "wserve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <openssl/crypto.h>

#include "base/log.h"
#include "base/rnd.h"
#include "base/wtime.h"
#include "http/hsrv.h"
#include "wasset.h"
#include "wpage.h"
#include "wpass.h"
#include "wpasswd.h"
#include "wroute.h"
#include "wsess.h"
#include "wview.h"

#define COOKIE		"wsid"
#define LOGIN_COOKIE	"wlogin"

static const char csp[] = "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'";

struct wserve {
	const struct cfg *cfg;
	const struct wconf *conf;
	struct wview_ctx view;
	struct wsess_table *sess;
	struct hsrv *srv[WCONF_LISTEN_MAX];
};

/* ---- answers ---- */

/* respond's flags: the body is the binary's (not freed), it may be cached */
#define R_STATIC	1
#define R_CACHE		2

static void
respond(struct hsrv_answer *a, const struct wserve *w, int status, const char *type, char *body,
	size_t len, int flags, const char *cookie1, const char *cookie2, const char *location)
{
	int bad = 0;

	a->status = status;
	a->content_type = type;
	a->body = body;
	a->len = len;
	a->body_static = (flags & R_STATIC) != 0;
	bad |= hsrv_answer_header(a, "Content-Security-Policy", csp);
	bad |= hsrv_answer_header(a, "X-Frame-Options", "DENY");
	bad |= hsrv_answer_header(a, "X-Content-Type-Options", "nosniff");
	/* not no-referrer: with it a browser sends "Origin: null" on a form's
	 * POST, and same_origin could no longer tell ours from another's */
	bad |= hsrv_answer_header(a, "Referrer-Policy", "same-origin");
	bad |= hsrv_answer_header(a, "Cross-Origin-Opener-Policy", "same-origin");
	bad |= hsrv_answer_header(a, "Cache-Control", flags & R_CACHE ? "private, max-age=300" :
	    "no-store");
	if (w->conf->tls)
		bad |= hsrv_answer_header(a, "Strict-Transport-Security", "max-age=31536000");
	if (cookie1)
		bad |= hsrv_answer_header(a, "Set-Cookie", cookie1);
	if (cookie2)
		bad |= hsrv_answer_header(a, "Set-Cookie", cookie2);
	if (location)
		bad |= hsrv_answer_header(a, "Location", location);
	if (bad) {	/* never an answer without its security headers */
		if (!a->body_static)
			free(a->body);
		a->body = NULL;
		a->len = 0;
		a->status = 500;
	}
}

/* An answer of wview's: a page or JSON (NULL both: out of memory, 500). */
static void
send_view(struct hsrv_answer *a, const struct wserve *w, struct wview_out *v, int ok,
	  const char *cookie1, const char *cookie2)
{
	size_t len = 0;
	char *s = NULL;
	const char *type = "text/html; charset=utf-8";

	if (ok == 0 && v->json != NULL) {
		s = json_dumps(v->json, JSON_COMPACT);
		len = s ? strlen(s) : 0;
		type = "application/json";
	} else if (ok == 0 && v->html != NULL)
		s = whtml_take(v->html, &len);
	whtml_free(v->html);
	json_decref(v->json);
	if (s == NULL) {
		respond(a, w, 500, "text/plain; charset=utf-8", (char *)"out of memory\n", 14,
		    R_STATIC, NULL, NULL, NULL);
		return;
	}
	respond(a, w, v->status, type, s, len, 0, cookie1, cookie2, NULL);
}

static void
send_error(struct hsrv_answer *a, const struct wserve *w, const struct wpage_who *who,
	   int status, const char *message)
{
	struct wview_out v = {0};

	send_view(a, w, &v, wview_error(who, status, message, &v), NULL, NULL);
}

static void
redirect(struct hsrv_answer *a, const struct wserve *w, const char *to, const char *cookie1,
	 const char *cookie2)
{
	respond(a, w, 303, "text/plain; charset=utf-8", NULL, 0, R_STATIC, cookie1, cookie2, to);
}

/* "NAME=VALUE; Path=/; HttpOnly; SameSite=Strict[; Secure][; Max-Age=0]" */
static void
cookie(char *buf, size_t n, const struct wserve *w, const char *name, const char *value,
       const char *path, int clear)
{
	snprintf(buf, n, "%s=%s; Path=%s; HttpOnly; SameSite=Strict%s%s", name, value, path,
	    w->conf->tls ? "; Secure" : "", clear ? "; Max-Age=0" : "");
}

/* ---- login ---- */

static void
login_form(struct hsrv_answer *a, const struct wserve *w, int status, const char *message)
{
	char token[WSESS_ID_LEN + 1] = "", set[256];
	struct wview_out v = {.status = status};

	if (rnd_hex(token, sizeof token, WSESS_ID_LEN / 2) == 0 && (v.html = whtml_new()) != NULL)
		wpage_login(v.html, token, message);
	cookie(set, sizeof set, w, LOGIN_COOKIE, token, "/login", 0);
	send_view(a, w, &v, v.html ? 0 : -1, set, NULL);
}

static void
do_login(struct hsrv_answer *a, struct wserve *w, const struct hsrv_req *q)
{
	char user[WPASS_USER_MAX + 1], pw[WPASSWD_PW_MAX], src[INET6_ADDRSTRLEN + 8], set[256];
	char clear[128];
	unsigned char rnd[WSESS_RAND];
	int64_t now = wtime_now_ms();
	const struct wsess *s;
	size_t len;
	const char *body = hsrv_req_body(q, &len);

	hsrv_req_peer(q, src, sizeof src);
	if (!wsess_login_allowed(w->sess, src, now)) {
		log_warn("web.login_limited", "source=%s", LOG_Q(src));
		login_form(a, w, 429, "Too many failed logins: wait a minute.");
		return;
	}
	if (wroute_form_get(body, len, "user", user, sizeof user) != 0 ||
	    wroute_form_get(body, len, "password", pw, sizeof pw) != 0 ||
	    !wpasswd_ok(w->cfg, user, pw)) {
		explicit_bzero(pw, sizeof pw);
		wsess_login_failed(w->sess, src, now);
		log_warn("web.login_failed", "source=%s", LOG_Q(src));
		login_form(a, w, 401, "Wrong user or password.");
		return;
	}
	explicit_bzero(pw, sizeof pw);
	if (rnd_bytes(rnd, sizeof rnd) != 0 ||
	    (s = wsess_create(w->sess, user, now, rnd)) == NULL) {
		explicit_bzero(rnd, sizeof rnd);
		send_error(a, w, NULL, 500, "cannot make a session");
		return;
	}
	explicit_bzero(rnd, sizeof rnd);
	log_info("web.login", "user=%s source=%s", LOG_Q(user), LOG_Q(src));
	cookie(set, sizeof set, w, COOKIE, s->id, "/", 0);
	cookie(clear, sizeof clear, w, LOGIN_COOKIE, "", "/login", 1);
	redirect(a, w, "/", set, clear);
}

/* A POST from another origin is refused whatever it carries: SameSite
 * keeps the cookie from it already, this keeps it from a login form too.
 * A browser says where a request came from (Sec-Fetch-Site, Origin);
 * curl and scripts say nothing and have the token to show. */
static int
same_origin(const struct hsrv_req *q)
{
	const char *origin = hsrv_req_header(q, "Origin");
	const char *host = hsrv_req_header(q, "Host");
	const char *site = hsrv_req_header(q, "Sec-Fetch-Site");
	const char *p;

	if (site != NULL && strcmp(site, "same-origin") != 0 && strcmp(site, "none") != 0)
		return 0;
	if (origin == NULL)
		return 1;
	if (host == NULL || (p = strstr(origin, "://")) == NULL)
		return 0;
	return strcmp(p + 3, host) == 0;
}

/* The one check of every POST's token, before any handler; both compared
 * in constant time. The login form's is its cookie's, the others the
 * session's. */
static int
post_ok(const struct hsrv_req *q, const struct wroute *rt, const struct wsess *s,
	const char *ck)
{
	const char *type = hsrv_req_header(q, "Content-Type");
	char csrf[WSESS_ID_LEN + 2], login[WSESS_ID_LEN + 2];
	size_t len;
	const char *body = hsrv_req_body(q, &len);
	int have = same_origin(q) && type != NULL &&
	    strncmp(type, "application/x-www-form-urlencoded", 33) == 0 &&
	    wroute_form_get(body, len, "csrf", csrf, sizeof csrf) == 0;

	if (!have)
		return 0;
	if (rt->id != WR_LOGIN)
		return wsess_csrf_ok(s, csrf);
	return ck != NULL && wroute_cookie_get(ck, LOGIN_COOKIE, login, sizeof login) == 0 &&
	    strlen(login) == WSESS_ID_LEN && strlen(csrf) == WSESS_ID_LEN &&
	    CRYPTO_memcmp(csrf, login, WSESS_ID_LEN) == 0;
}

/* [web] trusted_user_header, honoured on a unix socket only (0660: the
 * proxy's group; over TCP anyone could send it): the proxy's user gets a
 * session (a new one when the request has none, or one of another user),
 * its cookie into set (else set is ""). The session to use, or s. */
static const struct wsess *
proxy_session(struct wserve *w, const struct hsrv_req *q, const struct wsess *s, int64_t now,
	      char *set, size_t n)
{
	const char *user = hsrv_req_header(q, w->cfg->web.trusted_user_header);
	unsigned char rnd[WSESS_RAND];
	char peer[INET6_ADDRSTRLEN + 8];

	set[0] = '\0';
	hsrv_req_peer(q, peer, sizeof peer);
	if (user == NULL || strcmp(peer, "unix") != 0 || !wpass_user_valid(user))
		return s;
	if (s != NULL && strcmp(s->user, user) == 0)
		return s;
	if (s != NULL)
		wsess_end(w->sess, s->id);
	s = NULL;
	if (rnd_bytes(rnd, sizeof rnd) == 0 && (s = wsess_create(w->sess, user, now, rnd)) != NULL) {
		log_info("web.login", "user=%s source=proxy", LOG_Q(user));
		cookie(set, n, w, COOKIE, s->id, "/", 0);
	}
	explicit_bzero(rnd, sizeof rnd);
	return s;
}

/* ---- routing ---- */

/* What the request asks for, once its session and (a POST) its token are
 * known: the login and logout here, the pages wview's. */
static void
dispatch(struct wserve *w, const struct hsrv_req *q, const struct wroute *rt,
	 const struct wsess *s, int64_t now, struct hsrv_answer *a)
{
	struct wview_out v = {0};
	char clear[128];
	int rc;

	if (rt->id == WR_LOGIN_FORM && s != NULL)
		redirect(a, w, "/", NULL, NULL);
	else if (rt->id == WR_LOGIN_FORM)
		login_form(a, w, 200, NULL);
	else if (rt->id == WR_LOGIN)
		do_login(a, w, q);
	else if (rt->id == WR_LOGOUT) {
		log_info("web.logout", "user=%s", LOG_Q(s->user));
		wsess_end(w->sess, s->id);
		cookie(clear, sizeof clear, w, COOKIE, "", "/", 1);
		redirect(a, w, "/login", clear, NULL);
	} else {
		struct wpage_who who = {s->user, s->csrf, w->view.act != NULL};
		if ((rt->id == WR_CONFIRM || rt->id == WR_ACT) && w->view.act == NULL)
			/* without [redis.operator] there are no actions at all */
			rc = wview_error(&who, 404, "not found", &v);
		else if (rt->id == WR_CONFIRM)
			rc = wview_confirm(&w->view, &who, q, &v);
		else if (rt->id == WR_ACT) {
			size_t len;
			const char *body = hsrv_req_body(q, &len);
			rc = wview_act(&w->view, &who, body, len, &v);
		} else
			rc = wview_page(&w->view, rt, &who, q, now, &v);
		send_view(a, w, &v, rc, NULL, NULL);
	}
}

/* hsrv's handler: the route, its session, the one CSRF check. */
static void
route(void *arg, const struct hsrv_req *q, const char *method, const char *url,
      struct hsrv_answer *a)
{
	struct wserve *w = arg;
	const char *ck = hsrv_req_header(q, "Cookie");
	char sid[WSESS_ID_LEN + 2], proxy_set[256] = "";
	const struct wsess *s = NULL;
	const struct wasset *as = NULL;
	struct wview_out v = {0};
	struct wroute rt;
	int64_t now = wtime_now_ms();

	wroute_match(method, url, &rt);
	if (ck && wroute_cookie_get(ck, COOKIE, sid, sizeof sid) == 0)
		s = wsess_find(w->sess, sid, now);
	if (w->cfg->web.trusted_user_header != NULL && rt.id != WR_ASSET)
		s = proxy_session(w, q, s, now, proxy_set, sizeof proxy_set);
	if (rt.id == WR_ASSET)
		as = wasset_find(rt.arg);
	if (rt.id == WR_NOT_FOUND || (rt.id == WR_ASSET && as == NULL))
		send_error(a, w, NULL, 404, "not found");
	else if (rt.id == WR_BAD_METHOD)
		send_error(a, w, NULL, 405, "method not allowed");
	else if (as != NULL)
		respond(a, w, 200, as->type, (char *)as->body, as->len, R_STATIC | R_CACHE, NULL,
		    NULL, NULL);
	else if (rt.session && s == NULL && rt.post)
		send_error(a, w, NULL, 403, "no session: log in first");
	else if (rt.session && s == NULL && rt.id == WR_API_OVERVIEW) {
		v.status = 401;
		v.json = json_pack("{s:s}", "error", "no session");
		send_view(a, w, &v, v.json ? 0 : -1, NULL, NULL);
	} else if (rt.session && s == NULL)
		redirect(a, w, "/login", NULL, NULL);
	else if (rt.post && !post_ok(q, &rt, s, ck)) {
		log_warn("web.csrf_refused", "path=%s", LOG_Q(url));
		if (rt.id == WR_LOGIN)
			login_form(a, w, 403, "The form had expired: try again.");
		else
			send_error(a, w, NULL, 403, "refused: the form's token is missing "
			    "or wrong (reload the page)");
	} else
		dispatch(w, q, &rt, s, now, a);
	if (proxy_set[0] != '\0' && hsrv_answer_header(a, "Set-Cookie", proxy_set) != 0)
		a->status = 500;	/* no session without its cookie */
}

/* ---- the servers ---- */

struct wserve *
wserve_new(struct ev_loop *loop, const struct cfg *cfg, const struct wconf *conf,
	   struct wread *rd, struct wact *act, const char *tls_cert, const char *tls_key,
	   char *err, size_t errlen)
{
	struct wserve *w = calloc(1, sizeof *w);

	if (w == NULL || (w->sess = wsess_new(WSERVE_SESSIONS,
	    cfg->web.idle_timeout_s * 1000)) == NULL) {
		snprintf(err, errlen, "out of memory");
		free(w);
		return NULL;
	}
	w->cfg = cfg;
	w->conf = conf;
	w->view = (struct wview_ctx){cfg, rd, act};
	for (size_t i = 0; i < conf->naddr; i++) {
		int tls = conf->tls && !conf->addr[i].is_unix;
		/* a browser keeps up to 6 connections open a host: 10 tabs of one
		 * browser share them, 10 browsers on one machine do not */
		const struct hsrv_limits l = {.ev_accept = "web.accept", .ev_http = "web.http",
		    .per_peer = 64, .total = 128, .timeout_s = 30, .head_max = 32768,
		    .body_max = WSERVE_BODY_MAX, .keep_alive = 1,
		    .tls_cert = tls ? tls_cert : NULL, .tls_key = tls ? tls_key : NULL};
		if ((w->srv[i] = hsrv_new(loop, &conf->addr[i], &l, route, w, err,
		    errlen)) == NULL) {
			wserve_free(w);
			return NULL;
		}
	}
	return w;
}

void
wserve_free(struct wserve *w)
{
	if (w == NULL)
		return;
	for (size_t i = 0; i < WCONF_LISTEN_MAX; i++)
		hsrv_free(w->srv[i]);
	wsess_free(w->sess);
	free(w);
}
