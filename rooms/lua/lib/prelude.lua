--- Shared prelude: helpers every script may use (the search index's among them).
--- uses: search
---

local function fix_arrays(s, names)
  for _, n in ipairs(names) do
    s = string.gsub(s, '"' .. n .. '":{}', '"' .. n .. '":[]')
  end
  return s
end
local function touch(ttl, first, last)
  for i = first, last do redis.call('PEXPIRE', KEYS[i], ttl) end
end
-- What one event costs: its field values plus a fixed overhead for the entry itself.
local function entry_size(fields)
  local n = 48
  for i = 2, #fields, 2 do n = n + #fields[i] end
  return n
end
-- Append one event and keep the room's log within its caps, exactly: at most `cap`
-- events and `bytes_cap` bytes (meta.event_bytes), trimming the oldest first and never
-- the one just written; the read receipts of trimmed events go with them. Publishes the
-- new id on the wake channel. Returns the new id.
-- Events per UTC day, kept in the room's meta as "d:<days since 1970>" (get_room_analytics
-- reads them): +1 for each event appended, -1 for each trimmed or deleted.
local function day_count(meta, id, by)
  local field = 'd:' .. math.floor(tonumber(string.match(id, '^(%d+)')) / 86400000)
  if tonumber(redis.call('HINCRBY', meta, field, by)) <= 0 then redis.call('HDEL', meta, field) end
end
-- An event written by a call that carries trace context records it as its `trace` field
-- (TRACE: rooms/lua/__init__.py write_step; '' without one), for the webhooks it causes.
local function append(events, meta, reads, cap, bytes_cap, channel, fields)
  if TRACE ~= '' then
    local traced = {unpack(fields)}
    traced[#traced + 1] = 'trace'
    traced[#traced + 1] = TRACE
    fields = traced
  end
  local eid = redis.call('XADD', events, '*', unpack(fields))
  day_count(meta, eid, 1)
  local cost = entry_size(fields) + search_event_add(meta, eid, fields)
  local bytes = tonumber(redis.call('HINCRBY', meta, 'event_bytes', cost))
  local over = redis.call('XLEN', events) - tonumber(cap)
  if over > 0 or bytes > tonumber(bytes_cap) then
    local freed, dropped, keep, start = 0, 0, nil, '-'
    while keep == nil do
      local batch = redis.call('XRANGE', events, start, '+', 'COUNT', 16)
      if #batch == 0 then break end
      for _, e in ipairs(batch) do
        if e[1] == eid or (dropped >= over and bytes - freed <= tonumber(bytes_cap)) then
          keep = e[1]
          break
        end
        freed = freed + entry_size(e[2]) + search_event_remove(meta, e[1], e[2])
        dropped = dropped + 1
        redis.call('HDEL', reads, e[1])
        if search_counted(meta, e[1]) then day_count(meta, e[1], -1) end
      end
      start = '(' .. batch[#batch][1]
    end
    if keep then redis.call('XTRIM', events, 'MINID', keep) end
    if freed > bytes then freed = bytes end
    redis.call('HINCRBY', meta, 'event_bytes', -freed)
  end
  redis.call(WAKE_VERB, channel, eid)
  return eid
end
-- A stream id as one sortable number (ms * 1000 + seq), formatted with every digit:
-- Lua's default number-to-text keeps only 14 digits, which would drop the seq.
local function id_score(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  local s = tonumber(seq)
  if s > 999 then s = 999 end
  return string.format('%.17g', tonumber(ms) * 1000 + s)
end
