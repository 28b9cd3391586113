--- KEYS[1] ctx_created, KEYS[2] ctx_labels
--- ARGV[1] how many of the newest entries to sample
--- -> {id, label, id, label, ...} the sample an unknown-entry hint is computed from
--- uses: labelled
---

return labelled(redis.call('ZREVRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1), KEYS[2])
