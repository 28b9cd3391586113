--- KEYS[1] presence, KEYS[2] meta, KEYS[3] events, KEYS[4] reads, KEYS[5] agent_tags
--- ARGV[1] agent id, ARGV[2] ttl ms, ARGV[3] event cap, ARGV[4] event bytes cap, ARGV[5] wake
--- channel, ARGV[6] most agents answered
--- -> {'left' or 'absent' (it was not here), {agent, ms, ...} the ARGV[6] most recently
---    seen of those still here}
--- The agent's cursor stays: if it comes back, it reads on from where it was.
--- uses: prelude
---

local left = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[5], ARGV[1])
-- Its holds list and rest mark go too (room tail: holds, presence_rest): nobody renews what
-- a leaver holds, and those hashes never outnumber the room's agents.
redis.call('HDEL', ROOM.holds, ARGV[1])
redis.call('HDEL', ROOM.presence_rest, ARGV[1])
if left == 1 then
  append(KEYS[3], KEYS[2], KEYS[4], ARGV[3], ARGV[4], ARGV[5],
    {'type', 'agent_left', 'from', ARGV[1], 'to', 'all',
     'payload', cjson.encode({agentId = ARGV[1]})})
  touch(ARGV[2], 1, 4)
end
return {left == 1 and 'left' or 'absent', redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[6]) - 1, 'WITHSCORES')}
