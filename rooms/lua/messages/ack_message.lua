--- KEYS[1] messages, KEYS[2] deliveries, KEYS[3] message_stats, KEYS[4] meta, KEYS[5] events,
--- KEYS[6] reads
--- ARGV[1] agent, ARGV[2] message id, ARGV[3] now ms, ARGV[4] room ttl ms, ARGV[5] event cap,
--- ARGV[6] event bytes cap, ARGV[7] wake channel
--- -> {'ok', message JSON, acked at ms, event id ("" when it was acked already)};
---    {'unknown'} no such kept message; {'not_recipient', message JSON};
---    {'expired', message JSON, expiry ms} it expired unacked
--- uses: prelude messages
---

local agent, now = ARGV[1], tonumber(ARGV[3])
local raw = redis.call('HGET', KEYS[1], ARGV[2])
if not raw then return {'unknown'} end
local m = cjson.decode(raw)
local member = msg_member(agent, m.eid, m.messageId)
local value = redis.call('HGET', KEYS[2], member)
if not value then return {'not_recipient', raw} end
local state, at, expires = msg_state(value, now)
if state == 'acked' then return {'ok', raw, at, ''} end
if state == 'expired' then return {'expired', raw, expires} end
if state == 'stored' then msg_stats_read(KEYS[3], agent) end
redis.call('HSET', KEYS[2], member, 'acked ' .. now .. ' ' .. expires)
local eid = append(KEYS[5], KEYS[4], KEYS[6], ARGV[5], ARGV[6], ARGV[7],
  {'type', 'message_acked', 'from', agent, 'to', m.from, 'payload',
   cjson.encode({messageId = m.messageId})})
touch(ARGV[4], 1, 6)
return {'ok', raw, now, eid}
