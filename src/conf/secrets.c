/* SPDX-License-Identifier: BSD-2-Clause */
/* secrets: the files of warrantd(7) §9 read, checked and wiped (secrets.h). */
#define _DEFAULT_SOURCE
#include "conf/secrets.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum secrets_kind
secrets_key_kind(enum jwa_alg alg, int signing)
{
	/* An HMAC key is a secret like a password: an editor's trailing newline
	 * must not become part of it. A PEM keeps its layout. */
	if (alg == JWA_HS256)
		return SECRETS_TRIMMED;
	return signing ? SECRETS_PRIVATE_PEM : SECRETS_PUBLIC;
}

void
secrets_free(char *buf, size_t len)
{
	if (!buf)
		return;
	explicit_bzero(buf, len);
	free(buf);
}

/* Opens path; a relative one in each of dirs (NULL or "" skipped), and as
 * given only when `as_given` (a name typed on a command line, not one from
 * the config: warrantd(7) §9 never looks in the working directory for those).
 * Only a missing file sends the search on. The name opened goes to `used`
 * (PATH_MAX bytes), for messages. */
static int
open_secret(const char *path, const char *const *dirs, size_t ndirs, int as_given, char *used,
	    char *err, size_t errlen)
{
	char tried[3 * PATH_MAX / 4] = "";
	size_t t = 0;
	int fd;

	for (size_t i = 0; path[0] != '/' && i < ndirs; i++) {
		if (!dirs[i] || !*dirs[i])
			continue;
		if (snprintf(used, PATH_MAX, "%s/%s", dirs[i], path) >= PATH_MAX) {
			snprintf(err, errlen, "cannot read %s: %s", path, strerror(ENAMETOOLONG));
			return -1;
		}
		if ((fd = open(used, O_RDONLY | O_CLOEXEC | O_NOCTTY)) >= 0)
			return fd;
		if (errno != ENOENT && errno != ENOTDIR) {
			snprintf(err, errlen, "cannot read %s: %s", used, strerror(errno));
			return -1;
		}
		/* the operator's first question is "where did it look?" */
		if (t < sizeof tried)
			t += (size_t)snprintf(tried + t, sizeof tried - t, "%s%s", t ? ", " : "",
			    used);
	}
	if (path[0] != '/' && !as_given) {
		snprintf(err, errlen, "cannot read %s: %s (tried %s; the working directory is not "
		    "searched)", path, strerror(ENOENT), t ? tried : "nothing: no directory known");
		return -1;
	}
	snprintf(used, PATH_MAX, "%s", path);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) < 0)
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
	return fd;
}

/* A file that decides trust: none of `forbidden` mode bits, and owned by us
 * or root. sshd's rule for a secret (a private key, a password, a token):
 * group or others may not read or write it, or it has been exposed, or will
 * be. A public key may be read by anyone, but one that group or others may
 * write lets a local user swap in their own key and forge records. Refused
 * with the fix in the message. */
static int
check_mode(int fd, const char *path, mode_t forbidden, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	if ((st.st_mode & forbidden) != 0) {
		snprintf(err, errlen, forbidden == 077 ?
		    "refusing %s: permissions %04o are too open, group or others may access this "
		    "secret (chmod 600 it)" : "refusing %s: permissions %04o let group or others "
		    "write it, and so forge what it verifies (chmod go-w it)", path,
		    (unsigned)(st.st_mode & 07777));
		return -1;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		snprintf(err, errlen, "refusing %s: owned by uid %u, not by this user or root",
		    path, (unsigned)st.st_uid);
		return -1;
	}
	return 0;
}

/* Moves the buffer to a bigger one, wiping the old: realloc could leave a
 * copy of the secret in freed memory. */
static int
grow_wiped(char **buf, size_t *cap, size_t used)
{
	char *bigger = malloc(*cap * 2);

	if (!bigger)
		return -1;
	memcpy(bigger, *buf, used);
	secrets_free(*buf, *cap);
	*buf = bigger;
	*cap *= 2;
	return 0;
}

static int
read_fd(int fd, const char *path, char **out, size_t *len, char *err, size_t errlen)
{
	struct stat st;
	size_t cap = 256, n = 0;

	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < SECRETS_MAX)
		cap = (size_t)st.st_size + 2;	/* room to see EOF without growing */
	char *buf = malloc(cap);
	if (!buf) {
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(ENOMEM));
		return -1;
	}
	for (;;) {
		if (n > SECRETS_MAX) {
			snprintf(err, errlen, "cannot read %s: larger than 1 MiB", path);
			break;
		}
		if (n + 1 == cap && grow_wiped(&buf, &cap, n) < 0) {
			snprintf(err, errlen, "cannot read %s: %s", path, strerror(ENOMEM));
			break;
		}
		ssize_t r = read(fd, buf + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
			break;
		}
		if (r == 0) {
			buf[n] = '\0';
			*out = buf;
			*len = n;
			return 0;
		}
		n += (size_t)r;
	}
	secrets_free(buf, cap);
	return -1;
}

static size_t
strip_ws(char *buf, size_t len)
{
	size_t a = 0, b = len;

	while (a < b && isspace((unsigned char)buf[a]))
		a++;
	while (b > a && isspace((unsigned char)buf[b - 1]))
		b--;
	memmove(buf, buf + a, b - a);
	explicit_bzero(buf + (b - a), len - (b - a));
	return b - a;
}

