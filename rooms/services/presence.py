"""Presence: an agent's heartbeat, leaving, and the presence every read that names its
acting agent makes (a write makes it in its own step: rooms/lua/wrap/present.lua)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TypeVar

from django.conf import settings

from rooms import clock, idempotency
from rooms.names import attributed
from rooms.refs import RoomRef
from rooms.results import (
    Heartbeat,
    Left,
)
from rooms.selectors import presence as presence_selectors
from rooms.store import presence as presence_store
from rooms.store import room as room_store
from rooms.store.connections import StoreDown

T = TypeVar("T")


# (room id, agent) -> when this process last sent a read's presence step for it. A read
# names its agent at most once a READ_PRESENCE_EVERY_MS (an agent polling its unread events
# in a loop costs one presence step a second, not one a call); at most READS_PRESENT_MAX
# remembered, all forgotten at once past that.
_read_presence: dict[tuple[str, str], int] = {}
READ_PRESENCE_EVERY_MS = 1000
READS_PRESENT_MAX = 50_000


def _reading_agent(room: RoomRef) -> str | None:
    """The agent a read marks present: the one it names acting (room.actor); a guest's
    read, only its own agent."""
    if not room.actor or (room.reader is not None and room.actor != room.reader):
        return None
    return room.actor


async def presence_beside(room: RoomRef, work: Awaitable[T]) -> T:
    """`work`'s result; for a read that names its acting agent (room.actor), that agent is
    also marked present, and what it holds renewed, in a step sent at the same time as the
    work's, so the call waits no longer (a write does it inside its own step). The step's
    own failure is not the work's. A guest's read marks only its own agent present (the one
    whose messages it reads: message_visible's reader); naming another, it is refused or
    reads what any agent may, and it must not make that agent look here."""
    agent = _reading_agent(room)
    if agent is None:
        return await work
    now = clock.now_ms()
    seen = (room.room_id, agent)
    if now - _read_presence.get(seen, -READ_PRESENCE_EVERY_MS) < READ_PRESENCE_EVERY_MS:
        return await work
    if len(_read_presence) >= READS_PRESENT_MAX:
        _read_presence.clear()
    _read_presence[seen] = now
    touched = asyncio.ensure_future(presence_store.presence_touch(room.keys, agent_id=agent))
    try:
        return await work
    finally:
        if not touched.done():  # a wait's step has long landed when the wait ends
            await asyncio.wait([touched])
        if not touched.cancelled():
            touched.exception()  # retrieved: an outage shows in the work's own answer


async def presence_waiting(room: RoomRef, work: Awaitable[T]) -> T:
    """presence_beside for a waiting call: however long it waits, its agent stays present
    (a step each half of PRESENCE_ONLINE_SECONDS while it waits, so an agent in a long wait,
    the REST door's, is not shown offline). A wait shorter than that (a tool call's) makes
    the one step presence_beside makes."""
    every = int(settings.PRESENCE_ONLINE_SECONDS) / 2
    beside = presence_beside(room, work)
    agent = _reading_agent(room)
    if room.wait_most_ms <= every * 1000 or agent is None:
        return await beside
    task = asyncio.ensure_future(beside)
    try:
        while not (await asyncio.wait({task}, timeout=every))[0]:
            with contextlib.suppress(*StoreDown):  # the wait hears of an outage itself
                await presence_store.presence_touch(room.keys, agent_id=agent)
    finally:
        task.cancel()  # the caller went away: so does the wait (a no-op once it is done)
    return task.result()


async def presence_leave(room: RoomRef, *, agent_id: str) -> Left:
    """Out of presence (an agent_left event when it was there); its cursor stays."""
    agent = attributed(agent_id)
    minted = idempotency.minted(room.call, {"now": clock.now_ms()})
    left, seen = await room_store.presence_leave(
        room.keys,
        agent_id=agent,
        shown=int(settings.HEARTBEAT_PRESENCE_MAX),
        keyed=room.call,
        actor=room.actor,
    )
    now = idempotency.minted_final(room.call, minted)["now"]
    return {
        "left": left,
        "agentId": agent,
        "agents": presence_selectors.presence_rows(seen, now_ms=now),
    }


async def presence_heartbeat(
    room: RoomRef, *, agent_id: str, tags: list[str] | None = None, idle: bool = False
) -> Heartbeat:
    """With `tags`, they become the agent's (what `tag:` messages reach); without, the
    agent keeps the tags of its last heartbeat that carried any. `idle`: the agent is here
    but not working (a session ended) until its next act, which is why this one act is not
    made presence by its wrapper (that would end the rest it starts)."""
    agent = attributed(agent_id)
    minted = idempotency.minted(room.call, {"now": clock.now_ms()})
    total, seen, resting = await presence_store.presence_beat(
        room.keys,
        agent_id=agent,
        now_ms=minted["now"],
        shown=int(settings.HEARTBEAT_PRESENCE_MAX),
        tags=list(dict.fromkeys(tags)) if tags is not None else None,
        idle=idle,
        keyed=room.call,
        actor=None if idle else room.actor,
    )
    now = idempotency.minted_final(room.call, minted)["now"]
    return {
        "agentId": agent,
        "presence": presence_selectors.presence_rows(seen, now_ms=now, resting=resting),
        "presenceTotal": total,
    }
