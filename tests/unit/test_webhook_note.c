/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for the one writer of a notification's webhook body
 * (webhook.h, warrantd(7) §6): the daemon's (eops) and warrantctl cancel's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "worker/webhook.h"

/* The fields in the P:notify entry's order, compact, escaped as JSON. */
static void
test_body_fields_in_order(void **state)
{
	(void)state;
	const struct webhook_note n = {"r-1", "ops", "cancelled", "cancelled", "operator:\"7\"",
	    "gate.open", "north/1", "2026-12-07T12:00:00Z"};
	char *body = webhook_note_body(&n);

	assert_non_null(body);
	assert_string_equal(body, "{\"id\":\"r-1\",\"owner\":\"ops\",\"kind\":\"cancelled\","
	    "\"reason\":\"cancelled\",\"onBehalfOf\":\"operator:\\\"7\\\"\",\"action\":\"gate.open\","
	    "\"resource\":\"north/1\",\"at\":\"2026-12-07T12:00:00Z\"}");
	free(body);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_body_fields_in_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
