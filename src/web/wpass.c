/* SPDX-License-Identifier: BSD-2-Clause */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "jose/b64url.h"
#include "wpass.h"

#define SCHEME	"pbkdf2-sha256"
#define DKLEN	32
#define ITER_MIN 1000		/* below: not a hash we wrote */
#define ITER_MAX 100000000L	/* above: a line that would stall logins */

int
wpass_user_valid(const char *user)
{
	size_t n = strlen(user);

	if (n == 0 || n >= WPASS_USER_MAX)
		return 0;
	for (const char *p = user; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-'))
			return 0;
	return 1;
}

static int
derive(const char *pw, size_t pwlen, const unsigned char *salt, size_t saltlen, long iter,
       unsigned char *dk)
{
	return PKCS5_PBKDF2_HMAC(pw, (int)pwlen, salt, (int)saltlen, (int)iter, EVP_sha256(),
	    DKLEN, dk) == 1 ? 0 : -1;
}

int
wpass_hash(const char *pw, size_t pwlen, const unsigned char *salt, size_t saltlen, long iter,
	   char *out, size_t n)
{
	unsigned char dk[DKLEN];
	char *s = NULL, *h = NULL;
	int rc = -1;

	if (iter < ITER_MIN || iter > ITER_MAX || saltlen == 0 || saltlen > 64 ||
	    derive(pw, pwlen, salt, saltlen, iter, dk) < 0)
		return -1;
	if ((s = b64url_encode(salt, saltlen)) != NULL && (h = b64url_encode(dk, DKLEN)) != NULL) {
		int w = snprintf(out, n, SCHEME "$%ld$%s$%s", iter, s, h);
		rc = w > 0 && (size_t)w < n ? 0 : -1;
	}
	OPENSSL_cleanse(dk, sizeof dk);
	free(s);
	free(h);
	return rc;
}

int
wpass_check(const char *encoded, const char *pw, size_t pwlen)
{
	unsigned char dk[DKLEN], *salt = NULL, *want = NULL;
	size_t saltlen = 0, wantlen = 0;
	const char *p = encoded, *d1, *d2;
	char *end;
	long iter;
	int rc = -1;

	if (strncmp(p, SCHEME "$", sizeof SCHEME) != 0)
		return -1;
	p += sizeof SCHEME;
	iter = strtol(p, &end, 10);
	if (end == p || *end != '$' || iter < ITER_MIN || iter > ITER_MAX)
		return -1;
	d1 = end + 1;
	if ((d2 = strchr(d1, '$')) == NULL || d2 == d1)
		return -1;
	if (b64url_decode(d1, (size_t)(d2 - d1), &salt, &saltlen) == 0 &&
	    b64url_decode(d2 + 1, strlen(d2 + 1), &want, &wantlen) == 0 && wantlen == DKLEN &&
	    saltlen > 0 && saltlen <= 64 && derive(pw, pwlen, salt, saltlen, iter, dk) == 0) {
		rc = CRYPTO_memcmp(dk, want, DKLEN) == 0 ? 1 : 0;
		OPENSSL_cleanse(dk, sizeof dk);
	}
	free(salt);
	free(want);
	return rc;
}

/* The line of `user` in text: its start, or NULL. */
static const char *
line_of(const char *text, const char *user, size_t *linelen)
{
	size_t ulen = strlen(user);

	for (const char *l = text; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l);
		if (len > ulen && l[ulen] == ':' && strncmp(l, user, ulen) == 0) {
			*linelen = len;
			return l;
		}
		l = nl ? nl + 1 : NULL;
	}
	return NULL;
}

int
wpass_find(const char *text, const char *user, char *out, size_t n)
{
	size_t len = 0, ulen = strlen(user);
	const char *l;

	if (!wpass_user_valid(user) || (l = line_of(text, user, &len)) == NULL)
		return -1;
	len -= ulen + 1;
	if (len > 0 && l[ulen + len] == '\r')
		len--;
	if (len >= n)
		return -1;
	memcpy(out, l + ulen + 1, len);
	out[len] = '\0';
	return 0;
}

char *
wpass_set(const char *text, const char *user, const char *encoded)
{
	size_t len = 0, tlen = strlen(text), add = strlen(user) + 1 + strlen(encoded) + 1;
	const char *l = line_of(text, user, &len);
	char *out = malloc(tlen + add + 2);

	if (out == NULL)
		return NULL;
	if (l != NULL) {
		size_t before = (size_t)(l - text);
		const char *rest = l + len;
		if (*rest == '\n')
			rest++;
		snprintf(out, tlen + add + 2, "%.*s%s:%s\n%s", (int)before, text, user, encoded,
		    rest);
	} else {
		int nl = tlen > 0 && text[tlen - 1] != '\n';
		snprintf(out, tlen + add + 2, "%s%s%s:%s\n", text, nl ? "\n" : "", user, encoded);
	}
	return out;
}
