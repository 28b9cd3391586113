"""Shared variables: set."""

from __future__ import annotations

from rooms.names import attributed
from rooms.quotas import quota_error
from rooms.refs import RoomRef
from rooms.results import (
    VarSet,
)
from rooms.store import engine as engine_store
from rooms.store import vars as vars_store


async def var_set(room: RoomRef, *, key: str, value: str, agent_id: str) -> VarSet:
    written = await vars_store.var_set(
        room.keys,
        key=key,
        value=value,
        agent_id=attributed(agent_id),
        keyed=room.call,
        actor=room.actor,
    )
    if isinstance(written, engine_store.AtQuota):
        raise quota_error("ROOM_VARS_MAX", written.used)
    return {"key": key, "value": value}
