"""Handoffs (docs/protocol.md "Handoffs"): ownership moves only on the
receiver's accept, in the same step as its claim and file leases; only the receiver
answers; an accept and a decline at once — exactly one lands."""

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


async def owned(caller: Caller, room: RoomRef, **claim: Any) -> str:
    for agent in ("alice", "bob", "carol"):
        await call(caller, room, "heartbeat", agentId=agent)
    task = await call(caller, room, "add_task", title="payments webhook")
    await call(caller, room, "claim_task", taskId=task["id"], agentId="alice", **claim)
    return str(task["id"])


async def offer(caller: Caller, room: RoomRef, task_id: str, **args: Any) -> Any:
    args.setdefault("to", "bob")
    return await call(caller, room, "handoff_task", taskId=task_id, **{"from": "alice", **args})


async def test_nothing_moves_until_the_receiver_accepts_then_everything_does(
    team_a: Caller, room: RoomRef
) -> None:
    task_id = await owned(team_a, room, leaseSeconds=600, paths=["src/pay/**"])
    contract = await call(
        team_a,
        room,
        "write_context",
        type="note",
        summary="webhook secret rotation",
        consuming_agents=[],
        payload={"text": "rotate monthly"},
        author="alice",
    )

    offered = await offer(team_a, room, task_id, note="retries left", contextIds=[contract["id"]])

    assert offered["status"] == "offered" and offered["contextIds"] == [contract["id"]]
    task = await call(team_a, room, "get_task", taskId=task_id)
    assert task["owner"] == "alice" and task["handoff"]["to"] == "bob"
    told = await call(team_a, room, "get_unread_events", agentId="bob", addressedOnly=True)
    assert [e["type"] for e in told["events"] if e["to"] == "bob"] == ["handoff_offered"]
    summary = await call(team_a, room, "get_my_summary", agentId="bob")
    assert [h["id"] for h in summary["pendingHandoffs"]] == [offered["id"]]
    assert summary["pendingHandoffs"][0]["note"] == "retries left"

    accepted = await call(team_a, room, "accept_handoff", handoffId=offered["id"], agentId="bob")

    assert accepted["status"] == "accepted" and accepted["resolvedBy"] == "bob"
    task = await call(team_a, room, "get_task", taskId=task_id)
    assert task["owner"] == "bob" and task["status"] == "in_progress" and "handoff" not in task
    assert task["lease_seconds"] == 600  # the claim's lease is bob's now
    leases = (await call(team_a, room, "lease_list"))["leases"]
    assert [(lease["path"], lease["holder"]) for lease in leases] == [("src/pay/**", "bob")]
    assert (await call(team_a, room, "get_my_summary", agentId="bob"))["pendingHandoffs"] == []
    # The new owner's heartbeat keeps the claim; bob can release it, alice cannot.
    with pytest.raises(errors.TaskClaimError):
        await call(team_a, room, "release_task", taskId=task_id, agentId="alice")
    await call(team_a, room, "release_task", taskId=task_id, agentId="bob")


async def test_a_decline_is_final_and_leaves_the_task_with_its_owner(
    team_a: Caller, room: RoomRef
) -> None:
    task_id = await owned(team_a, room)
    offered = await offer(team_a, room, task_id)

    declined = await call(
        team_a, room, "decline_handoff", handoffId=offered["id"], agentId="bob", note="busy"
    )

    assert declined["status"] == "declined" and declined["resolutionNote"] == "busy"
    assert (await call(team_a, room, "get_task", taskId=task_id))["owner"] == "alice"
    with pytest.raises(errors.HandoffRefusedError, match="answered once"):
        await call(team_a, room, "accept_handoff", handoffId=offered["id"], agentId="bob")
    again = await offer(team_a, room, task_id, to="carol")  # a new offer is the way
    assert again["status"] == "offered" and again["id"] != offered["id"]


async def test_who_may_offer_and_answer(team_a: Caller, room: RoomRef) -> None:
    task_id = await owned(team_a, room)
    with pytest.raises(errors.TaskClaimError, match='owned by "alice", not "bob"'):
        await call(team_a, room, "handoff_task", taskId=task_id, to="carol", **{"from": "bob"})
    with pytest.raises(errors.ToolArgumentsError, match="another agent"):
        await offer(team_a, room, task_id, to="alice")
    with pytest.raises(errors.AgentNotFoundError, match='"bob"'):
        await offer(team_a, room, task_id, to="bobb")
    with pytest.raises(errors.ContextNotFoundError):
        await offer(team_a, room, task_id, contextIds=["c_nope"])
    offered = await offer(team_a, room, task_id)
    with pytest.raises(errors.HandoffRefusedError, match="One offer at a time"):
        await offer(team_a, room, task_id, to="carol")
    for agent in ("carol", "alice"):
        with pytest.raises(errors.HandoffRefusedError, match="only its receiver"):
            await call(team_a, room, "accept_handoff", handoffId=offered["id"], agentId=agent)
    with pytest.raises(errors.HandoffNotFoundError) as unknown:
        await call(team_a, room, "accept_handoff", handoffId=offered["id"] + "x", agentId="bob")
    assert offered["id"] in unknown.value.message
    assert (await call(team_a, room, "get_task", taskId=task_id))["owner"] == "alice"


async def test_an_offer_overtaken_by_events_is_void(team_a: Caller, room: RoomRef) -> None:
    task_id = await owned(team_a, room)
    offered = await offer(team_a, room, task_id)
    await call(team_a, room, "release_task", taskId=task_id, agentId="alice")
    await call(team_a, room, "claim_task", taskId=task_id, agentId="carol")

    with pytest.raises(errors.HandoffRefusedError, match="changed hands"):
        await call(team_a, room, "accept_handoff", handoffId=offered["id"], agentId="bob")

    assert (await call(team_a, room, "get_task", taskId=task_id))["owner"] == "carol"


async def test_accept_and_decline_at_once_exactly_one_lands(team_a: Caller, room: RoomRef) -> None:
    for round_ in range(5):
        task_id = await owned(team_a, room)
        offered = await offer(team_a, room, task_id)
        answers = [
            call(team_a, room, tool, handoffId=offered["id"], agentId="bob")
            for tool in ("accept_handoff", "decline_handoff") * 6
        ]

        results = await asyncio.gather(*answers, return_exceptions=True)

        landed = [r for r in results if isinstance(r, dict)]
        assert len(landed) == 1, round_
        assert all(isinstance(r, errors.HandoffRefusedError) for r in results if r not in landed)
        owner = (await call(team_a, room, "get_task", taskId=task_id))["owner"]
        assert owner == ("bob" if landed[0]["status"] == "accepted" else "alice")
