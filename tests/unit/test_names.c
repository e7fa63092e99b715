/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for src/base/names.c: the one name-to-index lookup. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/names.h"

static void
test_plain_array(void **state)
{
	(void)state;
	static const char *const tbl[] = {"", "ok", NULL, "lease", "ok"};
	const size_t n = sizeof tbl / sizeof tbl[0];

	assert_int_equal(names_find(tbl, n, sizeof tbl[0], ""), 0);
	assert_int_equal(names_find(tbl, n, sizeof tbl[0], "ok"), 1);	/* the first */
	assert_int_equal(names_find(tbl, n, sizeof tbl[0], "lease"), 3);
	assert_int_equal(names_find(tbl, n, sizeof tbl[0], "Lease"), -1);
	assert_int_equal(names_find(tbl, n, sizeof tbl[0], "lease "), -1);
	assert_int_equal(names_find(tbl, n, sizeof tbl[0], NULL), -1);
	assert_int_equal(names_find(tbl, 3, sizeof tbl[0], "lease"), -1);	/* past n */
	assert_int_equal(names_find(tbl, 0, sizeof tbl[0], ""), -1);
}

static void
test_struct_table(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		int flag;
		long pad[3];
	} tbl[] = {{"queued", 0, {0}}, {NULL, 1, {0}}, {"done", 1, {0}}};

	assert_int_equal(names_find(tbl, 3, sizeof tbl[0], "queued"), 0);
	assert_int_equal(names_find(tbl, 3, sizeof tbl[0], "done"), 2);
	assert_int_equal(names_find(tbl, 3, sizeof tbl[0], "running"), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_array),
		cmocka_unit_test(test_struct_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
