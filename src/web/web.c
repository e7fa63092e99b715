/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * warrantd-web: the operators' console (issue 39): reads as
 * [redis.monitor]; acts (retry, cancel, requeue, drop, pause) only with
 * [redis.operator], through warrantctl's own code (wact.h, ctl/act.h).
 *
 *   warrantd-web [-c FILE]            serve [web] listen until SIGTERM
 *   warrantd-web [-c FILE] -t         check [web] and the files it names
 *   warrantd-web passwd FILE USER     add or change USER in FILE (password
 *                                     on stdin)
 *
 * libmicrohttpd answers on one thread per listen address; a single mutex
 * makes the handlers take turns, so the session table and the one Redis
 * connection need no other locking. Every response carries the same
 * security headers (CSP 'self' and no inline code, no framing, no
 * caching); every POST is checked for its CSRF token before its handler
 * runs; every page but /login and /static/ needs a session.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sysexits.h>
#include <termios.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <microhttpd.h>
#include <openssl/crypto.h>

#include "conf/cfgfile.h"
#include "base/log.h"
#include "base/rnd.h"
#include "worker/sdnotify.h"
#include "conf/secrets.h"
#include "base/version.h"
#include "wact.h"
#include "walert.h"
#include "wasset.h"
#include "wconf.h"
#include "wpage.h"
#include "wpass.h"
#include "wread.h"
#include "wroute.h"
#include "wsess.h"
#include "base/wtime.h"

#define PROG		"warrantd-web"
#define BODY_MAX	8192	/* a POST body: a login or an action form */
#define SESSIONS	256
#define COOKIE		"wsid"
#define LOGIN_COOKIE	"wlogin"
#define PW_MAX		1024

#if MHD_VERSION < 0x00097002
typedef int mhd_result;
#else
typedef enum MHD_Result mhd_result;
#endif

static const char csp[] = "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'";

struct web {
	const struct cfg *cfg;
	struct wconf conf;
	struct wread *read;
	struct wact *act;	/* NULL: no [redis.operator], no action */
	struct wsess_table *sess;
	pthread_mutex_t lock;
	struct MHD_Daemon *d[WCONF_LISTEN_MAX];
	int fds[WCONF_LISTEN_MAX];
	char *tls_cert, *tls_key;	/* PEM (tls_key: secrets_free) */
	size_t tls_cert_len, tls_key_len;
};

/* A request's state across the handler's calls: its body so far. */
struct req {
	char body[BODY_MAX + 1];
	size_t len;
	int too_big;
};

static const char usage_text[] =
"usage: warrantd-web [-c FILE] [-t]\n"
"       warrantd-web passwd FILE USER    (the password on stdin)\n"
"\n"
"  -c, --config FILE   the daemon's INI file (default " CFG_DEFAULT_PATH "): [web],\n"
"                      [redis] and [redis.monitor]\n"
"  -t, --test          check the configuration and exit\n"
"  -h, --help          this help\n"
"  -V, --version       the version\n";

/* ---- responses ---- */

/* respond's flags: the body is the binary's (not freed), it may be cached */
#define R_STATIC	1
#define R_CACHE		2

static mhd_result
respond(struct MHD_Connection *conn, int status, const char *type, char *body, size_t len,
	int flags, const struct web *w, const char *cookie1, const char *cookie2,
     const char *location)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body,
	    flags & R_STATIC ? MHD_RESPMEM_PERSISTENT : MHD_RESPMEM_MUST_FREE);

	if (r == NULL) {
		if (!(flags & R_STATIC))
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Content-Security-Policy", csp);
	MHD_add_response_header(r, "X-Frame-Options", "DENY");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	/* not no-referrer: with it a browser sends "Origin: null" on a form's
	 * POST, and same_origin could no longer tell ours from another's */
	MHD_add_response_header(r, "Referrer-Policy", "same-origin");
	MHD_add_response_header(r, "Cross-Origin-Opener-Policy", "same-origin");
	MHD_add_response_header(r, "Cache-Control", flags & R_CACHE ? "private, max-age=300" :
	    "no-store");
	if (w->conf.tls)
		MHD_add_response_header(r, "Strict-Transport-Security", "max-age=31536000");
	if (cookie1)
		MHD_add_response_header(r, "Set-Cookie", cookie1);
	if (cookie2)
		MHD_add_response_header(r, "Set-Cookie", cookie2);
	if (location)
		MHD_add_response_header(r, "Location", location);
	mhd_result rc = MHD_queue_response(conn, (unsigned)status, r);
	MHD_destroy_response(r);
	return rc;
}

