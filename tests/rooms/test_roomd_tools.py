"""roomd's other tools (docs/protocol.md "Whose tools": roomd's other 19), with our
semantics: leave_room, get_room_info, delete_task, set_task_priority, add_dependency,
delete_context, get_context_history and delete_event."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from calls.runner import tool_run
from rooms import errors
from rooms.refs import RoomRef
from tenants.capabilities import Caller
from tests.conftest import redis_for_assertions

pytestmark = pytest.mark.anyio


@pytest.fixture
def r() -> Iterator[redis.Redis]:
    client = redis_for_assertions()
    yield client
    client.close()


async def call(caller: Caller, room: RoomRef, tool: str, **args: Any) -> Any:
    return await tool_run(caller, tool, {"roomId": room.room_id, **args})


async def refused(caller: Caller, room: RoomRef, tool: str, **args: Any) -> errors.DomainError:
    with pytest.raises(errors.DomainError) as caught:
        await call(caller, room, tool, **args)
    return caught.value


async def events(caller: Caller, room: RoomRef) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = await call(caller, room, "read_events", limit=100, order="asc")
    return found


async def task(caller: Caller, room: RoomRef, title: str, **args: Any) -> str:
    return str((await call(caller, room, "add_task", title=title, **args))["id"])


# --- leave_room, get_room_info ------------------------------------------------------------


async def test_leave_room_drops_presence_keeps_the_cursor_and_says_so_once(
    team_a: Caller, room: RoomRef, r: redis.Redis
) -> None:
    await call(team_a, room, "heartbeat", agentId="alice")
    await call(team_a, room, "heartbeat", agentId="bob")
    await call(team_a, room, "post_event", type="hello", payload={}, **{"from": "bob"})
    await call(team_a, room, "get_unread_events", agentId="alice")
    cursor = r.hget(room.keys.cursors, "alice")

    left = await call(team_a, room, "leave_room", agentId="alice")

    assert left["left"] is True and left["agentId"] == "alice"
    assert [a["agentId"] for a in left["agents"]] == ["bob"]
    assert r.hget(room.keys.cursors, "alice") == cursor is not None
    assert [e["type"] for e in await events(team_a, room)][-1] == "agent_left"
    again = await call(team_a, room, "leave_room", agentId="alice")
    assert again["left"] is False
    assert [e["type"] for e in await events(team_a, room)].count("agent_left") == 1


async def test_room_info_counts_exactly(team_a: Caller, room: RoomRef) -> None:
    await task(team_a, room, "one")
    await task(team_a, room, "two")
    await call(
        team_a,
        room,
        "write_context",
        type="note",
        summary="s",
        consuming_agents=[],
        payload={"text": "x"},
        author="a",
    )
    await call(team_a, room, "heartbeat", agentId="alice")

    info = await call(team_a, room, "get_room_info")

    assert info["roomId"] == room.room_id and info["ownerTeamId"] == str(room.team_id)
    # The context's author "a" acted, so it is a member beside alice (issue 24).
    assert (info["memberCount"], info["taskCount"], info["contextCount"]) == (2, 2, 1)
    assert info["eventCount"] == len(await events(team_a, room)) == 3
    assert info["createdAt"].endswith("Z")


# --- delete_task, set_task_priority, add_dependency ------------------------------------


async def test_delete_task_names_its_dependents_and_takes_its_claim(
    team_a: Caller, room: RoomRef, r: redis.Redis
) -> None:
    base = await task(team_a, room, "schema")
    api = await task(team_a, room, "api", depends_on=[base])
    await call(team_a, room, "claim_task", taskId=base, agentId="db", leaseSeconds=600)

    deleted = await call(team_a, room, "delete_task", taskId=base, agentId="planner")

    assert deleted["deleted"] is True and deleted["taskId"] == base
    assert api in deleted["warnings"][0] and '"api"' in deleted["warnings"][0]
    plan = await call(team_a, room, "read_plan")
    assert [t["id"] for t in plan["tasks"]] == [api]
    assert r.zscore(room.keys.claims, base) is None and not r.hexists(room.keys.claim_holders, base)
    event = (await events(team_a, room))[-1]
    assert event["type"] == "task_deleted" and event["payload"]["dependents"][0]["id"] == api
    missing = await refused(team_a, room, "delete_task", taskId=base)
    assert isinstance(missing, errors.TaskNotFoundError) and api in missing.message


async def test_delete_task_with_a_stale_version_is_refused(team_a: Caller, room: RoomRef) -> None:
    t = await task(team_a, room, "t")
    await call(team_a, room, "set_task_priority", taskId=t, priority=2)

    stale = await refused(team_a, room, "delete_task", taskId=t, expectedVersion=1)

    assert isinstance(stale, errors.TaskVersionConflictError) and "at version 2" in stale.message
    assert (await call(team_a, room, "get_task", taskId=t))["priority"] == 2


async def test_set_task_priority_orders_unblocked_work_and_is_announced(
    team_a: Caller, room: RoomRef
) -> None:
    first = await task(team_a, room, "first")
    second = await task(team_a, room, "second")

    changed = await call(team_a, room, "set_task_priority", taskId=second, priority=0)

    assert changed["priority"] == 0 and changed["version"] == 2
    assert changed["status"] == "pending"
    unblocked = await call(team_a, room, "get_unblocked_tasks")
    assert [t["id"] for t in unblocked] == [second, first]
    event = (await events(team_a, room))[-1]
    assert event["type"] == "task_updated"
    assert event["payload"]["changes"] == {"priority": [None, 0]}


async def test_add_dependency_is_idempotent_and_refuses_self_unknown_and_cycles(
    team_a: Caller, room: RoomRef
) -> None:
    a = await task(team_a, room, "a")
    b = await task(team_a, room, "b", depends_on=[a])
    c = await task(team_a, room, "c", depends_on=[b])

    cycle = await refused(team_a, room, "add_dependency", taskId=a, dependsOn=c)
    assert isinstance(cycle, errors.ToolArgumentsError)
    assert f"{a} -> {c} -> {b} -> {a}" in cycle.message
    assert cycle.extra["cycle"] == [a, c, b, a]
    assert (await call(team_a, room, "get_task", taskId=a))["depends_on"] == []

    self_loop = await refused(team_a, room, "add_dependency", taskId=a, dependsOn=a)
    assert isinstance(self_loop, errors.ToolArgumentsError) and "itself" in self_loop.message

    added = await call(team_a, room, "add_dependency", taskId=c, dependsOn=a)
    assert added["depends_on"] == [b, a] and added["version"] == 2
    again = await call(team_a, room, "add_dependency", taskId=c, dependsOn=a)
    assert again == added  # nothing changed, no new event
    assert [e["type"] for e in await events(team_a, room)].count("task_updated") == 1

    # (Not c with its last letter set to Z: one id in 62 already ends in Z.)
    missing = c[:-1] + ("Z" if c[-1] != "Z" else "Y")
    unknown = await refused(team_a, room, "add_dependency", taskId=a, dependsOn=missing)
    assert isinstance(unknown, errors.TaskNotFoundError)
    assert "dependsOn" in unknown.message and c in unknown.message


# --- delete_context, get_context_history -----------------------------------------------


async def _entry(caller: Caller, room: RoomRef) -> str:
    entry = await call(
        caller,
        room,
        "write_context",
        type="note",
        summary="v1",
        consuming_agents=["bob"],
        payload={"text": "one"},
        author="alice",
    )
    return str(entry["id"])


async def test_context_history_is_newest_first_with_what_changed(
    team_a: Caller, room: RoomRef
) -> None:
    entry = await _entry(team_a, room)
    await call(team_a, room, "update_context", id=entry, author="alice", payload={"text": "two"})
    await call(team_a, room, "update_context", id=entry, author="bob", summary="v3")

    history = await call(team_a, room, "get_context_history", id=entry)

    assert history["id"] == entry and history["current"]["version"] == "1.2"
    assert [v["version"] for v in history["history"]] == ["1.1", "1.0"]
    assert history["current"]["changes"] == ["summary changed"]
    assert history["history"][0]["payload"] == {"text": "two"}


async def test_delete_context_takes_the_entry_and_its_whole_history(
    team_a: Caller, room: RoomRef, r: redis.Redis
) -> None:
    entry = await _entry(team_a, room)
    await call(team_a, room, "update_context", id=entry, author="alice", summary="v2")

    gone = await call(team_a, room, "delete_context", id=entry, agentId="alice")

    assert gone == {"deleted": True, "id": entry}
    for tool in ("read_context", "get_context_history"):
        missing = await refused(team_a, room, tool, id=entry)
        assert isinstance(missing, errors.ContextNotFoundError)
    assert not [f for f in r.hkeys(room.keys.context_versions) if f.startswith(entry)]
    assert r.zcard(room.keys.context_version_index) == 0
    event = (await events(team_a, room))[-1]
    assert event["type"] == "context_deleted" and event["payload"]["id"] == entry


# --- delete_event -------------------------------------------------------------------------


async def test_delete_event_loses_no_event_posted_at_the_same_time(
    team_a: Caller, room: RoomRef, r: redis.Redis
) -> None:
    doomed = [
        (await call(team_a, room, "post_event", type="old", payload={"i": i}, **{"from": "a"}))[
            "id"
        ]
        for i in range(10)
    ]
    bytes_before = int(r.hget(room.keys.meta, "event_bytes") or 0)

    async def post(i: int) -> str:
        posted = await call(
            team_a, room, "post_event", type="new", payload={"i": i}, **{"from": "b"}
        )
        return str(posted["id"])

    results = await asyncio.gather(
        *(post(i) for i in range(40)),
        *(call(team_a, room, "delete_event", eventId=e, agentId="janitor") for e in doomed),
    )

    kept = {e["id"]: e for e in await events(team_a, room)}
    posted = results[:40]
    assert all(p in kept for p in posted)  # every concurrent post is still there
    assert not any(d in kept for d in doomed)
    deletions = [e for e in kept.values() if e["type"] == "event_deleted"]
    assert sorted(e["payload"]["eventId"] for e in deletions) == sorted(doomed)
    assert int(r.hget(room.keys.meta, "event_bytes") or 0) > bytes_before  # 40+10 in, 10 out

    again = await refused(team_a, room, "delete_event", eventId=doomed[0])
    assert isinstance(again, errors.EventNotFoundError)
