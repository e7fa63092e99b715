/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * backoff: the one exponential backoff with jitter for everything that waits
 * and tries again -- a retry of an action (R8), a PDP that is down (R5), a
 * token fetch, a Redis reconnect or error reply (R17), the webhook. Pure:
 * the random word comes in.
 */
#ifndef WARRANTD_BACKOFF_H
#define WARRANTD_BACKOFF_H

#include <stdint.h>

/*
 * The delay before the n-th try again (n < 1 counts as 1): uniform in
 * [floor, ceiling], drawn as floor + rnd % (ceiling - floor + 1), where
 * ceiling = min(cap_ms, base_ms * 2^(n-1)) and floor = floor_ms clamped to
 * [0, ceiling]. floor_ms 0 is "full jitter". base_ms and cap_ms below 1
 * count as 1; a base above the cap starts at the cap. Never overflows.
 */
int64_t backoff_ms(int64_t floor_ms, int64_t base_ms, int64_t cap_ms, int n, uint64_t rnd);

#endif
