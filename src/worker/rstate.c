/* SPDX-License-Identifier: BSD-2-Clause */
/* rstate: a reload's result in the RuntimeDirectory (rstate.h). */
#define _POSIX_C_SOURCE 200809L
#include "worker/rstate.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
rstate_format(const struct rstate *st, char *out, size_t n)
{
	char reason[RSTATE_REASON_MAX];

	snprintf(reason, sizeof reason, "%s", st->reason[0] ? st->reason : "-");
	for (char *p = reason; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	int w = snprintf(out, n, "%ld %lld %s\n%s\n", st->pid, st->generation,
	    st->applied ? "applied" : "refused", reason);
	return w < 0 || (size_t)w >= n ? -1 : 0;
}

/* A decimal number at *p followed by one space; moves *p past both. */
static int
number_then_space(const char **p, long long *v)
{
	char *end = NULL;

	if (**p < '0' || **p > '9')
		return -1;
	errno = 0;
	*v = strtoll(*p, &end, 10);
	if (errno != 0 || *end != ' ')
		return -1;
	*p = end + 1;
	return 0;
}

int
rstate_parse(const char *text, struct rstate *st)
{
	const char *p = text;
	long long pid;

	memset(st, 0, sizeof *st);
	if (number_then_space(&p, &pid) < 0 || pid <= 0 || pid > LONG_MAX ||
	    number_then_space(&p, &st->generation) < 0)
		return -1;
	st->pid = (long)pid;
	if (strncmp(p, "applied\n", 8) == 0)
		st->applied = 1;
	else if (strncmp(p, "refused\n", 8) != 0)
		return -1;
	const char *r = p + 8, *end = strchr(r, '\n');
	size_t len = end ? (size_t)(end - r) : 0;
	if (!end || len == 0 || len >= sizeof st->reason)
		return -1;
	if (len != 1 || r[0] != '-')
		memcpy(st->reason, r, len);
	return 0;
}

int
rstate_path(char *out, size_t n)
{
	const char *dirs = getenv("RUNTIME_DIRECTORY");

	if (!dirs || !dirs[0] || dirs[0] != '/')
		return -1;
	size_t len = strcspn(dirs, ":");	/* several RuntimeDirectory=: the first */
	int w = snprintf(out, n, "%.*s/reload", (int)len, dirs);
	return w < 0 || (size_t)w >= n ? -1 : 0;
}

int
rstate_write(const char *path, const struct rstate *st)
{
	char text[RSTATE_REASON_MAX + 64], tmp[4096];

	if (rstate_format(st, text, sizeof text) < 0 ||
	    snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
		errno = ENAMETOOLONG;
		return -1;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -1;
	size_t len = strlen(text);
	ssize_t w = write(fd, text, len);
	if (close(fd) < 0 || w != (ssize_t)len || rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		errno = w != (ssize_t)len && e == 0 ? EIO : e;
		return -1;
	}
	return 0;
}

int
rstate_read(const char *path, struct rstate *st)
{
	char text[RSTATE_REASON_MAX + 64];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return -1;
	ssize_t n = read(fd, text, sizeof text - 1);
	close(fd);
	if (n <= 0)
		return -1;
	text[n] = '\0';
	return rstate_parse(text, st);
}
