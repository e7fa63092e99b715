/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * counters: the per-consumer counters of warrantd(7) §8, counted by the jobs in
 * hand (ejob) and the consumer (engine), written to the heartbeat hash.
 * Plain data.
 */
#ifndef WARRANTD_COUNTERS_H
#define WARRANTD_COUNTERS_H

#include <stddef.h>

/* Room for each class of enum callfail (core/callfail.h checks it fits). */
#define COUNTERS_CALL_CLASSES 16

/* Counters of warrantd(7) §8, also written to the heartbeat hash. */
struct engine_counters {
	long long received, done, expired, denied, failed, dead, retried;
	long long redispatched, auth_failures, token_refreshes, claimed;
	long long parked;	/* R6: entries set aside while their action is held */
	long long redis_outages;	/* connections to Redis lost since start (R17) */
	/* warrantd(7) §9, R20: Redis tokens received ([redis] auth = oauth or
	 * command), and answers refusing the Redis credential (NOAUTH,
	 * WRONGPASS, NOPERM, an AUTH refused, a connection closed as its
	 * token died: rconn_opts.auth_seen) */
	long long redis_auth_refreshes, redis_auth_failures;
	/* §13's alerts: the worker token's failed fetches (IdP), PDP
	 * questions that decided nothing (R5), webhook tries that failed and
	 * notifications it dropped (§6) */
	long long idp_failures, pdp_failures, webhook_failures, notify_dropped;
	/* [redis] allow_hosts: redirects, CLUSTER SHARDS endpoints and
	 * sentinel answers refused for naming a host outside it (issue 27) */
	long long redis_hosts_refused;
	/* Action calls that got no answer, by enum callfail (served as
	 * warrantd_call_failures_total{class}; not in the heartbeat hash) */
	long long call_failures[COUNTERS_CALL_CLASSES];
};

/* Each counter's name in the heartbeat hash (warrantd(7) §8) and where it is; the
 * one list of them, ended by a NULL name. */
struct counter_field {
	const char *name;
	size_t offset;
};
extern const struct counter_field counter_fields[];

/* The value of field f in n. */
long long counter_value(const struct engine_counters *n, const struct counter_field *f);

#endif