static mhd_result
send_html(struct MHD_Connection *conn, const struct web *w, int status, struct whtml *b,
	  const char *cookie1, const char *cookie2)
{
	size_t len;
	char *s = whtml_take(b, &len);

	whtml_free(b);
	if (s == NULL)
		return MHD_NO;
	return respond(conn, status, "text/html; charset=utf-8", s, len, 0, w, cookie1, cookie2,
	    NULL);
}

static mhd_result
send_error(struct MHD_Connection *conn, const struct web *w, const struct wpage_who *who,
	   int status, const char *message)
{
	struct whtml *b = whtml_new();

	if (b == NULL)
		return MHD_NO;
	wpage_error(b, who, status, message);
	return send_html(conn, w, status, b, NULL, NULL);
}

static mhd_result
redirect(struct MHD_Connection *conn, const struct web *w, const char *to, const char *cookie1,
	 const char *cookie2)
{
	return respond(conn, 303, "text/plain; charset=utf-8", (char *)"", 0, R_STATIC, w, cookie1, cookie2,
	    to);
}

static mhd_result
send_json(struct MHD_Connection *conn, const struct web *w, int status, json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT);

	json_decref(v);
	if (s == NULL)
		return MHD_NO;
	return respond(conn, status, "application/json", s, strlen(s), 0, w, NULL, NULL, NULL);
}

/* "NAME=VALUE; Path=/; HttpOnly; SameSite=Strict[; Secure][; Max-Age=0]" */
static void
cookie(char *buf, size_t n, const struct web *w, const char *name, const char *value,
       const char *path, int clear)
{
	snprintf(buf, n, "%s=%s; Path=%s; HttpOnly; SameSite=Strict%s%s", name, value, path,
	    w->conf.tls ? "; Secure" : "", clear ? "; Max-Age=0" : "");
}

/* ---- handlers ---- */

/* Where a login came from, for the rate limit and the log. */
static void
source_of(struct MHD_Connection *conn, char *buf, size_t n)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn,
	    MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	snprintf(buf, n, "unix");
	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, buf,
		    (socklen_t)n);
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr,
		    buf, (socklen_t)n);
}

static mhd_result
login_form(struct MHD_Connection *conn, const struct web *w, int status, const char *message)
{
	char token[WSESS_ID_LEN + 1], set[256];
	struct whtml *b;

	if (rnd_hex(token, sizeof token, WSESS_ID_LEN / 2) != 0 || (b = whtml_new()) == NULL)
		return MHD_NO;
	cookie(set, sizeof set, w, LOGIN_COOKIE, token, "/login", 0);
	wpage_login(b, token, message);
	return send_html(conn, w, status, b, set, NULL);
}

/* 1 when user's password is pw. A user without a line costs the same
 * PBKDF2 as one with (against a hash of nothing), so that the time of an
 * answer does not say which names exist. */
static int
password_ok(const struct web *w, const char *user, const char *pw)
{
	/* of "" with salt "warrantd-web" and WPASS_ITER */
	static char dummy[WPASS_HASH_MAX];
	char enc[WPASS_HASH_MAX], err[256], *text = NULL;
	size_t len = 0;
	int found = 0;

	if (dummy[0] == '\0' && wpass_hash("", 0, (const unsigned char *)"warrantd-web", 12,
	    WPASS_ITER, dummy, sizeof dummy) != 0)
		return 0;
	if (secrets_read_cfg(w->cfg, w->cfg->web.users_file, SECRETS_TRIMMED, &text, &len, err,
	    sizeof err) != 0)
		log_error("web.users_file", "detail=%s", LOG_Q(err));
	else
		found = wpass_find(text, user, enc, sizeof enc) == 0;
	secrets_free(text, len);
	int ok = wpass_check(found ? enc : dummy, pw, strlen(pw));
	return found && ok == 1;
}

