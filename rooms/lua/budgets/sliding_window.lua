--- KEYS[1] the caller's sliding-window sorted set
--- ARGV[1] now ms, ARGV[2] window ms, ARGV[3] limit, ARGV[4] a member unique to this call
--- -> {'ok', remaining} allowed; {'full', retry-after ms} over the limit
---

local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count >= tonumber(ARGV[3]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  local retry = window
  if oldest[2] then retry = tonumber(oldest[2]) + window - now end
  return {'full', retry}
end
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('PEXPIRE', KEYS[1], window)
return {'ok', tonumber(ARGV[3]) - count - 1}
