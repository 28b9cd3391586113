--- KEYS[1] inherited; ARGV[1] ttl ms, ARGV[2] project, then field, entry JSON pairs
--- A room's project memory (rooms.memory), replaced whole; "~order" keeps their order.
---

redis.call('DEL', KEYS[1])
local order = {}
for i = 3, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  order[#order + 1] = ARGV[i]
end
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[1], '~project', ARGV[2], '~order', table.concat(order, '\n'))
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return #order
