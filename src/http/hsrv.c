/* SPDX-License-Identifier: BSD-2-Clause */
/* hsrv: libmicrohttpd on the libev loop, single-threaded (hsrv.h). */
#define _GNU_SOURCE	/* accept4 */
#include "http/hsrv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <microhttpd.h>

#include "base/log.h"

#if MHD_VERSION < 0x00097002
typedef int mhd_result;
#else
typedef enum MHD_Result mhd_result;
#endif

struct hsrv {
	struct ev_loop *loop;
	struct MHD_Daemon *d;
	int fd;			/* the listener, ours */
	ev_io accept_io;
	ev_timer accept_pause;	/* after an accept error: a second off */
	ev_io mhd_io;		/* MHD's epoll descriptor */
	ev_timer mhd_timer;	/* MHD_get_timeout */
	struct listen_addr addr;
	const char *ev_accept, *ev_http;	/* event names */
	hsrv_handler_fn *handler;
	void *arg;
	size_t body_max;
	int keep_alive;
};

/* A request's state across MHD's calls: its body so far. */
struct hsrv_req {
	struct MHD_Connection *conn;
	size_t len, cap;
	int too_big;
	char body[];		/* cap + 1 bytes */
};

/* MHD_run, then the timer MHD asks for: it may have work left (0 ms), or
 * connections whose idle timeout runs. */
static void
run_mhd(struct hsrv *s)
{
	MHD_UNSIGNED_LONG_LONG ms = 0;

	(void)MHD_run(s->d);
	ev_timer_stop(s->loop, &s->mhd_timer);
	if (MHD_get_timeout(s->d, &ms) == MHD_YES) {
		ev_timer_set(&s->mhd_timer, (double)ms / 1000.0, 0.);
		ev_timer_start(s->loop, &s->mhd_timer);
	}
}

static void
mhd_io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop, (void)revents;
	run_mhd(w->data);
}

static void
mhd_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop, (void)revents;
	run_mhd(w->data);
}

static void
accept_resume_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct hsrv *s = w->data;
	(void)revents;

	ev_io_start(loop, &s->accept_io);
}

/* Each connection to MHD, which refuses (and closes) one over the budget
 * of its peer or of the server. */
static void
accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct hsrv *s = w->data;
	(void)revents;

	for (int i = 0; i < 64; i++) {	/* then the loop's other work */
		struct sockaddr_storage peer;
		socklen_t plen = sizeof peer;
		int fd = accept4(s->fd, (struct sockaddr *)&peer, &plen,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			log_warn(s->ev_accept, "error=\"%s\"", strerror(errno));
			/* EMFILE and the like leave the connection in the backlog:
			 * the level-triggered watcher would spin on it. */
			ev_io_stop(loop, &s->accept_io);
			ev_timer_set(&s->accept_pause, 1.0, 0.);
			ev_timer_start(loop, &s->accept_pause);
			break;
		}
		(void)MHD_add_connection(s->d, fd, (struct sockaddr *)&peer, plen);
	}
	run_mhd(s);
}

int
hsrv_answer_header(struct hsrv_answer *a, const char *name, const char *value)
{
	if (a->nheaders >= HSRV_HEADERS)
		return -1;
	if (!(a->headers[a->nheaders].value = strdup(value)))
		return -1;
	a->headers[a->nheaders++].name = name;
	return 0;
}

static void
answer_clear(struct hsrv_answer *a)
{
	if (!a->body_static)
		free(a->body);
	for (size_t i = 0; i < a->nheaders; i++)
		free(a->headers[i].value);
}

const char *
hsrv_req_header(const struct hsrv_req *q, const char *name)
{
	return MHD_lookup_connection_value(q->conn, MHD_HEADER_KIND, name);
}

const char *
hsrv_req_arg(const struct hsrv_req *q, const char *name)
{
	return MHD_lookup_connection_value(q->conn, MHD_GET_ARGUMENT_KIND, name);
}

