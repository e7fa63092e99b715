/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * promtext: the one writer of the Prometheus text exposition format (0.0.4),
 * for the daemon's /metrics (worker/metrics) and `warrantctl metrics`
 * (ctl/ctl): HELP and TYPE lines, samples with escaped label values, and
 * histograms from bucket counts. Pure: text into a growing buffer.
 *
 * A sample is written in three steps, so that labels of any number and
 * kind need no format string:
 *
 *   promtext_begin(p, "warrantd_jobs_total");
 *   promtext_label(p, "action", action);
 *   promtext_ll(p, n);                      // "warrantd_jobs_total{action="…"} n\n"
 *
 * Out of memory is remembered: every later call does nothing and
 * promtext_take answers NULL, so a caller checks once, at the end.
 */
#ifndef WARRANTD_PROMTEXT_H
#define WARRANTD_PROMTEXT_H

#include <stddef.h>

struct promtext;

/* An empty text; NULL when out of memory. */
struct promtext *promtext_new(void)
	__attribute__((warn_unused_result));

/* NULL is a no-op. */
void promtext_free(struct promtext *p);

/* "# HELP name help\n# TYPE name type\n"; type is "counter", "gauge" or
 * "histogram". help is written as given (no newline in it). */
void promtext_head(struct promtext *p, const char *name, const char *type, const char *help);

/* Starts a sample of metric `name`; its labels follow, then its value. */
void promtext_begin(struct promtext *p, const char *name);

/* One label of the sample begun: key="value", the value escaped (\\, \"
 * and \n) as the format requires. */
void promtext_label(struct promtext *p, const char *key, const char *value);

/* The sample's value, and the end of its line: an integer; a double with
 * `decimals` digits after the point ("%.*f"); a double with up to 15
 * significant digits ("%.15g"). */
void promtext_ll(struct promtext *p, long long v);
void promtext_fixed(struct promtext *p, double v, int decimals);
void promtext_g(struct promtext *p, double v);

/* One labelled series of histogram `name` (its HELP/TYPE written before):
 * `name`_bucket for each bound of le_ms (milliseconds, shown in seconds)
 * and +Inf, cumulative from the per-bucket counts in bucket[] (a value in
 * bucket i is <= le_ms[i] and > le_ms[i-1]), then _sum (sum_ms in seconds)
 * and _count. keys/values: the series' own labels, nlabels of them, before
 * "le". */
void promtext_histogram(struct promtext *p, const char *name, const char *const *keys,
			const char *const *values, size_t nlabels, const long long *le_ms,
			const long long *bucket, size_t nle, long long count, long long sum_ms);

/* The text so far (NUL-terminated, malloc'd: the caller frees it) and its
 * length in *len; p is emptied. NULL when out of memory at any point. */
char *promtext_take(struct promtext *p, size_t *len)
	__attribute__((warn_unused_result));

/* A label value as the format writes it: quoted, with \\, \" and \n
 * escaped. malloc'd (caller frees); NULL when out of memory. */
char *promtext_quote(const char *s)
	__attribute__((warn_unused_result));

#endif
