--- KEYS[1] events, KEYS[2] cursors, KEYS[3] read-only callers' cursors, KEYS[4] context
--- changed (sorted set), KEYS[5] deliveries
--- ARGV[1] ttl ms, ARGV[2] most entries to scan per read, ARGV[3] most cursors per hash,
--- then per read five: "1" cursors / "2" read-only cursors, the cursor's field, limit,
--- "1" addressed only, the agent id
--- -> {{reply, reply, ...}, {entry, entry, ...}}: each reply {'ok', cursor, capped} then the
---    ids of its entries; each entry once however many reads took it. {'quota', cursors
---    held} for a read past the quota.
--- Why: the waiters of one room, woken by one write, take their events in one step (one
--- round trip, each cursor moved exactly once, in order) instead of one call each. A wait
--- needs no counts (the log's length, the context changed), so none are made: an idle
--- agent's re-arming read is its cursor and one XRANGE.
--- uses: prelude read_unread
---

local ttl, scan_cap, cursors_max = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local replies, entries, seen = {}, {}, {}
for i = 4, #ARGV, 5 do
  local cursors = KEYS[2]
  if ARGV[i] == '2' then cursors = KEYS[3] end
  local cursor, previous, changed, capped, out = read_unread(
    KEYS[1], cursors, KEYS[4], KEYS[5], ARGV[i + 1], tonumber(ARGV[i + 2]), ARGV[i + 3], ttl,
    scan_cap, ARGV[i + 4], cursors_max, false)
  if cursor == nil then
    table.insert(replies, {'quota', previous})
  else
    local reply = {'ok', cursor, capped}
    for _, e in ipairs(out) do
      if not seen[e[1]] then
        seen[e[1]] = true
        table.insert(entries, e)
      end
      table.insert(reply, e[1])
    end
    table.insert(replies, reply)
  end
end
return {replies, entries}
