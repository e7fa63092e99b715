/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for src/core/reason.c: every code has one name, and it parses back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/reason.h"
#include "core/record.h"

/* Every value but REASON_NONE has a non-empty name, no two share one, and
 * each name parses back to its value. */
static void
test_reason_names_complete_unique(void **state)
{
	(void)state;
	for (int i = 0; i < REASON_COUNT; i++) {
		const char *n = reason_name((enum reason)i);
		enum reason back;

		assert_non_null(n);
		if (i != REASON_NONE)
			assert_true(n[0] != '\0');
		for (int k = 0; k < i; k++)
			assert_string_not_equal(n, reason_name((enum reason)k));
		assert_int_equal(reason_parse(n, &back), 0);
		assert_int_equal(back, i);
	}
}

static void
test_reason_out_of_range_and_unknown(void **state)
{
	enum reason r = REASON_OK;

	(void)state;
	assert_string_equal(reason_name(REASON_COUNT), "");
	assert_string_equal(reason_name((enum reason)-1), "");
	assert_int_equal(reason_parse("no-such-code", &r), -1);
	assert_int_equal(reason_parse(NULL, &r), -1);
	assert_int_equal(r, REASON_OK);
}

/* The codes warrantd(7) names, spelled as it spells them. */
static void
test_reason_spec_spelling(void **state)
{
	static const struct {
		enum reason r;
		const char *name;
	} spec[] = {
		{REASON_NO_ID, "no-id"}, {REASON_RECORD_MISSING, "record-missing"},
		{REASON_BAD_SIGNATURE, "bad-signature"}, {REASON_RECORD_INVALID, "record-invalid"},
		{REASON_UNKNOWN_ACTION, "unknown-action"},
		{REASON_TOO_MANY_DELIVERIES, "too-many-deliveries"},
		{REASON_ENTRY_DELETED, "entry-deleted"},
		{REASON_REDIS_ERROR, "redis-error"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof spec / sizeof spec[0]; i++)
		assert_string_equal(reason_name(spec[i].r), spec[i].name);
}

/* record_status_code is the reason's name; RECORD_OK has none. */
static void
test_record_status_maps_to_reason(void **state)
{
	static const enum record_status all[] = {RECORD_OK, RECORD_BAD_SIGNATURE, RECORD_INVALID,
	    RECORD_UNKNOWN_ACTION};

	(void)state;
	assert_int_equal(record_status_reason(RECORD_OK), REASON_NONE);
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		assert_string_equal(record_status_code(all[i]),
		    reason_name(record_status_reason(all[i])));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reason_names_complete_unique),
		cmocka_unit_test(test_reason_out_of_range_and_unknown),
		cmocka_unit_test(test_reason_spec_spelling),
		cmocka_unit_test(test_record_status_maps_to_reason),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
