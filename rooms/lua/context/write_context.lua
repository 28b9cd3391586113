--- KEYS[1] ctx, KEYS[2] ctx_payload, KEYS[3] ctx_created, KEYS[4] ctx_changed, KEYS[5] events,
--- KEYS[6] seq, KEYS[7] meta, KEYS[8] reads, KEYS[9] ctx_labels
--- ARGV[1] id, ARGV[2] entry JSON without payload, ARGV[3] payload JSON, ARGV[4] ttl ms,
--- ARGV[5] event cap, ARGV[6] event bytes cap, ARGV[7] wake channel, ARGV[8] event from,
--- ARGV[9] event to, ARGV[10] event payload JSON, ARGV[11] most entries per room,
--- ARGV[12] the entry's label for hints
--- -> {'ok', context_available event id}; {'quota', entries in the room}
--- uses: prelude
---

local count = redis.call('HLEN', KEYS[1])
if count >= tonumber(ARGV[11]) then return {'quota', count} end
local seq = redis.call('INCR', KEYS[6])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[9], ARGV[1], ARGV[12])
search_doc_set(KEYS[7], 'c:' .. ARGV[1], nil, search_context_words(ARGV[2], ARGV[3]))
redis.call('ZADD', KEYS[3], seq, ARGV[1])
local eid = append(KEYS[5], KEYS[7], KEYS[8], ARGV[5], ARGV[6], ARGV[7],
  {'type', 'context_available', 'from', ARGV[8], 'to', ARGV[9], 'payload', ARGV[10]})
redis.call('ZADD', KEYS[4], id_score(eid), ARGV[1])
touch(ARGV[4], 1, 9)
return {'ok', eid}
