"""request_review, approve, reject and list_reviews (docs/protocol.md "Reviews and proven
work"): a review of a task or a context entry that exists, resolved only by the named
reviewer and only once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from calls.runner import tool_run
from rooms import errors
from rooms.refs import RoomRef
from tenants.capabilities import Caller

pytestmark = pytest.mark.anyio


async def call(caller: Caller, room: RoomRef, tool: str, **args: Any) -> Any:
    return await tool_run(caller, tool, {"roomId": room.room_id, **args})


async def refused(caller: Caller, room: RoomRef, tool: str, **args: Any) -> errors.DomainError:
    with pytest.raises(errors.DomainError) as caught:
        await call(caller, room, tool, **args)
    return caught.value


async def _review(caller: Caller, room: RoomRef, **extra: Any) -> dict[str, Any]:
    task = await call(caller, room, "add_task", title="login api")
    review: dict[str, Any] = await call(
        caller,
        room,
        "request_review",
        targetType="task",
        targetId=task["id"],
        requestedBy="backend",
        reviewer="qa",
        note="check the error codes",
        **extra,
    )
    return review


async def test_a_review_is_pending_and_its_reviewer_is_told(team_a: Caller, room: RoomRef) -> None:
    review = await _review(team_a, room)

    assert review["status"] == "pending" and review["reviewer"] == "qa"
    assert review["requestedBy"] == "backend" and review["id"].startswith("r_")
    [event] = [
        e
        for e in await call(team_a, room, "read_events", limit=100)
        if e["type"] == "review_requested"
    ]
    assert event["to"] == "qa" and event["payload"]["id"] == review["id"]


async def test_the_target_must_exist(team_a: Caller, room: RoomRef) -> None:
    task = await call(team_a, room, "add_task", title="login api")
    missing = await refused(
        team_a,
        room,
        "request_review",
        targetType="task",
        targetId=task["id"] + "x",
        requestedBy="a",
        reviewer="b",
    )
    assert isinstance(missing, errors.TaskNotFoundError) and task["id"] in missing.message
    context = await refused(
        team_a,
        room,
        "request_review",
        targetType="context",
        targetId=task["id"],  # a task id is not a context entry
        requestedBy="a",
        reviewer="b",
    )
    assert isinstance(context, errors.ContextNotFoundError)
    assert await call(team_a, room, "list_reviews") == []


async def test_only_the_named_reviewer_resolves_and_only_once(
    team_a: Caller, room: RoomRef
) -> None:
    review = await _review(team_a, room)

    stranger = await refused(team_a, room, "approve", reviewId=review["id"], agentId="backend")
    assert isinstance(stranger, errors.ReviewRefusedError)
    assert 'asks "qa"' in stranger.message

    approved = await call(team_a, room, "approve", reviewId=review["id"], agentId="qa", note="ok")
    assert approved["status"] == "approved" and approved["resolvedBy"] == "qa"
    assert approved["resolutionNote"] == "ok"
    # roomd's field: the resolver's note is the review's `note`; the request's is kept.
    assert approved["note"] == "ok" and approved["requestNote"] == "check the error codes"
    event = (await call(team_a, room, "read_events", limit=1))[0]
    assert event["type"] == "review_approved" and event["to"] == "backend"

    for tool in ("approve", "reject"):
        again = await refused(team_a, room, tool, reviewId=review["id"], agentId="qa")
        assert isinstance(again, errors.ReviewRefusedError) and "resolved once" in again.message


async def test_of_approvals_and_rejections_at_once_exactly_one_lands(
    team_a: Caller, room: RoomRef
) -> None:
    review = await _review(team_a, room)

    results = await asyncio.gather(
        *(
            call(
                team_a, room, "approve" if i % 2 else "reject", reviewId=review["id"], agentId="qa"
            )
            for i in range(12)
        ),
        return_exceptions=True,
    )

    landed = [r for r in results if isinstance(r, dict)]
    assert len(landed) == 1
    assert all(isinstance(r, errors.ReviewRefusedError) for r in results if r not in landed)
    [stored] = await call(team_a, room, "list_reviews")
    assert stored["status"] == landed[0]["status"]
    events = await call(team_a, room, "read_events", limit=100)
    assert len([e for e in events if e["type"] in ("review_approved", "review_rejected")]) == 1


async def test_list_reviews_is_newest_first_and_filters_by_status(
    team_a: Caller, room: RoomRef
) -> None:
    first = await _review(team_a, room)
    second = await _review(team_a, room)
    await call(team_a, room, "reject", reviewId=first["id"], agentId="qa", note="redo")

    every = await call(team_a, room, "list_reviews")
    assert [r["id"] for r in every] == [second["id"], first["id"]]
    pending = await call(team_a, room, "list_reviews", status="pending")
    assert [r["id"] for r in pending] == [second["id"]]
    rejected = await call(team_a, room, "list_reviews", status="rejected")
    assert rejected[0]["resolutionNote"] == "redo"


async def test_an_unknown_review_names_the_closest(team_a: Caller, room: RoomRef) -> None:
    review = await _review(team_a, room)

    missing = await refused(team_a, room, "approve", reviewId=review["id"][:-1], agentId="qa")

    assert isinstance(missing, errors.ReviewNotFoundError)
    assert review["id"] in missing.message and "list_reviews" in missing.message


async def test_reject_with_a_note_answers_it_as_note_and_keeps_it(
    team_a: Caller, room: RoomRef
) -> None:
    task = await call(team_a, room, "add_task", title="signup")
    review = await call(
        team_a,
        room,
        "request_review",
        targetType="task",
        targetId=task["id"],
        requestedBy="backend",
        reviewer="qa",
    )
    rejected = await call(team_a, room, "reject", reviewId=review["id"], agentId="qa", note="no")
    assert rejected["note"] == "no" and "requestNote" not in rejected
    [listed] = await call(team_a, room, "list_reviews")
    assert listed["note"] == "no" and listed["status"] == "rejected"


async def test_a_requester_cannot_name_itself_reviewer_and_approve_its_own_request(
    team_a: Caller, room: RoomRef
) -> None:
    """Issue 22: request_review let the requester name itself and approve its own request."""
    task = await call(team_a, room, "add_task", title="payments")
    mine = await refused(
        team_a,
        room,
        "request_review",
        targetType="task",
        targetId=task["id"],
        requestedBy="backend",
        reviewer="backend",
    )
    assert isinstance(mine, errors.ToolArgumentsError) and "someone else" in mine.message
    assert await call(team_a, room, "list_reviews") == []
    # Naming another agent is the way: it is asked, and only it resolves.
    asked = await call(
        team_a,
        room,
        "request_review",
        targetType="task",
        targetId=task["id"],
        requestedBy="backend",
        reviewer="qa",
    )
    assert asked["reviewer"] == "qa"
