--- KEYS[1..8] the task keys (tasks, meta, events, reads, claims, claim_holders, leases,
--- lease_expiry), KEYS[9] reviews, KEYS[10] review_order
--- ARGV[1] task id, ARGV[2] agent, ARGV[3] the submission's review JSON, ARGV[4] its id,
--- ARGV[5] now (ISO), ARGV[6] ttl ms, ARGV[7] event cap, ARGV[8] event bytes cap, ARGV[9] wake
--- channel, ARGV[10] most reviews per room, ARGV[11] the evidence JSON
--- -> {'unknown'}; {'done', task JSON}; {'not_owner', task JSON} the agent is not its owner;
---    {'submitted', task JSON} a submission awaits verification already; {'quota', reviews};
---    {'ok', task JSON, event id}
--- The submission is a review of the task (kind "submission", reviewer "*": anyone but the
--- submitter), so list_reviews, approve and reject see it like any other.
--- uses: prelude tasks
---

local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {'unknown'} end
local task = cjson.decode(raw)
if task.status == 'done' then return {'done', raw} end
if owner_of(task) ~= ARGV[2] then return {'not_owner', raw} end
if type(task.verification) == 'table' and task.verification.state == 'submitted' then
  return {'submitted', raw}
end
local count = redis.call('HLEN', KEYS[9])
if count >= tonumber(ARGV[10]) then return {'quota', count} end
redis.call('HSET', KEYS[9], ARGV[4], ARGV[3])
task.verification = {state = 'submitted', evidence = cjson.decode(ARGV[11]),
  submittedBy = ARGV[2], at = ARGV[5], reviewId = ARGV[4]}
task.version = version_of(task) + 1
task.updated_at = ARGV[5]
local out = task_encode(task)
redis.call('HSET', KEYS[1], ARGV[1], out)
redis.call('HSET', KEYS[2], 'updated_at', ARGV[5])
local eid = append(KEYS[3], KEYS[2], KEYS[4], ARGV[7], ARGV[8], ARGV[9],
  {'type', 'task_submitted', 'from', ARGV[2], 'to', 'all', 'payload',
   cjson.encode({task = task_summary(task), reviewId = ARGV[4],
     evidence = #task.verification.evidence})})
redis.call('ZADD', KEYS[10], id_score(eid), ARGV[4])
touch(ARGV[6], 1, 4)
touch(ARGV[6], 9, 10)
return {'ok', out, eid}
