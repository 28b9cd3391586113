--- turn(step, wrote, tail): a post's write step taken only in the poster's turn (rooms.turns),
--- inside keyed (a keyed retry of a post that landed answers as it did, whoever's turn it is
--- now). Its three arguments come after the keyed wrapper's: the poster, the presence cutoff
--- ms, the agent the post addresses ("" for a selector); `tail` counts those after them (the
--- present wrapper's). Its keys are the room tail's: presence
--- (KEYS[#KEYS - 7]) and meta (KEYS[#KEYS]).
--- -> a function answering the step's answer; {'__turn', rule, holder, moderator or order
---    JSON} refused
---

local function turn(step, wrote, tail)
  return function()
    local __tn = #ARGV - tail
    local __ta, __tsince, __tgrant = ARGV[__tn - 2], ARGV[__tn - 1], ARGV[__tn]
    local __tmeta, __tpresence = KEYS[#KEYS], KEYS[#KEYS - 7]
    local __mode = {}
    local __raw = redis.call('HGET', __tmeta, 'mode')
    if __raw then __mode = cjson.decode(__raw) end
    local __rule = __mode.turns or 'open'
    if __rule == 'open' then return step() end
    local __holder = redis.call('HGET', __tmeta, 'turn')
    if __rule == 'moderator' then
      local __mod = __mode.moderator
      if __ta ~= __mod and __holder ~= __ta then
        return {'__turn', 'moderator', __holder or __mod, __mod}
      end
      local __res = step()
      if wrote(__res) then
        if __ta == __mod then
          if __tgrant ~= '' and __tgrant ~= __mod then redis.call('HSET', __tmeta, 'turn', __tgrant) end
        else
          redis.call('HDEL', __tmeta, 'turn')
        end
      end
      return __res
    end
    -- sequential: the order's agents who are present (or the present agents, by name)
    local __online = {}
    for _, a in ipairs(redis.call('ZRANGEBYSCORE', __tpresence, __tsince, '+inf')) do
      __online[a] = true
    end
    local __order = {}
    if type(__mode.order) == 'table' and #__mode.order > 0 then
      for _, a in ipairs(__mode.order) do
        if __online[a] then __order[#__order + 1] = a end
      end
      if #__order == 0 then __order = __mode.order end
    else
      for a, _ in pairs(__online) do __order[#__order + 1] = a end
      table.sort(__order)
    end
    local __mine
    for i, a in ipairs(__order) do if a == __ta then __mine = i end end
    local __eff = __order[1]
    for _, a in ipairs(__order) do if a == __holder then __eff = a end end
    if not __mine then
      local __why = 'sequential-absent'
      if type(__mode.order) == 'table' and #__mode.order > 0 then
        __why = 'sequential-unlisted'
        for _, a in ipairs(__mode.order) do if a == __ta then __why = 'sequential-absent' end end
      end
      return {'__turn', __why, __eff or '', cjson.encode(__order)}
    end
    if __eff ~= __ta then return {'__turn', 'sequential', __eff, cjson.encode(__order)} end
    local __res = step()
    if wrote(__res) then
      redis.call('HSET', __tmeta, 'turn', __order[(__mine % #__order) + 1])
    end
    return __res
  end
end
