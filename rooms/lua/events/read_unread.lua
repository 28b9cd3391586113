--- KEYS, ARGV and the answer: lib/read_unread.lua's header ({'ok', ...} / {'quota', held})
--- uses: prelude read_unread
---

local cursor, previous, changed, capped, out = read_unread(
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4],
  tonumber(ARGV[5]), ARGV[6], tonumber(ARGV[7]), true)
if cursor == nil then return {'quota', previous} end
local result = {'ok', cursor, previous, redis.call('XLEN', KEYS[1]), changed, capped}
for _, e in ipairs(out) do table.insert(result, e) end
return result
