/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for promtext, the one Prometheus text writer: HELP and TYPE,
 * label escaping, values, histograms, and an empty text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/promtext.h"

static char *
take(struct promtext *p)
{
	size_t len = 0;
	char *t = promtext_take(p, &len);

	assert_non_null(t);
	assert_int_equal(len, strlen(t));
	return t;
}

static void
test_head_and_samples(void **state)
{
	struct promtext *p = promtext_new();
	(void)state;

	assert_non_null(p);
	promtext_head(p, "x_total", "counter", "Things.");
	promtext_begin(p, "x_total");
	promtext_ll(p, -3);
	promtext_begin(p, "x_total");
	promtext_label(p, "a", "1");
	promtext_label(p, "b", "two");
	promtext_fixed(p, 1.23456, 3);
	promtext_begin(p, "y");
	promtext_label(p, "k", "v");
	promtext_g(p, 0.1);
	char *t = take(p);
	assert_string_equal(t, "# HELP x_total Things.\n# TYPE x_total counter\n"
	    "x_total -3\nx_total{a=\"1\",b=\"two\"} 1.235\ny{k=\"v\"} 0.1\n");
	free(t);
	/* taken: empty again, and usable */
	promtext_begin(p, "z");
	promtext_ll(p, 1);
	t = take(p);
	assert_string_equal(t, "z 1\n");
	free(t);
	t = take(p);
	assert_string_equal(t, "");
	free(t);
	promtext_free(p);
	promtext_free(NULL);
}

/* The text format's escapes, and no others: a label value holds any
 * UTF-8, a quote, a backslash or a newline without breaking the line. */
static void
test_label_escaping(void **state)
{
	struct promtext *p = promtext_new();
	(void)state;

	promtext_begin(p, "m");
	promtext_label(p, "v", "a\"b\\c\nd\te\xc3\xa9");
	promtext_ll(p, 1);
	char *t = take(p);
	assert_string_equal(t, "m{v=\"a\\\"b\\\\c\\nd\te\xc3\xa9\"} 1\n");
	free(t);
	promtext_free(p);
	char *q = promtext_quote("say \"hi\"\n\\");
	assert_string_equal(q, "\"say \\\"hi\\\"\\n\\\\\"");
	free(q);
	q = promtext_quote("");
	assert_string_equal(q, "\"\"");
	free(q);
}

/* Buckets are cumulative, bounds in seconds, +Inf is the count, the sum in
 * seconds with three decimals; the series' labels come before le. */
static void
test_histogram(void **state)
{
	static const long long le[] = {5, 250, 1000};
	static const long long bucket[] = {2, 0, 3};
	static const char *const keys[] = {"action", "status"};
	static const char *const values[] = {"g\"o", "2xx"};
	struct promtext *p = promtext_new();
	(void)state;

	promtext_histogram(p, "h_seconds", keys, values, 2, le, bucket, 3, 6, 12345);
	char *t = take(p);
	assert_string_equal(t,
	    "h_seconds_bucket{action=\"g\\\"o\",status=\"2xx\",le=\"0.005\"} 2\n"
	    "h_seconds_bucket{action=\"g\\\"o\",status=\"2xx\",le=\"0.25\"} 2\n"
	    "h_seconds_bucket{action=\"g\\\"o\",status=\"2xx\",le=\"1\"} 5\n"
	    "h_seconds_bucket{action=\"g\\\"o\",status=\"2xx\",le=\"+Inf\"} 6\n"
	    "h_seconds_sum{action=\"g\\\"o\",status=\"2xx\"} 12.345\n"
	    "h_seconds_count{action=\"g\\\"o\",status=\"2xx\"} 6\n");
	free(t);
	promtext_histogram(p, "u", NULL, NULL, 0, le, bucket, 1, 2, 0);
	t = take(p);
	assert_string_equal(t, "u_bucket{le=\"0.005\"} 2\nu_bucket{le=\"+Inf\"} 2\n"
	    "u_sum 0.000\nu_count 2\n");
	free(t);
	promtext_free(p);
}

/* A long text grows the buffer past its first size intact. */
static void
test_grows(void **state)
{
	struct promtext *p = promtext_new();
	char help[3000];
	(void)state;

	memset(help, 'h', sizeof help - 1);
	help[sizeof help - 1] = '\0';
	for (int i = 0; i < 10; i++)
		promtext_head(p, "n", "gauge", help);
	char *t = take(p);
	assert_int_equal(strlen(t), 10 * (strlen("# HELP n \n# TYPE n gauge\n") + strlen(help)));
	free(t);
	promtext_free(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_head_and_samples),
		cmocka_unit_test(test_label_escaping),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_grows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