static mhd_result
do_login(struct MHD_Connection *conn, struct web *w, const struct req *q)
{
	char user[WPASS_USER_MAX + 1], pw[PW_MAX], src[INET6_ADDRSTRLEN + 8], set[256];
	unsigned char rnd[WSESS_RAND];
	int64_t now = wtime_now_ms();
	const struct wsess *s;

	source_of(conn, src, sizeof src);
	if (!wsess_login_allowed(w->sess, src, now)) {
		log_warn("web.login_limited", "source=%s", LOG_Q(src));
		return login_form(conn, w, 429, "Too many failed logins: wait a minute.");
	}
	if (wroute_form_get(q->body, q->len, "user", user, sizeof user) != 0 ||
	    wroute_form_get(q->body, q->len, "password", pw, sizeof pw) != 0 ||
	    !password_ok(w, user, pw)) {
		explicit_bzero(pw, sizeof pw);
		wsess_login_failed(w->sess, src, now);
		log_warn("web.login_failed", "source=%s", LOG_Q(src));
		return login_form(conn, w, 401, "Wrong user or password.");
	}
	explicit_bzero(pw, sizeof pw);
	if (rnd_bytes(rnd, sizeof rnd) != 0 ||
	    (s = wsess_create(w->sess, user, now, rnd)) == NULL) {
		explicit_bzero(rnd, sizeof rnd);
		return send_error(conn, w, NULL, 500, "cannot make a session");
	}
	explicit_bzero(rnd, sizeof rnd);
	log_info("web.login", "user=%s source=%s", LOG_Q(user), LOG_Q(src));
	char clear[128];
	cookie(set, sizeof set, w, COOKIE, s->id, "/", 0);
	cookie(clear, sizeof clear, w, LOGIN_COOKIE, "", "/login", 1);
	return redirect(conn, w, "/", set, clear);
}

static const char *
query_arg(void *arg, const char *name)
{
	return MHD_lookup_connection_value(arg, MHD_GET_ARGUMENT_KIND, name);
}

/* The overview's alerts, from it and the last minutes of the charts'
 * buckets (a failed read of those: the alerts of the overview alone). */
static void
add_alerts(struct web *w, json_t *ov, int64_t now)
{
	char err[256];
	json_t *st = wread_stats(w->read, now, WALERT_DEAD_MINUTES, err, sizeof err);

	json_object_set_new(ov, "alerts", walert_list(ov, st));
	json_decref(st);
}

static mhd_result
page(struct MHD_Connection *conn, struct web *w, const struct wroute *rt,
     const struct wsess *s)
{
	struct wpage_who who = {s->user, s->csrf, w->act != NULL};
	int64_t now = wtime_now_ms();
	char err[512];
	json_t *v = NULL;
	struct whtml *b;
	struct wroute_jobq jq;

	switch (rt->id) {
	case WR_API_OVERVIEW:
		if ((v = wread_overview(w->read, now, err, sizeof err)) == NULL)
			return send_json(conn, w, 502, json_pack("{s:s}", "error", err));
		add_alerts(w, v, now);
		return send_json(conn, w, 200, v);
	case WR_OVERVIEW:
		if ((v = wread_overview(w->read, now, err, sizeof err)) != NULL)
			add_alerts(w, v, now);
		break;
	case WR_JOBS:
		if (wroute_jobq_parse(&jq, query_arg, conn, err, sizeof err) != 0)
			return send_error(conn, w, &who, 400, err);
		v = wread_jobs(w->read, &jq, now, err, sizeof err);
		break;
	case WR_JOB:
		if ((v = wread_job(w->read, rt->arg, now, err, sizeof err)) == NULL &&
		    strcmp(err, "not found") == 0)
			return send_error(conn, w, &who, 404, "no such job");
		break;
	case WR_DEAD:
		v = wread_dead(w->read, err, sizeof err);
		break;
	case WR_CHARTS:
		v = wread_stats(w->read, now, 1440, err, sizeof err);
		break;
	default:
		return send_error(conn, w, &who, 404, "not found");
	}
	if (v == NULL) {
		log_warn("web.redis", "detail=%s", LOG_Q(err));
		return send_error(conn, w, &who, 502, err);
	}
	if ((b = whtml_new()) == NULL) {
		json_decref(v);
		return MHD_NO;
	}
	if (rt->id == WR_OVERVIEW) {
		json_t *names = json_array();	/* what the pause form offers */
		for (size_t i = 0; i < w->cfg->nactions; i++)
			json_array_append_new(names, json_string(w->cfg->actions[i].name));
		json_object_set_new(v, "actions", names);
		wpage_overview(b, &who, v);
	} else if (rt->id == WR_JOBS)
		wpage_jobs(b, &who, &jq, v);
	else if (rt->id == WR_JOB)
		wpage_job(b, &who, v, now);
	else if (rt->id == WR_CHARTS)
		wpage_charts(b, &who, v);
	else
		wpage_dead(b, &who, v);
	json_decref(v);
	return send_html(conn, w, 200, b, NULL, NULL);
}

