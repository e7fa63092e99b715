/* SPDX-License-Identifier: BSD-2-Clause */
/* counters: the one list of warrantd(7) §8's counters and their heartbeat names. */
#include "base/counters.h"

#include <string.h>

#define F(name, member) {name, offsetof(struct engine_counters, member)}

const struct counter_field counter_fields[] = {
	F("received", received), F("done", done), F("expired", expired), F("denied", denied),
	F("failed", failed), F("dead", dead), F("retried", retried),
	F("redispatched", redispatched), F("authFailures", auth_failures),
	F("tokenRefreshes", token_refreshes), F("claimed", claimed),
	F("parked", parked),
	F("redisOutages", redis_outages),
	F("redisAuthRefreshes", redis_auth_refreshes), F("redisAuthFailures", redis_auth_failures),
	F("idpFailures", idp_failures), F("pdpFailures", pdp_failures),
	F("webhookFailures", webhook_failures), F("notifyDropped", notify_dropped),
	F("redisHostsRefused", redis_hosts_refused),
	{NULL, 0},
};

long long
counter_value(const struct engine_counters *n, const struct counter_field *f)
{
	long long v;

	memcpy(&v, (const char *)n + f->offset, sizeof v);
	return v;
}
