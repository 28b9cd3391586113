--- KEYS[1] meta; ARGV[1] the status to go back to
--- An archive that could not be recorded: the room is live again, as it was.
---

if redis.call('HGET', KEYS[1], 'status') == 'archiving' then
  redis.call('HSET', KEYS[1], 'status', ARGV[1])
  redis.call('HDEL', KEYS[1], 'status_before_archive')
end
return 1
