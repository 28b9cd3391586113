"""Writes to the plan: tasks, claims, dependencies; the claim sweep."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

from rooms import clock, errors, idempotency
from rooms.ids import new_id
from rooms.keys import RoomKeys
from rooms.names import attributed
from rooms.overlaps import lease_decide, matched, on_lease_view
from rooms.paths import path_normalize
from rooms.quotas import quota_error
from rooms.records import (
    dumps,
    lease_from_json,
    task_from_json,
)
from rooms.refs import RoomRef
from rooms.results import (
    Task,
    TaskDeletedResult,
)
from rooms.schemas import MAX_DEPENDS_ON
from rooms.selectors import plan as plan_selectors
from rooms.store import engine as engine_store
from rooms.store import leases as leases_store
from rooms.store import plan as plan_store
from rooms.suggest import LABEL_CHARS


async def task_add(
    room: RoomRef,
    *,
    title: str,
    description: str,
    depends_on: list[str],
    priority: int | None,
    agent_id: str | None,
) -> Task:
    """A new pending, unowned task. Unknown dependency ids are kept (a missing dependency
    is unmet, docs/protocol.md "Plan") and listed in `warnings`."""
    now = clock.now_iso()
    task: Task = {
        "id": new_id("t_"),
        "title": title,
        "description": description,
        "status": "pending",
        "owner": None,
        "created_at": now,
        "updated_at": now,
        "depends_on": list(dict.fromkeys(depends_on)),
        "version": 1,
    }
    if priority is not None:
        task["priority"] = priority
    warnings: list[str] = []
    if task["depends_on"]:
        exists = await plan_store.tasks_exist(room.keys, task["depends_on"])
        missing = [d for d, there in zip(task["depends_on"], exists, strict=True) if not there]
        if missing:
            warnings.append(
                "depends_on names tasks that do not exist (yet): "
                + ", ".join(missing)
                + "; this task stays blocked until they exist and are done."
            )
    # What a retry with the same idempotencyKey must answer: the first call's task.
    minted = idempotency.minted(room.call, {"task": task, "warnings": warnings})
    added = await plan_store.task_add(
        room.keys,
        task_id=task["id"],
        task_json=dumps(task),
        label=title[:LABEL_CHARS],
        now_iso=now,
        by=attributed(agent_id),
        keyed=room.call,
        actor=room.actor,
    )
    if isinstance(added, engine_store.AtQuota):
        raise quota_error("ROOM_TASKS_MAX", added.used)
    minted = idempotency.minted_final(room.call, minted)
    task, warnings = minted["task"], minted["warnings"]
    if warnings:
        task["warnings"] = warnings
    return task


async def task_update(
    room: RoomRef,
    *,
    task_id: str,
    status: str,
    owner_given: bool,
    owner: str | None,
    note: str | None,
    description: str | None,
    agent_id: str | None,
    expected_version: int | None = None,
) -> Task:
    """One atomic step however many agents write at once: no lost update, no "busy". A
    task in progress under one agent is not given to another by anyone but its owner (the
    silent takeover roomd allows); with `expected_version`, a stale writer is refused."""
    changes: dict[str, Any] = {
        "status": status,
        "set_owner": owner_given,
        "owner": owner or None,
        "by": attributed(agent_id or owner),
    }
    if note is not None:
        changes["note"] = note
    if description is not None:
        changes["description"] = description
    step, current = await _task_changed(room, task_id, changes, expected_version)
    if step.outcome == "owned":
        raise errors.TaskClaimError(
            errors.TASK_TAKEOVER.format(
                task_id=task_id, owner=current["owner"], new_owner=owner or ""
            ),
            extra=_task_state(current),
        )
    if step.outcome == "unverified":
        raise errors.TaskClaimError(
            errors.TASK_EVIDENCE_REQUIRED.format(task_id=task_id),
            extra={**_task_state(current), "evidenceRequired": True},
        )
    return current


async def _task_changed(
    room: RoomRef, task_id: str, changes: dict[str, Any], expected_version: int | None
) -> tuple[plan_store.TaskStep, Task]:
    """The update script's one step with `changes`, and the task after it; an unknown task
    and a stale expectedVersion are refused here, for every tool that changes a task so."""
    if expected_version is not None:
        changes = {**changes, "expected_version": expected_version}
    now = clock.now_ms()
    step = await plan_store.task_update(
        room.keys,
        task_id=task_id,
        changes_json=dumps(changes),
        now_iso=clock.iso_from_ms(now),
        now_ms=now,
        keyed=room.call,
        actor=room.actor,
    )
    if step.outcome == "unknown":
        raise await plan_selectors.task_not_found(room, task_id)
    current = task_from_json(step.task_json)
    if step.outcome == "stale":
        raise _version_conflict(current, expected_version)
    return step, current


def _task_state(task: Task) -> dict[str, Any]:
    """What a refusal tells about the task, for an agent's program to act on."""
    return {
        "taskId": task["id"],
        "owner": task["owner"],
        "status": task["status"],
        "version": task["version"],
    }


