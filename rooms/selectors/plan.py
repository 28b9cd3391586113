"""Reads of the plan: the whole plan, one task, the unblocked, an agent's own; the task page."""

from __future__ import annotations

import json
import math
from typing import cast

from rooms import clock, errors
from rooms.records import (
    KnownJson,
    known,
    known_around,
    lease_from_json,
    task_from_json,
    task_seen,
)
from rooms.refs import RoomRef
from rooms.results import (
    BlockingTask,
    ContextEntry,
    Event,
    Lease,
    Plan,
    Task,
    TaskDetail,
)
from rooms.selectors.context import context_list
from rooms.selectors.events import event_page
from rooms.selectors.handoffs import handoffs_all
from rooms.selectors.reviews import review_list
from rooms.store import leases as leases_store
from rooms.store import plan as plan_store
from rooms.suggest import HINT_SAMPLE, unknown_id


async def plan_get(room: RoomRef) -> Plan:
    stored = await plan_store.plan_read(room.keys)
    created = stored.created_at or clock.now_iso()
    tasks = [task_from_json(t) for t in stored.tasks]
    held = _leases_held(stored)
    for task in tasks:
        if task["id"] in held:
            task["leases"] = sorted(held[task["id"]], key=lambda lease: lease["path"])
    return {
        "project": room.room_id,
        "created_at": created,
        "updated_at": stored.updated_at or created,
        "tasks": tasks,
    }


async def plan_view(room: RoomRef) -> Plan:
    """plan_get for read_plan's answer, which nobody changes: its tasks are shared with
    other reads of the same stored tasks (records.task_seen) and its JSON text is made
    from theirs (records.KnownJson), so an unchanged task is neither decoded nor encoded
    again. Equal to plan_get's plan, its text equal to dumps of it
    (tests/rooms/test_plan_view.py)."""
    stored = await plan_store.plan_read(room.keys)
    created = stored.created_at or clock.now_iso()
    held = _leases_held(stored) if stored.leases else {}
    tasks: list[KnownJson] = []
    for raw in stored.tasks:
        task = task_seen(raw)
        leases = held.get(task["id"]) if held else None
        if leases:
            task = known({**task, "leases": sorted(leases, key=lambda lease: lease["path"])})
        tasks.append(task)
    plan = known_around(
        {
            "project": room.room_id,
            "created_at": created,
            "updated_at": stored.updated_at or created,
            "tasks": tasks,
        },
        "tasks",
    )
    return cast(Plan, plan)


def _leases_held(stored: plan_store.StoredPlan) -> dict[str, list[Lease]]:
    """task id -> its live leases, of a plan's stored leases."""
    now = clock.now_ms()
    held: dict[str, list[Lease]] = {}
    for raw in stored.leases:
        lease = json.loads(raw)
        if lease.get("task_id") and int(lease["expires_ms"]) > now:
            held.setdefault(str(lease["task_id"]), []).append(lease_from_json(raw))
    return held


async def task_not_found(room: RoomRef, task_id: str) -> errors.TaskNotFoundError:
    sample = await plan_store.task_hint_sample(room.keys, size=HINT_SAMPLE)
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
    raw = await plan_store.task_get(room.keys, task_id)
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


TASK_EVENTS_SCANNED = 2_000  # a task page looks this far back in the log for its events


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
            lease_from_json(raw) for raw in await leases_store.leases_live(room.keys, now_ms=now)
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
