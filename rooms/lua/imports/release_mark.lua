--- KEYS[1] the team's import mark; ARGV[1] the token that took it -> 1 released, 0 not ours.
---

if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
