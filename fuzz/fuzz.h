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

#endif
