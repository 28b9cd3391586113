"""Writes to a room: the domain rules, one atomic store step, and the announcement (the
event) inside that same step, so no write is ever half-done."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import string
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from django.conf import settings
from pydantic import ValidationError

from rooms import clock, errors, idempotency, memory, selectors, store, templates, turns
from rooms.keys import RoomKeys
from rooms.overlaps import lease_decide, matched, on_lease_view
from rooms.paths import path_normalize
from rooms.quotas import quota_error
from rooms.records import (
    context_from_json,
    dumps,
    event_from_entry,
    is_event_id,
    lease_from_json,
    task_from_json,
)
from rooms.refs import RoomRef
from rooms.results import (
    ContextDeleted,
    ContextEntry,
    Event,
    EventDeleted,
    EventMarked,
    Heartbeat,
    Left,
    LockGranted,
    LockReleased,
    Review,
    RoomFromTemplate,
    Summary,
    Task,
    TaskDeletedResult,
    Unread,
    VarSet,
    Waited,
)
from rooms.schemas import CONTEXT_PAYLOADS, MAX_DEPENDS_ON, ToolInput

T = TypeVar("T")
_ID_ALPHABET = string.ascii_letters + string.digits
UNNAMED_AGENT = "anonymous"
LABEL_CHARS = 80  # how much of a title or summary an unknown-id hint compares against
# The types the server itself writes: an agent posting one would forge the room's history.
RESERVED_EVENT_TYPES = (
    "task_added",
    "task_updated",
    "task_deleted",
    "task_claimed",
    "task_released",
    "task_claim_expired",
    "context_available",
    "context_updated",
    "context_deleted",
    "context_stale",
    "shared_var_set",
    "agent_left",
    "event_deleted",
    "review_requested",
    "review_approved",
    "review_rejected",
    "lease_granted",
    "lease_released",
    "message",
    "message_acked",
    "task_submitted",
    "task_verified",
    "task_rejected",
    "handoff_offered",
    "handoff_accepted",
    "handoff_declined",
    "room_status_changed",
    "broadcast",  # room_broadcast's own (event_post with `reserved=True`)
)


def new_id(prefix: str) -> str:
    """A short random id (`t_` + 12 chars for tasks, `c_` for context), unguessable enough
    that two agents adding at once never collide."""
    return prefix + "".join(secrets.choice(_ID_ALPHABET) for _ in range(12))


def _who(claimed: str | None) -> str:
    """Who a write is attributed to. A bound credential's name was put into the arguments
    by the access check already (tenants.access.actors_bind); rooms/ trusts them."""
    return claimed or UNNAMED_AGENT


# --- Plan -------------------------------------------------------------------------------


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
        exists = await store.tasks_exist(room.keys, task["depends_on"])
        missing = [d for d, there in zip(task["depends_on"], exists, strict=True) if not there]
        if missing:
            warnings.append(
                "depends_on names tasks that do not exist (yet): "
                + ", ".join(missing)
                + "; this task stays blocked until they exist and are done."
            )
    # What a retry with the same idempotencyKey must answer: the first call's task.
    minted = idempotency.minted(room.call, {"task": task, "warnings": warnings})
    added = await store.task_add(
        room.keys,
        task_id=task["id"],
        task_json=dumps(task),
        label=title[:LABEL_CHARS],
        now_iso=now,
        by=_who(agent_id),
        keyed=room.call,
    )
    if isinstance(added, store.AtQuota):
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
        "by": _who(agent_id or owner),
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
) -> tuple[store.TaskStep, Task]:
    """The update script's one step with `changes`, and the task after it; an unknown task
    and a stale expectedVersion are refused here, for every tool that changes a task so."""
    if expected_version is not None:
        changes = {**changes, "expected_version": expected_version}
    now = clock.now_ms()
    step = await store.task_update(
        room.keys,
        task_id=task_id,
        changes_json=dumps(changes),
        now_iso=clock.iso_from_ms(now),
        now_ms=now,
        keyed=room.call,
    )
    if step.outcome == "unknown":
        raise await selectors.task_not_found(room, task_id)
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

    async def claim(view: store.LeaseView) -> store.TaskStep:
        now = clock.now_ms()
        return await store.task_claim(
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
        )

    if wanted:
        step = await on_lease_view(room.keys, claim)
    else:
        step = await claim(store.LeaseView("", []))
    if step.outcome == "unknown":
        raise await selectors.task_not_found(room, task_id)
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
    step = await store.task_release(
        room.keys,
        task_id=task_id,
        agent_id=agent_id,
        now_iso=clock.now_iso(),
        note=note,
        keyed=room.call,
    )
    if step.outcome == "unknown":
        raise await selectors.task_not_found(room, task_id)
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


# --- roomd's other tools ----------------------------------------------------------------


async def task_set_priority(
    room: RoomRef,
    *,
    task_id: str,
    priority: int,
    agent_id: str | None,
    expected_version: int | None,
) -> Task:
    """update_task's one step with only the priority changing (task_updated names it)."""
    changes: dict[str, Any] = {"priority": priority, "set_owner": False, "by": _who(agent_id)}
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
    step = await store.task_add_dependency(
        room.keys,
        task_id=task_id,
        depends_on=depends_on,
        by=_who(agent_id),
        expected_version=expected_version,
        now_iso=clock.now_iso(),
        most=most,
        keyed=room.call,
    )
    if step.outcome == "unknown":
        raise await selectors.task_not_found(room, task_id)
    if step.outcome == "unknown_dependency":
        missing = await selectors.task_not_found(room, depends_on)
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
    step = await store.task_delete(
        room.keys,
        task_id=task_id,
        by=_who(agent_id),
        expected_version=expected_version,
        now_iso=clock.now_iso(),
        keyed=room.call,
    )
    if step.outcome == "unknown":
        raise await selectors.task_not_found(room, task_id)
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


