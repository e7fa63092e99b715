/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * warrantctl keygen: the decider's key made (warrantd(7) §9, warrantctl(1)).
 *
 *   PREFIX.key   what `decide --key` signs with: a PKCS#8 PEM private key
 *                (ES256: P-256, RS256: 3072 bits) or the HS256 secret
 *                (43 base64url characters, 256 random bits); mode 0600
 *   PREFIX.pub   the PEM public key, for verify_key_file (not for HS256,
 *                whose only key is the secret); mode 0644
 *   PREFIX.jwks  a JWKS of the one key, for verify_key_file, with kid, alg
 *                and use "sig"; mode 0644 (HS256: 0600, it holds the secret)
 *
 * The kid is --kid or the key's RFC 7638 thumbprint, printed on stdout for
 * `decide --kid`. Every file is made with O_CREAT | O_EXCL and its mode at
 * open (never wider for a moment, never through a symlink); when any of
 * them exists nothing is written, and a failure part-way removes what this
 * run made. No configuration and no Redis: it runs where the decider is.
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "base/rnd.h"
#include "jose/b64url.h"
#include "jose/jwa.h"
#include "jose/jwks.h"
#include "jose/jws.h"
#include "ctl/cli.h"
#include "ctl/cmds.h"

#define RSA_BITS	3072	/* NIST SP 800-57: past 2030; verify wants >= 2048 */
#define HS256_RAW	32	/* random bytes of the secret (RFC 7518 §3.2) */
#define EC_HALF		32	/* bytes of x and of y (P-256) */

enum { KG_KEY, KG_PUB, KG_JWKS, KG_NFILES };

/* One file to write: its text, secret or not. */
struct kg_file {
	const char *suffix;
	mode_t mode;
	char *text;		/* NULL: not written for this algorithm */
	size_t len;
	int secret;		/* wiped before it is freed */
	char path[PATH_MAX];
	int fd;			/* -1: closed, or not opened */
	int created;		/* by this run: removed after a failure */
};

struct kg_opts {
	enum jwa_alg alg;
	const char *kid, *out;
};

/* ---- options ---- */

static int
parse_alg(const char *s, enum jwa_alg *alg)
{
	for (int a = JWA_ES256; a < JWA_COUNT; a++)
		if (strcmp(s, jwa_name((enum jwa_alg)a)) == 0) {
			*alg = (enum jwa_alg)a;
			return 0;
		}
	return -1;
}

