--- KEYS[1] meta, KEYS[2] presence, KEYS[3] tasks, KEYS[4] ctx, KEYS[5] events
--- -> {created_at or false, members, tasks, context entries, events}: every count O(1)
---

return {redis.call('HGET', KEYS[1], 'created_at'), redis.call('ZCARD', KEYS[2]),
  redis.call('HLEN', KEYS[3]), redis.call('HLEN', KEYS[4]), redis.call('XLEN', KEYS[5])}
