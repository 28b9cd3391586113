"""Who is in the room, when each agent last acted, and whether it is working, idle or gone."""

from __future__ import annotations

from collections.abc import Collection

from django.conf import settings

from rooms import clock
from rooms.refs import RoomRef
from rooms.results import AgentPresence, PresenceState
from rooms.store import presence as presence_store


def presence_state(last_ms: int, *, resting: bool, now_ms: int) -> PresenceState:
    """The tier of an agent that last acted at `last_ms`; `resting`: its session said it
    ended since."""
    quiet = now_ms - last_ms
    if quiet > int(settings.PRESENCE_IDLE_SECONDS) * 1000:
        return "gone"
    if resting or quiet > int(settings.PRESENCE_WORKING_SECONDS) * 1000:
        return "idle"
    return "working"


def presence_rows(
    seen: list[tuple[str, int]],
    *,
    now_ms: int | None = None,
    resting: Collection[str] = (),
) -> list[AgentPresence]:
    online_ms = int(settings.PRESENCE_ONLINE_SECONDS) * 1000
    now = clock.now_ms() if now_ms is None else now_ms
    rows: list[AgentPresence] = [
        {
            "agentId": agent,
            "status": "online" if now - ms <= online_ms else "offline",
            "lastSeen": clock.iso_from_ms(ms),
            "state": presence_state(ms, resting=agent in resting, now_ms=now),
        }
        for agent, ms in seen
    ]
    rows.sort(key=lambda r: (r["status"] != "online", r["agentId"]))
    return rows


async def presence_list(room: RoomRef) -> list[AgentPresence]:
    seen, resting = await presence_store.presence_all(room.keys)
    return presence_rows(seen, resting=resting)
