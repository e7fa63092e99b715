-- KEYS: jobs
-- ARGV: group consumer ids...
-- SPDX-License-Identifier: BSD-2-Clause
--
-- R10: XCLAIM ... JUSTID (idle reset, no delivery count) of the entries
-- still ours. Returns {lost, gone}: the ids another consumer holds now, and
-- those pending for nobody (acked, or a Redis that restarted without
-- persistence forgot them: nobody else can be running them).
local lost, gone = {}, {}
for _, id in ipairs(A.ids) do
  local p = redis.call('XPENDING', K.jobs, A.group, id, id, '1')
  if p[1] and p[1][2] == A.consumer then
    redis.call('XCLAIM', K.jobs, A.group, A.consumer, 0, id, 'JUSTID')
  elseif p[1] then lost[#lost + 1] = id
  else gone[#gone + 1] = id end
end
return {lost, gone}
