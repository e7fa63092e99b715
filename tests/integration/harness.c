/* harness: processes, redis, fakes and HTTP for the integration tests. */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE
#include "harness.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define MAX_CHILDREN	64
#define MAX_PATHS	128
#define START_TIMEOUT_MS 10000
#define STOP_TIMEOUT_MS	5000

/*
 * The registry is read by the signal handler, so it is a fixed array of
 * plain words. `owner` keeps a forked test process from killing (or reaping)
 * its parent's children.
 */
static volatile pid_t child_pid[MAX_CHILDREN];
static volatile pid_t child_owner[MAX_CHILDREN];
static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;

static pthread_once_t cleanup_once = PTHREAD_ONCE_INIT;
static pthread_once_t tmpdir_once = PTHREAD_ONCE_INIT;
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static char tmpdir[64];
static pid_t tmpdir_owner;

static pthread_mutex_t paths_mu = PTHREAD_MUTEX_INITIALIZER;
static char *paths[MAX_PATHS];

static int
msleep(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	return nanosleep(&ts, NULL);
}

static long long
mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Async-signal-safe: runs from the signal handler too. */
static void
kill_children(void)
{
	pid_t self = getpid();

	for (int i = 0; i < MAX_CHILDREN; i++) {
		pid_t pid = child_pid[i];
		if (pid <= 0 || child_owner[i] != self)
			continue;
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		child_pid[i] = 0;
	}
}

static int
register_child(pid_t pid)
{
	int ret = -1;

	pthread_mutex_lock(&registry_mu);
	for (int i = 0; i < MAX_CHILDREN && ret != 0; i++)
		if (child_pid[i] == 0) {
			child_owner[i] = getpid();
			child_pid[i] = pid;
			ret = 0;
		}
	pthread_mutex_unlock(&registry_mu);
	return ret;
}

static void
unregister_child(pid_t pid)
{
	pthread_mutex_lock(&registry_mu);
	for (int i = 0; i < MAX_CHILDREN; i++)
		if (child_pid[i] == pid && child_owner[i] == getpid())
			child_pid[i] = 0;
	pthread_mutex_unlock(&registry_mu);
}

static int
remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	remove(path);
	return 0;
}

/* Children first: redis may still be writing into the temp dir. */
static void
cleanup_at_exit(void)
{
	kill_children();
	if (tmpdir[0] != '\0' && tmpdir_owner == getpid()) {
		if (getenv("WARRANTD_KEEP_TMP") != NULL)
			fprintf(stderr, "harness: kept %s\n", tmpdir);
		else
			nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	}
	for (int i = 0; i < MAX_PATHS; i++) {
		free(paths[i]);
		paths[i] = NULL;
	}
}

static void
on_fatal_signal(int sig)
{
	kill_children();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void
install_cleanup(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGABRT };
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_fatal_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		sigaction(sigs[i], &sa, NULL);
	atexit(cleanup_at_exit);
}

static void
make_tmpdir(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/warrantd-itest-XXXXXX");
	if (mkdtemp(tmpdir) == NULL) {
		perror("harness: mkdtemp");
		abort();
	}
	tmpdir_owner = getpid();
}

const char *
h_tmpdir(void)
{
	pthread_once(&cleanup_once, install_cleanup);
	pthread_once(&tmpdir_once, make_tmpdir);
	return tmpdir;
}

/* Interned, so the returned pointer stays valid however often it is asked. */
static const char *
intern(const char *s)
{
	const char *found = NULL;

	pthread_once(&cleanup_once, install_cleanup);
	pthread_mutex_lock(&paths_mu);
	for (int i = 0; i < MAX_PATHS && found == NULL; i++) {
		if (paths[i] == NULL && (paths[i] = strdup(s)) == NULL)
			break;
		if (strcmp(paths[i], s) == 0)
			found = paths[i];
	}
	pthread_mutex_unlock(&paths_mu);
	if (found == NULL) {
		fprintf(stderr, "harness: path table full or out of memory\n");
		abort();
	}
	return found;
}

