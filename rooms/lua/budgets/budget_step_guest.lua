--- KEYS[1] a guest's call window, KEYS[2] its team's guests' window (together), KEYS[3] the
---   team's epoch (all three in the team's slot)
--- ARGV[1] now ms, ARGV[2] window ms, ARGV[3] the guest's limit, ARGV[4] the guests' limit
---   (a limit of 0: that window is neither checked nor charged), ARGV[5] member
--- -> {'ok', calls left (-1 when neither is charged), epoch}; {'full', retry-after ms, epoch}
---   the guest's own window is full, {'ceiling', retry-after ms, epoch} the guests' together;
---   a refusal charges neither
---

local epoch = tonumber(redis.call('GET', KEYS[3]) or '0')
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local left = -1
local refusal = {'full', 'ceiling'}
for i = 1, 2 do
  local limit = tonumber(ARGV[2 + i])
  if limit > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now - window)
    local count = redis.call('ZCARD', KEYS[i])
    if count >= limit then
      local oldest = redis.call('ZRANGE', KEYS[i], 0, 0, 'WITHSCORES')
      local retry = window
      if oldest[2] then retry = tonumber(oldest[2]) + window - now end
      return {refusal[i], retry, epoch}
    end
    if left < 0 or limit - count - 1 < left then left = limit - count - 1 end
  end
end
for i = 1, 2 do
  if tonumber(ARGV[2 + i]) > 0 then
    redis.call('ZADD', KEYS[i], now, ARGV[5])
    redis.call('PEXPIRE', KEYS[i], window)
  end
end
return {'ok', left, epoch}
