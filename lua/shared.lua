-- SHARED: notify
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
