"""Lua sources, one constant per atomic step (docs/protocol.md "Atomicity": every mutation
is one step).

Each header says what arrives in KEYS and ARGV and what comes back. Scripts never build a
key name (rooms/keys.py does, and every key arrives in KEYS), and they refresh the idle
TTL of every key they write, so a room that is only ever written to still expires.

Lua's cjson turns an empty array into `{}` on the way back out; the few array fields a
script re-encodes are put right with `fix_arrays`, and payloads the agents wrote are never
decoded here at all (they are stored verbatim and spliced in as strings).
"""

# Replaced by the store when a script is registered: PUBLISH on one Redis, SPUBLISH (the
# room's own slot) on a cluster.
WAKE_VERB = "__WAKE_VERB__"


# The search index's bounds (rooms/search.py tokenizes queries the same way).
SEARCH_STOPWORDS = (
    "a an and are as at be but by for from has have in into is it its of on or that the "
    "their then there these this to was were will with"
)
SEARCH_FIELD_BYTES = 4096  # of each field, indexed and returned for snippets
SEARCH_DOC_TERMS = 64  # distinct words indexed per task, context entry or event
SEARCH_EVENT_POSTINGS = 512  # events kept per word: its newest
# What one word of the events' index takes in Redis besides its postings (its hash field and
# its vocabulary member), counted against ROOM_EVENT_BYTES_MAX with the events.
SEARCH_WORD_BYTES = 160

# Search index: appended to _PRELUDE (append() indexes every event it writes and unindexes
# every one it trims).
_SEARCH = (
    r"""
-- The room's search index (rooms/search.py reads it), kept in the same step as every
-- write. Its three keys are named after the room's meta key, so they share the room's
-- slot: search_events (hash: term -> 4-byte count of the retained events holding it, then
-- the newest SEARCH_EVENT_POSTINGS of them as 11-byte postings, ms 6 + seq 4 + weight 1,
-- oldest first), search_docs (hash: term -> 5-byte postings, doc number 4 + weight 1, of the
-- tasks and context entries holding it; '#<doc id>' -> doc number; '$<n>' -> doc id;
-- '~next' -> the last number given) and search_vocab (sorted set of
-- every term, score 0, for prefixes). Words are runs of ASCII letters and digits and of
-- UTF-8 bytes (ASCII lowered), 2 to 32 bytes long, stopwords left out; the first
-- SEARCH_FIELD_BYTES of each field and the first SEARCH_DOC_TERMS distinct words of a
-- document are indexed. Title and summary words weigh 3, every other word 1.
local SEARCH_STOP = {}
for w in string.gmatch('__SEARCH_STOPWORDS__', '%S+') do SEARCH_STOP[w] = true end
local SEARCH_FIELD_BYTES, SEARCH_DOC_TERMS = __SEARCH_FIELD_BYTES__, __SEARCH_DOC_TERMS__
local SEARCH_EVENT_POSTINGS = __SEARCH_EVENT_POSTINGS__
local SEARCH_WORD_BYTES = __SEARCH_WORD_BYTES__
-- The first n bytes of a text, never ending inside a UTF-8 character.
local function search_cut(text, n)
  if type(text) ~= 'string' then return '' end
  if #text <= n then return text end
  local i = n
  while i > 0 and i > n - 3 and string.byte(text, i) >= 128 and string.byte(text, i) < 192 do
    i = i - 1
  end
  local lead = string.byte(text, i) or 0
  local len = 1
  if lead >= 240 then len = 4 elseif lead >= 224 then len = 3 elseif lead >= 192 then len = 2 end
  if i + len - 1 > n then i = i - 1 else i = i + len - 1 end
  return string.sub(text, 1, i)
end
-- JSON escapes (\n, \", \u00e9) are not parts of words.
local function search_plain(text)
  return (string.gsub(string.gsub(text, '\\u%x%x%x%x', ' '), '\\[nrtbf"\\/]', ' '))
end
local function search_words(text, weight, into)
  if type(text) ~= 'string' or text == '' then return end
  for w in string.gmatch(string.lower(search_plain(search_cut(text, SEARCH_FIELD_BYTES))),
      '[%w\128-\255]+') do
    if #w >= 2 and #w <= 32 and not SEARCH_STOP[w] then
      local had = into.w[w]
      if had then
        into.w[w] = math.min(had + weight, 255)
      elseif into.n < SEARCH_DOC_TERMS then
        into.n = into.n + 1
        into.w[w] = weight
        into.order[into.n] = w
      end
    end
  end
end
local function search_bag() return {w = {}, n = 0, order = {}} end
local function search_keys(meta)
  local base = string.sub(meta, 1, -5)
  return base .. 'search_events', base .. 'search_docs', base .. 'search_vocab'
end
local function search_expire(meta)
  local ttl = redis.call('PTTL', meta)
  if ttl > 0 then
    local ev, dv, vocab = search_keys(meta)
    for _, k in ipairs({ev, dv, vocab}) do redis.call('PEXPIRE', k, ttl) end
  end
end
-- A term left no posting in either hash: it leaves the vocabulary.
local function search_term_gone(term, other, vocab)
  if redis.call('HEXISTS', other, term) == 0 then redis.call('ZREM', vocab, term) end
end
-- A document as its title texts (weight 3) and body texts (weight 1). Of JSON, only the
-- string values count (not the keys, not numbers), and not times (2026-01-31T12:00:00Z):
-- what a person would search for, and not a word per timestamp or key in the index.
local function search_is_time(v) return string.find(v, '^%d%d%d%d%-%d%d%-%d%dT%d') ~= nil end
local function search_strings(value, out, depth)
  if #out >= SEARCH_DOC_TERMS or depth > 8 then return end
  local kind = type(value)
  if kind == 'string' then
    if value ~= '' and not search_is_time(value) then out[#out + 1] = value end
  elseif kind == 'table' then
    local items = pairs
    if #value > 0 then items = ipairs end
    for _, v in items(value) do
      search_strings(v, out, depth + 1)
      if #out >= SEARCH_DOC_TERMS then return end
    end
  end
end
local function search_json_strings(text, out)
  if type(text) ~= 'string' or text == '' then return end
  local ok, value = false, nil
  if #text <= 65536 then ok, value = pcall(cjson.decode, text) end
  if ok then search_strings(value, out, 0) else out[#out + 1] = text end
end
local function search_task_parts(raw)
  local titles, bodies = {}, {}
  local ok, t = pcall(cjson.decode, raw or '')
  if ok and type(t) == 'table' then
    if type(t.title) == 'string' then titles[1] = t.title end
    if type(t.description) == 'string' then bodies[1] = t.description end
    if type(t.notes) == 'table' then
      for i = #t.notes, 1, -1 do
        local n = t.notes[i]
        if type(n) == 'table' and type(n.text) == 'string' then bodies[#bodies + 1] = n.text end
      end
    end
  end
  return titles, bodies
end
local function search_context_parts(raw, payload)
  local titles, bodies = {}, {}
  local ok, e = pcall(cjson.decode, raw or '')
  if ok and type(e) == 'table' then
    for _, v in ipairs({e.summary, e.id}) do
      if type(v) == 'string' then titles[#titles + 1] = v end
    end
    if type(e.type) == 'string' then bodies[1] = e.type end
  end
  search_json_strings(payload, bodies)
  return titles, bodies
end
local function search_event_parts(fields)
  local f = {}
  for i = 1, #fields - 1, 2 do f[fields[i]] = fields[i + 1] end
  local titles, bodies = {}, {}
  local p = f.payload
  if type(p) == 'string' and string.sub(p, 1, 1) == '{' and #p <= 65536 then
    local ok, d = pcall(cjson.decode, p)
    if ok and type(d) == 'table' then
      local task = d.task
      if type(task) ~= 'table' then task = {} end
      for _, v in ipairs({d.title, d.summary, task.title}) do
        if type(v) == 'string' then titles[#titles + 1] = v end
      end
    end
  end
  for _, v in ipairs({f.type, f.from}) do
    if type(v) == 'string' then bodies[#bodies + 1] = v end
  end
  search_json_strings(p, bodies)
  return titles, bodies
end
local function search_parts_words(titles, bodies)
  local bag = search_bag()
  for _, t in ipairs(titles) do search_words(t, 3, bag) end
  for _, b in ipairs(bodies) do search_words(b, 1, bag) end
  return bag
end
local function search_task_words(raw) return search_parts_words(search_task_parts(raw)) end
local function search_context_words(raw, payload)
  return search_parts_words(search_context_parts(raw, payload))
end
local function search_event_words(fields)
  return search_parts_words(search_event_parts(fields))
end
-- Every event from meta.search_floor on is indexed: events older than it were written
-- before the index existed, until `search_reindex` walks back over them.
-- What indexing events costs is counted with their bytes against ROOM_EVENT_BYTES_MAX, so
-- the log and its index together stay within the quota: 11 bytes per posting, and
-- SEARCH_WORD_BYTES for each word the events' index holds (its field and its place in the
-- vocabulary), charged to the event that brings the word and freed with the last one.
local SEARCH_POSTING_BYTES = 11
-- Returns what the event's postings cost.
local function search_event_add(meta, eid, fields)
  redis.call('HSETNX', meta, 'search_floor', eid)
  local ev, dv, vocab = search_keys(meta)
  local ms, seq = string.match(eid, '^(%d+)-(%d+)$')
  local bag = search_event_words(fields)
  local keep = SEARCH_EVENT_POSTINGS * SEARCH_POSTING_BYTES
  local cost = SEARCH_POSTING_BYTES * bag.n
  for _, term in ipairs(bag.order) do
    local posting = struct.pack('>I6I4B', tonumber(ms), tonumber(seq), bag.w[term])
    local cur = redis.call('HGET', ev, term)
    local count, list = 0, ''
    if cur then
      count = struct.unpack('>I4', cur)
      list = string.sub(cur, 5)
    else
      redis.call('ZADD', vocab, 0, term)
      cost = cost + SEARCH_WORD_BYTES
    end
    list = list .. posting
    if #list > keep then list = string.sub(list, -keep) end
    redis.call('HSET', ev, term, struct.pack('>I4', count + 1) .. list)
  end
  search_expire(meta)
  return cost
end
-- Postings are in id order, so the event's is found by bisection (or is gone already: a
-- term's list keeps only its newest postings).
local function search_id_below(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am < bm or (am == bm and as < bs)
end
-- Returns what its postings cost (0 for an event below the floor: never indexed).
-- Written since the floor: indexed, and counted in the per-day counts (both came at once;
-- search_reindex does both for what was written before).
local function search_counted(meta, eid)
  local floor = redis.call('HGET', meta, 'search_floor')
  return floor ~= false and not search_id_below(eid, floor)
end
local function search_event_remove(meta, eid, fields)
  if not search_counted(meta, eid) then return 0 end
  local ev, dv, vocab = search_keys(meta)
  local ms, seq = string.match(eid, '^(%d+)-(%d+)$')
  ms, seq = tonumber(ms), tonumber(seq)
  local bag = search_event_words(fields)
  local freed = SEARCH_POSTING_BYTES * bag.n
  for _, term in ipairs(bag.order) do
    local cur = redis.call('HGET', ev, term)
    if cur then
      local lo, hi, at = 0, (#cur - 4) / 11 - 1, nil
      while lo <= hi do
        local mid = math.floor((lo + hi) / 2)
        local m, s = struct.unpack('>I6I4', cur, 5 + mid * 11)
        if m == ms and s == seq then at = mid break end
        if m < ms or (m == ms and s < seq) then lo = mid + 1 else hi = mid - 1 end
      end
      local list = string.sub(cur, 5)
      if at then list = string.sub(list, 1, at * 11) .. string.sub(list, at * 11 + 12) end
      -- The count never falls below the postings kept (whatever happened to it).
      local count = math.max(struct.unpack('>I4', cur) - 1, #list / 11)
      if count <= 0 then
        redis.call('HDEL', ev, term)
        search_term_gone(term, dv, vocab)
        freed = freed + SEARCH_WORD_BYTES
      else
        redis.call('HSET', ev, term, struct.pack('>I4', count) .. list)
      end
    end
  end
  return freed
end
-- A task or context entry ('t:<id>' / 'c:<id>') was indexed as `old` says (nil: it was
-- not) and is now as `new` says (nil: it is gone). The words come from the texts, cut the
-- same way each time, so a document's postings are found again without being stored twice;
-- a word whose weight did not change is left as it is.
local function search_doc_set(meta, doc, old, new)
  local ev, dv, vocab = search_keys(meta)
  local n = redis.call('HGET', dv, '#' .. doc)
  local same = {}
  if n and old then
    local mark = struct.pack('>I4', tonumber(n))
    for _, term in ipairs(old.order) do
      if new and new.w[term] == old.w[term] then
        same[term] = true
      else
        local cur = redis.call('HGET', dv, term)
        if cur then
          local at = string.find(cur, mark, 1, true)
          while at and (at - 1) % 5 ~= 0 do at = string.find(cur, mark, at + 1, true) end
          if at then cur = string.sub(cur, 1, at - 1) .. string.sub(cur, at + 5) end
          if cur == '' then
            redis.call('HDEL', dv, term)
            search_term_gone(term, ev, vocab)
          else
            redis.call('HSET', dv, term, cur)
          end
        end
      end
    end
  end
  if new == nil or new.n == 0 then
    if n then redis.call('HDEL', dv, '#' .. doc, '$' .. n) end
    search_expire(meta)
    return
  end
  if not n then
    n = redis.call('HINCRBY', dv, '~next', 1)
    redis.call('HSET', dv, '#' .. doc, n, '$' .. n, doc)
  end
  local mark = struct.pack('>I4', tonumber(n))
  for _, term in ipairs(new.order) do
    if not same[term] then
      local cur = redis.call('HGET', dv, term)
      if not cur then
        cur = ''
        redis.call('ZADD', vocab, 0, term)
      end
      redis.call('HSET', dv, term, cur .. mark .. struct.pack('B', new.w[term]))
    end
  end
  search_expire(meta)
end
""".replace("__SEARCH_STOPWORDS__", SEARCH_STOPWORDS)
    .replace("__SEARCH_FIELD_BYTES__", str(SEARCH_FIELD_BYTES))
    .replace("__SEARCH_DOC_TERMS__", str(SEARCH_DOC_TERMS))
    .replace("__SEARCH_EVENT_POSTINGS__", str(SEARCH_EVENT_POSTINGS))
    .replace("__SEARCH_WORD_BYTES__", str(SEARCH_WORD_BYTES))
)


# Shared prelude: helpers every script may use (the search index's among them).
_PRELUDE = (
    _SEARCH
    + r"""
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
local function append(events, meta, reads, cap, bytes_cap, channel, fields)
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
  redis.call('__WAKE_VERB__', channel, eid)
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
"""
)

# KEYS[1] owner, KEYS[2] meta, KEYS[3..n] the room's other durable keys
# ARGV[1] team id, ARGV[2] idle ttl ms, ARGV[3] now (ISO), ARGV[4] "1" to claim an unowned room
# -> {1, claimed(0/1), status} the caller's team owns it (status: active, paused,
#    completed); {0} nobody owns it (and no claim asked); {-1} another team owns it
ACCESS_ROOM_SCRIPT = (
    _PRELUDE
    + r"""
local owner = redis.call('GET', KEYS[1])
local claimed = 0
if not owner then
  if ARGV[4] ~= '1' then return {0} end
  redis.call('SET', KEYS[1], ARGV[1])
  owner = ARGV[1]
  claimed = 1
end
if owner ~= ARGV[1] then return {-1} end
local status = redis.call('HGET', KEYS[2], 'status') or 'active'
-- An archived room's read-only view keeps its own short life (it is a copy of the archive),
-- and a room being archived is not kept alive by its readers.
if status == 'archived' or status == 'archiving' then return {1, claimed, status} end
redis.call('HSETNX', KEYS[2], 'created_at', ARGV[3])
touch(ARGV[2], 1, #KEYS)
return {1, claimed, status}
"""
)

