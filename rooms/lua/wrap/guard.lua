--- guard(step): the outermost wrapper of every write step (rooms/store/engine.py
--- run_write): a write that passed the access check just before its room was frozen for
--- archiving, archived, or deleted changes nothing (a write after the snapshot would be lost
--- with the room's keys). Its keys are the room tail's owner and meta.
--- -> a function answering the step's answer, or refused: {'__call', {"room": "gone" | status}}
---

local function guard(step)
  return function()
    if redis.call('EXISTS', ROOM.owner) == 0 then return answered({room = 'gone'}) end
    local status = redis.call('HGET', ROOM.meta, 'status')
    if status == 'archiving' or status == 'archived' then return answered({room = status}) end
    return step()
  end
end
