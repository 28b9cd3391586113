--- KEYS[1] messages, KEYS[2] message_order, KEYS[3] deliveries, KEYS[4] inbox, KEYS[5] outbox,
--- KEYS[6] message_stats, KEYS[7] presence, KEYS[8] cursors, KEYS[9] agent_tags,
--- KEYS[10] leases, KEYS[11] lease_expiry, KEYS[12] meta, KEYS[13] events, KEYS[14] reads
--- ARGV[1] sender, ARGV[2] selector kind (all / agent / file / tag), ARGV[3] its value (the
--- agent, the normalised glob, the tag), ARGV[4] `to` as given, ARGV[5] message id,
--- ARGV[6] the message JSON the service built (messageId, from, to, subject, body, replyTo,
--- at, ackRequired, expiresAt, expires_ms), ARGV[7] reply-to message id or "", ARGV[8] expiry
--- ms or "0", ARGV[9] now ms, ARGV[10] room ttl ms, ARGV[11] event cap, ARGV[12] event bytes
--- cap, ARGV[13] wake channel, ARGV[14] most messages kept, ARGV[15] most deliveries kept,
--- ARGV[16] most message bytes kept, ARGV[17] how many agents an unknown-agent hint samples,
--- ARGV[18] most agents whose delivery counts are kept (message_stats), ARGV[19] (file:) the
--- lease generation the service decided on, ARGV[20] (file:) the holders it found, JSON
--- [[agent, lease id], ...] (rooms.services.messages matches the glob, never this script)
--- -> {'ok', message JSON as stored (with rcpt, eid), event id}; {'unknown_reply'};
---    {'unknown_agent', {agent, ...}} the agentId is nobody the room has seen (a sample of
---    who it has); {'moved'} (file:) a lease was granted since the service's view: nothing
---    written
--- Who a selector reaches is decided in the same step as the deliveries are written, so a
--- lease taken or a heartbeat's tags changed at the same moment is either in or out, whole.
--- uses: prelude leases messages
---

local sender, kind, value = ARGV[1], ARGV[2], ARGV[3]
local now = tonumber(ARGV[9])
if ARGV[7] ~= '' and redis.call('HEXISTS', KEYS[1], ARGV[7]) == 0 then return {'unknown_reply'} end
local rcpt, seen = {}, {}
local function reach(agent)
  if agent ~= sender and not seen[agent] then
    seen[agent] = true
    rcpt[#rcpt + 1] = agent
  end
end
if kind == 'agent' then
  if value ~= sender and not redis.call('ZSCORE', KEYS[7], value)
      and redis.call('HEXISTS', KEYS[8], value) == 0 then
    local sample = redis.call('ZREVRANGE', KEYS[7], 0, tonumber(ARGV[17]) - 1)
    if #sample == 0 then
      sample = redis.call('HSCAN', KEYS[8], 0, 'COUNT', tonumber(ARGV[17]))[2]
      local names = {}
      for i = 1, #sample, 2 do names[#names + 1] = sample[i] end
      sample = names
    end
    return {'unknown_agent', sample}
  end
  seen[value] = true
  rcpt[1] = value
elseif kind == 'all' then
  for _, agent in ipairs(redis.call('ZRANGE', KEYS[7], 0, -1)) do reach(agent) end
elseif kind == 'tag' then
  local tagged = redis.call('HGETALL', KEYS[9])
  for i = 1, #tagged, 2 do
    for _, t in ipairs(cjson.decode(tagged[i + 1])) do
      if t == value then reach(tagged[i]) break end
    end
  end
elseif kind == 'file' then
  if lease_generation(KEYS[12]) ~= ARGV[19] then return {'moved'} end
  for _, held in ipairs(cjson.decode(ARGV[20])) do
    local raw = redis.call('HGET', KEYS[10], held[2])
    if raw and tonumber(cjson.decode(raw).expires_ms) > now then reach(held[1]) end
  end
end
local rcpt_json = '[]'
if #rcpt > 0 then rcpt_json = cjson.encode(rcpt) end
local eid = append(KEYS[13], KEYS[12], KEYS[14], ARGV[11], ARGV[12], ARGV[13],
  {'type', 'message', 'from', sender, 'to', ARGV[4], 'payload', ARGV[6], 'rcpt', rcpt_json})
local mid = ARGV[5]
local raw = string.sub(ARGV[6], 1, -2) .. ',"rcpt":' .. rcpt_json .. ',"eid":"' .. eid .. '"}'
redis.call('HSET', KEYS[1], mid, raw)
redis.call('ZADD', KEYS[2], id_score(eid), mid)
redis.call('ZADD', KEYS[5], 0, msg_member(sender, eid, mid))
for _, agent in ipairs(rcpt) do
  local member = msg_member(agent, eid, mid)
  redis.call('HSET', KEYS[3], member, 'stored ' .. now .. ' ' .. ARGV[8])
  redis.call('ZADD', KEYS[4], 0, member)
  if redis.call('HEXISTS', KEYS[6], agent) == 0
      and redis.call('HLEN', KEYS[6]) >= tonumber(ARGV[18]) then
    -- Bounded however many names a tenant invents: some forgotten agent's counts go.
    redis.call('HDEL', KEYS[6], redis.call('HRANDFIELD', KEYS[6]))
  end
  local ever, read = msg_stats(KEYS[6], agent)
  redis.call('HSET', KEYS[6], agent, (ever + 1) .. ' ' .. read .. ' ' .. now)
end
local kept = {messages = KEYS[1], order = KEYS[2], deliveries = KEYS[3], inbox = KEYS[4],
  outbox = KEYS[5]}
local bytes = tonumber(redis.call('HINCRBY', KEYS[12], 'message_bytes', #raw))
local held = tonumber(redis.call('HINCRBY', KEYS[12], 'deliveries', #rcpt))
local function over()
  return redis.call('ZCARD', KEYS[2]) > tonumber(ARGV[14]) or held > tonumber(ARGV[15])
    or bytes > tonumber(ARGV[16])
end
-- The oldest go first, never the one just written.
while redis.call('ZCARD', KEYS[2]) > 1 and over() do
  local freed, dropped = msg_drop_oldest(kept, KEYS[12])
  bytes, held = bytes - freed, held - dropped
end
touch(ARGV[10], 1, 6)
touch(ARGV[10], 12, 14)
return {'ok', raw, eid}
