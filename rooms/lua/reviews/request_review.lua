--- KEYS[1] reviews, KEYS[2] review_order, KEYS[3] tasks, KEYS[4] ctx, KEYS[5] meta,
--- KEYS[6] events, KEYS[7] reads
--- ARGV[1] review id, ARGV[2] review JSON, ARGV[3] target type (task/context), ARGV[4] target
--- id, ARGV[5] requested by, ARGV[6] reviewer, ARGV[7] ttl ms, ARGV[8] event cap, ARGV[9] event
--- bytes cap, ARGV[10] wake channel, ARGV[11] most reviews per room
--- -> {'unknown'} target; {'quota', reviews in the room}; {'ok', review_requested id}
--- uses: prelude
---

local target = KEYS[3]
if ARGV[3] == 'context' then target = KEYS[4] end
if redis.call('HEXISTS', target, ARGV[4]) == 0 then return {'unknown'} end
local count = redis.call('HLEN', KEYS[1])
if count >= tonumber(ARGV[11]) then return {'quota', count} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local eid = append(KEYS[6], KEYS[5], KEYS[7], ARGV[8], ARGV[9], ARGV[10],
  {'type', 'review_requested', 'from', ARGV[5], 'to', ARGV[6], 'payload', ARGV[2]})
redis.call('ZADD', KEYS[2], id_score(eid), ARGV[1])
touch(ARGV[7], 1, 2)
touch(ARGV[7], 5, 7)
return {'ok', eid}
