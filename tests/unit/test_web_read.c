/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * warrantd-web's reader (wread) made from a configuration: [redis] tls,
 * sentinels and cluster are accepted (it reads through warrantctl's handle,
 * clir, which follows them), no connection is made at wread_new, and a
 * [redis] tls file it cannot read is said then (so -t and the start see
 * it), not at the first page.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conf/config.h"
#include "wread.h"

#define TAIL "[records]\nsignature = off\n[action gate.open]\n" \
	"url = http://127.0.0.1:1/{resource}\nauth = none\nallow_http = yes\n" \
	"[redis.monitor]\nusername = warrant-monitor\npassword_file = /nonexistent/mon.pw\n"

static struct cfg *
load(const char *text)
{
	const struct cfg_env env = {"host", "/tmp"};
	struct cfg_errors errs = {0};
	struct cfg *cfg = cfg_parse("t.ini", text, strlen(text), &env, &errs);

	for (size_t i = 0; i < errs.n; i++)
		fprintf(stderr, "%s\n", errs.msgs[i]);
	cfg_errors_clear(&errs);
	assert_non_null(cfg);
	return cfg;
}

static void
accepted(const char *text)
{
	struct cfg *cfg = load(text);
	char err[512] = "";
	struct wread *r = wread_new(cfg, err, sizeof err);

	if (r == NULL)
		fprintf(stderr, "refused: %s\n", err);
	assert_non_null(r);
	wread_free(r);
	cfg_free(cfg);
}

/* Each was refused by wread_new before it read through clir ("does not
 * follow them yet"); none connects here (127.0.0.1:1 answers nothing). */
static void
test_followed(void **state)
{
	(void)state;
	accepted("[daemon]\nconsumer = w1\n[redis]\nhost = 127.0.0.1\nport = 1\ntls = yes\n" TAIL);
	accepted("[daemon]\nconsumer = w1\n[redis]\nsentinels = 127.0.0.1:1\nmaster_name = m\n"
	    "allow_hosts = 127.0.0.1:2\n" TAIL);
	accepted("[daemon]\nconsumer = w1\n[redis]\ncluster = 127.0.0.1:1\nprefix = {w}\n"
	    "allow_hosts = 127.0.0.1:2\n" TAIL);
	accepted("[daemon]\nconsumer = w1\n[redis]\ncluster = 127.0.0.1:1\nprefix = w\n"
	    "shards = 3\nallow_hosts = 127.0.0.1:2\n" TAIL);
	accepted("[daemon]\nconsumer = w1\n[redis]\nsentinels = 127.0.0.1:1\nmaster_name = m\n"
	    "allow_hosts = 127.0.0.1:2\ntls = yes\n" TAIL);
}

/* A [redis] tls file that cannot be read is said by wread_new. */
static void
test_tls_file(void **state)
{
	(void)state;
	struct cfg *cfg = load("[daemon]\nconsumer = w1\n[redis]\nhost = 127.0.0.1\nport = 1\n"
	    "tls = yes\ntls_ca_file = /nonexistent/warrantd-ca.pem\n" TAIL);
	char err[512] = "";

	assert_null(wread_new(cfg, err, sizeof err));
	assert_non_null(strstr(err, "warrantd-ca.pem"));
	cfg_free(cfg);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_followed),
		cmocka_unit_test(test_tls_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
