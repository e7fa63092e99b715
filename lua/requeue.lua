-- KEYS: hash final jobs dead audit
-- ARGV: record_id at audit_maxlen record states who entry_ids...
-- SPDX-License-Identifier: BSD-2-Clause
--
-- warrantctl retry and dead requeue (§11): the record queued again with a
-- fresh budget of calls. `record` is the record as the caller checked it,
-- `states` the states it may be taken from (' failed dead ', or ' dead '
-- for dead requeue, each with a space either side), entry_ids its P:dead
-- entries (deleted: the letter is answered). Re-checks what the caller
-- checked (the same record, one of those states, and when it saw dead
-- letters, at least one still there), so a concurrent retry, drop or
-- rewrite wins cleanly. A terminal hash carries the worker's retention TTL:
-- PERSIST, the job is live again. `final` is the record's P:final mark
-- (R4), which the worker would otherwise ack the new entry for: the
-- operator is the one who removes it. `attempts` never decreases (R13's
-- fence needs it monotonic): `attemptsBase` is set to it, and R8 counts
-- attempts - attemptsBase. The hash's `entry` names the new stream entry,
-- the one the record now runs from. `who` (the person and the Redis user)
-- goes into the audit entry. Returns {1, jobs stream id, attempts} or
-- {0, why}.
local h, jobs, dead, audit = K.hash, K.jobs, K.dead, K.audit
local id, at, maxlen, rec = A.record_id, A.at, A.audit_maxlen, A.record
if redis.call('HGET', h, 'record') ~= rec then return {0, 'the record changed or is gone'} end
local from = redis.call('HGET', h, 'state') or ''
if from == '' or not string.find(A.states, ' ' .. from .. ' ', 1, true) then
  return {0, 'its state is "' .. from .. '", not one of' .. string.gsub(A.states, ' +$', '')}
end
-- R4: a record whose mark says it finished otherwise (done, set back to
-- `failed` by hand) is never run again, not even by the operator.
local fin = redis.call('GET', K.final)
if fin and not string.find(A.states, ' ' .. fin .. ' ', 1, true) then
  return {0, 'its P:final mark says "' .. fin .. '": it never runs again'}
end
local n = 0
for _, e in ipairs(A.entry_ids) do n = n + redis.call('XDEL', dead, e) end
if #A.entry_ids > 0 and n == 0 then return {0, 'its dead letters are gone'} end
local attempts = redis.call('HGET', h, 'attempts') or '0'
local detail = 'queued again by warrantctl with a fresh budget (attemptsBase ' .. attempts ..
  '), asked by ' .. A.who
redis.call('PERSIST', h)
redis.call('DEL', K.final)
redis.call('HDEL', h, 'owner', 'outcome', 'httpStatus')
local sid = redis.call('XADD', jobs, '*', 'id', id)
redis.call('HSET', h, 'state', 'queued', 'attemptsBase', attempts, 'updatedAt', at, 'detail', detail,
  'entry', sid)
redis.call('XADD', audit, 'MAXLEN', '~', maxlen, '*', 'id', id, 'from', from, 'to', 'queued',
  'consumer', 'warrantctl', 'attempt', attempts, 'at', at, 'detail', detail)
return {1, sid, attempts}
