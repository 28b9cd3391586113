--- KEYS[1] events, KEYS[2] meta, KEYS[3] reads
--- ARGV[1] event id, ARGV[2] by, ARGV[3] ttl ms, ARGV[4] event cap, ARGV[5] event bytes cap,
--- ARGV[6] wake channel
--- -> {'unknown'} event; {'ok', event_deleted event id}
--- XDEL removes the one entry in place: an event appended meanwhile (by any process) is never
--- touched, unlike a rewrite of the log. Its bytes and read receipts go with it.
--- uses: prelude
---

local found = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])
if #found == 0 then return {'unknown'} end
local indexed = search_event_remove(KEYS[2], ARGV[1], found[1][2])
redis.call('XDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
if search_counted(KEYS[2], ARGV[1]) then day_count(KEYS[2], ARGV[1], -1) end
local bytes = tonumber(redis.call('HGET', KEYS[2], 'event_bytes') or '0')
local freed = entry_size(found[1][2]) + indexed
if freed > bytes then freed = bytes end
redis.call('HINCRBY', KEYS[2], 'event_bytes', -freed)
local eid = append(KEYS[1], KEYS[2], KEYS[3], ARGV[4], ARGV[5], ARGV[6],
  {'type', 'event_deleted', 'from', ARGV[2], 'to', 'all',
   'payload', cjson.encode({eventId = ARGV[1]})})
touch(ARGV[3], 1, 3)
return {'ok', eid}
