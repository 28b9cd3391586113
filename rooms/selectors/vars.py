"""The room's shared variables."""

from __future__ import annotations

from rooms.refs import RoomRef
from rooms.results import (
    VarGot,
    VarList,
)
from rooms.store import vars as vars_store


async def var_get(room: RoomRef, *, key: str) -> VarGot:
    value = await vars_store.var_get(room.keys, key)
    return {"key": key, "value": value, "found": value is not None}


async def var_list(room: RoomRef) -> VarList:
    found = await vars_store.var_all(room.keys)
    return {"vars": dict(sorted(found.items())), "count": len(found)}
