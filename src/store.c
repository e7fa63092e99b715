/* store: key names and Lua scripts; every multi-step change is one script. */
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
store_keys_init(struct store_keys *k, const char *prefix, const char *consumer)
{
	struct {
		char *dst;
		const char *suffix;
	} keys[] = {
		{k->jobs, "jobs"}, {k->scheduled, "scheduled"}, {k->dead, "dead"},
		{k->notify, "notify"}, {k->audit, "audit"}, {k->decision_prefix, "decision:"},
	};

	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		int w = snprintf(keys[i].dst, STORE_KEY_MAX, "%s:%s", prefix, keys[i].suffix);
		if (w < 0 || w >= STORE_KEY_MAX)
			return -1;
	}
	int w = snprintf(k->consumer, STORE_KEY_MAX, "%s:consumer:%s", prefix, consumer);
	return w < 0 || w >= STORE_KEY_MAX ? -1 : 0;
}

int
store_decision_key(const struct store_keys *k, const char *id, char *buf, size_t n)
{
	int w = snprintf(buf, n, "%s%s", k->decision_prefix, id);
	return w < 0 || (size_t)w >= n ? -1 : 0;
}

/*
 * KEYS: hash, jobs, audit, dead, notify, scheduled
 * ARGV: 1 group, 2 streamId, 3 consumer, 4 fence attempts (-1 none),
 *   5 has hash, 6 state, 7 outcome, 8 detail, 9 httpStatus, 10 ack,
 *   11 dead reason, 12 notify, 13 owner, 14 recordId, 15 onBehalfOf,
 *   16 action, 17 resource, 18 deliveries, 19 at, 20 audit maxlen,
 *   21 schedule score, 22 attempt, 23 notify kind, 24 retain ms,
 *   25 require owner, 26 incr attempts, 27 dead maxlen, 28 notify maxlen,
 *   29 check lease, 30 keep a result the PEL forgot
 * Returns {1, "ok", from, attempts} or {0, why, from}: why is "lease" (the
 * entry is no longer pending for this consumer), "owner"/"attempts" (a newer
 * attempt exists: R13), "terminal" (R4: the entry is acked, nothing else) or
 * "missing" (the hash is gone: nothing is written into a husk).
 * With ARGV[30] = 1 (a call's result, fenced by ARGV[4]) an entry that is
 * pending for nobody -- a Redis that restarted without persistence forgot
 * its PEL -- is still written when owner and attempts are ours: the result
 * was obtained and must not be lost; there is nothing to ack.
 */
const char *const store_script_transition =
"local h, jobs = KEYS[1], KEYS[2]\n"
"local has_hash = ARGV[5] == '1'\n"
"local pending = true\n"
"if ARGV[29] == '1' then\n"
"  local p = redis.call('XPENDING', jobs, ARGV[1], ARGV[2], ARGV[2], 1)\n"
"  if p[1] and p[1][2] ~= ARGV[3] then return {0, 'lease', ''} end\n"
"  if not p[1] then\n"
"    if ARGV[30] ~= '1' or not has_hash then return {0, 'lease', ''} end\n"
"    pending = false\n"
"  end\n"
"end\n"
"if has_hash and redis.call('EXISTS', h) == 0 then return {0, 'missing', ''} end\n"
"local from = ''\n"
"if has_hash then\n"
"  from = redis.call('HGET', h, 'state') or ''\n"
"  if from == 'done' or from == 'expired' or from == 'denied' or from == 'failed' or from == 'dead' then\n"
"    redis.call('XACK', jobs, ARGV[1], ARGV[2])\n"
"    return {0, 'terminal', from}\n"
"  end\n"
"  if (ARGV[25] == '1' or not pending) and redis.call('HGET', h, 'owner') ~= ARGV[3] then return {0, 'owner', from} end\n"
"  if ARGV[4] ~= '-1' and (redis.call('HGET', h, 'attempts') or '0') ~= ARGV[4] then\n"
"    return {0, 'attempts', from}\n"
"  end\n"
"end\n"
"local attempt = ARGV[22]\n"
"if has_hash and ARGV[26] == '1' then attempt = tostring(redis.call('HINCRBY', h, 'attempts', 1)) end\n"
"if has_hash and ARGV[6] ~= '' then\n"
"  local f = {'state', ARGV[6], 'owner', ARGV[3], 'updatedAt', ARGV[19], 'outcome', ARGV[7], 'detail', ARGV[8]}\n"
"  if ARGV[9] ~= '' then f[#f + 1] = 'httpStatus'; f[#f + 1] = ARGV[9] end\n"
"  redis.call('HSET', h, unpack(f))\n"
"  if ARGV[24] ~= '0' then redis.call('PEXPIRE', h, ARGV[24]) end\n"
"  if ARGV[6] ~= from then\n"
"    redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[20], '*', 'id', ARGV[14], 'from', from,\n"
"      'to', ARGV[6], 'consumer', ARGV[3], 'attempt', attempt, 'at', ARGV[19], 'detail', ARGV[8])\n"
"  end\n"
"end\n"
"if ARGV[21] ~= '' then redis.call('ZADD', KEYS[6], ARGV[21], ARGV[14]) end\n"
"if ARGV[11] ~= '' then\n"
"  redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[27], '*', 'id', ARGV[14], 'streamId', ARGV[2], 'reason', ARGV[11],\n"
"    'detail', ARGV[8], 'deliveries', ARGV[18], 'consumer', ARGV[3], 'at', ARGV[19])\n"
"end\n"
"if ARGV[12] == '1' then\n"
"  redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[28], '*', 'id', ARGV[14], 'owner', ARGV[13], 'kind', ARGV[23],\n"
"    'reason', ARGV[7], 'onBehalfOf', ARGV[15], 'action', ARGV[16], 'resource', ARGV[17], 'at', ARGV[19])\n"
"end\n"
"if ARGV[10] == '1' and pending then redis.call('XACK', jobs, ARGV[1], ARGV[2]) end\n"
"return {1, 'ok', from, attempt}\n";

