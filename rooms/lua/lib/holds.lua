--- What an agent holds (issue 24: every act is presence). The room tail's holds hash
--- (ROOM.holds, rooms/lua/__init__.py) maps an agent to the leased claims and
--- the file leases it was granted or handed, as a JSON list of "c:<task id>" and
--- "l:<lease id>": renewing what an agent holds (wrap/present.lua) costs what it holds, never
--- what the room holds. An entry is added where a grant is written; one whose claim or lease
--- ended is dropped when the agent's next act finds it gone. At most HOLDS_MAX entries an
--- agent: past that its oldest entry is forgotten first (that claim or lease is still held,
--- and lapses unless renewed another way: heartbeat, lease_renew, claiming again).
--- constants: HOLDS_MAX
---

-- `entry`: "c:<task id>" or "l:<lease id>:<term ms>"; it replaces one of the same claim or
-- lease (a lease renewed with another term).
local function holds_add(agent, entry, ttl)
  local key = ROOM.holds
  local raw = redis.call('HGET', key, agent)
  local list = {}
  if raw then list = cjson.decode(raw) end
  local same = string.match(entry, '^(%a:[^:]+)')
  for i, e in ipairs(list) do
    if e == entry then return end
    if string.match(e, '^(%a:[^:]+)') == same then
      table.remove(list, i)
      break
    end
  end
  list[#list + 1] = entry
  while #list > HOLDS_MAX do table.remove(list, 1) end
  redis.call('HSET', key, agent, cjson.encode(list))
  redis.call('PEXPIRE', key, ttl)
end
