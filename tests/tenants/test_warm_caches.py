"""What a process remembers of callers and rooms (so a warm call is two round trips) is
never trusted past a change: each answer is checked against the team's epoch, read in the
call's own budget step, and every revocation or room deletion moves the epoch after the
database and Redis changed. Attacks that the caches would let through if they were not."""

from __future__ import annotations

import pytest

from calls.runner import tool_run
from rooms import errors as room_errors
from rooms.store import engine as engine_store
from tenants import access, auth, services
from tenants.auth import Admission, Bearer, caller_admit
from tenants.db import db_run
from tenants.models import ApiKey, Room
from tests.conftest import new_room_id

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.anyio, pytest.mark.store]


def _team_key(label: str) -> tuple[int, str, int]:
    team = services.team_ensure(new_room_id(label))
    minted = services.api_key_create(team=team, name=label)
    return team.pk, minted.secret, minted.key.pk


async def _admit(secret: str) -> Admission:
    admitted = await caller_admit(Bearer(secret), charge=True)
    assert admitted is not None
    return admitted


async def _call(secret: str, tool: str, arguments: dict[str, object]) -> object:
    admitted = await _admit(secret)
    return await tool_run(admitted.caller, tool, arguments, charge=admitted.charge)


async def test_a_revoked_key_is_refused_by_a_process_that_remembers_it() -> None:
    _, secret, key_id = await db_run(_team_key, "revoked")
    _, other, _ = await db_run(_team_key, "other")
    room = new_room_id("r")
    for _ in range(3):
        await _call(secret, "read_plan", {"roomId": room})
    assert any(k.caller.credential == f"key:{key_id}" for k in auth._known.values())
    key = await db_run(ApiKey.objects.get, pk=key_id)
    await db_run(services.api_key_revoke, key=key)
    assert await caller_admit(Bearer(secret), charge=True) is None
    assert await caller_admit(Bearer(secret), charge=False) is None
    # Another team's remembered key is untouched by this team's epoch.
    await _call(other, "read_plan", {"roomId": new_room_id("o")})


async def test_a_deleted_room_claimed_by_another_team_is_not_reached_from_the_cache() -> None:
    _, key_a, _ = await db_run(_team_key, "a")
    _, key_b, _ = await db_run(_team_key, "b")
    room = new_room_id("moved")
    for n in range(3):  # team A's room, remembered by this process
        await _call(key_a, "post_event", {"roomId": room, "type": "n", "from": "a", "payload": n})
    assert len(access._owned) >= 1
    # Deleted (the admin, or the team's own API); its purge runs after the commit.
    await db_run(lambda: Room.objects.filter(room_id=room).delete())
    secret = {"roomId": room, "type": "n", "from": "b", "payload": "team b's secret"}
    await _call(key_b, "post_event", secret)  # first touch: team B's room now
    with pytest.raises(room_errors.RoomAccessError):
        await _call(key_a, "read_events", {"roomId": room})
    with pytest.raises(room_errors.RoomAccessError):
        await _call(key_a, "post_event", {"roomId": room, "type": "n", "from": "a", "payload": 1})
    # B's room holds only B's event; team A goes on working in a room of its own.
    events = await _call(key_b, "read_events", {"roomId": room})
    assert isinstance(events, list) and [e["payload"] for e in events] == ["team b's secret"]
    await _call(key_a, "read_plan", {"roomId": new_room_id("a2")})


async def test_with_the_limiter_away_nothing_remembered_is_trusted(
    settings: object, redis_client_closed: None
) -> None:
    _, secret, key_id = await db_run(_team_key, "away")
    room = new_room_id("away")
    await _call(secret, "read_plan", {"roomId": room})
    await engine_store.close_client()
    settings.RATE_LIMIT_REDIS_URL = "redis://127.0.0.1:1/0"  # type: ignore[attr-defined]
    admitted = await _admit(secret)
    assert admitted.charge.epoch is None  # the call goes through (fail open) ...
    key = await db_run(ApiKey.objects.get, pk=key_id)
    await db_run(lambda: ApiKey.objects.filter(pk=key.pk).delete())
    # ... and the caller comes from the shared cache or the database, not the process.
    assert await caller_admit(Bearer(secret), charge=True) is None
