# SPDX-License-Identifier: BSD-2-Clause
# opa test -v examples/policy/
#
# cases.json is the table of decisions; tests/integration/itest_policy.c
# puts the same table to the fake PDP (tests/fakes/fake_pdp.c, canal_duty),
# so the policy and the fake the integration tests use agree case by case.
package warrant_test

import future.keywords.every
import future.keywords.if

import data.warrant

# Every case of cases.json, each with the roster of data.json.
test_cases if {
	every c in data.cases {
		warrant.allow == c.allow with input as c.input
	}
}

# The cases that matter most, by name, so `opa test -v` shows them.
test_duty_operator_up_to_60 if {
	warrant.allow with input as {"subject": "operator:4417", "action": "gate.open",
		"resource": "canal/lateral-3/gate-14", "parameters": {"percent": "60"}}
}

test_over_60_denied if {
	not warrant.allow with input as {"subject": "operator:4417", "action": "gate.open",
		"resource": "canal/lateral-3/gate-14", "parameters": {"percent": "61"}}
}

test_other_operator_denied if {
	not warrant.allow with input as {"subject": "operator:5120", "action": "gate.open",
		"resource": "canal/lateral-3/gate-14", "parameters": {"percent": "40"}}
}

test_roster_change if {
	warrant.allow with input as {"subject": "operator:7001", "action": "gate.open",
		"resource": "canal/lateral-3/gate-14", "parameters": {"percent": "40"}}
		with data.canal.duty_operators as {"lateral-3": "operator:7001"}
}
