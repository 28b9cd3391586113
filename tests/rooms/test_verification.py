"""Proven work (docs/protocol.md "Reviews and proven work"): the owner submits evidence, a
different agent verifies it; one review mechanism for submissions and roomd's reviews;
with evidenceRequired, the only way to done is a verified submission."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from calls.runner import tool_run
from rooms import errors
from rooms.refs import RoomRef
from tenants import errors as tenant_errors
from tenants.capabilities import Caller
from tests import callers

pytestmark = pytest.mark.anyio

EVIDENCE = [
    {"kind": "test", "text": "pytest: 42 passed", "ref": "ci/run/17"},
    {"kind": "diff", "text": "+def login(): ..."},
]


async def call(caller: Caller, room: RoomRef, tool: str, **args: Any) -> Any:
    return await tool_run(caller, tool, {"roomId": room.room_id, **args})


async def claimed(caller: Caller, room: RoomRef, owner: str = "alice", **claim: Any) -> str:
    task = await call(caller, room, "add_task", title="login endpoint")
    await call(caller, room, "claim_task", taskId=task["id"], agentId=owner, **claim)
    return str(task["id"])


async def submit(caller: Caller, room: RoomRef, task_id: str, agent: str = "alice") -> Any:
    return await call(caller, room, "submit_task", taskId=task_id, agentId=agent, evidence=EVIDENCE)


async def test_the_owner_submits_and_another_agent_accepts(team_a: Caller, room: RoomRef) -> None:
    task_id = await claimed(team_a, room, paths=["src/auth/**"])

    submitted = await submit(team_a, room, task_id)

    v = submitted["verification"]
    assert v["state"] == "submitted" and v["submittedBy"] == "alice"
    assert v["evidence"] == EVIDENCE and submitted["status"] == "in_progress"
    [review] = await call(team_a, room, "list_reviews", status="pending")
    assert review["id"] == v["reviewId"] and review["kind"] == "submission"
    assert review["reviewer"] == "*" and review["evidence"] == EVIDENCE

    verified = await call(
        team_a, room, "verify_task", taskId=task_id, agentId="bob", verdict="accept"
    )

    assert verified["status"] == "done" and verified["verification"]["state"] == "verified"
    assert verified["verification"]["verifiedBy"] == "bob"
    assert (await call(team_a, room, "lease_list"))["leases"] == []  # done lets its leases go
    [resolved] = await call(team_a, room, "list_reviews")
    assert resolved["status"] == "approved" and resolved["resolvedBy"] == "bob"
    events = await call(team_a, room, "read_events", limit=20, order="asc")
    kinds = [e["type"] for e in events]
    assert kinds[-2:] == ["task_submitted", "task_verified"]
    assert events[-1]["to"] == "alice"  # the submitter is told


async def test_a_rejection_sends_it_back_with_the_note_and_it_can_be_submitted_again(
    team_a: Caller, room: RoomRef
) -> None:
    task_id = await claimed(team_a, room)
    await submit(team_a, room, task_id)

    rejected = await call(
        team_a,
        room,
        "verify_task",
        taskId=task_id,
        agentId="bob",
        verdict="reject",
        note="no test for the expired-token path",
    )

    assert rejected["status"] == "in_progress" and rejected["owner"] == "alice"
    assert rejected["verification"]["state"] == "rejected"
    assert rejected["verification"]["note"] == "no test for the expired-token path"
    assert rejected["notes"][-1]["text"] == "no test for the expired-token path"
    again = await submit(team_a, room, task_id)
    assert again["verification"]["state"] == "submitted"
    assert again["verification"]["reviewId"] != rejected["verification"]["reviewId"]


async def test_who_may_submit_and_verify(team_a: Caller, room: RoomRef) -> None:
    task_id = await claimed(team_a, room)
    with pytest.raises(errors.TaskClaimError, match='owned by "alice", not "bob"'):
        await submit(team_a, room, task_id, agent="bob")
    with pytest.raises(errors.TaskClaimError, match="no submission awaiting verification"):
        await call(team_a, room, "verify_task", taskId=task_id, agentId="bob", verdict="accept")
    await submit(team_a, room, task_id)
    with pytest.raises(errors.TaskClaimError, match="awaits verification"):
        await submit(team_a, room, task_id)
    with pytest.raises(errors.ReviewRefusedError, match="cannot verify its own work"):
        await call(team_a, room, "verify_task", taskId=task_id, agentId="alice", verdict="accept")
    [review] = await call(team_a, room, "list_reviews")
    with pytest.raises(errors.ReviewRefusedError, match="cannot verify its own work"):
        await call(team_a, room, "approve", reviewId=review["id"], agentId="alice")
    task = await call(team_a, room, "get_task", taskId=task_id)
    assert task["status"] == "in_progress"  # nothing moved
    with pytest.raises(errors.TaskNotFoundError):
        await call(team_a, room, "verify_task", taskId="t_nope", agentId="bob", verdict="accept")


async def test_approve_and_reject_on_the_submission_are_the_same_step(
    team_a: Caller, room: RoomRef
) -> None:
    first = await claimed(team_a, room)
    second = await claimed(team_a, room)
    await submit(team_a, room, first)
    await submit(team_a, room, second)
    reviews = {r["targetId"]: r["id"] for r in await call(team_a, room, "list_reviews")}

    await call(team_a, room, "approve", reviewId=reviews[first], agentId="carol")
    await call(team_a, room, "reject", reviewId=reviews[second], agentId="carol", note="flaky")

    assert (await call(team_a, room, "get_task", taskId=first))["status"] == "done"
    back = await call(team_a, room, "get_task", taskId=second)
    assert back["status"] == "in_progress" and back["verification"]["note"] == "flaky"
    with pytest.raises(errors.TaskClaimError, match="no submission awaiting"):
        await call(team_a, room, "verify_task", taskId=first, agentId="bob", verdict="reject")


async def test_of_many_verifiers_at_once_exactly_one_decides(team_a: Caller, room: RoomRef) -> None:
    task_id = await claimed(team_a, room)
    await submit(team_a, room, task_id)
    verdicts = ["accept", "reject"] * 8

    results = await asyncio.gather(
        *(
            call(team_a, room, "verify_task", taskId=task_id, agentId=f"v{i}", verdict=verdict)
            for i, verdict in enumerate(verdicts)
        ),
        return_exceptions=True,
    )

    won = [r for r in results if isinstance(r, dict)]
    assert len(won) == 1
    assert all(isinstance(r, errors.TaskClaimError) for r in results if not isinstance(r, dict))
    task = await call(team_a, room, "get_task", taskId=task_id)
    assert task["status"] == won[0]["status"] and task["version"] == won[0]["version"]
    events = await call(team_a, room, "read_events", limit=50)
    assert sum(e["type"] in ("task_verified", "task_rejected") for e in events) == 1


async def test_with_evidence_required_done_comes_only_from_verification(
    team_a: Caller, room: RoomRef
) -> None:
    plain = await claimed(team_a, room)
    await call(team_a, room, "update_task", taskId=plain, status="done", agentId="alice")
    mode = await call(team_a, room, "set_room_mode", agentId="lead", evidenceRequired=True)
    assert mode == {
        "roomId": room.room_id,
        "evidenceRequired": True,
        "turns": "open",
        "moderator": None,
        "turnOrder": [],
        "turn": None,
        "secrets": "redact",
        "autoLeases": True,
        "editRefusals": True,
    }
    task_id = await claimed(team_a, room)

    with pytest.raises(errors.TaskClaimError) as refused:
        await call(team_a, room, "update_task", taskId=task_id, status="done", agentId="alice")

    assert "requires evidence" in refused.value.message and "submit_task" in refused.value.message
    assert refused.value.extra["evidenceRequired"] is True
    assert (await call(team_a, room, "get_task", taskId=task_id))["status"] == "in_progress"
    await submit(team_a, room, task_id)
    await call(team_a, room, "verify_task", taskId=task_id, agentId="bob", verdict="accept")
    assert (await call(team_a, room, "get_task", taskId=task_id))["status"] == "done"
    # Other changes still go through update_task.
    await call(team_a, room, "update_task", taskId=plain, status="pending", agentId="alice")
    off = await call(team_a, room, "set_room_mode", agentId="lead", evidenceRequired=False)
    assert off["evidenceRequired"] is False
    await call(team_a, room, "update_task", taskId=plain, status="done", agentId="alice")


async def test_an_agent_cannot_switch_the_evidence_rule_off_for_itself(
    team_a: Caller, room: RoomRef
) -> None:
    """The attack: the agent whose work is to be proven turns the rule off with its own
    credential (an invite; a key bound to it), then marks its task done."""
    await call(team_a, room, "set_room_mode", agentId="lead", evidenceRequired=True)
    task_id = await claimed(team_a, room)
    guest = callers.guest_of(team_a, room.room_id)
    with pytest.raises(tenant_errors.NotPermittedError, match="may not manage rooms"):
        await call(guest, room, "set_room_mode", agentId="alice", evidenceRequired=False)
    with pytest.raises(errors.TaskClaimError, match="requires evidence"):
        await call(guest, room, "update_task", taskId=task_id, status="done", agentId="alice")
    with pytest.raises(errors.ToolArgumentsError, match="Nothing to set"):
        await call(team_a, room, "set_room_mode", agentId="lead")


async def test_the_hook_switches_turn_off_and_on_and_an_agent_cannot_turn_them_off(
    team_a: Caller, room: RoomRef
) -> None:
    """Issue 24, point 5: one switch per room for the client hooks' automatic leases and
    edit refusals. The attack: a guest (an agent's invite) turns refusals off to edit a file
    another agent leases; refused, and the switch stays on."""
    off = await call(team_a, room, "set_room_mode", agentId="lead", autoLeases=False)
    assert (off["autoLeases"], off["editRefusals"]) == (False, True)
    both = await call(team_a, room, "set_room_mode", agentId="lead", editRefusals=False)
    assert (both["autoLeases"], both["editRefusals"]) == (False, False)
    back = await call(
        team_a, room, "set_room_mode", agentId="lead", autoLeases=True, editRefusals=True
    )
    assert (back["autoLeases"], back["editRefusals"]) == (True, True)
    guest = callers.guest_of(team_a, room.room_id)
    with pytest.raises(tenant_errors.NotPermittedError, match="may not manage rooms"):
        await call(guest, room, "set_room_mode", agentId="alice", editRefusals=False)
    kept = await call(team_a, room, "set_room_mode", agentId="lead", evidenceRequired=False)
    assert kept["editRefusals"] is True
