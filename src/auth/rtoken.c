/* SPDX-License-Identifier: BSD-2-Clause */
/* rtoken: the Redis AUTH password -- a file, an OAuth token or a program's;
 * the token's life is tokhold.h's, the program's run is here. */
#define _GNU_SOURCE		/* pipe2, explicit_bzero */
#include "auth/rtoken.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "auth/oauth.h"
#include "auth/tokhold.h"
#include "conf/secrets.h"
#include "core/token.h"
#include "base/wtime.h"

extern char **environ;

/* After the output ended, how often to look whether the program exited
 * (a loop that is not libev's default one: the default loop reaps every
 * child itself, so there an ev_child watcher hears of the exit). */
#define REAP_POLL_MS	5

struct rtoken {
	struct ev_loop *loop;
	enum cfg_redis_auth mode;

	char *password;		/* password mode: password_file's, or NULL */
	size_t password_len;

	struct oauth *oauth;	/* oauth mode: hold is its holder */
	struct tokhold *hold;	/* the token's life (oauth, command); NULL: password */

	/* command mode: one run of the program at a time (the holder's fetch) */
	char **argv;
	pid_t pid;		/* the program running, or 0 */
	int fd;			/* its stdout, or -1 */
	char *out;		/* what it printed so far (RTOKEN_OUTPUT_MAX) */
	size_t outlen;
	int out_ended, exited, status;
	int64_t run_wall;	/* a JWT exp becomes a lifetime against it */
	ev_io out_io;
	ev_timer deadline;	/* RTOKEN_COMMAND_TIMEOUT_MS for one run */
	ev_timer reap;		/* polls waitpid once the output ended */
	ev_child child;		/* or hears the exit (the default loop) */
};

static void
arm(struct rtoken *rt, ev_timer *t, int64_t delay_ms)
{
	/* from the real now, not the loop's time of waking (as tokhold's) */
	ev_now_update(rt->loop);
	ev_timer_stop(rt->loop, t);
	ev_timer_set(t, delay_ms > 0 ? (double)delay_ms / 1000.0 : 0.0, 0.0);
	ev_timer_start(rt->loop, t);
}

static void
wipe_free(char *s)
{
	if (s != NULL)
		explicit_bzero(s, strlen(s));
	free(s);
}

/* ---- one run of token_command ---- */

/* The run is over (its output read, the program reaped or killed). */
static void
end_run(struct rtoken *rt)
{
	ev_io_stop(rt->loop, &rt->out_io);
	ev_timer_stop(rt->loop, &rt->deadline);
	ev_timer_stop(rt->loop, &rt->reap);
	if (ev_is_active(&rt->child))
		ev_child_stop(rt->loop, &rt->child);
	if (rt->fd >= 0)
		close(rt->fd);
	rt->fd = -1;
	rt->pid = 0;
	if (rt->out != NULL)
		explicit_bzero(rt->out, rt->outlen);
	rt->outlen = 0;
	rt->out_ended = rt->exited = 0;
}

/* Its process group: a wrapper's children go too. Then reaped (SIGKILL
 * cannot be caught, so the wait is short). */
