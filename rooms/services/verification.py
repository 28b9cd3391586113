"""Work that is proven before it counts (Agent Room; docs/protocol.md "Reviews and proven
work"): a task's owner submits evidence, a different agent verifies it. A submission is a
review of the task (kind "submission", reviewer "*": anyone but the submitter), so there is
one way to approve work: verify_task and approve/reject resolve the same review in the same
script, and resolving it moves the task (accept: done; reject: back in progress with the
note).

With the room's mode `evidenceRequired`, update_task refuses status done: the only way to
done is a verified submission.
"""

from __future__ import annotations

import json
from typing import Any

from rooms import clock, errors
from rooms.ids import new_id
from rooms.quotas import quota_error
from rooms.records import dumps, task_from_json
from rooms.refs import RoomRef
from rooms.results import Evidence, Review, RoomMode, Task
from rooms.selectors.plan import task_not_found
from rooms.selectors.reviews import review_not_found
from rooms.store import plan as plan_store
from rooms.store import reviews as reviews_store
from rooms.store import room as room_store


async def task_submit(
    room: RoomRef, *, task_id: str, agent_id: str, evidence: list[Evidence]
) -> Task:
    now = clock.now_iso()
    review: Review = {
        "id": new_id("r_"),
        "targetType": "task",
        "targetId": task_id,
        "requestedBy": agent_id,
        "reviewer": "*",
        "kind": "submission",
        "evidence": evidence,
        "note": None,
        "status": "pending",
        "createdAt": now,
    }
    step = await plan_store.task_submit(
        room.keys,
        task_id=task_id,
        agent_id=agent_id,
        review_id=review["id"],
        review_json=dumps(review),
        evidence_json=dumps(evidence),
        now_iso=now,
        keyed=room.call,
        actor=room.actor,
    )
    if step.outcome == "unknown":
        raise await task_not_found(room, task_id)
    if step.outcome == "quota":
        raise quota_error("ROOM_REVIEWS_MAX", step.used)
    task = task_from_json(step.task_json)
    state: dict[str, Any] = {"taskId": task_id, "owner": task["owner"], "status": task["status"]}
    if step.outcome == "done":
        raise errors.TaskClaimError(errors.TASK_SUBMIT_DONE.format(task_id=task_id), extra=state)
    if step.outcome == "not_owner":
        raise errors.TaskClaimError(
            errors.TASK_SUBMIT_NOT_OWNER.format(
                task_id=task_id,
                owner=json.dumps(task["owner"]) if task["owner"] else "nobody",
                agent_id=agent_id,
            ),
            extra=state,
        )
    if step.outcome == "submitted":
        pending = task["verification"]
        raise errors.TaskClaimError(
            errors.TASK_SUBMIT_PENDING.format(
                task_id=task_id,
                review_id=pending["reviewId"],
                by=pending["submittedBy"],
                at=pending["at"],
            ),
            extra={**state, "reviewId": pending["reviewId"]},
        )
    return task


async def task_verify(
    room: RoomRef, *, task_id: str, agent_id: str, accept: bool, note: str | None
) -> Task:
    step = await reviews_store.review_resolve(
        room.keys,
        review_id="",
        agent_id=agent_id,
        status="approved" if accept else "rejected",
        note=note,
        now_iso=clock.now_iso(),
        task_id=task_id,
        keyed=room.call,
        actor=room.actor,
    )
    if step.outcome == "unknown":
        raise await task_not_found(room, task_id)
    if step.outcome == "not_submitted":
        task = task_from_json(step.review_json)
        verification = task.get("verification")
        raise errors.TaskClaimError(
            errors.TASK_NOT_SUBMITTED.format(
                task_id=task_id,
                status=task["status"],
                state=f", last submission {verification['state']}" if verification else "",
            ),
            extra={"taskId": task_id, "status": task["status"]},
        )
    if step.outcome == "own_submission":
        raise errors.ReviewRefusedError(
            errors.REVIEW_OWN_SUBMISSION.format(task_id=task_id, agent_id=agent_id),
            extra={"submittedBy": agent_id},
        )
    if step.outcome != "ok" or not step.task_json:
        # A pending submission always has its task: anything else is a resolved review.
        raise await review_not_found(room, task_id)
    return task_from_json(step.task_json)


async def room_mode_set(
    room: RoomRef,
    *,
    agent_id: str,
    evidence_required: bool | None,
    turns: str | None = None,
    moderator: str | None = None,
    turn_order: list[str] | None = None,
    secrets: str | None = None,
    auto_leases: bool | None = None,
    edit_refusals: bool | None = None,
) -> RoomMode:
    """The room's rules (evidence, turns: rooms.turns). A change of turns starts them
    afresh: nobody holds the turn."""
    changes: dict[str, Any] = {}
    if evidence_required is not None:
        changes["evidenceRequired"] = evidence_required
    if turns is not None:
        changes["turns"] = turns
    if moderator is not None or turns == "moderator":
        changes["moderator"] = moderator or agent_id
    if turn_order is not None:
        changes["order"] = list(dict.fromkeys(turn_order))
    if secrets is not None:
        changes["secrets"] = secrets
    if auto_leases is not None:
        changes["autoLeases"] = auto_leases
    if edit_refusals is not None:
        changes["editRefusals"] = edit_refusals
    if not changes:
        raise errors.ToolArgumentsError(errors.ROOM_MODE_EMPTY)
    raw, turn = await room_store.room_mode_set(
        room.keys, changes_json=dumps(changes), keyed=room.call, actor=room.actor
    )
    mode = json.loads(raw)
    order = mode.get("order")
    return {
        "roomId": room.room_id,
        "evidenceRequired": bool(mode.get("evidenceRequired")),
        "turns": mode.get("turns") or "open",
        "moderator": mode.get("moderator") if isinstance(mode.get("moderator"), str) else None,
        "turnOrder": [str(a) for a in order] if isinstance(order, list) else [],
        "turn": turn or None,
        "secrets": mode.get("secrets") or "redact",
        "autoLeases": mode.get("autoLeases") is not False,
        "editRefusals": mode.get("editRefusals") is not False,
    }