async def context_delete(room: RoomRef, *, entry_id: str, agent_id: str | None) -> ContextDeleted:
    """The entry and its whole history go; consumers see a context_deleted event."""
    gone = await store.context_delete(
        room.keys, entry_id=entry_id, by=_who(agent_id), keyed=room.call
    )
    if gone is None:
        raise await selectors.context_not_found(room, entry_id)
    return {"deleted": True, "id": entry_id}


async def event_delete(room: RoomRef, *, event_id: str, agent_id: str | None) -> EventDeleted:
    """One event out of the log, in place: events appended meanwhile are never lost."""
    if not is_event_id(event_id) or not await store.event_delete(
        room.keys,
        event_id=event_id,
        by=_who(agent_id),
        keyed=room.call,
    ):
        raise await selectors.event_not_found(room, event_id)
    return {"deleted": True, "eventId": event_id}


async def presence_leave(room: RoomRef, *, agent_id: str) -> Left:
    """Out of presence (an agent_left event when it was there); its cursor stays."""
    agent = _who(agent_id)
    minted = idempotency.minted(room.call, {"now": clock.now_ms()})
    left, seen = await store.presence_leave(
        room.keys,
        agent_id=agent,
        shown=int(settings.HEARTBEAT_PRESENCE_MAX),
        keyed=room.call,
    )
    now = idempotency.minted_final(room.call, minted)["now"]
    return {"left": left, "agentId": agent, "agents": selectors.presence_rows(seen, now_ms=now)}


