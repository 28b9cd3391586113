--- KEYS[1] meta, KEYS[2] events, KEYS[3] reads
--- ARGV[1] status, ARGV[2] by, ARGV[3] ttl ms, ARGV[4..6] event cap, event bytes cap, wake
--- channel
--- -> {previous status, event id ("" when it was the status already)}
--- uses: prelude
---

local previous = redis.call('HGET', KEYS[1], 'status') or 'active'
if previous == ARGV[1] then return {previous, ''} end
redis.call('HSET', KEYS[1], 'status', ARGV[1])
local eid = append(KEYS[2], KEYS[1], KEYS[3], ARGV[4], ARGV[5], ARGV[6],
  {'type', 'room_status_changed', 'from', ARGV[2], 'to', 'all', 'payload',
   cjson.encode({status = ARGV[1], previousStatus = previous})})
touch(ARGV[3], 1, 3)
return {previous, eid}
