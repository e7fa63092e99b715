/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * testlib: small helpers the unit tests share (header only: each test is one
 * program). Include after <cmocka.h>.
 */
#ifndef WARRANTD_TESTLIB_H
#define WARRANTD_TESTLIB_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

/* A well-mixed word from a counter (splitmix64's finaliser): random-looking
 * inputs that are the same on every run. */
static inline uint64_t
mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

/* The whole file at `path`, NUL-terminated (caller frees), its length in
 * *len; NULL when it cannot be read. */
static inline unsigned char *
read_whole(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *b = NULL;
	long n;

	*len = 0;
	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (b = malloc((size_t)n + 1)) != NULL) {
		*len = fread(b, 1, (size_t)n, f);
		b[*len] = '\0';
	}
	fclose(f);
	return b;
}

/* ---- Redis replies built by hand; every node is freed by tree_free ---- */

static inline redisReply *
node(int type)
{
	redisReply *r = calloc(1, sizeof *r);

	assert_non_null(r);
	r->type = type;
	return r;
}

static inline redisReply *
str(const char *s)
{
	redisReply *r = node(REDIS_REPLY_STRING);

	r->len = strlen(s);
	r->str = malloc(r->len + 1);
	assert_non_null(r->str);
	memcpy(r->str, s, r->len + 1);
	return r;
}

/* A string of len bytes, NULs included: what Redis sends is length-delimited. */
static inline redisReply *
strn(const char *s, size_t len)
{
	redisReply *r = node(REDIS_REPLY_STRING);

	r->len = len;
	r->str = malloc(len + 1);
	assert_non_null(r->str);
	memcpy(r->str, s, len);
	r->str[len] = '\0';
	return r;
}

static inline redisReply *
num(long long n)
{
	redisReply *r = node(REDIS_REPLY_INTEGER);

	r->integer = n;
	return r;
}

static inline redisReply *
err(const char *s)
{
	redisReply *r = str(s);

	r->type = REDIS_REPLY_ERROR;
	return r;
}

/* An array of n replies (taken over). */
static inline redisReply *
arr(size_t n, ...)
{
	redisReply *r = node(REDIS_REPLY_ARRAY);
	va_list ap;

	r->elements = n;
	r->element = calloc(n + 1, sizeof *r->element);
	assert_non_null(r->element);
	va_start(ap, n);
	for (size_t i = 0; i < n; i++)
		r->element[i] = va_arg(ap, redisReply *);
	va_end(ap);
	return r;
}

static inline void
tree_free(redisReply *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++)
		tree_free(r->element[i]);
	free(r->element);
	free(r->str);
	free(r);
}

#endif
