-- KEYS: jobs
-- ARGV:
-- SPDX-License-Identifier: BSD-2-Clause
--
-- §2: trims P:jobs below the oldest entry that some group has not been
-- delivered (its last-delivered-id and all after it are kept) or still
-- holds pending. No group, or a group that has delivered nothing: nothing
-- is trimmed. Returns the number of entries removed.
local function before(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am < bm or (am == bm and as < bs)
end
if redis.call('EXISTS', K.jobs) == 0 then return 0 end
local groups = redis.call('XINFO', 'GROUPS', K.jobs)
if #groups == 0 then return 0 end
local keep
for _, g in ipairs(groups) do
  local f = {}
  for i = 1, #g, 2 do f[g[i]] = g[i + 1] end
  local first = f['last-delivered-id']
  if first == '0-0' then return 0 end
  if tonumber(f['pending']) > 0 then
    local s = redis.call('XPENDING', K.jobs, f['name'])
    if s[2] and before(s[2], first) then first = s[2] end
  end
  if keep == nil or before(first, keep) then keep = first end
end
return redis.call('XTRIM', K.jobs, 'MINID', '~', keep)
