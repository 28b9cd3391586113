--- KEYS[1] leases, KEYS[2] lease_expiry, KEYS[3] meta, KEYS[4] events, KEYS[5] reads,
--- KEYS[6] tasks
--- ARGV[1] agent, ARGV[2] path (normalised), ARGV[3] mode, ARGV[4] ttl ms, ARGV[5] task id
--- or "", ARGV[6] reason or "", ARGV[7] now ms, ARGV[8] room ttl ms, ARGV[9] event cap,
--- ARGV[10] event bytes cap, ARGV[11] wake channel, ARGV[12] new lease id, ARGV[13] most
--- leases, ARGV[14] the lease generation the service decided on, ARGV[15] the conflicts it
--- found (JSON; [] none), ARGV[16] the agent's own live lease of that path and mode, or ""
--- -> {'granted', lease JSON, event id}; {'renewed', lease JSON} the agent's own lease of
---    that path; {'conflict', conflicts JSON} refused; {'quota', leases}; {'unknown_task'};
---    {'moved'} a lease was granted since the service's view (nothing written: decide again)
--- An exclusive lease conflicts with every other agent's lease on an overlapping path; a
--- shared one only with exclusive ones (rooms.services.leases decides, on a view of one generation).
--- The grant is taken only on that generation: of agents claiming overlapping paths at
--- once, one is granted and the others, deciding again, see its lease.
--- uses: prelude leases holds
---

local agent, path, mode = ARGV[1], ARGV[2], ARGV[3]
local now = tonumber(ARGV[7])
if ARGV[5] ~= '' and redis.call('HEXISTS', KEYS[6], ARGV[5]) == 0 then return {'unknown_task'} end
if ARGV[15] ~= '[]' then return {'conflict', ARGV[15]} end
if lease_generation(KEYS[3]) ~= ARGV[14] then return {'moved'} end
local used = lease_sweep(KEYS[1], KEYS[2], now)
local found = ARGV[16] ~= '' and redis.call('HGET', KEYS[1], ARGV[16])
if found then
  local own = cjson.decode(found)
  own.expires_ms = now + tonumber(ARGV[4])
  own.ttl_ms = tonumber(ARGV[4])
  if ARGV[5] ~= '' then own.task_id = ARGV[5] end
  if ARGV[6] ~= '' then own.reason = ARGV[6] end
  local out = lease_store(KEYS[1], KEYS[2], own)
  holds_add(agent, 'l:' .. own.id .. ':' .. ARGV[4], ARGV[8])
  touch(ARGV[8], 1, 2)
  return {'renewed', out}
end
if used >= tonumber(ARGV[13]) then return {'quota', used} end
local lease = {id = ARGV[12], path = path, mode = mode, holder = agent,
  expires_ms = now + tonumber(ARGV[4]), created_ms = now, ttl_ms = tonumber(ARGV[4])}
if ARGV[5] ~= '' then lease.task_id = ARGV[5] end
if ARGV[6] ~= '' then lease.reason = ARGV[6] end
local out = lease_store(KEYS[1], KEYS[2], lease)
holds_add(agent, 'l:' .. lease.id .. ':' .. ARGV[4], ARGV[8])
redis.call('HINCRBY', KEYS[3], 'lease_gen', 1)
local eid = append(KEYS[4], KEYS[3], KEYS[5], ARGV[9], ARGV[10], ARGV[11],
  {'type', 'lease_granted', 'from', agent, 'to', 'all', 'payload', out})
touch(ARGV[8], 1, 5)
return {'granted', out, eid}
