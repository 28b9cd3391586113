--- Wraps every write step (store._run_write), outermost: a write that passed the access
--- check just before its room was frozen for archiving, archived, or deleted changes nothing
--- (a write after the snapshot would be lost with the room's keys). The room's owner and
--- meta keys are found by name from the search keys every write step declares.
---

local function __guarded()
__WRITE__
end
local __base
for __i = #KEYS, 1, -1 do
  if string.sub(KEYS[__i], -13) == ':search_vocab' then
    __base = string.sub(KEYS[__i], 1, -13)
    break
  end
end
if __base then
  if redis.call('EXISTS', __base .. 'owner') == 0 then return {'__room', 'gone'} end
  local __status = redis.call('HGET', __base .. 'meta', 'status')
  if __status == 'archiving' or __status == 'archived' then return {'__room', __status} end
end
return __guarded()
