--- present(step): every act is presence (issue 24), inside guard and around keyed. The
--- step runs first (a turn sees the room as it was before this act); then the acting agent
--- is present as of now, any "gone idle" mark it had is cleared, and the leased claims and
--- file leases its holds list names (lib/holds.lua) start their term again from now. Each is
--- rewritten only once a tenth of its term has passed since it last was, so an agent acting
--- many times a second rewrites nothing, and reads only an expiry per lease: after any act,
--- what it holds has at least 90% of its term to run. A keyed replay and a refused act are
--- acts too. Past the room's most agents, the one silent longest is forgotten (its tags,
--- holds and rest mark go with it, as in heartbeat and leave_room: those hashes never
--- outnumber the room's agents).
--- CALL.present (the envelope's, rooms/store/engine.py call_envelope): agent, now ms, most
--- agents the room remembers, the room's idle ttl ms; without it, the step runs alone. Its
--- keys are the room tail's claims, claim_holders, tasks, leases, lease_expiry, agent_tags,
--- holds, presence_rest and presence.
--- -> a function answering the step's answer
--- uses: clock
---

local function present(step)
  local call = CALL.present
  if not call then return step end
  return function()
    local __res = step()
    local __who, __now = call.agent, call.now
    local __presence, __ttl = ROOM.presence, call.ttl
    -- Only a newcomer can take the room past its most agents (every add trims, here and in
    -- presence/heartbeat.lua), so an agent already present is not counted again.
    local __joined = redis.call('ZADD', __presence, __now, __who)
    redis.call('PEXPIRE', __presence, __ttl)
    local __over = __joined == 1 and redis.call('ZCARD', __presence) - call.most or 0
    if __over > 0 then
      local __gone = redis.call('ZPOPMIN', __presence, __over)
      for i = 1, #__gone, 2 do
        for _, k in ipairs({ROOM.presence_rest, ROOM.holds, ROOM.agent_tags}) do
          redis.call('HDEL', k, __gone[i])
        end
      end
    end
    redis.call('HDEL', ROOM.presence_rest, __who)
    local __raw = redis.call('HGET', ROOM.holds, __who)
    if not __raw then return __res end
    local __claims, __holders, __tasks = ROOM.claims, ROOM.claim_holders, ROOM.tasks
    local __leases, __expiry = ROOM.leases, ROOM.lease_expiry
    local __list, __kept = cjson.decode(__raw), {}
    for _, __h in ipairs(__list) do
      local __id = string.sub(__h, 3)
      if string.sub(__h, 1, 1) == 'c' then
        local __held = redis.call('HGET', __holders, __id)
        local __due = tonumber(redis.call('ZSCORE', __claims, __id) or 0)
        local __ms, __holder
        if __held then __ms, __holder = string.match(__held, '^(%d+) (.*)$') end
        if __holder == __who and __due > __now then
          __kept[#__kept + 1] = __h
          __ms = tonumber(__ms)
          local __task = __due - __now < __ms * 0.9 and redis.call('HGET', __tasks, __id)
          if __task then
            local __until = __now + __ms
            redis.call('ZADD', __claims, __until, __id)
            -- Only the one field changes: the task's text is rewritten in place, not re-encoded
            -- (every quote inside a JSON string is escaped, so the pattern meets only the key).
            local __out = string.gsub(__task, '"lease_expires_at":"[^"]*"',
              '"lease_expires_at":"' .. iso_from_ms(__until) .. '"', 1)
            redis.call('HSET', __tasks, __id, __out)
          end
        end
      else
        -- "l:<id>:<term ms>": a lease whose expiry is a tenth of its term or less away is not
        -- even read; one that is (or an entry without its term) is read and checked.
        local __lid, __term = string.match(__h, '^l:([^:]+):(%d+)$')
        if not __lid then __lid, __term = __id, '0' end
        local __end = tonumber(redis.call('ZSCORE', __expiry, __lid) or 0)
        if __end > __now and tonumber(__term) > 0 and __end - __now >= tonumber(__term) * 0.9 then
          __kept[#__kept + 1] = __h
        elseif __end > __now then
          local __l = cjson.decode(redis.call('HGET', __leases, __lid) or '{}')
          if __l.holder == __who then
            __kept[#__kept + 1] = __h
            local __full = tonumber(__l.ttl_ms or 0)
            if __full > 0 and __end - __now < __full * 0.9 then
              __l.expires_ms = __now + __full
              redis.call('HSET', __leases, __lid, cjson.encode(__l))
              redis.call('ZADD', __expiry, __l.expires_ms, __lid)
            end
          end
        end
      end
    end
    if #__kept == 0 then
      redis.call('HDEL', ROOM.holds, __who)
    else
      if #__kept < #__list then redis.call('HSET', ROOM.holds, __who, cjson.encode(__kept)) end
      redis.call('PEXPIRE', ROOM.holds, __ttl)
    end
    return __res
  end
end
