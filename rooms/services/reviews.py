"""Reviews: asking for one and resolving it (the reviewer is never the requester)."""

from __future__ import annotations

import json

from rooms import clock, errors, idempotency
from rooms.ids import new_id
from rooms.names import attributed
from rooms.quotas import quota_error
from rooms.records import (
    dumps,
)
from rooms.refs import RoomRef
from rooms.results import (
    Review,
)
from rooms.selectors import context as context_selectors
from rooms.selectors import plan as plan_selectors
from rooms.selectors import reviews as reviews_selectors
from rooms.store import engine as engine_store
from rooms.store import reviews as reviews_store


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
    if reviewer == attributed(requested_by):
        raise errors.ToolArgumentsError(
            errors.REVIEW_SELF.format(reviewer=reviewer), extra={"fields": ["reviewer"]}
        )
    review: Review = {
        "id": new_id("r_"),
        "targetType": "task" if target_type == "task" else "context",
        "targetId": target_id,
        "requestedBy": attributed(requested_by),
        "reviewer": reviewer,
        "note": note,
        "status": "pending",
        "createdAt": clock.now_iso(),
    }
    minted = idempotency.minted(room.call, {"review": review})
    done = await reviews_store.review_request(
        room.keys,
        review_id=review["id"],
        review_json=dumps(review),
        target_type=target_type,
        target_id=target_id,
        requested_by=review["requestedBy"],
        reviewer=reviewer,
        keyed=room.call,
        actor=room.actor,
    )
    if done is None:
        if target_type == "task":
            raise await plan_selectors.task_not_found(room, target_id)
        raise await context_selectors.context_not_found(room, target_id)
    if isinstance(done, engine_store.AtQuota):
        raise quota_error("ROOM_REVIEWS_MAX", done.used)
    review = idempotency.minted_final(room.call, minted)["review"]
    return review


async def review_resolve(
    room: RoomRef, *, review_id: str, agent_id: str, approve: bool, note: str | None
) -> Review:
    """Approved or rejected by the named reviewer, once; the requester is told."""
    step = await reviews_store.review_resolve(
        room.keys,
        review_id=review_id,
        agent_id=agent_id,
        status="approved" if approve else "rejected",
        note=note,
        now_iso=clock.now_iso(),
        keyed=room.call,
        actor=room.actor,
    )
    if step.outcome == "unknown":
        raise await reviews_selectors.review_not_found(room, review_id)
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
