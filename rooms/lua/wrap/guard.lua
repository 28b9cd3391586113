--- guard(step): the outermost wrapper of every write step (rooms/store/engine.py
--- _run_write): a write that passed the access check just before its room was frozen for
--- archiving, archived, or deleted changes nothing (a write after the snapshot would be lost
--- with the room's keys). Its keys are the room tail's owner and meta, the last two
--- (KEYS[#KEYS - 1], KEYS[#KEYS]).
--- -> a function answering the step's answer, or {'__room', 'gone' | status} refused
---

local function guard(step)
  return function()
    if redis.call('EXISTS', KEYS[#KEYS - 1]) == 0 then return {'__room', 'gone'} end
    local status = redis.call('HGET', KEYS[#KEYS], 'status')
    if status == 'archiving' or status == 'archived' then return {'__room', status} end
    return step()
  end
end
