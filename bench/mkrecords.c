/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mkrecords COUNT PREFIX [KEY_FILE]: the decider side of the
 * benchmark. Writes to stdout, as RESP for `redis-cli --pipe`, COUNT jobs:
 *   HSET PREFIX:decision:bench-<i> record <R> state queued createdAt <now>
 *   XADD PREFIX:jobs * id bench-<i>
 * where <R> is the record (warrantd(7) §3.1) as plain JSON, or a JWS signed with the
 * key when one is given (with BENCH_NO_XADD=1 only the HSETs: bench/pace.c
 * enqueues later, at a steady rate; with BENCH_FIRST=N the ids start at bench-N, for
 * a feeder that tops a queue up batch by batch): ES256 with a PEM private key, HS256 with a file
 * whose name ends in ".secret" (the HMAC secret, trailing blanks dropped). Records are valid for $BENCH_EXPIRES_S (3600) s.
 * Built by bench/run.sh against the project's libwarrant.a; not part of the
 * daemon.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jose/jwa.h"
#include "core/record.h"
#include "base/wtime.h"

/* One RESP bulk string. */
static void
put_bulk(const char *s)
{
	printf("$%zu\r\n", strlen(s));
	fwrite(s, 1, strlen(s), stdout);
	fputs("\r\n", stdout);
}

static void
put_command(int argc, const char *const argv[])
{
	printf("*%d\r\n", argc);
	for (int i = 0; i < argc; i++)
		put_bulk(argv[i]);
}

/* The whole file; caller frees; NULL on error. */
static unsigned char *
read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	long n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)) != NULL) {
		*len = fread(buf, 1, (size_t)n, f);
		buf[*len] = '\0';
	}
	fclose(f);
	return buf;
}

/* The record of job i as the decider would store it; caller frees. */
static char *
make_record(const char *id, long i, int64_t now_ms, int64_t expires_s, enum jwa_alg alg,
	    const unsigned char *key, size_t key_len)
{
	char decided[WTIME_RFC3339_LEN], expires[WTIME_RFC3339_LEN], resource[64];
	char *out = NULL;

	snprintf(resource, sizeof resource, "bench/%ld", i);
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:{s:I}, s:s, s:s, s:s, s:s}",
	    "recordId", id, "onBehalfOf", "operator:bench", "action", "gate.open",
	    "resource", resource, "parameters", "n", (json_int_t)i, "basis", "role:bench",
	    "decidedAt", wtime_format_rfc3339(now_ms - 1000, decided, sizeof decided),
	    "expiresAt", wtime_format_rfc3339(now_ms + expires_s * 1000, expires, sizeof expires),
	    "iss", "bench");

	if (o == NULL)
		return NULL;
	if (key != NULL)
		out = record_sign(alg, key, key_len, NULL, o);
	else
		out = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return out;
}

int
main(int argc, char **argv)
{
	unsigned char *key = NULL;
	size_t key_len = 0;
	const char *env = getenv("BENCH_EXPIRES_S");
	int64_t expires_s = env && *env ? strtoll(env, NULL, 10) : 3600;
	char hash[256], stream[256], id[64], created[WTIME_RFC3339_LEN];

	if (argc < 3 || argc > 4 || atol(argv[1]) <= 0 || expires_s <= 0) {
		fprintf(stderr, "usage: mkrecords COUNT PREFIX [KEY_FILE]\n");
		return 64;
	}
	if (argc == 4 && (key = read_file(argv[3], &key_len)) == NULL) {
		fprintf(stderr, "mkrecords: cannot read %s\n", argv[3]);
		return 1;
	}
	enum jwa_alg alg = JWA_ES256;
	size_t n = strlen(argc == 4 ? argv[3] : "");
	if (n > 7 && strcmp(argv[3] + n - 7, ".secret") == 0) {
		alg = JWA_HS256;
		while (key_len > 0 && strchr(" \t\r\n", key[key_len - 1]) != NULL)
			key[--key_len] = '\0';
	}
	int no_xadd = getenv("BENCH_NO_XADD") != NULL;
	long count = atol(argv[1]);
	const char *first_env = getenv("BENCH_FIRST");
	long first = first_env && *first_env ? atol(first_env) : 1;
	int64_t now = wtime_now_ms();
	wtime_format_rfc3339(now, created, sizeof created);
	snprintf(stream, sizeof stream, "%s:jobs", argv[2]);
	for (long i = first; i < first + count; i++) {
		snprintf(id, sizeof id, "bench-%ld", i);
		snprintf(hash, sizeof hash, "%s:decision:%s", argv[2], id);
		char *rec = make_record(id, i, now, expires_s, alg, key, key_len);
		if (rec == NULL) {
			fprintf(stderr, "mkrecords: cannot make record %ld\n", i);
			free(key);
			return 1;
		}
		const char *hset[] = { "HSET", hash, "record", rec, "state", "queued",
		    "createdAt", created };
		const char *xadd[] = { "XADD", stream, "*", "id", id };
		put_command(8, hset);
		if (!no_xadd)
			put_command(5, xadd);
		free(rec);
	}
	free(key);
	return fflush(stdout) == 0 ? 0 : 1;
}