/* ---- actions (wact.h): a confirmation, then the POST ---- */

/* The checked boxes of a list (?id=a&id=b) as "a b". */
struct ids_acc {
	char buf[WACT_ARG_MAX];
	size_t len;
	int too_long;
};

static mhd_result
add_id(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct ids_acc *a = cls;
	size_t n = value ? strlen(value) : 0;

	(void)kind;
	if (strcmp(key, "id") != 0 || n == 0)
		return MHD_YES;
	if (a->len + n + 2 > sizeof a->buf) {
		a->too_long = 1;
		return MHD_NO;
	}
	a->len += (size_t)snprintf(a->buf + a->len, sizeof a->buf - a->len, "%s%s",
	    a->len ? " " : "", value);
	return MHD_YES;
}

static mhd_result
confirm(struct MHD_Connection *conn, struct web *w, const struct wpage_who *who)
{
	const char *op = query_arg(conn, "op"), *arg = query_arg(conn, "arg");
	char err[512], sentence[WACT_ARG_MAX + 256], back[WACT_ARG_MAX + 16];
	struct ids_acc *ids = calloc(1, sizeof *ids);
	struct wact_req *req = calloc(1, sizeof *req);
	long long count = 0;
	mhd_result rc = MHD_NO;
	struct whtml *b;

	if (ids == NULL || req == NULL)
		goto done;
	if (arg == NULL)
		MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, add_id, ids);
	if (ids->too_long || wact_parse(w->cfg, op, arg ? arg : ids->buf, req, err,
	    sizeof err) != 0) {
		rc = send_error(conn, w, who, 400, ids->too_long ? "too many records" : err);
		goto done;
	}
	if (req->op == WACT_REQUEUE_REASON || req->op == WACT_DROP_REASON) {
		json_t *d = wread_dead(w->read, err, sizeof err);
		count = json_integer_value(json_object_get(json_object_get(d, "reasons"), req->arg));
		json_decref(d);
	}
	wact_describe(req, count, sentence, sizeof sentence);
	wact_back(req, back, sizeof back);
	if ((b = whtml_new()) != NULL) {
		wpage_confirm(b, who, wact_op_name(req->op), req->arg, sentence, back);
		rc = send_html(conn, w, 200, b, NULL, NULL);
	}
done:
	free(ids);
	free(req);
	return rc;
}

static mhd_result
act(struct MHD_Connection *conn, struct web *w, const struct wpage_who *who,
    const struct req *q)
{
	char op[32], err[512], sentence[WACT_ARG_MAX + 256], back[WACT_ARG_MAX + 16];
	char *arg = calloc(1, WACT_ARG_MAX);
	struct wact_req *req = calloc(1, sizeof *req);
	struct act_result res;
	mhd_result rc = MHD_NO;
	struct whtml *b;

	if (arg == NULL || req == NULL)
		goto done;
	if (wroute_form_get(q->body, q->len, "op", op, sizeof op) != 0 ||
	    wroute_form_get(q->body, q->len, "arg", arg, WACT_ARG_MAX) != 0 ||
	    wact_parse(w->cfg, op, arg, req, err, sizeof err) != 0) {
		rc = send_error(conn, w, who, 400, "refused: not an action this console knows");
		goto done;
	}
	act_result_init(&res);
	int code = wact_run(w->act, req, who->user, &res);
	log_info("web.action", "user=%s op=%s arg=%s rc=%d done=%lld", LOG_Q(who->user),
	    wact_op_name(req->op), LOG_Q(req->arg), code, res.done);
	wact_describe(req, res.matched, sentence, sizeof sentence);
	wact_back(req, back, sizeof back);
	if ((b = whtml_new()) != NULL) {
		wpage_acted(b, who, sentence, code, res.lines, back);
		rc = send_html(conn, w, code == 0 ? 200 : code == WACT_REFUSED ? 409 : 502, b, NULL,
		    NULL);
	}
	act_result_clear(&res);
done:
	free(arg);
	free(req);
	return rc;
}