/*
 * KEYS: jobs.  ARGV: group, consumer, mode ("own" | "auto"), min idle ms,
 * start (own: exclusive start id; auto: cursor), count, calls (auto: how
 * many XAUTOCLAIM calls at most, each examining up to 10 x COUNT entries).
 * Returns {next, {{id, fields-or-false, deliveries}...}, {deleted id...}};
 * next is "0-0" when the scan is complete. Own entries that were deleted
 * from the stream are acked here (nothing is left to run). In auto mode the
 * scan follows XAUTOCLAIM's cursor until it wraps, `count` entries are
 * claimed or `calls` calls were made (R11): the caller passes `next` back.
 */
const char *const store_script_claim =
"local jobs, g, me = KEYS[1], ARGV[1], ARGV[2]\n"
"local out, deleted, nxt = {}, {}, '0-0'\n"
"local function count(id)\n"
"  local p = redis.call('XPENDING', jobs, g, id, id, 1)\n"
"  if p[1] then return p[1][4] end\n"
"  return 1\n"
"end\n"
"if ARGV[3] == 'auto' then\n"
"  local want, cursor = tonumber(ARGV[6]), ARGV[5]\n"
"  for _ = 1, tonumber(ARGV[7]) do\n"
"    local r = redis.call('XAUTOCLAIM', jobs, g, me, ARGV[4], cursor, 'COUNT', want - #out)\n"
"    cursor = r[1]\n"
"    for _, e in ipairs(r[2]) do out[#out + 1] = {e[1], e[2], count(e[1])} end\n"
"    for _, d in ipairs(r[3] or {}) do deleted[#deleted + 1] = d end\n"
"    if cursor == '0-0' or #out >= want then break end\n"
"  end\n"
"  nxt = cursor\n"
"else\n"
"  local start = ARGV[5] == '0' and '-' or '(' .. ARGV[5]\n"
"  local p = redis.call('XPENDING', jobs, g, start, '+', ARGV[6], me)\n"
"  for _, e in ipairs(p) do\n"
"    local x = redis.call('XRANGE', jobs, e[1], e[1])\n"
"    if x[1] then out[#out + 1] = {e[1], x[1][2], e[4]}\n"
"    else redis.call('XACK', jobs, g, e[1]); deleted[#deleted + 1] = e[1] end\n"
"  end\n"
"  if #p == tonumber(ARGV[6]) then nxt = p[#p][1] end\n"
"end\n"
"return {nxt, out, deleted}\n";

/* KEYS: jobs.  ARGV: group, consumer, ids...  Returns {lost, gone}: the ids
 * another consumer holds now, and those pending for nobody (acked, or a
 * Redis that restarted without persistence forgot them: nobody else can
 * be running them). */
const char *const store_script_renew =
"local lost, gone = {}, {}\n"
"for i = 3, #ARGV do\n"
"  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)\n"
"  if p[1] and p[1][2] == ARGV[2] then\n"
"    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'JUSTID')\n"
"  elseif p[1] then lost[#lost + 1] = ARGV[i]\n"
"  else gone[#gone + 1] = ARGV[i] end\n"
"end\n"
"return {lost, gone}\n";

/* KEYS: jobs.  ARGV: group, consumer, id.  Returns the new delivery count,
 * or 0 when the entry is no longer ours (or was deleted). */