def _version_conflict(task: Task, expected: int | None) -> errors.TaskVersionConflictError:
    return errors.TaskVersionConflictError(
        errors.TASK_VERSION_CONFLICT.format(
            task_id=task["id"],
            current=task["version"],
            status=task["status"],
            owner=f'"{task["owner"]}"' if task["owner"] else "nobody",
            expected=expected,
        ),
        extra=_task_state(task),
    )


TASK_PATHS_SECONDS = 3600  # a claim without leaseSeconds leases its paths this long


async def task_claim(
    room: RoomRef,
    *,
    task_id: str,
    agent_id: str,
    lease_seconds: int | None,
    paths: list[str] | None = None,
) -> Task:
    """Owner and in_progress in one step, only if the task is unowned (or already the
    agent's), not done, and for a pending task every dependency done: of N agents claiming
    at once exactly one wins, and each other one is told who did. The owner claiming again
    renews its lease. With `lease_seconds`, the claim lapses unless its owner's heartbeats
    or updates renew it (claims_sweep)."""
    least = int(settings.CLAIM_LEASE_MIN_SECONDS)
    if lease_seconds is not None and lease_seconds < least:
        raise errors.ToolArgumentsError(
            errors.LEASE_TOO_SHORT.format(least=least), extra={"fields": ["leaseSeconds"]}
        )
    wanted = list(dict.fromkeys(path_normalize(p) for p in paths or []))
    lease_ids = [new_id("l_") for _ in wanted]

    async def claim(view: leases_store.LeaseView) -> plan_store.TaskStep:
        now = clock.now_ms()
        return await plan_store.task_claim(
            room.keys,
            task_id=task_id,
            agent_id=agent_id,
            now_iso=clock.iso_from_ms(now),
            now_ms=now,
            lease_ms=(lease_seconds or 0) * 1000,
            paths=wanted,
            paths_ms=(lease_seconds or TASK_PATHS_SECONDS) * 1000,
            lease_ids=lease_ids,
            leases_seen=await matched(
                view,
                lambda: lease_decide(view, agent_id=agent_id, paths=wanted, mode=None, now_ms=now),
            ),
            keyed=room.call,
            actor=room.actor,
        )

    if wanted:
        step = await on_lease_view(room.keys, claim)
    else:
        step = await claim(leases_store.LeaseView("", []))
    if step.outcome == "unknown":
        raise await plan_selectors.task_not_found(room, task_id)
    current = task_from_json(step.task_json)
    state = _task_state(current)
    if step.outcome == "done":
        owner = f'"{current["owner"]}"' if current["owner"] else "nobody"
        raise errors.TaskClaimError(
            errors.TASK_DONE_NO_CLAIM.format(task_id=task_id, owner=owner), extra=state
        )
    if step.outcome == "owned":
        raise errors.TaskClaimError(
            errors.TASK_OWNED.format(
                task_id=task_id,
                status=current["status"],
                owner=current["owner"],
                version=current["version"],
            ),
            extra=state,
        )
    if step.outcome == "unmet":
        unmet = ", ".join(f"{u['id']} ({u['status']})" for u in step.unmet)
        raise errors.TaskClaimError(
            errors.TASK_DEPENDENCIES_UNMET.format(task_id=task_id, unmet=unmet),
            extra={**state, "unmet": step.unmet},
        )
    if step.outcome == "leased":
        conflicts = json.loads(step.leases_json)
        named = "; ".join(
            errors.TASK_PATH_CONFLICT.format(
                wanted=c["wanted"],
                path=c["path"],
                holder=c["holder"],
                mode=c["mode"],
                until=clock.iso_from_ms(int(c["expires_ms"])),
            )
            for c in conflicts
        )
        raise errors.TaskClaimError(
            errors.TASK_PATHS_LEASED.format(task_id=task_id, conflicts=named),
            extra={**state, "holders": sorted({str(c["holder"]) for c in conflicts})},
        )
    if step.outcome == "lease_quota":
        raise quota_error("ROOM_LEASES_MAX", step.used)
    if wanted:
        current["leases"] = [lease_from_json(x) for x in _json_list(step.leases_json)]
    return current


def _json_list(raw: str) -> list[str]:
    """The lease JSONs of a script's answer, each as its own text."""
    return [json.dumps(x) for x in json.loads(raw)]


async def task_release(room: RoomRef, *, task_id: str, agent_id: str, note: str | None) -> Task:
    """Back to pending and unowned, by its owner only; its lease goes with it."""
    step = await plan_store.task_release(
        room.keys,
        task_id=task_id,
        agent_id=agent_id,
        now_iso=clock.now_iso(),
        note=note,
        keyed=room.call,
        actor=room.actor,
    )
    if step.outcome == "unknown":
        raise await plan_selectors.task_not_found(room, task_id)
    current = task_from_json(step.task_json)
    if step.outcome == "done":
        raise errors.TaskClaimError(
            errors.TASK_DONE_NO_RELEASE.format(task_id=task_id), extra=_task_state(current)
        )
    if step.outcome == "owned":
        owner = f'"{current["owner"]}"' if current["owner"] else "nobody"
        raise errors.TaskClaimError(
            errors.TASK_NOT_YOURS.format(task_id=task_id, owner=owner, agent_id=agent_id),
            extra=_task_state(current),
        )
    return current


