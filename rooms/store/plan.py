"""The plan: tasks, their claims (and the sweeper's index of claims due), dependencies,
deletes, and a task's submission for verification (rooms/lua/plan/; task_submit runs
reviews/submit_task, but it is a change of the task and answers a TaskStep)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from django.conf import settings

from rooms import idempotency, scripts
from rooms.keys import RoomKeys, room_tail
from rooms.keys import claims_due as claims_due_key
from rooms.store.connections import client
from rooms.store.engine import (
    AtQuota,
    awaited,
    event_args,
    idle_ttl_ms,
    named,
    pairs,
    run,
    run_write,
    unwritten,
)
from rooms.store.leases import LeaseDecision


async def task_add(
    keys: RoomKeys,
    *,
    task_id: str,
    task_json: str,
    label: str,
    now_iso: str,
    by: str,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> str | AtQuota:
    """The task_added event id, or AtQuota (ROOM_TASKS_MAX)."""
    res = await run_write(
        keys,
        scripts.ADD_TASK_SCRIPT,
        [keys.tasks, keys.task_order, keys.meta, keys.events, keys.reads, keys.task_titles],
        [
            task_id,
            task_json,
            now_iso,
            idle_ttl_ms(),
            *event_args(keys),
            by,
            int(settings.ROOM_TASKS_MAX),
            label,
        ],
        keyed=keyed,
        actor=actor,
    )
    return str(res[1]) if res[0] == "ok" else AtQuota(int(res[1]))


PlanCreateOutcome = Literal["ok", "exists", "quota"]


async def plan_create(
    keys: RoomKeys,
    tasks: list[tuple[str, str, str]],
    *,
    now_iso: str,
    by: str,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> tuple[PlanCreateOutcome, int]:
    """Write a whole plan ((id, JSON, label) per task) into a room that has none, in one
    step: ("ok", tasks added), ("exists", tasks already there) or ("quota", tasks asked)."""
    res = await run_write(
        keys,
        scripts.CREATE_PLAN_SCRIPT,
        [keys.tasks, keys.task_order, keys.meta, keys.events, keys.reads, keys.task_titles],
        [
            now_iso,
            idle_ttl_ms(),
            *event_args(keys),
            by,
            int(settings.ROOM_TASKS_MAX),
            len(tasks),
            *(part for task in tasks for part in task),
        ],
        keyed=keyed,
        actor=actor,
    )
    outcome: PlanCreateOutcome = named(res, PlanCreateOutcome)
    return outcome, int(res[1])


# What a step that changes one task answered (TaskStep.outcome): each step answers some of
# these, as its docstring says.
TaskOutcome = Literal[
    "ok",
    "unknown",
    "stale",
    "done",
    "owned",
    "unmet",
    "leased",
    "lease_quota",
    "unverified",
    "moved",
    "not_owner",
    "submitted",
    "quota",
]


@dataclass(frozen=True, slots=True)
class TaskStep:
    """What a script that changes one task answered. `outcome`: "ok"; "unknown" (no such
    task); "stale" (expectedVersion is not the task's version); "done" (a done task cannot
    be claimed or released); "owned" (another agent owns it); "unmet" (pending with
    dependencies not done: `unmet` lists them). `task_json` is the task as it is now (after
    the change when ok); `event_id` is "" when nothing was logged."""

    outcome: TaskOutcome
    task_json: str = ""
    event_id: str = ""
    unmet: list[dict[str, str]] = field(default_factory=list)
    leases_json: str = "[]"  # claim_task: the task's leases ("leased": the conflicting ones)
    used: int = 0  # "lease_quota": the room's live leases


def _task_keys(keys: RoomKeys) -> list[str]:
    """The keys of every script that changes a task (rooms/lua/lib/tasks.lua)."""
    return [
        keys.tasks,
        keys.meta,
        keys.events,
        keys.reads,
        keys.claims,
        keys.claim_holders,
        keys.leases,
        keys.lease_expiry,
    ]


def _task_step(res: Any, keyed: idempotency.KeyedCall | None = None) -> TaskStep:
    """A task step's answer, by the outcome it names (rooms/lua/plan/<step>.lua)."""
    outcome: TaskOutcome = named(res, TaskOutcome)
    if outcome == "unknown":
        return TaskStep("unknown")
    if outcome == "moved":
        unwritten(keyed)
        return TaskStep("moved")
    task_json = str(res[1])
    if outcome == "ok":
        return TaskStep(
            "ok", task_json, str(res[2]), leases_json=str(res[3]) if len(res) > 3 else "[]"
        )
    if outcome == "unmet":
        return TaskStep("unmet", task_json, unmet=json.loads(str(res[2])))
    if outcome == "leased":
        return TaskStep("leased", task_json, leases_json=str(res[2]))
    if outcome == "lease_quota":
        return TaskStep("lease_quota", task_json, used=int(res[2]))
    return TaskStep(outcome, task_json)


