"""Reads of a room. Each takes a `RoomRef` (the access check already ran) and returns the
protocol's plain result shape."""

from __future__ import annotations

import asyncio
import itertools
import json
import math
from collections.abc import AsyncGenerator
from typing import Any, cast

from django.conf import settings

from rooms import clock, errors, store
from rooms.diff import payload_diff, payload_paths_diff
from rooms.records import (
    FIRST_EVENT_ID,
    LAST_EVENT_ID,
    context_from_json,
    event_from_entry,
    handoff_from_json,
    is_event_id,
    lease_from_json,
    task_from_json,
)
from rooms.refs import RoomRef
from rooms.results import (
    AgentAtWork,
    AgentPresence,
    BlockingTask,
    ContextDiff,
    ContextEntry,
    ContextHistory,
    Delivery,
    DeliveryState,
    Event,
    EventPage,
    EventReads,
    Handoff,
    Lease,
    LockRow,
    Plan,
    ReadReceipt,
    Review,
    RoomAnalytics,
    RoomInfo,
    RoomLive,
    RoomOverview,
    RoomSnapshot,
    RoomWaiting,
    SentMessage,
    Task,
    TaskDetail,
    VarGot,
    VarList,
)
from rooms.suggest import HINT_SAMPLE, describe, unknown_id

SNAPSHOT_MESSAGES = 20  # the newest messages a person watching the room sees

# --- Plan -------------------------------------------------------------------------------


async def plan_get(room: RoomRef) -> Plan:
    stored = await store.plan_read(room.keys)
    created = stored.created_at or clock.now_iso()
    tasks = [task_from_json(t) for t in stored.tasks]
    now = clock.now_ms()
    held: dict[str, list[Lease]] = {}
    for raw in stored.leases:
        lease = json.loads(raw)
        if lease.get("task_id") and int(lease["expires_ms"]) > now:
            held.setdefault(str(lease["task_id"]), []).append(lease_from_json(raw))
    for task in tasks:
        if task["id"] in held:
            task["leases"] = sorted(held[task["id"]], key=lambda lease: lease["path"])
    return {
        "project": room.room_id,
        "created_at": created,
        "updated_at": stored.updated_at or created,
        "tasks": tasks,
    }


async def task_not_found(room: RoomRef, task_id: str) -> errors.TaskNotFoundError:
    sample = await store.task_hint_sample(room.keys, size=HINT_SAMPLE)
    found = unknown_id(
        task_id,
        sample,
        closest_hint=errors.TASK_HINT_CLOSEST,
        none_close_hint=errors.TASK_HINT_NONE_CLOSE,
        empty_hint=errors.TASK_HINT_EMPTY,
    )
    return errors.TaskNotFoundError(
        errors.TASK_NOT_FOUND.format(task_id=task_id, hint=found.hint),
        extra={"taskId": task_id, "closest": found.closest, "examined": found.examined},
    )


async def task_get(room: RoomRef, *, task_id: str) -> Task:
    raw = await store.task_get(room.keys, task_id)
    if raw is None:
        raise await task_not_found(room, task_id)
    return task_from_json(raw)


def _priority_key(item: tuple[int, Task]) -> tuple[float, int]:
    index, task = item
    p = task.get("priority")
    return (float(p) if isinstance(p, int | float) else math.inf, index)


async def task_list_unblocked(room: RoomRef, *, agent_id: str | None) -> list[Task]:
    """Pending tasks whose every dependency exists and is done; a missing dependency is
    unmet (docs/protocol.md "Plan"), so an ill-formed plan stalls rather than proceeds."""
    plan = await plan_get(room)
    status = {t["id"]: t["status"] for t in plan["tasks"]}
    ready = []
    for index, task in enumerate(plan["tasks"]):
        if task["status"] != "pending":
            continue
        if any(status.get(dep) != "done" for dep in task.get("depends_on") or []):
            continue
        if agent_id is not None and task.get("owner") not in (None, "", agent_id):
            continue
        ready.append((index, task))
    return [t for _, t in sorted(ready, key=_priority_key)]


