--- KEYS as ADD_TASK_SCRIPT
--- ARGV[1] now (ISO), ARGV[2] ttl ms, ARGV[3] event cap, ARGV[4] event bytes cap, ARGV[5] wake
--- channel, ARGV[6] event "from", ARGV[7] most tasks per room, ARGV[8] tasks, then per task:
--- id, JSON, label
--- -> {'ok', tasks added}; {'exists', tasks in the room} when the room has a plan already (it
---    is never overwritten, nor mixed with: the check and the writes are one step);
---    {'quota', tasks} past the quota
--- uses: prelude
---

local count = redis.call('HLEN', KEYS[1])
if count > 0 then return {'exists', count} end
local n = tonumber(ARGV[8])
if n > tonumber(ARGV[7]) then return {'quota', n} end
for i = 0, n - 1 do
  local id, json, label = ARGV[9 + i * 3], ARGV[10 + i * 3], ARGV[11 + i * 3]
  redis.call('HSET', KEYS[1], id, json)
  redis.call('RPUSH', KEYS[2], id)
  redis.call('HSET', KEYS[6], id, label)
  search_doc_set(KEYS[3], 't:' .. id, nil, search_task_words(json))
  append(KEYS[4], KEYS[3], KEYS[5], ARGV[3], ARGV[4], ARGV[5],
    {'type', 'task_added', 'from', ARGV[6], 'to', 'all', 'payload', json})
end
redis.call('HSETNX', KEYS[3], 'created_at', ARGV[1])
redis.call('HSET', KEYS[3], 'updated_at', ARGV[1])
touch(ARGV[2], 1, 6)
return {'ok', n}
