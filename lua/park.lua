-- KEYS: jobs parked due
-- ARGV: group consumer id record_id action expires_at
-- SPDX-License-Identifier: BSD-2-Clause
--
-- R6, §13: an entry held back by its action's pause is set aside, so that
-- the entries behind it run: only while it is still pending for this
-- consumer (R10), the record's id and the entry's other fields go to the
-- end of the action's list P:parked:<action> (in order), the action into
-- P:parked scored by the earliest deadline parked there (ZADD LT), and
-- ours is acked, all at once. Nothing else changes: no state, no attempt,
-- and no delivery (the entry's `priorDeliveries` is its count so far less
-- the read that brought it: R12 counts what was tried, not a pause).
-- unpark.lua queues it again. Returns {1, the list's length} or {0} when
-- the entry is no longer ours.
local p = redis.call('XPENDING', K.jobs, A.group, A.id, A.id, '1')
if not p[1] or p[1][2] ~= A.consumer then return {0} end
local prior, rest = entry_carry(K.jobs, A.id)
local n = p[1][4] + prior - 1
if n < 0 then n = 0 end
local len = redis.call('RPUSH', K.parked, cjson.encode({r = A.record_id, n = tostring(n),
  x = A.expires_at, f = rest}))
redis.call('ZADD', K.due, 'LT', A.expires_at, A.action)
redis.call('XACK', K.jobs, A.group, A.id)
return {1, tostring(len)}
