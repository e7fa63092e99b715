-- KEYS: hash final jobs dead audit
-- ARGV: record_id at audit_maxlen record entry_ids...
-- SPDX-License-Identifier: BSD-2-Clause
--
-- warrantctl dead requeue: `record` is the record as the caller checked it,
-- entry_ids its P:dead entries. Re-checks what the caller checked (the same
-- record, state dead, its dead letters still there), so a concurrent
-- requeue, drop or rewrite wins cleanly. A terminal hash carries the
-- worker's retention TTL: PERSIST, the job is live again. `final` is the
-- record's P:final mark (R4), which the worker would otherwise ack the new
-- entry for: the operator is the one who removes it. The hash's `entry`
-- names the new stream entry, the one the record now runs from. Returns
-- {1, jobs stream id} or {0, why}.
local h, jobs, dead, audit = K.hash, K.jobs, K.dead, K.audit
local id, at, maxlen, rec = A.record_id, A.at, A.audit_maxlen, A.record
local detail = 'requeued by warrantctl'
if redis.call('HGET', h, 'record') ~= rec then return {0, 'the record changed or is gone'} end
local from = redis.call('HGET', h, 'state') or ''
if from ~= 'dead' then return {0, 'its state is "' .. from .. '", not "dead"'} end
local n = 0
for _, e in ipairs(A.entry_ids) do n = n + redis.call('XDEL', dead, e) end
if n == 0 then return {0, 'its dead letters are gone'} end
redis.call('PERSIST', h)
redis.call('DEL', K.final)
redis.call('HDEL', h, 'owner', 'outcome', 'httpStatus')
local sid = redis.call('XADD', jobs, '*', 'id', id)
redis.call('HSET', h, 'state', 'queued', 'attempts', '0', 'updatedAt', at, 'detail', detail, 'entry', sid)
redis.call('XADD', audit, 'MAXLEN', '~', maxlen, '*', 'id', id, 'from', from, 'to', 'queued',
  'consumer', 'warrantctl', 'attempt', '0', 'at', at, 'detail', detail)
return {1, sid}
