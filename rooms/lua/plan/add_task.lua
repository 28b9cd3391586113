--- KEYS[1] tasks, KEYS[2] task_order, KEYS[3] meta, KEYS[4] events, KEYS[5] reads,
--- KEYS[6] task_titles
--- ARGV[1] task id, ARGV[2] task JSON, ARGV[3] now (ISO), ARGV[4] ttl ms, ARGV[5] event cap,
--- ARGV[6] event bytes cap, ARGV[7] wake channel, ARGV[8] event "from", ARGV[9] most tasks
--- per room, ARGV[10] the task's label for hints (its title, cut short)
--- -> {'ok', task_added event id}; {'quota', tasks in the room} at the quota
--- uses: prelude
---

local count = redis.call('HLEN', KEYS[1])
if count >= tonumber(ARGV[9]) then return {'quota', count} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[6], ARGV[1], ARGV[10])
search_doc_set(KEYS[3], 't:' .. ARGV[1], nil, search_task_words(ARGV[2]))
redis.call('HSETNX', KEYS[3], 'created_at', ARGV[3])
redis.call('HSET', KEYS[3], 'updated_at', ARGV[3])
local eid = append(KEYS[4], KEYS[3], KEYS[5], ARGV[5], ARGV[6], ARGV[7],
  {'type', 'task_added', 'from', ARGV[8], 'to', 'all', 'payload', ARGV[2]})
touch(ARGV[4], 1, 6)
return {'ok', eid}
