--- KEYS[1] events, KEYS[2] reads
--- ARGV[1] event id, ARGV[2] agent id, ARGV[3] now (ISO), ARGV[4] ttl ms, ARGV[5] most
--- receipts per event
--- -> {'unknown'} event; {'ok'} recorded (or already recorded); {'quota', receipts}
--- uses: prelude
---

local found = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1], 'COUNT', 1)
if #found == 0 then return {'unknown'} end
local raw = redis.call('HGET', KEYS[2], ARGV[1])
local reads = {}
if raw then reads = cjson.decode(raw) end
for _, r in ipairs(reads) do
  if r.agentId == ARGV[2] then return {'ok'} end
end
if #reads >= tonumber(ARGV[5]) then return {'quota', #reads} end
table.insert(reads, {agentId = ARGV[2], readAt = ARGV[3]})
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(reads))
touch(ARGV[4], 2, 2)
return {'ok'}
