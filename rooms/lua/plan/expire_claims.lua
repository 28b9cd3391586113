--- KEYS as CLAIM_TASK_SCRIPT, then the room tail (rooms/lua/__init__.py)
--- ARGV[1] now ms, ARGV[2] now (ISO), ARGV[3] ttl ms, ARGV[4] event cap, ARGV[5] event bytes
--- cap, ARGV[6] wake channel, ARGV[7] most claims lapsed in one step
--- -> {claims lapsed, the earliest remaining expiry ms or -1}
--- A claim whose lease ran out: its task goes back to pending, unowned, with a
--- task_claim_expired event naming who held it. A task its holder no longer owns (or done)
--- only loses the lease.
--- uses: room prelude tasks
---

local held = redis.call('HGET', KEYS[2], 'status')
if held == 'archived' or held == 'archiving' then return {0, -1} end
local due = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[7]))
local lapsed = 0
for _, tid in ipairs(due) do
  local holder = redis.call('HGET', KEYS[6], tid) or ''
  local lease_ms, who = string.match(holder, '^(%d+) (.*)$')
  local raw = redis.call('HGET', KEYS[1], tid)
  redis.call('ZREM', KEYS[5], tid)
  redis.call('HDEL', KEYS[6], tid)
  if raw then
    local task = cjson.decode(raw)
    local previous = task.status
    local lapses = who ~= nil and owner_of(task) == who and previous ~= 'done'
    task.lease_seconds = nil
    task.lease_expires_at = nil
    if lapses then
      task_leases_end(KEYS[7], KEYS[8], tid, who)
      task.status = 'pending'
      task.owner = cjson.null
      task.version = version_of(task) + 1
      task.updated_at = ARGV[2]
      lapsed = lapsed + 1
    end
    redis.call('HSET', KEYS[1], tid, task_encode(task))
    if lapses then
      redis.call('HSET', KEYS[2], 'updated_at', ARGV[2])
      local payload = cjson.encode({task = task_summary(task), previousStatus = previous,
        previousOwner = who, leaseSeconds = tonumber(lease_ms) / 1000})
      append(KEYS[3], KEYS[2], KEYS[4], ARGV[4], ARGV[5], ARGV[6],
        {'type', 'task_claim_expired', 'from', 'roomservice', 'to', 'all', 'payload', payload})
    end
  end
end
if lapsed > 0 then touch(ARGV[3], 1, 8) end
local nxt = redis.call('ZRANGE', KEYS[5], 0, 0, 'WITHSCORES')
if #nxt == 0 then return {lapsed, -1} end
return {lapsed, nxt[2]}