# Every script that appends an event takes the log's keys and caps in the same places
# (EVENT_KEYS: events, meta, reads; EVENT_ARGS: event cap, event bytes cap, wake channel)
# so `append` keeps every room within ROOM_EVENT_CAP and ROOM_EVENT_BYTES_MAX.

# KEYS[1] tasks, KEYS[2] task_order, KEYS[3] meta, KEYS[4] events, KEYS[5] reads,
# KEYS[6] task_titles
# ARGV[1] task id, ARGV[2] task JSON, ARGV[3] now (ISO), ARGV[4] ttl ms, ARGV[5] event cap,
# ARGV[6] event bytes cap, ARGV[7] wake channel, ARGV[8] event "from", ARGV[9] most tasks
# per room, ARGV[10] the task's label for hints (its title, cut short)
# -> {1, task_added event id}; {0, tasks in the room} at the quota
ADD_TASK_SCRIPT = (
    _PRELUDE
    + r"""
local count = redis.call('HLEN', KEYS[1])
if count >= tonumber(ARGV[9]) then return {0, count} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[6], ARGV[1], ARGV[10])
search_doc_set(KEYS[3], 't:' .. ARGV[1], nil, search_task_words(ARGV[2]))
redis.call('HSETNX', KEYS[3], 'created_at', ARGV[3])
redis.call('HSET', KEYS[3], 'updated_at', ARGV[3])
local eid = append(KEYS[4], KEYS[3], KEYS[5], ARGV[5], ARGV[6], ARGV[7],
  {'type', 'task_added', 'from', ARGV[8], 'to', 'all', 'payload', ARGV[2]})
touch(ARGV[4], 1, 6)
return {1, eid}
"""
)

# KEYS as ADD_TASK_SCRIPT
# ARGV[1] now (ISO), ARGV[2] ttl ms, ARGV[3] event cap, ARGV[4] event bytes cap, ARGV[5] wake
# channel, ARGV[6] event "from", ARGV[7] most tasks per room, ARGV[8] tasks, then per task:
# id, JSON, label
# -> {1, tasks added}; {0, tasks in the room} when the room has a plan already (it is never
#    overwritten, nor mixed with: the check and the writes are one step); {-1, tasks} past
#    the quota
CREATE_PLAN_SCRIPT = (
    _PRELUDE
    + r"""
local count = redis.call('HLEN', KEYS[1])
if count > 0 then return {0, count} end
local n = tonumber(ARGV[8])
if n > tonumber(ARGV[7]) then return {-1, n} end
for i = 0, n - 1 do
  local id, json, label = ARGV[9 + i * 3], ARGV[10 + i * 3], ARGV[11 + i * 3]
  redis.call('HSET', KEYS[1], id, json)
  redis.call('RPUSH', KEYS[2], id)
  redis.call('HSET', KEYS[6], id, label)
  search_doc_set(KEYS[3], 't:' .. id, nil, search_task_words(json))
  append(KEYS[4], KEYS[3], KEYS[5], ARGV[3], ARGV[4], ARGV[5],
    {'type', 'task_added', 'from', ARGV[6], 'to', 'all', 'payload', json})
end
redis.call('HSETNX', KEYS[3], 'created_at', ARGV[1])
redis.call('HSET', KEYS[3], 'updated_at', ARGV[1])
touch(ARGV[2], 1, 6)
return {1, n}
"""
)

# What the lease scripts share (after _PRELUDE). No script matches a path against a glob:
# patterns are any tenant's input, and matching runs in the web process (rooms/paths.py),
# on a view of the room's leases (LEASES_VIEW_SCRIPT). A write step made on that view
# carries the view's generation (meta's `lease_gen`, counted up by every grant of a new
# lease) and is refused, writing nothing, if a lease was granted since: the service reads
# again and decides again. Releases and expiries only free paths, so they leave it be.
_LEASES = r"""
local function lease_generation(meta)
  return redis.call('HGET', meta, 'lease_gen') or '0'
end
-- Leases past their expiry leave (at most 256 a step); the live ones are counted.
local function lease_sweep(leases, expiry, now_ms)
  local gone = redis.call('ZRANGEBYSCORE', expiry, '-inf', now_ms, 'LIMIT', 0, 256)
  for _, id in ipairs(gone) do
    redis.call('HDEL', leases, id)
    redis.call('ZREM', expiry, id)
  end
  return redis.call('ZCOUNT', expiry, '(' .. now_ms, '+inf')
end
-- The room's live leases (those past their expiry leave first).
local function lease_live(leases, expiry, now_ms)
  local gone = redis.call('ZRANGEBYSCORE', expiry, '-inf', now_ms, 'LIMIT', 0, 256)
  for _, id in ipairs(gone) do
    redis.call('HDEL', leases, id)
    redis.call('ZREM', expiry, id)
  end
  local live = {}
  for _, raw in ipairs(redis.call('HVALS', leases)) do
    local l = cjson.decode(raw)
    if tonumber(l.expires_ms) > tonumber(now_ms) then live[#live + 1] = l end
  end
  return live
end
-- Write a lease (new or changed) with its expiry; returns its JSON.
local function lease_store(leases, expiry, lease)
  local json = cjson.encode(lease)
  redis.call('HSET', leases, lease.id, json)
  redis.call('ZADD', expiry, lease.expires_ms, lease.id)
  return json
end
local function lease_find(live, agent, lease_id, path)
  for _, l in ipairs(live) do
    if (lease_id ~= '' and l.id == lease_id)
        or (lease_id == '' and l.path == path and l.holder == agent) then
      return l
    end
  end
  return nil
end
"""

# What the scripts that change a task share (after _PRELUDE): task JSON in and out, the
# task's version, and its claim's lease (KEYS claims, claim_holders of the room).
_TASKS = (
    _LEASES
    + r"""
-- A task's file leases (claim_task's paths) end with its claim: done, released, taken
-- over, lapsed, deleted. `holder` nil: whoever holds them.
local function task_leases_end(leases, expiry, task_id, holder)
  for _, raw in ipairs(redis.call('HVALS', leases)) do
    local l = cjson.decode(raw)
    if l.task_id == task_id and (holder == nil or l.holder == holder) then
      redis.call('HDEL', leases, l.id)
      redis.call('ZREM', expiry, l.id)
    end
  end
end
-- Epoch ms as the protocol's ISO-8601 UTC time (2026-01-31T12:00:00.000Z): days to civil
-- date by Howard Hinnant's algorithm (Redis's Lua has no os.date).
local function iso_from_ms(ms)
  local secs = math.floor(ms / 1000)
  local days = math.floor(secs / 86400)
  local rem = secs - days * 86400
  local z = days + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524)
    - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  if m <= 2 then y = y + 1 end
  return string.format('%04d-%02d-%02dT%02d:%02d:%02d.%03dZ', y, m, d,
    math.floor(rem / 3600), math.floor(rem % 3600 / 60), rem % 60, ms - secs * 1000)
end
-- cjson's null is not nil: an owner of null is no owner.
local function owner_of(task)
  if task.owner == nil or task.owner == cjson.null or task.owner == '' then return nil end
  return task.owner
end
local function version_of(task) return tonumber(task.version) or 1 end
-- The room's mode (set_room_mode), kept in meta: {evidenceRequired = bool, ...}.
local function room_mode(meta)
  local raw = redis.call('HGET', meta, 'mode')
  if not raw then return {} end
  return cjson.decode(raw)
end
local function task_encode(task)
  return fix_arrays(cjson.encode(task), {'depends_on', 'notes'})
end
local function task_summary(task)
  return {id = task.id, title = task.title, status = task.status, owner = task.owner,
    version = version_of(task)}
end
-- The claim's lease ends (released, done, handed over, lapsed): the task shows no lease.
local function lease_end(claims, holders, task)
  redis.call('ZREM', claims, task.id)
  redis.call('HDEL', holders, task.id)
  task.lease_seconds = nil
  task.lease_expires_at = nil
end
-- The holder's lease starts again from now.
local function lease_renew(claims, task, lease_ms, now_ms)
  local expires = tonumber(now_ms) + tonumber(lease_ms)
  redis.call('ZADD', claims, expires, task.id)
  task.lease_expires_at = iso_from_ms(expires)
end
"""
)

# KEYS[1] tasks, KEYS[2] meta, KEYS[3] events, KEYS[4] reads, KEYS[5] claims,
# KEYS[6] claim_holders
# ARGV[1] task id, ARGV[2] changes JSON {status?, set_owner, owner, note?, description?,
# priority?, by, expected_version?}, ARGV[3] now (ISO), ARGV[4] ttl ms, ARGV[5] event cap,
# ARGV[6] event bytes cap, ARGV[7] wake channel, ARGV[8] notes kept per task (the newest),
# ARGV[9] now ms
# -> {0} unknown task; {-1, task JSON} expectedVersion is stale; {-2, task JSON} the task is
#    in progress under another owner, and the writer is not that owner (a takeover: claims
#    go through claim_task, hand-overs through its owner); {-6, task JSON} done asked in a
#    room whose mode requires evidence (verify_task makes it done); {1, task JSON, event id}
# The task_updated event carries what changed, not the whole task: {task: {id, title, status,
# owner, version}, previousStatus, changes: {status?: [from, to], owner?: [from, to],
# description?}, note?} — so a long task's every update does not copy it into the log again.
# A claim's lease ends when the task leaves in_progress or changes owner; an update by its
# holder renews it.
UPDATE_TASK_SCRIPT = (
    _PRELUDE
    + _TASKS
    + r"""
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {0} end
local task = cjson.decode(raw)
local ch = cjson.decode(ARGV[2])
if ch.expected_version ~= nil and tonumber(ch.expected_version) ~= version_of(task) then
  return {-1, raw}
end
local previous, previous_owner = task.status, owner_of(task)
local new_owner = previous_owner
if ch.set_owner then
  new_owner = ch.owner
  if new_owner == cjson.null or new_owner == '' then new_owner = nil end
end
if previous == 'in_progress' and previous_owner and new_owner and new_owner ~= previous_owner
    and ch.by ~= previous_owner then
  return {-2, raw}
end
if ch.status == 'done' and previous ~= 'done' and room_mode(KEYS[2]).evidenceRequired then
  return {-6, raw}
end
if ch.status ~= nil then task.status = ch.status end
local previous_priority = task.priority
if ch.priority ~= nil then task.priority = ch.priority end
if ch.set_owner then task.owner = new_owner or cjson.null end
if ch.description ~= nil then task.description = ch.description end
if ch.note ~= nil then
  task.note = ch.note
  if type(task.notes) ~= 'table' then task.notes = {} end
  table.insert(task.notes, {by = ch.by, at = ARGV[3], text = ch.note})
  local kept = tonumber(ARGV[8])
  while #task.notes > kept do table.remove(task.notes, 1) end
end
local holder = redis.call('HGET', KEYS[6], ARGV[1])
if holder then
  local lease_ms, who = string.match(holder, '^(%d+) (.*)$')
  if task.status ~= 'in_progress' or owner_of(task) ~= who then
    lease_end(KEYS[5], KEYS[6], task)
  elseif ch.by == who then
    lease_renew(KEYS[5], task, lease_ms, ARGV[9])
  end
end
if previous == 'in_progress' and previous_owner
    and (task.status ~= 'in_progress' or owner_of(task) ~= previous_owner) then
  task_leases_end(KEYS[7], KEYS[8], ARGV[1], previous_owner)
end
task.version = version_of(task) + 1
task.updated_at = ARGV[3]
local out = task_encode(task)
redis.call('HSET', KEYS[1], ARGV[1], out)
if ch.description ~= nil or ch.note ~= nil then
  search_doc_set(KEYS[2], 't:' .. ARGV[1], search_task_words(raw), search_task_words(out))
end
redis.call('HSETNX', KEYS[2], 'created_at', ARGV[3])
redis.call('HSET', KEYS[2], 'updated_at', ARGV[3])
local changes = {}
if previous ~= task.status then changes.status = {previous, task.status} end
if ch.set_owner and previous_owner ~= owner_of(task) then
  changes.owner = {previous_owner or cjson.null, task.owner}
end
if ch.description ~= nil then changes.description = true end
if ch.priority ~= nil and previous_priority ~= ch.priority then
  changes.priority = {previous_priority or cjson.null, ch.priority}
end
local payload = cjson.encode({task = task_summary(task), previousStatus = previous,
  changes = changes, note = ch.note})
local eid = append(KEYS[3], KEYS[2], KEYS[4], ARGV[5], ARGV[6], ARGV[7],
  {'type', 'task_updated', 'from', ch.by, 'to', 'all', 'payload', payload})
touch(ARGV[4], 1, 6)
return {1, out, eid}
"""
)

# KEYS[1] tasks, KEYS[2] meta, KEYS[3] events, KEYS[4] reads, KEYS[5] claims,
# KEYS[6] claim_holders, KEYS[7] leases, KEYS[8] lease_expiry
# ARGV[1] task id, ARGV[2] agent id, ARGV[3] now (ISO), ARGV[4] now ms, ARGV[5] lease ms
# (0: no lease), ARGV[6] ttl ms, ARGV[7] event cap, ARGV[8] event bytes cap, ARGV[9] wake
# channel, ARGV[10] paths JSON (normalised; [] for none), ARGV[11] their leases' ms,
# ARGV[12] new lease ids JSON (one per path), ARGV[13] most leases, ARGV[14] the lease
# generation the service decided on, ARGV[15] the conflicts it found (JSON; [] none),
# ARGV[16] the agent's own live leases of those paths ({path: lease id} JSON)
# -> {0} unknown task; {-1, task JSON} done; {-2, task JSON} another agent owns it;
#    {-3, task JSON, unmet JSON [{id, status}]} pending with dependencies not done;
#    {-4, task JSON, conflicts JSON} another agent leases one of the paths; {-5, task JSON,
#    live leases} at ROOM_LEASES_MAX; {-9} a lease was granted since the service's view;
#    {1, task JSON, event id ("" when the holder only renewed its claim), leases JSON}
# Of any number of agents claiming at once, the first one's step wins and every later one
# sees its owner: the claim and the check are one step.
CLAIM_TASK_SCRIPT = (
    _PRELUDE
    + _TASKS
    + r"""
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {0} end
local task = cjson.decode(raw)
if task.status == 'done' then return {-1, raw} end
local owner = owner_of(task)
if owner and owner ~= ARGV[2] then return {-2, raw} end
if task.status == 'pending' and type(task.depends_on) == 'table' and #task.depends_on > 0 then
  local found = redis.call('HMGET', KEYS[1], unpack(task.depends_on))
  local unmet = {}
  for i, dep in ipairs(task.depends_on) do
    local status = 'missing'
    if found[i] then status = cjson.decode(found[i]).status end
    if status ~= 'done' then table.insert(unmet, {id = dep, status = status}) end
  end
  if #unmet > 0 then return {-3, raw, cjson.encode(unmet)} end
end
-- The task's paths: leased to the claimant, exclusively, in this same step, or the claim
-- is refused naming who holds them.
local paths, own, fresh = cjson.decode(ARGV[10]), {}, 0
if #paths > 0 then
  if ARGV[15] ~= '[]' then return {-4, raw, ARGV[15]} end
  if lease_generation(KEYS[2]) ~= ARGV[14] then return {-9} end
  local used = lease_sweep(KEYS[7], KEYS[8], tonumber(ARGV[4]))
  local mine = cjson.decode(ARGV[16])
  for _, p in ipairs(paths) do
    local found = mine[p] and redis.call('HGET', KEYS[7], mine[p])
    if found then own[p] = cjson.decode(found) else fresh = fresh + 1 end
  end
  if used + fresh > tonumber(ARGV[13]) then return {-5, raw, used} end
end
local renewal = owner == ARGV[2] and task.status == 'in_progress'
local previous = task.status
local lease_ms = tonumber(ARGV[5])
if lease_ms > 0 then
  redis.call('HSET', KEYS[6], ARGV[1], ARGV[5] .. ' ' .. ARGV[2])
  task.lease_seconds = lease_ms / 1000
  lease_renew(KEYS[5], task, lease_ms, ARGV[4])
else
  lease_end(KEYS[5], KEYS[6], task)
end
local eid = ''
if not renewal then
  task.owner = ARGV[2]
  task.status = 'in_progress'
  task.version = version_of(task) + 1
  task.updated_at = ARGV[3]
  redis.call('HSETNX', KEYS[2], 'created_at', ARGV[3])
  redis.call('HSET', KEYS[2], 'updated_at', ARGV[3])
end
local out = task_encode(task)
redis.call('HSET', KEYS[1], ARGV[1], out)
if not renewal then
  local payload = cjson.encode({task = task_summary(task), previousStatus = previous,
    leaseSeconds = task.lease_seconds})
  eid = append(KEYS[3], KEYS[2], KEYS[4], ARGV[7], ARGV[8], ARGV[9],
    {'type', 'task_claimed', 'from', ARGV[2], 'to', 'all', 'payload', payload})
end
local granted, ids = {}, cjson.decode(ARGV[12])
for i, p in ipairs(paths) do
  local lease = own[p] or {id = ids[i], path = p, mode = 'exclusive', holder = ARGV[2],
    created_ms = tonumber(ARGV[4])}
  lease.mode = 'exclusive'
  lease.task_id = ARGV[1]
  lease.expires_ms = tonumber(ARGV[4]) + tonumber(ARGV[11])
  local json = lease_store(KEYS[7], KEYS[8], lease)
  if not own[p] then
    append(KEYS[3], KEYS[2], KEYS[4], ARGV[7], ARGV[8], ARGV[9],
      {'type', 'lease_granted', 'from', ARGV[2], 'to', 'all', 'payload', json})
  end
  granted[#granted + 1] = json
end
if fresh > 0 then redis.call('HINCRBY', KEYS[2], 'lease_gen', 1) end
touch(ARGV[6], 1, 8)
return {1, out, eid, '[' .. table.concat(granted, ',') .. ']'}
"""
)

