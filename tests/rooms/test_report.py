"""The room's report tells what was proven, who handed what to whom, and when the room
was paused: verification evidence, handoffs and lifecycle changes (issue 13, point 8)."""

from __future__ import annotations

from typing import Any

import pytest

from calls.runner import tool_run
from rooms.refs import RoomRef
from rooms.report import room_report
from tenants.capabilities import Caller

pytestmark = pytest.mark.anyio


async def call(caller: Caller, room: RoomRef, tool: str, **args: Any) -> Any:
    return await tool_run(caller, tool, {"roomId": room.room_id, **args})


async def test_the_report_holds_evidence_handoffs_and_status_changes(
    team_a: Caller, room: RoomRef
) -> None:
    for agent in ("alice", "bob"):
        await call(team_a, room, "heartbeat", agentId=agent)
    task = await call(team_a, room, "add_task", title="refund endpoint")
    await call(team_a, room, "claim_task", taskId=task["id"], agentId="alice")
    offered = await call(
        team_a,
        room,
        "handoff_task",
        taskId=task["id"],
        to="bob",
        note="tests left",
        **{"from": "alice"},
    )
    await call(team_a, room, "accept_handoff", handoffId=offered["id"], agentId="bob")
    evidence = [{"kind": "test", "text": "pytest: 12 passed", "ref": "ci/41"}]
    await call(team_a, room, "submit_task", taskId=task["id"], agentId="bob", evidence=evidence)
    await call(team_a, room, "verify_task", taskId=task["id"], agentId="alice", verdict="accept")
    await call(team_a, room, "set_room_status", status="paused", agentId="lead")

    report = await room_report(room)

    assert "## Verified work" in report and "### refund endpoint — verified" in report
    assert "Submitted by bob at" in report and ", verified by alice at" in report
    assert "- **test** (ci/41): pytest: 12 passed" in report
    assert "- “refund endpoint” alice → bob (" in report and "— accepted at" in report
    assert ": tests left" in report
    for line in (
        "bob submitted “refund endpoint”",
        "alice verified “refund endpoint”",
        f"handoff of {task['id']} alice → bob accepted",
        "lead set the room paused (was active)",
    ):
        assert line in report, line
