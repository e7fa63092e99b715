/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * trace: W3C Trace Context `traceparent` values (warrantd(7) §13), pure.
 *
 *   00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
 *   version-trace_id(32 hex)-parent_id(16 hex)-flags
 *
 * A stream entry may carry one; the worker checks it here, logs it with
 * every line about the job, sends it to the target and the PDP as the
 * `traceparent` header, and writes it into the job's audit entries. An entry
 * without one gets a new trace (trace_new) so that its lines still go
 * together. Nothing from outside reaches a log line or a header unless
 * trace_parse accepted it.
 */
#ifndef WARRANTD_TRACE_H
#define WARRANTD_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define TRACE_LEN 55	/* a version-00 traceparent, without the NUL */

/*
 * s (len bytes, no NUL needed) as a traceparent: lower-case hex only; the
 * version not "ff"; the trace id and the parent id not all zeros; version
 * 00 exactly 55 bytes; a later version at least 55, with a '-' after the
 * 55th when longer (its extra fields are dropped: we speak version 00).
 * 0 and the version-00 form in out (NUL-terminated), or -1 (out "").
 */
int trace_parse(const char *s, size_t len, char out[TRACE_LEN + 1])
	__attribute__((warn_unused_result));

/* A new trace from three random words (rnd_u64 in the shell): trace id
 * from a and b, parent id from c, flags 01 (sampled: the worker starts the
 * trace and asks those it calls to keep it). An all-zero id gets a 1. */
void trace_new(uint64_t a, uint64_t b, uint64_t c, char out[TRACE_LEN + 1]);

#endif
