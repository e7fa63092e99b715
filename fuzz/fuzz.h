/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz: what the libFuzzer targets share. Each target is one file
 * fuzz_<name>.c with LLVMFuzzerTestOneInput, built by `make fuzz` with clang
 * -fsanitize=fuzzer,address,undefined against the same sources as the daemon.
 */
#ifndef WARRANTD_FUZZ_H
#define WARRANTD_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The input as a NUL-terminated string (the parsers take C strings); an
 * embedded NUL simply ends it, as it would in a Redis reply or a file.
 * Caller frees. */
static inline char *
fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (s == NULL)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* A file of tests/data (FUZZ_DATA_DIR), whole; aborts when missing. */
static inline unsigned char *
fuzz_data_file(const char *name, size_t *len)
{
	char path[512];
	FILE *f;
	unsigned char *buf = malloc(65536);

	snprintf(path, sizeof path, "%s/%s", FUZZ_DATA_DIR, name);
	if (buf == NULL || (f = fopen(path, "rb")) == NULL) {
		fprintf(stderr, "fuzz: cannot read %s\n", path);
		abort();
	}
	*len = fread(buf, 1, 65535, f);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

/* The harness's own base64url decoder (RFC 4648 §5), kept apart from
 * src/jose/b64url.c so that the properties the targets check do not rest on the
 * code under test: NULL for any character outside the alphabet or a length
 * no encoding has. Trailing '=' are dropped when pad_ok, else refused; the
 * unused low bits of the last character are ignored. Caller frees;
 * NUL-terminated. */
static inline unsigned char *
fuzz_b64url_decode(const char *s, size_t n, int pad_ok, size_t *out_len)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	unsigned char *out;
	unsigned acc = 0;
	int bits = 0;
	size_t len = 0;

	while (pad_ok && n > 0 && s[n - 1] == '=')
		n--;
	if (n % 4 == 1 || (out = malloc(n + 1)) == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const char *p = s[i] != '\0' ? strchr(a, s[i]) : NULL;
		if (p == NULL) {
			free(out);
			return NULL;
		}
		acc = (acc << 6) | (unsigned)(p - a);
		if ((bits += 6) >= 8) {
			bits -= 8;
			out[len++] = (unsigned char)(acc >> bits);
		}
	}
	out[len] = '\0';
	*out_len = len;
	return out;
}

/* The three segments of a JWS compact serialization: 0 with the offsets of
 * its two dots, -1 when it has not exactly two. */
static inline int
fuzz_jws_split(const char *tok, size_t *dot1, size_t *dot2)
{
	const char *d1 = strchr(tok, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;

	if (d2 == NULL || strchr(d2 + 1, '.') != NULL)
		return -1;
	*dot1 = (size_t)(d1 - tok);
	*dot2 = (size_t)(d2 - tok);
	return 0;
}

#endif
