--- turn(step, wrote): a post's write step taken only in the poster's turn (rooms.turns),
--- inside keyed (a keyed retry of a post that landed answers as it did, whoever's turn it is
--- now). CALL.turn (the envelope's, rooms/store/engine.py call_envelope): agent (the poster),
--- since (the presence cutoff ms), grants (the agent the post addresses, "" for a selector).
--- Only a post's step is wrapped in it (rooms/lua write_step `post`). Its keys are the room
--- tail's presence and meta.
--- -> a function answering the step's answer; refused: {'__call', {"turn": {rule, holder,
---    detail: the moderator or the order JSON}}}
---

local function turn(step, wrote)
  local call = CALL.turn
  local function refused(rule, holder, detail)
    return answered({turn = {rule = rule, holder = holder, detail = detail}})
  end
  return function()
    local poster, meta = call.agent, ROOM.meta
    local mode = {}
    local raw = redis.call('HGET', meta, 'mode')
    if raw then mode = cjson.decode(raw) end
    local rule = mode.turns or 'open'
    if rule == 'open' then return step() end
    local holder = redis.call('HGET', meta, 'turn')
    if rule == 'moderator' then
      local mod = mode.moderator
      if poster ~= mod and holder ~= poster then return refused('moderator', holder or mod, mod) end
      local res = step()
      if wrote(res) then
        if poster == mod then
          if call.grants ~= '' and call.grants ~= mod then
            redis.call('HSET', meta, 'turn', call.grants)
          end
        else
          redis.call('HDEL', meta, 'turn')
        end
      end
      return res
    end
    -- sequential: the order's agents who are present (or the present agents, by name)
    local online = {}
    for _, a in ipairs(redis.call('ZRANGEBYSCORE', ROOM.presence, call.since, '+inf')) do
      online[a] = true
    end
    local order = {}
    if type(mode.order) == 'table' and #mode.order > 0 then
      for _, a in ipairs(mode.order) do
        if online[a] then order[#order + 1] = a end
      end
      if #order == 0 then order = mode.order end
    else
      for a, _ in pairs(online) do order[#order + 1] = a end
      table.sort(order)
    end
    local mine
    for i, a in ipairs(order) do if a == poster then mine = i end end
    local eff = order[1]
    for _, a in ipairs(order) do if a == holder then eff = a end end
    if not mine then
      local why = 'sequential-absent'
      if type(mode.order) == 'table' and #mode.order > 0 then
        why = 'sequential-unlisted'
        for _, a in ipairs(mode.order) do if a == poster then why = 'sequential-absent' end end
      end
      return refused(why, eff or '', cjson.encode(order))
    end
    if eff ~= poster then return refused('sequential', eff, cjson.encode(order)) end
    local res = step()
    if wrote(res) then
      redis.call('HSET', meta, 'turn', order[(mine % #order) + 1])
    end
    return res
  end
end
