"""Who is in the room and when each agent was last seen."""

from __future__ import annotations

from django.conf import settings

from rooms import clock, store
from rooms.refs import RoomRef
from rooms.results import (
    AgentPresence,
)


def presence_rows(seen: list[tuple[str, int]], *, now_ms: int | None = None) -> list[AgentPresence]:
    online_ms = int(settings.PRESENCE_ONLINE_SECONDS) * 1000
    now = clock.now_ms() if now_ms is None else now_ms
    rows: list[AgentPresence] = [
        {
            "agentId": agent,
            "status": "online" if now - ms <= online_ms else "offline",
            "lastSeen": clock.iso_from_ms(ms),
        }
        for agent, ms in seen
    ]
    rows.sort(key=lambda r: (r["status"] != "online", r["agentId"]))
    return rows


async def presence_list(room: RoomRef) -> list[AgentPresence]:
    return presence_rows(await store.presence_all(room.keys))
