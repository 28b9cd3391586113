--- KEYS[1] tasks, KEYS[2] meta, KEYS[3] events, KEYS[4] reads, KEYS[5] claims,
--- KEYS[6] claim_holders, KEYS[7] leases, KEYS[8] lease_expiry
--- ARGV[1] task id, ARGV[2] agent id, ARGV[3] now (ISO), ARGV[4] now ms, ARGV[5] lease ms
--- (0: no lease), ARGV[6] ttl ms, ARGV[7] event cap, ARGV[8] event bytes cap, ARGV[9] wake
--- channel, ARGV[10] paths JSON (normalised; [] for none), ARGV[11] their leases' ms,
--- ARGV[12] new lease ids JSON (one per path), ARGV[13] most leases, ARGV[14] the lease
--- generation the service decided on, ARGV[15] the conflicts it found (JSON; [] none),
--- ARGV[16] the agent's own live leases of those paths ({path: lease id} JSON)
--- -> {'unknown'}; {'done', task JSON}; {'owned', task JSON} another agent owns it;
---    {'unmet', task JSON, unmet JSON [{id, status}]} pending with dependencies not done;
---    {'leased', task JSON, conflicts JSON} another agent leases one of the paths;
---    {'lease_quota', task JSON, live leases} at ROOM_LEASES_MAX; {'moved'} a lease was
---    granted since the service's view; {'ok', task JSON, event id ("" when the holder only renewed its claim), leases JSON}
--- Of any number of agents claiming at once, the first one's step wins and every later one
--- sees its owner: the claim and the check are one step.
--- uses: prelude tasks holds
---

local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {'unknown'} end
local task = cjson.decode(raw)
if task.status == 'done' then return {'done', raw} end
local owner = owner_of(task)
if owner and owner ~= ARGV[2] then return {'owned', raw} end
if task.status == 'pending' and type(task.depends_on) == 'table' and #task.depends_on > 0 then
  local found = redis.call('HMGET', KEYS[1], unpack(task.depends_on))
  local unmet = {}
  for i, dep in ipairs(task.depends_on) do
    local status = 'missing'
    if found[i] then status = cjson.decode(found[i]).status end
    if status ~= 'done' then table.insert(unmet, {id = dep, status = status}) end
  end
  if #unmet > 0 then return {'unmet', raw, cjson.encode(unmet)} end
end
-- The task's paths: leased to the claimant, exclusively, in this same step, or the claim
-- is refused naming who holds them.
local paths, own, fresh = cjson.decode(ARGV[10]), {}, 0
if #paths > 0 then
  if ARGV[15] ~= '[]' then return {'leased', raw, ARGV[15]} end
  if lease_generation(KEYS[2]) ~= ARGV[14] then return {'moved'} end
  local used = lease_sweep(KEYS[7], KEYS[8], tonumber(ARGV[4]))
  local mine = cjson.decode(ARGV[16])
  for _, p in ipairs(paths) do
    local found = mine[p] and redis.call('HGET', KEYS[7], mine[p])
    if found then own[p] = cjson.decode(found) else fresh = fresh + 1 end
  end
  if used + fresh > tonumber(ARGV[13]) then return {'lease_quota', raw, used} end
end
local renewal = owner == ARGV[2] and task.status == 'in_progress'
local previous = task.status
local lease_ms = tonumber(ARGV[5])
if lease_ms > 0 then
  redis.call('HSET', KEYS[6], ARGV[1], ARGV[5] .. ' ' .. ARGV[2])
  task.lease_seconds = lease_ms / 1000
  lease_renew(KEYS[5], task, lease_ms, ARGV[4])
  holds_add(ARGV[2], 'c:' .. ARGV[1], ARGV[6])
else
  lease_end(KEYS[5], KEYS[6], task)
end
local eid = ''
if not renewal then
  task.owner = ARGV[2]
  task.status = 'in_progress'
  task.version = version_of(task) + 1
  task.updated_at = ARGV[3]
  redis.call('HSETNX', KEYS[2], 'created_at', ARGV[3])
  redis.call('HSET', KEYS[2], 'updated_at', ARGV[3])
end
local out = task_encode(task)
redis.call('HSET', KEYS[1], ARGV[1], out)
if not renewal then
  local payload = cjson.encode({task = task_summary(task), previousStatus = previous,
    leaseSeconds = task.lease_seconds})
  eid = append(KEYS[3], KEYS[2], KEYS[4], ARGV[7], ARGV[8], ARGV[9],
    {'type', 'task_claimed', 'from', ARGV[2], 'to', 'all', 'payload', payload})
end
local granted, ids = {}, cjson.decode(ARGV[12])
for i, p in ipairs(paths) do
  local lease = own[p] or {id = ids[i], path = p, mode = 'exclusive', holder = ARGV[2],
    created_ms = tonumber(ARGV[4])}
  lease.mode = 'exclusive'
  lease.task_id = ARGV[1]
  lease.expires_ms = tonumber(ARGV[4]) + tonumber(ARGV[11])
  lease.ttl_ms = tonumber(ARGV[11])
  local json = lease_store(KEYS[7], KEYS[8], lease)
  holds_add(ARGV[2], 'l:' .. lease.id .. ':' .. ARGV[11], ARGV[6])
  if not own[p] then
    append(KEYS[3], KEYS[2], KEYS[4], ARGV[7], ARGV[8], ARGV[9],
      {'type', 'lease_granted', 'from', ARGV[2], 'to', 'all', 'payload', json})
  end
  granted[#granted + 1] = json
end
if fresh > 0 then redis.call('HINCRBY', KEYS[2], 'lease_gen', 1) end
touch(ARGV[6], 1, 8)
return {'ok', out, eid, '[' .. table.concat(granted, ',') .. ']'}
