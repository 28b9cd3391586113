--- KEYS[1] search_events, KEYS[2] search_docs, KEYS[3] search_vocab, KEYS[4] events,
--- KEYS[5] tasks, KEYS[6] ctx, KEYS[7] ctx_payloads
--- ARGV[1] hits wanted, ARGV[2] postings read per group at most, ARGV[3] terms a prefix
--- expands to at most, ARGV[4..] the query's groups: "=<word>" or "*<prefix>"
--- -> {documents in the room, hits, then per hit: kind (task/context/event), id, score,
---    groups matched, its title text, its body text}
--- A document's score is the sum, over the query's words it holds, of its weight for the word
--- times the word's rarity, log(1 + documents / documents holding it); documents holding more
--- of the query's groups come first, then the higher score, then the newer event. The cost is
--- bounded by the groups times ARGV[2], however large the room.
--- uses: prelude
---

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
