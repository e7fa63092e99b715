-- KEYS: consumers clock
-- ARGV: consumer claim_idle_ms heartbeat_ms
-- SPDX-License-Identifier: BSD-2-Clause
--
-- R11: this consumer is alive, by Redis' own clock. Writes its field of
-- P:consumers ("<TIME ms> <claim_idle_ms> <heartbeat_ms>") and moves
-- P:clock on: `last` is the TIME of the latest heartbeat, `since` the
-- start of the current run of heartbeats without a gap. A gap -- no
-- heartbeat for more than twice the largest published heartbeat_ms (a
-- freeze, a restart, LOADING, an episode of refused writes: every write of
-- this script is refused then too), or a clock that went back -- starts a
-- new run. claim.lua takes nothing until a run is claim_idle_ms old, so an
-- owner that was only waiting for Redis is never taken as dead.
-- Returns {now, since}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local widest = tonumber(A.heartbeat_ms)
for _, v in ipairs(redis.call('HVALS', K.consumers)) do
  local hb = tonumber(string.match(v, '^%d+ %d+ (%d+)$'))
  if hb and hb > widest then widest = hb end
end
local last = tonumber(redis.call('HGET', K.clock, 'last'))
local since = tonumber(redis.call('HGET', K.clock, 'since'))
if not last or not since or now < last or now - last > 2 * widest then since = now end
local function ms(x) return string.format('%.0f', x) end
redis.call('HSET', K.clock, 'since', ms(since), 'last', ms(now))
redis.call('HSET', K.consumers, A.consumer, ms(now) .. ' ' .. A.claim_idle_ms .. ' ' .. A.heartbeat_ms)
return {ms(now), ms(since)}