async def review_request(
    room: RoomRef,
    *,
    target_type: str,
    target_id: str,
    requested_by: str,
    reviewer: str,
    note: str | None,
) -> Review:
    """A pending review of an existing task or context entry; the reviewer is told (a
    review_requested event addressed to it). The reviewer is someone else: a requester
    naming itself could approve its own request."""
    if reviewer == _who(requested_by):
        raise errors.ToolArgumentsError(
            errors.REVIEW_SELF.format(reviewer=reviewer), extra={"fields": ["reviewer"]}
        )
    review: Review = {
        "id": new_id("r_"),
        "targetType": "task" if target_type == "task" else "context",
        "targetId": target_id,
        "requestedBy": _who(requested_by),
        "reviewer": reviewer,
        "note": note,
        "status": "pending",
        "createdAt": clock.now_iso(),
    }
    minted = idempotency.minted(room.call, {"review": review})
    done = await store.review_request(
        room.keys,
        review_id=review["id"],
        review_json=dumps(review),
        target_type=target_type,
        target_id=target_id,
        requested_by=review["requestedBy"],
        reviewer=reviewer,
        keyed=room.call,
    )
    if done is None:
        if target_type == "task":
            raise await selectors.task_not_found(room, target_id)
        raise await selectors.context_not_found(room, target_id)
    if isinstance(done, store.AtQuota):
        raise quota_error("ROOM_REVIEWS_MAX", done.used)
    review = idempotency.minted_final(room.call, minted)["review"]
    return review


async def review_resolve(
    room: RoomRef, *, review_id: str, agent_id: str, approve: bool, note: str | None
) -> Review:
    """Approved or rejected by the named reviewer, once; the requester is told."""
    step = await store.review_resolve(
        room.keys,
        review_id=review_id,
        agent_id=agent_id,
        status="approved" if approve else "rejected",
        note=note,
        now_iso=clock.now_iso(),
        keyed=room.call,
    )
    if step.outcome == "unknown":
        raise await selectors.review_not_found(room, review_id)
    review: Review = json.loads(step.review_json)
    if step.outcome == "not_reviewer":
        raise errors.ReviewRefusedError(
            errors.REVIEW_NOT_REVIEWER.format(
                review_id=review_id, reviewer=review["reviewer"], agent_id=agent_id
            ),
            extra={"reviewer": review["reviewer"], "status": review["status"]},
        )
    if step.outcome == "resolved":
        raise errors.ReviewRefusedError(
            errors.REVIEW_RESOLVED.format(
                review_id=review_id,
                status=review["status"],
                by=review.get("resolvedBy"),
                at=review.get("resolvedAt"),
            ),
            extra={"reviewer": review["reviewer"], "status": review["status"]},
        )
    if step.outcome == "own_submission":
        raise errors.ReviewRefusedError(
            errors.REVIEW_OWN_SUBMISSION.format(task_id=review["targetId"], agent_id=agent_id),
            extra={"submittedBy": review["requestedBy"], "status": review["status"]},
        )
    return review


async def tool_keyed(
    tool: str, arguments: ToolInput, work: Callable[[idempotency.KeyedCall | None], Awaitable[T]]
) -> T:
    """Run `work` (one write tool's run, given the call its idempotencyKey names, if any): a
    repeat of the same call answers what the first did and changes nothing; the same key
    on another call is refused."""
    key = getattr(arguments, "idempotencyKey", None)
    if key is None:
        return await work(None)
    fields = arguments.model_dump(mode="json", by_alias=True, exclude={"idempotencyKey"})
    call = idempotency.keyed_call(key, tool, fields)
    try:
        return await work(call)
    except store.KeyReused as exc:
        hours = int(settings.IDEMPOTENCY_WINDOW_SECONDS) // 3600
        raise errors.IdempotencyKeyReusedError(
            errors.IDEMPOTENCY_KEY_REUSED.format(key=key, hours=hours, tool=exc.tool),
            extra={"idempotencyKey": key, "usedBy": exc.tool},
        ) from None


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
        due = await store.claims_due(now, SWEEP_ROOMS_PER_PASS)
        if not due:
            break
        for room_id in due:
            keys = RoomKeys(room_id)
            n, _ = await store.claims_expire(keys, now_ms=now, now_iso=clock.iso_from_ms(now))
            lapsed += n + await store.claims_due_settle(
                keys, now_ms=now, now_iso=clock.iso_from_ms(now)
            )
    return lapsed


