--- What the lease scripts share (after _PRELUDE). No script matches a path against a glob:
--- patterns are any tenant's input, and matching runs in the web process (rooms/paths.py),
--- on a view of the room's leases (LEASES_VIEW_SCRIPT). A write step made on that view
--- carries the view's generation (meta's `lease_gen`, counted up by every grant of a new
--- lease) and is refused, writing nothing, if a lease was granted since: the service reads
--- again and decides again. Releases and expiries only free paths, so they leave it be.
---

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
