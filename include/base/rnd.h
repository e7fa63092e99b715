/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rnd: the one source of random numbers, for the imperative shell only (the
 * core takes random words as arguments).
 *
 * rnd_bytes and rnd_hex read the kernel's CSPRNG (getrandom): for what an
 * attacker must not guess, such as a JWT `jti`. rnd_u64 is a fast word for
 * jitter only (xorshift64*, seeded once from the kernel): never for secrets.
 * Not thread safe: call from one thread (the loop's).
 */
#ifndef WARRANTD_RND_H
#define WARRANTD_RND_H

#include <stddef.h>
#include <stdint.h>

/* Fills buf with n bytes from the kernel's CSPRNG. 0 or -1. */
int rnd_bytes(void *buf, size_t n) __attribute__((warn_unused_result));

/* nbytes random bytes as lower-case hex into buf (size >= 2 * nbytes + 1,
 * NUL-terminated; nbytes <= 256). 0, or -1 (then buf is ""). */
int rnd_hex(char *buf, size_t bufsize, size_t nbytes) __attribute__((warn_unused_result));

/* A word for jitter. */
uint64_t rnd_u64(void);

#endif
