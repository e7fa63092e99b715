/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unit test for src/http/http.c (warrantd(7) §9, issue 8): libcurl never holds its own
 * copy of a request's secrets (no CURLOPT_USERPWD, no CURLOPT_COPYPOSTFIELDS),
 * and our copies — the header lines with the bearer or the Basic
 * credentials, the form body with the client secret — are wiped before the
 * easy handle is cleaned up and they are freed.
 *
 * Linked with -Wl,--wrap=curl_easy_setopt,--wrap=curl_easy_cleanup,
 * --wrap=curl_easy_reset (see the Makefile): the wrappers see every option
 * http.c sets and look at the buffers at the moment curl lets go of them --
 * the header list or the body taken back from a handle kept for the next
 * call (set to NULL), a reset, or a cleanup. No network: the request goes to
 * 127.0.0.1:1, which refuses it.
 */
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <ev.h>

#include "http/http.h"

#define SECRET "s3cr3t-Wipe-Me"

CURLcode __real_curl_easy_setopt(CURL *h, CURLoption opt, ...);
CURLcode __wrap_curl_easy_setopt(CURL *h, CURLoption opt, ...);
void __real_curl_easy_cleanup(CURL *h);
void __wrap_curl_easy_cleanup(CURL *h);
void __real_curl_easy_reset(CURL *h);
void __wrap_curl_easy_reset(CURL *h);

static struct {
	int userpwd, copypostfields, cleanups, bodies_checked;
	const unsigned char *body;
	const struct curl_slist *headers;
	size_t header_len[16];
	size_t nheaders;
	int saw_basic, saw_bearer, not_wiped;
} seen;

static int
all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0)
			return 0;
	return 1;
}

static void let_go(void);

/* curl encodes an option's argument type in its number. */
CURLcode
__wrap_curl_easy_setopt(CURL *h, CURLoption opt, ...)
{
	va_list ap;
	CURLcode rc;

	va_start(ap, opt);
	if (opt < CURLOPTTYPE_OBJECTPOINT) {
		rc = __real_curl_easy_setopt(h, opt, va_arg(ap, long));
	} else if (opt >= CURLOPTTYPE_OFF_T && opt < CURLOPTTYPE_BLOB) {
		rc = __real_curl_easy_setopt(h, opt, va_arg(ap, curl_off_t));
	} else {
		void *p = va_arg(ap, void *);
		if ((opt == CURLOPT_HTTPHEADER || opt == CURLOPT_POSTFIELDS) && p == NULL &&
		    (seen.body != NULL || seen.headers != NULL))
			let_go();
		if (opt == CURLOPT_USERPWD || opt == CURLOPT_PASSWORD)
			seen.userpwd++;
		if (opt == CURLOPT_COPYPOSTFIELDS)
			seen.copypostfields++;
		if (opt == CURLOPT_POSTFIELDS && p != NULL)
			seen.body = p;
		if (opt == CURLOPT_HTTPHEADER && p != NULL) {
			seen.headers = p;
			seen.nheaders = 0;
			for (const struct curl_slist *l = p; l && seen.nheaders < 16; l = l->next) {
				seen.header_len[seen.nheaders++] = strlen(l->data);
				seen.saw_basic |= strncmp(l->data, "Authorization: Basic ", 21) == 0;
				seen.saw_bearer |= strstr(l->data, SECRET) != NULL;
			}
		}
		rc = __real_curl_easy_setopt(h, opt, p);
	}
	va_end(ap);
	return rc;
}

/* By now nothing may be left of the secrets in our buffers; they are
 * freed after this, so they are looked at once. */
static void
let_go(void)
{
	size_t i = 0;

	seen.cleanups++;
	seen.bodies_checked += seen.body != NULL;
	if (seen.body != NULL && !all_zero(seen.body, strlen("client_secret=" SECRET)))
		seen.not_wiped++;
	for (const struct curl_slist *l = seen.headers; l && i < seen.nheaders; l = l->next, i++)
		if (!all_zero((const unsigned char *)l->data, seen.header_len[i]))
			seen.not_wiped++;
	seen.body = NULL;
	seen.headers = NULL;
}

void
__wrap_curl_easy_cleanup(CURL *h)
{
	if (seen.body != NULL || seen.headers != NULL)
		let_go();
	__real_curl_easy_cleanup(h);
}

void
__wrap_curl_easy_reset(CURL *h)
{
	let_go();
	__real_curl_easy_reset(h);
}

static int done;

static void
on_done(const struct http_response *resp, void *arg)
{
	(void)resp;
	(void)arg;
	done = 1;
}

static void
test_secrets_wiped(void **state)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct http_client *hc = http_client_new(loop);
	const char *headers[] = {"Authorization: Bearer " SECRET, "Content-Type: text/plain", NULL};
	const char body[] = "client_secret=" SECRET;
	struct http_request req = {
		.method = "POST", .url = "http://127.0.0.1:1/token", .headers = headers,
		.body = body, .body_len = sizeof body - 1, .timeout_ms = 5000,
		.userpwd = "client:" SECRET,
	};

	(void)state;
	assert_non_null(hc);
	assert_int_equal(http_start(hc, &req, on_done, NULL, NULL), 0);
	for (int i = 0; i < 500 && !done; i++)
		ev_run(loop, EVRUN_ONCE);
	assert_true(done);
	http_client_free(hc);
	ev_loop_destroy(loop);

	assert_int_equal(seen.userpwd, 0);		/* Basic is our own header line */
	assert_int_equal(seen.copypostfields, 0);	/* the body is our buffer */
	assert_true(seen.saw_basic);
	assert_true(seen.saw_bearer);
	assert_int_equal(seen.bodies_checked, 1);
	assert_true(seen.cleanups >= 1);
	assert_int_equal(seen.not_wiped, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_secrets_wiped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
