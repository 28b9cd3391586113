--- One delivery per recipient: a member of `inbox` (and of the sender's `outbox`) names the
--- agent, the message's stream position and its id; `deliveries` holds its state under the
--- same member. The agent's length leads, so one agent's range never holds another's.
---

local function msg_pad(n, width) return string.rep('0', width - #n) .. n end
local function msg_prefix(agent) return string.format('%03d:', #agent) .. agent .. '\n' end
local function msg_member(agent, eid, mid)
  local ms, seq = string.match(eid, '^(%d+)-(%d+)$')
  return msg_prefix(agent) .. msg_pad(ms, 15) .. '-' .. msg_pad(seq, 8) .. ' ' .. mid
end
local function msg_range(key, agent, limit, newest)
  local p = msg_prefix(agent)
  if newest then
    return redis.call('ZREVRANGEBYLEX', key, '(' .. p .. '\255', '[' .. p, 'LIMIT', 0, limit)
  end
  return redis.call('ZRANGEBYLEX', key, '[' .. p, '(' .. p .. '\255', 'LIMIT', 0, limit)
end
-- A delivery's state as of now: a stored or read one past its expiry is expired.
local function msg_state(value, now)
  local state, at, expires = string.match(value, '^(%a+) (%d+) (%d+)$')
  if state ~= 'acked' and tonumber(expires) > 0 and now >= tonumber(expires) then
    return 'expired', tonumber(expires), tonumber(expires)
  end
  return state, tonumber(at), tonumber(expires)
end
local function msg_stats(stats, agent)
  local ever, read, last = string.match(redis.call('HGET', stats, agent) or '0 0 0',
    '^(%d+) (%d+) (%d+)$')
  return tonumber(ever), tonumber(read), last
end
local function msg_stats_read(stats, agent)
  local ever, read, last = msg_stats(stats, agent)
  redis.call('HSET', stats, agent, ever .. ' ' .. (read + 1) .. ' ' .. last)
end
-- Forget the oldest message with its deliveries; returns the bytes and deliveries freed.
local function msg_drop_oldest(keys, meta)
  local oldest = redis.call('ZPOPMIN', keys.order)
  if #oldest == 0 then return 0, 0 end
  local raw = redis.call('HGET', keys.messages, oldest[1])
  if not raw then return 0, 0 end
  local m = cjson.decode(raw)
  for _, agent in ipairs(m.rcpt) do
    local member = msg_member(agent, m.eid, m.messageId)
    redis.call('HDEL', keys.deliveries, member)
    redis.call('ZREM', keys.inbox, member)
  end
  redis.call('ZREM', keys.outbox, msg_member(m.from, m.eid, m.messageId))
  redis.call('HDEL', keys.messages, oldest[1])
  redis.call('HINCRBY', meta, 'deliveries', -#m.rcpt)
  redis.call('HINCRBY', meta, 'message_bytes', -#raw)
  return #raw, #m.rcpt
end
