-- KEYS: jobs
-- ARGV: group consumer id expected
-- SPDX-License-Identifier: BSD-2-Clause
--
-- R9: XCLAIM (delivery count + 1) of an entry still ours, once. expected:
-- the entry's delivery count as the worker last knew it (Redis' count plus
-- the entry's `priorDeliveries`, handback.lua). A count already above it
-- means this re-dispatch ran and its reply was lost (the worker sends it
-- again): nothing is claimed a second time, the count is answered as it
-- is. Returns the delivery count after the re-dispatch, or 0 when the
-- entry is no longer ours (or was deleted).
local p = redis.call('XPENDING', K.jobs, A.group, A.id, A.id, '1')
if not p[1] or p[1][2] ~= A.consumer then return 0 end
local prior = 0
local x = redis.call('XRANGE', K.jobs, A.id, A.id)
if not x[1] then return 0 end
local f = x[1][2]
for i = 1, #f - 1, 2 do
  if f[i] == 'priorDeliveries' and string.match(f[i + 1], '^%d%d?%d?%d?%d?%d?%d?%d?%d?$') then
    prior = tonumber(f[i + 1])
  end
end
if p[1][4] + prior > tonumber(A.expected) then return p[1][4] + prior end
local c = redis.call('XCLAIM', K.jobs, A.group, A.consumer, 0, A.id)
if not c[1] then return 0 end
p = redis.call('XPENDING', K.jobs, A.group, A.id, A.id, '1')
return p[1] and p[1][4] + prior or 0