struct each {
	const char *name;
	hsrv_each_fn *fn;
	void *arg;
};

static mhd_result
each_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	const struct each *e = cls;

	(void)kind;
	if (strcmp(key, e->name) != 0)
		return MHD_YES;
	return e->fn(e->arg, value ? value : "") == 0 ? MHD_YES : MHD_NO;
}

void
hsrv_req_args(const struct hsrv_req *q, const char *name, hsrv_each_fn *fn, void *arg)
{
	struct each e = {name, fn, arg};

	(void)MHD_get_connection_values(q->conn, MHD_GET_ARGUMENT_KIND, each_arg, &e);
}

const char *
hsrv_req_body(const struct hsrv_req *q, size_t *len)
{
	*len = q->len;
	return q->body;
}

void
hsrv_req_peer(const struct hsrv_req *q, char *buf, size_t n)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(q->conn,
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
queue(const struct hsrv *s, struct MHD_Connection *conn, struct hsrv_answer *a)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(a->len, a->body ? a->body : "",
	    a->body && !a->body_static ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);

	if (r == NULL) {
		answer_clear(a);
		return MHD_NO;
	}
	a->body_static = 1;	/* the response owns it now */
	(void)MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, a->content_type);
	if (a->allow)
		(void)MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, a->allow);
	for (size_t i = 0; i < a->nheaders; i++)
		(void)MHD_add_response_header(r, a->headers[i].name, a->headers[i].value);
	if (!s->keep_alive)
		(void)MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	mhd_result rc = MHD_queue_response(conn, (unsigned)a->status, r);
	MHD_destroy_response(r);
	answer_clear(a);
	return rc;
}

static mhd_result
answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
       const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct hsrv *s = cls;
	struct hsrv_req *q = *con_cls;
	struct hsrv_answer a = {.status = 500, .content_type = "text/plain; charset=utf-8"};
	(void)version;

	if (q == NULL) {	/* the head: answer once the body is in */
		if (!(q = calloc(1, sizeof *q + s->body_max + 1)))
			return MHD_NO;
		q->conn = conn;
		q->cap = s->body_max;
		*con_cls = q;
		return MHD_YES;
	}
	if (*upload_data_size != 0) {	/* a body: kept up to body_max */
		if (q->len + *upload_data_size > q->cap)
			q->too_big = 1;
		else {
			memcpy(q->body + q->len, upload_data, *upload_data_size);
			q->len += *upload_data_size;
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (q->too_big && s->body_max > 0) {
		a.status = 413;
		a.body = (char *)"Content Too Large\n";
		a.len = strlen(a.body);
		a.body_static = 1;
	} else
		s->handler(s->arg, q, method, url, &a);
	return queue(s, conn, &a);
}

/* The end of a request, answered or not: its body wiped (a password,
 * maybe) and freed. */
static void
completed(void *cls, struct MHD_Connection *conn, void **con_cls,
	  enum MHD_RequestTerminationCode toe)
{
	struct hsrv_req *q = *con_cls;
	(void)cls, (void)conn, (void)toe;

	if (q != NULL) {
		explicit_bzero(q->body, q->len);
		free(q);
	}
	*con_cls = NULL;
}

/* MHD's own complaints (a malformed request, a refused connection) as log
 * lines at debug: a client's doing, not the daemon's. */
static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
	const struct hsrv *s = cls;
	char msg[256], q[300];

	vsnprintf(msg, sizeof msg, fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	log_debug(s->ev_http, "detail=%s", log_quote(q, sizeof q, msg));
}

/* A unix socket is bound under a umask that makes it 0660 at once: a chmod
 * after bind would leave a moment where it has the process umask's mode. */
static int
listen_on(const struct listen_addr *a, char *err, size_t errlen)
{
	const struct sockaddr_un *un = (const struct sockaddr_un *)&a->sa;
	struct stat st;
	int one = 1;
	int fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	if (a->is_unix && lstat(un->sun_path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(un->sun_path);	/* a stale socket of an earlier run */
	if (!a->is_unix)
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	mode_t was = umask(0117);
	int bound = bind(fd, (const struct sockaddr *)&a->sa, a->salen);
	int bind_errno = errno;
	umask(was);
	errno = bind_errno;
	if (bound < 0 || listen(fd, 64) < 0) {
		snprintf(err, errlen, "cannot listen: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static struct MHD_Daemon *
start_mhd(struct hsrv *s, const struct hsrv_limits *l)
{
	unsigned flags = MHD_USE_EPOLL | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ERROR_LOG |
	    MHD_USE_SUPPRESS_DATE_NO_CLOCK;
	/* one option list; TLS adds its two entries before the end */
	struct MHD_OptionItem o[] = {
		{MHD_OPTION_CONNECTION_LIMIT, (intptr_t)l->total, NULL},
		{MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)l->per_peer, NULL},
		{MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)l->timeout_s, NULL},
		{MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)l->head_max, NULL},
		{MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, s},
		{MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, s},
		{MHD_OPTION_END, 0, NULL},
		{MHD_OPTION_END, 0, NULL},
		{MHD_OPTION_END, 0, NULL},
	};

	if (l->tls_cert != NULL) {
		flags |= MHD_USE_TLS;
		o[6] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)l->tls_cert};
		o[7] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)l->tls_key};
	}
	return MHD_start_daemon(flags, 0, NULL, NULL, answer, s, MHD_OPTION_ARRAY, o,
	    MHD_OPTION_END);
}

