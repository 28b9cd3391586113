--- KEYS[1] ctx_readers
--- ARGV[1] the reading agent ("": record nothing), ARGV[2] now ms, ARGV[3] most readers kept
--- per entry (the oldest reads go), ARGV[4] room ttl ms, then per entry: id, version read
--- -> per entry, its readers JSON [{a, v, at}] after this read
---

local out = {}
for i = 5, #ARGV - 1, 2 do
  local id, version = ARGV[i], ARGV[i + 1]
  local readers = cjson.decode(redis.call('HGET', KEYS[1], id) or '[]')
  if ARGV[1] ~= '' then
    local kept = {}
    for _, r in ipairs(readers) do
      if r.a ~= ARGV[1] then kept[#kept + 1] = r end
    end
    kept[#kept + 1] = {a = ARGV[1], v = version, at = tonumber(ARGV[2])}
    while #kept > tonumber(ARGV[3]) do table.remove(kept, 1) end
    readers = kept
    redis.call('HSET', KEYS[1], id, cjson.encode(readers))
  end
  out[#out + 1] = cjson.encode(readers)
end
if ARGV[1] ~= '' and #out > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
return out
