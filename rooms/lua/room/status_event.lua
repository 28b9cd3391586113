--- KEYS[1] meta, KEYS[2] events, KEYS[3] reads, then the room tail (rooms/lua/__init__.py)
--- ARGV[1] status, ARGV[2] previous status, ARGV[3] by, ARGV[4] ttl ms, ARGV[5..7] event args
--- -> the room_status_changed event id
--- An archive (after the freeze, so the archive holds it) and a restore (after the load) say
--- so in the log, as set_room_status does.
--- uses: room prelude
---

local eid = append(KEYS[2], KEYS[1], KEYS[3], ARGV[5], ARGV[6], ARGV[7],
  {'type', 'room_status_changed', 'from', ARGV[3], 'to', 'all', 'payload',
   cjson.encode({status = ARGV[1], previousStatus = ARGV[2]})})
touch(ARGV[4], 1, 3)
return eid
