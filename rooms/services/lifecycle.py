"""A room's lifecycle (AgentPlat; docs/protocol.md "Lifecycle and durable rooms"): active,
paused, completed, archived. A paused or completed room answers every read and refuses
every write but set_room_status, with a message naming its status (tenants.access decides,
for every door; the status lives in the room's meta, read in the access check's own step).
An archived room lives in Postgres (tenants.archives); reads answer from its archive."""

from __future__ import annotations

from typing import Literal

from rooms.refs import RoomRef
from rooms.results import RoomStatus
from rooms.store import room as room_store

Status = Literal["active", "paused", "completed", "archived"]


async def room_status_set(room: RoomRef, *, status: Status, agent_id: str) -> RoomStatus:
    """A live room's own status (archiving moves the room out of Redis: tenants.archives,
    which the doors call for "archived", and for any status of an archived room)."""
    assert status != "archived", "archiving is tenants.archives' move"
    previous, _ = await room_store.room_status_set(
        room.keys, status=status, by=agent_id, keyed=room.call, actor=room.actor
    )
    return {"roomId": room.room_id, "status": status, "previousStatus": previous}
