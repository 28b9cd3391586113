--- The presence of a read that names its acting agent (rooms.services.presence_beside): the
--- step has nothing of its own to do; the present wrapper around it marks the agent present
--- and renews what it holds, as it does around every write step.
--- KEYS: the room tail only. ARGV: the call's envelope only (CALL.present).
--- -> {'ok'}
---

return {'ok'}
