/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for src/jose/b64url.c: RFC 4648 vectors, strict and lax decoding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jose/b64url.h"

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* RFC 4648 §10, with the padding taken off as RFC 7515 §2 wants. */
static const struct {
	const char *raw, *enc, *padded;
} rfc4648[] = {
	{"", "", ""},
	{"f", "Zg", "Zg=="},
	{"fo", "Zm8", "Zm8="},
	{"foo", "Zm9v", "Zm9v"},
	{"foob", "Zm9vYg", "Zm9vYg=="},
	{"fooba", "Zm9vYmE", "Zm9vYmE="},
	{"foobar", "Zm9vYmFy", "Zm9vYmFy"},
};

#define NVECTORS (sizeof rfc4648 / sizeof rfc4648[0])

/* Decodes s whole with the strict or the lax decoder; asserts it is
 * accepted, gives want and is NUL-terminated. */
static void
assert_decodes(int lax, const char *s, const void *want, size_t want_len)
{
	unsigned char *out = NULL;
	size_t len = 12345;
	int rc = lax ? b64url_decode_lax(s, strlen(s), &out, &len) :
	    b64url_decode(s, strlen(s), &out, &len);

	if (rc != 0)
		fail_msg("%s decoder refused \"%s\"", lax ? "lax" : "strict", s);
	assert_non_null(out);
	assert_int_equal(len, want_len);
	assert_memory_equal(out, want, want_len);
	assert_int_equal(out[len], '\0');
	free(out);
}

/* n characters of s refused: -1 and *out, *out_len left alone. */
static void
assert_refused(int lax, const char *s, size_t n)
{
	unsigned char sentinel, *out = &sentinel;
	size_t len = 12345;
	int rc = lax ? b64url_decode_lax(s, n, &out, &len) : b64url_decode(s, n, &out, &len);

	if (rc != -1)
		fail_msg("%s decoder accepted \"%.*s\"", lax ? "lax" : "strict", (int)n, s);
	assert_ptr_equal(out, &sentinel);
	assert_int_equal(len, 12345);
}

static void
test_encode_rfc4648(void **state)
{
	(void)state;
	for (size_t i = 0; i < NVECTORS; i++) {
		char *s = b64url_encode((const unsigned char *)rfc4648[i].raw,
		    strlen(rfc4648[i].raw));
		assert_non_null(s);
		assert_string_equal(s, rfc4648[i].enc);
		free(s);
	}
}

static void
test_decode_rfc4648(void **state)
{
	(void)state;
	for (size_t i = 0; i < NVECTORS; i++) {
		const char *raw = rfc4648[i].raw;
		assert_decodes(0, rfc4648[i].enc, raw, strlen(raw));
		assert_decodes(1, rfc4648[i].enc, raw, strlen(raw));
		assert_decodes(1, rfc4648[i].padded, raw, strlen(raw));
	}
}

/* 62 and 63 are '-' and '_' (RFC 4648 §5), not '+' and '/'. */
static void
test_url_alphabet(void **state)
{
	static const unsigned char raw[] = {0xfb, 0xff, 0xbf, 0xfb, 0xef};
	char *s = b64url_encode(raw, sizeof raw);

	(void)state;
	assert_non_null(s);
	assert_string_equal(s, "-_-_--8");
	free(s);
	assert_decodes(0, "-_-_--8", raw, sizeof raw);
	assert_refused(0, "+/+/++8", 7);
	assert_refused(1, "+/+/++8", 7);
}

/* Every byte value, at every position within a 3-byte group. */
static void
test_round_trip(void **state)
{
	unsigned char raw[256 + 2];

	(void)state;
	for (size_t i = 0; i < sizeof raw; i++)
		raw[i] = (unsigned char)(i * 7 + 3);
	for (size_t n = 0; n <= sizeof raw; n += n < 8 ? 1 : 83) {
		for (size_t shift = 0; shift < 3 && shift + n <= sizeof raw; shift++) {
			char *s = b64url_encode(raw + shift, n);
			assert_non_null(s);
			assert_int_equal(strlen(s), (n * 4 + 2) / 3);
			assert_decodes(0, s, raw + shift, n);
			free(s);
		}
	}
	for (int b = 0; b < 256; b++) {
		unsigned char byte = (unsigned char)b;
		char *s = b64url_encode(&byte, 1);
		assert_non_null(s);
		assert_decodes(0, s, &byte, 1);
		free(s);
	}
}

