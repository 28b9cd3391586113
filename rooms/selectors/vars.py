"""The room's shared variables."""

from __future__ import annotations

from rooms import store
from rooms.refs import RoomRef
from rooms.results import (
    VarGot,
    VarList,
)


async def var_get(room: RoomRef, *, key: str) -> VarGot:
    value = await store.var_get(room.keys, key)
    return {"key": key, "value": value, "found": value is not None}


async def var_list(room: RoomRef) -> VarList:
    found = await store.var_all(room.keys)
    return {"vars": dict(sorted(found.items())), "count": len(found)}
