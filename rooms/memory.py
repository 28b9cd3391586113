"""Project memory (Agent Room; docs/durable-rooms.md): a room of a named project starts with the
durable decisions and contracts of the project's earlier rooms available.

Durable means the two context types that outlive a room's work: api_contract and
arch_decision, at their latest version. They are copied into the new room when it is
given its project (tenants.projects gathers them, from live rooms and from archives), kept
apart from the room's own context: list_context shows them only with includeInherited,
each marked with the room it came from, and get_my_summary says how many there are.
Copies, not links: an earlier room archived or deleted later takes nothing away.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

from rooms.keys import RoomKeys
from rooms.records import context_from_json
from rooms.refs import RoomRef
from rooms.results import ContextEntry, InheritedSummary
from rooms.store import context as context_store
from rooms.store import memory as memory_store

DURABLE_TYPES = ("api_contract", "arch_decision")
HOW = "list_context with includeInherited: true lists them, each marked `inherited`."


def durable_only(entries: list[ContextEntry]) -> list[ContextEntry]:
    return [e for e in entries if e["type"] in DURABLE_TYPES]


async def memory_of_room(keys: RoomKeys) -> list[ContextEntry]:
    """A live room's durable entries, newest first."""
    return durable_only([context_from_json(e, p) for e, p in await context_store.context_all(keys)])


def memory_of_document(document: dict[str, Any]) -> list[ContextEntry]:
    """An archived room's durable entries (rooms.snapshots' document), newest first."""
    parts = document.get("parts", {})

    def pairs(part: str) -> dict[str, str]:
        items = parts.get(part, {}).get("items", [])
        return {
            str(items[i]): str(items[i + 1])
            for i in range(0, len(items) - 1, 2)
            if isinstance(items[i], str) and isinstance(items[i + 1], str)
        }

    entries, payloads = pairs("ctx"), pairs("ctx_payload")
    created = pairs("ctx_created")
    order = sorted(entries, key=lambda i: float(created.get(i, "0")), reverse=True)
    return durable_only(
        [context_from_json(entries[i], payloads.get(i, "null")) for i in order if i in entries]
    )


async def memory_seed(
    room: RoomKeys, *, project: str, earlier: list[tuple[str, list[ContextEntry]]]
) -> int:
    """Replace what `room` inherits with the durable entries of `earlier` (room id, its
    entries), newest rooms first, within ROOM_INHERITED_MAX and _BYTES_MAX. Returns how
    many it holds."""
    most, budget = int(settings.ROOM_INHERITED_MAX), int(settings.ROOM_INHERITED_BYTES_MAX)
    kept: dict[str, str] = {}
    for room_id, entries in earlier:
        for entry in entries:
            field = f"{room_id}/{entry['id']}"
            if field in kept or len(kept) >= most:
                continue
            text = json.dumps(
                {**entry, "inherited": {"roomId": room_id, "project": project}},
                ensure_ascii=False,
                separators=(",", ":"),
            )
            if len(text) > budget:
                continue
            budget -= len(text)
            kept[field] = text
    await memory_store.inherited_replace(room, project=project, entries=kept)
    return len(kept)


async def memory_list(room: RoomRef, *, type_: str | None) -> list[ContextEntry]:
    _, entries = await memory_store.inherited_all(room.keys)
    listed: list[ContextEntry] = [json.loads(text) for text in entries.values()]
    return [e for e in listed if type_ is None or e["type"] == type_]


async def memory_summary(room: RoomRef) -> InheritedSummary:
    project, entries = await memory_store.inherited_all(room.keys)
    rooms = list(dict.fromkeys(field.split("/", 1)[0] for field in entries))
    return {
        "project": project or None,
        "count": len(entries),
        "rooms": rooms,
        "how": HOW if entries else "",
    }
