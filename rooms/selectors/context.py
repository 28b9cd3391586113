"""Reads of the room's context: one entry (recording its reader), the list, history and diffs."""

from __future__ import annotations

import itertools
import json
from typing import Any, cast

from rooms import clock, errors
from rooms.diff import payload_diff, payload_paths_diff
from rooms.records import (
    context_from_json,
)
from rooms.refs import RoomRef
from rooms.results import (
    ContextDiff,
    ContextEntry,
    ContextHistory,
)
from rooms.store import context as context_store
from rooms.suggest import HINT_SAMPLE, unknown_id


async def context_not_found(room: RoomRef, entry_id: str) -> errors.ContextNotFoundError:
    sample = await context_store.context_hint_sample(room.keys, size=HINT_SAMPLE)
    found = unknown_id(
        entry_id,
        sample,
        closest_hint=errors.CONTEXT_HINT_CLOSEST,
        none_close_hint=errors.CONTEXT_HINT_NONE_CLOSE,
        empty_hint=errors.CONTEXT_HINT_EMPTY,
    )
    return errors.ContextNotFoundError(
        errors.CONTEXT_NOT_FOUND.format(entry_id=entry_id, hint=found.hint),
        extra={"id": entry_id, "closest": found.closest, "examined": found.examined},
    )


async def context_get(room: RoomRef, *, entry_id: str) -> ContextEntry:
    found = await context_store.context_get(room.keys, entry_id)
    if found is None:
        raise await context_not_found(room, entry_id)
    return context_from_json(*found)


def _reader(room: RoomRef, agent_id: str | None) -> str | None:
    """Whose read is recorded: the agent's, for a caller that can write (a read-only one
    reads with a scope of its own, as it does with cursors)."""
    return agent_id if room.cursor_scope is None else None


async def context_read(room: RoomRef, *, entry_id: str, agent_id: str | None) -> ContextEntry:
    """The entry, with who read which version of it; `agent_id`'s read is recorded first
    (by a caller that can write: a read-only one names no reader, so it cannot have others
    told of updates)."""
    entry = await context_get(room, entry_id=entry_id)
    [readers] = await context_store.context_readers(
        room.keys,
        agent_id=_reader(room, agent_id),
        read=[(entry["id"], entry["version"])],
        now_ms=clock.now_ms(),
    )
    _readers_set(entry, readers)
    return entry


def _readers_set(entry: ContextEntry, readers: list[dict[str, Any]]) -> None:
    entry["readBy"] = [
        {"agentId": str(r["a"]), "version": str(r["v"]), "at": clock.iso_from_ms(int(r["at"]))}
        for r in readers
    ]
    entry["behind"] = [str(r["a"]) for r in readers if r["v"] != entry["version"]]


async def context_list(
    room: RoomRef, *, type_: str | None, author: str | None, agent_id: str | None = None
) -> list[ContextEntry]:
    """Newest first (roomd's order is undefined). With `agent_id`, the versions listed are
    recorded as read by it."""
    entries = [context_from_json(e, p) for e, p in await context_store.context_all(room.keys)]
    listed = [
        e
        for e in entries
        if (type_ is None or e["type"] == type_) and (author is None or e["author"] == author)
    ]
    reader = _reader(room, agent_id)
    if reader is not None and listed:
        await context_store.context_readers(
            room.keys,
            agent_id=reader,
            read=[(e["id"], e["version"]) for e in listed],
            now_ms=clock.now_ms(),
        )
    return listed


async def context_history_newest_first(room: RoomRef, *, entry_id: str) -> ContextHistory:
    """roomd's get_context_history: the entry now, and its kept earlier versions newest
    first (each with `changes`, what differs from the one before it)."""
    versions = await context_history(room, entry_id=entry_id)
    return {"id": entry_id, "current": versions[-1], "history": versions[-2::-1]}


async def context_diff(room: RoomRef, *, entry_id: str, against: str | None) -> ContextDiff:
    """The entry now against one earlier version (by default the one just before): what
    its summary and payload changed, payload paths going down to the values."""
    versions = [
        cast(ContextEntry, {k: v for k, v in e.items() if k != "changes"})
        for e in await context_history(room, entry_id=entry_id)
    ]
    current, earlier = versions[-1], versions[:-1]
    if not earlier:
        # roomd's answer (docs/protocol.md "Typed context"): a diff needs two versions.
        raise errors.ToolArgumentsError(
            errors.CONTEXT_NO_PRIOR.format(entry_id=entry_id, version=current["version"]),
            extra={"id": entry_id, "versions": [current["version"]]},
        )
    previous: ContextEntry | None = earlier[-1]
    if against is not None:
        found = [e for e in versions if e["version"] == against]
        if not found:
            raise errors.ToolArgumentsError(
                errors.CONTEXT_VERSION_UNKNOWN.format(
                    version=against,
                    entry_id=entry_id,
                    kept=", ".join(e["version"] for e in versions),
                ),
                extra={"fields": ["againstVersion"], "kept": [e["version"] for e in versions]},
            )
        previous = found[0]
    paths = payload_paths_diff(previous["payload"] if previous else {}, current["payload"])
    return {
        "id": entry_id,
        "current": current,
        "previous": previous,
        "diff": {
            "summaryChanged": previous is None or previous["summary"] != current["summary"],
            "fromSummary": previous["summary"] if previous else None,
            "toSummary": current["summary"],
            "payload": {
                "added": paths["added"],
                "removed": paths["removed"],
                "changed": paths["changed"],
            },
            "fromVersion": previous["version"] if previous else None,
            "toVersion": current["version"],
        },
    }


def _version_key(version: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in version.split("."))
    except ValueError:
        return (0,)


async def context_history(room: RoomRef, *, entry_id: str) -> list[ContextEntry]:
    """Every version of an entry, oldest first, the current one last; each after the first
    carries `changes`: what differs from the version before it."""
    current = await context_get(room, entry_id=entry_id)
    previous: list[ContextEntry] = [
        json.loads(v) for v in await context_store.context_history(room.keys, entry_id)
    ]
    for entry in previous:
        if entry.get("consuming_agents") == {}:  # type: ignore[comparison-overlap]  # cjson's {}
            entry["consuming_agents"] = []
    versions = sorted(previous, key=lambda e: _version_key(str(e.get("version", "0"))))
    versions.append(current)
    for before, after in itertools.pairwise(versions):
        after["changes"] = payload_diff(before.get("payload"), after.get("payload"))
        if before.get("summary") != after.get("summary"):
            after["changes"].insert(0, "summary changed")
    return versions


async def context_readers_attach(room: RoomRef, entries: list[ContextEntry]) -> None:
    """Who read which version of each entry, and who is behind (records no read)."""
    if not entries:
        return
    readers = await context_store.context_readers(
        room.keys,
        agent_id=None,
        read=[(e["id"], e["version"]) for e in entries],
        now_ms=clock.now_ms(),
    )
    for entry, read in zip(entries, readers, strict=True):
        _readers_set(entry, read)
