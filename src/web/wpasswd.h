/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wpasswd: the console's users file on disk (the shell over wpass.h):
 * `warrantd-web passwd FILE USER` writing it, a login checking against it.
 * The file is read at each login, so a user added is known at once.
 */
#ifndef WARRANTD_WPASSWD_H
#define WARRANTD_WPASSWD_H

#include "conf/config.h"

#define WPASSWD_PW_MAX	1024	/* a password's bytes, with its NUL */

/*
 * `warrantd-web passwd FILE USER`: the password from stdin (echo off on a
 * terminal), at least 12 characters, hashed with a fresh salt; FILE
 * rewritten through a 0600 temp file renamed over it. Borrowed. Returns
 * the exit code (sysexits.h), messages on stderr.
 */
int wpasswd_cmd(const char *file, const char *user);

/*
 * 1 when user's password is pw in cfg's [web] users_file, else 0. A user
 * without a line costs the same PBKDF2 as one with, so that the time of an
 * answer does not say which names exist. Borrowed.
 */
int wpasswd_ok(const struct cfg *cfg, const char *user, const char *pw);

#endif
