"""Room ownership and the scope of each credential: first-touch claims under concurrency,
the per-team cap, claiming turned off, invites, bound agents and read-only keys."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from django.utils import timezone

from calls.runner import tool_run
from rooms import errors
from tenants import access
from tenants import errors as tenant_errors
from tenants import services as tenant_services
from tenants.auth import Bearer, caller_resolve
from tenants.capabilities import Caller
from tenants.db import db_run
from tenants.models import AuditEvent, Room, Team
from tests import callers
from tests.clock import clock_at
from tests.conftest import new_room_id

pytestmark = [pytest.mark.anyio, pytest.mark.store]


async def outcome(caller: Caller, room_id: str) -> str:
    try:
        await access.room_access(caller, room_id, write=True)
    except errors.RoomAccessError as exc:
        return exc.message
    return "ok"


async def test_concurrent_first_touches_by_one_team_all_succeed(redis_client_closed: None) -> None:
    room_id = new_room_id("first")
    team_a = await callers.team("team-a")
    results = await asyncio.gather(*(outcome(team_a, room_id) for _ in range(16)))
    assert results == ["ok"] * 16
    assert (
        await db_run(
            lambda: Room.objects.filter(room_id=room_id).values_list("team__slug", flat=True).get()
        )
        == "team-a"
    )
    assert (
        await db_run(
            lambda: AuditEvent.objects.filter(action="room.claim", object_id=room_id).count()
        )
        == 1
    )


async def test_concurrent_first_touches_by_several_teams_leave_one_owner(
    redis_client_closed: None,
) -> None:
    room_id = new_room_id("race")
    teams = [f"team-{i}" for i in range(8)]
    keys = {t: await callers.team(t) for t in teams}
    results = await asyncio.gather(*(outcome(keys[t], room_id) for t in teams for _ in range(3)))
    owner = await db_run(
        lambda: Room.objects.filter(room_id=room_id).values_list("team__slug", flat=True).get()
    )
    assert owner in teams
    assert results.count("ok") == 3  # the owner's three calls
    assert set(results) == {"ok", errors.ROOM_ACCESS_DENIED}
    # The owner keeps the room afterwards; the others stay out.
    for team in teams:
        assert await outcome(keys[team], room_id) == (
            "ok" if team == owner else errors.ROOM_ACCESS_DENIED
        )


async def test_the_room_cap_holds_under_concurrency(redis_client_closed: None) -> None:
    team = await db_run(lambda: Team.objects.create(slug="capped", name="capped", room_cap=3))
    capped = await callers.team("capped")
    room_ids = [new_room_id("cap") for _ in range(12)]

    async def claim(room_id: str) -> str:
        try:
            await access.room_access(capped, room_id, write=True)
        except errors.DomainError as exc:
            return exc.code
        return "ok"

    results = await asyncio.gather(*(claim(r) for r in room_ids))
    assert results.count("ok") == 3
    assert results.count("quota_exceeded") == 9
    assert await db_run(lambda: Room.objects.filter(team=team).count()) == 3


async def test_another_teams_room_and_an_unknown_room_answer_alike_when_claiming_is_off(
    settings: object, redis_client_closed: None
) -> None:
    settings.ROOM_CLAIM_ON_FIRST_TOUCH = False  # type: ignore[attr-defined]
    theirs = new_room_id("theirs")
    await db_run(create_room, "team-b", theirs)
    unknown = new_room_id("nobody")
    caller = await callers.team("team-a")
    answers = []
    for room_id in (theirs, unknown, "Not_A.Room__id"):
        with pytest.raises(errors.RoomAccessError) as caught:
            await access.room_access(caller, room_id, write=False)
        answers.append(
            (type(caught.value), caught.value.message, caught.value.status, caught.value.extra)
        )
    assert answers[0] == answers[1] == answers[2]
    assert not await db_run(lambda: Room.objects.filter(room_id=unknown).exists())  # no squatting
    # A room created explicitly is reachable by its team.
    mine = new_room_id("mine")
    await db_run(create_room, "team-a", mine)
    assert (await access.room_access(caller, mine, write=True)).room_id == mine


def create_room(team: str, room_id: str) -> Room:
    return tenant_services.room_create(
        team=tenant_services.team_ensure(team), room_id=room_id, actor="test"
    )


def create_key(team: str, **options: object) -> tenant_services.MintedKey:
    return tenant_services.api_key_create(
        team=tenant_services.team_ensure(team),
        name="test key",
        **options,  # type: ignore[arg-type]
    )


async def _room(team: str) -> Room:
    return await db_run(create_room, team, new_room_id("inv"))


async def test_an_invite_reaches_only_its_room_never_claims_and_lists_only_it(
    redis_client_closed: None,
) -> None:
    room = await _room("team-a")
    other = await _room("team-a")
    minted = await db_run(tenant_services.invite_create, room=room, label="guest")
    guest = await caller_resolve(Bearer(minted.secret))
    assert guest is not None and guest.kind == "invite" and guest.room == room.room_id

    assert (await access.room_access(guest, room.room_id, write=True)).room_id == room.room_id
    for room_id in (other.room_id, new_room_id("unclaimed")):
        with pytest.raises(errors.RoomAccessError):
            await access.room_access(guest, room_id, write=True)
    assert not await db_run(lambda: Room.objects.filter(room_id__startswith="unclaimed").exists())
    listed = await access.CallerRooms(guest).rooms()
    assert [r["roomId"] for r in listed] == [room.room_id]


async def test_an_expired_invite_is_refused_even_when_cached(redis_client_closed: None) -> None:
    room = await _room("team-a")
    soon = timezone.now() + timedelta(seconds=30)
    minted = await db_run(tenant_services.invite_create, room=room, expires_at=soon)
    assert await caller_resolve(Bearer(minted.secret)) is not None  # now cached in Redis
    with clock_at(soon + timedelta(seconds=1)):
        assert await caller_resolve(Bearer(minted.secret)) is None
    past = await db_run(
        tenant_services.invite_create, room=room, expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert await caller_resolve(Bearer(past.secret)) is None


async def test_a_bound_invite_acts_only_as_its_agent(redis_client_closed: None) -> None:
    room = await _room("team-a")
    minted = await db_run(tenant_services.invite_create, room=room, agent_name="reviewer")
    guest = await caller_resolve(Bearer(minted.secret))
    assert guest is not None and guest.agent == "reviewer"
    post = {"roomId": room.room_id, "type": "note", "to": "all", "payload": {}}

    with pytest.raises(tenant_errors.ActorMismatchError) as caught:
        await tool_run(guest, "post_event", {**post, "from": "someone-else"})
    assert caught.value.message == tenant_errors.ACTOR_MISMATCH.format(
        agent="reviewer", field="from", given="someone-else"
    )
    with pytest.raises(tenant_errors.ActorMismatchError):
        await tool_run(guest, "heartbeat", {"roomId": room.room_id, "agentId": "impostor"})

    event = await tool_run(guest, "post_event", {**post, "from": "reviewer"})
    assert event["from"] == "reviewer"
    beat = await tool_run(guest, "heartbeat", {"roomId": room.room_id, "agentId": "reviewer"})
    assert beat["agentId"] == "reviewer"


async def test_a_bound_key_fills_in_its_agent_where_the_actor_is_left_out(
    redis_client_closed: None,
) -> None:
    minted = await db_run(create_key, "team-a", agent_name="ci-bot")
    caller = await caller_resolve(Bearer(minted.secret))
    assert caller is not None and caller.agent == "ci-bot"
    room_id = new_room_id("bound")
    task = await tool_run(caller, "add_task", {"roomId": room_id, "title": "t"})
    # Naming someone else as the task's owner is free: the owner is not the actor.
    updated = await tool_run(
        caller,
        "update_task",
        {
            "roomId": room_id,
            "taskId": task["id"],
            "status": "in_progress",
            "owner": "frontend",
            "note": "handing over",
        },
    )
    assert updated["owner"] == "frontend"
    assert updated["notes"][0]["by"] == "ci-bot"
    events = await tool_run(caller, "read_events", {"roomId": room_id, "order": "asc"})
    assert [e["from"] for e in events] == ["ci-bot", "ci-bot"]


async def test_a_read_only_key_reads_but_every_write_is_refused(redis_client_closed: None) -> None:
    from rooms import registry

    minted = await db_run(create_key, "team-a", read_only=True)
    viewer = await caller_resolve(Bearer(minted.secret))
    assert viewer is not None and not viewer.write
    room_id = new_room_id("ro")
    await access.room_access(await callers.team("team-a"), room_id, write=True)  # it exists
    plan = await tool_run(viewer, "read_plan", {"roomId": room_id})
    assert plan["tasks"] == []
    writers = [t for t in registry.TOOLS if not t.read_only]
    assert writers  # which tools read is pinned in tests/rooms/test_registry.py
    for tool in writers:
        with pytest.raises(errors.ReadOnlyCallerError) as caught:
            await tool_run(viewer, tool.name, {"roomId": room_id, **_args(tool.name)})
        assert caught.value.message == tenant_errors.READ_ONLY_REFUSED


def _args(name: str) -> dict[str, object]:
    from tests.rooms.test_registry import VALID_ARGS

    return VALID_ARGS[name]
