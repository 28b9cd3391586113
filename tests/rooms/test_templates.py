"""list_templates and create_room_from_template: a plan to start from, written in one step
and never over (or into) a plan that is there."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from calls.runner import tool_run
from rooms import errors, templates
from rooms.refs import RoomRef
from tenants.capabilities import Caller
from tests import callers

pytestmark = pytest.mark.anyio


async def test_list_templates_has_blank_web_app_and_incident(team_a: Caller) -> None:
    listed = await tool_run(team_a, "list_templates", {})

    rows = {t["id"]: t for t in listed["templates"]}
    assert {"blank", "web-app", "incident"} <= set(rows)
    assert rows["blank"]["taskCount"] == 0
    assert rows["web-app"]["taskCount"] == len(templates.template_get("web-app").tasks) > 0
    assert all(t["name"] and t["description"] for t in listed["templates"])


async def test_a_room_made_without_a_room_id_is_new_and_holds_the_plan(team_a: Caller) -> None:
    made = await tool_run(team_a, "create_room_from_template", {"templateId": "web-app"})

    assert made["templateId"] == "web-app" and made["roomId"].startswith("web-app-")
    plan = await tool_run(team_a, "read_plan", {"roomId": made["roomId"]})
    assert len(plan["tasks"]) == made["taskCount"] == 6
    by_title = {t["title"]: t for t in plan["tasks"]}
    contract = by_title["Agree the API contract"]
    backend = by_title["Backend endpoints"]
    assert contract["id"] in backend["depends_on"]
    assert all(t["status"] == "pending" and t["owner"] is None for t in plan["tasks"])
    rooms = {r["roomId"] for r in await tool_run(team_a, "list_rooms", {})}
    assert made["roomId"] in rooms  # claimed by the caller's team
    unblocked = await tool_run(team_a, "get_unblocked_tasks", {"roomId": made["roomId"]})
    assert [t["title"] for t in unblocked] == ["Agree the API contract"]


async def test_a_room_with_a_plan_is_refused_and_left_as_it_was(
    team_a: Caller, room: RoomRef
) -> None:
    mine = await tool_run(team_a, "add_task", {"roomId": room.room_id, "title": "mine"})

    with pytest.raises(errors.PlanExistsError, match="never overwrites") as refused:
        await tool_run(
            team_a, "create_room_from_template", {"roomId": room.room_id, "templateId": "incident"}
        )

    assert refused.value.extra["taskCount"] == 1
    plan = await tool_run(team_a, "read_plan", {"roomId": room.room_id})
    assert [t["id"] for t in plan["tasks"]] == [mine["id"]]


async def test_of_many_at_once_on_one_room_exactly_one_plan_is_written(
    team_a: Caller, room: RoomRef
) -> None:
    async def create(template: str) -> Any:
        try:
            return await tool_run(
                team_a,
                "create_room_from_template",
                {"roomId": room.room_id, "templateId": template},
            )
        except errors.PlanExistsError as exc:
            return exc

    outcomes = await asyncio.gather(*(create(["incident", "web-app"][i % 2]) for i in range(16)))

    won = [o for o in outcomes if isinstance(o, dict)]
    assert len(won) == 1
    plan = await tool_run(team_a, "read_plan", {"roomId": room.room_id})
    assert len(plan["tasks"]) == won[0]["taskCount"]  # one template's plan, nothing mixed in


async def test_a_retry_with_the_same_key_reaches_the_same_room(team_a: Caller) -> None:
    args = {"templateId": "incident", "idempotencyKey": "make-incident-1"}
    first = await tool_run(team_a, "create_room_from_template", args)
    again = await tool_run(team_a, "create_room_from_template", args)

    assert again == first
    plan = await tool_run(team_a, "read_plan", {"roomId": first["roomId"]})
    assert len(plan["tasks"]) == first["taskCount"]


async def test_an_unknown_template_names_the_closest_and_claims_no_room(team_a: Caller) -> None:
    before = {r["roomId"] for r in await tool_run(team_a, "list_rooms", {})}
    with pytest.raises(errors.ToolArgumentsError, match='"web-app"') as refused:
        await tool_run(team_a, "create_room_from_template", {"templateId": "web_app"})
    assert "list_templates" in refused.value.message
    with pytest.raises(errors.ToolArgumentsError, match="web-app"):
        await tool_run(
            team_a, "create_room_from_template", {"roomId": "typo-room", "templateId": "webapp"}
        )
    assert {r["roomId"] for r in await tool_run(team_a, "list_rooms", {})} == before


async def test_another_team_cannot_write_a_plan_into_a_room_it_does_not_own(
    team_a: Caller, room: RoomRef
) -> None:
    team_b = await callers.team("team-b")

    with pytest.raises(errors.DomainError) as refused:
        await tool_run(
            team_b, "create_room_from_template", {"roomId": room.room_id, "templateId": "web-app"}
        )

    assert refused.value.code == "room_not_found"
    plan = await tool_run(team_a, "read_plan", {"roomId": room.room_id})
    assert plan["tasks"] == []


async def test_another_team_with_the_same_key_gets_its_own_room_and_never_takes_ours(
    team_a: Caller,
) -> None:
    """Issue 22: a derived id was the template's and the key's alone, the same in every team,
    so another team could take it first. It is the team's now."""
    team_b = await callers.team("team-b")
    args = {"templateId": "incident", "idempotencyKey": "shared-key-22"}
    theirs = await tool_run(team_b, "create_room_from_template", args)
    ours = await tool_run(team_a, "create_room_from_template", args)

    assert ours["roomId"] != theirs["roomId"]
    assert ours["taskCount"] == theirs["taskCount"] > 0
    mine = {r["roomId"] for r in await tool_run(team_a, "list_rooms", {})}
    assert ours["roomId"] in mine and theirs["roomId"] not in mine
    with pytest.raises(errors.DomainError) as refused:
        await tool_run(team_b, "read_plan", {"roomId": ours["roomId"]})
    assert refused.value.code == "room_not_found"


async def test_with_claiming_off_the_tool_still_makes_a_room_but_never_claims_a_named_one(
    team_a: Caller, settings: Any
) -> None:
    settings.ROOM_CLAIM_ON_FIRST_TOUCH = False
    made = await tool_run(team_a, "create_room_from_template", {"templateId": "web-app"})
    plan = await tool_run(team_a, "read_plan", {"roomId": made["roomId"]})
    assert len(plan["tasks"]) == made["taskCount"] == 6
    # Naming an unknown room is still no way to create one when claiming is off.
    with pytest.raises(errors.DomainError) as refused:
        await tool_run(
            team_a, "create_room_from_template", {"roomId": "never-made-22", "templateId": "blank"}
        )
    assert refused.value.code == "room_not_found"


async def test_an_invite_makes_no_room_from_a_template(team_a: Caller, room: RoomRef) -> None:
    guest = callers.guest_of(team_a, room.room_id)
    with pytest.raises(errors.DomainError) as refused:
        await tool_run(guest, "create_room_from_template", {"templateId": "blank"})
    assert refused.value.code == "room_not_found"
    made = await tool_run(team_a, "create_room_from_template", {"templateId": "blank"})
    assert made["taskCount"] == 0
