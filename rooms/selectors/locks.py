"""The room's live locks."""

from __future__ import annotations

from rooms import clock
from rooms.refs import RoomRef
from rooms.results import (
    LockRow,
)
from rooms.store import locks as locks_store


async def lock_list(room: RoomRef) -> list[LockRow]:
    now = clock.now_ms()
    return [
        {"resource": res, "owner": holder, "expiresAt": clock.iso_from_ms(now + remaining)}
        for res, holder, remaining in await locks_store.lock_all(room.keys, now_ms=now)
    ]
