--- KEYS[1] leases, KEYS[2] lease_expiry, KEYS[3] meta, KEYS[4] events, KEYS[5] reads
--- ARGV[1] agent, ARGV[2] lease id or "", ARGV[3] path or "", ARGV[4] "renew" or "release",
--- ARGV[5] ttl ms (renew), ARGV[6] now ms, ARGV[7] room ttl ms, ARGV[8] event cap, ARGV[9]
--- event bytes cap, ARGV[10] wake channel
--- -> {'ok', lease JSON, event id ("" for a renewal)}; {'unknown'} no such live lease;
---    {'not_holder', lease JSON} another agent holds it
--- uses: prelude leases holds
---

local agent, now = ARGV[1], tonumber(ARGV[6])
local live = lease_live(KEYS[1], KEYS[2], now)
local lease = lease_find(live, agent, ARGV[2], ARGV[3])
if not lease then return {'unknown'} end
if lease.holder ~= agent then return {'not_holder', cjson.encode(lease)} end
if ARGV[4] == 'renew' then
  lease.expires_ms = now + tonumber(ARGV[5])
  lease.ttl_ms = tonumber(ARGV[5])
  local out = lease_store(KEYS[1], KEYS[2], lease)
  holds_add(agent, 'l:' .. lease.id .. ':' .. ARGV[5], ARGV[7])
  touch(ARGV[7], 1, 2)
  return {'ok', out, ''}
end
redis.call('HDEL', KEYS[1], lease.id)
redis.call('ZREM', KEYS[2], lease.id)
local out = cjson.encode(lease)
local eid = append(KEYS[4], KEYS[3], KEYS[5], ARGV[8], ARGV[9], ARGV[10],
  {'type', 'lease_released', 'from', agent, 'to', 'all', 'payload', out})
touch(ARGV[7], 1, 5)
return {'ok', out, eid}
