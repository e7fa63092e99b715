/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * dpopcost KEYFILE [N]: what a DPoP proof (RFC 9449) costs a call -- N
 * proofs signed with dpop.c as start_call makes them (method, URL, token
 * for ath; the key parsed once), CPU time per proof in microseconds, and
 * the proof's length (the header it adds). Part of make bench.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jose/dpop.h"

static double
cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	static unsigned char pem[16384];
	char err[200], token[900];
	long n = argc > 2 ? strtol(argv[2], NULL, 10) : 20000;
	size_t len, plen = 0;
	FILE *f;

	if (argc < 2 || (f = fopen(argv[1], "rb")) == NULL)
		return fprintf(stderr, "usage: dpopcost KEYFILE [N]\n"), 64;
	len = fread(pem, 1, sizeof pem, f);
	fclose(f);
	struct dpop *d = dpop_new(pem, len, err, sizeof err);
	if (d == NULL)
		return fprintf(stderr, "dpopcost: %s\n", err), 1;
	/* a token of a typical JWT's size */
	memset(token, 'a', sizeof token - 1);
	token[sizeof token - 1] = '\0';
	(void)dpop_nonce_keep(d, "https://gates.example", "n-0123456789");
	double t0 = cpu_s();
	for (long i = 0; i < n; i++) {
		char *p = dpop_proof(d, "POST", "https://gates.example/gates/lock%2F7/open?x=1",
		    token, 1795000000000LL + i);
		if (p == NULL)
			return fprintf(stderr, "dpopcost: no proof\n"), 1;
		plen = strlen(p);
		dpop_proof_free(p);
	}
	double us = (cpu_s() - t0) * 1e6 / (double)(n > 0 ? n : 1);
	printf("dpop proof: %.1f us CPU each (%ld proofs), %zu bytes\n", us, n, plen);
	dpop_free(d);
	return 0;
}
