"""Room ids (issue 14, point 5): a first touch of a new id that looks like one of the
team's rooms is answered with a warning naming it and creates nothing; touched again, it
is created. Numbered siblings are not typos; another team's rooms are never compared; the
MCP instructions of a team key list the team's rooms."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from calls.runner import tool_run
from mcp_gateway.app import instructions_for
from rooms import errors, keys
from tenants.db import db_run
from tenants.models import Room
from tests import callers
from tests.conftest import new_room_id

pytestmark = [pytest.mark.anyio, pytest.mark.store]


def exists(room_id: str) -> bool:
    return Room.objects.filter(room_id=room_id).exists()


async def test_a_near_miss_of_a_team_room_is_warned_once_then_created(
    redis_client_closed: None, sync_redis: redis.Redis, settings: Any
) -> None:
    settings.ROOM_CLAIM_ON_FIRST_TOUCH = True
    team = await callers.team("ids-a")
    base = new_room_id("billing")
    await tool_run(team, "add_task", {"roomId": base, "title": "real"})
    typo = base[:-1] + ("x" if base[-1] != "x" else "y")
    with pytest.raises(errors.RoomIdNearError) as warned:
        await tool_run(team, "add_task", {"roomId": typo, "title": "lost"})
    assert f'there is "{base}"' in warned.value.message
    assert warned.value.extra == {"roomId": typo, "closest": base}
    assert not await db_run(exists, typo)
    assert not list(sync_redis.scan_iter(match=f"{keys.prefix()}:{{{typo}}}:*"))

    created = await tool_run(team, "add_task", {"roomId": typo, "title": "meant it"})
    assert created["title"] == "meant it" and await db_run(exists, typo)

    # Numbered siblings are meant, not typos.
    await tool_run(team, "add_task", {"roomId": f"{base}-sprint-1", "title": "one"})
    await tool_run(team, "add_task", {"roomId": f"{base}-sprint-2", "title": "two"})


async def test_another_teams_rooms_are_never_compared(
    redis_client_closed: None, settings: Any
) -> None:
    """The attack: probe for another team's room names through the warning. Nothing."""
    settings.ROOM_CLAIM_ON_FIRST_TOUCH = True
    theirs = await callers.team("ids-b")
    mine = await callers.team("ids-c")
    secret = new_room_id("acquisition")
    await tool_run(theirs, "add_task", {"roomId": secret, "title": "private"})
    probe = secret[:-1] + ("x" if secret[-1] != "x" else "y")
    made = await tool_run(mine, "add_task", {"roomId": probe, "title": "mine"})
    assert made["title"] == "mine"


async def test_the_instructions_of_a_team_key_list_its_rooms(redis_client_closed: None) -> None:
    team = await callers.team("ids-d")
    assert "No room yet" in await instructions_for(team, "full")
    room = new_room_id("listed")
    await tool_run(team, "add_task", {"roomId": room, "title": "t"})
    text = await instructions_for(team, "full")
    assert f"Your rooms: {room}" in text
    guest = callers.guest_of(team, room)
    assert room in await instructions_for(guest, "full")
    # A roomd connection is told roomd's workflow, with the same rooms.
    roomd = await instructions_for(team, "roomd")
    assert f"Your rooms: {room}" in roomd and "claim_task" not in roomd
    assert "claim_task" in text


def test_a_typo_is_two_edits_or_fewer_and_a_different_word_is_not(transactional_db: None) -> None:
    from tenants import services
    from tenants.models import Team
    from tenants.selectors import room_id_near

    team = Team.objects.create(slug="ids-e")
    for rid in ("frontend-app", "payments-idle", "sprint-1"):
        services.room_insert(team_id=team.pk, room_id=rid, name="", actor="t", how="created")
    assert room_id_near(team.pk, "frontned-app") == "frontend-app"  # a swap
    assert room_id_near(team.pk, "frontend-ap") == "frontend-app"  # a dropped letter
    assert room_id_near(team.pk, "payments-lost") is None  # another word
    assert room_id_near(team.pk, "sprint-2") is None  # a numbered sibling
    assert room_id_near(team.pk, "frontend-app-b") is None  # a word added
    assert room_id_near(team.pk, "backend-app") is None
    # Two first touches at once: the second finds the first's room, not a near one.
    assert room_id_near(team.pk, "frontend-app") is None
