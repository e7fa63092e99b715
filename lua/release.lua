-- KEYS: owner consumers consumer
-- ARGV: instance name
-- SPDX-License-Identifier: BSD-2-Clause
--
-- R15, issue 38 items 1 and 6: a clean stop gives its consumer name back.
-- Only while the claim (owner.lua) is this instance's: its claim, its
-- heartbeat hash and its field of P:consumers are deleted, so that status
-- shows it gone at once and the next worker under the name starts without
-- waiting for the claim to run out. A claim another instance took is left
-- alone, and so is that instance's heartbeat. Returns 1 when released, 0
-- when the claim was not ours.
local cur = redis.call('GET', K.owner)
if not cur or string.match(cur, '^(%S+)') ~= A.instance then return 0 end
redis.call('DEL', K.owner)
redis.call('PEXPIRE', K.consumer, 0)	-- deleted: the ACL grants the worker PEXPIRE there
redis.call('HDEL', K.consumers, A.name)
return 1
