/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ctl: the pure pieces of warrantctl (warrantd(7) §11) -- times given on the
 * command line, record ids, the record JSON built from `decide`'s options,
 * the record policy taken from the config, and the human rendering of the
 * JSON that every command can also print as is (--json).
 */
#ifndef WARRANTD_CTL_H
#define WARRANTD_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>

#include "conf/config.h"
#include "core/record.h"

/* A generated recordId: 26 lower-case base32 characters (130 random bits). */
#define CTL_ID_LEN 26

/*
 * A time on the command line: RFC 3339 in UTC ("2026-11-30T04:00:00Z") or
 * "+N" followed by s, m, h or d (no unit: seconds), counted from `now_ms`.
 * 0 and *out_ms, or -1 (bad syntax, or a value that does not fit).
 */
int ctl_parse_time(const char *s, int64_t now_ms, int64_t *out_ms)
	__attribute__((warn_unused_result));

/* A duration on the command line (--older-than): N followed by s, m, h or
 * d (no unit: seconds), a leading '+' allowed. 0 and *out_ms, or -1. */
int ctl_parse_duration(const char *s, int64_t *out_ms) __attribute__((warn_unused_result));

/* The milliseconds of a stream entry id "MS-SEQ" (when Redis added it), or
 * -1 when id is not one. */
int64_t ctl_stream_id_ms(const char *id);

/*
 * dead requeue and dead drop in bulk (§11): 1 when the dead letter with
 * entry id `entry_id` and reason `reason_field` (NULL: none) is chosen --
 * its reason is `reason` (NULL: any) and it was added before `before_ms`
 * (0: any time; an entry id that is not one is never older).
 */
int ctl_dead_match(const char *entry_id, const char *reason_field, const char *reason,
		   int64_t before_ms);

/* Writes a recordId made from CTL_ID_LEN random bytes `rnd` into out (at
 * least CTL_ID_LEN + 1 bytes), NUL-terminated. Each byte gives 5 bits. */
void ctl_make_id(const unsigned char rnd[CTL_ID_LEN], char *out);

/* Plain data: what `decide` was told. Strings are borrowed; NULL is absent. */
struct ctl_decision {
	const char *id, *on_behalf_of, *action, *resource, *basis;
	const char *notify;		/* notifyOnDenial */
	const char *iss;
	const char *params_json;	/* --params: a JSON object */
	const char *const *params;	/* --param K=V, in order given */
	size_t nparams;
	int64_t decided_at_ms, expires_at_ms;
	int64_t not_before_ms;		/* 0: none */
};

/*
 * The record content of warrantd(7) §3.1 for `d`: --params merged under the
 * --param pairs (a pair wins; every value a string), times as RFC 3339 with
 * milliseconds, notBefore and notifyOnDenial only when given. Checks only
 * what the record rules cannot see (the option syntax, and a notBefore at or
 * after expiresAt, which would never run); record_load checks the rest.
 * Returns a new object (caller json_decref's), or NULL with one line in err.
 */
json_t *ctl_build_record(const struct ctl_decision *d, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/*
 * Fills pol from cfg's [records] with `key` (borrowed: the verification key)
 * and an action_known that looks the action up in cfg, for records read from
 * Redis. The signature is required exactly when [records] signature says so:
 * with a NULL or empty key such a policy verifies nothing and record_load
 * refuses every record (bad-signature). pol is valid as long as cfg and key.
 */
void ctl_policy_init(struct record_policy *pol, const struct cfg *cfg, const unsigned char *key,
		     size_t key_len);

/*
 * The §3.1 rules of cfg's [records] alone, for the plain JSON content of a
 * record this process is about to sign (warrantctl decide): it has no key and
 * no signature to check. Never for a record read from Redis.
 */
void ctl_policy_content(struct record_policy *pol, const struct cfg *cfg);

/* A Redis string as JSON: an integer when it is a plain decimal integer that
 * fits, else a string. New reference (caller json_decref's); NULL on no
 * memory. */
json_t *ctl_scalar(const char *s)
	__attribute__((warn_unused_result));

/*
 * Human output of a JSON object: one "key: value" line per member, values
 * aligned per level; a nested object as "key:" followed by its members
 * indented by two more spaces; an array of objects as "key:" followed by one
 * line per element (ctl_print_line); an empty object or array as "(none)";
 * any other array as compact JSON. null is "-". Control characters in
 * strings are shown as '?', so a line stays one.
 */
void ctl_print_human(FILE *out, const json_t *obj, int indent);

/* A duration for people: "850 ms", "5 s", "12 m", "3 h", "2 d" (whole
 * units, cut down), into buf; returns buf. A negative one is "-". */
const char *ctl_human_ms(long long ms, char *buf, size_t n);

/* Consumers of one `status` object whose heartbeat hash is live. */
size_t ctl_status_alive(const json_t *status);

/*
 * `status` for people: the queue's fields as ctl_print_human does (the ones
 * in ms in human units), then "consumers: N alive of M" and one line per
 * consumer -- its name, alive or silent, then its fields, durations in
 * human units.
 */
void ctl_print_status(FILE *out, const json_t *status);

/* Issue 38 item 6: what holds a job back that its state does not say:
 * "paused" when `paused` (P:paused as an object: action name or "*" to
 * who and when) pauses `action` or the whole queue and the job is still to
 * be called (state queued or retrying); else NULL. Static. */
const char *ctl_held(const json_t *paused, const char *action, const char *state);

/* One line of logfmt pairs (log_quote'd values) of an object's scalar
 * members, in order, then '\n'. Nested values are shown as compact JSON. */
void ctl_print_line(FILE *out, const json_t *obj, int indent);

/*
 * `warrantctl metrics`: the queue-wide gauges of a `status` object (the JSON
 * that `status --json` prints) in the Prometheus text format, for
 * node_exporter's textfile collector. Every sample carries
 * {stream="<P:jobs>",group="<group>"}; ages are counted from now_ms (the
 * oldest pending entry's age from its stream id's ms). A value that status
 * could not know (lag of a group Redis cannot count) is left out.
 * 0, or -1 when out of memory (the output is then incomplete).
 */
int ctl_queue_metrics(FILE *out, const json_t *status, int64_t now_ms)
	__attribute__((warn_unused_result));

#endif
