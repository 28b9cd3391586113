"""The room's handoffs, all or those waiting for one agent."""

from __future__ import annotations

from rooms.records import (
    handoff_from_json,
)
from rooms.refs import RoomRef
from rooms.results import (
    Handoff,
)
from rooms.store import handoffs as handoffs_store


async def handoffs_all(room: RoomRef) -> list[Handoff]:
    """Every kept handoff, oldest first."""
    return [handoff_from_json(raw) for raw in await handoffs_store.handoffs_all(room.keys)]


async def handoffs_pending(room: RoomRef, agent_id: str) -> list[Handoff]:
    """The handoffs offered to the agent and not answered yet, oldest first."""
    return [h for h in await handoffs_all(room) if h["to"] == agent_id and h["status"] == "offered"]
