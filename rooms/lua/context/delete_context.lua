--- KEYS[1] ctx, KEYS[2] ctx_payload, KEYS[3] ctx_created, KEYS[4] ctx_changed,
--- KEYS[5] ctx_versions, KEYS[6] ctx_version_index, KEYS[7] ctx_labels, KEYS[8] meta,
--- KEYS[9] events, KEYS[10] reads
--- ARGV[1] entry id, ARGV[2] by, ARGV[3] ttl ms, ARGV[4] event cap, ARGV[5] event bytes cap,
--- ARGV[6] wake channel
--- -> {'unknown'} entry; {'ok', event id, entry JSON without payload}
--- The entry goes with every kept version of it: nothing of it is left to read.
--- uses: prelude
---

local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {'unknown'} end
local entry = cjson.decode(raw)
local indexed = search_context_words(raw, redis.call('HGET', KEYS[2], ARGV[1]) or '')
for _, k in ipairs({KEYS[1], KEYS[2], KEYS[7]}) do redis.call('HDEL', k, ARGV[1]) end
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
local low, high = '[' .. ARGV[1] .. '@', '(' .. ARGV[1] .. 'A'
for _, member in ipairs(redis.call('ZRANGEBYLEX', KEYS[6], low, high)) do
  redis.call('HDEL', KEYS[5], ARGV[1] .. '@' .. string.match(member, '@[0-9]+@(.*)$'))
end
redis.call('ZREMRANGEBYLEX', KEYS[6], low, high)
search_doc_set(KEYS[8], 'c:' .. ARGV[1], indexed, nil)
local payload = cjson.encode({id = entry.id, type = entry.type, summary = entry.summary,
  version = entry.version})
local eid = append(KEYS[9], KEYS[8], KEYS[10], ARGV[4], ARGV[5], ARGV[6],
  {'type', 'context_deleted', 'from', ARGV[2], 'to', 'all', 'payload', payload})
touch(ARGV[3], 8, 10)
return {'ok', eid, raw}
