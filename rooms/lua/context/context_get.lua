--- KEYS[1] context (entries), KEYS[2] context payloads
--- ARGV[1] entry id
--- -> {} unknown; {entry JSON, payload JSON} (one step: never an entry without its payload)
---

local entry = redis.call('HGET', KEYS[1], ARGV[1])
if not entry then return {} end
return {entry, redis.call('HGET', KEYS[2], ARGV[1]) or 'null'}
