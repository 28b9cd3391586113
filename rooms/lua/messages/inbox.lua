--- KEYS[1] messages, KEYS[2] deliveries, KEYS[3] inbox, KEYS[4] message_stats
--- ARGV[1] agent, ARGV[2] limit, ARGV[3] "1" unread only, ARGV[4] now ms, ARGV[5] room ttl ms,
--- ARGV[6] "1" mark what is returned read ("0" for a read-only caller, who only looks)
--- -> {{deliveries ever, read ever, last delivery ms, still unread after this call},
---     {message JSON, state, since ms}, ...}: oldest first; the unread ones returned are
---    read from now on. Without unread only, the agent's newest `limit`, oldest first.
--- uses: messages
---

local agent, limit, now = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[4])
local members
if ARGV[3] == '1' then
  members = msg_range(KEYS[3], agent, -1, false)
else
  members = msg_range(KEYS[3], agent, limit, true)
  local n = #members
  for i = 1, math.floor(n / 2) do
    members[i], members[n - i + 1] = members[n - i + 1], members[i]
  end
end
local out, unread, marked = {}, 0, 0
for _, member in ipairs(members) do
  local value = redis.call('HGET', KEYS[2], member)
  if value then
    local state, at, expires = msg_state(value, now)
    local take = #out < limit and (ARGV[3] ~= '1' or state == 'stored')
    if state == 'stored' and not take then unread = unread + 1 end
    if take then
      local mid = string.match(member, ' (.*)$')
      local raw = redis.call('HGET', KEYS[1], mid)
      if raw then
        if state == 'stored' and ARGV[6] == '1' then
          redis.call('HSET', KEYS[2], member, 'read ' .. now .. ' ' .. expires)
          msg_stats_read(KEYS[4], agent)
          marked = marked + 1
          state, at = 'read', now
        end
        out[#out + 1] = {raw, state, at}
      end
    end
  end
end
if marked > 0 then
  for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], ARGV[5]) end
end
local ever, read, last = msg_stats(KEYS[4], agent)
local result = {{ever, read, last, unread}}
for _, m in ipairs(out) do result[#result + 1] = m end
return result
