--- KEYS[1] reviews, KEYS[2] meta, KEYS[3] events, KEYS[4] reads, KEYS[5] tasks, KEYS[6] claims,
--- KEYS[7] claim_holders, KEYS[8] leases, KEYS[9] lease_expiry
--- ARGV[1] review id ("" with ARGV[10]), ARGV[2] agent id, ARGV[3] approved/rejected, ARGV[4]
--- note ("" for none), ARGV[5] now (ISO), ARGV[6] ttl ms, ARGV[7] event cap, ARGV[8] event
--- bytes cap, ARGV[9] wake channel, ARGV[10] task id (verify_task: its pending submission)
--- or "", ARGV[11] notes kept per task
--- -> {'unknown'} review (or task); {'resolved', review JSON} already; {'not_reviewer',
---    review JSON}; {'own_submission', review JSON} a submission judged by its submitter;
---    {'not_submitted', task JSON} the task has no submission awaiting verification;
---    {'ok', review JSON, event id, task JSON or ""}
--- Only the named reviewer resolves a review, and only once: the check and the change are
--- one step, so of two resolutions at once exactly one lands. A submission (submit_task) is
--- a review of its task that any agent but the submitter resolves; resolving it moves the
--- task in the same step: approved -> done (verified), rejected -> back in progress with the
--- reviewer's note. approve/reject and verify_task are two doors to this one step.
--- uses: prelude tasks
---

local review_id, agent = ARGV[1], ARGV[2]
if ARGV[10] ~= '' then
  local traw = redis.call('HGET', KEYS[5], ARGV[10])
  if not traw then return {'unknown'} end
  local v = cjson.decode(traw).verification
  if type(v) ~= 'table' or v.state ~= 'submitted' then return {'not_submitted', traw} end
  review_id = v.reviewId
end
local raw = redis.call('HGET', KEYS[1], review_id)
if not raw then return {'unknown'} end
local review = cjson.decode(raw)
if review.status ~= 'pending' then return {'resolved', raw} end
local submission = review.kind == 'submission'
if submission and review.requestedBy == agent then return {'own_submission', raw} end
if not submission and review.reviewer ~= agent then return {'not_reviewer', raw} end
review.status = ARGV[3]
review.resolvedAt = ARGV[5]
review.resolvedBy = agent
if ARGV[4] ~= '' then
  -- roomd answers the resolver's note as the review's `note`; the request's is kept.
  if review.note ~= nil and review.note ~= cjson.null then review.requestNote = review.note end
  review.note = ARGV[4]
  review.resolutionNote = ARGV[4]
end
local out = fix_arrays(cjson.encode(review), {'evidence'})
redis.call('HSET', KEYS[1], review_id, out)
local task_out = ''
local traw = submission and redis.call('HGET', KEYS[5], review.targetId)
if traw then
  local task = cjson.decode(traw)
  local v = task.verification
  if type(v) == 'table' and v.reviewId == review_id then
    if ARGV[3] == 'approved' then
      v.state, v.verifiedBy, v.verifiedAt = 'verified', agent, ARGV[5]
      task.status = 'done'
      lease_end(KEYS[6], KEYS[7], task)
      task_leases_end(KEYS[8], KEYS[9], task.id, nil)
    else
      v.state, v.rejectedBy, v.rejectedAt = 'rejected', agent, ARGV[5]
      if ARGV[4] ~= '' then v.note = ARGV[4] end
      task.status = 'in_progress'
      if ARGV[4] ~= '' then
        task.note = ARGV[4]
        if type(task.notes) ~= 'table' then task.notes = {} end
        table.insert(task.notes, {by = agent, at = ARGV[5], text = ARGV[4]})
        while #task.notes > tonumber(ARGV[11]) do table.remove(task.notes, 1) end
      end
    end
    task.version = version_of(task) + 1
    task.updated_at = ARGV[5]
    task_out = task_encode(task)
    redis.call('HSET', KEYS[5], task.id, task_out)
    redis.call('HSET', KEYS[2], 'updated_at', ARGV[5])
  end
end
local kind = 'review_' .. ARGV[3]
local payload = out
if task_out ~= '' then
  kind = ARGV[3] == 'approved' and 'task_verified' or 'task_rejected'
  payload = cjson.encode({task = task_summary(cjson.decode(task_out)), reviewId = review_id,
    note = ARGV[4] ~= '' and ARGV[4] or nil})
end
local eid = append(KEYS[3], KEYS[2], KEYS[4], ARGV[7], ARGV[8], ARGV[9],
  {'type', kind, 'from', agent, 'to', review.requestedBy, 'payload', payload})
touch(ARGV[6], 1, 9)
return {'ok', out, eid, task_out}
