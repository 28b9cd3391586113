--- KEYS[1] meta, KEYS[2] events, KEYS[3] tasks, KEYS[4] task_order, KEYS[5] ctx,
--- KEYS[6] ctx_payloads, KEYS[7] ctx_created, then the room tail (rooms/lua/__init__.py)
--- ARGV[1] what to index ("events", "tasks", "context"), ARGV[2] how many at most, ARGV[3] from
--- which position (tasks, context)
--- -> {'done' or 'more' (call again from the next position), indexed, next position}
--- Rooms written before the index existed: events are indexed backwards from the floor, each
--- step moving the floor down (a posting older than a word's kept newest is only counted);
--- tasks and context entries are indexed again whole (search_doc_set replaces). Writes may
--- run between steps: nothing is indexed twice, nothing below the floor is unindexed.
--- uses: room prelude
---

local what, most, from = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local n = 0
if what == 'events' then
  local floor = redis.call('HGET', KEYS[1], 'search_floor')
  local top = '+'
  if floor then top = '(' .. floor end
  local batch = redis.call('XREVRANGE', KEYS[2], top, '-', 'COUNT', most)
  local ev, dv, vocab = search_keys()
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
  return {#batch < most and 'done' or 'more', n, 0}
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
return {#ids < most and 'done' or 'more', n, from + #ids}
