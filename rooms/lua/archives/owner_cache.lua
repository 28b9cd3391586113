--- KEYS[1] owner, KEYS[2] meta; ARGV[1] team id, ARGV[2] ttl ms, ARGV[3] the room's status as
--- the database records it
--- -> {'recorded'} the owner is recorded; {'archiving'} the room is being archived or was
---    archived (a tombstone): nothing is made
--- The owner the database settled on, cached; a room whose keys Redis lost gets back the
--- status the database records (a paused room stays paused).
---

local status = redis.call('HGET', KEYS[2], 'status')
if status == 'archiving' or status == 'archived' then
  if redis.call('EXISTS', KEYS[1]) == 0 then return {'archiving'} end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if ARGV[3] ~= '' and ARGV[3] ~= 'active' and ARGV[3] ~= 'archived' then
  redis.call('HSETNX', KEYS[2], 'status', ARGV[3])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
return {'recorded'}
