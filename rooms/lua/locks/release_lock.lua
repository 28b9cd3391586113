--- KEYS[1] lock:<resource>, KEYS[2] lock_index, KEYS[3] lock_tokens
--- ARGV[1] agent id, ARGV[2] resource
--- -> {'ok'} released; {'not_holder', holder} held by someone else; {'unknown'} not held at all
---

local holder = redis.call('GET', KEYS[1])
if not holder then return {'unknown'} end
if holder ~= ARGV[1] then return {'not_holder', holder} end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('HDEL', KEYS[3], ARGV[2])
return {'ok'}
