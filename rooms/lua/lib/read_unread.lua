--- KEYS[1] events, KEYS[2] the cursors hash (the writers', or the read-only callers'),
--- KEYS[3] ctx_changed, KEYS[4] deliveries
--- ARGV[1] the cursor's field, ARGV[2] limit, ARGV[3] "1" = only events addressed to the agent
--- or "all", ARGV[4] ttl ms, ARGV[5] most entries to scan in one call (addressedOnly skips
--- count), ARGV[6] the agent id `to` is matched against, ARGV[7] most cursors per hash
--- -> (events/read_unread) {'ok', cursor after the call, previous cursor, events in the
---     log, context entries changed after the previous cursor, 1 if the scan stopped at
---     ARGV[5] before finding `limit` events (call again: more may follow), entry, entry, ...}
---    where entry = {id, {field, value, ...}}; {'quota', cursors held} when this new cursor
---    would pass the quota
--- Why one script: reading after the cursor and moving it must be one step, or two calls by
--- the same agent at once could both read the same batch (roomd's duplicate delivery).
--- A message the agent has read in its inbox is not given again (read_in_inbox).
--- uses: messages
---

-- True for a message event addressed to `agent` whose delivery to it has left `stored`
-- (read with inbox, or acked): one read position per agent as the agent sees it, decided
-- in the same step as the cursor moves, so a message is never given again once read there.
local function read_in_inbox(deliveries, agent, e)
  local f, rcpt, payload = e[2], nil, nil
  for i = 1, #f, 2 do
    if f[i] == 'rcpt' then rcpt = f[i + 1] elseif f[i] == 'payload' then payload = f[i + 1] end
  end
  if not rcpt or not payload or not string.find(rcpt, agent, 1, true) then return false end
  local ok, m = pcall(cjson.decode, payload)
  if not ok or type(m) ~= 'table' or type(m.messageId) ~= 'string' then return false end
  local state = redis.call('HGET', deliveries, msg_member(agent, e[1], m.messageId))
  return state ~= false and string.sub(state, 1, 7) ~= 'stored '
end

-- Take up to `limit` events after the cursor `field` of `cursors`, moving it. Returns
-- cursor, previous, changed, capped, entries; or nil, cursors held (at the quota).
-- `count_changed`: count the context entries changed after the previous cursor (a wait's
-- read does not need them; 0 then).
local function read_unread(events, cursors, changed_key, deliveries, field, limit, addressed,
                           ttl, scan_cap, agent, cursors_max, count_changed)
  local previous = redis.call('HGET', cursors, field)
  if not previous then
    local held = redis.call('HLEN', cursors)
    if held >= cursors_max then return nil, held end
    previous = '0-0'
  end
  local out = {}
  local last = nil
  local start = '(' .. previous
  if previous == '0-0' then start = '-' end
  local scanned = 0
  while #out < limit and scanned < scan_cap do
    local batch = redis.call('XRANGE', events, start, '+', 'COUNT', limit)
    if #batch == 0 then break end
    for _, e in ipairs(batch) do
      last = e[1]
      scanned = scanned + 1
      local keep = true
      if addressed == '1' then
        -- records.event_addressed_to's rule: a message is for exactly its recipients.
        keep = false
        local f, to, rcpt = e[2], nil, nil
        for i = 1, #f, 2 do
          if f[i] == 'to' then to = f[i + 1] elseif f[i] == 'rcpt' then rcpt = f[i + 1] end
        end
        if rcpt then
          for _, a in ipairs(cjson.decode(rcpt)) do
            if a == agent then keep = true break end
          end
        else
          keep = to == 'all' or to == agent
        end
      end
      if keep and read_in_inbox(deliveries, agent, e) then keep = false end
      if keep then table.insert(out, e) end
      if #out >= limit or scanned >= scan_cap then break end
    end
    start = '(' .. last
  end
  local changed = 0
  if count_changed and previous == '0-0' then
    changed = redis.call('ZCARD', changed_key)
  elseif count_changed then
    changed = redis.call('ZCOUNT', changed_key, '(' .. id_score(previous), '+inf')
  end
  local cursor = previous
  if last then
    cursor = last
    redis.call('HSET', cursors, field, last)
    redis.call('PEXPIRE', cursors, ttl)
  end
  local capped = 0
  if scanned >= scan_cap and #out < limit then capped = 1 end
  return cursor, previous, changed, capped, out
end
