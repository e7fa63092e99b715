/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * resp: Redis' wire format (RESP) written by hand. hiredis 0.14 formats
 * every argument with sprintf, which was a third of the daemon's
 * instructions per job (bench/README.md, lever 1). Pure: rconn formats
 * commands with it, store the arguments of a batch while it gathers them.
 * Nothing here checks room: the caller sizes its buffer with the *_len
 * functions first.
 */
#ifndef WARRANTD_RESP_H
#define WARRANTD_RESP_H

#include <stddef.h>

#include "base/dec.h"

/* The bytes of the bulk string of n bytes: "$n\r\n", the bytes, "\r\n";
 * never more than n + RESP_BULK_OVER. */
size_t resp_bulk_len(size_t n);
#define RESP_BULK_OVER 25	/* '$', 20 digits, two CRLF */

/* The bulk string of s[0..n-1] at p (resp_bulk_len(n) bytes); returns the end. */
char *resp_put_bulk(char *p, const char *s, size_t n);

#endif
