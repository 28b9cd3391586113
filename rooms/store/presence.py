"""Presence: an agent's heartbeat and who the room has seen (rooms/lua/presence/; an agent
leaving the room is room.presence_leave)."""

from __future__ import annotations

import json
from typing import cast

from django.conf import settings

from rooms import idempotency, scripts
from rooms.keys import RoomKeys
from rooms.store.connections import client
from rooms.store.engine import _run_write, _ttl


async def presence_beat(
    keys: RoomKeys,
    *,
    agent_id: str,
    now_ms: int,
    shown: int,
    tags: list[str] | None = None,
    keyed: idempotency.KeyedCall | None,
) -> tuple[int, list[tuple[str, int]]]:
    """(agents the room remembers, the `shown` most recently seen with their times). With
    `tags`, they replace the agent's tags (what `tag:` selectors reach)."""
    total, res = await _run_write(
        keys,
        scripts.HEARTBEAT_SCRIPT,
        [keys.presence, keys.claims, keys.claim_holders, keys.tasks, keys.agent_tags],
        [
            agent_id,
            now_ms,
            _ttl(),
            int(settings.ROOM_AGENTS_MAX),
            shown,
            json.dumps(tags, ensure_ascii=False) if tags is not None else "",
        ],
        wrote="always",
        keyed=keyed,
    )
    it = iter(res)
    return int(total), [(str(a), int(float(s))) for a, s in zip(it, it, strict=True)]


async def presence_all(keys: RoomKeys) -> list[tuple[str, int]]:
    res = await client().zrange(keys.presence, 0, -1, withscores=True)
    return [(str(a), int(s)) for a, s in cast("list[tuple[str, float]]", res)]
