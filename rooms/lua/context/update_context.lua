--- KEYS[1] ctx, KEYS[2] ctx_payload, KEYS[3] ctx_changed, KEYS[4] ctx_versions,
--- KEYS[5] ctx_version_index, KEYS[6] events, KEYS[7] meta, KEYS[8] reads, KEYS[9] ctx_labels,
--- KEYS[10] ctx_readers
--- ARGV[1] id, ARGV[2] changes JSON {author, summary?, consuming_agents?}, ARGV[3] new payload
--- JSON or "" to keep it, ARGV[4] expected version or "", ARGV[5] now (ISO), ARGV[6] ttl ms,
--- ARGV[7] event cap, ARGV[8] event bytes cap, ARGV[9] wake channel, ARGV[10] versions kept
--- per entry, ARGV[11] the entry's new label for hints ("" to keep it)
--- -> {'unknown'} entry; {'stale', current version} expectedVersion;
---    {'ok', entry JSON without payload, payload JSON, event id, agents told their read is stale}
--- Superseded versions: ctx_versions "<id>@<version>" -> full JSON, and in ctx_version_index
--- the member "<id>@<minor, 9 digits>@<version>" (score 0, lexical order), so one entry's
--- history is a range of the index and the oldest beyond ARGV[10] are dropped.
--- uses: prelude
---

local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {'unknown'} end
local entry = cjson.decode(raw)
if ARGV[4] ~= '' and entry.version ~= ARGV[4] then return {'stale', entry.version} end
local old_payload = redis.call('HGET', KEYS[2], ARGV[1]) or 'null'
local major, minor = string.match(entry.version, '^(%d+)%.(%d+)$')
if not major then major, minor = '1', '0' end
local previous = entry.version
redis.call('HSET', KEYS[4], ARGV[1] .. '@' .. previous,
  string.sub(raw, 1, -2) .. ',"payload":' .. old_payload .. '}')
redis.call('ZADD', KEYS[5], 0, ARGV[1] .. '@' .. string.format('%09d', tonumber(minor)) .. '@'
  .. previous)
local kept = tonumber(ARGV[10])
local low, high = '[' .. ARGV[1] .. '@', '(' .. ARGV[1] .. 'A'
local held = redis.call('ZLEXCOUNT', KEYS[5], low, high)
if held > kept then
  for _, member in ipairs(redis.call('ZRANGEBYLEX', KEYS[5], low, high, 'LIMIT', 0, held - kept)) do
    redis.call('ZREM', KEYS[5], member)
    redis.call('HDEL', KEYS[4], ARGV[1] .. '@' .. string.match(member, '@[0-9]+@(.*)$'))
  end
end
entry.version = major .. '.' .. tostring(tonumber(minor) + 1)
local ch = cjson.decode(ARGV[2])
entry.author = ch.author
entry.timestamp = ARGV[5]
if ch.summary ~= nil then entry.summary = ch.summary end
if ch.consuming_agents ~= nil then entry.consuming_agents = ch.consuming_agents end
local out = fix_arrays(cjson.encode(entry), {'consuming_agents'})
redis.call('HSET', KEYS[1], ARGV[1], out)
if ARGV[11] ~= '' then redis.call('HSET', KEYS[9], ARGV[1], ARGV[11]) end
local payload = old_payload
if ARGV[3] ~= '' then
  payload = ARGV[3]
  redis.call('HSET', KEYS[2], ARGV[1], payload)
end
search_doc_set(KEYS[7], 'c:' .. ARGV[1], search_context_words(raw, old_payload),
  search_context_words(out, payload))
local consumers = entry.consuming_agents
local to = 'all'
if type(consumers) == 'table' and #consumers == 1 then to = consumers[1] end
local note = fix_arrays(cjson.encode({id = entry.id, type = entry.type, version = entry.version,
  previousVersion = previous, summary = entry.summary, author = entry.author,
  consuming_agents = consumers}), {'consuming_agents'})
local eid = append(KEYS[6], KEYS[7], KEYS[8], ARGV[7], ARGV[8], ARGV[9],
  {'type', 'context_updated', 'from', ch.author, 'to', to, 'payload', note})
redis.call('ZADD', KEYS[3], id_score(eid), ARGV[1])
-- Every agent that read an older version is told, each with its own context_stale event.
local told = {}
for _, r in ipairs(cjson.decode(redis.call('HGET', KEYS[10], ARGV[1]) or '[]')) do
  if r.v ~= entry.version and r.a ~= ch.author then
    told[#told + 1] = r.a
    append(KEYS[6], KEYS[7], KEYS[8], ARGV[7], ARGV[8], ARGV[9],
      {'type', 'context_stale', 'from', ch.author, 'to', r.a, 'payload', cjson.encode({
        id = entry.id, type = entry.type, version = entry.version, readVersion = r.v,
        summary = entry.summary, author = entry.author})})
  end
end
touch(ARGV[6], 1, 9)
return {'ok', out, payload, eid, cjson.encode(told)}
