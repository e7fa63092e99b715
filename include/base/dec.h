/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dec: unsigned numbers written in decimal without printf, for the hot
 * paths that write many (RESP lengths, a job's details and its HTTP
 * status). Pure.
 */
#ifndef WARRANTD_DEC_H
#define WARRANTD_DEC_H

#include <stddef.h>

/* The digits of n in decimal. */
size_t dec_len(size_t n);

/* n in decimal at p (dec_len(n) bytes, no NUL); returns the end. */
char *dec_put(char *p, size_t n);

#endif
