/* SPDX-License-Identifier: BSD-2-Clause */
/* cfgfile: the configuration file from disk, for the pure parser (cfgfile.h). */
#define _DEFAULT_SOURCE
#include "conf/cfgfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The configuration names the IdP the client secret is sent to and the key
 * records are verified with: a file that group or others may write, or that
 * another user owns, lets them redirect both. EPERM then. */
static int
trusted(int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -1;
	if ((st.st_mode & 022) != 0 || (st.st_uid != geteuid() && st.st_uid != 0)) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

/* The whole file in a malloc'd buffer; -1 with errno set. */
static int
read_text(const char *path, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	size_t cap = 4096, n = 0;
	char *buf = NULL;

	if (fd < 0)
		return -1;
	if (trusted(fd) < 0) {
		int saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	for (;;) {
		if (n == cap || !buf) {
			char *bigger = n >= CFGFILE_MAX ? NULL : realloc(buf, cap *= 2);
			if (!bigger) {
				errno = n >= CFGFILE_MAX ? EFBIG : ENOMEM;
				break;
			}
			buf = bigger;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		if (r == 0) {
			close(fd);
			*out = buf;
			*len = n;
			return 0;
		}
		n += (size_t)r;
	}
	int saved = errno;
	close(fd);
	free(buf);
	errno = saved;
	return -1;
}

/* The directory of the config file, absolute when it exists, so relative
 * file names still resolve if the daemon changes directory. NULL when out
 * of memory. */
static char *
dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash == path ? strdup("/") :
	    slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
	char *abs = dir ? realpath(dir, NULL) : NULL;

	if (abs) {
		free(dir);
		return abs;
	}
	return dir;
}

struct cfg *
cfgfile_load(const char *path, struct cfg_errors *errs)
{
	char *text, host[256];
	size_t len;

	if (read_text(path, &text, &len) < 0) {
		if (errno == EPERM)
			(void)cfg_errors_add(errs, path, 0, "refusing: group or others may write it, or "
			    "another user owns it (chown root and chmod go-w it)");
		else
			(void)cfg_errors_add(errs, path, 0, "cannot read: %s", strerror(errno));
		return NULL;
	}
	/* The default consumer: $WARRANTD_CONSUMER (warrantd@.service sets
	 * HOST-INSTANCE: one name per instance, issue 38 item 1), else the
	 * host name; none is no default: the parser then asks for one. */
	const char *name = getenv("WARRANTD_CONSUMER");
	if (name != NULL && name[0] != '\0')
		snprintf(host, sizeof host, "%s", name);
	else if (gethostname(host, sizeof host) < 0)
		host[0] = '\0';
	host[sizeof host - 1] = '\0';
	char *dir = dir_of(path);
	struct cfg_env env = {.host = host, .dir = dir};
	struct cfg *cfg = dir ? cfg_parse(path, text, len, &env, errs) : NULL;
	if (!dir)
		(void)cfg_errors_add(errs, path, 0, "out of memory");
	free(dir);
	free(text);
	return cfg;
}
