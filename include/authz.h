/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * authz: the wire format of the current-authority check (warrantd(7) §7, R5), pure:
 * the OPA Data API request built from a record, and the answer read back.
 * The HTTP call itself is the shell's (ejob.c).
 */
#ifndef WARRANTD_AUTHZ_H
#define WARRANTD_AUTHZ_H

#include <stddef.h>

#include "job.h"
#include "record.h"

/* {"input": {"subject", "action", "resource", "parameters", "basis",
 * "recordId", "decidedAt"}}, compact; decidedAt as the record wrote it.
 * Caller frees; NULL when out of memory. */
char *authz_request_body(const struct record *r) __attribute__((warn_unused_result));

/* The PDP's answer: a status outside 2xx (0: no answer) is UNAVAILABLE (R5:
 * retried); {"result": true} or {"result": {"allow": true}} is ALLOW;
 * anything else -- false, {"allow": false}, no result, not JSON -- DENY. */
enum job_authz authz_parse_answer(long status, const char *body, size_t len);

/* "allow", "deny" or "unavailable". Static. */
const char *authz_name(enum job_authz a);

#endif