static const char *
dir_file(const char *env, const char *def, const char *name)
{
	const char *dir = getenv(env);
	char buf[4096];

	snprintf(buf, sizeof buf, "%s/%s", dir && *dir ? dir : def, name);
	return intern(buf);
}

const char *
h_bin(const char *name)
{
	return dir_file("WARRANTD_BIN_DIR", "build/release/bin", name);
}

const char *
h_testbin(const char *name)
{
	return dir_file("WARRANTD_TEST_DIR", "build/release/tests", name);
}

/* Between fork and exec: async-signal-safe calls only. */
static void
exec_child(int in, int out, pid_t parent, char *const argv[])
{
	static const char msg[] = "harness: exec failed\n";
	sigset_t none;

	setpgid(0, 0);
#ifdef __linux__
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
#else
	(void)parent;
#endif
	/* An ignored signal stays ignored across exec; the child gets defaults. */
	signal(SIGPIPE, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (dup2(in, STDIN_FILENO) < 0 || dup2(out, STDOUT_FILENO) < 0 ||
	    dup2(out, STDERR_FILENO) < 0)
		_exit(127);
	execv(argv[0], argv);
	if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0)
		_exit(127);
	_exit(127);
}

pid_t
h_spawn(const char *log_path, char *const argv[])
{
	sigset_t fatal, old;
	pid_t pid, parent = getpid();
	int out, in;

	pthread_once(&cleanup_once, install_cleanup);
	if ((out = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)) < 0)
		return -1;
	if ((in = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		close(out);
		return -1;
	}
	/* A signal between fork and registration would orphan the child. */
	sigemptyset(&fatal);
	sigaddset(&fatal, SIGINT);
	sigaddset(&fatal, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &fatal, &old);
	pid = fork();
	if (pid == 0)
		exec_child(in, out, parent, argv);
	if (pid > 0) {
		setpgid(pid, pid);	/* also here: no race with the first kill(-pid) */
		if (register_child(pid) != 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			pid = -1;
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(in);
	close(out);
	return pid;
}

/*
 * 1 when pid has exited and is reaped, 0 while it runs, -1 when it is not our
 * child. The rest of its group is killed before the zombie is reaped, while
 * the group id cannot yet be taken by a new process.
 */
static int
try_reap(pid_t pid, int *status)
{
	siginfo_t si;
	int st;

	memset(&si, 0, sizeof si);
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0)
		return errno == EINTR ? 0 : -1;
	if (si.si_pid == 0)
		return 0;
	kill(-pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	unregister_child(pid);
	if (status != NULL)
		*status = st;
	return 1;
}

static int
wait_exit(pid_t pid, int timeout_ms, int *status)
{
	long long deadline = mono_ms() + timeout_ms;
	int r;

	while ((r = try_reap(pid, status)) == 0 && mono_ms() < deadline)
		msleep(10);
	return r;
}

int
h_wait_exit(pid_t pid, int timeout_ms, int *status)
{
	return pid > 0 && wait_exit(pid, timeout_ms, status) == 1 ? 0 : -1;
}

int
h_stop(pid_t pid, int sig, int timeout_ms)
{
	int status, r;

	if (pid <= 0)
		return -1;
	kill(pid, sig);
	if ((r = wait_exit(pid, timeout_ms, &status)) == 0) {
		fprintf(stderr, "harness: pid %d ignored signal %d for %d ms, killing\n",
		    (int)pid, sig, timeout_ms);
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		r = wait_exit(pid, STOP_TIMEOUT_MS, &status);
	}
	return r == 1 ? status : -1;
}

/* Still running (or exited but not yet reaped)? */
static int
exited(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof si);
	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid != 0;
}

int
h_wait_until(int (*cond)(void *arg), void *arg, int timeout_ms)
{
	long long deadline = mono_ms() + timeout_ms;

	for (;;) {
		if (cond(arg))
			return 0;
		if (mono_ms() >= deadline)
			return -1;
		msleep(10);
	}
}

/* ---- redis ---- */

static const char *
redis_server_path(void)
{
	const char *env = getenv("WARRANTD_REDIS_SERVER");

	if (env != NULL && *env)
		return env;
	return access("/usr/bin/redis-server", X_OK) == 0 ? "/usr/bin/redis-server" :
	    "/usr/local/bin/redis-server";
}

static int
redis_pong(const char *sock)
{
	struct timeval tv = { 1, 0 };
	redisContext *c = redisConnectUnixWithTimeout(sock, tv);
	int ok = 0;

	if (c != NULL && !c->err) {
		redisReply *rep = redisCommand(c, "PING");
		ok = rep != NULL && rep->type == REDIS_REPLY_STATUS && strcmp(rep->str, "PONG") == 0;
		freeReplyObject(rep);
	}
	redisFree(c);
	return ok;
}

static int
redis_ready_or_dead(void *arg)
{
	const struct h_redis *r = arg;
	return exited(r->pid) || redis_pong(r->sock);
}

/* Starts redis-server on r->dir/redis.conf and waits for PONG. */
static int
redis_launch(struct h_redis *r)
{
	char conf[512], out[512];
	char *argv[] = { (char *)redis_server_path(), conf, NULL };

	snprintf(conf, sizeof conf, "%s/redis.conf", r->dir);
	snprintf(out, sizeof out, "%s/redis.stdout", r->dir);
	unlink(r->sock);
	if ((r->pid = h_spawn(out, argv)) < 0)
		return -1;
	if (h_wait_until(redis_ready_or_dead, r, START_TIMEOUT_MS) == 0 && !exited(r->pid))
		return 0;
	fprintf(stderr, "harness: redis-server did not answer PING; see %s/redis.log\n", r->dir);
	h_stop(r->pid, SIGKILL, STOP_TIMEOUT_MS);
	r->pid = 0;
	return -1;
}

int
h_redis_start(struct h_redis *r, int appendonly)
{
	static int seq;
	char name[64], conf[2048];

	memset(r, 0, sizeof *r);
	snprintf(r->dir, sizeof r->dir, "%s/redis-%d", h_tmpdir(),
	    __atomic_add_fetch(&seq, 1, __ATOMIC_SEQ_CST));
	snprintf(r->sock, sizeof r->sock, "%.200s/redis.sock", r->dir);
	if (mkdir(r->dir, 0700) != 0)
		return -1;
	/*
	 * Kept in a file so that a restart reuses exactly the same settings.
	 * appendfsync no: redis then writes the AOF before every reply, while
	 * with everysec it may postpone the write behind a slow fsync and lose
	 * acknowledged writes to a SIGKILL. Only a machine crash needs fsync.
	 */
	snprintf(conf, sizeof conf, "port 0\nunixsocket %s\nunixsocketperm 700\ndir %s\n"
	    "save \"\"\nappendonly %s\nappendfsync no\ndaemonize no\nlogfile %s/redis.log\n",
	    r->sock, r->dir, appendonly ? "yes" : "no", r->dir);
	snprintf(name, sizeof name, "%s/redis.conf", strrchr(r->dir, '/') + 1);
	char *path = h_write_file(name, conf);
	if (path == NULL)
		return -1;
	free(path);
	return redis_launch(r);
}

int
h_redis_restart(struct h_redis *r)
{
	if (r->pid > 0)
		h_stop(r->pid, SIGKILL, STOP_TIMEOUT_MS);
	r->pid = 0;
	return redis_launch(r);
}

void
h_redis_stop(struct h_redis *r)
{
	if (r == NULL || r->pid <= 0)
		return;
	h_stop(r->pid, SIGTERM, STOP_TIMEOUT_MS);
	r->pid = 0;
}

redisContext *
h_redis_connect(const struct h_redis *r)
{
	struct timeval tv = { 5, 0 };
	redisContext *c = redisConnectUnixWithTimeout(r->sock, tv);

	if (c != NULL && c->err) {
		fprintf(stderr, "harness: redis connect %s: %s\n", r->sock, c->errstr);
		redisFree(c);
		return NULL;
	}
	return c;
}

long long
h_redis_int(redisContext *c, const char *fmt, ...)
{
	va_list ap;
	long long v = -1;

	va_start(ap, fmt);
	redisReply *rep = redisvCommand(c, fmt, ap);
	va_end(ap);
	if (rep != NULL && rep->type == REDIS_REPLY_INTEGER)
		v = rep->integer;
	freeReplyObject(rep);
	return v;
}

char *
h_redis_str(redisContext *c, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	redisReply *rep = redisvCommand(c, fmt, ap);
	va_end(ap);
	if (rep != NULL && (rep->type == REDIS_REPLY_STRING || rep->type == REDIS_REPLY_STATUS) &&
	    (s = malloc(rep->len + 1)) != NULL) {
		memcpy(s, rep->str, rep->len);
		s[rep->len] = '\0';
	}
	freeReplyObject(rep);
	return s;
}

/* ---- files ---- */

char *
h_write_file(const char *name, const char *content)
{
	size_t len = strlen(h_tmpdir()) + strlen(name) + 2, n = strlen(content), off = 0;
	char *path = malloc(len);
	int fd;

	if (path == NULL)
		return NULL;
	snprintf(path, len, "%s/%s", h_tmpdir(), name);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) {
		free(path);
		return NULL;
	}
	while (off < n) {
		ssize_t w = write(fd, content + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			break;
		off += (size_t)w;
	}
	if (close(fd) != 0 || off < n) {
		free(path);
		return NULL;
	}
	return path;
}

char *
h_read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	size_t len = 0, cap = 4096, n;
	char *buf = NULL, *grown;

	if (f == NULL)
		return NULL;
	for (;;) {
		if ((grown = realloc(buf, cap + 1)) == NULL) {
			free(buf);
			buf = NULL;
			break;
		}
		buf = grown;
		n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (len < cap) {
			buf[len] = '\0';
			break;
		}
		cap *= 2;
	}
	fclose(f);
	return buf;
}