# --- Context ----------------------------------------------------------------------------


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
) -> ContextEntry:
    """A typed entry at version 1.0; its consumers get a `context_available` event."""
    _validate_payload(type_, payload)
    author = _who(author)
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
    written = await store.context_write(
        room.keys,
        entry_id=entry["id"],
        entry_json=dumps(stored),
        payload_json=dumps(payload),
        author=author,
        to=_recipient(consumers),
        event_payload_json=dumps(note),
        label=_context_label(type_, summary),
        keyed=room.call,
    )
    if isinstance(written, store.AtQuota):
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
) -> ContextEntry:
    """Bump the version (1.0 -> 1.1 -> ...), keep the previous one in history. Concurrent
    updates each get their own version; with `expected_version` a stale writer is told."""
    type_: str | None = None
    if payload is not None or summary is not None:
        current = await store.context_get(room.keys, entry_id)
        if current is None:
            raise await selectors.context_not_found(room, entry_id)
        # The type never changes, so validating against it before the atomic step is safe.
        type_ = context_from_json(*current)["type"]
        if payload is not None:
            _validate_payload(type_, payload)
    changes: dict[str, Any] = {"author": _who(author)}
    if summary is not None:
        changes["summary"] = summary
    if consuming_agents is not None:
        changes["consuming_agents"] = list(dict.fromkeys(consuming_agents))
    result = await store.context_update(
        room.keys,
        entry_id=entry_id,
        changes_json=dumps(changes),
        payload_json=dumps(payload) if payload is not None else None,
        expected_version=expected_version,
        now_iso=clock.now_iso(),
        label=_context_label(type_, summary) if type_ is not None and summary is not None else "",
        keyed=room.call,
    )
    if result is None:
        raise await selectors.context_not_found(room, entry_id)
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


# --- Events -----------------------------------------------------------------------------


async def event_post(
    room: RoomRef,
    *,
    type_: str,
    from_: str,
    to: str,
    payload: Any,
    reply_to: str | None = None,
    reserved: bool = False,
) -> Event:
    """Append an event: a post, so taken only in the poster's turn (rooms.turns).
    `reserved`: the server's own tool posts one of the types agents may not (room_broadcast's
    `broadcast`), so the dashboard's sentence for it can be trusted."""
    if type_ in RESERVED_EVENT_TYPES and not reserved:
        raise errors.ToolArgumentsError(
            errors.EVENT_TYPE_RESERVED.format(type=type_, reserved=", ".join(RESERVED_EVENT_TYPES)),
            extra={"reserved": list(RESERVED_EVENT_TYPES)},
        )
    sender = _who(from_)
    if reply_to is not None and not is_event_id(reply_to):
        raise await selectors.event_not_found(room, reply_to)
    eid = await store.event_append(
        room.keys,
        type_=type_,
        from_=sender,
        to=to,
        payload_json=dumps(payload),
        reply_to=reply_to,
        turn=turns.turn_of_post(sender, to),
        keyed=room.call,
    )
    if eid is None:
        assert reply_to is not None
        raise await selectors.event_not_found(room, reply_to)
    fields = {"type": type_, "from": sender, "to": to, "payload": dumps(payload)}
    if reply_to:
        fields["reply_to_id"] = reply_to
    return event_from_entry((eid, fields))


def _empty_reason(batch: store.UnreadBatch) -> str:
    if batch.log_length == 0:
        return "No unread events: this room's event log is empty."
    return (
        f"No unread events after your cursor {batch.cursor}; the log holds "
        f"{batch.log_length} events and you have seen them all."
    )


async def _unread(
    room: RoomRef, *, agent_id: str, limit: int, addressed_only: bool, gathered: bool = False
) -> store.UnreadBatch:
    """`gathered`: share the script call with the room's other reads of this moment (the
    waiters one write wakes)."""
    read = store.UnreadRead(
        cursors_key=room.cursors_key,
        cursor_field=room.cursor_field(agent_id),
        agent_id=agent_id,
        limit=limit,
        addressed_only=addressed_only,
    )
    if gathered:
        batch = await store.event_read_unread_gathered(room.keys, read)
    else:
        batch = await store.event_read_unread(
            room.keys,
            cursors_key=read.cursors_key,
            cursor_field=read.cursor_field,
            agent_id=read.agent_id,
            limit=read.limit,
            addressed_only=read.addressed_only,
        )
    if isinstance(batch, store.AtQuota):
        raise quota_error("ROOM_CURSORS_MAX", batch.used)
    return batch


