/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * secrets: the files of warrantd(7) §9 -- passwords, client secrets, bearer tokens,
 * HMAC keys, private and public keys, certificates -- read, checked and
 * wiped. Shell: it opens files and reads $CREDENTIALS_DIRECTORY.
 *
 * One rule for what a file holds: a secret (a password, token or HMAC key)
 * loses its surrounding white space, a PEM document keeps it (it does no
 * harm). For a record key the algorithm decides which it is
 * (secrets_key_kind): HS256's key is a secret, any other a PEM. A secret or
 * private key that group or others may access, or that another user than us
 * or root owns, is refused (sshd's rule).
 *
 * Every buffer handed out is NUL-terminated (the NUL not counted), and is the
 * caller's to release with secrets_free, which wipes it first. A message
 * about a file names the path (the one opened, once found), never the
 * content.
 */
#ifndef WARRANTD_SECRETS_H
#define WARRANTD_SECRETS_H

#include <stddef.h>

#include "conf/config.h"
#include "jose/jwa.h"

/* The largest secret or key file read: 1 MiB. */
#define SECRETS_MAX (1024 * 1024)

enum secrets_kind {
	SECRETS_TRIMMED = 0,	/* a password, client secret, bearer token or HMAC
				 * key: trimmed; refused when exposed */
	SECRETS_PUBLIC,		/* a public key or certificate: kept as is, anyone may
				 * read it; refused when group or others may write it */
	SECRETS_PRIVATE_PEM,	/* a PEM private key: kept as is, refused when exposed */
};

/*
 * The kind of a record key file for `alg`: SECRETS_TRIMMED for HS256 (the
 * HMAC secret, whichever side), else a PEM, SECRETS_PRIVATE_PEM to sign with
 * (`signing` 1) or SECRETS_PUBLIC to verify with (0). The one place of the
 * rule "keep white space unless HS256".
 */
enum secrets_kind secrets_key_kind(enum jwa_alg alg, int signing);

/*
 * Reads a file named on a command line: a relative path is looked up in
 * $CREDENTIALS_DIRECTORY first, then as given (relative to the working
 * directory, where the operator typed it). Only a file that does not exist
 * sends the search on; any other error stops it. An empty file (after
 * trimming) is an error.
 * 0: *out is a new buffer of *len bytes (caller frees with secrets_free).
 * -1: a message "cannot read <path>: <reason>" or "refusing <path>: ..." in
 * err; nothing allocated.
 */
int secrets_read(const char *path, enum secrets_kind kind, char **out, size_t *len, char *err,
		 size_t errlen)
	__attribute__((warn_unused_result));

/*
 * Reads a file the config names: as secrets_read, but a relative path is
 * looked up in this order, and never in the working directory (a planted
 * file there must not become a key):
 *   1. $CREDENTIALS_DIRECTORY/path (systemd LoadCredential=)
 *   2. cfg->dir/path (next to the config file)
 * cfg is borrowed for the call.
 */
int secrets_read_cfg(const struct cfg *cfg, const char *path, enum secrets_kind kind,
		     char **out, size_t *len, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* [records] verify_key_file by secrets_read_cfg, of the kind its algorithm
 * gives (secrets_key_kind). Same results. */
int secrets_read_verify_key(const struct cfg *cfg, char **out, size_t *len, char *err,
			    size_t errlen)
	__attribute__((warn_unused_result));

/* Wipes the len bytes of buf (explicit_bzero), then frees it. NULL is a
 * no-op. */
void secrets_free(char *buf, size_t len);

/* Reads every file the config names (verify_key_file, password_file,
 * sentinel_password_file, client_secret_file, private_key_file,
 * certificate_file, each bearer_file) with secrets_read_cfg, each by its
 * kind, and wipes it again. Appends one "file:line: cannot read <path>:
 * <reason>" to errs per file that fails, at the line of its key (caller
 * clears errs). 0 when all were read, else -1. */
int secrets_check_cfg(const struct cfg *cfg, struct cfg_errors *errs)
	__attribute__((warn_unused_result));

#endif
