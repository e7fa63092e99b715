/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * shard: the hash-tag rule of Redis Cluster keys, and how many shards a
 * deployment may have ([redis] shards, warrantd(7) §2). Pure: config checks
 * a prefix with it, cluster routes a key's slot with it.
 */
#ifndef WARRANTD_SHARD_H
#define WARRANTD_SHARD_H

#include <stddef.h>

#define SHARD_MAX	1024	/* [redis] shards */

/* The hash tag of the len bytes at key: the bytes between the first '{'
 * and the next '}'. 1 with *start and *n set when it is non-empty, else 0
 * ("{}" or no '}': the whole key is hashed). */
int shard_tag(const char *key, size_t len, size_t *start, size_t *n);

/* 1 when the string key has a non-empty hash tag (so all keys built from it
 * as a prefix share its slot), else 0. */
int shard_has_tag(const char *key);

#endif
