-- KEYS: hash final jobs audit dead notify scheduled
-- ARGV: group consumer audit_maxlen dead_maxlen notify_maxlen terminal stream_id fence flags state record_id at outcome detail attempt http_status retain_ms schedule_score dead_reason deliveries notify_owner notify_kind on_behalf_of action resource traceparent
-- BATCH: jobs audit dead notify scheduled group consumer audit_maxlen dead_maxlen notify_maxlen terminal
-- SPDX-License-Identifier: BSD-2-Clause
--
-- One state change of a job: fences, hash write, audit, dead letter,
-- notification, reschedule and XACK at once (R4, R10, R13).
-- fence: the hash's `attempts` must equal it ('-1': no check). flags: the
-- sum of 1 has_hash, 2 ack, 4 notify_write, 8 require_owner, 16
-- incr_attempts, 32 check_lease, 64 keep_unpending, 128 final_write, 256
-- call_result (store.h's STORE_TF_*), one number and not nine arguments. '' means none for state,
-- http_status, dead_reason, schedule_score and retain_ms (no PEXPIRE).
-- terminal: the terminal states (from job.c's table: job_terminal_list),
-- each with a space before and after it (' done expired ... dead '). The
-- arguments are in the order of how often they are needed: store.c leaves
-- out an item's trailing empty ones (each argument costs Redis about 0.1
-- us), and luagen.sh makes them ''. attempt is read only without
-- incr_attempts, deliveries only with dead_reason, the five before the
-- last only with notify_write. traceparent (the stream entry's, §13) goes
-- into the audit entries; '' when the entry carried none.
-- R4, one decision, one execution: `final` (P:final:<id>) holds the
-- terminal state the record reached, written with the terminal write
-- (final_write) and with the hash's TTL; while it exists the record is
-- terminal whatever its hash says now. Every state write names the stream
-- entry it comes from in the hash's `entry`; an entry for a record whose
-- `entry` is another one still pending in the group (any consumer's) is a
-- duplicate: acked, with an audit entry from = to = the state and detail
-- 'duplicate of entry <id>', nothing else written. An `entry` that is
-- pending nowhere (acked, or forgotten by a Redis that lost its PEL) is
-- taken over, so a record is never stranded.
-- Returns {1, 'ok', from, attempts} or {0, why, from}: why is 'lease' (the
-- entry is no longer pending for this consumer), 'owner'/'attempts' (a newer
-- attempt exists: R13), 'terminal' (R4: the entry is acked, nothing else;
-- from is the P:final mark when that said it), 'duplicate' (R4, above) or
-- 'missing' (the hash is gone: nothing is written into a husk).
-- A call step (incr_attempts) is fenced too: it increments `attempts`
-- only from `fence`, and writes `entry` (with its state, or alone). Sent
-- again after its reply was lost, it finds attempts = fence + 1 with owner
-- and entry its own and returns {1, 'again', from, attempts}: written once,
-- counted once (R8).
-- With keep_unpending (a call's result, fenced by `fence`) an entry
-- that is pending for nobody -- a Redis that restarted without persistence
-- forgot its PEL -- is still written when owner and attempts are ours: the
-- result was obtained and must not be lost; there is nothing to ack.
-- Counts are passed as '1', not 1: Redis formats a Lua number argument
-- with snprintf("%.17g"), about 2,000 instructions each.
local h, jobs = K.hash, K.jobs
local f = tonumber(A.flags)
local has_hash = f % 2 >= 1
local ack = f % 4 >= 2
local notify_write = f % 8 >= 4
local require_owner = f % 16 >= 8
local incr_attempts = f % 32 >= 16
local check_lease = f % 64 >= 32
local keep_unpending = f % 128 >= 64
local final_write = f % 256 >= 128
local call_result = f % 512 >= 256
-- §11: warrantctl cancel made the record terminal while this attempt's
-- call was out. Its answer is kept beside the state, which stays
-- `cancelled`: lateOutcome (the state it would have led to) and
-- lateHttpStatus, with an audit entry -- only for the attempt that was in
-- flight (owner and attempts still this one's), and not when the terminal
-- state is this very write's, sent again after its reply was lost. (No
-- worker writes `cancelled`, and the states come from job.c's table: the
-- name is not written here.)
local function late(now)
  if not call_result or A.state == '' or now == A.state then return end
  local v = redis.call('HMGET', h, 'owner', 'attempts')
  if v[1] ~= A.consumer or (A.fence ~= '-1' and v[2] ~= A.fence) then return end
  redis.call('HSET', h, 'lateOutcome', A.state, 'lateHttpStatus', A.http_status)
  redis.call('XADD', K.audit, 'MAXLEN', '~', A.audit_maxlen, '*', 'id', A.record_id, 'from', now,
    'to', now, 'consumer', A.consumer, 'attempt', v[2] or '0', 'at', A.at,
    'detail', 'late outcome ' .. A.state .. ': ' .. A.detail)
end
local pending = true
if check_lease then
  local p = redis.call('XPENDING', jobs, A.group, A.stream_id, A.stream_id, '1')
  if p[1] and p[1][2] ~= A.consumer then return {0, 'lease', ''} end
  if not p[1] then
    if not keep_unpending or not has_hash then return {0, 'lease', ''} end
    pending = false
  end
end
local from = ''
if has_hash then
  -- First the mark, which the decider's ACL user cannot write: a hash set
  -- back to 'queued' by hand does not make a terminal record run again.
  -- The job's load read it (a GET of its own); here it is named, and read
  -- again, only with the terminal write that sets it: a key a call does
  -- not touch is not named (K.final, K.dead, K.notify and K.scheduled are
  -- then the stream: store.c), as a slot migration refuses a call naming
  -- a missing key for as long as it lasts (-TRYAGAIN). A cancel sets the
  -- hash's state too, so a non-terminal write sees it below.
  if final_write then
    local fin = redis.call('GET', K.final)
    if fin then
      late(fin)
      redis.call('XACK', jobs, A.group, A.stream_id)
      return {0, 'terminal', fin}
    end
  end
  -- The fields the checks need, in one call: owner and attempts only when
  -- a check below reads them (a field the hash lacks is a scan of all of
  -- it, 3,500 instructions with a short record; four HGETs cost a fenced
  -- write 11,000 more than this HMGET).
  local v
  if require_owner or not pending or A.fence ~= '-1' then
    v = redis.call('HMGET', h, 'state', 'entry', 'owner', 'attempts')
  else
    v = redis.call('HMGET', h, 'state', 'entry')
  end
  -- A hash has a state (the decider writes it), so EXISTS is asked only
  -- when it has none.
  from = v[1]
  if not from then
    if redis.call('EXISTS', h) == 0 then return {0, 'missing', ''} end
    from = ''
  end
  -- One plain find in ' done expired ... ': building a set with gmatch on
  -- every call cost Redis 7 % of the script.
  if from ~= '' and string.find(A.terminal, ' ' .. from .. ' ', 1, true) then
    late(from)
    redis.call('XACK', jobs, A.group, A.stream_id)
    return {0, 'terminal', from}
  end
  local held = v[2]
  if held and held ~= A.stream_id and held ~= '' then
    -- pcall: an `entry` that is no stream id (written by hand) is pending
    -- nowhere, and is taken over rather than pin the record.
    local p = redis.pcall('XPENDING', jobs, A.group, held, held, '1')
    if type(p) == 'table' and p[1] then
      redis.call('XACK', jobs, A.group, A.stream_id)
      local n = v[4] or redis.call('HGET', h, 'attempts') or '0'
      if A.traceparent == '' then
        redis.call('XADD', K.audit, 'MAXLEN', '~', A.audit_maxlen, '*', 'id', A.record_id, 'from', from,
          'to', from, 'consumer', A.consumer, 'attempt', n, 'at', A.at, 'detail', 'duplicate of entry ' .. held)
      else
        redis.call('XADD', K.audit, 'MAXLEN', '~', A.audit_maxlen, '*', 'id', A.record_id, 'from', from,
          'to', from, 'consumer', A.consumer, 'attempt', n, 'at', A.at, 'detail', 'duplicate of entry ' .. held,
          'traceparent', A.traceparent)
      end
      return {0, 'duplicate', from}
    end
  end
  if (require_owner or not pending) and v[3] ~= A.consumer then return {0, 'owner', from} end
  if A.fence ~= '-1' then
    local n = v[4] or '0'
    if n ~= A.fence then
      if not incr_attempts then return {0, 'attempts', from} end
      -- Off the hot path: HINCRBY by 0 has Redis refuse a value that is not
      -- an integer as it always did (R17 gives such an entry up).
      redis.call('HINCRBY', h, 'attempts', '0')
      if tonumber(n) == tonumber(A.fence) + 1 and v[3] == A.consumer and held == A.stream_id then
        return {1, 'again', from, n}
      end
      return {0, 'attempts', from}
    end
  end
end
local attempt = A.attempt
if has_hash and incr_attempts then
  -- One digit without tostring, whose sprintf costs Redis 2,000 instructions.
  local n = redis.call('HINCRBY', h, 'attempts', '1')
  if n >= 0 and n <= 9 then attempt = string.char(48 + n) else attempt = tostring(n) end
  -- The state write below names the entry; a call step without one (the
  -- PDP's answer came after `running` was written) names it here.
  if A.state == '' then redis.call('HSET', h, 'entry', A.stream_id) end
end
if has_hash and A.state ~= '' then
  -- two calls written out, not a table of the fields and unpack
  if A.http_status == '' then
    redis.call('HSET', h, 'state', A.state, 'owner', A.consumer, 'updatedAt', A.at, 'outcome', A.outcome, 'detail', A.detail,
      'entry', A.stream_id)
  else
    redis.call('HSET', h, 'state', A.state, 'owner', A.consumer, 'updatedAt', A.at, 'outcome', A.outcome, 'detail', A.detail,
      'entry', A.stream_id, 'httpStatus', A.http_status)
  end
  if A.retain_ms ~= '' then
    redis.call('PEXPIRE', h, A.retain_ms)
    if final_write then redis.call('SET', K.final, A.state, 'PX', A.retain_ms) end
  elseif final_write then
    redis.call('SET', K.final, A.state)
  end
  if A.state ~= from and A.traceparent == '' then
    redis.call('XADD', K.audit, 'MAXLEN', '~', A.audit_maxlen, '*', 'id', A.record_id, 'from', from,
      'to', A.state, 'consumer', A.consumer, 'attempt', attempt, 'at', A.at, 'detail', A.detail)
  elseif A.state ~= from then
    redis.call('XADD', K.audit, 'MAXLEN', '~', A.audit_maxlen, '*', 'id', A.record_id, 'from', from,
      'to', A.state, 'consumer', A.consumer, 'attempt', attempt, 'at', A.at, 'detail', A.detail,
      'traceparent', A.traceparent)
  end
end
if A.schedule_score ~= '' then redis.call('ZADD', K.scheduled, A.schedule_score, A.record_id) end
if A.dead_reason ~= '' then
  redis.call('XADD', K.dead, 'MAXLEN', '~', A.dead_maxlen, '*', 'id', A.record_id, 'streamId', A.stream_id, 'reason', A.dead_reason,
    'detail', A.detail, 'deliveries', A.deliveries, 'consumer', A.consumer, 'at', A.at)
end
if notify_write then
  notify(K.notify, A.notify_maxlen, A.record_id, A.notify_owner, A.notify_kind, A.outcome,
    A.on_behalf_of, A.action, A.resource, A.at)
end
if ack and pending then redis.call('XACK', jobs, A.group, A.stream_id) end
return {1, 'ok', from, attempt}
