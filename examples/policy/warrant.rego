# SPDX-License-Identifier: BSD-2-Clause
# The canal rule for warrantd's [authz] re-check (warrantd(7) §7):
#
#   the duty operator of a lateral may open its gates up to 60%.
#
# warrantd POSTs {"input": {"subject", "action", "resource", "parameters",
# "basis", "recordId", "decidedAt"}} to
#   http://127.0.0.1:8181/v1/data/warrant/allow
# and reads {"result": true|false}. Who is on duty comes from data.json
# (data.canal.duty_operators: lateral -> subject); replace it through OPA's
# Data API or a bundle as the roster changes:
#   opa run --server --addr 127.0.0.1:8181 warrant.rego data.json
#   opa test -v .                 # the cases in cases.json and warrant_test.rego
#
# Written for OPA 0.4x/0.5x with the future keywords (also valid Rego v1).
package warrant

import future.keywords.if

default allow := false

# canal/<lateral>/gate-<n>, exactly three segments.
gate_of(resource) := {"lateral": parts[1], "gate": parts[2]} if {
	parts := split(resource, "/")
	count(parts) == 3
	parts[0] == "canal"
	startswith(parts[2], "gate-")
}

# parameters.percent as a number: a JSON number, or a numeric string (what
# `warrantctl decide --param percent=40` writes). Anything else is undefined.
percent := to_number(input.parameters.percent)

allow if {
	input.action == "gate.open"
	g := gate_of(input.resource)
	input.subject == data.canal.duty_operators[g.lateral]
	percent >= 0
	percent <= 60
}
