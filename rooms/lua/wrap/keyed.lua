--- keyed(step, wrote): a write step and its idempotencyKey's record as one step
--- (rooms/idempotency.py), inside present. CALL.keyed (the envelope's, rooms/store/engine.py
--- call_envelope): key, fingerprint, tool, minted JSON, now ms, window ms, most records, most
--- record bytes; without it, the step runs alone. Its keys are the room tail's idempotency and
--- idempotency_times.
--- -> a function answering the step's own answer; {'__call', {"replay": answer JSON,
---    "minted": minted JSON}} for a key seen in the window with the same fingerprint;
---    {'__call', {"reused": tool}} with another one; {'__call', {"outdated": tool}} for a
---    record an older server kept (its answers had no names yet: issue 32), which this one
---    cannot replay: that call was done and is not run again. Only an answer that `wrote` holds for
---    (the step changed the room: wrap/wrote.lua) is recorded: a refused call leaves
---    nothing, and its retry runs again.
---

local function keyed(step, wrote)
  local call = CALL.keyed
  if not call then return step end
  return function()
    local hash, times = ROOM.idempotency, ROOM.idempotency_times
    local field = 'k:' .. call.key
    local found = redis.call('HGET', hash, field)
    if found then
      local rec = cjson.decode(found)
      if tonumber(rec.at) > call.now - call.window then
        if rec.fp ~= call.fingerprint then return answered({reused = rec.tool}) end
        if rec.outcomes ~= 'named' then return answered({outdated = rec.tool}) end
        return answered({replay = rec.res, minted = rec.minted})
      end
    end
    local res = step()
    if wrote(res) then
      local rec = cjson.encode({fp = call.fingerprint, tool = call.tool, minted = call.minted,
        at = call.now, res = cjson.encode(res), outcomes = 'named'})
      local total = redis.call('HINCRBY', hash, '__bytes', #rec - (found and #found or 0))
      redis.call('HSET', hash, field, rec)
      redis.call('ZADD', times, call.now, field)
      local function forget(f)
        local r = redis.call('HGET', hash, f)
        if r then total = redis.call('HINCRBY', hash, '__bytes', -#r) end
        redis.call('HDEL', hash, f)
        redis.call('ZREM', times, f)
      end
      for _, f in ipairs(redis.call('ZRANGEBYSCORE', times, '-inf', call.now - call.window,
          'LIMIT', 0, 32)) do
        forget(f)
      end
      while redis.call('ZCARD', times) > 1
          and (redis.call('ZCARD', times) > call.most or total > call.most_bytes) do
        local oldest = redis.call('ZRANGE', times, 0, 0)[1]
        if oldest == field then break end
        forget(oldest)
      end
      redis.call('PEXPIRE', hash, call.window)
      redis.call('PEXPIRE', times, call.window)
    end
    return res
  end
end
