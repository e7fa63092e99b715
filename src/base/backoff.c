/* SPDX-License-Identifier: BSD-2-Clause */
/* backoff: exponential backoff with jitter, one function for every retry. */
#include "base/backoff.h"

int64_t
backoff_ms(int64_t floor_ms, int64_t base_ms, int64_t cap_ms, int n, uint64_t rnd)
{
	int64_t ceiling, floor;

	if (base_ms < 1)
		base_ms = 1;
	if (cap_ms < 1)
		cap_ms = 1;
	if (n < 1)
		n = 1;
	ceiling = base_ms < cap_ms ? base_ms : cap_ms;
	/* Doubling stops at the cap, so this runs at most ~63 times. */
	for (int i = 1; i < n && ceiling < cap_ms; i++)
		ceiling = ceiling > cap_ms / 2 ? cap_ms : ceiling * 2;
	floor = floor_ms < 0 ? 0 : floor_ms > ceiling ? ceiling : floor_ms;
	return floor + (int64_t)(rnd % ((uint64_t)(ceiling - floor) + 1));
}
