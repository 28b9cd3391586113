--- Search index: the prelude's first library (append() indexes every event it writes and
--- unindexes every one it trims). A step that uses it takes the room tail in KEYS.
--- constants: SEARCH_STOPWORDS SEARCH_FIELD_BYTES SEARCH_DOC_TERMS SEARCH_EVENT_POSTINGS SEARCH_WORD_BYTES
---

-- The room's search index (rooms/search.py reads it), kept in the same step as every
-- write. Its three keys arrive in KEYS, in the room tail (search_keys below), in the room's
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
for w in string.gmatch(SEARCH_STOPWORDS, '%S+') do SEARCH_STOP[w] = true end
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
-- The index's keys: the room tail's (ROOM, rooms/lua/__init__.py).
local function search_keys()
  return ROOM.search_events, ROOM.search_docs, ROOM.search_vocab
end
local function search_expire(meta)
  local ttl = redis.call('PTTL', meta)
  if ttl > 0 then
    local ev, dv, vocab = search_keys()
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
  local ev, dv, vocab = search_keys()
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
  local ev, dv, vocab = search_keys()
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
  local ev, dv, vocab = search_keys()
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
