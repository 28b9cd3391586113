--- KEYS[1] ctx_version_index, KEYS[2] ctx_versions
--- ARGV[1] entry id
--- -> the full JSON of each superseded version of the entry, oldest first
---

local out = {}
for _, member in ipairs(redis.call('ZRANGEBYLEX', KEYS[1], '[' .. ARGV[1] .. '@',
    '(' .. ARGV[1] .. 'A')) do
  local found = redis.call('HGET', KEYS[2], ARGV[1] .. '@' .. string.match(member, '@[0-9]+@(.*)$'))
  if found then table.insert(out, found) end
end
return out
