"""Reads of a room, one module per domain (the same stems as rooms/services, rooms/store and
rooms/tools). Each takes a `RoomRef` (the access check already ran) and returns the
protocol's plain result shape. A caller imports the module it uses
(`from rooms.selectors import plan as plan_selectors`)."""