static int
read_secret_in(const char *const *dirs, size_t ndirs, int as_given, const char *path,
	       enum secrets_kind kind, char **out, size_t *len, char *err, size_t errlen)
{
	char *buf, used[PATH_MAX];
	size_t n;

	int fd = open_secret(path, dirs, ndirs, as_given, used, err, errlen);
	if (fd < 0)
		return -1;
	int rc = check_mode(fd, used, kind == SECRETS_PUBLIC ? 022 : 077, err, errlen);
	if (rc == 0)
		rc = read_fd(fd, used, &buf, &n, err, errlen);
	close(fd);
	if (rc < 0)
		return -1;
	if (kind == SECRETS_TRIMMED)
		n = strip_ws(buf, n);
	if (n == 0) {
		snprintf(err, errlen, "cannot read %s: the file is empty", used);
		secrets_free(buf, 0);	/* strip_ws wiped it */
		return -1;
	}
	*out = buf;
	*len = n;
	return 0;
}

int
secrets_read(const char *path, enum secrets_kind kind, char **out, size_t *len, char *err,
	     size_t errlen)
{
	const char *dirs[] = {getenv("CREDENTIALS_DIRECTORY")};

	return read_secret_in(dirs, 1, 1, path, kind, out, len, err, errlen);
}

int
secrets_read_cfg(const struct cfg *cfg, const char *path, enum secrets_kind kind, char **out,
		 size_t *len, char *err, size_t errlen)
{
	char beside[PATH_MAX];
	const char *dirs[] = {getenv("CREDENTIALS_DIRECTORY"), beside, cfg->dir};

	/* credentials/ beside the config is where the packaged unit's
	 * LoadCredential= reads from: `warrantd -t` and warrantctl run by hand
	 * find the files the service is given. */
	if (!cfg->dir || snprintf(beside, sizeof beside, "%s/credentials", cfg->dir) >=
	    (int)sizeof beside)
		beside[0] = '\0';
	return read_secret_in(dirs, 3, 0, path, kind, out, len, err, errlen);
}

int
secrets_read_verify_key(const struct cfg *cfg, char **out, size_t *len, char *err,
			size_t errlen)
{
	return secrets_read_cfg(cfg, cfg->records.verify_key_file,
	    secrets_key_kind(cfg->records.algorithm, 0), out, len, err, errlen);
}

static int
check_file(const struct cfg *cfg, const char *section, const char *key, const char *path,
	   enum secrets_kind kind, struct cfg_errors *errs)
{
	char err[512], *buf;
	size_t len;

	if (!path)
		return 0;
	if (secrets_read_cfg(cfg, path, kind, &buf, &len, err, sizeof err) < 0) {
		(void)cfg_errors_add(errs, cfg->path, cfg_line_of(cfg, section, key), "%s", err);
		return -1;
	}
	secrets_free(buf, len);
	return 0;
}

int
secrets_check_cfg(const struct cfg *cfg, struct cfg_errors *errs)
{
	char sec[256];
	int rc = 0;

	rc |= check_file(cfg, "records", "verify_key_file", cfg->records.verify_key_file,
	    secrets_key_kind(cfg->records.algorithm, 0), errs);
	rc |= check_file(cfg, "redis", "password_file", cfg->redis.password_file,
	    SECRETS_TRIMMED, errs);
	rc |= check_file(cfg, "oauth", "client_secret_file", cfg->oauth.client_secret_file,
	    SECRETS_TRIMMED, errs);
	rc |= check_file(cfg, "oauth", "private_key_file", cfg->oauth.private_key_file,
	    SECRETS_PRIVATE_PEM, errs);
	rc |= check_file(cfg, "oauth", "certificate_file", cfg->oauth.certificate_file,
	    SECRETS_PUBLIC, errs);
	rc |= check_file(cfg, "oauth", "dpop_key_file", cfg->oauth.dpop_key_file,
	    SECRETS_PRIVATE_PEM, errs);
	rc |= check_file(cfg, "redis", "sentinel_password_file", cfg->redis.sentinel_password_file,
	    SECRETS_TRIMMED, errs);
	rc |= check_file(cfg, "redis", "tls_ca_file", cfg->redis.tls_ca_file, SECRETS_PUBLIC, errs);
	rc |= check_file(cfg, "redis", "tls_cert_file", cfg->redis.tls_cert_file, SECRETS_PUBLIC,
	    errs);
	rc |= check_file(cfg, "redis", "tls_key_file", cfg->redis.tls_key_file,
	    SECRETS_PRIVATE_PEM, errs);
	for (size_t i = 0; i < cfg->nactions; i++) {
		snprintf(sec, sizeof sec, "action %s", cfg->actions[i].name);
		rc |= check_file(cfg, sec, "bearer_file", cfg->actions[i].bearer_file,
		    SECRETS_TRIMMED, errs);
	}
	rc |= check_file(cfg, "notify", "bearer_file", cfg->notify.bearer_file, SECRETS_TRIMMED,
	    errs);
	rc |= check_file(cfg, "authz", "bearer_file", cfg->authz.bearer_file, SECRETS_TRIMMED,
	    errs);
	return rc;
}