/* A POST from another origin is refused whatever it carries: SameSite
 * keeps the cookie from it already, this keeps it from a login form too.
 * A browser says where a request came from (Sec-Fetch-Site, Origin);
 * curl and scripts say nothing and have the token to show. */
static int
same_origin(struct MHD_Connection *conn)
{
	const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
	const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Host");
	const char *site = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Sec-Fetch-Site");
	const char *p;

	if (site != NULL && strcmp(site, "same-origin") != 0 && strcmp(site, "none") != 0)
		return 0;
	if (origin == NULL)
		return 1;
	if (host == NULL || (p = strstr(origin, "://")) == NULL)
		return 0;
	return strcmp(p + 3, host) == 0;
}

static mhd_result
route(struct MHD_Connection *conn, struct web *w, const char *method, const char *url,
      const struct req *q)
{
	const char *ck = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Cookie");
	const char *type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type");
	char sid[WSESS_ID_LEN + 2], csrf[WSESS_ID_LEN + 2], login[WSESS_ID_LEN + 2];
	const struct wsess *s = NULL;
	struct wroute rt;

	wroute_match(method, url, &rt);
	if (ck && wroute_cookie_get(ck, COOKIE, sid, sizeof sid) == 0)
		s = wsess_find(w->sess, sid, wtime_now_ms());
	if (rt.id == WR_NOT_FOUND)
		return send_error(conn, w, NULL, 404, "not found");
	if (rt.id == WR_BAD_METHOD)
		return send_error(conn, w, NULL, 405, "method not allowed");
	if (rt.id == WR_ASSET) {
		const struct wasset *a = wasset_find(rt.arg);
		if (a == NULL)
			return send_error(conn, w, NULL, 404, "not found");
		return respond(conn, 200, a->type, (char *)a->body, a->len, R_STATIC | R_CACHE, w, NULL, NULL, NULL);
	}
	if (rt.session && s == NULL) {
		if (rt.post)
			return send_error(conn, w, NULL, 403, "no session: log in first");
		if (rt.id == WR_API_OVERVIEW)
			return send_json(conn, w, 401, json_pack("{s:s}", "error", "no session"));
		return redirect(conn, w, "/login", NULL, NULL);
	}
	if (rt.post) {
		/* the one check of every POST's token, before any handler; both
		 * compared in constant time */
		int have = !q->too_big && same_origin(conn) && type != NULL &&
		    strncmp(type, "application/x-www-form-urlencoded", 33) == 0 &&
		    wroute_form_get(q->body, q->len, "csrf", csrf, sizeof csrf) == 0;
		int ok = have && (rt.id == WR_LOGIN ? ck != NULL &&
		    wroute_cookie_get(ck, LOGIN_COOKIE, login, sizeof login) == 0 &&
		    strlen(login) == WSESS_ID_LEN && strlen(csrf) == WSESS_ID_LEN &&
		    CRYPTO_memcmp(csrf, login, WSESS_ID_LEN) == 0 : wsess_csrf_ok(s, csrf));
		if (!ok) {
			log_warn("web.csrf_refused", "path=%s", LOG_Q(url));
			if (rt.id == WR_LOGIN)
				return login_form(conn, w, 403, "The form had expired: try again.");
			return send_error(conn, w, NULL, 403, "refused: the form's token is missing "
			    "or wrong (reload the page)");
		}
	}
	switch (rt.id) {
	case WR_LOGIN_FORM:
		if (s != NULL)
			return redirect(conn, w, "/", NULL, NULL);
		return login_form(conn, w, 200, NULL);
	case WR_LOGIN:
		return do_login(conn, w, q);
	case WR_LOGOUT: {
		char clear[128];
		log_info("web.logout", "user=%s", LOG_Q(s->user));
		wsess_end(w->sess, s->id);
		cookie(clear, sizeof clear, w, COOKIE, "", "/", 1);
		return redirect(conn, w, "/login", clear, NULL);
	}
	case WR_CONFIRM:
	case WR_ACT: {
		/* without [redis.operator] there are no actions at all */
		struct wpage_who who = {s->user, s->csrf, w->act != NULL};
		if (w->act == NULL)
			return send_error(conn, w, &who, 404, "not found");
		return rt.id == WR_CONFIRM ? confirm(conn, w, &who) : act(conn, w, &who, q);
	}
	default:
		return page(conn, w, &rt, s);
	}
}

