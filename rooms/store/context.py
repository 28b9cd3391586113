"""Shared context: entries written, updated (their superseded versions kept), read, their
readers recorded, and deleted (rooms/lua/context/)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from rooms import idempotency, scripts
from rooms.keys import RoomKeys
from rooms.store.engine import AtQuota, event_args, idle_ttl_ms, pairs, run, run_write


async def context_write(
    keys: RoomKeys,
    *,
    entry_id: str,
    entry_json: str,
    payload_json: str,
    author: str,
    to: str,
    event_payload_json: str,
    label: str,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> str | AtQuota:
    """The context_available event id, or AtQuota (ROOM_CONTEXT_MAX)."""
    res = await run_write(
        keys,
        scripts.WRITE_CONTEXT_SCRIPT,
        [
            keys.context,
            keys.context_payloads,
            keys.context_created,
            keys.context_changed,
            keys.events,
            keys.seq,
            keys.meta,
            keys.reads,
            keys.context_labels,
        ],
        [
            entry_id,
            entry_json,
            payload_json,
            idle_ttl_ms(),
            *event_args(keys),
            author,
            to,
            event_payload_json,
            int(settings.ROOM_CONTEXT_MAX),
            label,
        ],
        keyed=keyed,
        actor=actor,
    )
    return str(res[1]) if res[0] == "ok" else AtQuota(int(res[1]))


@dataclass(frozen=True, slots=True)
class ContextUpdated:
    entry_json: str
    payload_json: str
    event_id: str
    told_stale: list[str] = field(default_factory=list)  # agents whose read went out of date


async def context_update(
    keys: RoomKeys,
    *,
    entry_id: str,
    changes_json: str,
    payload_json: str | None,
    expected_version: str | None,
    now_iso: str,
    label: str,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> ContextUpdated | str | None:
    """The update, or the current version string when `expected_version` is stale, or None
    for an unknown entry. The oldest superseded versions past CONTEXT_VERSIONS_KEPT go."""
    res = await run_write(
        keys,
        scripts.UPDATE_CONTEXT_SCRIPT,
        [
            keys.context,
            keys.context_payloads,
            keys.context_changed,
            keys.context_versions,
            keys.context_version_index,
            keys.events,
            keys.meta,
            keys.reads,
            keys.context_labels,
            keys.context_readers,
        ],
        [
            entry_id,
            changes_json,
            payload_json or "",
            expected_version or "",
            now_iso,
            idle_ttl_ms(),
            *event_args(keys),
            int(settings.CONTEXT_VERSIONS_KEPT),
            label,
        ],
        keyed=keyed,
        actor=actor,
    )
    if res[0] == "unknown":
        return None
    if res[0] == "stale":
        return str(res[1])
    return ContextUpdated(
        entry_json=str(res[1]),
        payload_json=str(res[2]),
        event_id=str(res[3]),
        told_stale=[str(a) for a in json.loads(str(res[4]) or "[]") or []],
    )


async def context_readers(
    keys: RoomKeys, *, agent_id: str | None, read: list[tuple[str, str]], now_ms: int
) -> list[list[dict[str, Any]]]:
    """Record that `agent_id` read these (entry id, version) pairs, when given, and answer
    each entry's readers, oldest read first ([{a, v, at}])."""
    if not read:
        return []
    res = await run(
        scripts.CONTEXT_READERS_SCRIPT,
        [keys.context_readers],
        [
            agent_id or "",
            now_ms,
            int(settings.CONTEXT_READERS_KEPT),
            idle_ttl_ms(),
            *(part for pair in read for part in pair),
        ],
    )
    return [json.loads(str(x)) or [] for x in res]


async def context_get(keys: RoomKeys, entry_id: str) -> tuple[str, str] | None:
    """(entry JSON without payload, payload JSON), or None."""
    res = await run(scripts.CONTEXT_GET_SCRIPT, [keys.context, keys.context_payloads], [entry_id])
    if not res:
        return None
    return str(res[0]), str(res[1])


async def context_hint_sample(keys: RoomKeys, *, size: int) -> list[tuple[str, str]]:
    """(id, "type: summary" cut short) of the `size` newest entries: no payload is read."""
    res = await run(
        scripts.CONTEXT_HINTS_SCRIPT, [keys.context_created, keys.context_labels], [size]
    )
    return pairs(res)


async def context_history(keys: RoomKeys, entry_id: str) -> list[str]:
    """Every superseded version of one entry (full JSON each), oldest first."""
    res = await run(
        scripts.CONTEXT_HISTORY_SCRIPT,
        [keys.context_version_index, keys.context_versions],
        [entry_id],
    )
    return [str(v) for v in res]


async def context_all(keys: RoomKeys) -> list[tuple[str, str]]:
    """Every entry as (entry JSON, payload JSON), newest first."""
    res = await run(
        scripts.CONTEXT_ALL_SCRIPT,
        [keys.context_created, keys.context, keys.context_payloads],
        [],
    )
    return pairs(res)


async def context_delete(
    keys: RoomKeys,
    *,
    entry_id: str,
    by: str,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> str | None:
    """The deleted entry's JSON (without its payload), or None for an unknown entry."""
    res = await run_write(
        keys,
        scripts.DELETE_CONTEXT_SCRIPT,
        [
            keys.context,
            keys.context_payloads,
            keys.context_created,
            keys.context_changed,
            keys.context_versions,
            keys.context_version_index,
            keys.context_labels,
            keys.meta,
            keys.events,
            keys.reads,
        ],
        [entry_id, by, idle_ttl_ms(), *event_args(keys)],
        keyed=keyed,
        actor=actor,
    )
    return str(res[2]) if res[0] == "ok" else None