const char *const store_script_redispatch =
"local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)\n"
"if not p[1] or p[1][2] ~= ARGV[2] then return 0 end\n"
"local c = redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[3])\n"
"if not c[1] then return 0 end\n"
"p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)\n"
"return p[1] and p[1][4] or 0\n";

/* KEYS: scheduled, jobs.  ARGV: limit.  Returns how many moved. Due means
 * by Redis' clock, so workers with skewed clocks agree (§5). */
const char *const store_script_promote =
"local t = redis.call('TIME')\n"
"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
"local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, ARGV[1])\n"
"for _, id in ipairs(ids) do\n"
"  redis.call('XADD', KEYS[2], '*', 'id', id)\n"
"  redis.call('ZREM', KEYS[1], id)\n"
"end\n"
"return #ids\n";

/*
 * KEYS: jobs.  Trims P:jobs (§2) below the oldest entry that some group has
 * not been delivered (its last-delivered-id and all after it are kept) or
 * still holds pending. No group, or a group that has delivered nothing:
 * nothing is trimmed. Returns the number of entries removed.
 */
const char *const store_script_trim =
"local function before(a, b)\n"
"  local am, as = string.match(a, '^(%d+)-(%d+)$')\n"
"  local bm, bs = string.match(b, '^(%d+)-(%d+)$')\n"
"  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)\n"
"  return am < bm or (am == bm and as < bs)\n"
"end\n"
"if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end\n"
"local groups = redis.call('XINFO', 'GROUPS', KEYS[1])\n"
"if #groups == 0 then return 0 end\n"
"local keep\n"
"for _, g in ipairs(groups) do\n"
"  local f = {}\n"
"  for i = 1, #g, 2 do f[g[i]] = g[i + 1] end\n"
"  local first = f['last-delivered-id']\n"
"  if first == '0-0' then return 0 end\n"
"  if tonumber(f['pending']) > 0 then\n"
"    local s = redis.call('XPENDING', KEYS[1], f['name'])\n"
"    if s[2] and before(s[2], first) then first = s[2] end\n"
"  end\n"
"  if keep == nil or before(first, keep) then keep = first end\n"
"end\n"
"return redis.call('XTRIM', KEYS[1], 'MINID', '~', keep)\n";

static void
put(struct store_argv *a, const char *s)
{
	if (a->argc >= STORE_TRANSITION_ARGC)
		abort();	/* the table above and the ARGV list disagree */
	a->argv[a->argc] = s ? s : "";
	a->len[a->argc] = strlen(a->argv[a->argc]);
	a->argc++;
}

static const char *
num(struct store_argv *a, int slot, long long v)
{
	snprintf(a->scratch[slot], sizeof a->scratch[slot], "%lld", v);
	return a->scratch[slot];
}

void
store_transition_argv(const struct store_keys *k, const char *group, const char *consumer,
		      long long audit_maxlen, const struct store_transition *t,
		      struct store_argv *a)
{
	a->argc = 0;
	a->nkeys = STORE_TRANSITION_NKEYS;
	/* A script must name its keys; with no hash, the (absent) key of an
	 * empty id stands in and is never touched. */
	put(a, t->hash_key ? t->hash_key : k->decision_prefix);
	put(a, k->jobs);
	put(a, k->audit);
	put(a, k->dead);
	put(a, k->notify);
	put(a, k->scheduled);

	put(a, group);
	put(a, t->stream_id);
	put(a, consumer);
	put(a, num(a, 0, t->fence_attempts));
	put(a, t->hash_key ? "1" : "0");
	put(a, t->state);
	put(a, t->outcome);
	put(a, t->detail);
	put(a, t->http_status);
	put(a, t->ack ? "1" : "0");
	put(a, t->dead_reason);
	put(a, t->notify ? "1" : "0");
	put(a, t->notify_owner);
	put(a, t->record_id);
	put(a, t->on_behalf_of);
	put(a, t->action);
	put(a, t->resource);
	put(a, num(a, 1, t->deliveries));
	put(a, t->at);
	put(a, num(a, 2, audit_maxlen));
	put(a, t->schedule_score);
	put(a, num(a, 3, t->attempt));
	put(a, t->notify_kind);
	put(a, num(a, 4, t->retain_ms));
	put(a, t->require_owner ? "1" : "0");
	put(a, t->incr_attempts ? "1" : "0");
	put(a, num(a, 5, t->dead_maxlen));
	put(a, num(a, 6, t->notify_maxlen));
	put(a, t->skip_lease ? "0" : "1");
	put(a, t->keep_unpending ? "1" : "0");
}
