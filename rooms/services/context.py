"""Writes to the room's typed context: write, update (versioned), delete."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from rooms import clock, errors, idempotency
from rooms.ids import new_id
from rooms.names import attributed
from rooms.quotas import quota_error
from rooms.records import (
    context_from_json,
    dumps,
)
from rooms.refs import RoomRef
from rooms.results import (
    ContextDeleted,
    ContextEntry,
)
from rooms.schemas import CONTEXT_PAYLOADS
from rooms.selectors import context as context_selectors
from rooms.store import context as context_store
from rooms.store import engine as engine_store
from rooms.suggest import LABEL_CHARS


async def context_delete(room: RoomRef, *, entry_id: str, agent_id: str | None) -> ContextDeleted:
    """The entry and its whole history go; consumers see a context_deleted event."""
    gone = await context_store.context_delete(
        room.keys, entry_id=entry_id, by=attributed(agent_id), keyed=room.call, actor=room.actor
    )
    if gone is None:
        raise await context_selectors.context_not_found(room, entry_id)
    return {"deleted": True, "id": entry_id}


def _validate_payload(type_: str, payload: dict[str, Any]) -> None:
    model = CONTEXT_PAYLOADS[type_]
    try:
        model.model_validate(payload)
    except ValidationError as exc:
        problems = "; ".join(
            f"payload.{_loc(e['loc'])}: {e['msg']}" if e["loc"] else f"payload: {e['msg']}"
            for e in exc.errors(include_url=False)
        )
        raise errors.ToolArgumentsError(
            errors.CONTEXT_PAYLOAD_INVALID.format(type=type_, problems=problems),
            extra={"fields": [_loc(e["loc"]) for e in exc.errors(include_url=False)]},
        ) from None


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _recipient(consumers: list[str]) -> str:
    return consumers[0] if len(consumers) == 1 else "all"


async def context_write(
    room: RoomRef,
    *,
    type_: str,
    summary: str,
    consuming_agents: list[str],
    payload: dict[str, Any],
    author: str,
    supersedes: str | None = None,
) -> ContextEntry:
    """A typed entry at version 1.0; its consumers get a `context_available` event. With
    `supersedes`, the next version of that entry instead (context_update's one atomic step
    and its `context_updated`), so an agent publishing its contract again needs no second
    tool: write_context's answer for a new entry stays version 1.0 (roomd's)."""
    if supersedes is not None:
        return await context_update(
            room,
            entry_id=supersedes,
            author=author,
            summary=summary,
            consuming_agents=consuming_agents,
            payload=payload,
            expected_version=None,
            type_=type_,
        )
    _validate_payload(type_, payload)
    author = attributed(author)
    consumers = list(dict.fromkeys(consuming_agents))
    entry: ContextEntry = {
        "id": new_id("c_"),
        "type": type_,
        "author": author,
        "timestamp": clock.now_iso(),
        "summary": summary,
        "consuming_agents": consumers,
        "version": "1.0",
        "payload": payload,
    }
    note = {
        "id": entry["id"],
        "type": entry["type"],
        "version": entry["version"],
        "summary": entry["summary"],
        "author": entry["author"],
        "consuming_agents": entry["consuming_agents"],
    }
    stored = {k: v for k, v in entry.items() if k != "payload"}
    minted = idempotency.minted(room.call, {"entry": entry})
    written = await context_store.context_write(
        room.keys,
        entry_id=entry["id"],
        entry_json=dumps(stored),
        payload_json=dumps(payload),
        author=author,
        to=_recipient(consumers),
        event_payload_json=dumps(note),
        label=_context_label(type_, summary),
        keyed=room.call,
        actor=room.actor,
    )
    if isinstance(written, engine_store.AtQuota):
        raise quota_error("ROOM_CONTEXT_MAX", written.used)
    entry = idempotency.minted_final(room.call, minted)["entry"]
    return entry


def _context_label(type_: str, summary: str) -> str:
    return f"{type_}: {summary[:LABEL_CHARS]}"


async def context_update(
    room: RoomRef,
    *,
    entry_id: str,
    author: str,
    summary: str | None,
    consuming_agents: list[str] | None,
    payload: dict[str, Any] | None,
    expected_version: str | None,
    type_: str | None = None,
) -> ContextEntry:
    """Bump the version (1.0 -> 1.1 -> ...), keep the previous one in history. Concurrent
    updates each get their own version; with `expected_version` a stale writer is told.
    `type_`: the type the caller means (write_context's supersedes), refused if not the
    entry's."""
    if payload is not None or summary is not None:
        current = await context_store.context_get(room.keys, entry_id)
        if current is None:
            raise await context_selectors.context_not_found(room, entry_id)
        # The type never changes, so validating against it before the atomic step is safe.
        stored = context_from_json(*current)["type"]
        if type_ is not None and type_ != stored:
            raise errors.ToolArgumentsError(
                errors.CONTEXT_SUPERSEDES_TYPE.format(entry_id=entry_id, stored=stored, type=type_),
                extra={"field": "supersedes", "type": stored},
            )
        type_ = stored
        if payload is not None:
            _validate_payload(type_, payload)
    changes: dict[str, Any] = {"author": attributed(author)}
    if summary is not None:
        changes["summary"] = summary
    if consuming_agents is not None:
        changes["consuming_agents"] = list(dict.fromkeys(consuming_agents))
    result = await context_store.context_update(
        room.keys,
        entry_id=entry_id,
        changes_json=dumps(changes),
        payload_json=dumps(payload) if payload is not None else None,
        expected_version=expected_version,
        now_iso=clock.now_iso(),
        label=_context_label(type_, summary) if type_ is not None and summary is not None else "",
        keyed=room.call,
        actor=room.actor,
    )
    if result is None:
        raise await context_selectors.context_not_found(room, entry_id)
    if isinstance(result, str):
        raise errors.ContextVersionConflictError(
            errors.CONTEXT_VERSION_CONFLICT.format(
                entry_id=entry_id, current=result, expected=expected_version
            ),
            extra={"currentVersion": result},
        )
    updated = context_from_json(result.entry_json, result.payload_json)
    if result.told_stale:
        updated["toldStale"] = result.told_stale
    return updated