async def task_update(
    keys: RoomKeys,
    *,
    task_id: str,
    changes_json: str,
    now_iso: str,
    now_ms: int,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> TaskStep:
    """ok, unknown, stale (expectedVersion) or owned (another agent's task in progress, and
    the writer is not its owner)."""
    res = await run_write(
        keys,
        scripts.UPDATE_TASK_SCRIPT,
        _task_keys(keys),
        [
            task_id,
            changes_json,
            now_iso,
            idle_ttl_ms(),
            *event_args(keys),
            int(settings.TASK_NOTES_KEPT),
            now_ms,
        ],
        keyed=keyed,
        actor=actor,
    )
    return _task_step(res)


async def task_claim(
    keys: RoomKeys,
    *,
    task_id: str,
    agent_id: str,
    now_iso: str,
    now_ms: int,
    lease_ms: int,
    paths: list[str],
    paths_ms: int,
    lease_ids: list[str],
    leases_seen: LeaseDecision,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> TaskStep:
    """ok, unknown, done, owned, unmet, leased, lease_quota or moved (a lease was granted
    since `leases_seen`'s view: nothing written, decide again). A leased claim is also
    marked in the sweeper's index (a second, single-key step: the index is not in the
    room's slot)."""
    res = await run_write(
        keys,
        scripts.CLAIM_TASK_SCRIPT,
        _task_keys(keys),
        [
            task_id,
            agent_id,
            now_iso,
            now_ms,
            lease_ms,
            idle_ttl_ms(),
            *event_args(keys),
            json.dumps(paths),
            paths_ms,
            json.dumps(lease_ids),
            int(settings.ROOM_LEASES_MAX),
            leases_seen.generation,
            leases_seen.conflicts_json,
            json.dumps(leases_seen.own or {}),
        ],
        keyed=keyed,
        actor=actor,
    )
    step = _task_step(res, keyed)
    if step.outcome == "ok" and lease_ms > 0:
        expires = now_ms + lease_ms
        await awaited(client().zadd(claims_due_key(), {keys.room_id: expires}, lt=True))
    return step


async def task_release(
    keys: RoomKeys,
    *,
    task_id: str,
    agent_id: str,
    now_iso: str,
    note: str | None,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> TaskStep:
    """ok, unknown, done or owned (not the agent's)."""
    res = await run_write(
        keys,
        scripts.RELEASE_TASK_SCRIPT,
        _task_keys(keys),
        [
            task_id,
            agent_id,
            now_iso,
            note or "",
            int(settings.TASK_NOTES_KEPT),
            idle_ttl_ms(),
            *event_args(keys),
        ],
        keyed=keyed,
        actor=actor,
    )
    return _task_step(res)


# The most claims one sweep step lapses in one room (a room with more due goes again).
CLAIMS_LAPSED_PER_STEP = 100


async def claims_due(now_ms: int, limit: int) -> list[str]:
    """The rooms whose earliest claim expiry (as the sweeper's index has it) has passed."""
    raw = await awaited(
        client().zrangebyscore(claims_due_key(), "-inf", now_ms, start=0, num=limit)
    )
    return [str(room_id) for room_id in raw]


async def claims_expire(keys: RoomKeys, *, now_ms: int, now_iso: str) -> tuple[int, int]:
    """(claims lapsed, the room's earliest remaining expiry ms or -1): one step in the
    room's slot."""
    res = await run(
        scripts.EXPIRE_CLAIMS_SCRIPT,
        [*_task_keys(keys), *room_tail(keys)],
        [now_ms, now_iso, idle_ttl_ms(), *event_args(keys), CLAIMS_LAPSED_PER_STEP],
    )
    return int(res[0]), int(float(res[1]))


async def claims_due_settle(keys: RoomKeys, *, now_ms: int, now_iso: str) -> int:
    """After a sweep of the room: its member leaves the index, then the room is looked at
    again and its earliest remaining expiry put back (ZADD LT). A claim taken at any moment
    of this is covered: before the second look, that look sees it; after the removal, its
    own ZADD LT adds the member again. Returns the claims the second look lapsed."""
    r = client()
    await awaited(r.zrem(claims_due_key(), keys.room_id))
    lapsed, next_ms = await claims_expire(keys, now_ms=now_ms, now_iso=now_iso)
    if next_ms >= 0:
        await awaited(r.zadd(claims_due_key(), {keys.room_id: next_ms}, lt=True))
    return lapsed


async def task_get(keys: RoomKeys, task_id: str) -> str | None:
    return cast("str | None", await awaited(client().hget(keys.tasks, task_id)))


@dataclass(frozen=True, slots=True)
class StoredPlan:
    created_at: str | None
    updated_at: str | None
    tasks: list[str]
    leases: list[str] = field(default_factory=list)  # every lease, expired ones too


async def plan_read(keys: RoomKeys) -> StoredPlan:
    res = await run(
        scripts.READ_PLAN_SCRIPT, [keys.meta, keys.task_order, keys.tasks, keys.leases], []
    )
    return StoredPlan(
        created_at=res[0] or None,
        updated_at=res[1] or None,
        tasks=[str(t) for t in res[3:]],
        leases=[str(x) for x in res[2]],
    )


async def tasks_exist(keys: RoomKeys, task_ids: list[str]) -> list[bool]:
    """Which of these ids name tasks of the room (one HMGET of the short labels)."""
    if not task_ids:
        return []
    found = await awaited(client().hmget(keys.task_titles, task_ids))
    missing = [i for i, v in zip(task_ids, found, strict=True) if v is None]
    if missing:  # rooms written before task_titles existed: ask the tasks themselves
        there = await awaited(client().hmget(keys.tasks, missing))
        known = {i for i, v in zip(missing, there, strict=True) if v is not None}
        return [v is not None or i in known for i, v in zip(task_ids, found, strict=True)]
    return [True] * len(task_ids)


async def task_hint_sample(keys: RoomKeys, *, size: int) -> list[tuple[str, str]]:
    """(id, short title) of the room's `size` newest tasks: what a miss is compared with."""
    res = await run(scripts.TASK_HINTS_SCRIPT, [keys.task_order, keys.task_titles], [size])
    return pairs(res)


DependencyOutcome = Literal[
    "ok", "already", "unknown", "unknown_dependency", "stale", "cycle", "full"
]


@dataclass(frozen=True, slots=True)
class DependencyStep:
    """ "ok", "already" (nothing changed), "unknown" (the task), "unknown_dependency",
    "stale", "cycle" (`cycle`: the ids around it, the task first and last), "full"."""

    outcome: DependencyOutcome
    task_json: str = ""
    cycle: list[str] = field(default_factory=list)


async def task_add_dependency(
    keys: RoomKeys,
    *,
    task_id: str,
    depends_on: str,
    by: str,
    expected_version: int | None,
    now_iso: str,
    most: int,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> DependencyStep:
    res = await run_write(
        keys,
        scripts.ADD_DEPENDENCY_SCRIPT,
        [keys.tasks, keys.meta, keys.events, keys.reads],
        [
            task_id,
            depends_on,
            by,
            "" if expected_version is None else expected_version,
            now_iso,
            idle_ttl_ms(),
            *event_args(keys),
            most,
        ],
        keyed=keyed,
        actor=actor,
    )
    outcome: DependencyOutcome = named(res, DependencyOutcome)
    if outcome in ("unknown", "unknown_dependency"):
        return DependencyStep(outcome)
    if outcome == "cycle":
        return DependencyStep("cycle", cycle=[str(x) for x in json.loads(str(res[1]))])
    return DependencyStep(outcome, str(res[1]))


TaskDeleteOutcome = Literal["ok", "unknown", "stale"]


@dataclass(frozen=True, slots=True)
class TaskDeleted:
    """ "ok", "unknown" or "stale"; the task as it was, and the tasks that depended on it."""

    outcome: TaskDeleteOutcome
    task_json: str = ""
    dependents: list[dict[str, str]] = field(default_factory=list)


async def task_delete(
    keys: RoomKeys,
    *,
    task_id: str,
    by: str,
    expected_version: int | None,
    now_iso: str,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> TaskDeleted:
    res = await run_write(
        keys,
        scripts.DELETE_TASK_SCRIPT,
        [
            keys.tasks,
            keys.task_order,
            keys.task_titles,
            keys.meta,
            keys.events,
            keys.reads,
            keys.claims,
            keys.claim_holders,
            keys.leases,
            keys.lease_expiry,
        ],
        [
            task_id,
            by,
            "" if expected_version is None else expected_version,
            now_iso,
            idle_ttl_ms(),
            *event_args(keys),
        ],
        keyed=keyed,
        actor=actor,
    )
    outcome: TaskDeleteOutcome = named(res, TaskDeleteOutcome)
    if outcome == "unknown":
        return TaskDeleted("unknown")
    if outcome == "stale":
        return TaskDeleted("stale", str(res[1]))
    dependents = json.loads(str(res[2]))
    return TaskDeleted("ok", str(res[3]), dependents if isinstance(dependents, list) else [])


async def task_submit(
    keys: RoomKeys,
    *,
    task_id: str,
    agent_id: str,
    review_id: str,
    review_json: str,
    evidence_json: str,
    now_iso: str,
    keyed: idempotency.KeyedCall | None,
    actor: str | None,
) -> TaskStep:
    """ok, unknown, done, not_owner, submitted (one awaits verification) or quota."""
    res = await run_write(
        keys,
        scripts.SUBMIT_TASK_SCRIPT,
        [*_task_keys(keys), keys.reviews, keys.review_order],
        [
            task_id,
            agent_id,
            review_json,
            review_id,
            now_iso,
            idle_ttl_ms(),
            *event_args(keys),
            int(settings.ROOM_REVIEWS_MAX),
            evidence_json,
        ],
        keyed=keyed,
        actor=actor,
    )
    outcome: TaskOutcome = named(res, TaskOutcome)
    if outcome == "quota":
        return TaskStep("quota", used=int(res[1]))
    if outcome == "unknown":
        return TaskStep("unknown")
    return TaskStep(outcome, str(res[1]), str(res[2]) if outcome == "ok" else "")
