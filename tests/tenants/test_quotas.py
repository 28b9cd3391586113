"""Account quotas: rooms, keys, invites and share links per team and room, and the streams
and waiting calls one server process holds — each refused naming the quota, under
concurrency never passed."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from rest_framework.test import APIClient

from calls.runner import tool_run
from rooms import errors as room_errors
from tenants import budgets, errors, people, services
from tenants.auth import Bearer, caller_resolve
from tenants.db import db_run
from tests.conftest import new_room_id

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.store]


def test_a_team_has_a_room_quota_unless_its_own_cap_says_otherwise(settings: Any) -> None:
    settings.TEAM_ROOMS_MAX = 2
    team = services.team_ensure(new_room_id("rooms"))
    secret = services.api_key_create(team=team, name="k").secret
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert [client.post("/api/v1/rooms", {}, format="json").status_code for _ in range(2)] == [
        201,
        201,
    ]
    refused = client.post("/api/v1/rooms", {}, format="json")
    assert refused.status_code == 429
    assert refused.json()["extra"] == {"quota": "TEAM_ROOMS_MAX", "used": 2, "limit": 2}
    assert refused.json()["message"].startswith("Quota reached: rooms of this team (2 of 2).")
    team.room_cap = 3
    team.save(update_fields=["room_cap"])
    assert client.post("/api/v1/rooms", {}, format="json").status_code == 201


def test_live_keys_per_team_are_bounded_and_revoking_frees_one(settings: Any) -> None:
    settings.TEAM_KEYS_MAX = 2
    team = services.team_ensure(new_room_id("keys"))
    first = services.api_key_create(team=team, name="a")
    services.api_key_create(team=team, name="b")
    with pytest.raises(room_errors.QuotaExceededError) as caught:
        services.api_key_create(team=team, name="c")
    assert caught.value.extra["quota"] == "TEAM_KEYS_MAX"
    services.api_key_revoke(key=first.key)
    services.api_key_create(team=team, name="c")


def test_invites_and_share_links_share_a_quota_per_room(settings: Any) -> None:
    settings.ROOM_INVITES_MAX = 2
    team = services.team_ensure(new_room_id("guests"))
    room = services.room_create(team=team, room_id=None, actor="t")
    services.invite_create(room=room)
    people.share_link_create(room=room, label="", expires_at=None, created_by=None, actor="t")
    for make in (
        lambda: services.invite_create(room=room),
        lambda: people.share_link_create(
            room=room, label="", expires_at=None, created_by=None, actor="t"
        ),
    ):
        with pytest.raises(room_errors.QuotaExceededError) as caught:
            make()
        assert caught.value.extra["quota"] == "ROOM_INVITES_MAX"
    other = services.room_create(team=team, room_id=None, actor="t")
    services.invite_create(room=other)  # another room has its own


def test_concurrent_room_creations_never_pass_the_team_quota(settings: Any) -> None:
    settings.TEAM_ROOMS_MAX = 3
    team = services.team_ensure(new_room_id("burst"))

    async def many() -> list[str]:
        async def one() -> str:
            try:
                await db_run(services.room_create, team=team, room_id=None, actor="t")
            except room_errors.QuotaExceededError:
                return "refused"
            return "ok"

        return await asyncio.gather(*(one() for _ in range(12)))

    results = asyncio.run(many())
    assert results.count("ok") == 3 and team.rooms.count() == 3


@pytest.mark.anyio
async def test_a_server_process_holds_at_most_its_waiters(
    settings: Any, redis_client_closed: None
) -> None:
    settings.PROCESS_WAITERS_MAX = 2
    team = await db_run(services.team_ensure, new_room_id("proc"))
    secret = await db_run(lambda: services.api_key_create(team=team, name="k").secret)
    caller = await caller_resolve(Bearer(secret))
    assert caller is not None
    room_id = new_room_id("w")
    wait = {"roomId": room_id, "agentId": "a", "timeoutMs": 5_000}
    parked = [asyncio.ensure_future(tool_run(caller, "wait_for_events", wait)) for _ in range(2)]
    async with asyncio.timeout(10):
        while budgets.held_here("waiters") < 2:
            await asyncio.sleep(0.01)
    with pytest.raises(errors.TooManyError) as caught:
        await tool_run(caller, "wait_for_events", {**wait, "timeoutMs": 0})
    assert "this server already holds its most (2)" in caught.value.message
    for task in parked:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert budgets.held_here("waiters") == 0
    done = await tool_run(caller, "wait_for_events", {**wait, "timeoutMs": 0})
    assert done["timedOut"] is True
