/* SPDX-License-Identifier: BSD-2-Clause */
/* world: redis, the fakes and restartable workers for the fault tools. */
#define _DEFAULT_SOURCE
#include "world.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CLIENT_SECRET	"faults-S3cr3t"
#define TERM_WAIT_MS	30000

uint64_t
w_rand(struct w_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

long
w_between(struct w_rng *r, long lo, long hi)
{
	return hi <= lo ? lo : lo + (long)(w_rand(r) % (uint64_t)(hi - lo + 1));
}

void
w_pause_ms(long ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (ms % 1000) * 1000000L };

	while (ms > 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

long long
w_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
w_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

/* ---- the world ---- */

int
w_up(struct world *w, int token_life_s, int check_tokens)
{
	char life[16];
	const char *hs = h_data("test-hs256.secret");

	memset(w, 0, sizeof *w);
	snprintf(life, sizeof life, "%d", token_life_s);
	if ((w->secret_path = h_write_file("faults-client-secret", CLIENT_SECRET "\n")) == NULL)
		return -1;
	char rlife[16];
	snprintf(rlife, sizeof rlife, "%d", W_REDIS_TOKEN_S);
	const char *idp_args[] = { "--jwt-secret-file", hs, "--client-id", W_CLIENT_ID,
	    "--client-secret-file", w->secret_path, "--lifetime-s", life,
	    "--redis-scope", W_REDIS_SCOPE, "--redis-lifetime-s", rlife, NULL };
	const char *target_args[] = { "--jwt-secret-file", hs, NULL };
	if (h_redis_start(&w->redis, 1) != 0 || w_rc(w) == NULL ||
	    h_fake_start(&w->idp, "fake_idp", idp_args) != 0 ||
	    h_fake_start(&w->pdp, "fake_pdp", NULL) != 0 ||
	    h_fake_start(&w->target, "fake_target", check_tokens ? target_args : NULL) != 0)
		return -1;
	return 0;
}

void
w_down(struct world *w)
{
	for (int i = 0; i < w->nworkers; i++)
		w_kill(w, i);
	if (w->rc != NULL)
		redisFree(w->rc);
	w->rc = NULL;
	h_fake_stop(&w->target);
	if (w->gated)
		h_fake_stop(&w->gate);
	h_fake_stop(&w->pdp);
	h_fake_stop(&w->idp);
	if (w->redis.pid > 0)
		kill(w->redis.pid, SIGCONT);	/* a frozen redis cannot take SIGTERM */
	h_redis_stop(&w->redis);
	for (int k = 0; k < w->ninc; k++)
		free(w->incs[k].text);
	free(w->secret_path);
	memset(w, 0, sizeof *w);
}

redisContext *
w_rc(struct world *w)
{
	if (w->rc != NULL && w->rc->err == 0)
		return w->rc;
	if (w->rc != NULL)
		redisFree(w->rc);
	w->rc = h_redis_connect(&w->redis);
	return w->rc;
}

void
w_reconnect(struct world *w)
{
	if (w->rc != NULL)
		redisFree(w->rc);
	w->rc = NULL;
}

int
w_gate_up(struct world *w, const char *on_expiry)
{
	const char *args[] = { "--upstream-socket", w->redis.sock, "--on-expiry", on_expiry, NULL };

	if (h_fake_start(&w->gate, "fake_redisgate", args) != 0)
		return -1;
	w->gated = 1;
	return 0;
}

int
w_gate_revoke(struct world *w)
{
	redisContext *g = w->gated ? h_redis_connect_tcp(w->gate.port) : NULL;
	char *ok = g ? h_redis_str(g, "GATE.REVOKE") : NULL;
	int rc = ok != NULL && strcmp(ok, "OK") == 0 ? 0 : -1;

	free(ok);
	if (g != NULL)
		redisFree(g);
	return rc;
}

/* ---- workers ---- */

int
w_add_worker(struct world *w, const char *consumer, const struct w_params *p)
{
	if (w->nworkers >= W_MAX_WORKERS)
		return -1;
	struct w_worker *k = &w->w[w->nworkers];
	snprintf(k->consumer, sizeof k->consumer, "%s", consumer);
	k->p = *p;
	k->inc = -1;
	return w->nworkers++;
}

#define OR(v, d) ((v) ? (v) : (d))

/* The INI text with redis' socket line replaced by `by`; text is freed.
 * NULL when out of memory or without the socket line. */
static char *
socket_replaced(struct world *w, char *text, const char *by)
{
	char sock[300];

	snprintf(sock, sizeof sock, "socket = %s\n", w->redis.sock);
	char *at = strstr(text, sock);
	char *t = at ? malloc(strlen(text) - strlen(sock) + strlen(by) + 1) : NULL;
	if (t != NULL)
		sprintf(t, "%.*s%s%s", (int)(at - text), text, by, at + strlen(sock));
	free(text);
	return t;
}

/* The INI text with redis' socket replaced by the gate's TCP address. */
static char *
through_gate(struct world *w, char *text)
{
	char tcp[64];

	snprintf(tcp, sizeof tcp, "host = 127.0.0.1\nport = %d\n", w->gate.port);
	return socket_replaced(w, text, tcp);
}

char *
w_ini(struct world *w, int i)
{
	const struct w_params *p = &w->w[i].p;
	char daemon[64], redis[1024], action[64], sections[2048], gate[256] = "";
	int n = 0;

	snprintf(daemon, sizeof daemon, "max_in_flight = %d\n", OR(p->max_in_flight, 16));
	if (w->gated)	/* the token's user: the principal's object id, as Azure's */
		snprintf(gate, sizeof gate, "auth = oauth\nusername = "
		    "00000000-0000-0000-0000-00000000fa17\ntoken_scope = " W_REDIS_SCOPE "\n");
	if (p->lease_renew_ms)
		snprintf(redis, sizeof redis, "lease_renew_ms = %d\n%s%s", p->lease_renew_ms,
		    OR(p->redis_extra, ""), gate);
	else
		snprintf(redis, sizeof redis, "%s%s", OR(p->redis_extra, ""), gate);
	snprintf(action, sizeof action, "[action %s]\n", OR(p->action_name, "gate.open"));
	sections[0] = '\0';
	if (p->oauth)
		n += snprintf(sections + n, sizeof sections - (size_t)n,
		    "[oauth]\ntoken_url = %s/token\nclient_id = %s\nclient_secret_file = %s\n%s",
		    w->idp.url, W_CLIENT_ID, w->secret_path, OR(p->oauth_extra, ""));
	if (p->authz)
		snprintf(sections + n, sizeof sections - (size_t)n,
		    "[authz]\nurl = %s" W_PDP_PATH "\ntimeout_ms = 1000\n", w->pdp.url);
	struct h_daemon_opts o = {
		.redis_sock = w->redis.sock, .target_url = w->target.url,
		.consumer = w->w[i].consumer, .heartbeat_ms = p->heartbeat_ms,
		.shutdown_grace_ms = p->grace_ms, .claim_interval_ms = p->claim_interval_ms,
		.claim_idle_ms = p->claim_idle_ms, .block_ms = p->block_ms,
		.max_deliveries = p->max_deliveries, .base_ms = p->base_ms, .cap_ms = p->cap_ms,
		.max_attempts = p->max_attempts, .action_auth = p->oauth ? "oauth" : "none",
		.action_timeout_ms = p->action_timeout_ms, .daemon_extra = daemon,
		.redis_extra = redis, .sections = sections,
	};
	char *text = h_daemon_ini(&o);
	/* h_daemon_ini always names its action gate.open. */
	char *at = text && p->action_name ? strstr(text, "[action gate.open]\n") : NULL;
	if (at != NULL) {
		size_t head = (size_t)(at - text), old = strlen("[action gate.open]\n");
		char *t = malloc(strlen(text) - old + strlen(action) + 1);
		if (t != NULL)
			sprintf(t, "%.*s%s%s", (int)head, text, action, at + old);
		free(text);
		text = t;
	}
	if (text != NULL && p->redis_at != NULL)
		return socket_replaced(w, text, p->redis_at);
	return w->gated && text ? through_gate(w, text) : text;
}

static int
new_inc(struct world *w, int i)
{
	if (w->ninc >= W_MAX_INC)
		return -1;
	struct w_inc *c = &w->incs[w->ninc];
	memset(c, 0, sizeof *c);
	c->worker = i;
	c->start_ms = h_now_ms();
	memcpy(c->log, w->w[i].d.log, sizeof c->log);	/* both char[256] */
	w->w[i].inc = w->ninc;
	return w->ninc++;
}

static void
end_inc(struct world *w, int i, enum w_end how, int status)
{
	int k = w->w[i].inc;

	if (k < 0 || w->incs[k].end != W_RUNNING)
		return;
	w->incs[k].end = how;
	w->incs[k].end_ms = h_now_ms();
	w->incs[k].exit_status = status;
	w->incs[k].text = h_read_file(w->incs[k].log);
}

int
w_start(struct world *w, int i)
{
	char *text = w_ini(w, i);
	int r = text ? h_daemon_start(&w->w[i].d, text) : -1;

	free(text);
	/* Counted even when it did not get ready: it may have worked a while. */
	if (w->w[i].d.log[0] != '\0' && new_inc(w, i) < 0)
		return -1;
	if (r != 0)
		end_inc(w, i, W_KILLED, -1);
	return r;
}

void
w_kill(struct world *w, int i)
{
	if (w->w[i].d.pid <= 0)
		return;
	h_daemon_kill(&w->w[i].d);
	end_inc(w, i, W_KILLED, -1);
}

int
w_term(struct world *w, int i)
{
	struct h_daemon *d = &w->w[i].d;
	int st = -1;

	if (d->pid <= 0)
		return -1;
	kill(d->pid, SIGTERM);
	if (h_wait_exit(d->pid, TERM_WAIT_MS, &st) != 0) {
		h_daemon_kill(d);
		end_inc(w, i, W_TERM_KILLED, -1);
		return -1;
	}
	d->pid = 0;
	end_inc(w, i, W_TERMINATED, st);
	return st;
}

int
w_running(const struct world *w, int i)
{
	return w->w[i].d.pid > 0;
}

int
w_reload(struct world *w, int i)
{
	char tmp[300];
	char *text = w_ini(w, i);
	FILE *f;
	int ok;

	if (text == NULL)
		return -1;
	snprintf(tmp, sizeof tmp, "%s.new", w->w[i].d.ini);
	/* Renamed into place: the daemon never reads half a file. */
	ok = (f = fopen(tmp, "w")) != NULL;
	ok = ok && fputs(text, f) >= 0;
	ok = (f != NULL && fclose(f) == 0) && ok;
	ok = ok && rename(tmp, w->w[i].d.ini) == 0;
	free(text);
	return ok && w->w[i].d.pid > 0 && kill(w->w[i].d.pid, SIGHUP) == 0 ? 0 : -1;
}

const char *
w_inc_log(struct world *w, int k)
{
	static char *live;

	if (w->incs[k].text != NULL)
		return w->incs[k].text;
	free(live);
	live = h_read_file(w->incs[k].log);
	return live ? live : "";
}

/* ---- records and redis ---- */

int
w_enqueue(struct world *w, const char *id, const char *resource, long long expires_ms)
{
	long long now = h_now_ms();
	char *json = h_record_json(id, "gate.open", resource, now - 1000, expires_ms, 0,
	    "owner:faults");
	int r = -1;

	/* A second try on a fresh connection: the last one may have died with
	 * a restarted redis-server (both writes are idempotent). */
	for (int tries = 0; r != 0 && tries < 2 && json != NULL; tries++) {
		if (tries > 0)
			w_reconnect(w);
		redisContext *c = w_rc(w);
		r = c != NULL ? h_decide(c, W_PREFIX, id, json, 1) : -1;
	}
	free(json);
	return r;
}

char *
w_state(struct world *w, const char *id)
{
	char key[128];
	redisContext *c = w_rc(w);

	snprintf(key, sizeof key, W_PREFIX ":decision:%s", id);
	return c ? h_hget(c, key, "state") : NULL;
}

int
w_terminal(const char *s)
{
	static const char *const t[] = { "done", "expired", "denied", "failed", "dead" };

	for (size_t i = 0; s != NULL && i < sizeof t / sizeof t[0]; i++)
		if (strcmp(s, t[i]) == 0)
			return 1;
	return 0;
}

int
w_states(struct world *w, char *const ids[], int n, char **out)
{
	redisContext *c = w_rc(w);
	int ok = c != NULL;

	for (int i = 0; ok && i < n; i++)
		ok = redisAppendCommand(c, "HGET " W_PREFIX ":decision:%s state", ids[i]) == REDIS_OK;
	for (int i = 0; i < n; i++) {
		redisReply *rep = NULL;
		out[i] = NULL;
		if (ok && (ok = redisGetReply(c, (void **)&rep) == REDIS_OK) &&
		    rep->type == REDIS_REPLY_STRING)
			out[i] = strdup(rep->str);
		freeReplyObject(rep);
	}
	return ok ? 0 : -1;
}

long long
w_pending(struct world *w)
{
	redisContext *c = w_rc(w);

	return c ? h_pending_count(c, W_JOBS, W_GROUP) : -1;
}

long long
w_pending_of(struct world *w, const char *consumer)
{
	redisContext *c = w_rc(w);

	return c ? h_pending_of(c, W_JOBS, W_GROUP, consumer) : -1;
}

long long
w_cmd_calls(struct world *w, const char *cmd)
{
	redisContext *c = w_rc(w);
	char *info = c ? h_redis_str(c, "INFO commandstats") : NULL;
	char needle[64];
	long long n = 0;

	snprintf(needle, sizeof needle, "cmdstat_%s:calls=", cmd);
	const char *at = info ? strstr(info, needle) : NULL;
	if (at != NULL)
		n = strtoll(at + strlen(needle), NULL, 10);
	/* Rejected and failed calls were sent too: a busy loop shows there. */
	for (const char *f = at; f != NULL && (f = strpbrk(f, ",\r\n")) && *f == ','; f++)
		if (strncmp(f, ",rejected_calls=", 16) == 0 || strncmp(f, ",failed_calls=", 14) == 0)
			n += strtoll(strchr(f, '=') + 1, NULL, 10);
	free(info);
	return info == NULL ? -1 : n;
}

long long
w_hb_int(struct world *w, const char *consumer, const char *field)
{
	char key[128];
	redisContext *c = w_rc(w);
	char *v;
	long long n;

	snprintf(key, sizeof key, W_PREFIX ":consumer:%s", consumer);
	v = c ? h_hget(c, key, field) : NULL;
	n = v ? strtoll(v, NULL, 10) : -1;
	free(v);
	return n;
}

/* ---- fakes ---- */

long long
w_fake_stat(const struct h_fake *f, const char *field)
{
	json_t *s = h_fake_json(f, "/_stats");
	json_t *v = json_object_get(s, field);
	long long n = json_is_integer(v) ? (long long)json_integer_value(v) : -1;

	json_decref(s);
	return n;
}

int
w_post(const struct h_fake *f, const char *path, const char *body)
{
	return h_fake_post(f, path, body) == 200 ? 0 : -1;
}

long long
w_target_ok(const struct world *w, const char *key)
{
	json_t *all = h_fake_json(&w->target, "/_requests"), *r;
	long long n = 0;
	size_t i;

	json_array_foreach(all, i, r) {
		const char *k = json_string_value(json_object_get(r, "idempotency_key"));
		json_int_t st = json_integer_value(json_object_get(r, "status"));
		if (k != NULL && strcmp(k, key) == 0 && st >= 200 && st < 300)
			n++;
	}
	json_decref(all);
	return n;
}

/* ---- configuration check ---- */

int
w_config_ok(const char *text)
{
	static int seq;
	char name[64], out[512];
	int st = -1;

	snprintf(name, sizeof name, "faults-check-%d.ini", ++seq);
	snprintf(out, sizeof out, "%s/faults-check-%d.out", h_tmpdir(), seq);
	char *path = h_write_file(name, text);
	if (path == NULL)
		return 0;
	char *argv[] = { (char *)h_bin("warrantd"), (char *)"-t", (char *)"-c", path, NULL };
	pid_t pid = h_spawn(out, argv);
	int ok = pid > 0 && h_wait_exit(pid, 10000, &st) == 0 && WIFEXITED(st) &&
	    WEXITSTATUS(st) == 0;
	free(path);
	return ok;
}
