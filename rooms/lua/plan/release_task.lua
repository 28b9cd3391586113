--- KEYS as CLAIM_TASK_SCRIPT
--- ARGV[1] task id, ARGV[2] agent id, ARGV[3] now (ISO), ARGV[4] note ("" for none),
--- ARGV[5] notes kept per task, ARGV[6] ttl ms, ARGV[7] event cap, ARGV[8] event bytes cap,
--- ARGV[9] wake channel
--- -> {'unknown'}; {'done', task JSON}; {'owned', task JSON} not the agent's;
---    {'ok', task JSON, event id}
--- uses: prelude tasks
---

local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {'unknown'} end
local task = cjson.decode(raw)
if task.status == 'done' then return {'done', raw} end
if owner_of(task) ~= ARGV[2] then return {'owned', raw} end
local previous = task.status
lease_end(KEYS[5], KEYS[6], task)
task_leases_end(KEYS[7], KEYS[8], ARGV[1], ARGV[2])
task.status = 'pending'
task.owner = cjson.null
if ARGV[4] ~= '' then
  task.note = ARGV[4]
  if type(task.notes) ~= 'table' then task.notes = {} end
  table.insert(task.notes, {by = ARGV[2], at = ARGV[3], text = ARGV[4]})
  while #task.notes > tonumber(ARGV[5]) do table.remove(task.notes, 1) end
end
task.version = version_of(task) + 1
task.updated_at = ARGV[3]
local out = task_encode(task)
redis.call('HSET', KEYS[1], ARGV[1], out)
if ARGV[4] ~= '' then
  search_doc_set(KEYS[2], 't:' .. ARGV[1], search_task_words(raw), search_task_words(out))
end
redis.call('HSETNX', KEYS[2], 'created_at', ARGV[3])
redis.call('HSET', KEYS[2], 'updated_at', ARGV[3])
local note = cjson.null
if ARGV[4] ~= '' then note = ARGV[4] end
local payload = cjson.encode({task = task_summary(task), previousStatus = previous,
  previousOwner = ARGV[2], note = note})
local eid = append(KEYS[3], KEYS[2], KEYS[4], ARGV[7], ARGV[8], ARGV[9],
  {'type', 'task_released', 'from', ARGV[2], 'to', 'all', 'payload', payload})
touch(ARGV[6], 1, 6)
return {'ok', out, eid}
