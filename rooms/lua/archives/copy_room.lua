--- KEYS: the room's snapshot keys (RoomKeys.snapshot_parts), then as many staging keys
--- ARGV[1] how many parts, ARGV[2] the staging keys' ttl ms
--- -> per key that exists: {its index, type, expire-at ms by Redis's clock (-1: none), and
---    for a stream: last-generated id, entries added, max deleted id}
--- One moment of the room, copied in one short step (COPY is a copy in memory: about 10 ms
--- for a room of 100,000 events, where reading it out in the step would hold Redis for half
--- a second); the copies are then read at leisure, in chunks (store.room_snapshot).
---

local n, keep = tonumber(ARGV[1]), tonumber(ARGV[2])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local out = {}
for i = 1, n do
  local k, staged = KEYS[i], KEYS[n + i]
  local t = redis.call('TYPE', k)['ok']
  if t ~= 'none' then
    redis.call('COPY', k, staged, 'REPLACE')
    redis.call('PEXPIRE', staged, keep)
    local left = redis.call('PTTL', k)
    local at = -1
    if left >= 0 then at = now + left end
    local row = {i, t, at}
    if t == 'stream' then
      local info = redis.call('XINFO', 'STREAM', k)
      local last, added, deleted = '0-0', '0', '0-0'
      for j = 1, #info, 2 do
        if info[j] == 'last-generated-id' then last = info[j + 1]
        elseif info[j] == 'entries-added' then added = tostring(info[j + 1])
        elseif info[j] == 'max-deleted-entry-id' then deleted = info[j + 1] end
      end
      row = {i, t, at, last, added, deleted}
    end
    table.insert(out, row)
  end
end
return out
