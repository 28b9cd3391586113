"""The room access check: the only maker of `RoomRef` (STYLE.md "the type proves the check").

Another team's room and a room the caller may not touch get the same error text and
shape, whatever the room holds (seeds/000 §8.2).
"""

from __future__ import annotations

from rooms import clock, errors, store
from rooms.keys import RoomKeys
from rooms.refs import RoomRef
from tenants.auth import Caller

READ_ONLY_REFUSED = (
    "This key is read-only: it may call reading tools only (read_plan, list_context, "
    "read_events, ...). Ask the team for a key that may write."
)


async def room_access(caller: Caller, room_id: str, write: bool) -> RoomRef:
    if write and caller.read_only:
        raise errors.ReadOnlyCallerError(READ_ONLY_REFUSED)
    if caller.allowed_room is not None and caller.allowed_room != room_id:
        raise errors.RoomAccessError(errors.ROOM_ACCESS_DENIED)
    keys = RoomKeys(room_id)
    code = await store.room_access(
        keys, team_id=caller.team_id, now_iso=clock.now_iso(), claim=caller.allowed_room is None
    )
    if code != 1:
        raise errors.RoomAccessError(errors.ROOM_ACCESS_DENIED)
    return RoomRef(
        room_id=room_id,
        team_id=caller.team_id,
        keys=keys,
        bound_agent=caller.bound_agent,
        read_only=caller.read_only,
    )
