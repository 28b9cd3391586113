"""One read position per agent as the agent sees it (issue 31, point 5): a message read with
inbox (or acked) is not given again by wait_for_events, get_unread_events or get_my_summary;
a message not read there still is; other agents' streams are unchanged. Decided in the same
atomic step that moves the cursor (rooms/lua/lib/read_unread.lua), so it holds however the
two reads interleave."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from calls.runner import tool_run
from rooms.refs import RoomRef
from tenants.capabilities import Caller

pytestmark = pytest.mark.anyio


async def call(caller: Caller, room: RoomRef, tool: str, **args: Any) -> Any:
    return await tool_run(caller, tool, {"roomId": room.room_id, **args})


async def send(caller: Caller, room: RoomRef, to: str, body: str) -> str:
    sent = await call(caller, room, "send_message", **{"from": "bob", "to": to, "body": body})
    return str(sent["messageId"])


def message_ids(events: list[dict[str, Any]]) -> list[str]:
    return [e["payload"]["messageId"] for e in events if e["type"] == "message"]


async def test_a_message_read_in_inbox_is_not_given_again_by_wait_for_events(
    team_a: Caller, room: RoomRef
) -> None:
    for agent in ("alice", "bob", "carol"):
        await call(team_a, room, "heartbeat", agentId=agent)
    await call(team_a, room, "get_unread_events", agentId="alice", limit=100)  # caught up
    await call(team_a, room, "get_unread_events", agentId="carol", limit=100)
    first = await send(team_a, room, "alice", "one")
    second = await send(team_a, room, "alice", "two")
    third = await send(team_a, room, "alice", "three")

    read = await call(team_a, room, "inbox", agentId="alice", limit=1)
    assert [m["messageId"] for m in read["messages"]] == [first]
    await call(team_a, room, "inbox", agentId="alice", limit=1)  # second: read
    await call(team_a, room, "ack_message", agentId="alice", messageId=second)

    waited = await call(team_a, room, "wait_for_events", agentId="alice", timeoutMs=0)
    assert message_ids(waited["events"]) == [third]
    # Another agent's stream, and the sender's, still carry every message.
    seen = await call(team_a, room, "get_unread_events", agentId="carol", limit=100)
    assert message_ids(seen["events"]) == [first, second, third]


async def test_get_my_summary_and_unread_events_pass_over_what_inbox_read(
    team_a: Caller, room: RoomRef
) -> None:
    for agent in ("alice", "bob"):
        await call(team_a, room, "heartbeat", agentId=agent)
    read_first = await send(team_a, room, "alice", "read me first")
    unread = await send(team_a, room, "*", "to everyone")
    await call(team_a, room, "inbox", agentId="alice", limit=1)

    summary = await call(team_a, room, "get_my_summary", agentId="alice")
    assert message_ids(summary["unreadEvents"]) == [unread]
    assert read_first not in message_ids(summary["unreadEvents"])
    # Read in inbox now, it stays given once: nothing comes back.
    await call(team_a, room, "inbox", agentId="alice")
    again = await call(team_a, room, "get_unread_events", agentId="alice")
    assert message_ids(again["events"]) == []


async def test_inbox_and_event_reads_at_once_give_every_message_and_no_event_twice(
    team_a: Caller, room: RoomRef
) -> None:
    """The hazard of passing messages over: one passed over by the events and never given by
    inbox would be lost. Reads racing each other lose none and give no event twice."""
    for agent in ("alice", "bob"):
        await call(team_a, room, "heartbeat", agentId=agent)
    await call(team_a, room, "get_unread_events", agentId="alice", limit=100)
    sent = [await send(team_a, room, "alice", f"m{i}") for i in range(40)]
    early = await call(team_a, room, "inbox", agentId="alice", limit=10)
    read_before = [m["messageId"] for m in early["messages"]]
    assert read_before == sent[:10]
    from_inbox: list[str] = list(read_before)
    from_events: list[str] = []

    async def drain_inbox() -> None:
        while got := (await call(team_a, room, "inbox", agentId="alice", limit=3))["messages"]:
            from_inbox.extend(m["messageId"] for m in got)

    async def drain_events(limit: int) -> None:
        while True:
            got = await call(team_a, room, "get_unread_events", agentId="alice", limit=limit)
            if not got["events"]:
                return
            from_events.extend(message_ids(got["events"]))

    await asyncio.gather(drain_inbox(), drain_events(2), drain_events(5), drain_inbox())
    assert not set(read_before) & set(from_events)  # read before: never given again
    assert len(from_events) == len(set(from_events))  # each event once
    assert len(from_inbox) == len(set(from_inbox))  # each message read once
    assert set(from_inbox) | set(from_events) == set(sent)  # none lost
    # Everything is read now: nothing is given again, by either.
    assert (await call(team_a, room, "get_unread_events", agentId="alice"))["events"] == []
    assert (await call(team_a, room, "inbox", agentId="alice"))["messages"] == []
