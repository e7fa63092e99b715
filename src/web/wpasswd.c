/* SPDX-License-Identifier: BSD-2-Clause */
/* wpasswd: the users file on disk (wpasswd.h). */
#define _GNU_SOURCE
#include "wpasswd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <termios.h>
#include <unistd.h>

#include "base/log.h"
#include "base/rnd.h"
#include "conf/secrets.h"
#include "wpass.h"

#define PROG	"warrantd-web"

int
wpasswd_ok(const struct cfg *cfg, const char *user, const char *pw)
{
	/* of "" with salt "warrantd-web" and WPASS_ITER */
	static char dummy[WPASS_HASH_MAX];
	char enc[WPASS_HASH_MAX], err[256], *text = NULL;
	size_t len = 0;
	int found = 0;

	if (dummy[0] == '\0' && wpass_hash("", 0, (const unsigned char *)"warrantd-web", 12,
	    WPASS_ITER, dummy, sizeof dummy) != 0)
		return 0;
	if (secrets_read_cfg(cfg, cfg->web.users_file, SECRETS_TRIMMED, &text, &len, err,
	    sizeof err) != 0)
		log_error("web.users_file", "detail=%s", LOG_Q(err));
	else
		found = wpass_find(text, user, enc, sizeof enc) == 0;
	secrets_free(text, len);
	int ok = wpass_check(found ? enc : dummy, pw, strlen(pw));
	return found && ok == 1;
}

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

int
wpasswd_cmd(const char *file, const char *user)
{
	char pw[WPASSWD_PW_MAX], enc[WPASS_HASH_MAX], tmp[4096];
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
