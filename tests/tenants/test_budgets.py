"""Per-team and per-guest budgets: sliding-window call limits (failing open when the
limiter's Redis is dead), and a guest's own budget that never counts against its team's."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from calls.runner import tool_run
from rooms import clock
from rooms.keys import TeamKeys
from rooms.store.connections import limiter
from tenants import errors
from tenants import services as tenant_services
from tenants.auth import Bearer, caller_resolve
from tenants.capabilities import Caller
from tenants.db import db_run
from tests import callers
from tests.clock import clock_at
from tests.conftest import new_room_id

pytestmark = [pytest.mark.anyio, pytest.mark.store]


async def caller(team: str) -> Caller:
    return await callers.team(team)


async def test_over_the_limit_is_a_clear_refusal_and_the_window_slides(
    settings: object, redis_client_closed: None
) -> None:
    settings.RATE_LIMIT_PER_MINUTE = 5  # type: ignore[attr-defined]
    team = await caller(new_room_id("rl-team"))
    room_id = new_room_id("rl")
    with clock_at(clock.now()) as now:
        start = now[0]
        for _ in range(5):
            await tool_run(team, "read_plan", {"roomId": room_id})
        with pytest.raises(errors.RateLimitedError) as caught:
            await tool_run(team, "read_plan", {"roomId": room_id})
        assert caught.value.message == errors.RATE_LIMITED.format(limit=5, scope="team", retry=60)
        assert caught.value.status == 429 and caught.value.retry_after_seconds == 60
        # Another team is not affected.
        await tool_run(
            await caller(new_room_id("rl-other")), "read_plan", {"roomId": new_room_id("x")}
        )
        # A minute later the oldest calls have left the window.
        from datetime import timedelta

        now[0] = start + timedelta(seconds=61)
        await tool_run(team, "read_plan", {"roomId": room_id})


async def test_concurrent_calls_never_overshoot_the_limit(
    settings: object, redis_client_closed: None
) -> None:
    settings.RATE_LIMIT_PER_MINUTE = 20  # type: ignore[attr-defined]
    team = await caller(new_room_id("rl-burst"))
    room_id = new_room_id("burst")

    async def one() -> str:
        try:
            await tool_run(team, "read_plan", {"roomId": room_id})
        except errors.RateLimitedError:
            return "limited"
        return "ok"

    results = await asyncio.gather(*(one() for _ in range(60)))
    assert results.count("ok") == 20 and results.count("limited") == 40


async def test_a_window_holds_at_most_its_limit_and_one_however_long_it_is_used(
    settings: object, redis_client_closed: None
) -> None:
    """Calls older than the window are counted out only when it looks full (a charge is then
    three commands, not four): a team calling below its limit minute after minute is never
    refused for its old calls, and its window never holds more than the limit and one."""
    settings.RATE_LIMIT_PER_MINUTE = 5  # type: ignore[attr-defined]
    team = await caller(new_room_id("rl-steady"))
    room_id = new_room_id("steady")
    with clock_at(clock.now()) as now:
        start = now[0]
        for minute in range(4):
            now[0] = start + timedelta(seconds=61 * minute)
            for _ in range(4):
                await tool_run(team, "read_plan", {"roomId": room_id})
            held = await limiter().zcard(TeamKeys(team.team_id).calls(team.budget))
            assert held <= 6
        await tool_run(team, "read_plan", {"roomId": room_id})  # the last minute's fifth
        with pytest.raises(errors.RateLimitedError):
            await tool_run(team, "read_plan", {"roomId": room_id})


def _room_and_invite(team: str) -> tuple[str, str]:
    room = tenant_services.room_create(
        team=tenant_services.team_ensure(team), room_id=new_room_id("inv-rl"), actor="test"
    )
    return room.room_id, tenant_services.invite_create(room=room).secret


async def test_an_invite_has_its_own_limit(settings: object, redis_client_closed: None) -> None:
    settings.RATE_LIMIT_PER_MINUTE = 100  # type: ignore[attr-defined]
    settings.RATE_LIMIT_INVITE_PER_MINUTE = 3  # type: ignore[attr-defined]
    room_id, secret = await db_run(_room_and_invite, new_room_id("team"))
    guest = await caller_resolve(Bearer(secret))
    assert guest is not None
    for _ in range(3):
        await tool_run(guest, "read_plan", {"roomId": room_id})
    with pytest.raises(errors.RateLimitedError) as caught:
        await tool_run(guest, "read_plan", {"roomId": room_id})
    assert "for this invite" in caught.value.message


async def test_a_dead_limiter_lets_calls_through_and_logs_it(
    settings: object, caplog: pytest.LogCaptureFixture, redis_client_closed: None
) -> None:
    settings.RATE_LIMIT_PER_MINUTE = 1  # type: ignore[attr-defined]
    settings.RATE_LIMIT_REDIS_URL = "redis://127.0.0.1:1/0"  # type: ignore[attr-defined]
    team = await caller(new_room_id("rl-dead"))
    room_id = new_room_id("dead")
    with caplog.at_level(logging.WARNING, logger="tenants.budgets"):
        for _ in range(3):  # over the limit of 1, yet nothing is refused
            plan = await tool_run(team, "read_plan", {"roomId": room_id})
            assert plan["tasks"] == []
    warnings = [r for r in caplog.records if "rate limiter unavailable" in r.getMessage()]
    assert len(warnings) == 3


def test_the_rest_api_answers_429_with_retry_after(settings: object) -> None:
    settings.RATE_LIMIT_PER_MINUTE = 2  # type: ignore[attr-defined]
    minted = tenant_services.api_key_create(
        team=tenant_services.team_ensure(new_room_id("rl-rest")), name="k"
    )
    client = APIClient()
    auth = {"HTTP_AUTHORIZATION": f"Bearer {minted.secret}"}
    assert [client.get("/api/v1/me", **auth).status_code for _ in range(2)] == [200, 200]
    refused = client.get("/api/v1/me", **auth)
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert refused.json()["code"] == "rate_limited"
