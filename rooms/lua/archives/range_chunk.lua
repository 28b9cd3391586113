--- KEYS[1] a staged list or sorted set; ARGV[1] its type, ARGV[2], ARGV[3] the range
--- -> its members in that range (a sorted set's with their scores, as Redis writes them)
---

if ARGV[1] == 'zset' then return redis.call('ZRANGE', KEYS[1], ARGV[2], ARGV[3], 'WITHSCORES') end
return redis.call('LRANGE', KEYS[1], ARGV[2], ARGV[3])
