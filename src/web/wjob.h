/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wjob: what the job page and the jobs list say about one job beyond the
 * hash's fields (pure): the JWS header's alg and kid, every attempt with
 * its outcome and duration (from the audit trail), and whether a job that
 * is not terminal is held -- by a pause of its action or of the queue, or
 * waiting for a token -- so that a held job does not look merely queued.
 */
#ifndef WARRANTD_WJOB_H
#define WARRANTD_WJOB_H

#include <jansson.h>

/* Sets job's "alg" and "kid" from raw's JWS header, as read, not trusted
 * (the verdict is record_load's). Nothing for what is not a JWS. */
void wjob_header(json_t *job, const char *raw);

/* The attempts in an audit trail (cli_audit_order's entries, oldest
 * first): [{"attempt", "startedAt", "outcome", "durationMs", "detail"}],
 * one per move into `running`, its outcome the state it left running for
 * ("" and no duration while it runs). A new array. */
json_t *wjob_attempts(const json_t *audit);

/* Why a job in `state` of `action` is held: "paused" (P:paused names the
 * action or "*"), "waiting for a token" (auth_wait), or NULL. paused:
 * the overview's "paused" object (NULL: none). */
const char *wjob_held(const char *state, const char *action, const json_t *paused);

#endif