# KEYS as CLAIM_TASK_SCRIPT
# ARGV[1] task id, ARGV[2] agent id, ARGV[3] now (ISO), ARGV[4] note ("" for none),
# ARGV[5] notes kept per task, ARGV[6] ttl ms, ARGV[7] event cap, ARGV[8] event bytes cap,
# ARGV[9] wake channel
# -> {0} unknown task; {-1, task JSON} done; {-2, task JSON} not the agent's;
#    {1, task JSON, event id}
RELEASE_TASK_SCRIPT = (
    _PRELUDE
    + _TASKS
    + r"""
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {0} end
local task = cjson.decode(raw)
if task.status == 'done' then return {-1, raw} end
if owner_of(task) ~= ARGV[2] then return {-2, raw} end
local previous = task.status
lease_end(KEYS[5], KEYS[6], task)
task_leases_end(KEYS[7], KEYS[8], ARGV[1], ARGV[2])
task.status = 'pending'
task.owner = cjson.null
if ARGV[4] ~= '' then
  task.note = ARGV[4]
  if type(task.notes) ~= 'table' then task.notes = {} end
  table.insert(task.notes, {by = ARGV[2], at = ARGV[3], text = ARGV[4]})
  while #task.notes > tonumber(ARGV[5]) do table.remove(task.notes, 1) end
end
task.version = version_of(task) + 1
task.updated_at = ARGV[3]
local out = task_encode(task)
redis.call('HSET', KEYS[1], ARGV[1], out)
if ARGV[4] ~= '' then
  search_doc_set(KEYS[2], 't:' .. ARGV[1], search_task_words(raw), search_task_words(out))
end
redis.call('HSETNX', KEYS[2], 'created_at', ARGV[3])
redis.call('HSET', KEYS[2], 'updated_at', ARGV[3])
local note = cjson.null
if ARGV[4] ~= '' then note = ARGV[4] end
local payload = cjson.encode({task = task_summary(task), previousStatus = previous,
  previousOwner = ARGV[2], note = note})
local eid = append(KEYS[3], KEYS[2], KEYS[4], ARGV[7], ARGV[8], ARGV[9],
  {'type', 'task_released', 'from', ARGV[2], 'to', 'all', 'payload', payload})
touch(ARGV[6], 1, 6)
return {1, out, eid}
"""
)

# KEYS as CLAIM_TASK_SCRIPT
# ARGV[1] now ms, ARGV[2] now (ISO), ARGV[3] ttl ms, ARGV[4] event cap, ARGV[5] event bytes
# cap, ARGV[6] wake channel, ARGV[7] most claims lapsed in one step
# -> {claims lapsed, the earliest remaining expiry ms or -1}
# A claim whose lease ran out: its task goes back to pending, unowned, with a
# task_claim_expired event naming who held it. A task its holder no longer owns (or done)
# only loses the lease.
EXPIRE_CLAIMS_SCRIPT = (
    _PRELUDE
    + _TASKS
    + r"""
local held = redis.call('HGET', KEYS[2], 'status')
if held == 'archived' or held == 'archiving' then return {0, -1} end
local due = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[7]))
local lapsed = 0
for _, tid in ipairs(due) do
  local holder = redis.call('HGET', KEYS[6], tid) or ''
  local lease_ms, who = string.match(holder, '^(%d+) (.*)$')
  local raw = redis.call('HGET', KEYS[1], tid)
  redis.call('ZREM', KEYS[5], tid)
  redis.call('HDEL', KEYS[6], tid)
  if raw then
    local task = cjson.decode(raw)
    local previous = task.status
    local lapses = who ~= nil and owner_of(task) == who and previous ~= 'done'
    task.lease_seconds = nil
    task.lease_expires_at = nil
    if lapses then
      task_leases_end(KEYS[7], KEYS[8], tid, who)
      task.status = 'pending'
      task.owner = cjson.null
      task.version = version_of(task) + 1
      task.updated_at = ARGV[2]
      lapsed = lapsed + 1
    end
    redis.call('HSET', KEYS[1], tid, task_encode(task))
    if lapses then
      redis.call('HSET', KEYS[2], 'updated_at', ARGV[2])
      local payload = cjson.encode({task = task_summary(task), previousStatus = previous,
        previousOwner = who, leaseSeconds = tonumber(lease_ms) / 1000})
      append(KEYS[3], KEYS[2], KEYS[4], ARGV[4], ARGV[5], ARGV[6],
        {'type', 'task_claim_expired', 'from', 'roomservice', 'to', 'all', 'payload', payload})
    end
  end
end
if lapsed > 0 then touch(ARGV[3], 1, 8) end
local nxt = redis.call('ZRANGE', KEYS[5], 0, 0, 'WITHSCORES')
if #nxt == 0 then return {lapsed, -1} end
return {lapsed, nxt[2]}
"""
)

# KEYS[1] meta, KEYS[2] task_order, KEYS[3] tasks, KEYS[4] leases
# ARGV: none
# -> {created_at or false, updated_at or false, every lease JSON (the caller keeps the live
#    ones), task JSON... in plan order}
READ_PLAN_SCRIPT = r"""
local created = redis.call('HGET', KEYS[1], 'created_at')
local updated = redis.call('HGET', KEYS[1], 'updated_at')
local out = {created, updated, redis.call('HVALS', KEYS[4])}
local ids = redis.call('LRANGE', KEYS[2], 0, -1)
if #ids > 0 then
  local tasks = redis.call('HMGET', KEYS[3], unpack(ids))
  for i = 1, #tasks do
    if tasks[i] then table.insert(out, tasks[i]) end
  end
end
return out
"""

# KEYS[1] task_order, KEYS[2] task_titles
# ARGV[1] how many of the newest tasks to sample
# -> {id, label, id, label, ...} the sample an unknown-task hint is computed from
_LABELLED = r"""
-- {id, label, id, label, ...}: each id with its label from the hash `labels`.
local function labelled(ids, labels)
  local out = {}
  if #ids == 0 then return out end
  local found = redis.call('HMGET', labels, unpack(ids))
  for i = 1, #ids do
    table.insert(out, ids[i])
    table.insert(out, found[i] or '')
  end
  return out
end
"""

TASK_HINTS_SCRIPT = (
    _LABELLED
    + r"""
return labelled(redis.call('LRANGE', KEYS[1], -tonumber(ARGV[1]), -1), KEYS[2])
"""
)

# KEYS[1] ctx, KEYS[2] ctx_payload, KEYS[3] ctx_created, KEYS[4] ctx_changed, KEYS[5] events,
# KEYS[6] seq, KEYS[7] meta, KEYS[8] reads, KEYS[9] ctx_labels
# ARGV[1] id, ARGV[2] entry JSON without payload, ARGV[3] payload JSON, ARGV[4] ttl ms,
# ARGV[5] event cap, ARGV[6] event bytes cap, ARGV[7] wake channel, ARGV[8] event from,
# ARGV[9] event to, ARGV[10] event payload JSON, ARGV[11] most entries per room,
# ARGV[12] the entry's label for hints
# -> {1, context_available event id}; {0, entries in the room} at the quota
WRITE_CONTEXT_SCRIPT = (
    _PRELUDE
    + r"""
local count = redis.call('HLEN', KEYS[1])
if count >= tonumber(ARGV[11]) then return {0, count} end
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
return {1, eid}
"""
)

# KEYS[1] ctx, KEYS[2] ctx_payload, KEYS[3] ctx_changed, KEYS[4] ctx_versions,
# KEYS[5] ctx_version_index, KEYS[6] events, KEYS[7] meta, KEYS[8] reads, KEYS[9] ctx_labels,
# KEYS[10] ctx_readers
# ARGV[1] id, ARGV[2] changes JSON {author, summary?, consuming_agents?}, ARGV[3] new payload
# JSON or "" to keep it, ARGV[4] expected version or "", ARGV[5] now (ISO), ARGV[6] ttl ms,
# ARGV[7] event cap, ARGV[8] event bytes cap, ARGV[9] wake channel, ARGV[10] versions kept
# per entry, ARGV[11] the entry's new label for hints ("" to keep it)
# -> {0} unknown entry; {-1, current version} stale expectedVersion;
#    {1, entry JSON without payload, payload JSON, event id, agents told their read is stale}
# Superseded versions: ctx_versions "<id>@<version>" -> full JSON, and in ctx_version_index
# the member "<id>@<minor, 9 digits>@<version>" (score 0, lexical order), so one entry's
# history is a range of the index and the oldest beyond ARGV[10] are dropped.
UPDATE_CONTEXT_SCRIPT = (
    _PRELUDE
    + r"""
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {0} end
local entry = cjson.decode(raw)
if ARGV[4] ~= '' and entry.version ~= ARGV[4] then return {-1, entry.version} end
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
return {1, out, payload, eid, cjson.encode(told)}
"""
)

# KEYS[1] ctx_version_index, KEYS[2] ctx_versions
# ARGV[1] entry id
# -> the full JSON of each superseded version of the entry, oldest first
CONTEXT_HISTORY_SCRIPT = r"""
local out = {}
for _, member in ipairs(redis.call('ZRANGEBYLEX', KEYS[1], '[' .. ARGV[1] .. '@',
    '(' .. ARGV[1] .. 'A')) do
  local found = redis.call('HGET', KEYS[2], ARGV[1] .. '@' .. string.match(member, '@[0-9]+@(.*)$'))
  if found then table.insert(out, found) end
end
return out
"""

# KEYS[1] ctx_created, KEYS[2] ctx_labels
# ARGV[1] how many of the newest entries to sample
# -> {id, label, id, label, ...} the sample an unknown-entry hint is computed from
CONTEXT_HINTS_SCRIPT = (
    _LABELLED
    + r"""
return labelled(redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1), KEYS[2])
"""
)

# KEYS[1] events, KEYS[2] meta, KEYS[3] reads
# ARGV[1] type, ARGV[2] from, ARGV[3] to, ARGV[4] payload JSON, ARGV[5] parent event id or "",
# ARGV[6] ttl ms, ARGV[7] event cap, ARGV[8] event bytes cap, ARGV[9] wake channel
# -> {0} unknown parent; {1, event id}
POST_EVENT_SCRIPT = (
    _PRELUDE
    + r"""
local fields = {'type', ARGV[1], 'from', ARGV[2], 'to', ARGV[3], 'payload', ARGV[4]}
if ARGV[5] ~= '' then
  local parent = redis.call('XRANGE', KEYS[1], ARGV[5], ARGV[5], 'COUNT', 1)
  if #parent == 0 then return {0} end
  table.insert(fields, 'reply_to_id')
  table.insert(fields, ARGV[5])
end
local eid = append(KEYS[1], KEYS[2], KEYS[3], ARGV[7], ARGV[8], ARGV[9], fields)
touch(ARGV[6], 1, 3)
return {1, eid}
"""
)

# KEYS[1] events, KEYS[2] the cursors hash (the writers', or the read-only callers'),
# KEYS[3] ctx_changed
# ARGV[1] the cursor's field, ARGV[2] limit, ARGV[3] "1" = only events addressed to the agent
# or "all", ARGV[4] ttl ms, ARGV[5] most entries to scan in one call (addressedOnly skips
# count), ARGV[6] the agent id `to` is matched against, ARGV[7] most cursors per hash
# -> {cursor after the call, previous cursor, events in the log, context entries changed
#     after the previous cursor, 1 if the scan stopped at ARGV[5] before finding `limit`
#     events (call again: more may follow), entry, entry, ...}
#    where entry = {id, {field, value, ...}}; {-1, cursors held} when this new cursor would
#    pass the quota
# Why one script: reading after the cursor and moving it must be one step, or two calls by
# the same agent at once could both read the same batch (roomd's duplicate delivery).
_READ_UNREAD = r"""
-- Take up to `limit` events after the cursor `field` of `cursors`, moving it. Returns
-- cursor, previous, changed, capped, entries; or nil, cursors held (at the quota).
local function read_unread(events, cursors, changed_key, field, limit, addressed, ttl,
                           scan_cap, agent, cursors_max)
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
      if keep then table.insert(out, e) end
      if #out >= limit or scanned >= scan_cap then break end
    end
    start = '(' .. last
  end
  local changed = 0
  if previous == '0-0' then
    changed = redis.call('ZCARD', changed_key)
  else
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
"""

READ_UNREAD_SCRIPT = (
    _PRELUDE
    + _READ_UNREAD
    + r"""
local cursor, previous, changed, capped, out = read_unread(
  KEYS[1], KEYS[2], KEYS[3], ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4],
  tonumber(ARGV[5]), ARGV[6], tonumber(ARGV[7]))
if cursor == nil then return {-1, previous} end
local result = {cursor, previous, redis.call('XLEN', KEYS[1]), changed, capped}
for _, e in ipairs(out) do table.insert(result, e) end
return result
"""
)

# KEYS[1] events, KEYS[2] cursors, KEYS[3] read-only callers' cursors, KEYS[4] context
# changed (sorted set)
# ARGV[1] ttl ms, ARGV[2] most entries to scan per read, ARGV[3] most cursors per hash,
# then per read five: "1" cursors / "2" read-only cursors, the cursor's field, limit,
# "1" addressed only, the agent id
# -> {{reply, reply, ...}, {entry, entry, ...}}: each reply as READ_UNREAD's head (cursor,
#    previous, events in the log, changed, capped) then the ids of its entries; each entry
#    once however many reads took it. {-1, cursors held} for a read past the quota.
# Why: the waiters of one room, woken by one write, take their events in one step (one
# round trip, each cursor moved exactly once, in order) instead of one call each.
READ_UNREAD_MANY_SCRIPT = (
    _PRELUDE
    + _READ_UNREAD
    + r"""
local length = redis.call('XLEN', KEYS[1])
local ttl, scan_cap, cursors_max = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local replies, entries, seen = {}, {}, {}
for i = 4, #ARGV, 5 do
  local cursors = KEYS[2]
  if ARGV[i] == '2' then cursors = KEYS[3] end
  local cursor, previous, changed, capped, out = read_unread(
    KEYS[1], cursors, KEYS[4], ARGV[i + 1], tonumber(ARGV[i + 2]), ARGV[i + 3], ttl,
    scan_cap, ARGV[i + 4], cursors_max)
  if cursor == nil then
    table.insert(replies, {-1, previous})
  else
    local reply = {cursor, previous, length, changed, capped}
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
"""
)


