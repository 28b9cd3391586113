--- KEYS[1] meta, KEYS[2] task_order, KEYS[3] tasks, KEYS[4] leases
--- ARGV: none
--- -> {created_at or false, updated_at or false, every lease JSON (the caller keeps the live
---    ones), task JSON... in plan order}
---

local created = redis.call('HGET', KEYS[1], 'created_at')
local updated = redis.call('HGET', KEYS[1], 'updated_at')
local out = {created, updated, redis.call('HVALS', KEYS[4])}
local ids = redis.call('LRANGE', KEYS[2], 0, -1)
if #ids > 0 then
  local tasks = redis.call('HMGET', KEYS[3], unpack(ids))
  for i = 1, #tasks do
    if tasks[i] then table.insert(out, tasks[i]) end
  end
end
return out
