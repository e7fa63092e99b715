-- KEYS: jobs
-- ARGV: group consumer mode min_idle start count calls
--
-- Own pending entries (mode 'own') or XAUTOCLAIM ('auto'), each with its
-- delivery count. start: own, the exclusive start id ('0' from the
-- beginning); auto, the cursor. calls (auto): how many XAUTOCLAIM calls at
-- most, each examining up to 10 x count entries.
-- Returns {next, {{id, fields-or-false, deliveries}...}, {deleted id...}};
-- next is '0-0' when the scan is complete. Own entries that were deleted
-- from the stream are acked here (nothing is left to run). In auto mode the
-- scan follows XAUTOCLAIM's cursor until it wraps, `count` entries are
-- claimed or `calls` calls were made (R11): the caller passes `next` back.
local jobs, g, me = K.jobs, A.group, A.consumer
local out, deleted, nxt = {}, {}, '0-0'
local function count(id)
  local p = redis.call('XPENDING', jobs, g, id, id, '1')
  if p[1] then return p[1][4] end
  return 1
end
if A.mode == 'auto' then
  local want, cursor = tonumber(A.count), A.start
  for _ = 1, tonumber(A.calls) do
    local r = redis.call('XAUTOCLAIM', jobs, g, me, A.min_idle, cursor, 'COUNT', want - #out)
    cursor = r[1]
    for _, e in ipairs(r[2]) do out[#out + 1] = {e[1], e[2], count(e[1])} end
    for _, d in ipairs(r[3] or {}) do deleted[#deleted + 1] = d end
    if cursor == '0-0' or #out >= want then break end
  end
  nxt = cursor
else
  local start = A.start == '0' and '-' or '(' .. A.start
  local p = redis.call('XPENDING', jobs, g, start, '+', A.count, me)
  for _, e in ipairs(p) do
    local x = redis.call('XRANGE', jobs, e[1], e[1])
    if x[1] then out[#out + 1] = {e[1], x[1][2], e[4]}
    else redis.call('XACK', jobs, g, e[1]); deleted[#deleted + 1] = e[1] end
  end
  if #p == tonumber(A.count) then nxt = p[#p][1] end
end
return {nxt, out, deleted}
