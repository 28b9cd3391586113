"""A team's guests share a ceiling (issue 22, point 3). Each invite keeps a budget of its
own, and all of a team's guests together also count against a team-level one for calls,
streams and waiting calls (RATE_LIMIT_GUESTS_PER_MINUTE, SSE_STREAMS_GUESTS_PER_TEAM,
WAITERS_GUESTS_PER_TEAM; by default as much as the team itself has). No team, with any
number of guests, takes a server process's last streams or waiters from another team
(PROCESS_RESERVE_PERCENT, PROCESS_RESERVED_PER_TEAM). Each attack is tried as a tenant
would, many clients at once where that is the attack, with the legitimate use beside it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from datetime import timedelta
from typing import Any, cast

import pytest
from django.test import AsyncClient

from calls.runner import tool_run
from rooms import clock
from tenants import budgets, errors, services
from tenants.auth import Bearer, caller_resolve
from tenants.capabilities import Caller
from tenants.db import db_run
from tests.clock import clock_at
from tests.conftest import new_room_id

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.anyio, pytest.mark.store]
BOUND = 10.0  # seconds: the bound on every wait in this file


class Team:
    """A team with a key of its own, one room and `invites` invites to it."""

    def __init__(self, key: Caller, key_secret: str, room_id: str, invites: list[str]) -> None:
        self.key = key
        self.key_secret = key_secret
        self.room_id = room_id
        self.invites = invites

    async def guests(self) -> list[Caller]:
        found = [await caller_resolve(Bearer(secret)) for secret in self.invites]
        assert all(guest is not None for guest in found)
        return cast(list[Caller], found)


async def team_with_invites(label: str, invites: int) -> Team:
    def make() -> tuple[str, str, list[str]]:
        team = services.team_ensure(new_room_id(label))
        secret = services.api_key_create(team=team, name="k").secret
        room = services.room_create(team=team, room_id=new_room_id("r"), actor="t")
        minted = [services.invite_create(room=room).secret for _ in range(invites)]
        return secret, room.room_id, minted

    secret, room_id, minted = await db_run(make)
    key = await caller_resolve(Bearer(secret))
    assert key is not None
    return Team(key, secret, room_id, minted)


async def _read(caller: Caller, room_id: str) -> str:
    try:
        await tool_run(caller, "read_plan", {"roomId": room_id})
    except errors.RateLimitedError as exc:
        return exc.message
    return "ok"


# --- Calls --------------------------------------------------------------------------------


async def test_many_invites_together_stop_at_the_teams_guest_ceiling(
    settings: Any, redis_client_closed: None
) -> None:
    settings.RATE_LIMIT_PER_MINUTE = 10
    settings.RATE_LIMIT_INVITE_PER_MINUTE = 5
    attacker = await team_with_invites("many-invites", 6)
    bystander = await team_with_invites("bystander", 1)
    with clock_at(clock.now()) as now:
        start = now[0]
        outcomes = []
        for guest in await attacker.guests():
            outcomes += [await _read(guest, attacker.room_id) for _ in range(5)]
        # Six invites of five calls each would be 30: together they get the team's 10.
        assert outcomes.count("ok") == 10
        assert (
            outcomes
            == ["ok"] * 10
            + [errors.RATE_LIMITED.format(limit=10, scope=budgets.GUESTS_SCOPE, retry=60)] * 20
        )
        # Another team's calls, its guest's and its key's, go through; so do the team's own.
        assert await _read((await bystander.guests())[0], bystander.room_id) == "ok"
        assert await _read(bystander.key, bystander.room_id) == "ok"
        assert [await _read(attacker.key, attacker.room_id) for _ in range(10)] == ["ok"] * 10
        # A minute later the guests' window has slid: they may call again.
        now[0] = start + timedelta(seconds=61)
        assert await _read((await attacker.guests())[5], attacker.room_id) == "ok"


async def test_an_invite_still_has_its_own_limit_under_the_ceiling(
    settings: Any, redis_client_closed: None
) -> None:
    settings.RATE_LIMIT_PER_MINUTE = 100
    settings.RATE_LIMIT_INVITE_PER_MINUTE = 3
    team = await team_with_invites("own-limit", 2)
    first, second = await team.guests()
    outcomes = [await _read(first, team.room_id) for _ in range(4)]
    assert outcomes[:3] == ["ok"] * 3 and "calls a minute for this invite." in outcomes[3]
    assert await _read(second, team.room_id) == "ok"  # its own budget, untouched


async def test_concurrent_calls_of_many_invites_admit_exactly_the_ceiling(
    settings: Any, redis_client_closed: None
) -> None:
    settings.RATE_LIMIT_PER_MINUTE = 1_000
    settings.RATE_LIMIT_INVITE_PER_MINUTE = 10
    settings.RATE_LIMIT_GUESTS_PER_MINUTE = 17
    team = await team_with_invites("burst", 5)
    guests = await team.guests()
    results = await asyncio.gather(
        *(_read(guest, team.room_id) for guest in guests for _ in range(10))
    )
    assert results.count("ok") == 17
    assert all("this team's guests" in r or "this invite" in r for r in results if r != "ok")


def test_the_rest_door_answers_429_naming_the_guests_ceiling(settings: Any) -> None:
    from rest_framework.test import APIClient

    settings.RATE_LIMIT_PER_MINUTE = 2
    settings.RATE_LIMIT_INVITE_PER_MINUTE = 2
    team = services.team_ensure(new_room_id("rest-guests"))
    room = services.room_create(team=team, room_id=new_room_id("r"), actor="t")
    statuses = []
    for _ in range(2):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {services.invite_create(room=room).secret}")
        statuses += [client.get("/api/v1/me") for _ in range(2)]
    assert [r.status_code for r in statuses] == [200, 200, 429, 429]
    refused = statuses[-1]
    assert refused.json()["code"] == "rate_limited"
    assert "this team's guests" in refused.json()["message"]
    assert 1 <= int(refused["Retry-After"]) <= 60


# --- Streams --------------------------------------------------------------------------------


async def _stream(client: AsyncClient, room_id: str, secret: str) -> Any:
    return await client.get(
        f"/api/v1/rooms/{room_id}/events/stream", headers={"Authorization": f"Bearer {secret}"}
    )


async def _close(responses: list[Any]) -> None:
    """End each open stream as a client hanging up does: its body runs to its end (read one
    frame first, so its body has started) and gives its slot back."""
    for response in responses:
        if response.status_code == 200:
            body = cast(AsyncGenerator[bytes], response._iterator)
            await anext(body)
            await body.aclose()


async def test_concurrent_streams_of_many_invites_stop_at_the_teams_guest_ceiling(
    settings: Any, redis_client_closed: None
) -> None:
    settings.SSE_STREAMS_PER_GUEST = 2
    settings.SSE_STREAMS_PER_TEAM = 3
    team = await team_with_invites("streams", 4)
    client = AsyncClient()
    opened = await asyncio.gather(
        *(_stream(client, team.room_id, secret) for secret in team.invites for _ in range(2))
    )
    try:
        assert sorted(r.status_code for r in opened) == [200] * 3 + [429] * 5
        refused = [r.json() for r in opened if r.status_code == 429]
        assert all(r["code"] == "too_many" for r in refused)
        assert any(
            "this team's guests (invites and share links) together" in r["message"] for r in refused
        )
        assert all(r["extra"]["retryAfter"] >= 1 for r in refused)
        # The team's own key has its own streams still.
        mine = await _stream(client, team.room_id, team.key_secret)
        assert mine.status_code == 200
        await _close([mine])
    finally:
        await _close(opened)
    # Closed, they are free again (given back on the loop's next turn).
    async with asyncio.timeout(BOUND):
        while (again := await _stream(client, team.room_id, team.invites[0])).status_code != 200:
            await asyncio.sleep(0.05)
    await _close([again])


# --- Waiting calls --------------------------------------------------------------------------


async def _park(caller: Caller, room_id: str, agent: str) -> asyncio.Future[Any]:
    wait = {"roomId": room_id, "agentId": agent, "timeoutMs": 20_000}
    return asyncio.ensure_future(tool_run(caller, "wait_for_events", wait))


async def _settle(tasks: list[asyncio.Future[Any]], parked: int) -> list[BaseException]:
    """Wait until all but `parked` have finished (refused); the refusals."""
    async with asyncio.timeout(BOUND):
        while sum(t.done() for t in tasks) < len(tasks) - parked:
            await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)  # nothing else finishes
    assert sum(not t.done() for t in tasks) == parked
    return [cast(BaseException, t.exception()) for t in tasks if t.done()]


async def _cancel(tasks: list[asyncio.Future[Any]]) -> None:
    for task in tasks:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, errors.TooManyError):
            await task


async def test_concurrent_waits_of_many_invites_stop_at_the_teams_guest_ceiling(
    settings: Any, redis_client_closed: None
) -> None:
    settings.WAITERS_PER_GUEST = 2
    settings.WAITERS_PER_TEAM = 3
    team = await team_with_invites("waits", 4)
    guests = await team.guests()
    tasks = [await _park(g, team.room_id, f"g{n}") for n, g in enumerate(guests) for _ in range(2)]
    try:
        refusals = await _settle(tasks, parked=3)
        assert len(refusals) == 5 and all(isinstance(e, errors.TooManyError) for e in refusals)
        assert any("this team's guests" in str(e) for e in refusals)
        # The team's own key still waits.
        done = await tool_run(
            team.key, "wait_for_events", {"roomId": team.room_id, "agentId": "o", "timeoutMs": 0}
        )
        assert done["timedOut"] is True
    finally:
        await _cancel(tasks)


# --- Another team's share of the server --------------------------------------------------


async def test_one_teams_guests_cannot_take_the_servers_last_streams(
    settings: Any, redis_client_closed: None
) -> None:
    settings.PROCESS_STREAMS_MAX = 10
    settings.SSE_STREAMS_PER_GUEST = 100
    settings.SSE_STREAMS_PER_TEAM = 100
    attacker = await team_with_invites("hog-streams", 5)
    other = await team_with_invites("first-stream", 1)
    client = AsyncClient()
    opened = await asyncio.gather(
        *(
            _stream(client, attacker.room_id, secret)
            for secret in attacker.invites
            for _ in range(6)
        )
    )
    try:
        # 10% of this process's streams (rounded down) is kept for other teams' first ones.
        assert sorted(r.status_code for r in opened) == [200] * 9 + [429] * 21
        assert budgets.held_here("streams") == 9
        refused = next(r for r in opened if r.status_code == 429)
        assert "kept for other teams" in refused.json()["message"]
        assert int(refused["Retry-After"]) >= 1
        first = await _stream(client, other.room_id, other.key_secret)
        assert first.status_code == 200  # another team's first stream
        await _close([first])
        guest = await _stream(client, other.room_id, other.invites[0])
        assert guest.status_code == 200  # and its guest's
        await _close([guest])
    finally:
        await _close(opened)


async def test_one_teams_guests_cannot_take_the_servers_last_waiters(
    settings: Any, redis_client_closed: None
) -> None:
    settings.PROCESS_WAITERS_MAX = 10
    settings.WAITERS_PER_GUEST = 100
    settings.WAITERS_PER_TEAM = 100
    attacker = await team_with_invites("hog-waits", 5)
    other = await team_with_invites("first-wait", 1)
    guests = await attacker.guests()
    tasks = [
        await _park(g, attacker.room_id, f"g{n}") for n, g in enumerate(guests) for _ in range(6)
    ]
    try:
        refusals = await _settle(tasks, parked=9)
        assert len(refusals) == 21 and all(isinstance(e, errors.TooManyError) for e in refusals)
        assert budgets.held_here("waiters") == 9
        done = await tool_run(
            other.key, "wait_for_events", {"roomId": other.room_id, "agentId": "o", "timeoutMs": 0}
        )
        assert done["timedOut"] is True  # another team's first waiter
        # The attacker's own key is part of its team: no way round through it.
        with pytest.raises(errors.TooManyError):
            await tool_run(
                attacker.key,
                "wait_for_events",
                {"roomId": attacker.room_id, "agentId": "k", "timeoutMs": 0},
            )
    finally:
        await _cancel(tasks)
    assert budgets.held_here("waiters") == 0
