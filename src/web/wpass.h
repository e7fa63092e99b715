/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wpass: the console's users file (pure: the salt comes in, no file read).
 *
 * One user a line, "USER:pbkdf2-sha256$ITER$SALT$HASH" (SALT and HASH in
 * base64url, HASH 32 bytes of PBKDF2-HMAC-SHA256); '#' starts a comment.
 * PBKDF2 because libcrypto (already linked) has it and it is NIST's
 * (SP 800-132); WPASS_ITER is OWASP's 2023 figure for SHA-256.
 */
#ifndef WARRANTD_WPASS_H
#define WARRANTD_WPASS_H

#include <stddef.h>

#define WPASS_ITER	600000
#define WPASS_SALT	16
#define WPASS_USER_MAX	64
#define WPASS_HASH_MAX	160	/* an encoded hash, with its NUL */

/* 1 when `user` may be a user name: 1..WPASS_USER_MAX-1 of [A-Za-z0-9._-]. */
int wpass_user_valid(const char *user);

/*
 * The encoded hash of the pwlen bytes of pw with salt and iter into out
 * (at least WPASS_HASH_MAX). All borrowed during the call. 0, or -1.
 */
int wpass_hash(const char *pw, size_t pwlen, const unsigned char *salt, size_t saltlen,
	       long iter, char *out, size_t n) __attribute__((warn_unused_result));

/*
 * 1 when pw matches `encoded`, 0 when it does not, -1 when `encoded` is not
 * a hash of ours (compared in constant time). Borrowed.
 */
int wpass_check(const char *encoded, const char *pw, size_t pwlen)
	__attribute__((warn_unused_result));

/*
 * user's encoded hash in the file's text (NUL-terminated) into out: 0, or
 * -1 when the user has no line (or a line longer than out). Borrowed.
 */
int wpass_find(const char *text, const char *user, char *out, size_t n);

/*
 * The file's text with user's line replaced, or added at the end, by
 * "user:encoded". Returns a new string (caller frees with free), NULL when
 * out of memory. Borrowed.
 */
char *wpass_set(const char *text, const char *user, const char *encoded)
	__attribute__((warn_unused_result));

#endif
