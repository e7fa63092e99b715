/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * warrantd-web's pure modules (src/web/): routing, forms, cookies, the
 * jobs filters (wroute), sessions, CSRF and the login limit (wsess),
 * password hashes (wpass), HTML escaping (whtml), the pages (wpage) and
 * [web] listen (wconf).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wasset.h"
#include "wconf.h"
#include "whtml.h"
#include "wpage.h"
#include "wpass.h"
#include "wroute.h"
#include "wsess.h"

#define NOW 1796000000000LL

/* ---- wroute ---- */

static void
test_routes(void **state)
{
	(void)state;
	struct wroute r;

	wroute_match("GET", "/", &r);
	assert_int_equal(r.id, WR_OVERVIEW);
	assert_true(r.session);
	assert_false(r.post);
	wroute_match("HEAD", "/jobs", &r);
	assert_int_equal(r.id, WR_JOBS);
	wroute_match("GET", "/job/abc-1_2.x", &r);
	assert_int_equal(r.id, WR_JOB);
	assert_string_equal(r.arg, "abc-1_2.x");
	wroute_match("GET", "/login", &r);
	assert_int_equal(r.id, WR_LOGIN_FORM);
	assert_false(r.session);
	wroute_match("POST", "/login", &r);
	assert_int_equal(r.id, WR_LOGIN);
	assert_true(r.post);
	assert_false(r.session);
	wroute_match("POST", "/logout", &r);
	assert_int_equal(r.id, WR_LOGOUT);
	assert_true(r.post);
	assert_true(r.session);
	wroute_match("GET", "/static/console.css", &r);
	assert_int_equal(r.id, WR_ASSET);
	assert_false(r.session);
	/* a known path with another method, and what is no path of ours */
	wroute_match("POST", "/", &r);
	assert_int_equal(r.id, WR_BAD_METHOD);
	wroute_match("GET", "/logout", &r);
	assert_int_equal(r.id, WR_BAD_METHOD);
	wroute_match("DELETE", "/job/x", &r);
	assert_int_equal(r.id, WR_BAD_METHOD);
	static const char *const nope[] = {"/nope", "/job/", "/job/a/b", "/job/..", "/static/../x",
	    "/static/a%2fb", "//", "/jobs/", "/api/overview/x", ""};
	for (size_t i = 0; i < sizeof nope / sizeof nope[0]; i++) {
		wroute_match("GET", nope[i], &r);
		assert_int_equal(r.id, WR_NOT_FOUND);
		assert_null(r.arg);
	}
}

