"""Project memory (rooms.memory): what a room inherits from its project, replaced whole and
read back (rooms/lua/room/inherited_replace)."""

from __future__ import annotations

from typing import cast

from rooms import scripts
from rooms.keys import RoomKeys
from rooms.store.connections import client
from rooms.store.engine import awaited, idle_ttl_ms, run


async def inherited_replace(keys: RoomKeys, *, project: str, entries: dict[str, str]) -> None:
    """What the room inherits from its project, replaced whole in one step."""
    flat: list[str] = []
    for field_name, text in entries.items():
        flat += [field_name, text]
    await run(scripts.INHERITED_REPLACE_SCRIPT, [keys.inherited], [idle_ttl_ms(), project, *flat])


async def inherited_all(keys: RoomKeys) -> tuple[str, dict[str, str]]:
    """(the project's name or "", "<room id>/<context id>" -> entry JSON), in the order
    they were kept: newest rooms first."""
    raw = cast("dict[str, str]", await awaited(client().hgetall(keys.inherited)))
    project = raw.pop("~project", "")
    order = raw.pop("~order", "")
    fields = [f for f in order.split("\n") if f in raw] if order else list(raw)
    return project, {f: raw[f] for f in fields}