async def task_set_priority(
    room: RoomRef,
    *,
    task_id: str,
    priority: int,
    agent_id: str | None,
    expected_version: int | None,
) -> Task:
    """update_task's one step with only the priority changing (task_updated names it)."""
    changes: dict[str, Any] = {"priority": priority, "set_owner": False, "by": attributed(agent_id)}
    _, current = await _task_changed(room, task_id, changes, expected_version)
    return current


async def task_add_dependency(
    room: RoomRef,
    *,
    task_id: str,
    depends_on: str,
    agent_id: str | None,
    expected_version: int | None,
) -> Task:
    """Idempotent: a dependency already there changes nothing. Unknown ids, a task on itself
    and any edge that would close a cycle are refused (the cycle named, in order)."""
    if depends_on == task_id:
        raise errors.ToolArgumentsError(
            errors.DEPENDENCY_SELF.format(task_id=task_id), extra={"fields": ["dependsOn"]}
        )
    most = MAX_DEPENDS_ON
    step = await plan_store.task_add_dependency(
        room.keys,
        task_id=task_id,
        depends_on=depends_on,
        by=attributed(agent_id),
        expected_version=expected_version,
        now_iso=clock.now_iso(),
        most=most,
        keyed=room.call,
        actor=room.actor,
    )
    if step.outcome == "unknown":
        raise await plan_selectors.task_not_found(room, task_id)
    if step.outcome == "unknown_dependency":
        missing = await plan_selectors.task_not_found(room, depends_on)
        hint = missing.message.split(". ", 1)[1] if ". " in missing.message else ""
        raise errors.TaskNotFoundError(
            errors.DEPENDENCY_UNKNOWN.format(depends_on=depends_on, hint=hint),
            extra={**missing.extra, "field": "dependsOn"},
        )
    if step.outcome == "cycle":
        raise errors.ToolArgumentsError(
            errors.DEPENDENCY_CYCLE.format(
                task_id=task_id, depends_on=depends_on, cycle=" -> ".join(step.cycle)
            ),
            extra={"cycle": step.cycle},
        )
    current = task_from_json(step.task_json)
    if step.outcome == "stale":
        raise _version_conflict(current, expected_version)
    if step.outcome == "full":
        raise errors.ToolArgumentsError(
            errors.DEPENDENCY_FULL.format(task_id=task_id, most=most),
            extra={"fields": ["dependsOn"]},
        )
    return current


async def task_delete(
    room: RoomRef, *, task_id: str, agent_id: str | None, expected_version: int | None
) -> TaskDeletedResult:
    """Gone from the plan, its claim with it; the tasks that depended on it are named (their
    dependency is now unmet)."""
    step = await plan_store.task_delete(
        room.keys,
        task_id=task_id,
        by=attributed(agent_id),
        expected_version=expected_version,
        now_iso=clock.now_iso(),
        keyed=room.call,
        actor=room.actor,
    )
    if step.outcome == "unknown":
        raise await plan_selectors.task_not_found(room, task_id)
    if step.outcome == "stale":
        raise _version_conflict(task_from_json(step.task_json), expected_version)
    result: TaskDeletedResult = {"deleted": True, "taskId": task_id}
    if step.dependents:
        names = ", ".join(f'{d["id"]} ("{d["title"]}")' for d in step.dependents)
        result["warnings"] = [
            f"These tasks depended on {task_id} and now wait on a task that does not exist: "
            f"{names}. Remove or replace the dependency (update the plan) so they can start."
        ]
    return result


# One sweep handles at most this many due rooms per pass, and makes at most this many passes.
SWEEP_ROOMS_PER_PASS = 500


SWEEP_PASSES = 20


async def claims_sweep() -> int:
    """Lapse every claim whose lease ran out, in every room, without any agent calling
    (the periodic task claims.sweep runs it): each task goes back to pending with a
    task_claim_expired event. Safe to run in several processes at once. Returns how many
    claims lapsed."""
    lapsed = 0
    for _ in range(SWEEP_PASSES):
        now = clock.now_ms()
        due = await plan_store.claims_due(now, SWEEP_ROOMS_PER_PASS)
        if not due:
            break
        for room_id in due:
            keys = RoomKeys(room_id)
            n, _ = await plan_store.claims_expire(keys, now_ms=now, now_iso=clock.iso_from_ms(now))
            lapsed += n + await plan_store.claims_due_settle(
                keys, now_ms=now, now_iso=clock.iso_from_ms(now)
            )
    return lapsed
