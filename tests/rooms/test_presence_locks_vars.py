"""Presence, advisory locks and shared variables (docs/protocol.md "Presence",
"Locks", "Shared variables")."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timedelta
from typing import Any

import pytest
import redis

from rooms import clock
from rooms.refs import RoomRef
from rooms.selectors import events as events_selectors
from rooms.selectors import locks as locks_selectors
from rooms.selectors import presence as presence_selectors
from rooms.selectors import vars as vars_selectors
from rooms.services import locks as locks_services
from rooms.services import presence as presence_services
from rooms.services import vars as vars_services
from tests.rooms.conftest import invoke as registry_invoke

pytestmark = pytest.mark.anyio


def invoke(room: RoomRef, name: str, **arguments: Any) -> Any:
    async def access(room_id: str, write: bool) -> RoomRef:
        return room

    return registry_invoke(name, {"roomId": room.room_id, **arguments}, access)


async def acquire(room: RoomRef, agent: str, resource: str = "db", ttl: int = 30) -> dict[str, Any]:
    return await locks_services.lock_acquire(
        room, resource=resource, agent_id=agent, ttl_seconds=ttl
    )


async def release(room: RoomRef, agent: str, resource: str = "db") -> dict[str, Any]:
    return await locks_services.lock_release(room, resource=resource, agent_id=agent)


def expire_now(r: redis.Redis, key: str) -> None:
    """Make a PX key expire in 1 ms and wait (bounded, 2 s) until Redis says it is gone."""
    assert r.pexpire(key, 1)
    deadline = time.monotonic() + 2.0
    while r.exists(key):
        assert time.monotonic() < deadline, f"{key} did not expire"
    assert r.pttl(key) == -2


# --- presence ---------------------------------------------------------------------------


async def test_heartbeat_returns_the_agent_and_everyone_present(
    room: RoomRef, frozen_clock: list[datetime]
) -> None:
    await presence_services.presence_heartbeat(room, agent_id="alice")

    got = await invoke(room, "heartbeat", agentId="bob")

    assert got["agentId"] == "bob"
    assert got["presence"] == [
        {
            "agentId": "alice",
            "status": "online",
            "lastSeen": "2031-05-06T07:08:09.123Z",
            "state": "working",
        },
        {
            "agentId": "bob",
            "status": "online",
            "lastSeen": "2031-05-06T07:08:09.123Z",
            "state": "working",
        },
    ]


async def test_a_heartbeat_answers_the_most_recent_agents_and_how_many_there_are(
    room: RoomRef, frozen_clock: list[datetime], settings: Any
) -> None:
    settings.HEARTBEAT_PRESENCE_MAX = 5
    start = frozen_clock[0]
    for i in range(12):  # a-00 seen first, a-11 last
        frozen_clock[0] = start + timedelta(seconds=i)
        await presence_services.presence_heartbeat(room, agent_id=f"a-{i:02d}")

    got = await invoke(room, "heartbeat", agentId="a-03")  # seen again: the most recent now

    assert got["presenceTotal"] == 12
    assert sorted(p["agentId"] for p in got["presence"]) == ["a-03", "a-08", "a-09", "a-10", "a-11"]
    # get_presence still lists every agent the room remembers.
    assert len(await invoke(room, "get_presence")) == 12


async def test_agent_is_online_for_120_seconds_after_a_heartbeat_then_offline(
    room: RoomRef, frozen_clock: list[datetime]
) -> None:
    await presence_services.presence_heartbeat(room, agent_id="alice")
    start = frozen_clock[0]

    frozen_clock[0] = start + timedelta(seconds=120)
    at_limit = await presence_selectors.presence_list(room)
    frozen_clock[0] = start + timedelta(seconds=120, milliseconds=1)
    past_limit = await invoke(room, "get_presence")

    assert at_limit == [
        {
            "agentId": "alice",
            "status": "online",
            "lastSeen": "2031-05-06T07:08:09.123Z",
            "state": "working",
        }
    ]
    assert past_limit == [
        {
            "agentId": "alice",
            "status": "offline",
            "lastSeen": "2031-05-06T07:08:09.123Z",
            "state": "idle",
        }
    ]


async def test_a_new_heartbeat_brings_an_agent_back_online(
    room: RoomRef, frozen_clock: list[datetime]
) -> None:
    await presence_services.presence_heartbeat(room, agent_id="alice")
    frozen_clock[0] += timedelta(minutes=10)
    assert (await presence_selectors.presence_list(room))[0]["status"] == "offline"

    await presence_services.presence_heartbeat(room, agent_id="alice")

    assert await presence_selectors.presence_list(room) == [
        {
            "agentId": "alice",
            "status": "online",
            "lastSeen": "2031-05-06T07:18:09.123Z",
            "state": "working",
        }
    ]


async def test_presence_lists_online_agents_before_offline_ones(
    room: RoomRef, frozen_clock: list[datetime]
) -> None:
    await presence_services.presence_heartbeat(room, agent_id="zed")
    await presence_services.presence_heartbeat(room, agent_id="amy")
    frozen_clock[0] += timedelta(seconds=200)
    await presence_services.presence_heartbeat(room, agent_id="yan")
    await presence_services.presence_heartbeat(room, agent_id="bea")

    presence = await presence_selectors.presence_list(room)

    assert [(p["agentId"], p["status"]) for p in presence] == [
        ("bea", "online"),
        ("yan", "online"),
        ("amy", "offline"),
        ("zed", "offline"),
    ]


async def test_empty_room_has_no_presence(room: RoomRef) -> None:
    assert await presence_selectors.presence_list(room) == []


# --- locks ------------------------------------------------------------------------------


async def test_acquire_lock_grants_a_free_lock(room: RoomRef) -> None:
    before = clock.now_ms()

    grant = await invoke(room, "acquire_lock", resource="db", agentId="alice")

    assert grant["acquired"] is True
    assert (grant["resource"], grant["holder"], grant["ttlSeconds"]) == ("db", "alice", 30)
    assert isinstance(grant["fencingToken"], int) and grant["fencingToken"] >= 1
    expires = clock.ms_from_iso(grant["expiresAt"])
    assert before + 30_000 <= expires <= clock.now_ms() + 30_000


async def test_lock_is_exclusive_and_names_the_actual_holder(room: RoomRef) -> None:
    first = await acquire(room, "alice", ttl=60)

    second = await acquire(room, "bob", ttl=10)

    assert second["acquired"] is False
    assert second["holder"] == "alice"
    assert second["fencingToken"] == first["fencingToken"]
    assert 0 < second["ttlSeconds"] <= 60
    assert (
        abs(clock.ms_from_iso(second["expiresAt"]) - clock.ms_from_iso(first["expiresAt"])) < 2000
    )


async def test_concurrent_acquires_grant_exactly_one(room: RoomRef) -> None:
    grants = await asyncio.gather(*(acquire(room, f"agent{i}") for i in range(30)))

    winners = [g for g in grants if g["acquired"]]
    assert len(winners) == 1
    holder = winners[0]["holder"]
    assert {g["holder"] for g in grants} == {holder}
    assert [lock["owner"] for lock in await locks_selectors.lock_list(room)] == [holder]


async def test_holder_acquiring_again_renews_and_keeps_its_token(
    room: RoomRef, sync_redis: redis.Redis
) -> None:
    first = await acquire(room, "alice", ttl=5)

    renewed = await acquire(room, "alice", ttl=200)

    assert renewed["acquired"] is True
    assert renewed["holder"] == "alice"
    assert renewed["ttlSeconds"] == 200
    assert renewed["fencingToken"] == first["fencingToken"]
    assert 150_000 < sync_redis.pttl(room.keys.lock("db")) <= 200_000


async def test_each_new_grant_gets_a_larger_fencing_token(room: RoomRef) -> None:
    a = await acquire(room, "alice")
    assert (await release(room, "alice"))["released"] is True
    b = await acquire(room, "bob")
    other = await acquire(room, "bob", resource="cache")

    assert b["fencingToken"] > a["fencingToken"]
    assert other["fencingToken"] > b["fencingToken"]


async def test_release_by_the_holder_frees_the_lock(room: RoomRef) -> None:
    await acquire(room, "alice")

    released = await invoke(room, "release_lock", resource="db", agentId="alice")
    taken = await acquire(room, "bob")

    assert released == {"released": True, "resource": "db"}
    assert taken["acquired"] is True and taken["holder"] == "bob"


async def test_release_lock_held_by_other_agent_is_refused(room: RoomRef) -> None:
    await acquire(room, "alice")

    refused = await release(room, "bob")

    assert refused["released"] is False
    assert refused["holder"] == "alice"
    assert "only the holder" in refused["message"]
    assert [lock["owner"] for lock in await locks_selectors.lock_list(room)] == ["alice"]
    assert (await acquire(room, "bob"))["acquired"] is False


async def test_release_of_a_free_lock_says_it_is_not_locked(room: RoomRef) -> None:
    refused = await release(room, "alice", resource="never")

    assert refused["released"] is False
    assert refused["holder"] is None
    assert "not locked" in refused["message"]


async def test_list_locks_shows_held_locks_with_owner_and_expiry(room: RoomRef) -> None:
    before = clock.now_ms()
    await acquire(room, "alice", resource="db", ttl=30)
    await acquire(room, "bob", resource="cache", ttl=100)
    await acquire(room, "carol", resource="gone", ttl=30)
    await release(room, "carol", resource="gone")

    locks = await invoke(room, "list_locks")

    by_resource = {lock["resource"]: lock for lock in locks}
    assert sorted(by_resource) == ["cache", "db"]
    assert by_resource["db"]["owner"] == "alice"
    assert by_resource["cache"]["owner"] == "bob"
    db_expiry = clock.ms_from_iso(by_resource["db"]["expiresAt"])
    cache_expiry = clock.ms_from_iso(by_resource["cache"]["expiresAt"])
    assert before + 25_000 < db_expiry <= clock.now_ms() + 30_000
    assert before + 95_000 < cache_expiry <= clock.now_ms() + 100_000


async def test_expired_lock_is_free_for_another_agent_with_a_larger_token(
    room: RoomRef, sync_redis: redis.Redis
) -> None:
    first = await acquire(room, "alice", ttl=1)
    expire_now(sync_redis, room.keys.lock("db"))

    assert await locks_selectors.lock_list(room) == []
    second = await acquire(room, "bob", ttl=1)

    assert second["acquired"] is True
    assert second["holder"] == "bob"
    assert second["fencingToken"] > first["fencingToken"]
    assert [lock["owner"] for lock in await locks_selectors.lock_list(room)] == ["bob"]


async def test_former_holder_cannot_release_after_expiry_and_regrant(
    room: RoomRef, sync_redis: redis.Redis
) -> None:
    await acquire(room, "alice", ttl=1)
    expire_now(sync_redis, room.keys.lock("db"))
    await acquire(room, "bob")

    refused = await release(room, "alice")

    assert refused["released"] is False
    assert refused["holder"] == "bob"


async def test_expired_lock_reacquired_by_its_old_holder_is_a_new_grant(
    room: RoomRef, sync_redis: redis.Redis
) -> None:
    first = await acquire(room, "alice", ttl=1)
    expire_now(sync_redis, room.keys.lock("db"))

    again = await acquire(room, "alice", ttl=1)

    assert again["acquired"] is True
    assert again["fencingToken"] > first["fencingToken"]


# --- shared variables -------------------------------------------------------------------


@pytest.mark.parametrize("value", ["3000", "null", "true", "", "0", '{"a": 1}', " spaced "])
async def test_shared_var_comes_back_as_the_string_that_was_stored(
    room: RoomRef, value: str
) -> None:
    set_result = await invoke(room, "set_shared_var", key="k", value=value, agentId="alice")

    got = await invoke(room, "get_shared_var", key="k")

    assert set_result == {"key": "k", "value": value}
    assert got == {"key": "k", "value": value, "found": True}
    assert (await vars_selectors.var_list(room))["vars"] == {"k": value}


async def test_missing_shared_var_is_not_found(room: RoomRef) -> None:
    got = await vars_selectors.var_get(room, key="port")

    assert got == {"key": "port", "value": None, "found": False}


async def test_setting_a_shared_var_again_overwrites_it(room: RoomRef) -> None:
    await vars_services.var_set(room, key="port", value="3000", agent_id="alice")
    await vars_services.var_set(room, key="port", value="3001", agent_id="bob")

    assert (await vars_selectors.var_get(room, key="port"))["value"] == "3001"
    assert (await vars_selectors.var_list(room))["count"] == 1


async def test_list_shared_vars_gives_every_var_and_the_count(room: RoomRef) -> None:
    assert await vars_selectors.var_list(room) == {"vars": {}, "count": 0}
    await vars_services.var_set(room, key="port", value="3000", agent_id="alice")
    await vars_services.var_set(room, key="url", value="https://staging", agent_id="alice")
    await vars_services.var_set(room, key="nothing", value="null", agent_id="alice")

    listed = await invoke(room, "list_shared_vars")

    assert listed == {
        "vars": {"nothing": "null", "port": "3000", "url": "https://staging"},
        "count": 3,
    }


async def test_set_shared_var_emits_shared_var_set(room: RoomRef) -> None:
    await vars_services.var_set(room, key="port", value="3000", agent_id="alice")
    await vars_services.var_set(room, key="flag", value="null", agent_id="bob")

    events = await events_selectors.event_list(room, since=None, limit=10, order="asc")

    assert [(e["type"], e["from"], e["to"], e["payload"]) for e in events] == [
        ("shared_var_set", "alice", "all", {"key": "port", "value": "3000"}),
        ("shared_var_set", "bob", "all", {"key": "flag", "value": "null"}),
    ]


async def test_concurrent_sets_of_different_vars_are_all_kept(room: RoomRef) -> None:
    await asyncio.gather(
        *(vars_services.var_set(room, key=f"k{i}", value=str(i), agent_id="a") for i in range(40))
    )

    listed = await vars_selectors.var_list(room)

    assert listed["count"] == 40
    assert listed["vars"] == {f"k{i}": str(i) for i in range(40)}
