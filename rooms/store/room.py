"""A room as a whole: its access check, status and mode, its counts and activity, and an
agent leaving it (rooms/lua/room/)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from rooms import idempotency, scripts
from rooms.keys import RoomKeys, room_tail
from rooms.store.connections import client
from rooms.store.engine import (
    awaited,
    event_args,
    idle_ttl_ms,
    named,
    run,
    run_write,
)

# Who owns the room, as access_room answers it: the caller's team, nobody Redis knows of
# (and no claim was asked), another team.
RoomOwner = Literal["ours", "unowned", "others"]
# Whether a leaver was present (its leaving is an event) or not.
LeaveOutcome = Literal["left", "absent"]


async def room_access(
    keys: RoomKeys, *, team_id: str, now_iso: str, claim: bool
) -> tuple[RoomOwner, str]:
    """(who owns the room, RoomOwner; its status when it is "ours", else ""). With `claim`,
    an unowned room becomes the team's. Refreshes the room's idle TTL when the team owns
    it."""
    rest = [k for k in keys.durable() if k not in (keys.owner, keys.meta)]
    res = await run(
        scripts.ACCESS_ROOM_SCRIPT,
        [keys.owner, keys.meta, *rest],
        [team_id, idle_ttl_ms(), now_iso, "1" if claim else "0"],
    )
    owner: RoomOwner = named(res, RoomOwner)
    return owner, (str(res[2]) if owner == "ours" else "")


async def room_status_set(
    keys: RoomKeys,
    *,
    status: str,
    by: str,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> tuple[str, str]:
    """(the previous status, the room_status_changed event id or "" if unchanged)."""
    res = await run_write(
        keys,
        scripts.SET_ROOM_STATUS_SCRIPT,
        [keys.meta, keys.events, keys.reads],
        [status, by, idle_ttl_ms(), *event_args(keys)],
        wrote="always",
        keyed=keyed,
        actor=actor,
    )
    return str(res[0]), str(res[1])


async def room_status_event(keys: RoomKeys, *, status: str, previous: str, by: str) -> str:
    """The log's room_status_changed event of an archive or a restore (not a write step: an
    archiving room refuses those)."""
    res = await run(
        scripts.STATUS_EVENT_SCRIPT,
        [keys.meta, keys.events, keys.reads, *room_tail(keys)],
        [status, previous, by, idle_ttl_ms(), *event_args(keys)],
    )
    return str(res)


async def room_mode_get(keys: RoomKeys) -> dict[str, Any]:
    """The room's mode (set_room_mode), {} when none was set."""
    raw = await awaited(client().hget(keys.meta, "mode"))
    found = json.loads(raw) if raw else {}
    return found if isinstance(found, dict) else {}


async def room_mode_set(
    keys: RoomKeys,
    *,
    changes_json: str,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> tuple[str, str]:
    """(the room's mode JSON after merging `changes_json` into it, who holds the turn)."""
    res = await run_write(
        keys,
        scripts.SET_ROOM_MODE_SCRIPT,
        [keys.meta],
        [changes_json, idle_ttl_ms()],
        wrote="always",
        keyed=keyed,
        actor=actor,
    )
    return str(res[0]), str(res[1] or "")


async def presence_leave(
    keys: RoomKeys,
    *,
    agent_id: str,
    shown: int,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> tuple[bool, list[tuple[str, int]]]:
    """(whether the agent was in presence, the `shown` most recently seen still there)."""
    answer = await run_write(
        keys,
        scripts.LEAVE_ROOM_SCRIPT,
        [keys.presence, keys.meta, keys.events, keys.reads, keys.agent_tags],
        [agent_id, idle_ttl_ms(), *event_args(keys), shown],
        wrote="always",
        keyed=keyed,
        actor=actor,
    )
    it = iter(answer[1])
    left = named(answer, LeaveOutcome) == "left"
    return left, [(str(a), int(float(s))) for a, s in zip(it, it, strict=True)]


@dataclass(frozen=True, slots=True)
class RoomCounts:
    created_at: str | None
    members: int
    tasks: int
    context: int
    events: int


async def room_counts(keys: RoomKeys) -> RoomCounts:
    res = await run(
        scripts.ROOM_INFO_SCRIPT,
        [keys.meta, keys.presence, keys.tasks, keys.context, keys.events],
        [],
    )
    return RoomCounts(
        str(res[0]) if res[0] else None, int(res[1]), int(res[2]), int(res[3]), int(res[4])
    )


@dataclass(frozen=True, slots=True)
class RoomActivity:
    created_at: str | None
    per_day: dict[int, int]  # days since 1970 (UTC) -> events of that day still in the log
    agents: int
    online: int
    context: int
    events: int
    statuses: list[str]


async def room_activity(keys: RoomKeys, *, online_since_ms: int) -> RoomActivity:
    res = await run(
        scripts.ROOM_ANALYTICS_SCRIPT,
        [keys.meta, keys.presence, keys.tasks, keys.context, keys.events],
        [online_since_ms],
    )
    it = iter(res[0])
    meta = dict(zip(it, it, strict=True))
    per_day = {int(k[2:]): int(v) for k, v in meta.items() if str(k).startswith("d:")}
    return RoomActivity(
        str(meta["created_at"]) if meta.get("created_at") else None,
        per_day,
        int(res[1]),
        int(res[2]),
        int(res[3]),
        int(res[4]),
        [str(x) for x in res[5]],
    )
