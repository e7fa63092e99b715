/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wchart: the console's charts, drawn by the console itself as inline SVG
 * (pure: no script, no network; the CSP holds, and the colours are
 * console.css's classes, not style attributes), from the per-minute
 * buckets every worker writes with its heartbeat (worker/wstats.h) as
 * wread_stats returns them: {"first": minute, "buckets": [{field: n}]}.
 *
 * The buckets already add up across workers (HINCRBY in Redis); a chart
 * sums them over its bars.
 */
#ifndef WARRANTD_WCHART_H
#define WARRANTD_WCHART_H

#include <jansson.h>

#include "whtml.h"

/* The sum of `field` ("o.done", "d.max-attempts") over the last `minutes`
 * buckets of stats. */
long long wchart_sum(const json_t *stats, long minutes, const char *field);

/* Jobs by outcome, stacked bars of `per` minutes each over the last
 * `minutes`, and a legend with each outcome's total (data-total="o.X"). */
void wchart_outcomes(struct whtml *b, const json_t *stats, long minutes, long per);

/* Mean call duration by action (ms.A / c.A), one line per action, bars of
 * `per` minutes over the last `minutes`; the legend says each action's
 * calls and mean. */
void wchart_latency(struct whtml *b, const json_t *stats, long minutes, long per);

/* Dead letters by reason over the last `minutes`: one bar per reason. */
void wchart_dead(struct whtml *b, const json_t *stats, long minutes);

#endif
