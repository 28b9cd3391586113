"""read_plan's answer (selectors.plan_view) shares decoded tasks between reads and carries
its JSON text: it must be plan_get's plan, and its text dumps of it, whatever the plan
holds (tasks with leases, notes, dependencies, text from anywhere in Unicode)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from calls.runner import tool_run
from rooms import records
from rooms.refs import RoomRef
from rooms.selectors import plan as plan_selectors
from rooms.services import plan as plan_services
from rooms.store import plan as plan_store
from tenants.capabilities import Caller

pytestmark = pytest.mark.anyio


async def _same(room: RoomRef) -> dict[str, Any]:
    viewed = await plan_selectors.plan_view(room)
    assert isinstance(viewed, records.KnownJson)
    assert viewed == await plan_selectors.plan_get(room)
    assert viewed.json_text == records.dumps(viewed)
    assert '"' + viewed.json_quoted + '"' == json.dumps(viewed.json_text, ensure_ascii=False)
    return dict(viewed)


async def test_an_empty_plan(room: RoomRef) -> None:
    plan = await _same(room)
    assert plan["tasks"] == []


async def test_tasks_notes_dependencies_and_leases(team_a: Caller, room: RoomRef) -> None:
    first = await plan_services.task_add(
        room,
        title='é ✓ "quoted" \\ \u2028',
        description="</script>",
        depends_on=[],
        priority=None,
        agent_id="planner",
    )
    second = await plan_services.task_add(
        room,
        title="second",
        description="",
        depends_on=[first["id"]],
        priority=3,
        agent_id="planner",
    )
    await _same(room)
    await plan_services.task_update(
        room,
        task_id=second["id"],
        status="in_progress",
        owner_given=True,
        owner="bob",
        note={"text": "a note ✓"},
        description=None,
        agent_id="bob",
    )
    await _same(room)
    await tool_run(
        team_a,
        "claim_task",
        {
            "roomId": room.room_id,
            "taskId": first["id"],
            "agentId": "alice",
            "paths": ["b.py", "a/"],
        },
    )
    plan = await _same(room)
    leased = next(t for t in plan["tasks"] if t["id"] == first["id"])
    assert [lease["path"] for lease in leased["leases"]] == ["a/**", "b.py"]
    # The shared copy of the stored task is not the one the lease was added to.
    again = await _same(room)
    assert [t.get("leases") for t in again["tasks"]] == [t.get("leases") for t in plan["tasks"]]
    for raw in (await plan_store.plan_read(room.keys)).tasks:
        assert "leases" not in records.task_seen(raw)


async def test_read_plan_answers_the_plan(team_a: Caller, room: RoomRef) -> None:
    await plan_services.task_add(
        room, title="t", description="d", depends_on=[], priority=None, agent_id="planner"
    )
    answered = await tool_run(team_a, "read_plan", {"roomId": room.room_id})
    assert answered == await plan_selectors.plan_get(room)


def test_the_shared_task_cache_is_bounded_by_size_whatever_a_tenant_stores() -> None:
    """The cache is the process's, shared by every tenant: huge tasks are never kept, and
    however many large ones one tenant's plans show, what it holds stays under its bound."""
    big = records.dumps(
        {"id": "t_big", "title": "x", "description": "d" * (records.TASKS_SEEN.entry_chars + 1)}
    )
    records.task_seen(big)
    assert records.TASKS_SEEN.get(big) is None
    for n in range(2_000):
        raw = records.dumps({"id": f"t_{n}", "title": "t", "description": "d" * 8_000})
        task = records.task_seen(raw)
        assert task["id"] == f"t_{n}" and task.json_text == records.dumps(task)
        entries, chars = records.TASKS_SEEN.held()
        assert chars <= records.TASKS_SEEN.chars
        assert entries <= records.TASKS_SEEN.most
