--- KEYS[1] leases, KEYS[2] meta
--- -> {the lease generation, every lease's JSON (some may be past their expiry)}: the view
---    the services match paths on (rooms/paths.py), in the web process, never here
---

return {redis.call('HGET', KEYS[2], 'lease_gen') or '0', redis.call('HVALS', KEYS[1])}
