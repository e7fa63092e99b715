-- SHARED: notify entry_carry
-- SPDX-License-Identifier: BSD-2-Clause
--
-- The library's shared code (luagen.sh: at its top, before every function).
--
-- §6: the owner's notification, the one writer of a P:notify entry (the
-- worker's transition.lua, warrantctl cancel's cancel.lua). Its fields are
-- those of the webhook body, in its order: webhook_note_body
-- (src/worker/webhook.c) is the one writer of that; test_store fails when
-- the two disagree.
local function notify(key, maxlen, id, owner, kind, reason, on_behalf_of, action, resource, at)
  return redis.call('XADD', key, 'MAXLEN', '~', maxlen, '*', 'id', id, 'owner', owner, 'kind', kind,
    'reason', reason, 'onBehalfOf', on_behalf_of, 'action', action, 'resource', resource, 'at', at)
end

-- R12, §13: what a pending entry carries on when it is handed back or
-- parked: its `priorDeliveries` (1 to 9 digits, else 0, as the reader,
-- sreply.c, counts it) and its other fields but `id` (a traceparent).
local function entry_carry(jobs, id)
  local prior, rest = 0, {}
  local x = redis.call('XRANGE', jobs, id, id)
  if x[1] then
    local f = x[1][2]
    for i = 1, #f - 1, 2 do
      if f[i] == 'priorDeliveries' then
        if string.match(f[i + 1], '^%d%d?%d?%d?%d?%d?%d?%d?%d?$') then prior = tonumber(f[i + 1]) end
      elseif f[i] ~= 'id' then
        rest[#rest + 1] = f[i]
        rest[#rest + 1] = f[i + 1]
      end
    end
  end
  return prior, rest
end