static void
test_form(void **state)
{
	(void)state;
	const char *f = "user=al%69ce&password=a+b%26c%3D&empty=&flag&csrf=1&csrf=2";
	char out[16];

	assert_int_equal(wroute_form_get(f, strlen(f), "user", out, sizeof out), 0);
	assert_string_equal(out, "alice");
	assert_int_equal(wroute_form_get(f, strlen(f), "password", out, sizeof out), 0);
	assert_string_equal(out, "a b&c=");
	assert_int_equal(wroute_form_get(f, strlen(f), "empty", out, sizeof out), 0);
	assert_string_equal(out, "");
	assert_int_equal(wroute_form_get(f, strlen(f), "flag", out, sizeof out), 0);
	assert_string_equal(out, "");
	assert_int_equal(wroute_form_get(f, strlen(f), "csrf", out, sizeof out), 0);
	assert_string_equal(out, "1");	/* the first wins */
	assert_int_equal(wroute_form_get(f, strlen(f), "use", out, sizeof out), -1);
	assert_int_equal(wroute_form_get(f, strlen(f), "missing", out, sizeof out), -1);
	/* bad escapes, a NUL byte, too long for out, and a length that cuts */
	static const char *const bad[] = {"a=%", "a=%4", "a=%zz", "a=%00", "a=0123456789abcdef"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(wroute_form_get(bad[i], strlen(bad[i]), "a", out, sizeof out), -1);
	assert_int_equal(wroute_form_get("a=12&b=3", 3, "b", out, sizeof out), -1);
	assert_int_equal(wroute_form_get("a=12&b=3", 3, "a", out, sizeof out), 0);
	assert_string_equal(out, "1");
}

static void
test_cookie(void **state)
{
	(void)state;
	char out[8];

	assert_int_equal(wroute_cookie_get("a=1; wsid=xyz; b=2", "wsid", out, sizeof out), 0);
	assert_string_equal(out, "xyz");
	assert_int_equal(wroute_cookie_get("wsid=abc", "wsid", out, sizeof out), 0);
	assert_string_equal(out, "abc");
	assert_int_equal(wroute_cookie_get("xwsid=abc; wsidx=1", "wsid", out, sizeof out), -1);
	assert_int_equal(wroute_cookie_get("wsid=0123456789", "wsid", out, sizeof out), -1);
	assert_int_equal(wroute_cookie_get("", "wsid", out, sizeof out), -1);
}

struct args {
	const char *k[8], *v[8];
};

static const char *
get(void *arg, const char *name)
{
	const struct args *a = arg;

	for (size_t i = 0; i < 8 && a->k[i]; i++)
		if (strcmp(a->k[i], name) == 0)
			return a->v[i];
	return NULL;
}

static void
test_jobq(void **state)
{
	(void)state;
	struct wroute_jobq q;
	char err[128];
	struct args none = {{NULL}, {NULL}};
	struct args all = {{"state", "page", "action", "resource", "subject", "id"},
	    {"failed", "3", "gate.open", "gate/14", "alice", "r-1"}};

	assert_int_equal(wroute_jobq_parse(&q, get, &none, err, sizeof err), 0);
	assert_string_equal(q.state, "");
	assert_int_equal(q.page, 0);
	assert_int_equal(wroute_jobq_parse(&q, get, &all, err, sizeof err), 0);
	assert_string_equal(q.state, "failed");
	assert_int_equal(q.page, 3);
	assert_string_equal(q.action, "gate.open");
	assert_string_equal(q.resource, "gate/14");
	assert_string_equal(q.subject, "alice");
	assert_string_equal(q.id, "r-1");
	static const char *const states[] = {"pending", "scheduled", "queued", "running", "retrying",
	    "auth_wait", "done", "expired", "denied", "failed", "dead", "cancelled"};
	for (size_t i = 0; i < sizeof states / sizeof states[0]; i++)
		assert_true(wroute_state_ok(states[i]));
	struct { const char *k, *v, *err; } bad[] = {
		{"state", "nope", "state: "}, {"page", "-1", "page: "}, {"page", "1x", "page: "},
		{"page", "100001", "page: "}, {"page", "+1", "page: "},
		{"action", "a\nb", "action: a control character"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct args a = {{bad[i].k}, {bad[i].v}};
		assert_int_equal(wroute_jobq_parse(&q, get, &a, err, sizeof err), -1);
		assert_memory_equal(err, bad[i].err, strlen(bad[i].err));
	}
	char longer[WROUTE_FILTER_MAX + 1];
	memset(longer, 'x', sizeof longer - 1);
	longer[sizeof longer - 1] = '\0';
	struct args a = {{"resource"}, {longer}};
	assert_int_equal(wroute_jobq_parse(&q, get, &a, err, sizeof err), -1);
}

/* ---- wsess ---- */

static void
fill(unsigned char *r, unsigned char v)
{
	for (size_t i = 0; i < WSESS_RAND; i++)
		r[i] = (unsigned char)(v + i);
}

static void
test_sessions(void **state)
{
	(void)state;
	struct wsess_table *t = wsess_new(2, 60000);
	unsigned char r[WSESS_RAND];
	char id[WSESS_ID_LEN + 1], csrf[WSESS_ID_LEN + 1];

	assert_non_null(t);
	fill(r, 1);
	const struct wsess *s = wsess_create(t, "alice", NOW, r);
	assert_non_null(s);
	assert_int_equal(strlen(s->id), WSESS_ID_LEN);
	assert_string_not_equal(s->id, s->csrf);
	assert_string_equal(s->user, "alice");
	memcpy(id, s->id, sizeof id);
	memcpy(csrf, s->csrf, sizeof csrf);
	/* found, its idle time restarted by each use */
	assert_non_null(wsess_find(t, id, NOW + 59000));
	assert_non_null(wsess_find(t, id, NOW + 118000));
	assert_true(wsess_csrf_ok(wsess_find(t, id, NOW + 118000), csrf));
	assert_false(wsess_csrf_ok(wsess_find(t, id, NOW + 118000), id));
	assert_false(wsess_csrf_ok(wsess_find(t, id, NOW + 118000), ""));
	assert_false(wsess_csrf_ok(wsess_find(t, id, NOW + 118000), NULL));
	assert_false(wsess_csrf_ok(NULL, csrf));
	/* a wrong id, one character off, or too short */
	char other[WSESS_ID_LEN + 1];
	memcpy(other, id, sizeof other);
	other[5] = other[5] == 'a' ? 'b' : 'a';
	assert_null(wsess_find(t, other, NOW + 118000));
	assert_null(wsess_find(t, "abc", NOW + 118000));
	assert_null(wsess_find(t, NULL, NOW + 118000));
	/* idle too long: ended */
	assert_null(wsess_find(t, id, NOW + 118000 + 60000));
	assert_null(wsess_find(t, id, NOW + 118000 + 1));
	/* logout */
	s = wsess_create(t, "bob", NOW, r);
	memcpy(id, s->id, sizeof id);
	assert_int_equal(wsess_count(t, NOW), 1);
	wsess_end(t, id);
	assert_null(wsess_find(t, id, NOW));
	assert_int_equal(wsess_count(t, NOW), 0);
	/* full: the one unused longest goes */
	fill(r, 10);
	s = wsess_create(t, "a", NOW, r);
	memcpy(id, s->id, sizeof id);
	fill(r, 20);
	s = wsess_create(t, "b", NOW + 10, r);
	memcpy(other, s->id, sizeof other);
	fill(r, 30);
	assert_non_null(wsess_create(t, "c", NOW + 20, r));
	assert_null(wsess_find(t, id, NOW + 30));
	assert_non_null(wsess_find(t, other, NOW + 30));
	/* a user name wpass would not write */
	assert_null(wsess_create(t, "a b", NOW, r));
	assert_null(wsess_create(t, "", NOW, r));
	wsess_free(t);
	wsess_free(NULL);
}

static void
test_login_limit(void **state)
{
	(void)state;
	struct wsess_table *t = wsess_new(4, 60000);

	for (int i = 0; i < WSESS_FAILS; i++) {
		assert_true(wsess_login_allowed(t, "10.0.0.1", NOW + i));
		wsess_login_failed(t, "10.0.0.1", NOW + i);
	}
	assert_false(wsess_login_allowed(t, "10.0.0.1", NOW + 10));
	assert_true(wsess_login_allowed(t, "10.0.0.2", NOW + 10));	/* another source */
	/* the window ends */
	assert_true(wsess_login_allowed(t, "10.0.0.1", NOW + WSESS_WINDOW_MS));
	/* every source together */
	int64_t at = NOW + 10 * WSESS_WINDOW_MS;
	for (int i = 0; i < WSESS_FAILS_ALL; i++)
		wsess_login_failed(t, i % 2 ? "a" : "b", at);
	assert_false(wsess_login_allowed(t, "fresh", at + 1));
	assert_true(wsess_login_allowed(t, "fresh", at + WSESS_WINDOW_MS));
	wsess_free(t);
}

/* ---- wpass ---- */

static void
test_pbkdf2_vector(void **state)
{
	(void)state;
	char enc[WPASS_HASH_MAX];

	/* PBKDF2-HMAC-SHA256("password", "salt", 1000, 32) as Python's
	 * hashlib.pbkdf2_hmac computes it, in base64url */
	assert_int_equal(wpass_hash("password", 8, (const unsigned char *)"salt", 4, 1000, enc,
	    sizeof enc), 0);
	assert_string_equal(enc,
	    "pbkdf2-sha256$1000$c2FsdA$YywoEuRtRgQQK6dhjp1tfS-BKPYma0oDJk0qBGC33LM");
	assert_int_equal(wpass_check(enc, "password", 8), 1);
	assert_int_equal(wpass_check(enc, "passwore", 8), 0);
	assert_int_equal(wpass_check(enc, "password1", 9), 0);
	assert_int_equal(wpass_check(enc, "", 0), 0);
	/* not ours */
	static const char *const bad[] = {"", "plain", "pbkdf2-sha1$1000$c2FsdA$x",
	    "pbkdf2-sha256$10$c2FsdA$YywoEuRtRgQQK6dhjp1tfS-BKPYma0oDJk0qBGC33LM",
	    "pbkdf2-sha256$1000$$YywoEuRtRgQQK6dhjp1tfS-BKPYma0oDJk0qBGC33LM",
	    "pbkdf2-sha256$1000$c2FsdA$YyM_BL2V", "pbkdf2-sha256$x$c2FsdA$YyM_"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(wpass_check(bad[i], "password", 8), -1);
	assert_int_equal(wpass_hash("p", 1, (const unsigned char *)"s", 1, 10, enc, sizeof enc), -1);
}

static void
test_users_file(void **state)
{
	(void)state;
	char out[WPASS_HASH_MAX];
	const char *text = "# users\nalice:h1\nbob:h2\r\nalice2:h3";

	assert_int_equal(wpass_find(text, "alice", out, sizeof out), 0);
	assert_string_equal(out, "h1");
	assert_int_equal(wpass_find(text, "bob", out, sizeof out), 0);
	assert_string_equal(out, "h2");
	assert_int_equal(wpass_find(text, "alice2", out, sizeof out), 0);
	assert_string_equal(out, "h3");
	assert_int_equal(wpass_find(text, "ali", out, sizeof out), -1);
	assert_int_equal(wpass_find(text, "# users", out, sizeof out), -1);
	char *t = wpass_set(text, "bob", "new");
	assert_string_equal(t, "# users\nalice:h1\nbob:new\nalice2:h3");
	free(t);
	t = wpass_set(text, "carol", "h4");
	assert_string_equal(t, "# users\nalice:h1\nbob:h2\r\nalice2:h3\ncarol:h4\n");
	free(t);
	t = wpass_set("", "carol", "h4");
	assert_string_equal(t, "carol:h4\n");
	free(t);
	assert_true(wpass_user_valid("op.alice-1_x"));
	assert_false(wpass_user_valid("a:b"));
	assert_false(wpass_user_valid("a b"));
	assert_false(wpass_user_valid(""));
}

/* ---- whtml, wpage ---- */

static void
test_escape(void **state)
{
	(void)state;
	struct whtml *b = whtml_new();
	size_t len;

	whtml_raw(b, "<p>");
	whtml_text(b, "<script>alert('x')</script> & \"q\"");
	whtml_text(b, NULL);
	whtml_textf(b, " %d<", 5);
	whtml_raw(b, " ");
	whtml_url(b, "a b/c&d=é");
	assert_string_equal(whtml_str(b, &len), "<p>&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; "
	    "&amp; &quot;q&quot; 5&lt; a%20b%2Fc%26d%3D%C3%A9");
	char *s = whtml_take(b, &len);
	assert_int_equal(len, strlen(s));
	free(s);
	assert_string_equal(whtml_str(b, NULL), "");
	whtml_free(b);
	whtml_free(NULL);
}

static char *
render_job(const char *json)
{
	json_t *job = json_loads(json, 0, NULL);
	struct whtml *b = whtml_new();
	struct wpage_who who = {"op<1>", "c5rf", 0};

	assert_non_null(job);
	wpage_job(b, &who, job, NOW);
	json_decref(job);
	char *s = whtml_take(b, NULL);
	whtml_free(b);
	return s;
}

static void
test_job_page(void **state)
{
	(void)state;
	char *s = render_job("{\"id\": \"r-1\", \"state\": {\"state\": \"failed\", \"attempts\": 3,"
	    " \"detail\": \"<img src=x onerror=alert(1)>\"},"
	    " \"record\": {\"recordId\": \"r-1\", \"action\": \"gate.open\","
	    " \"resource\": \"gate/14\", \"expiresAt\": \"2026-11-30T04:00:00Z\"},"
	    " \"audit\": [{\"at\": \"2026-11-29T04:00:00Z\", \"from\": \"queued\", \"to\": \"running\","
	    " \"attempt\": 1, \"consumer\": \"w1\", \"detail\": \"\"}], \"deadLetters\": []}");

	assert_non_null(strstr(s, "<h1>Job <code>r-1</code> <span class=\"badge st-failed\">failed"));
	assert_non_null(strstr(s, "<dt>action</dt><dd>gate.open</dd>"));
	assert_non_null(strstr(s, "<dt>attempts</dt><dd>3</dd>"));
	/* what came from Redis is text, never markup */
	assert_null(strstr(s, "<img"));
	assert_non_null(strstr(s, "&lt;img src=x onerror=alert(1)&gt;"));
	assert_null(strstr(s, "op<1>"));
	assert_non_null(strstr(s, "op&lt;1&gt;"));
	/* NOW is 2026-11-30T00:53:20Z: 3 h 6 min before 04:00 */
	assert_non_null(strstr(s, "3 h left before its deadline"));
	assert_non_null(strstr(s, "<td>queued</td><td>running</td><td>1</td><td>w1</td>"));
	/* the session's CSRF token for the POSTs, and no inline script */
	assert_non_null(strstr(s, "<meta name=\"csrf-token\" content=\"c5rf\">"));
	assert_non_null(strstr(s, "<input type=\"hidden\" name=\"csrf\" value=\"c5rf\">"));
	assert_null(strstr(s, "<script>"));
	assert_null(strstr(s, "style="));
	free(s);
	s = render_job("{\"id\": \"r-2\", \"recordError\": \"bad-signature: no\", \"audit\": []}");
	assert_non_null(strstr(s, "bad-signature: no"));
	assert_non_null(strstr(s, "no state hash"));
	assert_non_null(strstr(s, "no audit entry"));
	free(s);
}

static void
test_jobs_page(void **state)
{
	(void)state;
	struct wroute_jobq q = {.state = "failed", .resource = "gate/14 & co", .page = 1};
	json_t *list = json_loads("{\"jobs\": [{\"id\": \"r-1\", \"state\": \"failed\","
	    " \"action\": \"gate.open\", \"source\": \"audit\"}], \"more\": true}", 0, NULL);
	struct whtml *b = whtml_new();
	struct wpage_who who = {"op", "t", 0};

	wpage_jobs(b, &who, &q, list);
	const char *s = whtml_str(b, NULL);
	assert_non_null(strstr(s, "<a href=\"/job/r-1\">r-1</a>"));
	assert_non_null(strstr(s, "<option value=\"failed\" selected>failed</option>"));
	assert_non_null(strstr(s, "value=\"gate/14 &amp; co\""));
	assert_non_null(strstr(s, "href=\"/jobs?page=0&amp;state=failed&amp;resource=gate%2F14%20%26%20co\""));
	assert_non_null(strstr(s, "href=\"/jobs?page=2&amp;state=failed&amp;resource="));
	json_decref(list);
	whtml_free(b);
}

static void
test_overview_page(void **state)
{
	(void)state;
	json_t *ov = json_loads("{\"streams\": [{\"stream\": \"warrant:jobs\", \"group\": \"workers\","
	    " \"pending\": 7, \"oldestPendingIdleMs\": 65000, \"scheduled\": 2, \"dead\": 1,"
	    " \"notify\": 0, \"alive\": 1, \"consumers\": {\"w1\": {\"alive\": true,"
	    " \"heartbeatAgeMs\": 1200, \"inFlight\": 3, \"tokenState\": \"valid\"}}}],"
	    " \"paused\": {\"gate.open\": \"op at 2026\"}}", 0, NULL);
	struct whtml *b = whtml_new();
	struct wpage_who who = {"op", "t", 0};

	wpage_overview(b, &who, ov);
	const char *s = whtml_str(b, NULL);
	assert_non_null(strstr(s, "data-k=\"0.pending\">7<"));
	assert_non_null(strstr(s, "data-k=\"0.oldestPendingAge\">1 min<"));
	assert_non_null(strstr(s, "data-k=\"0.dead\">1<"));
	assert_non_null(strstr(s, "<td>w1</td><td><span class=\"badge ok\">alive</span></td>"
	    "<td>1.2 s</td><td>3</td>"));
	assert_non_null(strstr(s, "<li><b>gate.open</b> op at 2026</li>"));
	json_decref(ov);
	whtml_free(b);
}

static void
test_age(void **state)
{
	(void)state;
	char buf[32];

	assert_string_equal(wpage_age(0, buf, sizeof buf), "0.0 s");
	assert_string_equal(wpage_age(59999, buf, sizeof buf), "59.9 s");
	assert_string_equal(wpage_age(60000, buf, sizeof buf), "1 min");
	assert_string_equal(wpage_age(7200000, buf, sizeof buf), "2 h");
	assert_string_equal(wpage_age(-3 * 86400000LL, buf, sizeof buf), "-3 d");
}

/* ---- wconf ---- */

static void
test_listen(void **state)
{
	(void)state;
	struct cfg cfg;
	struct wconf w;
	char err[256];

	memset(&cfg, 0, sizeof cfg);
	assert_int_equal(wconf_parse(&cfg, &w, err, sizeof err), -1);
	assert_non_null(strstr(err, "users_file is required"));
	cfg.web.users_file = "u";
	assert_int_equal(wconf_parse(&cfg, &w, err, sizeof err), 0);
	assert_int_equal(w.naddr, 1);	/* the default, 127.0.0.1:8470 */
	assert_false(w.tls);
	assert_true(w.all_loopback);
	cfg.web.listen = " 127.0.0.1:1\t[::1]:2  unix:/run/w.sock ";
	assert_int_equal(wconf_parse(&cfg, &w, err, sizeof err), 0);
	assert_int_equal(w.naddr, 3);
	assert_true(w.addr[2].is_unix);
	/* off loopback: only with TLS */
	cfg.web.listen = "127.0.0.1:1 0.0.0.0:443";
	assert_int_equal(wconf_parse(&cfg, &w, err, sizeof err), -1);
	assert_non_null(strstr(err, "not a loopback address"));
	assert_non_null(strstr(err, "set tls_cert_file and tls_key_file"));
	cfg.web.tls_cert_file = "c";
	assert_int_equal(wconf_parse(&cfg, &w, err, sizeof err), -1);
	assert_non_null(strstr(err, "go together"));
	cfg.web.tls_key_file = "k";
	assert_int_equal(wconf_parse(&cfg, &w, err, sizeof err), 0);
	assert_true(w.tls);
	assert_false(w.all_loopback);
	cfg.web.listen = "1.2.3.4:1 1.2.3.4:2 1.2.3.4:3 1.2.3.4:4 1.2.3.4:5";
	assert_int_equal(wconf_parse(&cfg, &w, err, sizeof err), -1);
	cfg.web.listen = "localhost:80";
	assert_int_equal(wconf_parse(&cfg, &w, err, sizeof err), -1);
	cfg.web.listen = "  ";
	assert_int_equal(wconf_parse(&cfg, &w, err, sizeof err), -1);
}

/* ---- wasset ---- */

/* The generated table holds each file whole: its length is the file's, and
 * a backslash in the JavaScript is still one (scripts/webassets.sh). */
static void
test_assets(void **state)
{
	(void)state;
	const struct wasset *js = wasset_find("console.js"), *css = wasset_find("console.css");

	assert_non_null(js);
	assert_non_null(css);
	assert_null(wasset_find("nope.js"));
	assert_string_equal(js->type, "text/javascript; charset=utf-8");
	assert_int_equal(strlen(js->body), js->len);
	assert_int_equal(strlen(css->body), css->len);
	assert_non_null(strstr(js->body, "'\\u2014'"));
	assert_non_null(strstr(js->body, "/api/overview"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_routes),
		cmocka_unit_test(test_form),
		cmocka_unit_test(test_cookie),
		cmocka_unit_test(test_jobq),
		cmocka_unit_test(test_sessions),
		cmocka_unit_test(test_login_limit),
		cmocka_unit_test(test_pbkdf2_vector),
		cmocka_unit_test(test_users_file),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_job_page),
		cmocka_unit_test(test_jobs_page),
		cmocka_unit_test(test_overview_page),
		cmocka_unit_test(test_age),
		cmocka_unit_test(test_listen),
		cmocka_unit_test(test_assets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