/* 0, 1 for -h, or an exit code. */
static int
parse_keygen(int argc, char **argv, struct kg_opts *o)
{
	static const struct option longopts[] = {
		{"alg", required_argument, NULL, 'a'},
		{"kid", required_argument, NULL, OPT_KID},
		{"out", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (ch == 'h')
			return 1;
		if (ch == 'a' && parse_alg(optarg, &o->alg) != 0)
			return cli_usage_error("keygen: --alg %s: the algorithms are ES256, RS256 "
			    "and HS256", optarg);
		else if (ch == OPT_KID)
			o->kid = optarg;
		else if (ch == 'o')
			o->out = optarg;
		else if (ch != 'a')
			return cli_unknown_option("keygen", argv);
	}
	if (optind < argc)
		return cli_usage_error("keygen: unexpected argument '%s'", argv[optind]);
	if (o->out == NULL || o->out[0] == '\0')
		return cli_usage_error("keygen: --out PREFIX is required");
	/* the checks verify_key_file's reader makes (jwks.c kid_ok) */
	if (o->kid != NULL && (o->kid[0] == '\0' || strlen(o->kid) > JWKS_KID_MAX))
		return cli_usage_error("keygen: --kid: 1 to %d bytes", JWKS_KID_MAX);
	for (const char *p = o->kid; p != NULL && *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return cli_usage_error("keygen: --kid: no control characters");
	return 0;
}

/* ---- the key and its texts ---- */

/* A BIGNUM parameter of pk as base64url, `pad` bytes (0: its own length). */
static json_t *
bn_param(const EVP_PKEY *pk, const char *name, int pad)
{
	BIGNUM *bn = NULL;
	unsigned char *buf = NULL;
	char *s = NULL;
	json_t *v = NULL;
	int len;

	if (EVP_PKEY_get_bn_param(pk, name, &bn) != 1)
		return NULL;
	len = pad > 0 ? pad : BN_num_bytes(bn);
	if ((buf = malloc((size_t)len)) != NULL && BN_bn2binpad(bn, buf, len) == len &&
	    (s = b64url_encode(buf, (size_t)len)) != NULL)
		v = json_string(s);
	free(s);
	free(buf);
	BN_free(bn);
	return v;
}

/* The public JWK's members of RFC 7638 (no kid yet). New reference or NULL. */
static json_t *
public_jwk(const EVP_PKEY *pk, enum jwa_alg alg)
{
	if (alg == JWA_ES256)
		return json_pack("{s:s, s:s, s:o*, s:o*}", "kty", "EC", "crv", "P-256",
		    "x", bn_param(pk, OSSL_PKEY_PARAM_EC_PUB_X, EC_HALF),
		    "y", bn_param(pk, OSSL_PKEY_PARAM_EC_PUB_Y, EC_HALF));
	return json_pack("{s:s, s:o*, s:o*}", "kty", "RSA",
	    "n", bn_param(pk, OSSL_PKEY_PARAM_RSA_N, 0),
	    "e", bn_param(pk, OSSL_PKEY_PARAM_RSA_E, 0));
}

/* A secure-heap BIO's bytes as a new string into f (wiped later). */
static int
take_bio(BIO *b, struct kg_file *f)
{
	char *data = NULL;
	long n = BIO_get_mem_data(b, &data);

	if (n <= 0 || (f->text = malloc((size_t)n)) == NULL)
		return -1;
	memcpy(f->text, data, (size_t)n);
	f->len = (size_t)n;
	return 0;
}

/* ES256 or RS256: the key pair's PEMs into files[KG_KEY], [KG_PUB], and
 * its public JWK into *jwk. 0 or -1. */
static int
make_pair(enum jwa_alg alg, struct kg_file *files, json_t **jwk)
{
	EVP_PKEY *pk = alg == JWA_ES256 ? EVP_EC_gen("P-256") : EVP_RSA_gen(RSA_BITS);
	BIO *priv = BIO_new(BIO_s_secmem()), *pub = BIO_new(BIO_s_mem());
	int rc = -1;

	if (pk != NULL && priv != NULL && pub != NULL &&
	    PEM_write_bio_PrivateKey(priv, pk, NULL, NULL, 0, NULL, NULL) == 1 &&
	    PEM_write_bio_PUBKEY(pub, pk) == 1 && take_bio(priv, &files[KG_KEY]) == 0 &&
	    take_bio(pub, &files[KG_PUB]) == 0 && (*jwk = public_jwk(pk, alg)) != NULL)
		rc = 0;
	BIO_free(priv);	/* a secure-heap BIO is wiped when freed */
	BIO_free(pub);
	EVP_PKEY_free(pk);
	ERR_clear_error();
	return rc;
}

/* HS256: 256 random bits as base64url text, which the file holds (the
 * HMAC key is those bytes: text, never a raw byte that the reader's trimming
 * could cut); the JWK's k is the same bytes, encoded. 0 or -1. */
static int
make_secret(struct kg_file *f, json_t **jwk)
{
	unsigned char raw[HS256_RAW];
	char *text, *k;
	size_t n;

	if (rnd_bytes(raw, sizeof raw) != 0)
		return -1;
	text = b64url_encode(raw, sizeof raw);
	OPENSSL_cleanse(raw, sizeof raw);
	if (text == NULL)
		return -1;
	n = strlen(text);
	if ((f->text = malloc(n + 1)) != NULL) {
		memcpy(f->text, text, n);
		f->text[n] = '\n';
		f->len = n + 1;
	}
	k = b64url_encode((unsigned char *)text, n);
	OPENSSL_clear_free(text, n);
	*jwk = k != NULL ? json_pack("{s:s, s:s}", "kty", "oct", "k", k) : NULL;
	if (k != NULL)
		OPENSSL_clear_free(k, strlen(k));
	return f->text != NULL && *jwk != NULL ? 0 : -1;
}

/* The JWKS text of jwk with kid, alg and use; kid_out: the kid used (a
 * new string). 0 or -1. */
static int
make_jwks(json_t *jwk, const struct kg_opts *o, struct kg_file *f, char **kid_out)
{
	char *thumb = o->kid == NULL ? jws_jwk_thumbprint(jwk) : NULL;
	const char *kid = o->kid != NULL ? o->kid : thumb;
	json_t *doc = NULL;

	*kid_out = kid != NULL ? strdup(kid) : NULL;
	if (*kid_out != NULL && json_object_set_new(jwk, "kid", json_string(kid)) == 0 &&
	    json_object_set_new(jwk, "alg", json_string(jwa_name(o->alg))) == 0 &&
	    json_object_set_new(jwk, "use", json_string("sig")) == 0)
		doc = json_pack("{s:[O]}", "keys", jwk);
	free(thumb);
	f->text = doc != NULL ? json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
	json_decref(doc);
	if (f->text == NULL)
		return -1;
	f->len = strlen(f->text);
	f->text[f->len++] = '\n';	/* json_dumps' NUL: its room for the newline */
	return 0;
}

/* ---- the files ---- */

static void
files_release(struct kg_file *files)
{
	for (int i = 0; i < KG_NFILES; i++) {
		if (files[i].text == NULL)
			continue;
		if (files[i].secret)
			OPENSSL_cleanse(files[i].text, files[i].len);
		free(files[i].text);
		files[i].text = NULL;
	}
}

/* Removes what this run created (after a failure). */
static void
files_undo(struct kg_file *files)
{
	for (int i = 0; i < KG_NFILES; i++) {
		if (files[i].fd >= 0)
			(void)close(files[i].fd);
		if (files[i].created)
			(void)unlink(files[i].path);
		files[i].fd = -1;
		files[i].created = 0;
	}
}

/* Creates every file to be written, none if one exists. 0 or an exit code
 * (said). */
static int
files_create(struct kg_file *files, const char *prefix)
{
	for (int i = 0; i < KG_NFILES; i++) {
		struct kg_file *f = &files[i];
		if (f->text == NULL)
			continue;
		if ((size_t)snprintf(f->path, sizeof f->path, "%s%s", prefix, f->suffix) >=
		    sizeof f->path) {
			files_undo(files);
			return cli_usage_error("keygen: --out %s: the name is too long", prefix);
		}
		/* the mode at open, as umask narrows it: never wider, not for a moment */
		f->fd = open(f->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		    f->mode);
		if (f->fd < 0) {
			int e = errno;
			files_undo(files);
			if (e == EEXIST)
				cli_say("keygen: %s exists: refusing to overwrite it (nothing written)",
				    f->path);
			else
				cli_say("keygen: cannot create %s: %s", f->path, strerror(e));
			return EX_REFUSED;
		}
		f->created = 1;
	}
	return 0;
}

static int
write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Writes, syncs and closes each; on a failure removes them all. 0 or an
 * exit code (said). */
static int
files_write(struct kg_file *files)
{
	for (int i = 0; i < KG_NFILES; i++) {
		struct kg_file *f = &files[i];
		if (f->fd < 0)
			continue;
		if (write_all(f->fd, f->text, f->len) != 0 || fsync(f->fd) != 0) {
			cli_say("keygen: cannot write %s: %s", f->path, strerror(errno));
			files_undo(files);
			return EX_REFUSED;
		}
	}
	for (int i = 0; i < KG_NFILES; i++) {
		struct kg_file *f = &files[i];
		int fd = f->fd;
		f->fd = -1;	/* closed either way (POSIX leaves it unspecified) */
		if (fd >= 0 && close(fd) != 0) {
			cli_say("keygen: cannot write %s: %s", f->path, strerror(errno));
			files_undo(files);
			return EX_REFUSED;
		}
	}
	return 0;
}

/* ---- the command ---- */

int
cmd_keygen(struct cli *c, int argc, char **argv)
{
	struct kg_opts o = {.alg = JWA_ES256};
	int hs = 0, rc;
	struct kg_file files[KG_NFILES] = {
		[KG_KEY] = {.suffix = ".key", .mode = 0600, .secret = 1, .fd = -1},
		[KG_PUB] = {.suffix = ".pub", .mode = 0644, .fd = -1},
		[KG_JWKS] = {.suffix = ".jwks", .mode = 0644, .fd = -1},
	};
	json_t *jwk = NULL;
	char *kid = NULL;

	(void)c;	/* no configuration: the decider's machine may have none */
	if ((rc = parse_keygen(argc, argv, &o)) != 0) {
		if (rc == 1)
			fputs(cli_usage_text, stdout);
		return rc == 1 ? 0 : rc;
	}
	hs = o.alg == JWA_HS256;
	files[KG_JWKS].secret = hs;
	files[KG_JWKS].mode = hs ? 0600 : 0644;
	if ((hs ? make_secret(&files[KG_KEY], &jwk) : make_pair(o.alg, files, &jwk)) != 0 ||
	    make_jwks(jwk, &o, &files[KG_JWKS], &kid) != 0) {
		cli_say("keygen: cannot make the %s key", jwa_name(o.alg));
		rc = EX_REFUSED;
	} else if ((rc = files_create(files, o.out)) == 0 && (rc = files_write(files)) == 0)
		printf("%s\n", kid);
	if (hs && jwk != NULL) {	/* its k is the secret */
		json_t *k = json_object_get(jwk, "k");
		if (json_is_string(k))
			OPENSSL_cleanse((char *)json_string_value(k), json_string_length(k));
	}
	json_decref(jwk);
	free(kid);
	files_release(files);
	return rc;
}
