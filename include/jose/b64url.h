/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * b64url: Base64 with the URL and file name safe alphabet (RFC 4648 §5),
 * written without padding as JWS wants it (RFC 7515 §2). Pure.
 *
 * Two decoders: b64url_decode for what must have exactly one spelling (a
 * signed record), b64url_decode_lax for what is only read (a token's claims).
 */
#ifndef WARRANTD_B64URL_H
#define WARRANTD_B64URL_H

#include <stddef.h>

/* The n bytes at in, without padding. Caller frees; NULL when out of
 * memory. */
char *b64url_encode(const unsigned char *in, size_t n)
	__attribute__((warn_unused_result));

/*
 * Decodes the n characters at s, strictly: only the URL alphabet, no
 * padding, no length of 1 mod 4 and no unused low bits set in the last
 * character, so every byte string has exactly one accepted spelling.
 * 0: *out is a new buffer (caller frees) of *out_len bytes followed by a NUL
 * that is not counted. -1: malformed or out of memory; nothing allocated.
 */
int b64url_decode(const char *s, size_t n, unsigned char **out, size_t *out_len)
	__attribute__((warn_unused_result));

/* As b64url_decode, but trailing '=' are dropped first and unused low bits
 * of the last character are ignored. */
int b64url_decode_lax(const char *s, size_t n, unsigned char **out, size_t *out_len)
	__attribute__((warn_unused_result));

#endif
