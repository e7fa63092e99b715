-- KEYS: owner
-- ARGV: instance ttl_ms
-- SPDX-License-Identifier: BSD-2-Clause
--
-- R11, issue 38 item 1: a consumer name is one live process. P:owner:<name>
-- holds "<instance> <TIME ms>": the random instance id of the worker that
-- runs under the name and the time, by Redis' own clock, of its latest
-- claim. A worker claims its name before it reads anything, and renews the
-- claim with every heartbeat; the claim lives ttl_ms (PX: Redis' clock
-- judges it, as the heartbeat). Free, or already ours: written, with a new
-- time. Another instance's: left alone.
-- Returns {1, value} when the claim is ours now, {0, value, pttl} when
-- another instance holds it (the worker watches whether its time moves on:
-- a live holder renews it, a dead one's runs out).
local cur = redis.call('GET', K.owner)
if cur and string.match(cur, '^(%S+)') ~= A.instance then
  return {0, cur, redis.call('PTTL', K.owner)}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local v = A.instance .. ' ' .. string.format('%.0f', now)
redis.call('SET', K.owner, v, 'PX', A.ttl_ms)
return {1, v}
