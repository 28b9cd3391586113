--- uses: labelled
---

return labelled(redis.call('LRANGE', KEYS[1], -tonumber(ARGV[1]), -1), KEYS[2])
