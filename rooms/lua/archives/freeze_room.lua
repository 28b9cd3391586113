--- KEYS[1] owner, KEYS[2] meta
--- -> the room's status before, now 'archiving' (no more writes land: GUARD_WRAP); false when
---    Redis holds no room (nothing to freeze: its keys expired, or it was never written)
---

if redis.call('EXISTS', KEYS[1]) == 0 then
  -- No room here: a first touch racing this archive must not make one (OWNER_CACHE_SCRIPT
  -- refuses while this mark lives; the archive's forget leaves a tombstone in its place).
  redis.call('HSET', KEYS[2], 'status', 'archiving')
  redis.call('PEXPIRE', KEYS[2], ARGV[1])
  return false
end
local before = redis.call('HGET', KEYS[2], 'status') or 'active'
if before ~= 'archiving' then
  redis.call('HSET', KEYS[2], 'status', 'archiving', 'status_before_archive', before)
end
return redis.call('HGET', KEYS[2], 'status_before_archive') or before
