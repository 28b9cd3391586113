"""Handoffs of a task from one agent to another: offered, then accepted or declined
(rooms/lua/handoffs/)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal, cast

from django.conf import settings

from rooms import idempotency, scripts
from rooms.keys import RoomKeys
from rooms.store.connections import client
from rooms.store.engine import awaited, event_args, idle_ttl_ms, named, run_write
from rooms.store.plan import _task_keys

HandoffOutcome = Literal[
    "ok",
    "unknown",
    "done",
    "not_owner",
    "offered",
    "unknown_agent",
    "unknown_context",
    "quota",
    "not_receiver",
    "resolved",
    "void",
]


@dataclass(frozen=True, slots=True)
class HandoffStep:
    """What a handoff write came to: "ok", "unknown", "done", "not_owner", "offered"
    (one is pending already), "unknown_agent" (`known`: who the room has seen),
    "unknown_context" (`missing`), "quota", "not_receiver", "resolved", "void"."""

    outcome: HandoffOutcome
    handoff_json: str = ""
    task_json: str = ""
    event_id: str = ""
    known: list[str] = field(default_factory=list)
    missing: str = ""
    used: int = 0


async def handoff_offer(
    keys: RoomKeys,
    *,
    task_id: str,
    sender: str,
    receiver: str,
    handoff_id: str,
    handoff_json: str,
    context_ids: list[str],
    now_ms: int,
    now_iso: str,
    hint_sample: int,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> HandoffStep:
    res = await run_write(
        keys,
        scripts.HANDOFF_OFFER_SCRIPT,
        [
            *_task_keys(keys),
            keys.handoffs,
            keys.handoff_order,
            keys.presence,
            keys.cursors,
            keys.context,
        ],
        [
            task_id,
            sender,
            receiver,
            handoff_json,
            handoff_id,
            json.dumps(context_ids),
            now_ms,
            now_iso,
            idle_ttl_ms(),
            *event_args(keys),
            int(settings.ROOM_HANDOFFS_MAX),
            hint_sample,
        ],
        keyed=keyed,
        actor=actor,
    )
    outcome: HandoffOutcome = named(res, HandoffOutcome)
    if outcome == "ok":
        return HandoffStep("ok", str(res[1]), event_id=str(res[2]))
    if outcome == "unknown":
        return HandoffStep("unknown")
    if outcome == "unknown_agent":
        return HandoffStep("unknown_agent", known=[str(a) for a in res[1]])
    if outcome == "unknown_context":
        return HandoffStep("unknown_context", missing=str(res[1]))
    if outcome == "quota":
        return HandoffStep("quota", used=int(res[1]))
    if outcome == "offered":
        return HandoffStep("offered", str(res[2]), str(res[1]))
    return HandoffStep(outcome, task_json=str(res[1]))


async def handoff_resolve(
    keys: RoomKeys,
    *,
    handoff_id: str,
    agent_id: str,
    accept: bool,
    note: str | None,
    now_ms: int,
    now_iso: str,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> HandoffStep:
    res = await run_write(
        keys,
        scripts.HANDOFF_RESOLVE_SCRIPT,
        [*_task_keys(keys), keys.handoffs],
        [
            handoff_id,
            agent_id,
            "accepted" if accept else "declined",
            note or "",
            now_ms,
            now_iso,
            idle_ttl_ms(),
            *event_args(keys),
        ],
        keyed=keyed,
        actor=actor,
    )
    outcome: HandoffOutcome = named(res, HandoffOutcome)
    if outcome == "unknown":
        return HandoffStep("unknown")
    if outcome == "ok":
        return HandoffStep("ok", str(res[1]), str(res[2]), str(res[3]))
    if outcome == "void":
        return HandoffStep("void", str(res[1]), str(res[2]))
    return HandoffStep(outcome, str(res[1]))


async def handoffs_all(keys: RoomKeys) -> list[str]:
    """Every kept handoff's JSON, oldest first (at most ROOM_HANDOFFS_MAX)."""
    r = client()
    ids = cast("list[str]", await awaited(r.zrange(keys.handoff_order, 0, -1)))
    if not ids:
        return []
    found = await awaited(r.hmget(keys.handoffs, ids))
    return [str(v) for v in found if v is not None]