# KEYS[1] events, KEYS[2] reads
# ARGV[1] event id, ARGV[2] agent id, ARGV[3] now (ISO), ARGV[4] ttl ms, ARGV[5] most
# receipts per event
# -> 0 unknown event; 1 recorded (or already recorded); {-1, receipts} at the quota
MARK_EVENT_READ_SCRIPT = (
    _PRELUDE
    + r"""
local found = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1], 'COUNT', 1)
if #found == 0 then return 0 end
local raw = redis.call('HGET', KEYS[2], ARGV[1])
local reads = {}
if raw then reads = cjson.decode(raw) end
for _, r in ipairs(reads) do
  if r.agentId == ARGV[2] then return 1 end
end
if #reads >= tonumber(ARGV[5]) then return {-1, #reads} end
table.insert(reads, {agentId = ARGV[2], readAt = ARGV[3]})
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(reads))
touch(ARGV[4], 2, 2)
return 1
"""
)

# KEYS[1] presence, KEYS[2] claims, KEYS[3] claim_holders, KEYS[4] tasks, KEYS[5] agent_tags
# ARGV[1] agent id, ARGV[2] now ms, ARGV[3] ttl ms, ARGV[4] most agents remembered,
# ARGV[5] most agents answered, ARGV[6] the heartbeat's tags (JSON list) or "" (keep them)
# -> {agents remembered, {agent, ms, agent, ms, ...} the ARGV[5] most recently seen}
# The answer is capped so a heartbeat costs the same in a room of 5,000 agents as of 10.
# Past the quota the agent that has been silent longest is forgotten (its cursor stays).
# A heartbeat renews every leased claim the agent holds in the room (a room without leased
# claims pays one ZCARD for it).
HEARTBEAT_SCRIPT = (
    _PRELUDE
    + _TASKS
    + r"""
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
if ARGV[6] ~= '' then
  redis.call('HSET', KEYS[5], ARGV[1], ARGV[6])
  redis.call('PEXPIRE', KEYS[5], ARGV[3])
end
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[4])
if over > 0 then
  -- The forgotten agents' tags go with them: the tags never outnumber the agents.
  local gone = redis.call('ZPOPMIN', KEYS[1], over)
  for i = 1, #gone, 2 do redis.call('HDEL', KEYS[5], gone[i]) end
end
touch(ARGV[3], 1, 1)
if redis.call('ZCARD', KEYS[2]) > 0 then
  local held = redis.call('HGETALL', KEYS[3])
  for i = 1, #held, 2 do
    local lease_ms, who = string.match(held[i + 1], '^(%d+) (.*)$')
    local raw = who == ARGV[1] and redis.call('HGET', KEYS[4], held[i])
    if raw then
      local task = cjson.decode(raw)
      lease_renew(KEYS[2], task, lease_ms, ARGV[2])
      redis.call('HSET', KEYS[4], held[i], task_encode(task))
    end
  end
end
local shown = redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[5]) - 1, 'WITHSCORES')
return {redis.call('ZCARD', KEYS[1]), shown}
"""
)

# KEYS[1] lock:<resource>, KEYS[2] fence, KEYS[3] lock_index, KEYS[4] lock_tokens
# ARGV[1] agent id, ARGV[2] lock ttl ms, ARGV[3] now ms, ARGV[4] resource, ARGV[5] idle ttl ms,
# ARGV[6] most locks held at once per room
# -> {acquired 0/1, holder, fencing token, remaining ms}; {-1, locks held} at the quota
# A new grant (SET NX PX) takes the next fencing token; the holder acquiring again renews
# its grant and keeps its token, so a token names one uninterrupted holding.
ACQUIRE_LOCK_SCRIPT = (
    _PRELUDE
    + r"""
local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ARGV[3])
if #expired > 0 then
  redis.call('ZREM', KEYS[3], unpack(expired))
  redis.call('HDEL', KEYS[4], unpack(expired))
end
if redis.call('ZSCORE', KEYS[3], ARGV[4]) == false then
  local held = redis.call('ZCARD', KEYS[3])
  if held >= tonumber(ARGV[6]) then return {-1, held} end
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local token = redis.call('INCR', KEYS[2])
  redis.call('HSET', KEYS[4], ARGV[4], token)
  redis.call('ZADD', KEYS[3], tonumber(ARGV[3]) + tonumber(ARGV[2]), ARGV[4])
  touch(ARGV[5], 2, 4)
  return {1, ARGV[1], token, tonumber(ARGV[2])}
end
local holder = redis.call('GET', KEYS[1])
local token = tonumber(redis.call('HGET', KEYS[4], ARGV[4]) or '0')
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('ZADD', KEYS[3], tonumber(ARGV[3]) + tonumber(ARGV[2]), ARGV[4])
  touch(ARGV[5], 2, 4)
  return {1, holder, token, tonumber(ARGV[2])}
end
return {0, holder, token, redis.call('PTTL', KEYS[1])}
"""
)

# KEYS[1] lock:<resource>, KEYS[2] lock_index, KEYS[3] lock_tokens
# ARGV[1] agent id, ARGV[2] resource
# -> {1} released; {0, holder} held by someone else; {0} not held at all
RELEASE_LOCK_SCRIPT = r"""
local holder = redis.call('GET', KEYS[1])
if not holder then return {0} end
if holder ~= ARGV[1] then return {0, holder} end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('HDEL', KEYS[3], ARGV[2])
return {1}
"""

# KEYS[1] vars, KEYS[2] events, KEYS[3] meta, KEYS[4] reads
# ARGV[1] key, ARGV[2] value, ARGV[3] agent id, ARGV[4] ttl ms, ARGV[5] event cap,
# ARGV[6] event bytes cap, ARGV[7] wake channel, ARGV[8] most variables per room
# -> {1, shared_var_set event id}; {0, variables in the room} at the quota
SET_SHARED_VAR_SCRIPT = (
    _PRELUDE
    + r"""
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  local count = redis.call('HLEN', KEYS[1])
  if count >= tonumber(ARGV[8]) then return {0, count} end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local eid = append(KEYS[2], KEYS[3], KEYS[4], ARGV[5], ARGV[6], ARGV[7], {'type',
  'shared_var_set', 'from', ARGV[3], 'to', 'all', 'payload',
  cjson.encode({key = ARGV[1], value = ARGV[2]})})
touch(ARGV[4], 1, 4)
return {1, eid}
"""
)

# KEYS[1] the caller's sliding-window sorted set
# ARGV[1] now ms, ARGV[2] window ms, ARGV[3] limit, ARGV[4] a member unique to this call
# -> {1, remaining} allowed; {0, retry-after ms} over the limit
SLIDING_WINDOW_SCRIPT = r"""
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count >= tonumber(ARGV[3]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  local retry = window
  if oldest[2] then retry = tonumber(oldest[2]) + window - now end
  return {0, retry}
end
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('PEXPIRE', KEYS[1], window)
return {1, tonumber(ARGV[3]) - count - 1}
"""

# KEYS[1] a budget's call window, KEYS[2] its team's epoch
# ARGV[1] now ms, ARGV[2] window ms, ARGV[3] limit (0: not charged), ARGV[4] member
# -> {1, calls left (-1 when not charged), epoch} or {0, retry-after ms, epoch}
# One step for a warm tool call's tenancy: the charge, and the epoch every in-process
# cache of the team is checked against.
BUDGET_STEP_SCRIPT = r"""
local epoch = tonumber(redis.call('GET', KEYS[2]) or '0')
local limit = tonumber(ARGV[3])
if limit <= 0 then return {1, -1, epoch} end
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count >= limit then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  local retry = window
  if oldest[2] then retry = tonumber(oldest[2]) + window - now end
  return {0, retry, epoch}
end
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('PEXPIRE', KEYS[1], window)
return {1, limit - count - 1, epoch}
"""

