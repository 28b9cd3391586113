--- KEYS[1..8] the task keys (tasks, meta, events, reads, claims, claim_holders, leases,
--- lease_expiry), KEYS[9] handoffs, KEYS[10] handoff_order, KEYS[11] presence, KEYS[12]
--- cursors, KEYS[13] ctx
--- ARGV[1] task id, ARGV[2] from, ARGV[3] to, ARGV[4] the handoff JSON, ARGV[5] its id,
--- ARGV[6] context ids JSON, ARGV[7] now ms, ARGV[8] now (ISO), ARGV[9] ttl ms, ARGV[10..12]
--- event cap, event bytes cap, wake channel, ARGV[13] most handoffs kept, ARGV[14] how many
--- agents an unknown-agent hint samples
--- -> {'unknown'} task; {'done', task JSON}; {'not_owner', task JSON} `from` is not its
---    owner; {'offered', task JSON, handoff JSON} one is offered already; {'unknown_agent',
---    {agent, ...}} `to` is nobody the room has seen; {'unknown_context', context id};
---    {'quota', handoffs} (every kept one pending); {'ok', handoff JSON, event id}
--- The owner does not change yet: only the receiver's accept moves it.
--- uses: prelude tasks
---

local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {'unknown'} end
local task = cjson.decode(raw)
if task.status == 'done' then return {'done', raw} end
if owner_of(task) ~= ARGV[2] then return {'not_owner', raw} end
if type(task.handoff) == 'table' then
  local open = redis.call('HGET', KEYS[9], task.handoff.id)
  if open and cjson.decode(open).status == 'offered' then return {'offered', raw, open} end
end
local to = ARGV[3]
if not redis.call('ZSCORE', KEYS[11], to) and redis.call('HEXISTS', KEYS[12], to) == 0 then
  return {'unknown_agent', redis.call('ZREVRANGE', KEYS[11], 0, tonumber(ARGV[14]) - 1)}
end
for _, cid in ipairs(cjson.decode(ARGV[6])) do
  if redis.call('HEXISTS', KEYS[13], cid) == 0 then return {'unknown_context', cid} end
end
-- Past the quota the oldest resolved handoffs go; pending ones are never dropped.
local count = redis.call('HLEN', KEYS[9])
if count >= tonumber(ARGV[13]) then
  for _, hid in ipairs(redis.call('ZRANGE', KEYS[10], 0, 63)) do
    local h = redis.call('HGET', KEYS[9], hid)
    if not h or cjson.decode(h).status ~= 'offered' then
      redis.call('HDEL', KEYS[9], hid)
      redis.call('ZREM', KEYS[10], hid)
      count = count - 1
      if count < tonumber(ARGV[13]) then break end
    end
  end
  if count >= tonumber(ARGV[13]) then return {'quota', count} end
end
redis.call('HSET', KEYS[9], ARGV[5], ARGV[4])
redis.call('ZADD', KEYS[10], ARGV[7], ARGV[5])
task.handoff = {id = ARGV[5], to = to, at = ARGV[8]}
task.version = version_of(task) + 1
task.updated_at = ARGV[8]
local out = task_encode(task)
redis.call('HSET', KEYS[1], ARGV[1], out)
local eid = append(KEYS[3], KEYS[2], KEYS[4], ARGV[10], ARGV[11], ARGV[12],
  {'type', 'handoff_offered', 'from', ARGV[2], 'to', to, 'payload', ARGV[4]})
touch(ARGV[9], 1, 4)
touch(ARGV[9], 9, 10)
return {'ok', ARGV[4], eid}
