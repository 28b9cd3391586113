--- KEYS[1] a budget's slot set (its open streams, or its waiting calls)
--- ARGV[1] slot id, ARGV[2] now ms, ARGV[3] lease ms, ARGV[4] most slots at once
--- -> {'ok'} admitted (or its lease renewed); {'full'} the budget is at its limit
--- Members expire unless renewed, so a server that dies does not hold its slots forever.
---

local now = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) == false
   and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  return {'full'}
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {'ok'}