# KEYS[1] a budget's slot set (its open streams, or its waiting calls)
# ARGV[1] slot id, ARGV[2] now ms, ARGV[3] lease ms, ARGV[4] most slots at once
# -> 1 admitted (or lease renewed), 0 the budget is at its limit
# Members expire unless renewed, so a server that dies does not hold its slots forever.
ADMIT_SLOT_SCRIPT = r"""
local now = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) == false
   and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""

# KEYS[1] a digest's cached caller, KEYS[2] its generation counter
# ARGV[1] the caller JSON, ARGV[2] ttl ms, ARGV[3] the generation read before the lookup
# -> 1 cached, 0 dropped (the credential was revoked since: its generation moved)
# Why a generation and not just a delete on revoke: a request that read the database just
# before the revocation would otherwise put the revoked credential back into the cache.
FILL_BEARER_SCRIPT = r"""
local generation = tonumber(redis.call('GET', KEYS[2]) or '0')
if generation ~= tonumber(ARGV[3]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""

# KEYS[1] a digest's cached caller, KEYS[2] its generation counter
# ARGV: none
# -> the new generation
FORGET_BEARER_SCRIPT = r"""
redis.call('DEL', KEYS[1])
return redis.call('INCR', KEYS[2])
"""

# KEYS[1] context (entries), KEYS[2] context payloads
# ARGV[1] entry id
# -> {} unknown; {entry JSON, payload JSON} (one step: never an entry without its payload)
CONTEXT_GET_SCRIPT = r"""
local entry = redis.call('HGET', KEYS[1], ARGV[1])
if not entry then return {} end
return {entry, redis.call('HGET', KEYS[2], ARGV[1]) or 'null'}
"""

# KEYS[1] context created (sorted set), KEYS[2] context entries, KEYS[3] context payloads
# -> {entry JSON, payload JSON, ...} newest first
CONTEXT_ALL_SCRIPT = r"""
local out = {}
for _, id in ipairs(redis.call('ZREVRANGE', KEYS[1], 0, -1)) do
  local entry = redis.call('HGET', KEYS[2], id)
  if entry then
    table.insert(out, entry)
    table.insert(out, redis.call('HGET', KEYS[3], id) or 'null')
  end
end
return out
"""

# --- roomd's other tools ---------------------------------------------------------------

# KEYS[1] presence, KEYS[2] meta, KEYS[3] events, KEYS[4] reads, KEYS[5] agent_tags
# ARGV[1] agent id, ARGV[2] ttl ms, ARGV[3] event cap, ARGV[4] event bytes cap, ARGV[5] wake
# channel, ARGV[6] most agents answered
# -> {left 0/1, {agent, ms, ...} the ARGV[6] most recently seen of those still here}
# The agent's cursor stays: if it comes back, it reads on from where it was.
LEAVE_ROOM_SCRIPT = (
    _PRELUDE
    + r"""
local left = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[5], ARGV[1])
if left == 1 then
  append(KEYS[3], KEYS[2], KEYS[4], ARGV[3], ARGV[4], ARGV[5],
    {'type', 'agent_left', 'from', ARGV[1], 'to', 'all',
     'payload', cjson.encode({agentId = ARGV[1]})})
  touch(ARGV[2], 1, 4)
end
return {left, redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[6]) - 1, 'WITHSCORES')}
"""
)

# KEYS[1] meta, KEYS[2] presence, KEYS[3] tasks, KEYS[4] ctx, KEYS[5] events
# -> {created_at or false, members, tasks, context entries, events}: every count O(1)
ROOM_INFO_SCRIPT = r"""
return {redis.call('HGET', KEYS[1], 'created_at'), redis.call('ZCARD', KEYS[2]),
  redis.call('HLEN', KEYS[3]), redis.call('HLEN', KEYS[4]), redis.call('XLEN', KEYS[5])}
"""

# KEYS[1] tasks, KEYS[2] meta, KEYS[3] events, KEYS[4] reads
# ARGV[1] task id, ARGV[2] depends-on id, ARGV[3] by, ARGV[4] expected version ("" for any),
# ARGV[5] now (ISO), ARGV[6] ttl ms, ARGV[7] event cap, ARGV[8] event bytes cap, ARGV[9] wake
# channel, ARGV[10] most dependencies per task
# -> {0} unknown task; {-5} unknown dependency; {-1, task JSON} stale expectedVersion;
#    {-4, cycle JSON [ids]} the new edge would close a cycle; {-6, task JSON} at the most
#    dependencies; {2, task JSON} already there (nothing changed); {1, task JSON, event id}
# A cycle is found by walking depends_on from the new dependency: if the walk reaches the
# task, the path it took, back to the task, is the cycle (bounded by the room's tasks).
ADD_DEPENDENCY_SCRIPT = (
    _PRELUDE
    + _TASKS
    + r"""
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {0} end
local task = cjson.decode(raw)
if ARGV[4] ~= '' and tonumber(ARGV[4]) ~= version_of(task) then return {-1, raw} end
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 0 then return {-5} end
local deps = task.depends_on
if type(deps) ~= 'table' then deps = {} end
for _, d in ipairs(deps) do
  if d == ARGV[2] then return {2, raw} end
end
if #deps >= tonumber(ARGV[10]) then return {-6, raw} end
local parent, queue, head, found = {[ARGV[2]] = false}, {ARGV[2]}, 1, false
while head <= #queue and not found do
  local at = queue[head]
  head = head + 1
  local r = redis.call('HGET', KEYS[1], at)
  if r then
    local t = cjson.decode(r)
    if type(t.depends_on) == 'table' then
      for _, nxt in ipairs(t.depends_on) do
        if parent[nxt] == nil then
          parent[nxt] = at
          if nxt == ARGV[1] then found = true break end
          table.insert(queue, nxt)
        end
      end
    end
  end
end
if found then
  local path, at = {ARGV[1]}, ARGV[1]
  while at do
    at = parent[at]
    if at then table.insert(path, at) end
  end
  local cycle = {ARGV[1]}
  for i = #path, 1, -1 do table.insert(cycle, path[i]) end
  return {-4, cjson.encode(cycle)}
end
table.insert(deps, ARGV[2])
task.depends_on = deps
task.version = version_of(task) + 1
task.updated_at = ARGV[5]
local out = task_encode(task)
redis.call('HSET', KEYS[1], ARGV[1], out)
redis.call('HSET', KEYS[2], 'updated_at', ARGV[5])
local payload = cjson.encode({task = task_summary(task), previousStatus = task.status,
  changes = {depends_on = {added = ARGV[2]}}})
local eid = append(KEYS[3], KEYS[2], KEYS[4], ARGV[7], ARGV[8], ARGV[9],
  {'type', 'task_updated', 'from', ARGV[3], 'to', 'all', 'payload', payload})
touch(ARGV[6], 1, 4)
return {1, out, eid}
"""
)

# KEYS[1] tasks, KEYS[2] task_order, KEYS[3] task_titles, KEYS[4] meta, KEYS[5] events,
# KEYS[6] reads, KEYS[7] claims, KEYS[8] claim_holders, KEYS[9] leases, KEYS[10] lease_expiry
# ARGV[1] task id, ARGV[2] by, ARGV[3] expected version ("" for any), ARGV[4] now (ISO),
# ARGV[5] ttl ms, ARGV[6] event cap, ARGV[7] event bytes cap, ARGV[8] wake channel
# -> {0} unknown task; {-1, task JSON} stale expectedVersion;
#    {1, event id, dependents JSON [{id, title}] ({} when none: cjson), task JSON}
DELETE_TASK_SCRIPT = (
    _PRELUDE
    + _TASKS
    + r"""
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {0} end
local task = cjson.decode(raw)
if ARGV[3] ~= '' and tonumber(ARGV[3]) ~= version_of(task) then return {-1, raw} end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('LREM', KEYS[2], 0, ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[7], ARGV[1])
redis.call('HDEL', KEYS[8], ARGV[1])
search_doc_set(KEYS[4], 't:' .. ARGV[1], search_task_words(raw), nil)
task_leases_end(KEYS[9], KEYS[10], ARGV[1], nil)
local dependents = {}
local all = redis.call('HVALS', KEYS[1])
for _, r in ipairs(all) do
  local t = cjson.decode(r)
  if type(t.depends_on) == 'table' then
    for _, d in ipairs(t.depends_on) do
      if d == ARGV[1] then table.insert(dependents, {id = t.id, title = t.title}) break end
    end
  end
end
redis.call('HSET', KEYS[4], 'updated_at', ARGV[4])
local payload = fix_arrays(cjson.encode({task = task_summary(task), dependents = dependents}),
  {'dependents'})
local eid = append(KEYS[5], KEYS[4], KEYS[6], ARGV[6], ARGV[7], ARGV[8],
  {'type', 'task_deleted', 'from', ARGV[2], 'to', 'all', 'payload', payload})
touch(ARGV[5], 1, 6)
return {1, eid, cjson.encode(dependents), raw}
"""
)

# KEYS[1] ctx, KEYS[2] ctx_payload, KEYS[3] ctx_created, KEYS[4] ctx_changed,
# KEYS[5] ctx_versions, KEYS[6] ctx_version_index, KEYS[7] ctx_labels, KEYS[8] meta,
# KEYS[9] events, KEYS[10] reads
# ARGV[1] entry id, ARGV[2] by, ARGV[3] ttl ms, ARGV[4] event cap, ARGV[5] event bytes cap,
# ARGV[6] wake channel
# -> {0} unknown entry; {1, event id, entry JSON without payload}
# The entry goes with every kept version of it: nothing of it is left to read.
DELETE_CONTEXT_SCRIPT = (
    _PRELUDE
    + r"""
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {0} end
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
return {1, eid, raw}
"""
)

# KEYS[1] events, KEYS[2] meta, KEYS[3] reads
# ARGV[1] event id, ARGV[2] by, ARGV[3] ttl ms, ARGV[4] event cap, ARGV[5] event bytes cap,
# ARGV[6] wake channel
# -> {0} unknown event; {1, event_deleted event id}
# XDEL removes the one entry in place: an event appended meanwhile (by any process) is never
# touched, unlike a rewrite of the log. Its bytes and read receipts go with it.
DELETE_EVENT_SCRIPT = (
    _PRELUDE
    + r"""
local found = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])
if #found == 0 then return {0} end
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
return {1, eid}
"""
)

# KEYS[1] reviews, KEYS[2] review_order, KEYS[3] tasks, KEYS[4] ctx, KEYS[5] meta,
# KEYS[6] events, KEYS[7] reads
# ARGV[1] review id, ARGV[2] review JSON, ARGV[3] target type (task/context), ARGV[4] target
# id, ARGV[5] requested by, ARGV[6] reviewer, ARGV[7] ttl ms, ARGV[8] event cap, ARGV[9] event
# bytes cap, ARGV[10] wake channel, ARGV[11] most reviews per room
# -> {0} unknown target; {-1, reviews in the room} at the quota; {1, review_requested id}
REQUEST_REVIEW_SCRIPT = (
    _PRELUDE
    + r"""
local target = KEYS[3]
if ARGV[3] == 'context' then target = KEYS[4] end
if redis.call('HEXISTS', target, ARGV[4]) == 0 then return {0} end
local count = redis.call('HLEN', KEYS[1])
if count >= tonumber(ARGV[11]) then return {-1, count} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local eid = append(KEYS[6], KEYS[5], KEYS[7], ARGV[8], ARGV[9], ARGV[10],
  {'type', 'review_requested', 'from', ARGV[5], 'to', ARGV[6], 'payload', ARGV[2]})
redis.call('ZADD', KEYS[2], id_score(eid), ARGV[1])
touch(ARGV[7], 1, 2)
touch(ARGV[7], 5, 7)
return {1, eid}
"""
)

# KEYS[1..8] the task keys (tasks, meta, events, reads, claims, claim_holders, leases,
# lease_expiry), KEYS[9] reviews, KEYS[10] review_order
# ARGV[1] task id, ARGV[2] agent, ARGV[3] the submission's review JSON, ARGV[4] its id,
# ARGV[5] now (ISO), ARGV[6] ttl ms, ARGV[7] event cap, ARGV[8] event bytes cap, ARGV[9] wake
# channel, ARGV[10] most reviews per room, ARGV[11] the evidence JSON
# -> {0} unknown task; {-1, task JSON} done; {-2, task JSON} the agent is not its owner;
#    {-3, task JSON} a submission awaits verification already; {-4, reviews} at the quota;
#    {1, task JSON, event id}
# The submission is a review of the task (kind "submission", reviewer "*": anyone but the
# submitter), so list_reviews, approve and reject see it like any other.
SUBMIT_TASK_SCRIPT = (
    _PRELUDE
    + _TASKS
    + r"""
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {0} end
local task = cjson.decode(raw)
if task.status == 'done' then return {-1, raw} end
if owner_of(task) ~= ARGV[2] then return {-2, raw} end
if type(task.verification) == 'table' and task.verification.state == 'submitted' then
  return {-3, raw}
end
local count = redis.call('HLEN', KEYS[9])
if count >= tonumber(ARGV[10]) then return {-4, count} end
redis.call('HSET', KEYS[9], ARGV[4], ARGV[3])
task.verification = {state = 'submitted', evidence = cjson.decode(ARGV[11]),
  submittedBy = ARGV[2], at = ARGV[5], reviewId = ARGV[4]}
task.version = version_of(task) + 1
task.updated_at = ARGV[5]
local out = task_encode(task)
redis.call('HSET', KEYS[1], ARGV[1], out)
redis.call('HSET', KEYS[2], 'updated_at', ARGV[5])
local eid = append(KEYS[3], KEYS[2], KEYS[4], ARGV[7], ARGV[8], ARGV[9],
  {'type', 'task_submitted', 'from', ARGV[2], 'to', 'all', 'payload',
   cjson.encode({task = task_summary(task), reviewId = ARGV[4],
     evidence = #task.verification.evidence})})
redis.call('ZADD', KEYS[10], id_score(eid), ARGV[4])
touch(ARGV[6], 1, 4)
touch(ARGV[6], 9, 10)
return {1, out, eid}
"""
)

# KEYS[1] meta
# ARGV[1] the mode's changes JSON ({evidenceRequired?}), ARGV[2] ttl ms
# -> the room's mode JSON after the change
SET_ROOM_MODE_SCRIPT = r"""
local mode = {}
local raw = redis.call('HGET', KEYS[1], 'mode')
if raw then mode = cjson.decode(raw) end
local changes = cjson.decode(ARGV[1])
for k, v in pairs(changes) do mode[k] = v end
if changes.turns or changes.order or changes.moderator then redis.call('HDEL', KEYS[1], 'turn') end
local out = cjson.encode(mode)
redis.call('HSET', KEYS[1], 'mode', out)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {out, redis.call('HGET', KEYS[1], 'turn') or ''}
"""

# KEYS[1] reviews, KEYS[2] meta, KEYS[3] events, KEYS[4] reads, KEYS[5] tasks, KEYS[6] claims,
# KEYS[7] claim_holders, KEYS[8] leases, KEYS[9] lease_expiry
# ARGV[1] review id ("" with ARGV[10]), ARGV[2] agent id, ARGV[3] approved/rejected, ARGV[4]
# note ("" for none), ARGV[5] now (ISO), ARGV[6] ttl ms, ARGV[7] event cap, ARGV[8] event
# bytes cap, ARGV[9] wake channel, ARGV[10] task id (verify_task: its pending submission)
# or "", ARGV[11] notes kept per task
# -> {0} unknown review (or task); {-2, review JSON} resolved already; {-3, review JSON} the
#    agent is not its reviewer; {-4, review JSON} a submission judged by its submitter;
#    {-5, task JSON} the task has no submission awaiting verification;
#    {1, review JSON, event id, task JSON or ""}
# Only the named reviewer resolves a review, and only once: the check and the change are
# one step, so of two resolutions at once exactly one lands. A submission (submit_task) is
# a review of its task that any agent but the submitter resolves; resolving it moves the
# task in the same step: approved -> done (verified), rejected -> back in progress with the
# reviewer's note. approve/reject and verify_task are two doors to this one step.
RESOLVE_REVIEW_SCRIPT = (
    _PRELUDE
    + _TASKS
    + r"""
local review_id, agent = ARGV[1], ARGV[2]
if ARGV[10] ~= '' then
  local traw = redis.call('HGET', KEYS[5], ARGV[10])
  if not traw then return {0} end
  local v = cjson.decode(traw).verification
  if type(v) ~= 'table' or v.state ~= 'submitted' then return {-5, traw} end
  review_id = v.reviewId
end
local raw = redis.call('HGET', KEYS[1], review_id)
if not raw then return {0} end
local review = cjson.decode(raw)
if review.status ~= 'pending' then return {-2, raw} end
local submission = review.kind == 'submission'
if submission and review.requestedBy == agent then return {-4, raw} end
if not submission and review.reviewer ~= agent then return {-3, raw} end
review.status = ARGV[3]
review.resolvedAt = ARGV[5]
review.resolvedBy = agent
if ARGV[4] ~= '' then
  -- roomd answers the resolver's note as the review's `note`; the request's is kept.
  if review.note ~= nil and review.note ~= cjson.null then review.requestNote = review.note end
  review.note = ARGV[4]
  review.resolutionNote = ARGV[4]
end
local out = fix_arrays(cjson.encode(review), {'evidence'})
redis.call('HSET', KEYS[1], review_id, out)
local task_out = ''
local traw = submission and redis.call('HGET', KEYS[5], review.targetId)
if traw then
  local task = cjson.decode(traw)
  local v = task.verification
  if type(v) == 'table' and v.reviewId == review_id then
    if ARGV[3] == 'approved' then
      v.state, v.verifiedBy, v.verifiedAt = 'verified', agent, ARGV[5]
      task.status = 'done'
      lease_end(KEYS[6], KEYS[7], task)
      task_leases_end(KEYS[8], KEYS[9], task.id, nil)
    else
      v.state, v.rejectedBy, v.rejectedAt = 'rejected', agent, ARGV[5]
      if ARGV[4] ~= '' then v.note = ARGV[4] end
      task.status = 'in_progress'
      if ARGV[4] ~= '' then
        task.note = ARGV[4]
        if type(task.notes) ~= 'table' then task.notes = {} end
        table.insert(task.notes, {by = agent, at = ARGV[5], text = ARGV[4]})
        while #task.notes > tonumber(ARGV[11]) do table.remove(task.notes, 1) end
      end
    end
    task.version = version_of(task) + 1
    task.updated_at = ARGV[5]
    task_out = task_encode(task)
    redis.call('HSET', KEYS[5], task.id, task_out)
    redis.call('HSET', KEYS[2], 'updated_at', ARGV[5])
  end
end
local kind = 'review_' .. ARGV[3]
local payload = out
if task_out ~= '' then
  kind = ARGV[3] == 'approved' and 'task_verified' or 'task_rejected'
  payload = cjson.encode({task = task_summary(cjson.decode(task_out)), reviewId = review_id,
    note = ARGV[4] ~= '' and ARGV[4] or nil})
end
local eid = append(KEYS[3], KEYS[2], KEYS[4], ARGV[7], ARGV[8], ARGV[9],
  {'type', kind, 'from', agent, 'to', review.requestedBy, 'payload', payload})
touch(ARGV[6], 1, 9)
return {1, out, eid, task_out}
"""
)


# KEYS[1] meta, KEYS[2] presence, KEYS[3] tasks, KEYS[4] ctx, KEYS[5] events
# ARGV[1] online since (epoch ms)
# -> {meta as field, value, ...; agents, agents online, context entries, events, task
#     statuses...}: the counts per day are meta's "d:<day>" fields
ROOM_ANALYTICS_SCRIPT = r"""
local statuses = {}
for _, raw in ipairs(redis.call('HVALS', KEYS[3])) do
  table.insert(statuses, cjson.decode(raw).status)
end
return {redis.call('HGETALL', KEYS[1]), redis.call('ZCARD', KEYS[2]),
  redis.call('ZCOUNT', KEYS[2], ARGV[1], '+inf'), redis.call('HLEN', KEYS[4]),
  redis.call('XLEN', KEYS[5]), statuses}
"""

# --- Keyed writes (idempotencyKey) ------------------------------------------------------

# Any write script, wrapped so that its write and its idempotencyKey's record are one step
# (rooms/idempotency.py). The script's own text goes where __WRITE__ is, as the body of a
# function (its `return`s return from it); it reads KEYS and ARGV by fixed positions, so the
# wrapper's own come after them:
# KEYS[#KEYS-1] idem, KEYS[#KEYS] idem_at
# ARGV[n-7] key, ARGV[n-6] fingerprint, ARGV[n-5] tool, ARGV[n-4] minted JSON, ARGV[n-3] now ms,
# ARGV[n-2] window ms, ARGV[n-1] most records, ARGV[n] most record bytes
# -> the script's own answer; {'__keyed', 'replay', answer JSON, minted JSON} for a key seen
#    in the window with the same fingerprint; {'__keyed', 'reused', tool} with another one.
# Only an answer that __WROTE__ holds for (the script changed the room) is recorded: a
# refused call leaves nothing, and its retry runs again.
KEYED_WRAP = r"""
local function __write()
__WRITE__
end
local __n = #ARGV - __TAIL__
local __hash, __times = KEYS[#KEYS - 1], KEYS[#KEYS]
local __field = 'k:' .. ARGV[__n - 7]
local __now, __window = tonumber(ARGV[__n - 3]), tonumber(ARGV[__n - 2])
local __found = redis.call('HGET', __hash, __field)
if __found then
  local rec = cjson.decode(__found)
  if tonumber(rec.at) > __now - __window then
    if rec.fp ~= ARGV[__n - 6] then return {'__keyed', 'reused', rec.tool} end
    return {'__keyed', 'replay', rec.res, rec.minted}
  end
end
local __res = __write()
if __WROTE__ then
  local rec = cjson.encode({fp = ARGV[__n - 6], tool = ARGV[__n - 5], minted = ARGV[__n - 4],
    at = ARGV[__n - 3], res = cjson.encode(__res)})
  local total = redis.call('HINCRBY', __hash, '__bytes', #rec - (__found and #__found or 0))
  redis.call('HSET', __hash, __field, rec)
  redis.call('ZADD', __times, __now, __field)
  local function forget(f)
    local r = redis.call('HGET', __hash, f)
    if r then total = redis.call('HINCRBY', __hash, '__bytes', -#r) end
    redis.call('HDEL', __hash, f)
    redis.call('ZREM', __times, f)
  end
  for _, f in ipairs(redis.call('ZRANGEBYSCORE', __times, '-inf', __now - __window,
      'LIMIT', 0, 32)) do
    forget(f)
  end
  local most, most_bytes = tonumber(ARGV[__n - 1]), tonumber(ARGV[__n])
  while redis.call('ZCARD', __times) > 1
      and (redis.call('ZCARD', __times) > most or total > most_bytes) do
    local oldest = redis.call('ZRANGE', __times, 0, 0)[1]
    if oldest == __field then break end
    forget(oldest)
  end
  redis.call('PEXPIRE', __hash, __window)
  redis.call('PEXPIRE', __times, __window)
end
return __res
"""

# What __WROTE__ is for each kind of answer.
WROTE_ONE = "type(__res) == 'table' and __res[1] == 1"  # {1, ...} changed the room
WROTE_ALWAYS = "true"  # every answer is a write (heartbeat; release_lock answers either way)
WROTE_UNLESS_QUOTA = "type(__res) == 'table' and __res[1] ~= -1"  # acquire_lock
WROTE_MARK = "__res == 1"  # mark_event_read: 1 recorded


def keyed(source: str, wrote: str, *, tail: int = 0) -> str:
    """`source` (a write script) as one keyed step; `tail`: arguments after the keyed ones
    (a turn step's, TURN_WRAP)."""
    return (
        KEYED_WRAP.replace("__WRITE__", source)
        .replace("__WROTE__", wrote)
        .replace("__TAIL__", str(tail))
    )


# KEYS[1] meta, KEYS[2] events, KEYS[3] tasks, KEYS[4] task_order, KEYS[5] ctx,
# KEYS[6] ctx_payloads, KEYS[7] ctx_created, KEYS[8..10] the search keys
# ARGV[1] what to index ("events", "tasks", "context"), ARGV[2] how many at most, ARGV[3] from
# which position (tasks, context)
# -> {done (0/1), indexed, next position}
# Rooms written before the index existed: events are indexed backwards from the floor, each
# step moving the floor down (a posting older than a word's kept newest is only counted);
# tasks and context entries are indexed again whole (search_doc_set replaces). Writes may
# run between steps: nothing is indexed twice, nothing below the floor is unindexed.
SEARCH_REINDEX_SCRIPT = (
    _PRELUDE
    + r"""
local what, most, from = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local n = 0
if what == 'events' then
  local floor = redis.call('HGET', KEYS[1], 'search_floor')
  local top = '+'
  if floor then top = '(' .. floor end
  local batch = redis.call('XREVRANGE', KEYS[2], top, '-', 'COUNT', most)
  local ev, dv, vocab = search_keys(KEYS[1])
  local keep = SEARCH_EVENT_POSTINGS * 11
  for _, e in ipairs(batch) do
    local ms, seq = string.match(e[1], '^(%d+)-(%d+)$')
    local bag = search_event_words(e[2])
    local cost = SEARCH_POSTING_BYTES * bag.n
    for _, term in ipairs(bag.order) do
      local posting = struct.pack('>I6I4B', tonumber(ms), tonumber(seq), bag.w[term])
      local cur = redis.call('HGET', ev, term)
      if cur then
        local list = string.sub(cur, 5)
        if #list < keep then list = posting .. list end
        redis.call('HSET', ev, term, struct.pack('>I4', struct.unpack('>I4', cur) + 1) .. list)
      else
        redis.call('ZADD', vocab, 0, term)
        redis.call('HSET', ev, term, struct.pack('>I4', 1) .. posting)
        cost = cost + SEARCH_WORD_BYTES
      end
    end
    redis.call('HINCRBY', KEYS[1], 'event_bytes', cost)
    day_count(KEYS[1], e[1], 1)
    redis.call('HSET', KEYS[1], 'search_floor', e[1])
    n = n + 1
  end
  search_expire(KEYS[1])
  return {#batch < most and 1 or 0, n, 0}
end
local ids
if what == 'tasks' then
  ids = redis.call('LRANGE', KEYS[4], from, from + most - 1)
  for _, id in ipairs(ids) do
    local raw = redis.call('HGET', KEYS[3], id)
    if raw then
      local bag = search_task_words(raw)
      search_doc_set(KEYS[1], 't:' .. id, bag, bag)
      n = n + 1
    end
  end
else
  ids = redis.call('ZRANGE', KEYS[7], from, from + most - 1)
  for _, id in ipairs(ids) do
    local raw = redis.call('HGET', KEYS[5], id)
    if raw then
      local bag = search_context_words(raw, redis.call('HGET', KEYS[6], id) or '')
      search_doc_set(KEYS[1], 'c:' .. id, bag, bag)
      n = n + 1
    end
  end
end
return {#ids < most and 1 or 0, n, from + #ids}
"""
)


# KEYS[1] search_events, KEYS[2] search_docs, KEYS[3] search_vocab, KEYS[4] events,
# KEYS[5] tasks, KEYS[6] ctx, KEYS[7] ctx_payloads
# ARGV[1] hits wanted, ARGV[2] postings read per group at most, ARGV[3] terms a prefix
# expands to at most, ARGV[4..] the query's groups: "=<word>" or "*<prefix>"
# -> {documents in the room, hits, then per hit: kind (task/context/event), id, score,
#    groups matched, its title text, its body text}
# A document's score is the sum, over the query's words it holds, of its weight for the word
# times the word's rarity, log(1 + documents / documents holding it); documents holding more
# of the query's groups come first, then the higher score, then the newer event. The cost is
# bounded by the groups times ARGV[2], however large the room.
SEARCH_SCRIPT = (
    _PRELUDE
    + r"""
local want, budget, expand = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local total = redis.call('XLEN', KEYS[4]) + redis.call('HLEN', KEYS[5])
  + redis.call('HLEN', KEYS[6])
local found, list = {}, {}
local function hit(key, g, w, idf, recency)
  local f = found[key]
  if not f then
    f = {key = key, s = 0, g = 0, last = 0, r = recency}
    found[key] = f
    list[#list + 1] = f
  end
  f.s = f.s + w * idf
  if f.last ~= g then
    f.last = g
    f.g = f.g + 1
  end
end
for g = 4, #ARGV do
  local spec, word = string.sub(ARGV[g], 1, 1), string.sub(ARGV[g], 2)
  local terms = {word}
  if spec == '*' then
    terms = redis.call('ZRANGEBYLEX', KEYS[3], '[' .. word, '(' .. word .. '\255',
      'LIMIT', 0, expand)
  end
  local left = budget
  for _, term in ipairs(terms) do
    if left <= 0 then break end
    local e = redis.call('HGET', KEYS[1], term)
    local d = redis.call('HGET', KEYS[2], term)
    local df = 0
    if e then df = df + struct.unpack('>I4', e) end
    if d then df = df + #d / 5 end
    local idf = math.log(1 + total / math.max(df, 1))
    if d then
      for i = 1, #d - 4, 5 do
        if left <= 0 then break end
        local n, w = struct.unpack('>I4B', d, i)
        hit('d' .. n, g, w, idf, 0)
        left = left - 1
      end
    end
    if e then
      for i = #e - 10, 5, -11 do
        if left <= 0 then break end
        local ms, seq, w = struct.unpack('>I6I4B', e, i)
        hit(string.format('%.0f', ms) .. '-' .. seq, g, w, idf, ms * 1000 + seq)
        left = left - 1
      end
    end
  end
end
-- The best `want`, kept in order as the candidates go by (no sort of them all).
local function better(a, b)
  if a.g ~= b.g then return a.g > b.g end
  if a.s ~= b.s then return a.s > b.s end
  return a.r > b.r
end
local best = {}
for _, f in ipairs(list) do
  if #best < want or better(f, best[#best]) then
    local lo, hi = 1, #best
    while lo <= hi do
      local mid = math.floor((lo + hi) / 2)
      if better(f, best[mid]) then hi = mid - 1 else lo = mid + 1 end
    end
    table.insert(best, lo, f)
    if #best > want then best[#best] = nil end
  end
end
list = best
local cut = search_cut
local out = {total, 0}
local field = SEARCH_FIELD_BYTES
for _, f in ipairs(list) do
  if out[2] >= want then break end
  local kind, id, titles, bodies
  if string.sub(f.key, 1, 1) == 'd' then
    local doc = redis.call('HGET', KEYS[2], '$' .. string.sub(f.key, 2))
    if doc then
      id = string.sub(doc, 3)
      if string.sub(doc, 1, 1) == 't' then
        local raw = redis.call('HGET', KEYS[5], id)
        if raw then kind, titles, bodies = 'task', search_task_parts(raw) end
      else
        local raw = redis.call('HGET', KEYS[6], id)
        if raw then
          kind = 'context'
          titles, bodies = search_context_parts(raw, redis.call('HGET', KEYS[7], id) or '')
        end
      end
    end
  else
    local e = redis.call('XRANGE', KEYS[4], f.key, f.key)[1]
    if e then kind, id, titles, bodies = 'event', f.key, search_event_parts(e[2]) end
  end
  local title, body = '', ''
  if kind then
    for i, t in ipairs(titles) do titles[i] = cut(t, field) end
    for i, b in ipairs(bodies) do bodies[i] = cut(b, field) end
    title, body = table.concat(titles, '\n'), table.concat(bodies, '\n')
  end
  if kind then
    out[2] = out[2] + 1
    for _, v in ipairs({kind, id, string.format('%.4f', f.s), f.g, title, body}) do
      out[#out + 1] = v
    end
  end
end
return out
"""
)


# --- Leases (rooms/paths.py says what a path and a glob are) -----------------------------


# KEYS[1] leases, KEYS[2] lease_expiry, KEYS[3] meta, KEYS[4] events, KEYS[5] reads,
# KEYS[6] tasks
# ARGV[1] agent, ARGV[2] path (normalised), ARGV[3] mode, ARGV[4] ttl ms, ARGV[5] task id
# or "", ARGV[6] reason or "", ARGV[7] now ms, ARGV[8] room ttl ms, ARGV[9] event cap,
# ARGV[10] event bytes cap, ARGV[11] wake channel, ARGV[12] new lease id, ARGV[13] most
# leases, ARGV[14] the lease generation the service decided on, ARGV[15] the conflicts it
# found (JSON; [] none), ARGV[16] the agent's own live lease of that path and mode, or ""
# -> {1, lease JSON, event id} granted; {2, lease JSON} the agent's own lease of that path,
#    renewed; {0, conflicts JSON} refused; {-1, leases} at the quota; {-3} unknown task;
#    {-9} a lease was granted since the service's view (nothing written: decide again)
# An exclusive lease conflicts with every other agent's lease on an overlapping path; a
# shared one only with exclusive ones (rooms.leases decides, on a view of one generation).
# The grant is taken only on that generation: of agents claiming overlapping paths at
# once, one is granted and the others, deciding again, see its lease.
LEASE_CLAIM_SCRIPT = (
    _PRELUDE
    + _LEASES
    + r"""
local agent, path, mode = ARGV[1], ARGV[2], ARGV[3]
local now = tonumber(ARGV[7])
if ARGV[5] ~= '' and redis.call('HEXISTS', KEYS[6], ARGV[5]) == 0 then return {-3} end
if ARGV[15] ~= '[]' then return {0, ARGV[15]} end
if lease_generation(KEYS[3]) ~= ARGV[14] then return {-9} end
local used = lease_sweep(KEYS[1], KEYS[2], now)
local found = ARGV[16] ~= '' and redis.call('HGET', KEYS[1], ARGV[16])
if found then
  local own = cjson.decode(found)
  own.expires_ms = now + tonumber(ARGV[4])
  if ARGV[5] ~= '' then own.task_id = ARGV[5] end
  if ARGV[6] ~= '' then own.reason = ARGV[6] end
  local out = lease_store(KEYS[1], KEYS[2], own)
  touch(ARGV[8], 1, 2)
  return {2, out}
end
if used >= tonumber(ARGV[13]) then return {-1, used} end
local lease = {id = ARGV[12], path = path, mode = mode, holder = agent,
  expires_ms = now + tonumber(ARGV[4]), created_ms = now}
if ARGV[5] ~= '' then lease.task_id = ARGV[5] end
if ARGV[6] ~= '' then lease.reason = ARGV[6] end
local out = lease_store(KEYS[1], KEYS[2], lease)
redis.call('HINCRBY', KEYS[3], 'lease_gen', 1)
local eid = append(KEYS[4], KEYS[3], KEYS[5], ARGV[9], ARGV[10], ARGV[11],
  {'type', 'lease_granted', 'from', agent, 'to', 'all', 'payload', out})
touch(ARGV[8], 1, 5)
return {1, out, eid}
"""
)

# KEYS[1] leases, KEYS[2] lease_expiry, KEYS[3] meta, KEYS[4] events, KEYS[5] reads
# ARGV[1] agent, ARGV[2] lease id or "", ARGV[3] path or "", ARGV[4] "renew" or "release",
# ARGV[5] ttl ms (renew), ARGV[6] now ms, ARGV[7] room ttl ms, ARGV[8] event cap, ARGV[9]
# event bytes cap, ARGV[10] wake channel
# -> {1, lease JSON, event id ("" for a renewal)}; {0} no such live lease; {-2, lease JSON}
#    another agent holds it
LEASE_CHANGE_SCRIPT = (
    _PRELUDE
    + _LEASES
    + r"""
local agent, now = ARGV[1], tonumber(ARGV[6])
local live = lease_live(KEYS[1], KEYS[2], now)
local lease = lease_find(live, agent, ARGV[2], ARGV[3])
if not lease then return {0} end
if lease.holder ~= agent then return {-2, cjson.encode(lease)} end
if ARGV[4] == 'renew' then
  lease.expires_ms = now + tonumber(ARGV[5])
  local out = lease_store(KEYS[1], KEYS[2], lease)
  touch(ARGV[7], 1, 2)
  return {1, out, ''}
end
redis.call('HDEL', KEYS[1], lease.id)
redis.call('ZREM', KEYS[2], lease.id)
local out = cjson.encode(lease)
local eid = append(KEYS[4], KEYS[3], KEYS[5], ARGV[8], ARGV[9], ARGV[10],
  {'type', 'lease_released', 'from', agent, 'to', 'all', 'payload', out})
touch(ARGV[7], 1, 5)
return {1, out, eid}
"""
)

# KEYS[1] leases, KEYS[2] meta
# -> {the lease generation, every lease's JSON (some may be past their expiry)}: the view
#    the services match paths on (rooms/paths.py), in the web process, never here
LEASES_VIEW_SCRIPT = r"""
return {redis.call('HGET', KEYS[2], 'lease_gen') or '0', redis.call('HVALS', KEYS[1])}
"""


# KEYS[1] file_reads
# ARGV[1] "<agent>\n<path>", ARGV[2] {sha256, at_ms} JSON, ARGV[3] most noted reads, ARGV[4]
# room ttl ms
# -> {1} noted; {-1, reads noted} at the quota (a new agent and path; a known one is updated)
NOTE_READ_SCRIPT = r"""
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  local count = redis.call('HLEN', KEYS[1])
  if count >= tonumber(ARGV[3]) then return {-1, count} end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {1}
"""

# KEYS[1] file_reads, KEYS[2] leases
# ARGV[1] "<agent>\n<path>"
# -> {the agent's noted read of the path (JSON) or "", every lease's JSON}: the service
#    finds the one overlapping the path (rooms.leases.drift_check)
DRIFT_SCRIPT = r"""
return {redis.call('HGET', KEYS[1], ARGV[1]) or '', redis.call('HVALS', KEYS[2])}
"""


# KEYS[1] ctx_readers
# ARGV[1] the reading agent ("": record nothing), ARGV[2] now ms, ARGV[3] most readers kept
# per entry (the oldest reads go), ARGV[4] room ttl ms, then per entry: id, version read
# -> per entry, its readers JSON [{a, v, at}] after this read
CONTEXT_READERS_SCRIPT = r"""
local out = {}
for i = 5, #ARGV - 1, 2 do
  local id, version = ARGV[i], ARGV[i + 1]
  local readers = cjson.decode(redis.call('HGET', KEYS[1], id) or '[]')
  if ARGV[1] ~= '' then
    local kept = {}
    for _, r in ipairs(readers) do
      if r.a ~= ARGV[1] then kept[#kept + 1] = r end
    end
    kept[#kept + 1] = {a = ARGV[1], v = version, at = tonumber(ARGV[2])}
    while #kept > tonumber(ARGV[3]) do table.remove(kept, 1) end
    readers = kept
    redis.call('HSET', KEYS[1], id, cjson.encode(readers))
  end
  out[#out + 1] = cjson.encode(readers)
end
if ARGV[1] ~= '' and #out > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
return out
"""


# --- Messages (rooms/messages.py) --------------------------------------------------------

# One delivery per recipient: a member of `inbox` (and of the sender's `outbox`) names the
# agent, the message's stream position and its id; `deliveries` holds its state under the
# same member. The agent's length leads, so one agent's range never holds another's.
_MESSAGES = r"""
local function msg_pad(n, width) return string.rep('0', width - #n) .. n end
local function msg_prefix(agent) return string.format('%03d:', #agent) .. agent .. '\n' end
local function msg_member(agent, eid, mid)
  local ms, seq = string.match(eid, '^(%d+)-(%d+)$')
  return msg_prefix(agent) .. msg_pad(ms, 15) .. '-' .. msg_pad(seq, 8) .. ' ' .. mid
end
local function msg_range(key, agent, limit, newest)
  local p = msg_prefix(agent)
  if newest then
    return redis.call('ZREVRANGEBYLEX', key, '(' .. p .. '\255', '[' .. p, 'LIMIT', 0, limit)
  end
  return redis.call('ZRANGEBYLEX', key, '[' .. p, '(' .. p .. '\255', 'LIMIT', 0, limit)
end
-- A delivery's state as of now: a stored or read one past its expiry is expired.
local function msg_state(value, now)
  local state, at, expires = string.match(value, '^(%a+) (%d+) (%d+)$')
  if state ~= 'acked' and tonumber(expires) > 0 and now >= tonumber(expires) then
    return 'expired', tonumber(expires), tonumber(expires)
  end
  return state, tonumber(at), tonumber(expires)
end
local function msg_stats(stats, agent)
  local ever, read, last = string.match(redis.call('HGET', stats, agent) or '0 0 0',
    '^(%d+) (%d+) (%d+)$')
  return tonumber(ever), tonumber(read), last
end
local function msg_stats_read(stats, agent)
  local ever, read, last = msg_stats(stats, agent)
  redis.call('HSET', stats, agent, ever .. ' ' .. (read + 1) .. ' ' .. last)
end
-- Forget the oldest message with its deliveries; returns the bytes and deliveries freed.
local function msg_drop_oldest(keys, meta)
  local oldest = redis.call('ZPOPMIN', keys.order)
  if #oldest == 0 then return 0, 0 end
  local raw = redis.call('HGET', keys.messages, oldest[1])
  if not raw then return 0, 0 end
  local m = cjson.decode(raw)
  for _, agent in ipairs(m.rcpt) do
    local member = msg_member(agent, m.eid, m.messageId)
    redis.call('HDEL', keys.deliveries, member)
    redis.call('ZREM', keys.inbox, member)
  end
  redis.call('ZREM', keys.outbox, msg_member(m.from, m.eid, m.messageId))
  redis.call('HDEL', keys.messages, oldest[1])
  redis.call('HINCRBY', meta, 'deliveries', -#m.rcpt)
  redis.call('HINCRBY', meta, 'message_bytes', -#raw)
  return #raw, #m.rcpt
end
"""

# KEYS[1] messages, KEYS[2] message_order, KEYS[3] deliveries, KEYS[4] inbox, KEYS[5] outbox,
# KEYS[6] message_stats, KEYS[7] presence, KEYS[8] cursors, KEYS[9] agent_tags,
# KEYS[10] leases, KEYS[11] lease_expiry, KEYS[12] meta, KEYS[13] events, KEYS[14] reads
# ARGV[1] sender, ARGV[2] selector kind (all / agent / file / tag), ARGV[3] its value (the
# agent, the normalised glob, the tag), ARGV[4] `to` as given, ARGV[5] message id,
# ARGV[6] the message JSON the service built (messageId, from, to, subject, body, replyTo,
# at, ackRequired, expiresAt, expires_ms), ARGV[7] reply-to message id or "", ARGV[8] expiry
# ms or "0", ARGV[9] now ms, ARGV[10] room ttl ms, ARGV[11] event cap, ARGV[12] event bytes
# cap, ARGV[13] wake channel, ARGV[14] most messages kept, ARGV[15] most deliveries kept,
# ARGV[16] most message bytes kept, ARGV[17] how many agents an unknown-agent hint samples,
# ARGV[18] most agents whose delivery counts are kept (message_stats), ARGV[19] (file:) the
# lease generation the service decided on, ARGV[20] (file:) the holders it found, JSON
# [[agent, lease id], ...] (rooms.messages matches the glob, never this script)
# -> {1, message JSON as stored (with rcpt, eid), event id}; {-3} unknown replyTo;
#    {-4, {agent, ...}} the agentId is nobody the room has seen (a sample of who it has);
#    {-9} (file:) a lease was granted since the service's view: nothing written
# Who a selector reaches is decided in the same step as the deliveries are written, so a
# lease taken or a heartbeat's tags changed at the same moment is either in or out, whole.
SEND_MESSAGE_SCRIPT = (
    _PRELUDE
    + _LEASES
    + _MESSAGES
    + r"""
local sender, kind, value = ARGV[1], ARGV[2], ARGV[3]
local now = tonumber(ARGV[9])
if ARGV[7] ~= '' and redis.call('HEXISTS', KEYS[1], ARGV[7]) == 0 then return {-3} end
local rcpt, seen = {}, {}
local function reach(agent)
  if agent ~= sender and not seen[agent] then
    seen[agent] = true
    rcpt[#rcpt + 1] = agent
  end
end
if kind == 'agent' then
  if value ~= sender and not redis.call('ZSCORE', KEYS[7], value)
      and redis.call('HEXISTS', KEYS[8], value) == 0 then
    local sample = redis.call('ZREVRANGE', KEYS[7], 0, tonumber(ARGV[17]) - 1)
    if #sample == 0 then
      sample = redis.call('HSCAN', KEYS[8], 0, 'COUNT', tonumber(ARGV[17]))[2]
      local names = {}
      for i = 1, #sample, 2 do names[#names + 1] = sample[i] end
      sample = names
    end
    return {-4, sample}
  end
  seen[value] = true
  rcpt[1] = value
elseif kind == 'all' then
  for _, agent in ipairs(redis.call('ZRANGE', KEYS[7], 0, -1)) do reach(agent) end
elseif kind == 'tag' then
  local tagged = redis.call('HGETALL', KEYS[9])
  for i = 1, #tagged, 2 do
    for _, t in ipairs(cjson.decode(tagged[i + 1])) do
      if t == value then reach(tagged[i]) break end
    end
  end
elseif kind == 'file' then
  if lease_generation(KEYS[12]) ~= ARGV[19] then return {-9} end
  for _, held in ipairs(cjson.decode(ARGV[20])) do
    local raw = redis.call('HGET', KEYS[10], held[2])
    if raw and tonumber(cjson.decode(raw).expires_ms) > now then reach(held[1]) end
  end
end
local rcpt_json = '[]'
if #rcpt > 0 then rcpt_json = cjson.encode(rcpt) end
local eid = append(KEYS[13], KEYS[12], KEYS[14], ARGV[11], ARGV[12], ARGV[13],
  {'type', 'message', 'from', sender, 'to', ARGV[4], 'payload', ARGV[6], 'rcpt', rcpt_json})
local mid = ARGV[5]
local raw = string.sub(ARGV[6], 1, -2) .. ',"rcpt":' .. rcpt_json .. ',"eid":"' .. eid .. '"}'
redis.call('HSET', KEYS[1], mid, raw)
redis.call('ZADD', KEYS[2], id_score(eid), mid)
redis.call('ZADD', KEYS[5], 0, msg_member(sender, eid, mid))
for _, agent in ipairs(rcpt) do
  local member = msg_member(agent, eid, mid)
  redis.call('HSET', KEYS[3], member, 'stored ' .. now .. ' ' .. ARGV[8])
  redis.call('ZADD', KEYS[4], 0, member)
  if redis.call('HEXISTS', KEYS[6], agent) == 0
      and redis.call('HLEN', KEYS[6]) >= tonumber(ARGV[18]) then
    -- Bounded however many names a tenant invents: some forgotten agent's counts go.
    redis.call('HDEL', KEYS[6], redis.call('HRANDFIELD', KEYS[6]))
  end
  local ever, read = msg_stats(KEYS[6], agent)
  redis.call('HSET', KEYS[6], agent, (ever + 1) .. ' ' .. read .. ' ' .. now)
end
local kept = {messages = KEYS[1], order = KEYS[2], deliveries = KEYS[3], inbox = KEYS[4],
  outbox = KEYS[5]}
local bytes = tonumber(redis.call('HINCRBY', KEYS[12], 'message_bytes', #raw))
local held = tonumber(redis.call('HINCRBY', KEYS[12], 'deliveries', #rcpt))
local function over()
  return redis.call('ZCARD', KEYS[2]) > tonumber(ARGV[14]) or held > tonumber(ARGV[15])
    or bytes > tonumber(ARGV[16])
end
-- The oldest go first, never the one just written.
while redis.call('ZCARD', KEYS[2]) > 1 and over() do
  local freed, dropped = msg_drop_oldest(kept, KEYS[12])
  bytes, held = bytes - freed, held - dropped
end
touch(ARGV[10], 1, 6)
touch(ARGV[10], 12, 14)
return {1, raw, eid}
"""
)

# KEYS[1] messages, KEYS[2] deliveries, KEYS[3] inbox, KEYS[4] message_stats
# ARGV[1] agent, ARGV[2] limit, ARGV[3] "1" unread only, ARGV[4] now ms, ARGV[5] room ttl ms,
# ARGV[6] "1" mark what is returned read ("0" for a read-only caller, who only looks)
# -> {{deliveries ever, read ever, last delivery ms, still unread after this call},
#     {message JSON, state, since ms}, ...}: oldest first; the unread ones returned are
#    read from now on. Without unread only, the agent's newest `limit`, oldest first.
INBOX_SCRIPT = (
    _MESSAGES
    + r"""
local agent, limit, now = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[4])
local members
if ARGV[3] == '1' then
  members = msg_range(KEYS[3], agent, -1, false)
else
  members = msg_range(KEYS[3], agent, limit, true)
  local n = #members
  for i = 1, math.floor(n / 2) do
    members[i], members[n - i + 1] = members[n - i + 1], members[i]
  end
end
local out, unread, marked = {}, 0, 0
for _, member in ipairs(members) do
  local value = redis.call('HGET', KEYS[2], member)
  if value then
    local state, at, expires = msg_state(value, now)
    local take = #out < limit and (ARGV[3] ~= '1' or state == 'stored')
    if state == 'stored' and not take then unread = unread + 1 end
    if take then
      local mid = string.match(member, ' (.*)$')
      local raw = redis.call('HGET', KEYS[1], mid)
      if raw then
        if state == 'stored' and ARGV[6] == '1' then
          redis.call('HSET', KEYS[2], member, 'read ' .. now .. ' ' .. expires)
          msg_stats_read(KEYS[4], agent)
          marked = marked + 1
          state, at = 'read', now
        end
        out[#out + 1] = {raw, state, at}
      end
    end
  end
end
if marked > 0 then
  for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], ARGV[5]) end
end
local ever, read, last = msg_stats(KEYS[4], agent)
local result = {{ever, read, last, unread}}
for _, m in ipairs(out) do result[#result + 1] = m end
return result
"""
)

# KEYS[1] messages, KEYS[2] deliveries, KEYS[3] message_stats, KEYS[4] meta, KEYS[5] events,
# KEYS[6] reads
# ARGV[1] agent, ARGV[2] message id, ARGV[3] now ms, ARGV[4] room ttl ms, ARGV[5] event cap,
# ARGV[6] event bytes cap, ARGV[7] wake channel
# -> {1, message JSON, acked at ms, event id ("" when it was acked already)};
#    {0} no such kept message; {-2, message JSON} the agent is not a recipient;
#    {-5, message JSON, expiry ms} it expired unacked
ACK_MESSAGE_SCRIPT = (
    _PRELUDE
    + _MESSAGES
    + r"""
local agent, now = ARGV[1], tonumber(ARGV[3])
local raw = redis.call('HGET', KEYS[1], ARGV[2])
if not raw then return {0} end
local m = cjson.decode(raw)
local member = msg_member(agent, m.eid, m.messageId)
local value = redis.call('HGET', KEYS[2], member)
if not value then return {-2, raw} end
local state, at, expires = msg_state(value, now)
if state == 'acked' then return {1, raw, at, ''} end
if state == 'expired' then return {-5, raw, expires} end
if state == 'stored' then msg_stats_read(KEYS[3], agent) end
redis.call('HSET', KEYS[2], member, 'acked ' .. now .. ' ' .. expires)
local eid = append(KEYS[5], KEYS[4], KEYS[6], ARGV[5], ARGV[6], ARGV[7],
  {'type', 'message_acked', 'from', agent, 'to', m.from, 'payload',
   cjson.encode({messageId = m.messageId})})
touch(ARGV[4], 1, 6)
return {1, raw, now, eid}
"""
)

# KEYS[1] messages, KEYS[2] deliveries, KEYS[3] outbox, KEYS[4] message_order
# ARGV[1] sender ("": the room's, anyone's), ARGV[2] limit
# -> {{message JSON, {delivery value, ...} in the order of its rcpt}, ...} newest first
SENT_MESSAGES_SCRIPT = (
    _MESSAGES
    + r"""
local ids = {}
if ARGV[1] == '' then
  ids = redis.call('ZREVRANGE', KEYS[4], 0, tonumber(ARGV[2]) - 1)
else
  for i, member in ipairs(msg_range(KEYS[3], ARGV[1], tonumber(ARGV[2]), true)) do
    ids[i] = string.match(member, ' (.*)$')
  end
end
local out = {}
for _, mid in ipairs(ids) do
  local raw = redis.call('HGET', KEYS[1], mid)
  if raw then
    local m = cjson.decode(raw)
    local states = {}
    for i, agent in ipairs(m.rcpt) do
      states[i] = redis.call('HGET', KEYS[2], msg_member(agent, m.eid, m.messageId)) or ''
    end
    out[#out + 1] = {raw, states}
  end
end
return out
"""
)


# --- Handoffs (rooms/handoffs.py) ---------------------------------------------------------

# KEYS[1..8] the task keys (tasks, meta, events, reads, claims, claim_holders, leases,
# lease_expiry), KEYS[9] handoffs, KEYS[10] handoff_order, KEYS[11] presence, KEYS[12]
# cursors, KEYS[13] ctx
# ARGV[1] task id, ARGV[2] from, ARGV[3] to, ARGV[4] the handoff JSON, ARGV[5] its id,
# ARGV[6] context ids JSON, ARGV[7] now ms, ARGV[8] now (ISO), ARGV[9] ttl ms, ARGV[10..12]
# event cap, event bytes cap, wake channel, ARGV[13] most handoffs kept, ARGV[14] how many
# agents an unknown-agent hint samples
# -> {0} unknown task; {-1, task JSON} done; {-2, task JSON} `from` is not its owner;
#    {-3, task JSON, handoff JSON} one is offered already; {-4, {agent, ...}} `to` is nobody
#    the room has seen; {-5, context id} unknown context entry; {-6, handoffs} at the quota
#    (every kept one pending); {1, handoff JSON, event id}
# The owner does not change yet: only the receiver's accept moves it.
HANDOFF_OFFER_SCRIPT = (
    _PRELUDE
    + _TASKS
    + r"""
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {0} end
local task = cjson.decode(raw)
if task.status == 'done' then return {-1, raw} end
if owner_of(task) ~= ARGV[2] then return {-2, raw} end
if type(task.handoff) == 'table' then
  local open = redis.call('HGET', KEYS[9], task.handoff.id)
  if open and cjson.decode(open).status == 'offered' then return {-3, raw, open} end
end
local to = ARGV[3]
if not redis.call('ZSCORE', KEYS[11], to) and redis.call('HEXISTS', KEYS[12], to) == 0 then
  return {-4, redis.call('ZREVRANGE', KEYS[11], 0, tonumber(ARGV[14]) - 1)}
end
for _, cid in ipairs(cjson.decode(ARGV[6])) do
  if redis.call('HEXISTS', KEYS[13], cid) == 0 then return {-5, cid} end
end
-- Past the quota the oldest resolved handoffs go; pending ones are never dropped.
local count = redis.call('HLEN', KEYS[9])
if count >= tonumber(ARGV[13]) then
  for _, hid in ipairs(redis.call('ZRANGE', KEYS[10], 0, 63)) do
    local h = redis.call('HGET', KEYS[9], hid)
    if not h or cjson.decode(h).status ~= 'offered' then
      redis.call('HDEL', KEYS[9], hid)
      redis.call('ZREM', KEYS[10], hid)
      count = count - 1
      if count < tonumber(ARGV[13]) then break end
    end
  end
  if count >= tonumber(ARGV[13]) then return {-6, count} end
end
redis.call('HSET', KEYS[9], ARGV[5], ARGV[4])
redis.call('ZADD', KEYS[10], ARGV[7], ARGV[5])
task.handoff = {id = ARGV[5], to = to, at = ARGV[8]}
task.version = version_of(task) + 1
task.updated_at = ARGV[8]
local out = task_encode(task)
redis.call('HSET', KEYS[1], ARGV[1], out)
local eid = append(KEYS[3], KEYS[2], KEYS[4], ARGV[10], ARGV[11], ARGV[12],
  {'type', 'handoff_offered', 'from', ARGV[2], 'to', to, 'payload', ARGV[4]})
touch(ARGV[9], 1, 4)
touch(ARGV[9], 9, 10)
return {1, ARGV[4], eid}
"""
)

# KEYS[1..8] the task keys, KEYS[9] handoffs
# ARGV[1] handoff id, ARGV[2] agent, ARGV[3] "accepted" or "declined", ARGV[4] note or "",
# ARGV[5] now ms, ARGV[6] now (ISO), ARGV[7] ttl ms, ARGV[8..10] event cap, event bytes cap,
# wake channel
# -> {0} unknown handoff; {-2, handoff JSON} the agent is not its receiver; {-3, handoff
#    JSON} resolved already; {-4, handoff JSON, task JSON or ""} the task is gone, done or
#    changed hands since the offer (the handoff is void, and says so);
#    {1, handoff JSON, task JSON, event id}
# Accepting moves the task to the receiver in this one step: its owner, its claim's lease
# (renewed for the receiver) and its file leases. Of an accept and a decline at once,
# exactly one lands.
HANDOFF_RESOLVE_SCRIPT = (
    _PRELUDE
    + _TASKS
    + r"""
local hraw = redis.call('HGET', KEYS[9], ARGV[1])
if not hraw then return {0} end
local h = cjson.decode(hraw)
if h.to ~= ARGV[2] then return {-2, hraw} end
if h.status ~= 'offered' then return {-3, hraw} end
local raw = redis.call('HGET', KEYS[1], h.taskId)
local task = raw and cjson.decode(raw)
local void = not task or task.status == 'done' or owner_of(task) ~= h.from
  or type(task.handoff) ~= 'table' or task.handoff.id ~= h.id
h.resolvedAt, h.resolvedBy = ARGV[6], ARGV[2]
if ARGV[4] ~= '' then h.resolutionNote = ARGV[4] end
if void then
  h.status = 'void'
  redis.call('HSET', KEYS[9], ARGV[1], fix_arrays(cjson.encode(h), {'contextIds'}))
  return {-4, fix_arrays(cjson.encode(h), {'contextIds'}), raw or ''}
end
h.status = ARGV[3]
task.handoff = nil
if ARGV[3] == 'accepted' then
  task.owner = ARGV[2]
  if task.status ~= 'blocked' then task.status = 'in_progress' end
  local holder = redis.call('HGET', KEYS[6], task.id)
  if holder then
    local lease_ms = string.match(holder, '^(%d+) ')
    redis.call('HSET', KEYS[6], task.id, lease_ms .. ' ' .. ARGV[2])
    lease_renew(KEYS[5], task, lease_ms, ARGV[5])
  end
  for _, lraw in ipairs(redis.call('HVALS', KEYS[7])) do
    local l = cjson.decode(lraw)
    if l.task_id == task.id and l.holder == h.from then
      l.holder = ARGV[2]
      redis.call('HSET', KEYS[7], l.id, cjson.encode(l))
    end
  end
end
task.version = version_of(task) + 1
task.updated_at = ARGV[6]
local out = task_encode(task)
redis.call('HSET', KEYS[1], task.id, out)
local hout = fix_arrays(cjson.encode(h), {'contextIds'})
redis.call('HSET', KEYS[9], ARGV[1], hout)
local eid = append(KEYS[3], KEYS[2], KEYS[4], ARGV[8], ARGV[9], ARGV[10],
  {'type', 'handoff_' .. ARGV[3], 'from', ARGV[2], 'to', h.from, 'payload',
   fix_arrays(cjson.encode({handoff = h, task = task_summary(task)}), {'contextIds'})})
touch(ARGV[7], 1, 9)
return {1, hout, out, eid}
"""
)


# --- Lifecycle (rooms/lifecycle.py) ------------------------------------------------------

# KEYS[1] meta, KEYS[2] events, KEYS[3] reads
# ARGV[1] status, ARGV[2] by, ARGV[3] ttl ms, ARGV[4..6] event cap, event bytes cap, wake
# channel
# -> {previous status, event id ("" when it was the status already)}
SET_ROOM_STATUS_SCRIPT = (
    _PRELUDE
    + r"""
local previous = redis.call('HGET', KEYS[1], 'status') or 'active'
if previous == ARGV[1] then return {previous, ''} end
redis.call('HSET', KEYS[1], 'status', ARGV[1])
local eid = append(KEYS[2], KEYS[1], KEYS[3], ARGV[4], ARGV[5], ARGV[6],
  {'type', 'room_status_changed', 'from', ARGV[2], 'to', 'all', 'payload',
   cjson.encode({status = ARGV[1], previousStatus = previous})})
touch(ARGV[3], 1, 3)
return {previous, eid}
"""
)


# KEYS[1] meta, KEYS[2] events, KEYS[3] reads
# ARGV[1] status, ARGV[2] previous status, ARGV[3] by, ARGV[4] ttl ms, ARGV[5..7] event args
# -> the room_status_changed event id
# An archive (after the freeze, so the archive holds it) and a restore (after the load) say
# so in the log, as set_room_status does.
STATUS_EVENT_SCRIPT = (
    _PRELUDE
    + r"""
local eid = append(KEYS[2], KEYS[1], KEYS[3], ARGV[5], ARGV[6], ARGV[7],
  {'type', 'room_status_changed', 'from', ARGV[3], 'to', 'all', 'payload',
   cjson.encode({status = ARGV[1], previousStatus = ARGV[2]})})
touch(ARGV[4], 1, 3)
return eid
"""
)


# --- Archives (rooms/snapshots.py; tenants/archives.py moves rooms to and from Postgres) ---

# Wraps every write step (store._run_write), outermost: a write that passed the access
# check just before its room was frozen for archiving, archived, or deleted changes nothing
# (a write after the snapshot would be lost with the room's keys). The room's owner and
# meta keys are found by name from the search keys every write step declares.
GUARD_WRAP = r"""
local function __guarded()
__WRITE__
end
local __base
for __i = #KEYS, 1, -1 do
  if string.sub(KEYS[__i], -13) == ':search_vocab' then
    __base = string.sub(KEYS[__i], 1, -13)
    break
  end
end
if __base then
  if redis.call('EXISTS', __base .. 'owner') == 0 then return {'__room', 'gone'} end
  local __status = redis.call('HGET', __base .. 'meta', 'status')
  if __status == 'archiving' or __status == 'archived' then return {'__room', __status} end
end
return __guarded()
"""


def guarded(source: str) -> str:
    """`source` (a write step, keyed or not) refused on a room that is no longer live."""
    return GUARD_WRAP.replace("__WRITE__", source)


# KEYS[1] owner, KEYS[2] meta
# -> the room's status before, now 'archiving' (no more writes land: GUARD_WRAP); false when
#    Redis holds no room (nothing to freeze: its keys expired, or it was never written)
FREEZE_ROOM_SCRIPT = r"""
if redis.call('EXISTS', KEYS[1]) == 0 then
  -- No room here: a first touch racing this archive must not make one (OWNER_CACHE_SCRIPT
  -- refuses while this mark lives; the archive's forget leaves a tombstone in its place).
  redis.call('HSET', KEYS[2], 'status', 'archiving')
  redis.call('PEXPIRE', KEYS[2], ARGV[1])
  return false
end
local before = redis.call('HGET', KEYS[2], 'status') or 'active'
if before ~= 'archiving' then
  redis.call('HSET', KEYS[2], 'status', 'archiving', 'status_before_archive', before)
end
return redis.call('HGET', KEYS[2], 'status_before_archive') or before
"""

# KEYS[1] owner, KEYS[2] meta; ARGV[1] team id, ARGV[2] ttl ms, ARGV[3] the room's status as
# the database records it
# -> 1 the owner is recorded; 0 the room is being archived or was archived (a tombstone):
#    nothing is made
# The owner the database settled on, cached; a room whose keys Redis lost gets back the
# status the database records (a paused room stays paused).
OWNER_CACHE_SCRIPT = r"""
local status = redis.call('HGET', KEYS[2], 'status')
if status == 'archiving' or status == 'archived' then
  if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if ARGV[3] ~= '' and ARGV[3] ~= 'active' and ARGV[3] ~= 'archived' then
  redis.call('HSETNX', KEYS[2], 'status', ARGV[3])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
return 1
"""

# KEYS[1] meta; ARGV[1] the status to go back to
# An archive that could not be recorded: the room is live again, as it was.
THAW_ROOM_SCRIPT = r"""
if redis.call('HGET', KEYS[1], 'status') == 'archiving' then
  redis.call('HSET', KEYS[1], 'status', ARGV[1])
  redis.call('HDEL', KEYS[1], 'status_before_archive')
end
return 1
"""

# KEYS: the room's snapshot keys (RoomKeys.snapshot_parts), then as many staging keys
# ARGV[1] how many parts, ARGV[2] the staging keys' ttl ms
# -> per key that exists: {its index, type, expire-at ms by Redis's clock (-1: none), and
#    for a stream: last-generated id, entries added, max deleted id}
# One moment of the room, copied in one short step (COPY is a copy in memory: about 10 ms
# for a room of 100,000 events, where reading it out in the step would hold Redis for half
# a second); the copies are then read at leisure, in chunks (store.room_snapshot).
COPY_ROOM_SCRIPT = r"""
local n, keep = tonumber(ARGV[1]), tonumber(ARGV[2])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local out = {}
for i = 1, n do
  local k, staged = KEYS[i], KEYS[n + i]
  local t = redis.call('TYPE', k)['ok']
  if t ~= 'none' then
    redis.call('COPY', k, staged, 'REPLACE')
    redis.call('PEXPIRE', staged, keep)
    local left = redis.call('PTTL', k)
    local at = -1
    if left >= 0 then at = now + left end
    local row = {i, t, at}
    if t == 'stream' then
      local info = redis.call('XINFO', 'STREAM', k)
      local last, added, deleted = '0-0', '0', '0-0'
      for j = 1, #info, 2 do
        if info[j] == 'last-generated-id' then last = info[j + 1]
        elseif info[j] == 'entries-added' then added = tostring(info[j + 1])
        elseif info[j] == 'max-deleted-entry-id' then deleted = info[j + 1] end
      end
      row = {i, t, at, last, added, deleted}
    end
    table.insert(out, row)
  end
end
return out
"""

# KEYS[1] a staged list or sorted set; ARGV[1] its type, ARGV[2], ARGV[3] the range
# -> its members in that range (a sorted set's with their scores, as Redis writes them)
RANGE_CHUNK_SCRIPT = r"""
if ARGV[1] == 'zset' then return redis.call('ZRANGE', KEYS[1], ARGV[2], ARGV[3], 'WITHSCORES') end
return redis.call('LRANGE', KEYS[1], ARGV[2], ARGV[3])
"""

# KEYS[1] owner, KEYS[2] meta, KEYS[3 .. 2 + n] the room's snapshot keys, then as many
# staging keys (written beforehand, in chunks, by store.room_load)
# ARGV[1] owner (team id), ARGV[2] status, ARGV[3] ttl ms of every key without an expiry of
# its own, ARGV[4] now ms, ARGV[5] '1': only if Redis holds no room (a read-only view never
# replaces a room someone restored meanwhile), ARGV[6] n, then per staged key: its index,
# expire-at ms (-1: the ttl), and for a stream its last id, entries added, max deleted id
# (or '' three times)
# -> 1 loaded, 0 left alone (ARGV[5]); the staging keys are gone either way
# The room changes in this one short step (renames): nobody ever sees half a room.
LOAD_ROOM_SCRIPT = r"""
local n = tonumber(ARGV[6])
local function staged(i) return KEYS[2 + n + i] end
if ARGV[5] == '1' and redis.call('EXISTS', KEYS[1]) == 1 then
  for i = 1, n do redis.call('UNLINK', staged(i)) end
  return 0
end
for i = 1, n do redis.call('UNLINK', KEYS[2 + i]) end
local ttl, now = tonumber(ARGV[3]), tonumber(ARGV[4])
local p = 7
while p <= #ARGV do
  local i, at = tonumber(ARGV[p]), tonumber(ARGV[p + 1])
  local last, added, deleted = ARGV[p + 2], ARGV[p + 3], ARGV[p + 4]
  p = p + 5
  local k = KEYS[2 + i]
  if redis.call('EXISTS', staged(i)) == 1 then
    redis.call('RENAME', staged(i), k)
  elseif last ~= '' then
    -- A stream whose entries were all trimmed: it exists, empty, with its ids.
    redis.call('XADD', k, '0-1', 'x', 'x')
    redis.call('XDEL', k, '0-1')
  end
  if last ~= '' then
    -- Redis 7 keeps how many entries were ever added; 6.2 (the embedded one) does not.
    local set = redis.pcall('XSETID', k, last, 'ENTRIESADDED', added, 'MAXDELETEDID', deleted)
    if type(set) == 'table' and set.err then redis.call('XSETID', k, last) end
  end
  if redis.call('EXISTS', k) == 1 then
    if ARGV[2] == 'archived' or at < 0 then
      redis.call('PEXPIRE', k, ttl)
    elseif at > now then
      redis.call('PEXPIREAT', k, at)
    else
      redis.call('UNLINK', k)
    end
  end
end
for i = 1, n do redis.call('UNLINK', staged(i)) end
redis.call('HSET', KEYS[2], 'status', ARGV[2])
redis.call('HDEL', KEYS[2], 'status_before_archive')
redis.call('PEXPIRE', KEYS[2], ttl)
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
return 1
"""


# Wraps a post's write step (rooms.turns), inside the keyed wrap (a keyed retry of a post
# that landed answers as it did, whoever's turn it is now). Its three arguments come last:
# the poster, the presence cutoff ms, the agent the post addresses ("" for a selector).
# -> the step's answer; {'__turn', rule, holder, moderator or order JSON} refused
TURN_WRAP = r"""
local function __posted()
__WRITE__
end
local __tb
for __i = #KEYS, 1, -1 do
  if string.sub(KEYS[__i], -13) == ':search_vocab' then
    __tb = string.sub(KEYS[__i], 1, -13)
    break
  end
end
local __ta, __tsince, __tgrant = ARGV[#ARGV - 2], ARGV[#ARGV - 1], ARGV[#ARGV]
local __tmeta = __tb .. 'meta'
local __mode = {}
local __raw = redis.call('HGET', __tmeta, 'mode')
if __raw then __mode = cjson.decode(__raw) end
local __rule = __mode.turns or 'open'
if __rule == 'open' then return __posted() end
local __holder = redis.call('HGET', __tmeta, 'turn')
if __rule == 'moderator' then
  local __mod = __mode.moderator
  if __ta ~= __mod and __holder ~= __ta then
    return {'__turn', 'moderator', __holder or __mod, __mod}
  end
  local __res = __posted()
  if __WROTE__ then
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
for _, a in ipairs(redis.call('ZRANGEBYSCORE', __tb .. 'presence', __tsince, '+inf')) do
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
local __res = __posted()
if __WROTE__ then
  redis.call('HSET', __tmeta, 'turn', __order[(__mine % #__order) + 1])
end
return __res
"""


def turned(source: str, wrote: str) -> str:
    """`source` (a post's write step) taken only in the poster's turn (rooms.turns)."""
    return TURN_WRAP.replace("__WRITE__", source).replace("__WROTE__", wrote)


# KEYS[1] inherited; ARGV[1] ttl ms, ARGV[2] project, then field, entry JSON pairs
# A room's project memory (rooms.memory), replaced whole; "~order" keeps their order.
INHERITED_REPLACE_SCRIPT = r"""
redis.call('DEL', KEYS[1])
local order = {}
for i = 3, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  order[#order + 1] = ARGV[i]
end
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[1], '~project', ARGV[2], '~order', table.concat(order, '\n'))
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return #order
"""
