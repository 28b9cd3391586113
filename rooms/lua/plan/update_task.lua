--- KEYS[1] tasks, KEYS[2] meta, KEYS[3] events, KEYS[4] reads, KEYS[5] claims,
--- KEYS[6] claim_holders
--- ARGV[1] task id, ARGV[2] changes JSON {status?, set_owner, owner, note?, description?,
--- priority?, by, expected_version?}, ARGV[3] now (ISO), ARGV[4] ttl ms, ARGV[5] event cap,
--- ARGV[6] event bytes cap, ARGV[7] wake channel, ARGV[8] notes kept per task (the newest),
--- ARGV[9] now ms
--- -> {'unknown'}; {'stale', task JSON} expectedVersion is not the task's; {'owned', task
---    JSON} the task is in progress under another owner, and the writer is not that owner (a
---    takeover: claims go through claim_task, hand-overs through its owner); {'unverified',
---    task JSON} done asked in a room whose mode requires evidence (verify_task makes it
---    done); {'ok', task JSON, event id}
--- The task_updated event carries what changed, not the whole task: {task: {id, title, status,
--- owner, version}, previousStatus, changes: {status?: [from, to], owner?: [from, to],
--- description?}, note?} — so a long task's every update does not copy it into the log again.
--- A claim's lease ends when the task leaves in_progress or changes owner; an update by its
--- holder renews it.
--- uses: prelude tasks
---

local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {'unknown'} end
local task = cjson.decode(raw)
local ch = cjson.decode(ARGV[2])
if ch.expected_version ~= nil and tonumber(ch.expected_version) ~= version_of(task) then
  return {'stale', raw}
end
local previous, previous_owner = task.status, owner_of(task)
local new_owner = previous_owner
if ch.set_owner then
  new_owner = ch.owner
  if new_owner == cjson.null or new_owner == '' then new_owner = nil end
end
if previous == 'in_progress' and previous_owner and new_owner and new_owner ~= previous_owner
    and ch.by ~= previous_owner then
  return {'owned', raw}
end
if ch.status == 'done' and previous ~= 'done' and room_mode(KEYS[2]).evidenceRequired then
  return {'unverified', raw}
end
if ch.status ~= nil then task.status = ch.status end
local previous_priority = task.priority
if ch.priority ~= nil then task.priority = ch.priority end
if ch.set_owner then task.owner = new_owner or cjson.null end
if ch.description ~= nil then task.description = ch.description end
if ch.note ~= nil then
  task.note = ch.note
  if type(task.notes) ~= 'table' then task.notes = {} end
  table.insert(task.notes, {by = ch.by, at = ARGV[3], text = ch.note})
  local kept = tonumber(ARGV[8])
  while #task.notes > kept do table.remove(task.notes, 1) end
end
local holder = redis.call('HGET', KEYS[6], ARGV[1])
if holder then
  local lease_ms, who = string.match(holder, '^(%d+) (.*)$')
  if task.status ~= 'in_progress' or owner_of(task) ~= who then
    lease_end(KEYS[5], KEYS[6], task)
  elseif ch.by == who then
    lease_renew(KEYS[5], task, lease_ms, ARGV[9])
  end
end
if previous == 'in_progress' and previous_owner
    and (task.status ~= 'in_progress' or owner_of(task) ~= previous_owner) then
  task_leases_end(KEYS[7], KEYS[8], ARGV[1], previous_owner)
end
task.version = version_of(task) + 1
task.updated_at = ARGV[3]
local out = task_encode(task)
redis.call('HSET', KEYS[1], ARGV[1], out)
if ch.description ~= nil or ch.note ~= nil then
  search_doc_set(KEYS[2], 't:' .. ARGV[1], search_task_words(raw), search_task_words(out))
end
redis.call('HSETNX', KEYS[2], 'created_at', ARGV[3])
redis.call('HSET', KEYS[2], 'updated_at', ARGV[3])
local changes = {}
if previous ~= task.status then changes.status = {previous, task.status} end
if ch.set_owner and previous_owner ~= owner_of(task) then
  changes.owner = {previous_owner or cjson.null, task.owner}
end
if ch.description ~= nil then changes.description = true end
if ch.priority ~= nil and previous_priority ~= ch.priority then
  changes.priority = {previous_priority or cjson.null, ch.priority}
end
local payload = cjson.encode({task = task_summary(task), previousStatus = previous,
  changes = changes, note = ch.note})
local eid = append(KEYS[3], KEYS[2], KEYS[4], ARGV[5], ARGV[6], ARGV[7],
  {'type', 'task_updated', 'from', ch.by, 'to', 'all', 'payload', payload})
touch(ARGV[4], 1, 6)
return {'ok', out, eid}
