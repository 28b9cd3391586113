--- KEYS[1] the team's import mark; ARGV[1] the token that took it
--- -> {'released'}; {'not_ours'} the mark is gone or another import's
---

if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {'not_ours'} end
redis.call('DEL', KEYS[1])
return {'released'}
