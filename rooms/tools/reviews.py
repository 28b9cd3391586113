"""Reviews: ask for one, approve or reject it, list them."""

from __future__ import annotations

from rooms import results as r
from rooms import schemas as s
from rooms.refs import RoomRef
from rooms.selectors import reviews as reviews_selectors
from rooms.services import reviews as reviews_services
from rooms.tools.rows import room_tool


@room_tool(read_only=False, idempotent=False, section="reviews-and-proven-work", roomd=True)
async def request_review(room: RoomRef, a: s.RequestReviewInput) -> r.Review:
    """Call when another agent should check your task or context entry (it must exist): the
    reviewer gets a review_requested event and answers with approve or reject."""
    return await reviews_services.review_request(
        room,
        target_type=a.targetType,
        target_id=a.targetId,
        requested_by=a.requestedBy,
        reviewer=a.reviewer,
        note=a.note,
    )


@room_tool(read_only=False, section="reviews-and-proven-work", roomd=True)
async def approve(room: RoomRef, a: s.ApproveInput) -> r.Review:
    """Call to approve a review you were asked for (only the named reviewer, only once). The
    requester gets a review_approved event."""
    return await reviews_services.review_resolve(
        room, review_id=a.reviewId, agent_id=a.agentId, approve=True, note=a.note
    )


@room_tool(read_only=False, section="reviews-and-proven-work", roomd=True)
async def reject(room: RoomRef, a: s.RejectInput) -> r.Review:
    """Call to reject a review you were asked for, with a note saying what to change (only the
    named reviewer, only once). The requester gets a review_rejected event."""
    return await reviews_services.review_resolve(
        room, review_id=a.reviewId, agent_id=a.agentId, approve=False, note=a.note
    )


@room_tool(read_only=True, section="reviews-and-proven-work", roomd=True)
async def list_reviews(room: RoomRef, a: s.ListReviewsInput) -> list[r.Review]:
    """Call to see the room's reviews, newest first; status filters to pending, approved or
    rejected."""
    return await reviews_selectors.review_list(room, status=a.status)
