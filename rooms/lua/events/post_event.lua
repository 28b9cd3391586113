--- KEYS[1] events, KEYS[2] meta, KEYS[3] reads
--- ARGV[1] type, ARGV[2] from, ARGV[3] to, ARGV[4] payload JSON, ARGV[5] parent event id or "",
--- ARGV[6] ttl ms, ARGV[7] event cap, ARGV[8] event bytes cap, ARGV[9] wake channel
--- -> {'unknown'} parent; {'ok', event id}
--- uses: prelude
---

local fields = {'type', ARGV[1], 'from', ARGV[2], 'to', ARGV[3], 'payload', ARGV[4]}
if ARGV[5] ~= '' then
  local parent = redis.call('XRANGE', KEYS[1], ARGV[5], ARGV[5], 'COUNT', 1)
  if #parent == 0 then return {'unknown'} end
  table.insert(fields, 'reply_to_id')
  table.insert(fields, ARGV[5])
end
local eid = append(KEYS[1], KEYS[2], KEYS[3], ARGV[7], ARGV[8], ARGV[9], fields)
touch(ARGV[6], 1, 3)
return {'ok', eid}
