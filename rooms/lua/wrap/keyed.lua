--- keyed(step, wrote, tail): a write step and its idempotencyKey's record as one step
--- (rooms/idempotency.py), inside guard. The step reads KEYS and ARGV by fixed positions,
--- so the wrapper's own come after them; `tail` counts the arguments after the wrapper's (a
--- turn's three):
--- KEYS[#KEYS-6] idem, KEYS[#KEYS-5] idem_at (the room tail's)
--- ARGV[n-7] key, ARGV[n-6] fingerprint, ARGV[n-5] tool, ARGV[n-4] minted JSON, ARGV[n-3] now ms,
--- ARGV[n-2] window ms, ARGV[n-1] most records, ARGV[n] most record bytes (n = #ARGV - tail)
--- -> a function answering the step's own answer; {'__keyed', 'replay', answer JSON, minted
---    JSON} for a key seen in the window with the same fingerprint; {'__keyed', 'reused',
---    tool} with another one. Only an answer that `wrote` holds for (the step changed the
---    room: wrap/wrote.lua) is recorded: a refused call leaves nothing, and its retry runs
---    again.
---

local function keyed(step, wrote, tail)
  return function()
    local __n = #ARGV - tail
    local __hash, __times = KEYS[#KEYS - 6], KEYS[#KEYS - 5]
    local __field = 'k:' .. ARGV[__n - 7]
    local __now, __window = tonumber(ARGV[__n - 3]), tonumber(ARGV[__n - 2])
    local __found = redis.call('HGET', __hash, __field)
    if __found then
      local rec = cjson.decode(__found)
      if tonumber(rec.at) > __now - __window then
        if rec.fp ~= ARGV[__n - 6] then return {'__keyed', 'reused', rec.tool} end
        return {'__keyed', 'replay', rec.res, rec.minted}
      end
    end
    local __res = step()
    if wrote(__res) then
      local rec = cjson.encode({fp = ARGV[__n - 6], tool = ARGV[__n - 5], minted = ARGV[__n - 4],
        at = ARGV[__n - 3], res = cjson.encode(__res)})
      local total = redis.call('HINCRBY', __hash, '__bytes', #rec - (__found and #__found or 0))
      redis.call('HSET', __hash, __field, rec)
      redis.call('ZADD', __times, __now, __field)
      local function forget(f)
        local r = redis.call('HGET', __hash, f)
        if r then total = redis.call('HINCRBY', __hash, '__bytes', -#r) end
        redis.call('HDEL', __hash, f)
        redis.call('ZREM', __times, f)
      end
      for _, f in ipairs(redis.call('ZRANGEBYSCORE', __times, '-inf', __now - __window,
          'LIMIT', 0, 32)) do
        forget(f)
      end
      local most, most_bytes = tonumber(ARGV[__n - 1]), tonumber(ARGV[__n])
      while redis.call('ZCARD', __times) > 1
          and (redis.call('ZCARD', __times) > most or total > most_bytes) do
        local oldest = redis.call('ZRANGE', __times, 0, 0)[1]
        if oldest == __field then break end
        forget(oldest)
      end
      redis.call('PEXPIRE', __hash, __window)
      redis.call('PEXPIRE', __times, __window)
    end
    return __res
  end
end
