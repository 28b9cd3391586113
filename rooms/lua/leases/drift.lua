--- KEYS[1] file_reads, KEYS[2] leases
--- ARGV[1] "<agent>\n<path>"
--- -> {the agent's noted read of the path (JSON) or "", every lease's JSON}: the service
---    finds the one overlapping the path (rooms.selectors.leases.drift_check)
---

return {redis.call('HGET', KEYS[1], ARGV[1]) or '', redis.call('HVALS', KEYS[2])}