async def task_list_for_agent(room: RoomRef, *, agent_id: str) -> list[Task]:
    """The agent's tasks; each one not done names what it waits for (`blockedBy`): the
    dependencies not done, who holds them and the files they lease, so an agent blocked
    on another's work sees whose lease is in its way."""
    plan = await plan_get(room)
    by_id = {t["id"]: t for t in plan["tasks"]}
    mine = [t for t in plan["tasks"] if t.get("owner") == agent_id]
    for task in mine:
        if task["status"] == "done":
            continue
        waiting: list[BlockingTask] = []
        for dep_id in task["depends_on"]:
            dep = by_id.get(dep_id)
            if dep is not None and dep["status"] == "done":
                continue
            waiting.append(
                {
                    "taskId": dep_id,
                    "title": dep["title"] if dep else "",
                    "status": dep["status"] if dep else "missing",
                    "owner": dep["owner"] if dep else None,
                    "leases": dep.get("leases", []) if dep else [],
                }
            )
        if waiting:
            task["blockedBy"] = waiting
    return mine


# --- Context ----------------------------------------------------------------------------


async def context_not_found(room: RoomRef, entry_id: str) -> errors.ContextNotFoundError:
    sample = await store.context_hint_sample(room.keys, size=HINT_SAMPLE)
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
    found = await store.context_get(room.keys, entry_id)
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
    [readers] = await store.context_readers(
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
    entries = [context_from_json(e, p) for e, p in await store.context_all(room.keys)]
    listed = [
        e
        for e in entries
        if (type_ is None or e["type"] == type_) and (author is None or e["author"] == author)
    ]
    reader = _reader(room, agent_id)
    if reader is not None and listed:
        await store.context_readers(
            room.keys,
            agent_id=reader,
            read=[(e["id"], e["version"]) for e in listed],
            now_ms=clock.now_ms(),
        )
    return listed


# --- Events -----------------------------------------------------------------------------


async def event_not_found(room: RoomRef, event_id: str) -> errors.EventNotFoundError:
    if is_event_id(event_id):
        # Redis refuses an interval ending before 0-0 or starting after the largest id.
        before = (
            await store.event_range(room.keys, start="-", end=f"({event_id}", count=2, reverse=True)
            if event_id != FIRST_EVENT_ID
            else []
        )
        after = (
            await store.event_range(
                room.keys, start=f"({event_id}", end="+", count=1, reverse=False
            )
            if event_id != LAST_EVENT_ID
            else []
        )
        near = list(reversed(before)) + after
    else:
        near = await store.event_range(room.keys, start="-", end="+", count=3, reverse=True)
    pairs = [(eid, fields.get("type", "")) for eid, fields in near][:3]
    hint = (
        errors.EVENT_HINT_CLOSEST.format(closest=describe(pairs))
        if pairs
        else errors.EVENT_HINT_EMPTY
    )
    return errors.EventNotFoundError(
        errors.EVENT_NOT_FOUND.format(event_id=event_id, hint=hint),
        extra={"eventId": event_id, "closest": [p[0] for p in pairs]},
    )


def since_bound(since: str) -> str | None:
    """The first stream id strictly after `since` (an event id or an ISO time), or None when
    nothing can come after it (the largest stream id)."""
    if is_event_id(since):
        return None if since == LAST_EVENT_ID else f"({since}"
    try:
        ms = clock.ms_from_iso(since)
    except ValueError:
        raise errors.ToolArgumentsError(errors.SINCE_INVALID.format(since=since)) from None
    return f"{max(ms, -1) + 1}-0"


async def event_list(room: RoomRef, *, since: str | None, limit: int, order: str) -> list[Event]:
    """Newest `limit` first by default (roomd); with order="asc" and `since`, the first
    `limit` after it, so a reader can page through the whole retained log."""
    start = since_bound(since) if since else "-"
    if start is None:
        return []
    entries = await store.event_range(
        room.keys, start=start, end="+", count=limit, reverse=(order == "desc")
    )
    return [event_from_entry(e) for e in entries]


async def event_reads_get(room: RoomRef, *, event_id: str) -> EventReads:
    if not is_event_id(event_id) or await store.event_get(room.keys, event_id) is None:
        raise await event_not_found(room, event_id)
    raw = await store.event_reads(room.keys, event_id)
    decoded = json.loads(raw) if raw else []
    reads: list[ReadReceipt] = decoded if isinstance(decoded, list) else []
    return {"eventId": event_id, "readBy": [r["agentId"] for r in reads], "reads": reads}


# --- Presence ---------------------------------------------------------------------------


async def room_info(room: RoomRef) -> RoomInfo:
    """Every count exact, in one O(1) step."""
    counts = await store.room_counts(room.keys)
    return {
        "roomId": room.room_id,
        "ownerTeamId": str(room.team_id),
        "createdAt": counts.created_at or clock.now_iso(),
        "memberCount": counts.members,
        "taskCount": counts.tasks,
        "contextCount": counts.context,
        "eventCount": counts.events,
    }


async def room_analytics(room: RoomRef, *, days: int) -> RoomAnalytics:
    """Tasks by status, agents, and events per day over the whole retained log: the per-day
    counts are kept with every append, trim and deletion, so this reads O(tasks + days),
    never the log itself."""
    now = clock.now_ms()
    online_ms = int(settings.PRESENCE_ONLINE_SECONDS) * 1000
    activity = await store.room_activity(room.keys, online_since_ms=now - online_ms)
    statuses = activity.statuses
    total = len(statuses)
    done = statuses.count("done")
    today = now // 86_400_000
    by_date = {
        clock.iso_from_ms(day * 86_400_000)[:10]: activity.per_day.get(day, 0)
        for day in range(today - days + 1, today + 1)
    }
    in_window = sum(by_date.values())
    return {
        "roomId": room.room_id,
        "ownerTeamId": str(room.team_id),
        "createdAt": activity.created_at or clock.iso_from_ms(now),
        "tasks": {
            "total": total,
            "done": done,
            "pending": statuses.count("pending"),
            "inProgress": statuses.count("in_progress"),
            "blocked": statuses.count("blocked"),
            "completionRate": round(done / total, 4) if total else 0.0,
        },
        "agents": {"total": activity.agents, "online": activity.online},
        "contextCount": activity.context,
        # roomd's meanings (docs/tools.md): lastDays is the window asked for, perDay the average
        # a day over it; the counts by date are ours, beside them.
        "events": {
            "total": activity.events,
            "lastDays": days,
            "perDay": round(in_window / days, 2),
            "inWindow": in_window,
            "byDate": by_date,
        },
    }


async def context_history_newest_first(room: RoomRef, *, entry_id: str) -> ContextHistory:
    """roomd's get_context_history: the entry now, and its kept earlier versions newest
    first (each with `changes`, what differs from the one before it)."""
    versions = await context_history(room, entry_id=entry_id)
    return {"id": entry_id, "current": versions[-1], "history": versions[-2::-1]}


async def review_list(room: RoomRef, *, status: str | None) -> list[Review]:
    """Newest first; only those of `status` when given."""
    reviews: list[Review] = [json.loads(r) for r in await store.reviews_list(room.keys)]
    return [r for r in reviews if status is None or r["status"] == status]


async def review_not_found(room: RoomRef, review_id: str) -> errors.ReviewNotFoundError:
    reviews: list[Review] = [json.loads(r) for r in await store.reviews_list(room.keys)]
    sample = [
        (r["id"], f"{r['targetType']} {r['targetId']} ({r['status']})")
        for r in reviews[:HINT_SAMPLE]
    ]
    found = unknown_id(
        review_id,
        sample,
        closest_hint=errors.REVIEW_HINT_CLOSEST,
        none_close_hint=errors.REVIEW_HINT_NONE_CLOSE,
        empty_hint=errors.REVIEW_HINT_EMPTY,
    )
    return errors.ReviewNotFoundError(
        errors.REVIEW_NOT_FOUND.format(review_id=review_id, hint=found.hint),
        extra={"reviewId": review_id, "closest": found.closest},
    )


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


def presence_rows(seen: list[tuple[str, int]], *, now_ms: int | None = None) -> list[AgentPresence]:
    online_ms = int(settings.PRESENCE_ONLINE_SECONDS) * 1000
    now = clock.now_ms() if now_ms is None else now_ms
    rows: list[AgentPresence] = [
        {
            "agentId": agent,
            "status": "online" if now - ms <= online_ms else "offline",
            "lastSeen": clock.iso_from_ms(ms),
        }
        for agent, ms in seen
    ]
    rows.sort(key=lambda r: (r["status"] != "online", r["agentId"]))
    return rows


async def presence_list(room: RoomRef) -> list[AgentPresence]:
    return presence_rows(await store.presence_all(room.keys))


# --- Locks, shared variables ------------------------------------------------------------


async def lock_list(room: RoomRef) -> list[LockRow]:
    now = clock.now_ms()
    return [
        {"resource": res, "owner": holder, "expiresAt": clock.iso_from_ms(now + remaining)}
        for res, holder, remaining in await store.lock_all(room.keys, now_ms=now)
    ]


async def var_get(room: RoomRef, *, key: str) -> VarGot:
    value = await store.var_get(room.keys, key)
    return {"key": key, "value": value, "found": value is not None}


async def var_list(room: RoomRef) -> VarList:
    found = await store.var_all(room.keys)
    return {"vars": dict(sorted(found.items())), "count": len(found)}


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
        json.loads(v) for v in await store.context_history(room.keys, entry_id)
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


async def room_overview(room: RoomRef) -> RoomOverview:
    """A room at a glance: who is online and how far the plan is."""
    plan = await plan_get(room)
    presence = await presence_list(room)
    return {
        "online": [p["agentId"] for p in presence if p["status"] == "online"],
        "done": sum(1 for t in plan["tasks"] if t["status"] == "done"),
        "total": len(plan["tasks"]),
    }


def _delivery(agent: str, value: str, now_ms: int) -> Delivery:
    state, since, expires = value.split(" ") if value else ("stored", "0", "0")
    if state != "acked" and int(expires) and now_ms >= int(expires):
        state, since = "expired", expires
    return {
        "agentId": agent,
        "state": cast(DeliveryState, state),
        "at": clock.iso_from_ms(int(since)),
    }


async def message_rows(room: RoomRef, *, sender: str | None, limit: int) -> list[SentMessage]:
    """The newest kept messages (of one sender, or of the room), newest first, each with
    every recipient's delivery state as of now (an unacked one past its expiry: expired)."""
    now = clock.now_ms()
    rows: list[SentMessage] = []
    for raw, values in await store.messages_sent(room.keys, agent_id=sender, limit=limit):
        kept = json.loads(raw)
        rows.append(
            {
                "messageId": str(kept["messageId"]),
                "from": str(kept["from"]),
                "to": str(kept["to"]),
                "subject": kept.get("subject"),
                "body": str(kept["body"]),
                "at": str(kept["at"]),
                "ackRequired": bool(kept.get("ackRequired")),
                "recipients": [
                    _delivery(str(agent), value, now)
                    for agent, value in zip(kept["rcpt"] or [], values, strict=False)
                ],
            }
        )
    return rows


async def handoffs_all(room: RoomRef) -> list[Handoff]:
    """Every kept handoff, oldest first."""
    return [handoff_from_json(raw) for raw in await store.handoffs_all(room.keys)]


async def handoffs_pending(room: RoomRef, agent_id: str) -> list[Handoff]:
    """The handoffs offered to the agent and not answered yet, oldest first."""
    return [h for h in await handoffs_all(room) if h["to"] == agent_id and h["status"] == "offered"]


async def context_readers_attach(room: RoomRef, entries: list[ContextEntry]) -> None:
    """Who read which version of each entry, and who is behind (records no read)."""
    if not entries:
        return
    readers = await store.context_readers(
        room.keys,
        agent_id=None,
        read=[(e["id"], e["version"]) for e in entries],
        now_ms=clock.now_ms(),
    )
    for entry, read in zip(entries, readers, strict=True):
        _readers_set(entry, read)


async def room_snapshot(room: RoomRef, *, events: int = 50) -> RoomSnapshot:
    """Everything a person watching the room sees, in one read of each primitive."""
    context = await context_list(room, type_=None, author=None)
    await context_readers_attach(room, context)
    now = clock.now_ms()
    return {
        "plan": await plan_get(room),
        "presence": await presence_list(room),
        "events": await event_list(room, since=None, limit=events, order="desc"),
        "event_count": await store.event_count(room.keys),
        "context": context,
        "vars": (await var_list(room))["vars"],
        "locks": await lock_list(room),
        "leases": sorted(
            (lease_from_json(raw) for raw in await store.leases_live(room.keys, now_ms=now)),
            key=lambda lease: (lease["path"], lease["holder"]),
        ),
        "messages": await message_rows(room, sender=None, limit=SNAPSHOT_MESSAGES),
    }


def agents_at_work(snapshot: RoomSnapshot) -> list[AgentAtWork]:
    """Each agent of the room's presence with its tasks in progress, its last action (of
    the events the snapshot holds) and its leases."""
    tasks = snapshot["plan"]["tasks"]
    return [
        {
            "agentId": p["agentId"],
            "status": p["status"],
            "lastSeen": p["lastSeen"],
            "working_on": [
                t for t in tasks if t.get("owner") == p["agentId"] and t["status"] == "in_progress"
            ],
            "last": next((e for e in snapshot["events"] if e["from"] == p["agentId"]), None),
            "leases": [lease for lease in snapshot["leases"] if lease["holder"] == p["agentId"]],
        }
        for p in snapshot["presence"]
    ]


def room_waiting(
    snapshot: RoomSnapshot, reviews: list[Review], handoffs: list[Handoff]
) -> RoomWaiting:
    """What waits for a person: submissions to verify, pending reviews (a submission is a
    review of kind "submission", listed with its task), offered handoffs, change requests
    nobody answered (an answer sets the entry's payload `status`), blocked tasks."""
    tasks = snapshot["plan"]["tasks"]
    return {
        "submitted": [
            t for t in tasks if dict(t.get("verification") or {}).get("state") == "submitted"
        ],
        "reviews": [
            r for r in reviews if r["status"] == "pending" and r.get("kind") != "submission"
        ],
        "handoffs": [h for h in handoffs if h["status"] == "offered"],
        "change_requests": [
            c
            for c in snapshot["context"]
            if c["type"] == "change_request" and not dict(c.get("payload") or {}).get("status")
        ],
        "blocked": [t for t in tasks if t["status"] == "blocked"],
    }


async def room_live(room: RoomRef) -> RoomLive:
    """The room page's one read: the snapshot, each agent at work, what waits."""
    snapshot = await room_snapshot(room)
    waiting = room_waiting(
        snapshot, await review_list(room, status="pending"), await handoffs_all(room)
    )
    return {"snapshot": snapshot, "agents": agents_at_work(snapshot), "waiting": waiting}


async def event_newest_id(room: RoomRef) -> str:
    """The id of the newest event, or "0-0" for an empty log."""
    newest = await store.event_range(room.keys, start="-", end="+", count=1, reverse=True)
    return newest[0][0] if newest else "0-0"


async def event_follow(
    room: RoomRef, *, after: str | None, keepalive_seconds: float
) -> AsyncGenerator[Event | None, None]:
    """Every event after `after` (an event id; None = from now on), in log order, as they
    are written; None whenever `keepalive_seconds` pass quietly. Ends only when the caller
    stops iterating. Resuming with the last id seen gives no gap and no repeat."""
    if after is None or not is_event_id(after):
        newest = await store.event_range(room.keys, start="-", end="+", count=1, reverse=True)
        cursor = newest[0][0] if newest else "0-0"
    else:
        cursor = after
    while True:
        async with store.room_watch(room.keys) as woken:
            entries = (
                await store.event_range(
                    room.keys, start=f"({cursor}", end="+", count=100, reverse=False
                )
                if cursor != LAST_EVENT_ID
                else []
            )
            if entries:
                for entry in entries:
                    cursor = entry[0]
                    yield event_from_entry(entry)
                continue
            try:
                await asyncio.wait_for(woken.wait(), keepalive_seconds)
            except TimeoutError:
                yield None


TASK_EVENTS_SCANNED = 2_000  # a task page looks this far back in the log for its events
PAGE_SCAN_MOST = 5_000  # a filtered page of the log reads at most this many events


def event_about_task(event: Event, task_id: str) -> bool:
    """Whether `event` is about the task: it carries the task, its id, or a handoff, review
    or lease of it."""
    payload = event.get("payload")
    if not isinstance(payload, dict):
        return False
    if event["type"] == "task_added":  # its payload is the task itself
        return payload.get("id") == task_id
    for key in ("task", "handoff", "review", "lease"):
        inner = payload.get(key)
        if isinstance(inner, dict) and task_id in (inner.get("id"), inner.get("taskId")):
            return True
        if isinstance(inner, dict) and inner.get("targetId") == task_id:
            return True
    if isinstance(payload.get("lease"), dict) and payload["lease"].get("task_id") == task_id:
        return True
    return task_id in (payload.get("taskId"), payload.get("task_id"), payload.get("targetId"))


def _context_names_task(entry: ContextEntry, task_id: str) -> bool:
    payload = entry.get("payload")
    if not isinstance(payload, dict):
        return False
    refs = payload.get("references")
    return task_id in (payload.get("task_id"), payload.get("blocking_task_id")) or (
        isinstance(refs, list) and task_id in refs
    )


async def task_detail(room: RoomRef, *, task_id: str) -> TaskDetail:
    """The task and what surrounds it: its leases, handoffs, reviews, the context that
    names it or was handed over with it, the tasks that wait for it, and its events."""
    task = await task_get(room, task_id=task_id)
    plan = await plan_get(room)
    handoffs = [h for h in await handoffs_all(room) if h["taskId"] == task_id]
    handed = {cid for h in handoffs for cid in h.get("contextIds") or []}
    context = [
        e
        for e in await context_list(room, type_=None, author=None)
        if e["id"] in handed or _context_names_task(e, task_id)
    ]
    now = clock.now_ms()
    leases = [
        lease
        for lease in (
            lease_from_json(raw) for raw in await store.leases_live(room.keys, now_ms=now)
        )
        if lease.get("taskId") == task_id
    ]
    events: list[Event] = []
    before: str | None = None
    scanned = 0
    while scanned < TASK_EVENTS_SCANNED:
        page = await event_page(room, before=before, limit=500)
        scanned += len(page["events"])
        events += [e for e in page["events"] if event_about_task(e, task_id)]
        if page["older"] is None:
            break
        before = page["older"]
    return {
        "task": task,
        "leases": leases,
        "handoffs": handoffs,
        "reviews": [
            r
            for r in await review_list(room, status=None)
            if r["targetType"] == "task" and r["targetId"] == task_id
        ],
        "context": context,
        "events": events,
        "dependents": [t for t in plan["tasks"] if task_id in (t.get("depends_on") or [])],
    }


async def event_page(
    room: RoomRef,
    *,
    before: str | None,
    limit: int,
    agent: str | None = None,
    type_: str | None = None,
) -> EventPage:
    """The newest `limit` events before `before` (an event id; None = from the newest),
    those from `agent` and of `type_` only when given. A filtered page reads at most
    PAGE_SCAN_MOST events, so a filter nothing matches costs a bounded read, and says
    where it stopped (`older`)."""
    end = "+"
    if before is not None:
        if not is_event_id(before) or before == FIRST_EVENT_ID:  # nothing is before 0-0
            return {"events": [], "older": None, "scanned": 0}
        end = f"({before}"
    found: list[Event] = []
    scanned = 0
    while len(found) < limit and scanned < PAGE_SCAN_MOST:
        # One more than a page unfiltered, so a log of exactly N pages ends without an
        # "older" link to an empty one.
        want = limit + 1 if agent is None and type_ is None else 200
        entries = await store.event_range(room.keys, start="-", end=end, count=want, reverse=True)
        if not entries:
            return {"events": found, "older": None, "scanned": scanned}
        for at, entry in enumerate(entries):
            scanned += 1
            event = event_from_entry(entry)
            if (agent is None or event["from"] == agent) and (
                type_ is None or event["type"] == type_
            ):
                found.append(event)
                if len(found) == limit:
                    more = at + 1 < len(entries) or len(entries) == want
                    return {
                        "events": found,
                        "older": event["id"] if more else None,
                        "scanned": scanned,
                    }
        end = f"({entries[-1][0]}"
        if len(entries) < want:
            return {"events": found, "older": None, "scanned": scanned}
    return {"events": found, "older": end[1:], "scanned": scanned}