int
h_file_contains(const char *path, const char *needle)
{
	char *s = h_read_file(path);
	int found = s != NULL && strstr(s, needle) != NULL;

	free(s);
	return found;
}

/* ---- fakes ---- */

struct port_wait {
	const struct h_fake *f;
	const char *port_file;
};

static int
port_ready_or_dead(void *arg)
{
	const struct port_wait *w = arg;
	char *s = h_read_file(w->port_file);
	int ready = s != NULL && atoi(s) > 0;

	free(s);
	return ready || exited(w->f->pid);
}

int
h_fake_start(struct h_fake *f, const char *bin_name, const char *const extra_args[])
{
	static int seq;
	char port_file[512], *argv[40];
	int n = 0, id = __atomic_add_fetch(&seq, 1, __ATOMIC_SEQ_CST);

	memset(f, 0, sizeof *f);
	snprintf(port_file, sizeof port_file, "%s/%s-%d.port", h_tmpdir(), bin_name, id);
	snprintf(f->log, sizeof f->log, "%s/%s-%d.log", h_tmpdir(), bin_name, id);
	argv[n++] = (char *)h_testbin(bin_name);
	argv[n++] = (char *)"--port-file";
	argv[n++] = port_file;
	for (int i = 0; extra_args != NULL && extra_args[i] != NULL; i++) {
		if (n + 1 >= (int)(sizeof argv / sizeof argv[0]))
			return -1;
		argv[n++] = (char *)extra_args[i];
	}
	argv[n] = NULL;
	if ((f->pid = h_spawn(f->log, argv)) < 0)
		return -1;
	struct port_wait w = { f, port_file };
	char *s = NULL;
	if (h_wait_until(port_ready_or_dead, &w, START_TIMEOUT_MS) == 0 && !exited(f->pid) &&
	    (s = h_read_file(port_file)) != NULL) {
		f->port = atoi(s);
		free(s);
		snprintf(f->url, sizeof f->url, "http://127.0.0.1:%d", f->port);
		return 0;
	}
	fprintf(stderr, "harness: %s did not start; see %s\n", bin_name, f->log);
	h_stop(f->pid, SIGKILL, STOP_TIMEOUT_MS);
	f->pid = 0;
	return -1;
}

