--- KEYS[1] a digest's cached caller, KEYS[2] its generation counter
--- ARGV[1] the caller JSON, ARGV[2] ttl ms, ARGV[3] the generation read before the lookup
--- -> {'cached'}; {'revoked'} dropped (the credential was revoked since: its generation moved)
--- Why a generation and not just a delete on revoke: a request that read the database just
--- before the revocation would otherwise put the revoked credential back into the cache.
---

local generation = tonumber(redis.call('GET', KEYS[2]) or '0')
if generation ~= tonumber(ARGV[3]) then return {'revoked'} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {'cached'}
