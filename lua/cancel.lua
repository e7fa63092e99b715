-- KEYS: hash final notify audit scheduled
-- ARGV: record_id at audit_maxlen notify_maxlen record terminal retain_ms who notify_owner on_behalf_of action resource
-- SPDX-License-Identifier: BSD-2-Clause
--
-- warrantctl cancel (§11): a record not yet terminal ends as `cancelled`.
-- `record` is the record as the caller verified it (a rewrite since then
-- wins); `terminal` the terminal states (job.c's table, each with a space
-- either side). The state, the P:final mark (R4: no worker runs it again,
-- whatever its hash says later), the retention TTL of both (retain_ms, as
-- the worker's terminal writes), the audit entry naming who asked, and the
-- owner's notification (§6; notify_owner '' when nobody is named) happen
-- at once; a scheduled id leaves P:scheduled. A worker holding the entry
-- acks it at its next write; one whose call is in flight records that
-- call's answer as lateOutcome/lateHttpStatus (transition.lua), the state
-- staying `cancelled`. Returns {1, from} or {0, why}.
local h, id, at = K.hash, A.record_id, A.at
if redis.call('HGET', h, 'record') ~= A.record then return {0, 'the record changed or is gone'} end
local fin = redis.call('GET', K.final)
if fin then return {0, 'it is ' .. fin .. ' already'} end
local from = redis.call('HGET', h, 'state') or ''
if from ~= '' and string.find(A.terminal, ' ' .. from .. ' ', 1, true) then
  return {0, 'it is ' .. from .. ' already'}
end
local detail = 'cancelled by warrantctl, asked by ' .. A.who
redis.call('HSET', h, 'state', 'cancelled', 'outcome', 'cancelled', 'updatedAt', at, 'detail', detail)
redis.call('PEXPIRE', h, A.retain_ms)
redis.call('SET', K.final, 'cancelled', 'PX', A.retain_ms)
redis.call('ZREM', K.scheduled, id)
redis.call('XADD', K.audit, 'MAXLEN', '~', A.audit_maxlen, '*', 'id', id, 'from', from,
  'to', 'cancelled', 'consumer', 'warrantctl', 'attempt', redis.call('HGET', h, 'attempts') or '0',
  'at', at, 'detail', detail)
if A.notify_owner ~= '' then
  notify(K.notify, A.notify_maxlen, id, A.notify_owner, 'cancelled', 'cancelled', A.on_behalf_of,
    A.action, A.resource, at)
end
return {1, from}
