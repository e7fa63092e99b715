-- KEYS: jobs parked due
-- ARGV: action limit due_at
-- SPDX-License-Identifier: BSD-2-Clause
--
-- R6, §13: parked entries (park.lua) queued again as new stream entries,
-- each with its record's id, its `priorDeliveries` and its other fields.
-- due_at '': the first `limit` of the action's list, in the order they
-- were parked (its action goes on: resume, or the breaker or token is
-- back). Otherwise only those whose deadline (ms) is at most due_at, so
-- that the reader ends them expired and notified (R1) while the action
-- stays held; the others keep their place. P:parked keeps the earliest
-- deadline left, or forgets the action with an empty list. A record's
-- hash keeps its `entry`: the parked one was acked, so the new entry takes
-- the record over (transition.lua). Returns how many were queued.
local function add(it)
  redis.call('XADD', K.jobs, '*', 'id', it.r, 'priorDeliveries', it.n, unpack(it.f))
end
local moved = 0
if A.due_at == '' then
  local items = redis.call('LRANGE', K.parked, 0, tonumber(A.limit) - 1)
  for _, s in ipairs(items) do add(cjson.decode(s)) end
  moved = #items
  if moved > 0 then redis.call('LTRIM', K.parked, moved, -1) end
  -- the score may stay below what is left: a due pass finds nothing and mends it
  if redis.call('LLEN', K.parked) == 0 then redis.call('ZREM', K.due, A.action) end
  return moved
end
local due, keep, min = tonumber(A.due_at), {}, nil
for _, s in ipairs(redis.call('LRANGE', K.parked, 0, -1)) do
  local it = cjson.decode(s)
  local x = tonumber(it.x) or 0
  if x <= due then
    add(it)
    moved = moved + 1
  else
    keep[#keep + 1] = s
    if not min or x < min then min = x end
  end
end
if moved > 0 then
  redis.call('DEL', K.parked)
  if #keep > 0 then redis.call('RPUSH', K.parked, unpack(keep)) end
end
if min then redis.call('ZADD', K.due, min, A.action) else redis.call('ZREM', K.due, A.action) end
return moved
