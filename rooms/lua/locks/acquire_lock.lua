--- KEYS[1] lock:<resource>, KEYS[2] fence, KEYS[3] lock_index, KEYS[4] lock_tokens
--- ARGV[1] agent id, ARGV[2] lock ttl ms, ARGV[3] now ms, ARGV[4] resource, ARGV[5] idle ttl ms,
--- ARGV[6] most locks held at once per room
--- -> {'ok', holder, fencing token, remaining ms} acquired (or renewed by its holder);
---    {'held', holder, its fencing token, remaining ms} by another agent; {'quota', locks held}
--- A new grant (SET NX PX) takes the next fencing token; the holder acquiring again renews
--- its grant and keeps its token, so a token names one uninterrupted holding.
--- uses: prelude
---

local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ARGV[3])
if #expired > 0 then
  redis.call('ZREM', KEYS[3], unpack(expired))
  redis.call('HDEL', KEYS[4], unpack(expired))
end
if redis.call('ZSCORE', KEYS[3], ARGV[4]) == false then
  local held = redis.call('ZCARD', KEYS[3])
  if held >= tonumber(ARGV[6]) then return {'quota', held} end
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local token = redis.call('INCR', KEYS[2])
  redis.call('HSET', KEYS[4], ARGV[4], token)
  redis.call('ZADD', KEYS[3], tonumber(ARGV[3]) + tonumber(ARGV[2]), ARGV[4])
  touch(ARGV[5], 2, 4)
  return {'ok', ARGV[1], token, tonumber(ARGV[2])}
end
local holder = redis.call('GET', KEYS[1])
local token = tonumber(redis.call('HGET', KEYS[4], ARGV[4]) or '0')
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('ZADD', KEYS[3], tonumber(ARGV[3]) + tonumber(ARGV[2]), ARGV[4])
  touch(ARGV[5], 2, 4)
  return {'ok', holder, token, tonumber(ARGV[2])}
end
return {'held', holder, token, redis.call('PTTL', KEYS[1])}
