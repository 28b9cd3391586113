--- KEYS[1] meta, KEYS[2] presence, KEYS[3] tasks, KEYS[4] ctx, KEYS[5] events
--- ARGV[1] online since (epoch ms)
--- -> {meta as field, value, ...; agents, agents online, context entries, events, task
---     statuses...}: the counts per day are meta's "d:<day>" fields
---

local statuses = {}
for _, raw in ipairs(redis.call('HVALS', KEYS[3])) do
  table.insert(statuses, cjson.decode(raw).status)
end
return {redis.call('HGETALL', KEYS[1]), redis.call('ZCARD', KEYS[2]),
  redis.call('ZCOUNT', KEYS[2], ARGV[1], '+inf'), redis.call('HLEN', KEYS[4]),
  redis.call('XLEN', KEYS[5]), statuses}
