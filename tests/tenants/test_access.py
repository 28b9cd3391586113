"""Room ownership and the scope of each credential: first-touch claims under concurrency,
the per-team cap, claiming turned off, invites, bound agents and read-only keys."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from django.utils import timezone

from rooms import errors, services
from tenants import access
from tenants import services as tenant_services
from tenants.auth import Caller, caller_from_bearer
from tenants.db import db_run
from tenants.models import AuditEvent, Room, Team
from tests.conftest import new_room_id

pytestmark = pytest.mark.anyio


def team_key(team: str) -> Caller:
    return Caller(team_id=team, kind="static", credential_id=team)


async def outcome(caller: Caller, room_id: str) -> str:
    try:
        await access.room_access(caller, room_id, True)
    except errors.RoomAccessError as exc:
        return exc.message
    return "ok"


async def test_concurrent_first_touches_by_one_team_all_succeed(redis_client_closed: None) -> None:
    room_id = new_room_id("first")
    results = await asyncio.gather(*(outcome(team_key("team-a"), room_id) for _ in range(16)))
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
    results = await asyncio.gather(
        *(outcome(team_key(t), room_id) for t in teams for _ in range(3))
    )
    owner = await db_run(
        lambda: Room.objects.filter(room_id=room_id).values_list("team__slug", flat=True).get()
    )
    assert owner in teams
    assert results.count("ok") == 3  # the owner's three calls
    assert set(results) == {"ok", errors.ROOM_ACCESS_DENIED}
    # The owner keeps the room afterwards; the others stay out.
    for team in teams:
        assert await outcome(team_key(team), room_id) == (
            "ok" if team == owner else errors.ROOM_ACCESS_DENIED
        )


async def test_the_room_cap_holds_under_concurrency(redis_client_closed: None) -> None:
    team = await db_run(lambda: Team.objects.create(slug="capped", name="capped", room_cap=3))
    room_ids = [new_room_id("cap") for _ in range(12)]

    async def claim(room_id: str) -> str:
        try:
            await access.room_access(team_key("capped"), room_id, True)
        except errors.DomainError as exc:
            return exc.code
        return "ok"

    results = await asyncio.gather(*(claim(r) for r in room_ids))
    assert results.count("ok") == 3
    assert results.count("room_cap_reached") == 9
    assert await db_run(lambda: Room.objects.filter(team=team).count()) == 3


async def test_another_teams_room_and_an_unknown_room_answer_alike_when_claiming_is_off(
    settings: object, redis_client_closed: None
) -> None:
    settings.ROOM_CLAIM_ON_FIRST_TOUCH = False  # type: ignore[attr-defined]
    theirs = new_room_id("theirs")
    await db_run(create_room, "team-b", theirs)
    unknown = new_room_id("nobody")
    caller = team_key("team-a")
    answers = []
    for room_id in (theirs, unknown):
        with pytest.raises(errors.RoomAccessError) as caught:
            await access.room_access(caller, room_id, False)
        answers.append(
            (type(caught.value), caught.value.message, caught.value.status, caught.value.extra)
        )
    assert answers[0] == answers[1]
    assert not await db_run(lambda: Room.objects.filter(room_id=unknown).exists())  # no squatting
    # A room created explicitly is reachable by its team.
    mine = new_room_id("mine")
    await db_run(create_room, "team-a", mine)
    assert (await access.room_access(caller, mine, True)).room_id == mine


def create_room(team: str, room_id: str) -> Room:
    return tenant_services.room_create(
        team=tenant_services.team_for_slug(team), room_id=room_id, actor="test"
    )


def create_key(team: str, **options: object) -> tenant_services.MintedKey:
    return tenant_services.api_key_create(
        team=tenant_services.team_for_slug(team),
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
    guest = await caller_from_bearer(minted.secret)
    assert guest is not None and guest.kind == "invite" and guest.allowed_room == room.room_id

    assert (await access.room_access(guest, room.room_id, True)).room_id == room.room_id
    for room_id in (other.room_id, new_room_id("unclaimed")):
        with pytest.raises(errors.RoomAccessError):
            await access.room_access(guest, room_id, True)
    assert not await db_run(lambda: Room.objects.filter(room_id__startswith="unclaimed").exists())
    listed = await access.room_list(guest)
    assert [r["roomId"] for r in listed] == [room.room_id]


async def test_an_expired_invite_is_refused_even_when_cached(redis_client_closed: None) -> None:
    from rooms import clock

    room = await _room("team-a")
    soon = timezone.now() + timedelta(seconds=30)
    minted = await db_run(tenant_services.invite_create, room=room, expires_at=soon)
    assert await caller_from_bearer(minted.secret) is not None  # now cached in Redis
    later = soon + timedelta(seconds=1)
    clock.set_clock(lambda: later)
    try:
        assert await caller_from_bearer(minted.secret) is None
    finally:
        clock.set_clock(None)
    past = await db_run(
        tenant_services.invite_create, room=room, expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert await caller_from_bearer(past.secret) is None


async def test_a_bound_invite_attributes_its_calls_to_its_agent(redis_client_closed: None) -> None:
    room = await _room("team-a")
    minted = await db_run(tenant_services.invite_create, room=room, agent_name="reviewer")
    guest = await caller_from_bearer(minted.secret)
    assert guest is not None
    ref = await access.room_access(guest, room.room_id, True)
    event = await services.event_post(ref, type_="note", from_="someone-else", to="all", payload={})
    assert event["from"] == "reviewer"
    beat = await services.presence_heartbeat(ref, agent_id="impostor")
    assert beat["agentId"] == "reviewer"


async def test_a_bound_key_attributes_its_calls_to_its_agent(redis_client_closed: None) -> None:
    minted = await db_run(create_key, "team-a", agent_name="ci-bot")
    caller = await caller_from_bearer(minted.secret)
    assert caller is not None and caller.bound_agent == "ci-bot"
    ref = await access.room_access(caller, new_room_id("bound"), True)
    task = await services.task_add(
        ref, title="t", description="", depends_on=[], priority=None, agent_id="x"
    )
    updated = await services.task_update(
        ref,
        task_id=task["id"],
        status="done",
        owner_given=False,
        owner=None,
        note="finished",
        description=None,
        agent_id="x",
    )
    assert updated["notes"][0]["by"] == "ci-bot"


async def test_a_read_only_key_reads_but_every_write_is_refused(redis_client_closed: None) -> None:
    from rooms import registry

    minted = await db_run(create_key, "team-a", read_only=True)
    viewer = await caller_from_bearer(minted.secret)
    assert viewer is not None and viewer.read_only
    room_id = new_room_id("ro")
    await access.room_access(team_key("team-a"), room_id, True)  # the team's room exists
    plan = await access.tool_run(viewer, "read_plan", {"roomId": room_id})
    assert plan["tasks"] == []
    writers = [t for t in registry.TOOLS if not t.read_only]
    assert len(writers) == 11
    for tool in writers:
        with pytest.raises(errors.ReadOnlyCallerError) as caught:
            await access.tool_run(viewer, tool.name, {"roomId": room_id, **_args(tool.name)})
        assert caught.value.message == access.READ_ONLY_REFUSED


def _args(name: str) -> dict[str, object]:
    from tests.rooms.test_registry import VALID_ARGS

    return VALID_ARGS[name]
