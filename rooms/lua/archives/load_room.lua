--- KEYS[1] owner, KEYS[2] meta, KEYS[3 .. 2 + n] the room's snapshot keys, then as many
--- staging keys (written beforehand, in chunks, by store.room_load)
--- ARGV[1] owner (team id), ARGV[2] status, ARGV[3] ttl ms of every key without an expiry of
--- its own, ARGV[4] now ms, ARGV[5] '1': only if Redis holds no room (a read-only view never
--- replaces a room someone restored meanwhile), ARGV[6] n, then per staged key: its index,
--- expire-at ms (-1: the ttl), and for a stream its last id, entries added, max deleted id
--- (or '' three times)
--- -> {'loaded'}; {'kept'} Redis holds a room and ARGV[5] said leave it alone; the staging
---    keys are gone either way
--- The room changes in this one short step (renames): nobody ever sees half a room.
---

local n = tonumber(ARGV[6])
local function staged(i) return KEYS[2 + n + i] end
if ARGV[5] == '1' and redis.call('EXISTS', KEYS[1]) == 1 then
  for i = 1, n do redis.call('UNLINK', staged(i)) end
  return {'kept'}
end
for i = 1, n do redis.call('UNLINK', KEYS[2 + i]) end
local ttl, now = tonumber(ARGV[3]), tonumber(ARGV[4])
local p = 7
while p <= #ARGV do
  local i, at = tonumber(ARGV[p]), tonumber(ARGV[p + 1])
  local last, added, deleted = ARGV[p + 2], ARGV[p + 3], ARGV[p + 4]
  p = p + 5
  local k = KEYS[2 + i]
  if redis.call('EXISTS', staged(i)) == 1 then
    redis.call('RENAME', staged(i), k)
  elseif last ~= '' then
    -- A stream whose entries were all trimmed: it exists, empty, with its ids.
    redis.call('XADD', k, '0-1', 'x', 'x')
    redis.call('XDEL', k, '0-1')
  end
  if last ~= '' then
    -- Redis 7 keeps how many entries were ever added; 6.2 (the embedded one) does not.
    local set = redis.pcall('XSETID', k, last, 'ENTRIESADDED', added, 'MAXDELETEDID', deleted)
    if type(set) == 'table' and set.err then redis.call('XSETID', k, last) end
  end
  if redis.call('EXISTS', k) == 1 then
    if ARGV[2] == 'archived' or at < 0 then
      redis.call('PEXPIRE', k, ttl)
    elseif at > now then
      redis.call('PEXPIREAT', k, at)
    else
      redis.call('UNLINK', k)
    end
  end
end
for i = 1, n do redis.call('UNLINK', staged(i)) end
redis.call('HSET', KEYS[2], 'status', ARGV[2])
redis.call('HDEL', KEYS[2], 'status_before_archive')
redis.call('PEXPIRE', KEYS[2], ttl)
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
return {'loaded'}
