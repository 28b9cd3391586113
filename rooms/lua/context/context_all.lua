--- KEYS[1] context created (sorted set), KEYS[2] context entries, KEYS[3] context payloads
--- -> {entry JSON, payload JSON, ...} newest first
---

local out = {}
for _, id in ipairs(redis.call('ZREVRANGE', KEYS[1], 0, -1)) do
  local entry = redis.call('HGET', KEYS[2], id)
  if entry then
    table.insert(out, entry)
    table.insert(out, redis.call('HGET', KEYS[3], id) or 'null')
  end
end
return out