static void
kill_run(struct rtoken *rt)
{
	if (rt->pid > 0 && !rt->exited) {
		(void)kill(-rt->pid, SIGKILL);
		(void)kill(rt->pid, SIGKILL);
		/* ECHILD: libev's SIGCHLD handler reaped it first */
		while (waitpid(rt->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	end_run(rt);
}

/* detail is ours (token_command_parse's, or a status): never the output */
static void
run_failed(struct rtoken *rt, const char *detail)
{
	tokhold_failed(rt->hold, -1, detail, NULL);
}

/* Output ended and the program exited with `status`. */
static void
run_done(struct rtoken *rt, int status)
{
	char detail[200], *tok = NULL;
	long long expires_in;

	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		if (WIFEXITED(status))
			snprintf(detail, sizeof detail, "token_command exited with status %d",
			    WEXITSTATUS(status));
		else
			snprintf(detail, sizeof detail, "token_command died of signal %d",
			    WIFSIGNALED(status) ? WTERMSIG(status) : 0);
		end_run(rt);
		run_failed(rt, detail);
		return;
	}
	int parsed = token_command_parse(rt->out, rt->outlen, &tok, &expires_in, detail,
	    sizeof detail);
	end_run(rt);
	if (parsed != 0) {
		char why[240];
		snprintf(why, sizeof why, "token_command printed garbage: %s", detail);
		run_failed(rt, why);
		return;
	}
	int64_t life = token_lifetime_ms(expires_in, tok, rt->run_wall);
	if (life <= 0) {
		wipe_free(tok);
		run_failed(rt, expires_in < 0 ? "token_command printed no expires_in and the token "
		    "has no exp" : "the token printed has already expired");
		return;
	}
	tokhold_fetched(rt->hold, tok, life);
}

static void
try_reap(struct rtoken *rt)
{
	int status;

	if (ev_is_default_loop(rt->loop)) {
		if (rt->exited)	/* else on_child comes */
			run_done(rt, rt->status);
		return;
	}
	pid_t r = waitpid(rt->pid, &status, WNOHANG);
	if (r == rt->pid) {
		rt->pid = 0;
		run_done(rt, status);
	} else if (r < 0 && errno != EINTR) {
		end_run(rt);
		run_failed(rt, "token_command could not be waited for");
	} else {
		arm(rt, &rt->reap, REAP_POLL_MS);
	}
}

static void
on_out(struct ev_loop *loop, ev_io *w, int revents)
{
	struct rtoken *rt = w->data;
	(void)loop, (void)revents;

	for (;;) {
		char extra;
		size_t room = RTOKEN_OUTPUT_MAX - rt->outlen;
		ssize_t n = room > 0 ? read(rt->fd, rt->out + rt->outlen, room) :
		    read(rt->fd, &extra, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n > 0 && room == 0) {
			kill_run(rt);
			char why[80];
			snprintf(why, sizeof why, "token_command printed more than %d bytes",
			    RTOKEN_OUTPUT_MAX);
			run_failed(rt, why);
			return;
		}
		if (n > 0) {
			rt->outlen += (size_t)n;
			continue;
		}
		break;	/* EOF, or an error: the output ends here */
	}
	ev_io_stop(rt->loop, &rt->out_io);
	rt->out_ended = 1;
	try_reap(rt);
}

static void
on_child(struct ev_loop *loop, ev_child *w, int revents)
{
	struct rtoken *rt = w->data;
	(void)revents;

	ev_child_stop(loop, w);
	rt->exited = 1;
	rt->status = w->rstatus;
	if (rt->out_ended)
		run_done(rt, rt->status);
}

static void
on_reap(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop, (void)revents;
	try_reap(w->data);
}

static void
on_deadline(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct rtoken *rt = w->data;
	char why[80];
	(void)loop, (void)revents;

	kill_run(rt);
	snprintf(why, sizeof why, "token_command did not finish within %d ms (killed)",
	    RTOKEN_COMMAND_TIMEOUT_MS);
	run_failed(rt, why);
}

/* What the helper's environment holds (issue 37 item 4): a fixed PATH and
 * the C locale, plus systemd's directories when the daemon has them (a
 * helper may read a credential of its own); nothing else of the daemon's. */
static const char *const env_passed[] = {
	"CREDENTIALS_DIRECTORY", "RUNTIME_DIRECTORY", "STATE_DIRECTORY", "TZ",
};
#define ENV_MAX	(2 + sizeof env_passed / sizeof env_passed[0] + 1)

/* envp (ENV_MAX slots) and the strings in buf: borrowed from the daemon's
 * own environment, which nothing changes while the daemon runs. */
static void
helper_env(const char *envp[ENV_MAX])
{
	size_t n = 0;

	envp[n++] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	envp[n++] = "LC_ALL=C";
	for (char **e = environ; e != NULL && *e != NULL; e++)
		for (size_t i = 0; i < sizeof env_passed / sizeof env_passed[0]; i++) {
			size_t len = strlen(env_passed[i]);
			if (strncmp(*e, env_passed[i], len) == 0 && (*e)[len] == '=' &&
			    n + 1 < ENV_MAX)
				envp[n++] = *e;
		}
	envp[n] = NULL;
}

/* ---- whether the program may be run ---- */

/* One path of the program's: none of go+w, owned by us or root (the
 * rule of cfgfile and secrets for the config and key files). */
static int
path_trusted(const char *path, const char *what, char *err, size_t errlen)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		snprintf(err, errlen, "token_command: cannot use %s %s: %s", what, path,
		    strerror(errno));
		return -1;
	}
	if ((st.st_mode & 022) != 0) {
		snprintf(err, errlen, "token_command: refusing %s %s: permissions %04o let group "
		    "or others write it, and so choose the Redis token (chmod go-w it)", what, path,
		    (unsigned)(st.st_mode & 07777));
		return -1;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		snprintf(err, errlen, "token_command: refusing %s %s: owned by uid %u, not by "
		    "this user or root", what, path, (unsigned)st.st_uid);
		return -1;
	}
	return 0;
}

