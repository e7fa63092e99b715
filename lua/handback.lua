-- KEYS: jobs hash
-- ARGV: group consumer id record_id
-- SPDX-License-Identifier: BSD-2-Clause
--
-- R9: an entry that waited auth_wait_max_ms for a token goes back to the
-- group, so that a worker that has one takes it: only while it is still
-- pending for this consumer (R10), a new entry for the record is added,
-- the hash's `entry` names it (R4: the record runs from that one), and
-- ours is acked, all at once. The new entry carries the record's delivery
-- count so far in `priorDeliveries` (this entry's count by Redis plus its
-- own `priorDeliveries`), which a reader adds to Redis' count for the new
-- one (R12: a hand-back is a delivery like a re-dispatch); the entry's
-- other fields (a traceparent) go with it. A `priorDeliveries` that is not
-- 1 to 9 digits counts as 0, as the reader (sreply.c) counts it.
-- Returns {1, new stream id, priorDeliveries} or {0} when the entry is no
-- longer ours.
local p = redis.call('XPENDING', K.jobs, A.group, A.id, A.id, '1')
if not p[1] or p[1][2] ~= A.consumer then return {0} end
local prior, rest = entry_carry(K.jobs, A.id)
local n = tostring(p[1][4] + prior)
local sid = redis.call('XADD', K.jobs, '*', 'id', A.record_id, 'priorDeliveries', n, unpack(rest))
-- a hash that is gone stays gone: the new entry's reader dead-letters it
if redis.call('EXISTS', K.hash) == 1 then redis.call('HSET', K.hash, 'entry', sid) end
redis.call('XACK', K.jobs, A.group, A.id)
return {1, sid, n}
