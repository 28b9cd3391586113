--- KEYS[1] presence, KEYS[2] claims, KEYS[3] claim_holders, KEYS[4] tasks, KEYS[5] agent_tags
--- ARGV[1] agent id, ARGV[2] now ms, ARGV[3] ttl ms, ARGV[4] most agents remembered,
--- ARGV[5] most agents answered, ARGV[6] the heartbeat's tags (JSON list) or "" (keep them),
--- ARGV[7] "1": the agent rests (idle until its next act: ROOM.presence_rest)
--- -> {agents remembered, {agent, ms, agent, ms, ...} the ARGV[5] most recently seen, {those
---    of them resting}}
--- The answer is capped so a heartbeat costs the same in a room of 5,000 agents as of 10.
--- Past the quota the agent that has been silent longest is forgotten (its cursor stays).
--- A heartbeat renews every leased claim the agent holds in the room (a room without leased
--- claims pays one ZCARD for it).
--- uses: prelude tasks
---

redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
if ARGV[6] ~= '' then
  redis.call('HSET', KEYS[5], ARGV[1], ARGV[6])
  redis.call('PEXPIRE', KEYS[5], ARGV[3])
end
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[4])
if over > 0 then
  -- The forgotten agents' tags, holds and rest marks go with them: never more than agents.
  local gone = redis.call('ZPOPMIN', KEYS[1], over)
  for i = 1, #gone, 2 do
    redis.call('HDEL', KEYS[5], gone[i])
    redis.call('HDEL', ROOM.holds, gone[i])
    redis.call('HDEL', ROOM.presence_rest, gone[i])
  end
end
touch(ARGV[3], 1, 1)
if redis.call('ZCARD', KEYS[2]) > 0 then
  local held = redis.call('HGETALL', KEYS[3])
  for i = 1, #held, 2 do
    local lease_ms, who = string.match(held[i + 1], '^(%d+) (.*)$')
    local raw = who == ARGV[1] and redis.call('HGET', KEYS[4], held[i])
    if raw then
      local task = cjson.decode(raw)
      lease_renew(KEYS[2], task, lease_ms, ARGV[2])
      redis.call('HSET', KEYS[4], held[i], task_encode(task))
    end
  end
end
if ARGV[7] == '1' then
  redis.call('HSET', ROOM.presence_rest, ARGV[1], ARGV[2])
  redis.call('PEXPIRE', ROOM.presence_rest, ARGV[3])
end
local shown = redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[5]) - 1, 'WITHSCORES')
local rested = {}
for i = 1, #shown, 2 do
  if redis.call('HEXISTS', ROOM.presence_rest, shown[i]) == 1 then rested[#rested + 1] = shown[i] end
end
return {redis.call('ZCARD', KEYS[1]), shown, rested}
