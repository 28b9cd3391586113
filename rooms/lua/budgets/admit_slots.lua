--- KEYS: slot sets (a guest's own, then its team's guests' together), all in one slot
--- ARGV[1] slot id, ARGV[2] now ms, ARGV[3] lease ms, ARGV[4] ms each set outlives its last
--- admission (longer than any lease), ARGV[4 + i] the most KEYS[i] holds
--- -> {'ok'} admitted (or its lease renewed) in every set; {'full', i} KEYS[i] is full
---    (nothing taken)
--- Members are leases (score: when it lapses), so a server that dies frees its slots when
--- they lapse. Lapsed members are counted out only when a set looks full: an admission is
--- ZADD, ZCARD and PEXPIRE (a waiting call arms one per wait), and a set never holds more
--- than its most plus one.
---
local now, lease = tonumber(ARGV[2]), tonumber(ARGV[3])
local added = {}
for i, key in ipairs(KEYS) do
  added[i] = redis.call('ZADD', key, now + lease, ARGV[1])
  local most = tonumber(ARGV[4 + i])
  if added[i] == 1 and redis.call('ZCARD', key) > most then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
    if redis.call('ZCARD', key) > most then
      for j = 1, i do
        if added[j] == 1 then redis.call('ZREM', KEYS[j], ARGV[1]) end
      end
      return {'full', i}
    end
  end
end
for _, key in ipairs(KEYS) do
  redis.call('PEXPIRE', key, ARGV[4])
end
return {'ok'}