async def event_take_unread(
    room: RoomRef, *, agent_id: str, limit: int, addressed_only: bool
) -> Unread:
    """Events after the agent's cursor, oldest first; the cursor moves to the last one
    returned in the same atomic step, so each event reaches each agent exactly once."""
    batch = await _unread(room, agent_id=_who(agent_id), limit=limit, addressed_only=addressed_only)
    result: Unread = {
        "events": [event_from_entry(e) for e in batch.events],
        "cursor": batch.cursor,
        "count": len(batch.events),
    }
    if not batch.events:
        result["message"] = _empty_reason(batch)
    return result


async def event_mark_read(room: RoomRef, *, event_id: str, agent_id: str) -> EventMarked:
    agent = _who(agent_id)
    ok = is_event_id(event_id) and await store.event_mark_read(
        room.keys,
        event_id=event_id,
        agent_id=agent,
        now_iso=clock.now_iso(),
        keyed=room.call,
    )
    if isinstance(ok, store.AtQuota):
        raise quota_error("EVENT_READS_MAX", ok.used)
    if not ok:
        raise await selectors.event_not_found(room, event_id)
    return {"eventId": event_id, "agentId": agent, "ok": True}


async def agent_summary(room: RoomRef, *, agent_id: str) -> Summary:
    """The cold-start call: own tasks, unread events (consumed, like get_unread_events),
    how many context entries changed since the agent last looked, how many messages wait
    in its inbox (not read by this call), and who is here."""
    agent = _who(agent_id)
    batch = await _unread(room, agent_id=agent, limit=50, addressed_only=False)
    my_tasks = await selectors.task_list_for_agent(room, agent_id=agent)
    presence = await selectors.presence_list(room)
    messages = await store.message_inbox(
        room.keys, agent_id=agent, limit=0, unread_only=True, mark=False, now_ms=clock.now_ms()
    )
    offered = await selectors.handoffs_pending(room, agent)
    inherited = await memory.memory_summary(room)
    return {
        "agentId": agent,
        "roomId": room.room_id,
        "myTasks": my_tasks,
        "unreadEvents": [event_from_entry(e) for e in batch.events],
        "newContextCount": batch.context_changed,
        "unreadMessages": messages.unread,
        "pendingHandoffs": offered,
        "inheritedContext": inherited,
        "presence": presence,
        "cursor": batch.cursor,
    }


# --- Presence, locks, shared variables ------------------------------------------------------


async def presence_heartbeat(
    room: RoomRef, *, agent_id: str, tags: list[str] | None = None
) -> Heartbeat:
    """With `tags`, they become the agent's (what `tag:` messages reach); without, the
    agent keeps the tags of its last heartbeat that carried any."""
    agent = _who(agent_id)
    minted = idempotency.minted(room.call, {"now": clock.now_ms()})
    total, seen = await store.presence_beat(
        room.keys,
        agent_id=agent,
        now_ms=minted["now"],
        shown=int(settings.HEARTBEAT_PRESENCE_MAX),
        tags=list(dict.fromkeys(tags)) if tags is not None else None,
        keyed=room.call,
    )
    now = idempotency.minted_final(room.call, minted)["now"]
    return {
        "agentId": agent,
        "presence": selectors.presence_rows(seen, now_ms=now),
        "presenceTotal": total,
    }


