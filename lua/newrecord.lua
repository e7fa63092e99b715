-- KEYS: hash
-- ARGV: record created_at
-- SPDX-License-Identifier: BSD-2-Clause
--
-- warrantctl decide while the shard's slot migrates: lua/decide.lua names
-- the new record's hash, which exists on neither node, so Redis refuses it
-- (-TRYAGAIN) for as long as the migration lasts. This call names that key
-- alone, which Redis serves on one node or the other: the record as
-- decide.lua writes it, the EXISTS check and the write one step as there.
-- The caller then queues (or schedules) the id with a command of its own.
-- Returns 1, or 0 when the decision exists.
if redis.call('EXISTS', K.hash) == 1 then return 0 end
redis.call('HSET', K.hash, 'record', A.record, 'state', 'queued', 'createdAt', A.created_at)
return 1
