--- KEYS[1] tasks, KEYS[2] task_order, KEYS[3] task_titles, KEYS[4] meta, KEYS[5] events,
--- KEYS[6] reads, KEYS[7] claims, KEYS[8] claim_holders, KEYS[9] leases, KEYS[10] lease_expiry
--- ARGV[1] task id, ARGV[2] by, ARGV[3] expected version ("" for any), ARGV[4] now (ISO),
--- ARGV[5] ttl ms, ARGV[6] event cap, ARGV[7] event bytes cap, ARGV[8] wake channel
--- -> {'unknown'}; {'stale', task JSON} expectedVersion;
---    {'ok', event id, dependents JSON [{id, title}] ({} when none: cjson), task JSON}
--- uses: prelude tasks
---

local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {'unknown'} end
local task = cjson.decode(raw)
if ARGV[3] ~= '' and tonumber(ARGV[3]) ~= version_of(task) then return {'stale', raw} end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('LREM', KEYS[2], 0, ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[7], ARGV[1])
redis.call('HDEL', KEYS[8], ARGV[1])
search_doc_set(KEYS[4], 't:' .. ARGV[1], search_task_words(raw), nil)
task_leases_end(KEYS[9], KEYS[10], ARGV[1], nil)
local dependents = {}
local all = redis.call('HVALS', KEYS[1])
for _, r in ipairs(all) do
  local t = cjson.decode(r)
  if type(t.depends_on) == 'table' then
    for _, d in ipairs(t.depends_on) do
      if d == ARGV[1] then table.insert(dependents, {id = t.id, title = t.title}) break end
    end
  end
end
redis.call('HSET', KEYS[4], 'updated_at', ARGV[4])
local payload = fix_arrays(cjson.encode({task = task_summary(task), dependents = dependents}),
  {'dependents'})
local eid = append(KEYS[5], KEYS[4], KEYS[6], ARGV[6], ARGV[7], ARGV[8],
  {'type', 'task_deleted', 'from', ARGV[2], 'to', 'all', 'payload', payload})
touch(ARGV[5], 1, 6)
return {'ok', eid, cjson.encode(dependents), raw}