async def lock_acquire(
    room: RoomRef, *, resource: str, agent_id: str, ttl_seconds: int
) -> LockGranted:
    agent = _who(agent_id)
    minted = idempotency.minted(room.call, {"now": clock.now_ms()})
    grant = await store.lock_acquire(
        room.keys,
        resource=resource,
        agent_id=agent,
        ttl_ms=ttl_seconds * 1000,
        now_ms=minted["now"],
        keyed=room.call,
    )
    if isinstance(grant, store.AtQuota):
        raise quota_error("ROOM_LOCKS_MAX", grant.used)
    now = idempotency.minted_final(room.call, minted)["now"]
    return {
        "acquired": grant.acquired,
        "resource": resource,
        "holder": grant.holder,
        "ttlSeconds": ttl_seconds if grant.acquired else -(-grant.remaining_ms // 1000),
        "expiresAt": clock.iso_from_ms(now + grant.remaining_ms),
        "fencingToken": grant.token,
    }


async def lock_release(room: RoomRef, *, resource: str, agent_id: str) -> LockReleased:
    released, holder = await store.lock_release(
        room.keys,
        resource=resource,
        agent_id=_who(agent_id),
        keyed=room.call,
    )
    result: LockReleased = {"released": released, "resource": resource}
    if not released:
        result["holder"] = holder
        result["message"] = (
            f'"{resource}" is held by {holder}; only the holder can release it.'
            if holder
            else f'"{resource}" is not locked (it may have expired).'
        )
    return result


async def var_set(room: RoomRef, *, key: str, value: str, agent_id: str) -> VarSet:
    written = await store.var_set(
        room.keys, key=key, value=value, agent_id=_who(agent_id), keyed=room.call
    )
    if isinstance(written, store.AtQuota):
        raise quota_error("ROOM_VARS_MAX", written.used)
    return {"key": key, "value": value}


async def event_wait(
    room: RoomRef, *, agent_id: str, timeout_ms: int, limit: int, addressed_only: bool
) -> Waited:
    """get_unread_events that waits: returns at once when something is unread, else the
    moment a write to the room lands (through any server process), else `timedOut` at the
    timeout. Same cursor, same exactly-once rule. No polling: it sleeps on the room's wake
    channel, registered before each read so no write can slip between read and sleep."""
    agent = _who(agent_id)
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        async with store.room_watch(room.keys) as woken:
            batch = await _unread(
                room, agent_id=agent, limit=limit, addressed_only=addressed_only, gathered=True
            )
            if batch.events:
                return {
                    "events": [event_from_entry(e) for e in batch.events],
                    "cursor": batch.cursor,
                    "count": len(batch.events),
                    "timedOut": False,
                }
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return {"events": [], "cursor": batch.cursor, "count": 0, "timedOut": True}
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(woken.wait(), remaining)


async def room_from_template(
    room: RoomRef, *, template_id: str, agent_id: str | None
) -> RoomFromTemplate:
    """The template's plan as the room's plan, in one step, only into a room with no plan:
    a plan is never overwritten (roomd replaces it wholesale), nor mixed into."""
    template = templates.template_get(template_id)
    now = clock.now_iso()
    ids = [new_id("t_") for _ in template.tasks]
    tasks: list[Task] = []
    for i, spec in enumerate(template.tasks):
        task: Task = {
            "id": ids[i],
            "title": spec.title,
            "description": spec.description,
            "status": "pending",
            "owner": None,
            "created_at": now,
            "updated_at": now,
            "depends_on": [ids[j] for j in spec.after],
            "version": 1,
        }
        if spec.priority is not None:
            task["priority"] = spec.priority
        tasks.append(task)
    outcome, count = await store.plan_create(
        room.keys,
        [(t["id"], dumps(t), t["title"][:LABEL_CHARS]) for t in tasks],
        now_iso=now,
        by=_who(agent_id),
        keyed=room.call,
    )
    if outcome == "exists":
        raise errors.PlanExistsError(
            errors.PLAN_EXISTS.format(room_id=room.room_id, count=count),
            extra={"taskCount": count},
        )
    if outcome == "quota":
        raise quota_error("ROOM_TASKS_MAX", count)
    return {"roomId": room.room_id, "templateId": template.id, "taskCount": count}
