-- KEYS: hash
-- ARGV: max_bytes
-- BATCH: max_bytes
-- FLAGS: no-writes
-- SPDX-License-Identifier: BSD-2-Clause
--
-- A job's load (§3.1, §3.3): what the worker reads of a record's hash, its
-- `record` only when that is at most max_bytes long ([records] max_bytes).
-- HSTRLEN first, so a longer one never crosses the wire: it fills neither
-- Redis' output buffer nor the worker's memory, and the job is
-- record-invalid unread (issue 23 item 1).
-- Returns {exists, withheld, state, attempts, record, attemptsBase}: exists 1 or 0;
-- withheld the record's length when it is longer than max_bytes (record is
-- nil then), else 0; a field the hash lacks is nil. HMGET of the four
-- fields the worker reads, not HGETALL: the state fields stay in Redis.
-- attemptsBase (set by warrantctl retry, §11) comes last, so R8 counts
-- attempts - attemptsBase while `attempts` itself never decreases.
-- Batched (the loads of one turn of the loop in one call, as the
-- transitions): a script call costs Redis about 25,000 instructions.
local n = redis.call('HSTRLEN', K.hash, 'record')
if n > tonumber(A.max_bytes) then
  local v = redis.call('HMGET', K.hash, 'state', 'attempts', 'attemptsBase')
  return {1, n, v[1], v[2], false, v[3]}
end
local v = redis.call('HMGET', K.hash, 'state', 'attempts', 'record', 'attemptsBase')
-- A hash has a record (the decider writes it): EXISTS only when it has none.
local e = 1
if not v[3] and redis.call('EXISTS', K.hash) == 0 then e = 0 end
return {e, 0, v[1], v[2], v[3], v[4]}
