--- KEYS[1] meta
--- ARGV[1] the mode's changes JSON ({evidenceRequired?}), ARGV[2] ttl ms
--- -> the room's mode JSON after the change
---

local mode = {}
local raw = redis.call('HGET', KEYS[1], 'mode')
if raw then mode = cjson.decode(raw) end
local changes = cjson.decode(ARGV[1])
for k, v in pairs(changes) do mode[k] = v end
if changes.turns or changes.order or changes.moderator then redis.call('HDEL', KEYS[1], 'turn') end
local out = cjson.encode(mode)
redis.call('HSET', KEYS[1], 'mode', out)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {out, redis.call('HGET', KEYS[1], 'turn') or ''}