static void
test_strict_refuses(void **state)
{
	static const char *const bad[] = {
		"Zg==", "Zm8=", "Zg=", "Zm9v=",	/* padding */
		"Zh", "Zm9", "Zm9vYh", "_x",	/* unused low bits set */
		"Z", "Zm9vY", "Zm9vYmFyZ",	/* 1 mod 4: not a whole byte */
		"Zm+v", "Zm/v", "Z=9v", "Zm9v ", " Zm9v", "Zm9v\n", "Zm.v", "Zm9\x80",
	};

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_refused(0, bad[i], strlen(bad[i]));
	/* A NUL inside the n characters is not the end. */
	assert_refused(0, "Zm\0v", 4);
}

/* Padding and stray low bits pass; anything else is still refused. */
static void
test_lax(void **state)
{
	static const char *const bad[] = {
		"Z", "Z=", "Z===", "Zm9vY", "Zm+v", "Zm/v", "Z=g", "=Zg", "Zm9v ", "Zm.v",
	};

	(void)state;
	assert_decodes(1, "Zg", "f", 1);
	assert_decodes(1, "Zg=", "f", 1);
	assert_decodes(1, "Zh", "f", 1);
	assert_decodes(1, "Zh==", "f", 1);
	assert_decodes(1, "Zm9", "fo", 2);
	assert_decodes(1, "====", "", 0);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_refused(1, bad[i], strlen(bad[i]));
	assert_refused(1, "Zm\0v", 4);
}

/* Only the first n characters count, wherever the string ends. */
static void
test_length_bounds(void **state)
{
	static const char s[] = "Zm9vYmFy";
	unsigned char *out;
	size_t len;

	(void)state;
	assert_int_equal(b64url_decode(s, 4, &out, &len), 0);
	assert_int_equal(len, 3);
	assert_string_equal((char *)out, "foo");
	free(out);
	assert_int_equal(b64url_decode_lax(s, 6, &out, &len), 0);
	assert_int_equal(len, 4);
	assert_string_equal((char *)out, "foob");
	free(out);
	assert_int_equal(b64url_decode(s, 0, &out, &len), 0);
	assert_int_equal(len, 0);
	assert_string_equal((char *)out, "");
	free(out);
}

/*
 * Strict decoding gives each byte string exactly one spelling: of all 2- and
 * 3-character strings it accepts exactly those the encoder writes (256 for
 * one byte, 65536 for two). The lax decoder accepts them all and reads the
 * same bytes as the strict one does from the spelling with the stray bits
 * cleared.
 */
static void
test_one_spelling(void **state)
{
	char s[4] = "", canon[4];
	size_t accepted[4] = {0};

	(void)state;
	for (size_t n = 2; n <= 3; n++) {
		for (unsigned code = 0; code < (n == 2 ? 64u * 64 : 64u * 64 * 64); code++) {
			unsigned char *out, *lax_out;
			size_t len, lax_len;
			unsigned stray = n == 2 ? 15 : 3;	/* bits past the last byte */

			for (size_t i = 0; i < n; i++)
				s[i] = alphabet[(code >> (6 * (n - 1 - i))) & 63];
			memcpy(canon, s, n);
			canon[n - 1] = alphabet[(code & 63) & ~stray];
			assert_int_equal(b64url_decode_lax(s, n, &lax_out, &lax_len), 0);
			if (b64url_decode(s, n, &out, &len) == 0) {
				char *again = b64url_encode(out, len);
				assert_non_null(again);
				assert_memory_equal(again, s, n);
				assert_int_equal(again[n], '\0');
				free(again);
				free(out);
				accepted[n]++;
			}
			assert_int_equal(b64url_decode(canon, n, &out, &len), 0);
			assert_int_equal(lax_len, len);
			assert_memory_equal(lax_out, out, len);
			free(out);
			free(lax_out);
		}
	}
	assert_int_equal(accepted[2], 256);
	assert_int_equal(accepted[3], 65536);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode_rfc4648),
		cmocka_unit_test(test_decode_rfc4648),
		cmocka_unit_test(test_url_alphabet),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_strict_refuses),
		cmocka_unit_test(test_lax),
		cmocka_unit_test(test_length_bounds),
		cmocka_unit_test(test_one_spelling),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
