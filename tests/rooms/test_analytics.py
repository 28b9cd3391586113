"""get_room_analytics: exact counts, events per day over the whole retained log."""

from __future__ import annotations

from typing import Any

import pytest

from calls.runner import tool_run
from rooms import clock
from rooms.refs import RoomRef
from tenants.capabilities import Caller

pytestmark = pytest.mark.anyio


async def call(caller: Caller, room: RoomRef, tool: str, **args: Any) -> Any:
    return await tool_run(caller, tool, {"roomId": room.room_id, **args})


async def test_analytics_count_tasks_agents_and_events_per_day(
    team_a: Caller, room: RoomRef, settings: Any
) -> None:
    first = await call(team_a, room, "add_task", title="a")
    await call(team_a, room, "add_task", title="b")
    await call(team_a, room, "add_task", title="c")
    await call(team_a, room, "update_task", taskId=first["id"], status="done", agentId="x")
    await call(team_a, room, "heartbeat", agentId="x")
    posted = [
        await call(team_a, room, "post_event", type="ping", payload={}, **{"from": "x"})
        for _ in range(5)
    ]
    await call(team_a, room, "delete_event", eventId=posted[0]["id"])

    stats = await call(team_a, room, "get_room_analytics", days=3)

    assert stats["tasks"] == {
        "total": 3,
        "done": 1,
        "pending": 2,
        "inProgress": 0,
        "blocked": 0,
        "completionRate": round(1 / 3, 4),
    }
    assert stats["agents"] == {"total": 1, "online": 1}
    log = await call(team_a, room, "read_events", limit=100)
    assert stats["events"]["total"] == len(log) == 9  # 3 added, 1 updated, 4 pings, 1 deleted
    # roomd's meanings (docs/tools.md): the window in days, and the average a day over it.
    assert stats["events"]["lastDays"] == 3
    assert stats["events"]["perDay"] == 3.0  # 9 events over 3 days
    assert stats["events"]["inWindow"] == 9 and len(stats["events"]["byDate"]) == 3
    today = clock.now_iso()[:10]
    assert stats["events"]["byDate"][today] == 9


async def test_trimmed_events_leave_the_per_day_counts(
    team_a: Caller, room: RoomRef, settings: Any
) -> None:
    settings.ROOM_EVENT_CAP = 10
    for _ in range(25):
        await call(team_a, room, "post_event", type="ping", payload={}, **{"from": "x"})

    stats = await call(team_a, room, "get_room_analytics", days=1)

    assert stats["events"]["total"] == 10 == stats["events"]["inWindow"]
    assert stats["events"]["lastDays"] == 1 and stats["events"]["perDay"] == 10.0
