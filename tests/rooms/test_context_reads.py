"""Who read which contract: reads with agentId record the version read; an update tells
exactly the agents whose read went out of date (context_stale), and read_context lists who
is behind."""

from __future__ import annotations

from typing import Any

import pytest

from calls.runner import tool_run
from rooms.refs import RoomRef
from tenants.capabilities import Caller
from tests import callers

pytestmark = pytest.mark.anyio


async def call(caller: Caller, room: RoomRef, tool: str, **args: Any) -> Any:
    return await tool_run(caller, tool, {"roomId": room.room_id, **args})


async def note(caller: Caller, room: RoomRef) -> dict[str, Any]:
    entry: dict[str, Any] = await call(
        caller,
        room,
        "write_context",
        type="note",
        summary="The API contract",
        consuming_agents=["frontend"],
        payload={"text": "v1"},
        author="backend",
    )
    return entry


async def stale_events(caller: Caller, room: RoomRef, agent: str) -> list[dict[str, Any]]:
    unread = await call(caller, room, "get_unread_events", agentId=agent, limit=100)
    return [e for e in unread["events"] if e["type"] == "context_stale" and e["to"] == agent]


async def test_an_update_tells_exactly_the_agents_that_read_an_older_version(
    team_a: Caller, room: RoomRef
) -> None:
    entry = await note(team_a, room)
    await call(team_a, room, "read_context", id=entry["id"], agentId="alice")
    await call(team_a, room, "list_context", agentId="bob")
    await call(team_a, room, "read_context", id=entry["id"])  # no agentId: nothing recorded
    await call(team_a, room, "read_context", id=entry["id"], agentId="backend")  # the author

    updated = await call(
        team_a, room, "update_context", id=entry["id"], author="backend", summary="v2"
    )

    assert sorted(updated["toldStale"]) == ["alice", "bob"]
    for agent in ("alice", "bob"):
        [event] = await stale_events(team_a, room, agent)
        assert event["to"] == agent and event["from"] == "backend"
        assert event["payload"]["readVersion"] == "1.0"
        assert event["payload"]["version"] == updated["version"] == "1.1"
    assert await stale_events(team_a, room, "carol") == []
    assert await stale_events(team_a, room, "backend") == []


async def test_read_context_lists_who_read_which_version_and_who_is_behind(
    team_a: Caller, room: RoomRef
) -> None:
    entry = await note(team_a, room)
    await call(team_a, room, "read_context", id=entry["id"], agentId="alice")
    await call(team_a, room, "read_context", id=entry["id"], agentId="bob")
    await call(team_a, room, "update_context", id=entry["id"], author="backend", summary="v2")

    seen = await call(team_a, room, "read_context", id=entry["id"], agentId="alice")

    assert seen["behind"] == ["bob"]
    assert {(r["agentId"], r["version"]) for r in seen["readBy"]} == {
        ("bob", "1.0"),
        ("alice", "1.1"),
    }
    again = await call(
        team_a, room, "update_context", id=entry["id"], author="backend", summary="v3"
    )
    assert sorted(again["toldStale"]) == ["alice", "bob"]


async def test_an_update_nobody_read_tells_no_one(team_a: Caller, room: RoomRef) -> None:
    entry = await note(team_a, room)

    updated = await call(
        team_a, room, "update_context", id=entry["id"], author="backend", summary="v2"
    )

    assert "toldStale" not in updated
    assert (await call(team_a, room, "read_context", id=entry["id"]))["behind"] == []


async def test_readers_per_entry_are_bounded_the_oldest_read_going_first(
    team_a: Caller, room: RoomRef, settings: Any
) -> None:
    settings.CONTEXT_READERS_KEPT = 3
    entry = await note(team_a, room)
    for agent in ("a1", "a2", "a3", "a4"):
        await call(team_a, room, "read_context", id=entry["id"], agentId=agent)

    seen = await call(team_a, room, "read_context", id=entry["id"])

    assert [r["agentId"] for r in seen["readBy"]] == ["a2", "a3", "a4"]


async def test_a_read_only_key_names_no_reader_so_it_cannot_have_others_told(
    team_a: Caller, room: RoomRef
) -> None:
    """The attack: a viewer key reads as "alice" and "bob" so that every update writes
    context_stale events to them. Refused quietly: the read is answered, not recorded."""
    entry = await note(team_a, room)
    viewer = callers.reader_of(team_a)
    for agent in ("alice", "bob"):
        seen = await call(viewer, room, "read_context", id=entry["id"], agentId=agent)
        assert seen["id"] == entry["id"] and seen["readBy"] == []
    await call(viewer, room, "list_context", agentId="carol")

    updated = await call(
        team_a, room, "update_context", id=entry["id"], author="backend", summary="v2"
    )

    assert "toldStale" not in updated
    # The legitimate path next to it: the team key's read is recorded and told.
    await call(team_a, room, "read_context", id=entry["id"], agentId="alice")
    again = await call(
        team_a, room, "update_context", id=entry["id"], author="backend", summary="v3"
    )
    assert again["toldStale"] == ["alice"]