/* The directory part of an absolute path into dir (PATH_MAX): "/" for
 * "/x". */
static void
dir_part(const char *path, char dir[PATH_MAX])
{
	const char *slash = strrchr(path, '/');
	size_t n = slash != NULL && slash != path ? (size_t)(slash - path) : 1;

	snprintf(dir, PATH_MAX, "%.*s", (int)n, path);
}

int
rtoken_command_trusted(const char *program, char *err, size_t errlen)
{
	char dir[PATH_MAX], real[PATH_MAX];

	if (path_trusted(program, "the program", err, errlen) < 0)
		return -1;
	dir_part(program, dir);
	if (path_trusted(dir, "the directory of the program", err, errlen) < 0)
		return -1;
	if (realpath(program, real) == NULL) {
		snprintf(err, errlen, "token_command: cannot use the program %s: %s", program,
		    strerror(errno));
		return -1;
	}
	if (strcmp(real, program) == 0)
		return 0;
	dir_part(real, dir);
	return path_trusted(real, "the program", err, errlen) < 0 ||
	    path_trusted(dir, "the directory of the program", err, errlen) < 0 ? -1 : 0;
}

int
rtoken_check_cfg(const struct cfg *cfg, struct cfg_errors *errs)
{
	char err[PATH_MAX + 256];
	char **argv;
	int rc;

	if (cfg->redis.auth != CFG_REDIS_COMMAND || cfg->redis.token_command == NULL)
		return 0;
	if ((argv = token_command_argv(cfg->redis.token_command, err, sizeof err)) == NULL)
		rc = -1;
	else
		rc = rtoken_command_trusted(argv[0], err, sizeof err);
	token_command_argv_free(argv);
	if (rc < 0)
		(void)cfg_errors_add(errs, cfg->path, cfg_line_of(cfg, "redis", "token_command"),
		    "%s", err);
	return rc;
}

/* posix_spawn, not fork: the daemon has threads (curl, the verifiers).
 * stdin is /dev/null, stdout a pipe, stderr the daemon's (the journal); every
 * other descriptor is closed in the child whatever its close-on-exec flag (a
 * Redis connection the helper inherited could be written to), and the
 * environment is helper_env's. Its own process group, so that a timeout
 * stops everything it started. */
