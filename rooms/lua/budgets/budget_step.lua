--- KEYS[1] a budget's call window, KEYS[2] its team's epoch
--- ARGV[1] now ms, ARGV[2] window ms, ARGV[3] limit (0: not charged), ARGV[4] member
--- -> {'ok', calls left at least (-1 when not charged), epoch} or {'full', retry-after ms,
---    epoch}
--- One step for a warm tool call's tenancy: the charge, and the epoch every in-process
--- cache of the team is checked against. Calls older than the window are counted out only
--- when the window looks full, so a charge is ZADD, ZCARD and PEXPIRE and the window never
--- holds more than its limit and one.
---
local epoch = tonumber(redis.call('GET', KEYS[2]) or '0')
local limit = tonumber(ARGV[3])
if limit <= 0 then return {'ok', -1, epoch} end
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now, ARGV[4])
local count = redis.call('ZCARD', KEYS[1])
if count > limit then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
  count = redis.call('ZCARD', KEYS[1])
  if count > limit then
    redis.call('ZREM', KEYS[1], ARGV[4])
    local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
    local retry = window
    if oldest[2] then retry = tonumber(oldest[2]) + window - now end
    return {'full', retry, epoch}
  end
end
redis.call('PEXPIRE', KEYS[1], window)
return {'ok', limit - count, epoch}
