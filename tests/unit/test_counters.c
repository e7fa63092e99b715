/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit test: the heartbeat's counter table (counters.h) names every counter
 * of struct engine_counters once, by the names of warrantd(7) §8. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "base/counters.h"

static void
test_every_counter_once(void **state)
{
	(void)state;
	struct engine_counters n;
	size_t count = 0;
	const char *const spec[] = {"received", "done", "expired", "denied", "failed", "dead",
	    "retried", "redispatched", "authFailures", "tokenRefreshes", "claimed"};

	/* distinct values, so each field reads back its own member */
	long long *member = (long long *)&n;
	for (size_t i = 0; i < sizeof n / sizeof(long long); i++)
		member[i] = (long long)i + 100;
	for (const struct counter_field *f = counter_fields; f->name; f++, count++) {
		assert_int_equal(f->offset % sizeof(long long), 0);
		assert_int_equal(counter_value(&n, f), (long long)(f->offset / sizeof(long long)) + 100);
		for (const struct counter_field *g = counter_fields; g != f; g++) {
			assert_string_not_equal(f->name, g->name);
			assert_int_not_equal(f->offset, g->offset);
		}
	}
	/* every scalar is in the table; call_failures (by class, served with a
	 * label, not in the heartbeat) is the one array */
	assert_int_equal(count, (sizeof n - sizeof n.call_failures) / sizeof(long long));
	for (size_t i = 0; i < sizeof spec / sizeof spec[0]; i++) {
		int found = 0;
		for (const struct counter_field *f = counter_fields; f->name; f++)
			found |= strcmp(f->name, spec[i]) == 0;
		if (!found)
			fail_msg("warrantd(7) §8 counter %s is not in the table", spec[i]);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_counter_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
