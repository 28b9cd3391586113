"""Shared variables: set."""

from __future__ import annotations

from rooms import store
from rooms.names import attributed
from rooms.quotas import quota_error
from rooms.refs import RoomRef
from rooms.results import (
    VarSet,
)


async def var_set(room: RoomRef, *, key: str, value: str, agent_id: str) -> VarSet:
    written = await store.var_set(
        room.keys,
        key=key,
        value=value,
        agent_id=attributed(agent_id),
        keyed=room.call,
        actor=room.actor,
    )
    if isinstance(written, store.AtQuota):
        raise quota_error("ROOM_VARS_MAX", written.used)
    return {"key": key, "value": value}
