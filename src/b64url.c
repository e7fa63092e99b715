/* b64url: base64url (RFC 4648 §5) without padding. */
#include "b64url.h"

#include <stdint.h>
#include <stdlib.h>

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static int
value_of(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return -1;
}

char *
b64url_encode(const unsigned char *in, size_t n)
{
	char *out;
	size_t len = 0;
	unsigned acc = 0;
	int bits = 0;

	if (n > (SIZE_MAX - 4) / 4 * 3 || (out = malloc(n / 3 * 4 + 4)) == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		acc = (acc << 8) | in[i];
		bits += 8;
		while (bits >= 6) {
			bits -= 6;
			out[len++] = alphabet[(acc >> bits) & 63];
		}
		acc &= (1u << bits) - 1;
	}
	if (bits > 0)
		out[len++] = alphabet[(acc << (6 - bits)) & 63];
	out[len] = '\0';
	return out;
}

/* What is left in acc after the last whole byte are the unused low bits of
 * the last character: strict decoding wants them zero. */
static int
decode(const char *s, size_t n, int strict, unsigned char **out, size_t *out_len)
{
	unsigned char *buf;
	size_t len = 0;
	unsigned acc = 0;
	int bits = 0;

	if (!strict)
		while (n > 0 && s[n - 1] == '=')
			n--;
	if (n % 4 == 1 || (buf = malloc(n / 4 * 3 + 3)) == NULL)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int v = value_of((unsigned char)s[i]);
		if (v < 0) {
			free(buf);
			return -1;
		}
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[len++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	if (strict && acc != 0) {
		free(buf);
		return -1;
	}
	buf[len] = '\0';
	*out = buf;
	*out_len = len;
	return 0;
}

int
b64url_decode(const char *s, size_t n, unsigned char **out, size_t *out_len)
{
	return decode(s, n, 1, out, out_len);
}

int
b64url_decode_lax(const char *s, size_t n, unsigned char **out, size_t *out_len)
{
	return decode(s, n, 0, out, out_len);
}