void
h_fake_stop(struct h_fake *f)
{
	if (f == NULL || f->pid <= 0)
		return;
	int status = h_stop(f->pid, SIGTERM, STOP_TIMEOUT_MS);
	if (status != 0)
		fprintf(stderr, "harness: fake pid %d ended with status %d; see %s\n",
		    (int)f->pid, status, f->log);
	f->pid = 0;
}

/* ---- HTTP ---- */

struct buf {
	char *s;
	size_t len;
};

static size_t
append(char *data, size_t size, size_t nmemb, void *arg)
{
	struct buf *b = arg;
	size_t n = size * nmemb;
	char *grown = realloc(b->s, b->len + n + 1);

	if (grown == NULL)
		return 0;
	memcpy(grown + b->len, data, n);
	b->len += n;
	grown[b->len] = '\0';
	b->s = grown;
	return n;
}

static void
init_curl(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static struct curl_slist *
request_headers(const char *const headers[], int has_body)
{
	struct curl_slist *list = NULL, *l;

	/* No "Expect: 100-continue" round trip for large bodies. */
	list = curl_slist_append(list, "Expect:");
	if (list != NULL && has_body && (l = curl_slist_append(list, "Content-Type: application/json")))
		list = l;
	for (int i = 0; list != NULL && headers != NULL && headers[i] != NULL; i++)
		if ((l = curl_slist_append(list, headers[i])) != NULL)
			list = l;
	return list;
}

int
h_http_req(const char *method, const char *url, const char *const headers[],
	   const char *body, struct h_http_reply *out)
{
	struct buf b = { NULL, 0 }, h = { NULL, 0 };
	CURLcode rc = CURLE_FAILED_INIT;

	memset(out, 0, sizeof *out);
	pthread_once(&curl_once, init_curl);
	CURL *c = curl_easy_init();
	struct curl_slist *list = request_headers(headers, body != NULL);
	if (c != NULL) {
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
		curl_easy_setopt(c, CURLOPT_NOBODY, (long)(strcmp(method, "HEAD") == 0));
		curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
		curl_easy_setopt(c, CURLOPT_PROXY, "");
		curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 60000L);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
		curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, append);
		curl_easy_setopt(c, CURLOPT_HEADERDATA, &h);
		if (body != NULL) {
			curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
			curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
		}
		rc = curl_easy_perform(c);
		if (rc == CURLE_OK)
			curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
	}
	curl_easy_cleanup(c);
	curl_slist_free_all(list);
	out->body = b.s ? b.s : strdup("");
	out->headers = h.s ? h.s : strdup("");
	return rc == CURLE_OK && out->body && out->headers ? 0 : -1;
}

void
h_http_reply_clear(struct h_http_reply *r)
{
	if (r == NULL)
		return;
	free(r->body);
	free(r->headers);
	memset(r, 0, sizeof *r);
}

char *
h_http_header(const struct h_http_reply *r, const char *name)
{
	size_t n = strlen(name);

	for (const char *line = r->headers; line != NULL && *line; ) {
		const char *end = line + strcspn(line, "\r\n");
		if (strncasecmp(line, name, n) == 0 && line[n] == ':') {
			const char *v = line + n + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			return strndup(v, (size_t)(end - v));
		}
		line = end + strspn(end, "\r\n");
	}
	return NULL;
}

char *
h_http(const char *method, const char *url, const char *body, long *status)
{
	struct h_http_reply r;
	char *s = NULL;

	if (h_http_req(method, url, NULL, body, &r) == 0) {
		s = r.body;
		r.body = NULL;
	}
	*status = r.status;
	h_http_reply_clear(&r);
	return s;
}
