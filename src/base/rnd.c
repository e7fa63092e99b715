/* SPDX-License-Identifier: BSD-2-Clause */
/* rnd: the kernel's CSPRNG for secrets, one xorshift64* for jitter. */
#define _DEFAULT_SOURCE
#include "base/rnd.h"

#include <errno.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static uint64_t state;

int
rnd_bytes(void *buf, size_t n)
{
	unsigned char *p = buf;

	while (n > 0) {
		ssize_t got = getrandom(p, n, 0);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += got;
		n -= (size_t)got;
	}
	return 0;
}

int
rnd_hex(char *buf, size_t bufsize, size_t nbytes)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[256];

	if (bufsize == 0)
		return -1;
	buf[0] = '\0';
	if (nbytes > sizeof raw || bufsize < 2 * nbytes + 1 || rnd_bytes(raw, nbytes) != 0)
		return -1;
	for (size_t i = 0; i < nbytes; i++) {
		buf[2 * i] = hex[raw[i] >> 4];
		buf[2 * i + 1] = hex[raw[i] & 15];
	}
	buf[2 * nbytes] = '\0';
	return 0;
}

uint64_t
rnd_u64(void)
{
	if (state == 0 && rnd_bytes(&state, sizeof state) != 0) {
		/* The kernel does not fail getrandom in practice; if it did,
		 * any distinct seed serves jitter. */
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		state = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
	}
	if (state == 0)
		state = 0x9E3779B97F4A7C15ULL;
	state ^= state >> 12;
	state ^= state << 25;
	state ^= state >> 27;
	return state * 0x2545F4914F6CDD1DULL;
}
