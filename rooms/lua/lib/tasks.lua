--- What the scripts that change a task share (after _PRELUDE): task JSON in and out, the
--- task's version, and its claim's lease (KEYS claims, claim_holders of the room).
--- uses: leases
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
-- Epoch ms as the protocol's ISO-8601 UTC time (2026-01-31T12:00:00.000Z): days to civil
-- date by Howard Hinnant's algorithm (Redis's Lua has no os.date).
local function iso_from_ms(ms)
  local secs = math.floor(ms / 1000)
  local days = math.floor(secs / 86400)
  local rem = secs - days * 86400
  local z = days + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524)
    - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return string.format('%04d-%02d-%02dT%02d:%02d:%02d.%03dZ', y, m, d,
    math.floor(rem / 3600), math.floor(rem % 3600 / 60), rem % 60, ms - secs * 1000)
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
