--- KEYS: slot sets (a guest's own, then its team's guests' together), all in one slot
--- ARGV[1] slot id, ARGV[2] now ms, ARGV[3] lease ms, ARGV[3 + i] the most KEYS[i] holds
--- -> {'ok'} admitted (or its lease renewed) in every set; {'full', i} KEYS[i] is full
---    (nothing taken)
---

local now = tonumber(ARGV[2])
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  if redis.call('ZSCORE', key, ARGV[1]) == false
     and redis.call('ZCARD', key) >= tonumber(ARGV[3 + i]) then
    return {'full', i}
  end
end
for _, key in ipairs(KEYS) do
  redis.call('ZADD', key, now + tonumber(ARGV[3]), ARGV[1])
  redis.call('PEXPIRE', key, ARGV[3])
end
return {'ok'}
