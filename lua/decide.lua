-- KEYS: hash jobs scheduled
-- ARGV: record created_at record_id score traceparent
-- SPDX-License-Identifier: BSD-2-Clause
--
-- warrantctl decide: the EXISTS check and the writes are one step, so two
-- deciders racing on one id cannot both succeed. score '' enqueues at once,
-- else the id goes to P:scheduled. traceparent (W3C Trace Context, checked
-- by warrantctl) goes into the stream entry when not ''. Returns 1, or 0
-- when the decision exists.
-- The key it does not touch (P:scheduled, or P:jobs for a scheduled id) is
-- the other one named again (warrantctl.c): a call naming a missing key is
-- refused while its slot migrates (issue 27 item 5), and an empty schedule
-- does not exist.
if redis.call('EXISTS', K.hash) == 1 then return 0 end
redis.call('HSET', K.hash, 'record', A.record, 'state', 'queued', 'createdAt', A.created_at)
if A.score ~= '' then
  redis.call('ZADD', K.scheduled, A.score, A.record_id)
else
  if A.traceparent == '' then
    redis.call('XADD', K.jobs, '*', 'id', A.record_id)
  else
    redis.call('XADD', K.jobs, '*', 'id', A.record_id, 'traceparent', A.traceparent)
  end
end
return 1
