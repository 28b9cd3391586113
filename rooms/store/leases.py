"""File leases and noted file reads (rooms/lua/leases/). LEASES_MOVED is a lease script's
answer when a lease was granted since the view a service decided on: a claim of a task
with paths (plan.py) and a message to a file: selector (messages.py) answer it too."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from django.conf import settings

from rooms import idempotency, scripts
from rooms.keys import RoomKeys
from rooms.store.engine import event_args, idle_ttl_ms, named, run, run_write, unwritten

LEASES_MOVED = "moved"  # a lease script's answer: a lease was granted since the view it had


@dataclass(frozen=True, slots=True)
class LeaseView:
    """The room's leases as one step read them: `generation` counts the grants of new
    leases so far; `leases` are the raw JSON of every lease kept (some may be expired)."""

    generation: str
    leases: list[str]


@dataclass(frozen=True, slots=True)
class LeaseDecision:
    """What a service decided on a LeaseView, for the write step that acts on it: the
    view's generation, the conflicts found (JSON, "[]" for none) and the agent's own live
    leases of the paths asked for ({path: lease id})."""

    generation: str
    conflicts_json: str = "[]"
    own: dict[str, str] | None = None


async def leases_view(keys: RoomKeys) -> LeaseView:
    res = await run(scripts.LEASES_VIEW_SCRIPT, [keys.leases, keys.meta], [])
    return LeaseView(str(res[0]), [str(x) for x in res[1]])


async def leases_live(keys: RoomKeys, *, now_ms: int) -> list[str]:
    """Every live lease's JSON (no path matched: rooms.overlaps does that)."""
    view = await leases_view(keys)
    return [raw for raw in view.leases if int(json.loads(raw)["expires_ms"]) > now_ms]


LeaseOutcome = Literal[
    "granted",
    "renewed",
    "conflict",
    "quota",
    "unknown_task",
    "moved",
    "ok",
    "unknown",
    "not_holder",
]


@dataclass(frozen=True, slots=True)
class LeaseStep:
    """What a lease script answered: "granted", "renewed" (the agent's own lease of that
    path), "conflict" (`conflicts`), "quota" (`used`), "unknown_task", "moved" (a lease was
    granted since the decision's view: nothing written); for a renewal or a release, "ok",
    "unknown" (no such live lease) or "not_holder"."""

    outcome: LeaseOutcome
    lease_json: str = ""
    event_id: str = ""
    conflicts_json: str = "[]"
    used: int = 0


async def lease_claim(
    keys: RoomKeys,
    *,
    lease_id: str,
    agent_id: str,
    path: str,
    mode: str,
    ttl_ms: int,
    task_id: str | None,
    reason: str | None,
    now_ms: int,
    decided: LeaseDecision,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> LeaseStep:
    res = await run_write(
        keys,
        scripts.LEASE_CLAIM_SCRIPT,
        [keys.leases, keys.lease_expiry, keys.meta, keys.events, keys.reads, keys.tasks],
        [
            agent_id,
            path,
            mode,
            ttl_ms,
            task_id or "",
            reason or "",
            now_ms,
            idle_ttl_ms(),
            *event_args(keys),
            lease_id,
            int(settings.ROOM_LEASES_MAX),
            decided.generation,
            decided.conflicts_json,
            (decided.own or {}).get(path, ""),
        ],
        wrote="granted",
        keyed=keyed,
        actor=actor,
    )
    outcome: LeaseOutcome = named(res, LeaseOutcome)
    if outcome == "granted":
        return LeaseStep("granted", str(res[1]), str(res[2]))
    if outcome == "renewed":
        return LeaseStep("renewed", str(res[1]))
    if outcome == "conflict":
        return LeaseStep("conflict", conflicts_json=str(res[1]))
    if outcome == "quota":
        return LeaseStep("quota", used=int(res[1]))
    if outcome == LEASES_MOVED:
        unwritten(keyed)
    return LeaseStep(outcome)


async def lease_change(
    keys: RoomKeys,
    *,
    agent_id: str,
    lease_id: str | None,
    path: str | None,
    release: bool,
    ttl_ms: int,
    now_ms: int,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> LeaseStep:
    res = await run_write(
        keys,
        scripts.LEASE_CHANGE_SCRIPT,
        [keys.leases, keys.lease_expiry, keys.meta, keys.events, keys.reads],
        [
            agent_id,
            lease_id or "",
            path or "",
            "release" if release else "renew",
            ttl_ms,
            now_ms,
            idle_ttl_ms(),
            *event_args(keys),
        ],
        keyed=keyed,
        actor=actor,
    )
    outcome: LeaseOutcome = named(res, LeaseOutcome)
    if outcome == "ok":
        return LeaseStep("ok", str(res[1]), str(res[2]))
    if outcome == "not_holder":
        return LeaseStep("not_holder", str(res[1]))
    return LeaseStep(outcome)


async def file_read_note(
    keys: RoomKeys,
    *,
    agent_id: str,
    path: str,
    record_json: str,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> int | None:
    """None when noted; the reads noted in the room when it is at ROOM_FILE_READS_MAX."""
    res = await run_write(
        keys,
        scripts.NOTE_READ_SCRIPT,
        [keys.file_reads],
        [f"{agent_id}\n{path}", record_json, int(settings.ROOM_FILE_READS_MAX), idle_ttl_ms()],
        keyed=keyed,
        actor=actor,
    )
    return None if res[0] == "ok" else int(res[1])


async def file_drift(keys: RoomKeys, *, agent_id: str, path: str) -> tuple[str | None, list[str]]:
    """(the agent's noted read of the path, every lease's JSON) in one step."""
    res = await run(scripts.DRIFT_SCRIPT, [keys.file_reads, keys.leases], [f"{agent_id}\n{path}"])
    return (str(res[0]) or None), [str(x) for x in res[1]]
