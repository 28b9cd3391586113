"""Project memory (rooms.memory, tenants.projects): a new room of a project starts with the
durable decisions and contracts of its earlier rooms, live or archived; get_my_summary says
so, list_context includes them only when asked, marked as inherited; another team's rooms
of a project with the same name give nothing."""

from __future__ import annotations

from typing import Any

import pytest

from calls.runner import tool_run
from tenants import archives, services
from tenants.capabilities import Caller
from tenants.db import db_run
from tenants.models import Team
from tests import callers
from tests.conftest import new_room_id

pytestmark = pytest.mark.anyio

DECISION = {
    "title": "database",
    "decision": "postgres",
    "rationale": "we run it already",
    "alternatives": ["sqlite"],
    "consequences": ["one more service"],
}


async def call(caller: Caller, room_id: str, tool: str, **args: Any) -> Any:
    return await tool_run(caller, tool, {"roomId": room_id, **args})


def create(slug: str, project: str) -> str:
    team = Team.objects.get(slug=slug)
    return services.room_create(
        team=team, room_id=new_room_id("proj"), actor="test", project=project
    ).room_id


async def write(caller: Caller, room_id: str, type_: str, summary: str, payload: Any) -> Any:
    return await call(
        caller,
        room_id,
        "write_context",
        type=type_,
        summary=summary,
        consuming_agents=["bob"],
        payload=payload,
        author="alice",
    )


async def test_a_new_room_of_a_project_inherits_its_earlier_rooms_durable_context(
    team_a: Caller,
) -> None:
    first = await db_run(create, "team-a", "billing")
    await write(team_a, first, "arch_decision", "postgres", DECISION)
    await write(team_a, first, "note", "a passing note", {"text": "not durable"})
    decision = await write(
        team_a, first, "arch_decision", "queues", {**DECISION, "title": "q", "decision": "sqs"}
    )
    await call(
        team_a,
        first,
        "update_context",
        id=decision["id"],
        author="alice",
        payload={**DECISION, "title": "q", "decision": "rabbitmq"},
    )
    second = await db_run(create, "team-a", "billing")
    await write(
        team_a,
        second,
        "api_contract",
        "invoices api",
        {
            "service": "invoices",
            "version": "1",
            "endpoints": [
                {
                    "method": "GET",
                    "path": "/i",
                    "response": {},
                    "auth_required": True,
                    "description": "list",
                }
            ],
        },
    )
    await db_run(archives.room_archive, second, actor="test")  # archived rooms count too
    other = await db_run(create, "team-a", "search")  # another project: nothing
    await write(team_a, other, "arch_decision", "elastic", DECISION)

    third = await db_run(create, "team-a", "billing")
    summary = await call(team_a, third, "get_my_summary", agentId="bob")
    assert summary["inheritedContext"]["project"] == "billing"
    assert summary["inheritedContext"]["count"] == 3
    assert set(summary["inheritedContext"]["rooms"]) == {first, second}
    assert "includeInherited" in summary["inheritedContext"]["how"]

    assert await call(team_a, third, "list_context") == []
    inherited = await call(team_a, third, "list_context", includeInherited=True)
    assert sorted(e["summary"] for e in inherited) == ["invoices api", "postgres", "queues"]
    assert all(e["inherited"]["project"] == "billing" for e in inherited)
    latest = next(e for e in inherited if e["summary"] == "queues")
    assert latest["payload"]["decision"] == "rabbitmq" and latest["inherited"]["roomId"] == first
    only = await call(team_a, third, "list_context", includeInherited=True, type="api_contract")
    assert [e["summary"] for e in only] == ["invoices api"]

    # The room's own context comes first and stays its own.
    await write(team_a, third, "note", "mine", {"text": "x"})
    mine = await call(team_a, third, "list_context", includeInherited=True)
    assert mine[0]["summary"] == "mine" and "inherited" not in mine[0]


async def test_another_teams_project_of_the_same_name_gives_nothing(team_a: Caller) -> None:
    """The attack: a tenant names its project like another team's, hoping to inherit its
    decisions and contracts. It inherits nothing."""
    theirs = await db_run(create, "team-a", "payments")
    await write(team_a, theirs, "arch_decision", "secret plan", DECISION)
    team_b = await callers.team("team-b")
    mine = await db_run(create, "team-b", "payments")
    summary = await call(team_b, mine, "get_my_summary", agentId="mallory")
    assert summary["inheritedContext"]["count"] == 0
    assert await call(team_b, mine, "list_context", includeInherited=True) == []
