/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * walert: the overview's alerts in plain words (issue 39), pure, from the
 * data the overview shows (wread_overview) and the last minutes of the
 * charts' buckets (wread_stats):
 *
 *   "no live consumer on STREAM"            no heartbeat younger than its
 *                                           expiry on a stream
 *   "dead letters rising: N in the last 15 minutes (REASON n, ...)"
 *   "token error for scope X on CONSUMER"   tokenState.X is "error" (the
 *   "token error for the worker's token on CONSUMER"   worker's own:
 *                                           tokenState), likewise Redis'
 *                                           (redisTokenState)
 *
 * Each alert is {"level": "bad"|"warn", "text": "..."}; the page shows
 * the text as it is (escaped).
 */
#ifndef WARRANTD_WALERT_H
#define WARRANTD_WALERT_H

#include <jansson.h>

#define WALERT_DEAD_MINUTES	15

/* The alerts of ov and stats (either may lack fields: no alert from
 * them), as a new array (caller json_decref's). stats: NULL or
 * wread_stats's object, its last WALERT_DEAD_MINUTES buckets read. */
json_t *walert_list(const json_t *ov, const json_t *stats);

#endif
