--- KEYS[1] owner, KEYS[2] meta, KEYS[3..n] the room's other durable keys
--- ARGV[1] team id, ARGV[2] idle ttl ms, ARGV[3] now (ISO), ARGV[4] "1" to claim an unowned room
--- -> {'ours', claimed(0/1), status} the caller's team owns it (status: active, paused,
---    completed, archiving, archived); {'unowned'} nobody owns it (and no claim asked);
---    {'others'} another team owns it
--- uses: prelude
---

local owner = redis.call('GET', KEYS[1])
local claimed = 0
if not owner then
  if ARGV[4] ~= '1' then return {'unowned'} end
  redis.call('SET', KEYS[1], ARGV[1])
  owner = ARGV[1]
  claimed = 1
end
if owner ~= ARGV[1] then return {'others'} end
local status = redis.call('HGET', KEYS[2], 'status') or 'active'
-- An archived room's read-only view keeps its own short life (it is a copy of the archive),
-- and a room being archived is not kept alive by its readers.
if status == 'archived' or status == 'archiving' then return {'ours', claimed, status} end
redis.call('HSETNX', KEYS[2], 'created_at', ARGV[3])
touch(ARGV[2], 1, #KEYS)
return {'ours', claimed, status}
