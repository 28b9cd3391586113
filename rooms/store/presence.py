"""Presence: an agent's heartbeat and who the room has seen (rooms/lua/presence/; an agent
leaving the room is room.presence_leave)."""

from __future__ import annotations

import json
from typing import cast

from django.conf import settings

from rooms import idempotency, scripts
from rooms.keys import RoomKeys
from rooms.store.connections import client
from rooms.store.engine import idle_ttl_ms, run_write


async def presence_beat(
    keys: RoomKeys,
    *,
    agent_id: str,
    now_ms: int,
    shown: int,
    tags: list[str] | None = None,
    idle: bool = False,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> tuple[int, list[tuple[str, int]], set[str]]:
    """(agents the room remembers, the `shown` most recently seen with their times, those of
    them resting). With `tags`, they replace the agent's tags (what `tag:` selectors
    reach). `idle`: the agent rests until its next act (a session's end)."""
    total, res, rested = await run_write(
        keys,
        scripts.HEARTBEAT_SCRIPT,
        [keys.presence, keys.claims, keys.claim_holders, keys.tasks, keys.agent_tags],
        [
            agent_id,
            now_ms,
            idle_ttl_ms(),
            int(settings.ROOM_AGENTS_MAX),
            shown,
            json.dumps(tags, ensure_ascii=False) if tags is not None else "",
            "1" if idle else "",
        ],
        wrote="always",
        keyed=keyed,
        actor=actor,
    )
    it = iter(res)
    seen = [(str(a), int(float(s))) for a, s in zip(it, it, strict=True)]
    return int(total), seen, {str(a) for a in rested}


async def presence_all(keys: RoomKeys) -> tuple[list[tuple[str, int]], set[str]]:
    """(every agent the room remembers with when it last acted, those resting)."""
    pipe = client().pipeline(transaction=False)
    pipe.zrange(keys.presence, 0, -1, withscores=True)
    pipe.hkeys(keys.presence_rest)
    seen, rested = await pipe.execute()
    return (
        [(str(a), int(s)) for a, s in cast("list[tuple[str, float]]", seen)],
        {str(a) for a in rested},
    )


async def presence_touch(keys: RoomKeys, *, agent_id: str) -> None:
    """A read's presence: the agent present as of now and what it holds renewed, in a step
    of its own (its wrapper does it all: rooms/lua/wrap/present.lua)."""
    await run_write(
        keys, scripts.PRESENCE_TOUCH_SCRIPT, [], [], wrote="always", keyed=None, actor=agent_id
    )
