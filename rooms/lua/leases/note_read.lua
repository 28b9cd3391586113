--- KEYS[1] file_reads
--- ARGV[1] "<agent>\n<path>", ARGV[2] {sha256, at_ms} JSON, ARGV[3] most noted reads, ARGV[4]
--- room ttl ms
--- -> {'ok'} noted; {'quota', reads noted} (a new agent and path; a known one is updated)
---

if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  local count = redis.call('HLEN', KEYS[1])
  if count >= tonumber(ARGV[3]) then return {'quota', count} end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {'ok'}
