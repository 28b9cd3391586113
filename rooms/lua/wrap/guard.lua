--- Wraps every write step (store._run_write), outermost: a write that passed the access
--- check just before its room was frozen for archiving, archived, or deleted changes nothing
--- (a write after the snapshot would be lost with the room's keys). The room's owner and
--- meta keys are the room tail's last two (KEYS[#KEYS - 1], KEYS[#KEYS]).
---

local function __guarded()
__WRITE__
end
if redis.call('EXISTS', KEYS[#KEYS - 1]) == 0 then return {'__room', 'gone'} end
local __status = redis.call('HGET', KEYS[#KEYS], 'status')
if __status == 'archiving' or __status == 'archived' then return {'__room', __status} end
return __guarded()