static mhd_result
handler(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
	const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct web *w = cls;
	struct req *q = *con_cls;

	(void)version;
	if (q == NULL) {
		if ((q = calloc(1, sizeof *q)) == NULL)
			return MHD_NO;
		*con_cls = q;
		return MHD_YES;
	}
	if (*upload_size > 0) {
		if (q->len + *upload_size > BODY_MAX)
			q->too_big = 1;
		else {
			memcpy(q->body + q->len, upload, *upload_size);
			q->len += *upload_size;
		}
		*upload_size = 0;
		return MHD_YES;
	}
	pthread_mutex_lock(&w->lock);
	mhd_result rc = route(conn, w, method, url, q);
	pthread_mutex_unlock(&w->lock);
	return rc;
}

static void
completed(void *cls, struct MHD_Connection *conn, void **con_cls,
	  enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)conn;
	(void)toe;
	if (*con_cls != NULL) {
		explicit_bzero(*con_cls, sizeof(struct req));	/* a password, maybe */
		free(*con_cls);
	}
	*con_cls = NULL;
}

/* ---- startup ---- */

static int
listen_on(const struct listen_addr *a, char *err, size_t errlen)
{
	const struct sockaddr_un *un = (const struct sockaddr_un *)(const void *)&a->sa;
	struct stat st;
	int one = 1;
	int fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	if (a->is_unix && lstat(un->sun_path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(un->sun_path);	/* a stale socket of an earlier run */
	if (!a->is_unix)
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	/* the socket's group (a reverse proxy's) may connect, no one else */
	if (bind(fd, (const struct sockaddr *)&a->sa, a->salen) < 0 ||
	    (a->is_unix && chmod(un->sun_path, 0660) < 0) || listen(fd, 64) < 0) {
		snprintf(err, errlen, "cannot listen: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int
start(struct web *w, char *err, size_t errlen)
{
	for (size_t i = 0; i < w->conf.naddr; i++) {
		const struct listen_addr *a = &w->conf.addr[i];
		unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
		int tls = w->conf.tls && !a->is_unix;

		if (a->sa.ss_family == AF_INET6)
			flags |= MHD_USE_IPv6;
		if (tls)
			flags |= MHD_USE_TLS;
		if ((w->fds[i] = listen_on(a, err, errlen)) < 0)
			return -1;
		w->d[i] = tls ? MHD_start_daemon(flags, 0, NULL, NULL, handler, w,
		    MHD_OPTION_LISTEN_SOCKET, w->fds[i], MHD_OPTION_NOTIFY_COMPLETED, completed, w,
		    MHD_OPTION_CONNECTION_TIMEOUT, 30U, MHD_OPTION_CONNECTION_LIMIT, 64U,
		    MHD_OPTION_HTTPS_MEM_CERT, w->tls_cert, MHD_OPTION_HTTPS_MEM_KEY, w->tls_key,
		    MHD_OPTION_END) : MHD_start_daemon(flags, 0, NULL, NULL, handler, w,
		    MHD_OPTION_LISTEN_SOCKET, w->fds[i], MHD_OPTION_NOTIFY_COMPLETED, completed, w,
		    MHD_OPTION_CONNECTION_TIMEOUT, 30U, MHD_OPTION_CONNECTION_LIMIT, 64U,
		    MHD_OPTION_END);
		if (w->d[i] == NULL) {
			snprintf(err, errlen, "libmicrohttpd would not start%s", tls ?
			    " (is tls_key_file the key of tls_cert_file?)" : "");
			return -1;
		}
	}
	return 0;
}

static void
stop(struct web *w)
{
	for (size_t i = 0; i < WCONF_LISTEN_MAX; i++) {
		if (w->d[i])
			MHD_stop_daemon(w->d[i]);
		if (w->fds[i] >= 0)
			close(w->fds[i]);
	}
	for (size_t i = 0; i < w->conf.naddr; i++)
		if (w->conf.addr[i].is_unix)
			unlink(((const struct sockaddr_un *)(const void *)&w->conf.addr[i].sa)->sun_path);
	wread_free(w->read);
	wact_free(w->act);
	wsess_free(w->sess);
	free(w->tls_cert);
	secrets_free(w->tls_key, w->tls_key_len);
	pthread_mutex_destroy(&w->lock);
}

/* The TLS pair, the users file and the Redis reader: what -t checks too. */
static int
prepare(struct web *w, struct cfg *cfg, char *err, size_t errlen)
{
	char *users = NULL;
	size_t len = 0;

	memset(w, 0, sizeof *w);
	for (size_t i = 0; i < WCONF_LISTEN_MAX; i++)
		w->fds[i] = -1;
	w->cfg = cfg;
	pthread_mutex_init(&w->lock, NULL);
	if (wconf_parse(cfg, &w->conf, err, errlen) != 0)
		return -1;
	if (w->conf.tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
		snprintf(err, errlen, "[web] tls_cert_file: this libmicrohttpd has no TLS");
		return -1;
	}
	if (w->conf.tls &&
	    (secrets_read_cfg(cfg, cfg->web.tls_cert_file, SECRETS_PUBLIC, &w->tls_cert,
	    &w->tls_cert_len, err, errlen) != 0 ||
	    secrets_read_cfg(cfg, cfg->web.tls_key_file, SECRETS_PRIVATE_PEM, &w->tls_key,
	    &w->tls_key_len, err, errlen) != 0))
		return -1;
	if (secrets_read_cfg(cfg, cfg->web.users_file, SECRETS_TRIMMED, &users, &len, err,
	    errlen) != 0)
		return -1;
	secrets_free(users, len);
	if ((w->read = wread_new(cfg, err, errlen)) == NULL)
		return -1;
	if (cfg->roles[CFG_ROLE_OPERATOR].username != NULL &&
	    (w->act = wact_new(cfg, err, errlen)) == NULL)
		return -1;
	if ((w->sess = wsess_new(SESSIONS, cfg->web.idle_timeout_s * 1000)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

/* ---- passwd ---- */

/* One line of stdin, without its newline; echo off on a terminal. */
static int
read_password(char *pw, size_t n)
{
	struct termios old, quiet;
	int tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &old) == 0;

	if (tty) {
		fputs("Password: ", stderr);
		quiet = old;
		quiet.c_lflag &= ~(tcflag_t)ECHO;
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
	}
	char *got = fgets(pw, (int)n, stdin);
	if (tty) {
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
		fputc('\n', stderr);
	}
	if (got == NULL)
		return -1;
	pw[strcspn(pw, "\r\n")] = '\0';
	return 0;
}

static int
cmd_passwd(const char *file, const char *user)
{
	char pw[PW_MAX], enc[WPASS_HASH_MAX], tmp[4096];
	unsigned char salt[WPASS_SALT];
	char *text = NULL, *out;
	size_t len = 0;
	struct stat st;
	int fd, rc = EX_IOERR;

	if (!wpass_user_valid(user)) {
		fprintf(stderr, PROG ": passwd: %s: a user is 1 to %d of A-Z a-z 0-9 . _ -\n",
		    user, WPASS_USER_MAX - 1);
		return EX_USAGE;
	}
	if (read_password(pw, sizeof pw) != 0 || pw[0] == '\0') {
		fprintf(stderr, PROG ": passwd: no password on stdin\n");
		return EX_USAGE;
	}
	if (strlen(pw) < 12) {
		fprintf(stderr, PROG ": passwd: a password of at least 12 characters\n");
		explicit_bzero(pw, sizeof pw);
		return EX_USAGE;
	}
	if (rnd_bytes(salt, sizeof salt) != 0 ||
	    wpass_hash(pw, strlen(pw), salt, sizeof salt, WPASS_ITER, enc, sizeof enc) != 0) {
		explicit_bzero(pw, sizeof pw);
		fprintf(stderr, PROG ": passwd: cannot hash\n");
		return EX_SOFTWARE;
	}
	explicit_bzero(pw, sizeof pw);
	if (stat(file, &st) == 0) {
		char err[512];
		if (secrets_read(file, SECRETS_TRIMMED, &text, &len, err, sizeof err) != 0) {
			fprintf(stderr, PROG ": passwd: %s\n", err);
			return EX_NOINPUT;
		}
	}
	out = wpass_set(text ? text : "", user, enc);
	secrets_free(text, len);
	if (out == NULL)
		return EX_SOFTWARE;
	/* a temp file beside it, 0600, then renamed over: never half a file */
	snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", file);
	if ((fd = mkstemp(tmp)) < 0)
		fprintf(stderr, PROG ": passwd: %s: %s\n", tmp, strerror(errno));
	else if (fchmod(fd, 0600) != 0 || write(fd, out, strlen(out)) != (ssize_t)strlen(out) ||
	    fsync(fd) != 0 || close(fd) != 0 || rename(tmp, file) != 0) {
		fprintf(stderr, PROG ": passwd: %s: %s\n", file, strerror(errno));
		unlink(tmp);
	} else
		rc = 0;
	free(out);
	return rc;
}

/* ---- main ---- */

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'}, {"test", no_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	const char *path = CFG_DEFAULT_PATH;
	struct cfg_errors errs = {0};
	int ch, test = 0, sig;
	char err[512];
	struct web w;
	sigset_t set;

	log_init(PROG);
	if (argc >= 2 && strcmp(argv[1], "passwd") == 0) {
		if (argc != 4) {
			fputs(usage_text, stderr);
			return EX_USAGE;
		}
		return cmd_passwd(argv[2], argv[3]);
	}
	while ((ch = getopt_long(argc, argv, "c:thV", opts, NULL)) != -1) {
		switch (ch) {
		case 'c': path = optarg; break;
		case 't': test = 1; break;
		case 'h': fputs(usage_text, stdout); return 0;
		case 'V': printf(PROG " %s\n", WARRANTD_VERSION); return 0;
		default: fputs(usage_text, stderr); return EX_USAGE;
		}
	}
	if (optind != argc) {
		fputs(usage_text, stderr);
		return EX_USAGE;
	}
	struct cfg *cfg = cfgfile_load(path, &errs);
	for (size_t i = 0; i < errs.n; i++)
		fprintf(stderr, PROG ": %s\n", errs.msgs[i]);
	cfg_errors_clear(&errs);
	if (cfg == NULL)
		return EX_CONFIG;
	log_set_level(cfg->daemon.log_level);
	log_set_format(cfg->daemon.log_format);
	/* the signals go to this thread's sigwait, not to MHD's threads */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (prepare(&w, cfg, err, sizeof err) != 0) {
		fprintf(stderr, PROG ": %s: %s\n", path, err);
		stop(&w);
		cfg_free(cfg);
		return EX_CONFIG;
	}
	if (test) {
		printf("%s: [web] ok\n", path);
		stop(&w);
		cfg_free(cfg);
		return 0;
	}
	if (start(&w, err, sizeof err) != 0) {
		log_error("web.start_failed", "detail=%s", LOG_Q(err));
		stop(&w);
		cfg_free(cfg);
		return EX_UNAVAILABLE;
	}
	log_info("web.started", "version=%s listen=%s tls=%d", WARRANTD_VERSION,
	    LOG_Q(cfg->web.listen ? cfg->web.listen : WCONF_DEFAULT_LISTEN), w.conf.tls);
	(void)sdnotify_send("READY=1");
	while (sigwait(&set, &sig) == 0 && sig == SIGHUP)
		;	/* nothing to reload: the users file is read at each login */
	(void)sdnotify_send("STOPPING=1");
	log_info("web.stopped", "signal=%d", sig);
	stop(&w);
	cfg_free(cfg);
	return 0;
}
