/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * authz: the wire format of the current-authority check (warrantd(7) §7, R5), pure:
 * the question built from a record and the answer read back, in either of
 * [authz] api's shapes -- the OPA Data API (`opa`) or the OpenID AuthZEN 1.0
 * Access Evaluation API (`authzen`). The HTTP call itself is the shell's (ejob.c).
 */
#ifndef WARRANTD_AUTHZ_H
#define WARRANTD_AUTHZ_H

#include <stddef.h>

#include "conf/config.h"
#include "core/job.h"
#include "core/record.h"

/* Plain data: how the question is put. Strings are borrowed; the types are
 * read with CFG_AUTHZ_AUTHZEN only (NULL: "user", "resource"). */
struct authz_shape {
	enum cfg_authz_api api;
	const char *subject_type, *resource_type;
};

/*
 * The request body, compact; decidedAt and parameters as the record wrote them.
 *   opa:     {"input": {"subject", "action", "resource", "parameters", "basis",
 *             "recordId", "decidedAt"}}
 *   authzen: {"subject": {"type", "id"}, "action": {"name"},
 *             "resource": {"type", "id"},
 *             "context": {"recordId", "basis", "decidedAt", "parameters"}}
 * Caller frees; NULL when out of memory.
 */
char *authz_request_body(const struct record *r, const struct authz_shape *s)
	__attribute__((warn_unused_result));

/*
 * The PDP's answer. Only a 2xx decides: another status (0: no answer) or a
 * body that is not JSON is UNAVAILABLE (R5: retried). Then
 *   opa:     {"result": true} or {"result": {"allow": true}} is ALLOW;
 *   authzen: {"decision": true} is ALLOW;
 * anything else -- false, {"allow": false}, no result or decision, a truthy
 * value that is not true -- is DENY.
 */
enum job_authz authz_parse_answer(enum cfg_authz_api api, long status, const char *body,
				  size_t len);

/* "allow", "deny" or "unavailable". Static. */
const char *authz_name(enum job_authz a);

#endif
