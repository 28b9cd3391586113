--- KEYS[1..8] the task keys, KEYS[9] handoffs
--- ARGV[1] handoff id, ARGV[2] agent, ARGV[3] "accepted" or "declined", ARGV[4] note or "",
--- ARGV[5] now ms, ARGV[6] now (ISO), ARGV[7] ttl ms, ARGV[8..10] event cap, event bytes cap,
--- wake channel
--- -> {'unknown'} handoff; {'not_receiver', handoff JSON}; {'resolved', handoff JSON}
---    already; {'void', handoff JSON, task JSON or ""} the task is gone, done or changed
---    hands since the offer (the handoff is void, and says so);
---    {'ok', handoff JSON, task JSON, event id}
--- Accepting moves the task to the receiver in this one step: its owner, its claim's lease
--- (renewed for the receiver) and its file leases. Of an accept and a decline at once,
--- exactly one lands.
--- uses: prelude tasks holds
---

local hraw = redis.call('HGET', KEYS[9], ARGV[1])
if not hraw then return {'unknown'} end
local h = cjson.decode(hraw)
if h.to ~= ARGV[2] then return {'not_receiver', hraw} end
if h.status ~= 'offered' then return {'resolved', hraw} end
local raw = redis.call('HGET', KEYS[1], h.taskId)
local task = raw and cjson.decode(raw)
local void = not task or task.status == 'done' or owner_of(task) ~= h.from
  or type(task.handoff) ~= 'table' or task.handoff.id ~= h.id
h.resolvedAt, h.resolvedBy = ARGV[6], ARGV[2]
if ARGV[4] ~= '' then h.resolutionNote = ARGV[4] end
if void then
  h.status = 'void'
  redis.call('HSET', KEYS[9], ARGV[1], fix_arrays(cjson.encode(h), {'contextIds'}))
  return {'void', fix_arrays(cjson.encode(h), {'contextIds'}), raw or ''}
end
h.status = ARGV[3]
task.handoff = nil
if ARGV[3] == 'accepted' then
  task.owner = ARGV[2]
  if task.status ~= 'blocked' then task.status = 'in_progress' end
  local holder = redis.call('HGET', KEYS[6], task.id)
  if holder then
    local lease_ms = string.match(holder, '^(%d+) ')
    redis.call('HSET', KEYS[6], task.id, lease_ms .. ' ' .. ARGV[2])
    lease_renew(KEYS[5], task, lease_ms, ARGV[5])
    holds_add(ARGV[2], 'c:' .. task.id, ARGV[7])
  end
  for _, lraw in ipairs(redis.call('HVALS', KEYS[7])) do
    local l = cjson.decode(lraw)
    if l.task_id == task.id and l.holder == h.from then
      l.holder = ARGV[2]
      redis.call('HSET', KEYS[7], l.id, cjson.encode(l))
      holds_add(ARGV[2], 'l:' .. l.id .. ':' .. string.format('%d', tonumber(l.ttl_ms or 0)), ARGV[7])
    end
  end
end
task.version = version_of(task) + 1
task.updated_at = ARGV[6]
local out = task_encode(task)
redis.call('HSET', KEYS[1], task.id, out)
local hout = fix_arrays(cjson.encode(h), {'contextIds'})
redis.call('HSET', KEYS[9], ARGV[1], hout)
local eid = append(KEYS[3], KEYS[2], KEYS[4], ARGV[8], ARGV[9], ARGV[10],
  {'type', 'handoff_' .. ARGV[3], 'from', ARGV[2], 'to', h.from, 'payload',
   fix_arrays(cjson.encode({handoff = h, task = task_summary(task)}), {'contextIds'})})
touch(ARGV[7], 1, 9)
return {'ok', hout, out, eid}
