-- KEYS: jobs consumers clock
-- ARGV: group consumer mode claim_idle_ms heartbeat_ms forgotten_ms start count calls
-- SPDX-License-Identifier: BSD-2-Clause
--
-- Own pending entries (mode 'own', R14) or a dead consumer's (mode 'auto',
-- R11), each with its delivery count.
-- own: from the exclusive start id ('0': from the beginning), up to count;
-- each is renewed (XCLAIM JUSTID: idle reset, no delivery) before it is
-- returned, so it runs with a fresh lease (R10). Entries deleted from the
-- stream are acked here (nothing is left to run).
-- auto: liveness is Redis' judgement, not the PEL's idle time. An owner's
-- entries are taken only when Redis has served without a gap (P:clock,
-- heartbeat.lua) for at least the owner's own published claim_idle_ms and
-- has seen no heartbeat of it for as long (P:consumers). An owner that
-- never published one is judged by the group's idle time for it against
-- claim_idle_ms. heartbeat_ms is the claimer's own, the least gap that
-- counts (heartbeat.lua's rule). At most count entries are taken and calls x 10 x count
-- examined. An entry deleted from the stream is acked and returned as
-- deleted (entry-deleted). A consumer with nothing pending that has been
-- silent for a day leaves the group and P:consumers. First, though, auto
-- takes back this consumer's own entries idle for forgotten_ms (twice its
-- lease renewal): what it holds in hand it renews, so these are entries it
-- let go without an XACK (a refused write, an abandoned attempt) and that
-- no one else would ever take from a live owner.
-- Returns {next, {{id, fields-or-false, deliveries}...}, {deleted id...}};
-- next is '0-0' when the scan is complete (auto: always).
local jobs, g, me = K.jobs, A.group, A.consumer
local out, deleted, nxt = {}, {}, '0-0'
local want = tonumber(A.count)
local DAY = 86400000
local function count(id)
  local p = redis.call('XPENDING', jobs, g, id, id, '1')
  if p[1] then return p[1][4] end
  return 1
end
-- The entry's fields, or nil after acking it when it was deleted.
local function fields(id)
  local x = redis.call('XRANGE', jobs, id, id)
  if x[1] then return x[1][2] end
  redis.call('XACK', jobs, g, id)
  deleted[#deleted + 1] = id
  return nil
end
-- Own entries from start (exclusive; '0': the first), idle at least
-- min_idle, renewed as they are returned.
local function own(start, min_idle)
  local from = start == '0' and '-' or '(' .. start
  local p = redis.call('XPENDING', jobs, g, 'IDLE', min_idle, from, '+', want - #out, me)
  for _, e in ipairs(p) do
    local f = fields(e[1])
    if f then
      redis.call('XCLAIM', jobs, g, me, 0, e[1], 'JUSTID')
      out[#out + 1] = {e[1], f, e[4]}
    end
  end
  return p
end
if A.mode ~= 'auto' then
  local p = own(A.start, '0')
  if #p == want then nxt = p[#p][1] end
  return {nxt, out, deleted}
end
own('0', A.forgotten_ms)
if #out >= want then return {nxt, out, deleted} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local seen, widest = {}, tonumber(A.heartbeat_ms)
local all = redis.call('HGETALL', K.consumers)
for i = 1, #all, 2 do
  local at, idle, hb = string.match(all[i + 1], '^(%d+) (%d+) (%d+)$')
  if at then
    seen[all[i]] = {tonumber(at), tonumber(idle)}
    if tonumber(hb) > widest then widest = tonumber(hb) end
  end
end
local last = tonumber(redis.call('HGET', K.clock, 'last'))
local since = tonumber(redis.call('HGET', K.clock, 'since'))
-- A claim that Redis runs late (sent before a freeze, run after it) finds
-- the gap here before any heartbeat has marked it: it takes nothing.
if not last or not since or now < last or now - last > 2 * widest then
  return {nxt, out, deleted}
end
local budget = tonumber(A.calls) * 10 * want
for _, c in ipairs(redis.call('XINFO', 'CONSUMERS', jobs, g)) do
  local name, pending, gidle
  for i = 1, #c, 2 do
    if c[i] == 'name' then name = c[i + 1]
    elseif c[i] == 'pending' then pending = c[i + 1]
    elseif c[i] == 'idle' then gidle = c[i + 1] end
  end
  local s = seen[name]
  local silent, limit = gidle, tonumber(A.claim_idle_ms)
  if s then silent, limit = now - s[1], s[2] end
  if name ~= me and pending > 0 and silent >= limit and now - since >= limit then
    local p = redis.call('XPENDING', jobs, g, '-', '+', want - #out, name)
    for _, e in ipairs(p) do
      budget = budget - 1
      local f = fields(e[1])
      if f then
        redis.call('XCLAIM', jobs, g, me, 0, e[1])
        out[#out + 1] = {e[1], f, count(e[1])}
      end
    end
  elseif name ~= me and pending == 0 and silent >= DAY then
    redis.call('XGROUP', 'DELCONSUMER', jobs, g, name)
    redis.call('HDEL', K.consumers, name)
  end
  if #out >= want or budget <= 0 then break end
end
return {nxt, out, deleted}