struct hsrv *
hsrv_new(struct ev_loop *loop, const struct listen_addr *addr, const struct hsrv_limits *limits,
	 hsrv_handler_fn *handler, void *arg, char *err, size_t errlen)
{
	struct hsrv *s = calloc(1, sizeof *s);

	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->loop = loop;
	s->addr = *addr;
	s->handler = handler;
	s->arg = arg;
	s->ev_accept = limits->ev_accept;
	s->ev_http = limits->ev_http;
	s->body_max = limits->body_max;
	s->keep_alive = limits->keep_alive;
	if ((s->fd = listen_on(addr, err, errlen)) < 0) {
		free(s);
		return NULL;
	}
	const union MHD_DaemonInfo *info = NULL;
	if (!(s->d = start_mhd(s, limits)) ||
	    !(info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_EPOLL_FD))) {
		snprintf(err, errlen, "libmicrohttpd did not start%s", limits->tls_cert ?
		    " (is the TLS key the certificate's?)" : "");
		if (s->d)
			MHD_stop_daemon(s->d);
		close(s->fd);
		if (addr->is_unix)
			unlink(((const struct sockaddr_un *)&addr->sa)->sun_path);
		free(s);
		return NULL;
	}
	ev_io_init(&s->accept_io, accept_cb, s->fd, EV_READ);
	ev_timer_init(&s->accept_pause, accept_resume_cb, 0., 0.);
	ev_io_init(&s->mhd_io, mhd_io_cb, info->epoll_fd, EV_READ);
	ev_timer_init(&s->mhd_timer, mhd_timer_cb, 0., 0.);
	s->accept_io.data = s->accept_pause.data = s->mhd_io.data = s->mhd_timer.data = s;
	ev_io_start(loop, &s->accept_io);
	ev_io_start(loop, &s->mhd_io);
	return s;
}

void
hsrv_free(struct hsrv *s)
{
	if (!s)
		return;
	ev_io_stop(s->loop, &s->accept_io);
	ev_timer_stop(s->loop, &s->accept_pause);
	ev_io_stop(s->loop, &s->mhd_io);
	ev_timer_stop(s->loop, &s->mhd_timer);
	MHD_stop_daemon(s->d);	/* closes every connection */
	close(s->fd);
	if (s->addr.is_unix)
		unlink(((const struct sockaddr_un *)&s->addr.sa)->sun_path);
	free(s);
}
