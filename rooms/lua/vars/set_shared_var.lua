--- KEYS[1] vars, KEYS[2] events, KEYS[3] meta, KEYS[4] reads
--- ARGV[1] key, ARGV[2] value, ARGV[3] agent id, ARGV[4] ttl ms, ARGV[5] event cap,
--- ARGV[6] event bytes cap, ARGV[7] wake channel, ARGV[8] most variables per room
--- -> {'ok', shared_var_set event id}; {'quota', variables in the room}
--- uses: prelude
---

if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  local count = redis.call('HLEN', KEYS[1])
  if count >= tonumber(ARGV[8]) then return {'quota', count} end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local eid = append(KEYS[2], KEYS[3], KEYS[4], ARGV[5], ARGV[6], ARGV[7], {'type',
  'shared_var_set', 'from', ARGV[3], 'to', 'all', 'payload',
  cjson.encode({key = ARGV[1], value = ARGV[2]})})
touch(ARGV[4], 1, 4)
return {'ok', eid}
