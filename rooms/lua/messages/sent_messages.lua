--- KEYS[1] messages, KEYS[2] deliveries, KEYS[3] outbox, KEYS[4] message_order
--- ARGV[1] sender ("": the room's, anyone's), ARGV[2] limit
--- -> {{message JSON, {delivery value, ...} in the order of its rcpt}, ...} newest first
--- uses: messages
---

local ids = {}
if ARGV[1] == '' then
  ids = redis.call('ZREVRANGE', KEYS[4], 0, tonumber(ARGV[2]) - 1)
else
  for i, member in ipairs(msg_range(KEYS[3], ARGV[1], tonumber(ARGV[2]), true)) do
    ids[i] = string.match(member, ' (.*)$')
  end
end
local out = {}
for _, mid in ipairs(ids) do
  local raw = redis.call('HGET', KEYS[1], mid)
  if raw then
    local m = cjson.decode(raw)
    local states = {}
    for i, agent in ipairs(m.rcpt) do
      states[i] = redis.call('HGET', KEYS[2], msg_member(agent, m.eid, m.messageId)) or ''
    end
    out[#out + 1] = {raw, states}
  end
end
return out