static int
spawn(struct rtoken *rt, char *why, size_t whylen)
{
	int p[2];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	pid_t pid;

	if (rtoken_command_trusted(rt->argv[0], why, whylen) < 0)
		return -1;
	if (pipe2(p, O_CLOEXEC) < 0) {
		snprintf(why, whylen, "pipe: %s", strerror(errno));
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	posix_spawnattr_setpgroup(&at, 0);
	sigset_t none;
	sigemptyset(&none);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
	const char *envp[ENV_MAX];
	helper_env(envp);
	int e = posix_spawn(&pid, rt->argv[0], &fa, &at, rt->argv, (char *const *)envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(p[1]);
	if (e != 0) {
		close(p[0]);
		snprintf(why, whylen, "cannot run token_command: %s", strerror(e));
		return -1;
	}
	(void)fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
	rt->pid = pid;
	rt->fd = p[0];
	return 0;
}

/* tokhold_ops.fetch: one run of token_command. */
static int
src_fetch(void *arg, int64_t *sent_mono_ms, char *why, size_t whylen)
{
	struct rtoken *rt = arg;
	int64_t mono = wtime_mono_ms();

	rt->run_wall = wtime_now_ms();
	if (spawn(rt, why, whylen) < 0)
		return -1;
	ev_io_set(&rt->out_io, rt->fd, EV_READ);
	ev_io_start(rt->loop, &rt->out_io);
	if (ev_is_default_loop(rt->loop)) {
		ev_child_set(&rt->child, rt->pid, 0);
		ev_child_start(rt->loop, &rt->child);
	}
	arm(rt, &rt->deadline, RTOKEN_COMMAND_TIMEOUT_MS);
	*sent_mono_ms = mono;
	return 0;
}

/* tokhold_ops.cancel */
static void
src_cancel(void *arg)
{
	kill_run(arg);
}

static const struct tokhold_ops command_ops = {
	.fetch = src_fetch, .cancel = src_cancel, .source = "command", .start_fail_status = -1,
	.ev_request = "redis.token_request", .ev_refreshed = "redis.token_refreshed",
	.ev_error = "redis.token_error", .ev_expired = "redis.token_expired",
	.ev_refused = "redis.token_refused", .ev_short = "redis.token_short",
};

/* ---- public ---- */

static void
init_timer(struct rtoken *rt, ev_timer *t, void (*cb)(struct ev_loop *, ev_timer *, int))
{
	ev_init(t, cb);
	t->data = rt;
}

/* [redis] auth = command: the program split and checked, and its holder. */
static int
command_new(struct rtoken *rt, const struct cfg *cfg, long lead_ms, char *err, size_t errlen)
{
	struct tokhold_params p = {cfg->oauth.refresh_ratio, cfg->oauth.min_refresh_interval_ms,
	    lead_ms};

	if ((rt->argv = token_command_argv(cfg->redis.token_command, err, errlen)) == NULL)
		return -1;
	if ((rt->out = malloc(RTOKEN_OUTPUT_MAX)) == NULL ||
	    (rt->hold = tokhold_new(rt->loop, &command_ops, rt, &p)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return rtoken_command_trusted(rt->argv[0], err, errlen);
}

struct rtoken *
rtoken_new(struct ev_loop *loop, struct http_client *http, const struct cfg *cfg, long lead_ms,
	   char *err, size_t errlen)
{
	struct rtoken *rt = calloc(1, sizeof *rt);

	if (rt == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	rt->loop = loop;
	rt->mode = cfg->redis.auth;
	rt->fd = -1;
	ev_io_init(&rt->out_io, on_out, -1, EV_READ);
	rt->out_io.data = rt;
	init_timer(rt, &rt->deadline, on_deadline);
	init_timer(rt, &rt->reap, on_reap);
	ev_child_init(&rt->child, on_child, 0, 0);
	rt->child.data = rt;
	switch (rt->mode) {
	case CFG_REDIS_PASSWORD:
		if (cfg->redis.password_file && secrets_read_cfg(cfg, cfg->redis.password_file,
		    SECRETS_TRIMMED, &rt->password, &rt->password_len, err, errlen) < 0)
			goto fail;
		break;
	case CFG_REDIS_OAUTH: {
		/* a Redis AUTH password carries no DPoP proof: a bearer token */
		struct oauth_scope sc = {.scope = cfg->redis.token_scope,
		    .resource = cfg->redis.token_resource, .bearer_only = 1};
		if ((rt->oauth = oauth_new_scoped(loop, http, cfg, &sc, err, errlen)) == NULL)
			goto fail;
		oauth_set_refresh_lead(rt->oauth, lead_ms);
		rt->hold = oauth_holder(rt->oauth);
		break;
	}
	case CFG_REDIS_COMMAND:
		if (command_new(rt, cfg, lead_ms, err, errlen) < 0)
			goto fail;
		break;
	}
	return rt;
fail:
	rtoken_free(rt);
	return NULL;
}

void
rtoken_free(struct rtoken *rt)
{
	if (rt == NULL)
		return;
	if (rt->oauth != NULL)
		oauth_free(rt->oauth);	/* and its holder */
	else
		tokhold_free(rt->hold);	/* stops the run in flight */
	kill_run(rt);
	if (rt->password != NULL)
		secrets_free(rt->password, rt->password_len);
	token_command_argv_free(rt->argv);
	free(rt->out);
	free(rt);
}

void
rtoken_start(struct rtoken *rt)
{
	if (rt->hold != NULL)
		tokhold_start(rt->hold);
}

int
rtoken_is_static(const struct rtoken *rt)
{
	return rt->mode == CFG_REDIS_PASSWORD;
}

const char *
rtoken_secret(const struct rtoken *rt, int64_t now_ms)
{
	if (rt->hold == NULL)
		return rt->password;
	/* a token lives until its very end for AUTH: no action's margin */
	return tokhold_token(rt->hold, now_ms, -TOKEN_SAFETY_MS);
}

int64_t
rtoken_expires_at_ms(const struct rtoken *rt)
{
	return rt->hold != NULL ? tokhold_expires_at_ms(rt->hold) : 0;
}

const char *
rtoken_state_name(const struct rtoken *rt)
{
	return rt->hold != NULL ? tokhold_state_name(rt->hold) : "valid";
}

long long
rtoken_refreshes(const struct rtoken *rt)
{
	return rt->hold != NULL ? tokhold_refreshes(rt->hold) : 0;
}

uint64_t
rtoken_generation(const struct rtoken *rt)
{
	return rt->hold != NULL ? tokhold_generation(rt->hold) : 0;
}

void
rtoken_set_listener(struct rtoken *rt, rtoken_listener *cb, void *arg)
{
	if (rt->hold != NULL)
		tokhold_set_listener(rt->hold, cb, arg);
}

void
rtoken_refused(struct rtoken *rt, uint64_t gen)
{
	if (rt->hold != NULL)
		tokhold_refused(rt->hold, gen);
}

static void
on_wake(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop, (void)w, (void)revents;	/* only wakes the loop up */
}

int
rtoken_fetch_once(const struct cfg *cfg, long timeout_ms, char **secret, size_t *len, char *err,
		  size_t errlen)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct http_client *http = loop ? http_client_new(loop) : NULL;
	struct rtoken *rt = NULL;
	ev_timer wake;
	int rc = -1;

	*secret = NULL;
	*len = 0;
	if (http == NULL) {
		snprintf(err, errlen, "cannot set up an event loop");
		goto done;
	}
	if ((rt = rtoken_new(loop, http, cfg, 0, err, errlen)) == NULL)
		goto done;
	ev_timer_init(&wake, on_wake, 0.05, 0.05);
	ev_timer_start(loop, &wake);
	rtoken_start(rt);
	for (int64_t end = wtime_mono_ms() + timeout_ms;;) {
		int64_t now = wtime_mono_ms();
		const char *s = rtoken_secret(rt, now);
		if (s != NULL || rtoken_is_static(rt)) {
			if (s != NULL && (*secret = strdup(s)) == NULL) {
				snprintf(err, errlen, "out of memory");
				break;
			}
			*len = s != NULL ? strlen(s) : 0;
			rc = 0;
			break;
		}
		if (strcmp(rtoken_state_name(rt), "error") == 0 || now >= end) {
			const char *why = tokhold_last_error(rt->hold);
			snprintf(err, errlen, "no token for Redis: %s", why[0] ? why :
			    now >= end ? "timed out" : "the IdP did not issue one");
			break;
		}
		ev_run(loop, EVRUN_ONCE);
	}
	ev_timer_stop(loop, &wake);
done:
	rtoken_free(rt);
	http_client_free(http);
	if (loop != NULL)
		ev_loop_destroy(loop);
	return rc;
}
