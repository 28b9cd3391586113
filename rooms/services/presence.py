"""Presence: an agent's heartbeat and leaving."""

from __future__ import annotations

from django.conf import settings

from rooms import clock, idempotency, selectors, store
from rooms.names import attributed
from rooms.refs import RoomRef
from rooms.results import (
    Heartbeat,
    Left,
)


async def presence_leave(room: RoomRef, *, agent_id: str) -> Left:
    """Out of presence (an agent_left event when it was there); its cursor stays."""
    agent = attributed(agent_id)
    minted = idempotency.minted(room.call, {"now": clock.now_ms()})
    left, seen = await store.presence_leave(
        room.keys,
        agent_id=agent,
        shown=int(settings.HEARTBEAT_PRESENCE_MAX),
        keyed=room.call,
    )
    now = idempotency.minted_final(room.call, minted)["now"]
    return {"left": left, "agentId": agent, "agents": selectors.presence_rows(seen, now_ms=now)}


async def presence_heartbeat(
    room: RoomRef, *, agent_id: str, tags: list[str] | None = None
) -> Heartbeat:
    """With `tags`, they become the agent's (what `tag:` messages reach); without, the
    agent keeps the tags of its last heartbeat that carried any."""
    agent = attributed(agent_id)
    minted = idempotency.minted(room.call, {"now": clock.now_ms()})
    total, seen = await store.presence_beat(
        room.keys,
        agent_id=agent,
        now_ms=minted["now"],
        shown=int(settings.HEARTBEAT_PRESENCE_MAX),
        tags=list(dict.fromkeys(tags)) if tags is not None else None,
        keyed=room.call,
    )
    now = idempotency.minted_final(room.call, minted)["now"]
    return {
        "agentId": agent,
        "presence": selectors.presence_rows(seen, now_ms=now),
        "presenceTotal": total,
    }
