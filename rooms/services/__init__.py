"""Writes to a room, one module per domain (the same stems as rooms/selectors, rooms/store and
rooms/tools): the domain rules, one atomic store step, and the announcement (the event)
inside that same step, so no write is ever half-done. A caller imports the module it uses
(`from rooms.services import plan as plan_services`)."""
