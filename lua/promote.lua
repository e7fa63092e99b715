-- KEYS: scheduled jobs
-- ARGV: limit
-- SPDX-License-Identifier: BSD-2-Clause
--
-- §5: due ids from P:scheduled onto P:jobs, at most `limit`. Due means by
-- Redis' clock, so workers with skewed clocks agree. Returns how many moved.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ids = redis.call('ZRANGEBYSCORE', K.scheduled, '-inf', now, 'LIMIT', 0, A.limit)
for _, id in ipairs(ids) do
  redis.call('XADD', K.jobs, '*', 'id', id)
  redis.call('ZREM', K.scheduled, id)
end
return #ids
