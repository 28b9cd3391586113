--- KEYS[1] a digest's cached caller, KEYS[2] its generation counter
--- ARGV: none
--- -> the new generation
---

redis.call('DEL', KEYS[1])
return redis.call('INCR', KEYS[2])
