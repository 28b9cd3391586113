--- What the scripts that change a task share (after _PRELUDE): task JSON in and out, the
--- task's version, and its claim's lease (KEYS claims, claim_holders of the room).
--- uses: leases clock
---

-- A task's file leases (claim_task's paths) end with its claim: done, released, taken
-- over, lapsed, deleted. `holder` nil: whoever holds them.
local function task_leases_end(leases, expiry, task_id, holder)
  for _, raw in ipairs(redis.call('HVALS', leases)) do
    local l = cjson.decode(raw)
    if l.task_id == task_id and (holder == nil or l.holder == holder) then
      redis.call('HDEL', leases, l.id)
      redis.call('ZREM', expiry, l.id)
    end
  end
end
-- cjson's null is not nil: an owner of null is no owner.
local function owner_of(task)
  if task.owner == nil or task.owner == cjson.null or task.owner == '' then return nil end
  return task.owner
end
local function version_of(task) return tonumber(task.version) or 1 end
-- The room's mode (set_room_mode), kept in meta: {evidenceRequired = bool, ...}.
local function room_mode(meta)
  local raw = redis.call('HGET', meta, 'mode')
  if not raw then return {} end
  return cjson.decode(raw)
end
local function task_encode(task)
  return fix_arrays(cjson.encode(task), {'depends_on', 'notes'})
end
local function task_summary(task)
  return {id = task.id, title = task.title, status = task.status, owner = task.owner,
    version = version_of(task)}
end
-- The claim's lease ends (released, done, handed over, lapsed): the task shows no lease.
local function lease_end(claims, holders, task)
  redis.call('ZREM', claims, task.id)
  redis.call('HDEL', holders, task.id)
  task.lease_seconds = nil
  task.lease_expires_at = nil
end
-- The holder's lease starts again from now.
local function lease_renew(claims, task, lease_ms, now_ms)
  local expires = tonumber(now_ms) + tonumber(lease_ms)
  redis.call('ZADD', claims, expires, task.id)
  task.lease_expires_at = iso_from_ms(expires)
end
