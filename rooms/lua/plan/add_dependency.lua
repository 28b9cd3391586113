--- KEYS[1] tasks, KEYS[2] meta, KEYS[3] events, KEYS[4] reads
--- ARGV[1] task id, ARGV[2] depends-on id, ARGV[3] by, ARGV[4] expected version ("" for any),
--- ARGV[5] now (ISO), ARGV[6] ttl ms, ARGV[7] event cap, ARGV[8] event bytes cap, ARGV[9] wake
--- channel, ARGV[10] most dependencies per task
--- -> {'unknown'} task; {'unknown_dependency'}; {'stale', task JSON} expectedVersion;
---    {'cycle', cycle JSON [ids]} the new edge would close a cycle; {'full', task JSON} at the
---    most dependencies; {'already', task JSON} (nothing changed); {'ok', task JSON, event id}
--- A cycle is found by walking depends_on from the new dependency: if the walk reaches the
--- task, the path it took, back to the task, is the cycle (bounded by the room's tasks).
--- uses: prelude tasks
---

local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {'unknown'} end
local task = cjson.decode(raw)
if ARGV[4] ~= '' and tonumber(ARGV[4]) ~= version_of(task) then return {'stale', raw} end
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 0 then return {'unknown_dependency'} end
local deps = task.depends_on
if type(deps) ~= 'table' then deps = {} end
for _, d in ipairs(deps) do
  if d == ARGV[2] then return {'already', raw} end
end
if #deps >= tonumber(ARGV[10]) then return {'full', raw} end
local parent, queue, head, found = {[ARGV[2]] = false}, {ARGV[2]}, 1, false
while head <= #queue and not found do
  local at = queue[head]
  head = head + 1
  local r = redis.call('HGET', KEYS[1], at)
  if r then
    local t = cjson.decode(r)
    if type(t.depends_on) == 'table' then
      for _, nxt in ipairs(t.depends_on) do
        if parent[nxt] == nil then
          parent[nxt] = at
          if nxt == ARGV[1] then found = true break end
          table.insert(queue, nxt)
        end
      end
    end
  end
end
if found then
  local path, at = {ARGV[1]}, ARGV[1]
  while at do
    at = parent[at]
    if at then table.insert(path, at) end
  end
  local cycle = {ARGV[1]}
  for i = #path, 1, -1 do table.insert(cycle, path[i]) end
  return {'cycle', cjson.encode(cycle)}
end
table.insert(deps, ARGV[2])
task.depends_on = deps
task.version = version_of(task) + 1
task.updated_at = ARGV[5]
local out = task_encode(task)
redis.call('HSET', KEYS[1], ARGV[1], out)
redis.call('HSET', KEYS[2], 'updated_at', ARGV[5])
local payload = cjson.encode({task = task_summary(task), previousStatus = task.status,
  changes = {depends_on = {added = ARGV[2]}}})
local eid = append(KEYS[3], KEYS[2], KEYS[4], ARGV[7], ARGV[8], ARGV[9],
  {'type', 'task_updated', 'from', ARGV[3], 'to', 'all', 'payload', payload})
touch(ARGV[6], 1, 4)
return {'ok', out, eid}
