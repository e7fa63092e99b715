-- KEYS: jobs
-- ARGV: group consumer id
--
-- R9: XCLAIM (delivery count + 1) of an entry still ours. Returns the new
-- delivery count, or 0 when the entry is no longer ours (or was deleted).
local p = redis.call('XPENDING', K.jobs, A.group, A.id, A.id, '1')
if not p[1] or p[1][2] ~= A.consumer then return 0 end
local c = redis.call('XCLAIM', K.jobs, A.group, A.consumer, 0, A.id)
if not c[1] then return 0 end
p = redis.call('XPENDING', K.jobs, A.group, A.id, A.id, '1')
return p[1] and p[1][4] or 0
